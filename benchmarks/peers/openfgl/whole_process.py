"""Whole processes, as a user runs them: `fgl-jax run ... --out DIR` against OpenFGL 1.1.0's default
process, the same FedAvg-GCN job on Cora (10 Louvain clients, 3 local steps, 100 rounds, evaluation
every round), on a cold cache and on a warm one (outside CI; nothing here is imported by tests).

    bash benchmarks/peers/openfgl/setup.sh        # once (OPENFGL_VENV=... to put the venv elsewhere)
    FGL_JAX_DATA=/work/shared/data python benchmarks/peers/openfgl/whole_process.py --pairs 3

Protocol: for each cache state, `--pairs` pairs of processes, alternating which side starts; the
wall time of each process from spawn to exit; medians and ratios. Cold: fgl-jax's cache directory
(FGL_JAX_CACHE_DIR: compiled programs + partitions) is emptied before each of its runs, and OpenFGL
gets an empty data root (it processes Cora with PyG, partitions it with Louvain and splits it again);
warm: both keep what an untimed first run of each left. Per round: the training rounds' time inside
the process / rounds (fgl-jax: timings.json run_seconds; OpenFGL: trainer.train()), both with the
evaluation of every round. Both sides run with --threads CPU threads (default 1: XLA's intra-op
threads and torch.set_num_threads; on a loaded shared 2-core machine torch with 2 threads ran ~10x
slower). fgl-jax's costs come from its timings.json (build, compile, rounds, checkpoints, XLA
programs), its start-up = process wall - the in-process wall; OpenFGL's from default_process.py.
Results: <out>.md and <out>.json, written by this script.
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

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
FGL_ARGS = ["run", "--dataset", "cora", "--algorithm", "fedavg", "--model", "gcn", "--clients", "10",
            "--partition", "louvain", "--local-steps", "3", "--split", "openfgl", "--hidden", "64",
            "--num-layers", "2", "--dropout", "0.5", "--lr", "0.01", "--weight-decay", "5e-4",
            "--optimizer", "adam", "--eval-mode", "local_model_on_local_data", "--eval-average", "client_nodes"]
TARGETS = {"warm": 0.25, "cold": 0.35, "per_round": 12.0}


def venv_python(arg: str | None) -> Path:
    candidates = [arg, os.environ.get("OPENFGL_VENV"), HERE.parent / ".venv-openfgl", "/work/peers/openfgl-venv"]
    for c in candidates:
        if c and (Path(c) / "bin" / "python").exists():
            return Path(c) / "bin" / "python"
    sys.exit("OpenFGL venv not found: run benchmarks/peers/openfgl/setup.sh (or pass --venv)")


def thread_env(threads: int) -> dict:
    env = dict(os.environ)
    if threads:
        env["XLA_FLAGS"] = (env.get("XLA_FLAGS", "") + " --xla_cpu_multi_thread_eigen=false "
                            f"intra_op_parallelism_threads={threads}").strip()
        env["OMP_NUM_THREADS"] = env["MKL_NUM_THREADS"] = str(threads)
    return env


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run_fgl(work: Path, cache_dir: Path, rounds: int, env: dict, tag: str) -> dict:
    out = work / f"fgl_{tag}"
    shutil.rmtree(out, ignore_errors=True)
    cmd = [sys.executable, "-m", "fgl_jax.cli", *FGL_ARGS, "--rounds", str(rounds), "--out", str(out)]
    t0, c0 = time.perf_counter(), _cpu()
    p = subprocess.run(cmd, cwd=REPO, env={**env, "FGL_JAX_CACHE_DIR": str(cache_dir)},
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wall, cpu = time.perf_counter() - t0, _cpu() - c0
    if p.returncode != 0:
        raise RuntimeError(f"fgl-jax failed:\n{p.stderr[-2000:]}")
    t = json.loads((out / "timings.json").read_text())
    s = json.loads((out / "summary.json").read_text())
    return {"wall": wall, "cpu": cpu, **t, "startup_seconds": wall - t["wall_seconds"],
            "ms_per_round": 1000 * t["run_seconds"] / rounds, "best_test": s["best"]["best_test"]}


def run_openfgl(python: Path, root: Path, planetoid: Path, env: dict, work: Path, threads: int) -> dict:
    result = work / "openfgl_result.json"
    result.unlink(missing_ok=True)
    t0, c0 = time.perf_counter(), _cpu()
    p = subprocess.run([str(python), str(HERE / "default_process.py"), str(root), str(planetoid), str(result)],
                       env={**env, "TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD": "1"}, stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, text=True)
    wall, cpu = time.perf_counter() - t0, _cpu() - c0
    if p.returncode != 0:
        raise RuntimeError(f"OpenFGL failed:\n{p.stderr[-2000:]}")
    r = json.loads(result.read_text())
    return {"wall": wall, "cpu": cpu, **r}


def med(rows: list[dict], key: str) -> float:
    return float(statistics.median(r[key] for r in rows))


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--pairs", type=int, default=3)
    p.add_argument("--rounds", type=int, default=100, help="100 = OpenFGL's default (its process always runs it)")
    p.add_argument("--threads", type=int, default=1, help="CPU threads per side (0 = each library's default)")
    p.add_argument("--venv", default=None, help="OpenFGL's venv (default: $OPENFGL_VENV, benchmarks/peers/"
                                                ".venv-openfgl, /work/peers/openfgl-venv)")
    p.add_argument("--states", nargs="+", default=["cold", "warm"], choices=["cold", "warm"])
    p.add_argument("--out", default=str(HERE / "whole_process"), help="stem of the record <out>.json and its "
                   "table <out>.md (overwritten: the current result; git keeps the earlier ones)")
    p.add_argument("--rewrite", action="store_true", help="only rewrite <out>.md from the record <out>.json")
    a = p.parse_args(argv)
    from fgl_jax import records
    if a.rewrite:
        rec = records.read(Path(a.out).with_suffix(".json"))
        d = rec["metrics"]
        a.pairs, a.rounds, a.threads = d.get("pairs", a.pairs), d.get("rounds", a.rounds), d["machine"]["threads"]
        write(a, d["runs"], d["first"], d["second"], d["machine"], rec["provenance"])
        return
    python = venv_python(a.venv)
    planetoid = Path(os.environ.get("FGL_JAX_DATA", "/work/shared/data")) / "planetoid"
    if not (planetoid / "ind.cora.x").is_file():
        sys.exit(f"Cora's Planetoid files not found in {planetoid} (set FGL_JAX_DATA)")
    env = thread_env(a.threads)
    t_started, started = time.time(), time.strftime("%Y-%m-%d %H:%M:%S %Z")
    load_start = list(os.getloadavg())
    runs: dict = {}
    with tempfile.TemporaryDirectory(prefix="whole_process_") as tmp:
        work = Path(tmp)
        cache_dir, root = work / "fgl_cache", work / "openfgl_root"
        for state in a.states:
            fgl_rows, ofgl_rows = [], []
            if state == "warm":  # untimed first runs fill both sides' caches
                run_fgl(work, cache_dir, a.rounds, env, "warmup")
                run_openfgl(python, root, planetoid, env, work, a.threads)
            for i in range(a.pairs):
                def fgl():
                    if state == "cold":
                        shutil.rmtree(cache_dir, ignore_errors=True)
                    fgl_rows.append(run_fgl(work, cache_dir, a.rounds, env, f"{state}{i}"))

                def ofgl():
                    if state == "cold":
                        shutil.rmtree(root, ignore_errors=True)
                    ofgl_rows.append(run_openfgl(python, root, planetoid, env, work, a.threads))
                order = [fgl, ofgl] if i % 2 == 0 else [ofgl, fgl]
                for side in order:
                    side()
                print(f"{state} pair {i}: fgl-jax {fgl_rows[-1]['wall']:.2f} s, OpenFGL {ofgl_rows[-1]['wall']:.2f} s "
                      f"(load {os.getloadavg()[0]:.1f})", flush=True)
            runs[state] = {"fgl_jax": fgl_rows, "openfgl": ofgl_rows}
        # a second command after a cold one, same cache: is it faster?
        shutil.rmtree(cache_dir, ignore_errors=True)
        first = run_fgl(work, cache_dir, a.rounds, env, "first")
        second = run_fgl(work, cache_dir, a.rounds, env, "second")
    write(a, runs, first, second, {"started": started, "loadavg_start": load_start,
                                   "loadavg_end": list(os.getloadavg()), "cpu_count": os.cpu_count(),
                                   "cpu_model": cpu_model(), "python": sys.version.split()[0],
                                   "threads": a.threads, "openfgl_python": str(python)},
          records.provenance(started=t_started))


def cpu_model() -> str:
    try:
        return next(l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name"))
    except (OSError, StopIteration):
        return "?"


def write(a, runs: dict, first: dict, second: dict, machine: dict, provenance: dict | None = None) -> None:
    """The record <out>.json and its table <out>.md; `provenance`: the record's (default: this process's)."""
    from fgl_jax import records
    lines = ["# Whole process: fgl-jax vs OpenFGL 1.1.0 (FedAvg-GCN, Cora)", "",
             "Written by `benchmarks/peers/openfgl/whole_process.py` "
             f"(`--pairs {a.pairs} --rounds {a.rounds} --threads {a.threads}`). Job: 10 Louvain clients, 3 local "
             "steps, 100 rounds, evaluation every round, OpenFGL's defaults on both sides (GCN 2x64, dropout 0.5, "
             "Adam lr 0.01, weight decay 5e-4, OpenFGL's per-client split). Times are medians over the pairs; "
             "each pair alternates which side runs first.", "",
             f"Machine: {machine['cpu_model']}, {machine['cpu_count']} cores, load average "
             f"{machine['loadavg_start'][0]:.1f} at start, {machine['loadavg_end'][0]:.1f} at end (shared machine; "
             f"started {machine['started']}).", "",
             "| cache | fgl-jax process (s) | OpenFGL process (s) | ratio | target | fgl-jax ms/round | "
             "OpenFGL ms/round | per-round speed-up |", "|---|---|---|---|---|---|---|---|"]
    summary = {}
    for state, r in runs.items():
        f, o = r["fgl_jax"], r["openfgl"]
        fw, ow, fr, orr = med(f, "wall"), med(o, "wall"), med(f, "ms_per_round"), med(o, "ms_per_round")
        summary[state] = {"fgl_jax_wall": fw, "openfgl_wall": ow, "ratio": fw / ow, "fgl_jax_ms_per_round": fr,
                          "openfgl_ms_per_round": orr, "per_round_speedup": orr / fr}
        lines.append(f"| {state} | {fw:.2f} | {ow:.2f} | {fw / ow:.2f} | <= {TARGETS[state]} "
                     f"{'met' if fw / ow <= TARGETS[state] else 'NOT met'} | {fr:.1f} | {orr:.1f} | {orr / fr:.1f}x "
                     f"({'met' if orr / fr >= TARGETS['per_round'] else 'NOT met'}: >= {TARGETS['per_round']:.0f}x) |")
    lines += ["", "CPU time (user + system of each process; less sensitive to the machine's load than wall time), "
              "medians: " + "; ".join(
                  f"{state}: fgl-jax {med(r['fgl_jax'], 'cpu'):.2f} s, OpenFGL {med(r['openfgl'], 'cpu'):.2f} s, ratio "
                  f"{med(r['fgl_jax'], 'cpu') / med(r['openfgl'], 'cpu'):.2f}" for state, r in runs.items()) + "."]
    lines += ["", f"Second command after a cold one, same cache: first {first['wall']:.2f} s, second "
              f"{second['wall']:.2f} s ({'faster' if second['wall'] < first['wall'] else 'NOT faster'}; compilations "
              f"{first['compilations']} then {second['compilations']}, cache hits {first['cache_hits']} then "
              f"{second['cache_hits']}).", "", "## Where the time goes (medians, seconds)", "",
              "| side | cache | process | start-up (interpreter, imports, parser) | preparation | compile (trace, "
              "lower, compile or cache load) | rounds | checkpoints (waited) | other | XLA programs / compiled |",
              "|---|---|---|---|---|---|---|---|---|---|"]
    for state, r in runs.items():
        f = r["fgl_jax"]
        parts = {k: med(f, k) for k in ("wall", "startup_seconds", "build_seconds", "compile_seconds", "run_seconds",
                                        "checkpoint_seconds")}
        other = parts["wall"] - sum(v for k, v in parts.items() if k != "wall")
        lines.append(f"| fgl-jax | {state} | {parts['wall']:.2f} | {parts['startup_seconds']:.2f} | "
                     f"{parts['build_seconds']:.2f} | {parts['compile_seconds']:.2f} | {parts['run_seconds']:.2f} | "
                     f"{parts['checkpoint_seconds']:.2f} ({100 * parts['checkpoint_seconds'] / parts['wall']:.1f} %) | "
                     f"{other:.2f} | {med(f, 'programs'):.0f} / {med(f, 'compilations'):.0f} |")
    for state, r in runs.items():
        o = r["openfgl"]
        parts = {k: med(o, k) for k in ("wall", "import_seconds", "setup_seconds", "train_seconds")}
        other = parts["wall"] - parts["import_seconds"] - parts["setup_seconds"] - parts["train_seconds"]
        lines.append(f"| OpenFGL | {state} | {parts['wall']:.2f} | {parts['import_seconds']:.2f} | "
                     f"{parts['setup_seconds']:.2f} | - | {parts['train_seconds']:.2f} | - | {other:.2f} | - |")
    acc = {s: (med(r["fgl_jax"], "best_test"), med(r["openfgl"], "best_test")) for s, r in runs.items()}
    lines += ["", "Test accuracy at the best validation round (median), a sanity check, not a comparison of "
              "methods (different RNGs, OpenFGL's own Louvain partition and split): " +
              "; ".join(f"{s}: fgl-jax {f:.4f}, OpenFGL {o:.4f}" for s, (f, o) in acc.items()) + ".", "",
              "fgl-jax's `other` = host work between chunks (metrics.jsonl, progress bar), result files and exit; "
              "OpenFGL's = interpreter start-up before its first line and exit."]
    out = Path(a.out)
    rec = records.make(out.name, {"summary": summary, "runs": runs, "first": first, "second": second,
                                  "machine": machine, "targets": TARGETS, "pairs": a.pairs, "rounds": a.rounds},
                       config={"pairs": a.pairs, "rounds": a.rounds, "threads": a.threads, "states": a.states,
                               "fgl_jax_command": FGL_ARGS},
                       title="Whole processes, fgl-jax vs OpenFGL 1.1.0 (FedAvg-GCN, Cora), cold and warm caches",
                       provenance=provenance or records.provenance())
    records.write(out.with_suffix(".json"), rec, markdown="\n".join(lines))
    print("\n".join(lines))
    print(f"wrote {out.with_suffix('.md')} and {out.with_suffix('.json')}")


if __name__ == "__main__":
    main()
