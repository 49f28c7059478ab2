"""Graphs from other libraries and plain arrays -> a checked `fgl_jax.graph.Graph`.

Each converter reads the structure and the features (the only required parts) and, when
present, labels and train/val/test masks, then calls `fgl_jax.data.checks.build_graph`, so every
converted graph is undirected, without self-loops or duplicate edges, with checked labels and
masks, and with the default stratified 60/20/20 split (seed 0) when it has none. Options of
`build_graph` (``num_classes``, ``name``, ``on_directed``, ``keep_self_loops``, ``split``,
``split_seed``, and masks where the source has none) are accepted by every converter.

    from_edge_index(edge_index, x, y)          # NumPy [2, E] (PyG convention: row 0 sources)
    from_scipy(adj, x, y)                      # scipy sparse or dense adjacency [N, N]
    from_networkx(G, x="feat", y="label")      # node attributes, or arrays in G.nodes order
    from_jraph(graphs_tuple)                   # nodes = x, or a dict with "x" (and "y")
    from_pyg(data)                             # torch_geometric.data.Data
    from_dgl(g)                                # dgl.DGLGraph (homogeneous), ndata feat/label/*_mask

PyTorch Geometric and DGL are not dependencies of fgl_jax: `from_pyg` and `from_dgl` read their
objects through attributes only (tensors become NumPy via ``.detach().cpu().numpy()``), and
say which package they expect when given something else.

Shapes: N nodes, E edges, F features.
"""
from __future__ import annotations

from typing import Any, Optional, Sequence, Union

import numpy as np
import scipy.sparse as sp

from ..graph import Graph
from .checks import build_graph, check_edge_weights
from .files import register_format
from .paths import DataFormatError

__all__ = ["from_edge_index", "from_scipy", "from_networkx", "from_jraph", "from_pyg", "from_dgl"]

MASKS = ("train_mask", "val_mask", "test_mask")


def _of_library(library: str, type_name: Optional[str] = None):
    """A `sniff` for `register_format`: the object's class comes from `library` (without importing it)."""
    def sniff(obj: Any) -> bool:
        cls = type(obj)
        return str(cls.__module__).split(".")[0] == library and (type_name is None or cls.__name__ == type_name)
    return sniff


def _numpy(value: Any) -> Any:
    """A torch tensor (dense or sparse), a scipy matrix or an array-like -> NumPy / scipy CSR."""
    if value is None or sp.issparse(value):
        return value
    if hasattr(value, "detach"):  # torch.Tensor, without importing torch
        t = value.detach().cpu()
        if getattr(t, "is_sparse", False) or str(getattr(t, "layout", "")).endswith("sparse_csr"):
            t = t.to_dense()
        return t.numpy()
    return np.asarray(value)


def _source(options: dict, converter: str) -> None:
    """Problems are prefixed with the user's name for the graph, else the converter's name."""
    options.setdefault("source", options.get("name") or converter)


def from_edge_index(edge_index: Any, x: Any, y: Optional[Any] = None, **options: Any) -> Graph:
    """A Graph from an edge index [2, E] and features [N, F] (labels [N] and masks optional).

    Args:
        edge_index: int `[2, E]` (numpy, jax or torch), row 0 the sources, row 1 the targets.
        x: features `[N, F]`, dense or scipy sparse.
        y: int labels `[N]` (-1: unlabelled), or None.
        **options: passed to `build_graph` (num_classes, masks, name, on_directed, split, ...).

    Returns:
        The checked, undirected `Graph`.

    Raises:
        DataFormatError: `edge_index` is not `[2, E]`, or `build_graph` refuses the arrays.

    Example:
      >>> ei = np.array([[0, 1, 2], [1, 2, 0]])
      >>> g = from_edge_index(ei, np.eye(3), y=np.array([0, 1, 1]))
      >>> g.num_nodes, g.num_edges           # the triangle, both directions
      (3, 6)
    """
    ei = _numpy(edge_index)
    if ei.ndim != 2 or ei.shape[0] != 2:
        raise DataFormatError(f"from_edge_index: edge_index has shape {ei.shape}, expected (2, E)")
    _source(options, "from_edge_index")
    return build_graph(ei[0], ei[1], _numpy(x), _numpy(y), **options)


@register_format("scipy", kind="graph", layout="a scipy sparse adjacency, with x= (and y=)", sniff=sp.issparse)
def from_scipy(adj: Any, x: Any, y: Optional[Any] = None, **options: Any) -> Graph:
    """A Graph from an adjacency matrix [N, N] (scipy sparse or dense; entry (u, v) != 0 is an
    edge u -> v, weights ignored; NaN/inf refused, negative ones counted in a notice) and features [N, F].

    Args:
        adj: the adjacency `[N, N]`, scipy sparse or dense.
        x: features `[N, F]`.
        y: int labels `[N]`, or None.
        **options: passed to `build_graph` (num_classes, masks, name, on_directed, split, ...).

    Returns:
        The checked, undirected `Graph`; negative weights are noted in ``meta["notices"]``.

    Raises:
        DataFormatError: a non-square adjacency, NaN/inf weights, x with another row count, or what
            `build_graph` refuses.

    Example:
      >>> adj = sp.csr_matrix(np.array([[0, 1, 0], [1, 0, 1], [0, 1, 0]]))
      >>> g = from_scipy(adj, np.eye(3), np.array([0, 1, 0]))
      >>> g.num_edges
      4
    """
    a = sp.coo_matrix(adj)
    if a.shape[0] != a.shape[1]:
        raise DataFormatError(f"from_scipy: adjacency has shape {a.shape}, expected square [N, N]")
    nz = a.data != 0
    _source(options, "from_scipy")
    notes: list[str] = []  # NaN/inf refused (NaN != 0 would be an edge), negative weights counted
    check_edge_weights(a.data[nz], options["source"], "adjacency", notes, (a.row[nz], a.col[nz]))
    x = _numpy(x)
    if x is not None and x.shape[0] != a.shape[0]:
        raise DataFormatError(f"from_scipy: x has {x.shape[0]} rows but the adjacency has {a.shape[0]} nodes")
    g = build_graph(a.row[nz], a.col[nz], x, _numpy(y), **options)
    g.meta["notices"][:0] = notes
    return g


def _node_attr(G: Any, nodes: list, attr: str, what: str) -> Optional[np.ndarray]:
    have = [attr in G.nodes[v] for v in nodes]
    if not any(have):
        return None
    if not all(have):
        miss = nodes[have.index(False)]
        raise DataFormatError(f"from_networkx: node {miss!r} has no attribute {attr!r} ({what}); "
                              f"{have.count(False)} of {len(nodes)} nodes lack it")
    return np.asarray([np.asarray(G.nodes[v][attr]) for v in nodes])


@register_format("networkx", kind="graph", layout="a networkx graph", sniff=_of_library("networkx"))
def from_networkx(G: Any, x: Union[str, Any, None] = "x", y: Union[str, Any, None] = "y",
                  masks: Sequence[str] = MASKS, **options: Any) -> Graph:
    """A Graph from a networkx graph; node i of the Graph is the i-th node of ``list(G.nodes)``.

    Args:
      G: nx.Graph / DiGraph / MultiGraph (a DiGraph is symmetrised with a notice, parallel
        edges are merged with a notice).
      x: a node-attribute name (each node's value: a number or a vector), an array [N, F] in
        G.nodes order, or "identity" (one-hot node ids as sparse features).
      y: a node-attribute name, an array [N], or None (unlabelled); a missing "y" attribute
        means unlabelled.
      masks: node-attribute names of boolean train/val/test flags, used when present.
      **options: passed to `build_graph` (num_classes, name, on_directed, split, ...).

    ``graph.meta["nodes"]`` keeps the networkx node keys in Graph order.

    Returns:
      The checked, undirected `Graph`.

    Raises:
      DataFormatError: no node has the feature attribute `x`, or some node lacks an attribute others have.
      TypeError: `G` is not a networkx graph.

    Example:
      >>> import networkx as nx
      >>> G = nx.karate_club_graph()
      >>> g = from_networkx(G, x="identity", y=[int(G.nodes[v]["club"] == "Officer") for v in G])
      >>> g.num_nodes, g.num_edges
      (34, 156)
    """
    try:
        import networkx  # noqa: F401  (a dependency of fgl_jax; checked for a clear message)
    except ImportError as e:  # pragma: no cover
        raise ImportError("from_networkx needs the package 'networkx' (pip install networkx)") from e
    if not hasattr(G, "nodes") or not hasattr(G, "edges"):
        raise TypeError(f"from_networkx expects a networkx graph, got {type(G).__name__}")
    nodes = list(G.nodes)
    index = {v: i for i, v in enumerate(nodes)}
    n = len(nodes)
    e = list(G.edges())
    s = np.fromiter((index[u] for u, _ in e), np.int64, len(e))
    r = np.fromiter((index[v] for _, v in e), np.int64, len(e))
    if not G.is_directed():  # networkx lists each undirected edge once
        s, r = np.concatenate([s, r]), np.concatenate([r, s])
    if isinstance(x, str) and x == "identity":
        feats: Any = sp.identity(n, np.float32, format="csr")
    elif isinstance(x, str):
        feats = _node_attr(G, nodes, x, "features")
        if feats is None:
            raise DataFormatError(f"from_networkx: no node has the feature attribute {x!r}; pass x=<attribute "
                                  "name>, x=<array [N, F] in G.nodes order> or x='identity'")
    else:
        feats = _numpy(x)
    labels = _node_attr(G, nodes, y, "labels") if isinstance(y, str) else _numpy(y)
    for m in masks:
        if m not in options:
            val = _node_attr(G, nodes, m, "mask")
            if val is not None:
                options[m] = val.astype(bool)
    _source(options, "from_networkx")
    meta = dict(options.pop("meta", None) or {})
    meta["nodes"] = nodes
    return build_graph(s, r, feats, labels, meta=meta, **options)


@register_format("jraph", kind="graph", layout="a jraph GraphsTuple", sniff=_of_library("jraph", "GraphsTuple"))
def from_jraph(graphs: Any, x: Optional[Any] = None, y: Optional[Any] = None, **options: Any) -> Graph:
    """A Graph from a `jraph.GraphsTuple`: senders/receivers, and x from ``nodes`` (an array, or a
    dict with "x" and optionally "y" / masks) unless given. Several graphs in one tuple become one
    disjoint graph (jraph's ids are already global).

    Args:
        graphs: a `jraph.GraphsTuple` with senders/receivers `[E]` and n_node summing to N.
        x: features `[N, F]`; None: taken from ``graphs.nodes``.
        y: int labels `[N]`; None: from ``graphs.nodes["y"]`` (or "label") when nodes is a dict.
        **options: passed to `build_graph` (num_classes, masks, name, on_directed, split, ...).

    Returns:
        The checked, undirected `Graph`.

    Raises:
        TypeError: `graphs` is not a GraphsTuple.
        DataFormatError: no features, or x's row count is not the sum of n_node.

    Example:
      >>> gt = jraph.GraphsTuple(nodes=np.eye(3), edges=None, senders=np.array([0, 1]),
      ...                        receivers=np.array([1, 2]), n_node=np.array([3]), n_edge=np.array([2]),
      ...                        globals=None)
      >>> from_jraph(gt, y=np.array([0, 1, 1])).num_edges
      4
    """
    if not hasattr(graphs, "senders") or not hasattr(graphs, "n_node"):
        raise TypeError(f"from_jraph expects a jraph.GraphsTuple, got {type(graphs).__name__}")
    nodes = graphs.nodes
    if isinstance(nodes, dict):
        if x is None:
            x = nodes.get("x", nodes.get("features"))
        if y is None:
            y = nodes.get("y", nodes.get("label"))
        for m in MASKS:
            if m in nodes:
                options.setdefault(m, np.asarray(nodes[m], bool))
    elif x is None:
        x = nodes
    if x is None:
        raise DataFormatError("from_jraph: no node features (graphs.nodes is None); pass x=[N, F]")
    x = _numpy(x)
    n = int(np.sum(np.asarray(graphs.n_node)))
    if x.shape[0] != n:
        raise DataFormatError(f"from_jraph: x has {x.shape[0]} rows but n_node sums to {n}")
    _source(options, "from_jraph")
    return build_graph(np.asarray(graphs.senders), np.asarray(graphs.receivers), x, _numpy(y), **options)


@register_format("pyg", kind="graph", layout="a PyTorch Geometric Data", sniff=_of_library("torch_geometric"))
def from_pyg(data: Any, split: int = 0, **options: Any) -> Graph:
    """A Graph from a PyTorch Geometric ``Data``: edge_index, x, and y / train_mask / val_mask /
    test_mask when present (y of shape [N, 1] is flattened; masks of shape [N, S] hold S splits,
    and column `split` is used).

    Args:
        data: a `torch_geometric.data.Data` with edge_index `[2, E]` and x `[N, F]`.
        split: the column of `[N, S]` masks to use.
        **options: passed to `build_graph` (num_classes, masks, name, on_directed, split, ...).

    Returns:
        The checked, undirected `Graph`.

    Raises:
        TypeError: `data` has no edge_index or no features x.

    Example:
      >>> from torch_geometric.datasets import KarateClub   # doctest: +SKIP
      >>> g = from_pyg(KarateClub()[0])                       # doctest: +SKIP
    """
    if not hasattr(data, "edge_index") or getattr(data, "x", None) is None:
        raise TypeError(f"from_pyg expects a torch_geometric.data.Data with edge_index and x (package "
                        f"'torch_geometric'), got {type(data).__name__}"
                        + ("" if getattr(data, "x", 0) is not None else " without node features x"))
    for m in MASKS:
        if m not in options and getattr(data, m, None) is not None:
            val = _numpy(getattr(data, m))
            options[m] = val[:, split] if val.ndim == 2 else val
    _source(options, "from_pyg")
    return from_edge_index(_numpy(data.edge_index), _numpy(data.x), _numpy(getattr(data, "y", None)), **options)


@register_format("dgl", kind="graph", layout="a DGL graph", sniff=_of_library("dgl"))
def from_dgl(g: Any, x: str = "feat", y: str = "label", **options: Any) -> Graph:
    """A Graph from a homogeneous DGL graph: ``g.edges()``, features ``g.ndata[x]``, labels
    ``g.ndata[y]`` and ``g.ndata["train_mask"]`` etc. when present.

    Args:
        g: a homogeneous `dgl.DGLGraph`.
        x: the ``g.ndata`` field of the features `[N, F]`.
        y: the ``g.ndata`` field of the labels `[N]` (absent: unlabelled).
        **options: passed to `build_graph` (num_classes, masks, name, on_directed, split, ...).

    Returns:
        The checked, undirected `Graph`.

    Raises:
        TypeError: `g` is not a DGL graph.
        DataFormatError: a heterogeneous graph, or no feature field `x`.

    Example:
      >>> from dgl.data import CoraGraphDataset              # doctest: +SKIP
      >>> g = from_dgl(CoraGraphDataset()[0])                 # doctest: +SKIP
    """
    if not hasattr(g, "edges") or not hasattr(g, "ndata"):
        raise TypeError(f"from_dgl expects a dgl.DGLGraph (package 'dgl'), got {type(g).__name__}")
    if len(getattr(g, "ntypes", ["_N"])) != 1 or len(getattr(g, "etypes", ["_E"])) != 1:
        raise DataFormatError(f"from_dgl: the graph is heterogeneous (node types {list(g.ntypes)}, edge types "
                              f"{list(g.etypes)}); node classification here takes one node and edge type")
    if x not in g.ndata:
        raise DataFormatError(f"from_dgl: g.ndata has no feature field {x!r} (it has {sorted(g.ndata.keys())}); "
                              "pass x=<field name>")
    src, dst = g.edges()
    for m in MASKS:
        if m not in options and m in g.ndata:
            options[m] = _numpy(g.ndata[m]).astype(bool)
    _source(options, "from_dgl")
    labels = _numpy(g.ndata[y]) if y in g.ndata else None
    return build_graph(_numpy(src), _numpy(dst), _numpy(g.ndata[x]), labels, **options)
