"""FedGC's condensation loop through the shared interface: build_program -> run / resume / run_sweep."""
import dataclasses

import jax
import numpy as np
import pytest

from fgl_jax.condense import CondenseConfig, condense_scan
from fgl_jax.condense.evaluate import EvalConfig
from fgl_jax.data.synthetic import csbm
from fgl_jax.federated import run, run_sweep
from fgl_jax.systems.fedgc import build_program

SMALL = dict(condense=CondenseConfig(hidden=16, pge_hidden=8, lr_feat=1e-2, adj_period=4, adj_steps=1),
             eval=EvalConfig(hidden=16, lr=0.05, iters=20, decay_at=10, eval_every=10, finetune_steps=4,
                             ft_eval_every=2))


@pytest.fixture(scope="module")
def program():
    g = csbm(num_nodes=150, num_classes=3, num_features=8, avg_degree=4.0, homophily=0.8, feature_signal=2.0, seed=3)
    opts = {"clients": 3, "rate": 0.2, "rounds": 6, "eval_every": 3, "no_ib": True}
    return build_program(opts, graph=g, config=SMALL)


def test_program_equals_condense_scan(program):
    res = run(program.algorithm, program.data, jax.random.key(0), program.num_rounds)
    h = res.history
    assert set(("train_loss", "val_acc", "test_acc")) <= set(h)
    assert h["evaluated"].tolist() == [0, 0, 1, 0, 0, 1]
    # metrics between evaluations repeat the last evaluation
    assert h["val_acc"][0] == 0 and h["val_acc"][3] == h["val_acc"][2]
    assert res.best["best_val"] == pytest.approx(h["val_acc"].max())
    # the same rounds through the plain condensation scan give the same X' and losses
    init_key, run_key = jax.random.split(jax.random.key(0))
    st0 = jax.jit(program.algorithm.init)(init_key, program.data)
    cond, losses = condense_scan(_condenser(program), st0.cond, program.data.client, run_key, 6)
    np.testing.assert_allclose(np.asarray(res.state.cond.x_syn), np.asarray(cond.x_syn), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(h["train_loss"], np.asarray(losses), rtol=1e-5)


def _condenser(program):
    # the condenser is closed over by the algorithm; rebuild an identical one
    from fgl_jax.condense import make_condenser
    cfg = dataclasses.replace(CondenseConfig(), **dataclasses.asdict(SMALL["condense"]))
    d = program.data.client.inputs.shape[-1]
    return make_condenser(cfg, d, program.data.client.counts.shape[1])


@pytest.mark.slow  # three compiled runs (~60 s CPU); run with -m slow
def test_checkpoint_resume_gives_same_result(program, tmp_path):
    """Interrupted after 3 rounds (orbax checkpoint) and resumed = uninterrupted (6 rounds)."""
    full = run(program.algorithm, program.data, jax.random.key(1), 6, chunk=3)
    run(program.algorithm, program.data, jax.random.key(1), 3, out_dir=tmp_path, chunk=3)
    resumed = run(program.algorithm, program.data, jax.random.key(1), 6, out_dir=tmp_path, chunk=3, resume=True)
    np.testing.assert_allclose(np.asarray(resumed.state.cond.x_syn), np.asarray(full.state.cond.x_syn), rtol=1e-6)
    np.testing.assert_allclose(resumed.history["test_acc"][-3:], full.history["test_acc"][-3:])
    assert (tmp_path / "metrics.jsonl").exists()


@pytest.mark.slow  # two compiled programs; run with -m slow
def test_lr_sweep_member_equals_single_run(program):
    sw = run_sweep(program.algorithm, program.data, [0, 0], 3, hparams={"lr_feat": [1e-2, 5e-2]})
    single = run(program.algorithm, program.data, jax.random.key(0), 3)
    np.testing.assert_allclose(np.asarray(sw.history["train_loss"])[0], single.history["train_loss"], rtol=1e-5)
    assert not np.allclose(np.asarray(sw.history["train_loss"])[1][1:], single.history["train_loss"][1:])


def test_bad_program_options():
    g = csbm(num_nodes=60, num_classes=2, num_features=4, seed=0)
    with pytest.raises(ValueError, match="unknown key"):
        build_program({"bogus": 1}, graph=g)
    with pytest.raises(ValueError, match="rate"):
        build_program({"rate": 0.0}, graph=g)
    with pytest.raises(ValueError, match="gamma"):
        build_program({"gamma": -1.0}, graph=g)


def test_pge_init_bias_option_reaches_the_condenser():
    """The CLI/config option `pge_init_bias` sets Φ's last bias in the program's initial state."""
    g = csbm(num_nodes=120, num_classes=3, num_features=8, avg_degree=4.0, homophily=0.8, feature_signal=2.0, seed=4)
    opts = {"clients": 2, "rate": 0.2, "rounds": 2, "eval_every": 2, "no_ib": True, "st_rounds": 2}
    for bias in (None, -4.6):
        prog = build_program({**opts, "pge_init_bias": bias}, graph=g)
        b = np.asarray(jax.jit(prog.algorithm.init)(jax.random.key(0), prog.data).cond.pge["b2"])
        if bias is None:
            assert abs(float(b[0])) <= 1 / np.sqrt(128)  # torch default U(±1/sqrt(h))
        else:
            np.testing.assert_array_equal(b, np.float32(bias))


def test_ib_lr_and_epochs_options_reach_the_encoder():
    """`ib_lr` / `ib_epochs` set the IB encoder's Adam lr and step count: the defaults equal the
    code's values given explicitly (bit-identical Z), and another lr gives another Z."""
    g = csbm(num_nodes=120, num_classes=3, num_features=8, avg_degree=4.0, homophily=0.8, feature_signal=2.0, seed=4)
    opts = {"clients": 2, "rate": 0.2, "rounds": 2, "eval_every": 2, "st_rounds": 2, "ib_dim": 4, "ib_hidden": 4}
    z = lambda **kw: np.asarray(build_program({**opts, **kw}, graph=g).data.eval.features)
    default = z()
    np.testing.assert_array_equal(default, z(ib_lr=2e-3, ib_epochs=100))
    assert not np.allclose(default, z(ib_lr=5e-2))
    assert not np.allclose(default, z(ib_epochs=3))
    with pytest.raises(ValueError, match="lr"):
        z(ib_lr=0.0)


def test_cli_defaults_equal_program_defaults():
    """`fgl-jax fedgc` and build_program both turn options into a config with config_from_options, so a
    run must not depend on which entry point read the options: every PROGRAM_DEFAULTS key is a CLI option
    with the same default."""
    import argparse

    from fgl_jax.systems.fedgc import PROGRAM_DEFAULTS, register_cli
    parser = argparse.ArgumentParser()
    register_cli(parser.add_subparsers())
    args = vars(parser.parse_args(["fedgc"]))
    assert set(PROGRAM_DEFAULTS) <= set(args), sorted(set(PROGRAM_DEFAULTS) - set(args))
    assert {k: args[k] for k in PROGRAM_DEFAULTS} == PROGRAM_DEFAULTS
