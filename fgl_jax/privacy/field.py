"""Arithmetic in the prime field F_p with int64 JAX arrays (HiFGL spec §5.2 item 1, §6 "field.py").

Representation
--------------
A field element is an integer in ``[0, p)`` stored as ``int64``.  The default modulus is the Mersenne prime
``p = 2**31 - 1``.  Every modulus is restricted to ``p <= 2**31 - 1`` so that

* a reduced element fits in int32 as well (so it survives being passed through a ``jax.jit`` that runs without
  x64, where int64 inputs are silently narrowed to int32), and
* the product of two reduced elements is ``<= (p - 1)**2 < 2**62``: it never overflows int64, and XLA has no
  128-bit multiply to fall back on.  Every multiply is therefore followed immediately by a reduction.

x64 scoping
-----------
JAX narrows int64 to int32 unless ``jax_enable_x64`` is on, and turning it on globally would make float64 the
default for the rest of the (float32) library.  Each public function here therefore enters the
``jax.enable_x64(True)`` context itself and calls an inner ``jax.jit``-compiled implementation.  The functions
stay pure and can be called eagerly, under an outer ``jax.jit`` (traced without x64) or under ``jax.vmap``; the
outputs are int64 arrays.  Do arithmetic on field elements only through these functions (ordinary ``jnp``
operations on them outside an x64 scope may narrow them to int32).

Reductions
----------
``reduction="mersenne"`` (the default, ``"auto"``, whenever ``p = 2**k - 1``) folds ``x = hi * 2**k + lo`` into
``hi + lo`` (valid because ``2**k == 1 (mod p)``), as often as needed for the statically known input bound, then
does one conditional subtraction.  ``reduction="mod"`` uses the integer remainder and works for every prime
(for example 11 or 13 in tests).  Both give identical results; the fold is faster on CPU.

Fixed point
-----------
``quantize(x) = round(x * 2**f) mod p`` (round half to even) and ``dequantize(r) = signed(r) * 2**-f`` with
``signed(r) = r - p if r > p // 2 else r``.  The representable signed range is ``[-(p-1)/2, (p-1)/2]``; sums of
quantised values stay exact as long as the *integer* sum stays in that range (wrap-around in between is
harmless because the arithmetic is modular).  ``check_range`` / ``overflow_flag`` guard this before encoding.
"""
from __future__ import annotations

import builtins
import dataclasses
import functools
from typing import Any, Literal

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

__all__ = [
    "MERSENNE_31",
    "MAX_MODULUS",
    "Field",
    "FieldOverflowError",
    "is_prime",
    "validate_modulus",
    "validate_frac_bits",
    "reduction_method",
    "reduce",
    "add",
    "sub",
    "neg",
    "mul",
    "pow",
    "inv",
    "quantize",
    "dequantize",
    "max_abs_value",
    "check_range",
    "overflow_flag",
    "x64",
]

MERSENNE_31: int = 2**31 - 1
"""Default modulus, the Mersenne prime 2^31 - 1."""

MAX_MODULUS: int = 2**31 - 1
"""Largest supported modulus: keeps products of reduced elements below 2^62 (no int64 overflow)."""

_INT64_MAX: int = 2**63 - 1

Reduction = Literal["auto", "mersenne", "mod"]


class FieldOverflowError(OverflowError):
    """A value is too large to be quantised and summed in F_p without wrapping around."""


# ---------------------------------------------------------------------------------------------------------
# Host-side parameter validation (pure Python integers).
# ---------------------------------------------------------------------------------------------------------

# The first 13 primes as Miller-Rabin bases make the test deterministic for every n < 3.3e24
# (Sorenson & Webster 2015); our moduli are < 2^31, far inside that range.
_MR_BASES: tuple[int, ...] = (2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41)


def is_prime(n: int) -> bool:
    """Deterministic Miller-Rabin primality test (exact for all n < 3,317,044,064,679,887,385,961,981;
    a strong-probable-prime test to 13 bases above that, far beyond any modulus used here).

    Args:
        n: a Python (or NumPy) integer. ``bool`` is rejected.

    Returns:
        True iff ``n`` is prime.
    """
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        raise TypeError(f"is_prime expects an integer, got {type(n).__name__} {n!r}")
    n = int(n)
    if n < 2:
        return False
    for q in _MR_BASES:
        if n % q == 0:
            return n == q
    # n - 1 = d * 2^s with d odd.
    d, s = n - 1, 0
    while d % 2 == 0:
        d //= 2
        s += 1
    for a in _MR_BASES:
        x = builtins.pow(a, d, n)  # the module defines its own `pow` (field power)
        if x in (1, n - 1):
            continue
        for _ in range(s - 1):
            x = x * x % n
            if x == n - 1:
                break
        else:
            return False  # a is a witness that n is composite
    return True


@functools.lru_cache(maxsize=None)
def _validate_modulus_cached(p: int) -> int:
    if p > MAX_MODULUS:
        raise ValueError(
            f"modulus p={p} is too large: p must be <= 2**31 - 1 = {MAX_MODULUS} so that products of two "
            f"reduced elements stay below 2**62 and fit in int64"
        )
    if not is_prime(p):
        raise ValueError(f"modulus p={p} is not prime; F_p arithmetic (inverses, LCC) needs a prime modulus")
    return p


def validate_modulus(p: Any) -> int:
    """Return ``p`` as a Python int after checking it is a prime with ``2 <= p <= 2**31 - 1``.

    Args:
        p: the candidate modulus.

    Returns:
        `p` as a Python int.

    Raises:
        ValueError: ``p`` is not an integer, not prime, or too large (the message names the value).
    """
    if isinstance(p, bool) or not isinstance(p, (int, np.integer)):
        raise ValueError(f"modulus p must be a Python integer, got {type(p).__name__} {p!r}")
    return _validate_modulus_cached(int(p))


def validate_frac_bits(frac_bits: Any, p: int = MERSENNE_31) -> int:
    """Return ``frac_bits`` after checking ``frac_bits >= 0`` and ``2**frac_bits < p / 2``.

    With ``2**frac_bits >= p / 2`` not even the value 1.0 would be representable in the signed range.

    Args:
        frac_bits: the candidate number of fractional bits.
        p: the modulus it is for (validated too).

    Returns:
        `frac_bits` as a Python int.

    Raises:
        ValueError: the value is not a non-negative integer or is too large for ``p`` (the message names both).
    """
    p = validate_modulus(p)
    if isinstance(frac_bits, bool) or not isinstance(frac_bits, (int, np.integer)):
        raise ValueError(f"frac_bits must be an integer, got {type(frac_bits).__name__} {frac_bits!r}")
    f = int(frac_bits)
    if f < 0:
        raise ValueError(f"frac_bits={f} must be >= 0")
    if 2 * 2**f >= p:  # 2^f < p/2, in integers
        raise ValueError(
            f"frac_bits={f} is too large for p={p}: need 2**frac_bits < p/2 "
            f"(largest allowed frac_bits is {(p - 1).bit_length() - 2})"
        )
    return f


def _mersenne_exponent(p: int) -> int | None:
    """k if p == 2**k - 1, else None."""
    k = (p + 1).bit_length() - 1
    return k if (1 << k) == p + 1 else None


def reduction_method(p: int, reduction: str = "auto") -> str:
    """Resolve ``reduction`` to ``"mersenne"`` or ``"mod"`` for modulus ``p`` (validates ``p``).

    ``"auto"`` picks the Mersenne fold when ``p = 2**k - 1`` and the integer remainder otherwise.

    Args:
        p: the modulus.
        reduction: "auto", "mersenne" or "mod".

    Returns:
        "mersenne" or "mod".

    Raises:
        ValueError: unknown ``reduction``, or ``"mersenne"`` requested for a non-Mersenne ``p``.
    """
    p = validate_modulus(p)
    if reduction == "auto":
        return "mersenne" if _mersenne_exponent(p) is not None else "mod"
    if reduction == "mersenne":
        if _mersenne_exponent(p) is None:
            raise ValueError(f"reduction='mersenne' needs p = 2**k - 1, got p={p}")
        return "mersenne"
    if reduction == "mod":
        return "mod"
    raise ValueError(f"reduction must be 'auto', 'mersenne' or 'mod', got {reduction!r}")


# ---------------------------------------------------------------------------------------------------------
# Traced implementations. They assume they run inside jax.enable_x64(True) and that p, method are static.
# ---------------------------------------------------------------------------------------------------------


def _as_i64(x: Any) -> jax.Array:
    """Cast to int64 inside the x64 scope.

    The public wrappers apply this (and :func:`_as_f64`) to their array arguments *before* calling the inner
    jitted function. Besides fixing the dtype, it makes eager ``jax.vmap`` over NumPy int64 inputs work: vmap,
    running outside x64, records an int32 type for such an input while still holding the int64 NumPy value,
    and the explicit cast (a no-op for arrays that already are int64) reconciles the two.
    """
    return jnp.asarray(x).astype(jnp.int64)


def _as_f64(x: Any) -> jax.Array:
    """Cast to float64 inside the x64 scope (see :func:`_as_i64`)."""
    return jnp.asarray(x).astype(jnp.float64)


def _reduce_impl(x: jax.Array, p: int, method: str, bound: int) -> jax.Array:
    """Reduce non-negative integers ``0 <= x < bound`` (int64, or uint64 for bound up to 2**64) into [0, p).

    ``bound`` is a static Python int, so the number of Mersenne folds is decided at trace time: each fold
    maps ``x < B`` to ``(x & p) + (x >> k) <= min(p, B-1) + ((B-1) >> k)``; we fold until the values are
    below ``2p``, then a single conditional subtraction finishes.
    """
    if bound <= p:
        return x
    if method == "mod":
        return lax.rem(x, jnp.asarray(p, x.dtype))  # x >= 0, so rem == mod
    k = _mersenne_exponent(p)
    assert k is not None
    pm = jnp.asarray(p, x.dtype)
    b = bound
    while b > 2 * p:
        x = (x & pm) + (x >> k)
        b = min(p, b - 1) + ((b - 1) >> k) + 1
    return jnp.where(x >= pm, x - pm, x)


def _add_impl(a: jax.Array, b: jax.Array, p: int) -> jax.Array:
    s = _as_i64(a) + _as_i64(b)  # < 2p: one conditional subtraction
    return jnp.where(s >= p, s - p, s)


def _sub_impl(a: jax.Array, b: jax.Array, p: int) -> jax.Array:
    d = _as_i64(a) - _as_i64(b)  # in (-p, p)
    return jnp.where(d < 0, d + p, d)


def _neg_impl(a: jax.Array, p: int) -> jax.Array:
    a = _as_i64(a)
    return jnp.where(a == 0, a, p - a)


def _mul_impl(a: jax.Array, b: jax.Array, p: int, method: str) -> jax.Array:
    # Both operands < p <= 2^31 - 1, so the product is <= (p-1)^2 < 2^62: exact in int64.
    return _reduce_impl(_as_i64(a) * _as_i64(b), p, method, (p - 1) ** 2 + 1)


def _pow_impl(a: jax.Array, e: int, p: int, method: str) -> jax.Array:
    """Right-to-left square-and-multiply for a static exponent, as a ``lax.scan`` over its bits.

    A scan keeps the compiled program small (an unrolled version with ~60 multiplies for e = p - 2 took most of
    the compile time of every function that inverts); the run-time cost is the same ~2 log2(e) multiplies.
    """
    a = _as_i64(a)
    if e == 0:
        return jnp.ones_like(a)  # convention 0^0 = 1
    bits = jnp.asarray([(e >> i) & 1 for i in range(e.bit_length())], dtype=bool)

    def step(carry: tuple[jax.Array, jax.Array], bit: jax.Array) -> tuple[tuple[jax.Array, jax.Array], None]:
        result, base = carry
        result = jnp.where(bit, _mul_impl(result, base, p, method), result)
        return (result, _mul_impl(base, base, p, method)), None

    (result, _), _ = lax.scan(step, (jnp.ones_like(a), a), bits)
    return result


def _inv_impl(a: jax.Array, p: int, method: str) -> jax.Array:
    # Fermat: a^(p-1) = 1 for a != 0, so a^(p-2) = a^-1. Maps 0 to 0 (0 has no inverse).
    return _pow_impl(a, p - 2, p, method)


def _quantize_impl(x: jax.Array, frac_bits: int, p: int) -> jax.Array:
    # Scaling by 2^f is exact in float64 (exponent shift) and round() is exact, so the only error is the
    # rounding itself, <= 2^-(f+1). Clip before the cast: casting an out-of-range float to int64 is undefined;
    # such values are garbage anyway and check_range rejects them.
    y = jnp.round(jnp.asarray(x).astype(jnp.float64) * (2.0**frac_bits))
    y = jnp.clip(y, -(2.0**62), 2.0**62)
    y = jnp.where(jnp.isnan(y), 0.0, y).astype(jnp.int64)
    if _mersenne_exponent(p) is None:
        return jnp.remainder(y, p)  # remainder has the sign of p: result in [0, p)
    # Mersenne p: reduce |y| <= 2^62 by folds (no int64 division, which XLA:CPU does element by
    # element) and negate in the field: y mod p = p - (|y| mod p) for y < 0
    a = _reduce_impl(jnp.abs(y), p, "mersenne", 2**62 + 1)
    return jnp.where((y < 0) & (a != 0), p - a, a)


def _dequantize_impl(r: jax.Array, frac_bits: int, p: int, dtype: Any) -> jax.Array:
    r = _as_i64(r)
    signed = jnp.where(r > p // 2, r - p, r)  # |signed| <= (p-1)/2 < 2^30: exact in float64
    return (signed.astype(jnp.float64) * (2.0**-frac_bits)).astype(dtype)


def _overflow_flag_impl(x: jax.Array, frac_bits: int, p: int, n_terms: int) -> jax.Array:
    x = jnp.asarray(x).astype(jnp.float64)
    half = (p - 1) // 2
    if x.size == 0:
        return jnp.asarray(False)
    a = jnp.abs(x)
    finite = jnp.all(jnp.isfinite(x))
    amax = jnp.max(jnp.where(jnp.isfinite(a), a, 0.0))
    # (1) the spec's criterion |x| * 2^f * n >= (p-1)/2. x * 2^f is exact; the product with n is rounded,
    # but rounding is monotone and (p-1)/2 is representable, so rounding can only make the guard trip
    # earlier (within one ulp of the bound), never let an overflow through.
    too_big = amax * (2.0**frac_bits) * n_terms >= half
    # (2) rounding can push a value just under the bound over it: n * |round(x 2^f)| > (p-1)/2.
    q = jnp.round(amax * (2.0**frac_bits))
    too_big_q = q * n_terms > half
    return jnp.logical_or(jnp.logical_not(finite), jnp.logical_or(too_big, too_big_q))


# Inner jitted versions (static p / method / shapes-derived parameters).
_reduce_jit = jax.jit(_reduce_impl, static_argnames=("p", "method", "bound"))
_add_jit = jax.jit(_add_impl, static_argnames=("p",))
_sub_jit = jax.jit(_sub_impl, static_argnames=("p",))
_neg_jit = jax.jit(_neg_impl, static_argnames=("p",))
_mul_jit = jax.jit(_mul_impl, static_argnames=("p", "method"))
_pow_jit = jax.jit(_pow_impl, static_argnames=("e", "p", "method"))
_inv_jit = jax.jit(_inv_impl, static_argnames=("p", "method"))
_quantize_jit = jax.jit(_quantize_impl, static_argnames=("frac_bits", "p"))
_dequantize_jit = jax.jit(_dequantize_impl, static_argnames=("frac_bits", "p", "dtype"))
_overflow_flag_jit = jax.jit(_overflow_flag_impl, static_argnames=("frac_bits", "p", "n_terms"))


def x64() -> Any:
    """The x64 context used by every public function here (``jax.enable_x64(True)``).

    Returns:
        The context manager ``jax.enable_x64(True)``.
    """
    return jax.enable_x64(True)


# ---------------------------------------------------------------------------------------------------------
# Public, jittable API.
# ---------------------------------------------------------------------------------------------------------


def reduce(x: Any, p: int = MERSENNE_31, *, bound: int = 2**63, reduction: Reduction = "auto") -> jax.Array:
    """Reduce non-negative integers into ``[0, p)``.

    Args:
        x: int array, shape ``[...]``, entries in ``[0, bound)``. Negative inputs are not supported.
        p: prime modulus (static).
        bound: static exclusive upper bound on ``x`` (<= 2**63 for int64); a tighter bound means fewer folds.
        reduction: ``"auto"`` | ``"mersenne"`` | ``"mod"``.

    Returns:
        int64 array ``[...]`` in ``[0, p)``.
    """
    method = reduction_method(p, reduction)
    if not 0 < bound <= 2**63:
        raise ValueError(f"bound={bound} must be in (0, 2**63] for int64 inputs")
    with x64():
        return _reduce_jit(_as_i64(x), p=p, method=method, bound=int(bound))


def add(a: Any, b: Any, p: int = MERSENNE_31) -> jax.Array:
    """(a + b) mod p for field elements in ``[0, p)``; shapes broadcast. Returns int64.

    Args:
        a: int array ``[...]`` of field elements.
        b: int array, broadcastable with `a`.
        p: the prime modulus (static), <= 2**31 - 1.

    Returns:
        int64 array of the broadcast shape, in ``[0, p)``.

    Raises:
        ValueError: `p` is not a prime <= 2**31 - 1.
    """
    validate_modulus(p)
    with x64():
        return _add_jit(_as_i64(a), _as_i64(b), p=p)


def sub(a: Any, b: Any, p: int = MERSENNE_31) -> jax.Array:
    """(a - b) mod p for field elements in ``[0, p)``; shapes broadcast. Returns int64.

    Args:
        a: int array ``[...]`` of field elements.
        b: int array, broadcastable with `a`.
        p: the prime modulus (static), <= 2**31 - 1.

    Returns:
        int64 array of the broadcast shape, in ``[0, p)``.

    Raises:
        ValueError: `p` is not a prime <= 2**31 - 1.
    """
    validate_modulus(p)
    with x64():
        return _sub_jit(_as_i64(a), _as_i64(b), p=p)


def neg(a: Any, p: int = MERSENNE_31) -> jax.Array:
    """(-a) mod p for field elements in ``[0, p)``. Returns int64 of the same shape.

    Args:
        a: int array ``[...]`` of field elements.
        p: the prime modulus (static), <= 2**31 - 1.

    Returns:
        int64 array ``[...]`` in ``[0, p)``.

    Raises:
        ValueError: `p` is not a prime <= 2**31 - 1.
    """
    validate_modulus(p)
    with x64():
        return _neg_jit(_as_i64(a), p=p)


def mul(a: Any, b: Any, p: int = MERSENNE_31, reduction: Reduction = "auto") -> jax.Array:
    """(a * b) mod p for field elements in ``[0, p)``; shapes broadcast. Returns int64.

    The raw product is < 2^62 and is reduced immediately (Mersenne fold or remainder).

    Args:
        a: int array ``[...]`` of field elements.
        b: int array, broadcastable with `a`.
        p: the prime modulus (static), <= 2**31 - 1.
        reduction: "auto" | "mersenne" | "mod" (the module docstring).

    Returns:
        int64 array of the broadcast shape, in ``[0, p)``.

    Raises:
        ValueError: `p` is not a prime <= 2**31 - 1, or an unusable `reduction`.
    """
    method = reduction_method(p, reduction)
    with x64():
        return _mul_jit(_as_i64(a), _as_i64(b), p=p, method=method)


def pow(a: Any, e: int, p: int = MERSENNE_31, reduction: Reduction = "auto") -> jax.Array:  # noqa: A001
    """a^e mod p elementwise, for a static non-negative Python-int exponent ``e`` (0^0 = 1). Returns int64.

    Args:
        a: int array ``[...]`` of field elements.
        e: the exponent, a non-negative Python int (static).
        p: the prime modulus (static), <= 2**31 - 1.
        reduction: "auto" | "mersenne" | "mod" (the module docstring).

    Returns:
        int64 array ``[...]`` in ``[0, p)``.

    Raises:
        ValueError: a negative or non-integer `e`, a bad `p` or an unusable `reduction`.
    """
    method = reduction_method(p, reduction)
    if isinstance(e, bool) or not isinstance(e, (int, np.integer)) or e < 0:
        raise ValueError(f"exponent e must be a non-negative Python integer, got {e!r}")
    with x64():
        return _pow_jit(_as_i64(a), e=int(e), p=p, method=method)


def inv(a: Any, p: int = MERSENNE_31, reduction: Reduction = "auto") -> jax.Array:
    """Multiplicative inverse a^(p-2) mod p (Fermat). Maps 0 to 0, which has no inverse. Returns int64.

    Args:
        a: int array ``[...]`` of field elements.
        p: the prime modulus (static), <= 2**31 - 1.
        reduction: "auto" | "mersenne" | "mod" (the module docstring).

    Returns:
        int64 array ``[...]`` in ``[0, p)``; 0 where `a` is 0.

    Raises:
        ValueError: `p` is not a prime <= 2**31 - 1, or an unusable `reduction`.
    """
    method = reduction_method(p, reduction)
    with x64():
        return _inv_jit(_as_i64(a), p=p, method=method)


def quantize(x: Any, frac_bits: int = 16, p: int = MERSENNE_31) -> jax.Array:
    """Signed fixed point: ``round(x * 2**frac_bits) mod p`` (round half to even).

    Args:
        x: float array ``[...]``. Call :func:`check_range` first: values out of range wrap silently here.
        frac_bits: number of fractional bits f (static), ``2**f < p/2``.
        p: prime modulus (static).

    Returns:
        int64 array ``[...]`` in ``[0, p)``.
    """
    f = validate_frac_bits(frac_bits, p)
    with x64():
        return _quantize_jit(_as_f64(x), frac_bits=f, p=p)


def dequantize(r: Any, frac_bits: int = 16, p: int = MERSENNE_31, dtype: Any = jnp.float32) -> jax.Array:
    """Inverse of :func:`quantize`: ``(r - p if r > p // 2 else r) * 2**-frac_bits``.

    Computed in float64 (exact) and cast to ``dtype`` (float32 by default, as in the rest of the library;
    pass ``jnp.float64`` to keep the exact value).

    Args:
        r: int array ``[...]`` of field elements in ``[0, p)``.
        frac_bits: number of fractional bits f (static), as `quantize` used.
        p: prime modulus (static).
        dtype: the result's float dtype.

    Returns:
        float array ``[...]`` of ``dtype``.
    """
    f = validate_frac_bits(frac_bits, p)
    with x64():
        return _dequantize_jit(_as_i64(r), frac_bits=f, p=p, dtype=jnp.dtype(dtype))


def max_abs_value(frac_bits: int = 16, p: int = MERSENNE_31, n_terms: int = 1) -> float:
    """The exclusive bound on |x| accepted by :func:`check_range`: ``(p-1)/2 / (2**f * n_terms)``.

    Args:
        frac_bits: the number of fractional bits f.
        p: the prime modulus.
        n_terms: the largest number of values added together, >= 1.

    Returns:
        The bound, a float.

    Raises:
        ValueError: invalid `frac_bits`, `p` or `n_terms`.
    """
    f = validate_frac_bits(frac_bits, p)
    n = _validate_n_terms(n_terms)
    return ((p - 1) // 2) / (2.0**f * n)


def _validate_n_terms(n_terms: Any) -> int:
    if isinstance(n_terms, bool) or not isinstance(n_terms, (int, np.integer)) or n_terms < 1:
        raise ValueError(f"n_terms must be a positive integer, got {n_terms!r}")
    return int(n_terms)


def check_range(x: Any, frac_bits: int = 16, p: int = MERSENNE_31, n_terms: int = 1) -> None:
    """Host-side overflow guard, to call before quantising and encoding.

    A sum of up to ``n_terms`` quantised values decodes exactly iff the integer sum stays within
    ``[-(p-1)/2, (p-1)/2]``. This raises when, for the largest |x|,

    * ``|x| * 2**f * n_terms >= (p-1)/2`` (the spec's criterion), or
    * ``n_terms * |round(x * 2**f)| > (p-1)/2`` (rounding pushed a value just under the bound over it), or
    * some value is NaN or infinite.

    If it does not raise, any sum of ``n_terms`` values whose magnitudes are at most ``max|x|`` decodes exactly.

    Args:
        x: float array ``[...]`` (converted to float64 NumPy on the host).
        frac_bits, p: the fixed-point format.
        n_terms: the largest number of values that will be added together (e.g. the maximum in-degree).

    Returns:
        None; returning at all means the values are safe.

    Raises:
        FieldOverflowError: naming how many and which entries are too big, the largest |x|, and the bound.
        ValueError: invalid ``frac_bits``, ``p`` or ``n_terms``.
    """
    f = validate_frac_bits(frac_bits, p)
    n = _validate_n_terms(n_terms)
    arr = np.asarray(x, dtype=np.float64)
    if arr.size == 0:
        return
    half = (p - 1) // 2
    bound = half / (2.0**f * n)
    a = np.abs(arr)
    nonfinite = ~np.isfinite(arr)
    with np.errstate(invalid="ignore", over="ignore"):
        bad = nonfinite | (a * (2.0**f) * n >= half) | (np.round(a * (2.0**f)) * n > half)
    if not bad.any():
        return
    idx = np.argwhere(bad)
    shown = ", ".join(
        f"x[{','.join(map(str, i))}]={float(arr[tuple(i)])!r}" for i in idx[:5]
    ) + (" ..." if len(idx) > 5 else "")
    finite_max = float(a[~nonfinite].max()) if (~nonfinite).any() else float("nan")
    raise FieldOverflowError(
        f"{len(idx)} of {arr.size} values cannot be quantised and summed without wrapping around in F_p: "
        f"{shown}. Largest finite |x| = {finite_max!r}; {int(nonfinite.sum())} non-finite. "
        f"Need |x| * 2**frac_bits * n_terms < (p-1)/2, i.e. |x| < {bound!r} "
        f"(p={p}, frac_bits={f}, n_terms={n}). Lower frac_bits, rescale the values, or use a larger p."
    )


def overflow_flag(x: Any, frac_bits: int = 16, p: int = MERSENNE_31, n_terms: int = 1) -> jax.Array:
    """Jittable twin of :func:`check_range`: a scalar bool, True iff ``check_range`` would raise.

    Args:
        x: float array ``[...]``.
        frac_bits, p, n_terms: static Python ints, as in :func:`check_range`.

    Returns:
        bool scalar array.
    """
    f = validate_frac_bits(frac_bits, p)
    n = _validate_n_terms(n_terms)
    with x64():
        return _overflow_flag_jit(_as_f64(x), frac_bits=f, p=p, n_terms=n)


# ---------------------------------------------------------------------------------------------------------
# Config object.
# ---------------------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Field:
    """A validated field / fixed-point configuration (hashable, so usable as a static jit argument).

    Attributes:
        p: prime modulus, ``<= 2**31 - 1``.
        frac_bits: fractional bits f of the signed fixed-point encoding, ``2**f < p/2``.
        reduction: ``"auto"`` | ``"mersenne"`` | ``"mod"``.
    """

    p: int = MERSENNE_31
    frac_bits: int = 16
    reduction: Reduction = "auto"

    def __post_init__(self) -> None:
        object.__setattr__(self, "p", validate_modulus(self.p))
        object.__setattr__(self, "frac_bits", validate_frac_bits(self.frac_bits, self.p))
        reduction_method(self.p, self.reduction)

    def mul(self, a: Any, b: Any) -> jax.Array:
        return mul(a, b, self.p, self.reduction)

    def add(self, a: Any, b: Any) -> jax.Array:
        return add(a, b, self.p)

    def sub(self, a: Any, b: Any) -> jax.Array:
        return sub(a, b, self.p)

    def inv(self, a: Any) -> jax.Array:
        return inv(a, self.p, self.reduction)

    def quantize(self, x: Any) -> jax.Array:
        return quantize(x, self.frac_bits, self.p)

    def dequantize(self, r: Any, dtype: Any = jnp.float32) -> jax.Array:
        return dequantize(r, self.frac_bits, self.p, dtype)

    def max_abs_value(self, n_terms: int = 1) -> float:
        return max_abs_value(self.frac_bits, self.p, n_terms)

    def check_range(self, x: Any, n_terms: int = 1) -> None:
        check_range(x, self.frac_bits, self.p, n_terms)

    def overflow_flag(self, x: Any, n_terms: int = 1) -> jax.Array:
        return overflow_flag(x, self.frac_bits, self.p, n_terms)
