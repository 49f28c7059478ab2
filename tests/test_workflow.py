"""Research workflow: YAML configs for system subcommands, replay, sweeps of any system, reproduce --out."""
import json
from pathlib import Path

import numpy as np
import pytest
import yaml

from fgl_jax import experiment, registry, schema
from fgl_jax.cli import main

ROOT = Path(__file__).resolve().parents[1]
# HiFGL in plain mode on the embedded CSBM graph: small, no data files, no x64 field program
SMALL_HIFGL = {"system": "hifgl", "dataset": "csbm", "clients": 3, "rounds": 2, "hidden": 8, "num_layers": 1,
               "mode": "plain"}


def _write(path, values):
    path.write_text(yaml.safe_dump(values))
    return str(path)


def _summary(out):
    return json.loads((Path(out) / "summary.json").read_text())


@pytest.mark.slow
def test_system_config_replay_gives_identical_metrics(tmp_path, capsys):
    cfg = _write(tmp_path / "h.yaml", SMALL_HIFGL)
    a, b = tmp_path / "a", tmp_path / "b"
    assert main(["hifgl", "--config", cfg, "--lr", "0.05", "--out", str(a), "--no-progress"]) == 0
    resolved = yaml.safe_load((a / "config.yaml").read_text())
    assert resolved["system"] == "hifgl" and resolved["lr"] == 0.05 and resolved["clients"] == 3
    assert len((a / "metrics.jsonl").read_text().splitlines()) == 2
    assert main(["hifgl", "--config", str(a / "config.yaml"), "--out", str(b), "--no-progress"]) == 0
    assert yaml.safe_load((b / "config.yaml").read_text()) == resolved
    sa, sb = _summary(a), _summary(b)
    assert sa["best"] == sb["best"] and sa["final"] == sb["final"]
    # the Python API with the same config computes the same run
    res = experiment.run_config(schema.resolve(registry.entry("system", "hifgl").info["config"], a / "config.yaml"))
    assert res.best == sa["best"]


def test_command_line_overrides_config_and_config_overrides_defaults(tmp_path, capsys):
    cfg = _write(tmp_path / "h.yaml", {**SMALL_HIFGL, "rounds": 7, "T": 2})
    assert main(["hifgl", "--config", cfg, "--rounds", "3", "--print-config"]) == 0
    printed = yaml.safe_load(capsys.readouterr().out)
    assert printed["rounds"] == 3          # flag beats file
    assert printed["T"] == 2               # file beats default (1)
    assert printed["frac_bits"] == 16      # default where neither says
    assert main(["hifgl", "--print-config"]) == 0
    assert yaml.safe_load(capsys.readouterr().out)["rounds"] == 50


@pytest.mark.parametrize("values, message", [
    ({"learning_rate": 0.1}, "unknown key 'learning_rate'"),
    ({"clients": "two"}, "clients must be an integer"),
    ({"clients": 2.5}, "must be an integer"),
    ({"mode": "secret"}, "must be one of"),
    ({"system": "lumos"}, "is for system 'lumos'"),
])
def test_bad_system_config_is_a_clear_error(tmp_path, capsys, values, message):
    cfg = _write(tmp_path / "bad.yaml", {"dataset": "csbm", **values})
    assert main(["hifgl", "--config", cfg]) == 2
    err = capsys.readouterr().err
    assert err.startswith("fgl-jax: error:") and message in err and "bad.yaml" in err
    if "unknown key" in message:
        assert "Valid keys" in err and "frac_bits" in err


@pytest.mark.slow
def test_hifgl_sweep_member_equals_single_run_and_writes_table_and_plot(tmp_path, capsys):
    cfg = _write(tmp_path / "h.yaml", SMALL_HIFGL)
    out = tmp_path / "sweep"
    assert main(["sweep", "--config", cfg, "--seeds", "0,1", "--grid", "lr=0.01,0.05", "--out", str(out)]) == 0
    for name in ("sweep.md", "sweep.json", "sweep.png", "config.yaml"):
        assert (out / name).stat().st_size > 0
    payload = json.loads((out / "sweep.json").read_text())
    assert payload["vector_axes"] == ["lr"] and payload["programs"] == 1 and len(payload["rows"]) == 4
    assert len(payload["summary"]) == 2 and payload["summary"][0]["seeds"] == 2
    member = next(r for r in payload["rows"] if r["seed"] == 1 and r["lr"] == 0.05)
    single = tmp_path / "single"
    assert main(["hifgl", "--config", cfg, "--seed", "1", "--lr", "0.05", "--out", str(single), "--no-progress"]) == 0
    best = _summary(single)["best"]
    assert member["best_round"] == best["best_round"]
    np.testing.assert_allclose(member["best_test"], best["best_test"], atol=1e-6)
    np.testing.assert_allclose(member["best_val"], best["best_val"], atol=1e-6)


@pytest.mark.parametrize("grid, message", [
    ("nosuch=1,2", "unknown option 'nosuch'"),
    ("lr=-1,0.1", "lr must be > 0"),
    ("lr", "name=value"),
])
def test_bad_sweep_is_a_clear_error(grid, message, capsys):
    args = ["sweep", "--dataset", "csbm", "--split", "keep", "--clients", "3", "--rounds", "2", "--grid", grid]
    assert main(args) == 2
    assert message in capsys.readouterr().err


def test_reproduce_runs_the_paper_module_in_process_into_out(tmp_path, monkeypatch, capsys):
    """`reproduce` calls the checkout's experiments/<system>/paper.reproduce(out, quick, data_dir) and
    writes nothing else."""
    import experiments.hifgl.paper as paper
    calls = []
    monkeypatch.setattr(paper, "reproduce", lambda out, quick=False, data_dir=None: (
        calls.append((out, quick, data_dir)), (out / "results_quick.json").write_text("{}")))
    out = tmp_path / "out"
    assert main(["reproduce", "hifgl", "--quick", "--data-dir", "D", "--out", str(out)]) == 0
    assert calls == [(out / "hifgl", True, "D")] and (out / "hifgl" / "results_quick.json").exists()
    assert json.loads((out / "timings.json").read_text())["total"]["wall_s"] >= 0


def test_reproduce_without_a_checkout_is_one_line(tmp_path, monkeypatch, capsys):
    """An installed package (no experiments/ beside it) says reproduce needs a checkout, in one line."""
    import fgl_jax.cli as cli
    monkeypatch.setattr(cli, "_checkout", lambda: None)
    assert main(["reproduce", "hifgl", "--quick", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert "reproduce needs a source checkout" in err and "\n" not in err
    assert not any(tmp_path.iterdir())


@pytest.mark.slow
def test_committed_configs_are_valid_for_the_cli():
    """Every experiments/configs/<folder>/*.yaml resolves against the config class of its system
    (its `system:` key; the baselines' files have none): no unknown key, types, choices, ranges."""
    files = sorted((ROOT / "experiments" / "configs").glob("*/*.yaml"))
    assert files
    for path in files:
        system = yaml.safe_load(path.read_text()).get("system", "baseline")
        cls = registry.entry("system", system).info["config"]
        schema.resolve(cls, path, system=system)
    assert {yaml.safe_load(p.read_text()).get("system", "baseline") for p in files} >= {"baseline", "hifgl"}


def _make_index_module():
    import importlib.util
    spec = importlib.util.spec_from_file_location("_make_index", ROOT / "experiments" / "make_index.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_index_reads_fedgc_records_and_links_sweeps(tmp_path, monkeypatch):
    from experiments import harness
    from experiments.harness import Cell
    mi = _make_index_module()
    res = tmp_path / "results"
    (res / "fedgc").mkdir(parents=True)
    monkeypatch.setattr(mi, "RES", res)
    # FedGC's index rows come from its full run's records (fractions; a reason where the gap is > 2 points)
    cell = Cell("fedgc/cora/r0.5/ib/s0", {"rounds": 500, "dataset": "cora"}, (0,))
    rec = harness.record(cell, {"test_acc": 0.75, "seed": 0, "dataset": "cora"},
                         {k: None for k in ("command", "started", "finished", "commit", "dirty", "versions", "machine")})
    harness.write_converted(res / "fedgc", False, [rec])
    rows = mi.rows_fedgc()
    t1 = [r for r in rows if r["table"] == "Table 1 accuracy"]
    assert len(t1) == 1 and t1[0]["ours"] == 0.75 and abs(t1[0]["paper"] - 0.808) < 1e-12 and t1[0]["reason"]
    t2 = [r for r in rows if r["setting"] == "cora FedGC ACC"]
    assert len(t2) == 1 and abs(t2[0]["paper"] - 0.808) < 1e-12
    # sweeps written by `fgl-jax sweep --out results/sweeps/<name>` are listed with their plot
    (res / "sweeps" / "s1").mkdir(parents=True)
    (res / "sweeps" / "s1" / "sweep.json").write_text(json.dumps({
        "title": "t", "axes": {"seed": [0], "lr": [0.1]}, "rows": [{}],
        "summary": [{"lr": 0.1, "best_test_mean": 0.5, "best_test_std": 0.0}]}))
    text = "\n".join(mi.sweep_lines())
    assert "sweeps/s1/sweep.png" in text and "lr=0.1: 50.00" in text


@pytest.mark.slow   # whole-run integration (compiles and runs a full program); the default suite stays short
def test_fedgc_sweep_members_of_different_seeds_differ(tmp_path, capsys):
    """FedGC draws its randomness from the seed at build time: a seed sweep must build per seed (not
    vectorise over a run key FedGC ignores) and equal the single runs."""
    small = {"system": "fedgc", "dataset": "csbm", "clients": 2, "rounds": 4, "eval_rounds": [4], "st_rounds": 5,
             "ib_epochs": 3, "eval_iters": 20, "eval_check_every": 10, "rate": 0.5}
    cfg = _write(tmp_path / "g.yaml", small)
    out = tmp_path / "sw"
    assert main(["sweep", "--config", cfg, "--seeds", "0,1", "--out", str(out)]) == 0
    rows = json.loads((out / "sweep.json").read_text())["rows"]
    assert [r["seed"] for r in rows] == [0, 1]
    for seed in (0, 1):
        single = tmp_path / f"single{seed}"
        assert main(["fedgc", "--config", cfg, "--seed", str(seed), "--out", str(single), "--no-progress"]) == 0
        assert rows[seed]["best_test"] == pytest.approx(_summary(single)["best"]["best_test"], abs=1e-6)
