"""FedHGL's client hypergraphs (host side, NumPy, once per run).

  * `partition_hypergraph` / `split_hypergraph`: nodes over K clients (label-Dirichlet, β = 1e4);
    hyperedges inside one client are internal (E_k), the others cross-client (E*) (spec §1);
  * `build_hc_clients` / `build_basic_clients` / `client_features`: padded per-client arrays of
    hyperedge completion (Algorithm 2, global degrees, Eq. 9) and of Basic FedHGL (trimmed local
    hypergraphs, local degrees), the inputs of the explicit protocol (`completion.py`).
"""
from __future__ import annotations

import dataclasses
from typing import Optional

import flax
import jax
import jax.numpy as jnp
import numpy as np
import scipy.sparse as sp

from fgl_jax.data.hypergraph import Hypergraph, HypergraphError
from fgl_jax.nn.hgnn import Incidence
from fgl_jax.partition import label_dirichlet_partition

Array = jax.Array

# Padding multiple of every per-client dimension: with near-equal client sizes (β = 1e4) runs
# with different seeds then share shapes, hence compiled programs.
PAD = 64

# dtype of the hyperedge id that tags every HC upload (`HCClients.cross_ids`); the communication
# count (`data.pre_communication`) reads it from here
ID_DTYPE = np.int32


def _round_up(n: int, m: int = PAD) -> int:
    return max(m, -(-int(n) // m) * m)


@dataclasses.dataclass(frozen=True, eq=False)
class HypergraphSplit:
    """Nodes split over K clients and the hyperedges classified (host-side, NumPy).

    assignment: int32 [N]; client_nodes: K sorted global-id arrays; local_index: int64 [N] position of
    each node in its client's list. edge_clients: int64 [M] number of distinct clients per hyperedge.
    cross_edges: int64 [|E*|] global ids of cross-client hyperedges (server-visible id = position).
    pair_client, pair_count: per incidence pair, its node's client and |e ∩ V_client|.
    """

    hypergraph: Hypergraph
    assignment: np.ndarray
    clients: int
    client_nodes: list
    local_index: np.ndarray
    edge_clients: np.ndarray
    cross_edges: np.ndarray
    cross_index: np.ndarray     # int64 [M]: position in cross_edges, -1 if internal
    pair_count: np.ndarray      # int64 [nnz]: |e ∩ V_k| for the pair's node's client k

    @property
    def is_cross(self) -> np.ndarray:
        return self.edge_clients > 1

    def unsafe_pairs(self) -> np.ndarray:
        """bool [nnz]: (v, e*) with e* cross-client and v the only node of its client in e*."""
        return self.is_cross[self.hypergraph.he_ids] & (self.pair_count == 1)

    def unsafe_nodes(self) -> np.ndarray:
        """bool [N]: the spec's |v*| — nodes alone from their client in some cross hyperedge."""
        out = np.zeros(self.hypergraph.num_nodes, bool)
        out[self.hypergraph.he_nodes[self.unsafe_pairs()]] = True
        return out

    def border_nodes(self) -> np.ndarray:
        """bool [N]: V* — nodes in some cross-client hyperedge."""
        out = np.zeros(self.hypergraph.num_nodes, bool)
        out[self.hypergraph.he_nodes[self.is_cross[self.hypergraph.he_ids]]] = True
        return out

    def client_cross_edges(self, k: int) -> np.ndarray:
        """E*_k as sorted positions into cross_edges."""
        hg = self.hypergraph
        sel = (self.assignment[hg.he_nodes] == k) & self.is_cross[hg.he_ids]
        return np.unique(self.cross_index[hg.he_ids[sel]])

    def stats(self) -> dict:
        """Table II / IV quantities and communication counters (Table I)."""
        hg = self.hypergraph
        per_client_cross = [len(self.client_cross_edges(k)) for k in range(self.clients)]
        return {"clients": self.clients, "client_sizes": np.bincount(self.assignment, minlength=self.clients).tolist(),
                "cross_edges": int(self.is_cross.sum()), "internal_edges": int((~self.is_cross).sum()),
                "unsafe_nodes": int(self.unsafe_nodes().sum()), "border_nodes": int(self.border_nodes().sum()),
                "unsafe_uploads": int(self.unsafe_pairs().sum()),
                "uploads_per_hop": int(sum(per_client_cross)),
                "upload_floats_per_hop": int(sum(per_client_cross)) * hg.num_features}


def split_hypergraph(hg: Hypergraph, assignment: np.ndarray, clients: int) -> HypergraphSplit:
    """Classify hyperedges given a node assignment int [N] in 0..K-1."""
    a = np.asarray(assignment, np.int64)
    if a.shape != (hg.num_nodes,):
        raise HypergraphError(f"assignment has shape {a.shape}, expected ({hg.num_nodes},)")
    if a.size and (a.min() < 0 or a.max() >= clients):
        raise HypergraphError(f"assignment has client ids outside 0..{clients - 1}")
    k = int(clients)
    pc = a[hg.he_nodes]                                         # client of each pair's node
    key = hg.he_ids.astype(np.int64) * k + pc                   # (edge, client) group
    uniq, inv, cnt = np.unique(key, return_inverse=True, return_counts=True)
    edge_clients = np.bincount(uniq // k, minlength=hg.num_edges)
    cross_edges = np.flatnonzero(edge_clients > 1)
    cross_index = -np.ones(hg.num_edges, np.int64)
    cross_index[cross_edges] = np.arange(cross_edges.size)
    order = np.argsort(a, kind="stable")
    sizes = np.bincount(a, minlength=k)
    client_nodes = np.split(order, np.cumsum(sizes)[:-1])
    local_index = np.empty(hg.num_nodes, np.int64)
    for nodes in client_nodes:
        local_index[nodes] = np.arange(nodes.size)
    return HypergraphSplit(hg, a.astype(np.int32), k, client_nodes, local_index, edge_clients, cross_edges,
                           cross_index, cnt[inv])


def partition_hypergraph(hg: Hypergraph, clients: int, beta: float = 1e4, seed: int = 0,
                         min_size: int = 10) -> HypergraphSplit:
    """Label-Dirichlet node partition (fgl_jax.partition) + hyperedge classification."""
    part = label_dirichlet_partition(hg.as_graph(), clients, beta, seed=seed,
                                     min_size=min(min_size, hg.num_nodes // clients))
    return split_hypergraph(hg, part.assignment, clients)


@flax.struct.dataclass
class HCClients:
    """Per-client (leading axis C) arrays for hyperedge completion.

    inc: Incidence [C, ...] over each client's own nodes (n_max) and the hyperedges touching them
      (slots: internal first, 0..i_max-1, then cross i_max..i_max+m_max-1), with **global** d_v, d_e.
    cross_ids: int32 [C, m_max] server-visible hyperedge id of each cross slot (num_cross = padding).
    num_cross: size of the server's id space, |E*| rounded up to PAD (ids ≥ |E*| are never used by
      a real upload; rounding keeps the compiled program shared across partitions).
    cross_valid, cross_unsafe: bool [C, m_max] (unsafe: |e* ∩ V_k| = 1, Theorem 1).
    cross_single: int32 [C, m_max] local id of the single member of an unsafe slot.
    border: bool [C, n_max] V*_k (for Eq. 16's range). node_valid: bool [C, n_max].
    """

    inc: Incidence
    cross_ids: Array
    cross_valid: Array
    cross_unsafe: Array
    cross_single: Array
    border: Array
    node_valid: Array
    node_ids: Array             # int32 [C, n_max] global node ids (padding: 0), for per-node noise keys
    internal_slots: int = flax.struct.field(pytree_node=False)
    num_cross: int = flax.struct.field(pytree_node=False)


def _stack_incidences(pairs, n_max, s_max, degs, scales, p_max) -> Incidence:
    hn = np.zeros((len(pairs), p_max), np.int32)
    hi = np.zeros((len(pairs), p_max), np.int32)
    mk = np.zeros((len(pairs), p_max), np.float32)
    dv = np.zeros((len(pairs), n_max), np.float64)
    es = np.zeros((len(pairs), s_max), np.float64)
    for c, (nodes, slots) in enumerate(pairs):
        hn[c, :nodes.size], hi[c, :nodes.size], mk[c, :nodes.size] = nodes, slots, 1
        dv[c, :degs[c].size] = degs[c]
        es[c, :scales[c].size] = scales[c]
    inv = np.where(dv > 0, np.maximum(dv, 1e-30) ** -0.5, 0.0)
    return Incidence(jnp.asarray(hn), jnp.asarray(hi), jnp.asarray(mk), jnp.asarray(inv, jnp.float32),
                     jnp.asarray(es, jnp.float32), num_nodes=n_max, num_edges=s_max)


def build_hc_clients(split: HypergraphSplit, pad: int = PAD) -> HCClients:
    """Host-side: the padded per-client arrays of Algorithm 2 (global degrees, Eq. 9)."""
    hg = split.hypergraph
    k = split.clients
    dv_global = hg.node_degrees()
    de = hg.edge_sizes().astype(np.float64)
    w = hg.edge_weight.astype(np.float64)
    pclient = split.assignment[hg.he_nodes]
    cross_pair = split.is_cross[hg.he_ids]
    n_max = _round_up(max(len(x) for x in split.client_nodes), pad)
    per = []
    for c in range(k):
        sel = pclient == c
        nodes, edges, cross = hg.he_nodes[sel], hg.he_ids[sel], cross_pair[sel]
        internal = np.unique(edges[~cross])
        cross_e = np.unique(edges[cross])
        per.append((nodes, edges, internal, cross_e))
    i_max = _round_up(max(p[2].size for p in per), pad)
    m_max = _round_up(max(p[3].size for p in per), pad)
    p_max = _round_up(max(p[0].size for p in per), pad)
    s_max = i_max + m_max
    num_cross = int(split.cross_edges.size)
    pairs, degs, scales = [], [], []
    cross_ids = np.full((k, m_max), num_cross, ID_DTYPE)
    cross_valid = np.zeros((k, m_max), bool)
    cross_unsafe = np.zeros((k, m_max), bool)
    cross_single = np.zeros((k, m_max), np.int32)
    border = np.zeros((k, n_max), bool)
    node_valid = np.zeros((k, n_max), bool)
    node_ids = np.zeros((k, n_max), np.int32)
    unsafe_pair = split.unsafe_pairs()
    for c, (nodes, edges, internal, cross_e) in enumerate(per):
        slot = np.empty(edges.size, np.int64)
        pos_int = np.searchsorted(internal, edges)
        pos_cross = np.searchsorted(cross_e, edges)
        is_c = split.is_cross[edges]
        slot[~is_c] = pos_int[~is_c]
        slot[is_c] = i_max + pos_cross[is_c]
        local = split.local_index[nodes]
        pairs.append((local, slot))
        cn = split.client_nodes[c]
        degs.append(dv_global[cn])
        sc = np.zeros(s_max)
        sc[:internal.size] = w[internal] / de[internal]
        sc[i_max:i_max + cross_e.size] = w[cross_e] / de[cross_e]
        scales.append(sc)
        cross_ids[c, :cross_e.size] = split.cross_index[cross_e]
        cross_valid[c, :cross_e.size] = True
        # unsafe slots and their single member
        usel = unsafe_pair[pclient == c]
        cross_unsafe[c, pos_cross[usel]] = True
        cross_single[c, pos_cross[usel]] = local[usel]
        border[c, local[is_c]] = True
        node_valid[c, :cn.size] = True
        node_ids[c, :cn.size] = cn
    inc = _stack_incidences(pairs, n_max, s_max, degs, scales, p_max)
    return HCClients(inc, jnp.asarray(cross_ids), jnp.asarray(cross_valid), jnp.asarray(cross_unsafe),
                     jnp.asarray(cross_single), jnp.asarray(border), jnp.asarray(node_valid), jnp.asarray(node_ids),
                     internal_slots=i_max, num_cross=num_cross)


def build_basic_clients(split: HypergraphSplit, pad: int = PAD) -> Incidence:
    """Host-side: per-client local hypergraphs E_k ∪ Trim(E*_k) (parts with ≥ 2 nodes), local degrees."""
    hg = split.hypergraph
    k = split.clients
    pclient = split.assignment[hg.he_nodes]
    keep_pair = ~split.is_cross[hg.he_ids] | (split.pair_count >= 2)
    n_max = _round_up(max(len(x) for x in split.client_nodes), pad)
    pairs, degs, scales = [], [], []
    per = []
    for c in range(k):
        sel = (pclient == c) & keep_pair
        nodes, edges = hg.he_nodes[sel], hg.he_ids[sel]
        uniq, slot = np.unique(edges, return_inverse=True)
        per.append((split.local_index[nodes], slot, uniq))
    s_max = _round_up(max(p[2].size for p in per), pad)
    p_max = _round_up(max(p[0].size for p in per), pad)
    for c, (local, slot, uniq) in enumerate(per):
        n_c = len(split.client_nodes[c])
        w = hg.edge_weight[uniq].astype(np.float64)
        size = np.bincount(slot, minlength=uniq.size).astype(np.float64)      # local (trimmed) d_e
        deg = np.bincount(local, weights=w[slot], minlength=n_c)                # local d_v
        sc = np.zeros(s_max)
        sc[:uniq.size] = w / np.maximum(size, 1)
        pairs.append((local, slot))
        degs.append(deg)
        scales.append(sc)
    return _stack_incidences(pairs, n_max, s_max, degs, scales, p_max)


def client_features(split: HypergraphSplit, n_max: Optional[int] = None) -> np.ndarray:
    """float32 [C, n_max, F]: each client's raw node features in local order (zero padded)."""
    hg = split.hypergraph
    n_max = n_max or _round_up(max(len(x) for x in split.client_nodes))
    out = np.zeros((split.clients, n_max, hg.num_features), np.float32)
    for c, nodes in enumerate(split.client_nodes):
        xc = hg.x[nodes]
        out[c, :nodes.size] = xc.toarray() if sp.issparse(xc) else xc
    return out


def _to_global(split: HypergraphSplit, xc: np.ndarray) -> np.ndarray:
    """[C, n_max, F] per-client rows -> [N, F] global order."""
    out = np.zeros((split.hypergraph.num_nodes, xc.shape[-1]), np.float32)
    for c, nodes in enumerate(split.client_nodes):
        out[nodes] = xc[c, :nodes.size]
    return out
