"""Tree GCN/GAT vs an independent dense reference; batched program vs a per-device loop."""
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from fgl_jax.systems.lumos import workload as W
from fgl_jax.systems.lumos.model import Lumos, TreeEncoder
from fgl_jax.federated import run
from fgl_jax.systems.lumos import LumosConfig, lumos_algorithm, prepare
from fgl_jax.systems.lumos.algorithm import link_loss, node_loss, roc_auc
from fgl_jax.systems.lumos.trees import build_trees
from tests.helpers import toy_graph

jax.config.update("jax_default_matmul_precision", "highest")


def dense_tree(x_self, x_nbrs):
    """Tree of Fig. 2 from its definition: nodes [s_1..s_n, l_1..l_n, P_1..P_n, R]; A, H0, leaf ids."""
    n = len(x_nbrs)
    t = 3 * n + 1
    a = np.zeros((t, t))
    for i in range(n):
        for u, v in ((i, 2 * n + i), (n + i, 2 * n + i), (2 * n + i, 3 * n)):
            a[u, v] = a[v, u] = 1
    h0 = np.zeros((t, x_self.shape[0]))
    h0[:n] = x_self
    h0[n:2 * n] = x_nbrs
    return a, h0


def gcn_layer(xp, a, h, w, b):
    at = a + np.eye(a.shape[0])
    d = at.sum(1) ** -0.5
    return xp.maximum((d[:, None] * at * d[None, :]) @ (h @ w) + b, 0.0)


def gat_layer(xp, a, h, w, a_src, a_dst, b, heads, last):
    at = a + np.eye(a.shape[0])
    t = a.shape[0]
    z = (h @ w).reshape(t, heads, -1)
    es, ed = (z * a_src).sum(-1), (z * a_dst).sum(-1)               # [t, k]
    e = ed[:, None, :] + es[None, :, :]                              # [i (dst), j (src), k]
    e = xp.where(e > 0, e, 0.2 * e)
    e = xp.where(at[:, :, None] > 0, e, -1e30)
    e = e - e.max(1, keepdims=True)
    al = xp.exp(e) * (at[:, :, None] > 0)
    al = al / al.sum(1, keepdims=True)
    out = xp.einsum("ijk,jkw->ikw", al, z)
    out = out.mean(1) if last else out.reshape(t, -1)
    return xp.maximum(out + b, 0.0)


def reference_pooled(xp, params, backbone, es, keep, x, x_nbr_of_pair, heads=4):
    """Per-device loop: each device runs the 2-layer GNN on its own dense tree, leaf embeddings are
    sent to their vertices' devices, which mean-pool them (Eq. 31)."""
    enc = params["params"]["encoder"]
    n = es.num_nodes
    sums = [0.0] * n
    cnt = np.zeros(n)
    pair = 0
    for v in range(n):
        lo, hi = es.indptr[v], es.indptr[v + 1]
        nbrs = es.nbr[lo:hi][keep[lo:hi]]
        k = len(nbrs)
        if k == 0:
            if es.degree[v] == 0:            # fallback tree (s, P, R)
                a = np.array([[0, 1, 0], [1, 0, 1], [0, 1, 0]], float)
                h = xp.concatenate([x[v][None], xp.zeros((2, x.shape[1]))])
                leaves = [(0, v)]
            else:
                continue
        else:
            a, _ = dense_tree(np.zeros(x.shape[1]), np.zeros((k, x.shape[1])))
            xs = xp.stack([x[v]] * k)
            xn = xp.stack([x_nbr_of_pair[pair + i] for i in range(k)])
            h = xp.concatenate([xs, xn, xp.zeros((k + 1, x.shape[1]))])
            leaves = [(i, v) for i in range(k)] + [(k + i, int(u)) for i, u in enumerate(nbrs)]
            pair += k
        for i in range(2):
            last = i == 1
            if backbone == "gcn":
                h = gcn_layer(xp, a, h, enc[f"layer_{i}"]["kernel"], enc[f"bias_{i}"])
            else:
                h = gat_layer(xp, a, h, enc[f"layer_{i}"]["kernel"], enc[f"att_src_{i}"], enc[f"att_dst_{i}"],
                              enc[f"bias_{i}"], 1 if last else heads, last)
        for node, u in leaves:
            sums[u] = sums[u] + h[node]
            cnt[u] += 1
    return xp.stack([sums[u] / cnt[u] for u in range(n)])


def setup(backbone, n=30, seed=0):
    g = toy_graph(n, num_features=6, seed=seed, isolated=2)
    es = W.EdgeSet.from_graph(g)
    keep, _ = W.greedy_init(es)
    cfg = LumosConfig(model=backbone, trim="greedy", epsilon=2.0, rounds=1)
    prep = prepare(g, cfg)
    model = Lumos(backbone=backbone, num_classes=g.num_classes)
    params = model.init(jax.random.PRNGKey(seed), prep.data.table, prep.data.trees, False)
    params = jax.tree.map(lambda p: p + 0.1 * jax.random.normal(jax.random.PRNGKey(9), p.shape), params)
    x = np.asarray(prep.data.table)[:n]
    xnb = np.asarray(prep.data.table)[n:-1]
    return g, es, prep.keep, prep, model, params, x, xnb


@pytest.mark.slow
@pytest.mark.parametrize("backbone", ["gcn", "gat"])
def test_forward_matches_dense_numpy_reference(backbone):
    g, es, keep, prep, model, params, x, xnb = setup(backbone)
    h, logits = jax.jit(lambda p, d: model.apply(p, d.table, d.trees))(params, prep.data)
    p_np = jax.tree.map(np.asarray, params)
    ref = reference_pooled(np, p_np, backbone, es, keep, x, xnb)
    np.testing.assert_allclose(np.asarray(h), ref, atol=1e-5, rtol=1e-5)
    head = p_np["params"]["head"]
    np.testing.assert_allclose(np.asarray(logits), ref @ head["kernel"] + head["bias"], atol=1e-5, rtol=1e-5)


@pytest.mark.slow
@pytest.mark.parametrize("backbone", ["gcn", "gat"])
def test_batched_equals_per_device_loop_loss_and_grads(backbone):
    g, es, keep, prep, model, params, x, xnb = setup(backbone, n=16, seed=1)
    y, mask = prep.data.y, prep.data.train_mask

    def batched(p):
        _, lg = model.apply(p, prep.data.table, prep.data.trees, train=False)
        return node_loss(lg, y, mask)

    def looped(p):
        h = reference_pooled(jnp, p, backbone, es, keep, jnp.asarray(x), jnp.asarray(xnb))
        lg = h @ p["params"]["head"]["kernel"] + p["params"]["head"]["bias"]
        ce = optax.softmax_cross_entropy_with_integer_labels(lg, y)
        return jnp.sum(ce * mask) / mask.sum()

    lb, gb = jax.jit(jax.value_and_grad(batched))(params)
    ll, gl = jax.jit(jax.value_and_grad(looped))(params)
    assert float(lb) == pytest.approx(float(ll), rel=1e-5)
    for a, b in zip(jax.tree.leaves(gb), jax.tree.leaves(gl)):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), atol=1e-5, rtol=1e-4)


@pytest.mark.slow
def test_padding_is_inert():
    g, es, keep, prep, model, params, x, xnb = setup("gcn")
    tb2, _ = build_trees(es, keep, x.shape[1], node_multiple=4096, edge_multiple=16384)
    h1, _ = model.apply(params, prep.data.table, prep.data.trees)
    h2, _ = model.apply(params, prep.data.table, tb2)
    np.testing.assert_allclose(np.asarray(h1), np.asarray(h2), atol=1e-6)


@pytest.mark.parametrize("layers,changes", [(2, False), (4, True)])
def test_locality_of_leaf_embeddings(layers, changes):
    """Spec T9: with 2 layers a leaf depends on its own pair only; with 4 the root path is active."""
    es = W.EdgeSet.from_arrays([0, 0, 0], [1, 2, 3], 4)
    keep = es.owner == 0
    tb, _ = build_trees(es, keep, 3, node_multiple=16, edge_multiple=32)
    rng = np.random.default_rng(0)
    table = jnp.asarray(rng.normal(size=(4 + 3 + 1, 3)), jnp.float32).at[-1].set(0.0)
    enc = TreeEncoder("gcn", num_layers=layers)
    p = enc.init(jax.random.PRNGKey(0), table, tb)
    p = jax.tree.map(lambda a: jnp.abs(a) + 0.1, p)   # positive weights: ReLU never kills the signal
    h = enc.apply(p, table, tb)
    h2 = enc.apply(p, table.at[4 + 2].add(5.0), tb)   # perturb pair 2's neighbour feature
    # pair 0's leaves are nodes 0 (s_0) and 3 (l_0)
    diff = float(jnp.abs(h[jnp.array([0, 3])] - h2[jnp.array([0, 3])]).max())
    assert (diff > 1e-4) == changes


def test_losses_match_optax_and_auc_bruteforce():
    rng = np.random.default_rng(0)
    h = jnp.asarray(rng.normal(size=(10, 4)), jnp.float32)
    pos = jnp.array([[0, 1], [2, 3], [4, 5]])
    key = jax.random.PRNGKey(0)
    off = jax.random.randint(key, (3,), 1, 10)
    neg = jnp.stack([pos[:, 0], (pos[:, 0] + off) % 10], 1)
    lp = (h[pos[:, 0]] * h[pos[:, 1]]).sum(-1)
    ln = (h[neg[:, 0]] * h[neg[:, 1]]).sum(-1)
    want = optax.sigmoid_binary_cross_entropy(jnp.concatenate([lp, ln]), jnp.r_[jnp.ones(3), jnp.zeros(3)]).mean()
    assert float(link_loss(h, pos, key)) == pytest.approx(float(want), rel=1e-6)
    s = jnp.asarray([0.1, 0.4, 0.4, 0.9, 0.2, 0.4])
    lab = jnp.asarray([1, 1, 0, 1, 0, 0], jnp.float32)
    pairs = [(a, b) for a in range(6) for b in range(6) if lab[a] == 1 and lab[b] == 0]
    bf = np.mean([1.0 if s[a] > s[b] else 0.5 if s[a] == s[b] else 0.0 for a, b in pairs])
    assert float(roc_auc(s, lab)) == pytest.approx(bf)


@pytest.mark.slow
def test_training_smoke_beats_chance():
    g = toy_graph(120, num_features=8, seed=4)
    cfg = LumosConfig(rounds=40, epsilon=float("inf"), trim="greedy")
    res = run(lumos_algorithm(cfg, g.num_classes), prepare(g, cfg).data, jax.random.key(cfg.seed), cfg.rounds)
    assert res.best["best_val"] > 1.0 / g.num_classes + 0.1
    assert np.isfinite(res.history["train_loss"]).all()


def test_auc_large_counts_no_overflow():
    """n_pos * n_neg > 2^31 (Facebook's training pairs): the AUC must stay the Mann-Whitney value."""
    from scipy.stats import rankdata
    rng = np.random.default_rng(1)
    n = 60_000
    s = np.r_[rng.normal(0.3, 1, n), rng.normal(0, 1, n)].astype(np.float32)
    lab = np.r_[np.ones(n), np.zeros(n)].astype(np.float32)
    r = rankdata(s)
    want = (r[:n].sum() - n * (n + 1) / 2) / (n * n)
    assert float(roc_auc(jnp.asarray(s), jnp.asarray(lab))) == pytest.approx(want, abs=1e-4)
