"""Robustness perturbations (fgl_jax/data/processing.py)."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from fgl_jax.data import processing
from tests.helpers import toy_graph

KINDS = processing.KINDS


def _pairs(g):
    s, r = g.senders.astype(np.int64), g.receivers.astype(np.int64)
    keep = s != r
    return set((np.minimum(s, r)[keep] * g.num_nodes + np.maximum(s, r)[keep]).tolist())


@pytest.mark.parametrize("kind", KINDS)
def test_rate_zero_is_the_identity(kind):
    g = toy_graph(n=80, seed=1)
    out = processing.perturb(g, seed=3, **{kind: 0.0})
    assert out is g


@pytest.mark.parametrize("rate", [0.1, 0.5])
@pytest.mark.parametrize("sparse", [False, True])
def test_feature_perturbations_change_rate_of_entries(rate, sparse):
    g = toy_graph(n=200, seed=1, sparse=sparse)
    x = g.dense_x()
    out = processing.feature_sparsity(g, rate, seed=0).dense_x()
    nz = x != 0
    zeroed = nz & (out == 0)
    assert (out[~zeroed] == x[~zeroed]).all()
    assert abs(zeroed.sum() / nz.sum() - rate) <= 1 / nz.sum() + 1e-12
    noisy = processing.feature_noise(g, rate, seed=0, std=0.5).dense_x()
    changed = noisy != x
    assert abs(changed.mean() - rate) <= 1 / x.size + 1e-12
    assert abs(np.std(noisy[changed] - x[changed]) / 0.5 - 1) < 0.15   # >= 240 draws: std error < 5%


@pytest.mark.parametrize("rate", [0.1, 0.4])
def test_topology_perturbations(rate):
    g = toy_graph(n=200, seed=2)
    before = _pairs(g)
    sparse = processing.topology_sparsity(g, rate, seed=0)
    after = _pairs(sparse)
    assert after <= before
    assert abs(1 - len(after) / len(before) - rate) <= 1 / len(before)
    assert sparse.num_edges == 2 * len(after)                        # both directions removed together
    noisy = processing.topology_noise(g, rate, seed=0)
    after = _pairs(noisy)
    assert len(after) == len(before)                                  # as many added as removed
    assert abs(len(before - after) / len(before) - rate) <= 1 / len(before)
    s, r = noisy.senders, noisy.receivers
    assert set(zip(s.tolist(), r.tolist())) == set(zip(r.tolist(), s.tolist()))   # still symmetric


@pytest.mark.parametrize("rate", [0.2, 0.6])
def test_label_perturbations(rate):
    g = toy_graph(n=300, seed=4)
    n_train = g.train_mask.sum()
    sparse = processing.label_sparsity(g, rate, seed=0)
    assert (sparse.train_mask <= g.train_mask).all()
    assert abs(1 - sparse.train_mask.sum() / n_train - rate) <= 1 / n_train
    noisy = processing.label_noise(g, rate, seed=0)
    changed = noisy.y != g.y
    assert not changed[~g.train_mask].any()                           # validation/test labels stay clean
    assert abs(changed.sum() / n_train - rate) <= 1 / n_train         # every picked label really changes
    assert noisy.y.min() >= 0 and noisy.y.max() < g.num_classes


def test_seeds_and_errors():
    g = toy_graph(n=100, seed=1)
    a = processing.feature_noise(g, 0.3, seed=1).dense_x()
    assert np.array_equal(a, processing.feature_noise(g, 0.3, seed=1).dense_x())
    assert not np.array_equal(a, processing.feature_noise(g, 0.3, seed=2).dense_x())
    with pytest.raises(ValueError, match="rate must be in"):
        processing.label_noise(g, 1.5)
    with pytest.raises(ValueError, match="unknown perturbation"):
        processing.perturb(g, edge_noise=0.1)


def test_config_applies_label_sparsity_before_the_partition():
    from fgl_jax.systems.baseline import RunConfig
    from fgl_jax.systems.baseline.program import prepare
    g = toy_graph(n=100, seed=1)
    cfg = RunConfig(dataset="toy", clients=2, split="keep", label_sparsity=0.5, topology_sparsity=0.5)
    prep = prepare(cfg, g)
    assert prep.graph.train_mask.sum() == round(0.5 * g.train_mask.sum())
    assert len(_pairs(prep.graph)) == len(_pairs(g)) - round(0.5 * len(_pairs(g)))
