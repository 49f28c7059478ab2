"""How a run is run, as one object: `RunOptions`.

`fgl_jax.run` (an algorithm on its data), `fgl_jax.run_config` (a config, built and run with its
files) and the layers between them (`fgl_jax.experiment.execute`, the device dispatch) take one
`RunOptions` instead of a dozen keyword parameters each; keyword calls (`run(alg, data, key, rounds,
chunk=4)`) still work and become `RunOptions(chunk=4)` (`resolve`). The options are checked once,
here, with one line naming the field and the value.

Which layer reads which field:
  every run        chunk, progress, out_dir, resume, checkpoint_every, checkpoints, on_nonfinite,
                   loss_guard
  run_config       overwrite, resume_with_changes, devices, tensorboard (`run` refuses them: they
                   need the run directory and config only `run_config` has)
  engine plumbing  hooks, state, per_round, on_restored, program_context, checkpoint_meta (a
                   Program's own hooks and per-round columns, which `execute` fills in)
"""
from __future__ import annotations

import dataclasses
import math
import numbers
import os
from typing import Any, Callable, Optional

# fields only `run_config` / `execute` act on (the run directory, the config, the devices)
CONFIG_ONLY = ("overwrite", "resume_with_changes", "devices", "tensorboard")
# keyword names of earlier releases -> the field that replaced them
_RENAMED = {"checkpoint_every_chunk": "checkpoints", "out": "out_dir"}


@dataclasses.dataclass(frozen=True)
class RunOptions:
    """Options of one run; every field has the default a plain `run(...)` uses.

    Attributes:
        chunk: rounds per call of the compiled program (None: all rounds at once, or ~20 chunks when
            out_dir/progress ask for intermediate reports; with `hooks.every`, at most `every`); the
            numbers do not depend on it.
        progress: a tqdm bar on stderr.
        out_dir: write metrics.jsonl and checkpoints/ here (run_config: also config.yaml,
            summary.json, timings.json).
        resume: continue from the newest intact checkpoint in out_dir.
        overwrite: run_config only: replace the run out_dir holds.
        resume_with_changes: run_config only: config keys a resume may change
            (`fgl_jax.rundir.RESUMABLE_CHANGES`).
        checkpoint_every: "30s" (at most one save per 30 s), a number of rounds, or "chunk"; the last
            round is always saved.
        checkpoints: False = write no checkpoints at all.
        on_nonfinite: "raise" (NonFiniteError naming the round) or "stop" (end there, `diverged`).
        loss_guard: when positive, a round whose train_loss exceeds loss_guard x the first round's counts as
            diverged; 0 = off.
        devices: run_config only: None/0 = every local device, N = the first N.
        tensorboard: run_config only: also write TensorBoard event files into this directory.
        hooks: `fgl_jax.federated.Hooks` (run_config: the program's own).
        state: start from this state instead of `algorithm.init` (run: the sharded path and sweeps
            with hooks set traced hyperparameters this way).
        per_round: name -> host array `[rounds]` of values known before the run, added to each row.
        on_restored: called with the rounds already done once a resume restored (or found nothing).
        program_context: a text that determines the algorithm and data completely: the programs then
            also go through the on-disk compiled-program cache (`fgl_jax.cache`).
        checkpoint_meta: JSON fields recorded in every checkpoint's manifest.
    """

    chunk: Optional[int] = None
    progress: bool = False
    out_dir: Optional[os.PathLike] = None
    resume: bool = False
    overwrite: bool = False
    resume_with_changes: tuple = ()
    checkpoint_every: Any = "30s"
    checkpoints: bool = True
    on_nonfinite: str = "raise"
    loss_guard: float = 0.0
    devices: Optional[int] = None
    tensorboard: Optional[str] = None
    hooks: Any = None
    state: Any = None
    per_round: Optional[dict] = None
    on_restored: Optional[Callable[[int], None]] = None
    program_context: Optional[str] = None
    checkpoint_meta: Optional[dict] = None

    def __post_init__(self):
        from fgl_jax.federated.checkpoint import parse_every
        if self.chunk is not None and (isinstance(self.chunk, bool) or not isinstance(self.chunk, numbers.Integral)
                                       or self.chunk <= 0):
            raise ValueError(f"run option chunk must be a positive integer (or None), got {self.chunk!r}")
        if self.on_nonfinite not in ("raise", "stop"):
            raise ValueError(f"run option on_nonfinite must be 'raise' or 'stop', got {self.on_nonfinite!r}")
        try:
            guard = float(self.loss_guard)
        except (TypeError, ValueError):
            guard = math.nan
        if not math.isfinite(guard) or guard < 0:
            raise ValueError(f"run option loss_guard must be a finite number >= 0 (0 = off), got {self.loss_guard!r}")
        if self.devices is not None and (isinstance(self.devices, bool) or not isinstance(self.devices, numbers.Integral)
                                         or self.devices < 0):
            raise ValueError(f"run option devices must be an integer >= 0 (0 = all), got {self.devices!r}")
        parse_every(self.checkpoint_every)  # its own one-line error
        object.__setattr__(self, "resume_with_changes", tuple(self.resume_with_changes or ()))


def resolve(options: Optional[RunOptions], changes: dict, where: str) -> RunOptions:
    """`options` (default `RunOptions()`) with keyword `changes` applied; an unknown keyword is one
    line naming it and `where` (the function it was passed to)."""
    if options is not None and not isinstance(options, RunOptions):
        raise TypeError(f"{where}: options must be a RunOptions, got {type(options).__name__}")
    changes = {_RENAMED.get(k, k): v for k, v in changes.items()}
    names = {f.name for f in dataclasses.fields(RunOptions)}
    unknown = sorted(set(changes) - names)
    if unknown:
        raise TypeError(f"{where}: unknown run option(s) {', '.join(map(repr, unknown))}; "
                        f"RunOptions has {', '.join(sorted(names))}")
    base = options if options is not None else RunOptions()
    return dataclasses.replace(base, **changes) if changes else base
