"""Lagrange coded computing (Yu et al. 2019) as used by HiFGL's SecMP (spec §2.2, §3 Lemma 5.1, §5.2).

Notation (0-based indices here; the spec is 1-based). ``T >= 1`` is the privacy threshold; ``n = T + 1``.

* ``alphas[0..T]`` (evaluation points) and ``betas[0..T]`` (interpolation points) are ``2T + 2`` distinct
  non-zero field elements (:class:`LCCParams`, one set per silo, fixed for the run).
* Encoding of a data vector ``x`` with masks ``z[0..T-1]`` (fresh per message, spec §5.2 item 5): ``g`` is the
  degree-``T`` polynomial with ``g(betas[0]) = x`` and ``g(betas[i]) = z[i-1]``; the shares are
  ``g(alphas[j])``. In matrix form ``share_j = x U[0, j] + sum_i z[i] U[i+1, j]`` with
  ``U[i, j] = prod_{k != i} (alphas[j] - betas[k]) / (betas[i] - betas[k])`` (Eq. 5; ``U[i, j] = L_i(alphas[j])``).
* Decoding interpolates through ``(alphas[k], S_k)`` and evaluates at ``betas[0]``:
  ``sum_k S_k lam[k]`` with ``lam[k] = prod_{l != k} (betas[0] - alphas[l]) / (alphas[k] - alphas[l])``.
* Everything is linear, so sums of shares (per share index) and linear maps of shares decode to the sum / the
  linear map of the data (additive homomorphism, used by SecMP's aggregation).
* T-privacy (Lemma 5.1): for any ``T`` shares the ``T x T`` block of ``U`` on the mask rows is invertible, so
  with uniform masks those ``T`` shares are uniform and independent of ``x``.

All field functions take a static prime ``p`` (default ``2**31 - 1``), run inside their own
``jax.enable_x64(True)`` scope (see :mod:`fgl_jax.privacy.field`) and are pure and jittable; they broadcast over
leading dimensions and can be ``jax.vmap``-ed over edges (e.g. with a per-edge ``U`` gathered from the target's
silo). A float64 "real-LCC" variant with the same formulas over the reals (no privacy, for speed comparisons) is
provided by :func:`sample_mu_real`, :func:`sample_masks_real`, :func:`encode_real`, :func:`decode_real`;
:func:`encode_matrix` and :func:`decode_coeffs` dispatch on ``params.p is None``. Note that an outer ``jax.jit``
traced without x64 narrows float64 *arguments* to float32 at its boundary (values computed inside stay float64).
"""
from __future__ import annotations

import dataclasses
import functools
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from fgl_jax.privacy import field as F
from fgl_jax.privacy.field import MERSENNE_31, Reduction

_INT64_MAX = 2**63 - 1

__all__ = [
    "LCCParams",
    "MASK_GENERATOR",
    "sample_mu",
    "sample_mu_real",
    "check_params",
    "encode_matrix",
    "decode_coeffs",
    "sample_masks",
    "sample_masks_real",
    "encode",
    "encode_real",
    "decode",
    "decode_real",
    "field_segment_sum",
    "segment_sum_real",
    "max_segment_terms",
]


@functools.partial(jax.tree_util.register_dataclass, data_fields=["alphas", "betas"], meta_fields=["p"])
@dataclasses.dataclass(frozen=True)
class LCCParams:
    """Encoding/decoding points of one silo (a pytree; ``p`` is static metadata).

    Attributes:
        alphas: ``[T+1]`` evaluation points (int64 field elements, or float64 in real mode).
        betas: ``[T+1]`` interpolation points; ``betas[0]`` carries the data.
        p: the prime modulus, or ``None`` for the float64 real-LCC mode.
    """

    alphas: jax.Array
    betas: jax.Array
    p: int | None = MERSENNE_31

    @property
    def T(self) -> int:  # noqa: N802 (paper notation)
        """Privacy threshold (static, from the shape)."""
        return int(self.alphas.shape[-1]) - 1


# ---------------------------------------------------------------------------------------------------------
# Parameter sampling.
# ---------------------------------------------------------------------------------------------------------


def _validate_T(T: Any, p: int | None) -> int:  # noqa: N802
    if isinstance(T, bool) or not isinstance(T, (int, np.integer)):
        raise ValueError(f"T must be a positive integer, got {type(T).__name__} {T!r}")
    T = int(T)
    if T < 1:
        raise ValueError(f"T={T} must be >= 1 (T is the privacy threshold: the number of colluding shares)")
    if p is not None and 2 * T + 2 >= p:
        raise ValueError(
            f"T too large for the field: T={T} needs 2T+2={2 * T + 2} distinct non-zero elements but F_p with "
            f"p={p} has only {p - 1}"
        )
    return T


# How to draw n distinct non-zero elements: with at most _PERMUTATION_LIMIT candidates, a random permutation
# of all of them (exact, cheap). Otherwise rejection sampling while it is efficient: with n(n-1)/2 <= p-1
# expected colliding pairs <= 1, so a draw is accepted with probability >= ~1/e. Beyond that, a permutation
# again if it fits in memory (up to 2^22 candidates), else refuse.
_PERMUTATION_LIMIT = 1 << 16
_PERMUTATION_MAX = 1 << 22


def _mu_strategy(n: int, p: int) -> str:
    if p - 1 <= _PERMUTATION_LIMIT:
        return "permutation"
    if n * (n - 1) <= 2 * (p - 1):
        return "rejection"
    if p - 1 <= _PERMUTATION_MAX:
        return "permutation"
    raise ValueError(
        f"T too large for the field to sample efficiently: 2T+2={n} distinct points from p-1={p - 1} candidates"
    )


def _sample_distinct_nonzero(key: jax.Array, n: int, p: int) -> jax.Array:
    """n distinct elements of {1..p-1}, (near-)uniform over ordered n-tuples. int64 [n]. Runs in x64."""
    if _mu_strategy(n, p) == "permutation":
        return jax.random.permutation(key, p - 1)[:n].astype(jnp.int64) + 1

    def draw(k: jax.Array) -> jax.Array:
        return _uniform_below(k, (n,), p - 1) + 1

    def has_dup(v: jax.Array) -> jax.Array:
        s = jnp.sort(v)
        return jnp.any(s[1:] == s[:-1])

    def body(state: tuple[jax.Array, jax.Array]) -> tuple[jax.Array, jax.Array]:
        k, _ = state
        k, sub = jax.random.split(k)
        return k, draw(sub)

    k0, sub0 = jax.random.split(key)
    _, vals = jax.lax.while_loop(lambda s: has_dup(s[1]), body, (k0, draw(sub0)))
    return vals


@functools.partial(jax.jit, static_argnames=("T", "p"))
def _sample_mu_jit(key: jax.Array, T: int, p: int) -> LCCParams:  # noqa: N803
    v = _sample_distinct_nonzero(key, 2 * T + 2, p)
    return LCCParams(alphas=v[: T + 1], betas=v[T + 1 :], p=p)


def sample_mu(key: jax.Array, T: int = 1, p: int = MERSENNE_31) -> LCCParams:  # noqa: N803
    """Sample a silo's points: ``2T + 2`` distinct non-zero elements of F_p, split into alphas and betas.

    Args:
        key: PRNG key (can be vmapped over silos).
        T: privacy threshold, static, ``T >= 1`` and ``2T + 2 < p``.
        p: prime modulus, static.

    Returns:
        :class:`LCCParams` with int64 ``alphas [T+1]`` and ``betas [T+1]``.

    Raises:
        ValueError: ``T < 1``, "T too large for the field", or ``p`` not a valid prime.
    """
    F.validate_modulus(p)
    T = _validate_T(T, p)
    _mu_strategy(2 * T + 2, p)
    with F.x64():
        return _sample_mu_jit(key, T=T, p=p)


@functools.partial(jax.jit, static_argnames=("T",))
def _sample_mu_real_jit(key: jax.Array, T: int) -> LCCParams:  # noqa: N803
    n = 2 * T + 2
    # Chebyshev nodes on [-1, 1], randomly assigned: distinct, well separated, so the Lagrange matrices are
    # well conditioned and the float64 round trip is accurate to ~1e-13.
    nodes = jnp.cos(jnp.pi * (2 * jnp.arange(n, dtype=jnp.float64) + 1) / (2 * n))
    v = jax.random.permutation(key, nodes)
    return LCCParams(alphas=v[: T + 1], betas=v[T + 1 :], p=None)


def sample_mu_real(key: jax.Array, T: int = 1) -> LCCParams:  # noqa: N803
    """Real-LCC points: ``2T + 2`` distinct Chebyshev nodes in [-1, 1] (float64), randomly split.

    Args:
        key: PRNG key (can be vmapped over silos).
        T: privacy threshold, static, ``T >= 1``.

    Returns:
        :class:`LCCParams` with ``p=None`` and float64 ``alphas [T+1]``, ``betas [T+1]``.
    """
    T = _validate_T(T, None)
    with F.x64():
        return _sample_mu_real_jit(key, T=T)


def check_params(params: LCCParams) -> None:
    """Host-side check that the points are valid: distinct, and (field mode) non-zero elements of [0, p).

    Skipped silently when ``params`` holds tracers (inside jit/vmap).

    Args:
        params: :class:`LCCParams` with ``alphas, betas [..., T+1]``; field mode (``p`` set) or real mode.

    Returns:
        None; returning means the points are valid (or were not checked, under a trace).

    Raises:
        ValueError: shapes differ, fewer than 2 points each, points not distinct / out of range.
    """
    if isinstance(params.alphas, jax.core.Tracer) or isinstance(params.betas, jax.core.Tracer):
        return
    a = np.asarray(params.alphas)
    b = np.asarray(params.betas)
    if a.shape != b.shape or a.ndim < 1 or a.shape[-1] < 2:
        raise ValueError(f"alphas and betas must both have shape [..., T+1] with T >= 1, got {a.shape}, {b.shape}")
    pts = np.concatenate([a, b], axis=-1).reshape(-1, a.shape[-1] * 2)
    for row in pts:
        if params.p is not None:
            p = F.validate_modulus(params.p)
            ints = [int(v) for v in row]
            if any(v <= 0 or v >= p for v in ints):
                raise ValueError(f"LCC points must be non-zero elements of F_{p} (in [1, p-1]), got {ints}")
            if len(set(ints)) != len(ints):
                raise ValueError(f"LCC points alphas + betas must be 2T+2 distinct elements, got {ints}")
        elif len(np.unique(row)) != len(row):
            raise ValueError(f"real-LCC points must be distinct, got {row.tolist()}")


# ---------------------------------------------------------------------------------------------------------
# Encoding matrix and decoding coefficients (field and real).
# ---------------------------------------------------------------------------------------------------------


def _lagrange_matrix_field(x: jax.Array, nodes: jax.Array, p: int, method: str) -> jax.Array:
    """M[i, j] = prod_{k != i} (x[j] - nodes[k]) / (nodes[i] - nodes[k]) in F_p; int64 [n, len(x)].

    ``M[i, j]`` is the i-th Lagrange basis polynomial on ``nodes`` evaluated at ``x[j]``. Every product is
    reduced as it is formed (each factor < p, so each raw product < 2^62). All n denominators are inverted
    in one vectorised Fermat power (the unrolled power is the bulk of the compiled program).
    """
    n = nodes.shape[-1]
    x = x.astype(jnp.int64)
    nodes = nodes.astype(jnp.int64)
    diff_x = F._sub_impl(x[None, :], nodes[:, None], p)  # [k, j] = x[j] - nodes[k]
    diff_n = F._sub_impl(nodes[:, None], nodes[None, :], p)  # [i, k] = nodes[i] - nodes[k]
    eye = jnp.eye(n, dtype=bool)
    num = jnp.ones((n, x.shape[0]), jnp.int64)
    den = jnp.ones((n,), jnp.int64)
    for k in range(n):  # skip k == i by multiplying with 1 there
        num = F._mul_impl(num, jnp.where(eye[:, k : k + 1], 1, diff_x[k][None, :]), p, method)
        den = F._mul_impl(den, jnp.where(eye[:, k], 1, diff_n[:, k]), p, method)
    return F._mul_impl(num, F._inv_impl(den, p, method)[:, None], p, method)


def _lagrange_matrix_real(x: jax.Array, nodes: jax.Array) -> jax.Array:
    n = nodes.shape[-1]
    x = x.astype(jnp.float64)
    nodes = nodes.astype(jnp.float64)
    rows = []
    for i in range(n):
        r = jnp.ones_like(x)
        for k in range(n):
            if k != i:
                r = r * (x - nodes[k]) / (nodes[i] - nodes[k])
        rows.append(r)
    return jnp.stack(rows, axis=0)


@functools.partial(jax.jit, static_argnames=("method",))
def _encode_matrix_jit(params: LCCParams, method: str) -> jax.Array:
    if params.p is None:
        return _lagrange_matrix_real(params.alphas, params.betas)
    return _lagrange_matrix_field(params.alphas, params.betas, params.p, method)


@functools.partial(jax.jit, static_argnames=("method",))
def _decode_coeffs_jit(params: LCCParams, method: str) -> jax.Array:
    # lam[k] = L^alpha_k(betas[0]): the Lagrange basis on the alphas evaluated at the data point betas[0].
    target = params.betas[:1]
    if params.p is None:
        return _lagrange_matrix_real(target, params.alphas)[:, 0]
    return _lagrange_matrix_field(target, params.alphas, params.p, method)[:, 0]


def _cast_params(params: LCCParams) -> LCCParams:
    """Cast the points to int64 (field) or float64 (real) inside the x64 scope (see ``field._as_i64``)."""
    cast = F._as_f64 if params.p is None else F._as_i64
    return dataclasses.replace(params, alphas=cast(params.alphas), betas=cast(params.betas))


def _method_for(params: LCCParams, reduction: Reduction) -> str:
    return "real" if params.p is None else F.reduction_method(params.p, reduction)


def encode_matrix(params: LCCParams, reduction: Reduction = "auto") -> jax.Array:
    """The encoding matrix U of Eq. 5: ``U[i, j] = prod_{k != i} (alphas[j] - betas[k]) / (betas[i] - betas[k])``.

    Args:
        params: :class:`LCCParams` with ``alphas, betas [T+1]``; field mode (int64) or real mode (``p=None``).

    Returns:
        ``U [T+1, T+1]``: int64 in F_p, or float64 in real mode. Row 0 multiplies the data, rows 1..T the masks;
        column j produces share j.
    """
    check_params(params)
    method = _method_for(params, reduction)
    with F.x64():
        return _encode_matrix_jit(_cast_params(params), method=method)


def decode_coeffs(params: LCCParams, reduction: Reduction = "auto") -> jax.Array:
    """Decoding weights ``lam[k] = prod_{l != k} (betas[0] - alphas[l]) / (alphas[k] - alphas[l])``.

    Args:
        params: :class:`LCCParams` with ``alphas, betas [T+1]``; field mode (int64) or real mode (``p=None``).
        reduction: the field reduction, "auto" | "mersenne" | "mod" (ignored in real mode).

    Returns:
        ``lam [T+1]``: int64 in F_p, or float64 in real mode.
    """
    check_params(params)
    method = _method_for(params, reduction)
    with F.x64():
        return _decode_coeffs_jit(_cast_params(params), method=method)


# ---------------------------------------------------------------------------------------------------------
# Masks.
# ---------------------------------------------------------------------------------------------------------


MASK_GENERATOR: str = "xla"
"""Where the mask bits come from (read when a program is traced): "xla" = XLA's Threefry kernel (the
default, see `_random_u64`); "jax" = pairs of jax.random uint32 draws, the generator before it, kept
so benchmarks/bench_round_speed.py can time both in one process. Field-mode results do not depend on it."""


def _random_u64_jax(key: jax.Array, shape: tuple[int, ...]) -> jax.Array:
    """uint64 words from pairs of jax.random uint32 draws, in lax.map chunks of 2^16 words (MASK_GENERATOR "jax")."""
    chunk = 1 << 16

    def words(k: jax.Array, n: int) -> jax.Array:
        w = jax.random.bits(k, (2, n), dtype=jnp.uint32)
        return (w[0].astype(jnp.uint64) << 32) | w[1].astype(jnp.uint64)

    n = int(np.prod(shape, dtype=np.int64))
    if n <= chunk:
        return words(key, n).reshape(shape)
    u = jax.lax.map(lambda k: words(k, chunk), jax.random.split(key, -(-n // chunk)))
    return u.reshape(-1)[:n].reshape(shape)


def _random_u64(key: jax.Array, shape: tuple[int, ...]) -> jax.Array:
    """Uniform uint64 words of ``shape``: Threefry-2x32 counter-mode bits from XLA's own generator.

    ``lax.rng_bit_generator`` with ``RNG_THREE_FRY`` is the Threefry-2x32 algorithm jax.random uses, run as
    one XLA:CPU kernel, faster than jax.random's Threefry built from elementwise HLO
    (benchmarks/bench_round_speed.py, HiFGL on CiteSeer). Its 128-bit key is the two halves of ``split(key)``, so distinct jax
    keys give distinct streams. (Not ``jax.random.bits(..., uint64)``: random bits are a primitive lowered by
    re-tracing Python code at *lowering* time, which fails on uint64 inside an outer jit traced without x64;
    this op is lowered as it is.)
    """
    if MASK_GENERATOR == "jax":
        return _random_u64_jax(key, shape)
    if MASK_GENERATOR != "xla":
        raise ValueError(f"lcc.MASK_GENERATOR must be 'xla' or 'jax', got {MASK_GENERATOR!r}")
    n = int(np.prod(shape, dtype=np.int64))
    halves = jax.random.split(key)
    if jnp.issubdtype(halves.dtype, jax.dtypes.prng_key):
        halves = jax.random.key_data(halves)
    key4 = halves.reshape(-1).astype(jnp.uint32)                                          # [4]
    if key4.shape != (4,):
        # another PRNG implementation (e.g. "rbg": 4 words per key, so 8 after the split): the 128-bit
        # generator key is drawn from the caller's key with its own implementation instead
        key4 = jax.random.bits(key, (4,), jnp.uint32)
    _, bits = jax.lax.rng_bit_generator(key4, (max(n, 1),), dtype=jnp.uint64,
                                        algorithm=jax.lax.RandomAlgorithm.RNG_THREE_FRY)
    return bits[:n].reshape(shape)


def _uniform_below(key: jax.Array, shape: tuple[int, ...], m: int) -> jax.Array:
    """int64 ``shape`` in [0, m), m < 2^32, via ``u64 mod m`` (distance from uniform <= m / 2^64)."""
    return jax.lax.rem(_random_u64(key, shape), jnp.uint64(m)).astype(jnp.int64)


def _uniform_impl(key: jax.Array, shape: tuple[int, ...], p: int, method: str) -> jax.Array:
    # One 64-bit word per element, reduced mod p: the statistical distance from uniform on F_p is at most
    # p / 2^64 < 2^-33 per element (exact uniformity would need rejection sampling). That is half the random
    # bits jax.random.randint uses, and generating the bits dominates the cost.
    return F._reduce_impl(_random_u64(key, shape), p, method, 2**64).astype(jnp.int64)


_uniform_jit = jax.jit(_uniform_impl, static_argnames=("shape", "p", "method"))


def sample_masks(
    key: jax.Array, T: int, shape: tuple[int, ...], p: int = MERSENNE_31, reduction: Reduction = "auto"
) -> jax.Array:
    """Masks ``z`` for :func:`encode`: ``T`` independent (near-)uniform draws from F_p of shape ``shape``.

    Args:
        key: PRNG key. Use a fresh key per message (edge, layer, round), spec §5.2 item 5.
        T: privacy threshold (static).
        shape: shape of one data array, e.g. ``(E, d)`` for a batch of edge messages.

    Returns:
        int64 ``[T, *shape]`` in ``[0, p)``.
    """
    method = F.reduction_method(p, reduction)
    T = _validate_T(T, p)
    with F.x64():
        return _uniform_jit(key, shape=(T, *tuple(int(s) for s in shape)), p=p, method=method)


@functools.partial(jax.jit, static_argnames=("shape",))
def _uniform_real_jit(key: jax.Array, shape: tuple[int, ...], scale: jax.Array) -> jax.Array:
    # The top 53 bits of each 64-bit word give a uniform float64 in [0, 1), exactly representable. Same
    # chunked bit generator as the field masks, so field-vs-real timings compare like with like.
    u = (_random_u64(key, shape) >> 11).astype(jnp.float64) * (2.0**-53)
    return (2.0 * u - 1.0) * scale


def sample_masks_real(key: jax.Array, T: int, shape: tuple[int, ...], scale: float = 1.0) -> jax.Array:
    """Real-LCC masks: float64 ``[T, *shape]`` uniform in ``[-scale, scale)`` (no privacy claim over the reals).

    Args:
        key: PRNG key.
        T: privacy threshold, static, ``T >= 1``.
        shape: the shape of one mask ``[..., d]``.
        scale: the masks' half-width.

    Returns:
        float64 masks ``[T, *shape]``.

    Raises:
        ValueError: ``T`` is not a positive integer.
    """
    T = _validate_T(T, None)
    with F.x64():
        return _uniform_real_jit(key, shape=(T, *tuple(int(s) for s in shape)), scale=F._as_f64(scale))


# ---------------------------------------------------------------------------------------------------------
# Encode / decode.
# ---------------------------------------------------------------------------------------------------------


def _check_encode_shapes(x: jax.Array, z: jax.Array, U: jax.Array) -> int:  # noqa: N803
    if U.ndim != 2 or U.shape[0] != U.shape[1]:
        raise ValueError(f"U must be square [T+1, T+1], got shape {U.shape}")
    T = U.shape[0] - 1
    if z.shape != (T, *x.shape):
        raise ValueError(f"z must have shape [T, *x.shape] = {(T, *x.shape)} for U of shape {U.shape}, got {z.shape}")
    return T


def _encode_field_impl(x: jax.Array, z: jax.Array, U: jax.Array, p: int, method: str) -> jax.Array:  # noqa: N803
    x = x.astype(jnp.int64)
    z = z.astype(jnp.int64)
    U = U.astype(jnp.int64)
    T = _check_encode_shapes(x, z, U)
    col = (T + 1,) + (1,) * x.ndim  # U[i, :] broadcast against [T+1, ..., d]
    # Each product is reduced (< p) before accumulating; the sum of T+1 of them is < (T+1) p, far below
    # 2^63, and is reduced once at the end.
    acc = F._mul_impl(x[None], U[0].reshape(col), p, method)
    for i in range(T):
        acc = acc + F._mul_impl(z[i][None], U[i + 1].reshape(col), p, method)
    return F._reduce_impl(acc, p, method, (T + 1) * (p - 1) + 1)


_encode_field_jit = jax.jit(_encode_field_impl, static_argnames=("p", "method"))


def encode(
    x_q: Any, z: Any, U: Any, p: int = MERSENNE_31, reduction: Reduction = "auto"  # noqa: N803
) -> jax.Array:
    """Lagrange-encode quantised data into ``T + 1`` shares: ``share_j = x U[0, j] + sum_i z[i] U[i+1, j]`` mod p.

    Args:
        x_q: int field elements ``[..., d]`` (any leading batch dims, e.g. ``[E, d]`` edge messages).
        z: masks ``[T, ..., d]`` (from :func:`sample_masks`), field elements.
        U: encoding matrix ``[T+1, T+1]`` (from :func:`encode_matrix`). Under ``jax.vmap`` each edge may carry
            its own ``U`` (its target silo's).
        p: prime modulus (static; must match the one ``U`` was built for).

    Returns:
        int64 shares ``[T+1, ..., d]`` in ``[0, p)``; share j is ``g(alphas[j])``.
    """
    method = F.reduction_method(p, reduction)
    with F.x64():
        return _encode_field_jit(F._as_i64(x_q), F._as_i64(z), F._as_i64(U), p=p, method=method)


@jax.jit
def _encode_real_jit(x: jax.Array, z: jax.Array, U: jax.Array) -> jax.Array:  # noqa: N803
    x = x.astype(jnp.float64)
    z = z.astype(jnp.float64)
    U = U.astype(jnp.float64)
    _check_encode_shapes(x, z, U)
    X = jnp.concatenate([x[None], z], axis=0)  # [T+1, ..., d]
    return jnp.tensordot(U, X, axes=([0], [0]))  # [T+1(j), ..., d] = sum_i U[i, j] X[i]


def encode_real(x: Any, z: Any, U: Any) -> jax.Array:  # noqa: N803
    """Real-LCC encoding (float64), same formula as :func:`encode`: shares ``[T+1, ..., d]``.

    Args:
        x: float data ``[..., d]``.
        z: float masks ``[T, ..., d]`` (from :func:`sample_masks_real`).
        U: float64 encoding matrix ``[T+1, T+1]`` (from :func:`encode_matrix` in real mode).

    Returns:
        float64 shares ``[T+1, ..., d]``.
    """
    with F.x64():
        return _encode_real_jit(F._as_f64(x), F._as_f64(z), F._as_f64(U))


def _decode_field_impl(S: jax.Array, lam: jax.Array, p: int, method: str) -> jax.Array:  # noqa: N803
    S = S.astype(jnp.int64)
    lam = lam.astype(jnp.int64)
    if lam.ndim != 1 or S.shape[:1] != lam.shape:
        raise ValueError(f"S must be [T+1, ...] and lam [T+1]; got S {S.shape}, lam {lam.shape}")
    acc = F._mul_impl(S[0], lam[0], p, method)
    for k in range(1, lam.shape[0]):
        acc = acc + F._mul_impl(S[k], lam[k], p, method)  # sum of T+1 reduced terms < (T+1) p
    return F._reduce_impl(acc, p, method, lam.shape[0] * (p - 1) + 1)


_decode_field_jit = jax.jit(_decode_field_impl, static_argnames=("p", "method"))


def decode(S: Any, lam: Any, p: int = MERSENNE_31, reduction: Reduction = "auto") -> jax.Array:  # noqa: N803
    """Decode (aggregated) shares: ``sum_k S[k] lam[k]`` mod p = the interpolant evaluated at ``betas[0]``.

    Args:
        S: int shares ``[T+1, ..., d]`` (one per alpha, possibly summed over messages or linearly mapped).
        lam: decoding weights ``[T+1]`` from :func:`decode_coeffs`.

    Returns:
        int64 ``[..., d]`` in ``[0, p)``.
    """
    method = F.reduction_method(p, reduction)
    with F.x64():
        return _decode_field_jit(F._as_i64(S), F._as_i64(lam), p=p, method=method)


@jax.jit
def _decode_real_jit(S: jax.Array, lam: jax.Array) -> jax.Array:  # noqa: N803
    return jnp.tensordot(lam.astype(jnp.float64), S.astype(jnp.float64), axes=([0], [0]))


def decode_real(S: Any, lam: Any) -> jax.Array:  # noqa: N803
    """Real-LCC decoding (float64): ``sum_k S[k] lam[k]``, ``[T+1, ..., d] -> [..., d]``.

    Args:
        S: float shares ``[T+1, ..., d]``.
        lam: float64 decoding weights ``[T+1]`` (from :func:`decode_coeffs` in real mode).

    Returns:
        float64 ``[..., d]``.
    """
    with F.x64():
        return _decode_real_jit(F._as_f64(S), F._as_f64(lam))


# ---------------------------------------------------------------------------------------------------------
# Segment sum in the field.
# ---------------------------------------------------------------------------------------------------------


def max_segment_terms(p: int = MERSENNE_31) -> int:
    """Largest number of field elements an int64 accumulator can add without overflow: ``(2^63-1) // (p-1)``.

    For p = 2^31 - 1 this is 2^32 + 4: inputs are < 2^31, so int64 sums of up to 2^32 of them cannot overflow.

    Args:
        p: prime modulus.

    Returns:
        The largest number of terms, a Python int.

    Raises:
        ValueError: ``p`` is not a prime <= 2^31 - 1.
    """
    p = F.validate_modulus(p)
    return _INT64_MAX // max(p - 1, 1)


def _field_segment_sum_impl(
    data: jax.Array, segment_ids: jax.Array, num_segments: int, p: int, method: str, axis: int,
    indices_are_sorted: bool,
) -> jax.Array:
    data = jnp.moveaxis(data.astype(jnp.int64), axis, 0)
    n_terms = data.shape[0]
    # Exactness: each input is < p, so any segment's raw int64 sum is <= n_terms (p - 1). Refuse (at trace time,
    # shapes are static) when that could exceed 2^63 - 1 instead of silently wrapping.
    if n_terms * (p - 1) > _INT64_MAX:
        raise ValueError(
            f"field_segment_sum: {n_terms} terms of up to p-1={p - 1} could overflow int64; at most "
            f"{_INT64_MAX // (p - 1)} terms are supported for p={p}"
        )
    s = jax.ops.segment_sum(data, segment_ids, num_segments=num_segments, indices_are_sorted=indices_are_sorted)
    s = F._reduce_impl(s, p, method, n_terms * (p - 1) + 1)  # one reduction at the end
    return jnp.moveaxis(s, 0, axis)


_field_segment_sum_jit = jax.jit(
    _field_segment_sum_impl, static_argnames=("num_segments", "p", "method", "axis", "indices_are_sorted")
)


def field_segment_sum(
    shares: Any,
    segment_ids: Any,
    num_segments: int,
    p: int = MERSENNE_31,
    *,
    axis: int = 0,
    reduction: Reduction = "auto",
    indices_are_sorted: bool = False,
) -> jax.Array:
    """Exact per-segment sums in F_p (e.g. adding every share a target device receives, per share index).

    The int64 accumulation is exact because every input is < p <= 2^31 - 1 and at most
    :func:`max_segment_terms` (2^32 + 4 for the default p) terms are added; the result is reduced once at the end.

    Args:
        shares: field elements with the segmented dimension at ``axis``, e.g. ``[T+1, E, d]`` with ``axis=1``
            (the output of :func:`encode` on edge messages) or ``[E, T+1, d]`` with ``axis=0``.
        segment_ids: int ``[E]`` target index of each entry; ids outside ``[0, num_segments)`` are dropped.
        num_segments: number of segments N (static).
        axis: the segmented dimension of ``shares`` (static).

    Returns:
        int64 array like ``shares`` with dimension ``axis`` replaced by ``N``, in ``[0, p)``.

    Raises:
        ValueError: more terms than :func:`max_segment_terms` (checked at trace time).
    """
    method = F.reduction_method(p, reduction)
    with F.x64():
        shares = F._as_i64(shares)
        ax = axis % shares.ndim
        return _field_segment_sum_jit(
            shares, jnp.asarray(segment_ids).astype(jnp.int32), num_segments=int(num_segments), p=p,
            method=method, axis=ax,
            indices_are_sorted=bool(indices_are_sorted),
        )


@functools.partial(jax.jit, static_argnames=("num_segments", "axis", "indices_are_sorted"))
def _segment_sum_real_jit(
    data: jax.Array, segment_ids: jax.Array, num_segments: int, axis: int, indices_are_sorted: bool
) -> jax.Array:
    s = jax.ops.segment_sum(
        jnp.moveaxis(data, axis, 0), segment_ids, num_segments=num_segments, indices_are_sorted=indices_are_sorted
    )
    return jnp.moveaxis(s, 0, axis)


def segment_sum_real(
    shares: Any, segment_ids: Any, num_segments: int, *, axis: int = 0, indices_are_sorted: bool = False
) -> jax.Array:
    """Real-LCC twin of :func:`field_segment_sum`: float64 per-segment sums along ``axis``.

    Kept inside the x64 scope because a float64 sum taken outside it is silently truncated to float32.

    Args:
        shares: float shares with the segmented dimension at ``axis``, e.g. ``[T+1, E, d]`` with ``axis=1``.
        segment_ids: int ``[E]`` target index of each entry; ids outside ``[0, num_segments)`` are dropped.
        num_segments: number of segments N (static).
        axis: the segmented dimension of ``shares`` (static).
        indices_are_sorted: ``segment_ids`` are sorted (a faster segment sum).

    Returns:
        float64 sums: ``shares`` with dimension ``axis`` replaced by N.
    """
    with F.x64():
        shares = F._as_f64(shares)
        return _segment_sum_real_jit(
            shares, jnp.asarray(segment_ids).astype(jnp.int32), num_segments=int(num_segments),
            axis=axis % shares.ndim, indices_are_sorted=bool(indices_are_sorted),
        )
