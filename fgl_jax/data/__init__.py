"""Data layer: loaders for the raw public files, synthetic graphs, splits and a name registry.

    from fgl_jax.data import load, list_datasets
    g = load("csbm")                          # embedded default, no files
    g = load("cora", data_dir="/path/to/data")  # or set FGL_JAX_DATA
    g = load("my_graph.npz")                  # a user's file or directory (fgl_jax.data.files)
    source("my_graph.npz").kind               # name or path? decided once, here (fgl_jax.data.registry)
    g = from_scipy(adj, x, y)                 # arrays from another library (fgl_jax.data.convert)

Graph loaders return a host-side `fgl_jax.graph.Graph`; a user's graph passes the checks of
`fgl_jax.data.checks` (notices are `DataNotice` warnings, recorded in ``graph.meta``).
"""
from .paths import (DataChecksumError, DataDirNotFoundError, DataError, DataFormatError, DatasetNotFoundError,
                    resolve_data_dir,
                    sha256_file, verify_files)
from .planetoid import load_planetoid, read_planetoid
from .musae import load_facebook, load_lastfm_asia
from .registry import (Source, UnknownDatasetError, add_view, data_kind, dataset_names, list_datasets, load, load_graph,
                       register, source)
from .checks import DataNotice, build_graph
from .files import (DataPathNotFoundError, detect_format, is_path, load_path, path_sha256, path_suffixes,
                    register_format, resolve_path)
from .npz import load_npz, save_graph
from .tu import GraphSet, load_tu, read_tu
from .tables import load_csv_graph, load_hetero_tables, load_incidence
from .ogb import load_ogb_node
from .geom_gcn import load_geom_gcn
from .convert import from_dgl, from_edge_index, from_jraph, from_networkx, from_pyg, from_scipy
from .nxfiles import load_edgelist, load_gml, load_graphml
from .safe_pickle import UnsafePickleError, safe_load
from .splits import openfgl_fractions, per_class_split, per_client_split, random_split, stratified_split
from .synthetic import block_csbm, csbm
from fgl_jax.homophily import edge_homophily  # moved down to layer 0; kept here for old callers
from . import processing  # noqa: F401 (robustness perturbations: processing.perturb and friends)

__all__ = [
    "load", "load_graph", "register", "list_datasets", "dataset_names", "data_kind", "source", "Source", "add_view",
    "register_format", "path_suffixes",
    "is_path", "detect_format", "load_path", "path_sha256", "load_npz", "load_csv_graph", "load_ogb_node",
    "load_incidence", "load_hetero_tables", "load_geom_gcn", "build_graph", "stratified_split", "resolve_path",
    "DataNotice", "DataPathNotFoundError",
    "from_edge_index", "from_scipy", "from_networkx", "from_jraph", "from_pyg", "from_dgl",
    "load_graphml", "load_gml", "load_edgelist", "save_graph",
    "load_planetoid", "read_planetoid", "GraphSet", "load_tu", "read_tu", "load_facebook", "load_lastfm_asia",
    "csbm", "block_csbm", "edge_homophily", "random_split", "per_class_split", "per_client_split", "openfgl_fractions",
    "safe_load", "resolve_data_dir", "sha256_file", "verify_files",
    "DataError", "DataFormatError", "DataChecksumError", "DatasetNotFoundError", "DataDirNotFoundError",
    "UnsafePickleError",
    "UnknownDatasetError",
]
