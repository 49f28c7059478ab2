"""MOON: the contrastive term against a direct NumPy formula on fixed embeddings; the round's wiring
(first round = FedAvg; later rounds: the reported first-step loss = CE + mu * l_con with z_prev from
the client's previous model, recomputed here)."""
import dataclasses

import jax
import numpy as np
import pytest

from fgl_jax import registry, schema
from fgl_jax.algorithms.moon import moon_contrastive
from fgl_jax.federated.metrics import masked_cross_entropy
from fgl_jax.nn.models import apply_with_embedding
from fgl_jax.systems.baseline import RunConfig
from tests.alg_helpers import assert_trees_close, toy_setup


def _np_moon(z, zg, zp, mask, tau):
    def cos(a, b):
        return (a * b).sum(1) / (np.maximum(np.linalg.norm(a, axis=1), 1e-8) * np.maximum(np.linalg.norm(b, axis=1), 1e-8))
    pos, neg = np.exp(cos(z, zg) / tau), np.exp(cos(z, zp) / tau)
    per = -np.log(pos / (pos + neg))
    return (per * mask).sum() / mask.sum()


def test_contrastive_term_matches_numpy():
    rng = np.random.default_rng(0)
    z, zg, zp = (rng.normal(size=(7, 5)) for _ in range(3))
    z[3] = 0.0  # a dead (all-zero) ReLU embedding: cosine 0, no NaN
    mask = np.array([1, 1, 0, 1, 1, 0, 1], np.float64)
    for tau in (0.5, 2.0):
        got = float(moon_contrastive(*(jax.numpy.asarray(a, jax.numpy.float32) for a in (z, zg, zp)),
                                     jax.numpy.asarray(mask > 0), tau))
        assert got == pytest.approx(_np_moon(z, zg, zp, mask, tau), rel=1e-5)
    # it falls as z moves towards z_glob and away from z_prev
    near = float(moon_contrastive(zg + 0.01 * z, zg, zp, mask > 0, 0.5))
    far = float(moon_contrastive(zp + 0.01 * z, zg, zp, mask > 0, 0.5))
    assert near < far


@pytest.mark.slow
def test_moon_round_wiring():
    data, model, common = toy_setup(local_steps=2)
    mu, tau = 2.0, 0.5
    hp = registry.entry("algorithm", "moon").info["hparams"](moon_mu=mu, moon_tau=tau, moon_nodes="train")
    alg = registry.get("algorithm", "moon")(model, common, hp)
    avg = registry.get("algorithm", "fedavg")(model, common, None)
    st = alg.init(jax.random.key(0), data)
    st_avg = avg.init(jax.random.key(0), data)
    round_fn = jax.jit(alg.round)
    st1, _ = round_fn(st, data, jax.random.key(1))
    ref, _ = jax.jit(avg.round)(st_avg, data, jax.random.key(1))
    assert_trees_close(st1.server, ref.server, rtol=1e-6, atol=1e-7)   # round 1: no contrastive term
    st2, m2 = round_fn(st1, data, jax.random.key(2))
    # the first local step starts at the global model, so z = z_glob there: recompute the loss
    losses = []
    for i, c in enumerate(np.asarray(data.train_index)):
        b = jax.tree.map(lambda a: a[i], data.train)
        zg, logits = apply_with_embedding(model, st1.server, b)
        zp, _ = apply_with_embedding(model, jax.tree.map(lambda a: a[c], st1.prev), b)
        ce = float(masked_cross_entropy(logits, b.y, b.train_mask))
        con = _np_moon(*(np.asarray(a, np.float64) for a in (zg, zg, zp)), np.asarray(b.train_mask, np.float64), tau)
        losses.append(ce + mu * con)
    w = np.asarray(data.train_weight, np.float64)
    assert float(m2["train_loss"]) == pytest.approx(float((np.array(losses) * w).sum() / w.sum()), rel=1e-4)
    # the previous models moved to the clients' round-2 models, and differ from the global one
    assert not np.allclose(np.asarray(jax.tree.leaves(st2.prev)[0][0]), np.asarray(jax.tree.leaves(st2.server)[0]))


def test_moon_options():
    cfg = schema.make(RunConfig, {"algorithm": "moon", "moon_mu": 5.0, "moon_nodes": "all"})
    assert cfg.hparams().moon_mu == 5.0 and cfg.hparams().moon_nodes == "all"
    with pytest.raises(ValueError, match="moon_tau"):
        schema.make(RunConfig, {"algorithm": "moon", "moon_tau": 0.0})
