"""The mean over the client axis: FedAvg's weighted mean, or the uniform mean (DP-FedAvg's).

Shapes: C clients; `[C, ...]` a leaf with a leading client axis.
"""
from __future__ import annotations

from typing import Any, Optional

import jax
import jax.numpy as jnp

from fgl_jax.aggregators.base import Aggregator, stateless
from fgl_jax.reduce import client_mean

PyTree = Any
WEIGHTINGS = ("weights", "uniform")


def weighted_mean(tree: PyTree, weight: jax.Array) -> PyTree:
    """sum_c w_c x_c / sum_c w_c over the leading client axis.

    Args:
        tree: a pytree of `[C, ...]` leaves (C clients).
        weight: float `[C]`, each client's weight; a zero weight drops the client. All zeros give zeros
            (the sum is floored at 1e-12, not divided by zero).

    Returns:
        The pytree of `[...]` leaves, the weighted mean over the client axis.
    """
    w = weight / jnp.maximum(weight.sum(), 1e-12)
    return jax.tree.map(lambda x: jnp.tensordot(w, x, axes=1), tree)


def mean(weighting: str = "weights") -> Aggregator:
    """Reduce [C, ...] -> [...]: the mean weighted by `weights` ("weights", FedAvg's), or the plain
    mean over the clients ("uniform": every client counts once, whatever its data; DP-FedAvg's, whose
    sensitivity bound needs it). Clients outside `mask` count for nothing.

    Args:
        weighting: "weights" (the mean weighted by the `weights` passed to `aggregate`) or "uniform".

    Returns:
        A stateless `Aggregator` of kind "reduce".

    Raises:
        ValueError: `weighting` is not one of `WEIGHTINGS`.
    """
    if weighting not in WEIGHTINGS:
        raise ValueError(f"mean: weighting must be one of {WEIGHTINGS}, got {weighting!r}")

    def fn(updates: PyTree, weights: jax.Array, key, *, params=None, mask: Optional[jax.Array] = None):
        if weighting == "weights":
            return weighted_mean(updates, weights if mask is None else weights * mask)
        if mask is None:
            return client_mean(updates)  # mean(0), summed as SCAFFOLD's tests expect bit for bit
        return weighted_mean(updates, mask.astype(jnp.float32))

    return stateless(fn, "reduce")
