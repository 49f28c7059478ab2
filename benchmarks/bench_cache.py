"""Does the compiled-program cache (`exec/`) pay on top of JAX's persistent cache (`jax/`)? (issue 50, item 8)
-> benchmarks/results/cache.json (rendered by benchmarks/render.py, table `cache`, in docs/workflow.md)

A fresh `fgl-jax run` process per measurement: Cora, FedAvg-GCN, `--rounds R` (default 5), one
process per call, the variants alternated (a, b, c, a, b, c, ...) so a change of the shared
machine's load hits all three alike:

  a_no_cache  : `--no-cache` (every program traced, lowered and compiled)
  b_jax_only  : JAX's persistent cache warm, the compiled-program cache off (each program traced
                and lowered, then found in `jax/`)
  c_both      : both warm (each program loaded whole from `exec/`: no tracing, no lowering)

Wall seconds of the whole process (what the user waits for) and its CPU seconds (user + system of
the child; on a loaded machine the steadier of the two), medians and ratios to `b_jax_only`, plus the
`timings.json` fields that show which cache served the programs. Variant b runs the CLI with
`FGL_JAX_PROGRAM_CACHE=off` (no compiled program of fgl_jax's own is looked up or stored). Both caches are filled by one untimed run each before the timing.

    python benchmarks/bench_cache.py [--repeats 3] [--rounds 5] [--data-dir DIR]
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # harness.py
from harness import RESULTS, ROOT, command, loadavg, write_record  # noqa: E402

VARIANTS = ("a_no_cache", "b_jax_only", "c_both")
# the CLI in a fresh interpreter; variant b first switches the compiled-program cache off
_CLI = "import runpy, sys; sys.argv = ['fgl-jax'] + sys.argv[1:]; runpy.run_module('fgl_jax.cli', run_name='__main__')"


def _one(variant: str, work: Path, args) -> dict:
    """One fresh process of `variant`: wall and CPU seconds, and its timings.json."""
    out = work / f"run_{variant}"
    cli = ["run", "--dataset", "cora", "--algorithm", "fedavg", "--model", "gcn", "--rounds", str(args.rounds),
           "--out", str(out), "--overwrite", "--no-progress"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    if args.data_dir:
        env["FGL_JAX_DATA"] = args.data_dir
    if variant == "a_no_cache":
        cli.append("--no-cache")
    else:
        env["FGL_JAX_CACHE_DIR"] = str(work / f"cache_{variant}")
    if variant == "b_jax_only":   # JAX's persistent cache only: no compiled program of fgl_jax's own
        env["FGL_JAX_PROGRAM_CACHE"] = "off"
    code = _CLI
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, "-c", code, *cli], env=env, capture_output=True, text=True, cwd=work)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0:
        raise SystemExit(f"bench_cache: variant {variant} failed (exit {p.returncode}): {p.stderr.strip()[-1500:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    t = json.loads((out / "timings.json").read_text())
    keep = ("compile_seconds", "programs", "cache_hits", "programs_loaded", "trace_seconds", "lower_seconds",
            "xla_seconds", "run_seconds")
    return {"wall_s": round(wall, 3), "cpu_s": round(cpu, 3), **{k: t.get(k) for k in keep}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=3, help="timed processes per variant")
    ap.add_argument("--rounds", type=int, default=5, help="rounds of each run")
    ap.add_argument("--data-dir", default=os.environ.get("FGL_JAX_DATA"), help="where Cora's files are")
    ap.add_argument("--out", default=str(RESULTS / "cache.json"), help="the record to write")
    args = ap.parse_args()
    load0 = loadavg()
    work = Path(tempfile.mkdtemp(prefix="fgl_jax_bench_cache_"))
    try:
        # fill the caches: one untimed run each (c's compiles, so its programs reach exec/ too)
        warm = {v: _one(v, work, args) for v in VARIANTS[1:]}
        runs: dict[str, list[dict]] = {v: [] for v in VARIANTS}
        for i in range(args.repeats):
            for v in VARIANTS:
                runs[v].append(_one(v, work, args))
                print(f"repeat {i + 1}/{args.repeats} {v}: {runs[v][-1]['wall_s']:.1f} s wall, "
                      f"{runs[v][-1]['cpu_s']:.1f} s CPU", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    med = {v: {k: statistics.median(r[k] for r in runs[v]) for k in ("wall_s", "cpu_s", "compile_seconds")}
           for v in VARIANTS}
    ratio = {v: {k: med[v][k] / med["b_jax_only"][k] for k in ("wall_s", "cpu_s")} for v in VARIANTS}
    served = {v: {k: runs[v][-1][k] for k in ("programs", "cache_hits", "programs_loaded")} for v in VARIANTS}
    payload = {"title": "compiled-program cache on top of JAX's persistent cache (fresh fgl-jax run processes)",
               "workload": f"fgl-jax run --dataset cora --algorithm fedavg --model gcn --rounds {args.rounds}, "
                           "one fresh process per call, variants alternated",
               "command": command(__file__, sys.argv[1:]), "repeats": args.repeats, "rounds": args.rounds,
               "loadavg_before": load0, "loadavg_after": loadavg(), "runs": runs, "warm_up_runs": warm,
               "median": med, "ratio_to_b_jax_only": ratio, "programs_served": served,
               "c_saves_s_wall": med["b_jax_only"]["wall_s"] - med["c_both"]["wall_s"],
               "c_saves_s_cpu": med["b_jax_only"]["cpu_s"] - med["c_both"]["cpu_s"]}
    path = write_record(Path(args.out), payload, title=payload["title"])
    for v in VARIANTS:
        print(f"{v}: median {med[v]['wall_s']:.2f} s wall ({ratio[v]['wall_s']:.2f} x b), "
              f"{med[v]['cpu_s']:.2f} s CPU ({ratio[v]['cpu_s']:.2f} x b); served {served[v]}")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
