"""Every benchmark, one command: `python -m benchmarks all [--device cpu|gpu] [--only a,b] [--out DIR]`.

Each benchmark script runs as its own process, one after the other, with the workload of the chosen
device: on `cpu` the small settings (the whole suite fits in about 15 minutes on the 2-core CI-class
machine), on `gpu` (any accelerator JAX sees) the scripts' full settings plus larger workloads: 10,000
clients and an ogbn-arxiv-sized synthetic graph (169,343 nodes). The scripts write their own records
into a scratch folder (a temporary one, or `--raw DIR`; never over the committed
`benchmarks/results/*.json`); this driver writes one record, `DIR/all_<device>.json` (+ a markdown
table), with the machine, the load before and after each benchmark, the library versions, each
benchmark's command, wall time, status and headline numbers (absolute times, `headlines.py`; the
comparisons inside each script stay in its own record).

    python -m benchmarks all                      # -> benchmarks/results/all_cpu.{json,md}
    python -m benchmarks all --device gpu --out /tmp/bench
    python -m benchmarks all --only fedavg,lcc    # a subset
    python -m benchmarks list                     # what would run, with the commands

A benchmark that fails or times out is recorded with the last lines of its error output; the others
still run. The datasets come from --data-dir, $FGL_JAX_DATA or ../shared/data.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))  # harness.py
from harness import ROOT, loadavg, write_record  # noqa: E402

from fgl_jax import records  # noqa: E402
import headlines as h  # noqa: E402


@dataclass
class Bench:
    name: str
    script: str
    raw: str                                  # the result file the script writes (in the raw directory)
    cpu: list                                 # arguments for the CPU suite (small settings)
    gpu: list                                 # arguments on an accelerator (full + larger workloads)
    headline: Callable[[dict], dict]
    needs_data: bool = True
    raw_cpu: Optional[str] = None             # the result file of the CPU settings, when it differs
    # further runs on an accelerator: (name, arguments, result file)
    extra_gpu: list = field(default_factory=list)


def suite(data_dir: str, raw: Path) -> list[Bench]:
    """The benchmarks, in the order they run; `raw`: where their result files go."""
    dd = ["--data-dir", data_dir]
    return [
        Bench("fedavg", "bench_fedavg.py", "fedavg.json", dd + ["--quick", "--repeats", "3"], dd, h.fedavg,
              raw_cpu="fedavg_quick.json"),
        Bench("hifgl", "bench_hifgl.py", "hifgl.json", dd + ["--rounds", "5", "--repeats", "2"], dd, h.hifgl),
        # the per-round targets of issue 31 (before/after variants alternated in one process)
        Bench("round_speed", "bench_round_speed.py", "round_speed_all.json",
              dd + ["--repeats", "3", "--only", "fedavg,hifgl", "--out", "round_speed_all"],
              dd + ["--out", "round_speed_all"], h.round_speed),
        # the round of whole_process.py's command (chunks of 5, evaluation every round), variants alternated
        Bench("command_round", "bench_command_round.py", "command_round.json", dd + ["--repeats", "3"],
              dd + ["--repeats", "7"], h.command_round),
        # AdaFGL's two phases as one program vs one program per phase (issue 29's slowest cell)
        Bench("adafgl_phases", "bench_adafgl_phases.py", "adafgl_phases.json",
              dd + ["--reps", "2", "--out", str(raw / "adafgl_phases")],
              dd + ["--reps", "3", "--out", str(raw / "adafgl_phases")], h.adafgl_phases),
        Bench("lumos", "bench_lumos.py", "lumos.json", dd + ["--quick", "--repeats", "2"], dd, h.lumos),
        Bench("fedhgn", "bench_fedhgn.py", "fedhgn.json", dd + ["--quick", "--repeats", "3"], dd, h.fedhgn),
        Bench("fedhgl", "bench_fedhgl.py", "fedhgl.json",
              dd + ["--datasets", "coraca:3", "--repeats", "2", "--round-repeats", "10"], dd, h.fedhgl),
        Bench("fedgc", "bench_fedgc.py", "fedgc.json", dd + ["--quick"], dd, h.fedgc),
        Bench("lcc", "bench_lcc.py", "lcc.json", ["--repeats", "3", "--warmup", "1", "--out", str(raw / "lcc.json")],
              ["--out", str(raw / "lcc.json")], h.lcc, needs_data=False),
        Bench("participation", "bench_participation.py", "participation.json", ["--repeats", "3", "--rounds", "3"],
              ["--clients", "10000", "--fraction", "0.01"], h.participation, needs_data=False),
        # on an accelerator the full settings: 200k nodes up to 20,000 clients and a 1M-node graph; plus an
        # ogbn-arxiv-sized synthetic graph (169,343 nodes) with 100 and 10,000 clients
        Bench("scaling", "bench_scaling.py", "scaling.json", ["--quick", "--repeats", "2"], [], h.scaling,
              needs_data=False, raw_cpu="scaling_quick.json",
              extra_gpu=[("scaling_arxiv", ["--configs", "169343:17000:100,169343:17000:10000"],
                          "scaling_configs.json")]),
        Bench("sweep", "bench_sweep.py", "sweep.json",
              ["--quick", "--sweep-out", str(raw / "sweep_dir"), "--out", str(raw / "sweep.json")],
              dd + ["--sweep-out", str(raw / "sweep_dir"), "--out", str(raw / "sweep.json")], h.sweep),
        # the CSBM generator's speed target (10,000 nodes in under 1 s), once a test's assertion
        Bench("csbm", "bench_csbm.py", "csbm.json", ["--repeats", "3", "--out", str(raw / "csbm.json")],
              ["--out", str(raw / "csbm.json")], h.csbm, needs_data=False),
        # kills, damaged run files, a full disk and bad inputs against `fgl-jax run` (issue 45)
        Bench("faults", "faults.py", "faults.json", ["--cases", "12", "--out", str(raw / "faults.json")],
              ["--cases", "100", "--out", str(raw / "faults.json")], h.faults, needs_data=False),
    ]


def _versions() -> dict:
    import importlib.metadata as md
    out = {}
    for dist in ("fgl_jax", "jax", "jaxlib", "flax", "optax", "jraph", "numpy", "orbax-checkpoint"):
        try:
            out[dist] = md.version(dist)
        except md.PackageNotFoundError:
            out[dist] = None
    return out


def _machine(device: str, env: dict) -> dict:
    """The machine as the benchmarks' processes see it (asked in a child, so this driver never loads jax)."""
    code = ("import json, jax, platform, os; d = jax.devices(); print(json.dumps({'platform': platform.platform(), "
            "'python': platform.python_version(), 'cpu_count': os.cpu_count(), 'backend': jax.default_backend(), "
            "'devices': [str(x) for x in d], 'device_kind': d[0].device_kind}))")
    try:
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
        info = json.loads(out.stdout.strip().splitlines()[-1])
    except Exception as e:  # noqa: BLE001 (recorded, not raised: the benchmarks say more)
        info = {"error": str(e)}
    try:
        info["cpu"] = next(line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return info


def run_one(name: str, script: str, args: list, env: dict, timeout: float) -> dict:
    cmd = [sys.executable, str(HERE / script), *args]
    before = loadavg()
    t0 = time.perf_counter()
    row: dict = {"name": name, "command": "python benchmarks/" + script + " " + " ".join(args), "load_before": before}
    try:
        proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)
        row["status"] = "ok" if proc.returncode == 0 else f"failed (exit {proc.returncode})"
        if proc.returncode != 0:
            row["error"] = "\n".join(proc.stderr.strip().splitlines()[-15:])
    except subprocess.TimeoutExpired:
        row["status"] = f"timed out after {timeout:.0f} s"
    row["wall_s"] = time.perf_counter() - t0
    row["load_after"] = loadavg()
    return row


def markdown(report: dict) -> str:
    m = report["machine"]
    lines = [f"# All benchmarks ({report['device']})", "",
             f"`{report['command']}`, {report['started']} to {report['finished']} UTC, "
             f"{report['total_s']:.0f} s in all.", "",
             f"Machine: {m.get('cpu', '?')}, {m.get('cpu_count')} CPUs, backend {m.get('backend')} "
             f"({', '.join(m.get('devices', []))}), {m.get('platform')}, Python {m.get('python')}.", "",
             "Versions: " + ", ".join(f"{k} {v}" for k, v in report["versions"].items()) + ".", "",
             "The machine may be shared: each row gives the 1-minute load average before and after it. "
             "Headline numbers are absolute times from each script's own record (written to a scratch "
             "folder); the comparisons inside a benchmark are in that record.", "",
             "| benchmark | status | wall s | load before / after | headline |", "|---|---|---|---|---|"]
    for r in report["benchmarks"]:
        load = lambda x: f"{x[0]:.1f}" if x else "?"
        head = "; ".join(f"{k}: {h.fmt(v)}" for k, v in (r.get("headline") or {}).items() if v is not None)
        lines.append(f"| {r['name']} | {r['status']} | {r['wall_s']:.0f} | {load(r['load_before'])} / "
                     f"{load(r['load_after'])} | {head} |")
    lines += ["", "Commands:", ""] + [f"- {r['name']}: `{r['command']}`" for r in report["benchmarks"]]
    return "\n".join(lines) + "\n"


def main(argv: Optional[list] = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("what", choices=["all", "list"], help="all: run the suite; list: print what would run")
    ap.add_argument("--device", default="cpu", choices=["cpu", "gpu"],
                    help="cpu: small settings on the CPU (JAX_PLATFORMS=cpu); gpu: full settings and larger "
                         "workloads on the accelerator JAX finds")
    ap.add_argument("--only", default=None, help="comma-separated benchmark names (default: all)")
    ap.add_argument("--out", default=None, help="directory for the suite's record all_<device>.json (+ .md) "
                                                "(default: benchmarks/results)")
    ap.add_argument("--raw", default=None, help="directory for the scripts' own records (default: a temporary "
                                                "one, removed at the end: the committed records are each "
                                                "benchmark's own run, not the suite's small settings)")
    ap.add_argument("--data-dir", default=os.environ.get("FGL_JAX_DATA", str(ROOT.parent / "shared" / "data")),
                    help="the datasets (default: $FGL_JAX_DATA or ../shared/data)")
    ap.add_argument("--timeout", type=float, default=900, help="seconds per benchmark before it is stopped")
    args = ap.parse_args(argv)
    out = Path(args.out) if args.out else ROOT / "benchmarks" / "results"
    # the scripts' records: the scripts that name their own path write here through harness.RESULTS
    scratch = None if args.raw else tempfile.TemporaryDirectory(prefix=f"fgl_jax_bench_{args.device}_")
    raw_dir = Path(args.raw) if args.raw else Path(scratch.name)
    runs = []  # (name, bench, arguments, result file)
    for b in suite(args.data_dir, raw_dir):
        if args.device == "cpu":
            runs.append((b.name, b, b.cpu, b.raw_cpu or b.raw))
        else:
            runs.append((b.name, b, b.gpu, b.raw))
            runs += [(name, b, extra, raw) for name, extra, raw in b.extra_gpu]
    if args.only:
        wanted = set(args.only.split(","))
        unknown = wanted - {r[0] for r in runs}
        if unknown:
            print(f"unknown benchmark(s) {sorted(unknown)}; known: {[r[0] for r in runs]}", file=sys.stderr)
            return 2
        runs = [r for r in runs if r[0] in wanted]
    if args.what == "list":
        for name, b, a, _ in runs:
            print(f"{name}: python benchmarks/{b.script} {' '.join(a)}")
        return 0
    if any(r[1].needs_data for r in runs) and not Path(args.data_dir).is_dir():
        print(f"--data-dir {args.data_dir}: no such directory (the datasets; or set FGL_JAX_DATA)", file=sys.stderr)
        return 2
    env = {**os.environ, "FGL_JAX_BENCH_RESULTS": str(raw_dir), "FGL_JAX_DATA": args.data_dir,
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)}
    if args.device == "cpu":
        env["JAX_PLATFORMS"] = "cpu"
    started = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime())
    t0 = time.perf_counter()
    report = {"device": args.device, "command": "python -m benchmarks " + " ".join(argv or sys.argv[1:]),
              "started": started, "machine": _machine(args.device, env), "versions": _versions(), "benchmarks": []}
    for name, b, a, raw_name in runs:
        print(f"[{name}] python benchmarks/{b.script} {' '.join(a)}", flush=True)
        raw = raw_dir / raw_name
        raw.unlink(missing_ok=True)  # a stale file from an earlier suite must not pass for this run's
        row = run_one(name, b.script, a, env, args.timeout)
        if row["status"] == "ok" and raw.is_file():
            try:
                row["headline"] = b.headline(records.read(raw)["metrics"])
            except Exception as e:  # noqa: BLE001 (a script changed its keys: say so, keep the raw file)
                row["headline"] = {"headline error": repr(e)}
            if args.raw:
                row["raw"] = str(raw)
        elif row["status"] == "ok":
            row["status"] = f"ok, but no {raw_name}"
        print(f"[{name}] {row['status']} in {row['wall_s']:.0f} s {row.get('headline', '')}", flush=True)
        report["benchmarks"].append(row)
        report["finished"] = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime())
        report["total_s"] = time.perf_counter() - t0
        # after each benchmark: a stopped suite keeps its rows
        write_record(out / f"all_{args.device}.json", report, config={"device": args.device, "only": args.only,
                                                                      "timeout_s": args.timeout},
                     title=f"every benchmark, small settings ({args.device})")
        (out / f"all_{args.device}.md").write_text(markdown(report))
    if scratch is not None:
        scratch.cleanup()
    print(f"wrote {out / f'all_{args.device}.json'} and .md")
    return 0 if all(r["status"].startswith("ok") for r in report["benchmarks"]) else 1


if __name__ == "__main__":
    sys.exit(main())
