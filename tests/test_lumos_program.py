"""Lumos through the engine: in-program LDP encoding from a traced eps, sweeps (a member equals the
single run), `run_config` outputs and resume (equals an uninterrupted run), the config schema."""
import dataclasses
import json
import math

import jax
import numpy as np
import pytest

from fgl_jax import experiment, schema
from fgl_jax.federated import run
from fgl_jax.federated.sweep import run_sweep, traced_hparams
from fgl_jax.partition.edges import random_edge_split
from fgl_jax.privacy import onebit
from fgl_jax.systems.lumos import LumosConfig, build, lumos_algorithm, prepare
from fgl_jax.systems.lumos.algorithm import TrainState, ldp_table
from tests.helpers import toy_graph


def _prog(cfg, g, split=None):
    prep = prepare(g, cfg, split, encode="program")
    return lumos_algorithm(cfg, g.num_classes), prep


def test_program_table_equals_host_encoder_and_inf_is_raw():
    """ldp_table (traced eps) draws exactly what the host encoder draws with the same key."""
    g = toy_graph(50, seed=3)
    cfg = LumosConfig(rounds=2, mcmc_iters=20)
    prep = prepare(g, cfg, encode="program")
    ldp = prep.data.ldp
    key = jax.random.PRNGKey(7)
    for eps in (0.5, 2.0):
        ref, _ = onebit.onebit_ldp(key, np.asarray(ldp.x), ldp.num_bins, ldp.pair_src, ldp.recipient_bin, eps)
        tab = jax.jit(ldp_table)(ldp, key, eps)
        n = g.num_nodes
        np.testing.assert_allclose(np.asarray(tab[n:-1]), np.asarray(ref), rtol=1e-6)
        np.testing.assert_array_equal(np.asarray(tab[:n]), np.asarray(ldp.x))
    tab = jax.jit(ldp_table)(ldp, key, np.inf)
    np.testing.assert_array_equal(np.asarray(tab[g.num_nodes:-1]), np.asarray(ldp.x)[np.asarray(ldp.pair_src)])
    # host-encoded programs have no eps hyperparameter (sweeping it would change nothing)
    host = prepare(g, cfg)
    st = jax.eval_shape(lumos_algorithm(cfg, g.num_classes).init, jax.random.key(0), host.data)
    assert sorted(st.hp) == ["lr"]


@pytest.mark.slow
def test_sweep_member_equals_single_run():
    """Link task (its loss draws negatives from the round key too); member 1 = (seed 2, eps 4, lr 0.03)."""
    g = toy_graph(60, seed=4)
    split = random_edge_split(g.senders, g.receivers, g.num_nodes, seed=0)
    cfg = LumosConfig(task="link", rounds=6, mcmc_iters=20)
    alg, prep = _prog(cfg, g, split)
    assert traced_hparams(type("P", (), {"algorithm": alg, "data": prep.data})) == ["epsilon", "lr"]
    assert sorted(schema.traced_names(LumosConfig)) == ["epsilon", "lr"]
    sw = run_sweep(alg, prep.data, [1, 2], 6, hparams={"epsilon": [0.5, 4.0], "lr": [0.01, 0.03]}, mode="sequential")
    for i, (seed, eps, lr) in [(1, (2, 4.0, 0.03))]:
        c = dataclasses.replace(cfg, epsilon=eps, lr=lr)
        single = run(lumos_algorithm(c, g.num_classes), prep.data, jax.random.key(seed), 6)
        np.testing.assert_allclose(sw.history["train_loss"][i], single.history["train_loss"], rtol=2e-5)
        np.testing.assert_allclose(sw.history["val_acc"][i], single.history["val_acc"], atol=1e-6)
    # different eps -> different noise table -> different losses (the sweep really varies eps)
    assert not np.allclose(sw.history["train_loss"][0], sw.history["train_loss"][1])


@pytest.mark.slow
def test_resume_equals_uninterrupted(tmp_path):
    g = toy_graph(50, seed=6)
    cfg = LumosConfig(rounds=8, mcmc_iters=20)
    alg, prep = _prog(cfg, g)
    full = run(alg, prep.data, jax.random.key(3), 8)
    run(alg, prep.data, jax.random.key(3), 4, out_dir=tmp_path, chunk=2)
    resumed = run(alg, prep.data, jax.random.key(3), 8, out_dir=tmp_path, chunk=2, resume=True)
    np.testing.assert_allclose(resumed.history["train_loss"][-4:], full.history["train_loss"][-4:], rtol=1e-6)
    assert isinstance(resumed.state, TrainState)
    jax.tree.map(lambda a, b: np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-6),
                 resumed.state.params, full.state.params)
    assert resumed.best["best_test"] == pytest.approx(full.best["best_test"])


def test_defaults_are_the_papers_headline_setting():
    """Paper §VIII / spec §4.4: Facebook, GCN, 2 layers, hidden = output = 16, GAT 4 heads, dropout 0.01,
    Adam lr 0.01, 300 epochs, eps = 2; trees with virtual nodes after greedy + MCMC trimming; spec A3/A5
    defaults (bins = recipients, no rescale), paper-literal decoding; LDP budget per recipient."""
    c = LumosConfig()
    assert (c.dataset, c.task, c.model) == ("facebook", "node", "gcn")
    assert (c.num_layers, c.hidden, c.heads) == (2, 16, 4)
    assert c.dropout == 0.01 and c.lr == 0.01 and c.rounds == 300 and c.epsilon == 2.0
    assert (c.trim, c.tree, c.bins, c.rescale, c.denoise) == ("mcmc", "tree", "recipients", False, "none")
    # not the paper's split of eps (eps*B/d, up to ~2 eps for some recipients): each recipient gets <= eps
    assert c.budget == "per-recipient"
    # the paper's T is 1000 (FB) / 300 (LastFM); the default chain is at least that long (it is the
    # length that reaches the paper's reported max workload, see experiments/results/lumos)
    assert c.chain_length >= 1000
    assert dataclasses.replace(c, dataset="lastfm_asia").chain_length >= 300
    assert c.split_seed == c.seed == 0 and LumosConfig(seed=3).split_seed == 3
    assert LumosConfig(seed=3, data_seed=0).split_seed == 0
    assert "clients" not in schema.fields(LumosConfig)     # every vertex is a device


@pytest.mark.parametrize("values,field", [({"epsilon": 0}, "epsilon"), ({"epsilon": "abc"}, "epsilon"),
                                          ({"task": "graph"}, "task"), ({"trim": "x"}, "trim"),
                                          ({"model": "sage"}, "model"), ({"dropout": 1.0}, "dropout"),
                                          ({"rounds": 0}, "rounds"), ({"mcmc_iters": -1}, "mcmc_iters")])
def test_bad_value_is_one_line_error_naming_the_field(values, field):
    with pytest.raises(ValueError) as e:
        schema.make(LumosConfig, values)
    msg = str(e.value)
    assert "\n" not in msg and field in msg
    with pytest.raises(ValueError, match=field):
        LumosConfig(**values)                               # direct construction is checked the same way
    with pytest.raises(ValueError, match="unknown key 'epochs'"):
        schema.make(LumosConfig, {"epochs": 3})


def test_epsilon_inf_from_yaml_and_flags(tmp_path):
    p = tmp_path / "c.yaml"
    p.write_text("system: lumos\nepsilon: inf\nrounds: 5\n")
    cfg = schema.resolve(LumosConfig, p, {"lr": "0.05"}, system="lumos")
    assert math.isinf(cfg.epsilon) and cfg.rounds == 5 and cfg.lr == 0.05
    assert schema.resolve(LumosConfig, None, {"epsilon": "inf"}).epsilon == math.inf
    # the dumped YAML replays
    q = tmp_path / "d.yaml"
    schema.dump(cfg, "lumos", q)
    assert schema.resolve(LumosConfig, q, system="lumos") == cfg


@pytest.mark.slow
def test_run_config_outputs_and_resume(tmp_path):
    cfg = LumosConfig(dataset="csbm", rounds=6, mcmc_iters=10, epsilon=1.5, seed=2)
    full = experiment.run_config(cfg, out=str(tmp_path / "full"), chunk=3)
    for name in ("config.yaml", "metrics.jsonl", "summary.json", "checkpoints"):
        assert (tmp_path / "full" / name).exists(), name
    assert schema.resolve(LumosConfig, tmp_path / "full" / "config.yaml", system="lumos") == cfg
    summary = json.loads((tmp_path / "full" / "summary.json").read_text())
    assert summary["system"] == "lumos" and summary["describe"]["method"] == "Lumos-gcn"
    rows = [json.loads(l) for l in (tmp_path / "full" / "metrics.jsonl").read_text().splitlines()]
    comm = summary["communication"]        # summed over the epochs of metrics.jsonl
    assert comm["p2p_bytes"] == 6 * summary["describe"]["communication_per_device"]["p2p_bytes_per_epoch"] > 0
    assert comm["up_bytes"] == sum(r["comm_up_bytes"] for r in rows) > 0
    assert summary["rounds_run"] == 6
    assert len((tmp_path / "full" / "metrics.jsonl").read_text().splitlines()) == 6
    st = jax.jit(build(cfg).algorithm.init)(jax.random.key(0), build(cfg).data)
    assert float(st.hp["epsilon"]) == 1.5 and sorted(st.hp) == ["epsilon", "lr"]
    assert sorted(st.hp) == sorted(schema.traced_names(LumosConfig))    # traced options = state.hp keys
    # interrupted after 3 rounds (same config, 3 rounds), then resumed to 6 = the uninterrupted run
    part = tmp_path / "part"
    experiment.run_config(dataclasses.replace(cfg, rounds=3), out=str(part), chunk=3)
    resumed = experiment.run_config(cfg, out=str(part), chunk=3, resume=True, resume_with_changes=("rounds",))
    np.testing.assert_allclose(resumed.history["train_loss"], full.history["train_loss"], rtol=1e-6)
    assert resumed.best == pytest.approx(full.best)
    assert len((part / "metrics.jsonl").read_text().splitlines()) == 6


def _hand_graph():
    """4 devices, undirected edges 0-1, 1-2, 2-3, 1-3 (degrees 1, 3, 2, 2), d = 3, 2 classes."""
    from fgl_jax.graph import Graph
    und = np.array([[0, 1], [1, 2], [2, 3], [1, 3]])
    s, r = np.concatenate([und[:, 0], und[:, 1]]), np.concatenate([und[:, 1], und[:, 0]])
    x = np.arange(12, dtype=np.float32).reshape(4, 3) / 12
    m = np.array([True, True, False, False])
    return Graph("hand", s, r, x, np.array([0, 1, 0, 1], np.int32), 2, m, ~m, ~m), und


@pytest.mark.parametrize("task", ["node", "link"])
def test_communication_equals_a_hand_count(task):
    """Lumos's bytes on a 4-device graph without trimming (every device keeps every neighbour:
    8 (tree owner, leaf) pairs), GCN, hidden 16, float32.
    Per epoch, device to device: each pair's leaf embedding [16] forward and its gradient back
    (2 * 8 * 64 B); link task: also h_v and dL/dh_v for each of the 8 positive pairs and as many
    negatives (4 * 8 * 64 B). Per device and epoch with the server: the gradient of the shared
    weights (GCN 3x16 + 16 + 16x16 + 16, head 16x2 + 2 floats in the node task) down, plus a 4-byte
    loss up. Before training: each pair's LDP feature row [3] float32 (8 * 12 B); no greedy run,
    so no secure comparison."""
    from fgl_jax.partition.edges import EdgeSplit
    from fgl_jax.systems.lumos.program import program
    g, und = _hand_graph()
    cfg = LumosConfig(dataset="hand", task=task, trim="none", rounds=3, model="gcn", hidden=16)
    es = None
    if task == "link":    # all 4 edges train; val/test pairs only for the metrics
        pair = np.array([[0, 2]])
        es = EdgeSplit(4, und, pair, np.array([[0, 3]]), pair, np.array([[0, 3]]))
    prog = program(cfg, g, prepare(g, cfg, es, encode="program"))
    cols = prog.per_round
    floats = 3 * 16 + 16 + 16 * 16 + 16 + (16 * 2 + 2 if task == "node" else 0)
    assert cols["comm_down_bytes_per_client"].tolist() == [4 * floats] * 3
    assert cols["comm_up_bytes_per_client"].tolist() == [4 * floats + 4] * 3
    assert cols["comm_up_bytes"].tolist() == [4 * (4 * floats + 4)] * 3 and cols["participants"].tolist() == [4] * 3
    p2p = 2 * 8 * 64 + (4 * 8 * 64 if task == "link" else 0)
    assert cols["comm_p2p_bytes"].tolist() == [p2p] * 3
    # device 1 (degree 3): holds 3 leaves of others, has 3 copies elsewhere; link: 3 positives as u, 3 as v
    dev = prog.describe["communication_per_device"]
    assert dev["p2p_sent_bytes_max"] == (6 + (3 + 2 * 3 if task == "link" else 0)) * 64
    pre = prog.describe["pre_training_communication"]
    assert (pre["up_bytes"], pre["down_bytes"]) == (8 * 12, 8 * 12)
    assert pre["ldp_feature_bytes_per_device_max"] == 3 * 12 and pre["secure_comparisons"] == 0


def test_greedy_secure_comparisons_hand_count():
    """Alg. 1 compares the two ends of every half-edge once: 8 comparisons of round(ln deg) in
    {0, 1}, 2 bits each (the oracle's bit width ceil(log2(max + 2)))."""
    from fgl_jax.systems.lumos.program import program
    g, _ = _hand_graph()
    cfg = LumosConfig(dataset="hand", trim="greedy", rounds=1)
    pre = program(cfg, g, prepare(g, cfg, encode="program")).describe["pre_training_communication"]
    assert (pre["secure_comparisons"], pre["secure_comparison_input_bits"]) == (8, 16)
    # Alg. 1 keeps v iff round(ln deg v) >= round(ln deg u): buckets 0, 1, 1, 1 -> device 1 drops 0: 7 pairs
    assert pre["up_bytes"] == 7 * 12
