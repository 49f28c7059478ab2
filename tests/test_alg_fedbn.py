"""FedBN and the models' normalisation option against independent references: the normalisation
re-derived in NumPy on a padded client, FedBN without normalisation layers = FedAvg exactly, and
two rounds with batch norm re-derived leaf by leaf (the server averages exactly the non-norm leaves
of the clients' trained models, weighted by training nodes; each client keeps the norm leaves it
trained), from clients trained by the Local algorithm as an independent trainer."""
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


def test_fedbn_two_rounds_average_exactly_the_non_norm_leaves():
    # sgd: bias_0 sits before the batch norm, so its gradient is float noise that Adam would
    # amplify to full-size steps and the two trainers' roundings would part
    data, model, common = toy_setup(local_steps=2, model="gcn", optimizer="sgd", lr=0.2)
    model = model.clone(norm="batch")
    common = dataclasses.replace(common, reset_optimizer=True)   # the reference trainer starts fresh too
    bn = _alg("fedbn", model, common)
    local = _alg("local", model, common)
    state = bn.init(jax.random.key(0), data)
    c = data.eval.num_clients
    idx = np.asarray(data.train_index)
    share = np.asarray(data.train_weight, np.float64) / np.asarray(data.train_weight, np.float64).sum()
    server = _flat(state.server)
    kept = {k: np.stack([v] * c) for k, v in server.items() if k.startswith("norm_")}  # each client's norm leaves
    assert sorted(kept) == ["norm_bias_0", "norm_scale_0"]
    for r in range(2):
        key = jax.random.key(10 + r)
        # the independent trainer: Local's round from each client's start (server leaves + its own norm leaves)
        start = {k: (kept[k] if k in kept else np.stack([v] * c)) for k, v in server.items()}
        ls = local.init(jax.random.key(0), data)
        ls = dataclasses.replace(ls, personal={"params": traverse_util.unflatten_dict(
            {k: jnp.asarray(v, jnp.float32) for k, v in start.items()}, sep="/")})
        ls, _ = jax.jit(local.round)(ls, data, key)
        trained = {k: np.asarray(v, np.float64)[idx] for k, v in _flat(ls.personal).items()}
        server = {k: (v if k in kept else np.tensordot(share, trained[k], axes=1)) for k, v in server.items()}
        for k in kept:
            kept[k] = kept[k].copy()
            kept[k][idx] = trained[k]
        state, metrics = jax.jit(bn.round)(state, data, key)
        got = _flat(state.server)
        for k in server:
            np.testing.assert_allclose(got[k], server[k], rtol=1e-5, atol=1e-6, err_msg=k)
        pers = _flat(state.personal)
        for k in kept:
            np.testing.assert_allclose(pers[k], kept[k], rtol=1e-5, atol=1e-6, err_msg=k)
            assert np.abs(kept[k] - server[k]).max() > 1e-4   # the norm leaves really are personal
    # reported: each client's model = averaged leaves + its own norm leaves, on its own subgraph
    own = {k: (kept[k] if k in kept else np.stack([v] * c)) for k, v in server.items()}
    ev = data.eval
    correct = total = 0
    for i in range(c):
        p = {"params": traverse_util.unflatten_dict({k: jnp.asarray(v[i], jnp.float32) for k, v in own.items()},
                                                    sep="/")}
        one = jax.tree.map(lambda a: a[i], ev)
        pred = np.asarray(model.apply(p, one, train=False)).argmax(1)
        mask = np.asarray(one.test_mask, bool)
        correct += int((pred[mask] == np.asarray(one.y)[mask]).sum())
        total += int(mask.sum())
    np.testing.assert_allclose(float(metrics["test_acc"]), correct / total, atol=1e-6)


def test_fedbn_refuses_a_global_eval_mode_with_norm():
    _, model, common = toy_setup()
    with pytest.raises(ValueError, match="FedBN keeps the normalisation layers on the clients"):
        _alg("fedbn", model.clone(norm="batch"), dataclasses.replace(common, eval_mode="global_model_on_local_data"))
