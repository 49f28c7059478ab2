"""FedYogi: the server step against Yogi re-derived in NumPy on the averaged update of the clients'
models (computed by the Local round from the same server model, averaged here)."""
import jax
import numpy as np
import pytest

from fgl_jax import registry, schema
from fgl_jax.systems.baseline import RunConfig
from tests.alg_helpers import assert_trees_close, client_models, np_weighted_mean, toy_setup


@pytest.mark.slow
def test_server_yogi_matches_a_numpy_rederivation():
    data, model, common = toy_setup()
    lr, b1, b2, tau = 0.05, 0.8, 0.95, 1e-2
    hp = registry.entry("algorithm", "fedyogi").info["hparams"](yogi_server_lr=lr, yogi_beta1=b1,
                                                               yogi_beta2=b2, yogi_tau=tau)
    alg = registry.get("algorithm", "fedyogi")(model, common, hp)
    state = alg.init(jax.random.key(0), data)
    m = v = None
    for t in range(1, 4):
        key = jax.random.key(20 + t)
        clients = client_models(model, common, state.server, state.opt, data, key)
        server = jax.tree.map(lambda a: np.asarray(a, np.float64), jax.device_get(state.server))
        g = jax.tree.map(lambda s, a: s - a, server, np_weighted_mean(clients, data.train_weight))
        if m is None:
            m = jax.tree.map(lambda gg: np.full_like(gg, tau ** 2), g)  # optax starts m there too
            v = jax.tree.map(lambda gg: np.full_like(gg, tau ** 2), g)  # v_{-1} = tau^2
        m = jax.tree.map(lambda mm, gg: b1 * mm + (1 - b1) * gg, m, g)
        v = jax.tree.map(lambda vv, gg: vv - (1 - b2) * np.sign(vv - gg ** 2) * gg ** 2, v, g)
        expect = jax.tree.map(lambda s, mm, vv: s - lr * (mm / (1 - b1 ** t)) / (np.sqrt(vv / (1 - b2 ** t)) + tau),
                              server, m, v)
        state, _ = jax.jit(alg.round)(state, data, key)
        assert_trees_close(state.server, expect, rtol=1e-4, atol=1e-6)
    assert max(float(np.abs(l).max()) for l in jax.tree.leaves(g)) > 1e-3


def test_fedyogi_differs_from_fedadam_and_rejects_bad_input():
    with pytest.raises(ValueError, match="yogi_server_lr"):
        schema.make(RunConfig, {"algorithm": "fedyogi", "yogi_server_lr": 0.0})
    cfg = schema.make(RunConfig, {"algorithm": "fedyogi", "yogi_beta2": 0.9})
    assert cfg.hparams().yogi_beta2 == 0.9
