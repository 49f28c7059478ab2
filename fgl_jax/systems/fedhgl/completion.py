"""Hyperedge completion as the explicit message-passing protocol (Algorithm 2, jitted JAX).

Every hop, each client uploads per-cross-hyperedge partial sums (Eq. 7) tagged with the hyperedge
id only; the server (`server_aggregate`) adds them by id and returns totals; the client finishes
node aggregation (Eq. 8) with global degrees (Eq. 9). Round-0 uploads that hold a single node
(Theorem 1) are perturbed with randomized response / Laplace (Eqs. 12–16). Basic FedHGL
(`basic_propagation`) smooths each client's trimmed local hypergraph with local degrees.

The default pre-propagation is the equal, faster host computation of `propagation.py`; this module
is what it is tested equal to (same per-node noise keys), and what runs the authors'-code ablation
noise_propagation="first_hop". Without noise HC is exactly centralised propagation for any K.
"""
from __future__ import annotations

from functools import partial
from typing import Optional

import jax
import jax.numpy as jnp
import numpy as np

from fgl_jax.data.hypergraph import Hypergraph
from fgl_jax.nn.hgnn import Incidence, edge_to_vertex, hgnn_smooth, make_incidence, vertex_to_edge
from fgl_jax.privacy.ldp import attribute_range
from fgl_jax.systems.fedhgl.clients import HCClients
from fgl_jax.systems.fedhgl.propagation import node_noise

Array = jax.Array


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
    fold_in(key, u) (`propagation.node_noise`), so the fast path `propagation.hc_propagate` draws
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


def _hc_columns(x: Array, hc: HCClients, noisy: Optional[Array], hops: int, mechanism: str,
                noise_propagation: str = "paper") -> Array:
    """HC on one block of feature columns for all clients (column-separable).  x [C, n, f].

    noise_propagation "paper": hops ≥ 1 upload partial sums of the (noisy) x^{(n)} (Algorithm 2).
    "first_hop": the authors' code (spec §9): from hop 1 on, a client combines its own noisy
    partial sums with the *clean* partial sums of the other clients, so noise does not travel
    beyond one hop (an ablation; it needs clean values no real client has).
    """
    i_max = hc.internal_slots
    x_clean = x
    for n in range(hops):
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


@partial(jax.jit, static_argnames=("hops", "mechanism", "rr_variant", "sensitivity", "chunk", "noise_propagation"))
def hyperedge_completion(x: Array, hc: HCClients, key: Array, hops: int = 2, mechanism: str = "none",
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
        return _hc_columns(x, hc, noisy, hops, mechanism, noise_propagation)
    nb = -(-f // chunk)
    to_blocks = lambda a: jnp.moveaxis(jnp.pad(a, ((0, 0), (0, 0), (0, nb * chunk - f))).reshape(
        a.shape[0], a.shape[1], nb, chunk), 2, 0)
    if noisy is None:
        out = jax.lax.map(lambda a: _hc_columns(a, hc, None, hops, mechanism, noise_propagation), to_blocks(x))
    else:
        out = jax.lax.map(lambda a: _hc_columns(a[0], hc, a[1], hops, mechanism, noise_propagation),
                          (to_blocks(x), to_blocks(noisy)))
    return jnp.moveaxis(out, 0, 2).reshape(x.shape[0], x.shape[1], nb * chunk)[..., :f]


@partial(jax.jit, static_argnames=("hops", "chunk"))
def basic_propagation(x: Array, inc: Incidence, hops: int = 2, chunk: Optional[int] = None) -> Array:
    """Basic FedHGL: L_k^N X_k on each client's trimmed local hypergraph.  [C, n, F] -> [C, n, F]."""
    return jax.vmap(lambda a, i: hgnn_smooth(a, i, hops, chunk))(x, inc)


def global_propagation(hg: Hypergraph, hops: int = 2, chunk: Optional[int] = 512) -> np.ndarray:
    """Centralised L^N X [N, F] (the reference HC must equal)."""
    inc = make_incidence(hg.he_nodes, hg.he_ids, hg.num_nodes, hg.num_edges, hg.edge_weight)
    return np.asarray(jax.jit(hgnn_smooth, static_argnums=(2, 3))(jnp.asarray(hg.dense_x()), inc, hops, chunk))


def auto_chunk(chunk: Optional[int], total_pairs: int, num_features: int, budget_floats: float = 3.2e7) -> Optional[int]:
    """Feature-block width so the [pairs, chunk] gather intermediates stay within ~budget floats
    (128 MB at float32); a power of two, at most `chunk` (None: no chunking)."""
    if chunk is None:
        return None
    fit = max(16, 2 ** int(np.floor(np.log2(max(budget_floats / max(total_pairs, 1), 16)))))
    c = min(int(chunk), fit)
    return None if c >= num_features else c

