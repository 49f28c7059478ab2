"""Structure encodings of graph nodes (FedStar, Tan et al., AAAI 2023, "Federated Learning on Non-IID
Graphs via Structural Knowledge Sharing", Sec. 4.1), on a `fgl_jax.data.tu.GraphSet` (host NumPy).

    rwse = random_walk_encoding(gs, steps=16)     # [N, 16]
    dse = degree_encoding(gs, dims=16)            # [N, 16]
    se = structure_encoding(gs, 16, 16, "rw_dg")  # [N, 32]: FedStar's default, both side by side

Random-walk encoding (RWSE): node v's k-step return probabilities [P_vv, (P^2)_vv, ..., (P^K)_vv]
of the random walk on its graph (P = D^-1 A; OpenFGL's `_utils.init_structure_encoding` takes the
diagonal of (A D^-1)^k, the same numbers: the two matrices are similar). A node without edges has
return probability 0. Degree encoding (DSE): one-hot of the node's degree clipped to 1..dims (an
isolated node counts as degree 1, as OpenFGL's `clip(1, n_dg)`). Degrees are out-degrees (row
counts of `senders`), equal to degrees on the TU sets' symmetric edge lists.

`with_structure_encoding` puts the encoding into a GraphSet's node features, where FedStar's model
(`fgl_jax.nn.graph.DualChannelClassifier`) reads it; the algorithm is `fgl_jax.algorithms.fedstar`.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from fgl_jax.data.tu import GraphSet

ENCODINGS = ("rw", "dg", "rw_dg")


def _degrees(gs: GraphSet) -> np.ndarray:
    return np.bincount(gs.senders, minlength=gs.num_nodes).astype(np.float64)


def random_walk_encoding(gs: GraphSet, steps: int = 16) -> np.ndarray:
    """The k-step return probabilities of every node, k = 1..steps.

    Args:
        gs: the graphs (N nodes in all).
        steps: K, the longest walk, >= 1.

    Returns:
        float32 [N, K], row v = [(P^k)_vv for k = 1..K] of v's graph's walk matrix P = D^-1 A.
    """
    if steps < 1:
        raise ValueError(f"structure encoding: steps must be >= 1, got {steps}")
    out = np.zeros((gs.num_nodes, steps), np.float32)
    deg = _degrees(gs)
    for g in range(gs.num_graphs):
        a, b = int(gs.node_offsets[g]), int(gs.node_offsets[g + 1])
        e0, e1 = int(gs.edge_offsets[g]), int(gs.edge_offsets[g + 1])
        n = b - a
        if n == 0:
            continue
        adj = np.zeros((n, n))
        adj[gs.senders[e0:e1] - a, gs.receivers[e0:e1] - a] = 1.0   # a repeated edge is one edge
        d = deg[a:b]
        walk = adj * np.where(d > 0, 1.0 / np.maximum(d, 1.0), 0.0)[:, None]   # row v: v's steps
        power = np.eye(n)
        for k in range(steps):
            power = power @ walk
            out[a:b, k] = np.diagonal(power)
    return out


def degree_encoding(gs: GraphSet, dims: int = 16) -> np.ndarray:
    """One-hot node degrees, clipped to 1..dims.

    Args:
        gs: the graphs (N nodes in all).
        dims: the width, >= 1 (degrees above it share the last column).

    Returns:
        float32 [N, dims], a one at column min(max(degree, 1), dims) - 1.
    """
    if dims < 1:
        raise ValueError(f"structure encoding: dims must be >= 1, got {dims}")
    col = np.clip(_degrees(gs), 1, dims).astype(np.int64) - 1
    out = np.zeros((gs.num_nodes, dims), np.float32)
    out[np.arange(gs.num_nodes), col] = 1.0
    return out


def structure_encoding(gs: GraphSet, rw_steps: int = 16, dg_dims: int = 16, kind: str = "rw_dg") -> np.ndarray:
    """FedStar's structure encoding of every node (OpenFGL's `type_init`).

    Args:
        gs: the graphs (N nodes in all).
        rw_steps: the random-walk length K (`n_rw`).
        dg_dims: the degree one-hot width (`n_dg`).
        kind: "rw" (RWSE), "dg" (DSE) or "rw_dg" (both, RWSE first: FedStar's default).

    Returns:
        float32 [N, K], [N, dims] or [N, K + dims].
    """
    if kind not in ENCODINGS:
        raise ValueError(f"structure encoding: kind must be one of {', '.join(ENCODINGS)}, got {kind!r}")
    parts = ([random_walk_encoding(gs, rw_steps)] if "rw" in kind else []) + (
        [degree_encoding(gs, dg_dims)] if "dg" in kind else [])
    return np.concatenate(parts, axis=1)


def encoding_width(rw_steps: int, dg_dims: int, kind: str) -> int:
    """The number of columns `structure_encoding` returns.

    Args:
        rw_steps: the random-walk length K.
        dg_dims: the degree one-hot width.
        kind: "rw", "dg" or "rw_dg".

    Returns:
        K, dg_dims or K + dg_dims.
    """
    if kind not in ENCODINGS:
        raise ValueError(f"structure encoding: kind must be one of {', '.join(ENCODINGS)}, got {kind!r}")
    return (rw_steps if "rw" in kind else 0) + (dg_dims if "dg" in kind else 0)


def with_structure_encoding(gs: GraphSet, rw_steps: int = 16, dg_dims: int = 16, kind: str = "rw_dg") -> GraphSet:
    """gs whose node features carry the structure encoding: x = [features | encoding | dataset
    columns] (a cross-domain set's trailing one-hot dataset columns, `meta["class_blocks"]`, stay last,
    where the graph models read them).

    Args:
        gs: the graphs (N nodes, F feature columns of which D are dataset columns).
        rw_steps: the random-walk length K.
        dg_dims: the degree one-hot width.
        kind: "rw", "dg" or "rw_dg".

    Returns:
        A GraphSet with float32 x [N, F + encoding_width(...)]; meta["structure_encoding"] records
        (kind, rw_steps, dg_dims).
    """
    enc = structure_encoding(gs, rw_steps, dg_dims, kind)
    d = len(gs.meta.get("class_blocks", ()))
    x = np.asarray(gs.x, np.float32)
    cut = x.shape[1] - d
    x = np.concatenate([x[:, :cut], enc, x[:, cut:]], axis=1)
    return dataclasses.replace(gs, x=x, meta={**gs.meta, "structure_encoding": (kind, rw_steps, dg_dims)})
