"""The arrays a peer harness hands to the other library's side (benchmarks/peers/pfllib,
benchmarks/peers/gcfl), and their reading back per client (NumPy only, so every venv imports it and
tests check it without torch).

One .npz of plain arrays (no pickled objects). Node classification (`write_nodes`): x [N, F],
y [N], assignment [N] (client of each node), senders/receivers [E] (the whole graph's directed
edges), train_mask/test_mask [N]. Graph classification (`write_graphs`): node_x [N, F],
node_ptr [G+1], edge_s/edge_r [E] (rows of node_x), edge_ptr [G+1], y [G], assignment [G],
train_mask/test_mask [G], and val_mask [G] when given.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np


def write_nodes(path: Path, x, y, assignment, senders, receivers, train_mask, test_mask) -> None:
    """Write a node-classification run's arrays (shapes in the module docstring).

    Args:
        path: the .npz file.
        x, y, assignment, senders, receivers, train_mask, test_mask: the arrays, converted to float32,
            int64 and bool.
    Returns:
        None.
    """
    np.savez(path, x=np.asarray(x, np.float32), y=np.asarray(y, np.int64), assignment=np.asarray(assignment, np.int64),
             senders=np.asarray(senders, np.int64), receivers=np.asarray(receivers, np.int64),
             train_mask=np.asarray(train_mask, bool), test_mask=np.asarray(test_mask, bool))


def write_graphs(path: Path, node_x, node_ptr, edge_s, edge_r, edge_ptr, y, assignment, train_mask, test_mask,
                 val_mask=None) -> None:
    """Write a graph-classification run's arrays (shapes in the module docstring).

    Args:
        path: the .npz file.
        node_x, node_ptr, edge_s, edge_r, edge_ptr, y, assignment, train_mask, test_mask: the arrays.
        val_mask: bool [G] or None (no validation graphs written).
    Returns:
        None.
    """
    extra = {} if val_mask is None else {"val_mask": np.asarray(val_mask, bool)}
    np.savez(path, node_x=np.asarray(node_x, np.float32), node_ptr=np.asarray(node_ptr, np.int64),
             edge_s=np.asarray(edge_s, np.int64), edge_r=np.asarray(edge_r, np.int64),
             edge_ptr=np.asarray(edge_ptr, np.int64), y=np.asarray(y, np.int64),
             assignment=np.asarray(assignment, np.int64), train_mask=np.asarray(train_mask, bool),
             test_mask=np.asarray(test_mask, bool), **extra)


def gcn_adjacency(senders: np.ndarray, receivers: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """D^-1/2 (A + I) D^-1/2 as COO (rows, cols, vals) of n nodes: edge s -> r is entry (r, s), one
    self-loop per node, degrees counted over the rows with the self-loop (fgl_jax's GCN propagation).

    Args:
        senders, receivers: int [E] local node indices.
        n: number of nodes.
    Returns:
        rows, cols int64 [E + n]; vals float32 [E + n].
    """
    rows = np.concatenate([receivers, np.arange(n)]).astype(np.int64)
    cols = np.concatenate([senders, np.arange(n)]).astype(np.int64)
    deg = np.bincount(rows, minlength=n).astype(np.float64)
    return rows, cols, (deg[rows] ** -0.5 * deg[cols] ** -0.5).astype(np.float32)


def node_clients(arr, clients: int) -> list[dict]:
    """Per client, its subgraph (cross-client edges dropped) and samples, from `write_nodes`' arrays.

    Args:
        arr: the loaded .npz (a mapping of the module docstring's arrays).
        clients: number of clients.
    Returns:
        one dict per client: nodes int [n_c] (ids in the whole graph, ascending), senders/receivers
        [e_c] (local indices), x [n_c, F], y [n_c], train/test int [.] local indices of its samples.
    """
    assignment = np.asarray(arr["assignment"])
    s_all, r_all = np.asarray(arr["senders"]), np.asarray(arr["receivers"])
    out = []
    for c in range(clients):
        nodes = np.flatnonzero(assignment == c)
        pos = -np.ones(len(assignment), np.int64)
        pos[nodes] = np.arange(len(nodes))
        keep = (pos[s_all] >= 0) & (pos[r_all] >= 0)
        out.append({"nodes": nodes, "senders": pos[s_all[keep]], "receivers": pos[r_all[keep]],
                    "x": np.asarray(arr["x"])[nodes], "y": np.asarray(arr["y"])[nodes],
                    "train": np.flatnonzero(np.asarray(arr["train_mask"])[nodes]),
                    "test": np.flatnonzero(np.asarray(arr["test_mask"])[nodes])})
    return out


def graph_clients(arr, clients: int) -> list[dict]:
    """Per client, its graphs as one disjoint union and its samples, from `write_graphs`' arrays.

    Args:
        arr: the loaded .npz.
        clients: number of clients.
    Returns:
        one dict per client: graphs int [g_c] (ids in the set), x [n_c, F], senders/receivers [e_c]
        (rows of x), node_graph [n_c] (position of each node's graph in `graphs`), y [g_c],
        train/test (and val, when the arrays hold val_mask) int [.] positions in `graphs`.
    """
    node_ptr, edge_ptr = np.asarray(arr["node_ptr"]), np.asarray(arr["edge_ptr"])
    out = []
    for c in range(clients):
        graphs = np.flatnonzero(np.asarray(arr["assignment"]) == c)
        xs, ss, rs, gid, base = [], [], [], [], 0
        for j, g in enumerate(graphs):
            a, b = node_ptr[g], node_ptr[g + 1]
            e0, e1 = edge_ptr[g], edge_ptr[g + 1]
            xs.append(np.asarray(arr["node_x"])[a:b])
            ss.append(np.asarray(arr["edge_s"])[e0:e1] - a + base)    # rows of the set -> of the union
            rs.append(np.asarray(arr["edge_r"])[e0:e1] - a + base)
            gid.append(np.full(b - a, j))
            base += b - a
        f = np.asarray(arr["node_x"]).shape[1]
        cat = lambda parts, dtype: np.concatenate(parts).astype(dtype) if parts else np.zeros(0, dtype)
        out.append({"graphs": graphs, "x": np.concatenate(xs) if xs else np.zeros((0, f), np.float32),
                    "senders": cat(ss, np.int64), "receivers": cat(rs, np.int64), "node_graph": cat(gid, np.int64),
                    "y": np.asarray(arr["y"])[graphs],
                    "train": np.flatnonzero(np.asarray(arr["train_mask"])[graphs]),
                    "test": np.flatnonzero(np.asarray(arr["test_mask"])[graphs]),
                    **({"val": np.flatnonzero(np.asarray(arr["val_mask"])[graphs])} if "val_mask" in arr else {})})
    return out
