"""Speed per round of graph-level FL, side by side in one run: fgl_jax with packed client execution,
fgl_jax vmapped (`--client-exec vmap`) and OpenFGL 1.1.0's graph_fl scenario, timed alternately on the
same clients and split, in compare_graph_fl.py's setting (10 clients, label skew Dirichlet 0.5, 3 local
epochs over mini-batches of 128 graphs, GIN 2 x 64, each client's model evaluated on its own graphs
every round). Outside CI; writes the record `results_graph_fl_speed.json` (+ .md) next to this file.

    FGL_JAX_DATA=/work/shared/data nice python -m benchmarks.peers.openfgl.graph_fl_speed \
        --venv /work/peers/openfgl-venv --datasets PROTEINS --algorithms fedavg --rounds 4 --repeats 1

Per side and repeat: the median over rounds of wall ms and process CPU ms per round (training and
evaluation, compilation and data loading excluded: fgl_jax times each call of its jitted round after
a first, compiling call; OpenFGL's trainer is stamped at each round's log row). Ratios are OpenFGL's
median over fgl_jax's.
"""
from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks.peers.openfgl.compare import DEFAULT_VENV, machine_info
from benchmarks.peers.openfgl.compare_graph_fl import (ALGORITHMS, GRAPH_FGL_OPTIONS, GRAPH_OPENFGL_CONFIG, SUM_READOUT,
                                                       export, openfgl_tu_path, run_openfgl, usable_partition_seed)

HERE = Path(__file__).resolve().parent
SIDES = ("fgl_jax packed", "OpenFGL", "fgl_jax vmap")


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
    a = ap.parse_args(argv)
    if "jax" not in __import__("sys").modules:   # one thread per side, as compare_graph_fl.py
        os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " --xla_cpu_multi_thread_eigen=false").strip()
    from fgl_jax import RunConfig, records, resolve_data_dir, table
    from fgl_jax.systems.baseline import prepare
    started, info = time.time(), machine_info()
    data_dir = Path(resolve_data_dir(None))
    venv_python = Path(a.venv) / "bin" / "python"
    runs, rows = [], []
    with tempfile.TemporaryDirectory(prefix="openfgl_speed_") as tmp:
        for ds in a.datasets:
            for algo in a.algorithms:
                extra = dict(GRAPH_FGL_OPTIONS.get(algo, {}))
                if algo == "fedprox":
                    extra = {"prox_mu": 1e-3}
                if algo == "fedstar":
                    extra = {"fedstar_client_init": "own"}
                cfg = RunConfig(dataset=ds, algorithm=algo, task="graph_cls", clients=10, partition="dirichlet",
                                dirichlet_beta=0.5, graph_model="gin",
                                graph_pooling="sum" if algo in SUM_READOUT else "mean", graph_batch_size=128,
                                hidden=64, num_layers=2, dropout=0.5, local_steps=3, lr=0.01, weight_decay=5e-4,
                                rounds=a.rounds + 1, eval_mode="local_model_on_local_data",
                                eval_average="client_nodes", split_seed=a.seed, seed=a.seed, **extra)
                cfg = cfg.replace(partition_seed=usable_partition_seed(cfg, prepare(cfg).graph))
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
                    order = SIDES if rep % 2 == 0 else SIDES[::-1]
                    rec = {"dataset": ds, "algorithm": algo, "repeat": rep, "order": list(order),
                           "partition_seed": cfg.partition_seed, "loadavg": {}}
                    for side in order:
                        rec["loadavg"][side] = os.getloadavg()[0]
                        rec[side] = sides[side]()
                        print(f"{ds} {algo} {side}: median {np.median(rec[side]['round_ms']):.0f} ms/round, "
                              f"{np.median(rec[side]['round_cpu_ms']):.0f} CPU ms/round", flush=True)
                    runs.append(rec)
    for rec in runs:
        med = {s: (float(np.median(rec[s]["round_ms"])), float(np.median(rec[s]["round_cpu_ms"]))) for s in SIDES}
        of_w, of_c = med["OpenFGL"]
        rows.append({"dataset": rec["dataset"], "algorithm": rec["algorithm"], "repeat": rec["repeat"],
                     "packed ms / CPU ms": "{:.0f} / {:.0f}".format(*med["fgl_jax packed"]),
                     "vmap ms / CPU ms": "{:.0f} / {:.0f}".format(*med["fgl_jax vmap"]),
                     "OpenFGL ms / CPU ms": f"{of_w:.0f} / {of_c:.0f}",
                     "packed speed-up wall / CPU": f"{of_w / med['fgl_jax packed'][0]:.1f}x / "
                                                   f"{of_c / med['fgl_jax packed'][1]:.1f}x",
                     "vmap speed-up wall / CPU": f"{of_w / med['fgl_jax vmap'][0]:.1f}x / {of_c / med['fgl_jax vmap'][1]:.1f}x",
                     "load avg": " / ".join(f"{rec['loadavg'][s]:.1f}" for s in SIDES)})
    info["loadavg_end"] = list(os.getloadavg())
    md = table(rows, disable_numparse=True)
    note = (f"\nSetting: compare_graph_fl.py's (10 clients, label skew Dirichlet 0.5, the first usable partition "
            f"seed, split seed {a.seed}, GIN 2 x 64, dropout 0.5, Adam lr 0.01, weight decay 5e-4, 3 local epochs over "
            "mini-batches of 128 graphs, each client's model on its own graphs every round, one CPU thread per side). "
            f"Medians over {a.rounds} timed rounds per side (OpenFGL's first round dropped; fgl_jax's compiling call "
            "not counted); CPU = process CPU time; speed-up = OpenFGL's median / fgl_jax's. Load avg: the 1-minute "
            "load average when each side started (packed / OpenFGL / vmap); the machine is shared with other jobs. "
            f"Machine: {info.get('cpu_model', '?')}, {info['cpu_count']} cores.")
    rec = records.make(Path(a.out).name, {"rows": rows, "runs": runs, "machine": info}, config=vars(a), seeds=[a.seed],
                       provenance=records.provenance(started=started),
                       title="Graph-level FL speed per round: fgl_jax packed / vmapped vs OpenFGL 1.1.0")
    records.write(Path(a.out).with_suffix(".json"), rec, markdown=md + "\n" + note)
    print(md)


def drop_first(result: dict) -> dict:
    """OpenFGL's result with its first round's times dropped (its warm-up: lazy CUDA-free torch init, caches)."""
    return {**result, "round_ms": result["round_ms"][1:], "round_cpu_ms": result["round_cpu_ms"][1:]}


if __name__ == "__main__":
    main()
