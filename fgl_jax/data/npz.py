"""Graphs stored as NumPy ``.npz`` files, in two layouts (told apart by their keys).

**GNN-benchmark / PPNP citation layout** (the ``.npz`` files of Shchur et al.'s GNN benchmark,
PPNP's cora_ml / citeseer / pubmed, Amazon / Coauthor releases), recognised by ``adj_data``:

    adj_data, adj_indices, adj_indptr, adj_shape      CSR adjacency [N, N] (row u, column v: edge u -> v)
    attr_data, attr_indices, attr_indptr, attr_shape  CSR features [N, F]
      or attr_matrix                                  dense features [N, F]
    labels                                            int [N]
      or labels_data, labels_indices, labels_indptr, labels_shape   CSR one-hot labels [N, C]
    node_names, attr_names, class_names, idx_to_node, idx_to_attr, idx_to_class   optional

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

import warnings
import zipfile
import zlib
from pathlib import Path
from typing import Any, Optional

import numpy as np
import scipy.sparse as sp

from ..graph import Graph
from .checks import MAX_FEATURES, DataNotice, build_graph, check_edge_weights
from .files import register_format
from .paths import DataFormatError, PathLike
from .safe_pickle import UnsafePickleError, safe_load_npy_object

__all__ = ["load_npz", "save_graph", "npz_layout", "GNN_BENCHMARK_KEYS", "PLAIN_KEYS"]

GNN_BENCHMARK_KEYS = ("adj_data", "adj_indices", "adj_indptr", "adj_shape")
PLAIN_KEYS = ("edge_index", "x")
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
    """"gnn_benchmark" or "plain" from an archive's keys (DataFormatError-free: "unknown" otherwise)."""
    keys = set(keys)
    if "adj_data" in keys or "adj_indptr" in keys:
        return "gnn_benchmark"
    if "edge_index" in keys:
        return "plain"
    return "unknown"




def _csr(z: Any, prefix: str, path: Path) -> sp.csr_matrix:
    parts = [f"{prefix}_{p}" for p in _CSR]
    miss = [k for k in parts if k not in z.files]
    if miss:
        raise DataFormatError(f"{path}: CSR field {prefix} needs {', '.join(parts)}; missing {', '.join(miss)}")
    data, indices, indptr, shape = (_get(z, k, path) for k in parts)
    try:
        shape = tuple(int(v) for v in shape)
    except (ValueError, TypeError, OverflowError) as e:
        raise DataFormatError(f"{path}: field {prefix}_shape must hold two integers, got {shape!r}") from e
    if prefix != "adj" and len(shape) == 2 and shape[1] > MAX_FEATURES:
        raise DataFormatError(f"{path}: field {prefix}_shape declares {shape[1]} feature columns (the stored entries "
                              f"use {int(indices.max()) + 1 if indices.size else 0}); at most {MAX_FEATURES} are "
                              "supported: check the declared shape")
    try:
        m = sp.csr_matrix((data, indices, indptr), shape=shape)
        m.check_format(full_check=True)
    except (ValueError, TypeError) as e:
        raise DataFormatError(f"{path}: fields {prefix}_* do not form a valid CSR matrix ({e})") from e
    return m


def _object_array(z: Any, path: Path, key: str, notes: list[str]) -> Optional[Any]:
    """An optional pickled name array, through the restricted unpickler; None (with a notice) if refused."""
    try:
        with z.zip.open(_member(z, key)) as fh:
            return safe_load_npy_object(fh, f"{path}:{key}")
    except (UnsafePickleError, DataFormatError, KeyError, OSError, zipfile.BadZipFile, zlib.error) as e:
        line = f"{path}: optional field {key} skipped ({e})"
        notes.append(line)
        warnings.warn(line, DataNotice, stacklevel=3)
        return None


def _optional_names(z: Any, path: Path, key: str, notes: list[str]) -> Optional[list]:
    if key not in z.files:
        return None
    arr = _object_array(z, path, key, notes) if _header(z, key, path).hasobject else _get(z, key, path)
    if arr is None:
        return None
    arr = np.asarray(arr)
    return [str(v) for v in arr.ravel().tolist()] if arr.ndim else None


def _labels_gnn_benchmark(z: Any, path: Path) -> np.ndarray:
    if "labels" in z.files:
        return _get(z, "labels", path)
    if "labels_data" in z.files:
        onehot = _csr(z, "labels", path)
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


@register_format("npz", kind="graph", layout="one .npz file", suffixes=(".npz",), order=40)
def load_npz(path: PathLike, name: Optional[str] = None, **options: Any) -> Graph:
    """A Graph from an ``.npz`` file in either layout of the module docstring.

    Args:
      path: the ``.npz`` file.
      name: the graph's name (default: the file name without suffix).
      **options: passed to `fgl_jax.data.checks.build_graph` (on_directed, keep_self_loops,
        split, split_seed, num_classes).

    Example:
      >>> np.savez("g.npz", edge_index=np.array([[0, 1], [1, 2]]), x=np.eye(3), y=np.array([0, 1, 1]))
      >>> g = load_npz("g.npz")            # doctest: +SKIP
    """
    path = Path(path)
    name = name or (path.name[:-4] if path.name.endswith(".npz") else path.name)
    with _open(path) as z:
        layout = npz_layout(z.files)
        meta: dict = {"path": str(path), "format": f"npz:{layout}"}
        notes: list[str] = []
        if layout == "gnn_benchmark":
            adj = _csr(z, "adj", path).tocoo()
            if adj.shape[0] != adj.shape[1]:
                raise DataFormatError(f"{path}: adjacency adj_shape {adj.shape} is not square")
            check_edge_weights(adj.data, str(path), "adj_data", notes, (adj.row, adj.col))
            if "attr_matrix" in z.files:
                x: Any = _get(z, "attr_matrix", path)
            elif "attr_data" in z.files:
                x = _csr(z, "attr", path)
            else:
                raise DataFormatError(f"{path}: no node features: expected attr_data/attr_indices/attr_indptr/"
                                      "attr_shape (CSR) or attr_matrix (dense)")
            if x.shape[0] != adj.shape[0]:
                raise DataFormatError(f"{path}: features have {x.shape[0]} rows but the adjacency has "
                                      f"{adj.shape[0]} nodes")
            y = _labels_gnn_benchmark(z, path)
            for key in ("class_names", "node_names"):
                names = _optional_names(z, path, key, notes)
                if names is not None:
                    meta[key] = names
            senders, receivers, masks, k = adj.row, adj.col, {}, None
        elif layout == "plain":
            ei = _get(z, "edge_index", path)
            if ei.ndim != 2 or ei.shape[0] != 2:
                raise DataFormatError(f"{path}: field edge_index has shape {ei.shape}, expected (2, E)")
            if "x" in z.files:
                x = _get(z, "x", path)
            elif "x_data" in z.files:
                x = _csr(z, "x", path)
            else:
                raise DataFormatError(f"{path}: no node features: expected x (dense [N, F]) or x_data/x_indices/"
                                      "x_indptr/x_shape (CSR)")
            y = _get(z, "y", path) if "y" in z.files else None
            masks = {m: _get(z, m, path) for m in ("train_mask", "val_mask", "test_mask") if m in z.files}
            if "class_names" in z.files:
                names = _optional_names(z, path, "class_names", notes)
                if names is not None:
                    meta["class_names"] = names
            k = None
            if "num_classes" in z.files:
                kk = _get(z, "num_classes", path)
                if kk.size != 1 or kk.dtype.kind not in "iu":
                    raise DataFormatError(f"{path}: field num_classes must be one integer, got {kk!r}")
                k = int(kk.ravel()[0])
            senders, receivers = ei[0], ei[1]
            if "edge_weight" in z.files:
                w = _get(z, "edge_weight", path)
                if w.shape != (ei.shape[1],):
                    raise DataFormatError(f"{path}: field edge_weight has shape {w.shape}, expected "
                                          f"({ei.shape[1]},) (one weight per edge_index column)")
                check_edge_weights(w, str(path), "edge_weight", notes, (senders, receivers))
        else:
            raise DataFormatError(
                f"{path}: unrecognised .npz layout (keys: {', '.join(sorted(z.files)) or 'none'}); expected "
                f"edge_index + x (plain layout) or {', '.join(GNN_BENCHMARK_KEYS)} + attr_* (GNN-benchmark "
                "layout); see fgl_jax.data.npz")
        if k is not None:
            options.setdefault("num_classes", k)
        g = build_graph(senders, receivers, x, y, name=name, source=str(path), meta=meta, **masks, **options)
    g.meta["notices"][:0] = notes  # the skipped name arrays come first: they were read first
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
