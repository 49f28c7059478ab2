"""How much edges join nodes of one class: edge, class and adjusted homophily, whole graph and per client.

    edge_homophily(g)        fraction of edges whose endpoints share a label
    class_homophily(g)       Lim et al. 2021 ("class-insensitive"): (1 / (C-1)) sum_k max(0, h_k - |C_k| / n),
                             h_k = the fraction of the edges leaving class-k nodes that end in class k
    adjusted_homophily(g)    Platonov et al. 2023: (h_edge - sum_k p_k^2) / (1 - sum_k p_k^2), p_k = the share
                             of edge endpoints in class k (degree-weighted class frequency); 0 = what random
                             wiring with these degrees gives, negative = heterophilous
    client_homophily(g, a)   per client of a partition: edge homophily of its own (intra-client) edges, the
                             fraction of its nodes' edges that cross to another client, its label counts

Every measure counts the stored (directed) edges whose both endpoints are labelled (y >= 0); a
symmetric graph stores each undirected edge twice, which leaves every ratio unchanged. A measure
without any such edge (or class homophily with fewer than two classes) is NaN. Host-side NumPy
only; `fgl-jax inspect` prints them and each run's partition record holds them
(`fgl_jax.partition.partition_stats`).

Shapes: N nodes, E stored edges, C classes, K clients.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:  # annotations only: the core layer imports nothing of fgl_jax
    from fgl_jax.graph import Graph

__all__ = ["edge_homophily", "class_homophily", "adjusted_homophily", "homophily_stats", "client_homophily"]


def _labelled_edges(graph: Graph) -> tuple[np.ndarray, np.ndarray]:
    """(label of sender, label of receiver), int [E'] each, over the edges with both endpoints labelled."""
    y = np.asarray(graph.y)
    ys, yr = y[np.asarray(graph.senders)], y[np.asarray(graph.receivers)]
    keep = (ys >= 0) & (yr >= 0)
    return ys[keep], yr[keep]


def edge_homophily(graph: Graph) -> float:
    """Fraction of stored edges whose endpoints share a label (both endpoints labelled).

    Args:
      graph: a Graph, y int [N] (-1 = unlabelled).

    Returns:
      A float in [0, 1]; NaN without a labelled edge.
    """
    ys, yr = _labelled_edges(graph)
    return float(np.mean(ys == yr)) if ys.size else float("nan")


def class_homophily(graph: Graph) -> float:
    """Lim et al.'s class-insensitive homophily (module docstring), over the labelled nodes and edges.

    Args:
      graph: a Graph with C = graph.num_classes classes.

    Returns:
      A float in [0, 1]; NaN without a labelled edge or with fewer than two classes.
    """
    ys, yr = _labelled_edges(graph)
    c = int(graph.num_classes)
    if not ys.size or c < 2:
        return float("nan")
    y = np.asarray(graph.y)
    sizes = np.bincount(y[y >= 0], minlength=c)[:c].astype(np.float64)
    out_edges = np.bincount(ys, minlength=c)[:c].astype(np.float64)   # edges leaving class k
    same = np.bincount(ys[ys == yr], minlength=c)[:c].astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        h_k = np.where(out_edges > 0, same / np.maximum(out_edges, 1.0), 0.0)
    return float(np.maximum(0.0, h_k - sizes / sizes.sum()).sum() / (c - 1))


def adjusted_homophily(graph: Graph) -> float:
    """Platonov et al.'s adjusted homophily (module docstring): edge homophily corrected for the
    degree-weighted class frequencies.

    Args:
      graph: a Graph.

    Returns:
      A float <= 1 (0 for random wiring, negative when edges prefer other classes); NaN without a
      labelled edge or when all endpoints are of one class.
    """
    ys, yr = _labelled_edges(graph)
    if not ys.size:
        return float("nan")
    c = int(max(graph.num_classes, ys.max() + 1, yr.max() + 1))
    ends = np.bincount(ys, minlength=c) + np.bincount(yr, minlength=c)   # D_k over both endpoints
    chance = float(np.sum((ends / ends.sum()) ** 2))
    if chance >= 1.0:
        return float("nan")
    return (float(np.mean(ys == yr)) - chance) / (1.0 - chance)


def homophily_stats(graph: Graph) -> dict[str, float]:
    """The three whole-graph measures.

    Args:
      graph: a Graph.

    Returns:
      {"edge": .., "class": .., "adjusted": ..} (floats, NaN where undefined).
    """
    return {"edge": edge_homophily(graph), "class": class_homophily(graph), "adjusted": adjusted_homophily(graph)}


def client_homophily(graph: Graph, assignment: np.ndarray, num_clients: int) -> dict[str, Any]:
    """Per-client homophily, cross-client edge fraction and label counts of a partition.

    Args:
      graph: a Graph with N nodes.
      assignment: int [N], the client of each node (0 .. num_clients - 1).
      num_clients: K.

    Returns:
      A dict of lists of length K: "edge_homophily" (over the client's intra-client labelled edges;
      None without one), "cross_edge_fraction" (of the stored edges leaving the client's nodes, the
      fraction whose receiver is in another client; 0.0 for a client without edges), and
      "label_counts" ([K, C] labelled nodes per class).
    """
    a = np.asarray(assignment, np.int64)
    s, r = np.asarray(graph.senders, np.int64), np.asarray(graph.receivers, np.int64)
    y = np.asarray(graph.y)
    k, c = int(num_clients), int(graph.num_classes)
    intra = a[s] == a[r]
    lab = (y[s] >= 0) & (y[r] >= 0) & intra
    n_lab = np.bincount(a[s[lab]], minlength=k)
    n_same = np.bincount(a[s[lab & (y[s] == y[r])]], minlength=k)
    out_all = np.bincount(a[s], minlength=k)
    out_cross = np.bincount(a[s[~intra]], minlength=k)
    counts = np.zeros((k, c), np.int64)
    keep = y >= 0
    np.add.at(counts, (a[keep], np.clip(y[keep], 0, c - 1)), 1)
    return {"edge_homophily": [float(n_same[i] / n_lab[i]) if n_lab[i] else None for i in range(k)],
            "cross_edge_fraction": [float(out_cross[i] / out_all[i]) if out_all[i] else 0.0 for i in range(k)],
            "label_counts": counts.tolist()}
