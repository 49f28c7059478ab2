"""Graph-level simulation (host side, NumPy): whole graphs dealt to clients, and each client's
graphs split into train / val / test, as OpenFGL's graph_fl scenario.

    uniform_graph_partition(G, clients, seed)          # int32 [G]: a random deal of near-equal size
    dirichlet_graph_partition(y, clients, beta, seed)  # label skew: class c's graphs ~ Dir(beta) shares
    per_client_graph_split(y, assignment, clients, (0.8, 0.1, 0.1), seed)
    sorted_segment_partition(stat, clients)            # topology / feature skew: graphs sorted by a statistic
    mean_degree(gs), mean_feature(gs)                  # the statistics OpenFGL sorts by
    domain_partition(domain, clients, seed)            # cross-domain: each client holds one dataset's graphs

The label skew is the node-level label-Dirichlet draw (`fgl_jax.partition.dirichlet`) applied to
graph labels. The split follows OpenFGL (`openfgl/task/graph_cls.py`,
`local_graph_train_val_test_split`): inside each client, class by class, the class's graphs in a
random order, the first floor(0.8 n) train, up to floor(0.9 n) validation, up to floor(1.0 n) test;
a graph regression task (no classes) splits the client's graphs as one group.

Topology and feature skew follow OpenFGL's `graph_fl_topology_skew` / `graph_fl_feature_skew`
(`openfgl/data/simulation.py`): every graph gets one number (its mean node degree, or the mean of
all entries of its feature matrix), the graphs are sorted by it (ties keep graph order) and the
sorted list is cut into `clients` runs of floor(G / clients) graphs, the last client taking the
remainder; client 0 holds the sparsest (smallest-feature) graphs. Neither draws anything random.
"""
from __future__ import annotations

from typing import Optional, Sequence

import numpy as np

from fgl_jax.data.tu import GraphSet
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


def ordered_chunk_partition(num_graphs: int, num_clients: int, seed: int = 0, chunk: int = 50) -> np.ndarray:
    """GCFL's one-dataset simulation (Xie et al., NeurIPS 2021, its main_oneDS): client c takes the
    graphs c*L .. (c+1)*L - 1 in file order, L = min(chunk, G // C), and each remaining graph goes to
    a client drawn uniformly, in graph order, by NumPy's legacy RandomState(seed) (so a set stored
    sorted by label gives the first clients one class). Seed 123 draws what the authors' seed 123
    draws.

    Args:
        num_graphs: G.
        num_clients: C, 1 <= C <= G.
        seed: the RandomState seed of the remaining graphs' clients.
        chunk: the most graphs of a client's ordered run.

    Returns:
        int32 [G] client of each graph.
    """
    if not 1 <= num_clients <= num_graphs:
        raise PartitionError(f"clients={num_clients}: need 1 <= clients <= {num_graphs} graphs")
    run = min(chunk, num_graphs // num_clients)
    out = np.empty(num_graphs, np.int32)
    out[:num_clients * run] = np.repeat(np.arange(num_clients), run)
    out[num_clients * run:] = np.random.RandomState(seed).randint(0, num_clients, size=num_graphs - num_clients * run)
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


GRAPH_ORDERS = ("shuffled", "index")


def client_groups(assignment: np.ndarray, num_clients: int, mask: Optional[np.ndarray] = None,
                  seed: int = 0, order: str = "shuffled") -> list[np.ndarray]:
    """Each client's graphs (rows with assignment == c, and mask True) in the order its mini-batches
    are cut in.

    Args:
        assignment: int [G] client of every graph.
        num_clients: C.
        mask: bool [G] graphs to keep (None: all).
        seed: the seed of the shuffled order.
        order: "shuffled" (one random order per client drawn once: classes mixed within a
            mini-batch) or "index" (ascending rows, OpenFGL's graph_fl loaders: on a set stored
            sorted by label, as NCI1 and PROTEINS are, consecutive graphs share a class).

    Returns:
        C int arrays of GraphSet rows.
    """
    if order not in GRAPH_ORDERS:
        raise PartitionError(f"graph order must be one of {', '.join(GRAPH_ORDERS)}, got {order!r}")
    keep = np.ones(len(assignment), bool) if mask is None else mask
    rows = [np.flatnonzero((assignment == c) & keep) for c in range(num_clients)]
    if order == "index":
        return rows
    rng = np.random.default_rng(seed)
    return [rng.permutation(r) for r in rows]


def sorted_segment_partition(stat: np.ndarray, num_clients: int) -> np.ndarray:
    """int32 [G]: the graphs sorted by `stat` (stable: ties in graph order) and cut into
    `num_clients` runs of floor(G / num_clients), the last run taking the remainder (OpenFGL's
    topology and feature skew).

    Args:
        stat: float [G], one number per graph (`mean_degree`, `mean_feature`).
        num_clients: C, 1 <= C <= G.

    Returns:
        int32 [G] client of each graph; client c holds ranks c*L .. (c+1)*L - 1, L = G // C.
    """
    stat = np.asarray(stat, np.float64)
    if stat.ndim != 1:
        raise PartitionError(f"sorted_segment_partition: stat must be one number per graph [G], got shape {stat.shape}")
    if not 1 <= num_clients <= stat.shape[0]:
        raise PartitionError(f"clients={num_clients}: need 1 <= clients <= {stat.shape[0]} graphs")
    if not np.all(np.isfinite(stat)):
        raise PartitionError("sorted_segment_partition: the graph statistic has NaN or infinite values")
    order = np.argsort(stat, kind="stable")
    rank_client = np.minimum(np.arange(stat.shape[0]) // (stat.shape[0] // num_clients), num_clients - 1)
    out = np.empty(stat.shape[0], np.int32)
    out[order] = rank_client
    return out


def mean_degree(gs: GraphSet) -> np.ndarray:
    """float64 [G]: each graph's mean node degree, incoming edges per node (edges counted in both
    directions, as stored), 0 for a graph without nodes: OpenFGL's topology-skew statistic.

    Args:
        gs: the graphs.

    Returns:
        float64 [G].
    """
    return gs.edges_per_graph / np.maximum(gs.nodes_per_graph, 1)


def mean_feature(gs: GraphSet) -> np.ndarray:
    """float64 [G]: the mean of all entries of each graph's feature matrix x [n, F] (0 for a graph
    without nodes): OpenFGL's feature-skew statistic. With one-hot degree features (IMDB) every graph
    has the same mean 1 / F, so feature skew falls back to graph order there.

    Args:
        gs: the graphs.

    Returns:
        float64 [G].
    """
    row_sums = gs.x.astype(np.float64).sum(axis=1)
    sums = np.add.reduceat(row_sums, gs.node_offsets[:-1]) if gs.num_nodes else np.zeros(gs.num_graphs)
    n = gs.nodes_per_graph
    # reduceat returns the next row for an empty segment: zero those
    return np.where(n > 0, sums, 0.0) / np.maximum(n * max(gs.num_features, 1), 1)


def domain_partition(domain: np.ndarray, num_clients: int, seed: int = 0) -> np.ndarray:
    """int32 [G]: cross-domain clients. With D domains (datasets) and num_clients = k D, domain d's
    graphs are dealt uniformly (`uniform_graph_partition`) to clients d k .. d k + k - 1; with k = 1
    each client holds one whole dataset (OpenFGL's `graph_fl_cross_domain`, GCFL's multi-dataset runs).

    Args:
        domain: int [G] domain (dataset) of each graph, 0..D-1, every domain present.
        num_clients: a multiple of D.
        seed: seed of the deal inside a domain (unused when num_clients = D).

    Returns:
        int32 [G] client of each graph.
    """
    domain = np.asarray(domain)
    d = int(domain.max()) + 1 if domain.size else 0
    if d == 0 or num_clients % d:
        raise PartitionError(f"cross_domain: clients={num_clients} must be a multiple of the {d} datasets "
                             "(one dataset per client, or each dataset dealt to the same number of clients)")
    k = num_clients // d
    out = np.empty(domain.shape[0], np.int32)
    for i in range(d):
        rows = np.flatnonzero(domain == i)
        if rows.size < k:
            raise PartitionError(f"cross_domain: dataset {i} has {rows.size} graphs, fewer than its {k} clients")
        out[rows] = i * k + uniform_graph_partition(rows.size, k, seed + i)
    return out
