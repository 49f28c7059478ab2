"""Raw reader for the MAGNN-preprocessed heterogeneous graphs DBLP and IMDB (Fu et al., WWW 2020).

Files (``<data_dir>/hetero/<name>_magnn/``), all written by numpy / scipy (no pickles are read:
``np.load`` is called with ``allow_pickle=False``)::

    adjM.npz            scipy.sparse.save_npz CSR [N, N], symmetric 0/1, nodes ordered by type
    node_types.npy      int [N]; DBLP 0=author 1=paper 2=term 3=venue; IMDB 0=movie 1=director 2=actor
    labels.npy          int [n_target] labels of the type-0 nodes (DBLP authors, IMDB movies)
    features_<t>.npz    CSR [n_t, F_t]   (DBLP t=0,1; IMDB t=0,1,2)
    features_<t>.npy    dense [n_t, F_t] (DBLP t=2: term embeddings)
    train_val_test_idx.npz   IMDB only: train_idx / val_idx / test_idx (400 / 400 / 3,478)

DBLP: 26,128 nodes = 4,057 authors / 14,328 papers / 7,723 terms / 20 venues; venues have no
feature file. IMDB: 11,616 nodes = 4,278 movies / 2,081 directors / 5,257 actors. The MAGNN DBLP
split file is not part of the offline copy, so ``split`` is None for DBLP.

`read_magnn` returns the arrays as stored (no normalisation, no relabelling); the consumers
(FedHGL's hypergraph builders, FedHGN's heterograph builder) decide what to derive from them.
"""
from __future__ import annotations

import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Union

import numpy as np
import scipy.sparse as sp

from .paths import DataFormatError, PathLike, find_dataset_dir, github_files, verify_files

__all__ = ["MagnnRaw", "read_magnn", "MAGNN_SHA256", "MAGNN_URLS", "MAGNN_TYPE_NAMES", "magnn_files"]

# sha256 of the published files (see /work/shared/data/README.md §2.3-2.4).
MAGNN_SHA256: dict[str, dict[str, str]] = {
    "dblp": {
        "hetero/dblp_magnn/adjM.npz": "22e0054e320508c38f3f65ff57dc6cbee231fe20e75a957b6f9de18f339b3c0d",
        "hetero/dblp_magnn/features_0.npz": "03c7c5bf47e84d979f84bad06cb3c3cfe57cdcdc08de1c3772e9de17239ff0fe",
        "hetero/dblp_magnn/features_1.npz": "4dc7afb18763e5bd64bcb1d377f47ea8088740ee1f65247d2bbda902c42f1ce3",
        "hetero/dblp_magnn/features_2.npy": "462ea84b5eebfd4883910d0d15afff53e960ae8a80d7d62591f86a8d61fb5467",
        "hetero/dblp_magnn/labels.npy": "817efdc3ebb9e96067b8770dad5894b06ecabde2ac95d4b17443985f0439fda7",
        "hetero/dblp_magnn/node_types.npy": "a4fda13751620b2843502178dd0ffc666dd871eaac9314a042c1f340f610d41b",
    },
    "imdb": {
        "hetero/imdb_magnn/adjM.npz": "77c00acbaf71adab9b2b187ca4bdec87b9bef02119f9eeec6ea20727914b5483",
        "hetero/imdb_magnn/features_0.npz": "013d2012c991f732470e9ff83c4f3c67d26d967d51ea4d41323ce9bb7697dfff",
        "hetero/imdb_magnn/features_1.npz": "b26156fdc4a35c5a710c0729bf7e8013b3b0e04343fc43b2142bdd39558f824b",
        "hetero/imdb_magnn/features_2.npz": "90f3e60bde9c5069b8341a66f7fcc9de532898810f41c9b53544a653d2820043",
        "hetero/imdb_magnn/labels.npy": "44597a10efda21f244132e673123103f9656d895246210519a8ab7eb8a7da74d",
        "hetero/imdb_magnn/node_types.npy": "af34f572338f0730419d14f3978ebceede0682eabf3d2efac6ff0fc428a2c1d0",
        "hetero/imdb_magnn/train_val_test_idx.npz": "8b3c388427ce6fc9981b46fa4c3241d8713c3ef6f2f44dd2144e794d5b6a8926",
    },
}
# where they are published (the MAGNN releases as copied into two public repositories)
MAGNN_URLS: dict[str, dict[str, str]] = {
    "dblp": github_files("liuhao33/MSGNN2", "0e2bc4d8b56c1bb5ab322421a3ca63e38fe2d228", "data/DBLP_processed/",
                         "hetero/dblp_magnn/", MAGNN_SHA256["dblp"]),
    "imdb": github_files("myeonghak/MAGNN_BERT", "8a6c0690e1e5902800453c712c63c90edd752baf",
                         "data/preprocessed/IMDB_processed/", "hetero/imdb_magnn/", MAGNN_SHA256["imdb"]),
}
MAGNN_TYPE_NAMES: dict[str, tuple[str, ...]] = {
    "dblp": ("author", "paper", "term", "venue"),
    "imdb": ("movie", "director", "actor"),
}
# Which feature file each node type has (None: the type has no features in the release).
_FEATURE_FILES: dict[str, tuple[Optional[str], ...]] = {
    "dblp": ("features_0.npz", "features_1.npz", "features_2.npy", None),
    "imdb": ("features_0.npz", "features_1.npz", "features_2.npz"),
}

Features = Union[sp.csr_matrix, np.ndarray, None]


@dataclass(frozen=True)
class MagnnRaw:
    """One MAGNN heterogeneous graph, arrays as stored.

    Attributes:
      name: "dblp" or "imdb".
      adj: scipy CSR [N, N], symmetric 0/1 adjacency over all nodes, nodes ordered by type.
      node_types: int32 [N], type id of each node (0 = target type), non-decreasing.
      type_names: names of the type ids, e.g. ("author", "paper", "term", "venue").
      features: per type, CSR or dense [n_t, F_t], or None for types without a feature file.
      labels: int32 [n_target] class of each type-0 node (global ids 0..n_target-1).
      split: {"train", "val", "test"} -> int64 index arrays into the type-0 nodes, or None (DBLP).
    """
    name: str
    adj: sp.csr_matrix
    node_types: np.ndarray
    type_names: tuple[str, ...]
    features: list[Features]
    labels: np.ndarray
    split: Optional[dict[str, np.ndarray]]

    @property
    def num_nodes(self) -> int:
        return int(self.node_types.shape[0])

    @property
    def num_classes(self) -> int:
        return int(self.labels.max()) + 1

    def type_offsets(self) -> np.ndarray:
        """int64 [T+1]: nodes of type t are global ids offsets[t] .. offsets[t+1]-1."""
        counts = np.bincount(self.node_types, minlength=len(self.type_names))
        return np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)

    def block(self, src_type: int, dst_type: int) -> sp.csr_matrix:
        """CSR [n_src, n_dst]: the adjacency block between two node types (local ids)."""
        off = self.type_offsets()
        return self.adj[off[src_type]:off[src_type + 1], off[dst_type]:off[dst_type + 1]].tocsr()


def magnn_files(name: str) -> tuple[str, ...]:
    """Relative paths (under the data dir) of every file `read_magnn(name)` reads."""
    return tuple(MAGNN_SHA256[_check_name(name)])


def _check_name(name: str) -> str:
    key = str(name).lower()
    if key not in MAGNN_SHA256:
        raise ValueError(f"read_magnn: unknown name {name!r}; expected one of {sorted(MAGNN_SHA256)}")
    return key


def _load_npz_sparse(path: Path) -> sp.csr_matrix:
    try:
        m = sp.load_npz(path)
    except (ValueError, OSError, KeyError, zipfile.BadZipFile, EOFError) as e:
        raise DataFormatError(f"{path}: cannot read as a scipy.sparse .npz ({type(e).__name__}: {e}); "
                              "the file is truncated or corrupt.") from e
    return sp.csr_matrix(m)


def _load_npy(path: Path) -> np.ndarray:
    try:
        return np.load(path, allow_pickle=False)
    except (ValueError, OSError, EOFError) as e:
        raise DataFormatError(f"{path}: cannot read as a .npy array ({type(e).__name__}: {e}); "
                              "the file is truncated, corrupt or holds pickled objects.") from e


def _load_split(path: Path) -> dict[str, np.ndarray]:
    try:
        with np.load(path, allow_pickle=False) as z:
            out = {k: np.asarray(z[f"{k}_idx"], np.int64) for k in ("train", "val", "test")}
    except KeyError as e:
        raise DataFormatError(f"{path}: missing key {e}; expected train_idx, val_idx, test_idx.") from e
    except (ValueError, OSError, EOFError, zipfile.BadZipFile) as e:
        raise DataFormatError(f"{path}: cannot read split ({type(e).__name__}: {e}).") from e
    return out


def read_magnn(name: str, data_dir: Optional[PathLike] = None, verify: bool = True) -> MagnnRaw:
    """Read a MAGNN-preprocessed heterogeneous graph.

    Args:
      name: "dblp" or "imdb" (case-insensitive).
      data_dir: directory containing ``hetero/<name>_magnn/``; see `fgl_jax.data.paths`.
      verify: check each file's sha256 against the published file before parsing.

    Raises:
      ValueError: unknown `name`.
      DatasetNotFoundError: a file is missing (lists the files and every directory searched).
      DataChecksumError: a file's sha256 differs from the published one.
      DataFormatError: a file cannot be parsed or the arrays disagree in shape.
    """
    key = _check_name(name)
    rel = magnn_files(key)
    root = find_dataset_dir(key, rel, data_dir)
    if verify:
        verify_files(key, root, MAGNN_SHA256[key])
    folder = root / "hetero" / f"{key}_magnn"
    type_names = MAGNN_TYPE_NAMES[key]

    adj = _load_npz_sparse(folder / "adjM.npz")
    node_types = _load_npy(folder / "node_types.npy")
    labels = _load_npy(folder / "labels.npy")
    n = node_types.shape[0]
    if node_types.ndim != 1 or not np.issubdtype(node_types.dtype, np.integer):
        raise DataFormatError(f"{folder / 'node_types.npy'}: expected a 1-d integer array, got "
                              f"{node_types.dtype} {node_types.shape}")
    if adj.shape != (n, n):
        raise DataFormatError(f"{folder / 'adjM.npz'}: shape {adj.shape} does not match {n} nodes in node_types.npy")
    if n and (node_types.min() < 0 or node_types.max() >= len(type_names)
              or np.any(np.diff(node_types) < 0)):
        raise DataFormatError(f"{folder / 'node_types.npy'}: type ids must be non-decreasing in "
                              f"0..{len(type_names) - 1}")
    counts = np.bincount(node_types, minlength=len(type_names))
    if labels.ndim != 1 or labels.shape[0] != counts[0] or not np.issubdtype(labels.dtype, np.integer):
        raise DataFormatError(f"{folder / 'labels.npy'}: expected {counts[0]} integer labels "
                              f"(one per {type_names[0]}), got {labels.dtype} {labels.shape}")
    if labels.size and labels.min() < 0:
        raise DataFormatError(f"{folder / 'labels.npy'}: negative label {labels.min()}")

    features: list[Features] = []
    for t, fname in enumerate(_FEATURE_FILES[key]):
        if fname is None:
            features.append(None)
            continue
        path = folder / fname
        f = _load_npz_sparse(path) if fname.endswith(".npz") else _load_npy(path)
        if f.ndim != 2 or f.shape[0] != counts[t]:
            raise DataFormatError(f"{path}: expected {counts[t]} rows (one per {type_names[t]}), got shape {f.shape}")
        features.append(f)

    split = None
    if "hetero/imdb_magnn/train_val_test_idx.npz" in MAGNN_SHA256[key]:
        path = folder / "train_val_test_idx.npz"
        split = _load_split(path)
        for k, idx in split.items():
            if idx.size and (idx.min() < 0 or idx.max() >= counts[0]):
                raise DataFormatError(f"{path}: {k}_idx has ids outside 0..{counts[0] - 1}")

    adj = adj.tocsr()
    adj.sort_indices()
    return MagnnRaw(name=key, adj=adj, node_types=node_types.astype(np.int32), type_names=type_names,
                    features=features, labels=labels.astype(np.int32), split=split)
