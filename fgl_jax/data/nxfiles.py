"""Graph files networkx reads: GraphML (``.graphml``), GML (``.gml``) and edge lists
(``.edgelist`` / ``.edges``: one ``u v`` pair per line, extra columns ignored, ``#`` comments).

Node features come from the node attribute ``x`` when nodes have it (a number, or a vector written
as ``"0.1 0.2 ..."`` / ``"[0.1, 0.2, ...]"``), else from every other numeric node attribute (one
column each, in sorted attribute order), else one-hot node ids (with a notice). Labels come from the
node attribute ``y``: class ids, or class names (numbered in sorted name order, kept in
``graph.meta["class_names"]``); ``train_mask`` / ``val_mask`` / ``test_mask`` attributes are the
split when present. ``graph.meta["nodes"]`` keeps the file's node ids in graph order, so a notice
can be traced back to them. Everything then goes through `fgl_jax.data.convert.from_networkx`.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Optional

import numpy as np

from ..graph import Graph
from .checks import notify
from .convert import MASKS, from_networkx
from .files import register_format
from .paths import DataFormatError, PathLike

__all__ = ["load_graphml", "load_gml", "load_edgelist"]

_RESERVED = {"y", *MASKS}
_VECTOR = re.compile(r"^\s*\[?\s*([-+0-9.eE]+(\s*[, ]\s*[-+0-9.eE]+)*)\s*\]?\s*$")


def _vector(value: Any, path: Path, node: Any) -> np.ndarray:
    if isinstance(value, (int, float, np.number)) and not isinstance(value, bool):
        return np.asarray([float(value)])
    if isinstance(value, str) and _VECTOR.match(value):
        return np.asarray([float(t) for t in re.split(r"[,\s]+", value.strip(" []")) if t])
    raise DataFormatError(f"{path}: node {node!r}: attribute x = {str(value)[:40]!r} is not a number or a "
                          "vector of numbers")


def _features(G: Any, path: Path) -> Any:
    nodes = list(G.nodes)
    if nodes and all("x" in G.nodes[v] for v in nodes):
        rows = [_vector(G.nodes[v]["x"], path, v) for v in nodes]
        widths = {len(r) for r in rows}
        if len(widths) != 1:
            i = next(i for i, r in enumerate(rows) if len(r) != len(rows[0]))
            raise DataFormatError(f"{path}: node {nodes[i]!r} has {len(rows[i])} features in attribute x, node "
                                  f"{nodes[0]!r} has {len(rows[0])}")
        return np.stack(rows).astype(np.float32)
    names = sorted({k for v in nodes for k, val in G.nodes[v].items()
                    if k not in _RESERVED and isinstance(val, (int, float)) and not isinstance(val, bool)})
    numeric = [k for k in names if all(isinstance(G.nodes[v].get(k), (int, float)) for v in nodes)]
    if numeric:
        return np.asarray([[float(G.nodes[v][k]) for k in numeric] for v in nodes], np.float32)
    notify(f"{path}: no numeric node attributes: one-hot node ids as features", stacklevel=3)
    return "identity"


def _labels(G: Any) -> Optional[list]:
    nodes = list(G.nodes)
    if not any("y" in G.nodes[v] for v in nodes):
        return None
    return [G.nodes[v].get("y", "") for v in nodes]


def _graph(G: Any, path: Path, name: Optional[str], options: dict) -> Graph:
    if G.number_of_nodes() == 0:
        raise DataFormatError(f"{path}: the file holds no nodes")
    options.setdefault("source", str(path))
    meta = dict(options.pop("meta", None) or {})
    meta.update(path=str(path), format=path.suffix.lstrip("."))
    y = _labels(G)
    return from_networkx(G, x=_features(G, path), y=np.asarray(y, dtype=object) if y is not None else None,
                         name=name or path.stem, meta=meta, **options)


def _read(reader, path: Path, what: str) -> Any:
    try:
        return reader(path)
    except (OSError, UnicodeDecodeError) as e:
        raise DataFormatError(f"{path}: cannot read the file ({type(e).__name__}: {e})") from None
    except Exception as e:  # networkx raises its own, ElementTree's and ValueError for malformed files
        raise DataFormatError(f"{path}: not a valid {what} file ({type(e).__name__}: {str(e)[:120]})") from None


@register_format("graphml", kind="graph", layout="one .graphml file (GraphML, as networkx writes it)",
                 suffixes=(".graphml",))
def load_graphml(path: PathLike, name: Optional[str] = None, **options: Any) -> Graph:
    """A Graph from a GraphML file (see the module docstring for attributes).

    Args:
      path: the ``.graphml`` file.
      name: the graph's name (default: the file name without suffix).
      **options: passed to `fgl_jax.data.checks.build_graph` (on_directed, split, ...).

    Returns:
      The checked, undirected `Graph`.
    """
    import networkx as nx
    path = Path(path)
    return _graph(_read(nx.read_graphml, path, "GraphML"), path, name, options)


@register_format("gml", kind="graph", layout="one .gml file (GML; node labels are the node ids)", suffixes=(".gml",))
def load_gml(path: PathLike, name: Optional[str] = None, **options: Any) -> Graph:
    """A Graph from a GML file; each node's ``label`` is its id (networkx's reading).

    Args:
      path: the ``.gml`` file.
      name: the graph's name (default: the file name without suffix).
      **options: passed to `fgl_jax.data.checks.build_graph`.

    Returns:
      The checked, undirected `Graph`.
    """
    import networkx as nx
    path = Path(path)
    return _graph(_read(nx.read_gml, path, "GML"), path, name, options)


@register_format("edgelist", kind="graph", layout="one .edgelist / .edges file (u v per line)",
                 suffixes=(".edgelist", ".edges"))
def load_edgelist(path: PathLike, name: Optional[str] = None, **options: Any) -> Graph:
    """A Graph from an edge list: one ``u v`` pair per line (node ids as written), no features
    (one-hot node ids) and no labels.

    Args:
      path: the edge-list file.
      name: the graph's name (default: the file name without suffix).
      **options: passed to `fgl_jax.data.checks.build_graph`.

    Returns:
      The checked, undirected `Graph` (unlabelled: give labels through another layout to train).
    """
    import networkx as nx
    path = Path(path)
    return _graph(_read(lambda p: nx.read_edgelist(p, nodetype=str, data=False), path, "edge-list"),
                  path, name, options)
