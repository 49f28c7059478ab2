"""Issue 27's end-to-end check: a graph in the GNN-benchmark .npz layout that no test has seen, run with
`fgl-jax run ... fedavg gcn --clients 10 --partition louvain` and `fgl-jax hifgl`, against an independent
PyTorch Geometric run on the same graph and split (`pyg_side.py`, in its own venv).

The graph: ACM (HAN's ACM3025, /work/shared/data/hetero/acm3025) as the plain paper-author-paper graph
(PAP metapath adjacency, diagonal removed): 3,025 papers, 1,870 binary features, 3 classes. The library
registers ACM3025 only as a heterogeneous dataset; here it is written as a GNN-benchmark .npz (CSR adj_*,
CSR attr_*, labels; no split, so the loader's default stratified 60/20/20 split, seed 0, is used).

What each side should give: FedAvg (10 Louvain clients, cross-client edges dropped) the same on both
sides up to initialisation; HiFGL is lossless w.r.t. cross-silo edges (SecMP sums every neighbour
exactly), so it should match a centralised GCN on the whole graph with the same split and schedule (it
differs only in averaging 5 silos' one-step Adam updates instead of one global step).

    python benchmarks/peers/pyg/byog_check.py [--seeds 0,1,2] [--work /tmp/byog_check]
needs benchmarks/peers/pyg/.venv (python3 -m venv ... && .venv/bin/pip install torch==2.13.0 torch_geometric);
writes benchmarks/peers/pyg/results.md and results.json.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import scipy.io
import scipy.sparse as sp

import fgl_jax as fj

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
PYG = HERE / ".venv" / "bin" / "python"


def write_acm_npz(data_dir: Path, out: Path) -> dict:
    """ACM3025's PAP graph in the GNN-benchmark layout (what `fgl-jax` has never been given as a graph)."""
    mat = scipy.io.loadmat(data_dir / "hetero" / "acm3025" / "ACM3025.mat")
    a = sp.csr_matrix(np.asarray(mat["PAP"]), dtype=np.float32)
    a.setdiag(0)
    a.eliminate_zeros()
    x = sp.csr_matrix(np.asarray(mat["feature"], np.float32))
    y = np.asarray(mat["label"]).argmax(1).astype(np.int64)
    np.savez(out, adj_data=a.data, adj_indices=a.indices, adj_indptr=a.indptr, adj_shape=np.array(a.shape),
             attr_data=x.data, attr_indices=x.indices, attr_indptr=x.indptr, attr_shape=np.array(x.shape), labels=y)
    return {"nodes": int(a.shape[0]), "stored_adjacency_entries": int(a.nnz), "features": int(x.shape[1]),
            "classes": int(y.max() + 1)}


def cli(args: list[str]) -> dict:
    """Run `fgl-jax ARGS --out D` in a fresh process (this checkout's code); summary.json of the run."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    r = subprocess.run([sys.executable, "-m", "fgl_jax.cli", *args, "--no-progress", "--overwrite"], cwd=ROOT,
                       env=env, capture_output=True, text=True)
    if r.returncode:
        raise SystemExit(f"fgl-jax {' '.join(args)} failed:\n{r.stderr}")
    out = Path(args[args.index("--out") + 1])
    return {"summary": json.loads((out / "summary.json").read_text()), "stderr": r.stderr.strip().splitlines()}


def mean_std(v: list[float]) -> str:
    return f"{100 * statistics.mean(v):.2f} ± {100 * (statistics.stdev(v) if len(v) > 1 else 0.0):.2f}"


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--work", default="/tmp/byog_check")
    ap.add_argument("--data-dir", default=os.environ.get("FGL_JAX_DATA", "/work/shared/data"))
    args = ap.parse_args(argv)
    t0, started = time.perf_counter(), time.time()
    seeds = [int(s) for s in args.seeds.split(",")]
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    npz = work / "acm_pap.npz"
    info = write_acm_npz(Path(args.data_dir), npz)

    # what fgl_jax makes of the file: the split the runs use and the Louvain clients, exported for PyG
    g = fj.load(str(npz))
    part = fj.make_partition(g, "louvain", 10, seed=0)
    np.savez(work / "split.npz", train_mask=g.train_mask, val_mask=g.val_mask, test_mask=g.test_mask,
             louvain=part.assignment, y=g.y, num_directed_edges=g.num_edges)
    info.update(undirected_edges=g.num_undirected_edges(), notices=list(g.meta.get("notices", [])),
                split={k: int(getattr(g, f"{k}_mask").sum()) for k in ("train", "val", "test")},
                louvain_sizes=np.bincount(part.assignment, minlength=10).tolist())

    ours = {"fedavg": [], "hifgl": []}
    for s in seeds:
        ours["fedavg"].append(cli(["run", "--dataset", str(npz), "--algorithm", "fedavg", "--model", "gcn",
                                   "--clients", "10", "--partition", "louvain", "--seed", str(s),
                                   "--out", str(work / f"fedavg_{s}")]))
        ours["hifgl"].append(cli(["hifgl", "--dataset", str(npz), "--seed", str(s), "--out", str(work / f"hifgl_{s}")]))
    r = subprocess.run([str(PYG), str(HERE / "pyg_side.py"), str(npz), str(work / "split.npz"),
                        "--seeds", args.seeds], capture_output=True, text=True)
    if r.returncode:
        raise SystemExit(f"pyg_side.py failed:\n{r.stderr}")
    pyg = json.loads(r.stdout.strip().splitlines()[-1])

    def col(runs, key):
        return [x["summary"]["best"]["best_test"] if key == "best" else x["summary"]["final"]["test_acc"] for x in runs]

    rows = [("FedAvg-GCN, 10 Louvain clients", "fgl-jax run", col(ours["fedavg"], "best"), col(ours["fedavg"], "final"),
             "PyG FedAvg (same clients)", [p["test_at_best_val"] for p in pyg["fedavg"]],
             [p["final_test"] for p in pyg["fedavg"]]),
            ("HiFGL-GCN, 5 random silos", "fgl-jax hifgl", col(ours["hifgl"], "best"), col(ours["hifgl"], "final"),
             "PyG centralised GCN", [p["test_at_best_val"] for p in pyg["centralised"]],
             [p["final_test"] for p in pyg["centralised"]])]
    lines = ["# Your own graph, end to end: fgl-jax against PyTorch Geometric (issue 27)", "",
             "Written by `python benchmarks/peers/pyg/byog_check.py --seeds " + args.seeds + "` "
             f"({time.strftime('%Y-%m-%d %H:%M')}, {time.perf_counter() - t0:.0f} s, load average at the end "
             f"{os.getloadavg()[0]:.1f}). torch {pyg['torch']}, torch_geometric {pyg['torch_geometric']}, "
             f"jax {fj.environment()['jax']}.", "",
             f"Graph: ACM3025's paper-author-paper graph written as a GNN-benchmark `.npz` ({info['nodes']} nodes, "
             f"{info['undirected_edges']} undirected edges, {info['features']} binary features, {info['classes']} classes); "
             f"no split in the file, so the loader's default stratified split: train {info['split']['train']}, "
             f"val {info['split']['val']}, test {info['split']['test']}. Loader notices: "
             + ("; ".join(info["notices"]) or "none") + ".", "",
             f"Louvain clients (fgl_jax, seed 0, exported to PyG): sizes {info['louvain_sizes']}.", "",
             "Test accuracy (%) over seeds " + args.seeds + ", mean ± std; \"at best val\" = the round of best "
             "validation accuracy, as both sides report it.", "",
             "| run | fgl-jax command | at best val | last round | PyG reference | at best val | last round | Δ at best val (points) |",
             "|---|---|---|---|---|---|---|---|"]
    for name, cmd, ob, of, ref, pb, pf in rows:
        d = 100 * (statistics.mean(ob) - statistics.mean(pb))
        lines.append(f"| {name} | `{cmd}` | {mean_std(ob)} | {mean_std(of)} | {ref} | {mean_std(pb)} | {mean_std(pf)} | {d:+.2f} |")
    lines += ["", "Settings (both sides): 2-layer GCN (A + I, symmetric normalisation), hidden 64, ReLU, no dropout, "
              "Adam lr 0.01, no weight decay, 50 rounds. FedAvg: 1 local step per round, each client's Adam state kept, "
              "average weighted by training nodes, the global model evaluated on every client's subgraph (pooled). "
              "HiFGL (defaults): 5 random silos, field arithmetic (p = 2^31 - 1, 16 fractional bits), lr x0.9 every 4 "
              "rounds, the data's own split (`split: auto` keeps it on a user's file); the PyG centralised GCN uses the "
              "same schedule on the whole graph. What differs: initialisation (flax lecun-normal vs PyG glorot), and "
              "for HiFGL the unweighted average of 5 silos' Adam steps instead of one global step.", ""]
    from fgl_jax import records
    metrics = {"graph": info, "pyg": pyg, "fgl_jax": {
        k: [x["summary"]["best"] | {"final_test": x["summary"]["final"]["test_acc"]} for x in v]
        for k, v in ours.items()}}
    records.write(HERE / "results.json", records.make("results", metrics, config=vars(args), seeds=seeds,
                                                      title="Bring your own graph: fgl-jax vs PyG",
                                                      provenance=records.provenance(started=started)),
                  markdown="\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
