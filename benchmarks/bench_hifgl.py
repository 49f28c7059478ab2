"""Benchmark: HiFGL epoch (= round) time on CiteSeer with full SecMP. -> benchmarks/results/hifgl.json

HiFGL-GCN, 2 layers, hidden 64, 5 silos, T = 1 (the paper: 4.3 s per epoch on a V100), against the
plain GCN forward/backward on the same graph ("plain" mode: identical program without coding), and
how the cost grows with T (1, 2, 4, 8) and with the number of silos. All variants in one process,
median of repeated executions of a compiled 20-round program.

    python benchmarks/bench_hifgl.py [--data-dir ../shared/data] [--rounds 20] [--repeats 3]
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import jax
import jax.numpy as jnp

sys.path.insert(0, str(Path(__file__).resolve().parent))  # harness.py, also when imported from elsewhere
from harness import RESULTS, ROOT, command, machine, peak_rss_mb, timed, write_record  # noqa: E402

sys.path.insert(0, str(ROOT))
from fgl_jax import engine, load, x64_scope  # noqa: E402

Tracker, make_scan = engine.Tracker, engine.make_scan  # the compiled round loop (internal namespace)
from fgl_jax.systems.hifgl import HiFGLConfig, hifgl, prepare  # noqa: E402


def time_config(graph, silos, rounds, repeats, **cfg_kwargs) -> dict:
    cfg = HiFGLConfig(dataset="citeseer", clients=silos, **cfg_kwargs)
    _, _, data = prepare(cfg, graph)  # the paper's split and random silos (seed 0)
    alg = hifgl(cfg, graph.num_features, graph.num_classes)
    with x64_scope(alg):
        t0 = time.perf_counter()
        state = jax.jit(alg.init)(jax.random.key(0), data)
        compiled = make_scan(alg, rounds).lower(state, Tracker.empty(), data, jax.random.key(1), jnp.int32(0)).compile()
        compile_s = time.perf_counter() - t0
        # no warm-up: the program is compiled ahead of time above
        t = timed(lambda: compiled(state, Tracker.empty(), data, jax.random.key(1), jnp.int32(0)), repeats, warmup=0)
    return {"silos": silos, **cfg_kwargs, "compile_s": compile_s,
            "ms_per_epoch_median": 1000 * t.median / rounds,
            "ms_per_epoch_all": [1000 * s / rounds for s in t.wall_s]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data-dir", default=None)
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    graph = load("citeseer", data_dir=args.data_dir)
    rows = []
    plan = [dict(silos=5, mode="plain", T=1), dict(silos=5, mode="field", T=1), dict(silos=5, mode="real", T=1)]
    plan += [dict(silos=5, mode="field", T=t) for t in (2, 4, 8)]
    plan += [dict(silos=s, mode="field", T=1) for s in (1, 10, 20)]
    for kw in plan:
        silos = kw.pop("silos")
        row = time_config(graph, silos, args.rounds, args.repeats, **kw)
        rows.append(row)
        print(f"silos={silos:3d} mode={kw['mode']:5s} T={kw['T']}: {row['ms_per_epoch_median']:.1f} ms/epoch "
              f"(compile {row['compile_s']:.1f} s)", flush=True)
    plain = next(r for r in rows if r["mode"] == "plain")["ms_per_epoch_median"]
    field = next(r for r in rows if r["mode"] == "field" and r["T"] == 1 and r["silos"] == 5)["ms_per_epoch_median"]
    payload = {"benchmark": "HiFGL-GCN on CiteSeer (2 layers, hidden 64), full SecMP, one epoch = one round",
               "rows": rows, "secmp_over_plain": field / plain,
               "targets": {"ms_per_epoch": 50, "secmp_over_plain": 3.0},
               "paper_anchor": "4.3 s per epoch on a V100 (paper Table 5, 2 layers)",
               "peak_rss_mb": peak_rss_mb(),
               "machine": machine(),  # its loadavg is the load at the end
               "command": command(__file__), "date": time.strftime("%Y-%m-%d %H:%M:%S %Z")}
    path = write_record(RESULTS / "hifgl.json", payload)
    print(f"SecMP / plain = {field / plain:.2f}; wrote {path}")


if __name__ == "__main__":
    main()
