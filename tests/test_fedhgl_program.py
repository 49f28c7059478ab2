"""FedHGL through the one engine: build(cfg) -> fgl_jax.federated.run / run_sweep, and
fgl_jax.experiment.run_config (config.yaml, metrics.jsonl, summary.json, checkpoints/, resume).
The per-client best-validation models live in the state, so resume restores them."""
import dataclasses
import json

import jax
import numpy as np
import pytest
import yaml

from fgl_jax import experiment, schema
from fgl_jax.federated import run
from fgl_jax.federated.sweep import run_sweep
from fgl_jax.systems.fedhgl import FedHGLConfig, build, evaluate, preparation_key, prepare
from fgl_jax.systems.fedhgl import program as fedhgl_program
from tests.test_fedhgl_train import planted_hypergraph

CFG = FedHGLConfig(clients=3, rounds=6, local_steps=2, train_ratio=0.3, seed=0)


def _hist_close(a, b, names=("train_loss", "val_acc", "test_acc", "best_val_acc")):
    for n in names:
        np.testing.assert_allclose(np.asarray(a[n]), np.asarray(b[n]), rtol=1e-5, atol=1e-6, err_msg=n)


@pytest.fixture
def planted(monkeypatch):
    """run_config loads cfg.dataset by name: serve the small planted hypergraph instead."""
    hg = planted_hypergraph()
    monkeypatch.setattr(fedhgl_program, "load_hypergraph", lambda name, data_dir=None: hg)
    return hg


@pytest.mark.slow
def test_run_config_writes_outputs_and_resume_equals_uninterrupted(tmp_path, planted):
    full = experiment.run_config(CFG, out=str(tmp_path / "a"))
    for f in ("config.yaml", "metrics.jsonl", "summary.json", "checkpoints"):
        assert (tmp_path / "a" / f).exists(), f
    text = (tmp_path / "a" / "config.yaml").read_text()
    assert yaml.safe_load(text)["system"] == "fedhgl"
    assert schema.resolve(FedHGLConfig, tmp_path / "a" / "config.yaml", system="fedhgl") == CFG  # replayable
    rows = [json.loads(l) for l in (tmp_path / "a" / "metrics.jsonl").read_text().splitlines()]
    assert [r["round"] for r in rows] == list(range(1, 7))
    summary = json.loads((tmp_path / "a" / "summary.json").read_text())
    assert summary["system"] == "fedhgl" and summary["rounds_run"] == 6
    assert summary["best"]["best_test"] == pytest.approx(full.history["test_acc"][-1])   # the paper's number
    assert summary["extras"]["test_acc"] == pytest.approx(full.history["test_acc"][-1], abs=1e-6)
    # "interrupted" after 4 rounds, then resumed to 6
    experiment.run_config(dataclasses.replace(CFG, rounds=4), out=str(tmp_path / "b"))
    assert (tmp_path / "b" / "checkpoints" / "round_000004").exists()
    resumed = experiment.run_config(CFG, out=str(tmp_path / "b"), resume=True, resume_with_changes=("rounds",))
    _hist_close(full.history, resumed.history)
    for u, v in zip(jax.tree.leaves(full.state), jax.tree.leaves(resumed.state)):
        np.testing.assert_allclose(np.asarray(u), np.asarray(v), rtol=1e-5, atol=1e-6)
    assert resumed.best["best_test"] == pytest.approx(full.best["best_test"])
    assert resumed.extras["global_test_acc"] == pytest.approx(full.extras["global_test_acc"], abs=1e-6)


@pytest.mark.slow
def test_one_seed_one_key(planted):
    """run_config uses jax.random.key(cfg.seed) for the rounds (= a direct engine run with that key);
    the LDP noise uses a stream of the same key that the engine's init/round keys never equal."""
    cfg = dataclasses.replace(CFG, seed=3, mechanism="rr", eps=1.0)
    via_config = experiment.run_config(cfg)
    prog = build(cfg, hypergraph=planted)
    direct = run(prog.algorithm, prog.data, jax.random.key(3), cfg.rounds)
    _hist_close(via_config.history, direct.history)
    k = jax.random.key(3)
    prep = jax.random.key_data(preparation_key(3))
    for child in jax.random.split(k):
        assert not np.array_equal(jax.random.key_data(child), prep)
    other = run(prog.algorithm, prog.data, jax.random.key(4), cfg.rounds)
    assert not np.allclose(other.history["train_loss"], direct.history["train_loss"])


@pytest.mark.slow
def test_global_method_rounds_mean_rounds(planted):
    """Global (one client, whole hypergraph) runs exactly cfg.rounds rounds (no hidden x3)."""
    cfg = FedHGLConfig(method="global", clients=1, rounds=7, train_ratio=0.3)
    prog = build(cfg, hypergraph=planted)
    assert prog.num_rounds == 7 and prog.data.x_train.shape[0] == 1
    assert experiment.run_config(cfg).rounds_run == 7


@pytest.mark.slow
def test_sweep_member_equals_single_run():
    """seeds x lr vectorised (run_sweep) == separate single runs with that lr in the config."""
    hg = planted_hypergraph()
    prog = build(CFG, hypergraph=hg)
    seeds, lrs = [0, 1], [0.01, 0.05]
    sw = run_sweep(prog.algorithm, prog.data, seeds, 6, {"lr": lrs}, mode="vmap")
    for i, (seed, lr) in enumerate(zip(seeds, lrs)):
        single = build(dataclasses.replace(CFG, lr=lr), hypergraph=hg)
        r = run(single.algorithm, single.data, jax.random.key(seed), 6)
        for n in ("train_loss", "test_acc", "val_acc"):
            np.testing.assert_allclose(sw.history[n][i], r.history[n], rtol=1e-4, atol=1e-5, err_msg=n)
    assert not np.allclose(sw.history["train_loss"][0], sw.history["train_loss"][1])


@pytest.mark.slow
def test_traced_laplace_eps_equals_direct_noise_and_sweeps():
    """HC is linear and the Laplace scale is s/ε: X^{(N)}(ε) = X_clean + G/ε exactly (up to rounding),
    so ε can be a traced hyperparameter; RR is refused with the reason."""
    hg = planted_hypergraph()
    hg = dataclasses.replace(hg, x=hg.x * 0.5, feature_kind="numeric")
    cfg = dataclasses.replace(CFG, mechanism="laplace", eps=0.8)
    traced, _ = prepare(hg, dataclasses.replace(cfg, traced_eps=True))
    direct, _ = prepare(hg, cfg)
    for s in ("train", "val", "test"):
        x = np.asarray(getattr(traced, f"x_{s}")) + np.asarray(getattr(traced, f"g_{s}")) / 0.8
        np.testing.assert_allclose(x, np.asarray(getattr(direct, f"x_{s}")), rtol=1e-4, atol=1e-5)
    assert np.abs(np.asarray(traced.g_val)).max() > 1e-3
    prog = build(dataclasses.replace(cfg, traced_eps=True), hypergraph=hg)
    sw = run_sweep(prog.algorithm, prog.data, [0, 0], 4, {"eps": [0.8, 1e6]}, mode="sequential")
    clean = build(dataclasses.replace(cfg, mechanism="none", rounds=4), hypergraph=hg)
    r = run(clean.algorithm, clean.data, jax.random.key(0), 4)
    np.testing.assert_allclose(sw.history["train_loss"][1], r.history["train_loss"], rtol=1e-3, atol=1e-4)
    with pytest.raises(ValueError, match="not linear"):
        dataclasses.replace(CFG, mechanism="rr", eps=1.0, traced_eps=True)
    with pytest.raises(ValueError, match="not linear"):          # auto on binary features is RR
        build(dataclasses.replace(CFG, mechanism="auto", eps=1.0, traced_eps=True), hypergraph=planted_hypergraph())


def test_final_evaluation_matches_metrics():
    hg = planted_hypergraph()
    prog = build(CFG, hypergraph=hg)
    res = run(prog.algorithm, prog.data, jax.random.key(0), 6, hooks=prog.hooks)
    e = evaluate(res.state, prog.data)
    assert float(e["test_acc"]) == pytest.approx(res.history["test_acc"][-1], abs=1e-6)
    assert float(e["best_val_acc"]) == pytest.approx(res.history["best_val_acc"][-1], abs=1e-6)
    assert res.best["best_round"] == 6 and res.extras["test_acc"] == pytest.approx(res.best["best_test"], abs=1e-6)


@pytest.mark.parametrize("method, bias", [("fedhgl", False), ("fedhgl", True), ("hgnn_local", False)])
def test_communication_equals_a_hand_count(method, bias):
    """FedAvg: each client uploads and downloads the two linears, F x hidden and hidden x C (+ the
    biases), float32, every round; local training exchanges nothing."""
    hg = planted_hypergraph()
    cfg = dataclasses.replace(CFG, method=method, bias=bias)
    prog = build(cfg, hypergraph=hg)
    f, h, c = hg.num_features, cfg.hidden, hg.num_classes
    per_client = 0 if method == "hgnn_local" else 4 * (f * h + h * c + (h + c if bias else 0))
    cols = prog.per_round
    assert cols["comm_up_bytes_per_client"].tolist() == [per_client] * cfg.rounds
    assert cols["comm_down_bytes"].tolist() == [3 * per_client] * cfg.rounds


def test_pre_propagation_communication_equals_a_hand_count():
    """Hyperedge completion's one-off exchange on a 5-node toy: clients {0, 1} and {2, 3, 4};
    e0 = {0, 1} and e3 = {3, 4} are internal, e1 = {1, 2} and e2 = {0, 2, 3} cross, so each client
    uploads 2 partial sums [F] float32 + a 4-byte id per hop and gets 2 totals [F] back; 2 hops.
    Basic FedHGL (method fedhgl) exchanges nothing."""
    from fgl_jax.data.hypergraph import Hypergraph
    from fgl_jax.systems.fedhgl.clients import build_hc_clients, split_hypergraph
    f = 3
    x = np.eye(5, f, dtype=np.float32)
    hn = np.array([0, 1, 1, 2, 0, 2, 3, 3, 4], np.int32)
    hi = np.array([0, 0, 1, 1, 2, 2, 2, 3, 3], np.int32)
    z = np.zeros(5, bool)
    hg = Hypergraph("toy", x, np.array([0, 1, 0, 1, 0], np.int32), 2, hn, hi, 4, np.ones(4, np.float32), "binary",
                    z, z, z)
    split = split_hypergraph(hg, np.array([0, 0, 1, 1, 1]), 2)
    cfg = FedHGLConfig(clients=2, hops=2, seed=0, eps=1.0)
    _, info = prepare(hg, cfg, split)
    pre = info["pre_training_communication"]
    assert pre["per_client_up_bytes"] == [2 * 2 * (4 * f + 4)] * 2
    assert pre["per_client_down_bytes"] == [2 * 2 * 4 * f] * 2
    assert (pre["up_bytes"], pre["down_bytes"]) == (128, 96) and pre["uploads_per_hop"] == 4
    _, info = prepare(hg, dataclasses.replace(cfg, method="fedhgl"), split)
    assert info["pre_training_communication"]["up_bytes"] == 0 == info["pre_training_communication"]["down_bytes"]
    # on the planted hypergraph: the count is that of the explicit protocol's real upload slots, and
    # it reaches summary.json's describe
    hg = planted_hypergraph()
    prog = build(CFG, hypergraph=hg)
    pre = prog.describe["pre_training_communication"]
    hc = build_hc_clients(split_hypergraph(hg, np.zeros(hg.num_nodes, np.int64), 1))
    assert int(hc.cross_valid.sum()) == 0                      # one client: nothing crosses
    slots = int(build_hc_clients(partition_for(CFG, hg)).cross_valid.sum())
    assert slots > 0 and pre["uploads_per_hop"] == slots
    assert pre["up_bytes"] == CFG.hops * slots * (4 * hg.num_features + 4)
    assert pre["down_bytes"] == CFG.hops * slots * 4 * hg.num_features


def partition_for(cfg, hg):
    """The split `prepare` draws for cfg (same partitioner and seed)."""
    from fgl_jax.systems.fedhgl.clients import partition_hypergraph
    return partition_hypergraph(hg, cfg.clients, cfg.beta, cfg.seed, cfg.min_client_size)
