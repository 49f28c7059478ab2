"""Benchmark: FedAvg-GCN on Cora (issue 2, item 9). Results -> benchmarks/results/fedavg.json (+ .md).

Each configuration runs in its own process (so compile caches, peak RSS and start-up are
honest): the parent measures whole-process wall time, the worker reports compile time,
steady-state ms/round (median of repeated executions of the compiled 100-round program) and
its own peak RSS.

    python benchmarks/bench_fedavg.py [--data-dir ../shared/data] [--repeats 5] [--quick]
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # harness.py, also when imported from elsewhere
from harness import (RESULTS as OUT, ROOT, emit_result, launch, machine, peak_rss_mb, read_result,  # noqa: E402
                     timed, write_record)


def worker(args) -> None:
    """One configuration: prepare, compile, time the steady state, report JSON on stdout."""
    t_start = time.perf_counter()
    import jax
    import jax.numpy as jnp
    sys.path.insert(0, str(ROOT))
    from fgl_jax import engine
    Tracker, make_scan = engine.Tracker, engine.make_scan
    from fgl_jax.systems.baseline import RunConfig, algorithm_from_config, prepare

    cfg = RunConfig(dataset="cora", data_dir=args.data_dir, algorithm="fedavg", model="gcn", clients=args.clients,
                    partition=args.partition, split="standard", rounds=args.rounds, local_steps=3, lr=0.01,
                    weight_decay=5e-4, hidden=64, seed=0)
    prep = prepare(cfg)
    alg = algorithm_from_config(cfg, prep.graph)
    t0 = time.perf_counter()
    state = jax.jit(alg.init)(jax.random.key(0), prep.data)
    scan = make_scan(alg, cfg.rounds)
    compiled = scan.lower(state, Tracker.empty(), prep.data, jax.random.key(1), jnp.int32(0)).compile()
    compile_s = time.perf_counter() - t0
    # no warm-up: the program is compiled ahead of time above
    t = timed(lambda: compiled(state, Tracker.empty(), prep.data, jax.random.key(1), jnp.int32(0)), args.repeats,
              warmup=0)
    _, tracker, metrics = t.last
    res = {"clients": args.clients, "partition": args.partition, "rounds": cfg.rounds,
           "trained_clients": int(prep.data.train.num_clients),
           "padded_nodes_per_client": int(prep.data.eval.num_nodes),
           "compile_s": compile_s, "ms_per_round_median": 1000 * t.median / cfg.rounds,
           "ms_per_round_all": [1000 * s / cfg.rounds for s in t.wall_s],
           "best_test_acc": float(tracker.best_test), "final_test_acc": float(metrics["test_acc"][-1]),
           "worker_seconds": time.perf_counter() - t_start,
           "peak_rss_mb": peak_rss_mb()}
    emit_result(res)


def run(cmd: list[str]) -> tuple[float, str]:
    """One benchmark process from the repository root, with the checkout's fgl_jax first on its path."""
    return launch(cmd, cwd=ROOT, env={"PYTHONPATH": str(ROOT)})


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--clients", type=int, default=10)
    ap.add_argument("--partition", default="louvain")
    ap.add_argument("--rounds", type=int, default=100)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--data-dir", default=None)
    ap.add_argument("--quick", action="store_true", help="10 clients only, no sweep comparison")
    args = ap.parse_args()
    if args.worker:
        worker(args)
        return
    py = sys.executable
    rows = []
    for clients in ([10] if args.quick else [10, 100, 1000]):
        cmd = [py, __file__, "--worker", "--clients", str(clients), "--partition", args.partition,
               "--rounds", str(args.rounds), "--repeats", str(args.repeats)]
        if args.data_dir:
            cmd += ["--data-dir", args.data_dir]
        wall, out = run(cmd)
        row = read_result(out)
        row["process_wall_s"] = wall
        rows.append(row)
        print(f"{clients:5d} clients: compile {row['compile_s']:.2f} s, {row['ms_per_round_median']:.1f} ms/round "
              f"(median of {args.repeats}), process {wall:.1f} s, peak RSS {row['peak_rss_mb']:.0f} MB, "
              f"trained clients {row['trained_clients']}", flush=True)

    # the whole-process figure the issue asks for: a plain CLI run of the same job, start to finish
    cli = [py, "-m", "fgl_jax.cli", "run", "--dataset", "cora", "--algorithm", "fedavg", "--model", "gcn",
           "--clients", "10", "--partition", args.partition, "--rounds", str(args.rounds), "--local-steps", "3",
           "--weight-decay", "5e-4", "--chunk", str(args.rounds), "--no-progress"]
    if args.data_dir:
        cli += ["--data-dir", args.data_dir]
    cli_wall, _ = run(cli)
    print(f"CLI whole process (10 clients, {args.rounds} rounds): {cli_wall:.1f} s", flush=True)

    sweep = None
    if not args.quick:
        seeds, lrs = ["0", "1", "2", "3"], ["0.01", "0.05"]
        common = ["--dataset", "cora", "--algorithm", "fedavg", "--model", "gcn", "--clients", "10", "--partition",
                  args.partition, "--rounds", str(args.rounds), "--local-steps", "3", "--no-progress"]
        if args.data_dir:
            common += ["--data-dir", args.data_dir]
        one_wall, _ = run([py, "-m", "fgl_jax.cli", "sweep", *[c for c in common if c != "--no-progress"],
                           "--seeds", ",".join(seeds), "--grid", "lr=" + ",".join(lrs)])
        sep_wall = 0.0
        for s in seeds:
            for lr in lrs:
                w, _ = run([py, "-m", "fgl_jax.cli", "run", *common, "--seed", s, "--lr", lr,
                            "--chunk", str(args.rounds)])
                sep_wall += w
        sweep = {"members": len(seeds) * len(lrs), "one_command_s": one_wall, "separate_runs_s": sep_wall,
                 "speedup": sep_wall / one_wall}
        print(f"8-point sweep: one command {one_wall:.1f} s vs 8 runs {sep_wall:.1f} s "
              f"({sep_wall / one_wall:.2f}x)", flush=True)

    payload = {"benchmark": "FedAvg-GCN, Cora, Louvain clients, 3 local Adam steps/round, eval every round",
               "rows": rows, "cli_whole_process_s": cli_wall, "sweep": sweep,
               "targets": {"ms_per_round_10": 25, "stretch_ms_per_round_10": 12, "process_s": 8, "rss_mb": 600,
                           "1000_clients_vs_10": 5, "1000_clients_rss_mb": 2048, "sweep_speedup": 2},
               "machine": machine(), "date": time.strftime("%Y-%m-%d %H:%M:%S %Z")}
    path = write_record(OUT / ("fedavg_quick.json" if args.quick else "fedavg.json"), payload)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
