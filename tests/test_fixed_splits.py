"""Issue 48 item 2: a file's k fixed splits, one with --split-index i, all with --split-index all as
members of one compiled program (mean +- sd in summary.json), member i equal to the --split-index i run."""
from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from fgl_jax.cli import main
from fgl_jax.systems.baseline.fixed_splits import stack_members

TEXAS = Path(os.environ.get("FGL_JAX_DATA", "/work/shared/data")) / "heterophily" / "texas.npz"
TINY = ["--clients", "2", "--rounds", "3", "--hidden", "8", "--no-progress"]
needs_texas = pytest.mark.skipif(not TEXAS.exists(), reason="no heterophily data under FGL_JAX_DATA")


def test_stack_members_shares_equal_leaves_and_stacks_the_others():
    a = {"x": np.ones((3, 2)), "mask": np.array([True, False, True])}
    b = {"x": np.ones((3, 2)), "mask": np.array([False, True, True])}
    data, axes = stack_members([a, b])
    assert axes == {"x": None, "mask": 0}
    np.testing.assert_array_equal(data["x"], a["x"])
    np.testing.assert_array_equal(data["mask"], np.stack([a["mask"], b["mask"]]))


def _rows(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]


@pytest.mark.slow
@needs_texas
def test_all_splits_one_program_and_split_i_equals_the_single_run(tmp_path, capsys):
    out_all, out_2 = tmp_path / "all", tmp_path / "two"
    assert main(["run", "--dataset", str(TEXAS), "--split-index", "all", *TINY, "--out", str(out_all)]) == 0
    printed = capsys.readouterr().out
    summary = json.loads((out_all / "summary.json").read_text())
    timings = json.loads((out_all / "timings.json").read_text())
    k = np.load(TEXAS)["train_masks"].shape[0]
    assert summary["splits"] == k and len(summary["per_split"]) == k
    # one compilation of the round program serves every split; nothing compiled per member
    assert timings["member_program"] == {"compile": 1, "run": 0}
    assert timings["members"] == k
    tests = np.array([r["best_test"] for r in summary["per_split"]])
    assert summary["best_test"]["mean"] == pytest.approx(tests.mean())
    assert summary["best_test"]["sd"] == pytest.approx(tests.std())
    assert len(set(tests.tolist())) > 1  # the splits are different data, not one split k times
    assert f"{tests.mean():.4f} +- {tests.std():.4f}" in printed
    # member 2 against its own run
    assert main(["run", "--dataset", str(TEXAS), "--split-index", "2", *TINY, "--out", str(out_2)]) == 0
    single = json.loads((out_2 / "summary.json").read_text())
    mine = summary["per_split"][2]
    assert mine["best_round"] == single["best"]["best_round"]
    assert mine["best_val"] == pytest.approx(single["best"]["best_val"], abs=1e-6)
    assert mine["best_test"] == pytest.approx(single["best"]["best_test"], abs=1e-6)
    rows_all = [r for r in _rows(out_all) if r["split"] == 2]
    rows_one = _rows(out_2)
    assert len(rows_all) == len(rows_one) == 3
    for a, b in zip(rows_all, rows_one):
        for key in ("train_loss", "val_acc", "test_acc"):
            assert a[key] == pytest.approx(b[key], rel=1e-5, abs=1e-6), key


@needs_texas
def test_split_index_out_of_range_is_one_line(capsys):
    assert main(["run", "--dataset", str(TEXAS), "--split-index", "10", *TINY]) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert "--split-index 10 is out of range: the file has 10 fixed splits (0..9)" in err


def test_split_index_all_on_a_file_without_splits_is_one_line(tmp_path, capsys):
    p = tmp_path / "g.npz"
    np.savez(p, edge_index=np.array([[0, 1, 2], [1, 2, 0]]), x=np.eye(3), y=np.array([0, 1, 0]))
    assert main(["run", "--dataset", str(p), "--split-index", "all", *TINY]) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert "has no fixed splits" in err


def test_split_index_is_checked(capsys):
    assert main(["run", "--split-index", "x", *TINY]) == 2
    assert "split_index must be a split number 0, 1, ... or 'all', got 'x'" in capsys.readouterr().err


def _small_split_file(p, n=40, k=3, seed=0):
    rng = np.random.default_rng(seed)
    y = np.arange(n) % 2
    edges = np.array([(i, j) for i, j in rng.integers(0, n, (3 * n, 2)) if i != j])
    tr, va, te = (np.zeros((k, n), bool) for _ in range(3))
    for i in range(k):
        perm = rng.permutation(n)
        tr[i, perm[:20]], va[i, perm[20:30]], te[i, perm[30:]] = True, True, True
    x = (y[:, None] + rng.normal(size=(n, 4))).astype(np.float32)
    np.savez(p, node_features=x, node_labels=y, edges=edges, train_masks=tr, val_masks=va, test_masks=te)


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::fgl_jax.data.DataNotice")
def test_vmap_and_sequential_members_agree(tmp_path):
    import dataclasses
    from fgl_jax.federated.sweep import sweep
    from fgl_jax.systems.baseline.config import RunConfig
    from fgl_jax.systems.baseline.program import build
    p = tmp_path / "h.npz"
    _small_split_file(p)
    cfg = RunConfig(dataset=str(p), clients=2, rounds=2, hidden=4)
    programs = [build(dataclasses.replace(cfg, split_index=str(i))) for i in range(3)]
    data, axes = stack_members([q.data for q in programs])
    assert any(a == 0 for a in __import__("jax").tree.leaves(axes))
    runs = {mode: sweep(programs[0].algorithm, data, [0, 0, 0], 2, mode=mode, data_axes=axes)
            for mode in ("vmap", "sequential")}
    for mode, res in runs.items():
        assert res.programs["compile"] >= 1 and res.programs["run"] == 0, mode
    for name in ("val_acc", "test_acc", "train_loss"):
        np.testing.assert_allclose(runs["vmap"].history[name], runs["sequential"].history[name], rtol=1e-5,
                                   atol=1e-6)
    assert not np.allclose(runs["vmap"].history["test_acc"][0], runs["vmap"].history["test_acc"][1])


def test_a_single_program_refuses_split_index_all(tmp_path, capsys):
    p = tmp_path / "h.npz"
    _small_split_file(p)
    assert main(["sweep", "--dataset", str(p), "--split-index", "all", "--rounds", "2", "--clients", "2"]) == 2
    assert "split_index all runs every fixed split as members of one program" in capsys.readouterr().err
