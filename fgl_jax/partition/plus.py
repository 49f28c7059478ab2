"""OpenFGL's `louvain+` and `metis+` splits (registered as "louvain_plus" and "metis_plus", OpenFGL's
simulation modes subgraph_fl_louvain_plus / subgraph_fl_metis_plus): communities grouped into
clients by their label mix.

OpenFGL (`openfgl.data.simulation.subgraph_fl_louvain_plus` / `subgraph_fl_metis_plus`) defines:
  1. communities: Louvain (resolution r) or METIS with `metis_num_coms` parts (default 100);
  2. each community's label histogram over all its labelled nodes, normalised to sum 1;
  3. k-means with K clusters on those histograms; client k = the union of the communities of cluster k.
Communities stay whole, and clients hold communities with similar label mixes, so the split has
both few cut edges and label skew; client sizes are not balanced (they follow the clusters).

Differences from OpenFGL, on purpose: k-means is fgl_jax's own seeded one (`kmeans.py`, k-means++,
10 restarts) instead of scikit-learn's unseeded KMeans, so a partition is reproducible; a
community without labelled nodes gets the uniform histogram (OpenFGL divides by zero); clients are
numbered by their smallest node id (k-means cluster ids are arbitrary).
"""
from __future__ import annotations

import numpy as np

from fgl_jax.graph import Graph
from fgl_jax.partition.base import (Partition, PartitionError, check_int, check_num_clients, check_positive,
                                    check_seed, partitioner, validate)
from fgl_jax.partition.kmeans import kmeans
from fgl_jax.partition.louvain import louvain_communities
from fgl_jax.partition.metis import metis_membership


def label_histograms(graph: Graph, communities: list[np.ndarray]) -> np.ndarray:
    """float64 [M, C]: each community's label distribution over its labelled nodes (rows sum to 1;
    uniform for a community with no labelled node)."""
    y = np.asarray(graph.y)
    c = graph.num_classes
    out = np.zeros((len(communities), c))
    for i, nodes in enumerate(communities):
        lab = y[nodes]
        lab = lab[lab >= 0]
        out[i] = np.bincount(lab, minlength=c)[:c] if lab.size else 1.0
    return out / out.sum(1, keepdims=True)


def canonical_clients(assignment: np.ndarray, k: int) -> np.ndarray:
    """Renumber client ids in order of each client's smallest node id (int32 [N])."""
    first = np.full(k, assignment.shape[0], np.int64)
    np.minimum.at(first, assignment, np.arange(assignment.shape[0]))
    rank = np.empty(k, np.int32)
    rank[np.argsort(first, kind="stable")] = np.arange(k, dtype=np.int32)
    return rank[assignment]


def cluster_communities(graph: Graph, communities: list[np.ndarray], num_clients: int, seed: int,
                        method: str) -> Partition:
    """Client of each community = its k-means cluster on the label histograms (steps 2-3 above)."""
    if len(communities) < num_clients:
        raise PartitionError(f"partition {method!r}: {len(communities)} communities for {num_clients} clients "
                             "(raise the resolution / number of communities, or lower the number of clients)")
    labels = kmeans(label_histograms(graph, communities), num_clients, seed=seed)
    assignment = np.full(graph.num_nodes, -1, np.int32)
    for nodes, cluster in zip(communities, labels):
        assignment[nodes] = cluster
    return validate(Partition(canonical_clients(assignment, num_clients), num_clients, method, seed), graph)


@partitioner("louvain_plus")
def louvain_plus_partition(graph: Graph, num_clients: int, seed: int = 0, resolution: float = 1.0) -> Partition:
    """OpenFGL's louvain+: Louvain communities grouped by k-means on their label histograms.

    graph: host Graph with N nodes and labels y int32 [N] (-1 = unlabelled).
    resolution: Louvain resolution (> 0). The seed drives Louvain and k-means.
    Returns a Partition with assignment int32 [N] (client sizes unbalanced by design).
    """
    k = check_num_clients(num_clients, graph)
    seed = check_seed(seed)
    resolution = check_positive("resolution", resolution)
    return cluster_communities(graph, louvain_communities(graph, resolution, seed), k, seed, "louvain_plus")


@partitioner("metis_plus")
def metis_plus_partition(graph: Graph, num_clients: int, seed: int = 0, num_communities: int = 100) -> Partition:
    """OpenFGL's metis+: `num_communities` METIS parts grouped by k-means on their label histograms.

    graph: host Graph with N nodes and labels y int32 [N] (-1 = unlabelled).
    num_communities: METIS parts before grouping (OpenFGL's metis_num_coms, default 100); at least
        num_clients and at most N. Empty METIS parts are dropped. The seed drives METIS and k-means.
    Returns a Partition with assignment int32 [N] (client sizes unbalanced by design).
    """
    k = check_num_clients(num_clients, graph)
    seed = check_seed(seed)
    m = check_int("num_communities", num_communities, minimum=k, maximum=graph.num_nodes)
    parts, _ = metis_membership(graph, m, seed)
    order = np.argsort(parts, kind="stable")
    comms = [c for c in np.split(order.astype(np.int64), np.cumsum(np.bincount(parts, minlength=m))[:-1]) if c.size]
    return cluster_communities(graph, comms, k, seed, "metis_plus")
