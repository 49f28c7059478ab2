"""Small pieces the algorithm modules share (not an algorithm: the registry skips `_` modules)."""
from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from fgl_jax.federated.algorithm import FedData

PyTree = Any


def stack(tree: PyTree, n: int) -> PyTree:
    """tree with a leading client axis of size n (broadcast copies)."""
    return jax.tree.map(lambda a: jnp.broadcast_to(a, (n,) + a.shape), tree)


def init_params(model, key: jax.Array, data: FedData) -> PyTree:
    """The model's parameters, initialised on client 0's padded graph (shapes are shared)."""
    one = jax.tree.map(lambda a: a[0], data.eval)
    return model.init({"params": key, "dropout": key}, one, train=False)


def weighted_loss(losses: jax.Array, weight: jax.Array) -> jax.Array:
    """The training-node weighted mean of per-client losses [C_t]."""
    return (losses * weight).sum() / jnp.maximum(weight.sum(), 1e-12)


def tree_sq(a: PyTree, b: PyTree) -> jax.Array:
    """sum ||a - b||^2 over every leaf."""
    return sum(jnp.sum((x - y) ** 2) for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b)))


def tree_dot(a: PyTree, b: PyTree) -> jax.Array:
    """sum <a, b> over every leaf."""
    return sum(jnp.sum(x * y) for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b)))


def scatter_clients(full: PyTree, index: jax.Array, part: PyTree) -> PyTree:
    """full [C, ...] with rows `index` replaced by part [C_t, ...]."""
    return jax.tree.map(lambda f, p: f.at[index].set(p), full, part)
