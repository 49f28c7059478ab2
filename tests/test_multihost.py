"""Across hosts (issue 53, item 3): per-process data loading, checkpoints and --resume of
multi-process runs, sweeps spread over processes.

Default suite: the per-process builder against the whole-batch path on a toy graph (one process,
padding forced as if there were 4 devices), and the refusal of a resume over another process
count. Slow: real `jax.distributed` runs of CPU processes on localhost (tests/test_devices.py
does the same for plain runs): a two-process run killed after a checkpoint and resumed equals the
uninterrupted two-process run; four processes likewise (resumed, against the two-process numbers);
a sweep over two processes gives the one-process rows.
"""
import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import jax
import numpy as np
import pytest

from fgl_jax import cli
from fgl_jax.batch import build_client_batch
from fgl_jax.federated import local_data, make_fed_data
from fgl_jax.federated.sharding import client_mesh, pad_fed_data, padded_counts
from tests.helpers import toy_graph

ROOT = Path(__file__).resolve().parents[1]


# ----------------------------------------------------------------------------------------------
# per-process rows against the whole batch (one process: it owns every row)

@pytest.mark.parametrize("sparse", [False, True])
def test_local_rows_equal_the_padded_whole_batch(sparse, monkeypatch):
    g = toy_graph(n=48, sparse=sparse, seed=3)
    assignment = np.random.default_rng(1).integers(0, 6, g.num_nodes)
    assignment[np.flatnonzero(assignment == 5)] = 4
    assignment[np.flatnonzero(assignment == 4)[:1]] = 5       # client 5: one node,
    g.train_mask[np.flatnonzero(assignment == 5)] = False      # no training node: C_t = 5 < C = 6
    # the padding of 4 devices (C 6 -> 8 + dummies, C_t 5 -> 8) on this process's one device
    monkeypatch.setattr(local_data, "padded_counts", lambda c, ct, m: padded_counts(c, ct, 4))
    data, shapes = local_data.local_fed_data(g, assignment, 6, client_mesh(jax.devices()[:1]))
    ref, info = pad_fed_data(make_fed_data(build_client_batch(g, assignment, 6)), 4, warn=False)
    assert (info.eval_padded, info.train_padded) == (data.eval.num_clients, data.train.num_clients) == (8, 8)
    flat = lambda t: jax.tree_util.tree_flatten_with_path(jax.tree.map(np.asarray, t))[0]
    for part in ("eval", "train"):
        got, want = flat(getattr(data, part)), flat(getattr(ref, part))
        assert [jax.tree_util.keystr(k) for k, _ in got] == [jax.tree_util.keystr(k) for k, _ in want]
        for (k, a), (_, b) in zip(got, want):
            np.testing.assert_array_equal(a, b, err_msg=f"{part}{jax.tree_util.keystr(k)}")
    np.testing.assert_array_equal(np.asarray(data.train_index), np.asarray(ref.train_index))
    np.testing.assert_array_equal(np.asarray(data.train_weight), np.asarray(ref.train_weight))
    # the host-side bookkeeping counts the real clients
    assert (shapes.eval.num_clients, shapes.train.num_clients, shapes.train_index.shape) == (6, 5, (5,))


def test_a_process_supplies_only_the_rows_its_devices_hold():
    mesh = client_mesh(jax.devices()[:1])
    rows = local_data.owned_rows(8, mesh)
    assert list(rows) == list(mesh.devices.flat) and rows[mesh.devices.flat[0]].tolist() == list(range(8))
    # the counts come from the graph, not from built client views
    g = toy_graph(n=40, sparse=True, seed=5)
    a = np.random.default_rng(0).integers(0, 3, g.num_nodes)
    sizes = local_data.client_sizes(g, a, 3)
    subs = [g.subgraph(np.flatnonzero(a == k)) for k in range(3)]
    assert sizes["nodes"].tolist() == [s.num_nodes for s in subs]
    assert sizes["edges"].tolist() == [s.num_edges for s in subs]
    assert sizes["nnz"].tolist() == [s.x.nnz for s in subs]
    assert sizes["train"].tolist() == [int((s.train_mask & (s.y >= 0)).sum()) for s in subs]


# ----------------------------------------------------------------------------------------------
# a resume over another layout: refused in one line, before anything is built on devices

ARGS = ["run", "--dataset", "csbm", "--split", "keep", "--clients", "6", "--rounds", "4", "--hidden", "8",
        "--no-progress", "--no-cache", "--chunk", "1", "--checkpoint-every", "1"]


def test_resuming_a_two_process_checkpoint_in_one_process_is_refused_in_one_line(tmp_path, capsys):
    ckpt = tmp_path / "run" / "checkpoints"
    (ckpt / "round_000002").mkdir(parents=True)
    (ckpt / "round_000002.sha256").write_text(json.dumps({"round": 2, "files": {}, "processes": 2, "devices": 2}))
    assert cli.main(ARGS + ["--out", str(tmp_path / "run"), "--resume"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert "round_000002 was written by a run over 2 processes x 2 device(s) in all" in err[0]
    assert "this run has 1 process x 1 device(s)" in err[0]


# ----------------------------------------------------------------------------------------------
# real processes (slow)

def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _launch(n: int, args: list, env: dict = None) -> list:
    """n processes of `fgl-jax args` joined over a free localhost port (one CPU device each)."""
    port = _port()
    base = {**os.environ, "PYTHONPATH": str(ROOT), "XLA_FLAGS": "--xla_force_host_platform_device_count=1",
            **(env or {})}
    return [subprocess.Popen([sys.executable, "-m", "fgl_jax.cli", *args, "--coordinator", f"127.0.0.1:{port}",
                              "--num-processes", str(n), "--process-id", str(i)], cwd=ROOT, env=base,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for i in range(n)]


def _wait(procs: list, name: str, code: int = 0) -> list:
    errs = []
    for i, p in enumerate(procs):
        out, err = p.communicate(timeout=900)
        assert p.returncode == code, f"{name} process {i} exited {p.returncode}: {err[-3000:]}"
        errs.append(err)
    return errs


def _rows(d: Path) -> list:
    return [json.loads(line) for line in (d / "metrics.jsonl").read_text().splitlines()]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Uninterrupted and killed-then-resumed runs over 2 and 4 processes, and a 2-process sweep.
    The kill: FGL_JAX_FAULT=chunk:3 ends every process after round 3 (rounds 1 and 2 committed;
    round 3's save started, never committed), as a crash would."""
    tmp = tmp_path_factory.mktemp("multihost")
    procs = []
    try:
        sweep = ["sweep", "--dataset", "csbm", "--split", "keep", "--clients", "6", "--rounds", "2", "--hidden", "8",
                 "--seeds", "0,1,2", "--no-cache", "--no-progress"]
        procs += _launch(2, ARGS + ["--out", str(tmp / "two")])
        _wait(procs[-2:], "two")
        procs += _launch(2, ARGS + ["--out", str(tmp / "two_killed")], env={"FGL_JAX_FAULT": "chunk:3"})
        _wait(procs[-2:], "two_killed", code=17)
        procs += _launch(2, ARGS + ["--out", str(tmp / "two_killed"), "--resume"])
        errs = _wait(procs[-2:], "two_resumed")
        (tmp / "two_resumed.err").write_text("\n".join(errs))
        procs += _launch(4, ARGS + ["--out", str(tmp / "four")], env={"FGL_JAX_FAULT": "chunk:3"})
        _wait(procs[-4:], "four_killed", code=17)
        procs += _launch(4, ARGS + ["--out", str(tmp / "four"), "--resume"])
        _wait(procs[-4:], "four_resumed")
        procs += _launch(2, sweep + ["--out", str(tmp / "sweep2")])
        _wait(procs[-2:], "sweep2")
        assert cli.main(sweep + ["--out", str(tmp / "sweep1")]) == 0
        yield tmp
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()


def _same(a: list, b: list, exact: bool) -> None:
    assert [r["round"] for r in a] == [r["round"] for r in b] == [1, 2, 3, 4]
    for ra, rb in zip(a, b):
        for k in ("train_loss", "val_acc", "test_acc", "val_loss", "comm_up_bytes"):
            if exact:
                assert ra[k] == rb[k], (k, ra["round"])
            else:
                np.testing.assert_allclose(ra[k], rb[k], rtol=2e-5, atol=2e-6, err_msg=k)


@pytest.mark.slow
def test_two_processes_killed_after_a_checkpoint_resume_to_the_uninterrupted_metrics(runs):
    _same(_rows(runs / "two_killed"), _rows(runs / "two"), exact=True)
    summary = lambda d: json.loads((d / "summary.json").read_text())
    assert summary(runs / "two_killed") == summary(runs / "two")
    assert "no checkpoint" not in (runs / "two_resumed.err").read_text()  # it restored round 2
    timings = json.loads((runs / "two" / "timings.json").read_text())
    assert timings["processes"] == 2 and timings["per_process_data"] is True
    # every process wrote its own shards; process 0 the manifest
    step = runs / "two" / "checkpoints" / "round_000004"
    assert {p.name for p in (step / "default").glob("ocdbt.process_*")} == {"ocdbt.process_0", "ocdbt.process_1"}
    manifest = json.loads((step.parent / "round_000004.sha256").read_text())
    assert manifest["processes"] == 2 and manifest["devices"] == 2
    assert any(f.startswith("default/ocdbt.process_1/") for f in manifest["files"])


@pytest.mark.slow
def test_four_processes_killed_and_resumed_equal_the_two_process_run(runs):
    # 4 devices pad the client axis differently (6 -> 8): equal up to float summation order
    _same(_rows(runs / "four"), _rows(runs / "two"), exact=False)
    step = runs / "four" / "checkpoints" / "round_000004" / "default"
    assert len(list(step.glob("ocdbt.process_*"))) == 4


@pytest.mark.slow
def test_a_two_process_checkpoint_is_refused_by_one_process(runs, tmp_path, capsys):
    shutil.copytree(runs / "two", tmp_path / "two")
    (tmp_path / "two" / "summary.json").unlink()
    assert cli.main(ARGS + ["--out", str(tmp_path / "two"), "--resume"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "written by a run over 2 processes" in err[0], err


@pytest.mark.slow
def test_a_sweep_spread_over_two_processes_gives_the_one_process_rows(runs):
    one = json.loads((runs / "sweep1" / "sweep.json").read_text())["rows"]
    two = json.loads((runs / "sweep2" / "sweep.json").read_text())["rows"]
    assert [r["seed"] for r in two] == [r["seed"] for r in one] == [0, 1, 2]
    for a, b in zip(one, two):
        assert a["best_round"] == b["best_round"]
        np.testing.assert_allclose([b["best_val"], b["best_test"], b["final_train_loss"]],
                                   [a["best_val"], a["best_test"], a["final_train_loss"]], rtol=2e-5)
