"""Partition statistics: HiFGL Table 2 counts (both unit conventions) and the leakage metric ε_p.

Conventions (spec hifgl.md §3, §4, §5.2 item 15):
- Directed counts count stored edges (u -> v and v -> u separately, self-loops included).
- Undirected counts count unordered pairs {u, v}, u != v (self-loops excluded, as in
  Graph.num_undirected_edges).
- Table 2 reports the per-client *mean* of intra edges and the federation-wide *total* of cross
  edges; both are given, plus the paper's mixed-unit ratio cross / (mean intra + cross).
- ε_p^i = |{v in client i : v has a neighbour (either edge direction) in another client}| / |V_i|;
  the global ε_p is the unweighted mean over clients (a random 5-way split of Cora gives ≈ 0.95).
- Label skew: the total-variation distance TV_i = ½ Σ_c |P_i(c) - P(c)| between client i's label
  distribution (over its labelled nodes) and the whole graph's; 0 = the global mix, 1 = disjoint.
  `partition_report` condenses all of it into a few numbers (what summary.json and
  `fgl-jax inspect --partition` show).

Shapes: N nodes, K clients.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from fgl_jax.graph import Graph, unique_keys
from fgl_jax.homophily import client_homophily, homophily_stats
from fgl_jax.partition.base import Partition, validate


def _unique_pairs(graph: Graph) -> tuple[np.ndarray, np.ndarray]:
    """Unordered non-self-loop node pairs (lo, hi), int64 [P] each, every pair once."""
    s, r = graph.senders.astype(np.int64), graph.receivers.astype(np.int64)
    keep = s != r
    lo, hi = np.minimum(s, r)[keep], np.maximum(s, r)[keep]
    key = unique_keys(lo * graph.num_nodes + hi)   # a sort: np.unique's hashing is slower on edge keys
    return key // graph.num_nodes, key % graph.num_nodes


def leakage(graph: Graph, partition: Partition) -> tuple[np.ndarray, np.ndarray]:
    """HiFGL's ε_p per client: (counts int64 [K], fractions float64 [K]).

    counts[i]: nodes of client i with at least one neighbour in another client;
    fractions[i] = counts[i] / |V_i|.
    """
    cross = partition.cross_edge_mask(graph)
    exposed = np.zeros(graph.num_nodes, bool)
    # Either endpoint of a cross edge knows a node of another client.
    exposed[graph.senders[cross]] = True
    exposed[graph.receivers[cross]] = True
    counts = np.bincount(partition.assignment[exposed], minlength=partition.num_clients)
    return counts, counts / partition.sizes


def partition_stats(graph: Graph, partition: Partition) -> dict[str, Any]:
    """Per-client and federation-wide statistics of `partition` on `graph` (JSON-serialisable).

    Per-client lists (length K): num_nodes, intra_edges_undirected, intra_edges_directed,
    train_nodes, val_nodes, test_nodes, labelled_nodes, label_counts (`[K, num_classes]`), label_tv (TV distance
    of the client's label distribution from the global one; None for a client without labelled
    nodes), classes_present, leakage_count, leakage (ε_p^i as a fraction), edge_homophily (of the
    client's intra-client edges; None without one), client_cross_edge_fraction (of the stored edges
    leaving the client's nodes, the share ending in another client) (`fgl_jax.homophily`).
    Scalars: num_clients, cross_edges_undirected, cross_edges_directed, cross_edge_fraction
    (undirected cross / all undirected pairs), cross_edge_fraction_directed,
    homophily ({edge, class, adjusted} of the whole graph; None where undefined),
    mean_intra_edges_undirected, mean_intra_edges_directed, table2_cross_ratio
    (cross_undirected / (mean_intra_undirected + cross_undirected), the paper's mixed-unit figure;
    CiteSeer's 95.21% is this), table2_cross_ratio_directed_intra (same with the directed intra mean;
    Cora's 90.69% is this), leakage_mean (global ε_p).

    Args:
        graph: the partitioned graph (N nodes).
        partition: its `Partition`, K clients, assignment `[N]`.

    Returns:
        The statistics dict, keys as above (lists of length K, label_counts `[K, num_classes]`).

    Raises:
        PartitionError: the partition does not fit the graph.
    """
    validate(partition, graph)
    k, a = partition.num_clients, partition.assignment

    cross_dir = partition.cross_edge_mask(graph)
    intra_dir = np.bincount(a[graph.senders[~cross_dir]], minlength=k)
    lo, hi = _unique_pairs(graph)
    same = a[lo] == a[hi]
    intra_und = np.bincount(a[lo[same]], minlength=k)
    cross_und = int((~same).sum())
    n_pairs, n_dir = int(lo.size), graph.num_edges
    mean_intra_und, mean_intra_dir = float(intra_und.mean()), float(intra_dir.mean())

    def per_client(mask: np.ndarray) -> list[int]:
        return np.bincount(a[np.asarray(mask, bool)], minlength=k).tolist()

    y = np.asarray(graph.y)
    lab = y >= 0
    label_counts = np.zeros((k, graph.num_classes), np.int64)
    # Labels outside [0, num_classes) would be a loader bug; clip keeps the table shape fixed.
    np.add.at(label_counts, (a[lab], np.clip(y[lab], 0, graph.num_classes - 1)), 1)
    leak_counts, leak = leakage(graph, partition)
    tv = label_tv(label_counts)
    hom = client_homophily(graph, a, k)

    return {
        "method": partition.method,
        "seed": partition.seed,
        "num_clients": k,
        "num_nodes": partition.sizes.tolist(),
        "intra_edges_undirected": intra_und.tolist(),
        "intra_edges_directed": intra_dir.tolist(),
        "cross_edges_undirected": cross_und,
        "cross_edges_directed": int(cross_dir.sum()),
        "cross_edge_fraction": cross_und / n_pairs if n_pairs else 0.0,
        "cross_edge_fraction_directed": float(cross_dir.sum()) / n_dir if n_dir else 0.0,
        "mean_intra_edges_undirected": mean_intra_und,
        "mean_intra_edges_directed": mean_intra_dir,
        "table2_cross_ratio": (cross_und / (mean_intra_und + cross_und)
                               if (mean_intra_und + cross_und) else 0.0),
        "table2_cross_ratio_directed_intra": (cross_und / (mean_intra_dir + cross_und)
                                              if (mean_intra_dir + cross_und) else 0.0),
        "train_nodes": per_client(graph.train_mask),
        "val_nodes": per_client(graph.val_mask),
        "test_nodes": per_client(graph.test_mask),
        "labelled_nodes": per_client(lab),
        "label_counts": label_counts.tolist(),
        "label_tv": [None if np.isnan(v) else float(v) for v in tv],
        "classes_present": (label_counts > 0).sum(1).tolist(),
        "leakage_count": leak_counts.tolist(),
        "leakage": leak.tolist(),
        "leakage_mean": float(leak.mean()),
        "edge_homophily": hom["edge_homophily"],
        "client_cross_edge_fraction": hom["cross_edge_fraction"],
        "homophily": {key: (None if np.isnan(v) else v) for key, v in homophily_stats(graph).items()},
    }


def label_tv(label_counts: np.ndarray) -> np.ndarray:
    """float64 [K]: ½ Σ_c |P_k(c) - P(c)| for label_counts int [K, C] (NaN for a client without labels)."""
    counts = np.asarray(label_counts, np.float64)
    total = counts.sum()
    if total == 0:
        return np.full(counts.shape[0], np.nan)
    glob = counts.sum(0) / total
    per = counts.sum(1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = counts / per
    tv = 0.5 * np.abs(p - glob).sum(1)
    tv[per[:, 0] == 0] = np.nan
    return tv


def partition_report(graph: Graph, partition: Partition, stats: dict | None = None) -> dict[str, Any]:
    """A compact edge-cut and label-distribution report of `partition` (JSON-serialisable, size
    independent of K except `client_nodes` for K <= 50): what a run records in summary.json.

    Keys: method, seed, clients; client_nodes {min, median, max, cv (std / mean)} (+ "sizes" list
    for K <= 50); edge_cut (undirected cross-client edges), edge_cut_fraction (of all undirected
    edges); label_tv {mean, max} over clients with labels; classes_per_client {mean, min} (of
    num_classes); leakage_mean (HiFGL's ε_p); clients_without_train (clients holding no training node);
    homophily {edge, class, adjusted} of the whole graph and client_edge_homophily {mean, min, max}
    over clients with an intra-client labelled edge (+ "per_client" and client_cross_edge_fraction
    lists for K <= 50).

    Args:
        graph: the partitioned graph.
        partition: its `Partition` (K clients).
        stats: `partition_stats(graph, partition)` if already computed; None: computed here.

    Returns:
        The report dict, keys as above.

    Raises:
        PartitionError: the partition does not fit the graph.
    """
    s = partition_stats(graph, partition) if stats is None else stats
    sizes = np.asarray(s["num_nodes"], np.float64)
    tv = np.array([np.nan if v is None else v for v in s["label_tv"]], np.float64)
    classes = np.asarray(s["classes_present"])
    nodes = {"min": int(sizes.min()), "median": float(np.median(sizes)), "max": int(sizes.max()),
             "cv": float(sizes.std() / sizes.mean())}
    if s["num_clients"] <= 50:
        nodes["sizes"] = [int(v) for v in sizes]
    has_tv = ~np.isnan(tv)
    ch = np.array([v for v in s["edge_homophily"] if v is not None], np.float64)
    client_h: dict[str, Any] | None = ({"mean": float(ch.mean()), "min": float(ch.min()), "max": float(ch.max())}
                                       if ch.size else None)
    if client_h is not None and s["num_clients"] <= 50:
        client_h["per_client"] = s["edge_homophily"]
    out = {
        "method": s["method"], "seed": s["seed"], "clients": s["num_clients"],
        "client_nodes": nodes,
        "edge_cut": s["cross_edges_undirected"],
        "edge_cut_fraction": s["cross_edge_fraction"],
        "label_tv": ({"mean": float(tv[has_tv].mean()), "max": float(tv[has_tv].max())} if has_tv.any()
                     else None),
        "classes_per_client": {"mean": float(classes.mean()), "min": int(classes.min()),
                               "of": graph.num_classes},
        "leakage_mean": s["leakage_mean"],
        "clients_without_train": int((np.asarray(s["train_nodes"]) == 0).sum()),
        "homophily": s["homophily"],
        "client_edge_homophily": client_h,
    }
    if s["num_clients"] <= 50:
        out["client_cross_edge_fraction"] = s["client_cross_edge_fraction"]
    return out
