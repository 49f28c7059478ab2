"""Each model against a dense NumPy reference written from the papers' formulas."""
import jax
import numpy as np
import pytest

from fgl_jax.batch import full_graph_batch, unstack
from fgl_jax.nn import make_model
from tests.helpers import dense_adj, toy_graph


def _params_np(params):
    return jax.tree.map(np.asarray, params)["params"]


def _relu(x):
    return np.maximum(x, 0)


def _gcn_norm(a):
    a_hat = a + np.eye(len(a))
    d = a_hat.sum(1)
    return a_hat / np.sqrt(d)[:, None] / np.sqrt(d)[None, :]


def ref_gcn(p, x, a):
    s = _gcn_norm(a)
    h = _relu(s @ x @ p["layer_0"]["kernel"] + p["bias_0"])
    return s @ h @ p["layer_1"]["kernel"] + p["bias_1"]


def ref_sage(p, x, a):
    deg = np.maximum(a.sum(1), 1)
    mean = a / deg[:, None]
    h = x
    for i in range(2):
        k = p[f"layer_{i}"]["kernel"]
        w = k.shape[1] // 2
        h = h @ k[:, :w] + mean @ h @ k[:, w:] + p[f"bias_{i}"]
        if i == 0:
            h = _relu(h)
    return h


def ref_gat(p, x, a, heads):
    n = len(a)
    a_loop = a + np.eye(n)
    h = x
    for i, k in enumerate((heads, 1)):
        w = p[f"layer_{i}"]["kernel"]
        width = w.shape[1] // k
        z = (h @ w).reshape(n, k, width)
        es = (z * p[f"att_src_{i}"]).sum(-1)
        ed = (z * p[f"att_dst_{i}"]).sum(-1)
        out = np.zeros((n, k, width))
        for v in range(n):
            nb = np.flatnonzero(a_loop[v])
            e = es[nb] + ed[v][None]
            e = np.where(e > 0, e, 0.2 * e)
            att = np.exp(e - e.max(0))
            att /= att.sum(0)
            out[v] = (att[..., None] * z[nb]).sum(0)
        if i == 0:
            h = out.reshape(n, k * width) + p["bias_0"]
            h = np.where(h > 0, h, np.expm1(np.minimum(h, 0)))
        else:
            h = out.mean(1) + p["bias_1"]
    return h


def ref_sgc(p, x, a, k=2):
    s = _gcn_norm(a)
    return np.linalg.matrix_power(s, k) @ x @ p["layer_0"]["kernel"] + p["bias_0"]


def ref_mlp(p, x, a):
    h = _relu(x @ p["layer_0"]["kernel"] + p["bias_0"])
    return h @ p["layer_1"]["kernel"] + p["bias_1"]


REFS = {"gcn": ref_gcn, "sage": ref_sage, "sgc": ref_sgc, "mlp": ref_mlp}


@pytest.mark.slow
@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("name", ["gcn", "sage", "sgc", "mlp", "gat"])
def test_model_matches_dense_numpy(name, sparse):
    g = toy_graph(sparse=sparse, seed=3)
    batch = unstack(full_graph_batch(g), 0)
    kw = {"heads": 3} if name == "gat" else {}
    model = make_model(name, g.num_features, g.num_classes, hidden=8, **kw)
    params = model.init(jax.random.key(1), batch)
    out = np.asarray(model.apply(params, batch))[: g.num_nodes]
    p = _params_np(params)
    x, a = g.dense_x().astype(np.float64), dense_adj(g)
    ref = ref_gat(p, x, a, 3) if name == "gat" else REFS[name](p, x, a)
    np.testing.assert_allclose(out, ref, rtol=2e-4, atol=2e-4)


def test_make_model_rejects_bad_input():
    with pytest.raises(ValueError, match="unknown model"):
        make_model("transformer", 4, 2)
    with pytest.raises(ValueError, match="hidden"):
        make_model("gcn", 4, 2, hidden=0)
    with pytest.raises(ValueError, match="dropout"):
        make_model("gcn", 4, 2, dropout=1.5)


# --- APPNP and ChebNet (FedGC Table 3 architectures, spec §4.7/§5.18) -----------------------------

def ref_appnp(p, x, a, k=10, alpha=0.1):
    """H = MLP(X); Z_{t+1} = (1-alpha) S Z_t + alpha H with S = D̃^-1/2 (A+I) D̃^-1/2 (weighted A)."""
    h = ref_mlp(p, x, a)
    s, z = _gcn_norm(a), h
    for _ in range(k):
        z = (1 - alpha) * s @ z + alpha * h
    return z


def ref_cheb(p, x, a, k=2):
    """PyG ChebConv (sym, lambda_max=2): sum_j T_j(L̂) H W_j + b, L̂ = -D^-1/2 A D^-1/2 (0 rows if deg=0)."""
    a = a * (1 - np.eye(len(a)))
    d = a.sum(1)
    inv = np.where(d > 0, 1 / np.sqrt(np.where(d > 0, d, 1)), 0.0)
    lap = -inv[:, None] * a * inv[None, :]
    ts = [np.eye(len(a)), lap]
    while len(ts) < k:
        ts.append(2 * lap @ ts[-1] - ts[-2])
    h = x
    for i in range(2):
        w = p[f"layer_{i}"]["kernel"]
        width = w.shape[1] // k
        h = sum(ts[j] @ h @ w[:, j * width:(j + 1) * width] for j in range(k)) + p[f"bias_{i}"]
        if i == 0:
            h = _relu(h)
    return h


def _weighted_graph(n=24, f=7, c=3, seed=0):
    """Random symmetric weighted adjacency (about 30% density, two isolated nodes) as G' would be."""
    rng = np.random.default_rng(seed)
    a = rng.uniform(0.05, 1.0, (n, n)) * (rng.random((n, n)) < 0.3)
    a = np.triu(a, 1)
    a = a + a.T
    a[:2] = a[:, :2] = 0.0
    x = rng.normal(size=(n, f)).astype(np.float32)
    y = rng.integers(0, c, n)
    return a, x, y


_APPNP = lambda p, x, a: ref_appnp(p, x, a)
_CHEB = lambda p, x, a: ref_cheb(p, x, a)


@pytest.mark.slow
@pytest.mark.parametrize("name,kw,ref,weighted", [
    ("appnp", {}, _APPNP, False), ("appnp", {}, _APPNP, True),
    ("appnp", {"K": 3, "alpha": 0.3}, lambda p, x, a: ref_appnp(p, x, a, 3, 0.3), True),
    ("cheb", {}, _CHEB, False), ("cheb", {}, _CHEB, True),
    ("cheb", {"K": 3}, lambda p, x, a: ref_cheb(p, x, a, 3), True),  # Clenshaw path beyond the T_1 term
])
def test_appnp_cheb_match_dense_numpy(name, kw, ref, weighted):
    import jax.numpy as jnp
    from fgl_jax.systems.fedgc.evaluate import dense_graph_batch
    if weighted:  # the condensed-graph path: all ordered pairs, A'_ij carried as edge weight
        a, x, y = _weighted_graph()
        batch = dense_graph_batch(jnp.asarray(a, jnp.float32), jnp.asarray(x), jnp.asarray(y))
        n, c = len(a), 3
    else:  # a padded real graph with unit edges and isolated nodes
        g = toy_graph(seed=5)
        batch = unstack(full_graph_batch(g), 0)
        x, a, n, c = g.dense_x(), dense_adj(g), g.num_nodes, g.num_classes
    model = make_model(name, x.shape[1], c, hidden=8, **kw)
    params = model.init(jax.random.key(2), batch)
    # non-zero biases so that they are checked too
    params = jax.tree.map(lambda v: v + 0.1 * np.arange(v.size).reshape(v.shape) / v.size, params)
    out = np.asarray(model.apply(params, batch, train=False))[:n]
    np.testing.assert_allclose(out, ref(_params_np(params), x.astype(np.float64), a), rtol=1e-5, atol=1e-5)


@pytest.mark.slow
def test_appnp_cheb_weights_matter():
    """Scaling one edge's weight changes the output (the weight is not read as a 0/1 mask), and
    gradients w.r.t. parameters and edge weights stay finite with isolated (degree-0) nodes."""
    import jax.numpy as jnp
    from fgl_jax.systems.fedgc.evaluate import dense_graph_batch
    a, x, y = _weighted_graph(seed=1)
    for name in ("appnp", "cheb"):
        model = make_model(name, x.shape[1], 3, hidden=8)
        b1 = dense_graph_batch(jnp.asarray(a, jnp.float32), jnp.asarray(x), jnp.asarray(y))
        a2 = a.copy()
        i, j = np.argwhere(a > 0)[0]
        a2[i, j] = a2[j, i] = a[i, j] * 3
        b2 = dense_graph_batch(jnp.asarray(a2, jnp.float32), jnp.asarray(x), jnp.asarray(y))
        params = model.init(jax.random.key(0), b1)
        assert np.abs(np.asarray(model.apply(params, b1) - model.apply(params, b2))).max() > 1e-4
        if name == "cheb":  # ChebNet's own degree normalisation (APPNP reuses ops.gcn_propagate)
            gp, gw = jax.grad(lambda q, w: model.apply(q, b1.replace(edge_mask=w)).sum(), argnums=(0, 1))(
                params, b1.edge_mask)
            assert all(np.isfinite(np.asarray(v)).all() for v in jax.tree.leaves((gp, gw)))


@pytest.mark.slow
@pytest.mark.parametrize("name", ["appnp", "cheb"])
def test_appnp_cheb_train_on_sbm(name):
    """Dropout-on training for 100 Adam steps on an easy CSBM reaches high test accuracy."""
    import optax
    from fgl_jax.data.synthetic import csbm
    from fgl_jax.federated.metrics import masked_cross_entropy
    g = csbm(num_nodes=300, num_classes=3, num_features=16, avg_degree=6, homophily=0.9,
             feature_signal=1.0, seed=0)
    batch = unstack(full_graph_batch(g), 0)
    model = make_model(name, g.num_features, g.num_classes, hidden=32, dropout=0.5)
    params = model.init(jax.random.key(0), batch)
    opt = optax.adam(1e-2)

    def step(carry, k):
        p, o = carry
        loss, grad = jax.value_and_grad(lambda q: masked_cross_entropy(
            model.apply(q, batch, train=True, rngs={"dropout": k}), batch.y, batch.train_mask))(p)
        upd, o = opt.update(grad, o, p)
        return (optax.apply_updates(p, upd), o), loss

    (params, _), losses = jax.jit(lambda p, ks: jax.lax.scan(step, (p, opt.init(p)), ks))(
        params, jax.random.split(jax.random.key(1), 100))
    pred = np.asarray(model.apply(params, batch).argmax(-1))
    mask = np.asarray(batch.test_mask)
    acc = (pred[mask] == np.asarray(batch.y)[mask]).mean()
    assert float(losses[-1]) < float(losses[0]) and acc > 0.9, (acc, losses[0], losses[-1])


def test_appnp_cheb_reject_bad_hparams():
    with pytest.raises(ValueError, match="K"):
        make_model("appnp", 4, 2, K=-1)
    with pytest.raises(ValueError, match="alpha"):
        make_model("appnp", 4, 2, alpha=1.5)
    with pytest.raises(ValueError, match="K"):
        make_model("cheb", 4, 2, K=0)


# --- GCond's cross-architecture models (FedGC Table 3, `condense.evaluate.GCOND_ARCHS`) --------------

def ref_gcond_cheby(p, x, a, loops=True):
    """GCond Cheby, single_param, K=2: H' = (H + S H) W + b, S = D̃^-1/2 (A+I) D̃^-1/2 on real graphs;
    on G' GCond normalises A' - I + I = A' (zero diagonal): S = D^-1/2 A' D^-1/2, 0 rows where deg = 0."""
    if loops:
        s = _gcn_norm(a)
    else:
        d = a.sum(1)
        inv = np.where(d > 0, 1 / np.sqrt(np.where(d > 0, d, 1)), 0.0)
        s = inv[:, None] * a * inv[None, :]
    h = x
    for i in range(2):
        h = (h + s @ h) @ p[f"layer_{i}"]["kernel"] + p[f"bias_{i}"]
        if i == 0:
            h = _relu(h)
    return h


def ref_sgc_multi(p, x, a):
    """GCond's SGC1 (models/sgc_multi.py): 2-layer MLP, then two propagations by S."""
    s = _gcn_norm(a)
    return s @ (s @ ref_mlp(p, x, a))


GCOND_REFS = {"mlp": ref_gcn,  # graph-free only in training: evaluated as a GCN on the graph
              "appnp": lambda p, x, a: ref_appnp(p, x, a, 2, 0.1), "cheb": ref_gcond_cheby,
              "gcn": ref_gcn, "sage": ref_gcn, "sgc": ref_sgc_multi}


@pytest.mark.parametrize("col", sorted(GCOND_REFS))
@pytest.mark.parametrize("weighted", [False, True])
def test_gcond_protocol_models_match_dense_numpy(col, weighted):
    """Every Table 3 column of the GCond protocol, built as the protocol builds it (on G' with its
    G'-only arguments), against GCond's formula."""
    import jax.numpy as jnp
    from fgl_jax.systems.fedgc.evaluate import GCOND_ARCHS, dense_graph_batch
    arch, kw, _, syn_kw = GCOND_ARCHS[col]
    ref = GCOND_REFS[col]
    if weighted:  # G': all ordered pairs, zero diagonal
        a, x, y = _weighted_graph(seed=4)
        kw = kw + syn_kw
        if col == "cheb":
            ref = lambda p, x, a: ref_gcond_cheby(p, x, a, loops=False)
        batch = dense_graph_batch(jnp.asarray(a, jnp.float32), jnp.asarray(x), jnp.asarray(y))
        n, c = len(a), 3
    else:
        g = toy_graph(seed=6)
        batch = unstack(full_graph_batch(g), 0)
        x, a, n, c = g.dense_x(), dense_adj(g), g.num_nodes, g.num_classes
    model = make_model(arch, x.shape[1], c, hidden=8, **dict(kw))
    params = model.init(jax.random.key(3), batch)
    params = jax.tree.map(lambda v: v + 0.1 * np.arange(v.size).reshape(v.shape) / v.size, params)
    out = np.asarray(model.apply(params, batch, train=False))[:n]
    np.testing.assert_allclose(out, ref(_params_np(params), x.astype(np.float64), a), rtol=1e-5, atol=1e-5)
