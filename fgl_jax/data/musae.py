"""MUSAE-format social networks: Facebook Page-Page and LastFM Asia (Rozemberczki et al.).

Formats (UTF-8 CSV with a header row; JSON for features):

    facebook/edges.csv        id_1,id_2        one undirected edge per row (179 are self-loops)
    facebook/features.json    {"<node id>": [active feature ids, ...], ...}   sparse binary
    facebook/new_target.csv   id,target        company=0, tvshow=1, politician=2, government=3
    lastfm_asia/lastfm_asia_edges.csv    node_1,node_2
    lastfm_asia/lastfm_asia_target.csv   id,target   (18 countries)

Node ids are 0..N-1 and the target file lists each exactly once. Neither dataset has a standard
split: the returned masks are all False; use `fgl_jax.data.splits` to make one.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import numpy as np
import scipy.sparse as sp

from ..graph import Graph, symmetrize
from .paths import DataFormatError, PathLike, find_dataset_dir, github_files, verify_files

# sha256 of the published files (karateclub @ efbd6505; FEATHER @ 045db796).
FACEBOOK_SHA256: dict[str, str] = {
    "facebook/edges.csv": "7c50d8f02a75cc0829577814a1fc14535164daa38d79c3612340c9e9cdbd4022",
    "facebook/features.json": "ea870537646a93642a0008d38aa9bfeff02018070ba97b1f3f469d9622626436",
    "facebook/new_target.csv": "95987f6c9246f461511673041c88aa20cbd8596bc52b9688fdaab7bd5a720000",
}
LASTFM_ASIA_SHA256: dict[str, str] = {
    "lastfm_asia/lastfm_asia_edges.csv": "548eacff61bff564ab5007831fa4a7a30e1a3956075ffd24e43310ed33555842",
    "lastfm_asia/lastfm_asia_target.csv": "91f19215f6eca8321feec038bd32900cf13fd4f7e041a9976cf202807c72ac16",
}
FACEBOOK_FILES = tuple(FACEBOOK_SHA256)
LASTFM_ASIA_FILES = tuple(LASTFM_ASIA_SHA256)
# where they are published (the commits above)
FACEBOOK_URLS = github_files("benedekrozemberczki/karateclub", "efbd6505472b0a94ea659ccfe42f28a9dbcff95f",
                             "dataset/node_level/facebook/", "facebook/", FACEBOOK_FILES)
LASTFM_ASIA_URLS = {
    **github_files("benedekrozemberczki/FEATHER", "045db7963fb367eb9aed6439ceea96320e8ac7cc",
                   "new_node_level_dataset/edges/", "lastfm_asia/", LASTFM_ASIA_FILES[:1]),
    **github_files("benedekrozemberczki/FEATHER", "045db7963fb367eb9aed6439ceea96320e8ac7cc",
                   "new_node_level_dataset/target/", "lastfm_asia/", LASTFM_ASIA_FILES[1:])}
LASTFM_FEATURE_CHOICES = ("degree_onehot", "constant")


def read_int_csv(path: PathLike, header: tuple[str, ...]) -> np.ndarray:
    """Rows of a headed CSV of integers -> int64 [rows, len(header)].

    Every malformed row raises DataFormatError naming the file, the 1-based line number and the
    line's content: a wrong header, a wrong number of columns, or a field that is not an integer.
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise DataFormatError(f"{path}: not UTF-8 text ({e})") from e
    lines = text.splitlines()
    if not lines:
        raise DataFormatError(f"{path}: empty file, expected header {','.join(header)!r}")
    got = tuple(h.strip() for h in lines[0].lstrip("\ufeff").split(","))
    if got != header:
        raise DataFormatError(f"{path}, line 1: header {lines[0]!r} does not match expected {','.join(header)!r}")
    ncol = len(header)
    out = np.empty((len(lines) - 1, ncol), np.int64)
    for i, line in enumerate(lines[1:]):
        parts = line.split(",")
        if len(parts) != ncol:
            raise DataFormatError(f"{path}, line {i + 2}: expected {ncol} comma-separated columns, got "
                                  f"{len(parts)}: {line!r}")
        try:
            out[i] = [int(p) for p in parts]
        except ValueError:
            raise DataFormatError(f"{path}, line {i + 2}: non-integer field in {line!r}") from None
    if out.size and out.min() < 0:
        i = int(np.flatnonzero((out < 0).any(axis=1))[0])
        raise DataFormatError(f"{path}, line {i + 2}: negative id in {lines[i + 1]!r}")
    return out


def _read_targets(path: Path) -> np.ndarray:
    """`id,target` CSV -> int32 labels [N] indexed by id; ids must be exactly 0..N-1."""
    rows = read_int_csv(path, ("id", "target"))
    n = rows.shape[0]
    if n == 0:
        raise DataFormatError(f"{path}: no label rows")
    ids = rows[:, 0]
    # n rows whose ids are all < n and distinct are exactly 0..n-1 (pigeonhole)
    if ids.max() >= n:
        i = int(np.flatnonzero(ids >= n)[0])
        raise DataFormatError(f"{path}, line {i + 2}: id {int(ids[i])} out of range: the file has {n} label "
                              f"rows, so ids must be 0..{n - 1}, each exactly once")
    _, first = np.unique(ids, return_index=True)
    if len(first) != n:
        i = int(np.setdiff1d(np.arange(n), first)[0])
        j = int(np.flatnonzero(ids == ids[i])[0])
        raise DataFormatError(f"{path}, line {i + 2}: id {int(ids[i])} listed again (first on line {j + 2}); "
                              f"ids must be 0..{n - 1}, each exactly once")
    y = np.empty(n, np.int32)
    y[ids] = rows[:, 1]
    return y


def _read_edges(path: Path, header: tuple[str, str], n: int) -> np.ndarray:
    e = read_int_csv(path, header)
    if e.size and e.max() >= n:
        i = int(np.flatnonzero((e >= n).any(axis=1))[0])
        raise DataFormatError(f"{path}, line {i + 2}: node id {int(e[i].max())} has no label row "
                              f"(the target file defines ids 0..{n - 1})")
    return e


def _read_sparse_features(path: Path, n: int) -> sp.csr_matrix:
    """{"node": [feature ids]} JSON -> binary float32 CSR [n, max id + 1]."""
    try:
        with open(path, "r", encoding="utf-8") as fh:
            obj = json.load(fh)
    except json.JSONDecodeError as e:
        raise DataFormatError(f"{path}, line {e.lineno} column {e.colno}: invalid JSON: {e.msg}") from e
    except UnicodeDecodeError as e:
        raise DataFormatError(f"{path}: not UTF-8 text ({e})") from e
    if not isinstance(obj, dict):
        raise DataFormatError(f"{path}: expected a JSON object mapping node id -> feature ids, "
                              f"got {type(obj).__name__}")
    rows: list[np.ndarray] = []
    cols: list[np.ndarray] = []
    for key, feats in obj.items():
        try:
            node = int(key)
        except ValueError:
            raise DataFormatError(f"{path}: key {key!r} is not an integer node id") from None
        if not 0 <= node < n:
            raise DataFormatError(f"{path}: node id {node} outside the labelled nodes 0..{n - 1}")
        if not isinstance(feats, list) or not all(isinstance(f, int) and not isinstance(f, bool) and f >= 0
                                                  for f in feats):
            raise DataFormatError(f"{path}: node {key}: expected a list of non-negative integer feature ids, "
                                  f"got {str(feats)[:80]}")
        rows.append(np.full(len(feats), node, np.int64))
        cols.append(np.asarray(feats, np.int64))
    r = np.concatenate(rows) if rows else np.zeros(0, np.int64)
    c = np.concatenate(cols) if cols else np.zeros(0, np.int64)
    num_features = int(c.max()) + 1 if c.size else 0
    if num_features == 0:
        raise DataFormatError(f"{path}: no features")
    x = sp.csr_matrix((np.ones(len(r), np.float32), (r, c)), shape=(n, num_features))
    x.sum_duplicates()
    x.data[:] = 1.0  # binary: a feature listed twice for a node is still just "active"
    return x


def load_facebook(data_dir: Optional[PathLike] = None, verify: bool = True,
                  keep_self_loops: bool = False) -> Graph:
    """Facebook Page-Page: pages as nodes, mutual likes as edges, page category as label.

    Args:
        data_dir: the data directory to look in first (None: $FGL_JAX_DATA, then the cache dir).
        verify: check the files' sha256 against the published ones.
        keep_self_loops: keep the file's 179 self-loops (default: dropped).

    Returns:
        A Graph with N = 22,470 nodes, x binary float32 CSR `[N, 4714]` (314,583 non-zeros),
        y int32 `[N]` in 4 classes (company 0, tvshow 1, politician 2, government 3), and the 171,002
        undirected edges made symmetric (170,823 undirected = 341,646 directed edges without the
        self-loops). Masks are all False (no standard split).

    Raises:
        DatasetNotFoundError: the files are in no data directory.
        DataChecksumError: a file's sha256 differs (with `verify`).
    """
    root = find_dataset_dir("facebook", FACEBOOK_FILES, data_dir)
    if verify:
        verify_files("facebook", root, FACEBOOK_SHA256)
    y = _read_targets(root / "facebook/new_target.csv")
    n = y.shape[0]
    e = _read_edges(root / "facebook/edges.csv", ("id_1", "id_2"), n)
    x = _read_sparse_features(root / "facebook/features.json", n)
    s, r = symmetrize(e[:, 0], e[:, 1], n, keep_self_loops=keep_self_loops)
    return _graph("facebook", s, r, x, y)


def load_lastfm_asia(data_dir: Optional[PathLike] = None, verify: bool = True,
                     features: str = "degree_onehot", max_degree: int = 32) -> Graph:
    """LastFM Asia: users as nodes, mutual follows as edges, country as label (18 classes).

    The public release's node features (`lastfm_asia_features.json`, artists liked) are NOT in
    the offline copy, so structural stand-ins are offered instead (no node-identity features,
    which would not transfer between federated clients):

      features="degree_onehot": x float32 [N, max_degree + 1], one-hot of min(degree, max_degree).
          The degree is measured on the full graph at load time, so a client holding part of
          the graph sees each node's global degree.
      features="constant": x float32 [N, 1] of ones (structure-only learning).

    Args:
        data_dir: the data directory to look in first (None: $FGL_JAX_DATA, then the cache dir).
        verify: check the files' sha256 against the published ones.
        features: "degree_onehot" or "constant" (above).
        max_degree: the degree cap of "degree_onehot", a positive integer.

    Returns:
        A Graph with N = 7,624 nodes, 27,806 undirected edges (no self-loops; 55,612
        directed), y int32 `[N]` in 18 classes, all-False masks (no standard split).

    Raises:
        ValueError: an unknown `features` or a `max_degree` that is not a positive integer.
        DatasetNotFoundError: the files are in no data directory.
        DataChecksumError: a file's sha256 differs (with `verify`).
    """
    if features not in LASTFM_FEATURE_CHOICES:
        raise ValueError(f"load_lastfm_asia: features must be one of {LASTFM_FEATURE_CHOICES}, got {features!r} "
                         "(the real LastFM features are not available offline)")
    if isinstance(max_degree, bool) or not isinstance(max_degree, (int, np.integer)) or max_degree < 1:
        raise ValueError(f"load_lastfm_asia: max_degree must be a positive integer, got {max_degree!r}")
    root = find_dataset_dir("lastfm_asia", LASTFM_ASIA_FILES, data_dir)
    if verify:
        verify_files("lastfm_asia", root, LASTFM_ASIA_SHA256)
    y = _read_targets(root / "lastfm_asia/lastfm_asia_target.csv")
    n = y.shape[0]
    e = _read_edges(root / "lastfm_asia/lastfm_asia_edges.csv", ("node_1", "node_2"), n)
    s, r = symmetrize(e[:, 0], e[:, 1], n)
    if features == "constant":
        x = np.ones((n, 1), np.float32)
    else:
        deg = np.minimum(np.bincount(r, minlength=n), max_degree)
        x = np.zeros((n, int(max_degree) + 1), np.float32)
        x[np.arange(n), deg] = 1.0
    return _graph("lastfm_asia", s, r, x, y)


def _graph(name: str, s: np.ndarray, r: np.ndarray, x, y: np.ndarray) -> Graph:
    n = y.shape[0]
    empty = np.zeros(n, bool)
    return Graph(name=name, senders=s, receivers=r, x=x, y=y, num_classes=int(y.max()) + 1,
                 train_mask=empty, val_mask=empty.copy(), test_mask=empty.copy())
