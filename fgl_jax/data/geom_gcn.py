"""Geom-GCN's raw directories (Pei et al., ICLR 2020): WebKB, Actor (film) and Wikipedia graphs.

The layout PyTorch Geometric's ``WebKB`` (cornell, texas, wisconsin), ``Actor`` and
``WikipediaNetwork(geom_gcn_preprocess=True)`` (chameleon, squirrel) read, one directory per graph:

    out1_node_feature_label.txt   a header line, then one line per node:
                                  node_id <TAB> features <TAB> label
                                  features: comma-separated values of a dense row (WebKB,
                                  Wikipedia: "0,1,0,...", the same count on every line), or
                                  comma-separated column indices of the row's ones (Actor:
                                  "12,301,788", any count; the width is the largest index + 1)
    out1_graph_edges.txt          a header line, then one "u <TAB> v" pair per line (directed)
    <name>_split_0.6_0.2_<i>.npz  optional, i = 0..k-1 (Geom-GCN ships ten): train_mask,
                                  val_mask, test_mask, each [N] 0/1

Node ids must be 0..N-1, each once (rows are placed by id, as PyG's Actor does; the published
files list them in order, which is what PyG's WebKB and Wikipedia readers assume). The edges
are directed pairs: symmetrised (with a notice) and self-loops dropped by `build_graph`, unless
``on_directed="keep"`` / ``keep_self_loops=True``; PyG's readers only de-duplicate them, so its
graph has the one-way edges and self-loops this one adds and drops (benchmarks/peers/pyg/layouts.md
compares both). The graph carries split 0 (or ``split_index=i``); all k are kept in
``graph.meta["fixed_splits"]`` for ``--split-index i|all``, as for a heterophily ``.npz``.
Without split files the default stratified split applies.

Which feature spelling a file uses is decided from its rows: index lists when the rows hold
different numbers of values (each a distinct non-negative integer), dense rows otherwise;
``features="dense"`` or ``"index"`` overrides the guess (an Actor-style file whose every node
happens to have the same number of features).
"""
from __future__ import annotations

import re
import zipfile
from pathlib import Path
from typing import Any, Optional

import numpy as np
import scipy.sparse as sp

from ..graph import Graph
from .checks import MAX_FEATURES, attach_fixed_splits, build_graph, pick_fixed_split
from .files import register_format
from .paths import DataFormatError, PathLike

__all__ = ["load_geom_gcn", "read_geom_gcn_splits", "NODE_FILE", "EDGE_FILE"]

NODE_FILE = "out1_node_feature_label.txt"
EDGE_FILE = "out1_graph_edges.txt"
FEATURE_SPELLINGS = ("auto", "dense", "index")
_SPLIT_FILE = re.compile(r"^(?P<stem>.+_split_[0-9.]+_[0-9.]+)_(?P<i>\d+)\.npz$")


def _is_int(text: str) -> bool:
    return text.strip().lstrip("-").isdigit()


def _lines(path: Path) -> list[tuple[int, str]]:
    """(line number, text) of the data lines: blank lines skipped, the header (a first line whose
    first field is not an integer) dropped."""
    if not path.is_file():
        raise DataFormatError(f"{path}: missing; a Geom-GCN directory holds {NODE_FILE} and {EDGE_FILE}")
    with open(path, encoding="utf-8") as fh:
        rows = [(i, line.rstrip("\r\n")) for i, line in enumerate(fh, 1) if line.strip()]
    if rows and not _is_int(re.split(r"\s+", rows[0][1].strip(), maxsplit=1)[0]):
        rows = rows[1:]
    if not rows:
        raise DataFormatError(f"{path}: no data lines after the header")
    return rows


def _nodes(path: Path, features: str) -> tuple[Any, np.ndarray, str]:
    """(features [N, F] dense float32 or CSR, labels int64 [N], spelling used) from the node file."""
    ids, rows, labels = [], [], []
    for lineno, text in _lines(path):
        parts = text.split("\t")
        if len(parts) != 3:
            raise DataFormatError(f"{path}, line {lineno}: expected 3 tab-separated fields node_id, features, label; "
                                  f"got {len(parts)}")
        if not _is_int(parts[0]) or not _is_int(parts[2]):
            bad = parts[0] if not _is_int(parts[0]) else parts[2]
            what = "node_id" if not _is_int(parts[0]) else "label"
            raise DataFormatError(f"{path}, line {lineno}: {what} {bad.strip()!r} is not an integer")
        ids.append(int(parts[0]))
        labels.append(int(parts[2]))
        tokens = [t for t in parts[1].split(",") if t.strip()]
        try:
            rows.append(np.asarray(tokens, dtype=np.float64))
        except ValueError:
            bad = next(t for t in tokens if not _is_number(t))
            raise DataFormatError(f"{path}, line {lineno}: feature value {bad.strip()!r} is not a number") from None
    n = len(ids)
    order = np.asarray(ids, np.int64)
    seen = np.bincount(order[(order >= 0) & (order < n)], minlength=n)
    if (order < 0).any() or (order >= n).any() or (seen != 1).any():
        j = int(np.flatnonzero((order < 0) | (order >= n) | (seen[np.clip(order, 0, n - 1)] != 1))[0])
        raise DataFormatError(f"{path}: node ids must be 0..{n - 1}, each once ({n} node lines); node_id {ids[j]} "
                              f"on data line {j + 1} breaks that")
    lengths = np.asarray([r.size for r in rows])
    spelling = features
    if spelling == "auto":
        spelling = "index" if np.unique(lengths).size > 1 else "dense"
    if spelling == "dense":
        if np.unique(lengths).size > 1:
            j = int(np.argmax(lengths != lengths[0]))
            raise DataFormatError(f"{path}: dense feature rows of different lengths (data line 1: {lengths[0]} "
                                  f"values, data line {j + 1}: {lengths[j]})")
        x = np.zeros((n, int(lengths[0])), np.float32)
        x[order] = np.stack(rows)
    else:
        for j, r in enumerate(rows):
            if r.size and (np.any(r < 0) or np.any(r != np.round(r)) or np.unique(r).size != r.size):
                raise DataFormatError(f"{path}: data line {j + 1}: index-list features must be distinct non-negative "
                                      f"integer column ids, got {','.join(f'{v:g}' for v in r[:6])}"
                                      f"{'...' if r.size > 6 else ''}")
        cols = np.concatenate(rows).astype(np.int64) if n else np.zeros(0, np.int64)
        width = int(cols.max()) + 1 if cols.size else 0
        if width > MAX_FEATURES:
            raise DataFormatError(f"{path}: feature index {width - 1} implies {width} feature columns; at most "
                                  f"{MAX_FEATURES} are supported")
        x = sp.csr_matrix((np.ones(cols.size, np.float32), (np.repeat(order, lengths), cols)), shape=(n, width))
    y = np.empty(n, np.int64)
    y[order] = labels
    return x, y, spelling


def _is_number(text: str) -> bool:
    try:
        float(text)
        return True
    except ValueError:
        return False


def _edges(path: Path) -> tuple[np.ndarray, np.ndarray]:
    pairs = []
    for lineno, text in _lines(path):
        parts = text.split()
        if len(parts) != 2 or not (_is_int(parts[0]) and _is_int(parts[1])):
            raise DataFormatError(f"{path}, line {lineno}: expected two integer node ids 'u<TAB>v', got {text!r}")
        pairs.append((int(parts[0]), int(parts[1])))
    e = np.asarray(pairs, np.int64)
    return e[:, 0], e[:, 1]


def read_geom_gcn_splits(folder: PathLike, num_nodes: int) -> Optional[tuple[str, dict]]:
    """The fixed splits ``<stem>_<i>.npz`` of a Geom-GCN directory (stem ``<name>_split_0.6_0.2``).

    Args:
      folder: the directory.
      num_nodes: N; every mask must have N entries.

    Returns:
      None when the directory holds no split file, else (stem, {"train", "val", "test"}: bool [k, N]),
      split i from ``<stem>_<i>.npz``.

    Raises:
      DataFormatError: split files of several stems, a gap in 0..k-1, a file that is no readable
        ``.npz`` without pickle, a missing key, a mask of the wrong length or with values other than
        0/1 (one line naming the file and the key).
    """
    found: dict[str, dict[int, Path]] = {}
    for p in Path(folder).iterdir():
        m = _SPLIT_FILE.match(p.name)
        if m and p.is_file():
            found.setdefault(m["stem"], {})[int(m["i"])] = p
    if not found:
        return None
    if len(found) > 1:
        raise DataFormatError(f"{folder}: split files of {len(found)} kinds ({', '.join(sorted(found))}); keep one "
                              "set <name>_split_<train>_<val>_<i>.npz")
    stem, files = found.popitem()
    k = max(files) + 1
    gaps = sorted(set(range(k)) - set(files))
    if gaps:
        raise DataFormatError(f"{folder}: {stem}_{gaps[0]}.npz is missing (split files {stem}_0 .. {stem}_{k - 1})")
    out: dict[str, list[np.ndarray]] = {"train": [], "val": [], "test": []}
    for i in range(k):
        p = files[i]
        try:
            with np.load(p, allow_pickle=False) as z:
                for s in out:
                    key = f"{s}_mask"
                    if key not in z.files:
                        raise DataFormatError(f"{p}: no {key} (keys: {', '.join(sorted(z.files))}); a Geom-GCN split "
                                              "file holds train_mask, val_mask, test_mask")
                    a = z[key]
                    if a.shape != (num_nodes,):
                        raise DataFormatError(f"{p}: {key} has shape {a.shape}, expected ({num_nodes},) (one entry "
                                              "per node)")
                    if a.dtype != bool and not np.isin(a, (0, 1)).all():
                        raise DataFormatError(f"{p}: {key} holds values other than 0/1 (dtype {a.dtype})")
                    out[s].append(a.astype(bool))
        except (OSError, ValueError, EOFError, zipfile.BadZipFile) as e:
            if isinstance(e, DataFormatError):
                raise
            raise DataFormatError(f"{p}: not a readable .npz without pickle ({type(e).__name__}: {e})") from e
    return stem, {s: np.stack(v) for s, v in out.items()}


@register_format("geom_gcn", kind="graph", files=(NODE_FILE, EDGE_FILE), inside=(NODE_FILE,),
                 layout=f"Geom-GCN raw directory {NODE_FILE} + {EDGE_FILE} (+ <name>_split_0.6_0.2_<i>.npz; "
                        "WebKB, Actor, chameleon/squirrel)")
def load_geom_gcn(path: PathLike, name: Optional[str] = None, split_index: Optional[int] = None,
                  features: str = "auto", **options: Any) -> Graph:
    """A Graph from a Geom-GCN raw directory (the module docstring has the layout).

    Args:
      path: the directory (or one of its two ``out1_*`` files: their directory is read).
      name: the graph's name (default: ``<name>`` of the split files, else the directory's name).
      split_index: which fixed split the masks hold (default 0); all are in ``graph.meta["fixed_splits"]``.
      features: "auto" (guess the spelling from the rows), "dense" or "index" (Actor's column lists).
      **options: for `fgl_jax.data.checks.build_graph` (on_directed, keep_self_loops, split, ...).

    Returns:
      The checked Graph: x [N, F] (dense float32, or CSR for index lists), y [N], symmetric edges
      without self-loops by default, the masks of the chosen split.

    Raises:
      DataFormatError: a malformed line, node ids that are not 0..N-1, bad split files or a split
        index out of range (one line naming the file).
    """
    folder = Path(path)
    if folder.is_file():
        folder = folder.parent
    if features not in FEATURE_SPELLINGS:
        raise ValueError(f"features must be one of {FEATURE_SPELLINGS}, got {features!r}")
    x, y, spelling = _nodes(folder / NODE_FILE, features)
    senders, receivers = _edges(folder / EDGE_FILE)
    n = y.shape[0]
    splits = read_geom_gcn_splits(folder, n)
    masks: dict = {}
    fixed = None
    if splits is not None:
        stem, fixed = splits
        masks = pick_fixed_split(fixed, split_index, str(folder))
        name = name or stem.split("_split_")[0]
    elif split_index is not None:
        raise DataFormatError(f"{folder}: split_index {split_index} given but the directory holds no split files "
                              "(<name>_split_0.6_0.2_<i>.npz)")
    meta = {"path": str(folder), "format": f"geom_gcn:{spelling}"}
    g = build_graph(senders, receivers, x, y, name=name or folder.name, source=str(folder), meta=meta, **masks,
                    **options)
    if fixed is not None:
        g = attach_fixed_splits(g, fixed, split_index, str(folder))
    return g
