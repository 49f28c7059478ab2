"""FedGC end to end on a small synthetic graph: partition, expansion, self-training, IB, condensation,
evaluation; plus bad-input errors."""
import dataclasses

import numpy as np
import pytest

from fgl_jax.condense import CondenseConfig
from fgl_jax.condense.evaluate import EvalConfig
from fgl_jax.data.synthetic import csbm
from fgl_jax.systems.fedgc import FedGCConfig, IBConfig, expand_nodes, run_fedgc, select_result


def small_config(**kw):
    cfg = FedGCConfig(num_clients=3, rate=0.2, rounds=12, eval_rounds=(6, 12), st_rounds=20,
                      condense=CondenseConfig(hidden=16, pge_hidden=8, lr_feat=1e-2, adj_period=6, adj_steps=2),
                      ib=IBConfig(hidden=8, epochs=5, decoder_hidden=16),
                      eval=EvalConfig(hidden=16, lr=0.05, iters=40, decay_at=20, eval_every=20, finetune_steps=10,
                                      ft_eval_every=5),
                      st_hidden=16)
    return dataclasses.replace(cfg, **kw)


def test_end_to_end_smoke():
    g = csbm(num_nodes=240, num_classes=3, num_features=12, avg_degree=5.0, homophily=0.8,
             feature_signal=2.0, seed=1)
    for use_ib in (True,):  # the no-IB path is the IB path minus `ib_transform` (condense tests cover it)
        res = run_fedgc(g, small_config(use_ib=use_ib), seed=0, log=lambda m: None)
        assert np.all(np.isfinite(res.losses)) and res.losses.shape == (12,)
        a, x, y = res.condensed
        n_syn = int(np.floor(g.train_mask.sum() * 0.2))
        assert x.shape == (n_syn, 12) and a.shape == (n_syn, n_syn) and np.allclose(a, a.T, atol=1e-6)
        assert res.final["test_acc"] > 1.0 / 3 + 0.15, res.final  # well above chance (3 classes)
        assert [h["round"] for h in res.history] == [6, 12]
        # `selected` is G' at the reported checkpoint: the last round's only if that round was chosen
        assert res.selected is not None and all(u.shape == v.shape for u, v in zip(res.selected, res.condensed))
        assert all(np.array_equal(u, v) for u, v in zip(res.selected, res.condensed)) == (res.final["round"] == 12)


def test_expansion_and_protocols():
    g = csbm(num_nodes=60, num_classes=2, num_features=4, avg_degree=3.0, seed=0)
    nodes = np.array([0])
    one = expand_nodes(g, nodes, 1)
    assert set(one) == {0} | set(g.senders[g.receivers == 0])
    hist = [{"round": 1, "val_acc": 0.9, "test_acc": 0.5, "val_acc_noft": 0.1, "test_acc_noft": 0.2},
            {"round": 2, "val_acc": 0.8, "test_acc": 0.7, "val_acc_noft": 0.3, "test_acc_noft": 0.1}]
    assert select_result(hist, "val")["test_acc"] == 0.5
    assert select_result(hist, "paper")["test_acc"] == 0.7


def test_bad_inputs():
    with pytest.raises(ValueError, match="rate"):
        small_config(rate=1.5)
    with pytest.raises(ValueError, match="gamma"):
        small_config(ib=IBConfig(gamma=-1.0))
    with pytest.raises(ValueError, match="eval_rounds"):
        small_config(eval_rounds=(50,))
    g = csbm(num_nodes=120, num_classes=3, num_features=6, seed=2)
    g = dataclasses.replace(g, train_mask=g.train_mask & (g.y != 2))  # class 2 has no training node
    with pytest.raises(ValueError, match="no training node"):
        run_fedgc(g, small_config(use_ib=False), log=lambda m: None)
