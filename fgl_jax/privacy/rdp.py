"""Renyi-DP accounting of the Poisson-subsampled Gaussian mechanism, in NumPy (no dependency).

DP-FedAvg's round with client sampling rate q = m / N and noise multiplier z (noise std z C for
sensitivity C) is the sampled Gaussian mechanism of Mironov, Talwar & Zhang (2019, "Renyi Differential
Privacy of the Sampled Gaussian Mechanism"). Under add/remove-one-client neighbouring its RDP at an
integer order a >= 2 is (their Section 3.3, the binomial expansion of E_{mu0}[(mu / mu0)^a] with
mu0 = N(0, z^2), mu = (1 - q) mu0 + q N(1, z^2))

    RDP(a) = log A_a / (a - 1),    A_a = sum_{k=0}^{a} binom(a, k) (1 - q)^(a-k) q^k exp((k^2 - k) / (2 z^2)),

and a / (2 z^2) for q = 1 (the Gaussian mechanism). T rounds compose to T RDP(a), and RDP becomes
(epsilon, delta)-DP by the conversion of Canonne, Kamath & Steinke (2020, Prop. 12) / Asoodeh et al.:

    epsilon = min_a  T RDP(a) + log(1 - 1/a) - log(delta a) / (a - 1)      (at least 0)

This is what Google's `dp-accounting` computes at the same orders (its default list adds fractional
orders, so with it installed `fgl_jax.privacy.dp.epsilons` can be slightly tighter); this module is
the accountant when that package is absent, and an independent check of it (tests/test_dp.py).
"""
from __future__ import annotations

import math
from typing import Optional, Sequence

import numpy as np

__all__ = ["ORDERS", "subsampled_gaussian_rdp", "epsilon_from_rdp", "epsilons"]

ORDERS: tuple[int, ...] = tuple(range(2, 65)) + (128, 256, 512, 1024)
"""The default integer Renyi orders a: every one from 2 to 64, then 128, 256, 512, 1024."""


def _logsumexp(x: np.ndarray) -> float:
    m = float(np.max(x))
    return m + math.log(float(np.sum(np.exp(x - m))))


def subsampled_gaussian_rdp(q: float, noise_multiplier: float, orders: Sequence[int] = ORDERS) -> np.ndarray:
    """The RDP of one Poisson-subsampled Gaussian release at each order (module docstring).

    Args:
        q: the sampling rate, in [0, 1].
        noise_multiplier: z, the noise std over the sensitivity, >= 0.
        orders: the Renyi orders a, integers >= 2.

    Returns:
        float64 `[len(orders)]`: RDP(a); 0 for q = 0, inf for z = 0 (and q > 0), a / (2 z^2) for q = 1.

    Raises:
        ValueError: q outside [0, 1], z < 0, or an order that is not an integer >= 2.
    """
    if not 0.0 <= q <= 1.0:
        raise ValueError(f"rdp: sampling rate q must be in [0, 1], got {q}")
    if noise_multiplier < 0:
        raise ValueError(f"rdp: noise multiplier must be >= 0, got {noise_multiplier}")
    out = []
    for a in orders:
        if int(a) != a or a < 2:
            raise ValueError(f"rdp: orders must be integers >= 2, got {a}")
        a = int(a)
        if q == 0:
            out.append(0.0)
        elif noise_multiplier == 0:
            out.append(math.inf)
        elif q == 1.0:
            out.append(a / (2 * noise_multiplier ** 2))
        else:
            k = np.arange(a + 1, dtype=np.float64)
            log_binom = np.array([math.lgamma(a + 1) - math.lgamma(i + 1) - math.lgamma(a - i + 1)
                                  for i in range(a + 1)])
            terms = log_binom + (a - k) * math.log1p(-q) + k * math.log(q) + (k * k - k) / (2 * noise_multiplier ** 2)
            out.append(_logsumexp(terms) / (a - 1))
    return np.asarray(out, np.float64)


def epsilon_from_rdp(rdp: np.ndarray, delta: float, orders: Sequence[int] = ORDERS) -> float:
    """The smallest epsilon over the orders at which the RDP gives (epsilon, delta)-DP (module
    docstring's conversion; 0 at an order whose divergence is small enough for delta alone).

    Args:
        rdp: float `[len(orders)]`, the (composed) RDP at each order.
        delta: the delta of the guarantee, in (0, 1).
        orders: the Renyi orders a of `rdp`.

    Returns:
        epsilon >= 0 (inf when the RDP is infinite at every order).

    Raises:
        ValueError: delta outside (0, 1).
    """
    if not 0 < delta < 1:
        raise ValueError(f"rdp: delta must be in (0, 1), got {delta}")
    a = np.asarray(orders, np.float64)
    r = np.asarray(rdp, np.float64)
    with np.errstate(invalid="ignore"):
        eps = r + np.log1p(-1.0 / a) - np.log(delta * a) / (a - 1)
    # an order whose divergence is so small that delta <= sqrt(1 - exp(-KL)) already holds gives 0
    eps = np.where(delta ** 2 + np.expm1(-r) > 0, 0.0, eps)
    return float(max(0.0, np.nanmin(eps)))


def epsilons(noise_multiplier: float, q: float, rounds: int, delta: float,
             orders: Optional[Sequence[int]] = None) -> np.ndarray:
    """The epsilon at delta after each of rounds 1..T of the subsampled Gaussian (T rounds compose to
    T RDP(a)).

    Args:
        noise_multiplier: z, the noise std over the sensitivity, >= 0.
        q: the sampling rate per round, in [0, 1].
        rounds: T, the number of rounds.
        delta: the delta of the guarantee, in (0, 1).
        orders: the Renyi orders (None: `ORDERS`).

    Returns:
        float64 `[rounds]`: entry t - 1 the epsilon after t rounds.

    Raises:
        ValueError: as `subsampled_gaussian_rdp` and `epsilon_from_rdp` do.
    """
    orders = ORDERS if orders is None else orders
    per_round = subsampled_gaussian_rdp(q, noise_multiplier, orders)
    return np.array([epsilon_from_rdp(per_round * t, delta, orders) for t in range(1, rounds + 1)])
