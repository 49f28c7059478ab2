"""Client-level differential privacy of the server average (DP-FedAvg) and its accountant.

DP-FedAvg (McMahan, Ramage, Talwar & Zhang, ICLR 2018, "Learning Differentially Private Recurrent
Language Models"): each of the m clients of a round sends its update Delta_i = w_i - w clipped to
L2 norm C (over every parameter it shares), and the server releases

    w <- w + (1/m) sum_i clip(Delta_i, C) + N(0, (z C / m)^2 I)

(uniform weights: with data-size weights one client could move the mean by more than C/m). z is
the noise multiplier. The privacy of T rounds is computed by Google's `dp-accounting` (RDP
accountant, orders of its default list) and reported as epsilon at a given delta after each round:

  sampling "poisson" (default, as McMahan et al. and TensorFlow Federated): each round is a
      Poisson-subsampled Gaussian mechanism with rate q = m / N under add/remove-one-client
      neighbouring; the clients are in fact drawn as a fixed-size sample, for which this is the
      customary approximation, not a proof.
  sampling "without_replacement": the fixed-size sample as it is drawn, under replace-one-client
      neighbouring (the library's `SampledWithoutReplacementDpEvent`); replacing a client moves
      the clipped sum by up to 2C, so the Gaussian's multiplier relative to that sensitivity is z / 2.
      Rigorous for this mechanism, and larger.
With m = N (everyone, every round) both are the Gaussian mechanism composed T times.
"""
from __future__ import annotations

import logging
from typing import Any, Optional, Sequence

import jax
import jax.numpy as jnp
import numpy as np

PyTree = Any
SAMPLING = ("poisson", "without_replacement")


def clip_updates(updates: PyTree, clip: float) -> tuple[PyTree, jax.Array]:
    """Each client's update scaled to L2 norm at most `clip` (norm over all leaves).

    updates: pytree of [m, ...] leaves; returns (clipped, norms [m] before clipping)."""
    leaves = jax.tree.leaves(updates)
    sq = sum(jnp.sum(jnp.reshape(x, (x.shape[0], -1)).astype(jnp.float32) ** 2, axis=1) for x in leaves)
    norms = jnp.sqrt(sq)
    factor = jnp.minimum(1.0, clip / jnp.maximum(norms, 1e-12))
    return jax.tree.map(lambda x: x * factor.reshape((-1,) + (1,) * (x.ndim - 1)).astype(x.dtype), updates), norms


def private_mean(updates: PyTree, key: jax.Array, clip: float, noise_multiplier) -> PyTree:
    """DP-FedAvg's release: the uniform mean over the m clients of the clipped updates, plus
    Gaussian noise of std noise_multiplier * clip / m on every coordinate.

    updates: pytree of [m, ...] leaves (m static); returns a pytree of [...] leaves."""
    clipped, _ = clip_updates(updates, clip)
    leaves, treedef = jax.tree.flatten(clipped)
    m = leaves[0].shape[0]
    std = noise_multiplier * clip / m
    keys = jax.random.split(key, len(leaves))
    out = [x.mean(0) + std * jax.random.normal(k, x.shape[1:], x.dtype) for x, k in zip(leaves, keys)]
    return jax.tree.unflatten(treedef, out)


def epsilons(noise_multiplier: float, sampled: int, population: int, rounds: int, delta: float,
             sampling: str = "poisson", orders: Optional[Sequence[float]] = None) -> np.ndarray:
    """epsilon [rounds] at `delta` after rounds 1..rounds of DP-FedAvg with `sampled` of
    `population` clients per round (see the module docstring for `sampling`); inf when z = 0."""
    import dp_accounting
    from dp_accounting import rdp
    if sampling not in SAMPLING:
        raise ValueError(f"dp sampling must be one of {SAMPLING}, got {sampling!r}")
    if not 1 <= sampled <= population:
        raise ValueError(f"sampled clients ({sampled}) must be in 1..population ({population})")
    if noise_multiplier <= 0:
        return np.full(rounds, np.inf)
    q = sampled / population
    if sampling == "poisson":
        gauss = dp_accounting.GaussianDpEvent(noise_multiplier)
        event = gauss if q == 1.0 else dp_accounting.PoissonSampledDpEvent(q, gauss)
        accountant = rdp.RdpAccountant(orders) if orders is not None else rdp.RdpAccountant()
    else:
        gauss = dp_accounting.GaussianDpEvent(noise_multiplier / 2.0)
        event = gauss if q == 1.0 else dp_accounting.SampledWithoutReplacementDpEvent(population, sampled, gauss)
        relation = dp_accounting.NeighboringRelation.REPLACE_ONE
        accountant = (rdp.RdpAccountant(orders, relation) if orders is not None
                      else rdp.RdpAccountant(neighboring_relation=relation))
    # the RDP of one round, once; T rounds compose to T times it (what the accountant's compose
    # does with a count), so epsilon after each round costs one conversion, not one accounting
    logger = logging.getLogger("absl")
    level = logger.level
    logger.setLevel(logging.ERROR)  # it warns about fractional orders it leaves out of the minimum
    try:
        accountant.compose(event)
        per_round = np.asarray(accountant._rdp, np.float64)  # pinned dp-accounting==0.6.0
        orders = accountant._orders
        return np.array([rdp.rdp_privacy_accountant.compute_epsilon(orders, per_round * t, delta)[0]
                         for t in range(1, rounds + 1)])
    finally:
        logger.setLevel(level)
