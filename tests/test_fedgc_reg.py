"""FedGC's Reg defence baseline (Nasr et al. 2018 adversarial regularisation of the clients' local loss).

The uploaded aggregate is checked against an independent per-client, per-class loop written here
(NumPy-side weights, plain jax.grad per client), λ = 0 against the undefended fused path, and the
inference model against posteriors that do and do not carry membership.
"""
import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from fgl_jax.systems.fedgc.condense import CondenseConfig, aggregated_client_grads, build_client_data, init_relay
from fgl_jax.systems.fedgc.condense.reg import (attack_logit, attack_loss, attack_models, reg_aggregated_client_grads, train_attack,
                                  with_reference)
from fgl_jax.systems.fedgc.condense.relay import relay_block
from fgl_jax.data.synthetic import csbm
from fgl_jax.systems.fedgc import FedGCConfig, FedGCRun, expand_clients
from tests.helpers import check_defended_round

M, C, D = 3, 3, 8
STEPS, LR, HID = 30, 1e-2, 16


@pytest.fixture(scope="module")
def reg_data():
    g = csbm(num_nodes=180, num_classes=C, num_features=D, avg_degree=4.0, feature_signal=2.0, seed=2)
    assignment = np.random.default_rng(1).integers(0, M, g.num_nodes)
    graphs, _ = expand_clients(g, assignment, M, 2)
    feats = [h.dense_x() for h in graphs]
    data = build_client_data(graphs, feats)
    ref = build_client_data([h.with_masks(h.val_mask, h.val_mask, h.test_mask) for h in graphs], feats)
    assert all(int(np.asarray(ref.counts[j]).sum()) > 0 for j in range(M))
    theta = init_relay(jax.random.PRNGKey(4), D, 16, C)
    return with_reference(data, ref), theta


def _flat(tree):
    return np.concatenate([np.asarray(v).ravel() for v in jax.tree.leaves(tree)])


@pytest.mark.slow
def test_reg_upload_equals_independent_per_client_loop(reg_data):
    data, theta = reg_data
    pool, key, lam = jnp.int32(0), jax.random.PRNGKey(9), 0.7

    @jax.jit
    def under_test(theta, data):  # one compile: the Reg aggregate, the clients' h, λ = 0 and the clean path
        return (reg_aggregated_client_grads(theta, data, pool, key, lam, STEPS, LR, HID),
                attack_models(theta, data, pool, key, STEPS, LR, HID),
                reg_aggregated_client_grads(theta, data, pool, key, 0.0, STEPS, LR, HID),
                aggregated_client_grads(theta, data, pool))

    got, h, zero, clean = under_test(theta, data)

    @functools.partial(jax.jit, static_argnums=6)
    def local_grad(t, src, nbr, wt, tm, hj, c):
        # what client j differentiates: NLL + λ · mean log h(p, e_c) over its class-c targets
        m = tm.astype(jnp.float32) / tm.sum()
        return jax.grad(lambda t: (-jax.nn.log_softmax(relay_block(t, src, nbr, wt))[:, c] * m).sum()
                        + lam * (jax.nn.log_sigmoid(attack_logit(hj, jax.nn.softmax(relay_block(t, src, nbr, wt)),
                                                                 jnp.full(tm.shape, c))) * m).sum())(t)

    counts = np.asarray(data.counts)
    w = counts / np.maximum(counts.sum(0, keepdims=True), 1.0)       # n_j(c) / n(c), Eq. 3
    want = {k: np.zeros((C,) + v.shape, np.float64) for k, v in theta.items()}
    for j in range(M):
        hj = jax.tree.map(lambda a: a[j], h)
        for c in range(C):
            b = data.blocks[c]
            rows, nbr, wt, tm = (np.asarray(a[j, 0]) for a in (b.rows, b.nbr, b.weight, b.tmask))
            if not tm.any():
                continue
            gj = local_grad(theta, data.inputs[j][rows], nbr, wt, tm, hj, c)
            for k in want:
                want[k][c] += w[j, c] * np.asarray(gj[k], np.float64)
    np.testing.assert_allclose(_flat(got), _flat(want), rtol=2e-4, atol=1e-6)
    # the regulariser changes the upload, and λ = 0 is exactly the undefended fused aggregate
    assert not np.allclose(_flat(got), _flat(clean), atol=1e-4)
    np.testing.assert_allclose(_flat(zero), _flat(clean), rtol=1e-6, atol=1e-8)


@pytest.mark.slow
def test_inference_model_detects_membership_only_when_present():
    rng = np.random.default_rng(0)
    n = 200
    y_mem, y_ref = rng.integers(0, C, n), rng.integers(0, C, n)
    peaked = lambda y: np.where(np.eye(C)[y] > 0, 0.9, 0.05).astype(np.float32)  # over-confident on members
    flat = np.full((n, C), 1.0 / C, np.float32)
    ones = np.ones(n, bool)
    mem, ref = (jnp.asarray(peaked(y_mem)), jnp.asarray(y_mem), ones), (jnp.asarray(flat), jnp.asarray(y_ref), ones)
    h = train_attack(jax.random.PRNGKey(0), mem, ref, 200, 1e-2, HID)
    acc = 0.5 * (np.mean(np.asarray(attack_logit(h, *mem[:2])) > 0) + np.mean(np.asarray(attack_logit(h, *ref[:2])) < 0))
    assert acc > 0.95
    # same distribution for members and reference: nothing to learn, loss stays at 2·log 2 (chance)
    same = (jnp.asarray(flat), jnp.asarray(y_ref), ones)
    h0 = train_attack(jax.random.PRNGKey(1), (jnp.asarray(flat), jnp.asarray(y_mem), ones), same, 200, 1e-2, HID)
    assert float(attack_loss(h0, (jnp.asarray(flat), jnp.asarray(y_mem), ones), same)) == pytest.approx(2 * np.log(2), abs=0.02)
    # masked-out rows do not count
    half = np.arange(n) < n // 2
    l_masked = attack_loss(h, (mem[0], mem[1], half), ref)
    l_sub = attack_loss(h, (mem[0][:n // 2], mem[1][:n // 2], half[:n // 2]), ref)
    assert float(l_masked) == pytest.approx(float(l_sub), rel=1e-6)


@pytest.mark.slow
def test_reg_round_and_configuration(reg_data):
    data, _ = reg_data
    cfg = CondenseConfig(hidden=16, pge_hidden=8, lr_feat=1e-2, adj_period=4, adj_steps=0, reg_lambda=1.0,
                         reg_steps=STEPS, reg_lr=LR, reg_hidden=HID)
    check_defended_round(cfg, data, D, C, salt=0x2E6,  # fed_round's Reg key salt
                         defended_aggregate=lambda t, d, k: reg_aggregated_client_grads(t, d, jnp.int32(0), k, 1.0,
                                                                                       STEPS, LR, HID))
    # bad input: clear errors naming the field
    for kw, match in (({"reg_lambda": 0.0}, "reg_lambda"), ({"reg_lambda": 1.0, "reg_steps": 0}, "reg_steps"),
                      ({"reg_lambda": 1.0, "reg_lr": -1.0}, "reg_lr"),
                      ({"reg_lambda": 1.0, "ldp_clip": 0.1}, "exclusive")):
        with pytest.raises(ValueError, match=match):
            CondenseConfig(**kw)
    with pytest.raises(ValueError, match="reg_lambda"):
        FedGCConfig(defence="reg", reg_lambda=-1.0)
    with pytest.raises(ValueError, match="reference"):
        attack_models(init_relay(jax.random.PRNGKey(0), D, 16, C), data.replace(reference=()), jnp.int32(0),
                      jax.random.PRNGKey(0), 2, LR, HID)
    assert FedGCConfig(defence="reg").condense_config.reg_lambda == 1.0


@pytest.mark.slow
def test_reg_program_builds_reference_from_own_validation_nodes():
    g = csbm(num_nodes=120, num_classes=2, num_features=6, avg_degree=4.0, seed=3)
    prog = FedGCRun(FedGCConfig(clients=2, rate=0.2, rounds=2, defence="reg", reg_lambda=0.5, relay_hidden=8,
                                pge_hidden=8, reg_steps=3), graph=g).program
    assert prog.describe["method"] == "FedGC-Reg"
    ref = prog.data.client.reference
    assert len(ref) == 2
    # reference targets per client and class = its own validation nodes (counts of the reference blocks)
    ref_targets = sum(int(np.asarray(b.tmask).sum()) for b in ref)
    assert ref_targets == int(g.val_mask.sum()) > 0   # every node has one owner: all validation nodes, once
