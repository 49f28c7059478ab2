"""Hypergraph datasets for FedHGL: a host container, builders, and loaders.

A `Hypergraph` stores its incidence as two aligned int32 arrays (COO of H ∈ {0,1}^{N×M}):
``he_nodes[i]`` is a node id and ``he_ids[i]`` the id of a hyperedge containing it. Message
passing (fgl_jax.nn.hgnn) gathers and scatters along these arrays with segment sums.

Datasets (paper names, spec §7.1; `load_hypergraph(name, data_dir)`):

    coraca      HyperGCN co-authorship Cora (hypergraph/coauthorship_cora), binarised features
    cocitation_cora, cocitation_citeseer   HyperGCN co-citation hypergraphs (binarised)
    dblp4k      MAGNN DBLP authors; hyperedges = authors of one paper + authors using one term
    imdb4k      MAGNN IMDB movies; hyperedges = movies of one director + movies of one actor
    cora, citeseer   Planetoid graphs turned into 1-hop hyperedges {v} ∪ N(v), binarised
    facebook    MUSAE Facebook page-page graph, 1-hop hyperedges, raw binary features (numeric kind)

Cleaning (spec §7.1 / §10.14): node ids inside a hyperedge are de-duplicated, hyperedges equal
as sets are merged, and hyperedges with fewer than two nodes are dropped — except the singleton
{v} of an isolated node in a 1-hop hypergraph built from a simple graph, which DHG's
`from_graph_kHop` keeps (this reproduces the paper's Table IV counts; `graph_to_hypergraph`). Features are
L1-row-normalised (DHG) and, for the binary datasets, then binarised (>0 -> 1).
`feature_kind` ("binary" / "numeric") tells FedHGL which LDP mechanism applies.

Shapes: N nodes, M hyperedges, nnz (node, hyperedge) incidence pairs, F features, K classes.
"""
from __future__ import annotations

import dataclasses
import functools
from typing import Iterable, Optional, Union

import numpy as np
import scipy.sparse as sp

from ..graph import Graph, LabelledNodes
from .paths import DataFormatError, PathLike, find_dataset_dir, github_files, verify_files
from .safe_pickle import safe_load

Features = Union[np.ndarray, sp.csr_matrix]
FEATURE_KINDS = ("binary", "numeric")

__all__ = ["Hypergraph", "HypergraphError", "clean_hyperedges", "from_edge_lists", "graph_to_hypergraph",
           "load_hypergcn", "load_dblp4k", "load_imdb4k", "load_hypergraph",
           "l1_normalize", "binarize"]


class HypergraphError(ValueError):
    """A hypergraph is malformed (names the field and the offending value)."""


@dataclasses.dataclass(frozen=True, eq=False)
class Hypergraph(LabelledNodes):
    """A node-classification hypergraph on the host (N nodes, M hyperedges, nnz incidences).

    Attributes:
        name: the dataset's name.
        x: float32 `[N, F]`, dense array or CSR matrix.
        y: int32 `[N]`, -1 = unlabelled.
        num_classes: K.
        he_nodes: int32 `[nnz]`, the node of each incidence pair (no duplicate pair).
        he_ids: int32 `[nnz]`, the hyperedge of each incidence pair.
        num_edges: M; every id in 0..M-1 has at least one node (no empty hyperedges).
        edge_weight: float32 `[M]`, w(e) (all ones in every dataset here).
        feature_kind: "binary" (features in {0,1}; randomized response) or "numeric" (Laplace).
        train_mask: bool `[N]` (all False from the loaders; FedHGL splits per client).
        val_mask: bool `[N]`.
        test_mask: bool `[N]`.
        meta: for a user's files, "path", "format", "notices", "split" (as `Graph.meta`).

    Raises:
        HypergraphError: on construction, an inconsistent field (one line naming it).
    """

    name: str
    x: Features
    y: np.ndarray
    num_classes: int
    he_nodes: np.ndarray
    he_ids: np.ndarray
    num_edges: int
    edge_weight: np.ndarray
    feature_kind: str
    train_mask: np.ndarray
    val_mask: np.ndarray
    test_mask: np.ndarray
    meta: dict = dataclasses.field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self):
        self._check_nodes(HypergraphError, "Hypergraph")
        n = self.x.shape[0]
        hn, hi = np.asarray(self.he_nodes), np.asarray(self.he_ids)
        if hn.shape != hi.shape or hn.ndim != 1:
            raise HypergraphError(f"Hypergraph {self.name!r}: he_nodes {hn.shape} and he_ids {hi.shape} must be equal-length 1-D")
        m = int(self.num_edges)
        if hn.size:
            if hn.min() < 0 or hn.max() >= n:
                bad = int(hn.min() if hn.min() < 0 else hn.max())
                raise HypergraphError(f"Hypergraph {self.name!r}: he_nodes names unknown node {bad} (valid 0..{n - 1})")
            if hi.min() < 0 or hi.max() >= m:
                bad = int(hi.min() if hi.min() < 0 else hi.max())
                raise HypergraphError(f"Hypergraph {self.name!r}: he_ids has id {bad} outside 0..{m - 1}")
        sizes = np.bincount(hi, minlength=m) if m else np.zeros(0, np.int64)
        if m and sizes.min() == 0:
            raise HypergraphError(f"Hypergraph {self.name!r}: hyperedge {int(np.argmin(sizes))} is empty")
        if hn.size and np.unique(hi.astype(np.int64) * n + hn).size != hn.size:
            raise HypergraphError(f"Hypergraph {self.name!r}: duplicate (node, hyperedge) incidence pairs")
        w = np.asarray(self.edge_weight)
        if w.shape != (m,) or (w.size and (not np.all(np.isfinite(w)) or w.min() <= 0)):
            raise HypergraphError(f"Hypergraph {self.name!r}: edge_weight must be positive finite [{m}], got shape {w.shape}")
        if self.feature_kind not in FEATURE_KINDS:
            raise HypergraphError(f"Hypergraph {self.name!r}: feature_kind must be one of {FEATURE_KINDS}, got {self.feature_kind!r}")
        vals = self.x.data if sp.issparse(self.x) else np.asarray(self.x).ravel()
        if vals.size and not np.all(np.isfinite(vals)):
            raise HypergraphError(f"Hypergraph {self.name!r}: x has non-finite values (NaN/inf); "
                                  f"feature_kind={self.feature_kind!r} needs finite numbers")
        if self.feature_kind == "binary":
            if vals.size and not np.all((vals == 0) | (vals == 1)):
                raise HypergraphError(f"Hypergraph {self.name!r}: feature_kind='binary' but x has values outside {{0, 1}}")
        object.__setattr__(self, "he_nodes", hn.astype(np.int32))
        object.__setattr__(self, "he_ids", hi.astype(np.int32))
        object.__setattr__(self, "edge_weight", w.astype(np.float32))

    @property
    def nnz(self) -> int:
        return int(self.he_nodes.shape[0])

    def edge_sizes(self) -> np.ndarray:
        """int64 [M]: d_e = |e| (unweighted)."""
        return np.bincount(self.he_ids, minlength=self.num_edges)

    def node_degrees(self) -> np.ndarray:
        """float64 [N]: d_v = Σ_e w(e) h(v, e)."""
        return np.bincount(self.he_nodes, weights=self.edge_weight[self.he_ids], minlength=self.num_nodes)

    def incidence(self) -> sp.csr_matrix:
        """H as CSR [N, M] of ones."""
        return sp.csr_matrix((np.ones(self.nnz, np.float32), (self.he_nodes, self.he_ids)),
                             shape=(self.num_nodes, self.num_edges))

    def edge_lists(self) -> list[np.ndarray]:
        """M arrays of sorted node ids."""
        order = np.lexsort((self.he_nodes, self.he_ids))
        return np.split(self.he_nodes[order].astype(np.int64), np.cumsum(self.edge_sizes())[:-1])

    def with_masks(self, train: np.ndarray, val: np.ndarray, test: np.ndarray) -> "Hypergraph":
        return dataclasses.replace(self, train_mask=np.asarray(train, bool), val_mask=np.asarray(val, bool),
                                   test_mask=np.asarray(test, bool))

    def as_graph(self) -> Graph:
        """The nodes, features and labels as an edgeless Graph (for the node partitioners)."""
        e = np.zeros(0, np.int32)
        return Graph(self.name, e, e, self.x, self.y, self.num_classes, self.train_mask, self.val_mask, self.test_mask)


# --------------------------------------------------------------------------------------------------
# builders
# --------------------------------------------------------------------------------------------------
def clean_hyperedges(edges: Iterable[Iterable[int]], num_nodes: int, name: str = "hypergraph",
                     min_size: int = 2) -> tuple[np.ndarray, np.ndarray, int]:
    """De-duplicate nodes per hyperedge, merge equal hyperedges, drop those with < min_size nodes.

    Raises HypergraphError for an empty input hyperedge or a node id outside 0..num_nodes-1.
    Returns (he_nodes int32 [nnz], he_ids int32 [nnz], M), hyperedges in first-seen order.
    """
    seen: dict[tuple[int, ...], int] = {}
    nodes_out: list[np.ndarray] = []
    for i, e in enumerate(edges):
        arr = np.asarray(list(e) if not isinstance(e, np.ndarray) else e)
        if arr.size == 0:
            raise HypergraphError(f"{name}: hyperedge #{i} is empty")
        if not np.issubdtype(arr.dtype, np.integer):
            if not np.all(np.mod(arr, 1) == 0):
                raise HypergraphError(f"{name}: hyperedge #{i} has non-integer node ids {arr[:5]}")
            arr = arr.astype(np.int64)
        if arr.min() < 0 or arr.max() >= num_nodes:
            bad = int(arr.min() if arr.min() < 0 else arr.max())
            raise HypergraphError(f"{name}: hyperedge #{i} names unknown node {bad} (valid 0..{num_nodes - 1})")
        u = np.unique(arr.astype(np.int64))
        if u.size < min_size:
            continue
        key = tuple(u.tolist())
        if key not in seen:
            seen[key] = len(nodes_out)
            nodes_out.append(u)
    if not nodes_out:
        return np.zeros(0, np.int32), np.zeros(0, np.int32), 0
    sizes = np.array([a.size for a in nodes_out])
    return (np.concatenate(nodes_out).astype(np.int32),
            np.repeat(np.arange(len(nodes_out)), sizes).astype(np.int32), len(nodes_out))


def _csr_rows_as_edges(m: sp.csr_matrix) -> list[np.ndarray]:
    """Column ids of each row of a CSR matrix (one hyperedge per row)."""
    m = sp.csr_matrix(m)
    m.sum_duplicates()
    return [m.indices[m.indptr[i]:m.indptr[i + 1]] for i in range(m.shape[0])]


def from_edge_lists(name: str, edges: Iterable[Iterable[int]], x: Features, y: np.ndarray, num_classes: int,
                    feature_kind: str, clean: bool = True) -> Hypergraph:
    """Build a Hypergraph from a list of hyperedges (node-id lists); all masks False."""
    n = x.shape[0]
    if clean:
        hn, hi, m = clean_hyperedges(edges, n, name)
    else:
        hn, hi, m = clean_hyperedges(edges, n, name, min_size=1)
    z = np.zeros(n, bool)
    return Hypergraph(name, x, np.asarray(y, np.int32), int(num_classes), hn, hi, m, np.ones(m, np.float32),
                      feature_kind, z, z.copy(), z.copy())


def graph_to_hypergraph(graph: Graph, feature_kind: str, name: Optional[str] = None, x: Optional[Features] = None,
                        keep_isolated: bool = True) -> Hypergraph:
    """1-hop hyperedges (DHG `from_graph_kHop(k=1)`): e_v = {v} ∪ N(v) for every v, merged if equal.

    keep_isolated (default, as DHG and the authors' code): an isolated node keeps its singleton
    hyperedge {v} (d_v = d_e = 1, so its propagated row is its own feature row) — the authors clean
    singletons from the *graph's* edge list before `from_graph_kHop`, not afterwards. This gives
    the paper's Table IV counts (CiteSeer 2,996 = 2,948 merged neighbourhoods + 48 isolated nodes;
    Cora 2,590). keep_isolated=False drops them (isolated rows propagate to zero).
    """
    n = graph.num_nodes
    a = sp.csr_matrix((np.ones(graph.num_edges), (graph.receivers, graph.senders)), shape=(n, n))
    a = (a + sp.identity(n, format="csr")).tocsr()
    a.data[:] = 1
    edges = _csr_rows_as_edges(a)
    hn, hi, m = clean_hyperedges(edges, n, name or graph.name, min_size=1 if keep_isolated else 2)
    z = np.zeros(n, bool)
    return Hypergraph(name or graph.name, graph.x if x is None else x, np.asarray(graph.y, np.int32),
                      int(graph.num_classes), hn, hi, m, np.ones(m, np.float32), feature_kind, z, z.copy(), z.copy())


def l1_normalize(x: Features) -> Features:
    """Row-wise L1 normalisation (rows of zeros stay zero), as DHG's feature preprocessing."""
    if sp.issparse(x):
        x = sp.csr_matrix(x, dtype=np.float32)
        s = np.asarray(abs(x).sum(axis=1)).ravel()
        inv = np.where(s > 0, 1.0 / np.maximum(s, 1e-30), 0.0).astype(np.float32)
        return sp.diags(inv) @ x
    x = np.asarray(x, np.float32)
    s = np.abs(x).sum(axis=1, keepdims=True)
    return np.where(s > 0, x / np.maximum(s, 1e-30), 0.0).astype(np.float32)


def binarize(x: Features) -> Features:
    """x > 0 -> 1.0 else 0.0, keeping sparsity."""
    if sp.issparse(x):
        x = sp.csr_matrix(x, dtype=np.float32)
        x.data = (x.data > 0).astype(np.float32)
        x.eliminate_zeros()
        return x
    return (np.asarray(x) > 0).astype(np.float32)


# --------------------------------------------------------------------------------------------------
# HyperGCN pickles
# --------------------------------------------------------------------------------------------------
HYPERGCN_SHA256: dict[str, dict[str, str]] = {
    "coauthorship_cora": {
        "hypergraph/coauthorship_cora/features.pickle": "a20ab3c4903d6cf97d277f5ce8d26735e31d08c888cdd11e3f0a5bb78d7c0602",
        "hypergraph/coauthorship_cora/hypergraph.pickle": "777d661210bdd122a4ce25284e07c6368e875a28122e75dca912c631db0935f6",
        "hypergraph/coauthorship_cora/labels.pickle": "0e6edd0d971dde22c1116fa662362262163a7a6d557eafd60ac6857de4569527",
    },
    "cocitation_cora": {
        "hypergraph/cocitation_cora/features.pickle": "a20ab3c4903d6cf97d277f5ce8d26735e31d08c888cdd11e3f0a5bb78d7c0602",
        "hypergraph/cocitation_cora/hypergraph.pickle": "49abc7fff72a07de24e50d9d740d5cc63a32a40b2508995c16816fcb2729de80",
        "hypergraph/cocitation_cora/labels.pickle": "0e6edd0d971dde22c1116fa662362262163a7a6d557eafd60ac6857de4569527",
    },
    "cocitation_citeseer": {
        "hypergraph/cocitation_citeseer/features.pickle": "a1b1d07241c818e1551b1b4871bbf2116fe870773373372f9dbc5582c78236f4",
        "hypergraph/cocitation_citeseer/hypergraph.pickle": "b8deecbecef20618d4e23af5b81b1936b36810fc4565ca476353e8a6d7f5884d",
        "hypergraph/cocitation_citeseer/labels.pickle": "c3368a596786df4208f2777e1c8017b7a2a20307aee8c7ed4f2571d9f529611d",
    },
}


# where they are published (malllabiisc/HyperGCN @ de049387, data/coauthorship/cora/, data/cocitation/<name>/)
HYPERGCN_URLS: dict[str, dict[str, str]] = {
    name: github_files("malllabiisc/HyperGCN", "de049387d8d8c9fe6ebab83cb4b49cacfd4ed534",
                       "data/" + name.replace("_", "/") + "/", f"hypergraph/{name}/", files)
    for name, files in HYPERGCN_SHA256.items()}


def load_hypergcn(name: str, data_dir: Optional[PathLike] = None, verify: bool = True,
                  binary: bool = True) -> Hypergraph:
    """A HyperGCN hypergraph (``hypergraph/<name>/{features,hypergraph,labels}.pickle``).

    name: "coauthorship_cora" (the paper's CoraCA), "cocitation_cora" or "cocitation_citeseer".
    Features are L1-row-normalised, then binarised when `binary` (the paper's CoraCA setting).
    """
    if name not in HYPERGCN_SHA256:
        raise ValueError(f"load_hypergcn: unknown name {name!r}; expected one of {sorted(HYPERGCN_SHA256)}")
    rel = [f"hypergraph/{name}/{f}.pickle" for f in ("features", "hypergraph", "labels")]
    root = find_dataset_dir(name, rel, data_dir)
    if verify:
        verify_files(name, root, HYPERGCN_SHA256[name])
    folder = root / "hypergraph" / name
    feats = safe_load(folder / "features.pickle")
    if not sp.issparse(feats) and not isinstance(feats, np.ndarray):
        raise DataFormatError(f"{folder / 'features.pickle'}: expected a sparse or dense matrix, got {type(feats).__name__}")
    feats = sp.csr_matrix(feats, dtype=np.float32)
    labels = safe_load(folder / "labels.pickle")
    try:
        y = np.asarray(labels, dtype=np.int64).ravel()
    except (TypeError, ValueError) as e:
        raise DataFormatError(f"{folder / 'labels.pickle'}: expected a list of ints ({e})") from e
    n = feats.shape[0]
    if y.shape[0] != n:
        raise DataFormatError(f"{folder / 'labels.pickle'}: {y.shape[0]} labels for {n} feature rows")
    hg = safe_load(folder / "hypergraph.pickle")
    if not isinstance(hg, dict):
        raise DataFormatError(f"{folder / 'hypergraph.pickle'}: expected a dict of hyperedges, got {type(hg).__name__}")
    edges = []
    for k, v in hg.items():
        try:
            edges.append(np.asarray(list(v), dtype=np.int64))
        except (TypeError, ValueError) as e:
            raise DataFormatError(f"{folder / 'hypergraph.pickle'}: hyperedge {k!r} is not a list of node ids ({e})") from e
    x = l1_normalize(feats)
    if binary:
        x = binarize(x)
    try:
        return from_edge_lists(name, edges, x, y.astype(np.int32), int(y.max()) + 1,
                               "binary" if binary else "numeric")
    except HypergraphError as e:
        raise DataFormatError(f"{folder / 'hypergraph.pickle'}: {e}") from e


# --------------------------------------------------------------------------------------------------
# MAGNN-derived DBLP4k / IMDB4k
# --------------------------------------------------------------------------------------------------
def load_dblp4k(data_dir: Optional[PathLike] = None, verify: bool = True) -> Hypergraph:
    """DBLP4k: 4,057 authors; hyperedges = authors of each paper (14,328) and authors whose papers
    use each term (7,723) — DHG's edge_by_paper + edge_by_term — cleaned (singletons / duplicates
    dropped). Features: L1-normalised 334-d author keywords (numeric). 4 classes."""
    from .magnn import read_magnn
    raw = read_magnn("dblp", data_dir, verify)
    ap = raw.block(0, 1)                         # [authors, papers]
    pt = raw.block(1, 2)                         # [papers, terms]
    ap.data[:] = 1
    pt.data[:] = 1
    at = (ap @ pt).tocsr()                       # author uses term through some paper
    edges = _csr_rows_as_edges(ap.T.tocsr()) + _csr_rows_as_edges(at.T.tocsr())
    x = l1_normalize(sp.csr_matrix(raw.features[0], dtype=np.float32))
    return from_edge_lists("dblp4k", edges, x, raw.labels, raw.num_classes, "numeric")


def load_imdb4k(data_dir: Optional[PathLike] = None, verify: bool = True) -> Hypergraph:
    """IMDB4k: 4,278 movies; hyperedges = movies of each director (2,081) and of each actor (5,257),
    cleaned. Features: L1-normalised 3,066-d plot keywords (numeric). 3 classes."""
    from .magnn import read_magnn
    raw = read_magnn("imdb", data_dir, verify)
    md = raw.block(0, 1)
    ma = raw.block(0, 2)
    edges = _csr_rows_as_edges(md.T.tocsr()) + _csr_rows_as_edges(ma.T.tocsr())
    x = l1_normalize(sp.csr_matrix(raw.features[0], dtype=np.float32))
    return from_edge_lists("imdb4k", edges, x, raw.labels, raw.num_classes, "numeric")


# --------------------------------------------------------------------------------------------------
# simple graphs -> 1-hop hypergraphs
# --------------------------------------------------------------------------------------------------
def load_planetoid_hypergraph(name: str, data_dir: Optional[PathLike] = None, verify: bool = True) -> Hypergraph:
    """Cora / CiteSeer (Planetoid) as 1-hop hypergraphs; binarised L1-normalised features."""
    from .planetoid import load_planetoid
    g = load_planetoid(name, data_dir, verify)
    return graph_to_hypergraph(g, "binary", x=binarize(l1_normalize(g.x)))


def load_facebook_hypergraph(data_dir: Optional[PathLike] = None, verify: bool = True) -> Hypergraph:
    """Facebook page-page as a 1-hop hypergraph; raw binary features treated as numeric (Laplace),
    as in the paper."""
    from .musae import load_facebook
    g = load_facebook(data_dir, verify)
    return graph_to_hypergraph(g, "numeric", x=sp.csr_matrix(g.x, dtype=np.float32))


_ALIASES = {"cora_ca": "coraca", "coauthorship_cora": "coraca"}  # the paper's and HyperGCN's names


def load_hypergraph(name: str, data_dir: Optional[PathLike] = None, verify: bool = True) -> Hypergraph:
    """The hypergraph of a dataset name (case-insensitive; "cora_ca" = "coraca") or path.

    A hypergraph (a registered one, e.g. coraca, or hyperedges.txt + nodes.csv) is loaded as it
    is; a dataset with a registered hypergraph view (`fgl_jax.data.registry.add_view`: the paper's
    preprocessing of Cora, CiteSeer, Facebook) through it; any other plain graph becomes its 1-hop
    hypergraph (`graph_to_hypergraph`, as the paper does for Cora / CiteSeer), keeping the graph's
    masks and ``meta`` (so ``meta["split"]`` says whether the split was the user's: "given", or the
    default "stratified" one), with feature_kind "binary" when every feature is 0 or 1, else
    "numeric"; a heterogeneous graph is refused.

    Args:
        name: a dataset name or a path (a file or directory).
        data_dir: the data directory to look in first (None: $FGL_JAX_DATA, then the cache dir).
        verify: check files' sha256, for the loaders that take it.

    Returns:
        The `Hypergraph`: x `[N, F]`, incidence pairs `[nnz]`, masks `[N]`.

    Raises:
        ValueError: the dataset is heterogeneous.
        DatasetNotFoundError: a registered dataset's files are in no data directory.
    """
    import inspect
    from .registry import load, source
    if isinstance(name, str):
        name = _ALIASES.get(name.lower().replace("-", "_"), name)
    src = source(name, data_dir)
    if src.kind == "hetero":
        raise ValueError(f"dataset {str(name)!r} is a heterogeneous graph; FedHGL takes a hypergraph or a plain graph "
                         "(FedHGN, `fgl-jax fedhgn`, takes heterogeneous graphs)")
    view = src.view("hypergraph")
    if view is not None:
        return view(data_dir=data_dir, verify=verify)
    takes_verify = src.path is None and "verify" in inspect.signature(src.entry.obj).parameters
    data = load(name, data_dir, **({"verify": verify} if takes_verify else {}))
    if src.kind == "hypergraph":
        return data
    vals = data.x.data if sp.issparse(data.x) else np.asarray(data.x).ravel()
    kind_x = "binary" if np.isin(vals, (0.0, 1.0)).all() else "numeric"
    hg = graph_to_hypergraph(data, kind_x)
    return dataclasses.replace(hg, train_mask=data.train_mask, val_mask=data.val_mask, test_mask=data.test_mask,
                               meta=dict(data.meta, hypergraph="1-hop hyperedges of the graph"))


def _load_coraca(data_dir: Optional[PathLike] = None, verify: bool = True) -> Hypergraph:
    """Cora co-authorship (HyperGCN's coauthorship/cora), named coraca as in the paper."""
    return dataclasses.replace(load_hypergcn("coauthorship_cora", data_dir, verify), name="coraca")


def _register_builtin() -> None:
    from .magnn import MAGNN_SHA256, MAGNN_URLS, magnn_files
    from .registry import add_view, register
    d = "hypergraph (FedHGL; plain graphs become 1-hop hypergraphs there too)"
    register("coraca", _load_coraca,
             tuple(HYPERGCN_SHA256["coauthorship_cora"]), kind="hypergraph",
             description=f"Cora co-authorship (HyperGCN), 2,708 nodes, 7 classes; {d}",
             sha256=HYPERGCN_SHA256["coauthorship_cora"], urls=HYPERGCN_URLS["coauthorship_cora"])
    for name in ("cocitation_cora", "cocitation_citeseer"):
        register(name, functools.partial(load_hypergcn, name),
                 tuple(HYPERGCN_SHA256[name]), kind="hypergraph", description=f"{name} (HyperGCN); {d}",
                 sha256=HYPERGCN_SHA256[name], urls=HYPERGCN_URLS[name])
    register("dblp4k", load_dblp4k, magnn_files("dblp"), kind="hypergraph",
             description=f"DBLP4k authors from MAGNN DBLP, 4 classes; {d}",
             sha256=MAGNN_SHA256["dblp"], urls=MAGNN_URLS["dblp"])
    register("imdb4k", load_imdb4k, magnn_files("imdb"), kind="hypergraph",
             description=f"IMDB4k movies from MAGNN IMDB, 3 classes; {d}",
             sha256=MAGNN_SHA256["imdb"], urls=MAGNN_URLS["imdb"])
    # the paper's own hypergraphs of three plain graphs (binarised / raw features, spec §7.1)
    for name in ("cora", "citeseer"):
        add_view(name, "hypergraph", functools.partial(load_planetoid_hypergraph, name))
    add_view("facebook", "hypergraph", load_facebook_hypergraph)


_register_builtin()
