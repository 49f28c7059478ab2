"""Issue 48 item 1's "done when": every public layout PyTorch Geometric can read, read by PyG's own
reader (`layouts_pyg.py`, in the PyG venv) and by fgl_jax's loader (`fgl_jax.data.load`), and their
node / edge / feature / class counts recorded side by side.

    python benchmarks/peers/pyg/layouts.py [--pyg /work/peers/pyg-venv/bin/python] [--work /tmp/layouts]

writes benchmarks/peers/pyg/layouts.json and layouts.md (overwritten). tests/test_layout_counts.py
checks fgl_jax's counts against the committed PyG counts (the independent reference).

Files: the two GNN-benchmark .npz spellings (small graphs written here by `write_gnnbench_npz`:
none is in the offline data), every Platonov heterophily .npz, the Planetoid raw files of Cora and
CiteSeer, and every TU directory and zip in $FGL_JAX_DATA (default /work/shared/data). No OGB
node-property directory and no Geom-GCN ``out1_*`` file is in the offline data; PyG has no reader
of its own for the OGB layout (the ``ogb`` package reads it), so neither is compared here.

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
sys.path[:0] = [str(HERE.parents[2]), str(HERE.parents[1])]
from harness import write_record  # noqa: E402
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
    return {"nodes": int(g.num_nodes), "edges": int(g.num_edges), "features": int(g.num_features),
            "classes": int(y[y >= 0].max()) + 1 if (y >= 0).any() else 0}


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
              "torch_geometric": pyg["torch_geometric"], "jax": jax.__version__, "data": str(DATA), "files": rows}
    write_record(HERE / "layouts.json", record,
                 title="every public layout: fgl_jax's loader vs PyG's readers (node/edge/feature/class counts)")
    lines = ["# Every public layout: fgl_jax's loader against PyTorch Geometric's reader (issue 48)", "",
             f"Written by `{record['command']}` (torch {record['torch']}, torch_geometric "
             f"{record['torch_geometric']}, jax {record['jax']}); data from `{DATA}`. Counts: nodes, stored "
             "directed edges, features, classes (graphs for TU sets). `=` marks a count equal on both sides; "
             "tests/test_layout_counts.py checks fgl_jax's against the PyG column.", "",
             "| file | reader (PyG) | PyG: nodes / edges / features / classes | fgl_jax | equal |",
             "|---|---|---|---|---|"]
    reader = {"gnnbench": "io.read_npz", "gnnbench_dotted": "io.npz.parse_npz (keys renamed)",
              "heterophily": "HeterophilousGraphDataset", "planetoid": "Planetoid", "tu": "TUDataset"}
    for row in rows:
        def fmt(c: dict) -> str:
            if "error" in c:
                return f"error: {c['error'][:80]}"
            g = f"{c['graphs']} graphs, " if "graphs" in c else ""
            return f"{g}{c['nodes']} / {c['edges']} / {c['features']} / {c['classes']}"
        eq = ", ".join(k for k, v in row["equal"].items() if v)
        diff = ", ".join(k for k, v in row["equal"].items() if not v)
        lines.append(f"| `{row['id']}` | {reader[row['kind']]} | {fmt(row['pyg'])} | {fmt(row['fgl_jax'])} | "
                     f"= {eq or 'none'}" + (f"; **differs: {diff}**" if diff else "") + " |")
    (HERE / "layouts.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
