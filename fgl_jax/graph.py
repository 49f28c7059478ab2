"""Graph containers.

`Graph` is the host-side (NumPy) node-classification graph every loader returns and every
partitioner consumes. Edges are stored directed (both directions of an undirected edge),
without self-loops unless the source data has them. Features are either a dense
`np.ndarray [N, F]` or a `scipy.sparse.csr_matrix [N, F]` (bag-of-words stays sparse).

`ClientBatch` (in `fgl_jax.batch`) is the device-side, padded, client-stacked view.

Shapes: N nodes, E directed edges, F features, K classes.
"""
from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Optional, Union

import jraph
import numpy as np
import scipy.sparse as sp

Features = Union[np.ndarray, sp.csr_matrix]


class GraphError(ValueError):
    """A graph, partition or split is malformed (names the field and value)."""


class LabelledNodes:
    """What every host-side graph shares: features `x` [N, F] (dense or CSR), labels `y` [N],
    `num_classes` and boolean train/val/test masks [N]. Graph and Hypergraph inherit it."""

    def _check_nodes(self, error: type, kind: str) -> None:
        """Raise `error` naming the field when a per-node field or num_classes is malformed."""
        n = self.x.shape[0]
        for field in ("y", "train_mask", "val_mask", "test_mask"):
            shape = np.shape(getattr(self, field))
            if shape != (n,):
                raise error(f"{kind} {self.name!r}: field {field} has shape {shape}, expected ({n},)")
        if self.num_classes <= 0:
            raise error(f"{kind} {self.name!r}: num_classes must be positive, got {self.num_classes}")
        values = self.x.data if hasattr(self.x, "tocsr") else np.asarray(self.x)
        if values.dtype.kind in "fc" and not np.isfinite(values).all():
            # a NaN feature would otherwise vanish in normalisation (the row turns to zeros) or poison training
            rows = (np.unique(self.x.tocoo().row[~np.isfinite(self.x.tocoo().data)]) if hasattr(self.x, "tocsr")
                    else np.flatnonzero(~np.isfinite(values).all(axis=1)))
            raise error(f"{kind} {self.name!r}: field x has non-finite (NaN/inf) features in {len(rows)} node(s), "
                        f"first node {int(rows[0])}")

    @property
    def num_nodes(self) -> int:
        return int(self.x.shape[0])

    @property
    def num_features(self) -> int:
        return int(self.x.shape[1])

    def dense_x(self) -> np.ndarray:
        """x as a dense float32 array [N, F]."""
        return np.asarray(self.x.todense(), np.float32) if sp.issparse(self.x) else np.asarray(self.x, np.float32)


@dataclasses.dataclass(frozen=True)
class Graph(LabelledNodes):
    """A node-classification graph on the host (N nodes, E directed edges, F features, K classes).

    Attributes:
        name: the dataset's name.
        senders: int32 `[E]`, edge sources (u -> v means v aggregates from u).
        receivers: int32 `[E]`, edge targets.
        x: float32 `[N, F]`, a dense array or a CSR matrix.
        y: int32 `[N]`; -1 marks a node without a label (e.g. CiteSeer's 15 featureless nodes).
        num_classes: K.
        train_mask: bool `[N]`.
        val_mask: bool `[N]`.
        test_mask: bool `[N]`.
        meta: where the graph came from and what was done to it (for a user's file: "path", "format",
            "notices", "split"); not part of equality, dropped by `subgraph`.
    """

    name: str
    senders: np.ndarray
    receivers: np.ndarray
    x: Features
    y: np.ndarray
    num_classes: int
    train_mask: np.ndarray
    val_mask: np.ndarray
    test_mask: np.ndarray
    meta: dict = dataclasses.field(default_factory=dict, compare=False, repr=False)

    def save(self, path: Union[str, os.PathLike]) -> Path:
        """Write this graph as a plain-layout ``.npz`` (`fgl_jax.data.npz`) that ``--dataset PATH``
        reads back as the same graph: the same edges in the same order, features, labels, masks,
        class count and class names (``meta["class_names"]``).

        Args:
          path: the file to write (``.npz`` is appended when missing).

        Returns:
          The path written.

        Raises:
          GraphError: the edges are not symmetric or repeat (what a loader would change on
            reading the file back), naming the count.
        """
        path = Path(path)
        if path.suffix != ".npz":
            path = path.with_name(path.name + ".npz")
        n = self.num_nodes
        s, r = np.asarray(self.senders, np.int64), np.asarray(self.receivers, np.int64)
        code = s * n + r
        if len(np.unique(code)) != len(code):
            raise GraphError(f"Graph {self.name!r}: {len(code) - len(np.unique(code))} duplicate edges; save writes "
                             "graphs as the loaders build them (fgl_jax.build_graph)")
        if not np.array_equal(np.sort(code), np.sort(r * n + s)):
            raise GraphError(f"Graph {self.name!r}: the edges are not symmetric; save writes undirected graphs as "
                             "the loaders build them (fgl_jax.build_graph)")
        arrays: dict = {"edge_index": np.stack([s, r]), "y": np.asarray(self.y), "num_classes": np.int64(self.num_classes),
                        "train_mask": np.asarray(self.train_mask, bool), "val_mask": np.asarray(self.val_mask, bool),
                        "test_mask": np.asarray(self.test_mask, bool)}
        if sp.issparse(self.x):
            x = sp.csr_matrix(self.x)
            arrays.update(x_data=x.data, x_indices=x.indices, x_indptr=x.indptr, x_shape=np.asarray(x.shape))
        else:
            arrays["x"] = np.asarray(self.x)
        names = (self.meta or {}).get("class_names")
        if names is not None:
            arrays["class_names"] = np.asarray([str(c) for c in names], dtype=str)
        path.parent.mkdir(parents=True, exist_ok=True)
        np.savez(path, **arrays)
        return path

    def __post_init__(self):
        self._check_nodes(GraphError, "Graph")
        n = self.x.shape[0]
        if self.senders.shape != self.receivers.shape or self.senders.ndim != 1:
            raise GraphError(
                f"Graph {self.name!r}: senders {self.senders.shape} and receivers {self.receivers.shape} "
                "must be equal-length 1-D arrays")
        if self.senders.size:
            lo = min(self.senders.min(), self.receivers.min())
            hi = max(self.senders.max(), self.receivers.max())
            if lo < 0 or hi >= n:
                raise GraphError(f"Graph {self.name!r}: edge endpoint {lo if lo < 0 else hi} outside [0, {n})")

    # ---- basic statistics -------------------------------------------------------------
    @property
    def num_edges(self) -> int:
        """Number of directed edges stored."""
        return int(self.senders.shape[0])

    def num_undirected_edges(self, count_self_loops: bool = False) -> int:
        s, r = self.senders, self.receivers
        keep = s != r
        lo, hi = np.minimum(s, r)[keep], np.maximum(s, r)[keep]
        n = len(np.unique(lo.astype(np.int64) * self.num_nodes + hi))
        if count_self_loops:
            n += int(len(np.unique(s[~keep])))
        return n

    def degrees(self) -> np.ndarray:
        """In-degree per node (number of incoming directed edges), int64 [N]."""
        return np.bincount(self.receivers, minlength=self.num_nodes)

    def to_graphs_tuple(self) -> jraph.GraphsTuple:
        """The structure as a single-graph jraph.GraphsTuple (features kept outside)."""
        return jraph.GraphsTuple(
            nodes=None, edges=None,
            senders=self.senders.astype(np.int32), receivers=self.receivers.astype(np.int32),
            n_node=np.array([self.num_nodes], np.int32), n_edge=np.array([self.num_edges], np.int32),
            globals=None)

    def with_masks(self, train_mask: np.ndarray, val_mask: np.ndarray, test_mask: np.ndarray) -> "Graph":
        return dataclasses.replace(self, train_mask=np.asarray(train_mask, bool),
                                   val_mask=np.asarray(val_mask, bool), test_mask=np.asarray(test_mask, bool))

    def subgraph(self, nodes: np.ndarray, name: Optional[str] = None) -> "Graph":
        """Induced subgraph on `nodes` (order kept); edges leaving the set are dropped."""
        nodes = np.asarray(nodes, np.int64)
        local = -np.ones(self.num_nodes, np.int64)
        local[nodes] = np.arange(len(nodes))
        keep = (local[self.senders] >= 0) & (local[self.receivers] >= 0)
        x = self.x[nodes]
        return Graph(
            name=name or f"{self.name}[sub]",
            senders=local[self.senders[keep]].astype(np.int32),
            receivers=local[self.receivers[keep]].astype(np.int32),
            x=x.tocsr() if sp.issparse(x) else x,
            y=self.y[nodes], num_classes=self.num_classes,
            train_mask=self.train_mask[nodes], val_mask=self.val_mask[nodes], test_mask=self.test_mask[nodes])

    def subgraphs(self, assignment: np.ndarray, num_parts: int,
                  name: str = "{graph}[client {part}]") -> tuple[list["Graph"], list[np.ndarray]]:
        """The induced subgraph of every part at once: `[self.subgraph(flatnonzero(assignment == k))
        for k in range(num_parts)]`, the same graphs, in O(N + E + nnz) in total instead of one pass
        over all nodes and edges per part (1,000 clients of a 100k-node graph: minutes that way).

        Nodes keep ascending global-id order inside a part and edges their stored order, as
        `subgraph` gives; nodes whose part is outside 0..num_parts-1 belong to none.

        Args:
            assignment: int `[N]`, each node's part.
            num_parts: K, the number of parts.
            name: the name of part k's graph, formatted with `graph` (this graph's name) and `part` (k).

        Returns:
            `(graphs, nodes)`: K subgraphs, and per part its global node ids (int64 `[n_k]`, ascending).

        Raises:
            GraphError: `assignment` is not of shape `[N]`.
        """
        a = np.asarray(assignment)
        if a.shape != (self.num_nodes,):
            raise GraphError(f"assignment has shape {a.shape}, expected ({self.num_nodes},)")
        a = a.astype(np.int64)
        a = np.where((a >= 0) & (a < num_parts), a, -1)   # -1: in no part
        # one stable sort groups the nodes by part, ascending ids within a part (as flatnonzero)
        inside = np.flatnonzero(a >= 0)
        order = inside[np.argsort(a[inside], kind="stable")]
        counts = np.bincount(a[order], minlength=num_parts)
        bounds = np.cumsum(counts)[:-1]
        local = -np.ones(self.num_nodes, np.int64)
        local[order] = np.arange(order.size) - np.concatenate([[0], bounds])[a[order]]
        # intra-part edges, grouped by part by another stable sort (stored order kept within a part)
        s, r = self.senders, self.receivers
        edges = np.flatnonzero((a[s] >= 0) & (a[s] == a[r]))
        edges = edges[np.argsort(a[s[edges]], kind="stable")]
        e_bounds = np.cumsum(np.bincount(a[s[edges]], minlength=num_parts))[:-1]
        senders = np.split(local[s[edges]].astype(np.int32), e_bounds)
        receivers = np.split(local[r[edges]].astype(np.int32), e_bounds)
        x = self.x[order]
        if sp.issparse(x):  # CSR row slices: the rows of each part, as subgraph's x[nodes].tocsr()
            x = x.tocsr()
            starts = np.concatenate([[0], bounds, [order.size]])
            xs = [x[starts[k]:starts[k + 1]] for k in range(num_parts)]
        else:
            xs = np.split(x, bounds)
        ys, trains, vals, tests = (np.split(v[order], bounds)
                                   for v in (self.y, self.train_mask, self.val_mask, self.test_mask))
        graphs = [Graph(name=name.format(graph=self.name, part=k), senders=senders[k], receivers=receivers[k],
                        x=xs[k], y=ys[k], num_classes=self.num_classes, train_mask=trains[k], val_mask=vals[k],
                        test_mask=tests[k]) for k in range(num_parts)]
        return graphs, np.split(order, bounds)


def unique_keys(keys: np.ndarray) -> np.ndarray:
    """`np.unique` of integer keys by an in-place sort (sorts `keys` itself).

    NumPy 2's `np.unique` hashes integer arrays; on tens of millions of int64 edge keys that was
    about 15x slower here than sorting once and keeping the first of each run.

    Args:
        keys: int `[M]` (sorted in place).

    Returns:
        The distinct keys, ascending.
    """
    keys.sort()
    return keys[np.concatenate([[True], keys[1:] != keys[:-1]])] if keys.size else keys


def symmetrize(senders: np.ndarray, receivers: np.ndarray, num_nodes: int,
               keep_self_loops: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Unique directed edges with both directions of every pair, sorted by (receiver, sender).

    Args:
        senders: int `[E]` edge sources.
        receivers: int `[E]` edge targets.
        num_nodes: N; the ids must be in 0..N-1.
        keep_self_loops: keep u -> u edges (default: dropped).

    Returns:
        `(senders, receivers)`, int32 `[E']` each, duplicates merged.
    """
    s = np.concatenate([senders, receivers]).astype(np.int64)
    r = np.concatenate([receivers, senders]).astype(np.int64)
    if not keep_self_loops:
        keep = s != r
        s, r = s[keep], r[keep]
    key = np.unique(r * num_nodes + s)
    return (key % num_nodes).astype(np.int32), (key // num_nodes).astype(np.int32)
