"""A user's graph on disk: is a dataset argument a path, which format is it, what kind of data.

`fgl_jax.data.load` / `load_graph` call `load_path` for any argument `is_path` accepts, so
every command that takes a dataset name also takes a file or directory:

    load("cora")                       # a registered name
    load("~/graphs/amazon_photo.npz")  # a file
    load("data/ogbn-arxiv")            # a directory, recognised by its contents

Formats (the module named holds the exact layout):

    file  *.npz                               graph       fgl_jax.data.npz (GNN-benchmark or plain layout)
    dir   edges.csv + nodes.csv               graph       fgl_jax.data.tables (CSV edge list + node table)
    dir   raw/edge.csv.gz (+ split/<scheme>/) graph       fgl_jax.data.ogb (OGB node-property directory)
    dir   hyperedges.txt + nodes.csv          hypergraph  fgl_jax.data.tables (incidence list)
    dir   node_types.csv + edges/<rel>.csv    hetero      fgl_jax.data.tables (one edge file per relation)

The file names ``edges.csv``, ``hyperedges.txt`` and ``node_types.csv`` may also be passed
directly (their directory is used). Every graph goes through `fgl_jax.data.checks.build_graph`;
``graph.meta`` records "path", "format", "notices" and "split".
"""
from __future__ import annotations

import hashlib
import inspect
import os
from pathlib import Path
from typing import Any, Callable, Optional, Union

from .paths import DataError, DataFormatError, PathLike, check_data_dir, sha256_file

__all__ = ["is_path", "resolve_path", "detect_format", "path_kind", "load_path", "path_sha256", "DataPathNotFoundError",
           "PATH_FORMATS", "KNOWN_SUFFIXES"]

KNOWN_SUFFIXES = (".npz", ".csv", ".csv.gz", ".tsv", ".txt")

# format -> (kind, "module:function") of its loader; each loader is `loader(path, name=None, **options)`
PATH_FORMATS: dict[str, tuple[str, str]] = {
    "npz": ("graph", "fgl_jax.data.npz:load_npz"),
    "csv": ("graph", "fgl_jax.data.tables:load_csv_graph"),
    "ogb": ("graph", "fgl_jax.data.ogb:load_ogb_node"),
    "hypergraph": ("hypergraph", "fgl_jax.data.tables:load_incidence"),
    "hetero": ("hetero", "fgl_jax.data.tables:load_hetero_tables"),
}


class DataPathNotFoundError(DataError, FileNotFoundError):
    """A dataset argument looks like a path but nothing exists there."""

    def __init__(self, path: PathLike, tried: list[Path]):
        self.path = str(path)
        self.message = (f"dataset path {str(path)!r} does not exist (looked at {', '.join(map(str, tried))}); "
                        "pass an existing file or directory, or a registered name (`fgl-jax datasets`)")
        Exception.__init__(self, self.message)

    def __str__(self) -> str:
        return self.message


def _registered(name: str) -> bool:
    from .. import registry
    return registry.has("dataset", name)


def is_path(name_or_path: Union[str, os.PathLike]) -> bool:
    """True when a dataset argument means a file or directory rather than a registered name.

    A `pathlib.Path` always does; a string does when it contains a path separator, ends in one
    of KNOWN_SUFFIXES, or names an existing file or directory and is not a registered name (a
    registered name wins over a same-named folder in the working directory).
    """
    if isinstance(name_or_path, os.PathLike):
        return True
    s = str(name_or_path)
    if "/" in s or os.sep in s or s.startswith("~"):
        return True
    if s.lower().endswith(KNOWN_SUFFIXES):
        return True
    return os.path.exists(s) and not _registered(s)


def resolve_path(path: PathLike, data_dir: Optional[PathLike] = None) -> Path:
    """The existing path: as given (~ expanded, relative to the working directory), else under data_dir."""
    given = check_data_dir(data_dir)
    p = Path(path).expanduser()
    tried = [p.resolve()]
    if p.exists():
        return p
    if given is not None and not p.is_absolute():
        q = given / p
        tried.append(q)
        if q.exists():
            return q
    raise DataPathNotFoundError(path, tried)


def detect_format(path: PathLike) -> tuple[str, Path]:
    """(format, the file or directory its loader reads) of an existing path (see the module docstring)."""
    p = Path(path)
    if p.is_file():
        low = p.name.lower()
        if low.endswith(".npz"):
            return "npz", p
        if low in ("edges.csv", "edges.csv.gz", "nodes.csv"):
            return "csv", p.parent
        if low == "hyperedges.txt":
            return "hypergraph", p.parent
        if low == "node_types.csv":
            return "hetero", p.parent
        raise DataFormatError(f"{p}: unrecognised graph file; expected a .npz file, or a directory in one of the "
                              f"layouts of fgl_jax.data.files ({', '.join(PATH_FORMATS)})")
    if p.exists() and not p.is_dir():  # a device (/dev/zero), FIFO or socket: reading it could hang or never end
        raise DataFormatError(f"{p}: exists but is not a regular file or a directory (a device, pipe or socket); "
                              "pass a graph file or directory")
    if p.is_dir():
        if (p / "raw" / "edge.csv.gz").is_file() or (p / "raw" / "edge.csv").is_file():
            return "ogb", p
        if (p / "hyperedges.txt").is_file():
            return "hypergraph", p
        if (p / "node_types.csv").is_file():
            return "hetero", p
        if (p / "edges.csv").is_file() or (p / "edges.csv.gz").is_file():
            return "csv", p
        npz = sorted(p.glob("*.npz"))
        if len(npz) == 1:
            return "npz", npz[0]
        seen = sorted(c.name for c in p.iterdir())[:12]
        raise DataFormatError(
            f"{p}: directory in no known layout (it holds {', '.join(seen) or 'nothing'}); expected one .npz file, "
            "edges.csv + nodes.csv, raw/edge.csv.gz (OGB), hyperedges.txt + nodes.csv, or node_types.csv + edges/ "
            "(see fgl_jax.data.files)")
    raise DataPathNotFoundError(path, [p])


def path_kind(path: PathLike, data_dir: Optional[PathLike] = None) -> str:
    """"graph", "hypergraph" or "hetero": what `load_path` returns for this path (nothing is parsed)."""
    return PATH_FORMATS[detect_format(resolve_path(path, data_dir))[0]][0]


def _loader(fmt: str) -> Callable[..., Any]:
    import importlib
    module, fn = PATH_FORMATS[fmt][1].split(":")
    return getattr(importlib.import_module(module), fn)


def _options(loader: Callable[..., Any]) -> list[str]:
    from .checks import build_graph
    own = [p for p in inspect.signature(loader).parameters if p not in ("path", "options", "name")]
    shared = [p for p, v in inspect.signature(build_graph).parameters.items()
              if v.kind == inspect.Parameter.KEYWORD_ONLY and p not in ("name", "source", "meta", "train_mask", "val_mask", "test_mask")]
    return own + [p for p in shared if p not in own]


def load_path(path: PathLike, data_dir: Optional[PathLike] = None, *, name: Optional[str] = None,
              **options: Any) -> Any:
    """Load a graph, hypergraph or heterogeneous graph from a file or directory (format detected).

    Args:
      path: file or directory (relative paths: working directory first, then under `data_dir`).
      name: the dataset's name (default: from the file or directory name).
      **options: for the format's loader and `fgl_jax.data.checks.build_graph` (on_directed,
        keep_self_loops, split, split_seed, num_classes, ...); an unknown one is a ValueError
        listing those accepted.
    """
    p = resolve_path(path, data_dir)
    fmt, target = detect_format(p)
    loader = _loader(fmt)
    if PATH_FORMATS[fmt][0] == "graph" or "options" in inspect.signature(loader).parameters:
        accepted = _options(loader)
    else:
        accepted = [q for q in inspect.signature(loader).parameters if q not in ("path", "name")]
    unknown = sorted(set(options) - set(accepted))
    if unknown:
        raise ValueError(f"dataset path {str(path)!r} ({fmt} format): unknown option(s) {', '.join(unknown)}. "
                         f"Accepted options: {', '.join(accepted) or 'none'}")
    return loader(target, name=name, **options)


def path_sha256(path: PathLike) -> str:
    """sha256 of a dataset path: of the file's bytes, or for a directory of every file below it
    (sorted relative paths and their sha256), so a replay can tell whether the data changed."""
    p = Path(path).expanduser()
    if p.is_file():
        return sha256_file(p)
    if not p.is_dir():
        raise DataPathNotFoundError(path, [p])
    h = hashlib.sha256()
    for f in sorted(q for q in p.rglob("*") if q.is_file()):
        h.update(f"{f.relative_to(p).as_posix()}\0{sha256_file(f)}\n".encode())
    return h.hexdigest()
