"""Segment-sum message passing primitives (single graph, no client axis; vmap adds it).

Shapes: N nodes, E edges, F/H feature widths. Masks are float or bool arrays; a masked
edge contributes exactly zero, a masked node is left to the caller's loss/metric masks.
"""
from __future__ import annotations

import functools
from typing import Optional

import flax
import jax
import jax.numpy as jnp
import numpy as np

Array = jax.Array


@flax.struct.dataclass
class SparseFeatures:
    """A sparse feature matrix in COO form, padded (nnz entries, with a leading client axis in a batch).

    Padded entries have val = 0 (row/col may point anywhere valid), so they add nothing.
    `num_rows` lives in the graph (node count), not here, to keep the pytree static-free.

    Attributes:
        row: int32 `[nnz]`, the entries' rows (nodes).
        col: int32 `[nnz]`, the entries' columns (features).
        val: float32 `[nnz]`, the values.
        order: optional int32 `[nnz]`, the entries' positions sorted by column (stable; `column_order`):
            with it, the weight gradient of `feature_matmul` is a sorted segment sum (see there).
    """

    row: Array
    col: Array
    val: Array
    order: Optional[Array] = None


def column_order(col) -> np.ndarray:
    """Host side: the stable argsort of `col` over its last axis (int32, same shape): entry order
    of the transposed matrix, each column's entries kept in their original (row) order."""
    col = np.asarray(col)
    return np.argsort(col, axis=-1, kind="stable").astype(np.int32)


def feature_matmul(x, w: Array, num_nodes: int) -> Array:
    """x @ w for x dense [N, F], SparseFeatures or EllFeatures; w [F, H] -> [N, H].

    The sparse path is a gather of w's rows plus a segment sum over the nnz entries: on
    bag-of-words features (~1 % density) it is several times cheaper than a dense matmul
    (see benchmarks/bench_sparse_first_layer.py), and its transpose (the weight gradient)
    is a scatter-add, which XLA handles without materialising X^T.

    Args:
        x: the features: dense `[N, F]`, `SparseFeatures` (`[nnz]` arrays) or `EllFeatures`.
        w: float `[F, H]`.
        num_nodes: N (static), the rows of the result.

    Returns:
        float `[N, H]`.
    """
    if isinstance(x, EllFeatures):
        return ell_matmul(w, x)
    if isinstance(x, SparseFeatures):
        if x.order is not None:
            return _sparse_matmul(w, x.row, x.col, x.val, x.order, num_nodes)
        return jax.ops.segment_sum(x.val[:, None] * w[x.col], x.row, num_segments=num_nodes)
    return x @ w


# X W with a hand-written VJP for the weight gradient X^T dZ: autodiff's transpose is a scatter-add
# over the entries in row order into [F, H]; walking them in column order (`SparseFeatures.order`)
# makes it a sorted segment sum, which XLA:CPU (jax 0.10.2) runs faster (Cora, 10 clients:
# benchmarks/bench_round_speed.py). The stable order keeps each column's entries in the order the
# scatter visits them, so the sums are the same floats.
@functools.partial(jax.custom_vjp, nondiff_argnums=(5,))
def _sparse_matmul(w, row, col, val, order, num_nodes):
    return jax.ops.segment_sum(val[:, None] * w[col], row, num_segments=num_nodes)


def _sparse_matmul_fwd(w, row, col, val, order, num_nodes):
    return _sparse_matmul(w, row, col, val, order, num_nodes), (w, row, col, val, order)


def _sparse_matmul_bwd(num_nodes, res, dz):
    w, row, col, val, order = res
    t_row, t_col, t_val = row[order], col[order], val[order]
    dw = jax.ops.segment_sum(t_val[:, None] * dz[t_row], t_col, num_segments=w.shape[0], indices_are_sorted=True)
    dval = (w[col] * dz[row]).sum(-1)   # only kept by XLA when a caller differentiates the features
    zero = lambda a: np.zeros(a.shape, jax.dtypes.float0)
    return dw, zero(row), zero(col), dval, zero(order)


_sparse_matmul.defvjp(_sparse_matmul_fwd, _sparse_matmul_bwd)


@flax.struct.dataclass
class EllFeatures:
    """A sparse matrix X [N, F] in a gather-only layout (built once on the host, `ell_features`),
    stored twice: by rows (for X @ w) and by columns (for the weight gradient X^T dz).

    rows: groups ((idx [R_g, W_g], val [R_g, W_g]), ...): the rows whose nonzero count is in
        (W_g / 2, W_g], W_g = 1, 2, 4, ...; each row's column ids and values, padded with val 0
        (ELL format per group, so padding wastes at most half; groups padded with empty rows);
    row_at [N]: where each row sits in the groups concatenated (empty rows: after the last, a
        zero row);
    cols, col_at [F]: the same for X^T (node ids per column).

    unroll (static): 1 = each group's sum over its width is a while loop (AdaFGL's wide w);
        u > 1 = the loop body holds u terms (fused into one pass over the accumulator) and groups
        wider than `ELL_PIECE` are cut into pieces of that width, summed after. FedAvg's first
        layer (H = 64) uses 4: its products are small, so a loop iteration's fixed cost dominated.

    `ell_matmul` computes X @ w and X^T dz with row gathers and dense adds only: XLA:CPU runs
    scatters (segment sums) element by element, and `SparseFeatures`' gather-then-segment-sum
    materialises [nnz, H]; for wide w (H in the hundreds) both dominated AdaFGL's rounds.
    """

    rows: tuple
    row_at: Array
    cols: tuple
    col_at: Array
    unroll: int = flax.struct.field(pytree_node=False, default=1)


def _ell_groups(seg: list, other: list, vals: list, num_segments: int):
    """Host: the (groups, at) of `EllFeatures` for entries (segment, other index, value) of K
    matrices (lists of 1-d arrays); shapes padded to the largest matrix."""
    per = []
    for sg, ot, v in zip(seg, other, vals):
        o = np.lexsort((ot, sg))
        sg, ot, v = sg[o], ot[o], v[o]
        cnt = np.bincount(sg, minlength=num_segments)
        pos = np.arange(len(sg)) - np.repeat(np.cumsum(cnt) - cnt, cnt)
        width = np.where(cnt > 0, 2 ** np.ceil(np.log2(np.maximum(cnt, 1))).astype(np.int64), 0)
        per.append((sg, ot, v, pos, width))
    widths = sorted({int(w) for p in per for w in np.unique(p[4]) if w > 0})
    size = {w: max(int((p[4] == w).sum()) for p in per) for w in widths}
    total = sum(size.values())
    k = len(per)
    groups = [(np.zeros((k, size[w], w), np.int32), np.zeros((k, size[w], w), np.float32)) for w in widths]
    at = np.full((k, num_segments), total, np.int32)
    for i, (sg, ot, v, pos, width) in enumerate(per):
        start = 0
        for (idx, val), w in zip(groups, widths):
            members = np.flatnonzero(width == w)                  # segments of this group, ascending
            slot = np.zeros(num_segments, np.int64)
            slot[members] = np.arange(len(members))
            at[i, members] = start + slot[members]
            e = width[sg] == w
            idx[i, slot[sg[e]], pos[e]], val[i, slot[sg[e]], pos[e]] = ot[e], v[e]
            start += size[w]
    return tuple(groups), at


def _merge_groups(groups: tuple, max_groups: int) -> tuple:
    """Host: at most `max_groups` groups, by padding runs of adjacent groups to the widest of each
    run (rows keep their order, so `at` is unchanged); the runs minimise the padded slots."""
    if len(groups) <= max_groups:
        return groups
    width = [g[0].shape[-1] for g in groups]
    rows = [g[0].shape[-2] for g in groups]
    n = len(groups)
    best = {}   # (i, g) -> (padded slots, run ends) of groups i.. in at most g runs

    def solve(i: int, g: int):
        if i == n:
            return 0, ()
        if g == 0:
            return np.inf, ()
        if (i, g) not in best:
            best[i, g] = min(((sum(rows[i:j]) * width[j - 1] + solve(j, g - 1)[0], (j,) + solve(j, g - 1)[1])
                              for j in range(i + 1, n + 1)), key=lambda t: t[0])
        return best[i, g]

    ends = solve(0, max_groups)[1]
    out, start = [], 0
    for end in ends:
        w = width[end - 1]
        pad = lambda a: np.pad(np.asarray(a), [(0, 0)] * (a.ndim - 1) + [(0, w - a.shape[-1])])
        out.append(tuple(np.concatenate([pad(groups[k][t]) for k in range(start, end)], axis=-2) for t in (0, 1)))
        start = end
    return tuple(out)


def ell_features(rows, cols, vals, num_rows: int, num_cols: int, max_groups: Optional[int] = None,
                 unroll: int = 1) -> EllFeatures:
    """Host side: EllFeatures of the COO entries of one matrix ([nnz]) or of several with a
    leading client axis ([C, nnz], shapes padded to the largest); entries with val 0 are dropped.
    max_groups: merge adjacent width groups (padding the narrower) down to this many per side:
    each group is a loop in every product, so fewer groups compile faster; unroll: see EllFeatures."""
    rows, cols, vals = (np.asarray(a) for a in (rows, cols, vals))
    batched = rows.ndim == 2
    if not batched:
        rows, cols, vals = rows[None], cols[None], vals[None]
    keep = [v != 0 for v in vals]
    r = [a[k].astype(np.int64) for a, k in zip(rows, keep)]
    c = [a[k].astype(np.int64) for a, k in zip(cols, keep)]
    v = [a[k].astype(np.float32) for a, k in zip(vals, keep)]
    row_groups, row_at = _ell_groups(r, c, v, num_rows)
    col_groups, col_at = _ell_groups(c, r, v, num_cols)
    if max_groups is not None:
        row_groups, col_groups = _merge_groups(row_groups, max_groups), _merge_groups(col_groups, max_groups)
    out = EllFeatures(rows=row_groups, row_at=row_at, cols=col_groups, col_at=col_at, unroll=unroll)
    return out if batched else jax.tree.map(lambda a: a[0], out)


# When EllFeatures.unroll > 1: groups wider than ELL_PIECE are cut into pieces of that width, and
# groups (or pieces) at most ELL_INLINE wide are summed without a loop.
ELL_PIECE = 32
ELL_INLINE = 4


def _ell_apply(groups: tuple, at: Array, w: Array, unroll: int = 1) -> Array:
    """sum_j val[r, j] w[idx[r, j]] for every grouped row r, put in place by `at` -> [len(at), H].

    unroll > 1: a group of width W > ELL_PIECE is viewed as rows of width ELL_PIECE (a row's
    pieces are adjacent, widths being powers of two), the loop runs over the piece width with
    `unroll` terms per iteration, and each row's pieces are added after.
    """
    parts = []
    for idx, val in groups:
        r, width = idx.shape
        k = width if unroll == 1 else min(width, ELL_PIECE)
        idx, val = idx.reshape(r * width // k, k), val.reshape(r * width // k, k)

        def add(j, acc, idx=idx, val=val):
            return acc + val[:, j, None] * w[idx[:, j]]
        acc = jnp.zeros((idx.shape[0], w.shape[-1]), w.dtype)
        if 1 < unroll and k <= ELL_INLINE:   # no loop at all: a loop costs compile time too
            for j in range(k):
                acc = add(j, acc)
        else:
            acc = jax.lax.fori_loop(0, k, add, acc, unroll=min(unroll, k))
        if k < width:
            acc = acc.reshape(r, width // k, -1)
            acc = functools.reduce(jnp.add, [acc[:, i] for i in range(width // k)])
        parts.append(acc)
    parts.append(jnp.zeros((1, w.shape[-1]), w.dtype))
    return jnp.concatenate(parts)[at]


@jax.custom_vjp
def ell_matmul(w: Array, x: EllFeatures) -> Array:
    """X @ w [N, H] for X in EllFeatures and w [F, H] (no [nnz, H] intermediate, no scatter);
    its VJP gives w's gradient X^T dz the same way, and no gradient for X (zero cotangents)."""
    return _ell_apply(x.rows, x.row_at, w, x.unroll)


def _ell_fwd(w, x):
    return _ell_apply(x.rows, x.row_at, w, x.unroll), x


def _ell_bwd(x, dz):
    zero = lambda a: (jnp.zeros_like(a) if jnp.issubdtype(a.dtype, jnp.floating)
                      else np.zeros(a.shape, jax.dtypes.float0))
    return _ell_apply(x.cols, x.col_at, dz, x.unroll), jax.tree.map(zero, x)


ell_matmul.defvjp(_ell_fwd, _ell_bwd)


def in_degree(receivers: Array, edge_mask: Array, num_nodes: int) -> Array:
    """Number of unmasked incoming edges per node, float [N]."""
    return jax.ops.segment_sum(edge_mask.astype(jnp.float32), receivers, num_segments=num_nodes)


def neighbour_sum(msg: Array, senders: Array, receivers: Array, edge_mask: Array, num_nodes: int,
                  layer: int = 0) -> Array:
    """sum over in-neighbours of msg [N, H] -> [N, H]: the default `aggregate` of GCN and SAGE layers.

    An aggregate function takes (msg, senders, receivers, edge_mask, num_nodes, layer) and returns
    the per-node sum of its in-neighbours' messages, as jraph's models take
    `aggregate_edges_for_nodes_fn`; HiFGL's secure sum and Lumos's tree sum plug in here. `layer`
    is the layer index (for per-layer keys).
    """
    del layer
    return jax.ops.segment_sum(msg[senders] * edge_mask.astype(msg.dtype)[:, None], receivers,
                               num_segments=num_nodes)


def gcn_propagate(h: Array, senders: Array, receivers: Array, edge_mask: Array, num_nodes: int,
                  aggregate=None, self_loop: bool = True, layer: int = 0) -> Array:
    """Symmetric-normalised propagation with self-loops: D^-1/2 (A + I) D^-1/2 h.

    h: [N, H]; deg counts the self-loop, so isolated and padded nodes keep h / 1.
    aggregate: a neighbour-sum function (see `neighbour_sum`); when given, the propagation is
    factored as d^-1/2 * aggregate(d^-1/2 h) [+ d^-1 h], so only the neighbour sum goes through it.
    self_loop=False: D^-1/2 A D^-1/2 h with degrees floored at 1 (HiFGL's Eq. 2/3 literally).

    Args:
        h: float `[N, H]`, the node states.
        senders: int32 `[E]` edge sources.
        receivers: int32 `[E]` edge targets (an edge u -> v carries h_u to v).
        edge_mask: bool `[E]`, the real edges (padded ones count nowhere).
        num_nodes: N (static).
        aggregate: a neighbour-sum function, or None for the plain segment sum.
        self_loop: add the self-loop (A + I), as above.
        layer: the layer index, passed to `aggregate`.

    Returns:
        float `[N, H]`, the propagated states.
    """
    if aggregate is not None or not self_loop:
        deg = in_degree(receivers, edge_mask, num_nodes)
        d_hat = deg + 1.0 if self_loop else jnp.maximum(deg, 1.0)
        inv_sqrt = jax.lax.rsqrt(d_hat)[:, None]
        msg = h * inv_sqrt
        out = (aggregate or neighbour_sum)(msg, senders, receivers, edge_mask, num_nodes, layer=layer) * inv_sqrt
        return out + msg * inv_sqrt if self_loop else out
    deg = in_degree(receivers, edge_mask, num_nodes) + 1.0
    inv_sqrt = jax.lax.rsqrt(deg)
    coef = edge_mask.astype(h.dtype) * inv_sqrt[senders] * inv_sqrt[receivers]
    agg = jax.ops.segment_sum(h[senders] * coef[:, None], receivers, num_segments=num_nodes)
    return agg + h * (1.0 / deg)[:, None]


def mean_aggregate(h: Array, senders: Array, receivers: Array, edge_mask: Array, num_nodes: int) -> Array:
    """Mean of in-neighbour features; nodes without neighbours get zeros. [N, H]."""
    m = edge_mask.astype(h.dtype)
    total = jax.ops.segment_sum(h[senders] * m[:, None], receivers, num_segments=num_nodes)
    deg = jax.ops.segment_sum(m, receivers, num_segments=num_nodes)
    return total / jnp.maximum(deg, 1.0)[:, None]


def segment_softmax(logits: Array, segment_ids: Array, mask: Array, num_segments: int) -> Array:
    """Softmax of logits [E, K] within each segment, masked entries get weight 0."""
    neg = jnp.finfo(logits.dtype).min
    masked = jnp.where(mask[:, None], logits, neg)
    seg_max = jax.ops.segment_max(masked, segment_ids, num_segments=num_segments)
    # stop_gradient: the max shift is a constant of the softmax; its gradient is zero anyway.
    shifted = masked - jax.lax.stop_gradient(seg_max)[segment_ids]
    ex = jnp.where(mask[:, None], jnp.exp(shifted), 0.0)
    denom = jax.ops.segment_sum(ex, segment_ids, num_segments=num_segments)
    return ex / jnp.maximum(denom[segment_ids], 1e-16)
