"""Run any FederatedAlgorithm: a `lax.scan` over rounds, in chunks for progress and checkpoints.

One jitted program runs `chunk` rounds (round r uses key fold_in(run_key, r), so the numbers do
not depend on the chunking); between chunks the host updates the progress bar, appends the
per-round metrics to `metrics.jsonl`, checks for NaN/inf and writes an orbax checkpoint.
Best-validation model selection is tracked inside the scan.
"""
from __future__ import annotations

import dataclasses
import json
import math
import os
import sys
import time
from pathlib import Path
from typing import Any, Callable, Optional

import flax
import jax
import jax.numpy as jnp
import numpy as np

from fgl_jax.federated.algorithm import FederatedAlgorithm, x64_scope

PyTree = Any


class NonFiniteError(FloatingPointError):
    """Training produced NaN or inf; the message names the round."""


@flax.struct.dataclass
class Tracker:
    """Best-validation selection: metrics at the round with the highest val_acc (first on ties)."""

    best_val: jax.Array
    best_test: jax.Array
    best_round: jax.Array

    @staticmethod
    def empty() -> "Tracker":
        return Tracker(jnp.float32(-1.0), jnp.float32(0.0), jnp.int32(-1))

    def update(self, r: jax.Array, m: dict) -> "Tracker":
        val, test = m["val_acc"].astype(jnp.float32), m["test_acc"].astype(jnp.float32)
        better = val > self.best_val
        return Tracker(jnp.where(better, val, self.best_val),
                       jnp.where(better, test, self.best_test),
                       jnp.where(better, r, self.best_round))


@dataclasses.dataclass
class RunResult:
    state: PyTree
    history: dict            # metric name -> np.ndarray [rounds]
    best: dict               # best_val, best_test, best_round (0-based)
    compile_seconds: float
    run_seconds: float

    @property
    def final(self) -> dict:
        return {k: float(v[-1]) for k, v in self.history.items()}


def make_scan(algorithm: FederatedAlgorithm, length: int) -> Callable:
    """Jitted (state, tracker, data, key, start) -> (state, tracker, metrics [length])."""

    def body(carry, r):
        state, tracker, data, key = carry
        state, metrics = algorithm.round(state, data, jax.random.fold_in(key, r))
        return (state, tracker.update(r, metrics), data, key), metrics

    @jax.jit
    def scan(state, tracker, data, key, start):
        rounds = start + jnp.arange(length, dtype=jnp.int32)
        (state, tracker, _, _), metrics = jax.lax.scan(body, (state, tracker, data, key), rounds)
        return state, tracker, metrics

    return scan


def _check_finite(metrics: dict, start: int) -> None:
    if "field_overflow" in metrics:
        bad = np.flatnonzero(np.asarray(metrics["field_overflow"]) > 0)
        if bad.size:
            raise NonFiniteError(
                f"a secure aggregate left the finite field's fixed-point range at round {start + bad[0] + 1}: "
                "use fewer fractional bits (frac_bits) or a larger prime")
    for name in ("train_loss", "val_loss"):
        if name in metrics:
            bad = np.flatnonzero(~np.isfinite(metrics[name]))
            if bad.size:
                raise NonFiniteError(
                    f"{name} became {metrics[name][bad[0]]} at round {start + bad[0] + 1}: training diverged "
                    "(lower the learning rate, or check the data for NaN/inf features)")


class _Progress:
    def __init__(self, total: int, enabled: bool, initial: int = 0):
        self.bar = None
        if enabled:
            from tqdm.auto import tqdm
            self.bar = tqdm(total=total, initial=initial, unit="round", file=sys.stderr, dynamic_ncols=True)

    def update(self, n: int, metrics: dict):
        if self.bar is not None:
            self.bar.update(n)
            self.bar.set_postfix({k: f"{float(metrics[k][-1]):.4f}" for k in ("train_loss", "val_acc", "test_acc")
                                  if k in metrics})

    def close(self):
        if self.bar is not None:
            self.bar.close()


def _checkpointer():
    import orbax.checkpoint as ocp
    return ocp.StandardCheckpointer()


def save_checkpoint(directory: Path, rounds_done: int, state: PyTree, tracker: Tracker) -> Path:
    path = (directory / f"round_{rounds_done:06d}").absolute()
    ckpt = _checkpointer()
    ckpt.save(path, {"state": state, "tracker": tracker}, force=True)
    ckpt.wait_until_finished()
    return path


def latest_checkpoint(directory: Path) -> Optional[tuple[int, Path]]:
    if not directory.is_dir():
        return None
    found = sorted((int(p.name.split("_")[1]), p) for p in directory.glob("round_*")
                   if p.name.split("_")[1].isdigit())
    return found[-1] if found else None


def restore_checkpoint(path: Path, state_like: PyTree) -> tuple[PyTree, Tracker]:
    target = jax.tree.map(lambda a: jax.ShapeDtypeStruct(np.shape(a), jnp.asarray(a).dtype),
                          {"state": state_like, "tracker": Tracker.empty()})
    out = _checkpointer().restore(path.absolute(), target)
    return out["state"], out["tracker"]


def run(algorithm: FederatedAlgorithm, data: Any, key: jax.Array, num_rounds: int, *,
        chunk: Optional[int] = None, progress: bool = False, out_dir: Optional[os.PathLike] = None,
        resume: bool = False, checkpoint_every_chunk: bool = True, state: Optional[PyTree] = None) -> RunResult:
    """Run `num_rounds` rounds; metrics history, best-val selection, optional checkpoints.

    chunk: rounds per compiled scan (default: all rounds at once, or ~20 chunks when
    out_dir/progress ask for intermediate reports). out_dir: writes metrics.jsonl and
    checkpoints/round_<6-digit round> (orbax). resume: continue from the newest checkpoint in out_dir;
    the final numbers equal an uninterrupted run's.
    """
    if num_rounds <= 0:
        raise ValueError(f"num_rounds must be positive, got {num_rounds}")
    with x64_scope(algorithm):
        return _run(algorithm, data, key, num_rounds, chunk, progress, out_dir, resume, checkpoint_every_chunk,
                    state)


def _run(algorithm, data, key, num_rounds, chunk, progress, out_dir, resume, checkpoint_every_chunk,
         state) -> RunResult:
    if chunk is None:
        chunk = num_rounds if (out_dir is None and not progress) else max(1, math.ceil(num_rounds / 20))
    if chunk <= 0:
        raise ValueError(f"chunk must be positive, got {chunk}")
    init_key, run_key = jax.random.split(key)
    if state is None:
        state = jax.jit(algorithm.init)(init_key, data)
    tracker = Tracker.empty()
    start = 0
    history: dict[str, list] = {}
    out = Path(out_dir) if out_dir is not None else None
    log_path = out / "metrics.jsonl" if out else None
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        if resume:
            found = latest_checkpoint(out / "checkpoints")
            if found is not None:
                start, path = found
                state, tracker = restore_checkpoint(path, state)
                rows = [json.loads(l) for l in log_path.read_text().splitlines()] if log_path.exists() else []
                rows = [r for r in rows if r["round"] <= start]
                for row in rows:
                    for k, v in row.items():
                        if k != "round":
                            history.setdefault(k, []).append(v)
                log_path.write_text("".join(json.dumps(r) + "\n" for r in rows))
        elif log_path.exists():
            log_path.unlink()
    if start >= num_rounds:
        hist = {k: np.asarray(v) for k, v in history.items()}
        return RunResult(state, hist, _best_dict(tracker), 0.0, 0.0)

    scans: dict[int, Callable] = {}
    bar = _Progress(num_rounds, progress, initial=start)
    compile_s = 0.0
    t_run = 0.0
    r = start
    try:
        while r < num_rounds:
            n = min(chunk, num_rounds - r)
            if n not in scans:
                scans[n] = make_scan(algorithm, n)
                t0 = time.perf_counter()
                scans[n] = scans[n].lower(state, tracker, data, run_key, jnp.int32(r)).compile()
                compile_s += time.perf_counter() - t0
            t0 = time.perf_counter()
            state, tracker, metrics = scans[n](state, tracker, data, run_key, jnp.int32(r))
            metrics = jax.device_get(metrics)
            t_run += time.perf_counter() - t0
            metrics = {k: np.asarray(v) for k, v in metrics.items()}
            _check_finite(metrics, r)
            for k, v in metrics.items():
                history.setdefault(k, []).extend(v.tolist())
            if log_path is not None:
                with log_path.open("a") as f:
                    for i in range(n):
                        f.write(json.dumps({"round": r + i + 1, **{k: v[i].tolist() for k, v in metrics.items()}}) + "\n")
            r += n
            bar.update(n, metrics)
            if out is not None and checkpoint_every_chunk:
                save_checkpoint(out / "checkpoints", r, state, tracker)
    finally:
        bar.close()
    hist = {k: np.asarray(v) for k, v in history.items()}
    return RunResult(state, hist, _best_dict(tracker), compile_s, t_run)


def _best_dict(tracker: Tracker) -> dict:
    return {"best_val": float(tracker.best_val), "best_test": float(tracker.best_test),
            "best_round": int(tracker.best_round) + 1}
