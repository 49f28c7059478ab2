"""Issue 48 item 1's "done when": every public layout PyTorch Geometric can read, read by PyG's own
reader (`layouts_pyg.py`, in the PyG venv) and by fgl_jax's loader (`fgl_jax.data.load`), and their
node / edge / feature / class counts recorded side by side.

    python benchmarks/peers/pyg/layouts.py [--pyg /work/peers/pyg-venv/bin/python] [--work /tmp/layouts]

writes benchmarks/peers/pyg/layouts.json and layouts.md (overwritten). tests/test_layout_counts.py
checks fgl_jax's counts against the committed PyG counts (the independent reference).

Files: the two GNN-benchmark .npz spellings (small graphs written here by `write_gnnbench_npz`:
none is in the offline data), every Platonov heterophily .npz, the Planetoid raw files of Cora and
CiteSeer, every TU directory and zip in $FGL_JAX_DATA (default /work/shared/data), and three toy
Geom-GCN raw directories (``geom_gcn_toy.py``: WebKB, Actor and Wikipedia variants; none is in the
offline data) with their ten split files, and a toy OGB node-property directory in the ogbn-arxiv
layout (``ogb_toy.py``: none is in the offline data; PyG has no reader of its own for it, so the
``ogb`` package's ``PygNodePropPredDataset`` reads it, installed in the same venv).

For the Geom-GCN rows, "edges_coalesced" is PyG's stored count (directed pairs de-duplicated,
self-loops kept) against fgl_jax's with ``on_directed="keep", keep_self_loops=True``; "edges" is
PyG's after to_undirected + remove_self_loops against fgl_jax's default; "splits" compares the ten
train/val/test masks (sha256 of the [k, N] uint8 masks and the sizes).
For the OGB row, "edges_stored" is ogb's edge_index as stored (one-way edges and the self-loop kept)
against fgl_jax's with ``on_directed="keep", keep_self_loops=True``; "edges" and "splits" as for
Geom-GCN (k = 1: the one split scheme, "time").

Edge counts are stored directed edges, as both keep them: PyG's edge_index columns, fgl_jax's
senders. Both drop self-loops except where a row says otherwise.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path

import numpy as np
import scipy.sparse as sp

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parents[2]), str(HERE.parents[1]), str(HERE)]
from harness import write_record  # noqa: E402
from geom_gcn_toy import VARIANTS, write_geom_gcn_dir  # noqa: E402
from ogb_toy import DIR_NAME as OGB_DIR, write_ogb_dir  # noqa: E402
DEFAULT_PYG = Path("/work/peers/pyg-venv/bin/python")
DATA = Path(os.environ.get("FGL_JAX_DATA", "/work/shared/data"))


def write_gnnbench_npz(path: Path, dotted: bool, n: int = 40, f: int = 12, c: int = 3, seed: int = 0) -> Path:
    """A small graph in the GNN-benchmark layout: CSR adjacency (one-way and two-way edges, one
    self-loop, a duplicate-free CSR), binary CSR attributes, labels; `dotted` picks the
    ``adj_matrix.data`` spelling (with pickled None placeholders for the absent names), else ``adj_data``.

    Args:
      path: the .npz to write.
      dotted: the spelling.
      n, f, c, seed: nodes, features, classes and the seed (deterministic: the test rewrites the same file).

    Returns:
      path.
    """
    rng = np.random.default_rng(seed)
    pairs = rng.integers(0, n, (3 * n, 2))
    pairs = np.vstack([pairs, [[5, 5]]])                   # a self-loop: both readers drop it
    a = sp.csr_matrix((np.ones(len(pairs), np.float32), (pairs[:, 0], pairs[:, 1])), shape=(n, n))
    a.sum_duplicates()
    a.data[:] = 1.0
    x = sp.csr_matrix((rng.random((n, f)) < 0.3).astype(np.float32))
    y = rng.integers(0, c, n)
    parts = {"adj": a, "attr": x}
    arrays: dict = {}
    for key, m in parts.items():
        sep = f"{key}_matrix." if dotted else f"{key}_"
        arrays.update({f"{sep}data": m.data, f"{sep}indices": m.indices, f"{sep}indptr": m.indptr,
                       f"{sep}shape": np.array(m.shape)})
    arrays["labels"] = y
    if dotted:  # what the published dotted files carry for the parts they lack
        arrays.update({k: np.array(None, dtype=object) for k in ("node_names", "attr_names", "class_names")})
    np.savez(path, **arrays)
    return path


def layout_files(work: Path, data: Path = DATA) -> list[dict]:
    """[{"id", "kind", "path"}]: the toy npz files (written into `work`) and the offline data's files."""
    work.mkdir(parents=True, exist_ok=True)
    out = [{"id": "gnnbench_underscore.npz (toy)", "kind": "gnnbench",
            "path": str(write_gnnbench_npz(work / "gnnbench_underscore.npz", dotted=False))},
           {"id": "gnnbench_dotted.npz (toy)", "kind": "gnnbench_dotted",
            "path": str(write_gnnbench_npz(work / "gnnbench_dotted.npz", dotted=True))}]
    for variant, name in VARIANTS.items():
        out.append({"id": f"geom_gcn/{name} (toy)", "kind": f"geom_gcn_{variant}",
                    "path": str(write_geom_gcn_dir(work / "geom_gcn" / name, variant))})
    out.append({"id": f"ogb/{OGB_DIR} (toy)", "kind": "ogb_node", "path": str(write_ogb_dir(work / "ogb" / OGB_DIR))})
    for p in sorted((data / "heterophily").glob("*.npz")):
        out.append({"id": f"heterophily/{p.name}", "kind": "heterophily", "path": str(p)})
    for p in sorted((data / "planetoid").glob("ind.*.test.index")):
        out.append({"id": f"planetoid/{p.name}", "kind": "planetoid", "path": str(p)})
    tu = data / "tu"
    if tu.is_dir():
        for p in sorted(tu.iterdir()):
            if p.is_dir() or p.suffix == ".zip":
                out.append({"id": f"tu/{p.name}", "kind": "tu", "path": str(p)})
    return out


def fgl_counts(kind: str, path: str) -> dict:
    """fgl_jax's reading of one file (its loader's defaults), as the counts PyG's side reports."""
    import fgl_jax as fj
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the loaders' notices (symmetrised, self-loops removed): expected here
        g = fj.load(path)
    if kind == "tu":
        return {"graphs": int(g.num_graphs), "nodes": int(g.num_nodes), "edges": int(g.num_edges),
                "features": int(g.num_features), "classes": int(g.num_classes)}
    y = np.asarray(g.y)
    out = {"nodes": int(g.num_nodes), "edges": int(g.num_edges), "features": int(g.num_features),
           "classes": int(y[y >= 0].max()) + 1 if (y >= 0).any() else 0}
    if kind.startswith("geom_gcn_"):
        out.update(geom_gcn_extra(path))
    if kind == "ogb_node":
        out.update(ogb_extra(path))
    return out


def geom_gcn_extra(path: str) -> dict:
    """fgl_jax's side of a Geom-GCN row's extra entries: the directed count with one-way edges and
    self-loops kept, and the fixed splits' digests (as layouts_pyg.py computes PyG's)."""
    import hashlib
    import fgl_jax as fj
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        g = fj.load(path)
        kept = fj.load(path, on_directed="keep", keep_self_loops=True)
    fixed = g.meta["fixed_splits"]
    splits: dict = {"k": int(fixed["train"].shape[0])}
    for key in ("train", "val", "test"):
        m = np.ascontiguousarray(fixed[key].astype(np.uint8))
        splits[f"{key}_sha256"] = hashlib.sha256(m.tobytes()).hexdigest()
        splits[f"{key}_sizes"] = [int(v) for v in m.sum(axis=1)]
    return {"edges_coalesced": int(kept.num_edges), "splits": splits}


def split_digests(train: np.ndarray, val: np.ndarray, test: np.ndarray) -> dict:
    """{"k", "<part>_sha256", "<part>_sizes"} of bool masks [k, N] (uint8 bytes, split-major), as
    layouts_pyg.py digests PyG's."""
    import hashlib
    out: dict = {"k": int(train.shape[0])}
    for key, m in (("train", train), ("val", val), ("test", test)):
        m = np.ascontiguousarray(np.asarray(m).astype(np.uint8))
        out[f"{key}_sha256"] = hashlib.sha256(m.tobytes()).hexdigest()
        out[f"{key}_sizes"] = [int(v) for v in m.sum(axis=1)]
    return out


def ogb_extra(path: str) -> dict:
    """fgl_jax's side of the OGB row's extra entries: the stored directed count (one-way edges and
    self-loops kept) and its one split's digests (as [1, N] masks)."""
    import fgl_jax as fj
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        g = fj.load(path)
        kept = fj.load(path, on_directed="keep", keep_self_loops=True)
    return {"edges_stored": int(kept.num_edges),
            "splits": split_digests(*(np.asarray(m)[None] for m in (g.train_mask, g.val_mask, g.test_mask)))}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pyg", default=str(DEFAULT_PYG), help="python of the venv with torch and torch_geometric")
    ap.add_argument("--work", default=None, help="scratch directory for the toy files (default: a temporary one)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(args.work or tmp)
        files = layout_files(work)
        spec = work / "spec.json"
        spec.write_text(json.dumps(files))
        r = subprocess.run([args.pyg, str(HERE / "layouts_pyg.py"), str(spec)], capture_output=True, text=True,
                           check=True)
        pyg = json.loads(r.stdout.strip().splitlines()[-1])
        rows = []
        for item in files:
            ours = fgl_counts(item["kind"], item["path"])
            theirs = pyg["files"][item["id"]]
            same = {k: theirs.get(k) == v for k, v in ours.items() if k in theirs}
            rows.append({"id": item["id"], "kind": item["kind"], "pyg": theirs, "fgl_jax": ours, "equal": same})
    import jax
    record = {"command": "python benchmarks/peers/pyg/layouts.py", "torch": pyg["torch"],
              "torch_geometric": pyg["torch_geometric"], "ogb": pyg.get("ogb"), "jax": jax.__version__, "data": str(DATA), "files": rows}
    write_record(HERE / "layouts.json", record,
                 title="every public layout: fgl_jax's loader vs PyG's readers (node/edge/feature/class counts)")
    lines = ["# Every public layout: fgl_jax's loader against PyTorch Geometric's reader (issue 48)", "",
             f"Written by `{record['command']}` (torch {record['torch']}, torch_geometric "
             f"{record['torch_geometric']}, jax {record['jax']}); data from `{DATA}`. Counts: nodes, stored "
             "directed edges, features, classes (graphs for TU sets); for the Geom-GCN directories, edges after "
             "PyG's to_undirected + remove_self_loops, with PyG's stored (coalesced) count in brackets, and the "
             "ten split files' masks compared; likewise for the OGB directory (read by the `ogb` package "
             f"{pyg.get('ogb', '?')}), with its stored directed count and its one split. `=` marks a count equal on both sides; "
             "tests/test_layout_counts.py checks fgl_jax's against the PyG column.", "",
             "| file | reader (PyG) | PyG: nodes / edges / features / classes | fgl_jax | equal |",
             "|---|---|---|---|---|"]
    reader = {"gnnbench": "io.read_npz", "gnnbench_dotted": "io.npz.parse_npz (keys renamed)",
              "heterophily": "HeterophilousGraphDataset", "planetoid": "Planetoid", "tu": "TUDataset",
              "geom_gcn_webkb": "WebKB", "geom_gcn_actor": "Actor",
              "geom_gcn_wikipedia": "WikipediaNetwork(geom_gcn_preprocess=True)",
              "ogb_node": "ogb's PygNodePropPredDataset"}
    for row in rows:
        def fmt(c: dict) -> str:
            if "error" in c:
                return f"error: {c['error'][:80]}"
            g = f"{c['graphs']} graphs, " if "graphs" in c else ""
            e = f" (coalesced {c['edges_coalesced']})" if "edges_coalesced" in c else ""
            e += f" (stored {c['edges_stored']})" if "edges_stored" in c else ""
            k = f"; {c['splits']['k']} splits" if "splits" in c else ""
            return f"{g}{c['nodes']} / {c['edges']}{e} / {c['features']} / {c['classes']}{k}"
        eq = ", ".join(k for k, v in row["equal"].items() if v)
        diff = ", ".join(k for k, v in row["equal"].items() if not v)
        lines.append(f"| `{row['id']}` | {reader[row['kind']]} | {fmt(row['pyg'])} | {fmt(row['fgl_jax'])} | "
                     f"= {eq or 'none'}" + (f"; **differs: {diff}**" if diff else "") + " |")
    (HERE / "layouts.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
