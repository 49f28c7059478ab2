"""Checks for config fields: one way to refuse a bad hyperparameter, with one message shape.

Every frozen config dataclass validates itself in `__post_init__` with these helpers, so a bad
value fails where it is written (a YAML file, a CLI flag, a constructor call), with the owner and
the field named, and never later as a shape error or a NaN deep inside a jitted program.

    >>> positive("OptimConfig", "lr", 0.0)
    Traceback (most recent call last):
    ValueError: OptimConfig.lr must be > 0, got 0.0
"""
from __future__ import annotations

import math
from typing import Any, Iterable, Optional


def _fail(owner: str, name: str, rule: str, value: Any) -> None:
    raise ValueError(f"{owner}.{name} must be {rule}, got {value!r}")


def _real(owner: str, name: str, value: Any) -> float:
    # bool is an int in Python; True as a learning rate is a typo, not 1.0
    if isinstance(value, bool):
        _fail(owner, name, "a number", value)
    try:
        v = float(value)
    except (TypeError, ValueError):
        _fail(owner, name, "a number", value)
    if math.isnan(v):
        _fail(owner, name, "a number", value)
    return v


def one_of(owner: str, name: str, value: Any, allowed: Iterable[Any]) -> None:
    """`value` must be one of `allowed` (names of algorithms, modes, models, ...)."""
    allowed = tuple(allowed)
    if value not in allowed:
        raise ValueError(f"{owner}.{name}: unknown value {value!r}; expected one of {allowed}")


def positive(owner: str, name: str, value: Any) -> None:
    """`value` > 0."""
    if _real(owner, name, value) <= 0:
        _fail(owner, name, "> 0", value)


def non_negative(owner: str, name: str, value: Any) -> None:
    """`value` >= 0."""
    if _real(owner, name, value) < 0:
        _fail(owner, name, ">= 0", value)


def at_least(owner: str, name: str, value: Any, low: float) -> None:
    """`value` >= `low` (counts: rounds, clients, local steps, hops)."""
    if _real(owner, name, value) < low:
        _fail(owner, name, f">= {low}", value)


def in_interval(owner: str, name: str, value: Any, low: float, high: float,
                closed: str = "neither") -> None:
    """`value` in the interval from `low` to `high`; `closed` in {neither, left, right, both}."""
    one_of("in_interval", "closed", closed, ("neither", "left", "right", "both"))
    v = _real(owner, name, value)
    left_ok = v >= low if closed in ("left", "both") else v > low
    right_ok = v <= high if closed in ("right", "both") else v < high
    if not (left_ok and right_ok):
        lb = "[" if closed in ("left", "both") else "("
        rb = "]" if closed in ("right", "both") else ")"
        _fail(owner, name, f"in {lb}{low}, {high}{rb}", value)


def optional_positive(owner: str, name: str, value: Optional[Any]) -> None:
    """None (meaning "not set") or > 0."""
    if value is not None:
        positive(owner, name, value)
