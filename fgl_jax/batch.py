"""Client views padded to a common size and stacked on a leading client axis.

Irregular per-client subgraphs are turned, once on the host, into dense arrays of shape
[C, N_pad] / [C, E_pad] with masks, so one jitted program serves every client via vmap.
Padding is inert: padded edges have edge_mask 0, padded nodes node_mask 0 and no label
mask, padded feature entries value 0 (tests/test_batch.py proves a padded client gives the
same outputs and gradients as the unpadded one).
"""
from __future__ import annotations

from typing import Optional, Sequence

import flax
import jax
import jax.numpy as jnp
import jraph
import numpy as np
import scipy.sparse as sp

from fgl_jax.graph import Graph, GraphError
from fgl_jax.ops import SparseFeatures

Array = jax.Array


@flax.struct.dataclass
class ClientBatch:
    """Stacked client graphs. With a leading client axis C (or none, for one client's slice).

    graph: jraph.GraphsTuple, senders/receivers [C, E], n_node/n_edge [C, 1] (true counts).
    features: dense [C, N, F] float32, or SparseFeatures with row/col/val [C, nnz].
    y: int32 [C, N] (0 where unlabelled or padded; masks say what counts).
    node_mask, train_mask, val_mask, test_mask: bool [C, N]; edge_mask: bool [C, E].
    node_ids: int32 [C, N] id of each row in the source graph, -1 for padding.
    client_mask: bool [C]: False for padded (dummy) clients.
    """

    graph: jraph.GraphsTuple
    features: object
    y: Array
    node_mask: Array
    edge_mask: Array
    train_mask: Array
    val_mask: Array
    test_mask: Array
    node_ids: Array
    client_mask: Array

    @property
    def num_clients(self) -> int:
        return int(self.y.shape[0])

    @property
    def num_nodes(self) -> int:
        """Padded node count per client (static)."""
        return int(self.y.shape[-1])

    @property
    def senders(self) -> Array:
        return self.graph.senders

    @property
    def receivers(self) -> Array:
        return self.graph.receivers


def _round_up(n: int, multiple: int) -> int:
    return max(multiple, -(-int(n) // multiple) * multiple)


def stack_graphs(graphs: Sequence[Graph], node_ids: Optional[Sequence[np.ndarray]] = None,
                 node_multiple: int = 8, edge_multiple: int = 64, sparse: Optional[bool] = None,
                 num_nodes: Optional[int] = None, num_edges: Optional[int] = None,
                 num_nnz: Optional[int] = None) -> ClientBatch:
    """Pad each graph to a common node/edge/nnz count and stack them on a client axis.

    sparse: keep features as SparseFeatures (default: whenever the input features are CSR).
    num_nodes/num_edges/num_nnz: force a padded size (e.g. to share shapes between batches).
    """
    if len(graphs) == 0:
        raise GraphError("stack_graphs: no client graphs given")
    empty = [i for i, g in enumerate(graphs) if g.num_nodes == 0]
    if empty:
        raise GraphError(f"stack_graphs: client(s) {empty} have no nodes; re-partition with fewer clients")
    widths = {g.num_features for g in graphs}
    if len(widths) != 1:
        raise GraphError(f"stack_graphs: clients disagree on feature width: {sorted(widths)}")
    if sparse is None:
        sparse = sp.issparse(graphs[0].x)
    n_pad = num_nodes or _round_up(max(g.num_nodes for g in graphs), node_multiple)
    e_pad = num_edges or _round_up(max(g.num_edges for g in graphs), edge_multiple)
    if n_pad < max(g.num_nodes for g in graphs) or e_pad < max(g.num_edges for g in graphs):
        raise GraphError("stack_graphs: forced padded size is smaller than a client graph")
    c = len(graphs)
    f = graphs[0].num_features
    senders = np.zeros((c, e_pad), np.int32)
    receivers = np.zeros((c, e_pad), np.int32)
    edge_mask = np.zeros((c, e_pad), bool)
    y = np.zeros((c, n_pad), np.int32)
    masks = {k: np.zeros((c, n_pad), bool) for k in ("node", "train", "val", "test")}
    ids = -np.ones((c, n_pad), np.int32)
    if sparse:
        coos = [sp.coo_matrix(g.x) for g in graphs]
        nnz_pad = num_nnz or _round_up(max(m.nnz for m in coos), edge_multiple)
        frow = np.zeros((c, nnz_pad), np.int32)
        fcol = np.zeros((c, nnz_pad), np.int32)
        fval = np.zeros((c, nnz_pad), np.float32)
    else:
        xd = np.zeros((c, n_pad, f), np.float32)
    for i, g in enumerate(graphs):
        n, e = g.num_nodes, g.num_edges
        senders[i, :e], receivers[i, :e], edge_mask[i, :e] = g.senders, g.receivers, True
        labelled = g.y >= 0
        y[i, :n] = np.where(labelled, g.y, 0)
        masks["node"][i, :n] = True
        masks["train"][i, :n] = g.train_mask & labelled
        masks["val"][i, :n] = g.val_mask & labelled
        masks["test"][i, :n] = g.test_mask & labelled
        ids[i, :n] = node_ids[i] if node_ids is not None else np.arange(n)
        if sparse:
            m = coos[i]
            frow[i, :m.nnz], fcol[i, :m.nnz], fval[i, :m.nnz] = m.row, m.col, m.data
        else:
            xd[i, :n] = g.dense_x()
    features = SparseFeatures(jnp.asarray(frow), jnp.asarray(fcol), jnp.asarray(fval)) if sparse \
        else jnp.asarray(xd)
    gt = jraph.GraphsTuple(
        nodes=None, edges=None, globals=None,
        senders=jnp.asarray(senders), receivers=jnp.asarray(receivers),
        n_node=jnp.asarray([[g.num_nodes] for g in graphs], jnp.int32),
        n_edge=jnp.asarray([[g.num_edges] for g in graphs], jnp.int32))
    return ClientBatch(
        graph=gt, features=features, y=jnp.asarray(y), node_mask=jnp.asarray(masks["node"]),
        edge_mask=jnp.asarray(edge_mask), train_mask=jnp.asarray(masks["train"]),
        val_mask=jnp.asarray(masks["val"]), test_mask=jnp.asarray(masks["test"]),
        node_ids=jnp.asarray(ids), client_mask=jnp.ones((c,), bool))


def client_graphs(graph: Graph, assignment: np.ndarray, num_clients: int) -> tuple[list[Graph], list[np.ndarray]]:
    """Induced subgraph per client (cross-client edges dropped) and each client's global node ids."""
    assignment = np.asarray(assignment)
    if assignment.shape != (graph.num_nodes,):
        raise GraphError(f"assignment has shape {assignment.shape}, expected ({graph.num_nodes},)")
    nodes = [np.flatnonzero(assignment == k) for k in range(num_clients)]
    return [graph.subgraph(nd, name=f"{graph.name}[client {k}]") for k, nd in enumerate(nodes)], nodes


def build_client_batch(graph: Graph, assignment: np.ndarray, num_clients: int, **kwargs) -> ClientBatch:
    """Partitioned graph -> padded ClientBatch (cross-client edges dropped, as in FedAvg-style FGL)."""
    subs, nodes = client_graphs(graph, assignment, num_clients)
    return stack_graphs(subs, nodes, **kwargs)


def full_graph_batch(graph: Graph, **kwargs) -> ClientBatch:
    """The whole graph as a batch of one client (centralised / Global training)."""
    return stack_graphs([graph], [np.arange(graph.num_nodes)], **kwargs)


def select_clients(batch: ClientBatch, index: np.ndarray) -> ClientBatch:
    """Sub-batch of the given clients (host-side gather, done once)."""
    index = np.asarray(index)
    return jax.tree.map(lambda a: a[index], batch)


def unstack(batch: ClientBatch, i: int) -> ClientBatch:
    """Client i's slice (no client axis)."""
    return jax.tree.map(lambda a: a[i], batch)


def padding_ratio(batch: ClientBatch) -> float:
    """Padded node slots / real node slots (1.0 = no waste)."""
    real = float(np.asarray(batch.node_mask).sum())
    return float(batch.node_mask.size) / max(real, 1.0)
