"""Research workflow: YAML configs for system subcommands, replay, sweeps of any system, reproduce --out."""
import json
from pathlib import Path

import numpy as np
import pytest
import yaml

from fgl_jax.cli import _subparsers, build_parser, main
from fgl_jax import sysconfig

ROOT = Path(__file__).resolve().parents[1]
# HiFGL in plain mode on the embedded CSBM graph: small, no data files, no x64 field program
SMALL_HIFGL = {"system": "hifgl", "dataset": "csbm", "silos": 3, "rounds": 2, "hidden": 8, "layers": 1, "mode": "plain"}


def _write(path, values):
    path.write_text(yaml.safe_dump(values))
    return str(path)


def _summary(out):
    return json.loads((Path(out) / "summary.json").read_text())


def test_system_config_replay_gives_identical_metrics(tmp_path, capsys):
    cfg = _write(tmp_path / "h.yaml", SMALL_HIFGL)
    a, b = tmp_path / "a", tmp_path / "b"
    assert main(["hifgl", "--config", cfg, "--lr", "0.05", "--out", str(a), "--no-progress"]) == 0
    resolved = yaml.safe_load((a / "config.yaml").read_text())
    assert resolved["system"] == "hifgl" and resolved["lr"] == 0.05 and resolved["silos"] == 3
    assert len((a / "metrics.jsonl").read_text().splitlines()) == 2
    assert main(["hifgl", "--config", str(a / "config.yaml"), "--out", str(b), "--no-progress"]) == 0
    assert yaml.safe_load((b / "config.yaml").read_text()) == resolved
    sa, sb = _summary(a), _summary(b)
    assert sa["best"] == sb["best"] and sa["final"] == sb["final"]
    # the generic runner and the system's own command compute the same run
    capsys.readouterr()
    assert main(["hifgl", "--config", str(a / "config.yaml"), "--runner", "native", "--no-progress"]) == 0
    assert f"test_acc={sa['best']['best_test']:.4f}" in capsys.readouterr().out


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
    ({"silos": "two"}, "'silos'"),
    ({"silos": 2.5}, "must be an integer"),
    ({"mode": "secret"}, "must be one of"),
    ({"system": "lumos"}, "is for system 'lumos'"),
])
def test_bad_system_config_is_a_clear_error(tmp_path, capsys, values, message):
    cfg = _write(tmp_path / "bad.yaml", {"dataset": "csbm", **values})
    assert main(["hifgl", "--config", cfg]) == 2
    err = capsys.readouterr().err
    assert err.startswith("fgl-jax: error:") and message in err and "bad.yaml" in err
    if "unknown key" in message:
        assert "valid keys" in err and "frac_bits" in err


def test_coerce_follows_argparse_types():
    sp = _subparsers(build_parser())["hifgl"]
    assert sysconfig.coerce(sp, "lr", 1, "t") == 1.0 and isinstance(sysconfig.coerce(sp, "lr", 1, "t"), float)
    with pytest.raises(ValueError, match="unknown key"):
        sysconfig.coerce(sp, "no_such", 1, "src")
    assert sysconfig.parse_assignment("lr=0.01,0.1", "--grid") == ("lr", [0.01, 0.1])
    with pytest.raises(ValueError, match="name=value"):
        sysconfig.parse_assignment("lr", "--grid")


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


def test_baseline_sweep_shape_changing_axis_runs_separate_programs(tmp_path, capsys):
    out = tmp_path / "s"
    args = ["sweep", "--system", "baseline", "--dataset", "csbm", "--split", "keep", "--clients", "3", "--rounds", "3", "--num-layers", "1",
            "--seeds", "0,1", "--grid", "lr=0.01,0.1", "--grid", "hidden=4,8", "--out", str(out)]
    assert main(args) == 0
    printed = capsys.readouterr().out
    assert "'hidden' changes array shapes" in printed and "separate programs" in printed
    payload = json.loads((out / "sweep.json").read_text())
    assert payload["program_axes"] == ["hidden"] and payload["programs"] == 2 and len(payload["rows"]) == 8
    assert {(r["lr"], r["hidden"]) for r in payload["rows"]} == {(a, b) for a in (0.01, 0.1) for b in (4, 8)}


@pytest.mark.parametrize("grid, message", [
    ("nosuch=1,2", "cannot sweep over 'nosuch'"),
    ("lr=-1,0.1", "positive"),
    ("lr", "name=value"),
])
def test_bad_sweep_is_a_clear_error(grid, message, capsys):
    args = ["sweep", "--dataset", "csbm", "--split", "keep", "--clients", "3", "--rounds", "2", "--grid", grid]
    assert main(args) == 2
    assert message in capsys.readouterr().err


def test_reproduce_out_never_writes_into_experiments(tmp_path, monkeypatch, capsys):
    """--out: a script with --out gets it; one without runs from a staged copy; both land in OUT/<system>."""
    exp = tmp_path / "repo" / "experiments"
    (exp / "results").mkdir(parents=True)
    (exp / "hifgl").mkdir()
    (exp / "hifgl" / "reproduce.py").write_text(
        "import argparse, pathlib\nap = argparse.ArgumentParser()\nap.add_argument('--quick', action='store_true')\n"
        "ap.add_argument('--out', default=str(pathlib.Path(__file__).parents[1] / 'results' / 'hifgl'))\n"
        "a = ap.parse_args()\np = pathlib.Path(a.out); p.mkdir(parents=True, exist_ok=True)\n"
        "(p / 'results_quick.json').write_text('{}')\n")
    (exp / "fedgc").mkdir()
    (exp / "fedgc" / "reproduce.py").write_text(
        "import pathlib, sys\nassert sys.argv[1:] == ['--quick'], sys.argv\n"
        "p = pathlib.Path(__file__).resolve().parents[1] / 'results' / 'fedgc'\np.mkdir(parents=True, exist_ok=True)\n"
        "(p / 'results_quick.json').write_text('{}')\n")
    monkeypatch.setattr("fgl_jax.cli.experiments_dir", lambda: exp)
    out = tmp_path / "out"
    for system in ("hifgl", "fedgc"):
        assert main(["reproduce", system, "--quick", "--out", str(out)]) == 0
        assert (out / system / "results_quick.json").exists()
    assert list((exp / "results").iterdir()) == []
    assert json.loads((out / "timings.json").read_text())["total"]["wall_s"] >= 0


def test_committed_configs_are_valid_for_the_cli():
    """Every experiments/configs/<system>/*.yaml loads against its subcommand (no unknown key, types, choices)."""
    subs = _subparsers(build_parser())
    files = sorted((ROOT / "experiments" / "configs").glob("*/*.yaml"))
    assert files
    checked = 0
    for path in files:
        system = path.parent.name
        if system not in subs:
            continue
        head = yaml.safe_load(path.read_text())
        if head.get("system") != system:  # the baselines' RunConfig files in configs/hifgl
            continue
        sysconfig.read_options(path, subs[system], system)
        checked += 1
    assert checked > 0


def _make_index_module():
    import importlib.util
    spec = importlib.util.spec_from_file_location("_make_index", ROOT / "experiments" / "make_index.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_index_reads_both_fedgc_schemas_and_links_sweeps(tmp_path, monkeypatch):
    mi = _make_index_module()
    res = tmp_path / "results"
    (res / "fedgc").mkdir(parents=True)
    monkeypatch.setattr(mi, "RES", res)
    monkeypatch.setattr(mi, "_fedgc_paper", lambda: ({("cora", 0.5): 80.8}, {"cora": {"ib_acc": 80.8, "noib_acc": 79.4}}))
    # older schema: per-run records; the longest run of a cell wins
    runs = [{"id": "full/cora/r0.5/ib/s0", "test_acc": 0.70, "config": {"rounds": 200}},
            {"id": "quick/cora/r0.5/ib/s0", "test_acc": 0.10, "config": {"rounds": 60}}]
    (res / "fedgc" / "results_a.json").write_text(json.dumps({"meta": {}, "runs": runs}))
    (res / "fedgc" / "results_b.json").write_text(json.dumps(
        {"meta": {}, "runs": [{"id": "full/cora/r0.5/ib/s0", "test_acc": 0.75, "config": {"rounds": 500}}]}))
    rows = mi.rows_fedgc()
    t1 = [r for r in rows if r["table"] == "Table 1"]
    assert len(t1) == 1 and t1[0]["ours"] == 0.75 and abs(t1[0]["paper"] - 0.808) < 1e-12 and t1[0]["reason"]
    # newer schema: ready-made rows (percent) take precedence
    (res / "fedgc" / "results.json").write_text(json.dumps({"rows": [
        {"table": "Table 1", "setting": "cora 0.5", "paper": 80.8, "ours": 80.1, "reason": ""}]}))
    rows = mi.rows_fedgc()
    assert len(rows) == 1 and abs(rows[0]["ours"] - 0.801) < 1e-12
    # sweeps written by `fgl-jax sweep --out results/sweeps/<name>` are listed with their plot
    (res / "sweeps" / "s1").mkdir(parents=True)
    (res / "sweeps" / "s1" / "sweep.json").write_text(json.dumps({
        "title": "t", "axes": {"seed": [0], "lr": [0.1]}, "rows": [{}],
        "summary": [{"lr": 0.1, "best_test_mean": 0.5, "best_test_std": 0.0}]}))
    text = "\n".join(mi.sweep_lines())
    assert "sweeps/s1/sweep.png" in text and "lr=0.1: 50.00" in text
