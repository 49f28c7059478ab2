"""The one engine: any FederatedAlgorithm as a `lax.scan` over rounds, in chunks, with hooks.

One jitted program runs up to `chunk` rounds (round r uses key fold_in(run_key, r), so the numbers
do not depend on the chunking; the same program serves every chunk length); between chunks the host
updates the progress bar, appends the per-round metrics to `metrics.jsonl`, checks for NaN/inf,
starts an asynchronous orbax checkpoint when the policy says so (default: at most one per 30 s,
plus the last round) and calls the
program's hooks (`Hooks`): an evaluation callback at chosen rounds, a stop predicate (early
stopping), a selection rule for the reported round and a finaliser (post-training evaluation,
attacks). Best-validation selection is tracked inside the scan.

An algorithm with `phases` (`fgl_jax.federated.algorithm.Phase`) gets one such program per phase:
chunks end at phase starts, and the program of a phase applies the phase's hand-over when a chunk
starts at its first round (a resume inside a phase skips it; checkpoints hold the one state
structure all phases share).

Shapes: C clients; `[rounds]` one value per round run.
"""
from __future__ import annotations

import collections
import dataclasses
import json
import math
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable, Optional

import flax
import jax
import jax.numpy as jnp
import numpy as np

from fgl_jax import progress as phase_lines
from fgl_jax.federated.ahead import placement, signature, start as start_compiling
from fgl_jax.federated.algorithm import FederatedAlgorithm, Hooks, x64_scope
from fgl_jax.federated.evaluation import SPREAD_KEYS
from fgl_jax.federated.lowering import unrolled_threefry
from fgl_jax.federated.options import CONFIG_ONLY, RunOptions, resolve as resolve_options

unrolled_threefry()  # before any program of the engine is traced: same bits, cheaper to compile and run

PyTree = Any


class NonFiniteError(FloatingPointError):
    """Training produced NaN or inf; the message names the round."""


@flax.struct.dataclass
class Tracker:
    """Best-validation selection: metrics at the round with the highest validation metric (first on
    ties). keys: (validation, test) metric names, `FederatedAlgorithm.select` (val_acc, test_acc by
    default; val_auc, test_auc for link prediction); static, so a checkpoint holds the same leaves.
    A third entry "min" selects the round with the lowest validation metric (val_loss): the tracker
    then holds the negated value (`_best_dict` reports it as it was)."""

    best_val: jax.Array
    best_test: jax.Array
    best_round: jax.Array
    keys: tuple = flax.struct.field(pytree_node=False, default=("val_acc", "test_acc"))

    @staticmethod
    def empty(keys: tuple = ("val_acc", "test_acc")) -> "Tracker":
        # NumPy scalars: jnp.float32(...) would compile a tiny XLA program per dtype at start-up
        # -1 is below every accuracy / AUC; a negated loss can be anything, so it starts at -inf
        return Tracker(np.float32(-np.inf if lowest(keys) else -1.0), np.float32(0.0), np.int32(-1), tuple(keys))

    def update(self, r: jax.Array, m: dict) -> "Tracker":
        val, test = m[self.keys[0]].astype(jnp.float32), m[self.keys[1]].astype(jnp.float32)
        val = -val if lowest(self.keys) else val
        better = val > self.best_val
        return Tracker(jnp.where(better, val, self.best_val),
                       jnp.where(better, test, self.best_test),
                       jnp.where(better, r, self.best_round), self.keys)


@dataclasses.dataclass
class RunResult:
    """What every run returns, whatever the system (C clients).

    Attributes:
        state: the algorithm's final state (a pytree).
        history: metric -> np.ndarray `[rounds_run]` (per-client metrics `[rounds_run, C]`).
        best: the reported round: "best_val", "best_test", "best_round" (1-based), plus whatever a
            `select` hook adds.
        compile_seconds: the time spent compiling.
        run_seconds: the time spent running the rounds.
        evaluations: rows returned by `Hooks.on_chunk` (each with its "round").
        extras: what `Hooks.finalize` returned (post-training evaluation, attacks, ...).
        diverged: True when the run stopped at a non-finite round (on_nonfinite="stop"); the history
            ends before it.
        checkpoint_seconds: the time the loop waited for checkpoints (saves are asynchronous).
        summary: what summary.json holds (set by `run_config`).
        timings: what timings.json holds (set by `run_config`).
    """

    state: PyTree
    history: dict
    best: dict
    compile_seconds: float
    run_seconds: float
    evaluations: list = dataclasses.field(default_factory=list)
    extras: dict = dataclasses.field(default_factory=dict)
    diverged: bool = False   # stopped at a non-finite round (on_nonfinite="stop"); history ends before it
    checkpoint_seconds: float = 0.0  # time the loop waited for checkpoints (saves are asynchronous)
    summary: dict = dataclasses.field(default_factory=dict)  # what summary.json holds (fgl_jax.experiment)
    timings: dict = dataclasses.field(default_factory=dict)  # what timings.json holds (fgl_jax.experiment)

    @property
    def rounds_run(self) -> int:
        return len(next(iter(self.history.values()))) if self.history else 0

    @property
    def final(self) -> dict:
        """Each scalar metric's last finite value (metrics a system only fills at evaluation rounds,
        NaN elsewhere, report their last evaluation; all-NaN metrics are left out)."""
        out = {}
        for k, v in self.history.items():
            v = np.asarray(v, dtype=float)
            if v.ndim == 1 and np.isfinite(v).any():
                out[k] = float(v[np.flatnonzero(np.isfinite(v))[-1]])
        return out


def round_step(round_fn: Callable, state: PyTree, tracker: Tracker, data: Any, run_key: jax.Array,
               r: jax.Array) -> tuple[PyTree, Tracker, dict]:
    """The one round body every engine path runs (`make_scan`, `make_chunk`, the sweep's member).

    Round r (0-based, traced int32) is `round_fn(state, data, fold_in(run_key, r))`; the
    best-validation tracker sees its metrics. Returns (state, tracker, metrics of round r). The
    non-finite / loss-guard check runs on the host over a chunk's metrics (`bad_round`), where it can
    name the round and stop the writers, not here.
    """
    state, metrics = round_fn(state, data, jax.random.fold_in(run_key, r))
    return state, tracker.update(r, metrics), metrics


def scan_rounds(round_fn: Callable, state: PyTree, tracker: Tracker, data: Any, run_key: jax.Array,
                rounds: jax.Array) -> tuple[PyTree, Tracker, dict]:
    """`round_step` over rounds [R] (int32) as one `lax.scan`: (state, tracker, metrics [R, ...])."""

    def body(carry, r):
        state, tracker, metrics = round_step(round_fn, *carry, data, run_key, r)
        return (state, tracker), metrics

    (state, tracker), metrics = jax.lax.scan(body, (state, tracker), rounds)
    return state, tracker, metrics


def make_scan(algorithm: FederatedAlgorithm, length: int) -> Callable:
    """Jitted (state, tracker, data, key, start) -> (state, tracker, metrics [length]): rounds
    start .. start+length-1 with round keys fold_in(key, r) (`round_step`); `run` passes
    split(seed key)[1] as key. For timing the compiled round loop without the engine's host work."""

    @jax.jit
    def scan(state, tracker, data, key, start):
        return scan_rounds(algorithm.round, state, tracker, data, key, start + jnp.arange(length, dtype=jnp.int32))

    return scan


def make_chunk(algorithm: FederatedAlgorithm, length: int, phase: Optional[int] = None) -> Callable:
    """Jitted (state, tracker, data, key, start, n) -> (state, tracker, metrics [length]): rounds
    start .. start+n-1 for any traced n <= length, so one program serves every chunk of a run
    (the last, shorter one, those cut at `Hooks.every`, a resume at any round). Round r uses
    fold_in(run_key, r) with run_key = split(key)[1], as `make_scan` after `run`'s split; rows
    n.. of metrics are zeros.

    phase: None (the algorithm's `round`) or an index into `algorithm.phases`: that phase's round,
    after its hand-over (`Phase.enter`) when the chunk starts at the phase's first round; the
    caller keeps the chunk inside the phase."""
    ph = None if phase is None else algorithm.phases[phase]
    # jitted once here: the loop body's call finds the trace `eval_shape` made (same argument
    # types), so the round is traced once, not twice
    round_fn = jax.jit(algorithm.round if ph is None else ph.round)

    @jax.jit
    def chunk(state, tracker, data, key, start, n):
        run_key = jax.random.split(key)[1]
        if ph is not None and ph.enter is not None:
            # once per chunk, not per round: the phase's rounds carry no branch
            state = jax.lax.cond(start == ph.start,
                                 lambda s: ph.enter(s, data, jax.random.fold_in(run_key, ph.start)),
                                 lambda s: s, state)
        shapes = jax.eval_shape(round_fn, state, data, run_key)[1]
        buf = jax.tree.map(lambda s: jnp.zeros((length,) + s.shape, s.dtype), shapes)

        def body(i, carry):
            state, tracker, buf = carry
            state, tracker, metrics = round_step(round_fn, state, tracker, data, run_key, start + i)
            return state, tracker, jax.tree.map(lambda b, m: b.at[i].set(m), buf, metrics)

        return jax.lax.fori_loop(0, jnp.minimum(n, length), body, (state, tracker, buf))

    return chunk


def make_init(algorithm: FederatedAlgorithm) -> Callable:
    """Jitted (key, data) -> state: `algorithm.init(split(key)[0], data)` in one program."""
    return jax.jit(lambda key, data: algorithm.init(jax.random.split(key)[0], data))


def first_bad_round(metrics: dict, first_loss: Optional[float] = None) -> Optional[tuple[int, str]]:
    """(index within the chunk, message tail) of the first round with field overflow or a non-finite loss.

    A field overflow is blamed on the fixed-point range only when training was sane: if the
    training or validation loss at that round is non-finite or over 1e6 x the run's first loss
    (`first_loss`, else the chunk's first), the parameters diverged and the overflow is a symptom,
    so the message says so.
    """
    found = []
    if "field_overflow" in metrics:
        bad = np.flatnonzero(np.asarray(metrics["field_overflow"]) > 0)
        if bad.size:
            i = int(bad[0])
            losses = [np.asarray(metrics[k], np.float64).reshape(len(metrics[k]), -1).mean(1)
                      for k in ("train_loss", "val_loss") if k in metrics]
            ref = first_loss if first_loss is not None else (float(losses[0][0]) if losses else np.nan)
            # a too-fine fixed point wraps values to at most ~the field's range (losses up to ~1e4-1e5);
            # diverged parameters give astronomically larger (or non-finite) losses
            worst = max((float(v[i]) if np.isfinite(v[i]) else np.inf for v in losses), default=0.0)
            exploded = np.isfinite(ref) and worst > 1e6 * max(abs(ref), 1e-12)
            found.append((i, (f"training diverged (loss {worst:.3g} against {ref:.3g} at the start) and the "
                              "secure aggregates left the finite field's range: lower the learning rate")
                          if exploded else
                          "a secure aggregate left the finite field's fixed-point range: "
                          "use fewer fractional bits (frac_bits) or a larger prime"))
    for name in ("train_loss", "val_loss"):
        if name in metrics:
            v = np.asarray(metrics[name])
            bad = np.flatnonzero(~np.isfinite(v.reshape(v.shape[0], -1)).all(axis=1))
            if bad.size:
                found.append((int(bad[0]), f"{name} became {v[bad[0]]}: training diverged "
                                           "(lower the learning rate, or check the data for NaN/inf features)"))
    return min(found) if found else None


INIT_COMPILER_OPTIONS = {"xla_backend_optimization_level": 0}
_COMPILED: "collections.OrderedDict[tuple, Callable]" = collections.OrderedDict()
_COMPILED_MAX = 16
_COMPILED_LOCK = threading.Lock()


def compiled_scan(algorithm: FederatedAlgorithm, length: int, *args, kind: str = "chunk",
                  context: Optional[str] = None, phase: Optional[int] = None,
                  on_lowered: Optional[Callable[[], None]] = None) -> Callable:
    """The algorithm's program lowered and compiled for these arguments' shapes, cached per
    (algorithm, kind, length, shapes), so runs of the same program (seeds of one cell, a resumed
    run) compile once per process. kind "chunk": `make_chunk(algorithm, length)`; "init":
    `make_init(algorithm)`; "scan": `make_scan(algorithm, length)`.

    context: a description that determines `algorithm` completely (`fgl_jax.experiment` gives the
    system, its resolved config and a digest of the data): the compiled program is then also
    looked up in, and stored to, the on-disk compiled-program cache (`fgl_jax.cache.program_key`),
    so a repeated command skips tracing and lowering. None: this process only.
    phase: kind "chunk" of a phased algorithm: that phase's program (`make_chunk`).
    on_lowered: called once the program is traced and lowered, before XLA compiles it (not called
    when the program is found compiled)."""
    make = {"chunk": lambda: make_chunk(algorithm, length, phase), "init": lambda: make_init(algorithm),
            "scan": lambda: make_scan(algorithm, length)}[kind]
    # the initialisation runs once: XLA's backend optimisations cost ~60 % of its compile time and buy
    # nothing there (its output is bitwise the same: tests/test_cache.py)
    options = INIT_COMPILER_OPTIONS if kind == "init" else None
    sig = signature(args)
    key = (algorithm, kind, length, bool(jax.config.jax_enable_x64), sig, phase)
    disk_kind = kind if phase is None else f"{kind}{phase}"
    try:
        with _COMPILED_LOCK:
            hit = _COMPILED.get(key)
    except TypeError:  # an unhashable algorithm: no caching
        return _lower(make, args, on_lowered).compile(options)
    if hit is None:
        hit = _compile(make, args, options, disk_kind, length, sig, context, on_lowered)
        with _COMPILED_LOCK:
            _COMPILED[key] = hit
            while len(_COMPILED) > _COMPILED_MAX:
                _COMPILED.popitem(last=False)
    else:
        with _COMPILED_LOCK:
            _COMPILED.move_to_end(key)
    return hit


def _compiled_already(algorithm: FederatedAlgorithm, kind: str, length: int, args: tuple,
                      context: Optional[str], phase: Optional[int] = None) -> bool:
    """Whether `compiled_scan` would find this program without compiling (in this process, or in
    the on-disk compiled-program cache)."""
    sig = signature(args)
    options = INIT_COMPILER_OPTIONS if kind == "init" else None
    try:
        with _COMPILED_LOCK:
            if (algorithm, kind, length, bool(jax.config.jax_enable_x64), sig, phase) in _COMPILED:
                return True
    except TypeError:
        return False
    if context is None:
        return False
    from fgl_jax import cache
    disk_kind = kind if phase is None else f"{kind}{phase}"
    return cache.has_program(cache.program_key(context, disk_kind, length, repr(sig), options))


def _phases(algorithm: FederatedAlgorithm, num_rounds: int) -> list:
    """The chunk programs' phase indices: [None] (one program), or one per phase a run of
    `num_rounds` rounds reaches."""
    return [i for i, p in enumerate(algorithm.phases) if p.start < num_rounds] if algorithm.phases else [None]


def _phase_at(algorithm: FederatedAlgorithm, r: int) -> tuple[Optional[int], Optional[int]]:
    """(phase index of round r (0-based), first round of the next phase), or (None, None)."""
    if not algorithm.phases:
        return None, None
    k = max(i for i, p in enumerate(algorithm.phases) if p.start <= r)
    nxt = algorithm.phases[k + 1].start if k + 1 < len(algorithm.phases) else None
    return k, nxt


def check_phases(algorithm: FederatedAlgorithm) -> None:
    """One line naming the starts when `algorithm.phases` do not begin at round 0 in order."""
    starts = [int(p.start) for p in algorithm.phases]
    if starts and (starts[0] != 0 or any(b <= a for a, b in zip(starts, starts[1:]))):
        raise ValueError(f"an algorithm's phases must start at round 0 and in increasing order; got starts {starts}")


def _compile_ahead(algorithm: FederatedAlgorithm, length: int, key: jax.Array, data: Any, tracker: Tracker,
                   context: Optional[str], num_rounds: int) -> Optional["_Ahead"]:
    """Start compiling the chunk programs in a thread (`fgl_jax.federated.ahead`), before the
    initialisation is even compiled.

    Their state argument is the init program's output, whose shapes `jax.eval_shape` gives at once
    (~0.06 s), so the chunk's tracing and lowering (Python) overlap the init program's XLA
    compilation and both XLA compilations (which release the GIL) share the cores. The thread runs
    `compiled_scan` itself, so the program also lands in its cache and in the on-disk cache, under
    the key the engine would use (shapes without a sharding lower to the same text as arrays on the
    default device); the engine takes it from the handle when its arguments have the signature the
    thread compiled for, and compiles on its own thread otherwise. Not started (None) when the
    programs are already compiled or on disk (a warm command loads them in a fraction of the time),
    for data spread over several devices (shapes alone do not say the program), or for an unhashable
    algorithm (nothing to share the program through)."""
    if any(placement(x) for x in jax.tree.leaves(data)) or _compiled_already(algorithm, "init", 0, (key, data), context):
        return None
    try:
        shapes = jax.eval_shape(make_init(algorithm), key, data)
    except Exception:  # noqa: BLE001 - the engine's own compile raises it, with its usual message
        return None
    args = (shapes, tracker, data, key, np.int32(0), np.int32(length))
    # every phase's program, in the order the run needs them (the later ones while the first runs)
    todo = [k for k in _phases(algorithm, num_rounds) if not _compiled_already(algorithm, "chunk", length, args, context, k)]
    if not todo:
        return None
    lowered = threading.Event()  # set when the first program's Python part (tracing, lowering) is done
    handles: dict = {}
    previous = None
    for k in todo:
        def work(k=k):
            return compiled_scan(algorithm, length, *args, context=context, phase=k, on_lowered=lowered.set)
        previous = handles[k] = start_compiling(work, signature(args, (length, k)), name="fgl_jax-compile-chunk",
                                                scope=lambda: x64_scope(algorithm), after=previous)
    handles[todo[0]].add_done_callback(lowered.set)  # also when it failed or compiled nothing
    return _Ahead(handles, lowered)


class _Ahead:
    """The engine's compile-ahead handles, one per phase (each compiled after the previous one);
    `lowered` is set once the first program's Python part (tracing, lowering) is done."""

    def __init__(self, handles: dict, lowered: threading.Event):
        self.handles = handles
        self.lowered = lowered

    def program(self, phase: Optional[int], length: int, args: tuple) -> Optional[Callable]:
        """That phase's program compiled ahead, when `args` have the signature it was compiled for
        (waits for it; raises the thread's exception); else None."""
        handle = self.handles.get(phase)
        return None if handle is None else handle.program(signature(args, (length, phase)))


def _lower(make: Callable, args: tuple, on_lowered: Optional[Callable[[], None]]):
    lowered = make().lower(*args)
    if on_lowered is not None:
        on_lowered()
    return lowered


def _compile(make: Callable, args: tuple, options, kind: str, length: int, sig: tuple,
             context: Optional[str], on_lowered: Optional[Callable[[], None]] = None) -> Callable:
    """make().lower(*args).compile(options), through the compiled-program cache when `context` is given."""
    if context is None:
        return _lower(make, args, on_lowered).compile(options)
    from fgl_jax import cache
    disk = cache.program_key(context, kind, length, repr(sig), options)
    loaded = cache.load_program(disk)
    if loaded is not None:
        return _Loaded(loaded, lambda: make().lower(*args).compile(options), disk)
    hits = cache.persistent_cache_hits()
    compiled = _lower(make, args, on_lowered).compile(options)
    # an executable XLA:CPU took from JAX's own cache does not serialise whole (its reload fails
    # with "Function ... not found"): store only what was compiled here
    if cache.persistent_cache_hits() == hits:
        cache.store_program(disk, compiled)
    return compiled


class _Loaded:
    """A program from the compiled-program cache; if its first call fails (a file from another
    build that slipped through), the file is dropped and the program compiled as usual."""

    def __init__(self, compiled: Callable, recompile: Callable[[], Callable], disk: str):
        self.compiled, self.recompile, self.disk, self.checked = compiled, recompile, disk, False

    def __call__(self, *args):
        if self.checked:
            return self.compiled(*args)
        try:  # errors surface asynchronously: wait for the first call (the engine reads its results anyway)
            out = jax.block_until_ready(self.compiled(*args))
        except Exception:  # noqa: BLE001 - any failure of a cached executable: compile it instead
            from fgl_jax import cache
            cache.drop_program(self.disk)
            self.compiled = self.recompile()
            out = self.compiled(*args)
        self.checked = True
        return out


class _Progress:
    """The rounds' bar on stderr. It appears when the first program is compiled (`start`), so its
    rate and ETA count run rounds only: a later compilation (the next phase's program) is taken
    out of its clock (`exclude`), and the phase lines (`fgl_jax.progress`) say what happens before."""

    def __init__(self, total: int, enabled: bool, initial: int = 0, keys: tuple = ("val_acc", "test_acc")):
        self.bar = None
        self.enabled, self.total, self.initial = enabled, total, initial
        self.keys = ("train_loss",) + tuple(keys[:2])  # the selection metrics (val_auc, test_auc for link prediction)

    def start(self):
        if self.enabled and self.bar is None:
            from tqdm.auto import tqdm
            self.bar = tqdm(total=self.total, initial=self.initial, unit="round", file=sys.stderr, dynamic_ncols=True)

    def exclude(self, seconds: float):
        """Take `seconds` (a compilation between chunks) out of the bar's rate and ETA."""
        if self.bar is not None:
            self.bar.start_t += seconds
            self.bar.last_print_t += seconds

    def update(self, n: int, metrics: dict):
        if self.bar is not None:
            self.bar.update(n)
            self.bar.set_postfix({k: f"{float(metrics[k][-1]):.4f}" for k in self.keys if k in metrics})

    def close(self):
        if self.bar is not None:
            self.bar.close()


def run(algorithm: FederatedAlgorithm, data: Any, key: jax.Array, num_rounds: int,
        options: Optional[RunOptions] = None, **changes: Any) -> RunResult:
    """Run `num_rounds` rounds; metrics history, best-val selection, optional checkpoints and hooks.

    options: a `RunOptions` (default: all rounds in one program call, nothing written); keyword
    `changes` are applied to it, so `run(alg, data, key, 50, chunk=10, out_dir="runs/x")` works as
    before. What the options do here:

    chunk: rounds per call of the compiled program (default: all rounds at once, or ~20 chunks
    when out_dir/progress ask for intermediate reports; with `hooks.every`, at most `every`). One
    program (`make_chunk`) serves every chunk length of the run.
    out_dir: writes metrics.jsonl (rewritten whole after each chunk, atomically) and
    checkpoints/ (`fgl_jax.federated.checkpoint`); the caller checks the directory
    (`fgl_jax.rundir.prepare`). checkpoint_every: when to checkpoint between chunks: "30s" (at
    most one save per 30 seconds, the default), an int N (after the chunk that completes N rounds
    since the last save) or "chunk"; the last round is always saved. Saves are asynchronous
    (written while the next chunk runs). checkpoints=False: no checkpoints at all.
    resume: continue from the newest intact checkpoint in out_dir
    (none: start at round 1 and drop old rows); metrics rows after it are dropped, so the
    final numbers and files equal an uninterrupted run's. on_restored(rounds_done) is called once
    the restore succeeded (or when there was nothing to restore).
    per_round: name -> host array [num_rounds] of values known before the run (`Program.per_round`:
    communication bytes, the DP accountant's epsilon), added to each round's metrics and row.
    on_nonfinite: "raise" (NonFiniteError naming the first bad round, after writing the rounds
    before it) or "stop" (end there; `RunResult.diverged`, history = the finite rounds).
    loss_guard: > 0 treats a round whose train_loss exceeds loss_guard x the first round's as
    diverged (like a NaN), so an exploding run stops instead of finishing with a huge loss.
    program_context: a text that determines the algorithm and data completely (`fgl_jax.experiment`
    passes the system, the resolved config and a data digest): the run's programs then go through
    the on-disk compiled-program cache as well (`compiled_scan`); None = compile in this process.
    checkpoint_meta: JSON fields recorded in every checkpoint's manifest (`fgl_jax.experiment`
    records the resolved config and its digest, which a resume checks).
    overwrite, resume_with_changes, devices, tensorboard: refused (`fgl_jax.run_config` acts on them).

    Args:
        algorithm: the `FederatedAlgorithm` (its init, round, evaluation and phases).
        data: the algorithm's data, usually a `FedData` with `[C, ...]` client arrays.
        key: the run's PRNG key (`jax.random.key(seed)`).
        num_rounds: the rounds to run, > 0.
        options: a `RunOptions`, as above; None: the defaults.
        **changes: `RunOptions` fields to change.

    Returns:
        The `RunResult`: the final state, the per-round metrics history and the best-validation
        round's metrics.

    Raises:
        ValueError: `num_rounds` <= 0, or an option that needs `run_config` (overwrite,
            resume_with_changes, devices, tensorboard).
        TypeError: `options` is not a `RunOptions`, or an unknown option in `changes`.
        NonFiniteError: with on_nonfinite="raise", a round whose metrics are not finite.
    """
    opts = resolve_options(options, changes, "run")
    given = [f for f in CONFIG_ONLY if getattr(opts, f) != getattr(_DEFAULTS, f)]
    if given:
        raise ValueError(f"run: option(s) {', '.join(given)} need a config and its run directory: "
                         "use fgl_jax.run_config")
    if num_rounds <= 0:
        raise ValueError(f"num_rounds must be positive, got {num_rounds}")
    check_phases(algorithm)
    with x64_scope(algorithm), phase_lines.report(opts.progress):
        return _run(algorithm, data, key, num_rounds, opts)


_DEFAULTS = RunOptions()


def _rows_to_history(rows: list[dict]) -> tuple[dict, list]:
    history: dict[str, list] = {}
    evaluations: list = []
    for row in rows:
        for k, v in row.items():
            if k == "eval":
                evaluations.append({"round": row["round"], **v})
            elif k != "round":
                history.setdefault(k, []).append(v)
    return history, evaluations


def _guard_round(metrics: dict, first_loss: Optional[float], guard: float) -> Optional[tuple[int, str]]:
    """(index, message) of the first round whose train_loss exceeds guard x the first round's."""
    if not guard or first_loss is None or "train_loss" not in metrics or not np.isfinite(first_loss):
        return None
    loss = np.asarray(metrics["train_loss"], dtype=np.float64).reshape(len(metrics["train_loss"]), -1).mean(1)
    bad = np.flatnonzero(loss > guard * max(abs(first_loss), 1e-12))
    if not bad.size:
        return None
    i = int(bad[0])
    return i, (f"train_loss {loss[i]:.3g} is over {guard:g} x the first round's ({first_loss:.3g}): training "
               "diverged; lower the learning rate (or raise loss_guard, 0 = off)")


def bad_round(metrics: dict, first_loss: Optional[float], loss_guard: float = 0.0) -> Optional[tuple[int, str]]:
    """The host half of the round body's guard, for a chunk's metrics (`run`) or a sweep member's
    (`sweep`): (index, message) of the first round that is non-finite, overflowed a secure
    aggregate (`first_bad_round`) or passed the loss guard (`_guard_round`); None when all are sane."""
    found = [b for b in (first_bad_round(metrics, first_loss), _guard_round(metrics, first_loss, loss_guard))
             if b is not None]
    return min(found, default=None)


def _run(algorithm: FederatedAlgorithm, data: Any, key: jax.Array, num_rounds: int, opts: RunOptions) -> RunResult:
    from fgl_jax import rundir
    from fgl_jax.federated.checkpoint import parse_every
    chunk, progress, out_dir, resume, state = opts.chunk, opts.progress, opts.out_dir, opts.resume, opts.state
    hooks, on_nonfinite, loss_guard, on_restored = opts.hooks or Hooks(), opts.on_nonfinite, opts.loss_guard, opts.on_restored
    per_round, program_context, checkpoint_meta = opts.per_round or {}, opts.program_context, opts.checkpoint_meta
    policy = parse_every(opts.checkpoint_every) if opts.checkpoints else None
    if chunk is None:
        chunk = num_rounds if (out_dir is None and not progress) else max(1, math.ceil(num_rounds / 20))
        if hooks.every:
            chunk = min(chunk, hooks.every)
    compile_s = 0.0
    # the program's length depends on (chunk, num_rounds) only, not on where a resume starts: a resumed
    # run calls the very program the uninterrupted one did
    length = min(chunk, num_rounds)
    tracker = Tracker.empty(algorithm.select)
    ahead = None
    if state is None:
        t0 = time.perf_counter()
        ahead = _compile_ahead(algorithm, length, key, data, tracker, program_context, num_rounds)
        init = compiled_scan(algorithm, 0, key, data, kind="init", context=program_context)
        compile_s += time.perf_counter() - t0
        state = init(key, data)
    start = 0
    rows: list[dict] = []
    out = Path(out_dir).absolute() if out_dir is not None else None
    log_path = out / "metrics.jsonl" if out else None
    # several processes (jax.distributed): every one saves and restores its shards of the checkpoints
    # and reads the rows a resume continues, so all take the same decisions; process 0 alone writes rows
    writer = jax.process_index() == 0
    saver = None
    if out is not None:
        from fgl_jax.federated import checkpoint
        out.mkdir(parents=True, exist_ok=True)
        if resume:
            found = checkpoint.restore(out / "checkpoints", state, tracker)
            if found is not None:
                start, state, tracker, extra = found
                if hooks.load_state is not None and extra is not None:
                    hooks.load_state(extra)
                rows = [r for r in rundir.read_rows(log_path) if r["round"] <= start]
                if [r["round"] for r in rows] != list(range(1, start + 1)):
                    raise ValueError(f"{log_path} holds {len(rows)} of the {start} rounds the checkpoint has done: "
                                     f"cannot resume without them; start again with {rundir.arg('overwrite')}")
            elif log_path.exists() or (out / "checkpoints").exists():
                print(f"fgl-jax: no checkpoint in {out / 'checkpoints'}: starting at round 1", file=sys.stderr)
        if writer:
            rundir.write_rows(log_path, rows)
        if policy is not None:
            saver = checkpoint.Saver(out / "checkpoints", policy, before_commit=_fault("checkpoint"),
                                     meta=checkpoint_meta)
            # orbax's import (Python, holding the GIL) in a thread now, while this thread waits for the chunk
            # program (compiled ahead, or loaded), not during the rounds, whose host steps between
            # chunks it would hold the GIL against; once the chunk program compiled ahead is lowered,
            # so the import overlaps its XLA compilation (no GIL) rather than its tracing
            checkpoint.preload(after=getattr(ahead, "lowered", None))
    if on_restored is not None:
        on_restored(start)
    history, evaluations = _rows_to_history(rows)
    first_loss = float(np.mean(history["train_loss"][0])) if history.get("train_loss") else None
    if start >= num_rounds:
        return _finish(state, history, evaluations, tracker, compile_s, 0.0, hooks, False)

    programs: dict = {}
    bar = _Progress(num_rounds, progress, initial=start, keys=algorithm.select)
    t_run = 0.0
    r = start
    diverged = False
    try:
        while r < num_rounds:
            n = min(chunk, num_rounds - r)
            if hooks.every:  # chunk boundaries on multiples of `every`
                n = min(n, hooks.every - r % hooks.every)
            phase, next_phase = _phase_at(algorithm, r)
            if next_phase is not None:  # a chunk stays inside its phase (one program per phase)
                n = min(n, next_phase - r)
            args = (state, tracker, data, key, np.int32(r), np.int32(n))
            if phase not in programs:
                phase_lines.phase("compiling", None if len(algorithm.phases or ()) < 2 else f"phase {phase}")
                t0 = time.perf_counter()
                found = ahead.program(phase, length, args) if ahead is not None else None
                programs[phase] = (found if found is not None else
                                   compiled_scan(algorithm, length, *args, context=program_context, phase=phase))
                compile_s += time.perf_counter() - t0
                bar.exclude(time.perf_counter() - t0)
                if bar.bar is None:
                    phase_lines.phase("running", f"rounds {r + 1}..{num_rounds}")
                    bar.start()
            t0 = time.perf_counter()
            state, tracker, metrics = programs[phase](*args)
            metrics = jax.device_get(metrics)
            t_run += time.perf_counter() - t0
            metrics = {k: np.asarray(v)[:n] for k, v in metrics.items()}
            metrics.update({k: np.asarray(v)[r:r + n] for k, v in per_round.items()})
            if first_loss is None and "train_loss" in metrics:
                first_loss = float(np.mean(metrics["train_loss"][0]))
            bad = bad_round(metrics, first_loss, loss_guard)
            keep = n if bad is None else bad[0]
            for k, v in metrics.items():
                history.setdefault(k, []).extend(v[:keep].tolist())
            evaluation = None
            due = not hooks.every or (r + n) % hooks.every == 0 or r + n == num_rounds
            if bad is None and hooks.on_chunk is not None and due:
                evaluation = hooks.on_chunk(r + n, state, {k: np.asarray(v) for k, v in history.items()})
            for i in range(keep):
                row = {"round": r + i + 1, **{k: v[i].tolist() for k, v in metrics.items()}}
                if evaluation is not None and i == n - 1:
                    row["eval"] = evaluation
                rows.append(row)
            if log_path is not None and writer:
                rundir.append_rows(log_path, rows[len(rows) - keep:])
            if evaluation is not None:
                evaluations.append({"round": r + n, **evaluation})
            if bad is not None:
                if on_nonfinite == "raise":
                    done = r + bad[0]  # rounds that finished before the bad one (0: the first round failed)
                    raise NonFiniteError(f"round {done + 1}: {bad[1]}"
                                         + ((f"; rounds 1..{done} are in {log_path}" if done else
                                             f"; no round finished, so {log_path} holds none") if log_path else ""))
                diverged = True
                r += keep
                break
            r += n
            bar.update(n, metrics)
            if hooks.stop is not None:
                # decided before the chunk's checkpoint, which a stopping chunk never gets: a resume
                # after a kill here redoes this chunk and stops at the same round
                stop_at = hooks.stop({k: np.asarray(v) for k, v in history.items()})
                if stop_at is not None:
                    if saver is not None:
                        saver.close()
                    res = _stop(int(stop_at), state, history, evaluations, rows, log_path if writer else None,
                                tracker, compile_s,
                                t_run, hooks, bar)
                    res.checkpoint_seconds = saver.seconds if saver is not None else 0.0
                    return res
            if saver is not None and _due(saver, r, r >= num_rounds):
                saver.save(r, state, tracker, extra=hooks.save_state() if hooks.save_state is not None else None)
            _fault("chunk")()
        if saver is not None:
            saver.close()  # the last save written and committed before the run reports
    finally:
        bar.close()
        if saver is not None:
            saver.abandon()  # an exception: stop waiting; an uncommitted save is ignored on resume
    res = _finish(state, history, evaluations, tracker, compile_s, t_run, hooks, diverged)
    res.checkpoint_seconds = saver.seconds if saver is not None else 0.0
    return res


def _due(saver, rounds_done: int, final: bool) -> bool:
    """`saver.due`, the same in every process: a save is a collective (each process writes its
    shards), so under several processes a wall-clock policy ("30s") follows process 0's clock."""
    due = saver.due(rounds_done, final=final)
    if final or jax.process_count() < 2 or saver.every.seconds is None:
        return due
    from jax.experimental import multihost_utils
    return bool(np.asarray(multihost_utils.broadcast_one_to_all(np.int32(due))))


def _stop(stop_at: int, state, history, evaluations, rows, log_path, tracker, compile_s, t_run, hooks, bar=None
          ) -> RunResult:
    """End the run at round `stop_at` (a `Hooks.stop` decision): history and rows cut there."""
    from fgl_jax import rundir
    history = {k: v[:stop_at] for k, v in history.items()}
    evaluations = [e for e in evaluations if e["round"] <= stop_at]
    if log_path is not None:
        rundir.write_rows(log_path, [row for row in rows if row["round"] <= stop_at])
    if bar is not None:
        bar.close()
    return _finish(state, history, evaluations, tracker, compile_s, t_run, hooks, False)


def _fault(stage: str) -> Callable[[], None]:
    """Fault injection for the reliability tests: FGL_JAX_FAULT="<stage>:<n>" kills the process
    (os._exit) the n-th time `stage` is reached ("checkpoint": a save written but not committed;
    "chunk": after a chunk's rows and checkpoint). Unset: a no-op."""
    spec = os.environ.get("FGL_JAX_FAULT", "")
    if not spec.startswith(stage + ":"):
        return _noop
    def hit():
        _FAULT_COUNTS[stage] = _FAULT_COUNTS.get(stage, 0) + 1
        if _FAULT_COUNTS[stage] >= int(spec.split(":", 1)[1]):
            os._exit(17)
    return hit


_FAULT_COUNTS: dict = {}


def _noop() -> None:
    return None


def _finish(state, history, evaluations, tracker, compile_s, t_run, hooks: Hooks, diverged: bool) -> RunResult:
    hist = {k: np.asarray(v) for k, v in history.items()}
    best = hooks.select(hist, evaluations) if hooks.select is not None else _best_dict(tracker)
    if hooks.select is None and diverged and tracker.keys[0] in hist and len(hist[tracker.keys[0]]):
        best = best_by_validation(hist, tracker.keys)  # the tracker saw the non-finite rounds too
    best = {**best, **spread_at(hist, best.get("best_round"))}
    res = RunResult(state, hist, best, compile_s, t_run, evaluations, {}, diverged)
    if hooks.finalize is not None:
        res.extras = dict(hooks.finalize(res) or {})
    return res


def lowest(keys: tuple) -> bool:
    """True when the selection keys (`FederatedAlgorithm.select`) pick the lowest validation value."""
    return len(keys) > 2 and keys[2] == "min"


def best_by_validation(history: dict, keys: tuple = ("val_acc", "test_acc")) -> dict:
    """The in-scan tracker's rule on a host history: first round with the highest keys[0] (lowest
    with keys[2] == "min")."""
    val = np.asarray(history[keys[0]], np.float32)
    i = int(np.argmin(np.where(np.isnan(val), np.inf, val))) if lowest(keys) else int(np.argmax(val))
    return {"best_val": float(val[i]), "best_test": float(np.asarray(history[keys[1]], np.float32)[i]),
            "best_round": i + 1, **_selected_by(keys)}


def spread_at(history: dict, best_round) -> dict:
    """The per-client test accuracy's spread (`fgl_jax.federated.evaluation.SPREAD_KEYS`: mean, worst
    10 %, sd over clients) at the reported round, as best_<key>, when the run's evaluation has it
    (each client's own model: personalised algorithms); {} otherwise."""
    if not isinstance(best_round, int) or best_round < 1 or any(k not in history for k in SPREAD_KEYS):
        return {}
    return {f"best_{k}": float(np.asarray(history[k], np.float32)[best_round - 1]) for k in SPREAD_KEYS}


def _selected_by(keys: tuple) -> dict:
    """{"select": validation metric} when it is not the default val_acc (summary.json of node
    classification runs is unchanged)."""
    if tuple(keys) == ("val_acc", "test_acc"):
        return {}
    return {"select": keys[0], **({"select_mode": "min"} if lowest(keys) else {})}


def _best_dict(tracker: Tracker) -> dict:
    val = -float(tracker.best_val) if lowest(tracker.keys) else float(tracker.best_val)
    return {"best_val": val, "best_test": float(tracker.best_test),
            "best_round": int(tracker.best_round) + 1, **_selected_by(tracker.keys)}
