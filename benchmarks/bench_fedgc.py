"""FedGC speed: Cora condensation (10 clients, `--rounds` rounds, no IB and with IB) end to end including
one evaluation, and per-round time on a synthetic arxiv-sized CSBM graph (169,343 nodes, 40 classes,
128 features, 5 clients). Medians after warm-up; compile time reported separately; peak RSS.

    python benchmarks/bench_fedgc.py [--rounds 500] [--quick] [--data-dir D]
Writes benchmarks/results/fedgc.json.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import jax
import numpy as np

from fgl_jax.condense import CondenseConfig, build_client_data, condense_scan, make_condenser, synthetic_class_counts
from fgl_jax.condense.evaluate import dense_graph_batch, make_evaluator, pooled
from fgl_jax.condense import condensed_graph
from fgl_jax.batch import stack_graphs
from fgl_jax.data.planetoid import load_planetoid
from fgl_jax.data.synthetic import csbm
from fgl_jax.systems.fedgc import FedGCConfig, normalize_features, prepare_clients

sys.path.insert(0, str(Path(__file__).resolve().parent))  # harness.py, also when imported from elsewhere
from harness import RESULTS, command, loadavg, machine, peak_rss_mb, timed, write_json  # noqa: E402

OUT = RESULTS / "fedgc.json"


def bench_condense(graph, cfg: FedGCConfig, rounds: int, chunk: int, label: str, evaluate: bool = True) -> dict:
    t0 = time.perf_counter()
    graph = normalize_features(graph, cfg.feature_norm)
    part, graphs, ids = prepare_clients(graph, cfg, 0)
    data = build_client_data(graphs, [g.x for g in graphs], relay=cfg.condense.relay, fanout=cfg.fanout,
                             cap=cfg.cap, pools=cfg.pools)
    prep = time.perf_counter() - t0
    d, c = graph.num_features, graph.num_classes
    cond = make_condenser(cfg.condense, d, c)
    state = cond.init(jax.random.PRNGKey(0), synthetic_class_counts(np.asarray(data.counts).sum(0), cfg.rate))
    key = jax.random.PRNGKey(1)
    box = {"state": state}

    def scan_chunk():  # `chunk` rounds; the state carries over to the next call
        box["state"], loss = condense_scan(cond, box["state"], data, key, chunk)
        return loss

    # the warm-up scan holds the compile (and `chunk` rounds); then whole chunks until `rounds` are done
    more = max(0, -(-(rounds - chunk) // chunk))  # ceil((rounds - chunk) / chunk)
    timing = timed(scan_chunk, more)
    state = box["state"]
    first = timing.first_s
    times = [s / chunk for s in timing.wall_s]
    done = chunk * (1 + len(times))
    per_round = float(np.median(times)) if times else first / chunk
    compile_s = max(first - per_round * chunk, 0.0)
    out = {"label": label, "rounds": done, "prepare_s": prep, "compile_s": compile_s,
           "median_round_s": per_round, "condense_total_s": first + sum(t * chunk for t in times)}
    if evaluate:
        clients = stack_graphs(graphs, ids)
        ev = make_evaluator(cfg.eval, d, c)
        a, x, y = condensed_graph(state)
        t = time.perf_counter()
        res = ev(jax.random.PRNGKey(2), dense_graph_batch(a, x, y), clients)
        jax.block_until_ready(res)
        out["eval_s_incl_compile"] = time.perf_counter() - t
        out["test_acc"] = pooled(res)["test_acc"]
    out["end_to_end_s"] = time.perf_counter() - t0
    out["peak_rss_mb"] = peak_rss_mb()
    print(json.dumps(out), flush=True)
    return out


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=500)
    ap.add_argument("--arxiv-rounds", type=int, default=20)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--data-dir", default=None)
    args = ap.parse_args(argv)
    rounds = 50 if args.quick else args.rounds
    res = {"command": command(__file__, argv), "machine": machine(), "jax": jax.__version__, "results": []}
    cora = load_planetoid("cora", data_dir=args.data_dir)
    cfg = FedGCConfig(rate=0.5, condense=CondenseConfig(lr_feat=1e-2))
    res["results"].append(bench_condense(cora, cfg, rounds, 50 if rounds >= 100 else 10,
                                         f"cora 10 clients rate 0.5, {rounds} rounds (raw X)"))
    n = 20000 if args.quick else 169343
    g = csbm(num_nodes=n, num_classes=40, num_features=128, avg_degree=13.7, homophily=0.65, seed=0,
             name=f"synthetic-arxiv-csbm-{n}")
    acfg = FedGCConfig(num_clients=5, rate=0.001, use_ib=False, feature_norm="standard", fanout=10, cap=256,
                       pools=2, l_hop=1, condense=CondenseConfig(pge_hidden=256, lr_feat=1e-2))
    r = 4 if args.quick else args.arxiv_rounds
    res["results"].append(bench_condense(g, acfg, r, max(r // 4, 1), f"synthetic arxiv-sized CSBM n={n}, 5 clients",
                                         evaluate=False))
    res["loadavg_end"] = loadavg()
    write_json(OUT, res)
    print(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
