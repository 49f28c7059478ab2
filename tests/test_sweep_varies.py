"""A sweep axis that changes nothing is reported, and FedProx's default local steps make its
documented `--grid prox_mu=...` sweep vary (issue 50 item 5)."""
import json

import pytest

from fgl_jax import experiment
from fgl_jax.cli import main

TINY = ["--dataset", "csbm", "--split", "keep", "--clients", "2", "--rounds", "2", "--hidden", "8"]


def test_fedprox_defaults_to_openfgl_local_epochs_others_to_one():
    # OpenFGL's config.py: --num_epochs 3 (full-batch local epochs = local steps)
    assert experiment.default_config("baseline", algorithm="fedprox").local_steps == 3
    assert experiment.default_config("baseline", algorithm="fedavg").local_steps == 1
    assert experiment.default_config("baseline", algorithm="fedprox", local_steps=1).local_steps == 1  # explicit wins


def _sweep(tmp_path, capsys, *extra):
    out = tmp_path / "s"
    assert main(["sweep", *TINY, "--algorithm", "fedprox", *extra, "--seeds", "0",
                 "--grid", "prox_mu=0.001,1.0", "--out", str(out)]) == 0
    rows = json.loads((out / "sweep.json").read_text())["rows"]
    return rows, capsys.readouterr().err


@pytest.mark.slow
def test_an_axis_that_changes_nothing_is_one_warning(tmp_path, capsys):
    # one local step: each client starts at the global model, where the proximal gradient is zero
    rows, err = _sweep(tmp_path, capsys, "--local-steps", "1")
    assert rows[0]["best_test"] == rows[1]["best_test"] and rows[0]["final_train_loss"] == rows[1]["final_train_loss"]
    warned = [line for line in err.splitlines() if "prox_mu" in line and "changes no member's result" in line]
    assert len(warned) == 1, err


@pytest.mark.slow
def test_the_documented_fedprox_sweep_varies_by_default(tmp_path, capsys):
    rows, err = _sweep(tmp_path, capsys)
    assert rows[0]["final_train_loss"] != pytest.approx(rows[1]["final_train_loss"], rel=1e-9, abs=0)
    assert "changes no member's result" not in err
