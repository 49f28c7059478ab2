"""Lowering choices for fgl_jax's programs that change how fast XLA:CPU compiles and runs them,
never a number they compute.

The Threefry hash (every `jax.random` call: dropout masks, key splits, parameter init) is lowered on
CPU by jax as a rolled five-iteration loop whose rotation amounts are loop-carried. XLA:CPU compiles
that loop's body slowly and runs it slowly; the unrolled loop (the lowering jax itself uses on GPU)
compiles and runs a dropout mask several times faster (benchmarks/bench_round_speed.py). Both lowerings compute
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
