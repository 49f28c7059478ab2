"""Lumos per-device trees (Fig. 2), padding, fallback trees and link-prediction leakage."""
import numpy as np
import pytest

from fgl_jax.partition.edges import random_edge_split
from fgl_jax.systems.lumos import workload as W
from fgl_jax.systems.lumos import LumosConfig, prepare
from fgl_jax.systems.lumos.trees import NBR, PARENT, ROOT, SELF, build_trees
from tests.helpers import toy_graph


def tree_of(tb, meta, v):
    o, n = int(meta.device_offset[v]), int(meta.device_size[v])
    s, r, m = (np.asarray(a) for a in (tb.senders, tb.receivers, tb.edge_mask))
    sel = m & (s >= o) & (s < o + n)
    assert np.all((r[sel] >= o) & (r[sel] < o + n))       # no edge leaves the tree
    return o, n, s[sel] - o, r[sel] - o


def test_fig2_example():
    es = W.EdgeSet.from_arrays([1, 1, 1, 1], [2, 3, 4, 5], 6)
    keep = es.owner == 1
    tb, meta = build_trees(es, keep, 3, node_multiple=8, edge_multiple=8)
    o, n, s, r = tree_of(tb, meta, 1)
    assert n == 13 and s.size == 24                             # 3n+1 nodes, 3n undirected edges
    nv = np.asarray(tb.node_vertex)[o:o + n]
    nt = np.asarray(tb.node_type)[o:o + n]
    assert sorted(nv[nv >= 0].tolist()) == [1, 1, 1, 1, 2, 3, 4, 5]
    assert nt.tolist() == [SELF] * 4 + [NBR] * 4 + [PARENT] * 4 + [ROOT]
    adj = {i: set() for i in range(n)}
    for a, b in zip(s, r):
        adj[b].add(int(a))
    for i in range(4):
        assert adj[8 + i] == {i, 4 + i, 12}                      # P_i ~ {s_i, l_i, R}
        assert nv[4 + i] == 2 + i
    assert adj[12] == {8, 9, 10, 11}
    # vertices 2..5 keep nothing and appear only as leaves; vertex 0 is isolated -> fallback tree
    assert meta.device_size[2:].tolist() == [0] * 4 and meta.fallback.tolist() == [True] + [False] * 5
    assert np.asarray(tb.leaf_count).tolist() == [1, 4, 1, 1, 1, 1]


def test_general_sizes_star_and_padding():
    g = toy_graph(80, seed=3)
    es = W.EdgeSet.from_graph(g)
    keep, _ = W.greedy_init(es)
    wl = W.workloads(es, keep)
    tb, meta = build_trees(es, keep, 5)
    has = wl > 0
    np.testing.assert_array_equal(meta.device_size[has], 3 * wl[has] + 1)
    assert int(np.asarray(tb.edge_mask).sum()) == 6 * wl.sum() + 4 * meta.fallback.sum()
    assert tb.num_nodes % 1024 == 0 and np.all(np.asarray(tb.node_type)[meta.num_real_nodes:] == -1)
    # leaf copies per vertex = own self-leaves + appearances as a neighbour leaf (+ fallback)
    expect = wl + np.bincount(es.nbr[keep], minlength=es.num_nodes) + meta.fallback
    np.testing.assert_array_equal(np.asarray(tb.leaf_count), expect)
    sb, smeta = build_trees(es, keep, 5, kind="star")
    np.testing.assert_array_equal(smeta.device_size[has], wl[has] + 1)
    with pytest.raises(ValueError, match="kind"):
        build_trees(es, keep, 5, kind="forest")
    with pytest.raises(ValueError, match="keep"):
        build_trees(es, keep[:-1], 5)


def test_recipient_bins():
    g = toy_graph(60, seed=1)
    es = W.EdgeSet.from_graph(g)
    keep, _ = W.greedy_init(es)
    _, meta = build_trees(es, keep, 4)
    rec = np.bincount(meta.pair_src, minlength=es.num_nodes)
    np.testing.assert_array_equal(meta.num_bins, np.minimum(np.maximum(rec, 1), 4))
    for u in range(es.num_nodes):
        b = meta.recipient_bin[meta.pair_src == u]
        assert np.all(b < meta.num_bins[u])
        # round-robin: bin counts differ by at most one
        if b.size:
            c = np.bincount(b, minlength=meta.num_bins[u])
            assert c.max() - c.min() <= 1


def test_no_heldout_link_edge_in_any_tree():
    g = toy_graph(150, seed=2)
    split = random_edge_split(g.senders, g.receivers, g.num_nodes, seed=0)
    prep = prepare(g, LumosConfig(task="link", mcmc_iters=30, rounds=1), split)
    tree_pairs = {(min(a, b), max(a, b)) for a, b in zip(prep.meta.pair_dst, prep.meta.pair_src)}
    held = {tuple(p) for p in np.concatenate([split.val_pos, split.test_pos]).tolist()}
    train = {tuple(p) for p in split.train.tolist()}
    assert tree_pairs and not (tree_pairs & held)
    assert tree_pairs <= train
    pos = {(min(a, b), max(a, b)) for a, b in np.asarray(prep.data.pos).tolist()}
    assert not (pos & held)
    # the same from the device arrays the program runs on: (owner device, neighbour-leaf vertex)
    t = prep.data.trees
    nbr = np.asarray(t.node_type) == NBR
    dev, vert = np.asarray(t.node_device)[nbr], np.asarray(t.node_vertex)[nbr]
    in_program = {(min(a, b), max(a, b)) for a, b in zip(dev.tolist(), vert.tolist())}
    assert in_program == tree_pairs and not (in_program & held)
