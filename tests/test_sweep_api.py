"""`fgl_jax.sweep` takes the product of seeds and values, as `fgl-jax sweep --seeds --grid` does
(issue 50 item 4); `paired=True` (and the engine's `run_sweep`) takes explicit member lists."""
import itertools

import jax
import numpy as np
import pytest

import fgl_jax as fj
from fgl_jax.batch import build_client_batch
from fgl_jax.federated import FedConfig, OptimConfig, baseline, make_fed_data, run
from fgl_jax.nn import make_model
from tests.helpers import toy_graph

ROUNDS = 3


def _setup():
    g = toy_graph(n=40, seed=5)
    data = make_fed_data(build_client_batch(g, np.arange(g.num_nodes) % 2, 2))
    model = make_model("gcn", g.num_features, g.num_classes, hidden=8)
    return model, data


@pytest.mark.slow
def test_sweep_is_the_product_of_seeds_and_values():
    model, data = _setup()
    seeds, lrs = [1, 2], [0.01, 0.1]
    sw = fj.sweep(baseline(model, FedConfig()), data, seeds=seeds, num_rounds=ROUNDS, hparams={"lr": lrs})
    expected = list(itertools.product(seeds, lrs))
    assert [(m["seed"], m["lr"]) for m in sw.members] == [(s, pytest.approx(lr)) for s, lr in expected]
    assert sw.history["train_loss"].shape[0] == len(expected)
    # each member is the single run with that seed and that learning rate (the independent reference)
    for i, (seed, lr) in enumerate(expected):
        single = run(baseline(model, FedConfig(optim=OptimConfig(lr=lr))), data, jax.random.key(seed), ROUNDS)
        np.testing.assert_allclose(sw.history["train_loss"][i], single.history["train_loss"], rtol=1e-5)


def test_paired_takes_explicit_members_and_checks_lengths():
    model, data = _setup()
    sw = fj.sweep(baseline(model, FedConfig()), data, seeds=[1, 2], num_rounds=ROUNDS,
                  hparams={"lr": [0.01, 0.1]}, paired=True)
    assert [(m["seed"], round(m["lr"], 6)) for m in sw.members] == [(1, 0.01), (2, 0.1)]
    with pytest.raises(ValueError, match=r"paired=True.*hparams\['lr'\] has 3 values, expected 2"):
        fj.sweep(baseline(model, FedConfig()), data, seeds=[1, 2], num_rounds=ROUNDS,
                 hparams={"lr": [0.01, 0.1, 0.2]}, paired=True)


# ---- Python errors name Python arguments, the CLI's name its flags (issue 50 item 4) ----------------

def test_run_dir_errors_name_python_keywords_in_python(tmp_path):
    from fgl_jax import rundir
    (tmp_path / "metrics.jsonl").write_text('{"round": 1}\n')
    with pytest.raises(ValueError) as e:
        rundir.prepare(tmp_path, resume=False, overwrite=False)
    msg = str(e.value)
    assert "resume=True" in msg and "overwrite=True" in msg and f"out={str(tmp_path)!r}" in msg, msg
    assert "--" not in msg, msg
    with pytest.raises(ValueError, match=r"^resume=True and overwrite=True exclude each other"):
        rundir.prepare(tmp_path, resume=True, overwrite=True)


def test_run_dir_errors_name_flags_on_the_command_line(tmp_path, capsys):
    from fgl_jax import cli, rundir
    (tmp_path / "metrics.jsonl").write_text('{"round": 1}\n')
    assert cli.main(["run", "--out", str(tmp_path), "--rounds", "1", "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--resume" in err and "--overwrite" in err and "overwrite=True" not in err
    assert rundir.arg("overwrite") == "overwrite=True"  # the CLI's spelling ends with its call
