"""Cora and CiteSeer in the original Planetoid files (Yang, Cohen & Salakhutdinov, ICML 2016).

Files, per dataset ``<name>`` in a ``planetoid/`` sub-folder of the data directory:

    ind.<name>.x / .tx / .allx   pickled scipy CSR [rows, F]: features of the labelled training
                                 nodes, of the test nodes, and of every non-test node
    ind.<name>.y / .ty / .ally   pickled one-hot numpy [rows, C] matching x / tx / allx
    ind.<name>.graph             pickled defaultdict {node id: [neighbour ids]}
    ind.<name>.test.index        text, one node id per line: row i of tx/ty is node test.index[i]

Node numbering (the convention of the public GCN code): nodes ``0 .. len(allx)-1`` are the rows
of ``allx`` in order; the test nodes carry the ids listed in ``test.index``. CiteSeer's test ids
span 2312..3326 but only 1,000 of those 1,015 ids have a row in ``tx``: the other 15 are
isolated papers without features, which become all-zero feature rows with label -1.

Standard split: train = the first ``len(y)`` nodes (Cora 140, CiteSeer 120), validation = the
next 500, test = the ``test.index`` ids (1,000).

Edges are the adjacency lists made symmetric and de-duplicated. Self-loops (CiteSeer has 124,
Cora none) are left out of ``senders``/``receivers`` by default because GCN-style layers add
their own; `read_planetoid` reports how many there were.
"""
from __future__ import annotations

import warnings

import dataclasses
import logging
from pathlib import Path
from typing import Any, Optional

import numpy as np
import scipy.sparse as sp

from ..graph import Graph, symmetrize
from .checks import build_graph
from .files import register_format
from .paths import DataFormatError, PathLike, find_dataset_dir, github_files, verify_files
from .safe_pickle import safe_load

log = logging.getLogger(__name__)

# PubMed's files are not in the offline data (its feature file is > 4 MiB); a user may supply (or
# `fgl-jax datasets --download pubmed` fetch) the eight published ind.pubmed.* files, which are then
# parsed without a checksum (no hash is embedded for them).
PLANETOID_NAMES = ("cora", "citeseer", "pubmed")
_SUFFIXES = ("x", "y", "tx", "ty", "allx", "ally", "graph", "test.index")
NUM_VAL = 500  # the standard split's validation size (Kipf & Welling; Yang et al.)

# sha256 of the published files (kimiyoung/planetoid @ af6abf46, identical in tkipf/gcn).
PLANETOID_SHA256: dict[str, str] = {
    "planetoid/ind.citeseer.allx": "2ac30345d95c9ec933a817ee0bdd6a5f077f8c184a20e696910192d534414668",
    "planetoid/ind.citeseer.ally": "f704b2d986dde6c2669934de1f3ae5696a6cf9455c0f6b2646a2d135ea0a1c95",
    "planetoid/ind.citeseer.graph": "d79a4ef9d3e7169aee8946145f6b7306e35bc79bffad26346cfb94e10e9912a7",
    "planetoid/ind.citeseer.test.index": "2af990671580b6b2df5d158d1038f8292e30c9cd821b5453f399659b25b723d4",
    "planetoid/ind.citeseer.tx": "539a8906a2da97628d212f2fdd668c109a8b3f0d36574b59e5d3fd5b5303da21",
    "planetoid/ind.citeseer.ty": "55e5bd1ba1e733a04598753ad1a8d57957f4b8f89e74519f41f4f4938767e4ce",
    "planetoid/ind.citeseer.x": "d20de19150741e555de0ed037195630fc194114ebc7fd72ced62810148aa22f6",
    "planetoid/ind.citeseer.y": "8ba87e515d8e3ee3cf52f6d2c5b86aa73f11ecad825a808455209ec26cd54924",
    "planetoid/ind.cora.allx": "9419ba2f26f5c35243db64aba110e0f35a04851609e0dc5433450676ca6b8543",
    "planetoid/ind.cora.ally": "2b998f5cc7fedc86e7f97ca2498f47a1ffc1462c29e2d578b23bf3f62b6e7d71",
    "planetoid/ind.cora.graph": "58f13302f39dde8852dad6fe6d15b89b077b6d7f837626bce671ef80344b383d",
    "planetoid/ind.cora.test.index": "297ce89af2b51a6a194181c7dbe1796c6a1cf9cd9349a88383b1b1e227867875",
    "planetoid/ind.cora.tx": "b9afbaa4a400df991f6f02ef677e1e44da55ffc04801fd02f9e673987829226a",
    "planetoid/ind.cora.ty": "41f5ac76596a1699cc33f53084a2419e92961c42bb75f36fc38e616d348532ad",
    "planetoid/ind.cora.x": "23cfa55d91c6f624233f5eb7b6e3f141f1bd2b2ae39608a63cf5d084bb27baab",
    "planetoid/ind.cora.y": "94465c14eb53e04ca262198dcbb2521ee8af60fb3f3d546cd6ca24a511b0e7d1",
}


def planetoid_files(name: str) -> tuple[str, ...]:
    """Relative paths of the eight files of one Planetoid dataset."""
    name = _check_name(name)
    return tuple(f"planetoid/ind.{name}.{s}" for s in _SUFFIXES)


def planetoid_urls(name: str) -> dict[str, str]:
    """Where the eight files of one Planetoid dataset are published (kimiyoung/planetoid @ af6abf46)."""
    return github_files("kimiyoung/planetoid", "af6abf468a772cc055bec88c52e4d6f51b7c37e3", "data/", "planetoid/",
                        planetoid_files(name))


@dataclasses.dataclass(frozen=True)
class PlanetoidRaw:
    """The parsed files before they become a `Graph`.

    x: float32 CSR [N, F] in node order (zero rows for ids without a feature row).
    y: int32 [N]; -1 where no one-hot row exists.
    num_classes: width C of the one-hot label files.
    edges: int64 [M, 2] unique undirected pairs (lo <= hi), self-loops included.
    test_index: int64 [T] test ids in file order.
    num_train: len(y) of the `y` file (the standard train set is nodes 0..num_train-1).
    num_adjacency_entries: neighbour-list entries in the graph file (duplicates included).
    num_self_loops: distinct nodes listing themselves as a neighbour.
    missing_test_ids: int64 ids in [min(test_index), max(test_index)] without a test row.
    """

    name: str
    x: sp.csr_matrix
    y: np.ndarray
    num_classes: int
    edges: np.ndarray
    test_index: np.ndarray
    num_train: int
    num_adjacency_entries: int
    num_self_loops: int
    missing_test_ids: np.ndarray


def _check_name(name: str) -> str:
    key = str(name).lower()
    if key not in PLANETOID_NAMES:
        raise ValueError(f"Planetoid dataset name must be one of {PLANETOID_NAMES}, got {name!r}")
    return key


def _as_csr(obj: object, path: Path) -> sp.csr_matrix:
    if not sp.issparse(obj):
        raise DataFormatError(f"{path}: expected a scipy sparse matrix of features, got {type(obj).__name__}")
    m = sp.csr_matrix(obj)
    try:
        m.check_format(full_check=True)  # indices in range, indptr monotone
    except ValueError as e:
        raise DataFormatError(f"{path}: inconsistent sparse matrix: {e}") from e
    if not np.all(np.isfinite(m.data)):
        raise DataFormatError(f"{path}: feature matrix contains NaN or inf")
    return m


def _onehot_labels(obj: object, path: Path) -> tuple[np.ndarray, int]:
    """One-hot [rows, C] -> (int32 [rows] with -1 for all-zero rows, C)."""
    if not isinstance(obj, np.ndarray) or obj.ndim != 2 or obj.dtype.kind not in "biuf":
        desc = f"{type(obj).__name__} {getattr(obj, 'shape', '')} {getattr(obj, 'dtype', '')}"
        raise DataFormatError(f"{path}: expected a 2-D numeric one-hot label array, got {desc}")
    bad = ~np.isin(obj, (0, 1)).all(axis=1) | (obj.sum(axis=1) > 1)
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise DataFormatError(f"{path}: row {row} is not one-hot: {obj[row].tolist()}")
    return np.where(obj.sum(axis=1) > 0, obj.argmax(axis=1), -1).astype(np.int32), int(obj.shape[1])


def _read_index(path: Path) -> np.ndarray:
    ids = []
    with open(path, "r", encoding="latin1") as fh:
        for lineno, line in enumerate(fh, start=1):
            text = line.strip()
            if not text:
                continue
            try:
                ids.append(int(text))
            except ValueError:
                raise DataFormatError(f"{path}, line {lineno}: expected one integer node id, got {text!r}") from None
    if not ids:
        raise DataFormatError(f"{path}: no node ids")
    return np.asarray(ids, np.int64)


def _adjacency_edges(obj: object, path: Path) -> tuple[np.ndarray, np.ndarray, int]:
    """Neighbour lists -> (src, dst) int64 arrays and the number of nodes mentioned."""
    if not isinstance(obj, dict):
        raise DataFormatError(f"{path}: expected a dict of neighbour lists, got {type(obj).__name__}")
    src: list[int] = []
    dst: list[int] = []
    for key, nbrs in obj.items():
        if not isinstance(key, (int, np.integer)) or isinstance(key, bool) or key < 0:
            raise DataFormatError(f"{path}: node key {key!r} is not a non-negative integer")
        if not isinstance(nbrs, (list, tuple)):
            raise DataFormatError(f"{path}: neighbours of node {key} are a {type(nbrs).__name__}, expected a list")
        for v in nbrs:
            if not isinstance(v, (int, np.integer)) or isinstance(v, bool) or v < 0:
                raise DataFormatError(f"{path}: neighbour {v!r} of node {key} is not a non-negative integer")
        src.extend([int(key)] * len(nbrs))
        dst.extend(int(v) for v in nbrs)
    s, d = np.asarray(src, np.int64), np.asarray(dst, np.int64)
    num = int(max(max(obj, default=-1), d.max(initial=-1))) + 1
    return s, d, num


def read_planetoid(name: str, data_dir: Optional[PathLike] = None, verify: bool = True) -> PlanetoidRaw:
    """Parse the eight files of Cora or CiteSeer (see the module docstring for the layout)."""
    name = _check_name(name)
    rel = planetoid_files(name)
    root = find_dataset_dir(name, rel, data_dir)
    if verify and all(r in PLANETOID_SHA256 for r in rel):
        verify_files(name, root, {r: PLANETOID_SHA256[r] for r in rel})
    elif verify:
        warnings.warn(f"dataset {name!r}: no published checksum is known for its files; only their structure "
                      "is checked", stacklevel=2)
    return read_planetoid_files(root / "planetoid", name)


def read_planetoid_files(folder: Path, name: str) -> PlanetoidRaw:
    """Parse the eight files ``folder/ind.<name>.*`` (any name: a user's own copy; no checksum).

    Args:
      folder: the directory holding the files.
      name: the ``<name>`` of ``ind.<name>.x`` etc.

    Returns:
      The parsed `PlanetoidRaw` (x CSR [N, F], y int32 [N], unique undirected edges [M, 2]).

    Raises:
      DataFormatError: a file missing, unsafe to unpickle, or inconsistent with another (one line
        naming the file).
    """
    p = {s: Path(folder) / f"ind.{name}.{s}" for s in _SUFFIXES}
    missing = [q.name for q in p.values() if not q.is_file()]
    if missing:
        raise DataFormatError(f"{folder}: Planetoid dataset {name!r} lacks {', '.join(missing)} (the layout is "
                              f"ind.<name>.{{{','.join(_SUFFIXES)}}})")

    x, tx, allx = (_as_csr(safe_load(p[s]), p[s]) for s in ("x", "tx", "allx"))
    (y, cy), (ty, cty), (ally, c) = (_onehot_labels(safe_load(p[s]), p[s]) for s in ("y", "ty", "ally"))
    test_index = _read_index(p["test.index"])
    src, dst, num_graph = _adjacency_edges(safe_load(p["graph"]), p["graph"])

    # ---- consistency between the files (each check names both files involved) ----
    f = allx.shape[1]
    for s, m in (("x", x), ("tx", tx)):
        if m.shape[1] != f:
            raise DataFormatError(f"{p[s]}: {m.shape[1]} feature columns but {p['allx']} has {f}")
    for s, cs in (("y", cy), ("ty", cty)):
        if cs != c:
            raise DataFormatError(f"{p[s]}: {cs} label columns but {p['ally']} has {c}")
    for (sx, mx), (sy, my) in ((("x", x), ("y", y)), (("tx", tx), ("ty", ty)), (("allx", allx), ("ally", ally))):
        if mx.shape[0] != my.shape[0]:
            raise DataFormatError(f"{p[sx]} has {mx.shape[0]} rows but {p[sy]} has {my.shape[0]}")
    if x.shape[0] > allx.shape[0]:
        raise DataFormatError(f"{p['x']}: {x.shape[0]} training rows exceed the {allx.shape[0]} rows of {p['allx']}")
    if len(test_index) != tx.shape[0]:
        raise DataFormatError(f"{p['test.index']}: {len(test_index)} ids but {p['tx']} has {tx.shape[0]} rows")
    if len(np.unique(test_index)) != len(test_index):
        raise DataFormatError(f"{p['test.index']}: duplicate test ids")
    n_allx = allx.shape[0]
    if test_index.min() < n_allx:
        raise DataFormatError(
            f"{p['test.index']}: test id {int(test_index.min())} collides with the {n_allx} rows of {p['allx']} "
            "(Planetoid numbers test nodes after allx)")
    if test_index.max() >= num_graph:
        # the adjacency lists every node (PubMed, which has no checksum here, relies on this check)
        raise DataFormatError(f"{p['test.index']}: test id {int(test_index.max())} is beyond the {num_graph} nodes "
                              f"of {p['graph']}")
    n = int(max(n_allx, test_index.max() + 1))
    if num_graph > n:
        raise DataFormatError(f"{p['graph']}: node id {num_graph - 1} outside the {n} nodes implied by "
                              f"{p['allx']} and {p['test.index']}")

    # ---- features and labels in node order: allx rows are nodes 0..n_allx-1, tx row i is node test_index[i]
    row_of = np.concatenate([np.arange(n_allx, dtype=np.int64), test_index])
    stacked = sp.vstack([allx, tx]).tocoo()
    feats = sp.csr_matrix((stacked.data.astype(np.float32), (row_of[stacked.row], stacked.col)), shape=(n, f))
    feats.sort_indices()
    labels = -np.ones(n, np.int32)
    labels[row_of] = np.concatenate([ally, ty])
    missing = np.setdiff1d(np.arange(test_index.min(), test_index.max() + 1), test_index)

    # ---- edges: unique undirected pairs, self-loops counted separately
    lo, hi = np.minimum(src, dst), np.maximum(src, dst)
    key = np.unique(lo * n + hi)
    edges = np.stack([key // n, key % n], axis=1)
    num_loops = int(np.sum(edges[:, 0] == edges[:, 1]))
    return PlanetoidRaw(name=name, x=feats, y=labels, num_classes=c, edges=edges, test_index=test_index,
                        num_train=int(y.shape[0]), num_adjacency_entries=int(src.shape[0]),
                        num_self_loops=num_loops, missing_test_ids=missing)


def load_planetoid(name: str, data_dir: Optional[PathLike] = None, verify: bool = True,
                   keep_self_loops: bool = False) -> Graph:
    """Cora or CiteSeer with the standard Planetoid split.

    Args:
      name: "cora" or "citeseer" (case-insensitive).
      data_dir: directory holding ``planetoid/``; see `fgl_jax.data.paths` for the search order.
      verify: check every file's sha256 against the published file first.
      keep_self_loops: keep CiteSeer's 124 self-loops as edges (default: drop; GCN adds its own).

    Returns:
      Graph with x float32 CSR [N, F] (raw binary bag-of-words, not row-normalised), y int32 [N]
      (-1 = no label), symmetric de-duplicated edges, and masks train = nodes 0..len(y)-1,
      val = the next 500, test = the test.index ids. Cora: N=2708, F=1433, C=7, 10,556 directed
      edges; CiteSeer: N=3327, F=3703, C=6, 9,104 directed edges without self-loops.
    """
    raw = read_planetoid(name, data_dir, verify)
    n = raw.x.shape[0]
    s, r = symmetrize(raw.edges[:, 0], raw.edges[:, 1], n, keep_self_loops=keep_self_loops)
    if raw.num_self_loops and not keep_self_loops:
        log.info("%s: %d self-loops left out of the edge list (keep_self_loops=False)", raw.name, raw.num_self_loops)
    if raw.num_train + NUM_VAL > n:
        raise DataFormatError(f"{raw.name}: {raw.num_train} train + {NUM_VAL} val nodes exceed {n} nodes")
    labelled = raw.y >= 0
    train = np.zeros(n, bool)
    train[: raw.num_train] = True
    val = np.zeros(n, bool)
    val[raw.num_train: raw.num_train + NUM_VAL] = True
    test = np.zeros(n, bool)
    test[raw.test_index] = True
    return Graph(name=raw.name, senders=s, receivers=r, x=raw.x, y=raw.y, num_classes=raw.num_classes,
                 train_mask=train & labelled, val_mask=val & labelled, test_mask=test & labelled)


@register_format("planetoid", kind="graph", suffixes=(".test.index",),
                 layout="Planetoid raw files ind.<name>.{x,y,tx,ty,allx,ally,graph,test.index} "
                        "(a directory holding one such set, or its ind.<name>.test.index)")
def load_planetoid_path(path: PathLike, name: Optional[str] = None, **options: Any) -> Graph:
    """A user's Planetoid files (Cora, CiteSeer, PubMed or any set in that layout) with the standard split.

    The pickles are read with the restricted unpickler (`fgl_jax.data.safe_pickle`); no checksum is
    known for a user's copy, so only their structure is checked.

    Args:
      path: the ``ind.<name>.test.index`` file (its directory holds the other seven).
      name: the dataset's name (default: ``<name>``).
      **options: for `fgl_jax.data.checks.build_graph` (keep_self_loops, on_directed, ...).

    Returns:
      A Graph with the standard split (train = the first len(y) nodes, val = the next 500, test =
      the test.index ids; unlabelled nodes in none), edges symmetric and de-duplicated.
    """
    f = Path(path)
    stem = f.name[: -len(".test.index")]
    if not stem.startswith("ind.") or len(stem) <= 4:
        raise DataFormatError(f"{f}: a Planetoid index file is named ind.<name>.test.index")
    raw = read_planetoid_files(f.parent, stem[4:])
    n = raw.x.shape[0]
    if raw.num_train + NUM_VAL > n:
        raise DataFormatError(f"{f.parent}: {raw.num_train} train + {NUM_VAL} val nodes exceed {n} nodes")
    train, val, test = (np.zeros(n, bool) for _ in range(3))
    train[: raw.num_train] = True
    val[raw.num_train: raw.num_train + NUM_VAL] = True
    test[raw.test_index] = True
    lab = raw.y >= 0
    e = raw.edges
    # the adjacency lists are undirected by definition: both directions (self-loops once), so no "directed" notice
    rev = e[e[:, 0] != e[:, 1]]
    s, r = np.concatenate([e[:, 0], rev[:, 1]]), np.concatenate([e[:, 1], rev[:, 0]])
    meta = {"path": str(f.parent), "format": "planetoid", "missing_test_ids": int(raw.missing_test_ids.size)}
    return build_graph(s, r, raw.x, raw.y, num_classes=raw.num_classes, train_mask=train & lab,
                       val_mask=val & lab, test_mask=test & lab, name=name or raw.name, source=str(f.parent),
                       meta=meta, **options)
