"""The one engine: any FederatedAlgorithm as a `lax.scan` over rounds, in chunks, with hooks.

One jitted program runs `chunk` rounds (round r uses key fold_in(run_key, r), so the numbers do
not depend on the chunking); between chunks the host updates the progress bar, appends the
per-round metrics to `metrics.jsonl`, checks for NaN/inf, writes an orbax checkpoint and calls the
program's hooks (`Hooks`): an evaluation callback at chosen rounds, a stop predicate (early
stopping), a selection rule for the reported round and a finaliser (post-training evaluation,
attacks). Best-validation selection is tracked inside the scan.
"""
from __future__ import annotations

import collections
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

from fgl_jax.federated.algorithm import FederatedAlgorithm, Hooks, x64_scope

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
    """What every run returns, whatever the system.

    history: metric -> np.ndarray [rounds_run] (per-client metrics [rounds_run, C]); best: the
    reported round (`best_val`, `best_test`, `best_round` 1-based, plus whatever a `select` hook
    adds); evaluations: rows returned by `Hooks.on_chunk` (each with its `round`); extras: what
    `Hooks.finalize` returned (post-training evaluation, attacks, ...).
    """

    state: PyTree
    history: dict
    best: dict
    compile_seconds: float
    run_seconds: float
    evaluations: list = dataclasses.field(default_factory=list)
    extras: dict = dataclasses.field(default_factory=dict)
    diverged: bool = False   # stopped at a non-finite round (on_nonfinite="stop"); history ends before it
    summary: dict = dataclasses.field(default_factory=dict)  # what summary.json holds (fgl_jax.experiment)

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


def first_bad_round(metrics: dict) -> Optional[tuple[int, str]]:
    """(index within the chunk, message tail) of the first round with field overflow or a non-finite loss."""
    found = []
    if "field_overflow" in metrics:
        bad = np.flatnonzero(np.asarray(metrics["field_overflow"]) > 0)
        if bad.size:
            found.append((int(bad[0]), "a secure aggregate left the finite field's fixed-point range: "
                                        "use fewer fractional bits (frac_bits) or a larger prime"))
    for name in ("train_loss", "val_loss"):
        if name in metrics:
            v = np.asarray(metrics[name])
            bad = np.flatnonzero(~np.isfinite(v.reshape(v.shape[0], -1)).all(axis=1))
            if bad.size:
                found.append((int(bad[0]), f"{name} became {v[bad[0]]}: training diverged "
                                           "(lower the learning rate, or check the data for NaN/inf features)"))
    return min(found) if found else None


_COMPILED: "collections.OrderedDict[tuple, Callable]" = collections.OrderedDict()
_COMPILED_MAX = 16


def _signature(tree) -> tuple:
    leaves, treedef = jax.tree.flatten(tree)
    return (treedef,) + tuple((np.shape(x), str(jnp.asarray(x).dtype) if not hasattr(x, "dtype") else str(x.dtype),
                               str(getattr(x, "sharding", ""))) for x in leaves)


def compiled_scan(algorithm: FederatedAlgorithm, length: int, *args) -> Callable:
    """`make_scan(algorithm, length)` lowered and compiled for these arguments' shapes, cached per
    (algorithm, length, shapes), so runs of the same program (seeds of one cell, a resumed run)
    compile once per process."""
    key = (algorithm, length, bool(jax.config.jax_enable_x64), _signature(args))
    try:
        hit = _COMPILED.get(key)
    except TypeError:  # an unhashable algorithm: no caching
        return make_scan(algorithm, length).lower(*args).compile()
    if hit is None:
        hit = make_scan(algorithm, length).lower(*args).compile()
        _COMPILED[key] = hit
        while len(_COMPILED) > _COMPILED_MAX:
            _COMPILED.popitem(last=False)
    else:
        _COMPILED.move_to_end(key)
    return hit


def _check_finite(metrics: dict, start: int) -> None:
    bad = first_bad_round(metrics)
    if bad is not None:
        raise NonFiniteError(f"round {start + bad[0] + 1}: {bad[1]}")


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


def hook_state_path(directory: Path, rounds_done: int) -> Path:
    """Where the hooks' host state (`Hooks.save_state`) of the checkpoint at `rounds_done` is kept."""
    return directory / f"hooks_{rounds_done:06d}.npz"


def save_checkpoint(directory: Path, rounds_done: int, state: PyTree, tracker: Tracker,
                    hook_state: Optional[dict] = None) -> Path:
    path = (directory / f"round_{rounds_done:06d}").absolute()
    if hook_state is not None:  # written (atomically) before the checkpoint, so a checkpoint never lacks it
        directory.mkdir(parents=True, exist_ok=True)
        tmp = hook_state_path(directory, rounds_done).with_suffix(".tmp.npz")
        np.savez(tmp, **{k: np.asarray(v) for k, v in hook_state.items()})
        os.replace(tmp, hook_state_path(directory, rounds_done))
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
        resume: bool = False, checkpoint_every_chunk: bool = True, state: Optional[PyTree] = None,
        hooks: Optional[Hooks] = None, on_nonfinite: str = "raise") -> RunResult:
    """Run `num_rounds` rounds; metrics history, best-val selection, optional checkpoints and hooks.

    chunk: rounds per compiled scan (default: all rounds at once, or ~20 chunks when
    out_dir/progress ask for intermediate reports; with `hooks.every`, at most `every`).
    out_dir: writes metrics.jsonl and checkpoints/round_<6-digit round> (orbax). resume: continue
    from the newest checkpoint in out_dir; the final numbers equal an uninterrupted run's.
    on_nonfinite: "raise" (NonFiniteError naming the first bad round, after writing the rounds
    before it) or "stop" (end there; `RunResult.diverged`, history = the finite rounds).
    """
    if num_rounds <= 0:
        raise ValueError(f"num_rounds must be positive, got {num_rounds}")
    if on_nonfinite not in ("raise", "stop"):
        raise ValueError(f"on_nonfinite must be 'raise' or 'stop', got {on_nonfinite!r}")
    with x64_scope(algorithm):
        return _run(algorithm, data, key, num_rounds, chunk, progress, out_dir, resume, checkpoint_every_chunk,
                    state, hooks or Hooks(), on_nonfinite)


def _run(algorithm, data, key, num_rounds, chunk, progress, out_dir, resume, checkpoint_every_chunk,
         state, hooks: Hooks, on_nonfinite: str) -> RunResult:
    if chunk is None:
        chunk = num_rounds if (out_dir is None and not progress) else max(1, math.ceil(num_rounds / 20))
        if hooks.every:
            chunk = min(chunk, hooks.every)
    if chunk <= 0:
        raise ValueError(f"chunk must be positive, got {chunk}")
    init_key, run_key = jax.random.split(key)
    if state is None:
        state = jax.jit(algorithm.init)(init_key, data)
    tracker = Tracker.empty()
    start = 0
    history: dict[str, list] = {}
    evaluations: list = []
    out = Path(out_dir) if out_dir is not None else None
    log_path = out / "metrics.jsonl" if out else None
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        if resume:
            found = latest_checkpoint(out / "checkpoints")
            if found is not None:
                start, path = found
                state, tracker = restore_checkpoint(path, state)
                saved = hook_state_path(out / "checkpoints", start)
                if hooks.load_state is not None and saved.exists():
                    with np.load(saved) as z:
                        hooks.load_state({k: z[k] for k in z.files})
                rows = [json.loads(l) for l in log_path.read_text().splitlines()] if log_path.exists() else []
                rows = [r for r in rows if r["round"] <= start]
                for row in rows:
                    for k, v in row.items():
                        if k == "eval":
                            evaluations.append({"round": row["round"], **v})
                        elif k != "round":
                            history.setdefault(k, []).append(v)
                log_path.write_text("".join(json.dumps(r) + "\n" for r in rows))
        elif log_path.exists():
            log_path.unlink()
    if start >= num_rounds:
        return _finish(state, history, evaluations, tracker, 0.0, 0.0, hooks, False)

    scans: dict[int, Callable] = {}
    bar = _Progress(num_rounds, progress, initial=start)
    compile_s = 0.0
    t_run = 0.0
    r = start
    diverged = False
    try:
        while r < num_rounds:
            n = min(chunk, num_rounds - r)
            if hooks.every:  # chunk boundaries on multiples of `every`
                n = min(n, hooks.every - r % hooks.every)
            if n not in scans:
                t0 = time.perf_counter()
                scans[n] = compiled_scan(algorithm, n, state, tracker, data, run_key, jnp.int32(r))
                compile_s += time.perf_counter() - t0
            t0 = time.perf_counter()
            state, tracker, metrics = scans[n](state, tracker, data, run_key, jnp.int32(r))
            metrics = jax.device_get(metrics)
            t_run += time.perf_counter() - t0
            metrics = {k: np.asarray(v) for k, v in metrics.items()}
            bad = first_bad_round(metrics)
            keep = n if bad is None else bad[0]
            for k, v in metrics.items():
                history.setdefault(k, []).extend(v[:keep].tolist())
            evaluation = None
            due = not hooks.every or (r + n) % hooks.every == 0 or r + n == num_rounds
            if bad is None and hooks.on_chunk is not None and due:
                evaluation = hooks.on_chunk(r + n, state, {k: np.asarray(v) for k, v in history.items()})
            if log_path is not None:
                with log_path.open("a") as f:
                    for i in range(keep):
                        row = {"round": r + i + 1, **{k: v[i].tolist() for k, v in metrics.items()}}
                        if evaluation is not None and i == n - 1:
                            row["eval"] = evaluation
                        f.write(json.dumps(row) + "\n")
            if evaluation is not None:
                evaluations.append({"round": r + n, **evaluation})
            if bad is not None:
                if on_nonfinite == "raise":
                    raise NonFiniteError(f"round {r + bad[0] + 1}: {bad[1]}"
                                         + (f"; rounds 1..{r + bad[0]} are in {log_path}" if log_path else ""))
                diverged = True
                r += keep
                break
            r += n
            bar.update(n, metrics)
            if out is not None and checkpoint_every_chunk:
                save_checkpoint(out / "checkpoints", r, state, tracker,
                                hooks.save_state() if hooks.save_state is not None else None)
            if hooks.stop is not None:
                stop_at = hooks.stop({k: np.asarray(v) for k, v in history.items()})
                if stop_at is not None:
                    stop_at = int(stop_at)
                    history = {k: v[:stop_at] for k, v in history.items()}
                    evaluations = [e for e in evaluations if e["round"] <= stop_at]
                    if log_path is not None:
                        rows = log_path.read_text().splitlines()
                        log_path.write_text("".join(row + "\n" for row in rows if json.loads(row)["round"] <= stop_at))
                    break
    finally:
        bar.close()
    return _finish(state, history, evaluations, tracker, compile_s, t_run, hooks, diverged)


def _finish(state, history, evaluations, tracker, compile_s, t_run, hooks: Hooks, diverged: bool) -> RunResult:
    hist = {k: np.asarray(v) for k, v in history.items()}
    best = hooks.select(hist, evaluations) if hooks.select is not None else _best_dict(tracker)
    if hooks.select is None and diverged and "val_acc" in hist and len(hist["val_acc"]):
        best = best_by_validation(hist)  # the tracker saw the non-finite rounds too
    res = RunResult(state, hist, best, compile_s, t_run, evaluations, {}, diverged)
    if hooks.finalize is not None:
        res.extras = dict(hooks.finalize(res) or {})
    return res


def best_by_validation(history: dict) -> dict:
    """The in-scan tracker's rule on a host history: first round with the highest val_acc."""
    val = np.asarray(history["val_acc"], np.float32)
    i = int(np.argmax(val))
    return {"best_val": float(val[i]), "best_test": float(np.asarray(history["test_acc"], np.float32)[i]),
            "best_round": i + 1}


def _best_dict(tracker: Tracker) -> dict:
    return {"best_val": float(tracker.best_val), "best_test": float(tracker.best_test),
            "best_round": int(tracker.best_round) + 1}
