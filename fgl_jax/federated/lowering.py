"""Lowering choices for fgl_jax's programs that change how fast XLA:CPU compiles and runs them,
never a number they compute.

The Threefry hash (every `jax.random` call: dropout masks, key splits, parameter init) is lowered on
CPU by jax as a rolled five-iteration loop whose rotation amounts are loop-carried. XLA:CPU compiles
that loop's body slowly and runs it slowly: one vmapped Bernoulli mask of 10 x 304 x 64 cost 0.68 s
of compile CPU and 1.1 ms per call rolled, 0.07 s and 0.26 ms unrolled (the lowering jax itself uses
on GPU); FedAvg-GCN's chunk program on Cora compiles ~0.8 s of CPU faster. Both lowerings compute
the same 32-bit integer hash, so every random bit, and every metric, is unchanged
(tests/test_lowering.py compares them bit for bit).
"""
from __future__ import annotations

_DONE = [False]


def unrolled_threefry() -> bool:
    """Lower `threefry2x32` on CPU unrolled (idempotent); False when this jax has no such rule
    (its internals moved), leaving jax's default in place."""
    if _DONE[0]:
        return True
    try:
        from jax._src.interpreters import mlir
        from jax._src.random import threefry2x32 as threefry
        rule, primitive = threefry._threefry2x32_lowering_rule, threefry.threefry2x32_p
    except (ImportError, AttributeError):  # pragma: no cover - jax internals moved
        return False
    mlir.register_lowering(primitive, rule, platform="cpu")
    _DONE[0] = True
    return True
