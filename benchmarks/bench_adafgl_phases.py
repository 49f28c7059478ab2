"""AdaFGL's rounds per phase: the one-program round (`round`, phases picked by lax.cond) against the
engine's two phase programs (`FederatedAlgorithm.phases`), alternated in one process.

The harness's Cora cell (10 Louvain clients, OpenFGL's split, GCN 2 x 64, 50 FedAvg rounds then
50 personalised ones, seed 0's clients); each variant runs 100 rounds in two chunks of 50 (one
per phase), timed between chunks (`Hooks.on_chunk`: the chunk's device work plus the engine's
host step); medians over `--reps` alternated runs, wall and process CPU per round.

    FGL_JAX_DATA=/work/shared/data python -m benchmarks.bench_adafgl_phases --reps 3 --out benchmarks/results/adafgl_phases
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import jax
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))  # harness.py, also under python -m
from harness import write_record  # noqa: E402

from fgl_jax import Hooks, RunConfig, run, schema  # noqa: E402
from fgl_jax.systems.baseline import algorithm_from_config, prepare  # noqa: E402


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--out", default=None, help="write the record <out>.json and the table <out>.md")
    p.add_argument("--data-dir", default=None, help="the datasets (default: $FGL_JAX_DATA)")
    a = p.parse_args(argv)
    if a.data_dir:
        os.environ["FGL_JAX_DATA"] = a.data_dir
    cfg = RunConfig(dataset="cora", algorithm="adafgl", clients=10, partition="louvain", split="openfgl", model="gcn",
                    hidden=64, num_layers=2, dropout=0.5, local_steps=3, optimizer="adam", lr=1e-2, weight_decay=5e-4,
                    rounds=100, eval_mode="local_model_on_local_data", eval_average="client_nodes",
                    adafgl_rounds_vanilla=50)
    prep = prepare(cfg.replace(split_seed=0, seed=0))
    phased = algorithm_from_config(cfg, prep.graph)
    variants = {"one program": phased._replace(phases=()), "two phase programs": phased}
    marks: list = []
    hooks = Hooks(on_chunk=lambda r, s, h: marks.append((r, time.perf_counter(), time.process_time())) or None)
    load0 = os.getloadavg()
    results = {}
    for name, alg in variants.items():    # compile (and check the two agree)
        results[name] = run(alg, prep.data, jax.random.key(0), 100, chunk=50, hooks=hooks).history["test_acc"]
    moved = float(np.max(np.abs(np.asarray(results["one program"]) - np.asarray(results["two phase programs"]))))
    times = {n: {1: [], 2: []} for n in variants}
    for i in range(a.reps):
        for name, alg in variants.items():
            marks.clear()
            t, c = time.perf_counter(), time.process_time()
            run(alg, prep.data, jax.random.key(i), 100, chunk=50, hooks=hooks)
            (_, t1, c1), (_, t2, c2) = marks
            times[name][1].append((1000 * (t1 - t) / 50, 1000 * (c1 - c) / 50))
            times[name][2].append((1000 * (t2 - t1) / 50, 1000 * (c2 - c1) / 50))
    load1 = os.getloadavg()
    rows = []
    for name in variants:
        w = {ph: float(np.median([x[0] for x in times[name][ph]])) for ph in (1, 2)}
        c = {ph: float(np.median([x[1] for x in times[name][ph]])) for ph in (1, 2)}
        rows.append({"variant": name, "phase 1 wall ms": w[1], "phase 1 cpu ms": c[1], "phase 2 wall ms": w[2],
                     "phase 2 cpu ms": c[2], "mean wall ms": (w[1] + w[2]) / 2, "mean cpu ms": (c[1] + c[2]) / 2})
    text = ["| " + " | ".join(rows[0]) + " |", "|" + "---|" * len(rows[0])]
    text += ["| " + " | ".join(f"{v:.1f}" if isinstance(v, float) else v for v in r.values()) + " |" for r in rows]
    text += ["", f"Per round, medians of {a.reps} alternated runs; load average {load0[0]:.1f} at start, "
                 f"{load1[0]:.1f} at end ({os.cpu_count()} cores). Largest test-accuracy difference between the "
                 f"variants over the 100 rounds of seed 0: {moved:.2g}."]
    print("\n".join(text))
    if a.out:
        Path(a.out + ".md").write_text("\n".join(text) + "\n")
        write_record(a.out + ".json", {"rows": rows, "raw": times, "load": [load0, load1], "test_acc_max_diff": moved},
                     config={"reps": a.reps, **schema.to_dict(cfg)}, seeds=[0])


if __name__ == "__main__":
    main()
