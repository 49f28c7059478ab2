"""FedGC defence baselines, cost per condensation round: FedGC† (no defence), Reg (each client trains its
inference model at every round's θ, then uploads the regularised gradient) and LDP (clients privatise
their own uploads one after another). Cora, 10 clients, rate 0.5, raw features; all variants in one
process, medians of `--chunks` scans of `--chunk` rounds after a warm-up scan (which holds the compile).

    python benchmarks/bench_fedgc_defences.py [--data-dir D] [--chunk 20] [--chunks 5]
Writes benchmarks/results/fedgc_defences.json.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

import jax
import numpy as np

from fgl_jax.condense import condense_scan, make_condenser, synthetic_class_counts
from fgl_jax.data.planetoid import load_planetoid
from fgl_jax.systems.fedgc import FedGCConfig, condensation_client_data, prepare, train_class_counts

OUT = Path(__file__).resolve().parent / "results" / "fedgc_defences.json"


def bench(graph, defence: str, chunk: int, chunks: int) -> dict:
    cfg = FedGCConfig(defence=defence, feature_norm="none", rounds=chunk, eval_rounds=(chunk,))
    prep = prepare(graph, cfg, 0, log=lambda m: None)
    data = condensation_client_data(prep, cfg, 0)
    c = graph.num_classes
    cond = make_condenser(cfg.condense_config, graph.num_features, c)
    state = cond.init(jax.random.PRNGKey(0), synthetic_class_counts(train_class_counts(prep.eval_graphs, c).sum(0), cfg.rate))
    key = jax.random.PRNGKey(1)
    t = time.perf_counter()
    state, loss = condense_scan(cond, state, data, key, chunk)
    jax.block_until_ready(loss)
    first = time.perf_counter() - t
    times = []
    for _ in range(chunks):
        t = time.perf_counter()
        state, loss = condense_scan(cond, state, data, key, chunk)
        jax.block_until_ready(loss)
        times.append((time.perf_counter() - t) / chunk)
    per_round = float(np.median(times))
    return {"defence": defence, "median_round_s": per_round, "round_s_all": times,
            "compile_s": max(first - per_round * chunk, 0.0), "final_loss": float(np.asarray(loss)[-1])}


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--data-dir", default=None)
    ap.add_argument("--chunk", type=int, default=20)
    ap.add_argument("--chunks", type=int, default=5)
    args = ap.parse_args(argv)
    graph = load_planetoid("cora", data_dir=args.data_dir)
    out = {"command": "python benchmarks/bench_fedgc_defences.py " + " ".join(argv if argv is not None else
                                                                                  __import__("sys").argv[1:]),
           "machine": {"platform": platform.platform(), "cpus": os.cpu_count(), "loadavg": os.getloadavg()},
           "jax": jax.__version__, "results": []}
    for defence in ("none", "reg", "ldp"):
        r = bench(graph, defence, args.chunk, args.chunks)
        print(json.dumps({k: v for k, v in r.items() if k != "round_s_all"}), flush=True)
        out["results"].append(r)
    base = out["results"][0]["median_round_s"]
    for r in out["results"]:
        r["relative_to_none"] = r["median_round_s"] / base
    out["loadavg_end"] = os.getloadavg()
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(out, indent=1))
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
