"""A partition read from a file: one client id per node (``--partition-file PATH``).

To reproduce a partition made elsewhere (OpenFGL's Louvain clients, a METIS run, a hand-made
split), save its assignment and pass the file; the run then uses exactly those clients.

    .npy   a 1-D integer array [N] (``np.save(path, assignment)``; read without pickle)
    .txt   N integers separated by whitespace or newlines; ``#`` starts a comment
    .csv   one column of N ids, or two columns ``node,client`` (each node 0..N-1 once, any order);
           a first line that is not numbers is a header

Entry i (or the row of node i) is node i's client id: 0, 1, ..., K - 1 with every client used.
A wrong count, a negative id, a value that is not an integer, or an unused id is refused in one
line naming the file and where.

OpenFGL's own cache directory (``<root>/distrib/<simulation>_<Dataset>_client_<K>/`` with
``data_<i>.pt``, or one of those files) is read by `fgl_jax.partition.openfgl_cache`: its client node
sets are the partition (and its cached per-client split is what ``--split openfgl`` uses).
"""
from __future__ import annotations

import csv
import os
from pathlib import Path
from typing import Union

import numpy as np

from fgl_jax.graph import Graph
from fgl_jax.partition.base import Partition, PartitionError, validate
from fgl_jax.partition.openfgl_cache import is_openfgl_cache, read_openfgl_cache

__all__ = ["read_assignment", "partition_from_file", "SUFFIXES"]

SUFFIXES = (".npy", ".txt", ".csv")


def _int(token: str, path: Path, where: str) -> int:
    try:
        value = float(token)
    except ValueError:
        raise PartitionError(f"{path}: {where}: {token!r} is not an integer client id") from None
    if not np.isfinite(value) or value != int(value):
        raise PartitionError(f"{path}: {where}: {token!r} is not an integer client id")
    return int(value)


def _read_npy(path: Path) -> np.ndarray:
    try:
        a = np.load(path, allow_pickle=False)
    except (ValueError, OSError, EOFError) as e:
        raise PartitionError(f"{path}: not a readable .npy array without pickle ({type(e).__name__}: {e})") from e
    if a.ndim != 1:
        raise PartitionError(f"{path}: the array has shape {a.shape}; a partition is one client id per node [N]")
    if a.dtype.kind not in "iuf":
        raise PartitionError(f"{path}: dtype {a.dtype} is not integer client ids")
    if a.dtype.kind == "f":
        bad = np.flatnonzero(~np.isfinite(a) | (a != np.round(a)))
        if bad.size:
            raise PartitionError(f"{path}: entry {int(bad[0])} is {float(a[bad[0]])}, not an integer client id "
                                 f"({bad.size} such entries)")
    return a.astype(np.int64)


def _read_txt(path: Path) -> np.ndarray:
    ids = []
    with open(path, encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            for token in line.split("#", 1)[0].split():
                ids.append(_int(token, path, f"line {lineno}"))
    return np.asarray(ids, np.int64)


def _read_csv(path: Path) -> np.ndarray:
    with open(path, newline="", encoding="utf-8") as fh:
        rows = [(i, [c.strip() for c in r]) for i, r in enumerate(csv.reader(fh), 1) if any(c.strip() for c in r)]
    if rows and not all(_numeric(c) for c in rows[0][1]):
        rows = rows[1:]  # a header
    if not rows:
        return np.zeros(0, np.int64)
    width = {len(r) for _, r in rows}
    if len(width) != 1 or width.pop() not in (1, 2):
        raise PartitionError(f"{path}: expected one column (client id per node) or two (node,client) in every row")
    if len(rows[0][1]) == 1:
        return np.asarray([_int(r[0], path, f"line {i}") for i, r in rows], np.int64)
    nodes = np.asarray([_int(r[0], path, f"line {i}") for i, r in rows], np.int64)
    ids = np.asarray([_int(r[1], path, f"line {i}") for i, r in rows], np.int64)
    n = len(rows)
    seen = np.bincount(nodes[(nodes >= 0) & (nodes < n)], minlength=n)
    if (nodes < 0).any() or (nodes >= n).any() or (seen != 1).any():
        missing = np.flatnonzero(seen != 1)
        raise PartitionError(f"{path}: the node column must list nodes 0..{n - 1} once each"
                             + (f" (node {int(missing[0])} appears {int(seen[missing[0]])} times)" if missing.size
                                else ""))
    out = np.empty(n, np.int64)
    out[nodes] = ids
    return out


def _numeric(text: str) -> bool:
    try:
        float(text)
        return True
    except ValueError:
        return False


def read_assignment(path: Union[str, os.PathLike], num_nodes: int) -> np.ndarray:
    """int64 [num_nodes]: node i's client id, from a .npy / .txt / .csv file (module docstring)."""
    path = Path(path).expanduser()
    if not path.is_file():
        raise PartitionError(f"partition file {str(path)!r} does not exist (or is not a file)")
    suffix = path.suffix.lower()
    if suffix not in SUFFIXES:
        raise PartitionError(f"{path}: a partition file is {', '.join(SUFFIXES)}, got {suffix or 'no suffix'!r}")
    a = {".npy": _read_npy, ".txt": _read_txt, ".csv": _read_csv}[suffix](path)
    if a.shape[0] != num_nodes:
        raise PartitionError(f"{path}: {a.shape[0]} client ids but the graph has {num_nodes} nodes (one id per "
                             "node, in node order)")
    neg = np.flatnonzero(a < 0)
    if neg.size:
        raise PartitionError(f"{path}: node {int(neg[0])} has client id {int(a[neg[0]])}; ids are 0, 1, ... "
                             f"({neg.size} negative)")
    return a


def partition_from_file(graph: Graph, path: Union[str, os.PathLike], num_clients: int) -> Partition:
    """The Partition a file holds for `graph`; its ids must be 0..num_clients-1, each used.

    Args:
      graph: the graph whose nodes the file assigns.
      path: a .npy / .txt / .csv file of one client id per node, or OpenFGL's cache directory
        (or one of its ``data_<i>.pt`` files).
      num_clients: the run's client count; the file's must equal it.

    Returns:
      The validated `Partition` (method "file", or "openfgl_cache" for OpenFGL's directory).

    Raises:
      PartitionError: one line naming the file and the problem.
    """
    if is_openfgl_cache(path):
        cache = read_openfgl_cache(path, graph)
        if cache.num_clients != num_clients:
            raise PartitionError(f"{cache.directory}: OpenFGL cached {cache.num_clients} clients (data_0.pt .. "
                                 f"data_{cache.num_clients - 1}.pt) but clients={num_clients}; pass --clients "
                                 f"{cache.num_clients}")
        return validate(Partition(cache.assignment, cache.num_clients, "openfgl_cache", 0), graph)
    a = read_assignment(path, graph.num_nodes)
    k = int(a.max()) + 1 if a.size else 0
    if k != num_clients:
        raise PartitionError(f"{path}: the file's client ids run 0..{k - 1} ({k} clients) but clients={num_clients}; "
                             f"pass --clients {k}")
    unused = np.flatnonzero(np.bincount(a, minlength=k) == 0)
    if unused.size:
        raise PartitionError(f"{path}: client id(s) {unused[:5].tolist()} hold no node; ids must be 0..K-1, each used")
    return validate(Partition(a, k, "file", 0), graph)
