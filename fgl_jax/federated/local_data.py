"""Per-process data loading: each process builds only the client rows its own devices hold.

A multi-process run (`jax.distributed`, `fgl_jax.federated.devices`) splits the client axis of its
`FedData` over a 1-D mesh of every process's devices (`fgl_jax.federated.sharding`). Building the
whole padded `[C, N, ...]` batch in every process and then keeping only the local shards costs
every host the memory and time of all clients. Here the cheap, deterministic parts are computed
everywhere (the partition, each client's node / edge / non-zero counts, so the common padded sizes
N, E, nnz; who trains; the padded client counts) and the per-client padded arrays are built only
for the rows this process's devices hold (`fgl_jax.batch.stack_partition` with `clients=` and the
forced common sizes), then assembled into global arrays with
`jax.make_array_from_single_device_arrays`.

The result is the FedData `sharding.run_sharded` would have made from the whole batch: the same
padding (`sharding.padded_counts`; dummy clients are copies of client 0, or of the first training
client on the training axis, with every mask off and weight 0), the same rows on the same devices.
Features stay SparseFeatures (or dense): the ELL layout some algorithms use on one host depends on
the whole batch's row widths, so per-process rows cannot share it; the numbers are equal up to
float summation order.

    data, shapes = local_fed_data(graph, assignment, num_clients, mesh)
    # data: global arrays [C_pad, ...] (each process holds its own rows); shapes: the unpadded
    # FedData's ShapeDtypeStructs [C, ...] (what the host-side bookkeeping counts clients on)

Shapes: C clients (C_t training), padded to C_pad and C_t_pad (multiples of the device count).
"""
from __future__ import annotations

import contextlib
import contextvars
from typing import Any, Optional

import jax
import numpy as np
import scipy.sparse as sp
from jax.sharding import Mesh

from fgl_jax.batch import ClientBatch, _round_up, stack_partition
from fgl_jax.federated.algorithm import FedData
from fgl_jax.federated.sharding import client_sharding, padded_counts, put_global, replicated
from fgl_jax.graph import Graph, GraphError


def client_sizes(graph: Graph, assignment: np.ndarray, num_clients: int) -> dict:
    """Per-client counts of the induced subgraphs, without building them (O(N + E)).

    Args:
        graph: the whole graph.
        assignment: int `[N]`, each node's client (others are dropped).
        num_clients: C.

    Returns:
        {"nodes", "edges", "nnz", "train"}: int64 `[C]` each; nnz is the stored feature entries
        (0 for dense features), train the labelled training nodes.
    """
    a = np.asarray(assignment).astype(np.int64)
    if a.shape != (graph.num_nodes,):
        raise GraphError(f"assignment has shape {a.shape}, expected ({graph.num_nodes},)")
    inside = (a >= 0) & (a < num_clients)
    count = lambda ids, w=None: np.bincount(ids, weights=w, minlength=num_clients)[:num_clients].astype(np.int64)
    s, r = np.asarray(graph.senders, np.int64), np.asarray(graph.receivers, np.int64)
    same = inside[s] & (a[s] == a[r])
    nnz = np.zeros(num_clients, np.int64)
    if sp.issparse(graph.x):
        per_row = np.diff(sp.csr_matrix(graph.x).indptr)
        nnz = count(a[inside], per_row[inside].astype(np.float64))
    labelled = np.asarray(graph.y) >= 0
    train = inside & np.asarray(graph.train_mask, bool) & labelled
    return {"nodes": count(a[inside]), "edges": count(a[s[same]]), "nnz": nnz, "train": count(a[train])}


def owned_rows(num_rows: int, mesh: Mesh) -> dict:
    """{local device: row indices [k]} of a client axis of `num_rows` (a multiple of the mesh size)
    split over `mesh`: the rows this process must supply.

    Args:
        num_rows: the padded length of the client axis.
        mesh: the 1-D client mesh.

    Returns:
        A dict from each of this process's devices to the int64 row indices it holds.
    """
    index = client_sharding(mesh).addressable_devices_indices_map((num_rows,))
    return {d: np.arange(num_rows)[idx[0]] for d, idx in index.items()}


def _assemble(local: ClientBatch, slot: dict, rows: dict, num_rows: int, mesh: Mesh) -> ClientBatch:
    """Global [num_rows, ...] arrays from the locally built `local` batch (NumPy): device d gets the
    rows `rows[d]`, each taken from `local` at `slot[row]` (a (position, dummy) pair; a dummy's
    masks are off, its node_ids -1 and client_mask False, as `sharding.pad_clients` makes them)."""
    sharding = client_sharding(mesh)
    off = {"train_mask", "val_mask", "test_mask", "client_mask"}

    def leaf(path, a):
        name = jax.tree_util.keystr(path).strip(".").split(".")[-1]
        per_device = []
        for d, rs in rows.items():
            at = np.asarray([slot[r][0] for r in rs])
            # consecutive rows are a view (device_put makes the one copy); others a gather
            block = a[at[0]:at[-1] + 1] if (np.diff(at) == 1).all() else a[at]
            dummy = np.asarray([slot[r][1] for r in rs])
            if dummy.any() and name in off:
                block = block.copy()
                block[dummy] = False
            elif dummy.any() and name == "node_ids":
                block = block.copy()
                block[dummy] = -1
            per_device.append(jax.device_put(block, d))
        return jax.make_array_from_single_device_arrays((num_rows,) + a.shape[1:], sharding, per_device)
    return jax.tree_util.tree_map_with_path(leaf, local)


def local_fed_data(graph: Graph, assignment: np.ndarray, num_clients: int, mesh: Mesh,
                   glob: Optional[ClientBatch] = None, node_multiple: int = 8,
                   edge_multiple: int = 64) -> tuple[FedData, Any]:
    """The padded, sharded FedData of a partition, each process building only its own rows.

    Args:
        graph: the whole graph (every process holds it; only the client views are split).
        assignment: int `[N]`, each node's client in 0..num_clients-1.
        num_clients: C.
        mesh: the 1-D client mesh of every process's devices (`sharding.client_mesh()`).
        glob: the whole graph as a one-client batch (evaluation on global data), replicated; or None.
        node_multiple: N is the largest client's node count rounded up to a multiple of this.
        edge_multiple: E and nnz likewise.

    Returns:
        (data, shapes): data, a FedData of global arrays, client axes `[C_pad, ...]` and
        `[C_t_pad, ...]` split over `mesh`, everything else replicated; shapes, the unpadded
        FedData as `jax.ShapeDtypeStruct`s (`[C, ...]`, `[C_t, ...]`) for host-side counting
        (participants, communication bytes).

    Raises:
        GraphError: a client without nodes, or a bad assignment.
        ValueError: no client holds a training node.
    """
    sizes = client_sizes(graph, assignment, num_clients)
    if (sizes["nodes"] == 0).any():
        empty = np.flatnonzero(sizes["nodes"] == 0)[:10].tolist()
        raise GraphError(f"local_fed_data: client(s) {empty} have no nodes; re-partition with fewer clients")
    index = np.flatnonzero(sizes["train"] > 0).astype(np.int32)  # make_fed_data's trainable clients
    if index.size == 0:
        raise ValueError("no client holds a training node: check the split masks")
    c, ct = num_clients, int(index.size)
    c_pad, ct_pad = padded_counts(c, ct, mesh.size)
    eval_rows, train_rows = owned_rows(c_pad, mesh), owned_rows(ct_pad, mesh)
    # which real client fills each row (dummies: client 0 on the eval axis, the first training
    # client on the training axis, masked: `sharding.pad_fed_data`'s dummies)
    eval_src = lambda r: (int(r), False) if r < c else (0, True)
    train_src = lambda r: (int(index[r]), False) if r < ct else (int(index[0]), True)
    needed = sorted({eval_src(r)[0] for rs in eval_rows.values() for r in rs}
                    | {train_src(r)[0] for rs in train_rows.values() for r in rs})
    sparse = sp.issparse(graph.x)
    local = stack_partition(graph, assignment, num_clients, clients=needed,
                            num_nodes=_round_up(sizes["nodes"].max(), node_multiple),
                            num_edges=_round_up(sizes["edges"].max(), edge_multiple),
                            num_nnz=_round_up(sizes["nnz"].max(), edge_multiple) if sparse else None,
                            on_device=False)  # host rows, placed once on their devices below
    at = {k: i for i, k in enumerate(needed)}
    eval_slot = {r: (at[eval_src(r)[0]], eval_src(r)[1]) for rs in eval_rows.values() for r in rs}
    train_slot = {r: (at[train_src(r)[0]], train_src(r)[1]) for rs in train_rows.values() for r in rs}
    ev = _assemble(local, eval_slot, eval_rows, c_pad, mesh)
    every = ct == c and ct_pad == ct and c_pad == c  # pad_fed_data keeps train_is_eval only unpadded
    tr = ev if every else _assemble(local, train_slot, train_rows, ct_pad, mesh)
    rep = replicated(mesh)
    train_index = np.concatenate([index, np.full(ct_pad - ct, c, np.int32)]).astype(np.int32)
    weight = np.concatenate([sizes["train"][index].astype(np.float32), np.zeros(ct_pad - ct, np.float32)])
    data = FedData(eval=ev, train=tr, train_index=put_global(train_index, rep),
                   train_weight=put_global(weight, rep),
                   glob=None if glob is None else jax.tree.map(lambda a: put_global(a, rep), glob),
                   train_is_eval=every)
    shapes = _unpadded_shapes(data, c, ct)
    return data, shapes


def _unpadded_shapes(data: FedData, c: int, ct: int) -> FedData:
    """`data` as ShapeDtypeStructs with the client axes cut back to the real C and C_t."""
    cut = lambda n: (lambda a: jax.ShapeDtypeStruct((n,) + tuple(a.shape[1:]), a.dtype))
    whole = lambda a: jax.ShapeDtypeStruct(a.shape, a.dtype)
    ev = jax.tree.map(cut(c), data.eval)
    return FedData(eval=ev, train=ev if data.train_is_eval else jax.tree.map(cut(ct), data.train),
                   train_index=cut(ct)(data.train_index), train_weight=cut(ct)(data.train_weight),
                   glob=None if data.glob is None else jax.tree.map(whole, data.glob),
                   train_is_eval=ct == c)


_WHOLE = contextvars.ContextVar("fgl_jax_whole_data", default=False)


@contextlib.contextmanager
def whole_data():
    """Inside: systems build the whole data in every process, not per-process rows (a sweep
    replicates its data over the member axis' devices, so each process needs all of it)."""
    token = _WHOLE.set(True)
    try:
        yield
    finally:
        _WHOLE.reset(token)


def wanted() -> bool:
    """Whether a system should build per-process rows now: several processes, outside `whole_data`."""
    return jax.process_count() > 1 and not _WHOLE.get()
