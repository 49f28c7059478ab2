"""Cost-growth curves (issue 53 item 4): seconds per round, compile time, preparation time and peak
RSS against nodes and against clients, for FedAvg, FedGTA and HiFGL. -> benchmarks/results/growth.json

    nice -n 5 python benchmarks/bench_growth.py                       # both axes, every algorithm
    nice -n 5 python benchmarks/bench_growth.py --axis nodes --algorithms fedavg --budget-s 600
    python benchmarks/bench_growth.py --plot                          # docs/img/growth.png from the record
    python benchmarks/bench_growth.py --device gpu                    # the same points on an accelerator

Graph: `fgl_jax.block_csbm` of ogbn-products' shape at every size (blocks of ~1,000 nodes, at least
47; 47 classes, 100 dense features, products' mean degree 50.5, homophily 0.8), registered as a
dataset in the worker so that `fj.build` prepares it like any other (generation, split, partition,
client arrays all inside "preparation").

    nodes axis:   10k, 30k, 100k, 300k, 1M nodes, 100 clients (METIS; HiFGL: 10 random silos).
    clients axis: 10, 100, 1,000, 10,000 clients of one 100k-node graph (HiFGL: 10k nodes).
    HiFGL's fixed sizes are smaller because its cost is silos x edges (see FIXED).
    training:     full-batch local steps everywhere (one mode for every algorithm and both axes:
                  FedGTA and HiFGL have no sampled mode). `--fedavg-sampled` makes FedAvg's nodes
                  axis neighbour-sampled (batch 512, fan-out 10,5) as the 2.4 M-node
                  `bench_large_graph.py --products --run` was; that run's wall time, phases and peak
                  RSS are cited from large_graph.json's "run" entry (not re-run here) and drawn as
                  its own marker: sampled rounds cost per sampled slot, not per edge (a trial at 3,000
                  nodes in 100 clients: a sampled FedAvg round cost 9 s CPU, a full-batch FedGTA round 0.13 s: every client
                  pays batch 512 x 61 slots however small it is).
    client_chunk: a tenth of the clients at a time (at least 10), so the live activations are about
                  a tenth of the federation's at every point (10 of 100 = the products run's setting).
                  At 10,000 clients that is 1,000 clients of ~10 nodes per chunk: ~16k padded node
                  rows live, fewer than one chunk of the 100-client point (10 x ~1,000), so a user
                  would not pick a smaller one; the compiled program does not grow with the count
                  (20k nodes, FedAvg: compile 10.2 s CPU at 100 clients, 9.4 s at 2,000).

Algorithms: FedAvg-GCN; FedGTA (the subgraph-FL method: cheaper than FedSage+, whose NeighGen phase
trains a generator of [N, P, F] neighbour features before FedAvg starts; FedGTA's extra work per
round is K = 5 label-propagation steps and a [C, C] moment similarity, which we want to see grow);
HiFGL (one full-graph program whose neighbour sums run through SecMP's field arithmetic, int64).
No algorithm supports sampling except FedAvg, so FedGTA and HiFGL train full-batch on both axes.

Every point runs in its own child process (`harness.launch_limited`): the child builds the program
(`fj.build`, timed: preparation), compiles a one-round scan ahead of time (compile), then runs
`--rounds` rounds one call each (s/round = their median: with 3 rounds the first call's one-off
transfers drop out), and reports its peak RSS (getrusage). A
point that runs past `--budget-s` or grows past `--max-rss-mb` is killed and recorded as
"skipped: <reason>" with the phases it finished; once a point of a nodes-axis series is skipped for
its own time or memory, its larger points are recorded as skipped without running (on the clients
axis a larger count means smaller clients, so every point runs). A
point is also killed when the machine's available memory falls below `--min-available-mb` (other
jobs must not be pushed into the OOM killer); that skip does not stop its series. The load average is recorded
with each point (the machine is shared).
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # harness.py
from harness import (RESULTS, ROOT, command, emit_result, launch_limited, loadavg, machine, peak_rss_mb,  # noqa: E402
                     read_result, write_record)
from headlines import products_run  # noqa: E402

OUT = RESULTS / "growth.json"
FIGURE = ROOT / "docs" / "img" / "growth.png"
ALGORITHMS = ("fedavg", "fedgta", "hifgl")
NODES = (10_000, 30_000, 100_000, 300_000, 1_000_000)
CLIENTS = (10, 100, 1_000, 10_000)
FIXED_CLIENTS, FIXED_NODES = 100, 100_000
# HiFGL computes one forward and, vmapped, one backward pass over the WHOLE graph per silo, with
# SecMP shares [T+1, E, hidden] int64: memory and time grow as silos x edges (3,000 nodes in 100
# silos already held 4.4 GB here). So its nodes axis has 10 silos and its clients axis a 10k-node
# graph; where it stops fitting even then is what the run records.
FIXED = {"hifgl": (10, 10_000)}
PRODUCTS_DEGREE = 2 * 61_859_140 / 2_449_029   # ogbn-products' mean degree, as csbm_products
SAMPLED = {"batch_size": 512, "fanout": "10,5"}  # the products run's sampling (bench_large_graph.RUN_ARGS)


def graph_spec(nodes: int) -> dict:
    """The block_csbm arguments of a point with `nodes` nodes (products' shape at any size)."""
    return dict(num_nodes=nodes, num_blocks=max(47, nodes // 1000), num_classes=47, num_features=100,
                avg_degree=PRODUCTS_DEGREE, seed=0)


def client_chunk(clients: int) -> int:
    """Clients trained at once: a tenth of them, at least 10 (all of them when there are fewer)."""
    return min(clients, max(10, clients // 10))


def plan(axes, algorithms, nodes=NODES, clients=CLIENTS, sampled: bool = False) -> list[dict]:
    """The points to measure: the smallest point of every series (axis, algorithm) first, then the
    next size of each, ..., so that a run cut short by its total budget has every series' small end.

    Args:
        axes: "nodes" and/or "clients".
        algorithms: names from ALGORITHMS.
        nodes, clients: the sizes of each axis.
        sampled: FedAvg's nodes axis trains neighbour-sampled (`SAMPLED`).

    Returns:
        A list of dicts with axis, algorithm, nodes, clients, sampled (FedAvg on the nodes axis).
    """
    out = []
    for axis in axes:
        for alg in algorithms:
            fixed_k, fixed_n = FIXED.get(alg, (FIXED_CLIENTS, FIXED_NODES))
            sizes = [(n, fixed_k) for n in nodes] if axis == "nodes" else [(fixed_n, k) for k in clients]
            out += [{"axis": axis, "algorithm": alg, "nodes": n, "clients": k, "rank": i,
                     "sampled": sampled and axis == "nodes" and alg == "fedavg"} for i, (n, k) in enumerate(sizes)]
    return sorted(out, key=lambda p: p["rank"])  # stable: axes and algorithms keep their order within a rank


def part_name(p: dict) -> str:
    """The record part of a point: 'axis/algorithm/nodes/clients'."""
    return f"{p['axis']}/{p['algorithm']}/{p['nodes']}/{p['clients']}"


def worker(args) -> None:
    """One point: build, compile, run; emits the phases done so far after each one (a killed
    worker's last line says how far it got)."""
    sys.path.insert(0, str(ROOT))
    import jax
    import jax.numpy as jnp
    import fgl_jax as fj
    row = {"devices": [str(d) for d in jax.devices()]}
    spec = graph_spec(args.nodes)
    gen = {}

    def generate(data_dir=None):
        t0 = time.perf_counter()
        g = fj.block_csbm(**spec, name=f"growth_{args.nodes}")
        gen["s"] = time.perf_counter() - t0
        return g

    fj.register_dataset(f"growth_{args.nodes}", generate, (), "bench_growth's graph", overwrite=True)
    if args.algorithm == "hifgl":
        cfg = fj.default_config("hifgl", dataset=f"growth_{args.nodes}", clients=args.clients, rounds=args.rounds)
    else:
        extra = SAMPLED if args.sampled else {}
        cfg = fj.default_config("baseline", dataset=f"growth_{args.nodes}", algorithm=args.algorithm,
                                clients=args.clients, partition="metis", rounds=args.rounds,
                                client_chunk=client_chunk(args.clients), **extra)
    row["config"] = {k: getattr(cfg, k) for k in ("clients", "rounds", "hidden", "num_layers")}
    row["config"].update(client_chunk=getattr(cfg, "client_chunk", None), batch_size=getattr(cfg, "batch_size", 0),
                         fanout=getattr(cfg, "fanout", None) if getattr(cfg, "batch_size", 0) else None)
    t0, c0 = time.perf_counter(), time.process_time()
    program = fj.build(cfg)
    alg, data = program.algorithm, program.data
    row.update(prepare_s=time.perf_counter() - t0, prepare_cpu_s=time.process_time() - c0,
               generate_s=gen.get("s"), rss_after_prepare_mb=peak_rss_mb())
    emit_result(row)
    Tracker = fj.engine.Tracker
    with fj.x64_scope(alg):
        t0, c0 = time.perf_counter(), time.process_time()
        state = jax.block_until_ready(jax.jit(alg.init)(jax.random.key(0), data))
        compiled = fj.engine.make_scan(alg, 1).lower(state, Tracker.empty(), data, jax.random.key(1),
                                                     jnp.int32(0)).compile()
        row.update(compile_s=time.perf_counter() - t0, compile_cpu_s=time.process_time() - c0)
        emit_result(row)
        wall, cpu = [], []
        for r in range(args.rounds):
            t0, c0 = time.perf_counter(), time.process_time()
            state, _, metrics = jax.block_until_ready(compiled(state, Tracker.empty(), data, jax.random.key(1),
                                                               jnp.int32(r)))
            wall.append(time.perf_counter() - t0)
            cpu.append(time.process_time() - c0)
            row.update(round_s=wall, round_cpu_s=cpu)
            emit_result(row)
    loss = jax.device_get(metrics.get("train_loss")) if isinstance(metrics, dict) else None
    row.update(s_per_round=statistics.median(wall), cpu_s_per_round=statistics.median(cpu),
               train_loss=None if loss is None else float(jnp.mean(loss)), peak_rss_mb=peak_rss_mb())
    emit_result(row)


def measure(p: dict, args) -> dict:
    """Run one point in a child process under the budget; the row to record (never raises)."""
    cmd = [sys.executable, __file__, "--worker", "--algorithm", p["algorithm"], "--nodes", str(p["nodes"]),
           "--clients", str(p["clients"]), "--rounds", str(args.rounds)] + (["--sampled"] if p["sampled"] else [])
    env = {"PYTHONPATH": str(ROOT)}
    if args.device:  # the same entry on an accelerator: JAX picks the platform from this variable
        env["JAX_PLATFORMS"] = args.device
    load = loadavg()
    res = launch_limited(cmd, args.budget_s, args.max_rss_mb, cwd=ROOT, env=env, min_available_mb=args.min_available_mb)
    row = {**{k: p[k] for k in ("axis", "algorithm", "nodes", "clients", "sampled")},
           "loadavg_at_start": load, "loadavg_at_end": loadavg(), "process_wall_s": res.wall_s,
           "process_peak_rss_mb": res.peak_rss_mb}
    try:
        row.update(read_result(res.stdout))
    except ValueError:
        pass  # stopped or failed before its first phase
    if res.stopped == "budget":
        row["skipped"] = f"exceeded --budget-s {args.budget_s:g} s"
    elif res.stopped == "memory":
        row["skipped"] = f"resident memory passed --max-rss-mb {args.max_rss_mb:g}"
    elif res.stopped == "machine memory":
        row["skipped"] = (f"the machine's available memory fell below --min-available-mb {args.min_available_mb:g} "
                          f"(the point had {res.peak_rss_mb:.0f} MiB resident)")
    elif res.returncode != 0:
        last = [ln for ln in res.stderr.strip().splitlines() if ln.strip()][-1:] or [f"exit {res.returncode}"]
        row["skipped"] = f"failed (exit {res.returncode}): {last[0][:300]}"
    if "skipped" in row:
        done = [k for k in ("prepare_s", "compile_s", "round_s") if k in row]
        row["skipped"] += f" after {', '.join(done) if done else 'no phase'}"
    return row


def merge(src: Path, dst: Path = OUT) -> Path:
    """Copy the points of the growth record `src` into `dst`, each keeping the provenance of the run
    that measured it (a point of the same name in `dst` is replaced).

    Args:
        src: a record written by this script (e.g. with `--out`).
        dst: the record to update.

    Returns:
        `dst`.
    """
    sys.path.insert(0, str(ROOT))
    from fgl_jax import records
    new, rec = records.read(src), records.read(dst)
    rec["metrics"]["points"].update(new["metrics"]["points"])
    rec["metrics"]["points"] = fill_crossings(rec["metrics"]["points"])
    return records.write(dst, rec)


def fill_crossings(points: dict) -> dict:
    """`points` with a point that was not run replaced by the same point measured on the other axis
    (the two axes cross where nodes = 100k and clients = 100), marked `same_as`.

    Args:
        points: part name -> row.

    Returns:
        A new dict.
    """
    key = lambda r: (r["algorithm"], r["nodes"], r["clients"], r.get("sampled", False))
    measured = {key(r): (name, r) for name, r in points.items() if "skipped" not in r and "same_as" not in r}
    out = {}
    for name, r in points.items():
        hit = measured.get(key(r))
        if "skipped" in r and r["skipped"].startswith("not run") and hit is not None:
            r = {**hit[1], "axis": r["axis"], "same_as": hit[0]}
        out[name] = r
    return out


def plot(path: Path = FIGURE) -> Path:
    """Log-log s/round and peak RSS against nodes and against clients, per algorithm, from the record.

    Args:
        path: the PNG to write.

    Returns:
        `path`.
    """
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    m = json.loads(OUT.read_text())["metrics"]
    rows = list(m["points"].values())
    large = RESULTS / "large_graph.json"
    cited = products_run(json.loads(large.read_text())["metrics"]) if large.exists() else None
    fig, axes = plt.subplots(2, 2, figsize=(10, 7.5))
    for col, axis in enumerate(("nodes", "clients")):
        for alg, marker, color in zip(ALGORITHMS, "osD", ("C0", "C1", "C2")):
            pts = sorted((r for r in rows if r["axis"] == axis and r["algorithm"] == alg and "skipped" not in r),
                         key=lambda r: r[axis])
            fixed_k, fixed_n = FIXED.get(alg, (FIXED_CLIENTS, FIXED_NODES))
            label = alg + (" (sampled)" if any(r.get("sampled") for r in pts) else "")
            if (fixed_k, fixed_n) != (FIXED_CLIENTS, FIXED_NODES):
                label += f" ({fixed_k} silos)" if axis == "nodes" else f" ({fixed_n:,} nodes)"
            skipped = [r[axis] for r in rows if r["axis"] == axis and r["algorithm"] == alg and "skipped" in r]
            for row_i, key in enumerate(("s_per_round", "peak_rss_mb")):
                ax = axes[row_i, col]
                ax.plot([r[axis] for r in pts], [r[key] for r in pts], marker=marker, color=color, label=label)
                for x in skipped:  # a skipped point: a dotted line where it would be
                    ax.axvline(x, color=color, ls=":", lw=1.0)
                if axis == "nodes" and alg == "fedavg" and cited and cited.get(key):
                    # its own marker: that run trained neighbour-sampled, the points above full-batch
                    ax.plot([cited["nodes"]], [cited[key]], marker="*", ms=12, ls="", color="k",
                            label="fedavg sampled, 2.4 M (large_graph.json)")
        for row_i, (key, unit) in enumerate((("s_per_round", "seconds per round"), ("peak_rss_mb", "peak RSS (MiB)"))):
            ax = axes[row_i, col]
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_xlabel(f"{axis} ({'100 clients' if axis == 'nodes' else '100,000 nodes'})")
            ax.set_ylabel(unit)
            ax.grid(True, which="both", alpha=0.3)
            ax.legend(fontsize=8)
    fig.suptitle("fgl_jax cost growth (benchmarks/bench_growth.py; dotted: a skipped point; 2.4 M: large_graph.json)",
                 fontsize=10)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=90)
    return path


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--algorithm", default="fedavg", help=argparse.SUPPRESS)
    ap.add_argument("--sampled", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--axis", choices=("nodes", "clients", "both"), default="both",
                    help="which curve to measure: against nodes (100 clients), against clients (100k nodes), or both")
    ap.add_argument("--algorithms", default=",".join(ALGORITHMS),
                    help=f"comma-separated subset of {', '.join(ALGORITHMS)}")
    ap.add_argument("--nodes", default=None,
                    help="nodes-axis sizes, comma-separated (default 10000,...,1000000); in a worker, its one size")
    ap.add_argument("--clients", default=None,
                    help="clients-axis sizes, comma-separated (default 10,100,1000,10000); in a worker, its one size")
    ap.add_argument("--rounds", type=int, default=3,
                    help="rounds per point, one call each after the ahead-of-time compile; s/round is their median")
    ap.add_argument("--fedavg-sampled", action="store_true",
                    help="FedAvg on the nodes axis trains neighbour-sampled (batch 512, fan-out 10,5), as the "
                         "2.4 M-node run of bench_large_graph.py; default full-batch like the other algorithms")
    ap.add_argument("--budget-s", type=float, default=600.0,
                    help="wall seconds a point may take (whole child process); past it the point is killed and "
                         "recorded as skipped")
    ap.add_argument("--max-rss-mb", type=float, default=8000.0,
                    help="resident MiB a point may reach; past it the point is killed and recorded as skipped")
    ap.add_argument("--min-available-mb", type=float, default=1500.0,
                    help="kill a point when the machine's available memory falls below this many MiB (a shared "
                         "machine: other jobs must not be pushed into the OOM killer)")
    ap.add_argument("--total-budget-s", type=float, default=None,
                    help="wall seconds for the whole run; points not started by then are recorded as skipped")
    ap.add_argument("--device", default=None, choices=("cpu", "gpu", "tpu"),
                    help="JAX platform of the points (sets JAX_PLATFORMS in each child); default: JAX's choice")
    ap.add_argument("--plot", action="store_true", help="only draw docs/img/growth.png from the record")
    ap.add_argument("--merge", type=Path, default=None, metavar="FILE",
                    help="only copy the points of another growth record (a run written with --out elsewhere, e.g. "
                         "one large point run beside the main run) into the record, each with its own provenance")
    ap.add_argument("--out", type=Path, default=OUT, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        args.nodes, args.clients = int(args.nodes), int(args.clients)
        worker(args)
        return
    if args.plot:
        print(f"wrote {plot()}")
        return
    if args.merge:
        print(f"wrote {merge(args.merge, args.out)}")
        return
    algorithms = [a.strip() for a in args.algorithms.split(",") if a.strip()]
    unknown = [a for a in algorithms if a not in ALGORITHMS]
    if unknown:
        ap.error(f"--algorithms: unknown {', '.join(unknown)} (choose from {', '.join(ALGORITHMS)})")
    try:
        nodes = tuple(int(x) for x in args.nodes.split(",")) if args.nodes else NODES
        clients = tuple(int(x) for x in args.clients.split(",")) if args.clients else CLIENTS
    except ValueError:
        ap.error(f"--nodes / --clients: expected comma-separated integers, got {args.nodes!r} / {args.clients!r}")
    axes = ("nodes", "clients") if args.axis == "both" else (args.axis,)
    points, stopped, t_start, seen = {}, {}, time.perf_counter(), {}
    for p in plan(axes, algorithms, nodes, clients, args.fedavg_sampled):
        series = (p.pop("rank"), p["axis"], p["algorithm"])[1:]
        same = (p["algorithm"], p["nodes"], p["clients"], p["sampled"])
        if same in seen:  # the point where the two axes cross: measured once
            row = {**seen[same], "axis": p["axis"], "same_as": part_name(seen[same])}
        elif series in stopped:
            row = {**p, "skipped": f"not run: the smaller point {stopped[series]} was skipped"}
        elif args.total_budget_s is not None and time.perf_counter() - t_start > args.total_budget_s:
            row = {**p, "skipped": f"not run: --total-budget-s {args.total_budget_s:g} s was used up"}
        else:
            row = measure(p, args)
            seen[same] = row
            # a point killed because OTHER jobs used up the machine's memory says nothing of the larger ones
            # only on the nodes axis is a larger point surely costlier: more clients of a fixed graph are
            # smaller clients (FedAvg's round got cheaper from 10 to 100 clients)
            if ("skipped" in row and p["axis"] == "nodes"
                    and not row["skipped"].startswith("the machine's available memory")):
                stopped[series] = f"{p['nodes']} nodes / {p['clients']} clients"
        points[part_name(p)] = row
        shown = (f"{row['s_per_round']:.3g} s/round, compile {row['compile_s']:.1f} s, prepare "
                 f"{row['prepare_s']:.1f} s, peak RSS {row['peak_rss_mb']:.0f} MiB"
                 if "skipped" not in row else "skipped: " + row["skipped"])
        print(f"{part_name(p)}: {shown}", flush=True)
        payload = {"benchmark": "cost growth against nodes and clients: FedAvg, FedGTA, HiFGL on block_csbm graphs",
                   "setup": {"graph": {k: v for k, v in graph_spec(0).items() if k != "num_nodes"},
                             "blocks": "max(47, nodes // 1000)", "fixed_clients": FIXED_CLIENTS,
                             "fixed_nodes": FIXED_NODES, "fixed_hifgl": {"clients": FIXED["hifgl"][0],
                                                                         "nodes": FIXED["hifgl"][1]},
                             "sampled_fedavg": SAMPLED if args.fedavg_sampled else None,
                             "client_chunk": "min(clients, max(10, clients // 10))", "rounds": args.rounds,
                             "partition": "metis (HiFGL: its random silos)", "budget_s": args.budget_s,
                             "max_rss_mb": args.max_rss_mb, "device": args.device or "default"},
                   "points": {part_name(p): row},
                   "cited_2_4M": "benchmarks/results/large_graph.json metrics.run (read by the plot and the table)",
                   "command": command(__file__, sys.argv[1:] if argv is None else argv)}
        # one part per point: a partial run (one axis, one algorithm) keeps the record's other points;
        # written after every point, so a run stopped midway keeps what it measured
        write_record(args.out, payload, title="cost growth against nodes and clients", parts="points")
    # the machine description loads jax: only once every worker has finished
    payload.update(points={}, machine={**machine(), "note": "2 vCPUs shared with other jobs; load average per point"})
    print(f"wrote {write_record(args.out, payload, title='cost growth against nodes and clients', parts='points')}")


if __name__ == "__main__":
    main()
