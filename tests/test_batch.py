"""Padding is inert: a padded client gives the outputs and gradients of the unpadded one."""
import jax
import numpy as np
import pytest

from fgl_jax.batch import build_client_batch, stack_graphs, unstack, padding_ratio
from fgl_jax.federated.metrics import masked_cross_entropy
from fgl_jax.graph import GraphError
from fgl_jax.nn import make_model
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
