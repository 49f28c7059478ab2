"""FedGC host preparation on a wide graph (issue 27): a CSBM with 3,000 nodes and 3,000 sparse features,
10 clients, preparation only (partition, self-training, IB, client blocks: `FedGCRun.__init__`), for the
IB widths of the default config (128 / 128) and of the paper (`ib_hidden = ib_dim = d`). One process,
variants alternated, `--repeats` each; medians.

    python benchmarks/bench_fedgc_wide.py [--features 3000] [--nodes 3000] [--dense] [--repeats 1]
                                          [--variants default,paper]
--dense: Gaussian features stored dense (a user's dense matrix) instead of sparse bag-of-words rows.
CPU time (process_time, all threads) is reported beside the wall time: the machine is shared.
Writes benchmarks/results/fedgc_wide.json.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

from fgl_jax import csbm
from fgl_jax.systems.fedgc import FedGCConfig, FedGCRun

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import RESULTS, command, loadavg, machine, peak_rss_mb, write_record  # noqa: E402

VARIANTS = {"default": {}, "paper": {"ib_hidden": None, "ib_dim": None}}


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--features", type=int, default=3000)
    ap.add_argument("--nodes", type=int, default=3000)
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--variants", default="default,paper")
    ap.add_argument("--dense", action="store_true")
    args = ap.parse_args(argv)
    g = csbm(num_nodes=args.nodes, num_classes=6, num_features=args.features, sparse_features=not args.dense,
             seed=0)
    names = args.variants.split(",")
    times = {v: [] for v in names}
    cpu = {v: [] for v in names}
    for _ in range(args.repeats):
        for v in names:
            cfg = FedGCConfig(dataset="csbm", rounds=1, **VARIANTS[v])
            t0, c0 = time.perf_counter(), time.process_time()
            fr = FedGCRun(cfg, graph=g)
            times[v].append(time.perf_counter() - t0)
            cpu[v].append(time.process_time() - c0)
            print(json.dumps({"variant": v, "prepare_s": times[v][-1], "prepare_cpu_s": cpu[v][-1],
                              "timings": fr.timings}), flush=True)
            # written after every variant: the paper's widths can take long on a wide graph
            res = {"command": command(__file__, argv), "machine": machine(), "loadavg_end": loadavg(),
                   "graph": {"nodes": g.num_nodes, "features": g.num_features, "classes": g.num_classes,
                             "dense": args.dense},
                   "median_prepare_s": {v: statistics.median(t) for v, t in times.items() if t}, "runs": times,
                   "median_prepare_cpu_s": {v: statistics.median(t) for v, t in cpu.items() if t},
                   "peak_rss_mb": peak_rss_mb()}
            write_record(RESULTS / "fedgc_wide.json", res)
    print(json.dumps(res["median_prepare_s"]))


if __name__ == "__main__":
    main()
