"""The command line and YAML configs: clear errors, replayable resolved configs."""
import json

import pytest
import yaml

from fgl_jax.cli import main
from fgl_jax.config import RunConfig, load_config, save_config


def test_demo_like_run_writes_outputs_and_replays(tmp_path, capsys):
    out = tmp_path / "run"
    args = ["run", "--dataset", "csbm", "--split", "keep", "--clients", "3", "--rounds", "4", "--hidden", "8",
            "--out", str(out), "--no-progress"]
    assert main(args) == 0
    first = capsys.readouterr().out
    assert "best-val round" in first
    for name in ("config.yaml", "metrics.jsonl", "summary.json"):
        assert (out / name).exists()
    assert len((out / "metrics.jsonl").read_text().splitlines()) == 4
    cfg = yaml.safe_load((out / "config.yaml").read_text())
    assert cfg["clients"] == 3 and cfg["hidden"] == 8
    # replaying the resolved config gives the same numbers
    assert main(["run", "--config", str(out / "config.yaml"), "--out", str(tmp_path / "replay"), "--no-progress"]) == 0
    a = json.loads((out / "summary.json").read_text())["best"]
    b = json.loads((tmp_path / "replay" / "summary.json").read_text())["best"]
    assert a == b


def test_config_file_with_overrides(tmp_path):
    path = tmp_path / "c.yaml"
    save_config(RunConfig(dataset="csbm", rounds=7), path)
    cfg = load_config(path, rounds=3)
    assert cfg.rounds == 3 and cfg.dataset == "csbm"


@pytest.mark.parametrize("args, message", [
    (["run", "--dataset", "nosuchgraph"], "unknown dataset"),
    (["run", "--algorithm", "fedsgd"], "algorithm"),
    (["run", "--lr", "0"], "lr"),
    (["run", "--clients", "-2"], "clients"),
    (["run", "--partition", "metis"], "partition"),
    (["run", "--dataset", "csbm", "--split", "keep", "--clients", "5000"], "more than"),
    (["sweep", "--dataset", "csbm", "--split", "keep", "--seeds", "a,b"], "seeds"),
])
def test_bad_input_is_a_clear_one_line_error(args, message, capsys):
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.startswith("fgl-jax: error:") and message in err
    assert "Traceback" not in err


def test_unknown_config_field(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("dataset: csbm\nlearning_rate: 0.1\n")
    assert main(["run", "--config", str(path)]) == 2


def test_datasets_command_lists_and_reports(capsys, tmp_path, monkeypatch):
    monkeypatch.delenv("FGL_JAX_DATA", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("HOME", str(tmp_path))
    assert main(["datasets", "--data-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "csbm" in out and "cora" in out and "MISSING" in out
