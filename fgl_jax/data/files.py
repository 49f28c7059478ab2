"""A user's graph on disk: is a dataset argument a path, which format is it, what kind of data.

`fgl_jax.data.load` / `load_graph` call `load_path` for any argument `is_path` accepts, so
every command that takes a dataset name also takes a file or directory:

    load("cora")                       # a registered name
    load("~/graphs/amazon_photo.npz")  # a file
    load("data/ogbn-arxiv")            # a directory, recognised by its contents

Formats register themselves (`register_format`, registry kind "format") with how they are
recognised; the built-in ones (the module named holds the exact layout):

    file  *.npz                               graph       fgl_jax.data.npz (GNN-benchmark or plain layout)
    dir   edges.csv + nodes.csv               graph       fgl_jax.data.tables (CSV edge list + node table)
    dir   raw/edge.csv.gz (+ split/<scheme>/) graph       fgl_jax.data.ogb (OGB node-property directory)
    dir   out1_node_feature_label.txt +      graph       fgl_jax.data.geom_gcn (Geom-GCN raw directory,
          out1_graph_edges.txt                           ten <name>_split_0.6_0.2_<i>.npz fixed splits)
    dir   hyperedges.txt + nodes.csv          hypergraph  fgl_jax.data.tables (incidence list)
    dir   node_types.csv + edges/<rel>.csv    hetero      fgl_jax.data.tables (one edge file per relation)

The file names ``edges.csv``, ``hyperedges.txt``, ``node_types.csv`` and Geom-GCN's two ``out1_*``
files may also be passed directly (their directory is used). A new format is one `@register_format(...)` above its loader,
with no edit here. Every graph goes through `fgl_jax.data.checks.build_graph`;
``graph.meta`` records "path", "format", "notices" and "split".
"""
from __future__ import annotations

import hashlib
import inspect
import os
from pathlib import Path
from typing import Any, Callable, Optional, Union

from .. import registry
from .paths import DataError, DataFormatError, PathLike, check_data_dir, sha256_file

__all__ = ["is_path", "resolve_path", "detect_format", "path_kind", "load_path", "path_sha256", "DataPathNotFoundError",
           "register_format", "path_suffixes", "object_format"]


def register_format(name: str, *, kind: str, layout: str, files: tuple[str, ...] = (),
                    suffixes: tuple[str, ...] = (), inside: tuple[str, ...] = (), order: int = 50,
                    path_suffixes: tuple[str, ...] = (), sniff: Optional[Callable[[Any], bool]] = None
                    ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorator: register a file format's loader ``loader(path, name=None, **options)`` in
    `fgl_jax.registry` (kind "format") with how a path in that format is recognised.

    Args:
      name: the format's name in the registry (letters, digits, '_' or '-').
      kind: what the loader returns: "graph", "hypergraph" or "hetero".
      layout: one line describing the layout (for messages).
      files: file names (lower case) that are this format; the loader reads their directory.
      suffixes: file-name endings that are this format; the loader reads the file. A directory
        that holds exactly one such file (and no `inside` marker of another format) is read as it.
      inside: paths whose presence in a directory makes the directory this format.
      order: formats are tried in increasing order (a hypergraph directory also holds nodes.csv).
      path_suffixes: endings that make a dataset argument a path (`is_path`), besides `suffixes`.
      sniff: for a graph object of another library (networkx, PyG, ...): true when the loader,
        ``loader(obj, **options)``, takes this object (`fgl_jax.data.convert`); such a format has
        no file layout.

    Returns:
      The decorator; it registers the loader and returns it unchanged.
    Raises:
      ValueError: when the decorator runs, a name already registered as a format, or not a valid name.
    """
    def deco(loader: Callable[..., Any]) -> Callable[..., Any]:
        registry.add("format", name, loader, data=kind, help=layout, files=tuple(files), suffixes=tuple(suffixes),
                     inside=tuple(inside), order=int(order), path_suffixes=tuple(suffixes) + tuple(path_suffixes),
                     sniff=sniff)
        return loader
    return deco


def _formats() -> list[registry.Entry]:
    """The file formats, in the order they are tried."""
    return sorted((e for e in registry.entries("format") if e.info.get("sniff") is None),
                  key=lambda e: (e.info["order"], e.name))


def object_format(obj: Any) -> registry.Entry:
    """The format entry whose `sniff` takes this in-memory graph object (networkx, PyG, ...)."""
    for e in sorted(registry.entries("format"), key=lambda e: (e.info["order"], e.name)):
        if e.info.get("sniff") is not None and e.info["sniff"](obj):
            return e
    known = ", ".join(f"{e.help} ({e.name})" for e in registry.entries("format") if e.info.get("sniff") is not None)
    raise DataFormatError(f"dataset: a {type(obj).__module__}.{type(obj).__name__} is no dataset name, path or "
                          f"graph object of a registered format ({known})")


def path_suffixes() -> tuple[str, ...]:
    """File-name endings that make a dataset argument a path (those of every registered format)."""
    return tuple(sorted({s for e in _formats() for s in e.info["path_suffixes"]}))


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
    of the registered formats' suffixes (`path_suffixes`), or names an existing file or directory
    and is not a registered name (a registered name wins over a same-named folder in the working
    directory).
    """
    if isinstance(name_or_path, os.PathLike):
        return True
    s = str(name_or_path)
    if "/" in s or os.sep in s or s.startswith("~"):
        return True
    if s.lower().endswith(path_suffixes()):
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


def _detect(p: Path) -> Optional[tuple[registry.Entry, Path]]:
    """(format entry, the file or directory its loader reads) of an existing path, or None."""
    formats = _formats()
    if p.is_file():
        low = p.name.lower()
        for e in formats:
            if low.endswith(e.info["suffixes"]):
                return e, p
            if low in e.info["files"]:
                return e, p.parent
        return None
    for e in formats:
        if any((p / marker).is_file() for marker in e.info["inside"]):
            return e, p
    several = None
    for e in formats:
        found = sorted(q for q in p.iterdir() if q.is_file() and q.name.lower().endswith(e.info["suffixes"])) \
            if e.info["suffixes"] else []
        if len(found) == 1:
            return e, found[0]
        if len(found) > 1 and several is None:
            several = e, found
    if several is not None:  # e.g. a planetoid/ folder with Cora's and CiteSeer's files: which one is meant?
        e, found = several
        raise DataFormatError(f"{p}: holds {len(found)} datasets in the {e.name} layout "
                              f"({', '.join(q.name for q in found[:6])}); pass one of these files as the path")
    return None


def detect_format(path: PathLike) -> tuple[str, Path]:
    """(format, the file or directory its loader reads) of an existing path (the registered formats'
    files, suffixes and directory markers; see `register_format`)."""
    p = Path(path)
    if not p.exists():
        raise DataPathNotFoundError(path, [p])
    if not p.is_file() and not p.is_dir():  # a device (/dev/zero), FIFO or socket: reading it could hang or never end
        raise DataFormatError(f"{p}: exists but is not a regular file or a directory (a device, pipe or socket); "
                              "pass a graph file or directory")
    found = _detect(p)
    if found is not None:
        return found[0].name, found[1]
    layouts = ", ".join(f"{e.help} ({e.name})" for e in _formats())
    if p.is_file():
        raise DataFormatError(f"{p}: unrecognised graph file; expected a file or directory in a registered format: "
                              f"{layouts} (see fgl_jax.data.files)")
    seen = sorted(c.name for c in p.iterdir())[:12]
    raise DataFormatError(f"{p}: directory in no known layout (it holds {', '.join(seen) or 'nothing'}); expected "
                          f"{layouts} (see fgl_jax.data.files)")


def path_kind(path: PathLike, data_dir: Optional[PathLike] = None) -> str:
    """"graph", "hypergraph" or "hetero": what `load_path` returns for this path (nothing is parsed)."""
    return registry.entry("format", detect_format(resolve_path(path, data_dir))[0]).info["data"]


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
    entry = registry.entry("format", fmt)
    loader = entry.obj
    if entry.info["data"] == "graph" or "options" in inspect.signature(loader).parameters:
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
    (sorted relative paths and their sha256), so a replay can tell whether the data changed.

    Args:
        path: a file or a directory (``~`` expanded).

    Returns:
        The hex sha256 digest.

    Raises:
        DataPathNotFoundError: the path does not exist.
    """
    p = Path(path).expanduser()
    if p.is_file():
        return sha256_file(p)
    if not p.is_dir():
        raise DataPathNotFoundError(path, [p])
    h = hashlib.sha256()
    for f in sorted(q for q in p.rglob("*") if q.is_file()):
        h.update(f"{f.relative_to(p).as_posix()}\0{sha256_file(f)}\n".encode())
    return h.hexdigest()
