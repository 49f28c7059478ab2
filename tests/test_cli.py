"""The command line: generated from the config classes; clear one-line errors; replayable configs."""
import json
import subprocess
import sys

import numpy as np
import pytest
import yaml

from fgl_jax import registry, schema
from fgl_jax.cli import build_parser, main
from fgl_jax.systems.baseline import RunConfig

TINY = ["--dataset", "csbm", "--split", "keep", "--clients", "3", "--rounds", "4", "--hidden", "8", "--no-progress"]


@pytest.mark.slow
def test_run_writes_the_four_outputs_and_replays(tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["run", *TINY, "--out", str(out)]) == 0
    assert "reported round" in capsys.readouterr().out
    for name in ("config.yaml", "metrics.jsonl", "summary.json"):
        assert (out / name).exists()
    assert any((out / "checkpoints").iterdir())
    assert len((out / "metrics.jsonl").read_text().splitlines()) == 4
    cfg = yaml.safe_load((out / "config.yaml").read_text())
    assert cfg["system"] == "baseline" and cfg["clients"] == 3 and cfg["hidden"] == 8
    summary = json.loads((out / "summary.json").read_text())
    assert summary["system"] == "baseline" and summary["rounds_run"] == 4
    # replaying the resolved config gives the same numbers
    assert main(["run", "--config", str(out / "config.yaml"), "--out", str(tmp_path / "replay"), "--no-progress"]) == 0
    assert json.loads((tmp_path / "replay" / "summary.json").read_text())["best"] == summary["best"]


def test_flags_override_the_file_and_the_file_overrides_defaults(tmp_path, capsys):
    path = tmp_path / "c.yaml"
    schema.dump(schema.make(RunConfig, {"dataset": "csbm", "rounds": 7, "hidden": 16}), "baseline", path)
    assert main(["run", "--config", str(path), "--rounds", "3", "--print-config"]) == 0
    cfg = yaml.safe_load(capsys.readouterr().out)
    assert cfg["rounds"] == 3 and cfg["hidden"] == 16 and cfg["lr"] == RunConfig().lr


@pytest.mark.parametrize("args, message", [
    (["run", "--dataset", "nosuchgraph", "--rounds", "1"], "unknown dataset"),
    (["run", "--algorithm", "fedsgd"], "algorithm must be one of"),
    (["run", "--lr", "0"], "lr must be > 0"),
    (["run", "--clients", "-2"], "clients must be >= 1"),
    (["run", "--rounds", "2.5"], "rounds must be an integer"),
    (["run", "--partition", "spectral"], "partition"),
    (["run", "--algorithm", "fedavg", "--prox-mu", "0.5"], "option of algorithm 'fedprox'"),
    (["run", "--dataset", "csbm", "--split", "keep", "--clients", "5000"], "more than"),
    (["run", "--dataset", "aifb"], "hetero dataset"),
    (["run", "--resume"], "--resume needs --out"),
    (["sweep", "--dataset", "csbm", "--split", "keep", "--seeds", "a,b"], "seeds"),
    (["sweep", "--grid", "hiden=8,16"], "unknown option 'hiden'"),
    (["sweep", "--grid", "lr=0.1,-1"], "lr must be > 0"),
])
def test_bad_input_is_a_clear_one_line_error(args, message, capsys):
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.startswith("fgl-jax: error:") and message in err, err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("text, message", [
    ("dataset: csbm\nlearning_rate: 0.1\n", "unknown key 'learning_rate'"),
    ("hidden: [1, 2]\n", "hidden must be an integer"),
    ("rounds: 2.5\n", "rounds must be an integer"),
    ("- a\n- b\n", "must hold a mapping"),
    ("system: hifgl\n", "is for system 'hifgl'"),
])
def test_bad_config_file_names_the_file_and_key(tmp_path, capsys, text, message):
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    assert main(["run", "--config", str(path)]) == 2
    err = capsys.readouterr().err
    assert message in err and str(path) in err, err


@pytest.mark.slow
def test_every_option_of_every_command_has_help_and_valid_values():
    parser = build_parser()
    commands = dict(next(a for a in parser._actions if a.dest == "command").choices)
    for name in registry.names("system"):
        sweep = next(a for a in build_parser(name)._actions if a.dest == "command").choices["sweep"]
        commands[f"sweep --system {name}"] = sweep
    assert {"run", "demo", "datasets", "reproduce", "sweep", "sweep --system fedgc"} <= set(commands)
    for name, p in commands.items():
        for action in p._actions:
            if action.dest in ("help",):
                continue
            assert action.help and len(action.help.split()) >= 2, (name, action.dest)
            if action.choices is None and action.dest in schema.fields(RunConfig):
                spec = schema.fields(RunConfig)[action.dest]
                if spec.choices:
                    assert "one of:" in action.help, (name, action.dest)


def test_algorithm_choices_and_hparams_come_from_the_registry(capsys):
    assert main(["run", "--algorithm", "fedavgm", "--server-momentum", "0.5", "--print-config"]) == 0
    cfg = yaml.safe_load(capsys.readouterr().out)
    # the nested algorithm block: fedavgm's options only (tests/test_config_block.py)
    assert cfg["algorithm"] == {"name": "fedavgm", "server_lr": 1.0, "server_momentum": 0.5}
    assert set(registry.names("algorithm")) >= {"local", "fedavg", "fedprox", "fedper", "global", "fedavgm"}


def test_datasets_command_lists_every_kind(capsys, tmp_path, monkeypatch):
    monkeypatch.delenv("FGL_JAX_DATA", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("HOME", str(tmp_path))
    assert main(["datasets", "--data-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "csbm" in out and "cora" in out and "MISSING" in out
    for name, kind in (("aifb", "hetero"), ("coraca", "hypergraph"), ("cora", "graph")):
        line = next(l for l in out.splitlines() if l.startswith(name + " "))
        assert kind in line


@pytest.mark.slow
def test_baseline_sweep_member_equals_the_single_run(tmp_path, capsys):
    out = tmp_path / "sw"
    assert main(["sweep", *[a for a in TINY if a != "--no-progress"], "--seeds", "0,1",
                 "--grid", "lr=0.01,0.05", "--grid", "hidden=8,16", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "separate programs" in text
    rows = json.loads((out / "sweep.json").read_text())["rows"]
    assert len(rows) == 8 and (out / "sweep.png").exists() and (out / "config.yaml").exists()
    single = tmp_path / "single"
    assert main(["run", *TINY, "--seed", "1", "--lr", "0.05", "--hidden", "16", "--out", str(single)]) == 0
    best = json.loads((single / "summary.json").read_text())["best"]
    row = next(r for r in rows if r["seed"] == 1 and r["lr"] == 0.05 and r["hidden"] == 16)
    assert row["best_test"] == pytest.approx(best["best_test"], abs=1e-6)
    assert row["best_round"] == best["best_round"]
    # the sweep reports the run's communication totals (the single run's summary.json has them too)
    comm = json.loads((single / "summary.json").read_text())["communication"]
    assert (row["comm_up_bytes"], row["comm_down_bytes"]) == (comm["up_bytes"], comm["down_bytes"])
    assert "| MB up | MB down" in text and "MB up" in (out / "sweep.md").read_text()


def test_sweep_resource_columns_by_hand():
    from fgl_jax.federated.sweep import resource_cells, resource_columns, rounds_run
    per_round = {"comm_up_bytes": np.array([100, 100, 100]), "comm_down_bytes": np.array([50, 50, 50]),
                 "dp_epsilon": np.array([0.5, 0.8, 1.1])}
    assert resource_columns(per_round, 2) == {"comm_up_bytes": 200, "comm_down_bytes": 100, "dp_epsilon": 0.8}
    assert resource_columns({}, 3) == {}
    assert resource_cells({"comm_up_bytes": 2e6, "comm_down_bytes": 1e6, "dp_epsilon": 0.8}) == {
        "MB up": 2.0, "MB down": 1.0, "epsilon": 0.8}
    loss = {"train_loss": np.array([[1.0, 0.9, 0.8], [1.0, np.nan, np.nan]])}
    assert rounds_run(loss, 0, 3) == 3 and rounds_run(loss, 1, 3) == 1


@pytest.mark.slow
def test_nothing_below_the_cli_imports_it():
    code = ("import sys, fgl_jax, fgl_jax.experiment, fgl_jax.registry as r; r.load_kind('system'); "
            "r.load_kind('algorithm'); r.load_kind('dataset'); print('fgl_jax.cli' in sys.modules)")
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip() \
        == "False"


@pytest.mark.slow
def test_only_the_program_s_own_process_freezes_the_collector(tmp_path):
    # `entry` (the fgl-jax process) moves the imported modules' objects out of the GC's view before
    # the run; `main` called from Python (a notebook, these tests) leaves the caller's collector alone
    import gc
    before = gc.get_freeze_count()
    assert main(["run", *TINY, "--out", str(tmp_path / "py")]) == 0
    assert gc.get_freeze_count() == before
    code = ("import gc, sys\nimport fgl_jax.cli as cli\ncli._PROCESS[0] = True\n"
            f"assert cli.main(['run', *{TINY!r}, '--out', {str(tmp_path / 'proc')!r}]) == 0\n"
            "print(gc.get_freeze_count())\n")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    assert int(p.stdout.split()[-1]) > 10_000
