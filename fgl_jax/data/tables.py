"""Graphs, hypergraphs and heterogeneous graphs written as CSV / text tables in a directory.

All CSV files are comma-separated with a header row (``.csv`` or gzipped ``.csv.gz``); empty
cells mean "missing". Node ids in edge files are the values of the node table's ``id`` column
(any strings, e.g. ``paper_17``), or, when it has no ``id`` column, row numbers 0..N-1. Node i
of the result is the i-th row of the node table.

**Graph** (`load_csv_graph`; a directory with ``edges.csv`` and ``nodes.csv``)::

    edges.csv   columns src,dst            one edge per row (one or both directions; extra columns ignored)
                        weight  optional   numeric; NaN/inf refused, negative or zero counted in a notice; not
                                           used (every row is an unweighted edge)
    nodes.csv   columns id      optional   node id used by edges.csv
                        label   optional   class: an integer 0..C-1, or a class name (names are numbered
                                           in sorted order, kept in graph.meta["class_names"]); empty = unlabelled.
                                           A column mixing numbers and names is refused (row and value named):
                                           one stray name would otherwise renumber every class, "10" before "2"
                        split   optional   train / val (or valid) / test / empty (in no split)
                        every other column is a numeric feature (in file order)

**Hypergraph** (`load_incidence`, FedHGL; a directory with ``hyperedges.txt`` and ``nodes.csv``)::

    hyperedges.txt   one hyperedge per line: its node ids separated by spaces, tabs or commas;
                     blank lines and lines starting with '#' are skipped
    nodes.csv        as above (features, label, optional split)

  Hyperedges are cleaned as the built-in hypergraphs are (`fgl_jax.data.hypergraph.clean_hyperedges`:
  nodes de-duplicated, equal hyperedges merged, hyperedges of fewer than two nodes dropped; counted
  in a notice). ``feature_kind`` is "binary" when every feature is 0 or 1, else "numeric". Without
  a split column the masks are empty (FedHGL draws each client's split).

**Heterogeneous graph** (`load_hetero_tables`, FedHGN; a directory with ``node_types.csv`` and
``edges/``)::

    node_types.csv   columns id,type; optional label and split (as above) on the nodes of one
                     type, the target type (the type of every labelled node)
    edges/<relation>.csv   columns src,dst (node ids); the relation is the file name; a relation
                     whose edges join several type pairs becomes one canonical type per pair

  Type-local ids follow the order of the rows of node_types.csv. Edges are kept as given (FedHGN
  adds the reverse relations itself). No node features are read (FedHGN learns embeddings).
  Without a split column the target nodes get the default stratified 60/20/20 split.

Every graph goes through `fgl_jax.data.checks` (symmetrised, self-loops / duplicates removed,
labels and masks checked, default split recorded in ``graph.meta``).
"""
from __future__ import annotations

import csv
import dataclasses
import gzip
import io
import re
from pathlib import Path
from typing import Any, Optional

import numpy as np

from ..graph import Graph
from .checks import DEFAULT_SPLIT, _notify, build_graph, check_edge_weights, check_labels, check_masks
from .files import register_format
from .splits import stratified_split
from .paths import DataFormatError, PathLike

__all__ = ["load_csv_graph", "load_incidence", "load_hetero_tables", "read_node_table", "NodeTable"]

SPLIT_NAMES = {"train": 0, "val": 1, "valid": 1, "validation": 1, "test": 2, "": -1}
RESERVED = ("id", "label", "split")


def _open_text(path: Path):
    return io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8", newline="") if path.name.endswith(".gz") \
        else open(path, encoding="utf-8", newline="")


def _find(folder: Path, stem: str) -> Optional[Path]:
    for name in (stem, stem + ".gz"):
        if (folder / name).is_file():
            return folder / name
    return None


def _rows(path: Path) -> tuple[list[str], list[list[str]]]:
    """(header, rows) of a CSV file; DataFormatError naming the file and line on a ragged row."""
    with _open_text(path) as fh:
        reader = csv.reader(fh)
        try:
            header = [h.strip() for h in next(reader)]
        except StopIteration:
            raise DataFormatError(f"{path}: empty file (expected a header row)") from None
        rows = []
        blank = 0  # the first blank line; only trailing blank lines are allowed (line numbers stay row + 2)
        for line, row in enumerate(reader, start=2):
            if not row:
                blank = blank or line
                continue
            if blank:
                raise DataFormatError(f"{path}: line {blank} is empty (blank lines are allowed only at the end)")
            if len(row) != len(header):
                raise DataFormatError(f"{path}: line {line} has {len(row)} fields, the header has {len(header)}")
            rows.append([c.strip() for c in row])
    return header, rows


@dataclasses.dataclass
class NodeTable:
    """A parsed node table: ids, features [N, F] (or None), raw labels and split codes."""

    path: Path
    ids: list[str]
    x: Optional[np.ndarray]
    labels: Optional[list[str]]
    split: Optional[np.ndarray]  # int [N]: 0 train, 1 val, 2 test, -1 none
    columns: list[str]

    def index(self) -> dict[str, int]:
        idx: dict[str, int] = {}
        for i, v in enumerate(self.ids):
            if v in idx:
                raise DataFormatError(f"{self.path}: node id {v!r} appears twice (data rows {idx[v] + 1} and {i + 1})")
            idx[v] = i
        return idx


def read_node_table(path: Path, features: bool = True) -> NodeTable:
    header, rows = _rows(path)
    col = {h: i for i, h in enumerate(header)}
    ids = [r[col["id"]] for r in rows] if "id" in col else [str(i) for i in range(len(rows))]
    feat_cols = [h for h in header if h not in RESERVED] if features else []
    x = None
    if feat_cols:
        cols = [col[h] for h in feat_cols]
        try:  # fast path: numpy parses the whole block; the slow loop below only names the bad cell
            x = np.asarray([[r[c] for c in cols] for r in rows], dtype=str).astype(np.float32).reshape(len(rows), -1)
        except ValueError:
            x = None
    if feat_cols and x is None:
        x = np.empty((len(rows), len(feat_cols)), np.float32)
        for j, h in enumerate(feat_cols):
            c = col[h]
            for i, r in enumerate(rows):
                try:
                    x[i, j] = float(r[c]) if r[c] != "" else np.nan
                except ValueError:
                    raise DataFormatError(f"{path}: line {i + 2}, column {h!r}: feature value {r[c]!r} is not a "
                                          "number (every column other than id, label, split is a feature)") from None
    if x is not None:
        bad = ~np.isfinite(x)
        if bad.any():
            i, j = (int(v[0]) for v in np.nonzero(bad))
            raise DataFormatError(f"{path}: {int(bad.sum())} missing or non-finite feature value(s), e.g. line "
                                  f"{i + 2}, column {feat_cols[j]!r}")
    labels = [r[col["label"]] for r in rows] if "label" in col else None
    split = None
    if "split" in col:
        split = np.empty(len(rows), np.int64)
        for i, r in enumerate(rows):
            v = r[col["split"]].lower()
            if v not in SPLIT_NAMES:
                raise DataFormatError(f"{path}: line {i + 2}, column 'split': {r[col['split']]!r} is not one of "
                                      "train, val (valid), test or empty")
            split[i] = SPLIT_NAMES[v]
    return NodeTable(path, ids, x, labels, split, header)


def _labels(table: NodeTable, meta: dict) -> Optional[np.ndarray]:
    """Numeric labels as floats (NaN = empty) for check_labels, or class names numbered in sorted order."""
    if table.labels is None:
        return None
    vals = table.labels
    numeric = [_is_number(v) for v in vals]
    present = [v != "" for v in vals]
    if all(n or not p for n, p in zip(numeric, present)):
        return np.array([float(v) if v != "" else np.nan for v in vals])
    if any(n and p for n, p in zip(numeric, present)):
        i = next(i for i, (n, p) in enumerate(zip(numeric, present)) if p and not n)
        j = next(i for i, (n, p) in enumerate(zip(numeric, present)) if p and n)
        raise DataFormatError(
            f"{table.path}: line {i + 2}, column 'label': {vals[i]!r} is not a number, but other labels are (e.g. "
            f"{vals[j]!r} on line {j + 2}); a label column holds either class ids 0..C-1 or class names, not both")
    else:
        names = sorted({v for v in vals if v != ""})
        meta["class_names"] = names
        pos = {v: i for i, v in enumerate(names)}
        return np.array([pos[v] if v != "" else -1 for v in vals], np.int64)


def _is_number(v: str) -> bool:
    try:
        float(v)
    except ValueError:
        return False
    return True


def _split_masks(table: NodeTable) -> dict:
    if table.split is None:
        return {}
    return {m: table.split == k for k, m in enumerate(("train_mask", "val_mask", "test_mask"))}


def _edge_weights(path: Path, header: list[str], rows: list[list[str]], notes: list[str]) -> None:
    """Check edges.csv's optional weight column (`fgl_jax.data.checks.check_edge_weights`)."""
    if "weight" not in header:
        return
    c = header.index("weight")
    w = np.empty(len(rows), np.float64)
    for i, row in enumerate(rows):
        try:
            w[i] = float(row[c])
        except ValueError:
            raise DataFormatError(f"{path}: line {i + 2}, column 'weight': {row[c]!r} is not a number") from None
    bad = ~np.isfinite(w)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise DataFormatError(f"{path}: {int(bad.sum())} NaN or infinite edge weight(s), e.g. line {i + 2}, "
                              f"column 'weight': {rows[i][c]!r}; fix or drop those rows")
    check_edge_weights(w, str(path), "weight", notes)


def _edge_ids(path: Path, index: dict[str, int], parsed: Optional[tuple] = None) -> tuple[np.ndarray, np.ndarray]:
    header, rows = parsed if parsed is not None else _rows(path)
    if "src" not in header or "dst" not in header:
        raise DataFormatError(f"{path}: header {header} must name the columns src and dst")
    a, b = header.index("src"), header.index("dst")
    s = np.empty(len(rows), np.int64)
    r = np.empty(len(rows), np.int64)
    for i, row in enumerate(rows):
        for arr, c in ((s, a), (r, b)):
            v = row[c]
            if v not in index:
                raise DataFormatError(f"{path}: line {i + 2}: node id {v!r} is not in the node table")
            arr[i] = index[v]
    return s, r


def _name(folder: Path, name: Optional[str]) -> str:
    return name or folder.name


@register_format("csv", kind="graph", layout="edges.csv + nodes.csv", files=("edges.csv", "edges.csv.gz", "nodes.csv"),
                 inside=("edges.csv", "edges.csv.gz"), order=30, path_suffixes=(".csv", ".csv.gz", ".tsv"))
def load_csv_graph(path: PathLike, name: Optional[str] = None, **options: Any) -> Graph:
    """A Graph from a directory holding edges.csv and nodes.csv (layout in the module docstring).

    Example (files)::

        edges.csv          nodes.csv
        src,dst            id,label,split,f0,f1
        a,b                a,0,train,0.1,1
        b,c                b,1,test,0.3,0
                           c,1,,0.2,0
    """
    folder = Path(path)
    epath, npath = _find(folder, "edges.csv"), _find(folder, "nodes.csv")
    if npath is None or epath is None:
        raise DataFormatError(f"{folder}: a CSV graph needs edges.csv and nodes.csv (missing "
                              f"{'nodes.csv' if npath is None else 'edges.csv'})")
    table = read_node_table(npath)
    if table.x is None:
        raise DataFormatError(f"{npath}: no feature columns (every column other than id, label, split is a feature)")
    parsed = _rows(epath)
    s, r = _edge_ids(epath, table.index(), parsed)
    notes: list[str] = []
    _edge_weights(epath, *parsed, notes)
    meta: dict = {"path": str(folder), "format": "csv"}
    if "id" in table.columns:
        meta["nodes"] = list(table.ids)  # the user's ids, in graph order: notices name them
    y = _labels(table, meta)
    g = build_graph(s, r, table.x, y, name=_name(folder, name), source=str(folder), meta=meta,
                    **_split_masks(table), **options)
    g.meta["notices"][:0] = notes  # the weights were read first
    return g


@register_format("hypergraph", kind="hypergraph", layout="hyperedges.txt + nodes.csv", files=("hyperedges.txt",),
                 inside=("hyperedges.txt",), order=10, path_suffixes=(".txt",))
def load_incidence(path: PathLike, name: Optional[str] = None, num_classes: Optional[int] = None,
                   feature_kind: Optional[str] = None):
    """A `Hypergraph` from hyperedges.txt + nodes.csv (layout in the module docstring).

    Example (files)::

        hyperedges.txt     nodes.csv
        a b c              id,label,f0,f1
        # a comment        a,0,1,0
        b d                b,1,0,1
                           c,0,1,1
                           d,1,0,0
    """
    from .hypergraph import FEATURE_KINDS, Hypergraph, clean_hyperedges
    folder = Path(path)
    hpath, npath = folder / "hyperedges.txt", _find(folder, "nodes.csv")
    if npath is None:
        raise DataFormatError(f"{folder}: a hypergraph needs nodes.csv (features, labels) next to hyperedges.txt")
    table = read_node_table(npath)
    if table.x is None:
        raise DataFormatError(f"{npath}: no feature columns (every column other than id, label, split is a feature)")
    index = table.index()
    n = len(table.ids)
    edges = []
    with open(hpath, encoding="utf-8") as fh:
        for line_no, line in enumerate(fh, start=1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            members = []
            for tok in re.split(r"[\s,]+", line):
                if tok not in index:
                    raise DataFormatError(f"{hpath}: line {line_no}: node id {tok!r} is not in {npath.name}")
                members.append(index[tok])
            edges.append(members)
    src = str(folder)
    notes: list[str] = []
    hn, hi, m = clean_hyperedges(edges, n, src)
    if m < len(edges):
        _notify(notes, src, f"{len(edges) - m} of {len(edges)} hyperedge(s) dropped or merged (fewer than two "
                "distinct nodes, or equal to another)")
    meta: dict = {"path": src, "format": "hypergraph"}
    y, k = check_labels(_labels(table, meta), n, num_classes, src, notes)
    masks = check_masks(tuple(_split_masks(table).get(m) for m in ("train_mask", "val_mask", "test_mask")),
                        y, src, notes) if table.split is not None else None
    z = np.zeros(n, bool)
    masks = masks or (z, z.copy(), z.copy())
    if feature_kind is None:
        feature_kind = "binary" if np.isin(table.x, (0.0, 1.0)).all() else "numeric"
    elif feature_kind not in FEATURE_KINDS:
        raise ValueError(f"feature_kind must be one of {FEATURE_KINDS}, got {feature_kind!r}")
    covered = np.zeros(n, bool)
    covered[hn] = True
    if not covered.all():
        _notify(notes, src, f"{int((~covered).sum())} node(s) in no hyperedge, e.g. node "
                f"{table.ids[int(np.flatnonzero(~covered)[0])]!r}")
    meta.update(notices=notes, split={"kind": "given" if table.split is not None else "none"})
    return Hypergraph(_name(folder, name), table.x, y, k, hn, hi, m, np.ones(m, np.float32), feature_kind, *masks,
                      meta=meta)


@register_format("hetero", kind="hetero", layout="node_types.csv + edges/<relation>.csv", files=("node_types.csv",),
                 inside=("node_types.csv",), order=20)
def load_hetero_tables(path: PathLike, name: Optional[str] = None, num_classes: Optional[int] = None,
                       split: tuple = DEFAULT_SPLIT, split_seed: int = 0):
    """A `HeteroGraph` from node_types.csv + edges/<relation>.csv (layout in the module docstring).

    Example (files)::

        node_types.csv        edges/writes.csv     edges/cites.csv
        id,type,label         src,dst              src,dst
        a1,author,0           a1,p1                p1,p2
        a2,author,1           a2,p2
        p1,paper,
        p2,paper,
    """
    from .hetero import HeteroGraph
    folder = Path(path)
    tpath = _find(folder, "node_types.csv")
    header, rows = _rows(tpath)
    if "id" not in header or "type" not in header:
        raise DataFormatError(f"{tpath}: header {header} must name the columns id and type")
    table = read_node_table(tpath, features=False)
    types_col = [r[header.index("type")] for r in rows]
    if any(t == "" for t in types_col):
        raise DataFormatError(f"{tpath}: line {types_col.index('') + 2}: empty node type")
    index = table.index()
    node_types = tuple(dict.fromkeys(types_col))
    tcode = np.array([node_types.index(t) for t in types_col], np.int64)
    local = np.zeros(len(rows), np.int64)
    counts = []
    for k, t in enumerate(node_types):
        sel = np.flatnonzero(tcode == k)
        local[sel] = np.arange(sel.size)
        counts.append(int(sel.size))
    src = str(folder)
    edir = folder / "edges"
    files = sorted(p for p in edir.glob("*.csv*") if p.is_file()) if edir.is_dir() else []
    if not files:
        raise DataFormatError(f"{folder}: a heterogeneous graph needs one edge file per relation in edges/ "
                              "(edges/<relation>.csv with columns src,dst)")
    cets, edges = [], []
    for f in files:
        rel = f.name.split(".csv")[0]
        s, d = _edge_ids(f, index)
        for a, b in sorted(set(zip(tcode[s].tolist(), tcode[d].tolist()))):
            sel = (tcode[s] == a) & (tcode[d] == b)
            cets.append((node_types[a], rel, node_types[b]))
            edges.append((local[s[sel]].astype(np.int32), local[d[sel]].astype(np.int32)))
    notes: list[str] = []
    meta: dict = {"path": src, "format": "hetero"}
    raw = _labels(table, meta)
    if raw is None:
        raise DataFormatError(f"{tpath}: no label column; a heterogeneous graph needs labels on its target type")
    labelled = np.isfinite(raw) & (raw >= 0) if raw.dtype.kind == "f" else raw >= 0
    target_codes = np.unique(tcode[labelled])
    if target_codes.size != 1:
        which = ", ".join(node_types[c] for c in target_codes) or "none"
        raise DataFormatError(f"{tpath}: labelled nodes must all have one type (the target); found types {which}")
    tk = int(target_codes[0])
    tsel = np.flatnonzero(tcode == tk)
    y, k = check_labels(raw[tsel], tsel.size, num_classes, src, notes)
    masks = None
    if table.split is not None:
        outside = (table.split >= 0) & (tcode != tk)
        if outside.any():
            i = int(np.flatnonzero(outside)[0])
            raise DataFormatError(f"{tpath}: line {i + 2}: node {table.ids[i]!r} of type {types_col[i]!r} has a split; "
                                  f"only target ({node_types[tk]}) nodes do")
        sp_t = table.split[tsel]
        masks = check_masks((sp_t == 0, sp_t == 1, sp_t == 2), y, src, notes)
    meta["split"] = {"kind": "given"}
    if masks is None:
        masks = stratified_split(y, k, *split, seed=split_seed)
        meta["split"] = {"kind": "stratified", "train": split[0], "val": split[1], "test": split[2],
                         "seed": int(split_seed)}
        _notify(notes, src, f"no split given: default stratified split {split[0]:g}/{split[1]:g}/{split[2]:g} per class "
                f"of the {node_types[tk]} nodes, seed {split_seed}")
    return HeteroGraph(_name(folder, name), node_types, tuple(counts), tuple(cets), tuple(edges), node_types[tk],
                       y, k, *masks, meta=dict(meta, notices=notes))
