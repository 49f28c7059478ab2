"""Optional TensorBoard event files of a run's (or a sweep's) per-round metrics.

    fgl-jax run --dataset cora --rounds 100 --tensorboard tb/cora_fedavg
    tensorboard --logdir tb

What is written: every numeric scalar of a round's metrics (what metrics.jsonl holds) at step =
the round (1-based), grouped by kind: accuracy/<name> (`*_acc`), loss/<name> (`*loss`),
communication/<name> (fields with "bytes"), privacy/<name> (`dp_*`), metrics/<name> (the rest);
per-client vectors are skipped (metrics.jsonl keeps them), an evaluation hook's scalars go to
eval/<name>. A run writes while it trains (after each chunk of rounds); a sweep writes one
subdirectory per member after the sweep (its members run as one program).

The writer is tensorboardX (`pip install 'fgl_jax[tensorboard]'` or `pip install tensorboardX`):
a small pure-Python package that needs neither TensorFlow nor PyTorch. Without it, asking for
TensorBoard output fails at once with one line saying so.
"""
from __future__ import annotations

import math
import os
from typing import Any, Optional

import numpy as np


class TensorBoardMissing(ValueError):
    """TensorBoard output was asked for but tensorboardX is not installed."""


def _summary_writer(logdir: os.PathLike):
    try:
        from tensorboardX import SummaryWriter
    except ImportError:
        raise TensorBoardMissing(f"--tensorboard {logdir}: TensorBoard output needs the tensorboardX package "
                                 "(pip install tensorboardX, or pip install 'fgl_jax[tensorboard]')") from None
    return SummaryWriter(logdir=str(logdir))


def tag(name: str) -> str:
    """The TensorBoard tag of a metric name (its group / the name)."""
    if name.endswith("_acc"):
        group = "accuracy"
    elif name.endswith("loss"):
        group = "loss"
    elif "bytes" in name:
        group = "communication"
    elif name.startswith("dp_"):
        group = "privacy"
    else:
        group = "metrics"
    return f"{group}/{name}"


def _scalar(v: Any) -> Optional[float]:
    """v as a finite float when it is a numeric scalar (not a bool, not a per-client vector)."""
    if isinstance(v, (bool, np.bool_)):
        return None
    a = np.asarray(v)
    if a.ndim != 0 or not np.issubdtype(a.dtype, np.number):
        return None
    f = float(a)
    return f if math.isfinite(f) else None


class TensorBoardLog:
    """Appends rounds of a history (metric -> per-round values) to TensorBoard event files in `logdir`.

    write(history, evaluation=None): rounds not yet written (from `self.rounds_written`), each at
    step = its 1-based round; evaluation (a dict of the last round's evaluation hook) under eval/.
    """

    def __init__(self, logdir: os.PathLike):
        self.logdir = str(logdir)
        self._writer = _summary_writer(logdir)
        self.rounds_written = 0

    def write(self, history: dict, evaluation: Optional[dict] = None) -> None:
        n = min((len(v) for v in history.values()), default=0)
        for name, values in sorted(history.items()):
            for i in range(self.rounds_written, n):
                f = _scalar(values[i])
                if f is not None:
                    self._writer.add_scalar(tag(name), f, i + 1)
        for name, v in sorted((evaluation or {}).items()):
            f = _scalar(v)
            if f is not None and n:
                self._writer.add_scalar(f"eval/{name}", f, n)
        self.rounds_written = max(self.rounds_written, n)
        self._writer.flush()

    def close(self) -> None:
        self._writer.close()


def check_available(logdir: os.PathLike) -> None:
    """Fail now (one line) when tensorboardX is missing, before anything is built or run."""
    try:
        import tensorboardX  # noqa: F401
    except ImportError:
        _summary_writer(logdir)  # raises TensorBoardMissing


def with_tensorboard(hooks, log: TensorBoardLog):
    """`hooks` (fgl_jax.federated.Hooks) whose on_chunk also writes the new rounds to `log`; the
    original on_chunk (if any) runs first and its evaluation is logged under eval/."""
    inner = hooks.on_chunk

    def on_chunk(rounds_done: int, state, history: dict):
        evaluation = inner(rounds_done, state, history) if inner is not None else None
        log.write(history, evaluation)
        return evaluation

    return hooks._replace(on_chunk=on_chunk)


def write_sweep(logdir: os.PathLike, rows: list, history: dict, axes: list) -> list[str]:
    """One subdirectory of `logdir` per sweep member ("seed=0,lr=0.01"), its curves from
    `history` (metric -> float [members, rounds], NaN after a diverged member's last round).
    Returns the subdirectories written."""
    from pathlib import Path
    out = []
    check_available(logdir)
    for i, row in enumerate(rows):
        name = ",".join(f"{k}={row[k]}" for k in ["seed", *axes] if k in row)
        log = TensorBoardLog(Path(logdir) / name)
        member = {k: [v for v in np.asarray(h[i], np.float64)] for k, h in history.items()}
        finite = [np.isfinite(np.asarray(v, np.float64)) for v in member.values()]
        last = max((int(np.flatnonzero(f)[-1]) + 1 for f in finite if f.any()), default=0)
        log.write({k: v[:last] for k, v in member.items()})
        log.close()
        out.append(log.logdir)
    return out
