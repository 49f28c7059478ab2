"""Label-Dirichlet(β) node split: label-skewed clients (Hsu et al. 2019; used by FedHGL, OpenFGL).

For every class c, proportions p_c ~ Dir(β·1_K) are drawn and the class's nodes (in a random order)
are cut into K consecutive runs of lengths given by the floors of the cumulative proportions.
Small β concentrates each class on few clients; large β gives every client ≈ the global label mix.
"""
from __future__ import annotations

import numpy as np

from fgl_jax.graph import Graph
from fgl_jax.partition.base import (Partition, PartitionError, partitioner, check_int, check_num_clients,
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


@partitioner("dirichlet")
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


def community_labels(graph: Graph, communities: list[np.ndarray]) -> np.ndarray:
    """int64 [M]: each community's majority label among its labelled nodes (ties: the smallest
    label), -1 for a community without labelled nodes."""
    y = np.asarray(graph.y)
    out = np.full(len(communities), -1, np.int64)
    for i, nodes in enumerate(communities):
        lab = y[nodes]
        lab = lab[lab >= 0]
        if lab.size:
            out[i] = int(np.bincount(lab).argmax())  # argmax returns the first (smallest) on ties
    return out


def _draw_communities(sizes: np.ndarray, labels: np.ndarray, k: int, beta: float,
                      rng: np.random.Generator) -> np.ndarray:
    """Client id int32 [M] of each community for one draw (see community_dirichlet_partition)."""
    client = np.empty(sizes.size, np.int32)
    for c in np.unique(labels[labels >= 0]):
        idx = rng.permutation(np.flatnonzero(labels == c))
        p = rng.dirichlet(np.full(k, beta))
        ends = np.cumsum(sizes[idx])
        mid = ends - sizes[idx] / 2.0  # a community goes where its middle node falls
        bounds = np.cumsum(p)[:-1] * ends[-1]
        client[idx] = np.searchsorted(bounds, mid, side="right")
    none = np.flatnonzero(labels < 0)
    client[none] = rng.integers(k, size=none.size)
    return client


@partitioner("community_dirichlet")
def community_dirichlet_partition(graph: Graph, num_clients: int, beta: float = 0.5, seed: int = 0,
                                  communities: str = "louvain", resolution: float = 1.0,
                                  num_communities: int = 100, min_size: int = 1,
                                  max_retries: int = 100) -> Partition:
    """Label-Dirichlet(β) split over whole communities: label skew without cutting communities.

    Communities come from Louvain (`communities="louvain"`, `resolution`) or METIS
    (`communities="metis"`, `num_communities` parts). Each community takes the majority label of
    its labelled nodes. For every class c, proportions p_c ~ Dir(β·1_K) are drawn; the class's
    communities, in a random order, are laid end to end (by node count) and each goes to the client
    whose share [Σ_{j<k} p_cj, Σ_{j<=k} p_cj) of that length holds its middle node. So client k
    holds ≈ p_ck of the nodes of class-c communities, up to one community's size. Communities
    without labelled nodes go to uniformly random clients. A draw leaving a client with fewer than
    `min_size` nodes is redrawn (up to `max_retries` draws), as in `label_dirichlet_partition`.

    Returns a Partition with assignment int32 [N].
    """
    from fgl_jax.partition.louvain import louvain_communities
    from fgl_jax.partition.metis import metis_membership
    k = check_num_clients(num_clients, graph)
    beta = check_positive("beta", beta)
    seed = check_seed(seed)
    min_size = check_int("min_size", min_size, minimum=1)
    max_retries = check_int("max_retries", max_retries, minimum=1)
    if communities == "louvain":
        comms = louvain_communities(graph, resolution, seed)
    elif communities == "metis":
        m = check_int("num_communities", num_communities, minimum=1, maximum=graph.num_nodes)
        parts, _ = metis_membership(graph, m, seed)
        comms = [np.flatnonzero(parts == j) for j in range(m)]
        comms = [c for c in comms if c.size]
    else:
        raise PartitionError(f"communities must be 'louvain' or 'metis', got {communities!r}")
    if len(comms) < k:
        raise PartitionError(f"community_dirichlet: {len(comms)} communities for {k} clients "
                             "(raise the resolution / number of communities, or lower the number of clients)")
    sizes = np.array([c.size for c in comms], np.int64)
    labels = community_labels(graph, comms)
    node_of = np.concatenate(comms)
    rng = np.random.default_rng(seed)
    smallest = []
    for _ in range(max_retries):
        client = _draw_communities(sizes, labels, k, beta, rng)
        assignment = np.empty(graph.num_nodes, np.int32)
        assignment[node_of] = np.repeat(client, sizes)
        got = np.bincount(assignment, minlength=k)
        if got.min() >= min_size:
            return validate(Partition(assignment, k, "community_dirichlet", seed), graph)
        smallest.append(int(got.min()))
    raise PartitionError(
        f"community_dirichlet_partition: no draw in max_retries={max_retries} gave every one of the {k} "
        f"clients >= min_size={min_size} nodes (beta={beta}, seed={seed}, {len(comms)} communities; largest "
        f"smallest-client size seen: {max(smallest)}). Increase beta, resolution or max_retries, or lower "
        "num_clients.")
