"""The optional TensorBoard writer: the event files hold metrics.jsonl's scalars at step = round
(read back with a TFRecord reader written here, not with the writer's code), a sweep writes one
directory per member, and a missing tensorboardX is one clear line before anything runs."""
from __future__ import annotations

import json
import struct
import sys

import numpy as np
import pytest

from fgl_jax.cli import main

TINY = ["--dataset", "csbm", "--split", "keep", "--clients", "3", "--rounds", "4", "--hidden", "8", "--no-progress"]


def read_scalars(logdir) -> dict:
    """tag -> {step: value} from every event file under logdir (TFRecord framing: u64 length,
    u32 crc, payload, u32 crc; payload = an Event protobuf)."""
    event_pb2 = pytest.importorskip("tensorboardX.proto.event_pb2")
    out: dict = {}
    files = sorted(p for p in logdir.rglob("events.out.tfevents.*"))
    assert files, f"no event file under {logdir}"
    for path in files:
        data = path.read_bytes()
        pos = 0
        while pos < len(data):
            (length,) = struct.unpack("<Q", data[pos:pos + 8])
            payload = data[pos + 12:pos + 12 + length]
            pos += 12 + length + 4
            ev = event_pb2.Event.FromString(payload)
            for v in ev.summary.value:
                out.setdefault(v.tag, {})[ev.step] = v.simple_value
    return out


@pytest.mark.slow
def test_run_writes_the_metrics_rows_as_scalars(tmp_path, capsys):
    pytest.importorskip("tensorboardX")
    out, tb = tmp_path / "run", tmp_path / "tb"
    assert main(["run", *TINY, "--out", str(out), "--tensorboard", str(tb)]) == 0
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    got = read_scalars(tb)
    assert got["accuracy/val_acc"] == pytest.approx({r["round"]: r["val_acc"] for r in rows})
    assert got["loss/train_loss"] == pytest.approx({r["round"]: r["train_loss"] for r in rows})
    assert got["communication/comm_up_bytes"] == pytest.approx({r["round"]: r["comm_up_bytes"] for r in rows})
    assert sorted(got["accuracy/test_acc"]) == [1, 2, 3, 4]


def test_sweep_writes_one_directory_per_member(tmp_path):
    pytest.importorskip("tensorboardX")
    from fgl_jax.tensorboard import write_sweep
    rows = [{"seed": 0, "lr": 0.01}, {"seed": 1, "lr": 0.01}]
    history = {"val_acc": np.array([[0.1, 0.2, 0.3], [0.4, np.nan, np.nan]])}  # member 1 diverged after round 1
    write_sweep(tmp_path, rows, history, ["lr"])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["seed=0,lr=0.01", "seed=1,lr=0.01"]
    assert read_scalars(tmp_path / "seed=0,lr=0.01")["accuracy/val_acc"] == pytest.approx({1: 0.1, 2: 0.2, 3: 0.3})
    assert read_scalars(tmp_path / "seed=1,lr=0.01")["accuracy/val_acc"] == pytest.approx({1: 0.4})


def test_missing_tensorboardx_is_one_line_before_the_run(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "tensorboardX", None)  # import tensorboardX -> ImportError
    for cmd in (["run", *TINY], ["sweep", *[a for a in TINY if a != "--no-progress"]]):
        assert main([*cmd, "--tensorboard", str(tmp_path / "tb"), "--out", str(tmp_path / cmd[0])]) == 2
        err = capsys.readouterr().err.strip()
        assert err.count("\n") == 0 and "needs the tensorboardX package" in err
        assert not (tmp_path / cmd[0]).exists()  # refused before anything was built or written


def test_tags_group_metrics_and_skip_vectors():
    from fgl_jax.tensorboard import _scalar, tag
    assert [tag(n) for n in ("val_acc", "train_loss", "comm_up_bytes", "dp_epsilon", "participants")] == [
        "accuracy/val_acc", "loss/train_loss", "communication/comm_up_bytes", "privacy/dp_epsilon",
        "metrics/participants"]
    assert _scalar([0.1, 0.2]) is None and _scalar(True) is None and _scalar(float("nan")) is None
    assert _scalar(np.float32(0.5)) == 0.5
