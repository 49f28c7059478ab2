"""OpenFGL's side of `compare.py` alone, for a peer so slow that it is run ahead (in the background,
while fgl_jax's side is still being worked on); `compare.py --openfgl-from` then takes these runs
instead of re-running them (the two sides are then not alternated in one run; the results say so).

    FGL_JAX_DATA=/work/shared/data nice python -m benchmarks.peers.openfgl.openfgl_only \
        --venv /work/peers/openfgl-venv --datasets cora citeseer --algorithms adafgl --seeds 0 1 2 \
        --rounds 100 --out benchmarks/peers/openfgl/openfgl_only_adafgl.jsonl

Jobs (graph, partition, split, options) are built exactly as compare.py builds them; one JSON line
per run: dataset, algorithm, seed, rounds, job (without paths), load average, wall s, OpenFGL's result.
"""
from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

from benchmarks.peers.openfgl import compare as C


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--venv", required=True)
    p.add_argument("--datasets", nargs="+", default=["cora", "citeseer"], choices=sorted(C.DATASETS))
    p.add_argument("--algorithms", nargs="+", required=True)
    p.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    p.add_argument("--rounds", type=int, default=100)
    p.add_argument("--out", required=True, help="JSON lines file (appended)")
    a = p.parse_args(argv)
    from fgl_jax import RunConfig, resolve_data_dir
    from fgl_jax.systems.baseline import prepare
    planetoid = Path(resolve_data_dir(None)) / "planetoid"
    venv_python = Path(a.venv) / "bin" / "python"
    # compare.py's defaults for everything it does not take here
    d = dict(clients=10, hidden=64, num_layers=2, dropout=0.5, lr=0.01, weight_decay=5e-4, local_epochs=3,
             eval_mode="local_model_on_local_data", prox_mu=1e-3, threads=1)
    with tempfile.TemporaryDirectory(prefix="openfgl_only_") as tmp:
        for ds in a.datasets:
            for algo in a.algorithms:
                cfg = RunConfig(dataset=ds, algorithm=algo, clients=d["clients"], partition="louvain", split="openfgl",
                                model="gcn", hidden=d["hidden"], num_layers=d["num_layers"], dropout=d["dropout"],
                                local_steps=d["local_epochs"], optimizer="adam", lr=d["lr"],
                                weight_decay=d["weight_decay"], rounds=a.rounds, eval_mode=d["eval_mode"],
                                eval_average="client_nodes", **C.FGL_OPTIONS.get(algo, {}))
                for seed in a.seeds:
                    prep = prepare(cfg.replace(split_seed=seed, seed=seed))
                    work = Path(tmp) / f"{ds}_{algo}_{seed}"
                    work.mkdir(parents=True, exist_ok=True)
                    C.export(prep, work / "arrays.npz")
                    job = {"openfgl_dataset": C.DATASETS[ds], "openfgl_algorithm": C.ALGORITHMS[algo],
                           "clients": d["clients"], "rounds": a.rounds, "hidden": d["hidden"],
                           "num_layers": d["num_layers"], "dropout": d["dropout"], "lr": d["lr"],
                           "weight_decay": d["weight_decay"], "local_epochs": d["local_epochs"],
                           "eval_mode": d["eval_mode"], "seed": seed, "prox_mu": d["prox_mu"],
                           "num_classes": prep.graph.num_classes, "threads": d["threads"],
                           "openfgl_config": C.OPENFGL_CONFIG.get(algo, {})}
                    paths = {"root": str(work / "root"), "planetoid_dir": str(planetoid),
                             "arrays": str(work / "arrays.npz")}
                    load, t = list(os.getloadavg()), time.perf_counter()
                    res = C.run_openfgl({**job, **paths}, work, venv_python)
                    rec = {"dataset": ds, "algorithm": algo, "seed": seed, "rounds": a.rounds, "job": job,
                           "loadavg": load, "loadavg_end": list(os.getloadavg()),
                           "wall_seconds": time.perf_counter() - t, "openfgl": res}
                    with open(a.out, "a") as f:
                        f.write(json.dumps(rec) + "\n")
                    print(f"{ds} {algo} seed {seed}: {res['best_test']:.4f}, {res.get('cpu_ms_per_round', 0):.1f} "
                          "cpu ms/round", flush=True)


if __name__ == "__main__":
    main()
