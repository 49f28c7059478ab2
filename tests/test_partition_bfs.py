"""Louvain's breadth-first cut order (fgl_jax.partition.louvain._bfs_order, a plain loop) equals
scipy.sparse.csgraph's connected components + breadth-first order, on random graphs with several
components, isolated nodes and duplicate edges."""
import numpy as np
import pytest
import scipy.sparse as sp
from scipy.sparse import csgraph

from fgl_jax.partition.louvain import _bfs_order


def reference(adj: sp.csr_matrix, nodes: np.ndarray) -> np.ndarray:
    sub = adj[nodes][:, nodes]
    _, labels = csgraph.connected_components(sub, directed=False)
    first = np.unique(labels, return_index=True)[1]
    parts = [csgraph.breadth_first_order(sub, int(first[c]), directed=False, return_predecessors=False)
             for c in np.argsort(first, kind="stable")]
    return nodes[np.concatenate(parts)]


@pytest.mark.parametrize("seed", range(6))
def test_bfs_order_equals_scipys(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(5, 300))
    m = int(rng.integers(0, 3 * n))
    s, r = rng.integers(0, n, m), rng.integers(0, n, m)
    keep = s != r
    s, r = s[keep], r[keep]
    adj = sp.csr_matrix((np.ones(2 * s.size), (np.concatenate([s, r]), np.concatenate([r, s]))), shape=(n, n))
    adj.data[:] = 1.0
    nodes = np.sort(rng.choice(n, int(rng.integers(3, n + 1)), replace=False)).astype(np.int64)
    got = _bfs_order(adj, nodes)
    np.testing.assert_array_equal(got, reference(adj, nodes))
    assert sorted(got.tolist()) == nodes.tolist()
