"""GCFL's clustering on a node-level task (Cora-like toy subgraphs): with thresholds that never split
(eps1 = 0: no mean update norm is below it) one cluster holds every client, and three rounds equal
FedAvg's, every client's model the FedAvg server model and every metric the same; and three rounds
with a split re-derived in NumPy (softmax regression, 3 clients, plain SGD): round 1 one cluster,
round 2 the cluster cut by the minimum cut of cos(dW_i, dW_j) + 1 (with 3 clients: the client whose
two similarities sum lowest leaves), every cluster moving by its members' node-weighted mean update."""
import dataclasses

import pytest
import jax
import numpy as np

from fgl_jax import registry
from fgl_jax.algorithms.gcfl import GCFLHParams

from tests.alg_helpers import softmax_regression_grad as _grad, toy_setup


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


def test_three_rounds_with_a_split_match_numpy():
    lr, steps = 0.3, 2
    data, model, common = toy_setup(n=60, clients=3, model="mlp", local_steps=steps, lr=lr, optimizer="sgd")
    common = dataclasses.replace(common, optim=dataclasses.replace(common.optim, momentum=0.0))
    model = model.clone(num_layers=1)
    # eps1 huge, eps2 0: the criterion holds whenever allowed; warm-up 1: the first split in round 2
    alg = registry.get("algorithm", "gcfl")(model, common, GCFLHParams(gcfl_eps1=1e6, gcfl_eps2=0.0, gcfl_warmup=1))
    state = alg.init(jax.random.key(0), data)
    p = jax.device_get(state.models)["params"]
    ws = [np.asarray(p["layer_0"]["kernel"][i], np.float64) for i in range(3)]
    bs = [np.asarray(p["bias_0"][i], np.float64) for i in range(3)]
    tr = data.train
    assert np.asarray(data.train_index).tolist() == [0, 1, 2]
    xs, ys, ms = (np.asarray(a, np.float64) for a in (tr.features, tr.y, tr.train_mask))
    ys = ys.astype(int)
    k = int(model.num_classes)
    weight = np.asarray(data.train_weight, np.float64)
    groups = [[0, 1, 2]]
    rnd = jax.jit(alg.round)
    for r in range(3):
        dws, dbs = [], []
        for i in range(3):
            w, b = ws[i].copy(), bs[i].copy()
            for _ in range(steps):
                gw, gb = _grad(w, b, xs[i], ys[i], ms[i], k)
                w, b = w - lr * gw, b - lr * gb
            dws.append(w - ws[i])
            dbs.append(b - bs[i])
        if r >= 1 and len(groups[0]) == 3:   # past the warm-up: the 3-member cluster is cut
            flat = [np.concatenate([dw.ravel(), db]) for dw, db in zip(dws, dbs)]
            unit = [f / np.linalg.norm(f) for f in flat]
            sim = np.array([[u @ v + 1.0 for v in unit] for u in unit])
            cut = [sim[i].sum() - sim[i, i] for i in range(3)]          # the weight cut by isolating client i
            alone = int(np.argmin(cut))
            assert sorted(cut)[1] - sorted(cut)[0] > 1e-4                # one minimum cut, no tie
            groups = [[j for j in range(3) if j != alone], [alone]]
        for g in groups:
            share = weight[g] / weight[g].sum()
            mw, mb = sum(s * dws[j] for s, j in zip(share, g)), sum(s * dbs[j] for s, j in zip(share, g))
            for j in g:
                ws[j], bs[j] = ws[j] + mw, bs[j] + mb
        state, metrics = rnd(state, data, jax.random.key(r))
        got = jax.device_get(state)
        labels = np.asarray(got.cluster)
        assert all(len(set(labels[g])) == 1 for g in groups) and len({labels[g[0]] for g in groups}) == len(groups)
        assert int(metrics["num_clusters"]) == len(groups)
        np.testing.assert_allclose(got.models["params"]["layer_0"]["kernel"], np.stack(ws), rtol=1e-4, atol=1e-6)
        np.testing.assert_allclose(got.models["params"]["bias_0"], np.stack(bs), rtol=1e-4, atol=1e-6)
    assert len(groups) == 2 and np.abs(ws[groups[1][0]] - ws[groups[0][0]]).max() > 1e-3   # the split took effect
