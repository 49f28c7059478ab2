"""The mean computed through secure aggregation (`fgl_jax.privacy.secure_sum`): the server learns the
sum of the surviving clients' fixed-point encoded updates and nothing else about any one of them.

    secure_mean(weighting, threshold, dropout, frac_bits)     reduce [C, ...] -> [...]

Client i encodes v_i = (w_i / W) (upload_i - params) (W = the round's total weight; params None:
the upload itself) with `frac_bits` fractional bits in GF(p), masks it, and the server unmasks the
sum over the survivors U and rescales by W / W_U (weights are public, as FedAvg's node counts are):

    secure_mean = params + (W / W_U) dequantize(sum_{i in U} quantize(v_i))

so without drop-outs it differs from the plain weighted mean by the rounding of the encoding only:
at most C 2^-(frac_bits+1) per coordinate (plus float32 rounding of the float arithmetic around it).
Drop-outs: floor(dropout C) clients, drawn uniformly from the stage's key each round, and every
client outside `mask`, set up but never send their masked vector; their dangling masks are removed
from the survivors' Shamir shares. A round whose encoded values could leave the field's signed range
(`field.overflow_flag` with C terms) or with fewer than `threshold` survivors aggregates to NaN: the
run stops as diverged rather than continue from a wrong sum.
"""
from __future__ import annotations

from typing import Any, Optional

import jax
import jax.numpy as jnp

from fgl_jax.aggregators.base import Aggregator, stateless
from fgl_jax.aggregators.mean import WEIGHTINGS
from fgl_jax.privacy import field as F
from fgl_jax.privacy import secure_sum as S

PyTree = Any


def secure_mean(weighting: str = "weights", threshold: Optional[int] = None, dropout: float = 0.0,
                frac_bits: int = 20, self_mask: bool = True, p: int = F.MERSENNE_31) -> Aggregator:
    """Reduce `[C, ...]` -> `[...]`: the weighted or uniform mean through the secure sum (see the
    module docstring).

    Args:
        weighting: "weights" (each client's aggregation weight) or "uniform".
        threshold: the Shamir threshold t (None: a majority of the round's C clients).
        dropout: the fraction of the round's clients that drop out after the setup, in [0, 1).
        frac_bits: the fixed-point encoding's fractional bits.
        self_mask: whether each client adds a self-mask (Bonawitz et al.'s double masking).
        p: the field's prime.

    Returns:
        An `Aggregator` of kind "reduce"; a round whose sum could overflow the field, or with fewer
        than t survivors, aggregates to NaN (the run stops as diverged).

    Raises:
        ValueError: an unknown weighting, a dropout outside [0, 1) or frac_bits the field cannot hold.
    """
    if weighting not in WEIGHTINGS:
        raise ValueError(f"secure_mean: weighting must be one of {WEIGHTINGS}, got {weighting!r}")
    if not 0.0 <= dropout < 1.0:
        raise ValueError(f"secure_mean: dropout must be in [0, 1), got {dropout}")
    F.validate_frac_bits(frac_bits, p)

    def fn(updates: PyTree, weights: jax.Array, key: jax.Array, *, params: Optional[PyTree] = None,
           mask: Optional[jax.Array] = None):
        leaves, treedef = jax.tree.flatten(updates)
        c = leaves[0].shape[0]
        t = threshold if threshold else S.majority(c)
        k = S.dropped_count(c, dropout)
        S.check_threshold(c, t, k)  # static: refused while tracing, in one line
        k_drop, k_sum = jax.random.split(key)
        dropped = jnp.zeros((c,), bool).at[jax.random.permutation(k_drop, c)[:k]].set(True)
        w = weights.astype(jnp.float32) if weighting == "weights" else jnp.ones((c,), jnp.float32)
        if mask is not None:
            dropped = dropped | ~mask
            w = w * mask
        total_w = jnp.maximum(w.sum(), 1e-12)
        base = [None] * len(leaves) if params is None else jax.tree.leaves(params)
        flat = jnp.concatenate([(x if b is None else x - b[None]).reshape(c, -1).astype(jnp.float32)
                                for x, b in zip(leaves, base)], axis=1)                     # [C, D]
        v = flat * (w / total_w)[:, None]
        with F.x64():
            overflow = F.overflow_flag(v, frac_bits, p, n_terms=c)
            summed, ok = S.secure_sum(F.quantize(v, frac_bits, p), dropped, k_sum, t, p, self_mask)
            decoded = F.dequantize(summed, frac_bits, p, jnp.float64)
            survivors_w = jnp.where(dropped, 0.0, w).sum().astype(jnp.float64)
            mean = (decoded * (total_w.astype(jnp.float64) / jnp.maximum(survivors_w, 1e-12))).astype(jnp.float32)
        mean = jnp.where(overflow | ~ok, jnp.nan, mean)
        out, start = [], 0
        for x, b in zip(leaves, base):
            size = x[0].size
            m = mean[start:start + size].reshape(x.shape[1:]).astype(x.dtype)
            out.append(m if b is None else b + m)
            start += size
        return jax.tree.unflatten(treedef, out)

    return stateless(fn, "reduce")
