"""Graph-level clients: each client's graphs packed jraph-style into a fixed number of padded
mini-batches, so the client axis stays a leading array axis (host side, once).

A mini-batch has budgets of N nodes, E edges and G graph slots. Its real graphs sit in slots
0..g-1 with their nodes and edges at the front; every padding node belongs to the last slot (a
padding graph, as `jraph.pad_with_graphs`), every padding edge joins the last padding node to
itself, and the masks (node_mask, edge_mask, graph_mask) make them inert: they never reach a real
graph's readout, loss or metric, so padding never changes a graph's output (tests/test_graph_batch.py).

    batch = pack_clients(gs, groups, split, batch_size=32)   # GraphBatch [C, M, ...]
    batch.minibatch(i)                                       # one client's mini-batch i (no M axis)

Budgets are chosen from the data: G = batch_size + 1 (one slot is always padding), N = the largest
mini-batch's node count + 1 rounded up to a multiple of 8, E = its edge count rounded up to a
multiple of 8 (at least 8), M = the most mini-batches any client needs; any of them may be given
(larger) to pack the same graphs differently. A client's graphs keep the order they are given in
(the mini-batches are cut once, in that order, and local training walks them in order every epoch,
as OpenFGL's graph_fl loaders with shuffle=False).
"""
from __future__ import annotations

from typing import Optional, Sequence

import flax
import jax
import numpy as np

from fgl_jax.data.tu import GraphSet

Array = jax.Array


@flax.struct.dataclass
class GraphBatch:
    """Packed graphs. Leading axes [C, M] (clients, mini-batches), [M] for one client, none for one
    mini-batch; trailing shapes below.

    x: float32 [..., N, F] node features; senders, receivers: int32 [..., E] node rows of the
    mini-batch; edge_mask: bool [..., E]; node_graph: int32 [..., N] graph slot of each node (padding
    nodes: G-1); node_mask: bool [..., N]. y: int32 [..., G] classes (graph_cls) or float32 [..., G]
    targets (graph_reg), 0 in padding slots; graph_mask: bool [..., G] real graphs; train_mask,
    val_mask, test_mask: bool [..., G] the split (False in padding); graph_ids: int32 [..., G] row of
    the graph in the GraphSet, -1 for padding. client_mask: bool [C] (no M axis): False for a dummy client.
    """

    x: Array
    senders: Array
    receivers: Array
    edge_mask: Array
    node_graph: Array
    node_mask: Array
    y: Array
    graph_mask: Array
    train_mask: Array
    val_mask: Array
    test_mask: Array
    graph_ids: Array
    client_mask: Array

    @property
    def num_clients(self) -> int:
        return int(self.client_mask.shape[0])

    @property
    def num_minibatches(self) -> int:
        """M of a client's stack [M, ...] (static)."""
        return int(self.y.shape[-2])

    @property
    def num_graph_slots(self) -> int:
        return int(self.y.shape[-1])

    def minibatch(self, i) -> "GraphBatch":
        """Mini-batch i (an int or a traced index) of one client's stack [M, ...]; client_mask is kept."""
        take = lambda a: jax.lax.dynamic_index_in_dim(a, i, axis=0, keepdims=False)
        fields = {f: take(getattr(self, f)) for f in self.__dataclass_fields__ if f != "client_mask"}
        return GraphBatch(**fields, client_mask=self.client_mask)


def _round_up(n: int, multiple: int) -> int:
    return max(multiple, -(-int(n) // multiple) * multiple)


def cut_minibatches(index: np.ndarray, batch_size: int) -> list[np.ndarray]:
    """`index` cut into consecutive runs of at most batch_size graphs."""
    return [index[i:i + batch_size] for i in range(0, len(index), batch_size)]


def needs(gs: GraphSet, groups: Sequence[np.ndarray], batch_size: int) -> tuple[int, int, int]:
    """(mini-batches, nodes, edges) of the largest client and mini-batch when every client's
    `groups[c]` (GraphSet rows) is cut into runs of batch_size."""
    m, n, e = 1, 0, 0
    npg, epg = gs.nodes_per_graph, gs.edges_per_graph
    for idx in groups:
        runs = cut_minibatches(np.asarray(idx, np.int64), batch_size)
        m = max(m, len(runs))
        for run in runs:
            n, e = max(n, int(npg[run].sum())), max(e, int(epg[run].sum()))
    return m, n, e


def budgets(gs: GraphSet, groups: Sequence[np.ndarray], batch_size: int) -> tuple[int, int, int]:
    """The default (M, N, E): `needs`, with one padding node and N, E rounded up to multiples of 8."""
    m, n, e = needs(gs, groups, batch_size)
    return m, _round_up(n + 1, 8), _round_up(e, 8)


def pack_clients(gs: GraphSet, groups: Sequence[np.ndarray], masks: Optional[dict] = None, *,
                 batch_size: int = 32, num_minibatches: Optional[int] = None, num_nodes: Optional[int] = None,
                 num_edges: Optional[int] = None, num_graph_slots: Optional[int] = None) -> GraphBatch:
    """Pack client c's graphs `groups[c]` (GraphSet rows, in order) into M mini-batches each.

    masks: {"train"|"val"|"test": bool [num_graphs of gs]} the split (default: every graph is a
    training graph). Budgets default to `budgets` (module docstring); larger ones pack the same
    graphs with more padding. Returns a GraphBatch [C, M, ...] of device arrays.
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    groups = [np.asarray(g, np.int64) for g in groups]
    m0, n0, e0 = budgets(gs, groups, batch_size)
    M = m0 if num_minibatches is None else int(num_minibatches)
    N = n0 if num_nodes is None else int(num_nodes)
    E = e0 if num_edges is None else int(num_edges)
    G = batch_size + 1 if num_graph_slots is None else int(num_graph_slots)
    m1, n1, e1 = needs(gs, groups, batch_size)
    if M < m1 or N < n1 + 1 or E < max(e1, 1) or G < batch_size + 1:
        raise ValueError(f"pack_clients: budgets M={M}, N={N}, E={E}, G={G} are below what the graphs need "
                         f"(M>={m1}, N>={n1 + 1} with one padding node, E>={max(e1, 1)}, G>={batch_size + 1} "
                         "with one padding graph)")
    C, F = len(groups), gs.num_features
    split = {"train": np.ones(gs.num_graphs, bool)} if masks is None else masks
    x = np.zeros((C, M, N, F), np.float32)
    snd = np.full((C, M, E), N - 1, np.int32)
    rcv = np.full((C, M, E), N - 1, np.int32)
    emask = np.zeros((C, M, E), bool)
    node_graph = np.full((C, M, N), G - 1, np.int32)
    nmask = np.zeros((C, M, N), bool)
    y = np.zeros((C, M, G), gs.y.dtype)
    gmask = np.zeros((C, M, G), bool)
    smasks = {s: np.zeros((C, M, G), bool) for s in ("train", "val", "test")}
    gids = np.full((C, M, G), -1, np.int32)
    npg, epg = gs.nodes_per_graph, gs.edges_per_graph
    for c, idx in enumerate(groups):
        for j, run in enumerate(cut_minibatches(idx, batch_size)):
            k = len(run)
            n, e = int(npg[run].sum()), int(epg[run].sum())
            if n > N - 1 or e > E:
                raise ValueError(f"pack_clients: client {c} mini-batch {j} needs {n + 1} nodes and {e} edges, "
                                 f"budgets are N={N}, E={E}")
            node_rows = np.concatenate([np.arange(gs.node_offsets[g], gs.node_offsets[g + 1]) for g in run])
            edge_rows = np.concatenate([np.arange(gs.edge_offsets[g], gs.edge_offsets[g + 1]) for g in run])
            new_start = np.concatenate([[0], np.cumsum(npg[run])[:-1]])
            shift = np.repeat(new_start - gs.node_offsets[run], epg[run])
            x[c, j, :n] = gs.x[node_rows]
            snd[c, j, :e] = gs.senders[edge_rows] + shift
            rcv[c, j, :e] = gs.receivers[edge_rows] + shift
            emask[c, j, :e] = True
            node_graph[c, j, :n] = np.repeat(np.arange(k), npg[run])
            nmask[c, j, :n] = True
            y[c, j, :k] = gs.y[run]
            gmask[c, j, :k] = True
            gids[c, j, :k] = run
            for s, mask in split.items():
                smasks[s][c, j, :k] = mask[run]
    dev = jax.device_put
    return GraphBatch(x=dev(x), senders=dev(snd), receivers=dev(rcv), edge_mask=dev(emask), node_graph=dev(node_graph),
                      node_mask=dev(nmask), y=dev(y), graph_mask=dev(gmask), train_mask=dev(smasks["train"]),
                      val_mask=dev(smasks["val"]), test_mask=dev(smasks["test"]), graph_ids=dev(gids),
                      client_mask=dev(np.ones(C, bool)))


def select_graph_clients(batch: GraphBatch, index: np.ndarray) -> GraphBatch:
    """The clients `index` of a GraphBatch (host-side gather, once)."""
    index = np.asarray(index)
    return jax.tree.map(lambda a: jax.device_put(np.asarray(a)[index]), batch)
