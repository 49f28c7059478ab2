"""Client-level differential privacy of the server average (DP-FedAvg): the clipping primitive and
the accountant. The server step itself is an aggregator, `fgl_jax.aggregators.dp_fedavg` (clip,
uniform mean, noise), so it applies to every algorithm that aggregates through `fgl_jax.aggregators`.

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

Shapes: `[rounds]` one value per round.
"""
from __future__ import annotations

import dataclasses
import logging
import math
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


LIBRARY_ACCOUNTANT = "dp-accounting RDP"
OWN_ACCOUNTANT = "fgl_jax.privacy.rdp (integer orders)"


def accountant_name(sampling: str = "poisson") -> str:
    """Which accountant `epsilons` uses: Google's dp-accounting when it is installed, else (Poisson
    sampling only) fgl_jax's own RDP of the subsampled Gaussian (`fgl_jax.privacy.rdp`)."""
    try:
        import dp_accounting  # noqa: F401
        return LIBRARY_ACCOUNTANT
    except ImportError:
        return OWN_ACCOUNTANT if sampling == "poisson" else LIBRARY_ACCOUNTANT


def describe(noise_multiplier: float, sampled: int, population: int, rounds: int, delta: float,
             sampling: str = "poisson") -> dict:
    """summary.json's statement of a DP-FedAvg run's privacy: the mechanism, its sampling rate and
    noise, and epsilon at delta after `rounds` rounds (under which neighbouring relation)."""
    eps = epsilons(noise_multiplier, sampled, population, rounds, delta, sampling)
    mech = ("Poisson-subsampled Gaussian, add/remove one client" if sampling == "poisson" else
            "Gaussian on a fixed-size sample without replacement, replace one client")
    return {"level": "client", "mechanism": mech, "noise_multiplier": float(noise_multiplier),
            "sampling": sampling, "sampling_rate": sampled / population, "clients_per_round": int(sampled),
            "population": int(population), "rounds": int(rounds), "delta": float(delta),
            "epsilon": float(eps[-1]) if rounds > 0 else 0.0, "accountant": accountant_name(sampling)}


def epsilons(noise_multiplier: float, sampled: int, population: int, rounds: int, delta: float,
             sampling: str = "poisson", orders: Optional[Sequence[float]] = None) -> np.ndarray:
    """epsilon [rounds] at `delta` after rounds 1..rounds of DP-FedAvg with `sampled` of
    `population` clients per round (see the module docstring for `sampling`); inf when z = 0.

    Args:
        noise_multiplier: z, the Gaussian noise's multiplier of the clipping norm.
        sampled: m, the clients per round, in 1..population.
        population: the clients that can be sampled.
        rounds: T, the rounds to account.
        delta: the delta of (epsilon, delta)-DP.
        sampling: "poisson" or "without_replacement".
        orders: the RDP orders to minimise over; None: the accountant's defaults.

    Returns:
        float64 `[rounds]`: epsilon after each round 1..T (all inf when z = 0).

    Raises:
        ImportError: sampling "without_replacement" without the optional `dp-accounting` package
            (Poisson sampling falls back to fgl_jax's own RDP accountant, `fgl_jax.privacy.rdp`).
        ValueError: an unknown sampling, or sampled outside 1..population.
    """
    if sampling not in SAMPLING:
        raise ValueError(f"dp sampling must be one of {SAMPLING}, got {sampling!r}")
    if not 1 <= sampled <= population:
        raise ValueError(f"sampled clients ({sampled}) must be in 1..population ({population})")
    if noise_multiplier <= 0:
        return np.full(rounds, np.inf)
    q = sampled / population
    if accountant_name(sampling) == OWN_ACCOUNTANT:  # dp-accounting absent: fgl_jax's own RDP (integer orders)
        from fgl_jax.privacy import rdp as own
        return own.epsilons(noise_multiplier, q, rounds, delta, orders)
    try:
        import dp_accounting
        from dp_accounting import rdp
    except ImportError:  # optional: it pins attrs<24, which would downgrade a researcher's environment
        raise ImportError("DP-FedAvg's accountant for dp_sampling without_replacement needs the "
                          "`dp-accounting` package: pip install 'fgl_jax[dp]' (or pip install dp-accounting)") from None
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


# ---------------------------------------------------------------------------------------------
# OpenFGL's local DP for node classification (openfgl/utils/privacy_utils.py, `--dp_mech`): in
# every local step each training node's gradient is clipped to norm C (L1 for Laplace, L2 for
# Gaussian), the clipped gradients are averaged, the optimiser steps, and noise is added to every
# parameter. The budget (eps, delta) is split evenly over Q = rounds * client_fraction queries:
#     eps_q = eps / Q, delta_q = delta / Q, sensitivity s = 2 lr C / n_train,
#     Laplace scale b = s / eps_q,   Gaussian std = s sqrt(2 ln(1.25 / delta_q)) / eps_q.
# This is OpenFGL's calibration, reproduced as it is: Q counts rounds, not the local steps that
# each add noise, so the stated (eps, delta) is not a guarantee of the whole run; treat it as a
# noise knob comparable with OpenFGL's numbers. (OpenFGL reads the budget from `args.dp_eps`, an
# option its parser never defines; here it is `ldp_epsilon`.)

LDP_MECHANISMS = ("laplace", "gaussian")


@dataclasses.dataclass(frozen=True)
class LocalDP:
    mechanism: str          # "laplace" or "gaussian"
    clip: float             # per-node gradient norm bound C
    epsilon: float          # total budget eps
    delta: float            # total delta (gaussian)
    queries: float          # Q = rounds * client_fraction

    def __post_init__(self):
        if self.mechanism not in LDP_MECHANISMS:
            raise ValueError(f"ldp mechanism must be one of {LDP_MECHANISMS}, got {self.mechanism!r}")
        for name in ("clip", "epsilon", "queries"):
            if not getattr(self, name) > 0:
                raise ValueError(f"ldp {name} must be > 0, got {getattr(self, name)}")
        if self.mechanism == "gaussian" and not 0 < self.delta < 1:
            raise ValueError(f"ldp delta must be in (0, 1), got {self.delta}")

    def noise_scale(self, lr, n_train) -> jax.Array:
        """Laplace scale b or Gaussian std of the parameter noise after one step."""
        eps_q = self.epsilon / self.queries
        s = 2.0 * lr * self.clip / jnp.maximum(n_train, 1.0)
        if self.mechanism == "laplace":
            return s / eps_q
        return s * math.sqrt(2.0 * math.log(1.25 * self.queries / self.delta)) / eps_q

    def noise(self, key: jax.Array, params: PyTree, scale) -> PyTree:
        leaves, treedef = jax.tree.flatten(params)
        keys = jax.random.split(key, len(leaves))
        draw = jax.random.laplace if self.mechanism == "laplace" else jax.random.normal
        return jax.tree.unflatten(treedef, [x + (scale * draw(k, x.shape, jnp.float32)).astype(x.dtype)
                                            for x, k in zip(leaves, keys)])


def clipped_node_grad(per_node_loss, params: PyTree, mask: jax.Array, clip: float, norm: str = "l2",
                      block: int = 64) -> tuple[jax.Array, PyTree]:
    """(mean masked loss, mean over masked nodes of each node's gradient clipped to `clip`).

    per_node_loss(params) -> [N] losses (one forward pass; a GNN's node losses share it);
    mask [N]: the nodes that count. Each node's gradient is one VJP of that forward pass with the
    node's one-hot cotangent (in blocks of `block` nodes: memory = block x params); their norms
    give factors f_v = min(1, C / ||g_v||), and sum_v f_v g_v is one more VJP with cotangent f."""
    losses, vjp = jax.vjp(per_node_loss, params)
    n = losses.shape[0]
    m = mask.astype(losses.dtype)
    order = 1 if norm == "l1" else 2

    def node_norm(v):
        (g,) = vjp(jax.nn.one_hot(v, n, dtype=losses.dtype))
        leaves = jax.tree.leaves(g)
        if order == 1:
            return sum(jnp.abs(x).sum() for x in leaves)
        return jnp.sqrt(sum((x.astype(jnp.float32) ** 2).sum() for x in leaves))

    norms = jax.lax.map(node_norm, jnp.arange(n), batch_size=min(n, block))
    factor = m * jnp.minimum(1.0, clip / jnp.maximum(norms, 1e-12))
    count = jnp.maximum(m.sum(), 1.0)
    (g,) = vjp((factor / count).astype(losses.dtype))
    return (losses * m).sum() / count, g
