"""A small OGB node-property directory with random content, in the ogbn-arxiv layout.

    python benchmarks/peers/pyg/ogb_toy.py OUT_DIR     # writes OUT_DIR/ogbn_arxiv/

No OGB directory is in the offline data, so `layouts.py` compares the ``ogb`` package's reader
(``PygNodePropPredDataset("ogbn-arxiv")``, in the PyG venv) and fgl_jax's loader on this one (and
tests/test_layout_counts.py rewrites it, byte for byte, to check fgl_jax against the recorded
counts). It holds what ogb's reader opens for ogbn-arxiv (its master.csv row: version 1, one task,
no inverse edges added, node features, the additional node file node_year, split "time"):

    RELEASE_v1.txt                      makes ogb take the directory as current (no download prompt)
    raw/edge.csv.gz                     E rows "src,dst": one-way pairs, some both ways, one self-loop
    raw/node-feat.csv.gz                N rows of F floats
    raw/node-label.csv.gz               N rows of one class id
    raw/node_year.csv.gz                N rows of one year
    raw/num-node-list.csv.gz            one row: N
    raw/num-edge-list.csv.gz            one row: E
    split/time/{train,valid,test}.csv.gz   node ids, disjoint; a few nodes are in none

The gzip headers carry no timestamp or file name, so the files are the same bytes on every run.
Imports only numpy.
"""
from __future__ import annotations

import gzip
import sys
from pathlib import Path

import numpy as np

NAME = "ogbn-arxiv"
DIR_NAME = "ogbn_arxiv"   # ogb's folder for the name: dashes become underscores


def _write_csv_gz(path: Path, rows: np.ndarray, fmt: str) -> None:
    """Headerless comma-separated rows, gzipped deterministically (mtime 0, no name in the header)."""
    text = "".join(",".join(fmt % v for v in np.atleast_1d(r)) + "\n" for r in rows)
    with open(path, "wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as f:
        f.write(text.encode())


def write_ogb_dir(folder: Path, n: int = 40, f: int = 8, c: int = 5, seed: int = 0) -> Path:
    """One toy OGB node-property directory (module docstring), deterministic in its arguments.

    Args:
      folder: the directory to write (created; name it ``ogbn_arxiv`` for ogb's reader).
      n, f, c, seed: nodes, feature columns, classes and the seed.

    Returns:
      folder.
    """
    rng = np.random.default_rng(seed)
    folder = Path(folder)
    raw, split = folder / "raw", folder / "split" / "time"
    raw.mkdir(parents=True, exist_ok=True)
    split.mkdir(parents=True, exist_ok=True)
    (folder / "RELEASE_v1.txt").write_text("toy ogbn-arxiv layout written by benchmarks/peers/pyg/ogb_toy.py\n")
    # distinct directed pairs without self-loops, the first few also reversed, then one self-loop
    codes = rng.choice(n * n, size=3 * n, replace=False)
    pairs = np.stack([codes // n, codes % n], axis=1)
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    rev = pairs[:6, ::-1]
    rev = rev[~np.isin(rev[:, 0] * n + rev[:, 1], pairs[:, 0] * n + pairs[:, 1])]
    edges = np.vstack([pairs, rev, [[3, 3]]]).astype(np.int64)
    _write_csv_gz(raw / "edge.csv.gz", edges, "%d")
    _write_csv_gz(raw / "node-feat.csv.gz", rng.normal(size=(n, f)).round(6), "%.6f")
    _write_csv_gz(raw / "node-label.csv.gz", rng.integers(0, c, (n, 1)), "%d")
    _write_csv_gz(raw / "node_year.csv.gz", rng.integers(2000, 2021, (n, 1)), "%d")
    _write_csv_gz(raw / "num-node-list.csv.gz", np.array([[n]]), "%d")
    _write_csv_gz(raw / "num-edge-list.csv.gz", np.array([[len(edges)]]), "%d")
    perm = rng.permutation(n)
    a, b, e = int(0.5 * n), int(0.7 * n), n - 3          # the last three nodes are in no split
    for part, ids in (("train", perm[:a]), ("valid", perm[a:b]), ("test", perm[b:e])):
        _write_csv_gz(split / f"{part}.csv.gz", np.sort(ids)[:, None], "%d")
    return folder


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python ogb_toy.py OUT_DIR")
    print(write_ogb_dir(Path(sys.argv[1]) / DIR_NAME))
