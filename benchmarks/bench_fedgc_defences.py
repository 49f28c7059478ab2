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
import sys
from pathlib import Path

import jax
import numpy as np

from fgl_jax.condense import condense_scan, make_condenser, synthetic_class_counts
from fgl_jax.data.planetoid import load_planetoid
from fgl_jax.systems.fedgc import FedGCConfig, condensation_client_data, prepare, train_class_counts

sys.path.insert(0, str(Path(__file__).resolve().parent))  # harness.py, also when imported from elsewhere
from harness import RESULTS, command, loadavg, machine, timed, write_json  # noqa: E402

OUT = RESULTS / "fedgc_defences.json"


def bench(graph, defence: str, chunk: int, chunks: int) -> dict:
    cfg = FedGCConfig(defence=defence, feature_norm="none", rounds=chunk, eval_rounds=(chunk,))
    prep = prepare(graph, cfg, 0, log=lambda m: None)
    data = condensation_client_data(prep, cfg, 0)
    c = graph.num_classes
    cond = make_condenser(cfg.condense_config, graph.num_features, c)
    counts = synthetic_class_counts(train_class_counts(prep.eval_graphs, c).sum(0), cfg.rate)
    box = {"state": cond.init(jax.random.PRNGKey(0), counts)}
    key = jax.random.PRNGKey(1)

    def scan_chunk():  # `chunk` rounds; the state carries over to the next call
        box["state"], loss = condense_scan(cond, box["state"], data, key, chunk)
        return loss

    timing = timed(scan_chunk, chunks)  # the warm-up scan holds the compile
    times = [s / chunk for s in timing.wall_s]
    per_round = float(np.median(times))
    return {"defence": defence, "median_round_s": per_round, "round_s_all": times,
            "compile_s": max(timing.first_s - per_round * chunk, 0.0),
            "final_loss": float(np.asarray(timing.last)[-1])}


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--data-dir", default=None)
    ap.add_argument("--chunk", type=int, default=20)
    ap.add_argument("--chunks", type=int, default=5)
    args = ap.parse_args(argv)
    graph = load_planetoid("cora", data_dir=args.data_dir)
    out = {"command": command(__file__, argv), "machine": machine(), "jax": jax.__version__, "results": []}
    for defence in ("none", "reg", "ldp"):
        r = bench(graph, defence, args.chunk, args.chunks)
        print(json.dumps({k: v for k, v in r.items() if k != "round_s_all"}), flush=True)
        out["results"].append(r)
    base = out["results"][0]["median_round_s"]
    for r in out["results"]:
        r["relative_to_none"] = r["median_round_s"] / base
    out["loadavg_end"] = loadavg()
    print(f"wrote {write_json(OUT, out)}")


if __name__ == "__main__":
    main()
