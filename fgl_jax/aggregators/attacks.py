"""Model-poisoning attacks as a per-client aggregator stage: what an attacker uploads instead of its
honest update. The attackers are data: a bool mask on the client axis (`attacker_mask`, drawn from a
seed and a traced fraction), which the run writes into the stage's state as the Knobs
"attacker_mask" each round (`fgl_jax.federated.adversary`), so changing the attacker set never
recompiles. With Delta_i = upload_i - params (the upload itself when params is None):

    sign_flip   Delta_i -> -Delta_i                          (Blanchard et al.'s sign flipping)
    scale       Delta_i -> boost * Delta_i                   (Bagdasaryan et al.'s model replacement)
    gaussian    Delta_i -> N(0, std^2 I)                     (Gaussian-noise updates, Fang et al.)

Label flipping changes the attacker's training data instead (`flip_labels`), before local training, and
so does the graph backdoor (`fgl_jax.federated.backdoor`).
"""
from __future__ import annotations

from typing import Any, Optional

import jax
import jax.numpy as jnp

from fgl_jax.aggregators.base import Aggregator
from fgl_jax.aggregators.knobs import Knobs

PyTree = Any
UPLOAD_ATTACKS = ("sign_flip", "scale", "gaussian")
# the data attacks change what an attacker trains on (fgl_jax.federated.adversary): label_flip its
# labels, backdoor a trigger planted in some of its training items (fgl_jax.federated.backdoor)
ATTACKS = (*UPLOAD_ATTACKS, "label_flip", "backdoor")


def attacker_mask(seed: int, num_clients: int, fraction: Any) -> jax.Array:
    """The attackers: the round(fraction * C) clients of lowest score u ~ U(0,1)^C drawn from `seed`,
    so a larger fraction keeps the smaller one's attackers.

    Args:
        seed: the attacker draw's seed.
        num_clients: C.
        fraction: the attacker fraction in [0, 1] (may be traced).

    Returns:
        bool `[C]`: True for an attacker.
    """
    u = jax.random.uniform(jax.random.key(seed), (num_clients,))
    rank = jnp.argsort(jnp.argsort(u))
    return rank < jnp.floor(jnp.asarray(fraction, jnp.float32) * num_clients + 0.5)


def attack(kind: str, boost: float = 10.0, std: float = 1.0) -> Aggregator:
    """Per client `[C, ...]` -> `[C, ...]`: the uploads of the clients in the state's Knobs
    "attacker_mask" (bool `[C]`; None = no attacker) replaced as `kind` says (module docstring).

    Args:
        kind: "sign_flip", "scale" or "gaussian" (`UPLOAD_ATTACKS`).
        boost: the scale attack's factor.
        std: the Gaussian attack's standard deviation.

    Returns:
        An `Aggregator` of kind "per_client".

    Raises:
        ValueError: an unknown kind (label_flip changes data, not uploads).
    """
    if kind not in UPLOAD_ATTACKS:
        raise ValueError(f"attack: kind must be one of {UPLOAD_ATTACKS} (label_flip changes data, not "
                         f"uploads), got {kind!r}")

    def aggregate(state: Knobs, updates: PyTree, weights, key, *, params: Optional[PyTree] = None, mask=None):
        bad = state.get("attacker_mask")
        if bad is None:
            return updates, state
        leaves, treedef = jax.tree.flatten(updates)
        refs = [None] * len(leaves) if params is None else jax.tree.leaves(params)
        keys = jax.random.split(key, len(leaves))
        out = []
        for x, p, k in zip(leaves, refs, keys):
            delta = x if p is None else x - p
            if kind == "sign_flip":
                evil = -delta
            elif kind == "scale":
                evil = boost * delta
            else:
                evil = std * jax.random.normal(k, x.shape, jnp.float32).astype(x.dtype)
            evil = evil if p is None else p + evil
            out.append(jnp.where(bad.reshape((-1,) + (1,) * (x.ndim - 1)), evil, x))
        return jax.tree.unflatten(treedef, out), state

    return Aggregator(init=lambda params: Knobs({"attacker_mask": None}), aggregate=aggregate, kind="per_client")


def flip_labels(y: jax.Array, bad: jax.Array, num_classes: int, shift: int = 1) -> jax.Array:
    """Every label of the clients in `bad` shifted by one class.

    Args:
        y: int labels `[C, ...]` (nodes `[C, N]`, or a graph batch's `[C, M, G]`).
        bad: bool `[C]`, the attackers.
        num_classes: K.
        shift: the shift.

    Returns:
        `y` with the attackers' rows replaced by (y + shift) mod K.
    """
    bad = bad.reshape((-1,) + (1,) * (y.ndim - 1))
    return jnp.where(bad, (y + shift) % num_classes, y).astype(y.dtype)
