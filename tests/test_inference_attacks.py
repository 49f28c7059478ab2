"""Membership and attribute inference for any algorithm (fgl_jax.privacy.inference, --eval-mia; issue 51
item 2): the AUC against a brute-force count over pairs, the threshold attack against scores written
out with jax.nn.log_softmax, a random model at AUC 0.5 (stated tolerance), the run's finalize hook
against per-client logits computed client by client, and the linear probe on planted attributes."""
from __future__ import annotations

import jax
import numpy as np
import pytest

from fgl_jax.privacy import inference
from fgl_jax.systems.baseline import RunConfig
from fgl_jax.systems.baseline.program import build, model_from_config
from tests.helpers import toy_graph


def _pair_auc(pos, neg):
    """P(pos > neg) + P(tie) / 2 by counting every pair."""
    pos, neg = np.asarray(pos, np.float64)[:, None], np.asarray(neg, np.float64)[None, :]
    return float(((pos > neg) + 0.5 * (pos == neg)).mean())


def test_auc_is_the_pairwise_count_with_ties():
    rng = np.random.default_rng(0)
    s = rng.integers(0, 6, 80).astype(float)  # many ties
    y = rng.random(80) < 0.4
    assert inference.auc(s, y) == pytest.approx(_pair_auc(s[y], s[~y]), abs=1e-12)
    from fgl_jax.systems.fedgc.attack import auc  # FedGC's attack uses the shared one
    assert auc is inference.auc


@pytest.mark.parametrize("kind", inference.SCORES)
def test_membership_auc_matches_scores_written_out(kind):
    rng = np.random.default_rng(1)
    logits = rng.normal(size=(3, 20, 4)) * 2
    y = rng.integers(0, 4, (3, 20))
    mem = rng.random((3, 20)) < 0.4
    non = ~mem & (rng.random((3, 20)) < 0.7)
    logp = np.asarray(jax.nn.log_softmax(logits, -1), np.float64)
    score = np.take_along_axis(logp, y[..., None], -1)[..., 0] if kind == "loss" else np.exp(logp).max(-1)
    got = inference.membership_auc(logits, y, mem, non, kind)
    assert got == pytest.approx(_pair_auc(score[mem], score[non]), abs=1e-9)


def test_a_random_model_leaks_nothing():
    # logits independent of membership: the AUC's sd under the null is sqrt((n1+n2+1)/(12 n1 n2))
    # ~ 0.018 for 1500 + 1500 nodes; tolerance 0.06 (> 3 sd)
    rng = np.random.default_rng(2)
    logits, y = rng.normal(size=(3000, 5)), rng.integers(0, 5, 3000)
    mem = np.zeros(3000, bool)
    mem[:1500] = True
    for kind in inference.SCORES:
        assert abs(inference.membership_auc(logits, y, mem, ~mem, kind) - 0.5) < 0.06


@pytest.mark.slow
def test_the_run_hook_attacks_every_clients_nodes_with_the_final_global_model():
    g = toy_graph(n=60, num_features=8, sparse=True, seed=1)
    cfg = RunConfig(dataset="toy", clients=3, rounds=1, hidden=8, split="keep", eval_mia=True)
    prog = build(cfg, g)
    state = jax.jit(prog.algorithm.init)(jax.random.key(0), prog.data)
    got = prog.hooks.finalize(type("R", (), {"state": state})())["mia"]
    # reference: the model applied client by client, the masks read from the batch, pairs counted
    model = model_from_config(cfg, g)[0]
    apply = jax.jit(lambda one: jax.nn.log_softmax(model.apply(state.server, one, train=False), -1))
    b = prog.data.eval
    pos, neg = [], []
    for c in range(int(b.num_clients)):  # one client at a time (padded alike: one compilation)
        one = jax.tree.map(lambda a: a[c], b)
        lp = np.asarray(apply(one), np.float64)
        s = lp[np.arange(lp.shape[0]), np.asarray(one.y)]
        real = np.asarray(one.node_mask, bool)
        pos.append(s[np.asarray(one.train_mask, bool) & real])
        neg.append(s[np.asarray(one.test_mask, bool) & real])
    pos, neg = np.concatenate(pos), np.concatenate(neg)
    assert got["members"] == len(pos) and got["nonmembers"] == len(neg) and got["model"] == "global"
    assert got["auc_loss"] == pytest.approx(_pair_auc(pos, neg), abs=1e-6)


def test_linear_probe_recovers_a_planted_attribute_and_not_noise():
    rng = np.random.default_rng(3)
    attr = rng.integers(0, 3, 400)
    planted = np.eye(3)[attr] @ rng.normal(size=(3, 16)) + 0.1 * rng.normal(size=(400, 16))
    r = inference.linear_probe(planted, attr)
    assert r["probe_acc"] > 0.95 > r["majority_acc"]
    noise = inference.linear_probe(rng.normal(size=(400, 16)), attr)
    assert noise["probe_acc"] < r["majority_acc"] + 0.15  # chance level ~1/3; stated loose tolerance
    with pytest.raises(ValueError, match="linear_probe"):
        inference.linear_probe(planted[:10], attr)
