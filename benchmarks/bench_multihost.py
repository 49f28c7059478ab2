"""Per-process data loading (issue 53 item 3): host memory and preparation time of one process that
builds every client against each of two `jax.distributed` processes that build only their own.
-> benchmarks/results/multihost.json (one record, overwritten).

    python benchmarks/bench_multihost.py                        # csbm, 100,000 nodes x 128 features, 64 METIS clients
    python benchmarks/bench_multihost.py --nodes 5000 --clients 8   # a quick check

The parent generates the graph once (`fgl_jax.csbm`) and saves it as an .npz in a temporary
directory; each worker (its own process, one CPU device, JAX's and fgl_jax's caches off) builds the
baseline FedAvg program from that file with `fgl_jax.build` (loading, METIS partition, padded client rows)
and reports its wall and CPU seconds, its resident set before and after the build (VmRSS; the
getrusage peak is reached by the imports already) and the bytes of client-axis rows it holds (the addressable shards of `program.data`). One process builds
the whole padded batch; under two processes each builds the rows of its own device
(`fgl_jax.federated.local_data`), while both still generate the graph and compute the partition.
Nothing is trained: this measures preparation only.
"""
from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # harness.py
from harness import RESULTS, ROOT, command, emit_result, loadavg, machine, peak_rss_mb, read_result, write_record  # noqa: E402

OUT = RESULTS / "multihost.json"


def worker(args) -> None:
    sys.path.insert(0, str(ROOT))
    import jax
    if args.processes > 1:
        jax.config.update("jax_cpu_collectives_implementation", "gloo")
        jax.distributed.initialize(coordinator_address=f"127.0.0.1:{args.port}", num_processes=args.processes,
                                   process_id=args.pid)
    import fgl_jax as fj
    cfg = fj.default_config("baseline", dataset=args.graph, algorithm="fedavg", model="gcn", clients=args.clients,
                            partition="metis", split="keep", rounds=1, hidden=16)
    rss0, now0 = peak_rss_mb(), rss_now_mb()
    t0, c0 = time.perf_counter(), time.process_time()
    program = fj.build(cfg)
    jax.block_until_ready(jax.tree.leaves(program.data))
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    eval_rows = program.data.eval.y
    local = sum(s.data.nbytes for a in jax.tree.leaves((program.data.eval, program.data.train))
                for s in a.addressable_shards) if args.processes > 1 else \
        sum(a.nbytes for a in jax.tree.leaves((program.data.eval, program.data.train)))
    now1 = rss_now_mb()
    emit_result({"process": args.pid, "build_s": wall, "build_cpu_s": cpu, "peak_rss_before_build_mb": rss0,
                 "peak_rss_mb": peak_rss_mb(), "rss_before_build_mb": now0, "rss_after_build_mb": now1,
                 "rss_growth_mb": now1 - now0, "client_rows_bytes": int(local),
                 "client_axis": int(eval_rows.shape[0]),
                 "rows_held": int(sum(s.data.shape[0] for s in eval_rows.addressable_shards))})


def rss_now_mb() -> float:
    """This process's resident set now (VmRSS, MiB): the peak (getrusage) is already reached by
    importing every system, before any data exists, so it cannot tell the builds apart."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def measure(processes: int, graph: str, clients: int) -> dict:
    """Start `processes` workers at once (one port), wait for all, return their results."""
    port = _port()
    env = {**os.environ, "XLA_FLAGS": "--xla_force_host_platform_device_count=1", "FGL_JAX_CACHE_DIR": "off",
           "JAX_ENABLE_COMPILATION_CACHE": "false"}
    procs = [subprocess.Popen([sys.executable, __file__, "--worker", "--processes", str(processes), "--pid", str(i),
                               "--port", str(port), "--graph", graph, "--clients", str(clients)],
                              cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for i in range(processes)]
    t0 = time.perf_counter()
    try:
        outs = [p.communicate(timeout=1800) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    for p, (out, err) in zip(procs, outs):
        if p.returncode != 0:
            raise SystemExit(f"worker exited {p.returncode}: {err[-2000:]}")
    rows = [read_result(out) for out, _ in outs]
    return {"processes": processes, "wall_s": time.perf_counter() - t0, "workers": rows,
            "max_peak_rss_mb": max(r["peak_rss_mb"] for r in rows),
            "max_build_s": max(r["build_s"] for r in rows),
            "max_build_cpu_s": max(r["build_cpu_s"] for r in rows),
            "max_rss_growth_mb": max(r["rss_growth_mb"] for r in rows),
            "client_rows_mb_per_process": max(r["client_rows_bytes"] for r in rows) / 2 ** 20}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=100_000, help="csbm nodes (default 100,000)")
    ap.add_argument("--features", type=int, default=128, help="dense feature width (default 128)")
    ap.add_argument("--graph", default=None, help="internal: the worker's graph file")
    ap.add_argument("--clients", type=int, default=64, help="METIS clients (default 64)")
    ap.add_argument("--worker", action="store_true", help="internal: run one worker")
    ap.add_argument("--processes", type=int, default=1, help="internal: the worker's process count")
    ap.add_argument("--pid", type=int, default=0, help="internal: the worker's process id")
    ap.add_argument("--port", type=int, default=0, help="internal: the coordinator's port")
    args = ap.parse_args()
    if args.worker:
        worker(args)
        return
    import tempfile
    sys.path.insert(0, str(ROOT))
    import fgl_jax as fj
    load = loadavg()
    with tempfile.TemporaryDirectory() as tmp:
        graph = fj.csbm(num_nodes=args.nodes, num_features=args.features, avg_degree=10.0, seed=0)
        path = str(fj.save_graph(graph, Path(tmp) / "csbm.npz"))
        edges = int(graph.num_edges)
        del graph
        one = measure(1, path, args.clients)
        two = measure(2, path, args.clients)
    payload = {"dataset": f"csbm {args.nodes} nodes x {args.features} dense features, mean degree 10",
               "directed_edges": edges, "clients": args.clients, "one_process": one, "two_processes": two,
               "client_rows_ratio": two["client_rows_mb_per_process"] / one["client_rows_mb_per_process"],
               "rss_growth_ratio": two["max_rss_growth_mb"] / one["max_rss_growth_mb"],
               "loadavg_before": load, "machine": machine(), "command": command(__file__, sys.argv[1:])}
    for name, m in (("1 process", one), ("2 processes", two)):
        print(f"{name}: build {m['max_build_s']:.1f} s wall, {m['max_build_cpu_s']:.1f} s CPU; RSS grows by "
              f"{m['max_rss_growth_mb']:.0f} MiB (peak {m['max_peak_rss_mb']:.0f} MiB); client rows "
              f"{m['client_rows_mb_per_process']:.1f} MiB per process")
    print(f"wrote {write_record(OUT, payload, title='per-process data loading: one process vs two (preparation only)')}")


if __name__ == "__main__":
    main()
