"""The zoo algorithms honour FedConfig.eval_mode / eval_average like the baselines: 'auto' keeps the
global model on each client's subgraph (pooled); local_model_on_local_data evaluates the models the
clients trained this round (OpenFGL's default), recomputed here from an independent path: MOON's
stored previous-round models, and for SCAFFOLD's first round (zero control variates) the Local
algorithm's training from the same start and key."""
import dataclasses

import jax
import numpy as np
import pytest

from fgl_jax import registry
from fgl_jax.federated.evaluation import evaluate
from tests.alg_helpers import client_models, toy_setup



def _round(name, common, data, model, **hp):
    cls = registry.entry("algorithm", name).info["hparams"]
    alg = registry.get("algorithm", name)(model, common, cls(**hp))
    st = alg.init(jax.random.key(0), data)
    st1, m = jax.jit(alg.round)(st, data, jax.random.key(1))
    return st, st1, m


@pytest.mark.slow
@pytest.mark.parametrize("name", ["moon", "scaffold", "feddc"])
def test_auto_is_global_model_pooled(name):
    data, model, common = toy_setup()
    _, st1, m = _round(name, common, data, model)
    ref = evaluate(model, st1.server, data.eval, per_client=False)
    assert float(m["test_acc"]) == pytest.approx(float(ref["test_acc"]), abs=1e-7)
    assert float(m["val_acc"]) == pytest.approx(float(ref["val_acc"]), abs=1e-7)


@pytest.mark.slow
def test_moon_local_models_client_nodes():
    data, model, common = toy_setup()
    assert np.asarray(data.train_index).size == data.eval.num_clients  # every client trains
    common = dataclasses.replace(common, eval_mode="local_model_on_local_data", eval_average="client_nodes")
    _, st1, m = _round("moon", common, data, model)
    ref = evaluate(model, st1.prev, data.eval, per_client=True, average="client_nodes")
    glob = evaluate(model, st1.server, data.eval, per_client=False, average="client_nodes")
    assert float(m["test_acc"]) == pytest.approx(float(ref["test_acc"]), abs=1e-7)
    assert float(m["val_acc"]) == pytest.approx(float(ref["val_acc"]), abs=1e-7)
    # and it is not the global model's figure (else this test could not fail)
    assert abs(float(m["val_acc"]) - float(glob["val_acc"])) + abs(float(m["test_acc"]) - float(glob["test_acc"])) > 0


@pytest.mark.slow
def test_scaffold_first_round_local_models():
    data, model, common = toy_setup()
    common = dataclasses.replace(common, eval_mode="local_model_on_local_data", eval_average="client_nodes")
    st0, _, m = _round("scaffold", common, data, model)
    trained = client_models(model, common, st0.server, st0.opt, data, jax.random.key(1))
    ref = evaluate(model, jax.tree.map(np.float32, trained), data.eval, per_client=True, average="client_nodes")
    assert float(m["test_acc"]) == pytest.approx(float(ref["test_acc"]), abs=1e-6)


def test_personal_models_refuse_global_mode():
    data, model, common = toy_setup()
    common = dataclasses.replace(common, eval_mode="global_model_on_local_data")
    with pytest.raises(ValueError, match="personal models"):
        _round("fedproto", common, data, model)
