"""Scaling benchmark (issue 8): FedAvg cost per round from 10 to 20,000 clients, and FedAvg on a
synthetic 1,000,000-node graph with 1,000 clients, with peak memory. -> benchmarks/results/scaling.json

Graphs: `fgl_jax.data.synthetic.csbm` with many small blocks ("communities", the CSBM classes)
and high homophily, so a partition that gives each client whole communities keeps most edges
(a random partition of a CSBM graph into 20,000 parts would keep almost none). The label to
learn is community % 4 (4 classes); accuracy is not the point here, cost is.

    200k nodes, 20,000 communities of 10 nodes, 32 dense features, mean degree 8, homophily 0.8:
        clients K in 10, 100, 1000, 10000, 20000; client k holds communities [k M/K, (k+1) M/K)
    1M nodes, 1,000 communities of 1,000 nodes, same features: 1,000 clients, one community each

FedAvg-GCN (2 layers, hidden 32, 1 local Adam step, evaluation every round). Each configuration
runs in its own process (honest peak RSS via getrusage, which includes graph generation and
batch building); compile time is separate; ms/round = median over `repeats` calls of a compiled
`rounds`-round scan, after one warm-up call (wall time, and process CPU time, which is less
disturbed by other jobs sharing the 2 cores; rows without cpu_ms_per_round_median ran before it
was added). "padded work" = trained clients x padded node slots
(+ edge slots): the work a vmapped round really does.

    nice -n 10 python benchmarks/bench_scaling.py [--quick] [--repeats 3]
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # harness.py, also when imported from elsewhere
from harness import (RESULTS as OUT, ROOT, LaunchError, command, emit_result, launch, loadavg, machine,  # noqa: E402
                     peak_rss_mb, read_result, timed, write_record)


def worker(args) -> None:
    t_start = time.perf_counter()
    sys.path.insert(0, str(ROOT))
    import dataclasses
    import jax
    import jax.numpy as jnp
    import numpy as np
    from fgl_jax import (FedConfig, OptimConfig, baseline, csbm, engine, make_fed_data, make_model, padding_report,
                         stack_partition)
    Tracker, make_scan = engine.Tracker, engine.make_scan

    t0 = time.perf_counter()
    g = csbm(num_nodes=args.nodes, num_classes=args.communities, num_features=32, avg_degree=8.0,
             homophily=0.8, feature_signal=1.0, seed=0)
    community = g.y.astype(np.int64)
    g = dataclasses.replace(g, y=(g.y % 4).astype(np.int32), num_classes=4)
    gen_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    assignment = community * args.clients // args.communities
    batch = stack_partition(g, assignment, args.clients)
    data = make_fed_data(batch)
    build_s = time.perf_counter() - t0
    pad = padding_report([data.train])
    model = make_model("gcn", g.num_features, g.num_classes, hidden=32, num_layers=2, dropout=0.0)
    alg = baseline(model, FedConfig("fedavg", local_steps=1, optim=OptimConfig(lr=0.01),
                                    client_chunk=args.chunk))
    t0 = time.perf_counter()
    state = jax.jit(alg.init)(jax.random.key(0), data)
    scan = make_scan(alg, args.rounds)
    compiled = scan.lower(state, Tracker.empty(), data, jax.random.key(1), jnp.int32(0)).compile()
    compile_s = time.perf_counter() - t0
    t = timed(lambda: compiled(state, Tracker.empty(), data, jax.random.key(1), jnp.int32(0)), args.repeats)
    metrics = jax.device_get(t.last[2])
    ms = 1000 * t.median / args.rounds
    res = {"nodes": args.nodes, "edges_directed": int(g.num_edges), "clients": args.clients,
           "client_chunk": args.chunk, "trained_clients": int(data.train.num_clients),
           "padded_nodes_per_client": int(data.train.num_nodes), "padded_edges_per_client":
           int(data.train.edge_mask.shape[-1]), "kept_edges": int(np.asarray(batch.edge_mask).sum()),
           "node_slots": pad["node_slots"], "edge_slots": pad["edge_slots"],
           "node_padding_ratio": pad["node_padding_ratio"], "edge_padding_ratio": pad["edge_padding_ratio"],
           "graph_generation_s": gen_s, "batch_build_s": build_s, "compile_s": compile_s,
           "rounds_per_call": args.rounds, "ms_per_round_median": ms,
           "ms_per_round_all": [1000 * s / args.rounds for s in t.wall_s],
           # process CPU time (all threads): less sensitive than wall time to other jobs on the machine
           "cpu_ms_per_round_median": 1000 * t.cpu_median / args.rounds,
           "us_per_1k_node_slots": 1000 * ms / (pad["node_slots"] / 1000),
           "final_train_loss": float(metrics["train_loss"][-1]), "final_test_acc": float(metrics["test_acc"][-1]),
           "worker_seconds": time.perf_counter() - t_start,
           "peak_rss_mb": peak_rss_mb()}
    emit_result(res)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--nodes", type=int, default=200_000)
    ap.add_argument("--communities", type=int, default=20_000)
    ap.add_argument("--clients", type=int, default=10)
    ap.add_argument("--chunk", type=int, default=None)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="20k-node graph, 10..2000 clients, no 1M run")
    ap.add_argument("--only", default=None,
                    help="re-run only these 200k-node client counts (comma-separated, unchunked) and replace "
                         "their rows in the existing results file")
    ap.add_argument("--configs", default=None, metavar="N:M:K[:CHUNK],...",
                    help="run exactly these graphs instead: N nodes in M communities split over K clients (e.g. "
                         "169343:17000:1000 for an ogbn-arxiv-sized graph); results to scaling_configs.json")
    args = ap.parse_args()
    if args.worker:
        worker(args)
        return
    if args.quick:
        configs = [(20_000, 2_000, k, None) for k in (10, 100, 1000, 2000)]
    else:
        configs = [(200_000, 20_000, k, None) for k in (10, 100, 1000, 10_000, 20_000)]
        configs += [(200_000, 20_000, 20_000, 2_000), (1_000_000, 1_000, 1_000, None), (1_000_000, 1_000, 1_000, 100)]
    if args.only:
        configs = [(200_000, 20_000, int(k), None) for k in args.only.split(",")]
    if args.configs:
        try:
            configs = [tuple(int(x) for x in c.split(":")) for c in args.configs.split(",")]
            configs = [c + (None,) * (4 - len(c)) for c in configs]
            assert all(len(c) == 4 for c in configs)
        except (ValueError, AssertionError):
            ap.error(f"--configs: expected N:M:K[:CHUNK],..., got {args.configs!r}")
    rows = []
    for nodes, comm, k, chunk in configs:
        cmd = [sys.executable, __file__, "--worker", "--nodes", str(nodes), "--communities", str(comm),
               "--clients", str(k), "--rounds", str(args.rounds), "--repeats", str(args.repeats)]
        if chunk:
            cmd += ["--chunk", str(chunk)]
        load = loadavg()[0]
        try:
            wall, stdout = launch(cmd, cwd=ROOT, env={"PYTHONPATH": str(ROOT)})
        except LaunchError as e:  # e.g. out of memory: recorded, and the other configurations still run
            row = {"nodes": nodes, "clients": k, "client_chunk": chunk, "error": e.stderr[-2000:]}
            print(f"FAILED {nodes} nodes / {k} clients: {e.stderr[-500:]}", flush=True)
        else:
            row = read_result(stdout)
            row["process_wall_s"] = wall
            row["load_avg_1min_at_start"] = load
            print(f"{nodes:>8d} nodes {k:>6d} clients chunk={chunk}: {row['ms_per_round_median']:.1f} ms/round, "
                  f"{row['us_per_1k_node_slots']:.1f} us per 1k node slots, compile {row['compile_s']:.1f} s, "
                  f"peak RSS {row['peak_rss_mb']:.0f} MB, node padding x{row['node_padding_ratio']:.2f}, "
                  f"process {wall:.0f} s", flush=True)
        rows.append(row)
    payload = {"benchmark": "FedAvg-GCN (hidden 32, 1 local Adam step, eval every round) on CSBM community graphs",
               "rows": rows,
               "targets": {"1M_nodes_peak_rss_mb": 16384,
                           "per_round_cost": "grows no faster than padded work (us_per_1k_node_slots flat or falling)"},
               "lumos_device_scaling": "see benchmarks/bench_lumos.py -> benchmarks/results/lumos.json",
               "command": command(__file__),
               "machine": {**machine(), "note": "2 vCPUs shared with other jobs; load average recorded per row"},
               "date": time.strftime("%Y-%m-%d %H:%M:%S %Z")}
    name = "scaling_configs" if args.configs else "scaling_quick" if args.quick else "scaling"
    if args.only and (OUT / f"{name}.json").exists():
        old = json.loads((OUT / f"{name}.json").read_text())
        new = {(r["nodes"], r["clients"], r["client_chunk"]): r for r in rows}
        payload["rows"] = [new.pop((r["nodes"], r["clients"], r["client_chunk"]), r) for r in old["rows"]]
        payload["rows"] += list(new.values())
        payload["date"] = old.get("date", "") + "; rows " + args.only + " re-run " + payload["date"]
    print(f"wrote {write_record(OUT / f'{name}.json', payload)}")


if __name__ == "__main__":
    main()
