"""Synthetic labels Y' from the clients' training-class counts (GCond's count rule, spec §2.2)."""
from __future__ import annotations

import math

import numpy as np


def check_rate(rate: float) -> float:
    """The condensation ratio `rate` (fraction of training labels kept, the code's convention)."""
    if not isinstance(rate, (int, float)) or isinstance(rate, bool) or not math.isfinite(rate) \
            or not 0.0 < rate <= 1.0:
        raise ValueError(f"condensation ratio `rate` must be in (0, 1], got {rate!r}")
    return float(rate)


def synthetic_class_counts(train_counts: np.ndarray, rate: float) -> np.ndarray:
    """N'_c per class from n(c) = Σ_j n_j(c) (int [C]).

    Classes are visited by ascending training count; every class but the largest gets
    max(floor(n(c)·rate), 1); the largest gets floor(N_train·rate) − Σ(others) (at least 1).
    Raises ValueError if a class has no training node on any client (its gradient is undefined).
    """
    rate = check_rate(rate)
    counts = np.asarray(train_counts, np.int64)
    if counts.ndim != 1 or counts.size == 0:
        raise ValueError(f"train_counts must be a non-empty 1-D array, got shape {counts.shape}")
    empty = np.flatnonzero(counts <= 0)
    if empty.size:
        raise ValueError(f"class(es) {empty.tolist()} have no training node on any client; gradient matching "
                         "needs n(c) > 0 for every class (re-partition, or drop the class)")
    order = np.argsort(counts, kind="stable")
    out = np.zeros_like(counts)
    total = int(math.floor(counts.sum() * rate))
    for c in order[:-1]:
        out[c] = max(int(math.floor(counts[c] * rate)), 1)
    out[order[-1]] = max(total - int(out.sum()), 1)
    return out


def synthetic_labels(class_counts: np.ndarray) -> np.ndarray:
    """Class-contiguous Y' (int32 [N'])."""
    counts = np.asarray(class_counts, np.int64)
    return np.repeat(np.arange(counts.size, dtype=np.int32), counts)
