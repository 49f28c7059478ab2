"""A 2-layer GCN computed only on the rows its loss or score reads (FedGC's evaluation of G').

Fine-tuning on a client reads the logits of its own training nodes T (~10 of ~2,000 local rows on
Cora) and its scores read the validation and test nodes. A 2-layer GCN's logits on T need the
hidden layer only on T's closed neighbourhood N[T] and the second propagation only over the edges
into T, so the first layer's product runs on |N[T]| rows instead of N. The degrees of Â still count
every edge, so the logits on T are those of the full model (the products reassociated at most).

Dropout: the full model draws a Bernoulli mask over all [N, H] hidden units; `bernoulli_rows`
draws the same bits at the kept rows only (threefry is a counter-based generator: bit i is a
function of the key and i alone), so the restricted forward drops exactly the units the full one
drops. Keys of another PRNG implementation fall back to drawing the full mask and gathering.
"""
from __future__ import annotations

from typing import NamedTuple

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

from fgl_jax import ops

Array = jax.Array


def bernoulli_rows(key: Array, p: float, shape: tuple, rows: Array) -> Array:
    """`jax.random.bernoulli(key, p, shape)[rows]` bit for bit, without drawing the other rows.

    shape: (N, W) static; rows: int [K] in [0, N). Returns bool [K, W]. Exact for threefry keys
    with `jax_threefry_partitionable` (jax's default); otherwise draws the full mask and gathers.
    """
    n, w = shape
    typed = jnp.issubdtype(key.dtype, jax.dtypes.prng_key)
    impl = str(jax.random.key_impl(key)) if typed else "threefry2x32"
    if (not jax.config.jax_threefry_partitionable or "threefry" not in impl or n * w >= 2 ** 32):
        return jax.random.bernoulli(key, p, shape)[rows]
    from jax.extend.random import threefry2x32_p
    k = jax.random.key_data(key) if typed else key
    # the flat index of element (r, c) of the full draw, as its (high, low) 32-bit counter words
    lo = rows.astype(jnp.uint32)[:, None] * jnp.uint32(w) + jnp.arange(w, dtype=jnp.uint32)[None, :]
    b1, b2 = threefry2x32_p.bind(k[0], k[1], jnp.zeros_like(lo), lo)
    bits = b1 ^ b2
    # jax.random.uniform's float32 from 32 bits: mantissa := the top 23 bits, exponent of 1.0
    u = jax.lax.bitcast_convert_type((bits >> jnp.uint32(9)) | jnp.uint32(0x3F800000), jnp.float32) - 1.0
    return u < jnp.asarray(p, jnp.float32)


def dropout_key(model: nn.Module, params, key: Array, probe) -> Array:
    """The key the model's single `nn.Dropout` draws its mask with in
    `model.apply(params, batch, train=True, rngs={"dropout": key})` (it depends only on the module
    path, not on the input: `probe` is any small batch the model accepts)."""
    got = []

    def intercept(next_fun, args, kwargs, context):
        if isinstance(context.module, nn.Dropout) and context.method_name == "__call__":
            got.append(context.module.make_rng(context.module.rng_collection))
            return args[0]
        return next_fun(*args, **kwargs)

    with nn.intercept_methods(intercept):
        model.apply(params, probe, train=True, rngs={"dropout": key})
    if len(got) != 1:
        raise ValueError(f"expected one dropout layer in {type(model).__name__}, found {len(got)}")
    return got[0]


class RowPlan(NamedTuple):
    """One client's (or, stacked, every client's) restriction to a target set T.

    rows: int32 [K] = N[T] padded with 0 (row_ok False); feats: [K, d] the pre-aggregated features
    S X on those rows; edges: int32 [E'] = edges into T, padded (edge_ok False).
    """

    rows: Array
    row_ok: Array
    feats: Array
    edges: Array
    edge_ok: Array


def closed_neighbourhoods(senders, receivers, edge_mask, targets) -> tuple[list, list, list]:
    """Host (NumPy): per client, N[T] (T and its in-neighbours), the edges into T and the edges
    into N[T] (what a 2-layer GCN's second and first propagation read for logits on T).
    Arrays [M, E] / [M, N]; returns three lists of int arrays."""
    s, r = np.asarray(senders), np.asarray(receivers)
    em, t = np.asarray(edge_mask, bool), np.asarray(targets, bool)
    rows, into_t, into_rows = [], [], []
    for j in range(t.shape[0]):
        into = em[j] & t[j][r[j]]
        need = t[j].copy()
        need[s[j][into]] = True
        rows.append(np.flatnonzero(need))
        into_t.append(np.flatnonzero(into))
        into_rows.append(np.flatnonzero(em[j] & need[r[j]]))
    return rows, into_t, into_rows


def pad_lists(lists) -> tuple[np.ndarray, np.ndarray]:
    """int32 [M, K] (K = the longest, at least 1) and its validity mask (NumPy: jitted callers
    take them as arguments)."""
    k = max(1, max(len(a) for a in lists))
    idx, ok = np.zeros((len(lists), k), np.int32), np.zeros((len(lists), k), bool)
    for j, a in enumerate(lists):
        idx[j, :len(a)], ok[j, :len(a)] = a, True
    return idx, ok


def propagate_into(h: Array, senders: Array, receivers: Array, edge_mask: Array, num_nodes: int,
                   edges: Array, edge_ok: Array) -> Array:
    """`ops.gcn_propagate` summed over the edges `edges` [E'] only (valid where edge_ok): exact on
    the receivers of those edges when they are all of those nodes' in-edges (Â's degrees still
    count every edge); other rows get their self-loop term only."""
    deg = ops.in_degree(receivers, edge_mask, num_nodes) + 1.0
    inv = jax.lax.rsqrt(deg)
    se, re = senders[edges], receivers[edges]
    coef = (edge_mask[edges] & edge_ok).astype(h.dtype) * inv[se] * inv[re]
    return jax.ops.segment_sum(h[se] * coef[:, None], re, num_segments=num_nodes) + h * (1.0 / deg)[:, None]


def gcn2_rows(q: dict, plan: RowPlan, senders: Array, receivers: Array, edge_mask: Array, num_nodes: int,
              keep=None) -> Array:
    """Logits [N, C] of a pre-aggregated 2-layer GCN (`make_model("gcn", ..., pre_aggregated=True)`)
    on one client, exact on the plan's targets T (elsewhere: partial sums, finite).

    q: the params' "params" dict; keep: None (no dropout) or (mask [K, H] bool, keep_prob).
    """
    h = jax.nn.relu(plan.feats @ q["layer_0"]["kernel"] + q["bias_0"])
    if keep is not None:
        mask, p = keep
        h = jax.lax.select(mask, h / p, jnp.zeros_like(h))
    zr = h @ q["layer_1"]["kernel"]
    z = jnp.zeros((num_nodes, zr.shape[1]), zr.dtype).at[jnp.where(plan.row_ok, plan.rows, num_nodes)].set(
        zr, mode="drop")
    return propagate_into(z, senders, receivers, edge_mask, num_nodes, plan.edges, plan.edge_ok) + q["bias_1"]
