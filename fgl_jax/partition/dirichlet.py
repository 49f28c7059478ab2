"""Label-Dirichlet(β) node split: label-skewed clients (Hsu et al. 2019; used by FedHGL, OpenFGL).

For every class c, proportions p_c ~ Dir(β·1_K) are drawn and the class's nodes (in a random order)
are cut into K consecutive runs of lengths given by the floors of the cumulative proportions.
Small β concentrates each class on few clients; large β gives every client ≈ the global label mix.
"""
from __future__ import annotations

import numpy as np

from fgl_jax.graph import Graph
from fgl_jax.partition.base import (Partition, PartitionError, check_int, check_num_clients,
                                    check_positive, check_seed, validate)


def _draw(y: np.ndarray, classes: np.ndarray, k: int, beta: float, rng: np.random.Generator) -> np.ndarray:
    """One draw of the scheme: int32 [N] client ids (unlabelled nodes are handled by the caller)."""
    n = y.shape[0]
    assignment = np.full(n, -1, np.int32)
    for c in classes:
        idx = rng.permutation(np.flatnonzero(y == c))
        p = rng.dirichlet(np.full(k, beta))
        # Floors of the cumulative shares; the clip guards a cumsum rounding just above 1.
        cuts = np.minimum((np.cumsum(p)[:-1] * idx.size).astype(np.int64), idx.size)
        sizes = np.diff(np.concatenate([[0], cuts, [idx.size]]))
        assignment[idx] = np.repeat(np.arange(k, dtype=np.int32), sizes)
    return assignment


def label_dirichlet_partition(graph: Graph, num_clients: int, beta: float, seed: int = 0,
                              min_size: int = 1, max_retries: int = 100) -> Partition:
    """Split nodes so each class is spread over clients by proportions ~ Dir(β·1_K).

    graph: host Graph with labels y int32 [N] (-1 = unlabelled).
    beta: Dirichlet concentration (> 0).
    min_size: every client must end with at least this many nodes (>= 1, labelled or not); a draw
        that violates it is discarded and redrawn from the same Generator, up to `max_retries`
        draws in total, after which PartitionError is raised.
    Unlabelled nodes (y = -1) are dealt to clients uniformly at random, in equal numbers up to one
    (a random permutation dealt round-robin starting from a random client), after each draw.

    Returns a Partition with assignment int32 [N].
    """
    k = check_num_clients(num_clients, graph)
    beta = check_positive("beta", beta)
    seed = check_seed(seed)
    min_size = check_int("min_size", min_size, minimum=1)
    max_retries = check_int("max_retries", max_retries, minimum=1)
    n = graph.num_nodes
    if min_size * k > n:
        raise PartitionError(
            f"min_size={min_size} is infeasible: {k} clients x {min_size} nodes > {n} nodes "
            f"of graph {graph.name!r}")
    y = np.asarray(graph.y)
    if np.any(y < -1):
        raise PartitionError(
            f"graph {graph.name!r}: labels must be >= -1 (-1 = unlabelled), found {int(y.min())}")
    classes = np.unique(y[y >= 0])
    unlabelled = np.flatnonzero(y < 0)

    rng = np.random.default_rng(seed)
    smallest = []
    for _ in range(max_retries):
        assignment = _draw(y, classes, k, beta, rng)
        if unlabelled.size:
            order = rng.permutation(unlabelled)
            assignment[order] = (np.arange(order.size) + rng.integers(k)) % k
        sizes = np.bincount(assignment, minlength=k)
        if sizes.min() >= min_size:
            return validate(Partition(assignment, k, "dirichlet", seed), graph)
        smallest.append(int(sizes.min()))
    raise PartitionError(
        f"label_dirichlet_partition: no draw in max_retries={max_retries} gave every one of the "
        f"{k} clients >= min_size={min_size} nodes (beta={beta}, seed={seed}; largest smallest-client "
        f"size seen: {max(smallest)}). Increase beta or max_retries, or lower num_clients or min_size.")
