"""FedGC end to end on a small synthetic graph through the engine: partition, expansion, self-training,
IB, condensation, evaluation at the evaluation rounds, the reported checkpoint; bad-input errors."""
import dataclasses

import numpy as np
import pytest

from fgl_jax.data.synthetic import csbm
from fgl_jax.systems.fedgc import FedGCRun, expand_nodes, select_result
from tests.fedgc_small import run_small, small_config, small_graph


@pytest.fixture(scope="module")
def small_run():
    return run_small(small_config())


@pytest.mark.slow
def test_end_to_end_smoke(small_run):
    g = small_graph()
    run, res, fr = small_run
    assert np.all(np.isfinite(fr.losses)) and fr.losses.shape == (12,)
    assert res.history["train_loss"].shape == (12,)
    a, x, y = fr.condensed
    n_syn = int(np.floor(g.train_mask.sum() * 0.2))
    assert x.shape == (n_syn, 12) and a.shape == (n_syn, n_syn) and np.allclose(a, a.T, atol=1e-6)
    assert res.best["test_acc"] > 1.0 / 3 + 0.15, res.best  # well above chance (3 classes)
    assert [e["round"] for e in res.evaluations] == [6, 12] == [h["round"] for h in fr.history]
    # the reported checkpoint is the evaluation round with the best pooled validation accuracy
    assert res.best == select_result(res.evaluations, "val")
    assert res.best["best_round"] == res.best["round"] in (6, 12)
    # `selected` is G' at the reported checkpoint: the last round's only if that round was chosen
    assert fr.selected is not None and all(u.shape == v.shape for u, v in zip(fr.selected, fr.condensed))
    assert all(np.array_equal(u, v) for u, v in zip(fr.selected, fr.condensed)) == (res.best["round"] == 12)


def test_expansion_and_protocols():
    g = csbm(num_nodes=60, num_classes=2, num_features=4, avg_degree=3.0, seed=0)
    nodes = np.array([0])
    one = expand_nodes(g, nodes, 1)
    assert set(one) == {0} | set(g.senders[g.receivers == 0])
    hist = [{"round": 1, "val_acc": 0.9, "test_acc": 0.5, "val_acc_noft": 0.1, "test_acc_noft": 0.2},
            {"round": 2, "val_acc": 0.8, "test_acc": 0.7, "val_acc_noft": 0.3, "test_acc_noft": 0.1}]
    assert select_result(hist, "val")["test_acc"] == 0.5 == select_result(hist, "val")["best_test"]
    assert select_result(hist, "paper")["test_acc"] == 0.7 and select_result(hist, "paper")["best_round"] == 2


def test_bad_inputs():
    with pytest.raises(ValueError, match="rate"):
        small_config(rate=1.5)
    with pytest.raises(ValueError, match="gamma"):
        small_config(gamma=-1.0)
    with pytest.raises(ValueError, match="eval_rounds"):
        small_config(eval_rounds=(0,))
    g = csbm(num_nodes=120, num_classes=3, num_features=6, seed=2)
    g = dataclasses.replace(g, train_mask=g.train_mask & (g.y != 2))  # class 2 has no training node
    with pytest.raises(ValueError, match="no training node"):
        FedGCRun(small_config(defence="none"), graph=g)


def test_evaluation_rounds_above_rounds_are_skipped():
    assert small_config(rounds=8).evaluation_rounds == (6,)
    assert small_config(rounds=5).evaluation_rounds == (5,)
    assert small_config(eval_rounds=(4, 6, 12)).eval_period == 2
