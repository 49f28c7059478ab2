"""Small Geom-GCN raw directories with random content, in the three variants PyG reads.

    python benchmarks/peers/pyg/geom_gcn_toy.py OUT_DIR     # writes OUT_DIR/{cornell,film,chameleon}/

No Geom-GCN ``out1_*`` directory is in the offline data, so `layouts.py` compares PyG's readers
and fgl_jax's loader on these (and tests/test_layout_counts.py rewrites them, byte for byte, to
check fgl_jax against the recorded PyG counts). Each holds:

    out1_node_feature_label.txt   header "node_id<TAB>feature<TAB>label", one line per node
    out1_graph_edges.txt          header "node_id<TAB>node_id", one directed pair per line
    <name>_split_0.6_0.2_<i>.npz  i = 0..9: train_mask / val_mask / test_mask, uint8 [N] (60/20/20)

Variants: "webkb" (name cornell: dense 0/1 rows, PyG's ``WebKB``), "actor" (name film: each row the
column indices of its ones, rows of different lengths, PyG's ``Actor``), "wikipedia" (name
chameleon: dense 0/1 rows, PyG's ``WikipediaNetwork(geom_gcn_preprocess=True)``). The edge list
holds one-way pairs, both directions of some, duplicates and two self-loops, so each reader's
edge processing shows in the counts. Imports only numpy.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

VARIANTS = {"webkb": "cornell", "actor": "film", "wikipedia": "chameleon"}


def write_geom_gcn_dir(folder: Path, variant: str, n: int = 36, f: int = 14, c: int = 4, seed: int = 0) -> Path:
    """One toy Geom-GCN directory (module docstring), deterministic in its arguments.

    Args:
      folder: the directory to write (created; its name is the caller's).
      variant: "webkb", "actor" or "wikipedia".
      n, f, c, seed: nodes, feature columns, classes and the seed.

    Returns:
      folder.
    """
    name = VARIANTS[variant]
    rng = np.random.default_rng(seed + sorted(VARIANTS).index(variant))
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    y = rng.integers(0, c, n)
    lines = ["node_id\tfeature\tlabel"]
    for v in range(n):
        if variant == "actor":  # 1..5 distinct column ids per node; the last node uses column f - 1 (width f)
            cols = sorted(rng.choice(f, size=int(rng.integers(1, 6)), replace=False).tolist())
            if v == n - 1 and f - 1 not in cols:
                cols.append(f - 1)
            feats = ",".join(map(str, cols))
        else:
            feats = ",".join(str(int(b)) for b in (rng.random(f) < 0.3))
        lines.append(f"{v}\t{feats}\t{int(y[v])}")
    (folder / "out1_node_feature_label.txt").write_text("\n".join(lines) + "\n")
    pairs = rng.integers(0, n, (2 * n, 2))
    pairs = np.vstack([pairs, pairs[:5, ::-1], pairs[:3], [[2, 2], [7, 7]]])  # reverse, duplicate, self-loops
    edges = ["node_id\tnode_id"] + [f"{u}\t{v}" for u, v in pairs.tolist()]
    (folder / "out1_graph_edges.txt").write_text("\n".join(edges) + "\n")
    for i in range(10):
        perm = rng.permutation(n)
        a, b = int(0.6 * n), int(0.8 * n)
        masks = {k: np.zeros(n, np.uint8) for k in ("train_mask", "val_mask", "test_mask")}
        masks["train_mask"][perm[:a]] = 1
        masks["val_mask"][perm[a:b]] = 1
        masks["test_mask"][perm[b:]] = 1
        np.savez(folder / f"{name}_split_0.6_0.2_{i}.npz", **masks)
    return folder


def write_all(out: Path) -> dict[str, Path]:
    """The three variants under `out` (``out/<name>``): {variant: directory}."""
    return {v: write_geom_gcn_dir(Path(out) / name, v) for v, name in VARIANTS.items()}


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python geom_gcn_toy.py OUT_DIR")
    for v, p in write_all(Path(sys.argv[1])).items():
        print(f"{v}: {p}")
