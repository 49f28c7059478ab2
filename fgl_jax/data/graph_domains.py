"""Cross-domain sets of graphs: several graph datasets joined into one `GraphSet` whose graphs keep
their own feature and label spaces, for the cross-domain simulation of graph-level FL (one dataset
per client, as OpenFGL's `graph_fl_cross_domain` and GCFL's multi-dataset runs).

    gs, domain = combine_graph_sets([load("MUTAG_TU"), load("BZR"), ...])   # domain: int32 [G]
    names = domain_group("chem")                                            # GCFL's groups

Layout of the joined set (D datasets, dataset d with F_d features and K_d classes):
- x [N, sum F_d + D]: dataset d's features in their own column block (zeros elsewhere), so the first
  layer holds one input projection per dataset (GCFL instead gives each client its own input layer);
  the last D columns are the one-hot dataset of the node (the model reads them to pick the head and
  never feeds them to its layers).
- y: dataset d's classes shifted by K_0 + ... + K_{d-1}; `meta["class_blocks"]` holds each dataset's
  class range (lo, hi), and `fgl_jax.nn.graph.GraphClassifier(domains=...)` masks the logits outside
  a graph's range: one output layer whose class blocks are per-dataset heads.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from fgl_jax.data.tu import GraphSet

# GCFL's (Xie et al. 2021) dataset groups, restricted to the TU sets of the shared data: DHFR (chem),
# DD (biochem) and COLLAB (social) are not there. MUTAG is registered as MUTAG_TU.
GROUPS: dict[str, tuple[str, ...]] = {
    "chem": ("MUTAG_TU", "BZR", "COX2", "PTC_MR", "AIDS", "NCI1"),
    "biochem": ("MUTAG_TU", "BZR", "COX2", "PTC_MR", "AIDS", "NCI1", "ENZYMES", "PROTEINS"),
    "social": ("IMDB-BINARY", "IMDB-MULTI"),
    "biochem_social": ("MUTAG_TU", "BZR", "COX2", "PTC_MR", "AIDS", "NCI1", "ENZYMES", "PROTEINS", "IMDB-BINARY",
                       "IMDB-MULTI"),
}


def domain_group(spec: str) -> tuple[str, ...]:
    """The dataset names of a cross-domain `--dataset`: a group name of `GROUPS` or a comma list.

    Args:
        spec: "chem", "biochem", "social", "biochem_social", or names/paths joined by commas
            ("MUTAG_TU,BZR,COX2").

    Returns:
        The dataset names, in order (dataset d is domain d).
    """
    if spec.lower() in GROUPS:
        return GROUPS[spec.lower()]
    names = tuple(n.strip() for n in spec.split(","))
    if len(names) < 2 or not all(names):
        raise ValueError(f"cross_domain dataset {spec!r}: give a group ({', '.join(GROUPS)}) or two or more "
                         "datasets joined by commas (e.g. MUTAG_TU,BZR,COX2)")
    if len(set(names)) != len(names):
        raise ValueError(f"cross_domain dataset {spec!r} names a dataset twice")
    return names


def combine_graph_sets(sets: Sequence[GraphSet], name: str = "") -> tuple[GraphSet, np.ndarray]:
    """Join D graph-classification sets into one (module docstring for the layout).

    Args:
        sets: D >= 1 GraphSets with classes (num_classes > 0).
        name: the joined set's name (default: the names joined by "+").

    Returns:
        (GraphSet with G = sum G_d graphs, x [N, sum F_d + D], y shifted per dataset,
        meta["class_blocks"] = ((lo, hi), ...) per dataset, meta["domains"] = the names), and
        domain int32 [G], the dataset of each graph.
    """
    if not sets:
        raise ValueError("combine_graph_sets: no datasets given")
    for s in sets:
        if s.num_classes <= 0:
            raise ValueError(f"cross_domain: dataset {s.name!r} has regression targets; the cross-domain "
                             "simulation joins classification sets (task graph_cls)")
    d = len(sets)
    widths = [s.num_features for s in sets]
    col = np.concatenate([[0], np.cumsum(widths)]).astype(np.int64)
    cls = np.concatenate([[0], np.cumsum([s.num_classes for s in sets])]).astype(np.int64)
    total_f = int(col[-1]) + d
    xs, senders, receivers, node_off, edge_off, ys, domain = [], [], [], [0], [0], [], []
    n_base = 0
    for i, s in enumerate(sets):
        x = np.zeros((s.num_nodes, total_f), np.float32)
        x[:, col[i]:col[i + 1]] = s.x
        x[:, col[-1] + i] = 1.0
        xs.append(x)
        senders.append(s.senders.astype(np.int64) + n_base)
        receivers.append(s.receivers.astype(np.int64) + n_base)
        node_off.extend((s.node_offsets[1:] + n_base).tolist())
        edge_off.extend((s.edge_offsets[1:] + edge_off[-1]).tolist())
        ys.append(s.y.astype(np.int64) + cls[i])
        domain.append(np.full(s.num_graphs, i, np.int32))
        n_base += s.num_nodes
    blocks = tuple((int(cls[i]), int(cls[i + 1])) for i in range(d))
    gs = GraphSet(name=name or "+".join(s.name for s in sets), x=np.concatenate(xs),
                  senders=np.concatenate(senders).astype(np.int32), receivers=np.concatenate(receivers).astype(np.int32),
                  node_offsets=np.asarray(node_off, np.int64), edge_offsets=np.asarray(edge_off, np.int64),
                  y=np.concatenate(ys).astype(np.int32), num_classes=int(cls[-1]),
                  meta={"class_blocks": blocks, "domains": tuple(s.name for s in sets),
                        "feature_blocks": tuple((int(col[i]), int(col[i + 1])) for i in range(d))})
    return gs, np.concatenate(domain)
