"""The server's half of a round as a pair of pure functions, in the shape of optax's transformations:

    init(params)                                              -> state
    aggregate(state, updates, weights, key, *, params, mask)  -> (aggregate, state)

updates: what the clients upload, a pytree of [C, ...] leaves (their trained models, or their model
changes); weights: float [C], each client's aggregation weight (training-node counts, or ones);
key: this round's aggregation key; params: the server's current value in the same space as one
client's upload (the global model when clients upload models; None when they upload changes, whose
reference is zero); mask: bool [C] or None, the clients that took part (None: all of them).

An aggregator is one of three kinds, by what it maps:

    "per_client"  [C, ...] -> [C, ...]   e.g. `clip` (DP-FedAvg's per-client clipping)
    "reduce"      [C, ...] -> [...]      e.g. `mean`; later a median, a trimmed mean, Krum, a secure sum
    "server"      [...]    -> [...]      e.g. `gaussian_noise`, `server_optimizer` (FedAvgM, FedAdam, ...)

`chain` composes them in that order (per-client stages, one reduction, server stages) into one
aggregator of kind "reduce": what every algorithm calls once per round. Every stage sees the same
weights, params and mask, and its own key (`fold_in(key, stage index)`), so a stage after the
reduction still knows the number of clients (DP's noise scale) and the server model (the
optimiser's pseudo-gradient params - mean).

Shapes: C clients; `[C, ...]` a leaf with a leading client axis, `[...]` one model's leaf.
"""
from __future__ import annotations

from typing import Any, Callable, NamedTuple, Optional

import jax

PyTree = Any
KINDS = ("per_client", "reduce", "server")


class Aggregator(NamedTuple):
    """A server aggregation stage: a pair of pure functions and its kind (optax's transformation shape).

    Attributes:
        init: `init(params) -> state`, the stage's state for the server model `params`.
        aggregate: `aggregate(state, updates, weights, key, *, params=None, mask=None) -> (aggregate,
            state)`; `updates` a pytree of `[C, ...]` leaves, `weights` float `[C]`, `mask` bool `[C]` or
            None (see the module docstring).
        kind: one of `KINDS`: "per_client" (`[C, ...] -> [C, ...]`), "reduce" (`[C, ...] -> [...]`) or
            "server" (`[...] -> [...]`).
    """

    init: Callable[[PyTree], PyTree]
    aggregate: Callable[..., tuple[PyTree, PyTree]]
    kind: str = "reduce"


def stateless(fn: Callable[..., PyTree], kind: str) -> Aggregator:
    """An aggregator without state from a function of one round's uploads.

    Args:
        fn: `fn(updates, weights, key, *, params, mask) -> aggregate`, with the shapes of the module
            docstring (its output's shape follows `kind`).
        kind: one of `KINDS`.

    Returns:
        An `Aggregator` whose state is `()` and whose `aggregate` calls `fn`.

    Raises:
        ValueError: `kind` is not one of `KINDS`.
    """
    if kind not in KINDS:
        raise ValueError(f"aggregator kind must be one of {KINDS}, got {kind!r}")

    def aggregate(state, updates, weights, key, *, params=None, mask=None):
        return fn(updates, weights, key, params=params, mask=mask), state

    return Aggregator(init=lambda params: (), aggregate=aggregate, kind=kind)


def chain(*aggregators: Aggregator) -> Aggregator:
    """The aggregators applied in turn, each to the previous one's output (optax.chain's shape).

    Their kinds must read per_client*, reduce, server* (a clip after the mean, or a server
    optimiser before it, has no meaning and is refused here). Each stage gets its own key,
    `fold_in(key, stage index)`.

    Args:
        *aggregators: the stages, in the order they apply.

    Returns:
        One `Aggregator`, of kind "reduce" when one stage reduces, else of the stages' common kind. Its
        state is the tuple of the stages' states; its `aggregate` refuses any other state.

    Raises:
        ValueError: no stages, an unknown kind, or kinds out of the order above.
    """
    if not aggregators:
        raise ValueError("chain needs at least one aggregator")
    kinds = [a.kind for a in aggregators]
    for k in kinds:
        if k not in KINDS:
            raise ValueError(f"aggregator kind must be one of {KINDS}, got {k!r}")
    order = [KINDS.index(k) for k in kinds]
    if order != sorted(order) or kinds.count("reduce") > 1 or ("reduce" not in kinds and len(set(kinds)) > 1):
        raise ValueError(f"chain: stages must be per_client stages, one reduce, then server stages; got "
                         f"{' -> '.join(kinds)}")
    kind = "reduce" if "reduce" in kinds else kinds[0]

    def init(params: PyTree) -> tuple:
        return tuple(a.init(params) for a in aggregators)

    def aggregate(state: tuple, updates: PyTree, weights: jax.Array, key: jax.Array, *,
                  params: Optional[PyTree] = None, mask: Optional[jax.Array] = None):
        if not isinstance(state, tuple) or len(state) != len(aggregators):
            got = f"a tuple of {len(state)}" if isinstance(state, tuple) else type(state).__name__
            raise ValueError(f"chain: the state must be the tuple of its {len(aggregators)} stages' states "
                             f"(from its init), got {got}")
        out = []
        for i, (a, s) in enumerate(zip(aggregators, state)):
            updates, s = a.aggregate(s, updates, weights, jax.random.fold_in(key, i), params=params, mask=mask)
            out.append(s)
        return updates, tuple(out)

    return Aggregator(init=init, aggregate=aggregate, kind=kind)
