"""FedGC is bit-reproducible on one machine: the same command in two fresh processes with different
PYTHONHASHSEED (so any set/dict-order or hash-seeded host randomness would show) writes byte-identical
metrics.jsonl and the same preparation numbers. Covers self-training, the IB, condensation with A'
updates, and the evaluation (defence ib, the CLI default). What does change the bits is XLA:CPU's
thread count and target instruction set (experiments/results/fedgc/notes/results.md measures both), so
both processes here run with the same XLA flags."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ARGS = ["--dataset", "csbm", "--clients", "3", "--rate", "0.2", "--rounds", "6", "--eval-rounds", "3", "6",
        "--st-rounds", "10", "--st-hidden", "16", "--relay-hidden", "16", "--pge-hidden", "8", "--adj-period", "3",
        "--adj-steps", "1", "--ib-hidden", "8", "--ib-epochs", "3", "--ib-decoder-hidden", "16",
        "--eval-hidden", "16", "--eval-iters", "20", "--eval-decay-at", "10", "--eval-check-every", "10",
        "--finetune-steps", "4", "--ft-check-every", "2", "--no-mia", "--no-cache", "--no-progress", "-q"]


def _run(out: Path, hash_seed: str) -> tuple:
    env = {**os.environ, "PYTHONHASHSEED": hash_seed, "PYTHONPATH": str(ROOT)}
    subprocess.run([sys.executable, "-m", "fgl_jax.cli", "fedgc", *ARGS, "--out", str(out)], env=env, check=True,
                   cwd=ROOT, capture_output=True)
    summary = json.loads((out / "summary.json").read_text())
    return (out / "metrics.jsonl").read_bytes(), summary["describe"], summary["best"]


@pytest.mark.slow  # two fresh processes, each compiling FedGC's programs
def test_two_fresh_processes_write_identical_metrics(tmp_path):
    a = _run(tmp_path / "a", "1")
    b = _run(tmp_path / "b", "2")
    assert a[0] == b[0]          # every round's loss and every evaluation, bit for bit
    drop = ("prepare_s", "self_train_s", "ib_s", "blocks_s", "build_s")   # wall times
    assert {k: v for k, v in a[1].items() if k not in drop} == {k: v for k, v in b[1].items() if k not in drop}
    assert a[2] == b[2]
