"""ogbn-products-scale graph preparation (issue 53 item 2): generating a community CSBM
(`fgl_jax.data.block_csbm`) and splitting it with METIS (and optionally Louvain), timed, with the
process's peak RSS. -> benchmarks/results/large_graph.json (one record; rows replaced by size).

    nice -n 10 python benchmarks/bench_large_graph.py --nodes 200000 [--louvain]
    nice -n 10 python benchmarks/bench_large_graph.py --products     # 2,449,029 nodes, ~61.9 M edges
    python benchmarks/bench_large_graph.py --products --run          # + 10 sampled FedAvg rounds

`--run` times the whole `fgl-jax run` command of issue 53's done-when (FedAvg-GCN, neighbour sampling,
100 METIS clients, 10 rounds) in a child process and records its wall time, the phases from its
`timings.json` and the child's peak RSS (getrusage), under the record's `"run"` key.

Each size runs in its own process (honest peak RSS, getrusage). Targets (issue 53): generation of
the 2.4 M-node graph under 5 min, METIS into 100 parts under 10 min, on this 2-core machine.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # harness.py
from harness import (RESULTS, ROOT, command, emit_result, launch, loadavg, machine, peak_rss_mb,  # noqa: E402
                     read_result, write_record)

OUT = RESULTS / "large_graph.json"
PRODUCTS = (2_449_029, 2_449)   # nodes, blocks (about 1,000 nodes each)


def worker(args) -> None:
    sys.path.insert(0, str(ROOT))
    import numpy as np
    import fgl_jax as fj
    t0, c0 = time.perf_counter(), time.process_time()
    g = fj.block_csbm(num_nodes=args.nodes, num_blocks=args.blocks, num_classes=47, num_features=100,
                   avg_degree=2 * 61_859_140 / 2_449_029, seed=0)
    row = {"nodes": args.nodes, "blocks": args.blocks, "directed_edges": int(g.num_edges),
           "generation_s": time.perf_counter() - t0, "generation_cpu_s": time.process_time() - c0,
           "rss_after_generation_mb": peak_rss_mb()}
    t0, c0 = time.perf_counter(), time.process_time()
    part = fj.make_partition(g, "metis", args.parts, seed=0)
    sizes = np.bincount(part.assignment, minlength=args.parts)
    keep = part.assignment[g.senders] == part.assignment[g.receivers]
    row.update(metis_parts=args.parts, metis_s=time.perf_counter() - t0, metis_cpu_s=time.process_time() - c0,
               metis_kept_edge_fraction=float(keep.mean()), metis_part_size_min=int(sizes.min()),
               metis_part_size_max=int(sizes.max()))
    if args.louvain:
        t0 = time.perf_counter()
        lp = fj.make_partition(g, "louvain", args.parts, seed=0)
        keep = lp.assignment[g.senders] == lp.assignment[g.receivers]
        row.update(louvain_s=time.perf_counter() - t0, louvain_kept_edge_fraction=float(keep.mean()))
    row["peak_rss_mb"] = peak_rss_mb()
    emit_result(row)


RUN_ARGS = ["--dataset", "csbm_products", "--partition", "metis", "--clients", "100", "--batch-size", "512",
            "--fanout", "10,5", "--client-chunk", "10", "--rounds", "10", "--no-progress"]


def _current_metrics() -> dict:
    """The metrics of the record on disk (its other rows and the run are kept when one part is re-measured)."""
    return dict(json.loads(OUT.read_text())["metrics"]) if OUT.exists() else {"rows": []}


def run_products(out_dir: Path) -> dict:
    """Time the products-scale sampled FedAvg run in a child process.

    Args:
      out_dir: the run directory handed to `fgl-jax run --out` (must not hold another run).

    Returns:
      A row: wall seconds, the child's peak RSS in MB, the run's timings and final test accuracy.
    """
    import resource
    cmd = [sys.executable, "-m", "fgl_jax.cli", "run", *RUN_ARGS, "--out", str(out_dir)]
    load = loadavg()[0]
    wall, _ = launch(cmd, cwd=ROOT, env={"PYTHONPATH": str(ROOT)})
    # ru_maxrss of RUSAGE_CHILDREN is the largest child's peak (KiB on Linux): the run is the only child
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    timings = json.loads((out_dir / "timings.json").read_text())
    summary = json.loads((out_dir / "summary.json").read_text())
    return {"command": "fgl-jax run " + " ".join(RUN_ARGS), "wall_s": wall, "peak_rss_mb": peak,
            "load_avg_1min_at_start": load, "timings": timings, "summary": summary}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--nodes", type=int, default=200_000, help="nodes of the generated graph")
    ap.add_argument("--blocks", type=int, default=0, help="communities (0: one per 1,000 nodes)")
    ap.add_argument("--parts", type=int, default=100, help="METIS parts (clients)")
    ap.add_argument("--louvain", action="store_true", help="also time the Louvain partition")
    ap.add_argument("--products", action="store_true", help="ogbn-products' size: 2,449,029 nodes, 2,449 blocks")
    ap.add_argument("--run", action="store_true",
                    help="also time the 10-round sampled FedAvg run on the products-size graph")
    ap.add_argument("--run-dir", type=Path, default=None,
                    help="run directory for --run (default: a fresh temporary directory)")
    args = ap.parse_args()
    if args.run:
        import tempfile
        out_dir = args.run_dir or Path(tempfile.mkdtemp(prefix="fgl_products_")) / "run"
        row = run_products(out_dir)
        print(json.dumps({k: row[k] for k in ("wall_s", "peak_rss_mb")}, indent=1))
        payload = _current_metrics()
        payload["run"] = {**row, "environment": machine(), "date": time.strftime("%Y-%m-%d %H:%M:%S %Z")}
        print(f"wrote {write_record(OUT, payload)}")
        return
    if args.products:
        args.nodes, args.blocks = PRODUCTS
    args.blocks = args.blocks or max(2, args.nodes // 1000)
    if args.worker:
        worker(args)
        return
    cmd = [sys.executable, __file__, "--worker", "--nodes", str(args.nodes), "--blocks", str(args.blocks),
           "--parts", str(args.parts)] + (["--louvain"] if args.louvain else [])
    load = loadavg()[0]
    wall, stdout = launch(cmd, cwd=ROOT, env={"PYTHONPATH": str(ROOT)})
    row = read_result(stdout)
    row.update(process_wall_s=wall, load_avg_1min_at_start=load, command=command(__file__, sys.argv[1:]))
    print(json.dumps(row, indent=1))
    current = _current_metrics()
    rows = [r for r in current.get("rows", []) if r.get("nodes") != args.nodes]
    payload = {**({"run": current["run"]} if "run" in current else {}),"benchmark": "block_csbm generation + METIS (+ Louvain) at growing size", "rows": rows + [row],
               "targets": {"generation_s_2.4M": 300, "metis_s_2.4M": 600},
               "machine": {**machine(), "note": "2 vCPUs shared with other jobs; load average recorded per row"},
               "command": command(__file__), "date": time.strftime("%Y-%m-%d %H:%M:%S %Z")}
    print(f"wrote {write_record(OUT, payload)}")


if __name__ == "__main__":
    main()
