"""FedAvgM: the server step against a NumPy re-derivation of SGD with momentum on the averaged update."""
import dataclasses

import jax
import numpy as np
import pytest

from fgl_jax import registry, schema
from fgl_jax.batch import build_client_batch
from fgl_jax.federated import FedConfig, OptimConfig, make_fed_data, run
from fgl_jax.nn import make_model
from fgl_jax.partition import random_partition
from fgl_jax.systems.baseline import RunConfig
from tests.helpers import toy_graph


def _setup():
    g = toy_graph(n=90, seed=3)
    data = make_fed_data(build_client_batch(g, random_partition(g, 3, seed=0).assignment, 3))
    model = make_model("gcn", g.num_features, g.num_classes, hidden=8)
    common = FedConfig(local_steps=2, optim=OptimConfig(lr=0.05))
    return data, model, common


@pytest.mark.slow
def test_server_momentum_matches_a_numpy_rederivation():
    data, model, common = _setup()
    hp_cls = registry.entry("algorithm", "fedavgm").info["hparams"]
    lr, beta = 0.7, 0.8
    avgm = registry.get("algorithm", "fedavgm")(model, common, hp_cls(server_lr=lr, server_momentum=beta))
    avg = registry.get("algorithm", "fedavg")(model, common, None)
    state = jax.jit(avgm.init)(jax.random.key(0), data)
    velocity = None
    for r in range(3):
        key = jax.random.key(100 + r)
        # the plain FedAvg round from the same server model and client optimiser states gives mean_c w_c
        plain_state = dataclasses.replace(state, aggregator=((),))  # FedAvg: a chain of one mean, no state
        mean = jax.device_get(avg.round(plain_state, data, key)[0].server)
        server = jax.device_get(state.server)
        g = jax.tree.map(lambda s, m: np.asarray(s, np.float64) - np.asarray(m, np.float64), server, mean)
        velocity = g if velocity is None else jax.tree.map(lambda v, gg: beta * v + gg, velocity, g)
        expect = jax.tree.map(lambda s, v: np.asarray(s, np.float64) - lr * v, server, velocity)
        state, _ = avgm.round(state, data, key)
        for a, b in zip(jax.tree.leaves(jax.device_get(state.server)), jax.tree.leaves(expect)):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


@pytest.mark.slow
def test_no_momentum_and_unit_server_lr_is_fedavg():
    data, model, common = _setup()
    hp_cls = registry.entry("algorithm", "fedavgm").info["hparams"]
    a = run(registry.get("algorithm", "fedavgm")(model, common, hp_cls(1.0, 0.0)), data, jax.random.key(1), 5)
    b = run(registry.get("algorithm", "fedavg")(model, common, None), data, jax.random.key(1), 5)
    np.testing.assert_allclose(a.history["val_acc"], b.history["val_acc"], atol=1e-6)
    np.testing.assert_allclose(a.history["train_loss"], b.history["train_loss"], rtol=1e-4)


def test_fedavgm_options_live_only_in_its_module():
    cfg = schema.make(RunConfig, {"algorithm": "fedavgm", "server_momentum": 0.5})
    assert cfg.hparams().server_momentum == 0.5 and cfg.hparams().server_lr == 1.0
    with pytest.raises(ValueError, match="server_momentum must be < 1"):
        schema.make(RunConfig, {"algorithm": "fedavgm", "server_momentum": 1.0})
