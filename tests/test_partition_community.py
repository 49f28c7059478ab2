"""Tests for the community partitioners: METIS, OpenFGL's louvain+/metis+ (louvain_plus, metis_plus),
label-Dirichlet over communities, Louvain's packing option, k-means, and the label-skew report.

References: brute-force counts, hand-derived toy examples (derivations in the comments), and a
statistical test of the Dirichlet proportions with a stated tolerance.
"""
from __future__ import annotations

import numpy as np
import pytest

from fgl_jax.graph import Graph
from fgl_jax.partition import (PartitionError, community_dirichlet_partition, louvain_partition,
                               louvain_plus_partition, make_partition, metis_partition, metis_plus_partition,
                               partition_report, partition_stats)
from fgl_jax.partition.kmeans import kmeans
from fgl_jax.partition.louvain import louvain_communities
from fgl_jax.partition.metis import metis_membership
from fgl_jax.partition.stats import label_tv


def make_graph(n: int, pairs, y, num_classes: int, train=None) -> Graph:
    s = [u for u, v in pairs] + [v for u, v in pairs]
    r = [v for u, v in pairs] + [u for u, v in pairs]
    z = np.zeros(n, bool)
    tr = z if train is None else np.asarray(train, bool)
    return Graph("toy", np.asarray(s, np.int32), np.asarray(r, np.int32), np.zeros((n, 1), np.float32),
                 np.asarray(y, np.int32), num_classes, tr, z, z)


def clique_ring(sizes, labels, num_classes: int) -> tuple[Graph, list[np.ndarray]]:
    """Cliques of the given sizes (consecutive node ids) joined in a ring by one edge each
    (first node of clique i to the last node of clique i+1); labels: one list per clique."""
    groups, start, pairs = [], 0, []
    for size in sizes:
        g = np.arange(start, start + size)
        groups.append(g)
        pairs += [(int(u), int(v)) for i, u in enumerate(g) for v in g[i + 1:]]
        start += size
    m = len(groups)
    pairs += [(int(groups[i][0]), int(groups[(i + 1) % m][-1])) for i in range(m)] if m > 1 else []
    return make_graph(start, pairs, np.concatenate(labels), num_classes), groups


def random_graph(n: int, m: int, seed: int = 0, num_classes: int = 3) -> Graph:
    rng = np.random.default_rng(seed)
    pairs = sorted({(min(u, v), max(u, v)) for u, v in rng.integers(n, size=(m, 2)).tolist() if u != v})
    return make_graph(n, pairs, rng.integers(num_classes, size=n), num_classes)


def cut_bruteforce(g: Graph, assignment) -> int:
    pairs = {(min(u, v), max(u, v)) for u, v in zip(g.senders.tolist(), g.receivers.tolist()) if u != v}
    return sum(assignment[u] != assignment[v] for u, v in pairs)


# ---- METIS --------------------------------------------------------------------------------------
@pytest.mark.parametrize("k", [2, 5, 7])
def test_metis_covers_every_node_once_and_reports_its_cut(k):
    g = random_graph(300, 900, seed=k)
    p = metis_partition(g, k, seed=0)
    nodes = np.concatenate(p.client_nodes)
    assert nodes.size == g.num_nodes and np.array_equal(np.sort(nodes), np.arange(g.num_nodes))
    assert p.sizes.min() >= 1 and p.method == "metis"
    _, cut = metis_membership(g, k, seed=0)
    assert cut == cut_bruteforce(g, p.assignment) == partition_stats(g, p)["cross_edges_undirected"]
    # METIS balances: within its default 3% imbalance, allowing one node of rounding
    assert p.sizes.max() <= np.ceil(1.03 * g.num_nodes / k) + 1
    assert np.array_equal(p.assignment, metis_partition(g, k, seed=0).assignment)  # deterministic


def test_metis_finds_the_cliques():
    # 6 cliques of 8 in a ring, K=3: the balanced split with the fewest cut edges puts two adjacent
    # cliques in each client and cuts exactly 3 ring links.
    g, groups = clique_ring([8] * 6, [np.zeros(8)] * 6, 1)
    p = metis_partition(g, 3)
    for grp in groups:
        assert len(set(p.assignment[grp])) == 1
    assert p.sizes.tolist() == [16, 16, 16]
    assert cut_bruteforce(g, p.assignment) == 3


# ---- louvain+ / metis+ ---------------------------------------------------------------------------
# Five cliques of 6 nodes in a ring, two classes. Label histograms (share of class 0):
#   A 6/6 = 1, B 5/6, C 4/6, D 0, E 1/6.
# 2-means on these 1-D points: {A,B,C} (centre 5/6) and {D,E} (centre 1/12) has inertia
# 2(1/6)^2 + 2(1/12)^2 = 0.069; the only other contiguous split {A,B} | {C,D,E} has 0.254 and the
# rest are worse, so the optimum is {A,B,C} | {D,E}: client 0 = nodes 0..17 (it holds node 0),
# client 1 = nodes 18..29; communities stay whole, sizes 18 and 12 (no balancing).
PLUS_LABELS = [[0] * 6, [0] * 5 + [1], [0] * 4 + [1] * 2, [1] * 6, [0] + [1] * 5]


@pytest.mark.parametrize("seed", [0, 1])
def test_louvain_plus_hand_example(seed):
    g, groups = clique_ring([6] * 5, PLUS_LABELS, 2)
    found = louvain_communities(g, 1.0, seed)
    assert sorted(map(tuple, found)) == sorted(map(tuple, groups))  # precondition: Louvain finds the cliques
    p = louvain_plus_partition(g, 2, seed=seed)
    assert p.assignment.tolist() == [0] * 18 + [1] * 12
    assert p.method == "louvain_plus"


@pytest.mark.parametrize("seed", [0, 1])
def test_metis_plus_hand_example(seed):
    g, groups = clique_ring([6] * 5, PLUS_LABELS, 2)
    parts, _ = metis_membership(g, 5, seed)
    assert sorted(len(set(parts[grp])) for grp in groups) == [1] * 5  # precondition: METIS finds the cliques
    p = metis_plus_partition(g, 2, seed=seed, num_communities=5)
    assert p.assignment.tolist() == [0] * 18 + [1] * 12
    assert make_partition(g, "metis_plus", 2, seed=seed, num_communities=5).assignment.tolist() == p.assignment.tolist()


def test_plus_needs_enough_distinct_communities():
    g, _ = clique_ring([6] * 3, [[0] * 6] * 3, 2)  # three identical histograms: one distinct point
    with pytest.raises(PartitionError, match="distinct points for 2 clusters"):
        louvain_plus_partition(g, 2)
    with pytest.raises(PartitionError, match="num_communities must be >= 4"):
        metis_plus_partition(g, 4, num_communities=3)


def test_kmeans_recovers_separated_blobs():
    rng = np.random.default_rng(0)
    centres = np.array([[0.0, 0.0], [10.0, 0.0], [0.0, 10.0]])
    truth = rng.integers(3, size=90)
    x = centres[truth] + rng.normal(scale=0.5, size=(90, 2))
    labels = kmeans(x, 3, seed=4)
    # the same grouping up to renaming: one label per true blob, three different labels
    mapping = {t: set(labels[truth == t].tolist()) for t in range(3)}
    assert all(len(v) == 1 for v in mapping.values()) and len(set.union(*mapping.values())) == 3


def test_kmeans_reseeds_empty_clusters():
    from fgl_jax.partition.kmeans import _lloyd
    x = np.array([[0.0, 0.0], [0.0, 1.0], [10.0, 0.0]])
    # centre 2 starts empty; the worst-served point (10, 0) is alone in cluster 1, so moving it would
    # empty cluster 1: a point of cluster 0 must be moved instead
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an emptied cluster would average nothing (a NaN centre, a warning)
        labels, _ = _lloyd(x, np.array([[0.0, 0.5], [10.0, 5.0], [100.0, 100.0]]), 50)
    assert sorted(np.bincount(labels, minlength=3).tolist()) == [1, 1, 1]
    # two empty clusters at once
    x5 = np.array([[0.0, 0.0], [0.0, 1.0], [1.0, 0.0], [1.0, 1.0], [5.0, 5.0]])
    labels, _ = _lloyd(x5, np.array([[0.5, 0.5], [100.0, 100.0], [-100.0, -100.0]]), 50)
    assert np.bincount(labels, minlength=3).min() >= 1


# ---- Louvain packing -------------------------------------------------------------------------------
def test_louvain_whole_packing_never_cuts_a_community():
    # Cliques 40, 12, 9, 5, 3 (ring), K=4. Whole packing, largest first into the emptiest client
    # (ties: lowest id): 40 -> c0, 12 -> c1, 9 -> c2, 5 -> c3, 3 -> c3 (load 5 is the smallest):
    # sizes [40, 12, 9, 8]. Capped packing (cap floor(69/4 * 1.1) = 18) must cut the 40-clique.
    g, groups = clique_ring([40, 12, 9, 5, 3], [np.zeros(s) for s in (40, 12, 9, 5, 3)], 1)
    whole = louvain_partition(g, 4, seed=0, packing="whole")
    assert whole.sizes.tolist() == [40, 12, 9, 8]
    for grp in groups:
        assert len(set(whole.assignment[grp])) == 1
    capped = louvain_partition(g, 4, seed=0)
    assert capped.sizes.max() <= 18 and len(set(capped.assignment[groups[0]])) > 1
    assert np.array_equal(make_partition(g, "louvain", 4, packing="whole").assignment, whole.assignment)


def test_louvain_whole_packing_fewer_communities_than_clients():
    g, groups = clique_ring([10, 10], [np.zeros(10)] * 2, 1)
    p = louvain_partition(g, 5, seed=0, packing="whole")  # rule 3 cuts communities so no client is empty
    assert p.sizes.min() >= 1 and p.sizes.sum() == 20
    with pytest.raises(PartitionError, match="packing must be one of"):
        louvain_partition(g, 2, packing="loose")


# ---- label-Dirichlet over communities --------------------------------------------------------------
def _pairs_graph(per_class: int, num_classes: int) -> Graph:
    """per_class disjoint same-label pairs (2-node communities) per class."""
    n = 2 * per_class * num_classes
    y = np.repeat(np.arange(num_classes), 2 * per_class)
    return make_graph(n, [(2 * i, 2 * i + 1) for i in range(n // 2)], y, num_classes)


@pytest.mark.slow
def test_community_dirichlet_label_proportions():
    # For Dir(beta 1_K), each share p_k ~ Beta(beta, (K-1) beta): mean 1/K, variance
    # (K-1) / (K^2 (K beta + 1)). With 2-node communities in classes of 200 nodes, a client's
    # share of a class equals p_k up to 2/200 (the midpoint rule). Over 3 seeds x 40 classes
    # (120 independent draws): client 0's mean share must be within 4 standard errors of 1/K, and
    # the variance of all shares within 35% of the formula (its sampling error here is ~12%; a
    # wrong beta, e.g. 5 instead of 0.5, changes it by a factor of 7).
    k, beta, classes = 5, 0.5, 40
    g = _pairs_graph(100, classes)
    shares = []
    for seed in range(3):
        p = community_dirichlet_partition(g, k, beta=beta, seed=seed, min_size=1)
        a = p.assignment
        assert np.all(a[0::2] == a[1::2])  # communities (pairs) stay whole
        counts = np.zeros((k, classes))
        np.add.at(counts, (a, g.y), 1)
        shares.append(counts / counts.sum(0))
    shares = np.stack(shares)  # [seeds, K, C]
    var = (k - 1) / (k * k * (k * beta + 1))
    se = np.sqrt(var / (shares.shape[0] * classes))
    assert abs(shares[:, 0, :].mean() - 1 / k) < 4 * se
    assert abs(shares.var() / var - 1) < 0.35


def test_community_dirichlet_large_beta_is_near_uniform_and_metis_works():
    g = _pairs_graph(200, 3)
    p = community_dirichlet_partition(g, 4, beta=1e4, seed=0)
    counts = np.zeros((4, 3))
    np.add.at(counts, (p.assignment, g.y), 1)
    assert np.abs(counts / counts.sum(0) - 0.25).max() < 0.02
    gm, _ = clique_ring([6] * 8, [np.full(6, i % 2) for i in range(8)], 2)
    pm = community_dirichlet_partition(gm, 2, beta=1.0, seed=0, communities="metis", num_communities=8)
    assert pm.sizes.sum() == 48 and pm.method == "community_dirichlet"
    with pytest.raises(PartitionError, match="communities must be"):
        community_dirichlet_partition(g, 2, communities="spectral")


# ---- report -------------------------------------------------------------------------------------
def test_label_tv_and_report_hand_example():
    # label counts [[2, 0], [1, 1], [0, 0]]: global mix (3/4, 1/4); client 0 (1, 0) -> TV 1/4,
    # client 1 (1/2, 1/2) -> TV 1/4, client 2 has no labels -> None.
    tv = label_tv(np.array([[2, 0], [1, 1], [0, 0]]))
    assert np.allclose(tv[:2], [0.25, 0.25]) and np.isnan(tv[2])
    # path 0-1-2-3-4-5, clients [0,0,1,1,2,2], labels [0,0,0,1,-1,-1]: cut edges (1,2), (3,4)
    g = make_graph(6, [(0, 1), (1, 2), (2, 3), (3, 4), (4, 5)], [0, 0, 0, 1, -1, -1], 2,
                   train=[1, 0, 0, 0, 0, 0])
    from fgl_jax.partition import Partition
    part = Partition(np.array([0, 0, 1, 1, 2, 2]), 3, "hand", 0)
    r = partition_report(g, part)
    assert r["edge_cut"] == 2 and r["edge_cut_fraction"] == pytest.approx(2 / 5)
    assert r["label_tv"] == {"mean": pytest.approx(0.25), "max": pytest.approx(0.25)}
    assert r["classes_per_client"] == {"mean": pytest.approx(1.0), "min": 0, "of": 2}
    assert r["client_nodes"]["sizes"] == [2, 2, 2] and r["clients_without_train"] == 2
    assert partition_stats(g, part)["label_tv"][2] is None


# ---- the run's config and the inspect command ------------------------------------------------------
def test_config_passes_each_partitioner_its_options_only():
    from fgl_jax.systems.baseline import RunConfig
    assert RunConfig(partition="louvain", louvain_packing="whole").partition_kwargs() == {
        "packing": "whole", "resolution": 1.0}
    assert RunConfig(partition="metis_plus", num_communities=50).partition_kwargs() == {"num_communities": 50}
    assert RunConfig(partition="community_dirichlet", communities="metis").partition_kwargs() == {
        "beta": 0.5, "resolution": 1.0, "num_communities": 100, "communities": "metis"}
    assert RunConfig(partition="metis").partition_kwargs() == {}
    with pytest.raises(ValueError, match="louvain_packing='whole' is an option of partition louvain, not of 'random'"):
        RunConfig(partition="random", louvain_packing="whole")


def test_run_records_the_partition_report():
    from fgl_jax.systems.baseline import RunConfig, build
    g, _ = clique_ring([6] * 5, PLUS_LABELS, 2)
    g = Graph(g.name, g.senders, g.receivers, g.x, g.y, g.num_classes, np.arange(30) % 3 == 0,
              np.arange(30) % 3 == 1, np.arange(30) % 3 == 2)
    prog = build(RunConfig(dataset="toy", clients=2, partition="louvain_plus", split="keep", rounds=1), g)
    assert prog.describe["partition_report"] == partition_report(g, louvain_plus_partition(g, 2))


def test_inspect_takes_partition_options(capsys):
    from fgl_jax.cli import main
    assert main(["inspect", "csbm", "--partition", "louvain", "--clients", "4",
                 "--partition-option", "packing=whole"]) == 0
    out = capsys.readouterr().out
    assert "partition:  louvain, 4 clients, seed 0, packing=whole" in out and "label skew:" in out
    assert main(["inspect", "csbm", "--partition", "metis", "--partition-option", "beta=1"]) == 2
    assert "does not take" in capsys.readouterr().err
