"""FedHGN through the shared interface: the registered build, run_config (the four outputs,
resume), run_sweep (state.hp), the schema (defaults = the paper, one-line errors) and the YAML cells."""
import json
from pathlib import Path

import jax
import numpy as np
import pytest

from fgl_jax import experiment, registry, schema
from fgl_jax.federated import Program, run
from fgl_jax.federated.sweep import run_sweep, traced_hparams
from fgl_jax.partition.hetero import random_edge_type_split
from fgl_jax.systems.fedhgn import FedHGNConfig, build, fedhgn, make_fed_data
from fgl_jax.systems.fedhgn.rgcn import build_hetero_blocks
from tests.fedhgn_toy import toy_hetero

ROUNDS = 3
CONFIGS = Path(__file__).resolve().parents[1] / "experiments" / "configs" / "fedhgn"


def _program(**cfg) -> Program:
    g = toy_hetero(0, n=(24, 15, 12), edges_per_type=30)
    blocks, _ = build_hetero_blocks(list(random_edge_type_split(g, 3, seed=3).clients))
    base = dict(method="fedhgn", num_bases=3, hidden=8, local_steps=1)
    return Program(fedhgn(FedHGNConfig(**{**base, **cfg})), make_fed_data(blocks), ROUNDS, {})


# ----------------------------------------------------------------------------------- schema
def test_defaults_are_the_papers_headline_setting():
    """Spec fedhgn.md §3.3 / paper Appendix C: AIFB, d = 64, B = 20, lambda = 0.5, E = 3 SGD steps at
    lr 0.1, C = 1, patience 10, max 1000 rounds (Local/Central: 1 step per epoch, max 6000 epochs),
    seeds from 1000; Table 3's first cell is RE with K = 3."""
    c = FedHGNConfig()
    assert (c.dataset, c.split, c.clients, c.method) == ("aifb", "RE", 3, "fedhgn")
    assert (c.hidden, c.num_bases, c.align_lambda, c.lr, c.client_fraction) == (64, 20, 0.5, 0.1, 1.0)
    assert (c.steps, c.max_rounds, c.patience, c.seed) == (3, 1000, 10, 1000)
    for m in ("local", "central"):
        assert (FedHGNConfig(method=m).steps, FedHGNConfig(method=m).max_rounds) == (1, 6000)
    assert FedHGNConfig(method="local", local_steps=2, rounds=7).steps == 2
    assert FedHGNConfig(method="local", rounds=7).max_rounds == 7
    assert FedHGNConfig(method="central").strategy == "central"
    assert set(FedHGNConfig().averaged_keys()) == {"b1", "b2", "W_out", "b_out", "V"}
    assert schema.traced_names(FedHGNConfig) == ["align_lambda", "lr", "prox_mu"]


@pytest.mark.parametrize("values, field", [({"method": "fedsgd"}, "method"), ({"client_fraction": 0.0}, "client_fraction"),
                                           ({"round1_align": "ones"}, "round1_align"), ({"clients": 0}, "clients"),
                                           ({"split": "random"}, "split"), ({"lr": 0}, "lr"),
                                           ({"num_bases": 0}, "num_bases"), ({"local_steps": 0}, "local_steps")])
def test_bad_value_is_a_one_line_error_naming_the_field(values, field):
    for make in (lambda: schema.make(FedHGNConfig, values), lambda: FedHGNConfig(**values)):
        with pytest.raises(ValueError) as e:
            make()
        msg = str(e.value)
        assert "\n" not in msg and f"{field} must be" in msg


def test_unknown_key_is_refused():
    with pytest.raises(ValueError, match="unknown key 'bases'.*num_bases"):
        schema.make(FedHGNConfig, {"bases": 20})


def test_registered_with_its_config():
    e = registry.entry("system", "fedhgn")
    assert e.obj is build and e.info["config"] is FedHGNConfig
    assert experiment.config_class("fedhgn") is FedHGNConfig


def test_yaml_cells_resolve_and_match_the_paper():
    """Every file of experiments/configs/fedhgn is a valid config (no unknown keys) that equals
    its paper cell; a few cells checked against the paper's settings by hand."""
    from experiments.fedhgn.paper import config_cells
    files = sorted(CONFIGS.glob("*.yaml"))
    by_name = {name: cfg for name, _, cfg in config_cells()}
    assert {f.stem for f in files} == set(by_name)
    for f in files:
        cfg = schema.resolve(FedHGNConfig, f, system="fedhgn")
        assert cfg == by_name[f.stem], f.name
    c = schema.resolve(FedHGNConfig, CONFIGS / "table3_mutag_RET_k10_fedprox.yaml")
    assert (c.dataset, c.split, c.clients, c.method, c.steps, c.max_rounds, c.prox_mu) == \
        ("mutag", "RET", 10, "fedprox", 3, 1000, 1.0)
    c = schema.resolve(FedHGNConfig, CONFIGS / "table3_aifb_RE_k5_local.yaml")
    assert (c.method, c.steps, c.max_rounds, c.patience, c.seed) == ("local", 1, 6000, 10, 1000)
    c = schema.resolve(FedHGNConfig, CONFIGS / "table4_mutag_RE_k10_abl_BC.yaml")
    assert (c.dataset, c.split, c.clients, c.method, c.num_bases) == ("mutag", "RE", 10, "abl_BC", 20)
    c = schema.resolve(FedHGNConfig, CONFIGS / "table3_aifb_central.yaml")
    assert (c.method, c.strategy, c.steps, c.max_rounds) == ("central", "central", 1, 6000)
    c = schema.resolve(FedHGNConfig, CONFIGS / "fig4_aifb_RET_k3_fedhgn.yaml", flags={"align_lambda": "5"})
    assert (c.split, c.clients, c.align_lambda, c.num_bases, c.lr) == ("RET", 3, 5.0, 20, 0.1)


# ----------------------------------------------------------------------------------- engine
@pytest.mark.slow
def test_sweep_member_equals_single_run():
    """run_sweep over seeds x state.hp (λ and lr together) equals a separate run whose config has
    those values (the baselines' μ is traced the same way)."""
    seeds, lams, lrs = [3, 7], [0.0, 5.0], [0.2, 0.05]
    base = _program()
    assert traced_hparams(base) == ["align_lambda", "lr", "prox_mu"]
    res = run_sweep(base.algorithm, base.data, seeds, ROUNDS, {"align_lambda": lams, "lr": lrs})
    p = _program(align_lambda=lams[1], lr=lrs[1])
    single = run(p.algorithm, p.data, jax.random.key(seeds[1]), ROUNDS)
    np.testing.assert_allclose(res.history["train_loss"][1], single.history["train_loss"], rtol=2e-5, atol=1e-6)
    np.testing.assert_allclose(res.history["val_acc"][1], single.history["val_acc"], atol=1e-6)
    assert res.best["best_val"][1] == pytest.approx(single.best["best_val"])
    # the members really differ (the test can fail)
    assert not np.allclose(res.history["train_loss"][0], res.history["train_loss"][1])


@pytest.mark.slow
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


@pytest.mark.slow
def test_build_on_aifb(data_dir):
    prog = build(FedHGNConfig(dataset="aifb", split="RET", clients=3, rounds=2, data_dir=str(data_dir)))
    assert prog.num_rounds == 2 and prog.describe["clients"] == 3 and prog.describe["split"] == "RET"
    assert traced_hparams(prog) == ["align_lambda", "lr", "prox_mu"]
    state = jax.eval_shape(prog.algorithm.init, jax.random.key(0), prog.data)
    assert state.coeffs["beta"].shape[0] == 3 and state.beta_store.shape[-1] == 20
    central = build(FedHGNConfig(method="central", rounds=2, data_dir=str(data_dir)))
    assert central.describe["clients"] == 1 and central.describe["local_steps"] == 1


@pytest.mark.slow
def test_run_config_writes_the_four_outputs_and_resumes(tmp_path, data_dir):
    """run_config(cfg, out): config.yaml (replayable), metrics.jsonl, summary.json, checkpoints/;
    a run interrupted after 4 rounds and resumed equals the uninterrupted 8-round run."""
    small = dict(data_dir=str(data_dir), hidden=8, num_bases=2, patience=100)
    cfg = FedHGNConfig(rounds=8, **small)
    full = experiment.run_config(cfg, out=str(tmp_path / "full"))
    out = tmp_path / "full"
    assert {p.name for p in out.iterdir()} >= {"config.yaml", "metrics.jsonl", "summary.json", "checkpoints"}
    assert schema.resolve(FedHGNConfig, out / "config.yaml", system="fedhgn") == cfg
    assert len((out / "metrics.jsonl").read_text().splitlines()) == 8
    summary = json.loads((out / "summary.json").read_text())
    assert summary["system"] == "fedhgn" and summary["best"]["best_test"] == pytest.approx(full.best["best_test"])
    experiment.run_config(FedHGNConfig(rounds=4, **small), out=str(tmp_path / "part"))      # "interrupted"
    resumed = experiment.run_config(cfg, out=str(tmp_path / "part"), resume=True, resume_with_changes=("rounds",))
    np.testing.assert_allclose(resumed.history["train_loss"], full.history["train_loss"], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(resumed.history["val_acc"], full.history["val_acc"])
    assert resumed.best == full.best


@pytest.mark.parametrize("method", ["fedhgn", "fedavg"])
def test_message_bytes_equal_a_hand_count(method):
    """Per sampled client and round: up = theta_c (b1, b2 [D], W_out [D, C], b_out [C]) + the bases
    V [B, D, D] and its beta [R, B] (FedHGN) or the full W [R, D, D] (FedAvg); down = the same
    averaged weights + (FedHGN) the other clients' beta, (K - 1) x [R, B]; float32."""
    from fgl_jax.federated.communication import message_bytes, per_round_columns
    g = toy_hetero(0, n=(24, 15, 12), edges_per_type=30)
    blocks, _ = build_hetero_blocks(list(random_edge_type_split(g, 3, seed=3).clients))
    cfg = FedHGNConfig(method=method, num_bases=3, hidden=8, local_steps=1, client_fraction=2 / 3)
    alg, data = fedhgn(cfg), make_fed_data(blocks)
    K, D, C, B = 3, 8, g.num_classes, 3
    R = jax.eval_shape(alg.init, jax.random.key(0), data).beta_store.shape[1]
    theta_c = D + D + D * C + C
    if method == "fedhgn":
        up, down = theta_c + B * D * D + R * B, theta_c + B * D * D + (K - 1) * R * B
    else:
        up = down = theta_c + R * D * D
    assert message_bytes(alg, data) == (4 * up, 4 * down)
    cols = per_round_columns(alg, data, 2, 5)
    assert cols["comm_up_bytes"].tolist() == [2 * 4 * up] * 5 and cols["participants"].tolist() == [2] * 5
