"""Dataset names -> loaders, and where their files are.

    load("cora", data_dir="...")        # any registered name, case-insensitive ('-' == '_')
    load("path/to/graph.npz")            # or a user's file / directory (fgl_jax.data.files)
    source("path/or/name")               # what it names, before loading: kind, path, built-in or not
    data_kind("path/or/name")            # "graph" | "hypergraph" | "hetero", before loading
    list_datasets()                      # every dataset of every kind, and whether its files are found
    register("mydata", loader, files=("mydata/a.csv",), description="...")

Names live in the one registry (`fgl_jax.registry`, kind "dataset"), with the data kind each
loader returns: graph (node classification), hypergraph (FedHGL) or hetero (FedHGN); file
formats in the same registry (kind "format", `fgl_jax.data.files.register_format`). Whether a
dataset argument is a name or a path is decided here only, by `source`: every command and loader
that takes one goes through it (or through `load`, which does).

A loader is called as ``loader(data_dir=data_dir, **kwargs)`` and finds its own files (through
`fgl_jax.data.paths.find_dataset_dir`); `files` (paths relative to a data directory) is only
used by `list_datasets` to report presence without loading anything.
"""
from __future__ import annotations

import dataclasses
import difflib
import hashlib
import inspect
import os
from pathlib import Path
from typing import Any, Callable, Mapping, Optional

from .. import registry
from ..graph import Graph
from .files import detect_format, is_path, load_path, object_format, resolve_path
from .musae import (FACEBOOK_FILES, FACEBOOK_SHA256, FACEBOOK_URLS, LASTFM_ASIA_FILES, LASTFM_ASIA_SHA256,
                    LASTFM_ASIA_URLS, load_facebook, load_lastfm_asia)
from .paths import PathLike, candidate_dirs, check_data_dir, find_dataset_dir, missing_files, sha256_file
from .planetoid import PLANETOID_SHA256, load_planetoid, planetoid_files, planetoid_urls
from .synthetic import block_csbm, csbm


class UnknownDatasetError(KeyError, ValueError):
    """No dataset is registered under the requested name (lists the known names)."""

    def __init__(self, name: str, known: list[str]):
        self.name, self.known = name, known
        close = difflib.get_close_matches(_key(name), known, n=1, cutoff=0.6)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        self.message = f"unknown dataset {name!r}.{hint} Known datasets: {', '.join(known)}."
        super().__init__(self.message)

    def __str__(self) -> str:  # KeyError would print the repr of the message
        return self.message


@dataclasses.dataclass(frozen=True)
class DatasetInfo:
    name: str
    loader: Callable[..., Any]
    files: tuple[str, ...]
    description: str
    kind: str = "graph"  # graph | hypergraph | hetero | graphs (a GraphSet): what the loader returns
    sha256: Mapping[str, str] = dataclasses.field(default_factory=dict)  # relative path -> published sha256
    urls: Mapping[str, str] = dataclasses.field(default_factory=dict)  # relative path -> public URL


DATA_KINDS = ("graph", "hypergraph", "hetero", "graphs")


def _key(name: str) -> str:
    return registry.key(name)


def register(name: str, loader: Callable[..., Any], files: tuple[str, ...] = (), description: str = "",
             *, overwrite: bool = False, kind: str = "graph", sha256: Optional[Mapping[str, str]] = None,
             urls: Optional[Mapping[str, str]] = None) -> None:
    """Make `load(name)` call `loader(data_dir=..., **kwargs)` (stored in `fgl_jax.registry`, kind "dataset").

    Args:
      name: dataset name (stored lower-case, '-' read as '_').
      loader: callable accepting a `data_dir` keyword (None = default search) and options.
      files: the files the loader needs, relative to a data directory (empty for generators).
      description: one line for `list_datasets` and the CLI.
      overwrite: replace an existing registration instead of raising ValueError.
      kind: what the loader returns: "graph" (a Graph), "hypergraph" (a Hypergraph, FedHGL) or
        "hetero" (a HeteroGraph, FedHGN).
      sha256: relative path -> the published file's sha256 (the digests the loader checks);
        `fgl_jax.data.download` refuses a downloaded file that differs.
      urls: relative path -> the public URL of that file (`fgl-jax datasets` names it, and
        `fgl-jax datasets --download NAME` fetches it); every file of `files` needs one.

    Returns:
      None; the dataset is registered.

    Raises:
      ValueError: a loader that is not callable, files that are not a tuple of relative paths, an
        unknown kind, an invalid name, or a name already registered (without `overwrite`).
    """
    if not callable(loader):
        raise ValueError(f"register({name!r}): loader must be callable, got {type(loader).__name__}")
    if isinstance(files, str) or not all(isinstance(f, str) and f for f in files):
        raise ValueError(f"register({name!r}): files must be a tuple of relative paths, got {files!r}")
    if kind not in DATA_KINDS:
        raise ValueError(f"register({name!r}): kind must be one of {DATA_KINDS}, got {kind!r}")
    urls, sha256 = dict(urls or {}), {k: str(v).lower() for k, v in (sha256 or {}).items()}
    if urls and set(urls) != set(files):
        raise ValueError(f"register({name!r}): urls must name every file and no other; missing "
                         f"{sorted(set(files) - set(urls))}, extra {sorted(set(urls) - set(files))}")
    if set(sha256) - set(files):
        raise ValueError(f"register({name!r}): sha256 names files that are not in files: {sorted(set(sha256) - set(files))}")
    registry.add("dataset", name, loader, overwrite=overwrite, files=tuple(files), help=str(description),
                 data=kind, sha256=sha256, urls=urls)


def dataset_names(kind: Optional[str] = None) -> list[str]:
    """Registered names, sorted (only those of one data kind when `kind` is given)."""
    return [e.name for e in registry.entries("dataset") if kind is None or e.info.get("data") == kind]


def get_info(name: str) -> DatasetInfo:
    if not registry.has("dataset", name):
        raise UnknownDatasetError(name, dataset_names())
    e = registry.entry("dataset", name)
    return DatasetInfo(e.name, e.obj, e.info.get("files", ()), e.help, e.info.get("data", "graph"),
                       e.info.get("sha256", {}), e.info.get("urls", {}))


@dataclasses.dataclass(frozen=True)
class Source:
    """What a dataset argument names, decided once (`source`): a registered dataset, a path, or a
    graph object of another library.

    name: the registered name, or the path as the user gave it; kind: "graph", "hypergraph" or
    "hetero"; entry: the registry entry whose object loads it (a dataset's loader, or the format's
    loader for a path); path: the existing file or directory (None for a name), target: what the
    format's loader reads (the directory of an edges.csv); builtin: registered by fgl_jax itself;
    obj: a graph object of another library (networkx, PyG, ...), read by a format's converter.
    """
    name: str
    kind: str
    entry: registry.Entry
    path: Optional[Path] = None
    target: Optional[Path] = None
    builtin: bool = False
    obj: Any = dataclasses.field(default=None, repr=False)

    @property
    def label(self) -> str:
        """The name as messages show it ('cora', or the path as given)."""
        return repr(self.name)

    def view(self, kind: str) -> Optional[Callable[..., Any]]:
        """The loader of this dataset's registered `kind` view (`add_view`: FedHGL's hypergraphs
        of Cora, CiteSeer and Facebook), or None."""
        return self.entry.info.get("views", {}).get(kind) if self.entry.kind == "dataset" else None


def source(name_or_path: PathLike, data_dir: Optional[PathLike] = None) -> Source:
    """What `name_or_path` names: the one place "name or path?" is decided.

    A path (`fgl_jax.data.files.is_path`: a separator, a registered format's suffix, or an
    existing file / directory that is no registered name) is resolved (working directory, then
    `data_dir`) and its format detected from its names (nothing is parsed); anything else is a
    registered name. A graph object of another library (not a string or path) goes to the format
    whose `sniff` takes it (`fgl_jax.data.convert`). Raises DataPathNotFoundError, DataFormatError
    or UnknownDatasetError in one line.
    """
    if not isinstance(name_or_path, (str, os.PathLike)):
        e = object_format(name_or_path)
        return Source(f"<{type(name_or_path).__name__}>", e.info["data"], e, obj=name_or_path)
    if is_path(name_or_path):
        path = resolve_path(name_or_path, data_dir)
        fmt, target = detect_format(path)
        e = registry.entry("format", fmt)
        return Source(str(name_or_path), e.info["data"], e, path, target)
    info = get_info(str(name_or_path))
    e = registry.entry("dataset", info.name)
    obj = getattr(e.obj, "func", e.obj)  # a functools.partial of a built-in loader is built in too
    return Source(info.name, info.kind, e, builtin=str(getattr(obj, "__module__", "")).startswith("fgl_jax."))


def add_view(name: str, kind: str, loader: Callable[..., Any]) -> None:
    """Register `loader(data_dir=..., **options)` as the `kind` view of the registered dataset
    `name` (e.g. FedHGL's paper hypergraph of the Cora graph): `fgl_jax.data.hypergraph.load_hypergraph`
    uses it instead of the generic conversion."""
    if kind not in DATA_KINDS:
        raise ValueError(f"add_view({name!r}): kind must be one of {DATA_KINDS}, got {kind!r}")
    e = registry.entry("dataset", name)
    views = {**e.info.get("views", {}), kind: loader}
    registry.add("dataset", e.name, e.obj, overwrite=True, **{**e.info, "views": views})


def data_kind(name_or_path: PathLike, data_dir: Optional[PathLike] = None) -> str:
    """"graph", "hypergraph" or "hetero": what `load` returns for a registered name or a path
    (a path's format is detected from its name and contents; nothing is parsed).

    Args:
        name_or_path: a registered dataset name, a path, or a graph object of another library.
        data_dir: the data directory to look in first (None: $FGL_JAX_DATA, then the cache dir).

    Returns:
        "graph", "hypergraph" or "hetero".

    Raises:
        UnknownDatasetError: an unregistered name that is no path.
        DataPathNotFoundError: a path that does not exist.
        DataFormatError: a path in no registered format.
    """
    return source(name_or_path, data_dir).kind


def load(name: PathLike, data_dir: Optional[PathLike] = None, **kwargs: Any) -> Any:
    """Load a registered dataset by name (case-insensitive), or a file / directory by path.

    `source` decides which; a path is loaded by its registered format (`fgl_jax.data.files`)
    and checked (`fgl_jax.data.checks`). Options go to the loader.

    Args:
        name: a registered dataset name, a path (file or directory), or a graph object of another
            library (networkx, PyG, DGL, jraph, scipy).
        data_dir: the data directory to look in first (None: $FGL_JAX_DATA, then the cache dir).
        **kwargs: the loader's options (e.g. ``verify=False``, ``num_classes=7``).

    Returns:
        A `Graph`, `Hypergraph` or `HeteroGraph`, as `data_kind` says.

    Raises:
        UnknownDatasetError: an unregistered name that is no path.
        DataPathNotFoundError: a path that does not exist.
        DataDirNotFoundError: `data_dir` is given and does not exist.
        ValueError: an option the loader does not accept (listing the options it does accept).
    """
    src = source(name, data_dir)
    if src.path is not None:
        return load_path(name, data_dir, **kwargs)  # as given: its messages name the user's path
    if src.entry.kind == "format":  # a graph object of another library: its converter
        try:
            inspect.signature(src.entry.obj).bind(src.obj, **kwargs)
        except TypeError as e:
            params = list(inspect.signature(src.entry.obj).parameters)[1:]
            raise ValueError(f"{src.entry.name} graph: {e}. Accepted options: {', '.join(params)}") from None
        return src.entry.obj(src.obj, **kwargs)
    check_data_dir(data_dir)  # also for a generated dataset: a mistyped --data-dir is never ignored
    loader = src.entry.obj
    try:
        inspect.signature(loader).bind(data_dir=data_dir, **kwargs)
    except TypeError as e:
        params = [p for p in inspect.signature(loader).parameters if p != "data_dir"]
        raise ValueError(f"dataset {src.name!r}: {e}. Accepted options: {', '.join(params) or 'none'}") from None
    return loader(data_dir=data_dir, **kwargs)


_WHO = {"hypergraph": "FedHGL (`fgl-jax fedhgl`)", "hetero": "FedHGN (`fgl-jax fedhgn`)",
        "graphs": "graph-level FL (`fgl-jax run --task graph_cls`)"}


def load_graph(name: PathLike, data_dir: Optional[PathLike] = None, **kwargs: Any) -> Graph:
    """`load` for systems that need a plain graph: a hypergraph or heterogeneous name or path is
    refused with a message saying which system takes it.

    Args:
        name: a registered dataset name, a path, or a graph object of another library.
        data_dir: the data directory to look in first (None: $FGL_JAX_DATA, then the cache dir).
        **kwargs: the loader's options.

    Returns:
        The `Graph`.

    Raises:
        ValueError: the dataset is a hypergraph or heterogeneous, or an option the loader does not take.
        UnknownDatasetError: an unregistered name that is no path.
        DataPathNotFoundError: a path that does not exist.
    """
    src = source(name, data_dir)
    if src.kind != "graph":
        raise ValueError(f"dataset {src.label} is a {src.kind} dataset, not a graph: {_WHO[src.kind]} takes it")
    return load(name, data_dir, **kwargs)


def registered_sha256(name: str, data_dir: Optional[PathLike] = None) -> str:
    """sha256 of a registered dataset's files, digested as `fgl_jax.data.files.path_sha256` digests a
    directory (sorted relative paths and each file's sha256), found as its loader finds them.

    Raises ValueError for a generated dataset (it has no files to digest)."""
    info = get_info(name)
    if not info.files:
        raise ValueError(f"dataset {info.name!r} is generated (it has no files), so dataset_sha256 has nothing to "
                         "check; leave dataset_sha256 out")
    folder = find_dataset_dir(info.name, info.files, data_dir)
    h = hashlib.sha256()
    for rel in sorted(info.files):
        h.update(f"{rel}\0{sha256_file(folder / rel)}\n".encode())
    return h.hexdigest()


def check_registered_sha256(name: str, expected: str, data_dir: Optional[PathLike] = None) -> None:
    """A `dataset_sha256` given with a registered name is honoured: the dataset's files must digest to
    it (`registered_sha256`), else ValueError in one line with the digest found."""
    actual = registered_sha256(name, data_dir)
    if str(expected).strip().lower() != actual:
        raise ValueError(f"dataset_sha256 {expected!r} does not match the files of dataset {get_info(name).name!r} "
                         f"(sha256 {actual}); pass that digest, or leave dataset_sha256 out")


def source_of(info: DatasetInfo) -> str:
    """Where a dataset's files are published, in one short line: the common URL prefix of its
    files' URLs and "*" ("https://raw.githubusercontent.com/owner/repo/<commit>/data/ind.cora.*"), the URLs
    joined by ", " when they share no repository commit, "generated" for a generator, "" when unknown."""
    if not info.files:
        return "generated"
    urls = sorted(info.urls.values())
    if not urls:
        return ""
    if len(urls) == 1:
        return urls[0]
    prefix = os.path.commonprefix(urls)
    # below a repository's commit (https://host/owner/repo/commit/...) a prefix names the files; above it, no
    return prefix + "*" if prefix.count("/") >= 6 else ", ".join(urls)


def list_datasets(data_dir: Optional[PathLike] = None) -> list[dict[str, Any]]:
    """One dict per registered dataset of every kind: name, kind, description, found, missing, where.

    Only presence is checked (no parsing or hashing). `where` is the data directory holding
    every file, "built-in" for generators, or the list of directories searched when not found;
    `missing` lists the absent files relative to the directory that has the most of them.

    Args:
        data_dir: the data directory to look in first (None: $FGL_JAX_DATA, then the cache dir).

    Returns:
        One dict per dataset, in name order: "name", "kind", "description", "found" (bool),
        "missing" (list of str), "where" (str) and "source" (`source_of`: where the files are published).

    Raises:
        DataDirNotFoundError: `data_dir` is given and does not exist.
    """
    check_data_dir(data_dir)
    dirs = candidate_dirs(data_dir)
    out = []
    for key in dataset_names():
        info = get_info(key)
        row = {"name": key, "kind": info.kind, "description": info.description, "source": source_of(info)}
        if not info.files:
            row.update(found=True, missing=[], where="built-in (generated, no files)")
        else:
            best: Optional[list[str]] = None
            for folder, _origin in dirs:
                miss = missing_files(folder, info.files)
                if not miss:
                    row.update(found=True, missing=[], where=str(folder))
                    break
                if best is None or len(miss) < len(best):
                    best = miss
            else:
                row.update(found=False, missing=best or list(info.files),
                           where="not found; looked in " + ", ".join(f"{p} ({o})" for p, o in dirs))
        out.append(row)
    return out


# ---- built-in datasets --------------------------------------------------------------------------

def _cora(data_dir: Optional[PathLike] = None, verify: bool = True, keep_self_loops: bool = False) -> Graph:
    return load_planetoid("cora", data_dir, verify=verify, keep_self_loops=keep_self_loops)


def _citeseer(data_dir: Optional[PathLike] = None, verify: bool = True, keep_self_loops: bool = False) -> Graph:
    return load_planetoid("citeseer", data_dir, verify=verify, keep_self_loops=keep_self_loops)


def _csbm(data_dir: Optional[PathLike] = None, **kwargs: Any) -> Graph:
    del data_dir  # generated; no files
    return csbm(**kwargs)


_csbm.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
    [inspect.Parameter("data_dir", inspect.Parameter.KEYWORD_ONLY, default=None)]
    + [p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in inspect.signature(csbm).parameters.values()])

def _planetoid_sha256(name: str) -> dict[str, str]:
    return {r: PLANETOID_SHA256[r] for r in planetoid_files(name) if r in PLANETOID_SHA256}


register("cora", _cora, planetoid_files("cora"),
         "Cora citation graph (Planetoid files): 2,708 nodes, 5,278 edges, 1,433 bag-of-words features, 7 classes",
         sha256=_planetoid_sha256("cora"), urls=planetoid_urls("cora"))
def _pubmed(data_dir: Optional[PathLike] = None, verify: bool = True, keep_self_loops: bool = False) -> Graph:
    return load_planetoid("pubmed", data_dir, verify, keep_self_loops)


register("pubmed", _pubmed, planetoid_files("pubmed"),
         "PubMed (Planetoid files): not in the offline data; `fgl-jax datasets --download pubmed` fetches the eight "
         "ind.pubmed.* files (no published sha256 is known for them: they are saved and parsed unverified)",
         urls=planetoid_urls("pubmed"))
register("citeseer", _citeseer, planetoid_files("citeseer"),
         "CiteSeer citation graph (Planetoid files): 3,327 nodes, 4,552 edges, 3,703 features, 6 classes",
         sha256=_planetoid_sha256("citeseer"), urls=planetoid_urls("citeseer"))
register("facebook", load_facebook, FACEBOOK_FILES,
         "Facebook Page-Page (MUSAE): 22,470 nodes, 171,002 edges, 4,714 sparse features, 4 classes; no split",
         sha256=FACEBOOK_SHA256, urls=FACEBOOK_URLS)
register("lastfm_asia", load_lastfm_asia, LASTFM_ASIA_FILES,
         "LastFM Asia (structure + labels only): 7,624 nodes, 27,806 edges, 18 classes; degree features; no split",
         sha256=LASTFM_ASIA_SHA256, urls=LASTFM_ASIA_URLS)
# ogbn-products' size (OGB's table): 2,449,029 nodes, 61,859,140 undirected edges, 100 features, 47 classes
PRODUCTS_NODES, PRODUCTS_EDGES = 2_449_029, 61_859_140


def _block_csbm(data_dir: Optional[PathLike] = None, **kwargs: Any) -> Graph:
    del data_dir  # generated; no files
    return block_csbm(**kwargs)


def _csbm_products(data_dir: Optional[PathLike] = None, seed: int = 0) -> Graph:
    del data_dir  # generated; no files
    return block_csbm(num_nodes=PRODUCTS_NODES, num_blocks=PRODUCTS_NODES // 1000, num_classes=47, num_features=100,
                      avg_degree=2 * PRODUCTS_EDGES / PRODUCTS_NODES, seed=seed, name="csbm_products")


_block_csbm.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
    [inspect.Parameter("data_dir", inspect.Parameter.KEYWORD_ONLY, default=None)]
    + [p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in inspect.signature(block_csbm).parameters.values()])

register("block_csbm", _block_csbm, (),
         "Community CSBM (synthetic): 200,000 nodes in 200 blocks, mean degree 50.5, 100 features, 47 classes; "
         "60/20/20 split")
register("csbm_products", _csbm_products, (),
         "Community CSBM of ogbn-products' size (synthetic): 2,449,029 nodes, ~61.9 M edges, 100 features, "
         "47 classes; 60/20/20 split; about 1-3 min to generate")
register("csbm", _csbm, (),
         "Contextual stochastic block model (synthetic, tunable homophily); 60/20/20 split; the default")
