"""OGB node-property-prediction directories, as the OGB tools write them (e.g. ogbn-arxiv).

Layout (files headerless, comma-separated, gzipped; ``.csv`` without ``.gz`` is accepted too)::

    raw/edge.csv.gz            E rows "src,dst" (0-based node ids)
    raw/node-feat.csv.gz       N rows of F floats                 (required: features)
    raw/node-label.csv.gz      N rows of one label (empty / nan = unlabelled)   optional
    raw/num-node-list.csv.gz   one row: N                         optional (checked when present)
    raw/num-edge-list.csv.gz   one row: E                         optional (checked when present)
    split/<scheme>/train.csv.gz, valid.csv.gz, test.csv.gz   one node id per row   optional

OGB stores ogbn-arxiv's citations in one direction; like every user graph here it is
symmetrised with a notice (`fgl_jax.data.checks`), as PyG's ``to_undirected`` does in OGB's
own examples. With one split scheme it is used; with several, pass ``split_scheme``; with none,
the default stratified split applies. Multi-task labels (several label columns, ogbn-proteins)
are refused: node classification here needs one class per node.
"""
from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any, Optional

import numpy as np

from ..graph import Graph
from .checks import build_graph
from .files import register_format
from .paths import DataFormatError, PathLike

__all__ = ["load_ogb_node", "read_headerless"]


def _file(folder: Path, stem: str, required: bool = True) -> Optional[Path]:
    for name in (f"{stem}.csv.gz", f"{stem}.csv"):
        if (folder / name).is_file():
            return folder / name
    if required:
        raise DataFormatError(f"{folder}: missing {stem}.csv.gz (OGB node-property layout: raw/edge.csv.gz, "
                              "raw/node-feat.csv.gz, raw/node-label.csv.gz, split/<scheme>/{train,valid,test}.csv.gz)")
    return None


def read_headerless(path: Path, dtype: Any, columns: Optional[int] = None) -> np.ndarray:
    """A headerless numeric CSV (gzipped or not) as a 2-D array; errors name the file."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # numpy's "Empty input file": an empty split is fine
            a = np.loadtxt(path, delimiter=",", dtype=dtype, ndmin=2)
    except ValueError as e:
        raise DataFormatError(f"{path}: not a headerless numeric CSV ({e})") from e
    if columns is not None and a.size and a.shape[1] != columns:
        raise DataFormatError(f"{path}: {a.shape[1]} columns per row, expected {columns}")
    return a


@register_format("ogb", kind="graph", layout="raw/edge.csv.gz (OGB node-property directory)",
                 inside=("raw/edge.csv.gz", "raw/edge.csv"), order=0)
def load_ogb_node(path: PathLike, name: Optional[str] = None, split_scheme: Optional[str] = None,
                  **options: Any) -> Graph:
    """A Graph from an OGB node-property-prediction directory (layout in the module docstring).

    Args:
      path: the dataset directory (holding raw/ and split/).
      name: default the directory name.
      split_scheme: the sub-folder of split/ to use (needed only when there are several).
      **options: for `fgl_jax.data.checks.build_graph`.
    """
    folder = Path(path)
    raw = folder / "raw"
    edges = read_headerless(_file(raw, "edge"), np.int64, 2)
    x = read_headerless(_file(raw, "node-feat"), np.float32)
    n = x.shape[0]
    for stem, want, what in (("num-node-list", n, "nodes (rows of node-feat)"),
                             ("num-edge-list", edges.shape[0], "edges (rows of edge)")):
        f = _file(raw, stem, required=False)
        if f is not None:
            got = read_headerless(f, np.int64)
            if got.size != 1:
                raise DataFormatError(f"{f}: holds {got.size} numbers; a node-property dataset has one graph")
            if int(got.ravel()[0]) != want:
                raise DataFormatError(f"{f}: says {int(got.ravel()[0])} but there are {want} {what}")
    y = None
    lf = _file(raw, "node-label", required=False)
    if lf is not None:
        lab = read_headerless(lf, np.float64)
        if lab.shape[1] != 1:
            raise DataFormatError(f"{lf}: {lab.shape[1]} label columns (a multi-task dataset); node classification "
                                  "here needs one class per node")
        y = lab[:, 0]
    masks = {}
    sdir = folder / "split"
    schemes = sorted(p.name for p in sdir.iterdir() if p.is_dir()) if sdir.is_dir() else []
    if split_scheme is not None and split_scheme not in schemes:
        raise DataFormatError(f"{sdir}: no split scheme {split_scheme!r}; found {schemes or 'none'}")
    if split_scheme is None and len(schemes) > 1:
        raise DataFormatError(f"{sdir}: several split schemes {schemes}; choose one with split_scheme=")
    scheme = split_scheme or (schemes[0] if schemes else None)
    if scheme is not None:
        for part, key in (("train", "train_mask"), ("valid", "val_mask"), ("test", "test_mask")):
            f = _file(sdir / scheme, part, required=False)
            if f is not None:
                masks[key] = read_headerless(f, np.int64, 1)[:, 0]
    meta = {"path": str(folder), "format": "ogb", "split_scheme": scheme}
    return build_graph(edges[:, 0], edges[:, 1], x, y, name=name or folder.name, source=str(folder), meta=meta,
                       **masks, **options)
