"""Benchmark: robust aggregators' cost per round relative to FedAvg's mean, and a robustness sweep as one
compiled program (issue 51, item 5). Results -> benchmarks/results/robust.json.

Part "round": FedAvg-GCN (hidden 64) on Cora (OpenFGL's per-client 20/40/40 split, random partition)
with 10 and 100 clients; one program per `--aggregator` value, each compiled ahead of time, then run
alternately (`--repeats` runs of `--rounds` rounds each), medians of the seconds per round and their
ratio to the mean's. An attack (sign_flip, 20% attackers) is applied in every variant, the mean's
too, so the ratio is the reduction's own cost.

Part "sweep": `fgl-jax sweep --dataset cora --aggregator trimmed_mean --attack sign_flip --grid
attackers=0,0.1,0.2,0.3 --grid aggregator_trim=0.1,0.2` through `run_grid` (what the command runs):
the number of compiled programs (1: both axes are traced values) and its compile / run seconds.

    python benchmarks/bench_robust.py [--clients 10 100] [--rounds 3] [--repeats 3] [--sweep-rounds 10]
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # harness.py
from harness import RESULTS as OUT, ROOT, machine, write_record  # noqa: E402

AGGREGATORS = ("mean", "median", "trimmed_mean", "krum", "multi_krum", "bulyan", "norm_bound", "geomed")


def round_costs(args, clients: int) -> dict:
    import jax
    import jax.numpy as jnp
    import fgl_jax as fj
    from fgl_jax.systems.baseline import RunConfig, algorithm_from_config, prepare

    base = RunConfig(dataset="cora", clients=clients, split="openfgl", rounds=args.rounds, attack="sign_flip",
                     attackers=0.2)
    prep = prepare(base, None)
    compiled, compile_s, states = {}, {}, {}
    for name in args.aggregators:
        alg = algorithm_from_config(base.replace(aggregator=name), prep.graph)
        states[name] = jax.jit(alg.init)(jax.random.key(0), prep.data)
        t0 = time.perf_counter()
        compiled[name] = fj.engine.make_scan(alg, args.rounds).lower(
            states[name], fj.engine.Tracker.empty(), prep.data, jax.random.key(1), jnp.int32(0)).compile()
        compile_s[name] = time.perf_counter() - t0
        print(f"clients={clients}: compiled {name} in {compile_s[name]:.1f} s", flush=True)

    def call(name):
        return compiled[name](states[name], fj.engine.Tracker.empty(), prep.data, jax.random.key(1), jnp.int32(0))

    for name in compiled:  # one untimed run each (first-call allocations)
        jax.block_until_ready(call(name))
    times = {name: [] for name in compiled}
    for _ in range(args.repeats):  # alternate the variants, one run each per repeat
        for name in compiled:
            t0 = time.perf_counter()
            jax.block_until_ready(call(name))
            times[name].append((time.perf_counter() - t0) / args.rounds)
    med = {k: statistics.median(v) for k, v in times.items()}
    print(f"clients={clients}: " + ", ".join(f"{k} {1000 * v:.1f} ms ({v / med['mean']:.2f}x)" for k, v in med.items()),
          flush=True)
    return {"clients": clients, "training_clients": int(prep.data.train.num_clients),
            "ms_per_round_median": {k: 1000 * v for k, v in med.items()},
            "ms_per_round_all": {k: [1000 * x for x in v] for k, v in times.items()},
            "ratio_to_mean": {k: v / med["mean"] for k, v in med.items()}, "compile_s": compile_s}


def sweep_once(args) -> dict:
    from fgl_jax import RunConfig, build, engine
    opts = dict(dataset="cora", clients=10, split="openfgl", rounds=args.sweep_rounds, aggregator="trimmed_mean",
                attack="sign_flip")
    grid = {"attackers": [0.0, 0.1, 0.2, 0.3], "aggregator_trim": [0.1, 0.2]}
    res = engine.run_grid(lambda o: build(RunConfig(**o)), opts, [0], grid)
    print(f"sweep: {len(res.rows)} members in {res.programs} program(s), compile {res.compile_seconds:.1f} s, "
          f"run {res.run_seconds:.1f} s", flush=True)
    return {"command": "fgl-jax sweep --dataset cora --clients 10 --split openfgl --rounds "
                       f"{args.sweep_rounds} --aggregator trimmed_mean --attack sign_flip --grid attackers=0,0.1,0.2,0.3 "
                       "--grid aggregator_trim=0.1,0.2 --seeds 0",
            "members": len(res.rows), "programs": res.programs, "vector_axes": res.vector_axes,
            "compile_s": res.compile_seconds, "run_s": res.run_seconds,
            "rows": [{k: r[k] for k in ("attackers", "aggregator_trim", "best_val", "best_test", "best_round")}
                     for r in res.rows]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--clients", type=int, nargs="+", default=[10, 100], help="client counts to measure")
    ap.add_argument("--aggregators", nargs="+", default=list(AGGREGATORS), help="aggregators (mean is always in)")
    ap.add_argument("--rounds", type=int, default=3, help="rounds per timed program call")
    ap.add_argument("--repeats", type=int, default=3, help="timed calls per variant (alternating)")
    ap.add_argument("--sweep-rounds", type=int, default=10, help="rounds of the sweep part")
    args = ap.parse_args()
    if "mean" not in args.aggregators:
        args.aggregators = ["mean", *args.aggregators]
    sys.path.insert(0, str(ROOT))
    rows = [round_costs(args, c) for c in args.clients]
    sweep = sweep_once(args)
    write_record(OUT / "robust.json", {
        "benchmark": "robust aggregators per round vs FedAvg's mean (FedAvg-GCN hidden 64, Cora, split openfgl, "
                     "random partition, sign_flip by 20% of the clients in every variant); robustness sweep as one program",
        "machine": machine(), "rounds_per_call": args.rounds, "repeats": args.repeats,
        "command": "python benchmarks/bench_robust.py " + " ".join(sys.argv[1:]), "rows": rows, "sweep": sweep,
        "note": "seconds per round include local training and the evaluation of every client; the machine is "
                "shared (see machine.loadavg)"})


if __name__ == "__main__":
    main()
