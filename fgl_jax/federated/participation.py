"""Partial participation: each round a uniform sample of m clients, without replacement, trains.

    algorithm = with_participation(algorithm, fraction=0.1)        # or count=100

The sample is drawn inside the jitted round from the round's key (so it is seeded by the run's
seed and does not depend on chunking), among the C_t clients holding training nodes; m is static
(`participants`), so the program compiles once. The sampled clients are *gathered* into an
m-client axis before local training: under `vmap` a masked-out client costs as much as a
participating one (XLA computes every lane and selects), so masking 900 of 1,000 clients would
still pay for 1,000 (`benchmarks/bench_participation.py` measures both).

What the wrapped round sees is the algorithm's own round on a `FedData` whose `train`,
`train_index` and `train_weight` hold only the sampled clients (`train_total` = C_t), with the
state fields on the training-client axis (`FederatedAlgorithm.train_axis`, the optimiser states)
gathered likewise and scattered back afterwards. So aggregation averages over the sampled clients
(weights renormalised), per-client state of the others is left unchanged (algorithms write it
back with `.at[train_index].set`), and evaluation still covers every client. With m = C_t the
wrapper is not applied at all, so a fraction of 1.0 is the full run bit for bit.

An algorithm whose clients cannot be gathered (`FederatedAlgorithm.masked_sampling`: heterogeneous
client models, whose architecture groups are static positions) gets the same sample as positions
in `FedData.sample` with `train` left whole, and trains the sampled clients by mask: each group's
vmapped update runs for all its training clients, the others' results are dropped. The sample and
the round's key are the gathered path's, so the result is the same; only the cost is the full one.
"""
from __future__ import annotations

import math
from typing import Any, Optional

import jax
import jax.numpy as jnp

from fgl_jax.federated.algorithm import FedData, FederatedAlgorithm, with_round

PyTree = Any


def participants(num_train: int, fraction: float = 1.0, count: Optional[int] = None) -> int:
    """Clients sampled per round out of `num_train`: `count` if given (at most num_train), else
    ceil(fraction * num_train), at least 1.

    Args:
        num_train: the clients holding training nodes.
        fraction: the fraction sampled per round, in (0, 1].
        count: a fixed number per round, >= 1 (overrides `fraction`); None: use `fraction`.

    Returns:
        m, the clients per round, in 1..num_train.

    Raises:
        ValueError: `count` < 1 or `fraction` outside (0, 1].
    """
    if count is not None:
        if count < 1:
            raise ValueError(f"clients_per_round must be >= 1, got {count}")
        return min(int(count), num_train)
    if not 0.0 < fraction <= 1.0:
        raise ValueError(f"client_fraction must be in (0, 1], got {fraction}")
    # round() first: 0.3 * 10 = 3.0000000000000004 must give 3, not 4
    return max(1, min(num_train, math.ceil(round(fraction * num_train, 9))))


def sample_clients(key: jax.Array, n: int, m: int) -> jax.Array:
    """m distinct indices out of range(n), uniformly, ascending.

    Args:
        key: the PRNG key.
        n: the population (static).
        m: the sample size, <= n (static).

    Returns:
        int32 `[m]`, sorted.
    """
    return jnp.sort(jax.random.choice(key, n, (m,), replace=False)).astype(jnp.int32)


def restrict(data: FedData, index: jax.Array) -> FedData:
    """`data` with only the training clients at positions `index` [m] (positions in `data.train`)."""
    return data.replace(train=jax.tree.map(lambda a: a[index], data.train), train_index=data.train_index[index],
                        train_weight=data.train_weight[index], train_total=data.train.num_clients,
                        train_is_eval=False)


def with_participation(algorithm: FederatedAlgorithm, fraction: float = 1.0, count: Optional[int] = None
                       ) -> FederatedAlgorithm:
    """`algorithm` whose rounds train a uniform sample of the clients (see the module docstring).

    The metrics' `participants` column (m per round) is added by the program's per-round columns
    (`fgl_jax.federated.communication.per_round_columns`), not by this wrapper.

    Args:
        algorithm: the algorithm; the state fields of its `train_axis` are gathered for the sample
            and scattered back.
        fraction: the fraction of training clients per round, in (0, 1].
        count: a fixed number of clients per round, >= 1 (overrides `fraction`).

    Returns:
        The wrapped algorithm (every phase's round samples too), or `algorithm` unchanged for
        fraction 1.0 without a count.

    Raises:
        ValueError: `count` < 1 or `fraction` outside (0, 1].
    """
    if count is None and fraction == 1.0:
        return algorithm
    participants(10 ** 6, fraction, count)  # check the arguments now, not inside the trace

    def wrap(round_):
        def round_fn(state, data: FedData, key: jax.Array):
            n = data.train.num_clients
            m = participants(n, fraction, count)
            if m == n:
                return round_(state, data, key)
            k_pick, k_round = jax.random.split(key)
            index = sample_clients(k_pick, n, m)
            if algorithm.masked_sampling:   # the round trains the sample by mask (module docstring)
                return round_(state, data.replace(sample=index), k_round)
            full = {f: getattr(state, f) for f in algorithm.train_axis}
            state = state.replace(**{f: jax.tree.map(lambda a: a[index], v) for f, v in full.items()})
            state, metrics = round_(state, restrict(data, index), k_round)
            state = state.replace(**{f: jax.tree.map(lambda a, b: a.at[index].set(b), v, getattr(state, f))
                                     for f, v in full.items()})
            return state, metrics
        return round_fn

    # every phase's round samples too (a phase's hand-over, `Phase.enter`, sees all clients)
    return with_round(algorithm, wrap)
