"""Attackers and traced aggregator values for any algorithm that aggregates: `with_adversaries`.

    algorithm = with_adversaries(algorithm, knobs={"aggregator_trim": 0.1}, attack="sign_flip",
                                 attackers=0.2, seed=0)

wraps an algorithm (before `with_participation`, so it sees the round's sampled clients) so that

- `init` adds the knob values (and "attackers", the attacker fraction, when an attack is set) to
  `state.hp`, where sweeps set traced values: a sweep over them runs as one compiled program;
- each round writes this round's values into the aggregator's `Knobs` (`fgl_jax.aggregators.knobs`):
  the hp values, and "attacker_mask", the attackers among this round's training clients
  (`attacker_mask(seed, C, attackers)[train_index]`); the aggregator's state is restored after it;
- attack "label_flip" shifts the training labels of the attacking clients before local training
  (the round's `data.train.y`; evaluation keeps the true labels);
- attack "backdoor" gives the attacking clients their poisoned training data (trigger planted,
  relabelled to the target: `fgl_jax.federated.backdoor`), prepared for every client on the host
  in `data.extra["backdoor_train"]` `[C, ...]` and selected by the mask on device.

The upload attacks themselves are the aggregator's first stage (`fgl_jax.aggregators.attacks.attack`,
placed by `fgl_jax.federated.config.server_aggregator` from `FedConfig.upload_stages`), so every
algorithm that aggregates through the run's aggregator is attacked in the same place.
"""
from __future__ import annotations

from typing import Mapping, Optional

import jax
import jax.numpy as jnp
import numpy as np

from fgl_jax.aggregators import knobs as K
from fgl_jax.aggregators.attacks import ATTACKS, attacker_mask, flip_labels
from fgl_jax.federated.algorithm import FedData, FederatedAlgorithm, with_round
from fgl_jax.federated.backdoor import TRAIN_KEY, select_poisoned


def attacker_ids(seed: int, num_clients: int, fraction: float) -> list[int]:
    """The attacking clients' ids (host side, for the run's summary): `attacker_mask` evaluated."""
    return [int(i) for i in np.flatnonzero(np.asarray(attacker_mask(seed, num_clients, fraction)))]


def with_adversaries(algorithm: FederatedAlgorithm, knobs: Optional[Mapping[str, float]] = None,
                     attack: str = "none", attackers: float = 0.0, seed: int = 0,
                     num_classes: Optional[int] = None) -> FederatedAlgorithm:
    """`algorithm` with traced aggregator knobs and an attack (module docstring). knobs: name ->
    configured value of every Knobs name the run's aggregator reads; attack: "none" or one of
    ATTACKS (label_flip and backdoor need num_classes; backdoor reads data.extra["backdoor_train"]).
    Unchanged when there is nothing to do."""
    if attack != "none" and attack not in ATTACKS:
        raise ValueError(f"attack must be 'none' or one of {', '.join(ATTACKS)}, got {attack!r}")
    if attack in ("label_flip", "backdoor") and not num_classes:
        raise ValueError("attack label_flip needs the number of classes")
    values = {k: float(v) for k, v in (knobs or {}).items()}
    if attack != "none":
        values["attackers"] = float(attackers)
    if not values:
        return algorithm
    inner_init = algorithm.init

    def init(key, data):
        state = inner_init(key, data)
        if isinstance(getattr(state, "hp", None), dict):
            state = state.replace(hp={**state.hp, **{k: jnp.float32(v) for k, v in values.items()}})
        return state

    def wrap(round_):
        def round_fn(state, data: FedData, key: jax.Array):
            hp = getattr(state, "hp", None)
            now = {k: (hp[k] if isinstance(hp, dict) and k in hp else jnp.float32(v)) for k, v in values.items()}
            if attack != "none":
                bad = attacker_mask(seed, data.eval.num_clients, now["attackers"])[data.train_index]
                now["attacker_mask"] = bad
                if attack == "label_flip":
                    data = data.replace(train=data.train.replace(y=flip_labels(data.train.y, bad, num_classes)))
                elif attack == "backdoor":
                    poisoned = jax.tree.map(lambda a: a[data.train_index], data.extra[TRAIN_KEY])
                    data = data.replace(train=select_poisoned(data.train, poisoned, bad))
            agg = getattr(state, "aggregator", None)
            if agg is None:
                return round_(state, data, key)
            new, metrics = round_(state.replace(aggregator=K.fill(agg, now)), data, key)
            return new.replace(aggregator=K.restore(new.aggregator, agg)), metrics
        return round_fn

    return with_round(algorithm._replace(init=init), wrap)
