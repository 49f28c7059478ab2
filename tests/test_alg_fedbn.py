"""FedBN and the models' normalisation option against independent references: the normalisation
re-derived in NumPy on a padded client, FedBN without normalisation layers = FedAvg exactly, and
three rounds of a 2-layer MLP with batch norm re-derived in NumPy (gradients by hand, plain SGD; the
server averages exactly the non-norm leaves of the clients' trained models, weighted by training nodes;
each client keeps the norm leaves it trained; the reported accuracy is each client's own model's)."""
import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import traverse_util

from fgl_jax import registry, schema
from fgl_jax.nn import make_model
from fgl_jax.systems.baseline import RunConfig
from tests.alg_helpers import assert_trees_close, toy_setup


def _alg(name, model, common):
    return registry.get("algorithm", name)(model, common, None)


def _flat(tree):
    return traverse_util.flatten_dict(jax.device_get(tree)["params"], sep="/")


def test_normalise_matches_numpy_on_a_padded_client():
    data, _, _ = toy_setup()
    one = jax.tree.map(lambda a: a[0], data.eval)
    node = np.asarray(one.node_mask, bool)
    assert (~node).any()  # padded nodes present: they must not enter the batch statistics
    for kind in ("batch", "layer"):
        net = make_model("mlp", one.features.shape[-1], 3, hidden=6, num_layers=2, norm=kind)
        params = net.init(jax.random.key(1), one)
        # scale/shift away from their (1, 0) init so they are exercised
        params = jax.tree_util.tree_map_with_path(
            lambda p, a: a + 0.3 * (1 + jnp.arange(a.shape[-1])) if "norm_" in jax.tree_util.keystr(p) else a, params)
        flat = _flat(params)
        x = np.asarray(one.features, np.float64)
        h = x @ flat["layer_0/kernel"] + flat["bias_0"]
        if kind == "batch":
            mu, var = h[node].mean(0), h[node].var(0)
        else:
            mu, var = h.mean(1, keepdims=True), h.var(1, keepdims=True)
        h = (h - mu) / np.sqrt(var + 1e-5) * flat["norm_scale_0"] + flat["norm_bias_0"]
        want = np.maximum(h, 0) @ flat["layer_1/kernel"] + flat["bias_1"]
        got = np.asarray(net.apply(params, one, train=True))
        np.testing.assert_allclose(got[node], want[node], rtol=1e-4, atol=1e-5)
        # evaluation uses the same (batch) statistics: no running state
        np.testing.assert_allclose(np.asarray(net.apply(params, one, train=False)), got, rtol=1e-6)


def test_norm_none_keeps_the_parameter_tree_and_bad_norm_is_one_line():
    data, net, _ = toy_setup()
    one = jax.tree.map(lambda a: a[0], data.eval)
    plain = net.init(jax.random.key(0), one)
    none = make_model("gcn", net.in_dim, net.num_classes, hidden=net.hidden, norm="none").init(jax.random.key(0), one)
    assert_trees_close(plain, none, rtol=0, atol=0)
    assert not any("norm_" in k for k in _flat(plain))
    with pytest.raises(ValueError, match="norm must be one of none, batch, layer, got 'group'"):
        make_model("gcn", 4, 3, norm="group")
    with pytest.raises(ValueError, match="model 'sgc': norm='batch' is not available"):
        make_model("sgc", 4, 3, norm="batch")
    with pytest.raises(ValueError, match="norm"):
        schema.make(RunConfig, {"norm": "group"})


def test_fedbn_without_normalisation_is_fedavg():
    data, model, common = toy_setup(local_steps=2)
    bn, avg = _alg("fedbn", model, common), _alg("fedavg", model, common)
    sb, sa = bn.init(jax.random.key(0), data), avg.init(jax.random.key(0), data)
    for r in range(3):
        sb, mb = jax.jit(bn.round)(sb, data, jax.random.key(r))
        sa, ma = jax.jit(avg.round)(sa, data, jax.random.key(r))
        assert_trees_close(sb.server, sa.server, rtol=0, atol=0)
        assert set(mb) == set(ma)
        for k in ma:
            np.testing.assert_array_equal(np.asarray(mb[k]), np.asarray(ma[k]))


def test_fedbn_refuses_a_global_eval_mode_with_norm():
    _, model, common = toy_setup()
    with pytest.raises(ValueError, match="FedBN keeps the normalisation layers on the clients"):
        _alg("fedbn", model.clone(norm="batch"), dataclasses.replace(common, eval_mode="global_model_on_local_data"))


def _bn_mlp_grads(p, x, y, node, train, k, eps=1e-5):
    """Loss gradients of a 2-layer MLP with batch norm (Dense - BN over the real nodes - ReLU - Dense,
    mean CE over the training nodes), backpropagated by hand in NumPy float64."""
    m = node[:, None]
    cnt = max(node.sum(), 1.0)
    z1 = x @ p["layer_0/kernel"] + p["bias_0"]
    mu = (z1 * m).sum(0) / cnt
    var = (((z1 - mu) ** 2) * m).sum(0) / cnt
    inv = 1.0 / np.sqrt(var + eps)
    xhat = (z1 - mu) * inv
    a = xhat * p["norm_scale_0"] + p["norm_bias_0"]
    h = np.maximum(a, 0.0)
    z2 = h @ p["layer_1/kernel"] + p["bias_1"]
    e = np.exp(z2 - z2.max(1, keepdims=True))
    dz2 = (e / e.sum(1, keepdims=True) - np.eye(k)[y]) * train[:, None] / max(train.sum(), 1.0)
    g = {"layer_1/kernel": h.T @ dz2, "bias_1": dz2.sum(0)}
    da = (dz2 @ p["layer_1/kernel"].T) * (a > 0)
    g["norm_scale_0"], g["norm_bias_0"] = (da * xhat).sum(0), da.sum(0)
    dx = da * p["norm_scale_0"]
    # batch norm's backward over the real nodes (biased variance): padded rows carry no gradient
    dz1 = m * inv * (dx - (dx * m).sum(0) / cnt - xhat * (dx * xhat * m).sum(0) / cnt)
    g["layer_0/kernel"], g["bias_0"] = x.T @ dz1, dz1.sum(0)
    return g


@pytest.mark.slow
def test_fedbn_three_rounds_match_a_numpy_rederivation():
    """Independent of fgl_jax's trainers: each client takes SGD steps on its MLP with batch norm from the
    averaged leaves + its own norm leaves (gradients by hand); the server's leaves are the training-node
    weighted means of the clients' non-norm leaves; each client keeps its norm leaves; the reported test
    accuracy is each client's own model on its own nodes."""
    lr, steps = 0.3, 2
    data, model, common = toy_setup(local_steps=steps, model="mlp", optimizer="sgd", lr=lr)
    common = dataclasses.replace(common, optim=dataclasses.replace(common.optim, momentum=0.0))
    model = model.clone(norm="batch", num_layers=2, dropout=0.0)
    bn = _alg("fedbn", model, common)
    state = bn.init(jax.random.key(0), data)
    c = data.eval.num_clients
    tr = data.train
    xs, ys, node, train = (np.asarray(a, np.float64) for a in (tr.features, tr.y, tr.node_mask, tr.train_mask))
    ys = ys.astype(int)
    k = int(model.num_classes)
    share = np.asarray(data.train_weight, np.float64) / np.asarray(data.train_weight, np.float64).sum()
    server = {n: v.astype(np.float64) for n, v in _flat(state.server).items()}
    assert sorted(server) == ["bias_0", "bias_1", "layer_0/kernel", "layer_1/kernel", "norm_bias_0", "norm_scale_0"]
    kept = [{n: v.copy() for n, v in server.items() if n.startswith("norm_")} for _ in range(c)]
    step = jax.jit(bn.round)
    for r in range(3):
        trained = []
        for i in range(c):
            p = {**server, **kept[i]}
            for _ in range(steps):
                g = _bn_mlp_grads(p, xs[i], ys[i], node[i], train[i], k)
                p = {n: v - lr * g[n] for n, v in p.items()}
            trained.append(p)
            kept[i] = {n: p[n] for n in kept[i]}
        server = {n: (v if n.startswith("norm_") else sum(s * t[n] for s, t in zip(share, trained)))
                  for n, v in server.items()}
        state, metrics = step(state, data, jax.random.key(10 + r))
        got, pers = _flat(state.server), _flat(state.personal)
        for n, v in server.items():
            if not n.startswith("norm_"):
                np.testing.assert_allclose(got[n], v, rtol=1e-4, atol=1e-6, err_msg=f"round {r}: {n}")
        for n in kept[0]:
            np.testing.assert_allclose(pers[n], np.stack([kv[n] for kv in kept]), rtol=1e-4, atol=1e-6,
                                       err_msg=f"round {r}: {n}")
    assert max(np.abs(kept[i]["norm_scale_0"] - kept[0]["norm_scale_0"]).max() for i in range(c)) > 1e-4
    ev = data.eval
    correct = total = 0
    for i in range(c):
        p = {**server, **kept[i]}
        x, nm = np.asarray(ev.features[i], np.float64), np.asarray(ev.node_mask[i], np.float64)[:, None]
        z1 = x @ p["layer_0/kernel"] + p["bias_0"]
        mu = (z1 * nm).sum(0) / nm.sum()
        var = (((z1 - mu) ** 2) * nm).sum(0) / nm.sum()
        h = np.maximum((z1 - mu) / np.sqrt(var + 1e-5) * p["norm_scale_0"] + p["norm_bias_0"], 0.0)
        pred = (h @ p["layer_1/kernel"] + p["bias_1"]).argmax(1)
        mask = np.asarray(ev.test_mask[i], bool)
        correct += int((pred[mask] == np.asarray(ev.y[i])[mask]).sum())
        total += int(mask.sum())
    assert total > 0
    np.testing.assert_allclose(float(metrics["test_acc"]), correct / total, atol=1e-6)
