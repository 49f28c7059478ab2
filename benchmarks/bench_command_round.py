"""The round of the side-by-side command, as the command runs it (issue 31: per round >= 12x OpenFGL).
-> benchmarks/results/command_round.json (+ .md)

`benchmarks/peers/openfgl/whole_process.py`'s fgl-jax job (FedAvg-GCN on Cora, 10 Louvain clients,
OpenFGL's split, 3 local Adam steps, dropout 0.5, each client's model evaluated on its own data
every round, node-weighted client average) through the engine's own chunk program (`make_chunk`,
5 rounds per call, as `fgl-jax run --out` chunks 100 rounds), 20 calls with the metrics fetched
after each, as the command's loop does. Variants are compiled in this one process and timed
alternately (process CPU time, which counts every thread); medians per round, and how far each
variant's 100-round history and final state moved from the first one's.

  before       : the clients' trained models broadcast-and-scattered into evaluation order every
                 round before their evaluation (FedData.train_is_eval False: the previous code path)
  after        : the library as it is (every client trains: its models are evaluated as they are)
  ell_g<G>_u<U>: `after` with EllFeatures built with max_groups=G, unroll=U (`--layouts`)

    python benchmarks/bench_command_round.py [--data-dir DIR] [--repeats 7] [--layouts 3:4,4:8]

Run it with XLA_FLAGS="--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1" to match
whole_process.py's --threads 1.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import jax
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))  # harness.py
from harness import RESULTS, ROOT, command, loadavg, machine, write_record  # noqa: E402

sys.path.insert(0, str(ROOT))
import fgl_jax  # noqa: E402

ROUNDS, CHUNK = 100, 5


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data-dir", default=os.environ.get("FGL_JAX_DATA"))
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--layouts", default="", help="extra EllFeatures layouts max_groups:unroll,...")
    ap.add_argument("--out", default=str(RESULTS / "command_round"))
    args = ap.parse_args()
    from fgl_jax.systems.baseline import RunConfig
    cfg = RunConfig(dataset="cora", data_dir=args.data_dir, algorithm="fedavg", model="gcn", clients=10,
                    partition="louvain", local_steps=3, split="openfgl", hidden=64, num_layers=2, dropout=0.5,
                    lr=0.01, weight_decay=5e-4, optimizer="adam", eval_mode="local_model_on_local_data",
                    eval_average="client_nodes", rounds=ROUNDS)
    program = fgl_jax.build(cfg)
    alg, data, key = program.algorithm, program.data, jax.random.key(0)  # the command's seed_key(0)
    tracker = fgl_jax.engine.Tracker.empty(alg.select)
    state = jax.jit(alg.init)(key, data)
    # before: the clients' trained models scattered into evaluation order every round
    variants = {"before": data.replace(train_is_eval=False), "after": data}
    if args.layouts:
        from fgl_jax import build_client_batch, make_fed_data, with_ell_features
        from fgl_jax.systems.baseline import prepare
        prep = prepare(cfg)  # the same split graph and partition; the batch again, on SparseFeatures
        sparse = build_client_batch(prep.graph, prep.partition.assignment, cfg.clients)
    for spec in filter(None, args.layouts.split(",")):
        g, u = (int(x) for x in spec.split(":"))
        variants[f"ell_g{g}_u{u}"] = make_fed_data(with_ell_features(sparse, prep.graph.num_features,
                                                                     max_groups=g, unroll=u))
    compiled, compile_cpu = {}, {}
    for name, d in variants.items():
        c0 = time.process_time()
        compiled[name] = fgl_jax.engine.make_chunk(alg, CHUNK).lower(state, tracker, d, key, np.int32(0),
                                                             np.int32(CHUNK)).compile()
        compile_cpu[name] = time.process_time() - c0

    def rounds(name):
        prog, d = compiled[name], variants[name]
        s, t, hist = state, tracker, []
        for r in range(0, ROUNDS, CHUNK):
            s, t, m = prog(s, t, d, key, np.int32(r), np.int32(CHUNK))
            hist.append(jax.device_get(m))
        return s, hist

    outs = {name: rounds(name) for name in compiled}  # also the untimed first call of each
    first = next(iter(outs))
    moved = {name: max(float(np.max(np.abs(np.asarray(a, np.float64) - np.asarray(b, np.float64))))
                       for a, b in zip(jax.tree.leaves(outs[first]), jax.tree.leaves(o)))
             for name, o in outs.items()}
    load0 = loadavg()
    cpu = {name: [] for name in compiled}
    for _ in range(args.repeats):
        for name in compiled:
            c0 = time.process_time()
            rounds(name)
            cpu[name].append(1000 * (time.process_time() - c0) / ROUNDS)
    med = {name: statistics.median(v) for name, v in cpu.items()}
    payload = {"workload": "whole_process.py's fgl-jax job: FedAvg-GCN, Cora, 10 Louvain clients, openfgl split, "
                           f"3 local steps, dropout 0.5, local models evaluated every round; {ROUNDS} rounds in "
                           f"chunks of {CHUNK}", "command": command(__file__, sys.argv[1:]), "machine": machine(),
               "xla_flags": os.environ.get("XLA_FLAGS", ""), "loadavg_before": load0, "loadavg_after": loadavg(),
               "cpu_ms_per_round": cpu, "median_cpu_ms_per_round": med,
               "ratio_to_first": {n: med[n] / med[first] for n in med}, "compile_cpu_s": compile_cpu,
               "max_abs_diff_to_first": moved,
               "final_test_acc": {n: float(np.asarray(o[1][-1]["test_acc"])[-1]) for n, o in outs.items()}}
    out = Path(args.out)
    write_record(out.with_suffix(".json"), payload)
    lines = ["# The command's round (bench_command_round.py)", "", f"`{payload['command']}`, XLA_FLAGS "
             f"`{payload['xla_flags']}`; load average {load0[0]:.1f} before, {payload['loadavg_after'][0]:.1f} "
             "after. Process CPU ms per round, medians of alternated repeats.", "",
             "| variant | CPU ms/round | ratio to first | compile CPU s | max abs diff to first (100 rounds) |",
             "|---|---|---|---|---|"]
    for n in compiled:
        lines.append(f"| {n} | {med[n]:.2f} | {med[n] / med[first]:.3f} | {compile_cpu[n]:.2f} | {moved[n]:.3g} |")
    out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
