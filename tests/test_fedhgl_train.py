"""FedHGL training (T11): FedAvg weighting, identical clients == one client, local mode, end-to-end
(every run through the one engine, `fgl_jax.federated.run` / `fgl_jax.experiment.execute`)."""
import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from fgl_jax.data.hypergraph import Hypergraph
from fgl_jax.privacy.ldp import LDPError
from fgl_jax.experiment import execute
from fgl_jax.federated import run
from fgl_jax.systems.fedhgl import FedHGLConfig, FedHGLData, build, make_algorithm

CFG = FedHGLConfig(rounds=5, local_steps=2, dropout=0.0)


def run_fedhgl(hg, cfg):
    """One complete run (partition, propagate, split, train) through the engine; its RunResult."""
    return execute(build(cfg, hypergraph=hg), cfg.seed, system="fedhgl")


def blocks(rng, c, n=20, f=6, k=3, n_train=None):
    x = rng.normal(size=(c, n, f)).astype(np.float32)
    y = rng.integers(0, k, (c, n)).astype(np.int32)
    m = np.ones((c, n), bool)
    mt = m.copy()
    if n_train is not None:
        for i, t in enumerate(n_train):
            mt[i, t:] = False
    a = [jnp.asarray(v) for v in (x, y, mt, x, y, m, x, y, m)]
    return FedHGLData(*a)


def stack(data, reps):
    return jax.tree.map(lambda a: jnp.concatenate([a] * reps), data)


def params_after(data, cfg, seed=0):
    return run(make_algorithm(3, cfg), data, jax.random.key(seed), cfg.rounds).state


@pytest.mark.slow
def test_identical_clients_equal_single_client():
    one = blocks(np.random.default_rng(0), 1)
    s1 = params_after(one, CFG)
    s3 = params_after(stack(one, 3), CFG)
    for a, b in zip(jax.tree.leaves(s1.server), jax.tree.leaves(s3.server)):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=2e-5, atol=1e-6)


@pytest.mark.slow
def test_fedavg_training_weights():
    """A client without training nodes gets weight 0 (paper Eq. 4 weights |V_k|): result == the other alone.
    With uniform weights (authors' code) it is averaged in and the result differs."""
    rng = np.random.default_rng(1)
    a = blocks(rng, 1)
    b = blocks(rng, 1, n_train=[0])
    both = jax.tree.map(lambda u, v: jnp.concatenate([u, v, v]), a, b)     # 3 clients: reuses a compiled shape
    sa = params_after(a, CFG)
    sab = params_after(both, CFG)
    for u, v in zip(jax.tree.leaves(sa.server), jax.tree.leaves(sab.server)):
        np.testing.assert_allclose(np.asarray(u), np.asarray(v), rtol=2e-5, atol=1e-6)
    su = params_after(both, dataclasses.replace(CFG, weighting="uniform"))
    diff = max(float(jnp.abs(u - v).max()) for u, v in zip(jax.tree.leaves(sa.server), jax.tree.leaves(su.server)))
    assert diff > 1e-4


@pytest.mark.slow
def test_local_mode_keeps_clients_apart():
    rng = np.random.default_rng(2)
    two = blocks(rng, 2)
    cfg = dataclasses.replace(CFG, method="hgnn_hc")
    s = params_after(two, cfg)
    first = jax.tree.map(lambda t: t[:1], two)
    s1 = params_after(first, cfg)
    for u, v in zip(jax.tree.leaves(s.clients), jax.tree.leaves(s1.clients)):
        np.testing.assert_allclose(np.asarray(u)[0], np.asarray(v)[0], rtol=2e-5, atol=1e-6)


def planted_hypergraph(seed=0, n=240, k=3, f=12):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, k, n).astype(np.int32)
    edges = []
    for _ in range(160):
        c = rng.integers(k)
        pool = np.flatnonzero(y == c) if rng.random() < 0.85 else np.arange(n)
        edges.append(np.unique(rng.choice(pool, rng.integers(2, 6), replace=False)))
    x = (rng.random((n, f)) < 0.15).astype(np.float32)
    x[np.arange(n), y] = (rng.random(n) < 0.5)          # weak class signal in the features
    hn = np.concatenate(edges)
    hi = np.repeat(np.arange(len(edges)), [e.size for e in edges])
    z = np.zeros(n, bool)
    return Hypergraph("planted", x, y, k, hn, hi, len(edges), np.ones(len(edges)), "binary", z, z, z)


@pytest.mark.slow
def test_end_to_end_learns_and_hc_helps():
    hg = planted_hypergraph()
    cfg = FedHGLConfig(clients=3, rounds=40, train_ratio=0.3, min_client_size=10)
    hc = run_fedhgl(hg, cfg)
    assert hc.best["best_test"] > 0.6                      # chance = 1/3
    assert hc.best["best_test"] == pytest.approx(hc.history["test_acc"][-1])    # the paper's number: last round
    assert hc.extras["test_acc"] == pytest.approx(hc.best["best_test"], abs=1e-6)
    assert 0 <= hc.extras["global_test_acc"] <= 1
    assert np.isfinite(hc.history["train_loss"]).all()
    assert hc.summary["describe"]["split_stats"]["cross_edges"] > 0
    noisy = run_fedhgl(hg, dataclasses.replace(cfg, mechanism="auto", eps=0.5))
    assert noisy.best["best_test"] > 0.34


@pytest.mark.parametrize("kw,msg", [({"mechanism": "rr", "eps": 0.0}, "eps"), ({"mechanism": "gauss"}, "mechanism"),
                                    ({"method": "x"}, "method"), ({"clients": 0}, "clients"),
                                    ({"train_ratio": 0.6, "test_ratio": 0.4}, "<= 1")])
def test_config_errors(kw, msg):
    with pytest.raises((ValueError, LDPError), match=msg):
        FedHGLConfig(**kw)


def test_rr_on_numeric_features_rejected():
    hg = planted_hypergraph()
    hg = dataclasses.replace(hg, x=hg.x * 0.5, feature_kind="numeric")
    with pytest.raises(LDPError, match="binary"):
        run_fedhgl(hg, FedHGLConfig(clients=2, mechanism="rr", eps=1.0, rounds=1))


@pytest.mark.slow
def test_eval_every_step_only_adds_candidates():
    """Validation after every local step (authors' code) does not change training, and its per-client
    best-validation accuracy is >= validating once per round (a superset of candidate models)."""
    data = blocks(np.random.default_rng(4), 2)
    cfg = dataclasses.replace(CFG, dropout=0.5)
    a = params_after(data, cfg)
    b = params_after(data, dataclasses.replace(cfg, eval_every_step=False))
    for u, v in zip(jax.tree.leaves(a.server), jax.tree.leaves(b.server)):
        np.testing.assert_allclose(np.asarray(u), np.asarray(v), rtol=1e-6, atol=1e-7)
    assert np.all(np.asarray(a.best_val) >= np.asarray(b.best_val) - 1e-7)
