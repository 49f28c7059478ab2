"""Graph-level simulations vs plain NumPy / Python re-derivations on toy sets: OpenFGL's topology
skew (graphs sorted by mean degree, cut into runs) and feature skew (by mean feature), the
cross-domain deal, the joined cross-domain set, and the class-block heads of the graph model."""
import jax
import numpy as np
import pytest

from fgl_jax import schema
from fgl_jax.data.graph_domains import GROUPS, combine_graph_sets, domain_group
from fgl_jax.graph_batch import pack_clients
from fgl_jax.nn.graph import GraphClassifier
from fgl_jax.partition.base import PartitionError
from fgl_jax.partition.graphs import (domain_partition, mean_degree, mean_feature, sorted_segment_partition)
from fgl_jax.systems.baseline.config import RunConfig

from tests.test_graph_batch import toy_set


def openfgl_style_segments(stat: list, clients: int) -> list:
    """OpenFGL's loop, re-written plainly: (graph, stat) pairs sorted by stat (Python's stable sort),
    runs of len // clients, the last client takes the rest."""
    pairs = sorted(enumerate(stat), key=lambda p: p[1])
    seg = len(pairs) // clients
    out = [None] * len(pairs)
    for c in range(clients):
        right = len(pairs) if c == clients - 1 else seg * (c + 1)
        for g, _ in pairs[c * seg:right]:
            out[g] = c
    return out


@pytest.mark.parametrize("clients", [1, 3, 4])
def test_topology_skew_vs_sorted_mean_degree(clients):
    gs = toy_set(num_graphs=11, seed=3)
    ref_deg = []
    for g in range(gs.num_graphs):   # in-degree of every node of graph g, then its mean
        x, s, r = gs.graph(g)
        ref_deg.append(float(np.mean([np.sum(r == v) for v in range(x.shape[0])])))
    np.testing.assert_allclose(mean_degree(gs), ref_deg)
    got = sorted_segment_partition(mean_degree(gs), clients)
    assert got.tolist() == openfgl_style_segments(ref_deg, clients)


def test_feature_skew_vs_sorted_mean_feature_and_ties_keep_graph_order():
    gs = toy_set(num_graphs=9, features=4, seed=5)
    ref = [float(gs.graph(g)[0].mean()) for g in range(gs.num_graphs)]
    np.testing.assert_allclose(mean_feature(gs), ref, rtol=1e-6)
    assert sorted_segment_partition(mean_feature(gs), 3).tolist() == openfgl_style_segments(ref, 3)
    # every graph tied (one-hot degree features all have mean 1/F): graph order, runs of 9 // 4 = 2
    assert sorted_segment_partition(np.zeros(9), 4).tolist() == [0, 0, 1, 1, 2, 2, 3, 3, 3]


def test_domain_partition_one_dataset_per_client_or_dealt_inside_it():
    domain = np.array([0, 0, 0, 1, 1, 2, 2, 2, 2, 1])
    assert domain_partition(domain, 3).tolist() == domain.tolist()
    two = domain_partition(domain, 6, seed=1)
    assert np.array_equal(two // 2, domain)                        # a client holds one dataset's graphs
    for d in range(3):                                             # dealt near-equally inside the dataset
        sizes = np.bincount(two[domain == d] - 2 * d, minlength=2)
        assert sizes.min() >= 1 and sizes.max() - sizes.min() <= 1
    with pytest.raises(PartitionError, match="multiple of the 3 datasets"):
        domain_partition(domain, 4)


def test_combined_sets_keep_each_graph_in_its_own_blocks():
    a, b = toy_set(num_graphs=3, features=2, seed=0, classes=2), toy_set(num_graphs=4, features=3, seed=1, classes=3)
    gs, domain = combine_graph_sets([a, b])
    assert gs.num_features == 2 + 3 + 2 and gs.num_classes == 5 and gs.num_graphs == 7
    assert gs.meta["class_blocks"] == ((0, 2), (2, 5)) and domain.tolist() == [0] * 3 + [1] * 4
    for d, (src, cols, shift) in enumerate(((a, slice(0, 2), 0), (b, slice(2, 5), 2))):
        for g in range(src.num_graphs):
            x, s, r = gs.graph(g + 3 * d)
            x0, s0, r0 = src.graph(g)
            np.testing.assert_array_equal(x[:, cols], x0)
            assert np.count_nonzero(x[:, :5]) == np.count_nonzero(x0)          # zeros outside its block
            np.testing.assert_array_equal(x[:, 5 + d], 1.0)                    # the dataset indicator
            np.testing.assert_array_equal(x[:, 5 + 1 - d], 0.0)
            np.testing.assert_array_equal(s, s0) and np.testing.assert_array_equal(r, r0)
            assert gs.y[g + 3 * d] == src.y[g] + shift


@pytest.mark.slow
def test_class_block_heads_mask_the_other_datasets_classes():
    a, b = toy_set(num_graphs=3, features=2, seed=0, classes=2), toy_set(num_graphs=4, features=3, seed=1, classes=3)
    gs, domain = combine_graph_sets([a, b])
    batch = pack_clients(gs, [np.arange(7)], batch_size=8)
    one = jax.tree.map(lambda v: v[0], batch)
    heads = GraphClassifier(in_dim=5, hidden=6, num_classes=5, domains=gs.meta["class_blocks"])
    params = heads.init(jax.random.key(0), one)
    # reference: the same parameters in the plain model on the features without the indicator columns
    plain = GraphClassifier(in_dim=5, hidden=6, num_classes=5)
    bare = one.replace(x=one.x[..., :5])
    got, ref = np.asarray(heads.apply(params, one)), np.asarray(plain.apply(params, bare))
    slots = np.asarray(one.graph_ids)
    for m in range(slots.shape[0]):
        for j, g in enumerate(slots[m]):
            if g < 0:
                continue
            lo, hi = gs.meta["class_blocks"][domain[g]]
            np.testing.assert_allclose(got[m, j, lo:hi], ref[m, j, lo:hi], rtol=1e-5, atol=1e-6)
            assert np.all(np.delete(got[m, j], np.arange(lo, hi)) <= -1e8)


def test_groups_and_config_refusals():
    assert domain_group("chem") == GROUPS["chem"] and domain_group("MUTAG_TU, BZR") == ("MUTAG_TU", "BZR")
    with pytest.raises(ValueError, match="two or more datasets"):
        domain_group("PROTEINS")
    base = dict(task="graph_cls", dataset="chem", clients=6, rounds=1)
    schema.make(RunConfig, {**base, "partition": "cross_domain"})                 # accepted
    with pytest.raises(ValueError, match="use task graph_cls"):
        schema.make(RunConfig, {**base, "partition": "cross_domain", "task": "graph_reg"})
    with pytest.raises(ValueError, match="deals whole graphs"):
        schema.make(RunConfig, {"task": "node_cls", "dataset": "cora", "partition": "topology_skew"})


@pytest.mark.parametrize("graphs,clients", [(1113, 10), (37, 4), (120, 3)])
def test_ordered_chunks_is_gcfl_one_dataset_split(graphs, clients):
    """GCFL's main_oneDS split re-derived as its loop: clients' runs of min(50, G // C) graphs in
    order, then one legacy-RandomState draw per remaining graph, in graph order."""
    from fgl_jax.partition.graphs import ordered_chunk_partition
    run = min(50, graphs // clients)
    chunks = [list(range(c * run, (c + 1) * run)) for c in range(clients)]
    np.random.seed(123)
    for g in range(clients * run, graphs):
        chunks[np.random.randint(low=0, high=clients, size=1)[0]].append(g)
    want = np.empty(graphs, np.int64)
    for c, members in enumerate(chunks):
        want[members] = c
    np.testing.assert_array_equal(ordered_chunk_partition(graphs, clients, seed=123), want)
