"""GCFL's clustering on a node-level task (Cora-like toy subgraphs): with thresholds that never split
(eps1 = 0: no mean update norm is below it) one cluster holds every client, and three rounds equal
FedAvg's, every client's model the FedAvg server model and every metric the same."""
import dataclasses

import pytest
import jax
import numpy as np

from fgl_jax import registry
from fgl_jax.algorithms.gcfl import GCFLHParams

from tests.alg_helpers import toy_setup


@pytest.mark.slow
@pytest.mark.parametrize("eval_mode", ["auto", "local_model_on_local_data"])
def test_gcfl_without_splits_equals_fedavg_on_nodes(eval_mode):
    """auto: GCFL's cluster model vs FedAvg's server model; local_model_on_local_data: the models the
    clients trained this round, on both sides."""
    data, net, common = toy_setup(n=60, clients=3, hidden=8, local_steps=2)
    common = dataclasses.replace(common, eval_mode=eval_mode)
    gcfl = registry.get("algorithm", "gcfl")(net, common, GCFLHParams(gcfl_eps1=0.0, gcfl_eps2=0.0, gcfl_warmup=0))
    fedavg = registry.get("algorithm", "fedavg")(net, common, None)
    key = jax.random.key(0)
    sg, sf = gcfl.init(key, data), fedavg.init(key, data)
    rg, rf = jax.jit(gcfl.round), jax.jit(fedavg.round)
    for r in range(3):
        k = jax.random.key(r + 1)
        sg, mg = rg(sg, data, k)
        sf, mf = rf(sf, data, k)
        assert int(np.asarray(mg["num_clusters"])) == 1
        for name in ("train_loss", "val_acc", "test_acc"):
            np.testing.assert_allclose(float(mg[name]), float(mf[name]), rtol=1e-5, atol=1e-6, err_msg=name)
    assert np.asarray(sg.cluster).tolist() == [0, 0, 0]
    for a, b in zip(jax.tree.leaves(sg.models), jax.tree.leaves(sf.server)):
        for c in range(3):   # m + mean(w_i - m) vs mean(w_i): equal up to float rounding
            np.testing.assert_allclose(np.asarray(a[c]), np.asarray(b), rtol=1e-5, atol=1e-6)
    # and the models moved: three rounds of training, not two untouched initialisations
    init = fedavg.init(key, data).server
    assert max(float(np.abs(np.asarray(a) - np.asarray(b)).max())
               for a, b in zip(jax.tree.leaves(sf.server), jax.tree.leaves(init))) > 1e-3
