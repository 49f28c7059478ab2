"""FedHGL hyperedge completion: exactness (T2), decomposition (T3), trimming (T4), server view (T5),
noise gating and unbiasedness (T8), Theorem-1 counts and Eq. 11 differencing (T9)."""
import inspect

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from fgl_jax.data.hypergraph import Hypergraph
from fgl_jax.systems.fedhgl import (build_basic_clients, build_hc_clients, basic_propagation, client_features,
                                    hyperedge_completion, server_aggregate, split_hypergraph)


def random_hypergraph(seed, n=40, m=18, f=6, isolated=3, binary=False, max_size=6):
    rng = np.random.default_rng(seed)
    edges, seen = [], set()
    while len(edges) < m:
        e = tuple(sorted(rng.choice(n - isolated, rng.integers(2, max_size + 1), replace=False).tolist()))
        if e not in seen:
            seen.add(e)
            edges.append(e)
    hn = np.concatenate([np.array(e) for e in edges])
    hi = np.repeat(np.arange(m), [len(e) for e in edges])
    x = (rng.random((n, f)) < 0.4).astype(np.float32) if binary else rng.normal(size=(n, f)).astype(np.float32)
    z = np.zeros(n, bool)
    return Hypergraph("rand", x, rng.integers(0, 3, n).astype(np.int32), 3, hn, hi, m, np.ones(m, np.float32),
                      "binary" if binary else "numeric", z, z, z)


def dense_L(hg, nodes=None, trim_assign=None):
    """Dense global L (float64)."""
    H = np.zeros((hg.num_nodes, hg.num_edges))
    H[hg.he_nodes, hg.he_ids] = 1
    dv, de = H.sum(1), H.sum(0)
    dvi = np.where(dv > 0, 1 / np.sqrt(np.maximum(dv, 1)), 0)
    dei = np.where(de > 0, 1 / np.maximum(de, 1), 0)
    return (dvi[:, None] * H * dei) @ H.T * dvi[None, :]


def run_hc(hg, assign, k, hops, mechanism="none", eps=1.0, key=0, **kw):
    split = split_hypergraph(hg, assign, k)
    hc = build_hc_clients(split)
    x = jnp.asarray(client_features(split, hc.inc.num_nodes))
    out = np.asarray(hyperedge_completion(x, hc, jax.random.PRNGKey(key), hops, mechanism, eps, **kw))
    full = np.zeros((hg.num_nodes, hg.num_features), np.float32)
    for c, nodes in enumerate(split.client_nodes):
        full[nodes] = out[c, :nodes.size]
    return full, split, hc


@pytest.mark.parametrize("k", [1, 2, 3, 9])
def test_hc_without_noise_equals_centralised(k):
    """T2: concat_k HC(X)_k == (L^N X)[V_k] for N = 1, 2, 3, any K, random partitions."""
    hg = random_hypergraph(k)
    L = dense_L(hg)
    rng = np.random.default_rng(100 + k)
    assign = rng.integers(0, k, hg.num_nodes)
    assign[:k] = np.arange(k)                 # no empty client
    for hops in (1, 2, 3):
        got, split, _ = run_hc(hg, assign, k, hops)
        ref = np.linalg.matrix_power(L, hops) @ hg.x
        np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5)
    if k == 1:
        assert split.cross_edges.size == 0
    else:
        assert split.cross_edges.size > 0        # the test exercises completion


def test_hc_chunked_columns_identical():
    hg = random_hypergraph(11, f=10)
    assign = np.arange(hg.num_nodes) % 3
    a, _, _ = run_hc(hg, assign, 3, 2)
    b, _, _ = run_hc(hg, assign, 3, 2, chunk=3)
    np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)


def test_decomposition_local_plus_cross():
    """T3 (Eq. 9): φ(v, E_k, V_k) + φ(v, E*_k, V*) = (L X)_v; non-border nodes have zero cross term."""
    hg = random_hypergraph(4)
    assign = np.arange(hg.num_nodes) % 3
    split = split_hypergraph(hg, assign, 3)
    H = np.zeros((hg.num_nodes, hg.num_edges))
    H[hg.he_nodes, hg.he_ids] = 1
    dv, de = H.sum(1), H.sum(0)
    dvi = np.where(dv > 0, 1 / np.sqrt(np.maximum(dv, 1)), 0)
    x = hg.x.astype(np.float64)
    cross = split.is_cross
    for v in range(hg.num_nodes):
        if dv[v] == 0:
            continue                     # isolated: zero row by convention (tested in T1)
        k = assign[v]
        local = sum(H[v, e] / (de[e] * np.sqrt(dv[v])) * sum(H[u, e] * dvi[u] * x[u] for u in np.flatnonzero(assign == k))
                    for e in np.flatnonzero(~cross))
        cterm = sum(H[v, e] / (de[e] * np.sqrt(dv[v])) * sum(H[u, e] * dvi[u] * x[u] for u in range(hg.num_nodes))
                    for e in np.flatnonzero(cross))
        np.testing.assert_allclose(local + cterm, (dense_L(hg) @ x)[v], atol=1e-10)
        if not split.border_nodes()[v]:
            assert np.all(np.asarray(cterm) == 0)


def test_basic_trimmed_propagation():
    """T4: no-HC features == L_local^N X_k on E_k ∪ {e*∩V_k : |e*∩V_k| ≥ 2} with local degrees."""
    hg = random_hypergraph(6, n=36, m=20)
    k = 3
    assign = np.arange(hg.num_nodes) % k
    split = split_hypergraph(hg, assign, k)
    inc = build_basic_clients(split)
    x = jnp.asarray(client_features(split, inc.num_nodes))
    out = np.asarray(basic_propagation(x, inc, 2))
    dropped_single = 0
    for c, nodes in enumerate(split.client_nodes):
        pos = {v: i for i, v in enumerate(nodes)}
        cols = []
        for e in hg.edge_lists():
            part = [pos[v] for v in e if assign[v] == c]
            if len(part) >= 2:
                col = np.zeros(len(nodes))
                col[part] = 1
                cols.append(col)
            elif len(part) == 1:
                dropped_single += 1
        H = np.stack(cols, 1)
        dv, de = H.sum(1), H.sum(0)
        dvi = np.where(dv > 0, 1 / np.sqrt(np.maximum(dv, 1)), 0)
        L = (dvi[:, None] * H / de) @ H.T * dvi[None, :]
        ref = L @ L @ hg.x[nodes]
        np.testing.assert_allclose(out[c, :len(nodes)], ref, rtol=1e-5, atol=1e-5)
    assert dropped_single > 0          # single-node trims occurred and were dropped


def test_server_view_and_upload_counts():
    """T5: the server function takes only ids and vectors; uploads = N·Σ_k |E*_k| vectors of size f."""
    params = list(inspect.signature(server_aggregate).parameters)
    assert params == ["ids", "partial_sums", "num_ids"]
    ids = jnp.array([0, 2, 0, 3, 3])          # 3 = padding id (num_ids)
    sums = jnp.arange(10.0).reshape(5, 2)
    np.testing.assert_allclose(np.asarray(server_aggregate(ids, sums, 3)), [[4, 6], [0, 0], [2, 3]])
    hg = random_hypergraph(8)
    k = 4
    assign = np.arange(hg.num_nodes) % k
    split = split_hypergraph(hg, assign, k)
    hc = build_hc_clients(split)
    per_client = [split.client_cross_edges(c).size for c in range(k)]
    assert int(np.asarray(hc.cross_valid).sum()) == sum(per_client) == split.stats()["uploads_per_hop"]
    # brute-force |E*_k|
    for c in range(k):
        brute = sum(1 for e in hg.edge_lists() if len(set(assign[e])) > 1 and c in set(assign[e]))
        assert per_client[c] == brute
    assert sum(per_client) <= k * split.cross_edges.size
    # server-visible ids are exactly the cross hyperedges each client touches
    for c in range(k):
        got = np.sort(np.asarray(hc.cross_ids[c])[np.asarray(hc.cross_valid[c])])
        np.testing.assert_array_equal(got, split.client_cross_edges(c))


def test_unsafe_counts_brute_force_and_eq11_differencing():
    """T9: unsafe nodes/uploads vs enumeration; Eq. 11: colluders recover the victim's partial sum."""
    hg = random_hypergraph(9, n=30, m=15)
    k = 3
    assign = np.arange(hg.num_nodes) % k
    split = split_hypergraph(hg, assign, k)
    unsafe_nodes, unsafe_uploads = set(), 0
    for e in hg.edge_lists():
        if len(set(assign[e])) < 2:
            continue
        for c in set(assign[e]):
            members = [v for v in e if assign[v] == c]
            if len(members) == 1:
                unsafe_nodes.add(members[0])
                unsafe_uploads += 1
    assert split.unsafe_nodes().sum() == len(unsafe_nodes)
    assert split.unsafe_pairs().sum() == unsafe_uploads
    hc = build_hc_clients(split)
    assert int(np.asarray(hc.cross_unsafe).sum()) == unsafe_uploads
    # Eq. 11 on a hand-built 3-client hyperedge {0,1 | 2 | 3}: δ(e*,V*_victim) = Δ - Σ_others
    x = np.array([[1., 0], [2, 1], [5, 5], [0, 3]])
    uploads = {0: x[0] + x[1], 1: x[2], 2: x[3]}
    total = np.asarray(server_aggregate(jnp.zeros(3, jnp.int32), jnp.asarray(np.stack(list(uploads.values()))), 1))[0]
    np.testing.assert_allclose(total - uploads[1] - uploads[2], uploads[0])
    # client 1's upload is a single node: exactly the unsafe case the noise rule covers
    assert len(uploads[1].shape) == 1


def test_noise_gating_only_round0_unsafe_uploads():
    """T8: with N=1, nodes whose hyperedges carry no unsafe upload are untouched by the noise;
    ε → ∞ recovers the clean HC."""
    hg = random_hypergraph(12, binary=True)
    k = 3
    assign = np.arange(hg.num_nodes) % k
    clean, split, _ = run_hc(hg, assign, k, 1)
    noisy, _, _ = run_hc(hg, assign, k, 1, "rr", 0.5, key=3)
    unsafe_edges = np.zeros(hg.num_edges, bool)
    unsafe_edges[hg.he_ids[split.unsafe_pairs()]] = True
    touched = np.zeros(hg.num_nodes, bool)
    touched[hg.he_nodes[unsafe_edges[hg.he_ids]]] = True
    assert touched.any() and (~touched).any()
    np.testing.assert_allclose(noisy[~touched], clean[~touched], atol=1e-6)
    assert np.abs(noisy[touched] - clean[touched]).max() > 1e-3
    big, _, _ = run_hc(hg, assign, k, 1, "rr", 1e9, key=1)      # ε is traced: same compiled program
    np.testing.assert_allclose(big, clean, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("mech,binary", [("laplace", False), ("rr", True)])
def test_noisy_hc_is_unbiased(mech, binary):
    """T8: E[HC with paper-RR / Laplace noise] = clean HC for N = 2 (propagation is linear)."""
    hg = random_hypergraph(13, n=30, m=14, f=3, binary=binary)
    k = 3
    assign = np.arange(hg.num_nodes) % k
    split = split_hypergraph(hg, assign, k)
    hc = build_hc_clients(split)
    x = jnp.asarray(client_features(split, hc.inc.num_nodes))
    clean = np.asarray(hyperedge_completion(x, hc, jax.random.PRNGKey(0), 2, "none"))
    reps = 4000
    keys = jax.random.split(jax.random.PRNGKey(7), reps)
    outs = jax.vmap(lambda kk: hyperedge_completion(x, hc, kk, 2, mech, 1.0))(keys)
    outs = np.asarray(outs, np.float64)
    mean, se = outs.mean(0), outs.std(0) / np.sqrt(reps)
    z = np.abs(mean - clean) / np.maximum(se, 1e-9)
    valid = np.asarray(hc.node_valid)
    assert se[valid].max() > 1e-3                    # noise is present
    assert np.quantile(z[valid], 0.99) < 4.5 and z[valid].max() < 6.0


def test_first_hop_noise_ablation():
    """noise_propagation='first_hop' (authors' code): same as the paper at N=1, clean limit at N=2, and
    at N=2 closer to clean HC than the paper protocol (its noise does not travel a second hop)."""
    hg = random_hypergraph(21, binary=True)
    k = 3
    assign = np.arange(hg.num_nodes) % k
    clean1, _, _ = run_hc(hg, assign, k, 1)
    a, _, _ = run_hc(hg, assign, k, 1, "rr", 1.0, key=5)
    b, _, _ = run_hc(hg, assign, k, 1, "rr", 1.0, key=5, noise_propagation="first_hop")
    np.testing.assert_allclose(a, b, atol=1e-6)
    clean2, _, _ = run_hc(hg, assign, k, 2)
    big, _, _ = run_hc(hg, assign, k, 2, "rr", 1e9, key=5, noise_propagation="first_hop")
    np.testing.assert_allclose(big, clean2, rtol=1e-4, atol=1e-4)
    p2, _, _ = run_hc(hg, assign, k, 2, "rr", 1.0, key=5)
    f2, _, _ = run_hc(hg, assign, k, 2, "rr", 1.0, key=5, noise_propagation="first_hop")
    assert np.abs(f2 - p2).max() > 1e-4
