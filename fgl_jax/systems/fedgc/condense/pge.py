"""Structure generator ("PGE", FedGC Eq. 16, GCond): A' = MLP_Φ over all ordered pairs of X' rows.

    E_ij = MLP_Φ([x'_i ‖ x'_j]),   A'_ij = σ((E_ij + E_ji) / 2),   A'_ii = 0.

MLP_Φ = Linear(2d→h) – BN – ReLU – Linear(h→h) – BN – ReLU – Linear(h→1) (3 layers, spec §2.1).
BatchNorm ALWAYS uses the batch statistics of the N'² pairs (the reference never puts the PGE in
eval mode, not even at inference), so there are no running statistics to carry.

The first layer on a concatenation splits as [x_i ‖ x_j] W = x_i W_a + x_j W_b: two [N', h]
products plus a broadcast sum instead of an [N'², 2d] x [2d, h] product (2d = 2,866 on Cora).
"""
from __future__ import annotations

from typing import Dict

import jax
import jax.numpy as jnp

Array = jax.Array
Params = Dict[str, Array]
BN_EPS = 1e-5  # torch.nn.BatchNorm1d default


def init_pge(key: Array, in_dim: int, hidden: int = 128, num_layers: int = 3, dtype=jnp.float32) -> Params:
    """Φ: torch-default Linear init (U(±1/sqrt(fan_in))), BN scale 1 / shift 0."""
    if num_layers < 2:
        raise ValueError(f"PGE num_layers must be >= 2, got {num_layers}")
    if in_dim <= 0 or hidden <= 0:
        raise ValueError(f"PGE in_dim and hidden must be positive, got {in_dim}, {hidden}")
    keys = jax.random.split(key, 2 * num_layers)
    params: Params = {}
    dims = [2 * in_dim] + [hidden] * (num_layers - 1) + [1]
    for i in range(num_layers):
        s = 1.0 / jnp.sqrt(dims[i])
        params[f"w{i}"] = jax.random.uniform(keys[2 * i], (dims[i], dims[i + 1]), dtype, -s, s)
        params[f"b{i}"] = jax.random.uniform(keys[2 * i + 1], (dims[i + 1],), dtype, -s, s)
        if i < num_layers - 1:
            params[f"bn_scale{i}"] = jnp.ones((dims[i + 1],), dtype)
            params[f"bn_shift{i}"] = jnp.zeros((dims[i + 1],), dtype)
    return params


def _batch_norm(h: Array, scale: Array, shift: Array) -> Array:
    # torch BatchNorm1d in train mode: biased variance over the batch.
    mean = h.mean(axis=0)
    var = jnp.mean(jnp.square(h - mean), axis=0)
    return (h - mean) * jax.lax.rsqrt(var + BN_EPS) * scale + shift


def pair_logits(params: Params, x: Array) -> Array:
    """E [N', N'] with E_ij = MLP_Φ([x_i ‖ x_j]) over all ordered pairs (BN over the N'² pairs)."""
    n, d = x.shape
    num_layers = sum(1 for k in params if k.startswith("w"))
    w0 = params["w0"]
    u, v = x @ w0[:d], x @ w0[d:]
    h = (u[:, None, :] + v[None, :, :] + params["b0"]).reshape(n * n, -1)
    for i in range(num_layers):
        if i > 0:
            h = h @ params[f"w{i}"] + params[f"b{i}"]
        if i < num_layers - 1:
            h = jax.nn.relu(_batch_norm(h, params[f"bn_scale{i}"], params[f"bn_shift{i}"]))
    return h.reshape(n, n)


def pge_adjacency(params: Params, x: Array) -> Array:
    """A' [N', N'] = σ((E + Eᵀ)/2) with a zero diagonal: symmetric, entries in (0, 1) off the diagonal."""
    e = pair_logits(params, x)
    a = jax.nn.sigmoid(0.5 * (e + e.T))
    return a * (1.0 - jnp.eye(x.shape[0], dtype=a.dtype))
