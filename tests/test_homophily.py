"""Issue 48 item 4: edge / class / adjusted homophily and the per-client statistics, against a dense
NumPy re-derivation (adjacency matrix and one-hot labels) on toy graphs, and where they show up
(`fgl-jax inspect --partition`, the run's partition record)."""
from __future__ import annotations

import numpy as np
import pytest

from fgl_jax.graph import Graph, symmetrize
from fgl_jax.homophily import adjusted_homophily, class_homophily, client_homophily, edge_homophily
from fgl_jax.inspection import inspect_dataset
from fgl_jax.partition import Partition, partition_report, partition_stats


def toy(seed: int, n: int = 30, c: int = 3, unlabelled: int = 2) -> Graph:
    rng = np.random.default_rng(seed)
    pairs = rng.integers(0, n, (3 * n, 2))
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    s, r = symmetrize(pairs[:, 0], pairs[:, 1], n)
    y = rng.integers(0, c, n).astype(np.int32)
    y[rng.choice(n, unlabelled, replace=False)] = -1
    z = np.zeros(n, bool)
    return Graph("toy", s, r, np.eye(n, dtype=np.float32), y, c, z, z, z)


def dense(g: Graph) -> tuple[np.ndarray, np.ndarray]:
    """(A [N, N] 0/1 over labelled endpoints only, Y one-hot [N, C], zero rows for unlabelled)."""
    n = g.num_nodes
    a = np.zeros((n, n))
    a[g.senders, g.receivers] = 1.0
    lab = g.y >= 0
    a = a * lab[:, None] * lab[None, :]
    y = np.zeros((n, g.num_classes))
    y[lab, g.y[lab]] = 1.0
    return a, y


def ref_edge(a, y):
    return float((a * (y @ y.T)).sum() / a.sum())


def ref_class(a, y):
    """Lim et al. eq.: h_k = sum over class-k nodes of same-class neighbours / their degrees."""
    c = y.shape[1]
    deg = a.sum(1)
    same = (a @ y * y).sum(1)          # per node: neighbours of its own class
    total = 0.0
    n_lab = y.sum()
    for k in range(c):
        in_k = y[:, k] > 0
        h_k = same[in_k].sum() / deg[in_k].sum() if deg[in_k].sum() else 0.0
        total += max(0.0, h_k - in_k.sum() / n_lab)
    return total / (c - 1)


def ref_adjusted(a, y):
    """Platonov et al. eq.: (h_edge - sum_k (D_k / 2|E|)^2) / (1 - ...), D_k the degree sum of class k."""
    d_k = y.T @ a.sum(1)
    chance = float(((d_k / a.sum()) ** 2).sum())
    return (ref_edge(a, y) - chance) / (1 - chance)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_whole_graph_measures_match_the_dense_rederivation(seed):
    g = toy(seed)
    a, y = dense(g)
    assert edge_homophily(g) == pytest.approx(ref_edge(a, y), abs=1e-12)
    assert class_homophily(g) == pytest.approx(ref_class(a, y), abs=1e-12)
    assert adjusted_homophily(g) == pytest.approx(ref_adjusted(a, y), abs=1e-12)


def test_known_values_on_a_two_class_path():
    # 0-1-2-3 with labels 0 0 1 1: 4 of 6 stored edges same-class; every class has degree sum 3
    s, r = symmetrize(np.array([0, 1, 2]), np.array([1, 2, 3]), 4)
    z = np.zeros(4, bool)
    g = Graph("p", s, r, np.eye(4, dtype=np.float32), np.array([0, 0, 1, 1], np.int32), 2, z, z, z)
    assert edge_homophily(g) == pytest.approx(4 / 6)
    assert adjusted_homophily(g) == pytest.approx((4 / 6 - 0.5) / 0.5)      # 1/3
    assert class_homophily(g) == pytest.approx(2 * (2 / 3 - 1 / 2))           # 1/3


def test_per_client_statistics_match_a_loop_over_edges():
    g = toy(3)
    a = np.random.default_rng(0).integers(0, 4, g.num_nodes)
    got = client_homophily(g, a, 4)
    for k in range(4):
        mine = a[g.senders] == k
        intra = mine & (a[g.receivers] == k) & (g.y[g.senders] >= 0) & (g.y[g.receivers] >= 0)
        want = (g.y[g.senders] == g.y[g.receivers])[intra].mean() if intra.any() else None
        assert got["edge_homophily"][k] == (pytest.approx(want) if want is not None else None)
        assert got["cross_edge_fraction"][k] == pytest.approx((a[g.receivers][mine] != k).mean())
        assert got["label_counts"][k] == [int(((a == k) & (g.y == c)).sum()) for c in range(g.num_classes)]


def test_partition_record_and_inspect_show_them():
    g = toy(4)
    part = Partition(np.arange(g.num_nodes) % 3, 3, method="given", seed=0)
    s = partition_stats(g, part)
    rep = partition_report(g, part, s)
    ref = client_homophily(g, part.assignment, 3)
    assert s["edge_homophily"] == ref["edge_homophily"]
    assert rep["client_cross_edge_fraction"] == ref["cross_edge_fraction"]
    assert rep["homophily"]["adjusted"] == pytest.approx(adjusted_homophily(g))
    assert rep["client_edge_homophily"]["per_client"] == ref["edge_homophily"]
    text = "\n".join(inspect_dataset(g, partition="random", clients=3))
    assert f"adjusted {adjusted_homophily(g):.3f}" in text
    assert "client edge homophily" in text and "cross-client edge fraction per client" in text
