"""Benchmark: partial participation with 1,000 clients, fraction 0.1 against 1.0 (issue 30, item 1).
Results -> benchmarks/results/participation.json.

Three FedAvg-GCN programs on one CSBM graph split over 1,000 clients, in one process, compiled
ahead of time and then run alternately (medians of `--repeats`, ratios to the full round):

  full     every client trains every round (client_fraction 1.0)
  masked   100 sampled clients, as a mask: all 1,000 still train under vmap, the others get
           aggregation weight 0 and their optimiser state is put back (the naive way)
  gathered 100 sampled clients gathered into a 100-client vmapped axis (`with_participation`,
           what `--client-fraction 0.1` runs)

Every round also evaluates all 1,000 clients (the metrics cover the whole federation), which no
sampling removes; `--local-steps` sets how much of the round is training.

    python benchmarks/bench_participation.py [--repeats 5] [--rounds 5] [--local-steps 1 5]
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # harness.py
from harness import RESULTS as OUT, ROOT, machine, write_record  # noqa: E402


def masked(algorithm, fraction):
    """FedAvg with the sampled clients as a 0/1 weight mask on the full client axis (benchmark only:
    valid for algorithms whose only per-client state is the optimiser, as FedAvg)."""
    import jax
    import jax.numpy as jnp
    from fgl_jax import participants, sample_clients

    def round_fn(state, data, key):
        n = data.train.num_clients
        k_pick, k_round = jax.random.split(key)
        mask = jnp.zeros(n, bool).at[sample_clients(k_pick, n, participants(n, fraction))].set(True)
        new, metrics = algorithm.round(state, data.replace(train_weight=data.train_weight * mask), k_round)
        keep = lambda a, b: jnp.where(mask.reshape((-1,) + (1,) * (a.ndim - 1)), b, a)
        return new.replace(opt=jax.tree.map(keep, state.opt, new.opt)), metrics

    return algorithm._replace(round=round_fn)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--clients", type=int, default=1000)
    ap.add_argument("--fraction", type=float, default=0.1)
    ap.add_argument("--nodes-per-client", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--local-steps", type=int, nargs="+", default=[1, 5])
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT))
    import jax
    import jax.numpy as jnp
    import numpy as np
    import fgl_jax as fj
    from fgl_jax.systems.baseline import RunConfig, algorithm_from_config, prepare

    graph = fj.csbm(num_nodes=args.clients * args.nodes_per_client, seed=0)
    rows = []
    for steps in args.local_steps:
        base = RunConfig(dataset="csbm", clients=args.clients, split="keep", rounds=args.rounds, local_steps=steps)
        prep = prepare(base, graph)
        assert int(prep.data.train.num_clients) == args.clients, "every client must hold training nodes"
        full = algorithm_from_config(base, prep.graph)
        variants = {"full": full, "masked": masked(full, args.fraction),
                    "gathered": algorithm_from_config(base.replace(client_fraction=args.fraction), prep.graph)}
        state = jax.jit(full.init)(jax.random.key(0), prep.data)
        compiled, compile_s = {}, {}
        for name, alg in variants.items():
            t0 = time.perf_counter()
            compiled[name] = fj.engine.make_scan(alg, args.rounds).lower(
                state, fj.engine.Tracker.empty(), prep.data, jax.random.key(1), jnp.int32(0)).compile()
            compile_s[name] = time.perf_counter() - t0
        for fn in compiled.values():                      # one untimed run each (first-call allocations)
            jax.block_until_ready(fn(state, fj.engine.Tracker.empty(), prep.data, jax.random.key(1), jnp.int32(0)))
        times = {name: [] for name in variants}
        for _ in range(args.repeats):                     # alternate the variants, one run each per repeat
            for name, fn in compiled.items():
                t0 = time.perf_counter()
                jax.block_until_ready(fn(state, fj.engine.Tracker.empty(), prep.data, jax.random.key(1), jnp.int32(0)))
                times[name].append((time.perf_counter() - t0) / args.rounds)
        med = {name: statistics.median(v) for name, v in times.items()}
        row = {"local_steps": steps, "clients": args.clients, "participants": fj.participants(args.clients, args.fraction),
               "ms_per_round_median": {k: 1000 * v for k, v in med.items()},
               "ms_per_round_all": {k: [1000 * x for x in v] for k, v in times.items()},
               "ratio_to_full": {k: v / med["full"] for k, v in med.items()},
               "compile_s": compile_s}
        print(f"local_steps={steps}: " + ", ".join(f"{k} {1000 * v:.1f} ms/round ({v / med['full']:.2f}x)"
                                                   for k, v in med.items()), flush=True)
        rows.append(row)
    fit = {}
    if len(rows) >= 2:  # round time = fixed (evaluation of every client, overhead) + local_steps x training step
        lo, hi = rows[0], rows[-1]
        dsteps = hi["local_steps"] - lo["local_steps"]
        slope = {k: (hi["ms_per_round_median"][k] - lo["ms_per_round_median"][k]) / dsteps for k in lo["ms_per_round_median"]}
        fixed = {k: lo["ms_per_round_median"][k] - lo["local_steps"] * slope[k] for k in slope}
        fit = {"ms_per_local_step": slope, "ms_fixed_per_round": fixed,
               "local_step_ratio_to_full": {k: v / slope["full"] for k, v in slope.items()}}
        print("per local step: " + ", ".join(f"{k} {v:.1f} ms ({v / slope['full']:.2f}x)" for k, v in slope.items()))
    write_record(OUT / "participation.json", {
        "benchmark": "partial participation, FedAvg-GCN (hidden 64) on CSBM", "machine": machine(),
        "graph": {"nodes": graph.num_nodes, "features": graph.num_features, "edges": graph.num_edges},
        "fraction": args.fraction, "rounds_per_program": args.rounds, "repeats": args.repeats,
        "command": "python benchmarks/bench_participation.py " + " ".join(sys.argv[1:]), "rows": rows,
        "linear_fit_in_local_steps": fit,
        "note": "every round evaluates all clients; only local training scales with the sample"})


if __name__ == "__main__":
    main()
