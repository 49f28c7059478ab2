"""Lumos through the shared Program interface: in-program LDP encoding from a traced eps, sweeps
(a member equals the single run) and checkpoint/resume (equals an uninterrupted run)."""
import jax
import numpy as np
import pytest

from fgl_jax.federated import run
from fgl_jax.federated.sweep import run_sweep, traced_hparams
from fgl_jax.partition.edges import random_edge_split
from fgl_jax.systems.lumos import build_program
from fgl_jax.systems.lumos.trainer import LumosConfig, TrainState, ldp_table, lumos_algorithm, prepare
from fgl_jax.privacy import onebit
from tests.helpers import toy_graph


def _prog(cfg, g, split=None):
    prep = prepare(g, cfg, split, encode="program")
    return lumos_algorithm(cfg, g.num_classes), prep


def test_program_table_equals_host_encoder_and_inf_is_raw():
    """ldp_table (traced eps) draws exactly what the host encoder draws with the same key."""
    g = toy_graph(50, seed=3)
    cfg = LumosConfig(epochs=2, mcmc_iters=20)
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


def test_sweep_member_equals_single_run():
    """Link task (its loss draws negatives from the round key too); member 1 = (seed 2, eps 4, lr 0.03)."""
    g = toy_graph(60, seed=4)
    split = random_edge_split(g.senders, g.receivers, g.num_nodes, seed=0)
    cfg = LumosConfig(task="link", epochs=6, mcmc_iters=20)
    alg, prep = _prog(cfg, g, split)
    assert traced_hparams(type("P", (), {"algorithm": alg, "data": prep.data})) == ["eps", "lr"]
    sw = run_sweep(alg, prep.data, [1, 2], 6, hparams={"eps": [0.5, 4.0], "lr": [0.01, 0.03]}, mode="sequential")
    for i, (seed, eps, lr) in [(1, (2, 4.0, 0.03))]:
        import dataclasses
        c = dataclasses.replace(cfg, epsilon=eps, lr=lr)
        single = run(lumos_algorithm(c, g.num_classes), prep.data, jax.random.key(seed), 6)
        np.testing.assert_allclose(sw.history["train_loss"][i], single.history["train_loss"], rtol=2e-5)
        np.testing.assert_allclose(sw.history["val_acc"][i], single.history["val_acc"], atol=1e-6)
    # different eps -> different noise table -> different losses (the sweep really varies eps)
    assert not np.allclose(sw.history["train_loss"][0], sw.history["train_loss"][1])


def test_resume_equals_uninterrupted(tmp_path):
    g = toy_graph(50, seed=6)
    cfg = LumosConfig(epochs=8, mcmc_iters=20)
    alg, prep = _prog(cfg, g)
    full = run(alg, prep.data, jax.random.key(3), 8)
    run(alg, prep.data, jax.random.key(3), 4, out_dir=tmp_path, chunk=2)
    resumed = run(alg, prep.data, jax.random.key(3), 8, out_dir=tmp_path, chunk=2, resume=True)
    np.testing.assert_allclose(resumed.history["train_loss"][-4:], full.history["train_loss"][-4:], rtol=1e-6)
    assert isinstance(resumed.state, TrainState)
    jax.tree.map(lambda a, b: np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-6),
                 resumed.state.params, full.state.params)
    assert resumed.best["best_test"] == pytest.approx(full.best["best_test"])


def test_build_program_options_and_bad_input():
    prog = build_program({"dataset": "csbm", "epochs": 3, "mcmc_iters": 10, "epsilon": "1.5", "no_progress": True})
    assert prog.num_rounds == 3 and prog.describe["method"] == "Lumos-gcn"
    st = jax.jit(prog.algorithm.init)(jax.random.key(0), prog.data)
    assert float(st.hp["eps"]) == 1.5 and sorted(st.hp) == ["eps", "lr"]
    with pytest.raises(ValueError, match="unknown key"):
        build_program({"dataset": "csbm", "rounds": 3})
    with pytest.raises(ValueError, match="epsilon"):
        build_program({"dataset": "csbm", "epsilon": "0"})
    with pytest.raises(ValueError, match="epsilon"):
        build_program({"dataset": "csbm", "epsilon": "abc"})
