"""Devices from the command line (issue 31, item 5): `--devices`, the default of every local
device, and a two-process `jax.distributed` run (per-process data, checkpoints from both
processes) reproduce the one-device run (the numbers of `fgl-jax run` on one device, up to float
summation order); bad device flags are one-line errors."""
import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from fgl_jax import cli

ROOT = Path(__file__).resolve().parents[1]
ARGS = ["run", "--dataset", "csbm", "--split", "keep", "--clients", "6", "--rounds", "4", "--hidden", "8",
        "--no-progress", "--no-cache"]

# 3 members over 4 devices: the member axis is padded to 4 and split; one device runs them in turn
SWEEP = ["sweep", "--dataset", "csbm", "--split", "keep", "--clients", "6", "--rounds", "2", "--hidden", "8",
         "--seeds", "0,1,2", "--no-cache"]


def _cli(args, devices=1):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "XLA_FLAGS": f"--xla_force_host_platform_device_count={devices}"}
    return subprocess.Popen([sys.executable, "-m", "fgl_jax.cli", *args], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _rows(path: Path) -> list:
    return [json.loads(line) for line in (path / "metrics.jsonl").read_text().splitlines()]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The sharded runs, started at once (they overlap with the one-device reference)."""
    tmp = tmp_path_factory.mktemp("devices")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    multi = ["--coordinator", f"127.0.0.1:{port}", "--num-processes", "2"]
    half = [a if a != "4" else "2" for a in ARGS]  # --rounds 2, then resumed to 4 below
    procs = {"four": _cli(half + ["--out", str(tmp / "four"), "--checkpoint-every", "1"], devices=4),
             # one --out for both: each saves its checkpoint shards there, process 0 the run's files
             "p0": _cli(ARGS + ["--out", str(tmp / "p0")] + multi + ["--process-id", "0"]),
             "p1": _cli(ARGS + ["--out", str(tmp / "p0")] + multi + ["--process-id", "1"]),
             "sweep4": _cli(SWEEP + ["--out", str(tmp / "sweep4")], devices=4)}
    assert cli.main(ARGS + ["--out", str(tmp / "one")]) == 0
    out, err = procs["four"].communicate(timeout=600)
    assert procs["four"].returncode == 0, f"four: {err[-3000:]}"
    # the resumed half overlaps with the one-device sweep below
    procs["resume"] = _cli(ARGS + ["--out", str(tmp / "four"), "--resume", "--resume-with-changes", "rounds"],
                           devices=4)
    assert cli.main(SWEEP + ["--out", str(tmp / "sweep1")]) == 0
    for name, p in procs.items():
        out, err = p.communicate(timeout=600)
        assert p.returncode == 0, f"{name}: {err[-3000:]}"
    yield tmp
    for p in procs.values():
        if p.poll() is None:
            p.kill()


def _same(a: list, b: list) -> None:
    assert len(a) == len(b) == 4
    for ra, rb in zip(a, b):
        for k in ("train_loss", "val_acc", "test_acc", "val_loss"):
            np.testing.assert_allclose(ra[k], rb[k], rtol=2e-5, atol=2e-6, err_msg=k)


@pytest.mark.slow
def test_all_four_local_devices_by_default_resumed_halfway_equal_one_device(runs):
    timings = json.loads((runs / "four" / "timings.json").read_text())
    assert timings["devices"] == 4 and timings["processes"] == 1
    _same(_rows(runs / "four"), _rows(runs / "one"))


@pytest.mark.slow
def test_two_processes_from_the_cli_equal_one_device_and_process_0_writes_the_files(runs):
    timings = json.loads((runs / "p0" / "timings.json").read_text())
    assert timings["processes"] == 2 and timings["devices"] == 2 and timings["writer"] is True
    _same(_rows(runs / "p0"), _rows(runs / "one"))
    # the last round's checkpoint holds both processes' shards (tests/test_multihost.py resumes them)
    last = runs / "p0" / "checkpoints" / "round_000004" / "default"
    assert sorted(p.name for p in last.glob("ocdbt.process_*")) == ["ocdbt.process_0", "ocdbt.process_1"]


def test_a_sweep_split_over_four_devices_equals_the_one_device_sweep(runs):
    one = json.loads((runs / "sweep1" / "sweep.json").read_text())
    four = json.loads((runs / "sweep4" / "sweep.json").read_text())
    rows1, rows4 = one["rows"], four["rows"]
    assert [r["seed"] for r in rows4] == [r["seed"] for r in rows1] == [0, 1, 2]
    for a, b in zip(rows1, rows4):
        np.testing.assert_allclose([b["best_val"], b["best_test"]], [a["best_val"], a["best_test"]], rtol=2e-5)
        np.testing.assert_allclose(b["final_train_loss"], a["final_train_loss"], rtol=2e-5)


@pytest.mark.parametrize("extra, message", [
    (["--devices", "3"], "--devices 3: this process has 1 cpu device"),
    (["--coordinator", "127.0.0.1:1"], "missing --num-processes, --process-id"),
    (["--coordinator", "nohost", "--num-processes", "2", "--process-id", "0"], "HOST:PORT"),
    (["--coordinator", "127.0.0.1:1", "--num-processes", "2", "--process-id", "2"], "--process-id must be in [0, 2)"),
])
def test_bad_device_flags_are_one_line_errors(extra, message, capsys):
    assert cli.main(ARGS + extra) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0], err
