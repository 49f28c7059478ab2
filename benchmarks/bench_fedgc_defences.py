"""FedGC defence baselines, cost per condensation round: FedGC† (no defence), Reg (each client trains its
inference model at every round's θ, then uploads the regularised gradient) and LDP (clients privatise
their own uploads one after another). Cora, 10 clients, rate 0.5, raw features; all variants in one
process, `--chunks` x `--chunk` rounds through the engine (compile timed apart; mean per round).

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

from fgl_jax import load_planetoid, run
from fgl_jax.systems.fedgc import FedGCConfig, FedGCRun

sys.path.insert(0, str(Path(__file__).resolve().parent))  # harness.py, also when imported from elsewhere
from harness import RESULTS, command, loadavg, machine, write_record  # noqa: E402

OUT = RESULTS / "fedgc_defences.json"


def bench(graph, defence: str, chunk: int, chunks: int) -> dict:
    rounds = chunk * chunks
    cfg = FedGCConfig(defence=defence, feature_norm="none", rounds=rounds)
    fr = FedGCRun(cfg, graph=graph)
    res = run(fr.algorithm, fr.data, jax.random.key(0), rounds, chunk=chunk)
    return {"defence": defence, "mean_round_s": res.run_seconds / rounds, "compile_s": res.compile_seconds,
            "final_loss": float(np.asarray(res.history["train_loss"])[-1])}


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
        print(json.dumps(r), flush=True)
        out["results"].append(r)
    base = out["results"][0]["mean_round_s"]
    for r in out["results"]:
        r["relative_to_none"] = r["mean_round_s"] / base
    out["loadavg_end"] = loadavg()
    print(f"wrote {write_record(OUT, out)}")


if __name__ == "__main__":
    main()
