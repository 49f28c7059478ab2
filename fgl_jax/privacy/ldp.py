"""Local differential privacy mechanisms of FedHGL (paper §IV-C, Eqs. 12–16), per attribute.

Both act independently on every attribute (column) of a normalised node feature d^{-1/2} x, with
the same ε per attribute (so a whole f-dimensional vector gets f·ε by sequential composition —
see the spec's §6 critique).

Randomized response (binary x ∈ {0,1}; Warner 1965, debiased as Eq. 13):
    report the true bit with probability (1+p)/2, the flipped bit with (1−p)/2, p = (e^ε−1)/(e^ε+1),
    then output (y − (1−p)/2) / (p √d). E = x/√d, Var = e^ε / ((e^ε−1)² d).
    variant "code_centered" reproduces the authors' code: with probability p output (x−½)/p,
    otherwise ±1/(2p) with equal probability (then × d^{-1/2}); its mean is (x − ½)/√d.

Laplace (numeric x; Eq. 14–16):
    output d^{-1/2} x + Lap(b), b = s/ε, s = d^{-1/2} · range_j (range of attribute j over the
    uploading client's border nodes, Eq. 16, or a public bound). E = x/√d, Var = 2 b².

All functions are pure and jitted; ε may be a traced scalar inside them. Host-side argument
checks (`check_epsilon`, `check_binary`) raise clear errors for bad input.
"""
from __future__ import annotations

import math
from functools import partial
import numbers

import jax
import jax.numpy as jnp
import numpy as np

Array = jax.Array

RR_VARIANTS = ("paper", "code_centered")

__all__ = ["LDPError", "check_epsilon", "check_binary", "rr_keep_probability", "rr_p",
           "randomized_response", "rr_variance", "laplace", "laplace_scale", "laplace_variance",
           "attribute_range", "RR_VARIANTS"]


class LDPError(ValueError):
    """Bad privacy parameter or input outside the mechanism's declared domain."""


def check_epsilon(eps, name: str = "eps") -> float:
    """ε must be a real number > 0 (inf allowed: no noise). Returns it as float."""
    if isinstance(eps, bool) or not isinstance(eps, (numbers.Real, np.floating, np.integer)):
        raise LDPError(f"{name} must be a positive real number, got {eps!r}")
    e = float(eps)
    if math.isnan(e) or e <= 0:
        raise LDPError(f"{name} must be > 0 (ε-LDP needs a positive budget), got {eps!r}")
    return e


def check_binary(x, name: str = "x") -> None:
    """Randomized response is defined on bits: every value must be 0 or 1."""
    vals = np.asarray(x.data if hasattr(x, "tocsr") else x)
    if vals.size and not np.all((vals == 0) | (vals == 1)):
        bad = vals[(vals != 0) & (vals != 1)][0]
        raise LDPError(f"{name}: randomized response needs binary features in {{0, 1}}, found value {bad!r}; "
                       "use the Laplace mechanism for numeric features")


def rr_p(eps) -> Array:
    """p = (e^ε − 1)/(e^ε + 1) = tanh(ε/2) (numerically stable for large ε; → 1 as ε → ∞)."""
    return jnp.tanh(jnp.asarray(eps, jnp.float32) / 2)


def rr_keep_probability(eps) -> Array:
    """Probability (1 + p)/2 of reporting the true bit."""
    return (1 + rr_p(eps)) / 2


@partial(jax.jit, static_argnames=("centered",))
def _rr(key: Array, x_bits: Array, scale: Array, eps: Array, centered: bool = False) -> Array:
    p = rr_p(eps)
    u = jax.random.uniform(key, x_bits.shape)
    return _rr_from_uniform(u, x_bits, scale, p, centered)


def _rr_from_uniform(u, x_bits, scale, p, centered):
    if centered:
        # authors' rand_response: w.p. p keep (x-1/2)/p, else a fair ±1/(2p)
        u2 = jnp.where(u < p, 0.0, (u - p) / jnp.maximum(1 - p, 1e-12))
        coin = jnp.where(u2 < 0.5, 1.0, -1.0) / (2 * p)
        out = jnp.where(u < p, (x_bits - 0.5) / p, coin)
    else:
        keep = u < (1 + p) / 2
        y = jnp.where(keep, x_bits, 1 - x_bits)
        out = (y - (1 - p) / 2) / p                      # Eq. 13 (debiased alphabet)
    return out * scale


def randomized_response(key: Array, x_bits: Array, scale, eps, variant: str = "paper") -> Array:
    """Debiased randomized response of d^{-1/2} x, per attribute.

    key: PRNG key. x_bits: [..., F] in {0,1}. scale: d^{-1/2}, broadcastable to x (e.g. [..., 1]).
    eps: per-attribute ε (> 0; traced allowed). variant: "paper" (Eq. 13) or "code_centered".
    Returns float32 [..., F].
    """
    if variant not in RR_VARIANTS:
        raise LDPError(f"rr variant must be one of {RR_VARIANTS}, got {variant!r}")
    if not isinstance(eps, jax.core.Tracer):
        check_epsilon(eps)
    x = jnp.asarray(x_bits, jnp.float32)
    return _rr(key, x, jnp.broadcast_to(jnp.asarray(scale, jnp.float32), x.shape), jnp.asarray(eps, jnp.float32),
               variant == "code_centered")


def rr_variance(eps, d=1.0):
    """Closed form Var of the paper variant: (1 − p²)/(4 p² d) = e^ε / ((e^ε − 1)² d)."""
    e = np.exp(float(eps))
    return e / ((e - 1) ** 2 * d)


def standard_laplace(key: Array, shape: tuple) -> Array:
    """Laplace(0, 1) float32 samples whose tail reaches 44.4 (a 64-bit uniform), not 16.6.

    `jax.random.laplace` in float32 inverts a 24-bit uniform, so |noise| <= 16.6 b: a mechanism
    with a truncated tail is only (eps, delta) with delta ~ exp(-(16.6 - eps)) / 2 (1.7e-6 at
    eps = 4). Here |noise| = E = -log U with U = (hi * 2^32 + lo + 1) / 2^64 from two 32-bit words,
    evaluated without forming U: E = 32 ln 2 - log(hi + (lo + 1) 2^-32) when hi > 0, else
    64 ln 2 - log(lo + 1); so the cut is at 64 ln 2 = 44.4 b (delta ~ 1e-18 at eps = 4), and a
    third word gives the sign.
    """
    hi, lo, sign = jax.random.bits(key, (3,) + tuple(shape), jnp.uint32)
    e = exponential_from_words(hi, lo)
    return jnp.where((sign & 1) == 1, e, -e)


def exponential_from_words(hi: Array, lo: Array) -> Array:
    """-log U for U = (hi * 2^32 + lo + 1) / 2^64 (uint32 words -> float32 Exp(1) sample)."""
    ln2 = jnp.float32(np.log(2.0))
    frac = (lo.astype(jnp.float32) + 1.0) * jnp.float32(2.0 ** -32)
    return jnp.where(hi > 0, 32 * ln2 - jnp.log(hi.astype(jnp.float32) + frac),
                     64 * ln2 - jnp.log(lo.astype(jnp.float32) + 1.0))


@jax.jit
def _laplace(key: Array, x: Array, scale: Array, b: Array) -> Array:
    return x * scale + b * standard_laplace(key, x.shape)


def laplace_scale(value_range, scale, eps) -> Array:
    """b = s/ε with s = d^{-1/2} · range (Eq. 16)."""
    return jnp.asarray(value_range, jnp.float32) * jnp.asarray(scale, jnp.float32) / jnp.asarray(eps, jnp.float32)


def laplace(key: Array, x: Array, scale, eps, value_range) -> Array:
    """Laplace mechanism of d^{-1/2} x per attribute (Eq. 14).

    x: [..., F] numeric. scale: d^{-1/2}, broadcastable (e.g. [..., 1]). eps: per-attribute ε.
    value_range: [F] or scalar attribute range (Eq. 16's max − min, or a public bound).
    Noise scale b = scale · value_range / ε, so outputs of inputs at distance ≤ scale·range
    have density ratio ≤ e^ε.
    """
    if not isinstance(eps, jax.core.Tracer):
        check_epsilon(eps)
    x = jnp.asarray(x, jnp.float32)
    sc = jnp.broadcast_to(jnp.asarray(scale, jnp.float32), x.shape)
    b = jnp.broadcast_to(sc * jnp.asarray(value_range, jnp.float32) / jnp.asarray(eps, jnp.float32), x.shape)
    return _laplace(key, x, sc, b)


def laplace_variance(value_range, scale, eps):
    """Closed form Var = 2 b², b = scale · range / ε."""
    b = float(value_range) * float(scale) / float(eps)
    return 2 * b * b


def attribute_range(x: Array, row_mask: Array) -> Array:
    """Per-column max − min over the rows with row_mask (Eq. 16's range); 0 if no row. x [n, F]."""
    m = row_mask.astype(bool)[:, None]
    hi = jnp.max(jnp.where(m, x, -jnp.inf), axis=0)
    lo = jnp.min(jnp.where(m, x, jnp.inf), axis=0)
    return jnp.where(jnp.any(m), hi - lo, 0.0)
