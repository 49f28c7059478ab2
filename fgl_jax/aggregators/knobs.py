"""Traced values an aggregator reads from its state: `Knobs`.

A robust aggregator's trim level, a norm bound's clipping norm or an attack's attacker mask must
not be Python constants baked into the compiled program, or a sweep over them would compile once
per value. A stage that reads such values keeps them in its state as `Knobs({name: value})`; the
run writes this round's values into every `Knobs` of the aggregator's state before the round
(`fill`, from `state.hp`, where sweeps set traced values) and puts the originals back after it
(`restore`, so the carried state keeps one structure and shape however the round's values look).

    state = agg.init(params)                                  # Knobs hold the configured values
    state = fill(state, {"aggregator_trim": jnp.float32(0.2)})
    out, state = agg.aggregate(state, updates, weights, key)  # the stage reads state.values[...]

A name a `Knobs` holds but `fill` is not given keeps its value; a value None means "not set".
"""
from __future__ import annotations

from typing import Any, Mapping

import flax
import jax

PyTree = Any


@flax.struct.dataclass
class Knobs:
    """name -> traced value (a scalar, or an array such as the attacker mask [C]; None = unset)."""

    values: dict

    def get(self, name: str, default: Any = None) -> Any:
        v = self.values.get(name)
        return default if v is None else v


def _is_knobs(x) -> bool:
    return isinstance(x, Knobs)


def fill(state: PyTree, values: Mapping[str, Any]) -> PyTree:
    """`state` with every `Knobs` in it holding `values[name]` for each of its names found there."""
    return jax.tree.map(lambda n: Knobs({k: values.get(k, v) for k, v in n.values.items()}) if _is_knobs(n) else n,
                        state, is_leaf=_is_knobs)


def restore(state: PyTree, original: PyTree) -> PyTree:
    """`state` with each `Knobs` replaced by the one at the same place in `original` (the state
    before `fill`): what a round carries on is the configured structure, not this round's values."""
    return jax.tree.map(lambda n, o: o if _is_knobs(n) else n, state, original, is_leaf=_is_knobs)


def names(state: PyTree) -> set[str]:
    """Every name a `Knobs` in `state` reads."""
    out: set[str] = set()
    for leaf in jax.tree.leaves(state, is_leaf=_is_knobs):
        if _is_knobs(leaf):
            out.update(leaf.values)
    return out
