"""fgl_jax's partitioners vs OpenFGL 1.1.0's on the same graph: client sizes, edge cut, label skew.

    OPENFGL_VENV=/work/peers/openfgl-venv FGL_JAX_DATA=/work/shared/data \
        python -m benchmarks.peers.openfgl.partitions --datasets cora citeseer --clients 10

fgl_jax loads the graph and writes its undirected edge list and labels to a temporary .npz; this
same file, run inside OpenFGL's venv with --peer (it then imports only numpy, torch, torch_geometric
and openfgl), builds a PyG Data from them and calls OpenFGL's own simulation functions
(`openfgl.data.simulation.subgraph_fl_metis`, `_metis_plus`, `_louvain`, `_louvain_plus`, with
OpenFGL's defaults: louvain_resolution 1, louvain_delta 20, metis_num_coms 100), reading each
client's node list from `global_map`. Both sides' partitions are then measured by the same code
(`fgl_jax.partition.partition_report`). OpenFGL's k-means (scikit-learn, unseeded) is seeded
through numpy's global generator, one run per seed. Writes partitions.md / partitions.json.
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
DEFAULT_VENV = HERE.parent / ".venv-openfgl"
OPENFGL_MODES = {"metis": "subgraph_fl_metis", "metis_plus": "subgraph_fl_metis_plus",
                 "louvain": "subgraph_fl_louvain", "louvain_plus": "subgraph_fl_louvain_plus"}


def peer(inp: str, out: str, clients: int, seeds: list[int]) -> None:
    """Inside OpenFGL's venv: each OpenFGL mode's client node lists, per seed."""
    import contextlib
    import io
    from types import SimpleNamespace

    import torch
    from torch_geometric.data import Data
    from openfgl.data import simulation

    z = np.load(inp)
    ei = torch.as_tensor(z["edge_index"], dtype=torch.long)
    y = torch.as_tensor(z["y"], dtype=torch.long)
    n = int(y.shape[0])
    data = Data(x=torch.zeros((n, 1)), edge_index=ei, y=y)

    class Dataset(list):  # what the simulation functions use of a PyG dataset: [0], .num_classes, the
        num_classes = int(z["num_classes"])  # attributes of its one graph (edge_index, x, y)

        def __getattr__(self, name):
            return getattr(self[0], name)

    ds = Dataset([data])
    args = SimpleNamespace(num_clients=clients, louvain_resolution=1.0, louvain_delta=20, metis_num_coms=100)
    result = {}
    for name, fn in OPENFGL_MODES.items():
        runs = []
        for seed in (seeds if name.endswith("plus") else seeds[:1]):  # metis/louvain take no seed
            np.random.seed(seed)
            torch.manual_seed(seed)
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                local = getattr(simulation, fn)(args, ds)
            assignment = np.full(n, -1, np.int64)
            for k, sub in enumerate(local):
                assignment[np.asarray([sub.global_map[i] for i in range(len(sub.global_map))], np.int64)] = k
            runs.append({"seed": seed, "assignment": assignment.tolist()})
        result[name] = runs
    Path(out).write_text(json.dumps(result))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--datasets", nargs="+", default=["cora", "citeseer"])
    p.add_argument("--clients", type=int, default=10)
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    p.add_argument("--venv", default=os.environ.get("OPENFGL_VENV", str(DEFAULT_VENV)))
    p.add_argument("--out", default=str(HERE / "partitions"))
    p.add_argument("--peer", nargs=2, metavar=("IN_NPZ", "OUT_JSON"), help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.peer:
        return peer(a.peer[0], a.peer[1], a.clients, a.seeds)

    from fgl_jax import Partition, load_graph, louvain_communities, make_partition, partition_report, table

    py = Path(a.venv) / "bin" / "python"
    if not py.is_file():
        sys.exit(f"partitions.py: no OpenFGL venv at {a.venv} (bash benchmarks/peers/openfgl/setup.sh VENV)")
    rows, raw = [], {}
    for ds in a.datasets:
        g = load_graph(ds)
        keep = g.senders != g.receivers
        with tempfile.TemporaryDirectory() as tmp:
            inp, out = Path(tmp) / "g.npz", Path(tmp) / "out.json"
            np.savez(inp, edge_index=np.stack([g.senders[keep], g.receivers[keep]]).astype(np.int64),
                     y=np.maximum(np.asarray(g.y), 0), num_classes=g.num_classes)
            done = subprocess.run([str(py), str(Path(__file__).resolve()), "--peer", str(inp), str(out),
                                   "--clients", str(a.clients), "--seeds", *map(str, a.seeds)],
                                  capture_output=True, text=True)
            if done.returncode:
                sys.exit(f"OpenFGL side failed on {ds}:\n" + done.stderr[-3000:])
            theirs = json.loads(out.read_text())

        def summarise(side: str, method: str, parts: list) -> dict:
            reps = [partition_report(g, part) for part in parts]
            sizes = np.array([sorted(r["client_nodes"]["sizes"], reverse=True) for r in reps])
            return {"dataset": ds, "side": side, "method": method, "runs": len(reps),
                    "sizes (sorted, mean over runs)": " ".join(str(int(round(v))) for v in sizes.mean(0)),
                    "edge cut": float(np.mean([r["edge_cut"] for r in reps])),
                    "edge cut %": 100 * float(np.mean([r["edge_cut_fraction"] for r in reps])),
                    "label TV mean": float(np.mean([r["label_tv"]["mean"] for r in reps])),
                    "size cv": float(np.mean([r["client_nodes"]["cv"] for r in reps]))}

        for method, runs in theirs.items():
            parts = [Partition(np.asarray(r["assignment"]), a.clients, method, r["seed"]) for r in runs]
            rows.append(summarise("OpenFGL", method, parts))
            ours = {"metis": [("metis", {})], "metis_plus": [("metis_plus", {})],
                    "louvain": [("louvain", {"packing": "capped"}), ("louvain", {"packing": "whole"})],
                    "louvain_plus": [("louvain_plus", {})]}[method]
            for name, kw in ours:
                seeds = a.seeds if method != "metis" else a.seeds[:1]
                label = name + "".join(f" {k}={v}" for k, v in kw.items())
                rows.append(summarise("fgl_jax", label, [make_partition(g, name, a.clients, seed=s, **kw)
                                                         for s in seeds]))
        comms = louvain_communities(g, 1.0, 0)
        raw[ds] = {"fgl_jax_louvain_communities": len(comms), "largest_communities": [int(c.size) for c in comms[:5]],
                   "openfgl_louvain_cut_threshold": g.num_nodes // a.clients - 20}

    text = ["# Partitions: fgl_jax vs OpenFGL 1.1.0 on the same graph", "",
            f"`python -m benchmarks.peers.openfgl.partitions --datasets {' '.join(a.datasets)} --clients {a.clients} "
            f"--seeds {' '.join(map(str, a.seeds))}`. {a.clients} clients; seeded methods over seeds "
            f"{a.seeds} (OpenFGL: numpy's global seed for scikit-learn's k-means), METIS and OpenFGL's "
            "Louvain once (no seed). Edge cut = undirected edges between clients; label TV = mean over "
            "clients of the total-variation distance between a client's label mix and the graph's.", "",
            table([{k: (f"{v:.3f}" if isinstance(v, float) else v) for k, v in r.items()} for r in rows]), "",
            "Louvain communities (fgl_jax, networkx, seed 0): " + "; ".join(
                f"{ds}: {v['fgl_jax_louvain_communities']} communities, largest {v['largest_communities']}, "
                f"OpenFGL cuts communities above {v['openfgl_louvain_cut_threshold']} nodes" for ds, v in raw.items())]
    from fgl_jax import records
    records.write(a.out + ".json", records.make(Path(a.out).name, {"rows": rows, "communities": raw}, config=vars(a),
                                                seeds=a.seeds, title="Partitions: fgl_jax vs OpenFGL 1.1.0"),
                  markdown="\n".join(text))
    print("\n".join(text))


if __name__ == "__main__":
    main()
