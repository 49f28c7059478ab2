"""Vectorised sweeps: many seeds / hyperparameter values as ONE compiled program.

`run_sweep` vmaps `init` and the `lax.scan` over rounds across S members. Members differ in
their PRNG key and in traced hyperparameters stored in `state.hp` (e.g. lr, prox_mu): values
that do not change any shape. A shape-changing parameter (hidden size, clients) cannot be
vmapped; `check_sweepable` refuses it with a clear message.
"""
from __future__ import annotations

import dataclasses
import time
from typing import Any, Mapping, Optional, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from fgl_jax.federated.algorithm import FederatedAlgorithm, x64_scope
from fgl_jax.federated.run import Tracker, _check_finite

SHAPE_CHANGING = ("hidden", "num_layers", "clients", "local_steps", "rounds", "model", "dataset",
                  "partition", "algorithm", "heads")


@dataclasses.dataclass
class SweepResult:
    history: dict          # metric -> np.ndarray [S, rounds]
    best: dict             # best_val, best_test, best_round -> np.ndarray [S]
    members: list          # one dict per member: seed + hyperparameter values
    compile_seconds: float
    run_seconds: float


def check_sweepable(names: Sequence[str], hp_keys: Sequence[str]) -> None:
    for n in names:
        if n in SHAPE_CHANGING:
            raise ValueError(f"cannot vectorise a sweep over {n!r}: it changes array shapes or the program; "
                             "run separate programs (one per value) instead")
        if n not in hp_keys:
            raise ValueError(f"cannot vectorise a sweep over {n!r}: this algorithm's traced hyperparameters "
                             f"are {sorted(hp_keys)}")


def run_sweep(algorithm: FederatedAlgorithm, data: Any, seeds: Sequence[int], num_rounds: int,
              hparams: Optional[Mapping[str, Sequence[float]]] = None, mode: str = "auto") -> SweepResult:
    """Run S = len(seeds) members; hparams maps a name in state.hp to S values.

    mode: "vmap" = one program over all members at once (the win on accelerators);
    "sequential" = the single-member program compiled ONCE and called S times (on a CPU,
    which has no idle parallel hardware, this is faster: see benchmarks/results/fedavg.json);
    "auto" = vmap on GPU/TPU, sequential on CPU. Both give the same numbers.
    Member i uses key jax.random.key(seeds[i]) exactly as `run(..., key(seeds[i]))` does, so a
    member equals the corresponding single run (tested).
    """
    with x64_scope(algorithm):
        return _run_sweep(algorithm, data, seeds, num_rounds, hparams, mode)


def _run_sweep(algorithm, data, seeds, num_rounds, hparams, mode) -> SweepResult:
    if mode == "auto":
        mode = "sequential" if jax.default_backend() == "cpu" else "vmap"
    if mode not in ("vmap", "sequential"):
        raise ValueError(f"sweep mode must be 'auto', 'vmap' or 'sequential', got {mode!r}")
    seeds = [int(s) for s in seeds]
    s = len(seeds)
    if s == 0:
        raise ValueError("sweep needs at least one member")
    hparams = dict(hparams or {})
    for name, vals in hparams.items():
        if len(vals) != s:
            raise ValueError(f"sweep value list for {name!r} has {len(vals)} entries, expected {s} (one per seed)")
    keys = jax.vmap(jax.random.key)(jnp.asarray(seeds, jnp.uint32))
    split = jax.vmap(jax.random.split)(keys)
    init_keys, run_keys = split[:, 0], split[:, 1]

    def member(data, init_key, run_key, hp_values):  # data is an argument: closed-over arrays become constants
        state = algorithm.init(init_key, data)
        if hp_values:
            check_sweepable(list(hp_values), list(state.hp))
            state = state.replace(hp={**state.hp, **{k: jnp.asarray(v, jnp.float32) for k, v in hp_values.items()}})

        def body(carry, r):
            st, tr = carry
            st, m = algorithm.round(st, data, jax.random.fold_in(run_key, r))
            return (st, tr.update(r, m)), m

        (state, tracker), metrics = jax.lax.scan(body, (state, Tracker.empty()),
                                                 jnp.arange(num_rounds, dtype=jnp.int32))
        return tracker, metrics

    hp_arrays = {k: jnp.asarray(v, jnp.float32) for k, v in hparams.items()}
    if mode == "vmap":
        t0 = time.perf_counter()
        compiled = jax.jit(jax.vmap(member, in_axes=(None, 0, 0, 0))).lower(data, init_keys, run_keys, hp_arrays).compile()
        t1 = time.perf_counter()
        tracker, metrics = jax.device_get(compiled(data, init_keys, run_keys, hp_arrays))
        t2 = time.perf_counter()
    else:
        pick = lambda i: (data, init_keys[i], run_keys[i], {k: v[i] for k, v in hp_arrays.items()})
        t0 = time.perf_counter()
        compiled = jax.jit(member).lower(*pick(0)).compile()
        t1 = time.perf_counter()
        outs = [jax.device_get(compiled(*pick(i))) for i in range(s)]
        t2 = time.perf_counter()
        tracker, metrics = jax.tree.map(lambda *xs: np.stack(xs), *outs)
    history = {k: np.asarray(v) for k, v in metrics.items()}
    for i in range(s):
        _check_finite({k: v[i] for k, v in history.items()}, 0)
    members = [{"seed": seeds[i], **{k: float(v[i]) for k, v in hparams.items()}} for i in range(s)]
    best = {"best_val": np.asarray(tracker.best_val), "best_test": np.asarray(tracker.best_test),
            "best_round": np.asarray(tracker.best_round) + 1}
    return SweepResult(history, best, members, t1 - t0, t2 - t1)
