"""Data layer: loaders for the raw public files, synthetic graphs, splits and a name registry.

    from fgl_jax.data import load, list_datasets
    g = load("csbm")                          # embedded default, no files
    g = load("cora", data_dir="/path/to/data")  # or set FGL_JAX_DATA

Every loader returns a host-side `fgl_jax.graph.Graph`.
"""
from .paths import (DataChecksumError, DataError, DataFormatError, DatasetNotFoundError, resolve_data_dir,
                    sha256_file, verify_files)
from .planetoid import load_planetoid, read_planetoid
from .musae import load_facebook, load_lastfm_asia
from .registry import UnknownDatasetError, dataset_names, list_datasets, load, load_graph, register
from .safe_pickle import UnsafePickleError, safe_load
from .splits import openfgl_fractions, per_class_split, per_client_split, random_split
from .synthetic import csbm, edge_homophily
from . import processing  # noqa: F401 (robustness perturbations: processing.perturb and friends)

__all__ = [
    "load", "load_graph", "register", "list_datasets", "dataset_names",
    "load_planetoid", "read_planetoid", "load_facebook", "load_lastfm_asia",
    "csbm", "edge_homophily", "random_split", "per_class_split", "per_client_split", "openfgl_fractions",
    "safe_load", "resolve_data_dir", "sha256_file", "verify_files",
    "DataError", "DataFormatError", "DataChecksumError", "DatasetNotFoundError", "UnsafePickleError",
    "UnknownDatasetError",
]
