"""FedHGN through the shared interface: build_program, run (checkpoints/resume), run_sweep (state.hp)."""
import jax
import numpy as np
import pytest

from fgl_jax.federated import Program, run
from fgl_jax.federated.sweep import run_sweep, traced_hparams
from fgl_jax.nn.rgcn import build_hetero_blocks
from fgl_jax.partition.hetero import random_edge_type_split
from fgl_jax.systems.fedhgn import FedHGNConfig, build_program, fedhgn, make_fed_data
from tests.fedhgn_toy import toy_hetero

ROUNDS = 3


def _program(**cfg) -> Program:
    g = toy_hetero(0, n=(24, 15, 12), edges_per_type=30)
    blocks, _ = build_hetero_blocks(list(random_edge_type_split(g, 3, seed=3).clients))
    base = dict(method="fedhgn", num_bases=3, hidden=8, local_steps=1)
    return Program(fedhgn(FedHGNConfig(**{**base, **cfg})), make_fed_data(blocks), ROUNDS, {})


def test_hyperparameters_are_traced_state():
    assert traced_hparams(_program()) == ["align_lambda", "lr", "prox_mu"]


def test_sweep_member_equals_single_run():
    """run_sweep over seeds x state.hp (λ and lr together) equals a separate run whose config has
    those values (the baselines' μ is traced the same way)."""
    seeds, lams, lrs = [3, 7], [0.0, 5.0], [0.2, 0.05]
    base = _program()
    res = run_sweep(base.algorithm, base.data, seeds, ROUNDS, {"align_lambda": lams, "lr": lrs})
    p = _program(align_lambda=lams[1], lr=lrs[1])
    single = run(p.algorithm, p.data, jax.random.key(seeds[1]), ROUNDS)
    np.testing.assert_allclose(res.history["train_loss"][1], single.history["train_loss"], rtol=2e-5, atol=1e-6)
    np.testing.assert_allclose(res.history["val_acc"][1], single.history["val_acc"], atol=1e-6)
    assert res.best["best_val"][1] == pytest.approx(single.best["best_val"])
    # the members really differ (the test can fail)
    assert not np.allclose(res.history["train_loss"][0], res.history["train_loss"][1])


def test_resume_equals_uninterrupted_run_with_partial_participation(tmp_path):
    """C = 1/3 of 3 clients (one sampled per round) through `run`: a run interrupted half-way and
    resumed from its orbax checkpoint equals the uninterrupted run; over the rounds several
    clients get sampled and the server's store holds each one's last coefficients."""
    p = _program(client_fraction=0.34)
    key, n = jax.random.key(11), 2 * ROUNDS
    full = run(p.algorithm, p.data, key, n, chunk=1)
    run(p.algorithm, p.data, key, ROUNDS, chunk=1, out_dir=tmp_path)                 # "interrupted"
    resumed = run(p.algorithm, p.data, key, n, chunk=1, out_dir=tmp_path, resume=True)
    np.testing.assert_allclose(resumed.history["train_loss"], full.history["train_loss"], rtol=1e-5, atol=1e-6)
    for leaf_a, leaf_b in zip(jax.tree.leaves(resumed.state), jax.tree.leaves(full.state)):
        np.testing.assert_allclose(np.asarray(leaf_a), np.asarray(leaf_b), rtol=1e-5, atol=1e-6)
    assert resumed.best == full.best
    assert (tmp_path / "metrics.jsonl").read_text().count("\n") == n
    assert np.all(np.isfinite(full.history["train_loss"]))
    seen = np.asarray(full.state.seen)
    assert seen.sum() >= 2
    for k in np.flatnonzero(seen):
        np.testing.assert_allclose(np.asarray(full.state.beta_store[k]), np.asarray(full.state.coeffs["beta"][k]))


def test_build_program_bad_options():
    with pytest.raises(ValueError, match="unknown key"):
        build_program({"datset": "aifb"})
    with pytest.raises(ValueError, match="'clients'"):
        build_program({"clients": 0})
    with pytest.raises(ValueError, match="'split'"):
        build_program({"split": "random"})


def test_build_program_on_aifb(data_dir):
    prog = build_program({"dataset": "aifb", "split": "RET", "clients": 3, "max_rounds": 2}, data_dir=data_dir)
    assert prog.num_rounds == 2 and prog.describe["clients"] == 3 and prog.describe["split"] == "RET"
    assert traced_hparams(prog) == ["align_lambda", "lr", "prox_mu"]
    state = jax.eval_shape(prog.algorithm.init, jax.random.key(0), prog.data)
    assert state.coeffs["beta"].shape[0] == 3 and state.beta_store.shape[-1] == 20
