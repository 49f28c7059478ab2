"""Module A3 of Lumos: per-device trees (paper §V-A, Fig. 2), all devices in one padded batch.

Tree 𝒯(v) for N_v = {u_1..u_n}: leaf pairs (s_i = copy of v, l_i = u_i), parent virtual nodes
P_i (edges s_i-P_i, l_i-P_i), one root R (edges P_i-R): 3n+1 nodes, 3n undirected edges.
Node order per tree (as the official code): [s_0..s_{n-1}, l_0..l_{n-1}, P_0..P_{n-1}, R].

All trees are laid out as one disjoint union (device after device, like `jraph.batch`), padded
to a static node/edge count, so one jitted program runs every device's tree GNN: message
passing never crosses trees because no edge does. Why not a [devices, max_nodes] stack: tree
sizes range from 4 to 3*max_wl+1 nodes (mean ~30 on Facebook), so stacking to the largest
tree would multiply work 4x with trimming and ~70x without (max degree 709).

Features (Eq. 25): every tree node reads row `feat_src` of a feature table
    [ x_1..x_N (raw, a device's own feature)  |  x''_p for every (sender, recipient) pair p  |  0 ]
so self-leaves carry the raw x_v, neighbour leaves the recovered LDP feature the neighbour sent
to this device, and virtual nodes (P, R) and padding the zero row.

Special cases (spec A6): a device with N_v = {} has no tree (it still appears as a leaf in its
neighbours' trees); a vertex that is a leaf nowhere (isolated) gets a fallback tree (s, P, R)
with no neighbour leaf, so its pooled embedding is defined.
"""
from __future__ import annotations

import dataclasses

import flax
import jax
import jax.numpy as jnp
import jraph
import numpy as np

from fgl_jax.systems.lumos.workload import EdgeSet

SELF, NBR, PARENT, ROOT, PAD = 0, 1, 2, 3, -1
KINDS = ("tree", "star")


@flax.struct.dataclass
class TreeBatch:
    """All devices' trees as one padded disjoint union (T nodes, E directed edges).

    graph: jraph.GraphsTuple with senders/receivers int32 [E], n_node/n_edge [devices_with_tree + 1]
        (last entry = padding graph), nodes/edges None (features come from the table).
    edge_mask: bool [E]. node_vertex: int32 [T] vertex a leaf stands for, -1 for virtual/pad.
    node_type: int32 [T] SELF/NBR/PARENT/ROOT/PAD. node_device: int32 [T] owner device (-1 pad).
    feat_src: int32 [T] row of the feature table. leaf_count: float32 [N] leaf copies per vertex.
    """

    graph: jraph.GraphsTuple
    edge_mask: jax.Array
    node_vertex: jax.Array
    node_type: jax.Array
    node_device: jax.Array
    feat_src: jax.Array
    leaf_count: jax.Array

    @property
    def num_nodes(self) -> int:
        return int(self.node_vertex.shape[0])

    @property
    def senders(self):
        return self.graph.senders

    @property
    def receivers(self):
        return self.graph.receivers


@dataclasses.dataclass(frozen=True)
class TreeMeta:
    """Host-side bookkeeping for LDP recipients, communication accounting and per-device tests.

    pair_dst: int64 [P] device w whose tree holds the leaf; pair_src: int64 [P] the leaf's vertex
    u (the device that sends x''_u to w); recipient_bin: int64 [P] which of u's bins w receives;
    num_bins: int64 [N] B(u); device_offset / device_size: int64 [N] node range of each device's
    tree in the union (size 0: no tree); fallback: bool [N] devices with the (s, P, R) tree.
    """

    num_vertices: int
    kind: str
    pair_dst: np.ndarray
    pair_src: np.ndarray
    recipient_bin: np.ndarray
    num_bins: np.ndarray
    num_recipients: np.ndarray
    workload: np.ndarray
    device_offset: np.ndarray
    device_size: np.ndarray
    fallback: np.ndarray
    num_real_nodes: int
    num_real_edges: int


def _round_up(n: int, m: int) -> int:
    return max(m, -(-int(n) // m) * m)


def build_trees(es: EdgeSet, keep: np.ndarray, num_features: int, kind: str = "tree", bins: str = "recipients",
                node_multiple: int = 1024, edge_multiple: int = 4096) -> tuple[TreeBatch, TreeMeta]:
    """Build every device's tree from the selection `keep` (bool [2M] over half-edges).

    kind="tree" (Lumos) or "star" (ablation w/o VN: centre = copy of v linked to each u_i; n+1 nodes).
    bins="recipients" (spec A3 default: B(u) = min(max(1, |R(u)|), d), one bin per recipient
    R(u) = {w : u in N_w}) or "workload" (paper-literal B(u) = min(max(1, wl(u)), d); recipients
    share bins round-robin). Vectorised NumPy.
    """
    if kind not in KINDS:
        raise ValueError(f"build_trees: kind must be one of {KINDS}, got {kind!r}")
    if bins not in ("recipients", "workload"):
        raise ValueError(f"build_trees: bins must be 'recipients' or 'workload', got {bins!r}")
    keep = np.asarray(keep, bool)
    if keep.shape != es.owner.shape:
        raise ValueError(f"build_trees: keep has shape {keep.shape}, expected {es.owner.shape}")
    if num_features < 1:
        raise ValueError(f"build_trees: num_features must be >= 1, got {num_features}")
    n = es.num_nodes
    h = np.flatnonzero(keep)                     # pairs, sorted by (device w, leaf vertex u)
    pair_dst, pair_src = es.owner[h], es.nbr[h]
    p = h.size
    wl = np.bincount(pair_dst, minlength=n)
    nrec = np.bincount(pair_src, minlength=n)
    # a vertex that is a leaf nowhere (isolated, or dropped by a non-covering greedy rule)
    fallback = nrec + wl == 0
    # --- LDP recipients and bins (spec A3)
    base = np.maximum(1, nrec if bins == "recipients" else wl)
    num_bins = np.minimum(base, num_features)
    order = np.lexsort((pair_dst, pair_src))    # pairs grouped by sender u
    start = np.zeros(n + 1, np.int64)
    np.cumsum(nrec, out=start[1:])
    pos = np.empty(p, np.int64)
    pos[order] = np.arange(p) - start[pair_src[order]]
    recipient_bin = pos % num_bins[pair_src]
    # --- node layout
    per = np.where(wl > 0, 3 * wl + 1 if kind == "tree" else wl + 1, 0)
    per = np.where(fallback, 3 if kind == "tree" else 1, per)
    offset = np.zeros(n, np.int64)
    offset[1:] = np.cumsum(per)[:-1]
    total = int(per.sum())
    t_pad = _round_up(total + 1, node_multiple)
    node_vertex = np.full(t_pad, -1, np.int64)
    node_type = np.full(t_pad, PAD, np.int64)
    node_device = np.full(t_pad, -1, np.int64)
    feat_src = np.full(t_pad, n + p, np.int64)  # zero row
    pstart = np.zeros(n + 1, np.int64)
    np.cumsum(wl, out=pstart[1:])
    i = np.arange(p) - pstart[pair_dst]         # pair index within its device
    nw = wl[pair_dst]
    ob = offset[pair_dst]
    send, recv = [], []
    if kind == "tree":
        s_id, l_id, p_id, r_id = ob + i, ob + nw + i, ob + 2 * nw + i, ob + 3 * nw
        node_vertex[s_id], node_type[s_id], feat_src[s_id] = pair_dst, SELF, pair_dst
        node_vertex[l_id], node_type[l_id], feat_src[l_id] = pair_src, NBR, n + np.arange(p)
        node_type[p_id] = PARENT
        node_type[r_id] = ROOT
        for nd in (s_id, l_id, p_id, r_id):
            node_device[nd] = pair_dst
        for a, b in ((s_id, p_id), (l_id, p_id), (p_id, r_id)):
            send += [a, b]
            recv += [b, a]
        fb = np.flatnonzero(fallback)
        fo = offset[fb]
        node_vertex[fo], node_type[fo], feat_src[fo] = fb, SELF, fb
        node_type[fo + 1], node_type[fo + 2] = PARENT, ROOT
        for k in range(3):
            node_device[fo + k] = fb
        send += [fo, fo + 1, fo + 1, fo + 2]
        recv += [fo + 1, fo, fo + 2, fo + 1]
    else:
        c_id, l_id = ob, ob + 1 + i
        dev = np.flatnonzero((wl > 0) | fallback)
        node_vertex[offset[dev]], node_type[offset[dev]], feat_src[offset[dev]] = dev, SELF, dev
        node_device[offset[dev]] = dev
        node_vertex[l_id], node_type[l_id], feat_src[l_id] = pair_src, NBR, n + np.arange(p)
        node_device[l_id] = pair_dst
        send += [c_id, l_id]
        recv += [l_id, c_id]
    senders = np.concatenate(send) if send else np.zeros(0, np.int64)
    receivers = np.concatenate(recv) if recv else np.zeros(0, np.int64)
    # sort edges by receiver (segment sums like sorted ids; deterministic layout)
    eo = np.lexsort((senders, receivers))
    senders, receivers = senders[eo], receivers[eo]
    e_real = senders.size
    e_pad = _round_up(e_real, edge_multiple)
    pad_node = t_pad - 1
    senders = np.concatenate([senders, np.full(e_pad - e_real, pad_node)])
    receivers = np.concatenate([receivers, np.full(e_pad - e_real, pad_node)])
    edge_mask = np.arange(e_pad) < e_real
    leaf = node_vertex >= 0
    leaf_count = np.bincount(node_vertex[leaf], minlength=n).astype(np.float32)
    has_tree = per > 0
    edges_per = np.where(kind == "tree", 2 * (per - 1), 2 * np.maximum(per - 1, 0))
    n_node = np.concatenate([per[has_tree], [t_pad - total]]).astype(np.int32)
    n_edge = np.concatenate([edges_per[has_tree], [e_pad - e_real]]).astype(np.int32)
    graph = jraph.GraphsTuple(nodes=None, edges=None, senders=jnp.asarray(senders, jnp.int32),
                              receivers=jnp.asarray(receivers, jnp.int32), n_node=jnp.asarray(n_node),
                              n_edge=jnp.asarray(n_edge), globals=None)
    batch = TreeBatch(graph=graph, edge_mask=jnp.asarray(edge_mask), node_vertex=jnp.asarray(node_vertex, jnp.int32),
                      node_type=jnp.asarray(node_type, jnp.int32), node_device=jnp.asarray(node_device, jnp.int32),
                      feat_src=jnp.asarray(feat_src, jnp.int32), leaf_count=jnp.asarray(leaf_count))
    meta = TreeMeta(n, kind, pair_dst, pair_src, recipient_bin, num_bins, nrec, wl, offset, per, fallback,
                    total, e_real)
    return batch, meta


def tree_edges_vertex_pairs(batch: TreeBatch, meta: TreeMeta) -> set:
    """Graph edges {v, u} represented in the trees (self-leaf v paired with leaf u), for leakage tests."""
    return {(int(min(a, b)), int(max(a, b))) for a, b in zip(meta.pair_dst, meta.pair_src)}
