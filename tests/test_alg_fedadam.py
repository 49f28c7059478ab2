"""FedAdam: the server step against Adam re-derived in NumPy on the averaged update of the clients'
models (computed by the Local round from the same server model, averaged here)."""
import jax
import numpy as np
import pytest

from fgl_jax import registry, schema
from fgl_jax.systems.baseline import RunConfig
from tests.alg_helpers import assert_trees_close, client_models, np_weighted_mean, toy_setup


@pytest.mark.slow
def test_server_adam_matches_a_numpy_rederivation():
    data, model, common = toy_setup()
    hp = registry.entry("algorithm", "fedadam").info["hparams"](adam_server_lr=0.05, adam_beta1=0.8,
                                                               adam_beta2=0.95, adam_tau=1e-2)
    alg = registry.get("algorithm", "fedadam")(model, common, hp)
    state = alg.init(jax.random.key(0), data)
    m = v = None
    for t in range(1, 4):
        key = jax.random.key(10 + t)
        clients = client_models(model, common, state.server, state.opt, data, key)
        server = jax.tree.map(lambda a: np.asarray(a, np.float64), jax.device_get(state.server))
        g = jax.tree.map(lambda s, a: s - a, server, np_weighted_mean(clients, data.train_weight))
        m = jax.tree.map(lambda gg: (1 - 0.8) * gg, g) if m is None else jax.tree.map(
            lambda mm, gg: 0.8 * mm + 0.2 * gg, m, g)
        v = jax.tree.map(lambda gg: (1 - 0.95) * gg ** 2, g) if v is None else jax.tree.map(
            lambda vv, gg: 0.95 * vv + 0.05 * gg ** 2, v, g)
        expect = jax.tree.map(lambda s, mm, vv: s - 0.05 * (mm / (1 - 0.8 ** t)) / (np.sqrt(vv / (1 - 0.95 ** t)) + 1e-2),
                              server, m, v)
        state, metrics = jax.jit(alg.round)(state, data, key)
        assert_trees_close(state.server, expect, rtol=1e-4, atol=1e-6)
        assert np.isfinite(float(metrics["test_acc"]))
    # the step really moved the model (a zero update would also be "close" to a zero expectation)
    assert max(float(np.abs(l).max()) for l in jax.tree.leaves(g)) > 1e-3


def test_fedadam_options_and_bad_input():
    cfg = schema.make(RunConfig, {"algorithm": "fedadam", "adam_tau": 1e-4})
    assert cfg.hparams().adam_tau == 1e-4 and cfg.hparams().adam_beta2 == 0.99
    with pytest.raises(ValueError, match="adam_beta1"):
        schema.make(RunConfig, {"algorithm": "fedadam", "adam_beta1": 1.0})
    with pytest.raises(ValueError, match="option of algorithm 'fedadam'"):
        schema.make(RunConfig, {"algorithm": "fedavg", "adam_tau": 1e-4})
