"""The server's aggregation of per-class client gradients (FedGC Eq. 3): n_j(c)/n(c) or the code's
plain mean over the clients holding class c. Below both the client blocks and the server step."""
from __future__ import annotations

import jax
import jax.numpy as jnp

Array = jax.Array
Params = dict
AGGREGATIONS = ("weighted", "uniform")


def aggregate(grads: Params, counts: Array, mode: str = "weighted") -> Params:
    """∇_θ L^G_c = Σ_j w_jc g_jc (Eq. 3). grads leaves [M, C, ...]; counts n_j(c) [M, C].

    weighted: w_jc = n_j(c) / n(c); uniform: w_jc = 1/|{j : n_j(c) > 0}| over holders of c.
    """
    w = aggregation_weights(counts, mode)
    return jax.tree.map(lambda g: jnp.einsum("mc,mc...->c...", w, g), grads)


def aggregation_weights(counts: Array, mode: str = "weighted") -> Array:
    """w_jc [M, C]: n_j(c)/n(c) ("weighted", Eq. 3) or 1/|{j : n_j(c) > 0}| ("uniform", code)."""
    counts = jnp.asarray(counts, jnp.float32)
    if mode == "weighted":
        return counts / jnp.maximum(counts.sum(0, keepdims=True), 1.0)
    if mode == "uniform":
        has = (counts > 0).astype(jnp.float32)
        return has / jnp.maximum(has.sum(0, keepdims=True), 1.0)
    raise ValueError(f"agg must be one of {AGGREGATIONS}, got {mode!r}")
