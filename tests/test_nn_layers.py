"""The shared message-passing layers (fgl_jax/nn/layers.py) against dense NumPy re-derivations, and the
parameter trees of the models built on them (nn GCN/GAT/SAGE, Lumos's tree encoder).

The parameter-tree tests pin names, shapes and init values for a fixed key: the layers create their
parameters in the caller's scope so that moving a model onto them changes no number (Flax draws init
keys per scope in creation order). The pinned sums were produced by the models as written before
they used the shared layers; the outputs were bit-identical before and after (see the commit)."""
from typing import Callable

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from fgl_jax import ops
from fgl_jax.batch import full_graph_batch, unstack
from fgl_jax.nn import layers, make_model
from fgl_jax.systems.lumos import workload as W
from fgl_jax.systems.lumos.model import TreeEncoder
from fgl_jax.systems.lumos.trees import build_trees
from tests.helpers import toy_graph

jax.config.update("jax_default_matmul_precision", "highest")

N, E_REAL, E_PAD = 7, 12, 3


class Harness(nn.Module):
    """Calls one layer function inside a compact scope, as the models do."""

    fn: Callable

    @nn.compact
    def __call__(self, z, s, r, m):
        return self.fn(self, 0, z, s, r, m, N)


def graph(weighted: bool, seed: int = 0):
    """Unique directed edges on N nodes (node N-1 isolated), plus padded edges (mask 0) pointing at
    real nodes, so a layer that ignored the mask would be caught. Returns s, r, m, dense A[v, u]."""
    rng = np.random.default_rng(seed)
    pairs = [(u, v) for u in range(N - 1) for v in range(N - 1) if u != v]
    pick = rng.choice(len(pairs), E_REAL, replace=False)
    s = np.array([pairs[p][0] for p in pick] + [0, 1, 2])
    r = np.array([pairs[p][1] for p in pick] + [1, 2, 3])
    w = rng.uniform(0.5, 2.0, E_REAL) if weighted else np.ones(E_REAL)
    m = np.r_[w, np.zeros(E_PAD)]
    a = np.zeros((N, N))
    a[r[:E_REAL], s[:E_REAL]] = w
    mask = jnp.asarray(m, jnp.float32) if weighted else jnp.asarray(m > 0)
    return jnp.asarray(s, jnp.int32), jnp.asarray(r, jnp.int32), mask, a


def run(fn, z, g, seed=1):
    s, r, m, _ = g
    mod = Harness(fn)
    p = jax.jit(mod.init)(jax.random.key(0), z, s, r, m)
    # random (non-zero) parameters, biases included, so that every parameter is exercised
    p = jax.tree.map(lambda v: jax.random.normal(jax.random.key(seed), v.shape), p)
    return np.asarray(jax.jit(mod.apply)(p, z, s, r, m), np.float64), jax.tree.map(np.asarray, p)["params"]


def z_of(width, seed=2):
    return jnp.asarray(np.random.default_rng(seed).normal(size=(N, width)), jnp.float32)


def double_sum(msg, s, r, m, n, layer=0):
    """A custom neighbour sum (2x the plain one): proves the layer uses what it is given."""
    return 2.0 * ops.neighbour_sum(msg, s, r, m, n, layer=layer)


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("self_loop", [True, False])
@pytest.mark.parametrize("agg", [None, double_sum])
def test_gcn_layer_matches_dense(weighted, self_loop, agg):
    g = graph(weighted)
    a = g[3]
    z = z_of(5)
    out, p = run(lambda mod, i, *args: layers.gcn_layer(mod, i, *args, aggregate=agg, self_loop=self_loop), z, g)
    assert set(p) == {"bias_0"} and p["bias_0"].shape == (5,)
    k = 2.0 if agg is not None else 1.0
    if self_loop:      # D^-1/2 (kA + I) D^-1/2 with D from A + I
        d = a.sum(1) + 1.0
        prop = (k * a + np.eye(N)) / np.sqrt(d)[:, None] / np.sqrt(d)[None, :]
    else:              # D^-1/2 A D^-1/2, degrees floored at 1
        d = np.maximum(a.sum(1), 1.0)
        prop = k * a / np.sqrt(d)[:, None] / np.sqrt(d)[None, :]
    ref = prop @ np.asarray(z, np.float64) + p["bias_0"]
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)


def test_gcn_layer_without_bias_has_no_parameters():
    g = graph(False)
    z = z_of(4)
    mod = Harness(lambda mod, i, *args: layers.gcn_layer(mod, i, *args, use_bias=False))
    assert mod.init(jax.random.key(0), z, *g[:3]) == {}


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("agg", [None, double_sum])
def test_sage_layer_matches_dense(weighted, agg):
    g = graph(weighted, seed=3)
    a = g[3]
    z = np.asarray(z_of(6), np.float64)
    out, p = run(lambda mod, i, *args: layers.sage_layer(mod, i, *args, aggregate=agg), jnp.asarray(z, jnp.float32), g)
    assert p["bias_0"].shape == (3,)
    k = 2.0 if agg is not None else 1.0
    mean = k * a / np.maximum(a.sum(1), 1.0)[:, None]
    ref = z[:, :3] + mean @ z[:, 3:] + p["bias_0"]
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)


def dense_gat(z, adj, a_src, a_dst, heads, concat, slope, bias):
    """out_v = sum over u with adj[v, u] of softmax_u(LeakyReLU(a_src.z_u + a_dst.z_v)) z_u, per head."""
    n = z.shape[0]
    z = z.reshape(n, heads, -1)
    out = np.zeros_like(z)
    for v in range(n):
        nb = np.flatnonzero(adj[v])
        if len(nb) == 0:
            continue
        e = (z[nb] * a_src[0]).sum(-1) + (z[v] * a_dst[0]).sum(-1)[None]     # [deg, K]
        e = np.where(e > 0, e, slope * e)
        att = np.exp(e - e.max(0))
        att /= att.sum(0)
        out[v] = (att[..., None] * z[nb]).sum(0)
    out = out.reshape(n, -1) if concat else out.mean(1)
    return out + bias


@pytest.mark.parametrize("heads,concat,slope", [(3, True, 0.2), (3, False, 0.05), (1, False, 0.2)])
def test_gat_layer_matches_dense(heads, concat, slope):
    s, r, m, a = graph(False, seed=4)
    loop_mask = jnp.arange(N) < N - 1                      # the last node is "padding": no loop
    s, r, m = layers.add_self_loops(s, r, m, N, loop_mask=loop_mask)
    adj = (a > 0) | np.diag(np.asarray(loop_mask))
    z = z_of(heads * 4, seed=5)
    fn = lambda mod, i, *args: layers.gat_layer(mod, i, *args, heads=heads, concat=concat, negative_slope=slope)
    out, p = run(fn, z, (s, r, m, None))
    assert p["att_src_0"].shape == p["att_dst_0"].shape == (1, heads, 4)
    assert p["bias_0"].shape == ((heads * 4,) if concat else (4,))
    ref = dense_gat(np.asarray(z, np.float64), adj, p["att_src_0"], p["att_dst_0"], heads, concat, slope, p["bias_0"])
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)
    assert np.allclose(out[N - 1], p["bias_0"])            # no in-edge, no loop: only the bias


def test_add_self_loops_shapes_and_default_mask():
    s, r, m, _ = graph(False)
    s2, r2, m2 = layers.add_self_loops(s, r, m, N)
    assert s2.shape == r2.shape == m2.shape == (E_REAL + E_PAD + N,)
    np.testing.assert_array_equal(np.asarray(s2[-N:]), np.arange(N))
    np.testing.assert_array_equal(np.asarray(r2[-N:]), np.arange(N))
    assert bool(m2[-N:].all())


# ---------------------------------------------------------------------------------------------
# parameter trees of the models on the shared layers: names, shapes, init values for a fixed key

def _fingerprint(params):
    """{path: (shape, sum, sum of squares)} of a param tree."""
    flat = jax.tree_util.tree_flatten_with_path(params)[0]
    return {jax.tree_util.keystr(k): (v.shape, float(np.sum(np.asarray(v, np.float64))),
                                      float(np.sum(np.asarray(v, np.float64) ** 2))) for k, v in flat}


# produced by the one-piece models before they used fgl_jax.nn.layers (main at 1e6e53b)
PINNED = {
    "lumos_gat": {
        "['params']['att_dst_0']": ((1, 2, 4), -0.03264498710632324, 1.3790731928073114),
        "['params']['att_dst_1']": ((1, 2, 4), -1.664097547531128, 1.3741936700350266),
        "['params']['att_dst_2']": ((1, 1, 4), -0.9773900732398033, 2.424482697107877),
        "['params']['att_src_0']": ((1, 2, 4), -0.033765554428100586, 2.756314043326995),
        "['params']['att_src_1']": ((1, 2, 4), 2.1228623390197754, 1.922259603014254),
        "['params']['att_src_2']": ((1, 1, 4), -0.09996092319488525, 0.7647271837953054),
        "['params']['bias_0']": ((8,), 0.0, 0.0),
        "['params']['bias_1']": ((8,), 0.0, 0.0),
        "['params']['bias_2']": ((4,), 0.0, 0.0),
        "['params']['layer_0']['kernel']": ((5, 8), -0.19086854229681194, 9.329477302472153),
        "['params']['layer_1']['kernel']": ((8, 8), -1.7657348760403693, 6.966542038532911),
        "['params']['layer_2']['kernel']": ((8, 4), 1.4131666701287031, 4.0078938550070236),
    },
    "lumos_gcn": {
        "['params']['bias_0']": ((4,), 0.0, 0.0),
        "['params']['bias_1']": ((4,), 0.0, 0.0),
        "['params']['bias_2']": ((4,), 0.0, 0.0),
        "['params']['layer_0']['kernel']": ((5, 4), 1.3884233087301254, 4.086470405840557),
        "['params']['layer_1']['kernel']": ((4, 4), 2.096424300223589, 3.303581359861223),
        "['params']['layer_2']['kernel']": ((4, 4), 2.956112153828144, 4.471634053641091),
    },
    "nn_gat": {
        "['params']['att_dst_0']": ((1, 2, 4), -0.03264498710632324, 1.3790731928073114),
        "['params']['att_dst_1']": ((1, 2, 4), -1.664097547531128, 1.3741936700350266),
        "['params']['att_dst_2']": ((1, 1, 3), -0.2290305458009243, 2.2845828130225105),
        "['params']['att_src_0']": ((1, 2, 4), -0.033765554428100586, 2.756314043326995),
        "['params']['att_src_1']": ((1, 2, 4), 2.1228623390197754, 1.922259603014254),
        "['params']['att_src_2']": ((1, 1, 3), 0.028445348143577576, 0.936251553386896),
        "['params']['bias_0']": ((8,), 0.0, 0.0),
        "['params']['bias_1']": ((8,), 0.0, 0.0),
        "['params']['bias_2']": ((3,), 0.0, 0.0),
        "['params']['layer_0']['kernel']": ((5, 8), 0.5524760414264165, 7.20717323315854),
        "['params']['layer_1']['kernel']": ((8, 8), -1.9011839595623314, 7.64044537124682),
        "['params']['layer_2']['kernel']": ((8, 3), 2.906538878567517, 4.230665089792806),
    },
    "nn_gcn": {
        "['params']['bias_0']": ((4,), 0.0, 0.0),
        "['params']['bias_1']": ((4,), 0.0, 0.0),
        "['params']['bias_2']": ((3,), 0.0, 0.0),
        "['params']['layer_0']['kernel']": ((5, 4), 1.8906356282532215, 4.617337868978783),
        "['params']['layer_1']['kernel']": ((4, 4), 2.177132161334157, 3.1898723727881397),
        "['params']['layer_2']['kernel']": ((4, 3), 2.7802246063947678, 3.5956116805249483),
    },
    "nn_sage": {
        "['params']['bias_0']": ((4,), 0.0, 0.0),
        "['params']['bias_1']": ((4,), 0.0, 0.0),
        "['params']['bias_2']": ((3,), 0.0, 0.0),
        "['params']['layer_0']['kernel']": ((5, 8), 0.5524760414264165, 7.20717323315854),
        "['params']['layer_1']['kernel']": ((4, 8), 1.1933235051110387, 4.605779455492359),
        "['params']['layer_2']['kernel']": ((4, 6), 3.048403731547296, 4.653732035463497),
    },
}


def _nn_params(name):
    g = toy_graph(20, num_features=5, seed=0)
    batch = unstack(full_graph_batch(g), 0)
    kw = {"heads": 2} if name == "gat" else {}
    model = make_model(name, 5, 3, hidden=4, num_layers=3, **kw)
    return jax.jit(model.init)(jax.random.key(11), batch)


def _lumos_params(backbone):
    es = W.EdgeSet.from_arrays([0, 0, 1], [1, 2, 2], 3)
    tb, _ = build_trees(es, np.ones(2 * es.num_edges, bool), 5, node_multiple=16, edge_multiple=32)
    table = jnp.zeros((3 + 6 + 1, 5), jnp.float32)
    return jax.jit(TreeEncoder(backbone, hidden=4, num_layers=3, heads=2).init)(jax.random.key(11), table, tb)


def _model_params(which):
    kind, name = which.split("_")
    return _nn_params(name) if kind == "nn" else _lumos_params(name)


@pytest.mark.parametrize("which", sorted(PINNED))
def test_param_tree_names_shapes_and_init_values_are_pinned(which):
    got = _fingerprint(_model_params(which))
    want = PINNED[which]
    assert sorted(got) == sorted(want)
    for k, (shape, s1, s2) in want.items():
        assert got[k][0] == tuple(shape), k
        assert got[k][1] == pytest.approx(s1, rel=1e-6, abs=1e-6), k
        assert got[k][2] == pytest.approx(s2, rel=1e-6, abs=1e-6), k


@pytest.mark.slow
def test_sparse_feature_matmul_gradients_match_dense_and_autodiff():
    """`ops.feature_matmul` with a column order (hand-written VJP walking the entries by column):
    X W, dL/dW = X^T dZ and dL/dval equal a dense NumPy re-derivation, and dL/dW is bit for bit the
    gradient autodiff gives without the order (same sums in the same order). Unsorted rows and
    padded entries (val 0) included."""
    rng = np.random.default_rng(3)
    n, f, h, nnz = 9, 13, 5, 40
    row = rng.integers(0, n, nnz).astype(np.int32)
    col = rng.integers(0, f, nnz).astype(np.int32)
    val = rng.normal(size=nnz).astype(np.float32)
    val[-4:] = 0.0                                     # padding entries
    w = rng.normal(size=(f, h)).astype(np.float32)
    dz = rng.normal(size=(n, h)).astype(np.float32)
    plain = ops.SparseFeatures(jnp.asarray(row), jnp.asarray(col), jnp.asarray(val))
    ordered = ops.SparseFeatures(jnp.asarray(row), jnp.asarray(col), jnp.asarray(val), jnp.asarray(ops.column_order(col)))
    dense_x = np.zeros((n, f), np.float64)
    np.add.at(dense_x, (row, col), val)

    def loss(w, v, x):
        return (ops.feature_matmul(x.replace(val=v), w, n) * dz).sum()

    gw, gv = jax.grad(loss, argnums=(0, 1))(jnp.asarray(w), jnp.asarray(val), ordered)
    gw_auto, gv_auto = jax.grad(loss, argnums=(0, 1))(jnp.asarray(w), jnp.asarray(val), plain)
    np.testing.assert_allclose(ops.feature_matmul(ordered, jnp.asarray(w), n), dense_x @ w, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(gw, dense_x.T @ dz, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(gv, (w[col] * dz[row]).sum(-1), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(np.asarray(gw), np.asarray(gw_auto))
    np.testing.assert_allclose(gv, gv_auto, rtol=1e-6, atol=1e-6)
    # under vmap over a client axis (how the engine calls it)
    stacked = jax.tree.map(lambda a: jnp.stack([a, a]), ordered)
    gws = jax.vmap(jax.grad(lambda w, x: (ops.feature_matmul(x, w, n) * dz).sum()))(jnp.stack([w, 2 * w]), stacked)
    np.testing.assert_allclose(gws[1], dense_x.T @ dz, rtol=1e-5, atol=1e-5)
