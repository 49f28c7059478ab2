"""Runs that never lie (issue 33): output directories, resume checks, checkpoint integrity,
divergence, and the smaller bad inputs, each with the input that once went wrong.

Reference for "correct": the uninterrupted run of the same config in a fresh directory; files are
compared byte for byte.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from fgl_jax import experiment
from fgl_jax.cli import main

SMALL = dict(dataset="csbm", split="keep", clients=3, rounds=12, hidden=8, chunk=3, partition="random")


def _cfg(**changes):
    return experiment.default_config("baseline", **{**SMALL, **changes})


def _files(d: Path) -> dict:
    return {name: (d / name).read_bytes() for name in ("metrics.jsonl", "summary.json", "config.yaml")}


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> dict:
    """The uninterrupted 12-round run's files."""
    d = tmp_path_factory.mktemp("ref") / "run"
    experiment.run_config(_cfg(), out=str(d))
    return _files(d)


def _cli(*args) -> int:
    return main([str(a) for a in args])


# a checkpoint after every chunk (the round-based policy), so kills land between and inside saves; the
# default (at most one save per 30 s, plus the last round) would save only at the end of these short runs
CLI_SMALL = ["--dataset", "csbm", "--split", "keep", "--clients", "3", "--rounds", "12", "--hidden", "8",
             "--chunk", "3", "--no-progress", "--checkpoint-every", "chunk"]


# ---- output directories -------------------------------------------------------------------------

@pytest.mark.slow
def test_a_fresh_run_refuses_a_directory_holding_another_run(tmp_path, capsys):
    d = tmp_path / "run"
    experiment.run_config(_cfg(rounds=6), out=str(d))
    before = _files(d)
    assert _cli("run", *CLI_SMALL, "--lr", "0.05", "--out", d) == 2
    err = capsys.readouterr().err
    assert "is not empty" in err and "--resume" in err and "--overwrite" in err
    assert _files(d) == before  # nothing touched


@pytest.mark.slow
def test_overwrite_clears_the_old_run_checkpoints_included(tmp_path, reference):
    d = tmp_path / "run"
    experiment.run_config(_cfg(rounds=30, lr=0.05), out=str(d), checkpoint_every="chunk")
    experiment.run_config(_cfg(), out=str(d), overwrite=True, checkpoint_every="chunk")
    assert _files(d) == reference
    ckpts = sorted(p.name for p in (d / "checkpoints").iterdir() if p.is_dir())
    assert ckpts == ["round_000006", "round_000009", "round_000012"]  # the 30-round run's are gone


def test_out_that_is_a_file_is_one_clear_line(tmp_path, capsys):
    f = tmp_path / "taken"
    f.write_text("x")
    assert _cli("run", *CLI_SMALL, "--out", f) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "is an existing file" in err[0]


# ---- resume checks --------------------------------------------------------------------------------

def test_resume_with_a_changed_option_is_refused_and_leaves_the_config(tmp_path, capsys):
    d = tmp_path / "run"
    experiment.run_config(_cfg(rounds=6), out=str(d))
    before = _files(d)
    assert _cli("run", *CLI_SMALL, "--rounds", "6", "--lr", "0.05", "--out", d, "--resume") == 2
    err = capsys.readouterr().err
    assert "lr: 0.01 -> 0.05" in err
    assert _files(d) == before


def test_more_rounds_on_resume_need_resume_with_changes(tmp_path, reference, capsys):
    d = tmp_path / "run"
    experiment.run_config(_cfg(rounds=6), out=str(d))
    assert _cli("run", *CLI_SMALL, "--out", d, "--resume") == 2
    assert "--resume-with-changes rounds" in capsys.readouterr().err
    assert _cli("run", *CLI_SMALL, "--out", d, "--resume", "--resume-with-changes", "rounds") == 0
    assert _files(d) == reference  # 6 rounds + 6 more == 12 rounds, config.yaml says 12


def test_resuming_a_finished_run_is_refused(tmp_path, capsys):
    d = tmp_path / "run"
    experiment.run_config(_cfg(rounds=6), out=str(d))
    with pytest.raises(ValueError, match="finished run"):
        experiment.run_config(_cfg(rounds=6), out=str(d), resume=True)


@pytest.mark.slow
def test_resume_without_checkpoints_starts_over_without_duplicating_rows(tmp_path, reference):
    d = tmp_path / "run"
    experiment.run_config(_cfg(), out=str(d))
    (d / "summary.json").unlink()
    for p in (d / "checkpoints").iterdir():
        (p.unlink() if p.is_file() else __import__("shutil").rmtree(p))
    experiment.run_config(_cfg(), out=str(d), resume=True)
    assert _files(d) == reference


# ---- checkpoint integrity -------------------------------------------------------------------------

def _interrupted(tmp_path: Path) -> Path:
    """A directory as a kill after round 9 leaves it: checkpoints 3..9, rows 1..9, no summary."""
    from fgl_jax import schema
    d = tmp_path / "run"
    experiment.run_config(_cfg(rounds=9), out=str(d), checkpoint_every="chunk")
    (d / "summary.json").unlink()
    (d / "timings.json").unlink()
    # the 12-round run's config: rounds 1..9 do not depend on the total
    (d / "config.yaml").write_text(schema.dump(_cfg(), "baseline"))
    return d


def _largest_data_file(ckpt: Path) -> Path:
    files = [p for p in ckpt.rglob("*") if p.is_file() and "METADATA" not in p.name.upper()]
    return max(files, key=lambda p: p.stat().st_size)


@pytest.mark.slow
@pytest.mark.parametrize("damage", ["flip_byte", "truncate", "metadata"])
def test_a_damaged_latest_checkpoint_falls_back_to_the_previous_one(tmp_path, reference, capsys, damage):
    d = _interrupted(tmp_path)
    latest = d / "checkpoints" / "round_000009"
    if damage == "flip_byte":
        f = _largest_data_file(latest)
        b = bytearray(f.read_bytes())
        b[len(b) // 2] ^= 0x01
        f.write_bytes(bytes(b))
    elif damage == "truncate":
        f = _largest_data_file(latest)
        f.write_bytes(f.read_bytes()[: f.stat().st_size // 2])
    else:
        f = next(p for p in latest.rglob("*") if p.is_file() and "METADATA" in p.name.upper())
        f.write_bytes(f.read_bytes()[:10])
    experiment.run_config(_cfg(), out=str(d), resume=True)
    err = capsys.readouterr().err
    assert "round_000009 is damaged" in err and "falling back to" in err and "round_000006" in err
    assert _files(d) == reference


@pytest.mark.slow
def test_a_torn_last_metrics_line_is_dropped_and_the_run_resumes_identically(tmp_path, reference):
    """metrics.jsonl is appended per chunk (issue 50): a kill during an append leaves a last line
    without its newline; the resume drops it and continues the same run."""
    d = _interrupted(tmp_path)
    with (d / "metrics.jsonl").open("a") as f:
        f.write('{"round": 10, "train_lo')
    experiment.run_config(_cfg(), out=str(d), resume=True)
    assert _files(d) == reference


def test_a_broken_metrics_line_before_the_last_is_one_line_naming_the_file(tmp_path):
    d = _interrupted(tmp_path)
    lines = (d / "metrics.jsonl").read_text().splitlines(keepends=True)
    lines[4] = '{"round": 5, "train_lo\n'
    (d / "metrics.jsonl").write_text("".join(lines))
    with pytest.raises(ValueError, match=r"metrics.jsonl, line 5: not a metrics row"):
        experiment.run_config(_cfg(), out=str(d), resume=True)


def test_a_checkpoint_of_another_program_is_refused_before_anything_is_rewritten(tmp_path, capsys):
    d = _interrupted(tmp_path)
    before = (d / "config.yaml").read_bytes()
    cfg = _cfg(hidden=16)
    from fgl_jax import schema
    (d / "config.yaml").write_text(schema.dump(cfg, "baseline"))  # a config that "matches"
    written = (d / "config.yaml").read_bytes()
    # more rounds (an allowed change) would rewrite config.yaml, but only after a successful restore
    with pytest.raises(ValueError, match="does not fit this run's state"):
        experiment.run_config(_cfg(hidden=16, rounds=20), out=str(d), resume=True, resume_with_changes=("rounds",))
    assert before != written and (d / "config.yaml").read_bytes() == written


# ---- kills at chosen moments, in a separate process ------------------------------------------------

def _run_cli(args, env_extra=None) -> subprocess.CompletedProcess:
    env = {**os.environ, **(env_extra or {})}
    return subprocess.run([sys.executable, "-m", "fgl_jax.cli", *map(str, args)], env=env,
                          capture_output=True, text=True, timeout=600)


@pytest.mark.slow
@pytest.mark.parametrize("fault", ["checkpoint:1", "chunk:3", pytest.param("chunk:1", marks=pytest.mark.slow),
                                   pytest.param("checkpoint:3", marks=pytest.mark.slow)])
def test_kill_and_resume_gives_the_uninterrupted_files(tmp_path, reference, fault):
    d = tmp_path / "run"
    killed = _run_cli(["run", *CLI_SMALL, "--out", d], {"FGL_JAX_FAULT": fault})
    assert killed.returncode == 17, killed.stderr[-500:]
    assert not (d / "summary.json").exists()
    resumed = _run_cli(["run", *CLI_SMALL, "--out", d, "--resume"])
    assert resumed.returncode == 0, resumed.stderr[-500:]
    assert _files(d) == reference


# ---- divergence ----------------------------------------------------------------------------------

def test_an_exploding_loss_stops_with_a_message_naming_the_round(tmp_path):
    from fgl_jax.federated import NonFiniteError
    d = tmp_path / "run"
    with pytest.raises(NonFiniteError, match=r"round \d+: .*(train_loss|diverged).*lower the learning rate"):
        experiment.run_config(_cfg(lr=1e6, rounds=30), out=str(d))
    rows = [json.loads(l) for l in (d / "metrics.jsonl").read_text().splitlines()]
    assert all(np.isfinite(r["train_loss"]) and r["train_loss"] < 1e6 * rows[0]["train_loss"] for r in rows)


@pytest.mark.slow
@pytest.mark.parametrize("chunk", [1, 4, 30])
def test_the_first_bad_round_does_not_depend_on_the_chunking(tmp_path, chunk):
    from fgl_jax.federated import NonFiniteError
    with pytest.raises(NonFiniteError) as err:
        experiment.run_config(_cfg(lr=1e6, rounds=30, chunk=chunk), out=str(tmp_path / "r"))
    rows = (tmp_path / "r" / "metrics.jsonl").read_text().splitlines()
    assert str(err.value).startswith(f"round {len(rows) + 1}:")
    test_the_first_bad_round_does_not_depend_on_the_chunking.seen = getattr(
        test_the_first_bad_round_does_not_depend_on_the_chunking, "seen", set()) | {len(rows)}
    assert len(test_the_first_bad_round_does_not_depend_on_the_chunking.seen) == 1


def test_ctrl_c_is_one_line_with_the_resume_command(tmp_path, capsys, monkeypatch):
    def interrupt(*a, **k):
        raise KeyboardInterrupt
    monkeypatch.setattr(experiment, "run_config", interrupt)
    assert _cli("run", *CLI_SMALL, "--out", tmp_path / "r") == 130
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("fgl-jax: interrupted; resume with: fgl-jax run ")
    assert err[0].endswith("--resume")


@pytest.mark.slow
def test_a_diverging_sweep_member_is_named_and_the_others_kept(capsys):
    from fgl_jax.federated.sweep import run_grid
    from fgl_jax.systems.baseline.program import build
    from fgl_jax import schema
    from fgl_jax.systems.baseline.config import RunConfig
    options = schema.to_dict(_cfg(rounds=15))
    res = run_grid(lambda o: build(schema.make(RunConfig, o)), options, [0], {"lr": [0.01, 1e6]})
    ok, bad = res.rows
    assert "diverged" not in ok and np.isfinite(ok["best_test"]) and ok["best_test"] > 0.3
    assert bad["diverged"].startswith("round ")
    assert any("lr=1000000.0 diverged at round" in m for m in res.messages)
    # the kept member equals its single run
    single = experiment.run_config(_cfg(rounds=15))
    assert ok["best_test"] == pytest.approx(single.best["best_test"], abs=1e-6)


@pytest.mark.slow
def test_hifgl_field_overflow_from_divergence_blames_the_learning_rate(tmp_path):
    from fgl_jax.federated import NonFiniteError
    from fgl_jax.federated.run import first_bad_round
    sane = {"field_overflow": np.array([0.0, 1.0]), "train_loss": np.array([1.9, 1.8])}
    wild = {"field_overflow": np.array([0.0, 1.0]), "train_loss": np.array([1.9, 4e9])}
    assert "frac_bits" in first_bad_round(sane)[1]
    assert "lower the learning rate" in first_bad_round(wild)[1] and "frac_bits" not in first_bad_round(wild)[1]
    cfg = experiment.default_config("hifgl", dataset="csbm", clients=3, rounds=4, hidden=8, num_layers=1,
                                    mode="field", lr=1e30)
    with pytest.raises(NonFiniteError) as err:
        experiment.run_config(cfg)
    assert "lower the learning rate" in str(err.value) and "frac_bits" not in str(err.value)


# ---- the smaller ones ----------------------------------------------------------------------------

def test_data_dir_missing_a_file_does_not_fall_back_to_the_environment(tmp_path, monkeypatch):
    import shutil
    from fgl_jax.data import DatasetNotFoundError, load
    src = Path(os.environ.get("FGL_JAX_DATA", "")) / "planetoid"
    if not (src / "ind.cora.x").is_file():
        pytest.skip("needs the real Cora files (FGL_JAX_DATA)")
    (tmp_path / "planetoid").mkdir()
    for f in src.glob("ind.cora.*"):
        if not f.name.endswith(".tx"):
            shutil.copy(f, tmp_path / "planetoid" / f.name)
    with pytest.raises(DatasetNotFoundError, match="ind.cora.tx"):
        load("cora", data_dir=tmp_path)


def test_a_test_id_beyond_the_graph_is_refused(tmp_path):
    import pickle
    import scipy.sparse as sp
    from fgl_jax.data import DataError
    from fgl_jax.data.planetoid import read_planetoid
    d = tmp_path / "planetoid"
    d.mkdir()
    # a 6-node Planetoid-format graph: nodes 0-3 in allx (0-1 also x), test nodes 4, 5; one test id corrupted
    feats = lambda n: sp.csr_matrix(np.eye(n, 3, dtype=np.float32))
    onehot = lambda n: np.eye(n, 2, dtype=np.int64)[[i % 2 for i in range(n)]]
    objs = {"x": feats(2), "y": onehot(2), "allx": feats(4), "ally": onehot(4), "tx": feats(2), "ty": onehot(2),
            "graph": {i: [(i + 1) % 6] for i in range(6)}}
    for k, v in objs.items():
        with open(d / f"ind.pubmed.{k}", "wb") as f:
            pickle.dump(v, f, protocol=2)
    (d / "ind.pubmed.test.index").write_text("4\n99999\n")
    with pytest.warns(UserWarning, match="no published checksum"), pytest.raises(DataError, match="beyond the 6 nodes"):
        read_planetoid("pubmed", data_dir=tmp_path)


def test_nan_features_are_refused_naming_the_node():
    from fgl_jax.data import csbm
    from fgl_jax.graph import GraphError
    g = csbm(num_nodes=40, num_classes=2, num_features=4, avg_degree=3.0)
    x = np.array(g.x)
    x[7, 2] = np.nan
    with pytest.raises(GraphError, match=r"non-finite \(NaN/inf\) features in 1 node\(s\), first node 7"):
        g.replace(x=x) if hasattr(g, "replace") else __import__("dataclasses").replace(g, x=x)


@pytest.mark.parametrize("text, message", [
    ("rounds: 2.5", "rounds must be an integer, got 2.5"),
    ("hidden: 16.5", "hidden must be an integer"),
    ("lr: -0.1", "lr must be > 0"),
    ("rounds: [1", "is not valid YAML"),
])
def test_bad_yaml_values_are_one_line(tmp_path, capsys, text, message):
    f = tmp_path / "c.yaml"
    f.write_text("dataset: csbm\n" + text + "\n")
    assert _cli("run", "--config", f, "--print-config") == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0] and str(f) in err[0]


@pytest.mark.parametrize("argv, message", [
    (["lumos", "--lr", "0"], "lr must be > 0"),
    (["fedhgl", "--lr", "-0.1"], "lr must be > 0"),
    (["fedhgn", "--rounds", "0"], "rounds must be >= 1"),
])
def test_bad_values_on_the_command_line_are_one_line(capsys, argv, message):
    assert _cli(*argv, "--print-config") == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0]


def test_a_split_that_leaves_no_test_nodes_is_refused():
    with pytest.raises(ValueError, match="leaves no test nodes"):
        experiment.run_config(_cfg(split="per_class", num_val=100000, rounds=1))


def test_a_sweep_grid_of_floats_in_e_notation_is_accepted():
    from fgl_jax.cli import _parse_grid
    from fgl_jax.systems.baseline.config import RunConfig
    assert _parse_grid(["lr=1e-3,1e-2"], RunConfig) == {"lr": [0.001, 0.01]}


def test_sweep_with_a_broken_config_file_is_one_line(tmp_path, capsys):
    f = tmp_path / "bad.yaml"
    f.write_text("dataset: [csbm\n")
    assert _cli("sweep", "--config", f) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "not valid YAML" in err[0]


def test_laplace_noise_is_laplace_and_its_tail_is_not_cut_at_16_6():
    """Statistical: 2^21 draws; mean 0 +- 5 se, variance 2 +- 5 se, the exponential CDF of |noise| at
    1, 3, 6 within 5 binomial se; and the sampler's largest possible |noise| (hi = 0, lo = 0) is
    64 ln 2 = 44.4, beyond float32 inversion's 16.6."""
    import jax
    import jax.numpy as jnp
    from fgl_jax.privacy.ldp import standard_laplace
    n = 1 << 21
    z = np.asarray(standard_laplace(jax.random.key(3), (n,)), np.float64)
    assert abs(z.mean()) < 5 * np.sqrt(2 / n)
    assert abs(z.var() - 2) < 5 * np.sqrt(20 / n)  # Var(z^2) = E z^4 - 4 = 24 - 4
    for t in (1.0, 3.0, 6.0):
        p = 1 - np.exp(-t)
        assert abs(np.mean(np.abs(z) <= t) - p) < 5 * np.sqrt(p * (1 - p) / n)
    # the sampler's transform at chosen words against -log U computed exactly (float64 from the
    # integers): the extremes and the hand-over between the two branches (hi = 0 / hi = 1)
    from fgl_jax.privacy.ldp import exponential_from_words
    words = [(0, 0), (0, 2 ** 32 - 1), (1, 0), (1, 12345), (2 ** 31, 7), (2 ** 32 - 1, 2 ** 32 - 1)]
    hi = jnp.asarray([w[0] for w in words], jnp.uint32)
    lo = jnp.asarray([w[1] for w in words], jnp.uint32)
    exact = [64 * np.log(2.0) - np.log(float(h) * 2.0 ** 32 + float(l) + 1.0) for h, l in words]
    np.testing.assert_allclose(np.asarray(exponential_from_words(hi, lo)), exact, rtol=1e-6, atol=1e-6)
    assert exact[0] > 44.3  # the tail reaches 64 ln 2, beyond float32 inversion's 16.6
