"""FedGC gradient matching: federated == centralised, second order by finite differences, pieces."""
import os
import sys

import numpy as np
import jax
import jax.numpy as jnp
import optax
import pytest

sys.path.insert(0, os.path.dirname(__file__))
from helpers import dense_adj, toy_graph  # noqa: E402
from fgl_jax.systems.fedgc.condense import (CondenseConfig, aggregate, aggregated_client_grads,
                              build_client_data, dist_gcond, dist_mse, init_pge, init_relay,
                              make_condenser, matching_loss, normalize_dense, pge_adjacency, relay_dense,
                              synthetic_class_counts, synthetic_labels, class_coefficients, fed_round)
from fgl_jax.systems.fedgc import expand_clients


_CENTRAL = {}


def central_class_grads(theta, g, relay="gcn"):
    """Reference: dense relay on the FULL graph, per-class mean NLL over the class's training nodes."""
    a = normalize_dense(jnp.asarray(dense_adj(g), jnp.float32))
    x = jnp.asarray(g.dense_x())

    def loss(t, c):
        logp = jax.nn.log_softmax(relay_dense(t, x, a, relay), -1)
        m = jnp.asarray(g.train_mask & (g.y == c), jnp.float32)
        return -(logp[:, c] * m).sum() / m.sum()

    if (id(g), relay) in _CENTRAL:
        return _CENTRAL[(id(g), relay)](theta)

    @jax.jit
    def all_classes(t):
        grads = [jax.grad(loss)(t, c) for c in range(g.num_classes)]
        return jax.tree.map(lambda *v: jnp.stack(v), *grads)

    _CENTRAL[(id(g), relay)] = all_classes
    return all_classes(theta)


def max_diff(a, b):
    return max(float(jnp.abs(u - v).max()) for u, v in zip(jax.tree.leaves(a), jax.tree.leaves(b)))


@pytest.mark.slow
@pytest.mark.parametrize("relay", ["gcn", "sgc"])
def test_weighted_federated_gradient_equals_centralised(relay):
    g = toy_graph(80, 3, 10, seed=1)
    assignment = np.random.default_rng(0).integers(0, 4, g.num_nodes)
    hops = 3 if relay == "gcn" else 4  # l_hop >= K+1: boundary degrees in Â are exact
    graphs, _ = expand_clients(g, assignment, 4, hops)
    data = build_client_data(graphs, [h.dense_x() for h in graphs], relay=relay, cap=None, fanout=None)
    theta = init_relay(jax.random.PRNGKey(0), 10, 16, 3)
    ref = central_class_grads(theta, g, relay)
    for axis, d in (("vmap", data), ("scan", data), ("fused", data), ("fused-padded", data.replace(flat=()))):
        fed = jax.jit(aggregated_client_grads, static_argnums=(3, 4, 5))(theta, d, jnp.int32(0), relay,
                                                                          "weighted", axis.split("-")[0])
        assert max_diff(fed, ref) < 1e-5, axis
    # the counts the server weights by are the clients' own training counts
    np.testing.assert_array_equal(np.asarray(data.counts).sum(0),
                                  np.bincount(g.y[g.train_mask], minlength=3))


@pytest.mark.slow
@pytest.mark.parametrize("agg", ["weighted", "uniform"])
def test_flat_blocks_equal_per_client_blocks_with_sampling(agg):
    """The end-to-end class blocks (`ClientData.flat`, the default fused path) give the per-client
    blocks' aggregate for sampled neighbours, capped targets and every pool."""
    g = toy_graph(80, 3, 10, seed=2)
    assignment = np.random.default_rng(1).integers(0, 4, g.num_nodes)
    graphs, _ = expand_clients(g, assignment, 4, 2)
    data = build_client_data(graphs, [h.dense_x() for h in graphs], fanout=2, cap=3, pools=2, seed=3)
    theta = init_relay(jax.random.PRNGKey(1), 10, 16, 3)
    fn = jax.jit(aggregated_client_grads, static_argnums=(3, 4, 5))
    for pool in (0, 1):
        ref = fn(theta, data, jnp.int32(pool), "gcn", agg, "vmap")
        assert max_diff(fn(theta, data, jnp.int32(pool), "gcn", agg, "fused"), ref) < 1e-5, pool


@pytest.mark.slow
def test_truncated_neighbourhood_differs():
    """Caveat (spec test 1, claim 2): with l_hop = K the boundary degrees are truncated."""
    g = toy_graph(80, 3, 10, seed=1)
    assignment = np.random.default_rng(0).integers(0, 4, g.num_nodes)
    graphs, _ = expand_clients(g, assignment, 4, 2)
    data = build_client_data(graphs, [h.dense_x() for h in graphs])
    theta = init_relay(jax.random.PRNGKey(0), 10, 16, 3)
    fed = jax.jit(aggregated_client_grads)(theta, data, jnp.int32(0))
    assert max_diff(fed, central_class_grads(theta, g)) > 1e-4


def test_uniform_aggregation_is_mean_over_holders():
    grads = {"w": jnp.arange(2 * 3 * 2, dtype=jnp.float32).reshape(2, 3, 2)}
    counts = jnp.asarray([[1.0, 0.0, 3.0], [3.0, 2.0, 1.0]])
    w = aggregate(grads, counts, "weighted")["w"]
    np.testing.assert_allclose(w[0], 0.25 * grads["w"][0, 0] + 0.75 * grads["w"][1, 0])
    np.testing.assert_allclose(w[1], grads["w"][1, 1])
    u = aggregate(grads, counts, "uniform")["w"]
    np.testing.assert_allclose(u[0], 0.5 * (grads["w"][0, 0] + grads["w"][1, 0]))
    np.testing.assert_allclose(u[1], grads["w"][1, 1])


@pytest.mark.slow
def test_one_client_equals_centralised_one_step_gcond():
    """M=1 FedGC rounds == a standalone centralised GCond(outer=1, inner=0) loop written here."""
    g = toy_graph(50, 3, 8, seed=2)
    cfg = CondenseConfig(hidden=8, pge_hidden=6, adj_period=4, adj_steps=2, lr_feat=1e-2, lr_adj=1e-2)
    data = build_client_data([g], [g.dense_x()])
    counts = np.bincount(g.y[g.train_mask], minlength=3)
    syn_counts = synthetic_class_counts(counts, 0.3)
    cond = make_condenser(cfg, 8, 3)
    state0 = cond.init(jax.random.PRNGKey(5), syn_counts)
    key = jax.random.PRNGKey(9)
    rounds = 7
    step = jax.jit(lambda s, k: fed_round(cond, s, data, k))   # the round the engine scans
    state, losses = state0, []
    for r in range(rounds):
        state, loss = step(state, jax.random.fold_in(key, r))
        losses.append(loss)
    losses = jnp.stack(losses)

    # --- standalone reference (dense, per-class jax.grad, explicit alternation) ---
    x, pge = state0.x_syn, state0.pge
    ox, op = optax.adam(cfg.lr_feat), optax.adam(cfg.lr_adj)
    sx, sp_ = ox.init(x), op.init(pge)
    y_syn = jnp.asarray(synthetic_labels(syn_counts))
    coeff = jnp.asarray(syn_counts / syn_counts.max(), jnp.float32)
    ref_losses = []

    @jax.jit
    def loss_and_grads(xx, pp, theta, g_real):
        def loss_fn(xx, pp):
            a = normalize_dense(pge_adjacency(pp, xx))
            total = 0.0
            for c in range(3):
                def lc(t):
                    logp = jax.nn.log_softmax(relay_dense(t, xx, a), -1)
                    m = (y_syn == c).astype(jnp.float32)
                    return -(logp[:, c] * m).sum() / m.sum()
                gs = jax.grad(lc)(theta)
                total = total + coeff[c] * sum(jnp.sum((gs[k] - g_real[k][c]) ** 2) for k in gs)
            return total
        return jax.value_and_grad(loss_fn, argnums=(0, 1))(xx, pp)

    for r in range(rounds):
        theta = init_relay(jax.random.fold_in(key, r), 8, 8, 3)
        l, (gx, gp) = loss_and_grads(x, pge, theta, central_class_grads(theta, g))
        ref_losses.append(float(l))
        if r % cfg.adj_period < cfg.adj_steps:
            u, sp_ = op.update(gp, sp_, pge)
            pge = optax.apply_updates(pge, u)
        else:
            u, sx = ox.update(gx, sx, x)
            x = optax.apply_updates(x, u)
    np.testing.assert_allclose(np.asarray(losses), ref_losses, rtol=2e-4, atol=1e-6)
    np.testing.assert_allclose(np.asarray(state.x_syn), np.asarray(x), rtol=1e-4, atol=1e-6)
    # Biases feeding a BatchNorm have an exactly-zero true gradient (BN removes the mean), so Adam
    # turns their float noise into ±lr steps; they cannot change A' and are excluded here.
    pre_bn = {"b0", "b1"}
    assert max_diff({k: v for k, v in state.pge.items() if k not in pre_bn},
                    {k: v for k, v in pge.items() if k not in pre_bn}) < 1e-4
    np.testing.assert_allclose(np.asarray(pge_adjacency(state.pge, state.x_syn)),
                               np.asarray(pge_adjacency(pge, x)), atol=1e-5)
    assert int(state.round) == rounds


@pytest.mark.slow
def test_second_order_gradient_finite_differences():
    with jax.enable_x64(True):
        k = jax.random.split(jax.random.PRNGKey(3), 5)
        d, n_syn, c = 4, 6, 2
        x = jax.random.normal(k[0], (n_syn, d), jnp.float64)
        pge = jax.tree.map(lambda a: a.astype(jnp.float64), init_pge(k[1], d, 5))
        theta = jax.tree.map(lambda a: a.astype(jnp.float64), init_relay(k[2], d, 5, c))
        g_real = jax.tree.map(lambda a: 0.1 * jax.random.normal(k[3], (c,) + a.shape, jnp.float64), theta)
        y = jnp.asarray([0, 0, 0, 1, 1, 1])
        coeff = jnp.asarray([1.0, 1.0], jnp.float64)
        for dist in ("mse", "gcond"):
            f = jax.jit(lambda xx, pp, dist=dist: matching_loss(xx, pp, theta, g_real, y, coeff, "gcn", dist))
            gx, gp = jax.grad(f, argnums=(0, 1))(x, pge)
            eps = 1e-6
            fd = np.zeros(x.shape)
            for i in range(n_syn):
                for j in range(d):
                    e = jnp.zeros_like(x).at[i, j].set(eps)
                    fd[i, j] = (f(x + e, pge) - f(x - e, pge)) / (2 * eps)
            np.testing.assert_allclose(np.asarray(gx), fd, rtol=1e-5, atol=1e-8)
            w = pge["w1"]
            for (i, j) in [(0, 0), (2, 3), (4, 1)]:
                e = jnp.zeros_like(w).at[i, j].set(eps)
                num = (f(x, {**pge, "w1": w + e}) - f(x, {**pge, "w1": w - e})) / (2 * eps)
                np.testing.assert_allclose(float(gp["w1"][i, j]), float(num), rtol=1e-5, atol=1e-8)


def test_distances():
    rng = np.random.default_rng(0)
    g1 = {"w": jnp.asarray(rng.normal(size=(5, 3)), jnp.float32), "b": jnp.asarray(rng.normal(size=3), jnp.float32)}
    g2 = {"w": jnp.asarray(rng.normal(size=(5, 3)), jnp.float32), "b": jnp.asarray(rng.normal(size=3), jnp.float32)}
    assert float(dist_mse(g1, g1)) == 0.0
    assert abs(float(dist_gcond(g1, g1))) < 1e-5
    hand = np.sum((np.asarray(g1["w"]) - np.asarray(g2["w"])) ** 2) + np.sum((np.asarray(g1["b"]) - np.asarray(g2["b"])) ** 2)
    np.testing.assert_allclose(float(dist_mse(g1, g2)), hand, rtol=1e-6)
    scaled = {"w": g2["w"] * jnp.asarray([0.5, 2.0, 7.0]), "b": g2["b"] * 100.0}
    np.testing.assert_allclose(float(dist_gcond(g1, scaled)), float(dist_gcond(g1, g2)), rtol=1e-4)
    # per-column cosine by hand
    a, b = np.asarray(g1["w"]), np.asarray(g2["w"])
    ref = np.sum(1 - (a * b).sum(0) / (np.linalg.norm(a, axis=0) * np.linalg.norm(b, axis=0) + 1e-6))
    np.testing.assert_allclose(float(dist_gcond(g1, g2)), ref, rtol=1e-5)


@pytest.mark.slow
def test_pge_properties_and_normalisation():
    x = jax.random.normal(jax.random.PRNGKey(0), (7, 5))
    p = init_pge(jax.random.PRNGKey(1), 5, 8)
    a = np.asarray(pge_adjacency(p, x))
    np.testing.assert_allclose(a, a.T, atol=1e-6)
    assert np.all(np.diag(a) == 0)
    off = a[~np.eye(7, dtype=bool)]
    assert np.all((off > 0) & (off < 1))
    perm = np.random.default_rng(0).permutation(7)
    a_perm = np.asarray(pge_adjacency(p, x[perm]))
    np.testing.assert_allclose(a_perm, a[np.ix_(perm, perm)], atol=1e-5)
    w = np.abs(np.random.default_rng(1).normal(size=(6, 6)))
    w = w + w.T
    at = w + np.eye(6)
    dinv = 1 / np.sqrt(at.sum(1))
    np.testing.assert_allclose(np.asarray(normalize_dense(jnp.asarray(w))), dinv[:, None] * at * dinv[None], rtol=1e-5)


def test_synthetic_label_counts():
    counts = synthetic_class_counts(np.full(7, 20), 0.5)  # Cora's public split at rate 0.5
    assert counts.sum() == 70 and np.all(counts == 10)
    uneven = synthetic_class_counts(np.array([3, 50, 10, 1]), 0.25)
    assert uneven.tolist() == [1, 13 - 4, 2, 1] or uneven.sum() == 16
    assert np.all(uneven >= 1) and uneven[1] == int(64 * 0.25) - (1 + 2 + 1)
    y = synthetic_labels(uneven)
    assert np.all(np.diff(y) >= 0) and np.bincount(y).tolist() == uneven.tolist()
    np.testing.assert_allclose(np.asarray(class_coefficients(uneven)), uneven / uneven.max())


@pytest.mark.parametrize("rate", [0.0, -0.1, 1.5, float("nan")])
def test_bad_rate(rate):
    with pytest.raises(ValueError, match="rate"):
        synthetic_class_counts(np.full(3, 10), rate)


def test_class_without_training_node():
    with pytest.raises(ValueError, match=r"class\(es\) \[1\] have no training node"):
        synthetic_class_counts(np.array([4, 0, 3]), 0.5)


def test_bad_configs():
    with pytest.raises(ValueError, match="relay"):
        CondenseConfig(relay="gat")
    with pytest.raises(ValueError, match="dist"):
        CondenseConfig(dist="l1")
    with pytest.raises(ValueError, match="agg"):
        CondenseConfig(agg="median")


@pytest.mark.slow
def test_pge_init_bias_starts_sparse():
    """pge_init_bias sets only Φ's last bias; A' then starts near σ(b) instead of near 0.5."""
    counts = np.array([20, 20, 20])
    dense = make_condenser(CondenseConfig(hidden=8, pge_hidden=16), 8, 3).init(jax.random.PRNGKey(3), counts)
    b = -4.6
    sparse = make_condenser(CondenseConfig(hidden=8, pge_hidden=16, pge_init_bias=b), 8, 3).init(
        jax.random.PRNGKey(3), counts)
    np.testing.assert_array_equal(np.asarray(sparse.pge["b2"]), np.full(1, b, np.float32))
    for k in dense.pge:
        if k != "b2":
            np.testing.assert_array_equal(np.asarray(sparse.pge[k]), np.asarray(dense.pge[k]))
    np.testing.assert_array_equal(np.asarray(sparse.x_syn), np.asarray(dense.x_syn))
    off = ~np.eye(60, dtype=bool)
    med_dense = np.median(np.asarray(pge_adjacency(dense.pge, dense.x_syn))[off])
    med_sparse = np.median(np.asarray(pge_adjacency(sparse.pge, sparse.x_syn))[off])
    s = 1 / (1 + np.exp(-b))
    assert 0.2 < med_dense < 0.8
    assert s / 3 < med_sparse < 3 * s, (med_sparse, s)


def test_bad_pge_init_bias():
    with pytest.raises(ValueError, match="pge_init_bias"):
        CondenseConfig(pge_init_bias=float("nan"))
    with pytest.raises(ValueError, match="pge_init_bias"):
        CondenseConfig(pge_init_bias=100.0)
