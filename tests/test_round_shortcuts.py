"""A bit-exact shortcut in the baselines' round (issue 31, the command's round):
`FedData.train_is_eval`: when every client trains, the trained models are the clients' models as
they are, instead of being scattered into evaluation order; reference: the scatter path
(train_is_eval=False, bit for bit), and the flag's bookkeeping in make_fed_data and
participation.restrict (a subset of clients must turn it off).
"""
import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from fgl_jax import registry
from fgl_jax.federated.algorithm import make_fed_data
from fgl_jax.federated.participation import restrict
from tests.alg_helpers import toy_setup


def test_train_is_eval_bookkeeping():
    data, _, _ = toy_setup()
    assert data.train_is_eval and np.array_equal(np.asarray(data.train_index), np.arange(data.eval.num_clients))
    part = restrict(data, jnp.array([0, 2]))
    assert not part.train_is_eval
    # a client without training nodes: train is a subset, the flag is off
    b = data.eval
    b = b.replace(train_mask=b.train_mask.at[1].set(False))
    sub = make_fed_data(b)
    assert not sub.train_is_eval and list(np.asarray(sub.train_index)) == [0, 2]


@pytest.mark.slow
@pytest.mark.parametrize("name", ["fedavg", "local"])
def test_train_is_eval_round_equals_scatter(name):
    data, model, common = toy_setup()
    common = dataclasses.replace(common, eval_mode="local_model_on_local_data", eval_average="client_nodes")
    alg = registry.get("algorithm", name)(model, common, None)
    st = alg.init(jax.random.key(0), data)
    outs = [jax.jit(alg.round)(st, d, jax.random.key(1)) for d in (data, data.replace(train_is_eval=False))]
    for a, b in zip(jax.tree.leaves(outs[0]), jax.tree.leaves(outs[1])):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
