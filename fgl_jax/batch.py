"""Client views padded to a common size and stacked on a leading client axis.

Irregular per-client subgraphs are turned, once on the host, into dense arrays of shape
[C, N_pad] / [C, E_pad] with masks, so one jitted program serves every client via vmap.
Padding is inert: padded edges have edge_mask 0, padded nodes node_mask 0 and no label
mask, padded feature entries value 0 (tests/test_batch.py proves a padded client gives the
same outputs and gradients as the unpadded one).

Shapes: C clients, N padded nodes and E padded edges per client, F features, nnz padded non-zero feature
entries, P padded node pairs (link prediction).
"""
from __future__ import annotations

import dataclasses
import math
from typing import Optional, Sequence

import flax
import jax
import jax.numpy as jnp
import jraph
import numpy as np
import scipy.sparse as sp

from fgl_jax.graph import Graph, GraphError
from fgl_jax.ops import SparseFeatures, column_order, ell_features

Array = jax.Array


def _dev(x, dtype=None) -> Array:
    """A host array on the default device: `jax.device_put` is a copy, whereas jnp.asarray compiles
    a small XLA program per shape and dtype (start-up time; see fgl_jax.cache)."""
    return jax.device_put(np.asarray(x, dtype))


_put = _dev  # stack_partition's default placement (its `on_device=False` keeps NumPy arrays)


@flax.struct.dataclass
class LinkPairs:
    """The node pairs a link-prediction model scores, per client (`link_client_batch`).

    src, dst: int32 [C, P] node rows of the client's graph; label: bool [C, P] (True: an edge,
    False: a sampled non-edge); train_mask, val_mask, test_mask: bool [C, P] (padded pairs: all
    False, so they count nowhere). Val/test positives are absent from the client's message-passing
    edges (`ClientBatch.graph`).

    Attributes:
        src: int32 `[C, P]`, the first node's row in the client's graph (P pairs, padded).
        dst: int32 `[C, P]`, the second node's row.
        label: bool `[C, P]`, True for an edge, False for a sampled non-edge.
        train_mask: bool `[C, P]`, the training pairs.
        val_mask: bool `[C, P]`, the validation pairs.
        test_mask: bool `[C, P]`, the test pairs.
    """

    src: Array
    dst: Array
    label: Array
    train_mask: Array
    val_mask: Array
    test_mask: Array


@flax.struct.dataclass
class ClientBatch:
    """Stacked client graphs, padded to common sizes, on a leading client axis.

    The client axis C is absent in one client's slice (shapes: the module docstring).

    Attributes:
        graph: jraph.GraphsTuple: senders/receivers int32 `[C, E]`, n_node/n_edge int32 `[C, 1]` (the true
            counts); nodes, edges and globals None.
        features: dense float32 `[C, N, F]`, SparseFeatures with row/col/val `[C, nnz]`, or EllFeatures
            (`with_ell_features`; only `ops.feature_matmul` reads it).
        y: int32 `[C, N]`, the labels (0 where unlabelled or padded; the masks say what counts).
        node_mask: bool `[C, N]`, the real (not padded) nodes.
        edge_mask: bool `[C, E]`, the real edges.
        train_mask: bool `[C, N]`, labelled training nodes (likewise val_mask, test_mask).
        val_mask: bool `[C, N]`.
        test_mask: bool `[C, N]`.
        node_ids: int32 `[C, N]`, each row's id in the source graph, -1 for padding.
        client_mask: bool `[C]`, False for padded (dummy) clients.
        pairs: `LinkPairs` with `[C, P]` arrays for link prediction (`link_client_batch`), else None.
        sampler: a `fgl_jax.federated.sampling.NeighbourSampler` (`[C, ...]` CSR and training nodes)
            when local training samples neighbour mini-batches (`with_sampler`), else None (full batch).
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
    pairs: Optional[LinkPairs] = None
    sampler: Optional[object] = None

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

    Args:
        graphs: the C client graphs; they must share the feature width F and each have a node.
        node_ids: per client, int `[n_c]` ids of its nodes in the source graph (default: 0..n_c-1).
        node_multiple: N is the largest node count rounded up to a multiple of this.
        edge_multiple: E (and nnz) is the largest edge (non-zero) count rounded up to a multiple of this.
        sparse: keep features as SparseFeatures (default None: whenever the input features are CSR).
        num_nodes: force N (e.g. to share shapes between batches); None: computed.
        num_edges: force E; None: computed.
        num_nnz: force nnz of sparse features; None: computed.

    Returns:
        A `ClientBatch` with `[C, N]` / `[C, E]` arrays on the default device.

    Raises:
        GraphError: no graphs, a graph without nodes, differing feature widths, or a forced size smaller
            than a client graph.
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
    features = SparseFeatures(_dev(frow), _dev(fcol), _dev(fval), _dev(column_order(fcol))) if sparse \
        else _dev(xd)
    gt = jraph.GraphsTuple(
        nodes=None, edges=None, globals=None,
        senders=_dev(senders), receivers=_dev(receivers),
        n_node=_dev([[g.num_nodes] for g in graphs], jnp.int32),
        n_edge=_dev([[g.num_edges] for g in graphs], jnp.int32))
    return ClientBatch(
        graph=gt, features=features, y=_dev(y), node_mask=_dev(masks["node"]),
        edge_mask=_dev(edge_mask), train_mask=_dev(masks["train"]),
        val_mask=_dev(masks["val"]), test_mask=_dev(masks["test"]),
        node_ids=_dev(ids), client_mask=_dev(np.ones((c,), bool)))


# The ELL layout trades a longer compile for a faster round (FedAvg-GCN on Cora, 10 Louvain clients:
# benchmarks/results/round_speed.json, sections fedavg and floor/fedavg, from
# benchmarks/bench_round_speed.py --only fedavg,floor_fedavg). Fewer groups compile faster for a
# slower round; more terms per iteration gave about the same round.
ELL_MAX_GROUPS = 4
ELL_UNROLL = 4


def with_ell_features(batch: ClientBatch, num_features: int, max_groups: int = ELL_MAX_GROUPS,
                      unroll: int = ELL_UNROLL) -> ClientBatch:
    """The batch with its SparseFeatures [C, nnz] replaced by EllFeatures (host side, once): the
    first layer's X W and X^T dZ become gathers and dense adds (`ops.ell_matmul`) instead of a
    gather-then-segment-sum. Same products up to float summation order. Dense features, or a
    batch already in EllFeatures, are returned unchanged. Code that reads `features.row/col/val`
    (feature masking, dense conversion) needs SparseFeatures: the algorithms that opt in are
    registered with `features="ell"` (fgl_jax.systems.baseline.prepare converts for them).

    Args:
        batch: a `ClientBatch` (its features SparseFeatures with `[C, nnz]` arrays, else unchanged).
        num_features: F, the feature width.
        max_groups: the most column groups the ELL layout uses.
        unroll: the loop unroll of the ELL product.

    Returns:
        The batch with EllFeatures, or `batch` itself when its features are not SparseFeatures.
    """
    f = batch.features
    if not isinstance(f, SparseFeatures):
        return batch
    ell = ell_features(np.asarray(f.row), np.asarray(f.col), np.asarray(f.val), batch.num_nodes, num_features,
                       max_groups=max_groups, unroll=unroll)
    return batch.replace(features=jax.tree.map(_dev, ell))


def client_graphs(graph: Graph, assignment: np.ndarray, num_clients: int) -> tuple[list[Graph], list[np.ndarray]]:
    """Induced subgraph per client (cross-client edges dropped) and each client's global node ids."""
    return graph.subgraphs(assignment, num_clients)


def build_client_batch(graph: Graph, assignment: np.ndarray, num_clients: int, **kwargs) -> ClientBatch:
    """Partitioned graph -> padded ClientBatch (cross-client edges dropped, as in FedAvg-style FGL).

    Args:
        graph: the whole graph.
        assignment: int `[num_nodes]`, each node's client in 0..num_clients-1.
        num_clients: C.
        **kwargs: `stack_graphs`'s padding options (node_multiple, edge_multiple, sparse, num_nodes,
            num_edges, num_nnz), which `stack_partition` takes too.

    Returns:
        A `ClientBatch` of C clients, each its induced subgraph: `stack_graphs(*client_graphs(...))`.

    Raises:
        GraphError: `assignment` is not of shape `[num_nodes]`, a client has no nodes, or `stack_graphs`
            refuses the sizes.
    """
    # the arrays of stack_graphs(*client_graphs(...)), built without a Graph per client (O(N + E) in all)
    return stack_partition(graph, assignment, num_clients, **kwargs)


def link_client_batch(graph: Graph, assignment: np.ndarray, num_clients: int, train: float = 0.8,
                      val: float = 0.1, test: float = 0.1, seed: int = 0, train_negatives: bool = False,
                      pair_multiple: int = 64, **kwargs) -> ClientBatch:
    """Partitioned graph -> padded ClientBatch for link prediction (host side, once).

    Each client's undirected edges (of its induced subgraph) are split into train/val/test by
    `fgl_jax.partition.edges.random_edge_split` with the seed (seed, client), with as many sampled
    non-edges as positives in val and test (and in train when `train_negatives`: OpenFGL's fixed
    training negatives). The client's message-passing graph keeps every edge except its val/test
    positives (both directions), so no evaluated edge is seen by the encoder. Pairs are padded to
    a common P (a multiple of `pair_multiple`). Client c of `num_clients` = 1 (all nodes) is the
    centralised split of the whole graph, pair for pair.

    Args:
        graph: the whole graph.
        assignment: int `[num_nodes]`, each node's client.
        num_clients: C.
        train: the fraction of each client's undirected edges used for training.
        val: the fraction for validation.
        test: the fraction for testing.
        seed: the split seed (client k uses (seed, k)).
        train_negatives: also sample fixed training non-edges (as many as training edges).
        pair_multiple: P is rounded up to a multiple of this.
        **kwargs: passed to `stack_graphs`.

    Returns:
        A `ClientBatch` whose `pairs` is a `LinkPairs` of `[C, P]` arrays.

    Raises:
        GraphError: a bad `assignment` shape or a client without nodes.
        ValueError: a fraction outside [0, 1], or fractions not summing to 1.
    """
    from fgl_jax.partition.edges import random_edge_split
    subs, nodes = client_graphs(graph, assignment, num_clients)
    parts, graphs = [], []
    for k, g in enumerate(subs):
        es = random_edge_split(g.senders, g.receivers, g.num_nodes, train, val, test, seed=(seed, k),
                               train_negatives=train_negatives)
        n = max(g.num_nodes, 1)
        held = np.concatenate([es.val_pos, es.test_pos]).astype(np.int64)
        held = np.sort(held[:, 0] * n + held[:, 1])
        s, r = g.senders.astype(np.int64), g.receivers.astype(np.int64)
        keep = ~np.isin(np.minimum(s, r) * n + np.maximum(s, r), held)
        graphs.append(dataclasses.replace(g, senders=g.senders[keep], receivers=g.receivers[keep]))
        empty = np.zeros((0, 2), np.int64)
        blocks = [(es.train, True, 0), (es.train_neg if es.train_neg is not None else empty, False, 0),
                  (es.val_pos, True, 1), (es.val_neg, False, 1), (es.test_pos, True, 2), (es.test_neg, False, 2)]
        parts.append([(np.asarray(b, np.int64).reshape(-1, 2), lab, split) for b, lab, split in blocks])
    batch = stack_graphs(graphs, nodes, **kwargs)
    c = len(parts)
    p_pad = _round_up(max(sum(len(b) for b, _, _ in blocks) for blocks in parts), pair_multiple)
    src, dst = np.zeros((c, p_pad), np.int32), np.zeros((c, p_pad), np.int32)
    label = np.zeros((c, p_pad), bool)
    masks = np.zeros((3, c, p_pad), bool)
    for k, blocks in enumerate(parts):
        at = 0
        for b, lab, split in blocks:
            src[k, at:at + len(b)], dst[k, at:at + len(b)] = b[:, 0], b[:, 1]
            label[k, at:at + len(b)] = lab
            masks[split, k, at:at + len(b)] = True
            at += len(b)
    pairs = LinkPairs(_dev(src), _dev(dst), _dev(label), _dev(masks[0]), _dev(masks[1]), _dev(masks[2]))
    return batch.replace(pairs=pairs)


def full_graph_batch(graph: Graph, **kwargs) -> ClientBatch:
    """The whole graph as a batch of one client (centralised / Global training).

    Args:
        graph: the graph.
        **kwargs: passed to `stack_graphs`.

    Returns:
        A `ClientBatch` with C = 1.
    """
    return stack_graphs([graph], [np.arange(graph.num_nodes)], **kwargs)


def select_clients(batch: ClientBatch, index: np.ndarray) -> ClientBatch:
    """Sub-batch of the given clients (host-side gather, done once)."""
    index = np.asarray(index)
    return jax.tree.map(lambda a: _dev(np.asarray(a)[index]), batch)


def unstack(batch: ClientBatch, i: int) -> ClientBatch:
    """Client i's slice (no client axis)."""
    return jax.tree.map(lambda a: a[i], batch)


def padding_ratio(batch: ClientBatch) -> float:
    """Padded node slots / real node slots (1.0 = no waste).

    Args:
        batch: a `ClientBatch`.

    Returns:
        `C * N / (real nodes)`, a float >= 1.
    """
    real = float(np.asarray(batch.node_mask).sum())
    return float(batch.node_mask.size) / max(real, 1.0)


# ---------------------------------------------------------------------------------------------
# Scaling helpers (issue 8): a vectorised partition -> batch builder, and size bucketing.

def stack_partition(graph: Graph, assignment: np.ndarray, num_clients: int,
                    clients: Optional[Sequence[int]] = None, node_multiple: int = 8, edge_multiple: int = 64,
                    num_nodes: Optional[int] = None, num_edges: Optional[int] = None,
                    num_nnz: Optional[int] = None, on_device: bool = True,
                    sparse: Optional[bool] = None) -> ClientBatch:
    """The padded client batch of a partition: the arrays `stack_graphs(*client_graphs(...))` gives,
    built in O(N + E + nnz) in total by a few sorts (no Graph per client).

    Stacking per-client induced subgraphs costs a Python object per client, and taking them one
    mask at a time was O(C (N + E)): with 1,000 clients of a 100k-node graph, minutes. `clients`
    selects (and orders) a subset of client ids (one size bucket); default all of 0..num_clients-1.
    `build_client_batch` is this with every client.

    Args:
        graph: the whole graph.
        assignment: int `[num_nodes]`, each node's client (nodes outside 0..num_clients-1 are dropped).
        num_clients: the number of client ids.
        clients: the client ids to stack, in this order (default None: all of them).
        node_multiple: N is rounded up to a multiple of this.
        edge_multiple: E (and nnz) is rounded up to a multiple of this.
        num_nodes: force N; None: computed.
        num_edges: force E; None: computed.
        num_nnz: force nnz; None: computed.
        on_device: put the arrays on the default device (False: keep NumPy arrays, for a caller
            that places rows itself, `fgl_jax.federated.local_data`, without a second copy).
        sparse: keep features as SparseFeatures (default None: whenever the graph's features are CSR),
            as `stack_graphs`.

    Returns:
        A `ClientBatch` with C = len(clients) clients.

    Raises:
        GraphError: a bad `assignment` shape, no clients selected, client ids out of range, a selected
            client without nodes, or a forced size too small.
    """
    _dev = _put if on_device else (lambda x, dtype=None: np.asarray(x, dtype))
    assignment = np.asarray(assignment)
    if assignment.shape != (graph.num_nodes,):
        raise GraphError(f"assignment has shape {assignment.shape}, expected ({graph.num_nodes},)")
    clients = np.arange(num_clients) if clients is None else np.asarray(clients, np.int64)
    if clients.size == 0:
        raise GraphError("stack_partition: no clients selected")
    if clients.min() < 0 or clients.max() >= num_clients:
        raise GraphError(f"stack_partition: client ids must be in [0, {num_clients}), got {clients.min()}..{clients.max()}")
    # slot[k] = row of client k in the batch, -1 if not selected
    slot = -np.ones(num_clients, np.int64)
    slot[clients] = np.arange(clients.size)
    a = assignment.astype(np.int64)
    node_slot = np.where((a >= 0) & (a < num_clients), slot[np.clip(a, 0, num_clients - 1)], -1)
    counts = np.bincount(a[(a >= 0) & (a < num_clients)], minlength=num_clients)[clients]
    if (counts == 0).any():
        raise GraphError(f"stack_partition: client(s) {clients[counts == 0][:10].tolist()} have no nodes; "
                         "re-partition with fewer clients")
    sel = np.flatnonzero(node_slot >= 0)                      # ascending global id, as client_graphs
    order = sel[np.argsort(node_slot[sel], kind="stable")]    # grouped by batch row
    row_of = node_slot[order]
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    local = -np.ones(graph.num_nodes, np.int64)
    local[order] = np.arange(order.size) - starts[row_of]
    s, r = graph.senders.astype(np.int64), graph.receivers.astype(np.int64)
    keep = (node_slot[s] >= 0) & (node_slot[s] == node_slot[r])
    e_idx = np.flatnonzero(keep)
    e_row = node_slot[s[e_idx]]
    e_order = e_idx[np.argsort(e_row, kind="stable")]        # original order inside each client
    e_row = node_slot[s[e_order]]
    e_counts = np.bincount(e_row, minlength=clients.size)
    e_pos = np.arange(e_order.size) - np.concatenate([[0], np.cumsum(e_counts)[:-1]])[e_row]
    c = clients.size
    n_pad = num_nodes or _round_up(counts.max(), node_multiple)
    e_pad = num_edges or _round_up(e_counts.max() if e_counts.size else 0, edge_multiple)
    if n_pad < counts.max() or e_pad < (e_counts.max() if e_counts.size else 0):
        raise GraphError("stack_partition: forced padded size is smaller than a client graph")
    n_pos = local[order]
    senders = np.zeros((c, e_pad), np.int32)
    receivers = np.zeros((c, e_pad), np.int32)
    edge_mask = np.zeros((c, e_pad), bool)
    senders[e_row, e_pos] = local[s[e_order]]
    receivers[e_row, e_pos] = local[r[e_order]]
    edge_mask[e_row, e_pos] = True
    labelled = graph.y[order] >= 0
    y = np.zeros((c, n_pad), np.int32)
    y[row_of, n_pos] = np.where(labelled, graph.y[order], 0)
    masks = {}
    for name, m in (("node", np.ones(order.size, bool)), ("train", graph.train_mask[order] & labelled),
                    ("val", graph.val_mask[order] & labelled), ("test", graph.test_mask[order] & labelled)):
        masks[name] = np.zeros((c, n_pad), bool)
        masks[name][row_of, n_pos] = m
    ids = -np.ones((c, n_pad), np.int32)
    ids[row_of, n_pos] = order
    if sp.issparse(graph.x) if sparse is None else sparse:
        coo = sp.coo_matrix(sp.csr_matrix(graph.x)[order])
        f_row = row_of[coo.row]
        f_counts = np.bincount(f_row, minlength=c)
        f_pos = np.arange(coo.nnz) - np.concatenate([[0], np.cumsum(f_counts)[:-1]])[f_row]
        nnz_pad = num_nnz or _round_up(f_counts.max(), edge_multiple)
        frow = np.zeros((c, nnz_pad), np.int32)
        fcol = np.zeros((c, nnz_pad), np.int32)
        fval = np.zeros((c, nnz_pad), np.float32)
        frow[f_row, f_pos], fcol[f_row, f_pos], fval[f_row, f_pos] = n_pos[coo.row], coo.col, coo.data
        features = SparseFeatures(_dev(frow), _dev(fcol), _dev(fval), _dev(column_order(fcol)))
    else:
        xd = np.zeros((c, n_pad, graph.num_features), np.float32)
        xd[row_of, n_pos] = graph.dense_x()[order]
        features = _dev(xd)
    gt = jraph.GraphsTuple(nodes=None, edges=None, globals=None, senders=_dev(senders),
                           receivers=_dev(receivers), n_node=_dev(counts[:, None], jnp.int32),
                           n_edge=_dev(e_counts[:, None], jnp.int32))
    return ClientBatch(graph=gt, features=features, y=_dev(y), node_mask=_dev(masks["node"]),
                       edge_mask=_dev(edge_mask), train_mask=_dev(masks["train"]),
                       val_mask=_dev(masks["val"]), test_mask=_dev(masks["test"]),
                       node_ids=_dev(ids), client_mask=_dev(np.ones((c,), bool)))


def size_buckets(sizes: np.ndarray, max_ratio: float = 2.0, multiple: int = 8) -> tuple[np.ndarray, np.ndarray]:
    """Group clients by size so each is padded to at most `max_ratio` x its own size (+ rounding).

    Capacities grow geometrically from the smallest size: cap_b = round_up(s_min * max_ratio^b,
    multiple); a client of size s goes to the smallest capacity >= s, so its padded size is
    < max_ratio * s + multiple, and the number of buckets is about log(s_max/s_min)/log(max_ratio).
    Returns (bucket id per client [C], capacity per bucket [B]), empty buckets removed.
    """
    sizes = np.asarray(sizes, np.int64)
    if sizes.ndim != 1 or sizes.size == 0 or (sizes < 1).any():
        raise ValueError(f"size_buckets: sizes must be a non-empty 1-D array of positive counts, got {sizes!r}")
    if not max_ratio > 1.0:
        raise ValueError(f"size_buckets: max_ratio must be > 1, got {max_ratio}")
    caps = []
    cap = float(sizes.min())
    while True:
        caps.append(_round_up(math.ceil(cap), multiple))
        if caps[-1] >= sizes.max():
            break
        cap *= max_ratio
    caps = np.unique(caps)
    ids = np.searchsorted(caps, sizes, side="left")
    used = np.unique(ids)
    return np.searchsorted(used, ids), caps[used]


def build_bucketed_batches(graph: Graph, assignment: np.ndarray, num_clients: int, max_ratio: float = 2.0,
                           node_multiple: int = 8, edge_multiple: int = 64) -> list[tuple[np.ndarray, ClientBatch]]:
    """One padded ClientBatch per size bucket: [(client ids [C_b], batch [C_b, N_b, ...]), ...].

    Each bucket is one shape, so a round over B buckets compiles B variants of the client
    update instead of one per client, and padding waste stays bounded by `max_ratio`.
    """
    sizes = np.bincount(np.asarray(assignment), minlength=num_clients)[:num_clients]
    bucket, caps = size_buckets(sizes, max_ratio, node_multiple)
    out = []
    for b, cap in enumerate(caps):
        ids = np.flatnonzero(bucket == b)
        out.append((ids, stack_partition(graph, assignment, num_clients, clients=ids, num_nodes=int(cap),
                                         edge_multiple=edge_multiple)))
    return out


def padding_report(batches: Sequence[ClientBatch]) -> dict:
    """Padded / real node and edge slots over one or several batches (1.0 = no waste).

    Args:
        batches: one or several `ClientBatch`es (e.g. one per size bucket).

    Returns:
        A dict: "buckets", "real_nodes", "node_slots", "node_padding_ratio", "real_edges", "edge_slots",
        "edge_padding_ratio", and "per_bucket" (per batch: "clients", "padded_nodes",
        "node_padding_ratio").
    """
    real_n = sum(float(np.asarray(b.node_mask).sum()) for b in batches)
    slots_n = sum(float(b.node_mask.size) for b in batches)
    real_e = sum(float(np.asarray(b.edge_mask).sum()) for b in batches)
    slots_e = sum(float(b.edge_mask.size) for b in batches)
    return {"buckets": len(batches), "real_nodes": int(real_n), "node_slots": int(slots_n),
            "node_padding_ratio": slots_n / max(real_n, 1.0), "real_edges": int(real_e),
            "edge_slots": int(slots_e), "edge_padding_ratio": slots_e / max(real_e, 1.0),
            "per_bucket": [{"clients": b.num_clients, "padded_nodes": b.num_nodes,
                            "node_padding_ratio": padding_ratio(b)} for b in batches]}


def dense_graph_batch(features: Array, adjacency: Array) -> ClientBatch:
    """One graph (no client axis) from dense features [M, F] and a 0/1 adjacency [M, M] (row =
    sender), traceable inside jit: every ordered pair is an edge slot (E = M^2, senders row-major)
    and edge_mask = adjacency > 0, so the shapes are static while the edges may be traced (e.g. a
    kNN graph over generated nodes). All nodes are real; no label masks (y = 0)."""
    m = features.shape[0]
    idx = jnp.arange(m, dtype=jnp.int32)
    gt = jraph.GraphsTuple(nodes=None, edges=None, globals=None, senders=jnp.repeat(idx, m),
                           receivers=jnp.tile(idx, m), n_node=jnp.array([m], jnp.int32),
                           n_edge=jnp.array([m * m], jnp.int32))
    none = jnp.zeros((m,), bool)
    return ClientBatch(graph=gt, features=features, y=jnp.zeros((m,), jnp.int32), node_mask=jnp.ones((m,), bool),
                       edge_mask=adjacency.reshape(-1) > 0, train_mask=none, val_mask=none, test_mask=none,
                       node_ids=idx, client_mask=jnp.ones((), bool))
