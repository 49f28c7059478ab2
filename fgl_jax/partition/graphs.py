"""Graph-level simulation (host side, NumPy): whole graphs dealt to clients, and each client's
graphs split into train / val / test, as OpenFGL's graph_fl scenario.

    uniform_graph_partition(G, clients, seed)          # int32 [G]: a random deal of near-equal size
    dirichlet_graph_partition(y, clients, beta, seed)  # label skew: class c's graphs ~ Dir(beta) shares
    per_client_graph_split(y, assignment, clients, (0.8, 0.1, 0.1), seed)

The label skew is the node-level label-Dirichlet draw (`fgl_jax.partition.dirichlet`) applied to
graph labels. The split follows OpenFGL (`openfgl/task/graph_cls.py`,
`local_graph_train_val_test_split`): inside each client, class by class, the class's graphs in a
random order, the first floor(0.8 n) train, up to floor(0.9 n) validation, up to floor(1.0 n) test;
a graph regression task (no classes) splits the client's graphs as one group.
"""
from __future__ import annotations

from typing import Optional, Sequence

import numpy as np

from fgl_jax.partition.base import PartitionError
from fgl_jax.partition.dirichlet import _draw


def uniform_graph_partition(num_graphs: int, num_clients: int, seed: int = 0) -> np.ndarray:
    """int32 [G]: a random permutation of the graphs cut into `num_clients` near-equal runs."""
    if not 1 <= num_clients <= num_graphs:
        raise PartitionError(f"clients={num_clients}: need 1 <= clients <= {num_graphs} graphs")
    order = np.random.default_rng(seed).permutation(num_graphs)
    out = np.empty(num_graphs, np.int32)
    for c, run in enumerate(np.array_split(order, num_clients)):
        out[run] = c
    return out


def dirichlet_graph_partition(y: np.ndarray, num_clients: int, beta: float, seed: int = 0, min_size: int = 1,
                              max_retries: int = 100) -> np.ndarray:
    """int32 [G]: class c's graphs dealt by shares ~ Dir(beta 1_K) (redrawn until every client holds
    >= min_size graphs, at most max_retries draws)."""
    y = np.asarray(y)
    if not 1 <= num_clients <= y.shape[0]:
        raise PartitionError(f"clients={num_clients}: need 1 <= clients <= {y.shape[0]} graphs")
    if not beta > 0:
        raise PartitionError(f"dirichlet_beta must be > 0, got {beta}")
    rng = np.random.default_rng(seed)
    classes = np.unique(y)
    smallest = 0
    for _ in range(max_retries):
        a = _draw(y, classes, num_clients, beta, rng)
        sizes = np.bincount(a, minlength=num_clients)
        if sizes.min() >= min_size:
            return a
        smallest = max(smallest, int(sizes.min()))
    raise PartitionError(f"dirichlet graph partition: no draw in {max_retries} gave each of {num_clients} clients "
                         f">= {min_size} graphs (beta={beta}, seed={seed}, best smallest client {smallest}); raise "
                         "dirichlet_beta or lower clients")


def per_client_graph_split(y: np.ndarray, assignment: np.ndarray, num_clients: int,
                           fractions: Sequence[float] = (0.8, 0.1, 0.1), seed: int = 0,
                           by_class: bool = True) -> dict[str, np.ndarray]:
    """{"train", "val", "test"}: bool [G] masks, OpenFGL's per-client split (module docstring)."""
    tr, va, te = (float(f) for f in fractions)
    rng = np.random.default_rng(seed)
    masks = {s: np.zeros(len(y), bool) for s in ("train", "val", "test")}
    for c in range(num_clients):
        mine = np.flatnonzero(assignment == c)
        groups = [mine[y[mine] == k] for k in np.unique(y[mine])] if by_class else [mine]
        for idx in groups:
            idx = rng.permutation(idx)
            n = idx.size
            a, b, e = int(tr * n), int((tr + va) * n), min(n, int((tr + va + te) * n))
            masks["train"][idx[:a]] = True
            masks["val"][idx[a:b]] = True
            masks["test"][idx[b:e]] = True
    return masks


def client_groups(assignment: np.ndarray, num_clients: int, mask: Optional[np.ndarray] = None,
                  seed: int = 0) -> list[np.ndarray]:
    """Each client's graphs (rows with assignment == c, and mask True), in one random order per
    client drawn once (the order its mini-batches are cut in: classes mixed within a mini-batch)."""
    rng = np.random.default_rng(seed)
    keep = np.ones(len(assignment), bool) if mask is None else mask
    return [rng.permutation(np.flatnonzero((assignment == c) & keep)) for c in range(num_clients)]
