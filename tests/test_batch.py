"""Padding is inert: a padded client gives the outputs and gradients of the unpadded one."""
import jax
import numpy as np
import pytest
import scipy.sparse as sp

from fgl_jax.batch import build_client_batch, client_graphs, stack_graphs, unstack, padding_ratio
from fgl_jax.federated.metrics import masked_cross_entropy
from fgl_jax.graph import GraphError
from fgl_jax.nn import make_model
from fgl_jax.partition import Partition
from tests.helpers import toy_graph


@pytest.mark.slow
@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("name", ["gcn", "sage", "gat", "sgc", "mlp"])
def test_padding_changes_nothing(name, sparse):
    g = toy_graph(n=50, sparse=sparse, seed=5)
    # two clients: the second checks the offsets of unstack; each client's exact shape is one compile
    parts = np.random.default_rng(0).integers(0, 2, g.num_nodes)
    batch = build_client_batch(g, parts, 2)
    model = make_model(name, g.num_features, g.num_classes, hidden=8)
    params = model.init(jax.random.key(0), unstack(batch, 0))

    # jitted because op-by-op dispatch of a GAT gradient took ~30 s of CI time;
    # one compile per distinct (tight) shape is far cheaper.
    @jax.jit
    def apply_and_grad(p, b):
        def loss(p_):
            return masked_cross_entropy(model.apply(p_, b), b.y, b.train_mask)

        return model.apply(p, b), jax.grad(loss)(p)

    for c in range(2):
        sub = g.subgraph(np.flatnonzero(parts == c))
        # exact size: no node, edge or nnz padding at all
        tight = unstack(stack_graphs([sub], node_multiple=1, edge_multiple=1), 0)
        padded = unstack(batch, c)
        assert padded.y.shape[0] > sub.num_nodes  # really padded

        out_t, g_t = apply_and_grad(params, tight)
        out_p, g_p = apply_and_grad(params, padded)
        out_p = out_p[: sub.num_nodes]
        np.testing.assert_allclose(out_p, out_t, rtol=1e-5, atol=1e-5)
        for a, b in zip(jax.tree.leaves(g_t), jax.tree.leaves(g_p)):
            np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)


def test_batch_shapes_and_masks():
    g = toy_graph(n=40, seed=1)
    parts = np.arange(g.num_nodes) % 4
    b = build_client_batch(g, parts, 4)
    assert b.num_clients == 4 and b.num_nodes % 8 == 0
    assert int(b.node_mask.sum()) == g.num_nodes
    ids = np.asarray(b.node_ids)[np.asarray(b.node_mask)]
    assert sorted(ids.tolist()) == list(range(g.num_nodes))
    # cross-client edges were dropped: edges kept equal the intra-client count
    intra = (parts[g.senders] == parts[g.receivers]).sum()
    assert int(b.edge_mask.sum()) == intra
    assert padding_ratio(b) >= 1.0


def test_empty_client_is_rejected():
    g = toy_graph(n=20)
    parts = np.zeros(g.num_nodes, int)
    with pytest.raises(GraphError, match="no nodes"):
        build_client_batch(g, parts, 2)


def _reference_subgraph(g, nodes):
    """Client `nodes`' induced subgraph by plain loops: (senders, receivers, x rows, y, masks)."""
    pos = {int(v): i for i, v in enumerate(nodes)}
    edges = [(pos[int(u)], pos[int(v)]) for u, v in zip(g.senders, g.receivers) if int(u) in pos and int(v) in pos]
    s, r = (np.array([e[i] for e in edges], np.int64).reshape(-1) for i in (0, 1))
    x = g.dense_x()
    return s, r, np.stack([x[v] for v in nodes]) if len(nodes) else x[:0], [
        np.array([m[v] for v in nodes]) for m in (g.y, g.train_mask, g.val_mask, g.test_mask)]


@pytest.mark.parametrize("sparse", [False, True])
def test_many_client_views_equal_a_per_client_reference(sparse):
    # 50 small clients (and two nodes in no client): Graph.subgraphs, client_graphs and
    # build_client_batch group nodes and edges by sorting, not one pass per client; every client's
    # arrays must be those of the loop reference, row for row
    g = toy_graph(n=160, seed=4, sparse=sparse)
    a = np.random.default_rng(1).permutation(np.arange(g.num_nodes) % 50)   # 3-4 nodes each
    a[[3, 77]] = [-1, 50]                      # outside 0..49: in no client
    subs, nodes = client_graphs(g, a, 50)
    batch = build_client_batch(g, a, 50)
    assert len(subs) == len(nodes) == 50 and batch.num_clients == 50
    rows = jax.tree.map(np.asarray, batch)   # host copies: row k of each [C, ...] array is client k
    for k in range(50):
        want_nodes = [v for v in range(g.num_nodes) if a[v] == k]
        np.testing.assert_array_equal(nodes[k], want_nodes)
        s, r, x, (y, tr, va, te) = _reference_subgraph(g, want_nodes)
        sub = subs[k]
        assert sub.name == f"toy[client {k}]" and sp.issparse(sub.x) == sparse
        for got, want in ((sub.senders, s), (sub.receivers, r), (sub.dense_x(), x), (sub.y, y),
                          (sub.train_mask, tr), (sub.val_mask, va), (sub.test_mask, te)):
            np.testing.assert_array_equal(got, want)
        # the padded batch's row k: the same arrays, then padding
        n, e = len(want_nodes), len(s)
        np.testing.assert_array_equal(rows.node_ids[k, :n], want_nodes)
        assert (rows.node_ids[k, n:] == -1).all() and rows.node_mask[k].sum() == n
        np.testing.assert_array_equal(rows.senders[k, :e], s)
        np.testing.assert_array_equal(rows.receivers[k, :e], r)
        assert rows.edge_mask[k].sum() == e
        np.testing.assert_array_equal(rows.train_mask[k, :n], tr & (y >= 0))
    # the padded batch equals stack_graphs over the per-client subgraphs (sparse features included)
    want = stack_graphs([g.subgraph(np.flatnonzero(a == k)) for k in range(50)],
                        [np.flatnonzero(a == k) for k in range(50)])
    same = jax.tree.map(lambda x, y: np.array_equal(np.asarray(x), y), want, rows)
    assert all(jax.tree.leaves(same))
    # Partition.client_graphs is the same split
    part = Partition(np.where((a >= 0) & (a < 50), a, 0), 50, "test", 0)
    for k, sub in enumerate(part.client_graphs(g)):
        np.testing.assert_array_equal(sub.senders, g.subgraph(part.client_nodes[k]).senders)
    with pytest.raises(GraphError, match=r"assignment has shape \(5,\)"):
        g.subgraphs(a[:5], 50)
