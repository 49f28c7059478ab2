"""Graphs stored as NumPy ``.npz`` files, in three layouts (told apart by their keys; `NPZ_LAYOUTS`).

**GNN-benchmark / PPNP citation layout** (the ``.npz`` files of Shchur et al.'s GNN benchmark,
PPNP's cora_ml / citeseer / pubmed, Amazon / Coauthor releases), recognised by ``adj_data`` or
``adj_matrix.data``. It is published in two spellings, read alike:

    adj_data, adj_indices, adj_indptr, adj_shape      CSR adjacency [N, N] (row u, column v: edge u -> v)
      or adj_matrix.data, adj_matrix.indices, adj_matrix.indptr, adj_matrix.shape
    attr_data, attr_indices, attr_indptr, attr_shape  CSR features [N, F]
      or attr_matrix.data, attr_matrix.indices, attr_matrix.indptr, attr_matrix.shape
      or attr_matrix                                  dense features [N, F]
    labels                                            int [N]
      or labels_data, labels_indices, labels_indptr, labels_shape   CSR one-hot labels [N, C]
      (or labels.data, labels.indices, ...)
    node_names, attr_names, class_names, idx_to_node, idx_to_attr, idx_to_class   optional

A part a file does not have may be stored as a pickled ``None`` (e.g. ``attr_matrix`` or
``attr_text`` in files written from Python objects); such placeholders are recognised through the
restricted unpickler (nothing executed) and treated as absent.

**Heterophily layout** (Platonov et al.'s roman_empire / amazon_ratings / chameleon_filtered /
... and their re-releases of the Geom-GCN graphs), recognised by ``node_features`` + ``edges``:

    node_features        float [N, F]
    node_labels          int [N]
    edges                int [E, 2]: directed pairs u -> v (symmetrised, with a notice)
    train_masks, val_masks, test_masks   bool [k, N] (k fixed splits; or [N] for one), optional

The graph carries split 0 (or ``split_index=i``); all k splits are kept in
``graph.meta["fixed_splits"]`` (bool [k, N] arrays) for ``--split-index all``.

The file is opened with ``allow_pickle=False``, and every array's ``.npy`` header is read before
the array: a declared shape whose bytes the archive member does not hold (a truncated file, or a
header claiming terabytes) is refused naming the field, before anything is allocated. The
adjacency's ``adj_data`` are edge weights: NaN/inf is refused and negative or zero weights are
counted in a notice; they are not used (every stored entry is an edge). The optional name arrays are often pickled
object arrays; ``class_names`` and ``node_names`` are read through the restricted unpickler of
`fgl_jax.data.safe_pickle` (only numpy arrays and builtin containers, nothing executed) into
``graph.meta``; the others are not needed and are skipped. An object array that names anything
else is skipped with a notice. These files have no split: the default stratified split applies
(`fgl_jax.data.checks`).

**Plain layout** (write it with ``np.savez(path, edge_index=..., x=..., y=...)``), recognised by
``edge_index``:

    edge_index        int [2, E]: row 0 sources, row 1 targets (one or both directions)
    edge_weight       float [E], optional (checked like adj_data, not used)
    x                 float [N, F] dense
      or x_data, x_indices, x_indptr, x_shape         CSR features (scipy's csr_matrix parts)
    y                 int [N], optional (-1 = unlabelled)
    train_mask, val_mask, test_mask                   bool [N], optional (none -> default split)
    num_classes       int scalar, optional (default max(y) + 1)
    class_names       str [K], optional (a Unicode array, not pickled: into graph.meta["class_names"])

Both go through `fgl_jax.data.checks.build_graph` (symmetrised, self-loops / duplicates
removed, labels and masks checked).
"""
from __future__ import annotations

import zipfile
import zlib
from pathlib import Path
from typing import Any, Optional

import numpy as np
import scipy.sparse as sp

from ..graph import Graph
from .checks import MAX_FEATURES, attach_fixed_splits, build_graph, check_edge_weights, notify, pick_fixed_split
from .files import register_format
from .paths import DataFormatError, PathLike
from .safe_pickle import UnsafePickleError, safe_load_npy_object
from .splits import fixed_split  # noqa: F401  (the graph's fixed splits; re-exported)

__all__ = ["load_npz", "save_graph", "npz_layout", "GNN_BENCHMARK_KEYS", "PLAIN_KEYS", "HETEROPHILY_KEYS",
           "NPZ_LAYOUTS", "fixed_split"]

GNN_BENCHMARK_KEYS = ("adj_data", "adj_indices", "adj_indptr", "adj_shape")
GNN_BENCHMARK_DOTTED_KEYS = ("adj_matrix.data", "adj_matrix.indices", "adj_matrix.indptr", "adj_matrix.shape")
PLAIN_KEYS = ("edge_index", "x")
HETEROPHILY_KEYS = ("node_features", "node_labels", "edges")
_SPLIT_KEYS = ("train_masks", "val_masks", "test_masks")

# Every layout this module reads, with the keys that make a file that layout (for the message
# when none fits).
NPZ_LAYOUTS: dict[str, str] = {
    "plain": "edge_index + x (or x_data/x_indices/x_indptr/x_shape), optional y, train_mask/val_mask/test_mask",
    "gnn_benchmark": (f"{', '.join(GNN_BENCHMARK_KEYS)} + attr_data/... or attr_matrix, labels "
                      "(GNN-benchmark, underscore spelling)"),
    "gnn_benchmark (dotted)": (f"{', '.join(GNN_BENCHMARK_DOTTED_KEYS)} + attr_matrix.data/... or attr_matrix, "
                               "labels (GNN-benchmark, dotted spelling)"),
    "heterophily": ("node_features, node_labels, edges [E, 2], optional train_masks/val_masks/test_masks [k, N] "
                    "(Platonov et al.)"),
}
_CSR = ("data", "indices", "indptr", "shape")


_NPZ_IS = "an .npz file is the zip archive np.savez / np.savez_compressed write"


def _open(path: Path) -> Any:
    # checked here, not left to np.load: it raises EOFError on an empty file and, on any other
    # non-zip file, suggests allow_pickle=True (wrong advice for a file from elsewhere)
    size = path.stat().st_size
    if size == 0:
        raise DataFormatError(f"{path}: empty file (0 bytes); {_NPZ_IS}")
    if not zipfile.is_zipfile(path):
        with open(path, "rb") as fh:
            head = fh.read(8)
        raise DataFormatError(f"{path}: not a zip archive ({size} bytes, starting {head!r}); {_NPZ_IS}")
    try:
        return np.load(path, allow_pickle=False)
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as e:
        raise DataFormatError(f"{path}: cannot read as a NumPy .npz archive ({type(e).__name__}: {e})") from e


def _member(z: Any, key: str) -> str:
    names = z.zip.namelist()
    return f"{key}.npy" if f"{key}.npy" in names else key


def _header(z: Any, key: str, path: Path) -> np.dtype:
    """The dtype of field `key`, after checking that its member holds the bytes its header declares."""
    member = _member(z, key)
    try:
        with z.zip.open(member) as fh:
            version = np.lib.format.read_magic(fh)
            shape, _fortran, dtype = (np.lib.format.read_array_header_1_0(fh) if version == (1, 0)
                                      else np.lib.format.read_array_header_2_0(fh))
            held = z.zip.getinfo(member).file_size - fh.tell()
    except (ValueError, EOFError, OSError, zipfile.BadZipFile, zlib.error) as e:
        raise DataFormatError(f"{path}: field {key} is not a readable .npy array ({type(e).__name__}: {e})") from e
    if not dtype.hasobject:
        need = int(np.prod(shape, dtype=object)) * dtype.itemsize
        if need > held:
            raise DataFormatError(f"{path}: field {key} declares shape {shape} of {dtype} ({need:,} bytes) but its "
                                  f"member holds {held:,} bytes: the file is truncated or corrupt")
    return dtype


def _get(z: Any, key: str, path: Path) -> np.ndarray:
    if _header(z, key, path).hasobject:
        raise DataFormatError(f"{path}: field {key} is a pickled object array; it must be a numeric array")
    try:
        return z[key]
    except (ValueError, EOFError, OSError, zipfile.BadZipFile, zlib.error, MemoryError) as e:
        raise DataFormatError(f"{path}: cannot read field {key} ({type(e).__name__}: {e})") from e


def npz_layout(keys) -> str:
    """"gnn_benchmark", "plain" or "heterophily" from an archive's keys ("unknown" otherwise)."""
    keys = set(keys)
    if keys & {"adj_data", "adj_indptr", "adj_matrix.data", "adj_matrix.indptr"}:
        return "gnn_benchmark"
    if "edge_index" in keys:
        return "plain"
    if {"node_features", "edges"} <= keys:
        return "heterophily"
    return "unknown"


def _csr_stem(keys, prefix: str) -> Optional[tuple[str, str]]:
    """How the CSR parts of matrix `prefix` are spelled in this archive: ("adj", "_") for adj_data ...,
    ("adj_matrix", ".") for adj_matrix.data ..., None when neither is present."""
    if f"{prefix}_data" in keys or f"{prefix}_indptr" in keys:
        return prefix, "_"
    if f"{prefix}_matrix.data" in keys or f"{prefix}_matrix.indptr" in keys:
        return f"{prefix}_matrix", "."
    return None


def _none_placeholders(z: Any, path: Path) -> set[str]:
    """The keys whose member is a pickled ``None`` (an absent part), read with the restricted
    unpickler: numpy's own reader would need allow_pickle=True, i.e. plain pickle."""
    out = set()
    for key in z.files:
        try:
            if not _header(z, key, path).hasobject:
                continue
            with z.zip.open(_member(z, key)) as fh:
                value = safe_load_npy_object(fh, f"{path}:{key}")
        except (UnsafePickleError, DataFormatError, OSError, zipfile.BadZipFile, zlib.error):
            continue  # not a placeholder; an optional name array is reported where it is read
        if value is None or (isinstance(value, np.ndarray) and value.dtype.hasobject and value.size == 1
                             and value.ravel()[0] is None):
            out.add(key)
    return out




def _csr(z: Any, prefix: str, path: Path, sep: str = "_") -> sp.csr_matrix:
    """The CSR matrix stored as ``<prefix><sep>data``, ``<prefix><sep>indices``, ... (adj_data or
    adj_matrix.data)."""
    parts = [f"{prefix}{sep}{p}" for p in _CSR]
    miss = [k for k in parts if k not in z.files]
    if miss:
        raise DataFormatError(f"{path}: CSR field {prefix} needs {', '.join(parts)}; missing {', '.join(miss)}")
    data, indices, indptr, shape = (_get(z, k, path) for k in parts)
    try:
        shape = tuple(int(v) for v in shape)
    except (ValueError, TypeError, OverflowError) as e:
        raise DataFormatError(f"{path}: field {parts[3]} must hold two integers, got {shape!r}") from e
    if not prefix.startswith("adj") and len(shape) == 2 and shape[1] > MAX_FEATURES:
        raise DataFormatError(f"{path}: field {parts[3]} declares {shape[1]} feature columns (the stored entries "
                              f"use {int(indices.max()) + 1 if indices.size else 0}); at most {MAX_FEATURES} are "
                              "supported: check the declared shape")
    try:
        m = sp.csr_matrix((data, indices, indptr), shape=shape)
        m.check_format(full_check=True)
    except (ValueError, TypeError) as e:
        raise DataFormatError(f"{path}: fields {prefix}{sep}* do not form a valid CSR matrix ({e})") from e
    return m


def _object_array(z: Any, path: Path, key: str, notes: list[str]) -> Optional[Any]:
    """An optional pickled name array, through the restricted unpickler; None (with a notice) if refused."""
    try:
        with z.zip.open(_member(z, key)) as fh:
            return safe_load_npy_object(fh, f"{path}:{key}")
    except (UnsafePickleError, DataFormatError, KeyError, OSError, zipfile.BadZipFile, zlib.error) as e:
        line = f"{path}: optional field {key} skipped ({e})"
        notes.append(line)
        notify(line, stacklevel=3)
        return None


def _optional_names(z: Any, path: Path, key: str, notes: list[str]) -> Optional[list]:
    if key not in z.files:
        return None
    arr = _object_array(z, path, key, notes) if _header(z, key, path).hasobject else _get(z, key, path)
    if arr is None:
        return None
    arr = np.asarray(arr)
    return [str(v) for v in arr.ravel().tolist()] if arr.ndim else None


def _labels_gnn_benchmark(z: Any, path: Path, keys: set[str]) -> Optional[np.ndarray]:
    if "labels" in keys:
        return _get(z, "labels", path)
    sep = "_" if "labels_data" in keys else ("." if "labels.data" in keys else None)
    if sep is not None:
        onehot = _csr(z, "labels", path, sep)
        per_row = np.diff(onehot.indptr)
        if (per_row > 1).any():
            i = int(np.flatnonzero(per_row > 1)[0])
            raise DataFormatError(f"{path}: field labels_* is multi-label ({int((per_row > 1).sum())} nodes have "
                                  f"several labels, e.g. node {i}); node classification needs one label per node")
        y = np.full(onehot.shape[0], -1, np.int64)
        rows = np.repeat(np.arange(onehot.shape[0]), per_row)
        y[rows] = onehot.indices
        return y
    return None


def _heterophily_masks(z: Any, path: Path, keys: set[str], n: int, split_index: Optional[int]
                       ) -> tuple[dict, Optional[dict]]:
    """(masks of the chosen split for build_graph, all splits as bool [k, N] or None)."""
    present = [k for k in _SPLIT_KEYS if k in keys]
    if not present:
        return {}, None
    if len(present) != 3:
        raise DataFormatError(f"{path}: has {', '.join(present)} but not {', '.join(set(_SPLIT_KEYS) - set(present))}: "
                              "the fixed splits need train_masks, val_masks and test_masks")
    arrs = {}
    for key, short in zip(_SPLIT_KEYS, ("train", "val", "test")):
        a = _get(z, key, path)
        a = a[None] if a.ndim == 1 else a
        if a.ndim != 2 or a.shape[1] != n:
            raise DataFormatError(f"{path}: field {key} has shape {a.shape}, expected (k, {n}) (k splits of the "
                                  f"{n} nodes)")
        if a.dtype != bool and not np.isin(a, (0, 1)).all():
            raise DataFormatError(f"{path}: field {key} holds values other than 0/1 (dtype {a.dtype}); masks are bool")
        arrs[short] = a.astype(bool)
    ks = {a.shape[0] for a in arrs.values()}
    if len(ks) != 1:
        raise DataFormatError(f"{path}: train_masks/val_masks/test_masks hold different split counts "
                              f"({', '.join(f'{s}: {a.shape[0]}' for s, a in arrs.items())})")
    return pick_fixed_split(arrs, split_index, str(path)), arrs


@register_format("npz", kind="graph", layout="one .npz file", suffixes=(".npz",), order=40)
def load_npz(path: PathLike, name: Optional[str] = None, split_index: Optional[int] = None, **options: Any) -> Graph:
    """A Graph from an ``.npz`` file in any layout of the module docstring.

    Args:
      path: the ``.npz`` file.
      name: the graph's name (default: the file name without suffix).
      split_index: for a file with k fixed splits (heterophily layout), which one the masks hold
        (default 0); all of them are in ``graph.meta["fixed_splits"]``.
      **options: passed to `fgl_jax.data.checks.build_graph` (on_directed, keep_self_loops,
        split, split_seed, num_classes).

    Example:
      >>> np.savez("g.npz", edge_index=np.array([[0, 1], [1, 2]]), x=np.eye(3), y=np.array([0, 1, 1]))
      >>> g = load_npz("g.npz")            # doctest: +SKIP
    """
    path = Path(path)
    name = name or (path.name[:-4] if path.name.endswith(".npz") else path.name)
    fixed = None
    with _open(path) as z:
        keys = set(z.files) - _none_placeholders(z, path)
        layout = npz_layout(keys)
        meta: dict = {"path": str(path), "format": f"npz:{layout}"}
        notes: list[str] = []
        if layout == "gnn_benchmark":
            adj_stem = _csr_stem(keys, "adj")
            if adj_stem is None:  # adj_indptr without adj_data, say: _csr names the missing parts
                adj_stem = ("adj", "_") if "adj_indptr" in keys else ("adj_matrix", ".")
            adj = _csr(z, adj_stem[0], path, adj_stem[1]).tocoo()
            if adj.shape[0] != adj.shape[1]:
                raise DataFormatError(f"{path}: adjacency {adj_stem[0]}{adj_stem[1]}shape {adj.shape} is not square")
            check_edge_weights(adj.data, str(path), f"{adj_stem[0]}{adj_stem[1]}data", notes, (adj.row, adj.col))
            attr_stem = _csr_stem(keys, "attr")
            if attr_stem is not None:
                x: Any = _csr(z, attr_stem[0], path, attr_stem[1])
            elif "attr_matrix" in keys:
                x = _get(z, "attr_matrix", path)
            else:
                raise DataFormatError(f"{path}: no node features: expected attr_data/attr_indices/attr_indptr/"
                                      "attr_shape or attr_matrix.data/attr_matrix.indices/attr_matrix.indptr/"
                                      "attr_matrix.shape (CSR), or attr_matrix (dense)")
            if x.shape[0] != adj.shape[0]:
                raise DataFormatError(f"{path}: features have {x.shape[0]} rows but the adjacency has "
                                      f"{adj.shape[0]} nodes")
            y = _labels_gnn_benchmark(z, path, keys)
            for key in ("class_names", "node_names"):
                names = _optional_names(z, path, key, notes) if key in keys else None
                if names is not None:
                    meta[key] = names
            senders, receivers, masks, k = adj.row, adj.col, {}, None
        elif layout == "heterophily":
            x = _get(z, "node_features", path)
            if x.ndim != 2:
                raise DataFormatError(f"{path}: field node_features has shape {x.shape}, expected (N, F)")
            e = _get(z, "edges", path)
            if e.ndim != 2 or e.shape[1] != 2:
                raise DataFormatError(f"{path}: field edges has shape {e.shape}, expected (E, 2) (one u, v pair a row)")
            y = _get(z, "node_labels", path) if "node_labels" in keys else None
            masks, fixed = _heterophily_masks(z, path, keys, x.shape[0], split_index)
            senders, receivers, k = e[:, 0], e[:, 1], None
        elif layout == "plain":
            ei = _get(z, "edge_index", path)
            if ei.ndim != 2 or ei.shape[0] != 2:
                raise DataFormatError(f"{path}: field edge_index has shape {ei.shape}, expected (2, E)")
            if "x" in keys:
                x = _get(z, "x", path)
            elif "x_data" in keys:
                x = _csr(z, "x", path)
            else:
                raise DataFormatError(f"{path}: no node features: expected x (dense [N, F]) or x_data/x_indices/"
                                      "x_indptr/x_shape (CSR)")
            y = _get(z, "y", path) if "y" in keys else None
            masks = {m: _get(z, m, path) for m in ("train_mask", "val_mask", "test_mask") if m in keys}
            if "class_names" in keys:
                names = _optional_names(z, path, "class_names", notes)
                if names is not None:
                    meta["class_names"] = names
            k = None
            if "num_classes" in keys:
                kk = _get(z, "num_classes", path)
                if kk.size != 1 or kk.dtype.kind not in "iu":
                    raise DataFormatError(f"{path}: field num_classes must be one integer, got {kk!r}")
                k = int(kk.ravel()[0])
            senders, receivers = ei[0], ei[1]
            if "edge_weight" in keys:
                w = _get(z, "edge_weight", path)
                if w.shape != (ei.shape[1],):
                    raise DataFormatError(f"{path}: field edge_weight has shape {w.shape}, expected "
                                          f"({ei.shape[1]},) (one weight per edge_index column)")
                check_edge_weights(w, str(path), "edge_weight", notes, (senders, receivers))
        else:
            known = "; ".join(f"{lay}: {desc}" for lay, desc in NPZ_LAYOUTS.items())
            raise DataFormatError(
                f"{path}: unrecognised .npz layout (keys: {', '.join(sorted(z.files)) or 'none'}); the known "
                f"layouts are {known}; see fgl_jax.data.npz")
        if k is not None:
            options.setdefault("num_classes", k)
        if split_index is not None and fixed is None:
            raise DataFormatError(f"{path}: split_index {split_index} given but the file ({layout} layout) has no "
                                  "fixed splits (train_masks/val_masks/test_masks [k, N])")
        g = build_graph(senders, receivers, x, y, name=name, source=str(path), meta=meta, **masks, **options)
    g.meta["notices"][:0] = notes  # the skipped name arrays come first: they were read first
    if fixed is not None:
        g = attach_fixed_splits(g, fixed, split_index, str(path))
    return g


def save_graph(graph: Graph, path: PathLike) -> Path:
    """Write `graph` as a plain-layout ``.npz`` that `load_npz` (and ``--dataset PATH``) reads back
    as the same graph: equal edges in the same order, features, labels, masks, class count and
    class names.

    Args:
      graph: a `Graph` (from a loader, a converter or `build_graph`: symmetric, no duplicate edges).
      path: the file to write (``.npz`` is appended when missing).

    Returns:
      The path written.

    Raises:
      GraphError: the graph is not symmetric or holds duplicate edges (what the loader would change
        on reading it back), naming the count.
    """
    return graph.save(path)
