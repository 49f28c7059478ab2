"""Graph-level clients: each client's graphs packed jraph-style into a fixed number of padded
mini-batches, so the client axis stays a leading array axis (host side, once).

A mini-batch has budgets of N nodes, E edges and G graph slots. Its real graphs sit in slots
0..g-1 with their nodes and edges at the front; every padding node belongs to the last slot (a
padding graph, as `jraph.pad_with_graphs`), every padding edge joins the last padding node to
itself, and the masks (node_mask, edge_mask, graph_mask) make them inert: they never reach a real
graph's readout, loss or metric, so padding never changes a graph's output (tests/test_graph_batch.py).

    batch = pack_clients(gs, groups, split, batch_size=32)   # GraphBatch [C, M, ...]
    batch.minibatch(i)                                       # one client's mini-batch i (no M axis)

Two ways to cut a client's graphs (`client_runs`), both consecutive runs in the order given
(the mini-batches are cut once and local training walks them in order every epoch, as OpenFGL's
graph_fl loaders with shuffle=False), so the composition is a function of the data and the seed
that ordered the groups:

- count (default, OpenFGL's): runs of batch_size graphs; G = batch_size + 1 slots.
- budget: next-fit against a node and an edge budget of batch_size graphs of the set's mean size
  (`size_budget`, at least its largest graph) and at most 2 * batch_size graphs, so a step holds a
  varying number of graphs but about the same number of nodes; G = the fullest run + 1. The loss of
  a step stays the mean over that mini-batch's real training graphs.

Budgets are chosen from the data: N = the largest mini-batch's node count + 1 rounded up to a
multiple of 8, E = its edge count rounded up to a multiple of 8 (at least 8), M = the most
mini-batches any client needs; any of them may be given (larger) to pack the same graphs
differently. Under vmap every client pays for M x N slots, so with unequal clients most padding is
the small clients' empty mini-batches (benchmarks/peers/openfgl/graph_fl_padding.py measures it).
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

    Packed client execution (`with_size_classes`; None otherwise): classes, a tuple of K GraphBatch
    [C, S_k, N_k, ...]: the same mini-batches re-padded to K smaller budgets (class k holds the
    mini-batches of at most N_k - 1 nodes and E_k edges); step_class: int32 [C, M] the class of
    mini-batch j of client c (-1: it holds no training graph, the step is skipped); step_slot: int32
    [C, M] its row in that class. Local training then runs the clients one after another, each step
    in its own class's shape (`fgl_jax.federated.client.local_train`), so a round computes about the
    real graphs instead of C x M x N slots.
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
    classes: Optional[tuple] = None
    step_class: Optional[Array] = None
    step_slot: Optional[Array] = None

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
        fields = {f: take(getattr(self, f)) for f in self.__dataclass_fields__ if f not in PACKED_FIELDS}
        return GraphBatch(**fields, client_mask=self.client_mask)

    @property
    def packed(self) -> bool:
        """Whether the batch carries the size-class view of packed client execution."""
        return self.classes is not None


PACKED_FIELDS = ("client_mask", "classes", "step_class", "step_slot")


BATCHINGS = ("count", "budget")


def _round_up(n: int, multiple: int) -> int:
    return max(multiple, -(-int(n) // multiple) * multiple)


def cut_minibatches(index: np.ndarray, batch_size: int) -> list[np.ndarray]:
    """`index` cut into consecutive runs of at most batch_size graphs."""
    return [index[i:i + batch_size] for i in range(0, len(index), batch_size)]


def size_budget(gs: GraphSet, batch_size: int) -> tuple[int, int]:
    """(real nodes, real edges) a `budget` mini-batch may hold: batch_size graphs of the set's mean
    size, and never less than its largest graph (so every graph fits alone).

    Args:
        gs: the GraphSet (its nodes_per_graph, edges_per_graph).
        batch_size: the nominal graphs per mini-batch.

    Returns:
        (node budget, edge budget) of real entries (padding slots come on top: see `budgets`).
    """
    npg, epg = gs.nodes_per_graph, gs.edges_per_graph
    n = max(int(npg.max(initial=1)), int(np.ceil(batch_size * npg.mean()))) if npg.size else 1
    e = max(int(epg.max(initial=0)), int(np.ceil(batch_size * epg.mean()))) if epg.size else 0
    return n, e


def cut_by_budget(index: np.ndarray, nodes: np.ndarray, edges: np.ndarray, max_graphs: int, max_nodes: int,
                  max_edges: int) -> list[np.ndarray]:
    """`index` cut into consecutive runs (next-fit, in the given order): a run closes when the next
    graph would take it past max_graphs graphs, max_nodes nodes or max_edges edges.

    Args:
        index: int [K] GraphSet rows, in training order.
        nodes, edges: int [num_graphs of the set] nodes and edges of every graph.
        max_graphs, max_nodes, max_edges: the run's caps (a graph above a cap gets a run of its own).

    Returns:
        The runs, a list of int arrays that concatenate to `index`.
    """
    runs, start, n, e = [], 0, 0, 0
    for i, g in enumerate(index):
        ng, eg = int(nodes[g]), int(edges[g])
        if i > start and (i - start >= max_graphs or n + ng > max_nodes or e + eg > max_edges):
            runs.append(index[start:i])
            start, n, e = i, 0, 0
        n, e = n + ng, e + eg
    if len(index) > start:
        runs.append(index[start:])
    return runs


def client_runs(gs: GraphSet, groups: Sequence[np.ndarray], batch_size: int,
                batching: str = "count") -> list[list[np.ndarray]]:
    """Every client's mini-batches (GraphSet rows of each), cut in the order of `groups[c]`.

    Args:
        gs: the GraphSet.
        groups: per client, int [K_c] GraphSet rows in training order.
        batch_size: count: graphs per mini-batch; budget: the nominal size that sets `size_budget`.
        batching: count (runs of batch_size graphs: every step sees batch_size graphs but the last)
            or budget (next-fit against `size_budget`'s node and edge budgets and at most
            2 * batch_size graphs: each step sees a similar number of nodes, so fewer padding slots).

    Returns:
        runs[c][j]: int array of the graphs of client c's mini-batch j.
    """
    if batching not in BATCHINGS:
        raise ValueError(f"graph batching must be one of {BATCHINGS}, got {batching!r}")
    if batching == "count":
        return [cut_minibatches(np.asarray(idx, np.int64), batch_size) for idx in groups]
    n, e = size_budget(gs, batch_size)
    return [cut_by_budget(np.asarray(idx, np.int64), gs.nodes_per_graph, gs.edges_per_graph, 2 * batch_size, n, e)
            for idx in groups]


def _needs(gs: GraphSet, runs: list[list[np.ndarray]]) -> tuple[int, int, int, int]:
    """(mini-batches, nodes, edges, graphs) of the largest client and mini-batch of `runs`."""
    m, n, e, k = 1, 0, 0, 1
    npg, epg = gs.nodes_per_graph, gs.edges_per_graph
    for client in runs:
        m = max(m, len(client))
        for run in client:
            n, e, k = max(n, int(npg[run].sum())), max(e, int(epg[run].sum())), max(k, len(run))
    return m, n, e, k


def needs(gs: GraphSet, groups: Sequence[np.ndarray], batch_size: int, batching: str = "count") -> tuple[int, int, int]:
    """(mini-batches, nodes, edges) of the largest client and mini-batch when every client's
    `groups[c]` (GraphSet rows) is cut by `client_runs`."""
    return _needs(gs, client_runs(gs, groups, batch_size, batching))[:3]


def budgets(gs: GraphSet, groups: Sequence[np.ndarray], batch_size: int, batching: str = "count") -> tuple[int, int, int]:
    """The default (M, N, E): `needs`, with one padding node and N, E rounded up to multiples of 8."""
    m, n, e = needs(gs, groups, batch_size, batching)
    return m, _round_up(n + 1, 8), _round_up(e, 8)


def pack_clients(gs: GraphSet, groups: Sequence[np.ndarray], masks: Optional[dict] = None, *,
                 batch_size: int = 32, num_minibatches: Optional[int] = None, num_nodes: Optional[int] = None,
                 num_edges: Optional[int] = None, num_graph_slots: Optional[int] = None,
                 batching: str = "count") -> GraphBatch:
    """Pack client c's graphs `groups[c]` (GraphSet rows, in order) into M mini-batches each.

    masks: {"train"|"val"|"test": bool [num_graphs of gs]} the split (default: every graph is a
    training graph). batching: count (runs of batch_size graphs) or budget (runs filled up to a
    node / edge budget: `client_runs`). Budgets default to `budgets` (module docstring); larger
    ones pack the same graphs with more padding. Returns a GraphBatch [C, M, ...] of device arrays.
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    groups = [np.asarray(g, np.int64) for g in groups]
    runs = client_runs(gs, groups, batch_size, batching)
    m1, n1, e1, k1 = _needs(gs, runs)
    M = m1 if num_minibatches is None else int(num_minibatches)
    N = _round_up(n1 + 1, 8) if num_nodes is None else int(num_nodes)
    E = _round_up(e1, 8) if num_edges is None else int(num_edges)
    g0 = batch_size + 1 if batching == "count" else k1 + 1
    G = g0 if num_graph_slots is None else int(num_graph_slots)
    if M < m1 or N < n1 + 1 or E < max(e1, 1) or G < k1 + 1:
        raise ValueError(f"pack_clients: budgets M={M}, N={N}, E={E}, G={G} are below what the graphs need "
                         f"(M>={m1}, N>={n1 + 1} with one padding node, E>={max(e1, 1)}, G>={k1 + 1} "
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
        for j, run in enumerate(runs[c]):
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


def size_class_budgets(nodes: Sequence[int], num_classes: int) -> list[int]:
    """Node budgets of at most `num_classes` size classes that cover mini-batches of `nodes` node
    slots each (real nodes + the padding node) with the fewest padded slots in total.

    The mini-batches sorted by size are cut into consecutive runs (an exact dynamic programme over
    the cut points); a run's budget is its largest member rounded up to a multiple of 8, and it
    costs (members x budget) slots.

    Args:
        nodes: the node slots each mini-batch needs (int, >= 1).
        num_classes: the most classes (>= 1); fewer when there are fewer distinct budgets.

    Returns:
        The budgets, ascending (distinct multiples of 8); every entry of `nodes` fits the last.
    """
    if num_classes < 1:
        raise ValueError(f"num_classes must be >= 1, got {num_classes}")
    need = sorted({_round_up(n, 8) for n in nodes}) if len(nodes) else [8]
    count = np.array([sum(1 for n in nodes if _round_up(n, 8) == b) for b in need], np.int64)
    s, k = len(need), min(num_classes, len(need))
    before = np.concatenate([[0], np.cumsum(count)])          # mini-batches in need[:i]
    inf = np.iinfo(np.int64).max // 4
    best = np.full((k + 1, s + 1), inf, np.int64)              # best[j][i]: need[:i] in j classes
    cut = np.zeros((k + 1, s + 1), np.int64)
    best[0][0] = 0
    for j in range(1, k + 1):
        for i in range(1, s + 1):
            for h in range(j - 1, i):                          # the last class is need[h:i], budget need[i-1]
                if best[j - 1][h] < inf:
                    c = best[j - 1][h] + (before[i] - before[h]) * need[i - 1]
                    if c < best[j][i]:
                        best[j][i], cut[j][i] = c, h
    j = int(np.argmin(best[1:, s])) + 1
    out, i = [], s
    while j > 0:
        out.append(need[i - 1])
        i, j = int(cut[j][i]), j - 1
    return sorted(out)


def with_size_classes(batch: GraphBatch, num_classes: int = 4, steps: str = "train") -> GraphBatch:
    """`batch` [C, M, ...] with the size-class view of packed client execution (`GraphBatch` fields
    classes, step_class, step_slot): every mini-batch holding a training graph re-padded to the
    smallest of `size_class_budgets` node budgets that holds it, with its class's edge budget (the
    class's largest edge count, rounded up to a multiple of 8). Real nodes, edges and graph slots
    keep their rows, so a mini-batch's output equals the original's (padding is inert) and dropout
    masks, drawn per row, are the same on its real rows. Host side, once.

    Args:
        batch: a packed `GraphBatch` [C, M, ...] (`pack_clients`).
        num_classes: the most size classes (each is one compiled shape of the local step).
        steps: which mini-batches get a class: "train" (those holding a training graph: local
            training's steps) or "graphs" (those holding any graph: evaluation's).

    Returns:
        The same batch with classes, step_class and step_slot set.
    """
    a = jax.tree.map(np.asarray, batch.replace(classes=None, step_class=None, step_slot=None))
    C, M, N = a.node_mask.shape
    nodes = a.node_mask.sum(-1) + 1                              # [C, M] with the padding node
    edges = a.edge_mask.sum(-1)
    if steps not in ("train", "graphs"):
        raise ValueError(f"steps must be 'train' or 'graphs', got {steps!r}")
    real = (a.train_mask if steps == "train" else a.graph_mask).any(-1)   # [C, M] steps that run
    budgets_n = size_class_budgets(nodes[real].tolist(), num_classes) if real.any() else [8]
    step_class = np.full((C, M), -1, np.int32)
    step_slot = np.zeros((C, M), np.int32)
    step_class[real] = np.searchsorted(budgets_n, nodes[real])
    classes = []
    for k, nk in enumerate(budgets_n):
        mine = step_class == k
        ek = _round_up(int(edges[mine].max(initial=0)), 8)
        s = max(1, int(mine.sum(1).max()))
        view = {f: np.zeros((C, s) + getattr(a, f).shape[2:], getattr(a, f).dtype)
                for f in ("y", "graph_mask", "train_mask", "val_mask", "test_mask")}
        view["graph_ids"] = np.full((C, s) + a.graph_ids.shape[2:], -1, np.int32)
        view["x"] = np.zeros((C, s, nk) + a.x.shape[3:], a.x.dtype)
        view["node_graph"] = np.full((C, s, nk), a.y.shape[-1] - 1, np.int32)
        view["node_mask"] = np.zeros((C, s, nk), bool)
        view["senders"] = np.full((C, s, ek), nk - 1, np.int32)
        view["receivers"] = np.full((C, s, ek), nk - 1, np.int32)
        view["edge_mask"] = np.zeros((C, s, ek), bool)
        for c in range(C):
            for slot, j in enumerate(np.flatnonzero(mine[c])):
                step_slot[c, j] = slot
                for f in ("y", "graph_mask", "train_mask", "val_mask", "test_mask", "graph_ids"):
                    view[f][c, slot] = getattr(a, f)[c, j]
                for f in ("x", "node_graph", "node_mask"):
                    view[f][c, slot] = getattr(a, f)[c, j, :nk]
                e = int(edges[c, j])                             # real edges sit at the front
                view["senders"][c, slot, :e] = a.senders[c, j, :e]
                view["receivers"][c, slot, :e] = a.receivers[c, j, :e]
                view["edge_mask"][c, slot, :e] = True
        classes.append(GraphBatch(**{f: jax.device_put(v) for f, v in view.items()}, client_mask=batch.client_mask))
    return batch.replace(classes=tuple(classes), step_class=jax.device_put(step_class),
                         step_slot=jax.device_put(step_slot))
