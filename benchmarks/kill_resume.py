"""Kill a run at random moments and resume it: the files must equal the uninterrupted run's.

    python benchmarks/kill_resume.py --trials 20 --out benchmarks/results/kill_resume.json

Each trial starts `fgl-jax run` on the built-in CSBM graph into a fresh directory and kills it
either with SIGKILL a random moment after it has written a random number of rows (start-up,
compilation, a chunk, a metrics write, a checkpoint save) or at a chosen point through the FGL_JAX_FAULT hook ("checkpoint:<n>": inside the n-th
checkpoint save, after orbax wrote it and before it is committed; "chunk:<n>": after the n-th
chunk). It then runs the same command with --resume (repeatedly, if a kill came before any
output) and compares metrics.jsonl, summary.json and config.yaml byte for byte with a reference
run. Results (per trial: how it was killed, rounds done at the kill, identical or not) go to
--out as a record (`fgl_jax.record/1`), with a one-line summary on stdout.
"""
from __future__ import annotations

import argparse
import os
import platform
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # harness.py
from harness import write_record  # noqa: E402

# a checkpoint after every chunk, so the kills land inside asynchronous saves and between them (the
# default policy, one save per 30 s, would save only the last round of a run this short)
ARGS = ["run", "--dataset", "csbm", "--split", "keep", "--clients", "3", "--rounds", "40", "--hidden", "16",
        "--chunk", "4", "--no-progress", "--checkpoint-every", "chunk"]
FILES = ("metrics.jsonl", "summary.json", "config.yaml")


def _cmd(out: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "fgl_jax.cli", *ARGS, "--out", str(out), *extra]


def _files(d: Path) -> dict:
    return {f: (d / f).read_bytes() if (d / f).exists() else None for f in FILES}


def _rows(d: Path) -> int:
    p = d / "metrics.jsonl"
    return len(p.read_text().splitlines()) if p.exists() else 0


def trial(rng: random.Random, root: Path, reference: dict, typical_s: float) -> dict:
    d = root / f"t{rng.randrange(1 << 30)}"
    how = rng.choice(["sigkill", "sigkill", "checkpoint", "chunk"])
    env = dict(os.environ)
    if how == "sigkill":
        # wait until the run has written `target` rows (0: still starting), then kill after a random
        # extra moment: lands in start-up, a chunk, a metrics write or a checkpoint save
        target, extra = rng.randint(0, 36), rng.uniform(0.0, 0.4)
        p = subprocess.Popen(_cmd(d), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        while p.poll() is None and _rows(d) < target:
            time.sleep(0.02)
        time.sleep(extra)
        p.send_signal(signal.SIGKILL)
        p.wait()
        desc = f"SIGKILL {extra:.2f} s after row {target}"
    else:
        n = rng.randint(1, 9)
        env["FGL_JAX_FAULT"] = f"{how}:{n}"
        subprocess.run(_cmd(d), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        desc = f"FGL_JAX_FAULT={how}:{n}"
    rows_at_kill = _rows(d)
    finished_anyway = (d / "summary.json").exists()
    ok = False
    err = ""
    for _ in range(3):  # a kill before any output leaves nothing to resume: --resume then starts it
        r = subprocess.run(_cmd(d, "--resume") if d.exists() and any(d.iterdir()) else _cmd(d),
                           capture_output=True, text=True)
        if r.returncode == 0:
            ok = True
            break
        err = r.stderr.strip().splitlines()[-1] if r.stderr.strip() else f"exit {r.returncode}"
        if "finished run" in err:  # the kill came after the run had completed
            ok = True
            break
    same = ok and _files(d) == reference
    shutil.rmtree(d, ignore_errors=True)
    return {"kill": desc, "rows_at_kill": rows_at_kill, "finished_before_kill": finished_anyway,
            "resumed": ok, "identical": same, "error": err if not ok else ""}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trials", type=int, default=20, help="number of kill-and-resume trials")
    ap.add_argument("--seed", type=int, default=0, help="seed of the kill times and points")
    ap.add_argument("--out", default="benchmarks/results/kill_resume.json", help="where to write the results")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        t0 = time.perf_counter()
        subprocess.run(_cmd(root / "reference"), check=True, stdout=subprocess.DEVNULL)
        typical = time.perf_counter() - t0
        reference = _files(root / "reference")
        trials = [trial(rng, root, reference, typical) for _ in range(args.trials)]
    good = sum(t["identical"] for t in trials)
    result = {"trials": trials, "identical": good, "total": len(trials), "reference_run_s": round(typical, 1),
              "machine": platform.platform(), "loadavg": list(os.getloadavg())}
    write_record(args.out, result, config={"trials": args.trials, "seed": args.seed, "run": ARGS})
    print(f"{good}/{len(trials)} kill-and-resume trials gave byte-identical metrics.jsonl, summary.json, "
          f"config.yaml ({args.out})")
    return 0 if good == len(trials) else 1


if __name__ == "__main__":
    sys.exit(main())
