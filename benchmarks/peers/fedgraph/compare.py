"""fgl_jax's FedGCN vs FedGraph 0.2.5's, side by side on the same clients (outside CI).

    # once: FedGraph in its own venv (see README.md)
    FGL_JAX_DATA=/work/shared/data nice python -m benchmarks.peers.fedgraph.compare \
        --venv /work/peers/fedgraph-venv --datasets cora citeseer --seeds 0 1 2

What is shared: fgl_jax loads the Planetoid files, makes 10 Louvain clients and OpenFGL's per-client
20/40/40 split (as the OpenFGL harness, so the clients are the other tables' clients); the graph,
assignment and masks are exported and `run_fedgraph.py` runs FedGraph's own FedGCN code on them
(pre-training feature sums over each trainer's communicate set, AggreGCN, SGD). Both sides use
FedGraph's defaults for Cora/CiteSeer: hidden 16, dropout 0.5, SGD lr 0.5 (no momentum) with weight
decay 5e-4, 3 local steps, 100 rounds, num_hops 1, uniform server average; fgl_jax runs
`fedgcn_variant=fedgraph` (raw neighbour sums A X, own + 1-hop nodes). Reported accuracy: the test
accuracy after the last round, the global model on every client's own test nodes, pooled (FedGraph's
test-count weighted mean), since FedGraph has no validation-based selection.

Time: ms/round = wall time of the rounds / rounds, cpu ms/round the process CPU time of the same
calls (fgl_jax: run() of the already compiled program; FedGraph: its round loop including its
per-local-step tests). The one-off pre-training exchange is timed apart on FedGraph's side and is
host preparation in fgl_jax (not in the rounds on either side). Runs alternate sides.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
DIFFERENCES = [
    "Partition and split are fgl_jax's (Louvain, OpenFGL's 20/40/40 per-client rule), not FedGraph's label "
    "Dirichlet partition; FedGraph uses only the train and test masks.",
    "FedGraph runs in-process here (its Trainer_General/Server objects called in run_NC's order), not as ray "
    "actors: ray cannot place 10 one-CPU trainers on this 2-core machine (run_fedgraph.py).",
    "Initialisation and dropout come from different RNGs (torch vs JAX); GCN weights Glorot-uniform on both "
    "sides, FedGraph's first Linear layer uses torch's default (Kaiming-uniform) init, fgl_jax Glorot.",
    "FedGraph's second layer is PyG GCNConv on the communicate subgraph (self-loops added, symmetric "
    "normalisation), as fgl_jax's GCN on the same extended client graph.",
]


def run_fedgraph(job: dict, work: Path, venv_python: Path) -> dict:
    jp, rp = work / "job.json", work / "result.json"
    jp.write_text(json.dumps(job))
    proc = subprocess.run([str(venv_python), str(HERE / "run_fedgraph.py"), str(jp), str(rp)],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"FedGraph run failed ({job['dataset']}, seed {job['seed']}):\n{proc.stderr[-3000:]}")
    return json.loads(rp.read_text())


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--datasets", nargs="+", default=["cora", "citeseer"])
    p.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    p.add_argument("--rounds", type=int, default=100)
    p.add_argument("--clients", type=int, default=10)
    p.add_argument("--hops", type=int, default=1, help="FedGraph num_hops (1 and 2 build the same node sets there)")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--venv", default=os.environ.get("FEDGRAPH_VENV", "/work/peers/fedgraph-venv"))
    p.add_argument("--out", default=str(HERE / "results"))
    a = p.parse_args(argv)
    venv_python = Path(a.venv) / "bin" / "python"
    if not venv_python.exists():
        sys.exit(f"FedGraph venv missing at {a.venv} (see benchmarks/peers/fedgraph/README.md)")
    if a.threads == 1 and "jax" not in sys.modules:
        os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " --xla_cpu_multi_thread_eigen=false").strip()

    import jax
    from fgl_jax import FedConfig, ModelSpec, OptimConfig, RunConfig, get, records, run, table
    from fgl_jax.systems.baseline import prepare

    started = time.time()
    load0 = list(os.getloadavg())
    runs, i = [], 0
    with tempfile.TemporaryDirectory(prefix="fedgraph_cmp_") as tmp:
        for ds in a.datasets:
            cfg = RunConfig(dataset=ds, algorithm="fedgcn", clients=a.clients, partition="louvain", split="openfgl",
                            model="gcn", hidden=16, dropout=0.5, local_steps=3, optimizer="sgd", lr=0.5,
                            weight_decay=5e-4, rounds=a.rounds, eval_mode="global_model_on_local_data",
                            fedgcn_hops=a.hops, fedgcn_variant="fedgraph")
            algorithm = None
            for seed in a.seeds:
                prep = prepare(cfg.replace(split_seed=seed, seed=seed))
                g = prep.graph
                if algorithm is None:   # FedGraph's SGD has no momentum (RunConfig's sgd has 0.9)
                    spec = ModelSpec("gcn", g.num_features, g.num_classes, hidden=16, num_layers=2, dropout=0.5)
                    common = FedConfig(local_steps=3, optim=OptimConfig(name="sgd", lr=0.5, weight_decay=5e-4,
                                                                        momentum=0.0),
                                       eval_mode="global_model_on_local_data", model=spec)
                    algorithm = get("algorithm", "fedgcn")(spec.build(), common, cfg.hparams())
                    compile_s = float(run(algorithm, prep.data, jax.random.key(0), a.rounds).compile_seconds)
                work = Path(tmp) / f"{ds}_{seed}"
                work.mkdir()
                np.savez(work / "arrays.npz", x=np.asarray(g.dense_x(), np.float32), y=np.asarray(g.y, np.int64),
                         assignment=np.asarray(prep.partition.assignment, np.int64),
                         senders=np.asarray(g.senders, np.int64), receivers=np.asarray(g.receivers, np.int64),
                         train_mask=g.train_mask, val_mask=g.val_mask, test_mask=g.test_mask)
                job = {"arrays": str(work / "arrays.npz"), "dataset": ds, "clients": a.clients, "rounds": a.rounds,
                       "num_hops": a.hops, "local_steps": 3, "lr": 0.5, "num_layers": 2, "hidden": 16,
                       "seed": seed, "threads": a.threads}

                def fgl():
                    c0 = time.process_time()
                    res = run(algorithm, prep.data, jax.random.key(seed), a.rounds)
                    cpu = time.process_time() - c0
                    return {"final_test": float(res.history["test_acc"][-1]), "best_test": float(res.best["best_test"]),
                            "ms_per_round": 1000 * res.run_seconds / a.rounds, "cpu_ms_per_round": 1000 * cpu / a.rounds,
                            "compile_seconds": compile_s}

                sides = [("fgl_jax", fgl), ("fedgraph", lambda: run_fedgraph(job, work, venv_python))]
                if i % 2:
                    sides.reverse()
                rec = {"dataset": ds, "seed": seed, "first": sides[0][0], "loadavg": list(os.getloadavg())}
                for name, fn in sides:
                    rec[name] = fn()
                rec["fedgraph"].pop("test_acc", None)
                runs.append(rec)
                i += 1
                print(f"{ds} seed {seed}: fgl_jax {rec['fgl_jax']['final_test']:.4f} "
                      f"({rec['fgl_jax']['cpu_ms_per_round']:.1f} cpu ms/round), FedGraph "
                      f"{rec['fedgraph']['final_test']:.4f} ({rec['fedgraph']['cpu_ms_per_round']:.1f} cpu ms/round)",
                      flush=True)
    rows = []
    for ds in a.datasets:
        mine = [r for r in runs if r["dataset"] == ds]
        f = np.array([100 * r["fgl_jax"]["final_test"] for r in mine])
        o = np.array([100 * r["fedgraph"]["final_test"] for r in mine])
        sd = lambda v: v.std(ddof=1) if len(v) > 1 else 0.0
        mean = lambda side, k: float(np.mean([r[side][k] for r in mine]))
        rows.append({"dataset": ds, "algorithm": f"fedgcn (fedgraph variant, {a.hops}-hop) / FedGCN",
                     "seeds": len(mine), "fgl_jax acc %": f"{f.mean():.2f} ± {sd(f):.2f}",
                     "FedGraph acc %": f"{o.mean():.2f} ± {sd(o):.2f}", "diff (pts)": f"{f.mean() - o.mean():+.2f}",
                     "fgl_jax ms/round": f"{mean('fgl_jax', 'ms_per_round'):.1f}",
                     "FedGraph ms/round": f"{mean('fedgraph', 'ms_per_round'):.1f}",
                     "speed-up": f"{mean('fedgraph', 'ms_per_round') / mean('fgl_jax', 'ms_per_round'):.1f}x",
                     "fgl_jax cpu ms/round": f"{mean('fgl_jax', 'cpu_ms_per_round'):.1f}",
                     "FedGraph cpu ms/round": f"{mean('fedgraph', 'cpu_ms_per_round'):.1f}",
                     "cpu speed-up": f"{mean('fedgraph', 'cpu_ms_per_round') / mean('fgl_jax', 'cpu_ms_per_round'):.1f}x"})
    load1 = list(os.getloadavg())
    notes = ["", f"Setting: {a.clients} Louvain clients, OpenFGL's per-client split (train and test masks used), "
             f"AggreGCN / GCN(pre_aggregated) 2 layers x 16, dropout 0.5, SGD lr 0.5 weight decay 5e-4, 3 local "
             f"steps, {a.rounds} rounds, num_hops {a.hops}, seeds {a.seeds}; accuracy = pooled test accuracy of the "
             "global model after the last round.",
             f"Machine load average {load0[0]:.1f} at start / {load1[0]:.1f} at end (2 shared cores); "
             f"{a.threads} thread(s) per side.", "", "Differences that remain:", ""]
    notes += [f"- {d}" for d in DIFFERENCES]
    rec = records.make(Path(a.out).name, {"rows": rows, "runs": runs, "differences": DIFFERENCES}, config=vars(a),
                       seeds=a.seeds, title="fgl_jax vs FedGraph (FedGCN)", provenance=records.provenance(started=started))
    records.write(Path(a.out).with_suffix(".json"), rec, markdown=table(rows, disable_numparse=True) + "\n" + "\n".join(notes))
    print(table(rows, disable_numparse=True))


if __name__ == "__main__":
    main()
