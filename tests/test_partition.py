"""Tests for fgl_jax.partition: random, Louvain and label-Dirichlet splits and their statistics.

Graphs are built here (no dependency on fgl_jax.data); references are brute-force Python loops or
hand-computed numbers.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from fgl_jax.graph import Graph
from fgl_jax.partition import (Partition, PartitionError, label_dirichlet_partition, leakage,
                               louvain_capacity, louvain_partition, make_partition,
                               partition_stats, random_partition, validate)


# ---- graph builders ------------------------------------------------------------------
def graph_from_edges(n: int, undirected=(), directed=(), y=None, num_classes: int = 2,
                     masks=None, name: str = "test") -> Graph:
    """Graph with both directions of every `undirected` pair plus the one-way `directed` edges."""
    s = [u for u, v in undirected] + [v for u, v in undirected] + [u for u, v in directed]
    r = [v for u, v in undirected] + [u for u, v in undirected] + [v for u, v in directed]
    y = np.zeros(n, np.int32) if y is None else np.asarray(y, np.int32)
    if masks is None:
        masks = [np.zeros(n, bool)] * 3
    return Graph(name, np.asarray(s, np.int32), np.asarray(r, np.int32), np.zeros((n, 1), np.float32),
                 y, num_classes, *(np.asarray(m, bool) for m in masks))


def random_graph(n: int, m: int, num_classes: int = 3, seed: int = 0) -> Graph:
    """n nodes, ~m undirected random pairs (symmetric, no self-loops), random labels and masks."""
    rng = np.random.default_rng(seed)
    pairs = {(min(u, v), max(u, v)) for u, v in rng.integers(n, size=(m, 2)).tolist() if u != v}
    split = rng.integers(3, size=n)
    return graph_from_edges(n, sorted(pairs), y=rng.integers(num_classes, size=n), num_classes=num_classes,
                            masks=[split == 0, split == 1, split == 2], name=f"random{n}")


def cliques(sizes, links) -> tuple[Graph, list[list[int]]]:
    """Disjoint cliques of the given sizes (node ids consecutive) plus `links` = [(clique a, clique b)],
    each joining the first node of a to the last node of b by one edge."""
    groups, start = [], 0
    for s in sizes:
        groups.append(list(range(start, start + s)))
        start += s
    pairs = [(u, v) for g in groups for i, u in enumerate(g) for v in g[i + 1:]]
    pairs += [(groups[a][0], groups[b][-1]) for a, b in links]
    return graph_from_edges(start, pairs), groups


PARTITIONERS = {
    "random": lambda g, k, seed=0: random_partition(g, k, seed=seed),
    "louvain": lambda g, k, seed=0: louvain_partition(g, k, seed=seed),
    "dirichlet": lambda g, k, seed=0: label_dirichlet_partition(g, k, beta=1.0, seed=seed),
}


# ---- properties every partitioner must have ------------------------------------------
@pytest.mark.parametrize("method", sorted(PARTITIONERS))
@pytest.mark.parametrize("k", [1, 3, 7])
def test_disjoint_covering_nonempty(method, k):
    g = random_graph(120, 240, seed=1)
    p = PARTITIONERS[method](g, k)
    assert p.assignment.dtype == np.int32 and p.assignment.shape == (g.num_nodes,)
    assert p.num_clients == k and p.method == method
    nodes = p.client_nodes
    assert len(nodes) == k
    for c, ids in enumerate(nodes):
        assert ids.size > 0, f"client {c} empty"
        assert np.all(np.diff(ids) > 0), "client node ids must be sorted and unique"
        assert np.all(p.assignment[ids] == c)
    allnodes = np.concatenate(nodes)
    # Every node exactly once: the concatenation is a permutation of 0..N-1.
    assert allnodes.size == g.num_nodes
    assert np.array_equal(np.sort(allnodes), np.arange(g.num_nodes))
    assert np.array_equal(p.sizes, [len(x) for x in nodes])


@pytest.mark.parametrize("method", sorted(PARTITIONERS))
def test_determinism(method):
    g = random_graph(300, 450, seed=2)
    a = PARTITIONERS[method](g, 5, seed=3)
    b = PARTITIONERS[method](g, 5, seed=3)
    c = PARTITIONERS[method](g, 5, seed=4)
    assert np.array_equal(a.assignment, b.assignment)
    assert not np.array_equal(a.assignment, c.assignment)
    assert a.seed == 3 and c.seed == 4


@pytest.mark.parametrize("method", sorted(PARTITIONERS))
def test_edge_cases_no_edges_no_labels_one_node_per_client(method):
    n = 12
    z = np.zeros(n, bool)
    g = Graph("bare", np.zeros(0, np.int32), np.zeros(0, np.int32), np.zeros((n, 1), np.float32),
              -np.ones(n, np.int32), 2, z, z, z)
    p = PARTITIONERS[method](g, 5)
    assert p.sizes.sum() == n and p.sizes.min() >= 1
    assert PARTITIONERS[method](g, n).sizes.tolist() == [1] * n  # K = N: one node per client
    st = partition_stats(g, p)
    assert st["cross_edges_directed"] == 0 and st["leakage_mean"] == 0.0 and st["cross_edge_fraction"] == 0.0


def test_louvain_ignores_edge_storage_order():
    g = random_graph(200, 300, seed=12)
    perm = np.random.default_rng(0).permutation(g.num_edges)
    shuffled = Graph(g.name, g.senders[perm], g.receivers[perm], g.x, g.y, g.num_classes,
                     g.train_mask, g.val_mask, g.test_mask)
    assert np.array_equal(louvain_partition(g, 4, seed=1).assignment,
                          louvain_partition(shuffled, 4, seed=1).assignment)


def test_make_partition_dispatch():
    g = random_graph(60, 100)
    assert np.array_equal(make_partition(g, "random", 4, seed=5).assignment,
                          random_partition(g, 4, seed=5).assignment)
    assert np.array_equal(make_partition(g, "dirichlet", 4, seed=5, beta=0.3).assignment,
                          label_dirichlet_partition(g, 4, 0.3, seed=5).assignment)
    with pytest.raises(PartitionError, match="unknown partition method 'spectral'"):
        make_partition(g, "spectral", 4)


# ---- random ------------------------------------------------------------------------------
@pytest.mark.parametrize("n,k", [(10, 1), (10, 3), (101, 7), (257, 10), (12, 12), (2708, 5)])
def test_random_sizes(n, k):
    g = graph_from_edges(n)
    sizes = random_partition(g, k, seed=0).sizes
    assert sizes.sum() == n and sizes.max() - sizes.min() <= 1


def test_random_is_a_cut_permutation():
    # Independent reference: walk the seeded permutation, client c owns positions [c*N//K, (c+1)*N//K).
    n, k, seed = 103, 6, 11
    perm = np.random.default_rng(seed).permutation(n)
    ref = np.full(n, -1)
    for c in range(k):
        for i in range(c * n // k, (c + 1) * n // k):
            ref[perm[i]] = c
    assert np.array_equal(random_partition(graph_from_edges(n), k, seed=seed).assignment, ref)


# ---- Louvain -------------------------------------------------------------------------------
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_louvain_two_cliques_one_per_client(seed):
    g, (a, b) = cliques([10, 10], links=[(0, 1)])
    p = louvain_partition(g, 2, seed=seed)
    assert len(set(p.assignment[a])) == 1 and len(set(p.assignment[b])) == 1
    assert p.assignment[a[0]] != p.assignment[b[0]]
    assert partition_stats(g, p)["cross_edges_undirected"] == 1


def test_louvain_keeps_communities_whole():
    # Ring of 6 cliques of 8: Louvain finds the cliques; K=3, cap = max(16, floor(17.6)) = 17, so
    # every client takes exactly two whole cliques and only the 6 ring links are cut at most.
    g, groups = cliques([8] * 6, links=[(i, (i + 1) % 6) for i in range(6)])
    p = louvain_partition(g, 3, seed=0)
    for grp in groups:
        assert len(set(p.assignment[grp])) == 1
    assert p.sizes.tolist() == [16, 16, 16]
    assert partition_stats(g, p)["cross_edges_undirected"] <= 6


def test_louvain_capacity_formula():
    assert louvain_capacity(100, 10, 0.1) == 11  # N/K·(1+slack) exactly an integer
    assert louvain_capacity(20, 3, 0.0) == 7     # ceil(20/3)
    assert louvain_capacity(2708, 10, 0.1) == 297
    assert louvain_capacity(5, 5, 0.5) == 1


@pytest.mark.parametrize("case", ["random", "unequal_cliques", "few_communities", "many_clients"])
@pytest.mark.parametrize("slack", [0.0, 0.1, 0.5])
def test_louvain_balance_bound(case, slack):
    if case == "random":
        g, k = random_graph(400, 600, seed=5), 7
    elif case == "unequal_cliques":  # one community much larger than N/K must be cut
        g, _ = cliques([40, 12, 9, 5, 3], links=[(0, 1), (1, 2), (2, 3), (3, 4)])
        k = 4
    elif case == "few_communities":  # fewer communities than clients
        g, _ = cliques([10, 10], links=[(0, 1)])
        k = 5
    else:  # every client a single node
        g, k = random_graph(30, 40, seed=6), 30
    p = louvain_partition(g, k, seed=0, slack=slack)
    cap = louvain_capacity(g.num_nodes, k, slack)
    assert cap >= math.ceil(g.num_nodes / k)
    assert p.sizes.max() <= cap and p.sizes.min() >= 1
    assert p.sizes.min() >= g.num_nodes - (k - 1) * cap


def test_louvain_unequal_cliques_cut_rule():
    # Cliques 12 and 8, K=2: cap = max(10, floor(11)) = 11. Rule: the 12-clique goes to client 0,
    # which keeps 11 of its nodes; its leftover node then goes to client 1 (emptiest), and so does
    # the 8-clique -> sizes [11, 9].
    g, (a, b) = cliques([12, 8], links=[(0, 1)])
    p = louvain_partition(g, 2, seed=0)
    assert p.sizes.tolist() == [11, 9]
    assert np.all(p.assignment[b] == 1)
    assert np.sum(p.assignment[a] == 0) == 11


# ---- cross / intra edges --------------------------------------------------------------------
def test_cross_edge_mask_matches_bruteforce():
    rng = np.random.default_rng(7)
    n = 40
    # Directed, asymmetric, with self-loops and a duplicate edge: the mask is per stored edge.
    s = rng.integers(n, size=150).astype(np.int32)
    r = rng.integers(n, size=150).astype(np.int32)
    s[:3], r[:3] = [5, 5, 9], [5, 5, 9]
    z = np.zeros(n, bool)
    g = Graph("directed", s, r, np.zeros((n, 1), np.float32), np.zeros(n, np.int32), 1, z, z, z)
    p = random_partition(g, 4, seed=1)
    client = {v: int(p.assignment[v]) for v in range(n)}
    ref = [client[int(u)] != client[int(v)] for u, v in zip(s, r)]
    mask = p.cross_edge_mask(g)
    assert mask.tolist() == ref
    assert np.array_equal(p.intra_edge_mask(g), ~mask)
    cs, cr = p.cross_edges(g)
    assert sorted(zip(cs.tolist(), cr.tolist())) == sorted(
        (int(u), int(v)) for u, v, c in zip(s, r, ref) if c)
    assert sum(sub.num_edges for sub in p.client_graphs(g)) == len(ref) - sum(ref)
    # ε_p on a one-way edge list: a node is exposed by a cross edge in either direction.
    exposed = {int(u) for u, v, c in zip(s, r, ref) if c} | {int(v) for u, v, c in zip(s, r, ref) if c}
    counts, _ = leakage(g, p)
    assert counts.tolist() == [sum(1 for v in exposed if client[v] == c) for c in range(4)]


def test_stats_match_bruteforce():
    g = random_graph(80, 200, num_classes=3, seed=8)
    p = louvain_partition(g, 4, seed=0)
    st = partition_stats(g, p)
    a = p.assignment.tolist()
    k = 4
    pairs = {frozenset((int(u), int(v))) for u, v in zip(g.senders, g.receivers) if u != v}
    intra_u, cross_u = [0] * k, 0
    for e in pairs:
        u, v = tuple(e)
        if a[u] == a[v]:
            intra_u[a[u]] += 1
        else:
            cross_u += 1
    intra_d = [0] * k
    for u, v in zip(g.senders.tolist(), g.receivers.tolist()):
        if a[u] == a[v]:
            intra_d[a[u]] += 1
    assert st["intra_edges_undirected"] == intra_u
    assert st["intra_edges_directed"] == intra_d
    assert st["cross_edges_undirected"] == cross_u
    assert st["cross_edges_directed"] == g.num_edges - sum(intra_d)
    assert st["cross_edge_fraction"] == pytest.approx(cross_u / len(pairs))
    for key, mask in [("train_nodes", g.train_mask), ("val_nodes", g.val_mask), ("test_nodes", g.test_mask)]:
        assert st[key] == [sum(1 for v in range(g.num_nodes) if mask[v] and a[v] == c) for c in range(k)]
    # ε_p by explicit neighbour sets.
    nbrs = {v: set() for v in range(g.num_nodes)}
    for u, v in zip(g.senders.tolist(), g.receivers.tolist()):
        nbrs[u].add(v)
        nbrs[v].add(u)
    frac = []
    for c in range(k):
        mine = [v for v in range(g.num_nodes) if a[v] == c]
        frac.append(sum(any(a[w] != c for w in nbrs[v]) for v in mine) / len(mine))
    assert st["leakage"] == pytest.approx(frac)
    assert st["leakage_mean"] == pytest.approx(sum(frac) / k)


def test_stats_hand_example():
    # 7 nodes, clients {0,1,2} {3,4} {5,6}.
    # undirected: 0-1 1-2 0-2 | 3-4 | 5-6 intra; 2-3, 4-5, 4-6 cross; plus one-way 5->1 (cross)
    # and a self-loop 0->0 (intra, directed only).
    g = graph_from_edges(
        7, undirected=[(0, 1), (1, 2), (0, 2), (3, 4), (5, 6), (2, 3), (4, 5), (4, 6)],
        directed=[(5, 1), (0, 0)], y=[0, 1, 0, 1, -1, 0, 1], num_classes=2,
        masks=[[1, 1, 0, 0, 1, 0, 0], [0, 0, 1, 0, 0, 1, 0], [0, 0, 0, 1, 0, 0, 1]])
    p = validate(Partition(np.array([0, 0, 0, 1, 1, 2, 2]), 3, "hand", 0), g)
    st = partition_stats(g, p)
    assert st["num_nodes"] == [3, 2, 2]
    assert st["intra_edges_undirected"] == [3, 1, 1]
    assert st["intra_edges_directed"] == [7, 2, 2]       # 3 pairs x 2 + self-loop
    assert st["cross_edges_undirected"] == 4             # {2,3} {4,5} {4,6} {1,5}
    assert st["cross_edges_directed"] == 7               # 3 pairs x 2 + 5->1
    assert st["cross_edge_fraction"] == pytest.approx(4 / 9)
    assert st["cross_edge_fraction_directed"] == pytest.approx(7 / 18)
    assert st["mean_intra_edges_undirected"] == pytest.approx(5 / 3)
    assert st["table2_cross_ratio"] == pytest.approx(4 / (5 / 3 + 4))
    assert st["train_nodes"] == [2, 1, 0] and st["val_nodes"] == [1, 0, 1] and st["test_nodes"] == [0, 1, 1]
    assert st["label_counts"] == [[2, 1], [0, 1], [1, 1]]
    # Exposed nodes: client 0 -> {1 (only as the receiver of 5->1), 2}; client 1 -> {3, 4};
    # client 2 -> {5, 6}.
    assert st["leakage_count"] == [2, 2, 2]
    assert st["leakage"] == pytest.approx([2 / 3, 1.0, 1.0])
    assert st["leakage_mean"] == pytest.approx(8 / 9)
    counts, frac = leakage(g, p)
    assert counts.tolist() == [2, 2, 2]


def test_leakage_random_split_matches_expectation():
    # For a random K-way split a node of degree d keeps all neighbours in its own client with
    # probability ≈ (1/K)^d, so E[ε_p] ≈ mean_v (1 - K^-d_v). Sampling sd of the mean ≈ 0.005 at
    # N = 3000; tolerance 0.02. (Cora, mean degree 3.9, gives the spec's ≈ 0.95 this way.)
    g = random_graph(3000, 6000, seed=9)
    k = 5
    st = partition_stats(g, random_partition(g, k, seed=0))
    nbrs = [set() for _ in range(g.num_nodes)]
    for u, v in zip(g.senders.tolist(), g.receivers.tolist()):
        nbrs[u].add(v)
    deg = np.array([len(x) for x in nbrs])
    expected = float(np.mean(1.0 - (1.0 / k) ** deg))
    assert abs(st["leakage_mean"] - expected) < 0.02
    # And the cross-edge fraction of a random split is 1 - 1/K up to sampling noise.
    assert abs(st["cross_edge_fraction"] - (1 - 1 / k)) < 0.02


# ---- label Dirichlet -----------------------------------------------------------------------
def _label_counts(g: Graph, beta: float, seed: int) -> np.ndarray:
    """int [K=4, C]: per-client class counts of a 4-client label-Dirichlet split."""
    return np.array(partition_stats(g, label_dirichlet_partition(g, 4, beta=beta, seed=seed))["label_counts"])


def _labelled_graph(n_per_class=500, num_classes=4, unlabelled=0) -> Graph:
    y = np.concatenate([np.repeat(np.arange(num_classes), n_per_class), -np.ones(unlabelled)])
    return graph_from_edges(y.size, y=y, num_classes=num_classes)


def test_dirichlet_large_beta_near_uniform():
    # β = 1e4: each class share ~ Dir(1e4·1_4), sd ≈ sqrt(.25·.75/4e4) ≈ 0.002, so every client's
    # label mix is within 0.02 (~10 sd) of the global mix (0.25 each).
    g = _labelled_graph()
    for seed in range(3):
        lc = _label_counts(g, 1e4, seed)
        mix = lc / lc.sum(1, keepdims=True)
        assert np.abs(mix - 0.25).max() < 0.02


def test_dirichlet_small_beta_skewed():
    # β = 0.05: a class lands mostly on one client. Mean over classes and 5 seeds of the largest
    # client share of a class: expected ≈ 0.91 (≈ 0.69 was the worst single seed of 200 tried);
    # uniform splitting gives 0.25. Threshold 0.75; also ordered against β = 1 and β = 100.
    g = _labelled_graph()

    def top_share(beta):
        out = []
        for seed in range(5):
            lc = _label_counts(g, beta, seed)
            out.append((lc / lc.sum(0, keepdims=True)).max(0).mean())
        return float(np.mean(out))

    s_small, s_mid, s_big = top_share(0.05), top_share(1.0), top_share(100.0)
    assert s_small > 0.75
    assert s_small > s_mid > s_big
    assert s_big < 0.3


def test_dirichlet_unlabelled_spread_and_classes_split():
    g = _labelled_graph(n_per_class=50, num_classes=3, unlabelled=23)
    p = label_dirichlet_partition(g, 4, beta=0.5, seed=1)
    unl = np.flatnonzero(g.y < 0)
    counts = np.bincount(p.assignment[unl], minlength=4)
    assert counts.sum() == 23 and counts.max() - counts.min() <= 1


def test_dirichlet_matches_reference_draw():
    # Independent re-implementation of the scheme with the documented draw order: per class,
    # permute its nodes, draw Dir(β·1_K), cut at floor(cumsum·n_c).
    g = _labelled_graph(n_per_class=30, num_classes=3)
    beta, k, seed = 0.7, 3, 4
    rng = np.random.default_rng(seed)
    ref = np.full(g.num_nodes, -1)
    for c in range(3):
        idx = rng.permutation(np.flatnonzero(g.y == c))
        p = rng.dirichlet([beta] * k)
        cum = [0] + [int(x) for x in np.cumsum(p)[:-1] * idx.size] + [idx.size]
        for j in range(k):
            ref[idx[cum[j]:cum[j + 1]]] = j
    assert np.bincount(ref, minlength=k).min() >= 1  # this seed's first draw is accepted
    assert np.array_equal(label_dirichlet_partition(g, k, beta, seed=seed).assignment, ref)


def test_dirichlet_min_size_and_retries():
    g = _labelled_graph(n_per_class=20, num_classes=2)
    p = label_dirichlet_partition(g, 4, beta=0.1, seed=0, min_size=5)
    assert p.sizes.min() >= 5
    # Tiny β puts each of the 2 classes on one client: 4 clients can never all be non-empty.
    with pytest.raises(PartitionError, match=r"max_retries=7.*min_size=1"):
        label_dirichlet_partition(g, 4, beta=1e-6, seed=0, max_retries=7)


# ---- bad input -----------------------------------------------------------------------------
G20 = random_graph(20, 30, seed=3)


@pytest.mark.parametrize("call,pattern", [
    (lambda: random_partition(G20, 0), r"num_clients must be >= 1, got 0"),
    (lambda: random_partition(G20, -2), r"num_clients must be >= 1, got -2"),
    (lambda: random_partition(G20, 21), r"num_clients=21 exceeds the number of nodes \(20\)"),
    (lambda: random_partition(G20, 2.5), r"num_clients must be an integer, got 2.5"),
    (lambda: random_partition(G20, 2.0), r"num_clients must be an integer, got 2.0"),
    (lambda: random_partition(G20, "3"), r"num_clients must be an integer, got '3'"),
    (lambda: random_partition(G20, True), r"num_clients must be an integer, got True"),
    (lambda: random_partition(G20, 2, seed=-1), r"seed must be >= 0, got -1"),
    (lambda: random_partition(G20, 2, seed=0.5), r"seed must be an integer, got 0.5"),
    (lambda: random_partition("cora", 2), r"graph must be a fgl_jax.graph.Graph, got str"),
    (lambda: louvain_partition(G20, 0), r"num_clients must be >= 1, got 0"),
    (lambda: louvain_partition(G20, 25), r"num_clients=25 exceeds"),
    (lambda: louvain_partition(G20, 2, resolution=0), r"resolution must be a finite number > 0, got 0"),
    (lambda: louvain_partition(G20, 2, resolution=-1.5), r"resolution must be a finite number > 0, got -1.5"),
    (lambda: louvain_partition(G20, 2, resolution=float("nan")), r"resolution must be .* got nan"),
    (lambda: louvain_partition(G20, 2, slack=-0.1), r"slack must be a finite number >= 0, got -0.1"),
    (lambda: label_dirichlet_partition(G20, 0, 1.0), r"num_clients must be >= 1, got 0"),
    (lambda: label_dirichlet_partition(G20, 30, 1.0), r"num_clients=30 exceeds"),
    (lambda: label_dirichlet_partition(G20, 2, 0.0), r"beta must be a finite number > 0, got 0.0"),
    (lambda: label_dirichlet_partition(G20, 2, -1.0), r"beta must be a finite number > 0, got -1.0"),
    (lambda: label_dirichlet_partition(G20, 2, float("inf")), r"beta must be .* got inf"),
    (lambda: label_dirichlet_partition(G20, 2, "0.5"), r"beta must be a real number, got '0.5'"),
    (lambda: label_dirichlet_partition(G20, 2, 1.0, min_size=0), r"min_size must be >= 1, got 0"),
    (lambda: label_dirichlet_partition(G20, 2, 1.0, min_size=1.5), r"min_size must be an integer, got 1.5"),
    (lambda: label_dirichlet_partition(G20, 3, 1.0, min_size=7), r"min_size=7 is infeasible"),
    (lambda: label_dirichlet_partition(G20, 2, 1.0, max_retries=0), r"max_retries must be >= 1, got 0"),
])
def test_bad_input(call, pattern):
    with pytest.raises(PartitionError, match=pattern):
        call()
    assert issubclass(PartitionError, ValueError)


def test_validate_errors():
    g = graph_from_edges(5, [(0, 1)])
    with pytest.raises(PartitionError, match=r"client\(s\) \[1, 3\] of 4 received no node"):
        validate(Partition(np.array([0, 0, 2, 2, 0]), 4, "manual", 0), g)
    with pytest.raises(PartitionError, match=r"shape \(4,\).*5 nodes"):
        validate(Partition(np.array([0, 1, 0, 1]), 2, "manual", 0), g)
    with pytest.raises(PartitionError, match=r"node 2 has client id 5, outside \[0, 2\)"):
        validate(Partition(np.array([0, 1, 5, 1, 0]), 2, "manual", 0), g)
    with pytest.raises(PartitionError, match=r"node 0 has client id -1"):
        validate(Partition(np.array([-1, 1, 0, 1, 0]), 2, "manual", 0), g)
    with pytest.raises(PartitionError, match="integer client ids"):
        Partition(np.array([0.0, 1.0]), 2, "manual", 0)
    with pytest.raises(PartitionError, match="covers 4 nodes"):
        Partition(np.array([0, 1, 0, 1]), 2, "manual", 0).cross_edge_mask(g)


def test_partition_is_immutable():
    g = random_graph(30, 40)
    p = random_partition(g, 3)
    with pytest.raises(ValueError):
        p.assignment[0] = 2
    src = np.array([0, 1, 1, 0])
    q = Partition(src, 2, "manual", 0)
    src[0] = 1  # the partition keeps its own copy
    assert q.assignment[0] == 0
