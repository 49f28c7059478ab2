"""FedGC speed: Cora condensation (10 clients, `--rounds` rounds, no IB and with IB) end to end including
one evaluation, and per-round time on a synthetic arxiv-sized CSBM graph (169,343 nodes, 40 classes,
128 features, 5 clients). Medians after warm-up; compile time reported separately; peak RSS.

    python benchmarks/bench_fedgc.py [--rounds 500] [--quick] [--data-dir D]
    python benchmarks/bench_fedgc.py --default-cell [--data-dir D]
Writes benchmarks/results/fedgc.json. --default-cell instead times the whole default cell
(`fgl-jax fedgc --dataset cora`: self-training, IB, 2,000 rounds, 8 evaluations) in this process, wall
and CPU time (all threads) per stage, into benchmarks/results/fedgc_default_cell.json.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import jax
import numpy as np

from fgl_jax import csbm, load_planetoid, run
from fgl_jax.systems.fedgc import FedGCConfig, FedGCRun, condensed_graph, dense_graph_batch

sys.path.insert(0, str(Path(__file__).resolve().parent))  # harness.py, also when imported from elsewhere
from harness import RESULTS, command, loadavg, machine, peak_rss_mb, write_record  # noqa: E402

OUT = RESULTS / "fedgc.json"


def bench_condense(graph, cfg: FedGCConfig, chunk: int, label: str, evaluate: bool = True) -> dict:
    """cfg.rounds condensation rounds through the engine in chunks of `chunk` (host preparation timed
    apart), then optionally one evaluation of G' (GCN trained on it, tested on the clients)."""
    t0 = time.perf_counter()
    fr = FedGCRun(cfg, graph=graph)
    prep = time.perf_counter() - t0
    res = run(fr.algorithm, fr.data, jax.random.key(cfg.seed), cfg.rounds, chunk=chunk)
    jax.block_until_ready(res.state)
    per_round = res.run_seconds / cfg.rounds
    out = {"label": label, "rounds": cfg.rounds, "prepare_s": prep, "compile_s": res.compile_seconds,
           "median_round_s": per_round, "condense_total_s": res.compile_seconds + res.run_seconds}
    if evaluate:
        a, x, y = condensed_graph(res.state.cond)
        t = time.perf_counter()
        rec = fr.evaluate(dense_graph_batch(a, x, y), cfg.rounds)
        out["eval_s_incl_compile"] = time.perf_counter() - t
        out["test_acc"] = rec["test_acc"]
    out["end_to_end_s"] = time.perf_counter() - t0
    out["peak_rss_mb"] = peak_rss_mb()
    print(json.dumps(out), flush=True)
    return out


def bench_default_cell(data_dir=None) -> dict:
    """The CLI's default FedGC cell on Cora, end to end, through the engine (compilation included)."""
    import tempfile
    from fgl_jax import run_config
    t0, c0 = time.perf_counter(), time.process_time()
    with tempfile.TemporaryDirectory() as d:
        res = run_config(FedGCConfig(dataset="cora", data_dir=data_dir), out=d)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    out = {"label": "fgl-jax fedgc --dataset cora (default cell)", "wall_s": wall, "cpu_s": cpu,
           "stages_wall_s": {k: v for k, v in res.summary.get("describe", {}).items() if k.endswith("_s")},
           "rounds_wall_s": res.run_seconds,
           "eval_wall_s": res.extras.get("eval_seconds"), "compile_s": res.compile_seconds,
           "test_acc": res.best.get("test_acc"), "peak_rss_mb": peak_rss_mb()}
    print(json.dumps(out), flush=True)
    return out


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--default-cell", action="store_true")
    ap.add_argument("--rounds", type=int, default=500)
    ap.add_argument("--arxiv-rounds", type=int, default=20)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--data-dir", default=None)
    args = ap.parse_args(argv)
    if args.default_cell:
        res = {"command": command(__file__, argv), "machine": machine(), "jax": jax.__version__,
               "results": [bench_default_cell(args.data_dir)], "loadavg_end": loadavg()}
        write_record(RESULTS / "fedgc_default_cell.json", res)
        return
    rounds = 50 if args.quick else args.rounds
    res = {"command": command(__file__, argv), "machine": machine(), "jax": jax.__version__, "results": []}
    cora = load_planetoid("cora", data_dir=args.data_dir)
    cfg = FedGCConfig(rate=0.5, defence="none", rounds=rounds)
    res["results"].append(bench_condense(cora, cfg, 50 if rounds >= 100 else 10,
                                         f"cora 10 clients rate 0.5, {rounds} rounds (raw X)"))
    n = 20000 if args.quick else 169343
    g = csbm(num_nodes=n, num_classes=40, num_features=128, avg_degree=13.7, homophily=0.65, seed=0,
             name=f"synthetic-arxiv-csbm-{n}")
    r = 4 if args.quick else args.arxiv_rounds
    acfg = FedGCConfig(dataset="csbm", clients=5, rate=0.001, defence="none", feature_norm="standard", fanout=10,
                       cap=256, pools=2, l_hop=1, pge_hidden=256, rounds=r)
    res["results"].append(bench_condense(g, acfg, max(r // 4, 1), f"synthetic arxiv-sized CSBM n={n}, 5 clients",
                                         evaluate=False))
    res["loadavg_end"] = loadavg()
    write_record(OUT, res)
    print(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
