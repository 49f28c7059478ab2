"""A small seeded k-means (k-means++ seeding, Lloyd iterations) for the louvain+/metis+ partitioners.

OpenFGL clusters community label histograms with scikit-learn's KMeans; fgl_jax does not depend
on scikit-learn, and the problem is tiny (a few hundred points in C dimensions), so this is the
textbook algorithm in NumPy: k-means++ seeding (Arthur & Vassilvitskii 2007), Lloyd iterations
until the assignment stops changing, `n_init` restarts keeping the lowest inertia. As in
scikit-learn, a cluster that loses all its points is re-seeded at the point farthest from its
current centre, so with at least k distinct points every cluster ends non-empty.
"""
from __future__ import annotations

import numpy as np

from fgl_jax.partition.base import PartitionError


def _sq_dist(x: np.ndarray, c: np.ndarray) -> np.ndarray:
    """float64 [n, k]: squared Euclidean distances between rows of x [n, d] and c [k, d]."""
    return np.maximum((x * x).sum(1)[:, None] - 2.0 * x @ c.T + (c * c).sum(1)[None, :], 0.0)


def _seed_centres(x: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
    """k-means++: the first centre uniformly, each next one with probability ∝ squared distance."""
    centres = [x[rng.integers(x.shape[0])]]
    d2 = _sq_dist(x, centres[0][None])[:, 0]
    for _ in range(1, k):
        total = d2.sum()
        i = int(rng.choice(x.shape[0], p=d2 / total)) if total > 0 else int(rng.integers(x.shape[0]))
        centres.append(x[i])
        d2 = np.minimum(d2, _sq_dist(x, x[i][None])[:, 0])
    return np.stack(centres)


def _lloyd(x: np.ndarray, centres: np.ndarray, max_iter: int) -> tuple[np.ndarray, float]:
    k = centres.shape[0]
    labels = None
    for _ in range(max_iter):
        d2 = _sq_dist(x, centres)
        new = d2.argmin(1)
        counts = np.bincount(new, minlength=k)
        cost = d2[np.arange(x.shape[0]), new]
        for j in np.flatnonzero(counts == 0):
            # re-seed an empty cluster at the worst-served point of a cluster that keeps >= 1 point
            movable = counts[new] > 1
            far = int(np.where(movable, cost, -1.0).argmax())
            counts[new[far]] -= 1
            new[far], counts[j], cost[far] = j, 1, 0.0
        if labels is not None and np.array_equal(new, labels):
            break
        labels = new
        centres = np.stack([x[labels == j].mean(0) for j in range(k)])
    inertia = float(_sq_dist(x, centres)[np.arange(x.shape[0]), labels].sum())
    return labels, inertia


def kmeans(x: np.ndarray, k: int, seed: int = 0, n_init: int = 10, max_iter: int = 300) -> np.ndarray:
    """Cluster the rows of x [n, d] into k clusters; returns int64 labels [n], every cluster non-empty.

    Deterministic given (x, k, seed). Raises PartitionError when x has fewer than k distinct rows
    (some cluster would have to be empty).
    """
    x = np.asarray(x, np.float64)
    distinct = np.unique(x, axis=0).shape[0]
    if distinct < k:
        raise PartitionError(f"k-means: only {distinct} distinct points for {k} clusters "
                             "(some client would be empty)")
    rng = np.random.default_rng(seed)
    best, best_inertia = None, np.inf
    for _ in range(n_init):
        labels, inertia = _lloyd(x, _seed_centres(x, k, rng), max_iter)
        if inertia < best_inertia - 1e-12:
            best, best_inertia = labels, inertia
    return best
