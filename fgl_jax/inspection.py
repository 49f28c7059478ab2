"""What a dataset is, before a run: `fgl-jax inspect <path-or-name>` and `fgl_jax.inspect_dataset`.

    for line in inspect_dataset("cora", partition="louvain", clients=10):
        print(line)

A plain graph gets nodes, undirected edges, features, classes, edge / class / adjusted homophily
(`fgl_jax.homophily`), degree statistics (min / median / max, isolated nodes), split sizes and,
with `partition`, what that partitioner gives (client sizes, cut edges, per-client homophily,
cross-client edge fraction and label counts); a hypergraph gets its hyperedge sizes; a heterogeneous graph its
node types and relations. Only host-side NumPy: no JAX is imported.
"""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

from fgl_jax.graph import Graph


def _stats(v: np.ndarray) -> str:
    if v.size == 0:
        return "none"
    return f"min {int(v.min())}, median {float(np.median(v)):g}, max {int(v.max())}, mean {float(v.mean()):.2f}"


def _features(x: Any) -> str:
    if hasattr(x, "tocsr"):
        n, f = x.shape
        return f"{f} (sparse, {x.nnz / max(n * f, 1):.2%} non-zero)"
    return f"{x.shape[1]} (dense)"


def _split(obj: Any) -> str:
    tr, va, te = (int(np.asarray(getattr(obj, m)).sum()) for m in ("train_mask", "val_mask", "test_mask"))
    if tr + va + te == 0:
        return "none in the data (each system draws its own; see its `split` option)"
    line = f"train {tr}, val {va}, test {te} (unassigned {obj.num_nodes - int(np.asarray(obj.train_mask | obj.val_mask | obj.test_mask).sum())})"
    fixed = (getattr(obj, "meta", None) or {}).get("fixed_splits")
    if fixed:  # a file with k fixed splits: the line shows split 0 (--split-index picks another, or all)
        line += f"; split 0 of {fixed['train'].shape[0]} fixed splits (--split-index i | all)"
    return line


def _labels(obj: Any) -> str:
    y = np.asarray(obj.y)
    lab = y[y >= 0]
    counts = np.bincount(lab, minlength=obj.num_classes) if lab.size else np.zeros(obj.num_classes, int)
    unl = int((y < 0).sum())
    return (f"{obj.num_classes} (nodes per class: min {int(counts.min())}, max {int(counts.max())}"
            + (f"; {unl} unlabelled" if unl else "") + ")")


def graph_lines(g: Graph) -> list[str]:
    """Statistics of a plain graph, one per line."""
    deg = np.bincount(g.receivers[g.senders != g.receivers], minlength=g.num_nodes)
    from fgl_jax.homophily import homophily_stats
    h = homophily_stats(g)
    self_loops = int((g.senders == g.receivers).sum())
    return [f"nodes:      {g.num_nodes}",
            f"edges:      {g.num_undirected_edges()} undirected ({g.num_edges} directed stored"
            + (f", {self_loops} self-loops" if self_loops else "") + ")",
            f"features:   {_features(g.x)}",
            f"classes:    {_labels(g)}",
            f"homophily:  {h['edge']:.3f} (edge homophily: fraction of edges whose endpoints share a label); "
            f"class {h['class']:.3f} (Lim et al.), adjusted {h['adjusted']:.3f} (Platonov et al.; 0 = random wiring)",
            f"degree:     {_stats(deg)}; isolated {int((deg == 0).sum())}",
            f"split:      {_split(g)}"]


def partition_lines(g: Graph, method: str, clients: int, seed: int = 0, options: Optional[dict] = None) -> list[str]:
    """What `method` gives on `g` with `clients` clients: sizes, cut edges and label skew
    (`fgl_jax.partition.partition_report`). options: the partitioner's keywords (e.g. packing="whole")."""
    from fgl_jax.partition import PartitionError, make_partition, partition_report, partition_stats
    try:
        part = make_partition(g, method, clients, seed=seed, **(options or {}))
    except TypeError as e:  # an option the partitioner does not take
        raise PartitionError(f"--partition-option: partition {method!r} does not take {e}") from None
    s = partition_stats(g, part)
    r = partition_report(g, part, s)
    sizes = np.asarray(s["num_nodes"])
    total = max(g.num_undirected_edges(), 1)
    opts = "".join(f", {k}={v}" for k, v in (options or {}).items())
    lines = [f"partition:  {method}, {clients} clients, seed {seed}{opts}",
             f"  client nodes: {_stats(sizes)}" + (f" ({sizes.tolist()})" if clients <= 20 else ""),
             f"  edges cut:    {s['cross_edges_undirected']} of {total} undirected ({s['cross_edges_undirected'] / total:.1%}) "
             "cross clients (what a federated GNN loses)"]
    if r["label_tv"] is not None:
        c = r["classes_per_client"]
        lines.append(f"  label skew:   total-variation distance from the global label mix: mean "
                     f"{r['label_tv']['mean']:.3f}, max {r['label_tv']['max']:.3f}; classes per client: mean "
                     f"{c['mean']:.1f}, min {c['min']} of {c['of']}")
    ch = [v for v in s["edge_homophily"] if v is not None]
    if ch:
        per = ", ".join("-" if v is None else f"{v:.2f}" for v in s["edge_homophily"])
        lines.append(f"  client edge homophily (own edges): mean {np.mean(ch):.3f}, min {min(ch):.3f}, max {max(ch):.3f}"
                     + (f" ({per})" if clients <= 20 else ""))
    cf = np.asarray(s["client_cross_edge_fraction"])
    lines.append(f"  cross-client edge fraction per client: mean {cf.mean():.3f}, min {cf.min():.3f}, max {cf.max():.3f}"
                 + (f" ({', '.join(f'{v:.2f}' for v in cf)})" if clients <= 20 else ""))
    if clients <= 20 and r["label_tv"] is not None:
        for i, row in enumerate(s["label_counts"]):
            lines.append(f"  client {i:>2} labels: {row}")
    if g.train_mask.any():
        tr = np.asarray(s["train_nodes"])
        lines.append(f"  train nodes per client: {_stats(tr)}" + ("; some client has none" if (tr == 0).any() else ""))
    return lines


def hypergraph_lines(h: Any) -> list[str]:
    return [f"nodes:      {h.num_nodes}",
            f"hyperedges: {h.num_edges} (sizes: {_stats(h.edge_sizes())})",
            f"features:   {_features(h.x)} ({h.feature_kind})",
            f"classes:    {_labels(h)}",
            f"node degree: {_stats(h.node_degrees())}",
            f"split:      {_split(h)}"]


def graph_set_lines(gs: Any) -> list[str]:
    """A GraphSet (`fgl_jax.data.tu`): graphs, nodes and edges per graph, features, label counts."""
    counts = np.bincount(gs.y, minlength=gs.num_classes) if gs.num_classes else None
    lines = [f"graphs:     {gs.num_graphs:,}",
             f"nodes:      {gs.num_nodes:,} ({_stats(gs.nodes_per_graph)} per graph)",
             f"edges:      {gs.num_edges:,} directed ({_stats(gs.edges_per_graph)} per graph)",
             f"features:   {gs.num_features}" + (f" ({gs.meta['features']})" if "features" in gs.meta else ""),
             (f"classes:    {gs.num_classes} (graphs per class {counts.tolist()}; file values "
              f"{gs.meta.get('label_values')})") if counts is not None else "targets:    regression"]
    if gs.edge_labels is not None:
        lines.append(f"edge labels: {len(np.unique(gs.edge_labels))} values")
    return lines


def hetero_lines(g: Any) -> list[str]:
    out = ["node types: " + ", ".join(f"{t} {n}" for t, n in zip(g.node_types, g.num_nodes)),
           f"relations:  {len(g.canonical_etypes)}"]
    rels = [f"  {s} -{r}-> {d}: {len(e[0])} edges" for (s, r, d), e in zip(g.canonical_etypes, g.edges)]
    out += rels[:12] + ([f"  ... and {len(rels) - 12} more"] if len(rels) > 12 else [])
    tr, va, te = (int(np.asarray(m).sum()) for m in (g.train_mask, g.val_mask, g.test_mask))
    out += [f"target:     {g.target} ({g.num_classes} classes; split train {tr}, val {va}, test {te})",
            "features:   " + (", ".join(f"{t} {np.shape(x)[1]}" for t, x in g.features.items()) or "none")]
    return out


def inspect_dataset(dataset: Any, data_dir: Optional[str] = None, partition: Optional[str] = None,
                    clients: int = 10, seed: int = 0, options: Optional[dict] = None) -> list[str]:
    """Lines describing `dataset` (a name, a path, or a loaded Graph / Hypergraph / HeteroGraph);
    with `partition`, also what that partitioner (with keyword `options`) gives with `clients`
    clients (plain graphs).

    Args:
        dataset: a dataset name, a path, or a loaded Graph / Hypergraph / HeteroGraph.
        data_dir: the data directory to look in first, for a name or path.
        partition: a partitioner's name (e.g. "louvain"), or None for the dataset alone.
        clients: the number of clients of the partition.
        seed: the partition's seed.
        options: the partitioner's keywords (e.g. ``{"packing": "whole"}``), or None.

    Returns:
        The lines, without newlines (what `fgl-jax inspect` prints).

    Raises:
        ValueError: `partition` for a dataset that is not a plain graph.
    """
    from fgl_jax.data import load
    from fgl_jax.data.hypergraph import Hypergraph
    obj = dataset if not isinstance(dataset, str) else load(dataset, data_dir=data_dir)
    name = getattr(obj, "name", str(dataset))
    if isinstance(obj, Graph):
        lines = [f"dataset:    {name} (graph)"] + graph_lines(obj)
        if partition:
            lines += partition_lines(obj, partition, clients, seed, options)
        return lines
    if partition:
        raise ValueError(f"--partition: {name!r} is a {type(obj).__name__}; partitions are shown for plain graphs")
    from fgl_jax.data.tu import GraphSet
    if isinstance(obj, GraphSet):
        return [f"dataset:    {name} (graphs: a graph-classification set)"] + graph_set_lines(obj)
    if isinstance(obj, Hypergraph):
        return [f"dataset:    {name} (hypergraph)"] + hypergraph_lines(obj)
    return [f"dataset:    {name} ({type(obj).__name__})"] + hetero_lines(obj)
