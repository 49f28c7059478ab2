"""FedHGL: federated hypergraph learning with (LDP) hyperedge completion.

Luo et al., "Federated Hypergraph Learning with Local Differential Privacy: Toward Privacy-Aware
Hypergraph Structure Completion" (ICDE 2025). Spec: /work/shared/specs/fedhgl.md.

Pipeline (Algorithm 1):
  1. partition the nodes over K clients (label-Dirichlet, β = 1e4); hyperedges lying inside one
     client are internal (E_k), the others cross-client (E*), `split_hypergraph`;
  2. one-time pre-propagation X_k^{(N)} per client, either
       - hyperedge completion (HC, Algorithm 2, `hyperedge_completion`): every hop, each client
         uploads per-cross-hyperedge partial sums (Eq. 7) tagged with the hyperedge id only; the
         server (`server_aggregate`) adds them by id and returns totals; the client finishes node
         aggregation (Eq. 8) with global degrees (Eq. 9). Round-0 uploads that contain a single
         node (Theorem 1) are perturbed with randomized response / Laplace (Eqs. 12–16);
       - or Basic FedHGL (`basic_propagation`): L_k^N X_k on the local hypergraph where each
         cross hyperedge is trimmed to its local part (kept if ≥ 2 nodes), local degrees;
       - or Global: L^N X on the whole hypergraph (one client);
     The default implementation (`propagate(..., impl="fast")`, fgl_jax/systems/fedhgl_prop.py)
     computes the same numbers on the host with X kept sparse (scipy CSR) until it fills in; it is
     tested equal to the explicit per-client protocol above (same per-node noise keys).
  3. FedAvg of the 2-linear classifier (Eq. 10) over T rounds × I local Adam steps as a
     `FederatedAlgorithm` (`make_algorithm`; `build_program(options)` for the shared engine:
     `fgl_jax.federated.run` = jitted scan + orbax checkpoints + resume, `run_sweep` = seeds × lr
     (× Laplace ε with `traced_eps`)), with per-client best-validation checkpoints in the state
     (spec §10.11); the paper's accuracy is the final `test_acc` metric.

Without noise HC is exactly centralised propagation for any K (tests/test_fedhgl_hc.py).
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import time
from functools import partial
from typing import Any, Optional

import flax
import jax
import optax
import jax.numpy as jnp
import numpy as np
import scipy.sparse as sp

from fgl_jax.data.hypergraph import Hypergraph, HypergraphError
from fgl_jax.federated.algorithm import FederatedAlgorithm, Program
from fgl_jax.federated.client import OptimConfig, make_optimizer
from fgl_jax.federated.metrics import masked_cross_entropy
from fgl_jax.nn.hgnn import FedHGLClassifier, Incidence, edge_to_vertex, hgnn_smooth, make_incidence, vertex_to_edge
from fgl_jax.partition import label_dirichlet_partition
from fgl_jax.privacy.ldp import RR_VARIANTS, attribute_range, check_binary, check_epsilon
from fgl_jax.systems.fedhgl_prop import node_noise
from fgl_jax import validate as V

Array = jax.Array
PyTree = Any

MECHANISMS = ("none", "rr", "laplace", "auto")
MODES = ("fedavg", "local", "global")
PROPAGATIONS = ("hc", "basic", "global")

# Training ratios per dataset (paper Tables II and IV).
TRAIN_RATIO = {"coraca": 0.1, "dblp4k": 0.06, "imdb4k": 0.06, "cora": 0.1, "citeseer": 0.1, "facebook": 0.008,
               "cocitation_cora": 0.1, "cocitation_citeseer": 0.1}


# ================================================================================================
# configuration
# ================================================================================================
@dataclasses.dataclass(frozen=True)
class FedHGLConfig:
    """Every knob of a FedHGL run (defaults = spec §10 recommendations / authors' code).

    propagation: "hc" (hyperedge completion), "basic" (trimmed local hypergraph), "global".
    mode: "fedavg" (FedHGL), "local" (no aggregation: the "HGNN" rows), "global" (one client).
    mechanism: LDP for unsafe round-0 uploads: "none", "rr", "laplace", "auto" (rr for binary
      features, laplace for numeric). eps: per-attribute ε (> 0). rr_variant: "paper" | "code_centered".
    sensitivity: "paper" (Eq. 16, range over the client's border nodes) | "public" (public_range).
    weighting: FedAvg weights "train" (|𝒱_k|, paper Eq. 4) | "uniform" (authors' code).
    eval_every_step: validate (and checkpoint the per-client best model) after every local step, as
      the authors' code (spec §7.2); False: once per round, after the last local step.
    """

    num_clients: int = 3
    beta: float = 1e4
    min_client_size: int = 10
    n_hops: int = 2
    propagation: str = "hc"
    mode: str = "fedavg"
    mechanism: str = "none"
    eps: float = 10.0
    rr_variant: str = "paper"
    sensitivity: str = "paper"
    public_range: float = 1.0
    noise_propagation: str = "paper"
    train_ratio: float = 0.1
    val_ratio: float = 0.2
    test_ratio: float = 0.4
    rounds: int = 200
    local_steps: int = 3
    lr: float = 0.01
    weight_decay: float = 5e-4
    hidden: int = 16
    dropout: float = 0.5
    final_relu: bool = True
    use_bias: bool = False
    weighting: str = "train"
    feature_chunk: Optional[int] = 512
    eval_every_step: bool = True

    def __post_init__(self):
        own = "FedHGLConfig"
        V.one_of(own, "propagation", self.propagation, PROPAGATIONS)
        V.one_of(own, "mode", self.mode, MODES)
        V.one_of(own, "mechanism", self.mechanism, MECHANISMS)
        V.one_of(own, "rr_variant", self.rr_variant, RR_VARIANTS)
        V.one_of(own, "sensitivity", self.sensitivity, ("paper", "public"))
        V.one_of(own, "noise_propagation", self.noise_propagation, ("paper", "first_hop"))
        V.one_of(own, "weighting", self.weighting, ("train", "uniform"))
        if self.mechanism != "none":
            check_epsilon(self.eps)
        for name in ("num_clients", "n_hops", "rounds", "local_steps"):
            V.at_least(own, name, getattr(self, name), 1)
        for name in ("train_ratio", "val_ratio", "test_ratio"):
            V.in_interval(own, name, getattr(self, name), 0.0, 1.0)
        if self.train_ratio + self.val_ratio + self.test_ratio > 1:
            raise ValueError("FedHGLConfig: train_ratio + val_ratio + test_ratio must be <= 1")
        V.positive(own, "public_range", self.public_range)


# Padding multiple of every per-client dimension: with near-equal client sizes (β = 1e4) runs
# with different seeds then share shapes, hence compiled programs.
PAD = 64


def _round_up(n: int, m: int = PAD) -> int:
    return max(m, -(-int(n) // m) * m)


# ================================================================================================
# partition: internal vs cross-client hyperedges (host)
# ================================================================================================
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
    num_clients: int
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
        per_client_cross = [len(self.client_cross_edges(k)) for k in range(self.num_clients)]
        return {"num_clients": self.num_clients, "client_sizes": np.bincount(self.assignment, minlength=self.num_clients).tolist(),
                "cross_edges": int(self.is_cross.sum()), "internal_edges": int((~self.is_cross).sum()),
                "unsafe_nodes": int(self.unsafe_nodes().sum()), "border_nodes": int(self.border_nodes().sum()),
                "unsafe_uploads": int(self.unsafe_pairs().sum()),
                "uploads_per_hop": int(sum(per_client_cross)),
                "upload_floats_per_hop": int(sum(per_client_cross)) * hg.num_features}


def split_hypergraph(hg: Hypergraph, assignment: np.ndarray, num_clients: int) -> HypergraphSplit:
    """Classify hyperedges given a node assignment int [N] in 0..K-1."""
    a = np.asarray(assignment, np.int64)
    if a.shape != (hg.num_nodes,):
        raise HypergraphError(f"assignment has shape {a.shape}, expected ({hg.num_nodes},)")
    if a.size and (a.min() < 0 or a.max() >= num_clients):
        raise HypergraphError(f"assignment has client ids outside 0..{num_clients - 1}")
    k = int(num_clients)
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


def partition_hypergraph(hg: Hypergraph, num_clients: int, beta: float = 1e4, seed: int = 0,
                         min_size: int = 10) -> HypergraphSplit:
    """Label-Dirichlet node partition (fgl_jax.partition) + hyperedge classification."""
    part = label_dirichlet_partition(hg.as_graph(), num_clients, beta, seed=seed,
                                     min_size=min(min_size, hg.num_nodes // num_clients))
    return split_hypergraph(hg, part.assignment, num_clients)


# ================================================================================================
# device-side client data for the propagations
# ================================================================================================
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
    k = split.num_clients
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
    cross_ids = np.full((k, m_max), num_cross, np.int32)
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
    k = split.num_clients
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
    out = np.zeros((split.num_clients, n_max, hg.num_features), np.float32)
    for c, nodes in enumerate(split.client_nodes):
        xc = hg.x[nodes]
        out[c, :nodes.size] = xc.toarray() if sp.issparse(xc) else xc
    return out


# ================================================================================================
# hyperedge completion (Algorithm 2)
# ================================================================================================
def server_aggregate(ids: Array, partial_sums: Array, num_ids: int) -> Array:
    """The server's whole role in HC: Δ(e*) = Σ_c s_{c,e*}, keyed by hyperedge id only.

    ids: int32 [U] hyperedge ids of U uploads (id == num_ids marks padding, dropped).
    partial_sums: [U, F] uploaded vectors. Returns [num_ids, F] totals. The server receives no
    node id, no degree and no local topology (spec §1).
    """
    return jax.ops.segment_sum(partial_sums, ids, num_segments=num_ids + 1)[:num_ids]


def _perturb_nodes(key: Array, x: Array, node_ids: Array, inv_sqrt_dv: Array, border: Array, mechanism: str, eps,
                   rr_variant: str, sensitivity: str, public_range: float) -> Array:
    """One client's perturbed normalised features P(d^{-1/2} x) for all its nodes [n, F] (Eqs. 12–16).

    Granularity: each node is perturbed once and the noisy vector is reused in every unsafe
    upload (spec §10.5 [rec]; post-processing, so no extra budget). Node u's noise uses key
    fold_in(key, u) (`fedhgl_prop.node_noise`), so the fast path `fedhgl_prop.hc_propagate` draws
    exactly the same values.
    """
    if sensitivity == "paper" and mechanism == "laplace":
        rng = attribute_range(x, border)
    else:
        rng = jnp.full((x.shape[1],), public_range, jnp.float32)
    return node_noise(key, x, node_ids, inv_sqrt_dv[:, None], jnp.broadcast_to(rng, x.shape), eps, mechanism,
                      rr_variant)


def _client_gather(x: Array, hc: HCClients) -> Array:
    """Eq. 7 for every slot of one client: δ(e, V_k) with global d_u.   [n, F] -> [S, F]."""
    return vertex_to_edge(x, hc.inc)


def _exchange(uploads: Array, hc: HCClients) -> tuple[Array, Array]:
    """Clients -> server -> clients for one hop: (received [C, m, f], the masked uploads [C, m, f])."""
    uploads = uploads * hc.cross_valid[..., None]
    totals = server_aggregate(hc.cross_ids.reshape(-1), uploads.reshape(-1, uploads.shape[-1]), hc.num_cross)
    # padding slots carry id num_cross: append a zero row so they read zeros
    totals = jnp.concatenate([totals, jnp.zeros((1, totals.shape[-1]), totals.dtype)])
    return totals[hc.cross_ids] * hc.cross_valid[..., None], uploads


def _hc_columns(x: Array, hc: HCClients, noisy: Optional[Array], n_hops: int, mechanism: str,
                noise_propagation: str = "paper") -> Array:
    """HC on one block of feature columns for all clients (column-separable).  x [C, n, f].

    noise_propagation "paper": hops ≥ 1 upload partial sums of the (noisy) x^{(n)} (Algorithm 2).
    "first_hop": the authors' code (spec §9): from hop 1 on, a client combines its own noisy
    partial sums with the *clean* partial sums of the other clients, so noise does not travel
    beyond one hop (an ablation; it needs clean values no real client has).
    """
    i_max = hc.internal_slots
    x_clean = x
    for n in range(n_hops):
        delta = jax.vmap(_client_gather)(x, hc)                           # Eq. 7, [C, S, f]
        uploads = delta[:, i_max:]                                          # cross slots
        if n == 0 and mechanism != "none":
            single = jax.vmap(lambda nz, idx: nz[idx])(noisy, hc.cross_single)   # [C, m, f]
            uploads = jnp.where(hc.cross_unsafe[..., None], single, uploads)     # Theorem-1 rule
        if noise_propagation == "first_hop" and n >= 1 and mechanism != "none":
            dc = jax.vmap(_client_gather)(x_clean, hc)
            rc, up_c = _exchange(dc[:, i_max:], hc)
            own = uploads * hc.cross_valid[..., None]
            received = rc - up_c + own                                      # others clean, own noisy
            x_clean = jax.vmap(edge_to_vertex)(jnp.concatenate([dc[:, :i_max], rc], axis=1), hc.inc)
        else:
            received, _ = _exchange(uploads, hc)
            if noise_propagation == "first_hop" and mechanism != "none":
                rc, _ = _exchange(delta[:, i_max:], hc)                     # the clean first hop
                x_clean = jax.vmap(edge_to_vertex)(jnp.concatenate([delta[:, :i_max], rc], axis=1), hc.inc)
        delta = jnp.concatenate([delta[:, :i_max], received], axis=1)
        x = jax.vmap(edge_to_vertex)(delta, hc.inc)                          # Eq. 8 / Eq. 9
    return x


@partial(jax.jit, static_argnames=("n_hops", "mechanism", "rr_variant", "sensitivity", "chunk", "noise_propagation"))
def hyperedge_completion(x: Array, hc: HCClients, key: Array, n_hops: int = 2, mechanism: str = "none",
                         eps: float = 10.0, rr_variant: str = "paper", sensitivity: str = "paper",
                         public_range: float = 1.0, chunk: Optional[int] = None,
                         noise_propagation: str = "paper") -> Array:
    """X_k^{(N)} for every client by Algorithm 2.   x float32 [C, n_max, F] -> [C, n_max, F].

    mechanism "none" | "rr" | "laplace" (applied to round-0 uploads of a single node only).
    chunk: feature columns per block (lax.map over blocks bounds memory; noise keys per block).
    noise_propagation: "paper" (default) or "first_hop" (authors'-code ablation, see _hc_columns).
    """
    f = x.shape[-1]
    noisy = None
    if mechanism != "none":
        # noise for all F columns at once (per-node keys), so column chunking does not change it
        noisy = jax.vmap(lambda x_, i_, d_, b_: _perturb_nodes(key, x_, i_, d_, b_, mechanism, eps, rr_variant,
                                                                sensitivity, public_range))(
            x, hc.node_ids, hc.inc.inv_sqrt_dv, hc.border)
    if chunk is None or chunk >= f:
        return _hc_columns(x, hc, noisy, n_hops, mechanism, noise_propagation)
    nb = -(-f // chunk)
    to_blocks = lambda a: jnp.moveaxis(jnp.pad(a, ((0, 0), (0, 0), (0, nb * chunk - f))).reshape(
        a.shape[0], a.shape[1], nb, chunk), 2, 0)
    if noisy is None:
        out = jax.lax.map(lambda a: _hc_columns(a, hc, None, n_hops, mechanism, noise_propagation), to_blocks(x))
    else:
        out = jax.lax.map(lambda a: _hc_columns(a[0], hc, a[1], n_hops, mechanism, noise_propagation),
                          (to_blocks(x), to_blocks(noisy)))
    return jnp.moveaxis(out, 0, 2).reshape(x.shape[0], x.shape[1], nb * chunk)[..., :f]


@partial(jax.jit, static_argnames=("n_hops", "chunk"))
def basic_propagation(x: Array, inc: Incidence, n_hops: int = 2, chunk: Optional[int] = None) -> Array:
    """Basic FedHGL: L_k^N X_k on each client's trimmed local hypergraph.  [C, n, F] -> [C, n, F]."""
    return jax.vmap(lambda a, i: hgnn_smooth(a, i, n_hops, chunk))(x, inc)


def global_propagation(hg: Hypergraph, n_hops: int = 2, chunk: Optional[int] = 512) -> np.ndarray:
    """Centralised L^N X [N, F] (the reference HC must equal)."""
    inc = make_incidence(hg.he_nodes, hg.he_ids, hg.num_nodes, hg.num_edges, hg.edge_weight)
    return np.asarray(jax.jit(hgnn_smooth, static_argnums=(2, 3))(jnp.asarray(hg.dense_x()), inc, n_hops, chunk))


def auto_chunk(chunk: Optional[int], total_pairs: int, num_features: int, budget_floats: float = 3.2e7) -> Optional[int]:
    """Feature-block width so the [pairs, chunk] gather intermediates stay within ~budget floats
    (128 MB at float32); a power of two, at most `chunk` (None: no chunking)."""
    if chunk is None:
        return None
    fit = max(16, 2 ** int(np.floor(np.log2(max(budget_floats / max(total_pairs, 1), 16)))))
    c = min(int(chunk), fit)
    return None if c >= num_features else c


def resolve_mechanism(cfg: FedHGLConfig, hg: Hypergraph) -> str:
    """"auto" -> "rr" for binary features, "laplace" for numeric; checks RR's binary domain."""
    mech = cfg.mechanism
    if mech == "auto":
        mech = "rr" if hg.feature_kind == "binary" else "laplace"
    if mech == "rr":
        check_binary(hg.x, f"{hg.name} features")
    return mech


def propagate(split: HypergraphSplit, cfg: FedHGLConfig, key: Array, impl: str = "fast") -> tuple[np.ndarray, dict]:
    """The one-time pre-propagation of Algorithm 1, lines 1–3.

    Returns (X^{(N)} float32 [N, F] in global node order, info). impl "fast" (default): the host
    sparse computation of `fedhgl_prop` (X stays sparse until it fills in); "protocol": the explicit
    per-client message passing (`hyperedge_completion` / `basic_propagation`, jitted JAX), which the
    fast path is tested equal to. noise_propagation="first_hop" (an ablation) always uses "protocol".
    """
    from fgl_jax.systems import fedhgl_prop as fp
    if impl not in ("fast", "protocol"):
        raise ValueError(f"propagate: impl must be 'fast' or 'protocol', got {impl!r}")
    hg = split.hypergraph
    t0 = time.perf_counter()
    mech = resolve_mechanism(cfg, hg) if cfg.propagation == "hc" else "none"
    if cfg.propagation == "hc" and (impl == "protocol" or (cfg.noise_propagation == "first_hop" and mech != "none")):
        hc = build_hc_clients(split)
        x = jnp.asarray(client_features(split, hc.inc.num_nodes))
        out = hyperedge_completion(x, hc, key, cfg.n_hops, mech, float(cfg.eps), cfg.rr_variant, cfg.sensitivity,
                                   float(cfg.public_range), auto_chunk(cfg.feature_chunk, hc.inc.he_nodes.size, hg.num_features),
                                   cfg.noise_propagation)
        out = _to_global(split, np.asarray(jax.block_until_ready(out)))
    elif cfg.propagation == "basic" and impl == "protocol":
        inc = build_basic_clients(split)
        x = jnp.asarray(client_features(split, inc.num_nodes))
        out = basic_propagation(x, inc, cfg.n_hops, auto_chunk(cfg.feature_chunk, inc.he_nodes.size, hg.num_features))
        out = _to_global(split, np.asarray(jax.block_until_ready(out)))
    elif cfg.propagation == "hc":
        out = fp.hc_propagate(split, cfg.n_hops, key, mech, float(cfg.eps), cfg.rr_variant, cfg.sensitivity,
                              float(cfg.public_range))
    elif cfg.propagation == "basic":
        xs = sp.csr_matrix(hg.x, dtype=np.float32) if sp.issparse(hg.x) else np.asarray(hg.x, np.float32)
        out = fp.propagate_sparse(fp.basic_operator(split), xs, cfg.n_hops)
    else:
        if split.num_clients != 1:
            raise ValueError("propagation='global' needs a one-client split")
        xs = sp.csr_matrix(hg.x, dtype=np.float32) if sp.issparse(hg.x) else np.asarray(hg.x, np.float32)
        out = fp.propagate_sparse(fp.global_operator(hg), xs, cfg.n_hops)
    return np.asarray(out, np.float32), {"propagation_seconds": time.perf_counter() - t0, "mechanism": mech}


def _to_global(split: HypergraphSplit, xc: np.ndarray) -> np.ndarray:
    """[C, n_max, F] per-client rows -> [N, F] global order."""
    out = np.zeros((split.hypergraph.num_nodes, xc.shape[-1]), np.float32)
    for c, nodes in enumerate(split.client_nodes):
        out[nodes] = xc[c, :nodes.size]
    return out


# ================================================================================================
# splits and training data
# ================================================================================================
def client_splits(split: HypergraphSplit, cfg: FedHGLConfig, seed: int) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Per client, random non-stratified train/val/test local indices of sizes int(n_k·ratio)
    drawn without overlap from its labelled nodes (spec §7.2; val 20 %, test 40 %)."""
    rng = np.random.default_rng(seed)
    out = []
    for nodes in split.client_nodes:
        lab = np.flatnonzero(split.hypergraph.y[nodes] >= 0)
        n = nodes.size
        perm = rng.permutation(lab)
        a, b, c = int(n * cfg.train_ratio), int(n * cfg.val_ratio), int(n * cfg.test_ratio)
        out.append((np.sort(perm[:a]), np.sort(perm[a:a + b]), np.sort(perm[a + b:a + b + c])))
    return out


@flax.struct.dataclass
class FedHGLData:
    """Rows of X^{(N)} the training needs, per client: x_* [C, r, F], y_* int32 [C, r], m_* bool [C, r].

    g_* (optional, [C, r, F]): the propagated Laplace noise at ε = 1 when ε is a traced
    hyperparameter (`traced_eps`): the features are then x + g / hp["eps"] (HC is linear and the
    Laplace noise scale is s/ε, so the noisy X^{(N)} is exactly this; spec §4.2).
    """

    x_train: Array
    y_train: Array
    m_train: Array
    x_val: Array
    y_val: Array
    m_val: Array
    x_test: Array
    y_test: Array
    m_test: Array
    g_train: Optional[Array] = None
    g_val: Optional[Array] = None
    g_test: Optional[Array] = None


def make_data(xn: np.ndarray, split: HypergraphSplit, idx: list, gn: Optional[np.ndarray] = None) -> FedHGLData:
    """Gather the train/val/test rows of the propagated features into padded per-client blocks.

    xn: X^{(N)} [N, F] in global node order (`propagate`) or [C, n_max, F] per client.
    gn: optional propagated unit-ε noise [N, F] (traced-ε programs)."""
    y = split.hypergraph.y
    out = {}
    for j, name in enumerate(("train", "val", "test")):
        # training rows are few and used 3x per round (forward + backward): pad them tightly;
        # val/test rows to PAD so runs with different partitions share compiled shapes
        r = _round_up(max(max(t[j].size for t in idx), 1), 8 if name == "train" else PAD)
        xs = np.zeros((len(idx), r, xn.shape[-1]), np.float32)
        gs = np.zeros((len(idx), r, xn.shape[-1]), np.float32) if gn is not None else None
        ys = np.zeros((len(idx), r), np.int32)
        ms = np.zeros((len(idx), r), bool)
        for c, t in enumerate(idx):
            ii = t[j]
            xs[c, :ii.size] = xn[split.client_nodes[c][ii]] if xn.ndim == 2 else xn[c, ii]
            if gs is not None:
                gs[c, :ii.size] = gn[split.client_nodes[c][ii]]
            ys[c, :ii.size] = y[split.client_nodes[c][ii]]
            ms[c, :ii.size] = True
        out[f"x_{name}"], out[f"y_{name}"], out[f"m_{name}"] = jnp.asarray(xs), jnp.asarray(ys), jnp.asarray(ms)
        if gs is not None:
            out[f"g_{name}"] = jnp.asarray(gs)
    return FedHGLData(**out)


# ================================================================================================
# FedAvg training: a FederatedAlgorithm (init, round) for fgl_jax.federated.run / run_sweep
# ================================================================================================
@flax.struct.dataclass
class FedHGLState:
    round: Array
    server: PyTree            # global parameters (FedAvg) — also the start of local mode
    clients: PyTree           # per-client parameters [C, ...] (local mode keeps training them)
    opt: PyTree               # per-client Adam state [C, ...], persistent (never reset/averaged)
    best_params: PyTree       # per-client best-validation local model [C, ...] (spec §10.11)
    best_val: Array           # float32 [C] its validation accuracy
    best_test: Array          # float32 [C] its test accuracy (the paper's reported quantity)
    hp: dict                  # traced hyperparameters: lr (and eps for traced-ε Laplace programs)


def make_model(num_classes: int, cfg: FedHGLConfig) -> FedHGLClassifier:
    return FedHGLClassifier(cfg.hidden, num_classes, cfg.dropout, cfg.final_relu, cfg.use_bias)


def _features(x, g, hp):
    return x if g is None else x + g / hp["eps"]


def _eval_counts(params, x, g, hp, y, m, final_relu: bool):
    """Correct and total counts of the eval-mode classifier on rows x [r, F] (+ g / ε).

    Eval mode has no dropout, so the two linears fold into one [F, C] map (Eq. 10's "product of
    the parameters"): x (W1 W2) + (b1 W2 + b2), 16/C times cheaper on wide features than x W1.
    """
    p = params["params"]
    w1, w2 = p["linear_0"]["kernel"], p["linear_1"]["kernel"]
    w = w1 @ w2
    b = jnp.zeros((w2.shape[1],), w.dtype)
    if "bias" in p["linear_0"]:
        b = p["linear_0"]["bias"] @ w2
    if "bias" in p["linear_1"]:
        b = b + p["linear_1"]["bias"]
    logits = x @ w + b
    if g is not None:
        logits = logits + (g @ w) / hp["eps"]
    if final_relu:
        logits = jax.nn.relu(logits)
    pred = jnp.argmax(logits, -1)
    return ((pred == y) & m).sum().astype(jnp.float32), m.sum().astype(jnp.float32)


def init_state(model, cfg: FedHGLConfig, data: FedHGLData, key: Array) -> FedHGLState:
    params = model.init({"params": key}, data.x_train[0][:1], train=False)
    opt = make_optimizer(OptimConfig(lr=1.0, weight_decay=cfg.weight_decay)).init(params)
    c = data.x_train.shape[0]
    stack = lambda t: jax.tree.map(lambda a: jnp.broadcast_to(a, (c,) + a.shape), t)
    hp = {"lr": jnp.float32(cfg.lr)}
    if data.g_train is not None:
        hp["eps"] = jnp.float32(cfg.eps)
    return FedHGLState(jnp.zeros((), jnp.int32), params, stack(params), stack(opt), stack(params),
                       jnp.full((c,), -1.0, jnp.float32), jnp.zeros((c,), jnp.float32), hp)


def make_round(model, cfg: FedHGLConfig):
    """round(state, data, key) -> (state, metrics): Algorithm 1 lines 5–11 for all clients (vmapped).

    metrics: train_loss (first local step); val_acc of the clients' local models after the last
    step (pooled); test_acc = test accuracy of the per-client best-validation checkpoints so far,
    test-size weighted (spec §10.11: the paper's number is its value after the last round).
    """
    # lr = 1 and the LR applied as a traced multiplier (hp["lr"]): Adam's step is linear in it
    optimizer = make_optimizer(OptimConfig(lr=1.0, weight_decay=cfg.weight_decay))
    fed = cfg.mode != "local"

    def loss_fn(params, batch, key):
        x, g, y, m, hp = batch
        logits = model.apply(params, _features(x, g, hp), train=True, rngs={"dropout": key})
        return masked_cross_entropy(logits, y, m)

    def client_round(p, o, bp, bv, x, g, y, m, xv, gv, yv, mv, key, hp):
        """One client's I local Adam steps (Algorithm 1 line 9), validating after every step when
        eval_every_step (the authors' code; spec §7.2 "Evaluation") or once after the last."""
        def objective(q, k):
            return loss_fn(q, (x, g, y, m, hp), k)

        def evaluate_val(q):
            vc, vt = _eval_counts(q, xv, gv, hp, yv, mv, cfg.final_relu)
            return vc / jnp.maximum(vt, 1.0), vc, vt

        def keep_better(q, bp, bv):
            acc, vc, vt = evaluate_val(q)
            better = acc > bv
            bp = jax.tree.map(lambda b, n: jnp.where(better, n, b), bp, q)
            return bp, jnp.maximum(acc, bv), better, vc, vt

        def step(carry, k):
            q, o, bp, bv, imp, vc, vt = carry
            loss, grad = jax.value_and_grad(objective)(q, k)
            upd, o = optimizer.update(grad, o, q)
            q = optax.apply_updates(q, jax.tree.map(lambda u: u * hp["lr"], upd))
            if cfg.eval_every_step:
                bp, bv, better, vc, vt = keep_better(q, bp, bv)
                imp = imp | better
            return (q, o, bp, bv, imp, vc, vt), loss

        zero = jnp.float32(0.0)
        carry = (p, o, bp, bv, jnp.bool_(False), zero, zero)
        (q, o, bp, bv, imp, vc, vt), losses = jax.lax.scan(step, carry, jax.random.split(key, cfg.local_steps))
        if not cfg.eval_every_step:
            bp, bv, imp, vc, vt = keep_better(q, bp, bv)
        return q, o, bp, bv, imp, losses[0], vc, vt

    def round_fn(state: FedHGLState, data: FedHGLData, key: Array):
        c = data.x_train.shape[0]
        hp = state.hp
        start = (jax.tree.map(lambda a: jnp.broadcast_to(a, (c,) + a.shape), state.server) if fed else state.clients)
        keys = jax.random.split(key, c)
        ax = lambda a: None if a is None else 0
        new, opt, best, best_val, improved, losses, vc, vt = jax.vmap(
            lambda *a: client_round(*a, hp),
            in_axes=(0, 0, 0, 0, 0, ax(data.g_train), 0, 0, 0, ax(data.g_val), 0, 0, 0))(
            start, state.opt, state.best_params, state.best_val, data.x_train, data.g_train, data.y_train,
            data.m_train, data.x_val, data.g_val, data.y_val, data.m_val, keys)
        # the test rows are read only in rounds where some client's best model changed (rare after the
        # first rounds): on wide features the eval rows dominate a round's memory traffic
        tt = data.m_test.sum(axis=1).astype(jnp.float32)
        test_counts = lambda: jax.vmap(lambda p, x, g, y, m: _eval_counts(p, x, g, hp, y, m, cfg.final_relu)[0],
                                       in_axes=(0, 0, ax(data.g_test), 0, 0))(
            best, data.x_test, data.g_test, data.y_test, data.m_test)
        tc = jax.lax.cond(improved.any(), test_counts, lambda: jnp.zeros_like(tt))
        best_test = jnp.where(improved, tc / jnp.maximum(tt, 1.0), state.best_test)
        n_train = data.m_train.sum(axis=1).astype(jnp.float32)
        w = n_train if cfg.weighting == "train" else jnp.ones_like(n_train)
        w = w / jnp.maximum(w.sum(), 1e-12)
        server = jax.tree.map(lambda a: jnp.tensordot(w, a, axes=1), new) if fed else state.server
        metrics = {"train_loss": (losses * w).sum(), "val_acc": vc.sum() / jnp.maximum(vt.sum(), 1.0),
                   "test_acc": (best_test * tt).sum() / jnp.maximum(tt.sum(), 1.0)}
        return FedHGLState(state.round + 1, server, new, opt, best, best_val, best_test, hp), metrics

    return round_fn


def _train_cfg(cfg: FedHGLConfig) -> FedHGLConfig:
    """Only the training fields matter for the compiled round: runs that differ in the propagation
    (HC / noise / ε / K) reuse one compiled program when the shapes agree."""
    return dataclasses.replace(FedHGLConfig(), rounds=cfg.rounds, local_steps=cfg.local_steps, lr=cfg.lr,
                               weight_decay=cfg.weight_decay, hidden=cfg.hidden, dropout=cfg.dropout,
                               final_relu=cfg.final_relu, use_bias=cfg.use_bias, weighting=cfg.weighting,
                               mode="local" if cfg.mode == "local" else "fedavg", eps=cfg.eps,
                               eval_every_step=cfg.eval_every_step)


def make_algorithm(num_classes: int, cfg: FedHGLConfig) -> FederatedAlgorithm:
    """FedHGL training as a FederatedAlgorithm: `fgl_jax.federated.run` gives checkpoints (orbax,
    including the per-client best-validation models) and resume; `run_sweep` vectorises seeds and
    the traced hp (lr; eps for traced-ε Laplace programs)."""
    cfg = _train_cfg(cfg)
    model = make_model(num_classes, cfg)
    return FederatedAlgorithm(init=lambda key, data: init_state(model, cfg, data, key), round=make_round(model, cfg))


@partial(jax.jit, static_argnames=("model", "cfg", "rounds"))
def _train_scan(state, data, key, model, cfg, rounds):
    round_fn = make_round(model, cfg)

    def body(s, r):
        return round_fn(s, data, jax.random.fold_in(key, r))

    return jax.lax.scan(body, state, jnp.arange(rounds))


@partial(jax.jit, static_argnames=("final_relu",))
def evaluate(state: FedHGLState, data: FedHGLData, final_relu: bool = True) -> dict:
    """Test accuracy of the per-client best-validation checkpoints (test-size weighted, spec §10.11)
    and of the final global model."""
    ev = lambda p, g: jax.vmap(lambda x, gg, y, m: _eval_counts(p, x, gg, state.hp, y, m, final_relu),
                               in_axes=(0, None if g is None else 0, 0, 0))
    corr, tot = jax.vmap(lambda p, x, g, y, m: _eval_counts(p, x, g, state.hp, y, m, final_relu),
                         in_axes=(0, 0, None if data.g_test is None else 0, 0, 0))(
        state.best_params, data.x_test, data.g_test, data.y_test, data.m_test)
    gc, gt = ev(state.server, data.g_test)(data.x_test, data.g_test, data.y_test, data.m_test)
    return {"test_acc": corr.sum() / jnp.maximum(tot.sum(), 1.0),
            "global_test_acc": gc.sum() / jnp.maximum(gt.sum(), 1.0),
            "best_val_acc": (state.best_val * data.m_val.sum(1)).sum() / jnp.maximum(data.m_val.sum(), 1)}


def train(data: FedHGLData, num_classes: int, cfg: FedHGLConfig, key: Array, out_dir=None, resume: bool = False) -> dict:
    """T rounds of FedAvg (or local) training as one jitted scan. With out_dir: through
    `fgl_jax.federated.run` (metrics.jsonl + orbax checkpoints + resume); without: the same rounds
    and keys (init key = split(key)[0], round r key = fold_in(split(key)[1], r)) through a scan
    cached across runs of equal shapes. Returns metrics and history."""
    t0 = time.perf_counter()
    tcfg = _train_cfg(cfg)
    if out_dir is not None:
        from fgl_jax.federated.run import run
        res = run(make_algorithm(num_classes, cfg), data, key, cfg.rounds, out_dir=out_dir, resume=resume)
        state, hist, compile_s = res.state, res.history, res.compile_seconds
    else:
        model = make_model(num_classes, tcfg)
        k_init, k_run = jax.random.split(key)
        state = jax.jit(lambda k, d: init_state(model, tcfg, d, k))(k_init, data)
        state, hist = _train_scan(state, data, k_run, model, tcfg, cfg.rounds)
        hist = jax.device_get(hist)
        compile_s = None
        if not np.all(np.isfinite(hist["train_loss"])):
            raise FloatingPointError(f"FedHGL training produced a non-finite loss (first at round "
                                     f"{int(np.argmin(np.isfinite(hist['train_loss']))) + 1})")
    out = {k: float(v) for k, v in jax.device_get(evaluate(state, data, cfg.final_relu)).items()}
    out["train_seconds"] = time.perf_counter() - t0
    out["compile_seconds"] = compile_s
    out["history"] = {k: np.asarray(v).tolist() for k, v in hist.items()}
    out["state"] = state
    return out


def prepare(hg: Hypergraph, cfg: FedHGLConfig, seed: int = 0, split: Optional[HypergraphSplit] = None,
            traced_eps: bool = False) -> tuple[FedHGLData, dict]:
    """Host side of one run: partition (seeded), propagate, split rows -> (FedHGLData, info).

    traced_eps (HC + Laplace only): keep the clean X^{(N)} and the propagated unit-ε noise apart so
    ε is a traced hyperparameter (hp["eps"]) that `run_sweep` can vectorise.
    """
    k = 1 if cfg.mode == "global" or cfg.propagation == "global" else cfg.num_clients
    if split is None:
        if k == 1:
            split = split_hypergraph(hg, np.zeros(hg.num_nodes, np.int64), 1)
        else:
            split = partition_hypergraph(hg, k, cfg.beta, seed, cfg.min_client_size)
    key = jax.random.PRNGKey(seed)
    k_prop, _ = jax.random.split(key)
    prop_cfg = cfg if k > 1 else dataclasses.replace(cfg, propagation="global")
    gn = None
    if traced_eps:
        from fgl_jax.systems import fedhgl_prop as fp
        mech = resolve_mechanism(cfg, hg) if prop_cfg.propagation == "hc" else "none"
        if mech != "laplace" or cfg.noise_propagation != "paper":
            raise ValueError("traced_eps needs propagation='hc' with the Laplace mechanism (numeric features) and "
                             f"noise_propagation='paper'; got mechanism {mech!r}. Randomized response is not linear "
                             "in ε (which bits flip depends on ε), so RR sweeps need one program per ε")
        t0 = time.perf_counter()
        xn, _ = propagate(split, dataclasses.replace(prop_cfg, mechanism="none"), k_prop)
        op = fp.global_operator(hg)
        a, d = fp.unsafe_noise_term(split, hg.x, op, k_prop, "laplace", 1.0, sensitivity=cfg.sensitivity,
                                    public_range=cfg.public_range)
        zero = sp.csr_matrix((hg.num_nodes, hg.num_features), dtype=np.float32)
        gn = np.asarray(fp.propagate_sparse(op, zero, cfg.n_hops, (a, d)), np.float32)
        info = {"propagation_seconds": time.perf_counter() - t0, "mechanism": "laplace"}
    else:
        xn, info = propagate(split, prop_cfg, k_prop)
    data = make_data(xn, split, client_splits(split, cfg, seed), gn)
    info["split_stats"] = split.stats()
    return data, info


def run_fedhgl(hg: Hypergraph, cfg: FedHGLConfig, seed: int = 0, split: Optional[HypergraphSplit] = None,
               out_dir=None, resume: bool = False) -> dict:
    """One complete run: partition (seeded), propagate, split, train, evaluate."""
    data, info = prepare(hg, cfg, seed, split)
    _, k_train = jax.random.split(jax.random.PRNGKey(seed))
    res = train(data, hg.num_classes, cfg, k_train, out_dir, resume)
    res.pop("state")
    res.update(info)
    return res


# ================================================================================================
# Program (one YAML / CLI option set = one run) and CLI
# ================================================================================================
PROGRAM_DEFAULTS = {"dataset": "coraca", "data_dir": None, "clients": 3, "propagation": "hc", "mode": "fedavg",
                    "mechanism": "none", "eps": 10.0, "rounds": 200, "local_steps": 3, "hops": 2,
                    "train_ratio": None, "seed": 0, "lr": 0.01, "traced_eps": False}


def config_from_options(options: dict, hg: Hypergraph) -> FedHGLConfig:
    """FedHGLConfig from CLI/YAML options (argparse dest names; unknown keys are an error)."""
    from fgl_jax.sysconfig import merge_options
    o = merge_options("fedhgl", options, PROGRAM_DEFAULTS)
    ratio = o["train_ratio"] if o["train_ratio"] is not None else TRAIN_RATIO.get(hg.name, 0.1)
    rounds = o["rounds"] if o["mode"] != "global" or o["rounds"] != 200 else 600      # Global: T = 600 (spec §5)
    return FedHGLConfig(num_clients=int(o["clients"]), propagation=o["propagation"], mode=o["mode"],
                        mechanism=o["mechanism"], eps=float(o["eps"]), rounds=int(rounds),
                        local_steps=int(o["local_steps"]), n_hops=int(o["hops"]), train_ratio=float(ratio),
                        lr=float(o["lr"]))


def build_program(options: dict, data_dir=None, hypergraph: Optional[Hypergraph] = None) -> Program:
    """A ready-to-run FedHGL experiment (FedHGL with/without HC, HGNN local, Global) for
    `fgl_jax.federated.run` / `run_sweep`. options: the `fgl-jax fedhgl` option names (PROGRAM_DEFAULTS).
    The partition, splits and propagation are fixed by options["seed"] (host preprocessing); the
    run key only drives initialisation and dropout. The paper's accuracy is the last value of the
    `test_acc` metric (per-client best-validation checkpoints, test-size weighted)."""
    from fgl_jax.data.hypergraph import load_hypergraph
    o = {**PROGRAM_DEFAULTS, **options}
    hg = hypergraph if hypergraph is not None else load_hypergraph(o["dataset"], data_dir or o.get("data_dir"))
    cfg = config_from_options(options, hg)
    data, info = prepare(hg, cfg, int(o["seed"]), traced_eps=bool(o["traced_eps"]))
    describe = {"system": "fedhgl", "dataset": hg.name, "clients": cfg.num_clients, "propagation": cfg.propagation,
                "mode": cfg.mode, "mechanism": info.get("mechanism"), "eps": cfg.eps, "seed": int(o["seed"]),
                "traced_eps": bool(o["traced_eps"]), "propagation_seconds": info["propagation_seconds"],
                "split_stats": info["split_stats"]}
    return Program(make_algorithm(hg.num_classes, cfg), data, cfg.rounds, describe)


def register_cli(subparsers) -> None:
    """`fgl-jax fedhgl --dataset coraca --clients 3 [--propagation basic] [--mechanism auto --eps 1] [--out DIR --resume]`."""
    p = subparsers.add_parser("fedhgl", help="FedHGL: federated hypergraph learning with hyperedge completion")
    p.add_argument("--dataset", default="coraca")
    p.add_argument("--data-dir", default=None)
    p.add_argument("--clients", type=int, default=3)
    p.add_argument("--propagation", choices=PROPAGATIONS, default="hc")
    p.add_argument("--mode", choices=MODES, default="fedavg")
    p.add_argument("--mechanism", choices=MECHANISMS, default="none")
    p.add_argument("--eps", type=float, default=10.0)
    p.add_argument("--rounds", type=int, default=200)
    p.add_argument("--local-steps", type=int, default=3)
    p.add_argument("--hops", type=int, default=2)
    p.add_argument("--train-ratio", type=float, default=None)
    p.add_argument("--lr", type=float, default=0.01)
    p.add_argument("--traced-eps", action="store_true", help="keep ε traced (Laplace HC only) for vectorised sweeps")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default=None, help="directory for metrics.jsonl and orbax checkpoints")
    p.add_argument("--resume", action="store_true")
    p.set_defaults(func=_cli_main)


def _cli_main(args: argparse.Namespace) -> int:
    from fgl_jax.federated.run import run
    opts = {k: v for k, v in vars(args).items() if k not in ("func", "command", "out", "resume")}
    prog = build_program(opts, args.data_dir)
    # the same run key as the generic `fgl-jax fedhgl --runner program` path and a sweep member
    k_train = jax.random.key(int(args.seed))
    res = run(prog.algorithm, prog.data, k_train, prog.num_rounds, out_dir=args.out, resume=args.resume,
              progress=True)
    cfg_relu = True
    out = {k: float(v) for k, v in jax.device_get(evaluate(res.state, prog.data, cfg_relu)).items()}
    out.update({k: v for k, v in prog.describe.items() if k != "split_stats"})
    out["cross_edges"] = prog.describe["split_stats"]["cross_edges"]
    print(json.dumps(out, indent=2, default=float))
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="fgl-jax")
    register_cli(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    raise SystemExit(main())
