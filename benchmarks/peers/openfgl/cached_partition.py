"""OpenFGL's own cache files read back by fgl_jax (``--partition-file DIR``): the same clients and split.

    FGL_JAX_DATA=/work/shared/data python benchmarks/peers/openfgl/cached_partition.py \
        [--venv /work/peers/openfgl-venv] [--clients 3 10] [--keep DIR]

For each client count, OpenFGL 1.1.0 (in its venv, `--peer`) builds its FGLTrainer on Cora with
its Louvain simulation (``subgraph_fl_louvain``, resolution 1) and its default node split, from the
Planetoid files of $FGL_JAX_DATA (symbolic links; nothing downloaded). That writes its cache:

    <root>/distrib/subgraph_fl_louvain_1_Cora_client_<K>/data_<i>.pt
    <root>/distrib/subgraph_fl_louvain_1_Cora_client_<K>/node_cls/default_split/{train,val,test}_<i>.pt

The peer then reports, by loading those files with torch itself, each client's global node ids and
global train/val/test ids and the cut edges of the partition on OpenFGL's own global edge_index.
fgl_jax reads the same directory with `fgl_jax.read_openfgl_cache` (no torch, a restricted
unpickler) and the record states whether the assignment and the masks are equal, with the client
sizes and cut edges both ways. Writes cached_partition.json (overwritten). The issue quotes OpenFGL's
Louvain on Cora with 10 clients at 250-289 nodes per client and 906 cut edges.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parents[2]), str(HERE.parents[1])]
DEFAULT_VENV = Path(os.environ.get("OPENFGL_VENV", "/work/peers/openfgl-venv"))
DATA = Path(os.environ.get("FGL_JAX_DATA", "/work/shared/data"))
PLANETOID_PARTS = ("x", "tx", "allx", "y", "ty", "ally", "graph", "test.index")


def peer(root: str, clients: int, out: str, data: str) -> None:
    """Inside OpenFGL's venv: build the cache with FGLTrainer, report it as read by torch."""
    import contextlib
    import io
    import pickle
    os.environ.setdefault("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "1")  # OpenFGL torch.load()s whole Data objects
    import torch
    raw = Path(root) / "global" / "subgraph_fl" / "Cora" / "raw"
    raw.mkdir(parents=True, exist_ok=True)
    for part in PLANETOID_PARTS:
        link = raw / f"ind.cora.{part}"
        if not link.exists():
            link.symlink_to(Path(data) / "planetoid" / f"ind.cora.{part}")
    from openfgl.config import parser
    from openfgl.flcore.trainer import FGLTrainer
    from openfgl.utils.basic_utils import seed_everything
    args = parser.parse_args([])
    args.root, args.dataset, args.scenario, args.task = root, ["Cora"], "subgraph_fl", "node_cls"
    args.simulation_mode, args.louvain_resolution = "subgraph_fl_louvain", 1
    args.num_clients, args.num_rounds, args.fl_algorithm, args.model = clients, 0, "fedavg", ["gcn"]
    args.use_cuda, args.train_val_test, args.seed, args.metrics = False, "default_split", 0, ["accuracy"]
    seed_everything(0)
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        trainer = FGLTrainer(args)
    proc = Path(root) / "distrib" / f"subgraph_fl_louvain_1_Cora_client_{clients}"
    split = proc / "node_cls" / "default_split"
    per_client = []
    for i in range(clients):
        d = torch.load(proc / f"data_{i}.pt")
        nodes = [int(d.global_map[j]) for j in range(d.num_nodes)]
        masks = {s: torch.load(split / f"{s}_{i}.pt") for s in ("train", "val", "test")}
        glb = {}
        for s in ("train", "val", "test"):
            with open(split / f"glb_{s}_{i}.pkl", "rb") as fh:   # OpenFGL's own file, in the peer's venv
                glb[s] = sorted(int(v) for v in pickle.load(fh))
            assert glb[s] == sorted(nodes[j] for j in masks[s].nonzero().view(-1).tolist())
        per_client.append({"nodes": nodes, **glb})
    ei = trainer.server.task.data.edge_index.numpy()   # OpenFGL's global graph (to_undirected, no self-loops)
    client = np.full(int(ei.max()) + 1, -1)
    for i, c in enumerate(per_client):
        client[c["nodes"]] = i
    u, v = ei
    und = {(int(a), int(b)) for a, b in zip(np.minimum(u, v), np.maximum(u, v)) if a != b}
    cut = sum(client[a] != client[b] for a, b in und)
    Path(out).write_text(json.dumps({"processed_dir": str(proc), "clients": per_client, "cut_edges": int(cut),
                                     "global_edges": len(und), "torch": torch.__version__}))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--venv", default=str(DEFAULT_VENV), help="OpenFGL 1.1.0's venv (bin/python)")
    ap.add_argument("--clients", type=int, nargs="+", default=[3, 10], help="client counts to simulate")
    ap.add_argument("--keep", default=None, help="OpenFGL root to write the caches under (default: a temporary one)")
    ap.add_argument("--peer", nargs=3, metavar=("ROOT", "CLIENTS", "OUT"), help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.peer:
        return peer(a.peer[0], int(a.peer[1]), a.peer[2], str(DATA))

    import fgl_jax as fj
    from harness import write_record
    g = fj.load_graph("cora")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(a.keep or tmp)
        for k in a.clients:
            out = Path(tmp) / f"peer_{k}.json"
            done = subprocess.run([str(Path(a.venv) / "bin" / "python"), str(Path(__file__).resolve()), "--peer",
                                   str(root), str(k), str(out)], capture_output=True, text=True)
            if done.returncode:
                sys.exit(f"OpenFGL side failed ({k} clients):\n" + done.stderr[-3000:])
            theirs = json.loads(out.read_text())
            cache = fj.read_openfgl_cache(theirs["processed_dir"], g)
            want = np.full(g.num_nodes, -1)
            for i, c in enumerate(theirs["clients"]):
                want[c["nodes"]] = i
            same_masks = {}
            for s, m in zip(("train", "val", "test"), cache.masks):
                ids = sorted(v for c in theirs["clients"] for v in c[s])
                same_masks[s] = bool(np.array_equal(np.flatnonzero(m), ids))
            report = fj.partition_report(g, fj.Partition(cache.assignment, cache.num_clients, "openfgl_cache", 0))
            rows.append({"clients": k, "processed_dir": Path(theirs["processed_dir"]).name,
                         "assignment_equal": bool(np.array_equal(cache.assignment, want)),
                         "masks_equal": same_masks,
                         "sizes_openfgl": [len(c["nodes"]) for c in theirs["clients"]],
                         "sizes_fgl_jax": [int(v) for v in np.bincount(cache.assignment, minlength=k)],
                         "cut_edges_openfgl": theirs["cut_edges"], "cut_edges_fgl_jax": int(report["edge_cut"]),
                         "split_sizes_fgl_jax": {s: int(m.sum()) for s, m in zip(("train", "val", "test"), cache.masks)},
                         "torch": theirs["torch"]})
    write_record(HERE / "cached_partition.json", {"command": "python benchmarks/peers/openfgl/cached_partition.py",
                                                  "dataset": "cora", "simulation": "subgraph_fl_louvain (resolution 1)",
                                                  "rows": rows},
                 title="OpenFGL's cached clients and split read back by fgl_jax (--partition-file DIR)")
    for r in rows:
        print(json.dumps(r))


if __name__ == "__main__":
    main()
