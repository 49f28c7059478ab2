"""The baseline config's nested algorithm block (issue 46 item 4): config.yaml lists only the chosen
algorithm's options, flags keep their names, and a flat config.yaml written before the block (checked
in from main at cb4b811: tests/data/baseline_flat_config_v0.yaml) still loads and still resumes."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
import yaml

from fgl_jax import experiment, registry, rundir, schema
from fgl_jax.cli import build_parser, main
from fgl_jax.systems.baseline import RunConfig

OLD = Path(__file__).parent / "data" / "baseline_flat_config_v0.yaml"


def _hparam_names() -> set:
    return {n for e in registry.entries("algorithm") if e.spec.hparams for n in schema.fields(e.spec.hparams)}


def test_fedavg_config_yaml_lists_only_fedavg_options(tmp_path):
    text = schema.dump(experiment.default_config("baseline", algorithm="fedavg"), "baseline")
    values = yaml.safe_load(text)
    assert values["algorithm"] == {"name": "fedavg"}
    assert not set(values) & _hparam_names()          # no other algorithm's option anywhere
    assert len(_hparam_names()) > 100                 # (there are that many to leave out)


def test_block_holds_the_algorithm_and_server_optimiser_options():
    values = yaml.safe_load(schema.dump(experiment.default_config("baseline", algorithm="fedprox", prox_mu=0.5,
                                                                  server_opt="adam", adam_beta1=0.8), "baseline"))
    assert values["algorithm"] == {"name": "fedprox", "prox_mu": 0.5, "adam_server_lr": 0.01, "adam_beta1": 0.8,
                                   "adam_beta2": 0.99, "adam_tau": 0.001}
    assert values["server_opt"] == "adam"


@pytest.mark.parametrize("changes", [dict(algorithm="fedprox", prox_mu=0.25), dict(algorithm="moon", moon_mu=2.0,
                                     moon_nodes="all"), dict(algorithm="fedavg", server_opt="momentum",
                                     server_momentum=0.5), dict(algorithm="local")])
def test_dump_then_config_replays_the_same_config(tmp_path, changes):
    cfg = experiment.default_config("baseline", rounds=7, **changes)
    path = tmp_path / "c.yaml"
    schema.dump(cfg, "baseline", path)
    assert schema.resolve(RunConfig, path, system="baseline") == cfg


def test_a_flat_config_written_before_the_block_loads():
    cfg = schema.resolve(RunConfig, OLD, system="baseline")
    raw = yaml.safe_load(OLD.read_text())
    assert raw["algorithm"] == "fedprox" and raw["prox_mu"] == 0.001 and "moon_mu" in raw  # really the old form
    assert cfg == experiment.default_config("baseline", algorithm="fedprox", prox_mu=0.001, rounds=3, clients=3,
                                            local_steps=1)  # the old file's explicit value, not fedprox's default 3
    new = yaml.safe_load(schema.dump(cfg, "baseline"))
    assert new["algorithm"] == {"name": "fedprox", "prox_mu": 0.001}
    # the normal form (resume's comparison and the manifests' digest) is the same for both texts
    old_values = schema.read_yaml_text(OLD.read_text(), "old")
    assert schema.normal_form(old_values) == schema.normal_form(new) == new
    assert rundir.config_digest(old_values) == rundir.config_digest(new)


@pytest.mark.parametrize("text, words", [
    ("algorithm: {name: fedprox, moon_mu: 1}\n", ["algorithm.moon_mu", "'moon'", "not of 'fedprox'", "prox_mu"]),
    ("algorithm: {prox_mu: 1}\n", ["algorithm block needs a name"]),
    ("algorithm: {name: fedprx}\n", ["algorithm.name must be one of", "'fedprx'"]),
    ("algorithm: {name: fedprox}\nprox_mu: 0.1\n", ["prox_mu belongs inside the algorithm block"]),
    ("algorithm: {name: fedprox, prox_mu: -1}\n", ["prox_mu must be >= 0", "-1"]),
    ("algorithm: {name: fedavg, server_lr: 1}\n", ["algorithm.server_lr", "'fedavgm'"]),
])
def test_a_bad_block_is_one_line_naming_file_and_key(tmp_path, text, words):
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(ValueError) as e:
        schema.resolve(RunConfig, path, system="baseline")
    msg = str(e.value)
    assert "\n" not in msg and str(path) in msg, msg
    for w in words:
        assert w in msg, (w, msg)


def test_flags_keep_their_names_and_override_the_block(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("algorithm: {name: fedprox, prox_mu: 0.2}\nrounds: 4\n")
    args = build_parser().parse_args(["run", "--config", str(path), "--prox-mu", "0.3"])
    cfg = schema.resolve(RunConfig, path, schema.given_flags(args, RunConfig), system="baseline")
    assert (cfg.algorithm, cfg.prox_mu, cfg.rounds) == ("fedprox", 0.3, 4)
    # --help groups each algorithm's flags under its own title
    text = _run_help()
    assert "fedprox options (--algorithm fedprox;" in text and "--prox-mu" in text
    assert text.index("fedprox options") < text.index("\n  --prox-mu") < text.index("fedpub options")


def _run_help() -> str:
    parser = build_parser(command="run")
    sub = next(a for a in parser._actions if a.dest == "command")  # the one subcommand's own help
    return sub.choices["run"].format_help()


# ---- a run started before the block resumes --------------------------------------------------------

SMALL = dict(dataset="csbm", split="keep", clients=3, rounds=3, hidden=8, chunk=3, algorithm="fedprox",
             prox_mu=0.001)


def _as_old_run(d: Path, cfg) -> None:
    """Rewrite the run directory as fgl_jax before the block left it: config.yaml with every
    algorithm's options flat, and each checkpoint manifest's config and digest of that text."""
    flat = {"system": "baseline", **schema.to_dict(cfg)}
    text = yaml.safe_dump(flat, sort_keys=False)
    (d / "config.yaml").write_text(text)
    kept = {k: v for k, v in flat.items() if k not in rundir.RESUMABLE_CHANGES}
    digest = hashlib.sha256(json.dumps(kept, sort_keys=True, default=str).encode()).hexdigest()
    manifests = list((d / "checkpoints").glob("*.sha256"))
    assert manifests
    for m in manifests:
        man = json.loads(m.read_text())
        man.update(config=text, config_sha256=digest)
        m.write_text(json.dumps(man))


def _cli(*args) -> int:
    return main([str(a) for a in args])


def _cli_small(prox_mu: str = "0.001") -> list:
    return ["--dataset", "csbm", "--split", "keep", "--clients", "3", "--hidden", "8", "--chunk", "3", "--algorithm",
            "fedprox", "--prox-mu", prox_mu, "--no-progress", "--checkpoint-every", "chunk"]


@pytest.mark.slow
def test_a_run_started_before_the_block_resumes(tmp_path, capsys):
    d = tmp_path / "run"
    cfg = experiment.default_config("baseline", **SMALL)
    experiment.run_config(cfg, out=str(d), checkpoint_every="chunk")
    _as_old_run(d, cfg)
    assert "prox_mu: 0.001" in (d / "config.yaml").read_text() and "moon_mu" in (d / "config.yaml").read_text()
    assert _cli("run", *_cli_small(), "--rounds", "6", "--out", d, "--resume", "--resume-with-changes", "rounds") == 0
    rows = [json.loads(x) for x in (d / "metrics.jsonl").read_text().splitlines()]
    assert [r["round"] for r in rows] == [1, 2, 3, 4, 5, 6]
    assert yaml.safe_load((d / "config.yaml").read_text())["algorithm"] == {"name": "fedprox", "prox_mu": 0.001}


def test_an_old_run_with_other_options_is_still_refused(tmp_path, capsys):
    d = tmp_path / "run"
    cfg = experiment.default_config("baseline", **SMALL)
    experiment.run_config(cfg, out=str(d), checkpoint_every="chunk")
    _as_old_run(d, cfg)
    capsys.readouterr()
    assert _cli("run", *_cli_small("0.002"), "--rounds", "6", "--out", d, "--resume",
                "--resume-with-changes", "rounds") == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "0.001" in err[0] and "0.002" in err[0], err
