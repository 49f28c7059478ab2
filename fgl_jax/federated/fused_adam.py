"""Adam over one large array stored packed with its two moments, updated in one pass.

`optax.adam` (chained after `optax.add_decayed_weights`) keeps the parameters and the two moments
in separate arrays, and XLA:CPU emits one loop per output: the first moment (reads gradient,
parameters, moment), the second (the same three again) and the parameters (parameters and both
new moments), so a large weight matrix is streamed from memory about 13 times per step. Packed as
[..., 3, D] (parameters, first moment, second moment side by side in each row), the whole step is
one elementwise loop with one output: it reads the gradient and the packed array once and writes
the packed array once (about 7 streams).

The arithmetic is optax's own (`optax.tree.update_moment`, `update_moment_per_elem_norm`,
`bias_correction`, the same order of operations), so results equal
`optax.chain(optax.add_decayed_weights(wd), optax.adam(lr, b1, b2, eps))` up to XLA's choice of
float contraction inside the fused loop.

    packed = pack(w)                                  # [..., D] -> [..., 3, D]
    w = params(packed)                                # the parameters, [..., D]
    packed, count = update(packed, grad, count, lr=1e-2, weight_decay=5e-4)

Small parameters gain nothing from this; use optax for them.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
import optax

Array = jax.Array


def pack(params: Array) -> Array:
    """[..., D] parameters -> [..., 3, D]: parameters, zero first moment, zero second moment."""
    z = jnp.zeros_like(params)
    return jnp.stack([params, z, z], axis=-2)


def params(packed: Array) -> Array:
    """The parameters [..., D] of a packed [..., 3, D] array."""
    return packed[..., 0, :]


def moments(packed: Array) -> tuple[Array, Array]:
    """The first and second moments [..., D] of a packed [..., 3, D] array."""
    return packed[..., 1, :], packed[..., 2, :]


def init_count() -> Array:
    """The step count an update starts from (int32 scalar, as optax's ScaleByAdamState.count)."""
    return jnp.zeros([], jnp.int32)


def update(packed: Array, grad: Array, count: Array, *, lr: float, b1: float = 0.9, b2: float = 0.999,
           eps: float = 1e-8, eps_root: float = 0.0, weight_decay: float = 0.0) -> tuple[Array, Array]:
    """One Adam step (L2 `weight_decay` added to the gradient first, as optax.add_decayed_weights):
    packed [..., 3, D], grad [..., D], count int32 scalar (steps done) -> (packed, count + 1).
    The three new rows are concatenated, so XLA emits one loop that writes the packed array."""
    p, mu, nu = packed[..., 0, :], packed[..., 1, :], packed[..., 2, :]
    g = grad + weight_decay * p if weight_decay else grad
    mu = optax.tree.update_moment(g, mu, b1, 1)
    nu = optax.tree.update_moment_per_elem_norm(g, nu, b2, 2)
    count = optax.safe_increment(count)
    mu_hat = optax.tree.bias_correction(mu, b1, count)
    nu_hat = optax.tree.bias_correction(nu, b2, count)
    step = mu_hat / (jnp.sqrt(nu_hat + eps_root) + eps)
    new_p = p + (-lr) * step
    return jnp.stack([new_p, mu, nu], axis=-2), count
