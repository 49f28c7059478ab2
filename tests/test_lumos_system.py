"""Lumos system level: config validation, baselines' mechanisms, real-data workload check, determinism."""
import math

import jax
import numpy as np
import pytest
from scipy.stats import norm

from fgl_jax.systems.lumos import workload as W
from experiments.lumos.baselines import analytic_gaussian_sigma, rr_adjacency, rr_labels
from fgl_jax.federated import run
from fgl_jax.systems.lumos import LumosConfig, lumos_algorithm, prepare
from fgl_jax.systems.lumos.data import message_counts, minmax_scale
from tests.helpers import toy_graph


def test_config_rejects_bad_values():
    for kw, msg in ((dict(epsilon=0.0), "epsilon"), (dict(epsilon=-1.0), "epsilon"), (dict(task="x"), "task"),
                    (dict(trim="x"), "trim"), (dict(model="sage"), "model"), (dict(dropout=1.0), "dropout")):
        with pytest.raises(ValueError, match=msg):
            LumosConfig(**kw)
    with pytest.raises(ValueError, match="edge_split"):
        prepare(toy_graph(30), LumosConfig(task="link"))


def test_minmax_constant_dimension_rule():
    x = np.array([[1.0, 5.0], [3.0, 5.0]])
    np.testing.assert_array_equal(minmax_scale(x), [[0.0, 0.0], [1.0, 0.0]])


def test_isolated_devices_get_fallback_and_defined_embedding():
    g = toy_graph(40, isolated=3, seed=2)
    prep = prepare(g, LumosConfig(trim="greedy", rounds=1))
    deg = np.bincount(g.receivers, minlength=40)
    assert np.all(prep.meta.fallback == (deg == 0)) and prep.meta.fallback[-3:].all()
    assert np.all(np.asarray(prep.data.trees.leaf_count) >= 1)


def test_message_counts_T13():
    g = toy_graph(50, seed=0)
    es = W.EdgeSet.from_graph(g)
    full = message_counts(es, W.no_trim(es), "node")
    assert full["forward_per_device"] == pytest.approx(2 * es.num_edges / 50)
    keep, _ = W.greedy_init(es)
    assert message_counts(es, keep, "node")["forward_per_device"] == pytest.approx(keep.sum() / 50)


def test_analytic_gaussian_is_tight():
    for eps, delta in ((1.0, 1e-5), (2.0, 1e-5)):
        s = analytic_gaussian_sigma(eps, delta, 1.0)
        loss = lambda sg: norm.cdf(1 / (2 * sg) - eps * sg) - math.exp(eps) * norm.cdf(-1 / (2 * sg) - eps * sg)
        assert loss(s) <= delta * (1 + 1e-6) and loss(0.99 * s) > delta
        assert s < math.sqrt(2 * math.log(1.25 / delta)) / eps   # tighter than the classical bound
    with pytest.raises(ValueError):
        analytic_gaussian_sigma(0.0, 1e-5, 1.0)


def test_randomized_response_rates():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 5, 50000)
    keep = (rr_labels(y, 5, 1.0, rng) == y).mean()
    assert keep == pytest.approx(math.e / (math.e + 4), abs=0.01)
    n = 300
    s, r = rr_adjacency(np.array([0, 1]), np.array([1, 0]), n, 2.0, rng)
    q = 1 / (1 + math.e ** 2)
    assert (s.size // 2) == pytest.approx(q * n * (n - 1) / 2, rel=0.05)
    assert np.all(s != r)


@pytest.mark.data
def test_lastfm_workload_real_data(data_dir):
    from fgl_jax.data.musae import load_lastfm_asia
    g = load_lastfm_asia(data_dir)
    es = W.EdgeSet.from_graph(g)
    assert es.num_edges == 27806 and es.degree.max() == 216
    keep0, _ = W.greedy_init(es)
    res = W.mcmc_trim(es, keep0, 100, seed=0, argmax="direct")
    opt, _ = W.exact_min_max(es)
    assert W.is_covered(es, res.keep)
    assert opt <= res.f_history.min() <= res.f_history[0] == W.max_workload(es, keep0) < es.degree.max()


@pytest.mark.slow
def test_determinism_same_seed_same_everything():
    g = toy_graph(60, seed=5)
    cfg = LumosConfig(rounds=5, mcmc_iters=40)
    a, b = prepare(g, cfg), prepare(g, cfg)
    np.testing.assert_array_equal(a.keep, b.keep)
    np.testing.assert_array_equal(np.asarray(a.data.table), np.asarray(b.data.table))
    alg = lumos_algorithm(cfg, g.num_classes)
    ra, rb = (run(alg, p.data, jax.random.key(cfg.seed), cfg.rounds) for p in (a, b))
    for k in ra.history:
        np.testing.assert_array_equal(ra.history[k], rb.history[k])
    c = prepare(g, LumosConfig(rounds=5, mcmc_iters=40, seed=1))
    assert not np.array_equal(np.asarray(a.data.table), np.asarray(c.data.table))
