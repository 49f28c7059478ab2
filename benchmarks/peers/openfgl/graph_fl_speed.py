"""Speed per round of graph-level FL, side by side in one run: fgl_jax with packed client execution,
fgl_jax vmapped (`--client-exec vmap`) and OpenFGL 1.1.0's graph_fl scenario, timed alternately on the
same clients and split, in compare_graph_fl.py's setting (10 clients, label skew Dirichlet 0.5, 3 local
epochs over mini-batches of 128 graphs, GIN 2 x 64, each client's model evaluated on its own graphs
every round). Outside CI; writes the record `results_graph_fl_speed.json` (+ .md) next to this file.

    FGL_JAX_DATA=/work/shared/data nice python -m benchmarks.peers.openfgl.graph_fl_speed \
        --venv /work/peers/openfgl-venv --datasets PROTEINS --algorithms fedavg --rounds 4 --repeats 1

`--sides packed,openfgl` leaves the vmapped side out; `--merge` keeps the record's other cells (a
cell is dataset, algorithm, repeat; a cell run again is replaced), so several invocations build one record.

Per side and repeat: the median over rounds of wall ms and process CPU ms per round (training and
evaluation, compilation and data loading excluded: fgl_jax times each call of its jitted round after
a first, compiling call; OpenFGL's trainer is stamped at each round's log row). Ratios are OpenFGL's
median over fgl_jax's.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Optional

import numpy as np

from benchmarks.peers.openfgl.compare import DEFAULT_VENV, machine_info
from benchmarks.peers.openfgl.compare_graph_fl import (ALGORITHMS, GRAPH_FGL_OPTIONS, GRAPH_OPENFGL_CONFIG, SUM_READOUT,
                                                       export, openfgl_tu_path, run_openfgl, usable_partition_seed)

HERE = Path(__file__).resolve().parent
SIDES = ("fgl_jax packed", "OpenFGL", "fgl_jax vmap")
SIDE_NAMES = {"packed": "fgl_jax packed", "openfgl": "OpenFGL", "vmap": "fgl_jax vmap"}


def parse_sides(text: str) -> tuple:
    """The sides named in a comma-separated `--sides` value, in `SIDES` order.

    Args:
        text: e.g. "packed,openfgl" (names from `SIDE_NAMES`).

    Returns:
        The record's side names, a sub-tuple of `SIDES`.

    Raises:
        ValueError: an unknown name, or no OpenFGL side (the speed-ups are against it).
    """
    names = [t.strip() for t in text.split(",") if t.strip()]
    bad = [t for t in names if t not in SIDE_NAMES]
    if bad or "openfgl" not in names:
        raise ValueError(f"--sides: {text!r} must name openfgl and any of packed, vmap (unknown: {bad})")
    return tuple(s for s in SIDES if s in {SIDE_NAMES[t] for t in names})


def fgl_round_times(cfg, rounds: int, seed: int) -> dict:
    """Per-round wall and CPU ms of fgl_jax's run of `cfg` (its jitted round, called `rounds` times after
    one compiling call), with the compile call's wall seconds and the last round's test accuracy."""
    import jax
    from fgl_jax.systems.baseline import algorithm_from_config, prepare
    prep = prepare(cfg)
    alg = algorithm_from_config(cfg, prep.graph)
    state = alg.init(jax.random.key(seed), prep.data)
    step = jax.jit(alg.round)
    t0 = time.perf_counter()
    state, m = step(state, prep.data, jax.random.fold_in(jax.random.key(seed), 0))
    jax.block_until_ready(m)
    first = time.perf_counter() - t0
    wall, cpu = [], []
    for r in range(1, rounds + 1):
        t0, c0 = time.perf_counter(), time.process_time()
        state, m = step(state, prep.data, jax.random.fold_in(jax.random.key(seed), r))
        jax.block_until_ready(m)
        wall.append(1000.0 * (time.perf_counter() - t0))
        cpu.append(1000.0 * (time.process_time() - c0))
    return {"round_ms": wall, "round_cpu_ms": cpu, "first_call_s": first, "test_acc": float(m["test_acc"]),
            "train_batch": prep.report["train_batch"], "size_classes": prep.report.get("size_classes")}


def cell_config(ds: str, algo: str, rounds: int, seed: int):
    """fgl_jax's RunConfig of a cell (compare_graph_fl.py's setting, the first usable partition seed).

    Args:
        ds: the TU set; algo: the fgl_jax algorithm name.
        rounds: timed rounds (the run gets one more: the compiling call).
        seed: run and split seed.

    Returns:
        The RunConfig, partition_seed set.
    """
    from fgl_jax import RunConfig
    from fgl_jax.systems.baseline import prepare
    extra = dict(GRAPH_FGL_OPTIONS.get(algo, {}))
    if algo == "fedprox":
        extra = {"prox_mu": 1e-3}
    if algo == "fedstar":
        extra = {"fedstar_client_init": "own"}
    cfg = RunConfig(dataset=ds, algorithm=algo, task="graph_cls", clients=10, partition="dirichlet",
                    dirichlet_beta=0.5, graph_model="gin", graph_pooling="sum" if algo in SUM_READOUT else "mean",
                    graph_batch_size=128, hidden=64, num_layers=2, dropout=0.5, local_steps=3, lr=0.01,
                    weight_decay=5e-4, rounds=rounds + 1, eval_mode="local_model_on_local_data",
                    eval_average="client_nodes", split_seed=seed, seed=seed, **extra)
    return cfg.replace(partition_seed=usable_partition_seed(cfg, prepare(cfg).graph))


def cell_bound(ds: str, algo: str, seed: int) -> dict:
    """The matrix-product FLOPs of one round of a cell, as `benchmarks.peers.flops.round_product_flops`
    counts them (every real training step's forward and gradient, one evaluation forward), for the
    record's bound columns."""
    from benchmarks.peers import flops
    return flops.round_product_flops(cell_config(ds, algo, 1, seed))


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--datasets", nargs="+", default=["PROTEINS"], help="TU sets of the shared data")
    ap.add_argument("--algorithms", nargs="+", default=["fedavg"], choices=sorted(ALGORITHMS), help="fgl_jax names")
    ap.add_argument("--rounds", type=int, default=4, help="timed rounds per side (after fgl_jax's compiling call)")
    ap.add_argument("--repeats", type=int, default=1, help="alternations of the three sides (order reversed "
                    "every other repeat)")
    ap.add_argument("--seed", type=int, default=0, help="run and split seed")
    ap.add_argument("--venv", default=os.environ.get("OPENFGL_VENV", str(DEFAULT_VENV)), help="OpenFGL's venv")
    ap.add_argument("--out", default=str(HERE / "results_graph_fl_speed"), help="stem of the record <out>.json / .md")
    ap.add_argument("--sides", default="packed,openfgl,vmap", help="comma-separated sides to time: packed "
                    "(fgl_jax packed client execution), openfgl, vmap (fgl_jax --client-exec vmap)")
    ap.add_argument("--cpu", type=int, default=None, help="the one CPU both sides run on (process affinity, "
                    "inherited by OpenFGL's subprocess); default: the first CPU this process may use; -1: no pinning "
                    "(XLA's runtime then spreads a round over worker threads, ~15 %% more process CPU time here)")
    ap.add_argument("--bounds-only", action="store_true", help="time nothing: measure the core's FMA peak (and "
                    "jax's and OpenFGL's torch's best product rates), count the product FLOPs of every cell of the "
                    "existing record and rewrite it with the bound columns")
    ap.add_argument("--merge", action="store_true", help="keep the existing record's cells that this run does "
                    "not time (same dataset, algorithm and repeat: replaced)")
    a = ap.parse_args(argv)
    try:
        sides_run = parse_sides(a.sides)
    except ValueError as e:
        ap.error(str(e))
    if "jax" not in sys.modules:   # one thread per side, as compare_graph_fl.py
        os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " --xla_cpu_multi_thread_eigen=false").strip()
    if a.cpu != -1:   # one CPU per side: XLA sizes its runtime's thread pools to the CPUs it may use
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0)) if a.cpu is None else a.cpu})
    from fgl_jax import resolve_data_dir
    from fgl_jax.systems.baseline import prepare
    from benchmarks.peers import flops
    started, info = time.time(), machine_info()
    info["cpu_affinity"] = sorted(os.sched_getaffinity(0))
    venv_python = Path(a.venv) / "bin" / "python"
    cpu = info["cpu_affinity"][0] if a.cpu != -1 else None
    # the core's FMA peak (and each library's best product rate): the rate of the bound columns
    info["peak_gflops"] = flops.peak_rates(sys.executable, str(venv_python), cpu)
    print(f"peak rates, GFLOP/s: {info['peak_gflops']}", flush=True)
    bounds: dict = {}
    if a.bounds_only:
        from fgl_jax import records
        prior = records.read(Path(a.out).with_suffix(".json"))
        old = prior["metrics"]["runs"]
        # the times are the timing invocation's: keep its machine facts and name it in the notes
        probe = {"peak_gflops": info["peak_gflops"], "cpu_affinity": info["cpu_affinity"],
                 "loadavg": list(os.getloadavg()), "date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())}
        timed_by = prior["metrics"]["machine"].get("timed_by") or {
            k: prior["provenance"].get(k) for k in ("command", "commit", "finished")}
        info = {**prior["metrics"]["machine"], "peak_gflops": info["peak_gflops"], "bounds_probe": probe,
                "timed_by": timed_by}
        for rec in old:
            key = (rec["dataset"], rec["algorithm"])
            if key not in bounds:
                bounds[key] = cell_bound(*key, a.seed)
                print(f"{key}: {bounds[key]['total'] / 1e9:.2f} GFLOP of products per round", flush=True)
            rec["bound"] = bounds[key]
        a.merge = False
        print(write_record(a, old, info, started))
        return
    data_dir = Path(resolve_data_dir(None))
    runs, md = [], ""
    with tempfile.TemporaryDirectory(prefix="openfgl_speed_") as tmp:
        for ds in a.datasets:
            for algo in a.algorithms:
                cfg = cell_config(ds, algo, a.rounds, a.seed)
                bound = flops.round_product_flops(cfg)
                work = Path(tmp) / f"{ds}_{algo}"
                work.mkdir(parents=True)
                export(cfg, prepare(cfg).graph, work / "arrays.npz")
                job = {"root": str(work / "root"), "tu_path": openfgl_tu_path(data_dir, ds),
                       "arrays": str(work / "arrays.npz"), "openfgl_dataset": ds,
                       "openfgl_algorithm": ALGORITHMS[algo], "clients": 10, "beta": 0.5, "rounds": a.rounds + 1,
                       "hidden": 64, "num_layers": 2, "dropout": 0.5, "lr": 0.01, "weight_decay": 5e-4,
                       "local_epochs": 3, "batch_size": 128, "seed": a.seed, "prox_mu": 1e-3, "threads": 1,
                       "openfgl_config": GRAPH_OPENFGL_CONFIG.get(algo, {})}
                sides = {"fgl_jax packed": lambda: fgl_round_times(cfg.replace(client_exec="packed"), a.rounds, a.seed),
                         "fgl_jax vmap": lambda: fgl_round_times(cfg.replace(client_exec="vmap"), a.rounds, a.seed),
                         "OpenFGL": lambda: drop_first(run_openfgl(work, job, venv_python))}
                for rep in range(a.repeats):
                    order = sides_run if rep % 2 == 0 else sides_run[::-1]
                    rec = {"dataset": ds, "algorithm": algo, "repeat": rep, "order": list(order),
                           "partition_seed": cfg.partition_seed, "rounds": a.rounds, "loadavg": {},
                           "bound": bound}
                    for side in order:
                        rec["loadavg"][side] = os.getloadavg()[0]
                        rec[side] = sides[side]()
                        print(f"{ds} {algo} {side}: median {np.median(rec[side]['round_ms']):.0f} ms/round, "
                              f"{np.median(rec[side]['round_cpu_ms']):.0f} CPU ms/round", flush=True)
                    runs.append(rec)
                    md = write_record(a, runs, info, started)   # after every cell: a stopped run keeps its cells
    print(md)


def write_record(a, runs: list, info: dict, started: float) -> str:
    """Write the record `<a.out>.json` / .md of the cells `runs` (with `a.merge`, after the existing
    record's other cells) and return the Markdown table.

    Args:
        a: the parsed arguments (out, merge, seed, rounds).
        runs: this invocation's cells so far.
        info: `machine_info()`, its loadavg_end set here.
        started: the invocation's start (time.time()).

    Returns:
        The table, as written into the .md.
    """
    from fgl_jax import records, table
    out_json = Path(a.out).with_suffix(".json")
    if a.merge and out_json.exists():   # the record's other cells, in their order, before this run's
        ran = {(r["dataset"], r["algorithm"], r["repeat"]) for r in runs}
        runs = [r for r in records.read(out_json)["metrics"]["runs"]
                if (r["dataset"], r["algorithm"], r["repeat"]) not in ran] + runs
    from benchmarks.peers import flops
    rate = flops.floor_rate(info["peak_gflops"]) if info.get("peak_gflops") else None
    rows = [speed_row(rec, rate) for rec in runs]
    info["loadavg_end"] = list(os.getloadavg())
    md = table(rows, disable_numparse=True)
    note = (f"\nSetting: compare_graph_fl.py's (10 clients, label skew Dirichlet 0.5, the first usable partition "
            f"seed, split seed {a.seed}, GIN 2 x 64, dropout 0.5, Adam lr 0.01, weight decay 5e-4, 3 local epochs over "
            "mini-batches of 128 graphs, each client's model on its own graphs every round, one CPU thread per side). "
            f"Medians over the timed rounds of each side ({a.rounds} in this invocation; each cell's `rounds` in the "
            "record's runs; OpenFGL's first round dropped; fgl_jax's compiling call "
            "not counted); CPU = process CPU time; speed-up = OpenFGL's median / fgl_jax's. Load avg: the 1-minute "
            "load average when each side started (packed / OpenFGL / vmap; - : side not run); the machine is shared "
            f"with other jobs. Both sides pinned to CPU(s) {info.get('cpu_affinity')} (OpenFGL's subprocess inherits it). "
            f"Machine: {info.get('cpu_model', '?')}, {info['cpu_count']} cores.")
    if info.get("timed_by"):
        t = info["timed_by"]
        note += (f" Times from the invocation `{t['command']}` (commit {str(t.get('commit'))[:12]}, finished "
                 f"{t.get('finished')}); this record's own command added the bound columns.")
    if rate is not None:
        note += (
            f"\n\nBound: products GFLOP = the matrix products one round must compute (`benchmarks/peers/flops.py`: "
            "the dot_generals of one training step, forward and gradient, on every real training mini-batch of every "
            "client times the 3 epochs, plus one forward pass over every client's graphs, padding stripped, read "
            "from the lowered StableHLO; aggregation, readout, element-wise work and the algorithm's own extra terms "
            "not counted). At the core's peak float32 FMA rate (`benchmarks/peers/fma_peak.c`, independent 256-bit "
            f"FMA chains, best of three: {info['peak_gflops'].get('fma') or 0:.1f} GFLOP/s; the fastest library "
            f"kernels, a 2048 x 2048 product on one thread: jax {info['peak_gflops']['jax']:.1f}, torch "
            f"{info['peak_gflops']['torch']:.1f}; measured by the command below; without a C compiler the fastest "
            "kernel's rate is used) they take 'products at peak ms': no implementation of "
            "fgl_jax's round (its model, its algorithm) runs faster on this core. OpenFGL's CPU ms over it is the "
            "largest speed-up any implementation of that round could show against OpenFGL's measured round (in the "
            "fedstar rows both sides train the same model: DecoupledGIN and DualChannelClassifier; in the others "
            "OpenFGL trains its own GIN, which computes more than fgl_jax's).")
    rec = records.make(Path(a.out).name, {"rows": rows, "runs": runs, "machine": info}, config=vars(a), seeds=[a.seed],
                       provenance=records.provenance(started=started),
                       title="Graph-level FL speed per round: fgl_jax packed / vmapped vs OpenFGL 1.1.0")
    records.write(Path(a.out).with_suffix(".json"), rec, markdown=md + "\n" + note)
    return md


def speed_row(rec: dict, rate: Optional[float] = None) -> dict:
    """The table row of one cell of the record (a side not run shows "-").

    Args:
        rec: a run entry: dataset, algorithm, repeat, loadavg, each timed side's round_ms, round_cpu_ms
            and (when counted) bound: the round's product FLOPs.
        rate: the rate the floor divides the products by, GFLOP/s (`flops.floor_rate`; None: no bound columns).

    Returns:
        The row: each side's median wall / CPU ms per round, the speed-ups against OpenFGL and, with a
        bound and a rate, the round's product GFLOP, the time they take at that rate (no implementation
        of the round can be faster) and OpenFGL's CPU ms over that time (the largest possible speed-up).
    """
    med = {s: (float(np.median(rec[s]["round_ms"])), float(np.median(rec[s]["round_cpu_ms"]))) for s in SIDES if s in rec}
    of_w, of_c = med["OpenFGL"]
    ms = lambda s: "{:.0f} / {:.0f}".format(*med[s]) if s in med else "-"
    up = lambda s: f"{of_w / med[s][0]:.1f}x / {of_c / med[s][1]:.1f}x" if s in med else "-"
    return {"dataset": rec["dataset"], "algorithm": rec["algorithm"], "repeat": rec["repeat"],
            "packed ms / CPU ms": ms("fgl_jax packed"), "vmap ms / CPU ms": ms("fgl_jax vmap"),
            "OpenFGL ms / CPU ms": f"{of_w:.0f} / {of_c:.0f}", "packed speed-up wall / CPU": up("fgl_jax packed"),
            "vmap speed-up wall / CPU": up("fgl_jax vmap"),
            "load avg": " / ".join(f"{rec['loadavg'][s]:.1f}" if s in rec["loadavg"] else "-" for s in SIDES),
            **bound_columns(rec, rate, of_c)}


def bound_columns(rec: dict, rate: Optional[float], openfgl_cpu_ms: float) -> dict:
    """The bound columns of a row ("-" when the cell has no FLOP count or no rate was measured)."""
    if rate is None or "bound" not in rec:
        return {"products GFLOP / round": "-", "products at peak ms": "-", "largest possible CPU speed-up": "-"}
    gflop = rec["bound"]["total"] / 1e9
    floor_ms = 1e3 * gflop / rate
    return {"products GFLOP / round": f"{gflop:.2f}", "products at peak ms": f"{floor_ms:.0f}",
            "largest possible CPU speed-up": f"{openfgl_cpu_ms / floor_ms:.1f}x"}


def drop_first(result: dict) -> dict:
    """OpenFGL's result with its first round's times dropped (its warm-up: lazy CUDA-free torch init, caches)."""
    return {**result, "round_ms": result["round_ms"][1:], "round_cpu_ms": result["round_cpu_ms"][1:]}


if __name__ == "__main__":
    main()
