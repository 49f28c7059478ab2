"""FedStar's structure encodings (fgl_jax.data.structure) vs hand-derived values and a NumPy walk
re-derivation: return probabilities of the row-stochastic walk matrix, by explicit walk counting."""
import itertools

import numpy as np
import pytest

from fgl_jax.data.structure import degree_encoding, random_walk_encoding, structure_encoding
from fgl_jax.data.tu import GraphSet


def graphs(edge_lists, sizes) -> GraphSet:
    """Undirected graphs from (u, v) lists (both directions stored), one after the other."""
    snd, rcv, n_off, e_off = [], [], [0], [0]
    for edges, n in zip(edge_lists, sizes):
        for u, v in edges:
            snd += [u + n_off[-1], v + n_off[-1]]
            rcv += [v + n_off[-1], u + n_off[-1]]
        n_off.append(n_off[-1] + n)
        e_off.append(len(snd))
    total = n_off[-1]
    return GraphSet("toy", np.zeros((total, 1), np.float32), np.array(snd, np.int32), np.array(rcv, np.int32),
                    np.array(n_off, np.int64), np.array(e_off, np.int64), np.zeros(len(sizes), np.int32), 1)


def return_probability(adj: np.ndarray, v: int, k: int) -> float:
    """Sum over every closed walk v -> ... -> v of k steps of the product of 1/degree (enumeration)."""
    n = adj.shape[0]
    deg = adj.sum(1)
    total = 0.0
    for mid in itertools.product(range(n), repeat=k - 1):
        path = (v, *mid, v)
        p = 1.0
        for a, b in zip(path[:-1], path[1:]):
            p *= adj[a, b] / deg[a] if deg[a] else 0.0
        total += p
    return total


# a triangle with a pendant node (0-1-2 triangle, 2-3), a single edge, an isolated node
EDGES = [[(0, 1), (1, 2), (0, 2), (2, 3)], [(0, 1)], []]
SIZES = [4, 2, 1]


def test_random_walk_encoding_matches_walk_enumeration():
    gs = graphs(EDGES, SIZES)
    got = random_walk_encoding(gs, steps=4)
    assert got.shape == (7, 4)
    adj = np.zeros((4, 4))
    for u, v in EDGES[0]:
        adj[u, v] = adj[v, u] = 1
    for v in range(4):
        for k in range(1, 5):
            assert got[v, k - 1] == pytest.approx(return_probability(adj, v, k), abs=1e-6)
    # hand values: the pendant node 3 returns in 2 steps w.p. 1/3 (degree of 2); one edge: 0, 1, 0, 1
    assert got[3, 1] == pytest.approx(1 / 3) and got[0, 0] == 0.0
    np.testing.assert_allclose(got[4], [0, 1, 0, 1], atol=1e-7)
    np.testing.assert_allclose(got[6], [0, 0, 0, 0])                       # no edges: never returns


def test_degree_encoding_and_concatenation():
    gs = graphs(EDGES, SIZES)
    dse = degree_encoding(gs, dims=2)
    deg = np.array([2, 2, 3, 1, 1, 1, 0])
    np.testing.assert_array_equal(dse, np.eye(2)[np.clip(deg, 1, 2) - 1])  # degree 3 clipped, 0 counts as 1
    both = structure_encoding(gs, rw_steps=3, dg_dims=2, kind="rw_dg")
    np.testing.assert_array_equal(both, np.concatenate([random_walk_encoding(gs, 3), dse], axis=1))
    with pytest.raises(ValueError, match="kind must be one of"):
        structure_encoding(gs, kind="lap")
