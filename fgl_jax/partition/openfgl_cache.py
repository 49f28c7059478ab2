"""OpenFGL's cached clients and splits as a partition (``--partition-file DIR``).

OpenFGL 1.1.0 (``openfgl/data/distributed_dataset_loader.py``, ``openfgl/task/node_cls.py``)
caches a subgraph-FL simulation under its ``processed_dir``, one directory per (simulation,
dataset, client count):

    <root>/distrib/<simulation>_<Dataset>_client_<K>/     e.g. subgraph_fl_louvain_1_Cora_client_10
        data_<i>.pt           i = 0..K-1: torch.save of client i's PyG Data: x [n_i, F],
                              edge_index, y [n_i], global_map {local id: global node id},
                              num_global_classes
        description.txt       the simulation's arguments (JSON)
        node_cls/<split>/     <split> = default_split, or split_<train>-<val>-<test>
            train_<i>.pt, val_<i>.pt, test_<i>.pt   torch.save of bool [n_i] masks (client i's
                                                    local node order)
            glb_train_<i>.pkl, ...                  the same as lists of global ids (plain pickle)

The ``.pt`` files are read by `fgl_jax.data.torch_zip` (no torch, no plain pickle: a restricted
unpickler that rebuilds tensors and maps PyG's Data to a dict). Client i's node set is
``global_map`` (global ids of its n_i nodes, local order); the node sets become the partition
(node v's client is the i whose set holds it), and the local masks, carried to global ids through
``global_map``, become the split. Every node must be in exactly one client, and each client's
labels ``y`` must equal the graph's labels of its nodes (the cache was made from this graph), else
one line names the file, the node and the client.

The ``pt`` path given may be the directory, any ``data_<i>.pt`` in it, or its ``node_cls/<split>``
folder (that split is then the one read; from the directory, ``default_split`` when present, else the
only one).
"""
from __future__ import annotations

import dataclasses
import os
import re
from pathlib import Path
from typing import Optional, Union

import numpy as np

from fgl_jax.data.paths import DataFormatError
from fgl_jax.data.torch_zip import read_torch, tensor
from fgl_jax.graph import Graph
from fgl_jax.partition.base import PartitionError

__all__ = ["OpenFGLCache", "is_openfgl_cache", "read_openfgl_cache"]

_DATA = re.compile(r"^data_(\d+)\.pt$")


@dataclasses.dataclass(frozen=True)
class OpenFGLCache:
    """What OpenFGL cached for one simulation, in global node ids.

    assignment: int64 [N] client of each node. num_clients: K.
    masks: (train, val, test) bool [N] each, or None when no split files are cached.
    split_dir: the ``node_cls/<split>`` folder read, or None. directory: the processed_dir.
    """

    assignment: np.ndarray
    num_clients: int
    masks: Optional[tuple[np.ndarray, np.ndarray, np.ndarray]]
    split_dir: Optional[Path]
    directory: Path


def _locate(path: Path) -> tuple[Path, Optional[Path]]:
    """(processed_dir, an explicitly chosen split folder or None)."""
    if path.is_file():
        return path.parent, None
    if path.parent.name == "node_cls" and any(path.glob("train_*.pt")):
        return path.parent.parent, path
    return path, None


def is_openfgl_cache(path: Union[str, os.PathLike]) -> bool:
    """True when `path` is an OpenFGL processed_dir, one of its ``data_<i>.pt`` files or its split folder.

    Args:
      path: what ``--partition-file`` was given.

    Returns:
      Whether `read_openfgl_cache` is the reader for it (else the one-id-per-node files are).
    """
    p = Path(path).expanduser()
    if p.is_file():
        return bool(_DATA.match(p.name))
    if not p.is_dir():
        return False
    folder, _ = _locate(p)
    return (folder / "data_0.pt").is_file()


def _split_dir(folder: Path, chosen: Optional[Path]) -> Optional[Path]:
    if chosen is not None:
        return chosen
    root = folder / "node_cls"
    if not root.is_dir():
        return None
    found = sorted(d for d in root.iterdir() if d.is_dir() and any(d.glob("train_*.pt")))
    if not found:
        return None
    if (root / "default_split") in found:
        return root / "default_split"
    if len(found) > 1:
        raise PartitionError(f"{root}: {len(found)} cached splits ({', '.join(d.name for d in found)}); pass the one "
                             f"to use as --partition-file {root}/<split>")
    return found[0]


def read_openfgl_cache(path: Union[str, os.PathLike], graph: Graph) -> OpenFGLCache:
    """OpenFGL's cached clients (and split, when cached) of `graph` (module docstring).

    Args:
      path: the processed_dir, a ``data_<i>.pt`` in it, or its ``node_cls/<split>`` folder.
      graph: the graph OpenFGL partitioned (N nodes, labels y [N]).

    Returns:
      The `OpenFGLCache`: assignment int64 [N], K, the split's global masks or None.

    Raises:
      PartitionError: missing or malformed files, a node in no client or in two, a client's
        labels differing from the graph's, a split mask of the wrong length (one line naming the
        file).
    """
    folder, chosen = _locate(Path(path).expanduser())
    ids = sorted(int(m.group(1)) for m in map(_DATA.match, (p.name for p in folder.glob("data_*.pt"))) if m)
    if not ids:
        raise PartitionError(f"{folder}: no data_<i>.pt; an OpenFGL cache directory holds data_0.pt .. "
                             "data_<K-1>.pt (<root>/distrib/<simulation>_<Dataset>_client_<K>/)")
    k = ids[-1] + 1
    if ids != list(range(k)):
        raise PartitionError(f"{folder}: data_{sorted(set(range(k)) - set(ids))[0]}.pt is missing "
                             f"(clients 0..{k - 1})")
    n = graph.num_nodes
    y = np.asarray(graph.y)
    assignment = np.full(n, -1, np.int64)
    members: list[np.ndarray] = []
    for i in range(k):
        f = folder / f"data_{i}.pt"
        try:
            data = read_torch(f)
            if not isinstance(data, dict) or not isinstance(data.get("global_map"), dict):
                raise PartitionError(f"{f}: expected a PyG Data with a global_map dict (OpenFGL's client subgraph), "
                                     f"got {type(data).__name__}"
                                     + (f" with {', '.join(sorted(map(str, data)))}" if isinstance(data, dict) else ""))
            gmap = data["global_map"]
            local_y = tensor(data.get("y"), f, "y").reshape(-1)
        except DataFormatError as e:
            raise PartitionError(str(e)) from e
        m = local_y.shape[0]
        if sorted(gmap) != list(range(m)) or not all(isinstance(v, int) for v in gmap.values()):
            raise PartitionError(f"{f}: global_map must map local ids 0..{m - 1} (one per row of y) to integer "
                                 f"global node ids")
        nodes = np.asarray([gmap[j] for j in range(m)], np.int64)
        bad = np.flatnonzero((nodes < 0) | (nodes >= n))
        if bad.size:
            raise PartitionError(f"{f}: global node id {int(nodes[bad[0]])} is outside the graph's {n} nodes (was the "
                                 "cache made from another dataset?)")
        twice = nodes[assignment[nodes] >= 0]
        if twice.size or np.unique(nodes).size != nodes.size:
            v = int(twice[0]) if twice.size else int(nodes[np.flatnonzero(np.bincount(nodes) > 1)[0]])
            raise PartitionError(f"{f}: node {v} is also in client {int(assignment[v])}; a node belongs to one client")
        differ = np.flatnonzero(local_y != y[nodes])
        if differ.size:
            j = int(differ[0])
            raise PartitionError(f"{f}: node {int(nodes[j])} has label {int(local_y[j])} here but {int(y[nodes[j]])} in "
                                 f"the graph ({differ.size} of {m} labels differ: the cache was made from another "
                                 "graph)")
        assignment[nodes] = i
        members.append(nodes)
    missing = np.flatnonzero(assignment < 0)
    if missing.size:
        raise PartitionError(f"{folder}: node {int(missing[0])} is in no client ({missing.size} of {n} nodes missing); "
                             "the cache covers another graph or a subset")
    split = _split_dir(folder, chosen)
    masks = None
    if split is not None:
        masks = tuple(np.zeros(n, bool) for _ in range(3))
        for i, nodes in enumerate(members):
            for s, out in zip(("train", "val", "test"), masks):
                f = split / f"{s}_{i}.pt"
                if not f.is_file():
                    raise PartitionError(f"{f}: missing; a cached split holds train_<i>.pt, val_<i>.pt and "
                                         f"test_<i>.pt for every client 0..{k - 1}")
                try:
                    local = tensor(read_torch(f), f, "the mask").reshape(-1)
                except DataFormatError as e:
                    raise PartitionError(str(e)) from e
                if local.shape[0] != nodes.shape[0] or local.dtype.kind not in "bui":
                    raise PartitionError(f"{f}: a mask of {local.shape[0]} {local.dtype} entries; client {i} has "
                                         f"{nodes.shape[0]} nodes (one bool per node)")
                out[nodes[local.astype(bool)]] = True
    return OpenFGLCache(assignment, k, masks, split, folder)
