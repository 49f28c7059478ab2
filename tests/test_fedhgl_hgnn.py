"""FedHGL T1: HGNN propagation on segment sums equals the dense incidence-matrix formula."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from fgl_jax.nn.hgnn import (FedHGLClassifier, HGNN, HGNNConv, edge_to_vertex, hgnn_propagate, hgnn_smooth,
                             make_incidence, vertex_to_edge)



def random_incidence(rng, n=30, m=12, isolated=4, max_size=6):
    """Random duplicate-free hyperedges over nodes 0..n-isolated-1 (the last nodes are isolated)."""
    nodes, ids = [], []
    for e in range(m):
        size = rng.integers(1, max_size + 1)
        mem = rng.choice(n - isolated, size, replace=False)
        nodes.append(mem)
        ids.append(np.full(size, e))
    return np.concatenate(nodes), np.concatenate(ids)


def dense_L(he_nodes, he_ids, n, m, w):
    """Independent reference: D_v^{-1/2} H W D_e^{-1} H^T D_v^{-1/2} with 0-degree -> 0 (float64)."""
    H = np.zeros((n, m))
    H[he_nodes, he_ids] = 1.0
    dv = H @ w
    de = H.sum(0)
    dvi = np.where(dv > 0, 1 / np.sqrt(np.where(dv > 0, dv, 1)), 0)
    dei = np.where(de > 0, 1 / np.where(de > 0, de, 1), 0)
    return np.diag(dvi) @ H @ np.diag(w) @ np.diag(dei) @ H.T @ np.diag(dvi)


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1])
def test_segment_sum_propagation_equals_dense(seed):
    rng = np.random.default_rng(seed)
    n, m, f = 30, 12, 5
    hn, hi = random_incidence(rng, n, m)
    w = rng.uniform(0.5, 2.0, m)
    x = rng.normal(size=(n, f))
    L = dense_L(hn, hi, n, m, w)
    with jax.enable_x64(True):
        inc = make_incidence(hn, hi, n, m, w, dtype=jnp.float64)
        got = np.asarray(hgnn_propagate(jnp.asarray(x), inc))
        got2 = np.asarray(hgnn_smooth(jnp.asarray(x), inc, 3))
        got3 = np.asarray(hgnn_smooth(jnp.asarray(x), inc, 2, chunk=2))   # chunked columns
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, L @ x, rtol=0, atol=1e-10)
    np.testing.assert_allclose(got2, L @ L @ L @ x, rtol=0, atol=1e-10)
    np.testing.assert_allclose(got3, L @ L @ x, rtol=0, atol=1e-10)
    # isolated nodes give zero rows (DHG convention, no self-loops)
    assert np.all(got[-4:] == 0)


def test_nodewise_eq6_equals_matrix_eq5():
    """x'_v = Σ_e Σ_u w(e) h(v,e) h(u,e) / (d_e sqrt(d_v d_u)) x_u (Eq. 6) vs L x (Eq. 5)."""
    rng = np.random.default_rng(5)
    n, m = 15, 6
    hn, hi = random_incidence(rng, n, m, isolated=2)
    w = rng.uniform(0.5, 2, m)
    x = rng.normal(size=(n, 3))
    H = np.zeros((n, m))
    H[hn, hi] = 1
    dv, de = H @ w, H.sum(0)
    out = np.zeros_like(x)
    for v in range(n):
        for e in range(m):
            for u in range(n):
                if H[v, e] and H[u, e]:
                    out[v] += w[e] / (de[e] * np.sqrt(dv[v] * dv[u])) * x[u]
    np.testing.assert_allclose(out, dense_L(hn, hi, n, m, w) @ x, atol=1e-12)
    inc = make_incidence(hn, hi, n, m, w)
    np.testing.assert_allclose(np.asarray(hgnn_propagate(jnp.asarray(x, jnp.float32), inc)), out, rtol=1e-5, atol=1e-5)


def test_padding_pairs_contribute_nothing():
    rng = np.random.default_rng(3)
    hn, hi = random_incidence(rng, 20, 8, isolated=2)
    x = jnp.asarray(rng.normal(size=(20, 4)), jnp.float32)
    base = hgnn_propagate(x, make_incidence(hn, hi, 20, 8))
    hn2 = np.concatenate([hn, [0, 5, 7]])
    hi2 = np.concatenate([hi, [3, 3, 1]])
    mask = np.concatenate([np.ones(hn.size), np.zeros(3)])
    padded = hgnn_propagate(x, make_incidence(hn2, hi2, 20, 8, mask=mask))
    np.testing.assert_allclose(np.asarray(padded), np.asarray(base), atol=1e-6)


def test_gather_and_scatter_are_eq7_eq8():
    rng = np.random.default_rng(7)
    hn, hi = random_incidence(rng, 12, 5, isolated=1)
    x = rng.normal(size=(12, 2))
    inc = make_incidence(hn, hi, 12, 5)
    H = np.zeros((12, 5))
    H[hn, hi] = 1
    dv, de = H.sum(1), H.sum(0)
    dvi = np.where(dv > 0, 1 / np.sqrt(np.maximum(dv, 1)), 0)
    delta = H.T @ (dvi[:, None] * x)                                   # Eq. 7
    np.testing.assert_allclose(np.asarray(vertex_to_edge(jnp.asarray(x, jnp.float32), inc)), delta, rtol=1e-5, atol=1e-5)
    back = dvi[:, None] * (H @ (delta / de[:, None]))                   # Eq. 8
    np.testing.assert_allclose(np.asarray(edge_to_vertex(jnp.asarray(delta, jnp.float32), inc)), back, rtol=1e-5, atol=1e-5)


@pytest.mark.slow
def test_hgnn_conv_and_models():
    rng = np.random.default_rng(0)
    hn, hi = random_incidence(rng, 25, 10)
    inc = make_incidence(hn, hi, 25, 10)
    x = jnp.asarray(rng.normal(size=(25, 7)), jnp.float32)
    conv = HGNNConv(4, use_bias=False)
    p = conv.init(jax.random.PRNGKey(0), x, inc)
    theta = np.asarray(p["params"]["theta"]["kernel"])
    L = dense_L(hn, hi, 25, 10, np.ones(10))
    np.testing.assert_allclose(np.asarray(conv.apply(p, x, inc)), L @ np.asarray(x) @ theta, rtol=1e-4, atol=1e-5)
    model = HGNN(8, 3)
    p = model.init(jax.random.PRNGKey(1), x, inc)
    assert model.apply(p, x, inc).shape == (25, 3)
    clf = FedHGLClassifier(16, 3, final_relu=True)
    p = clf.init(jax.random.PRNGKey(2), x)
    out = clf.apply(p, x, train=True, rngs={"dropout": jax.random.PRNGKey(3)})
    assert out.shape == (25, 3) and np.all(np.asarray(out) >= 0)          # final ReLU (authors' code)
    assert set(p["params"]) == {"linear_0", "linear_1"}
    assert "bias" not in p["params"]["linear_0"]
    # no nonlinearity between the two linears: eval output = relu(x W0 W1)
    w0, w1 = (np.asarray(p["params"][k]["kernel"]) for k in ("linear_0", "linear_1"))
    np.testing.assert_allclose(np.asarray(clf.apply(p, x)), np.maximum(np.asarray(x) @ w0 @ w1, 0), rtol=1e-4, atol=1e-5)
