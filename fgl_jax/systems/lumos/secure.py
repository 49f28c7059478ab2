"""Simulated secure comparison (stand-in for CrypTFlow2's millionaires' protocol) [spec A13].

Lumos compares degrees (greedy init, Alg. 1 line 4) and workloads (Alg. 3) between devices
with a 2-party secure comparison, so each party learns only the comparison bit (Def. 2). No
real MPC is run here: `SecureComparator` owns the private integers, exposes only comparison
bits, and counts calls and the bits each call would cost. Device-side code in `workload.py`
reads other devices' degrees / workloads only through it.
"""
from __future__ import annotations

import math

import numpy as np


class SecureComparator:
    """Oracle holding one private integer per device; reveals only comparison results.

    values: int [N] private integers (degree bucket or workload). They are copied in; the
    owning device updates its own entry with `set(v, value)` (a device always knows its own
    value). `ge(i, j)` -> bool array, Pr-free: 1 iff value[i] >= value[j], elementwise.
    Counters: `calls` (number of 2-party comparisons), `bits` (calls * bit width L, the
    input size of one millionaires' instance, cost O(L log L) each [paper §V-C]).
    """

    def __init__(self, values: np.ndarray, bit_width: int | None = None):
        self._values = np.asarray(values, np.int64).copy()
        if self._values.ndim != 1:
            raise ValueError(f"SecureComparator: values must be 1-D, got shape {self._values.shape}")
        if self._values.size and self._values.min() < 0:
            raise ValueError("SecureComparator: values must be non-negative integers")
        hi = int(self._values.max()) if self._values.size else 1
        self.bit_width = int(bit_width) if bit_width else max(1, math.ceil(math.log2(hi + 2)))
        self.calls = 0
        self.bits = 0

    def set(self, device: int, value: int) -> None:
        """Device `device` updates its own private value (no information leaves it)."""
        self._values[int(device)] = int(value)

    def add(self, devices: np.ndarray, delta: np.ndarray | int) -> None:
        """Devices update their own values by `delta` (np.add.at: repeated ids accumulate)."""
        np.add.at(self._values, np.asarray(devices, np.int64), delta)

    def ge(self, i, j) -> np.ndarray:
        """value[i] >= value[j] elementwise (arrays broadcast); one secure comparison each."""
        i, j = np.broadcast_arrays(np.asarray(i, np.int64), np.asarray(j, np.int64))
        self.calls += int(i.size)
        self.bits += int(i.size) * self.bit_width
        return self._values[i] >= self._values[j]

    def is_max_among(self, members: np.ndarray) -> np.ndarray:
        """Alg. 3 Op2: each member compares itself with every other member (|C|(|C|-1) calls).

        Returns bool [|C|]: member's value >= every other member's. Simulated with a sort
        (the answer each member would assemble from its |C|-1 comparison bits).
        """
        members = np.asarray(members, np.int64)
        c = members.size
        self.calls += c * (c - 1)
        self.bits += c * (c - 1) * self.bit_width
        vals = self._values[members]
        return vals >= vals.max() if c else np.zeros(0, bool)

    def difference(self, own_value: int, j: int) -> int:
        """2-party secure subtraction own_value - value[j] (Alg. 2 line 7: u holds f(X_t), u' holds
        f(X')); both learn only the difference."""
        self.calls += 1
        self.bits += self.bit_width
        return int(own_value) - int(self._values[int(j)])
