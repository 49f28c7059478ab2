"""Reductions over the leading client axis of stacked pytrees ([C, ...] leaves).

A leaf module (jax only) so the server side of every algorithm, the privacy layer and the systems
can share it without importing the federated package.
"""
from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

PyTree = Any


def client_mean(tree: PyTree) -> PyTree:
    """The plain mean over the leading client axis: the clients summed in order, times 1/C, rounded
    on its own (tests/test_alg_scaffold.py checks it bit for bit against NumPy). For SCAFFOLD's
    [10, 3703, 64] leaves these are the floats `mean(0)` gave (checked on CiteSeer, jax 0.10.2);
    XLA's other reduce paths may sum in another order.

    Model-sized leaves are summed client by client in a loop: XLA:CPU (jax 0.10.2) turns a reduce
    over the leading axis of a [10, 3703, 64] array into a YNNPACK fusion that is many times slower
    than the loop (SCAFFOLD on CiteSeer: benchmarks/bench_round_speed.py). Small leaves keep `mean(0)`.
    """
    def one(x):
        n = x.shape[0]
        if x[0].size < 4096 or n == 1:
            return x.mean(0)
        inv = jnp.asarray(1.0 / n, x.dtype)
        # the 1/C product is taken inside the loop's last step: outside, XLA:CPU fuses it with the
        # consumer's add into an FMA (other last bits than mean(0)'s separately rounded product)
        return jax.lax.fori_loop(1, n, lambda i, acc: jnp.where(i == n - 1, (acc + x[i]) * inv, acc + x[i]), x[0])

    return jax.tree.map(one, tree)
