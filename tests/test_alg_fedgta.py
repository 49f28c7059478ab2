"""FedGTA: the label propagation, mixed moments, smoothing confidence and similarity-based
aggregation weights against a dense NumPy re-derivation on a toy graph (PyG LabelPropagation's
arithmetic written out); a round's personalised aggregates rebuilt from its clients' models; the
run under partial participation and through the CLI with --resume."""
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from fgl_jax import registry
from fgl_jax.algorithms.fedgta import FedGTAHParams, aggregation_weights, client_statistics
from fgl_jax.systems.baseline import RunConfig, build
from fgl_jax.federated import run
from tests.alg_helpers import cli_run_and_resume, toy_setup


def _softmax(z):
    e = np.exp(z - z.max(1, keepdims=True))
    return e / e.sum(1, keepdims=True)


def _np_statistics(logits, s, r, y, train, k, hp):
    """Dense re-derivation on the unpadded client graph (edges s -> r)."""
    n = len(y)
    a = np.zeros((n, n))
    np.add.at(a, (r, s), 1.0)                     # row = receiver
    deg = a.sum(1)                                 # in-degree (gcn_norm without self-loops)
    dinv = np.where(deg > 0, np.maximum(deg, 1) ** -0.5, 0.0)
    a_hat = dinv[:, None] * a * dinv[None, :]
    y0 = np.where(train[:, None], _softmax(logits), 0.0)
    out = y0.copy()
    for _ in range(hp.fedgta_prop_steps):
        out = np.clip(hp.fedgta_lp_alpha * a_hat @ out + (1 - hp.fedgta_lp_alpha) * y0, 0, 1)
    onehot = np.eye(k)[y]
    raw = np.where(train[:, None], onehot, _softmax(out))
    dis = np.where(train[:, None], onehot, _softmax(out / hp.fedgta_temperature))
    mom_raw = [np.mean(raw ** p, 0) for p in range(1, hp.fedgta_num_moments + 1)]
    mom_cen = [np.mean((raw - raw.mean(0)) ** p, 0) for p in range(1, hp.fedgta_num_moments + 1)]
    moments = np.concatenate([np.stack(mom_raw), np.stack(mom_cen)]).reshape(-1)
    nn_ = np.bincount(s, minlength=n) + np.bincount(r, minlength=n)
    conf = nn_.sum() * k * math.exp(-1) + (nn_ * (dis * np.log(dis + 1e-8)).sum(1)).sum()
    return moments, conf


def _np_weights(moments, conf, tau):
    c = len(conf)
    w = np.zeros((c, c))
    for i in range(c):
        for j in range(c):
            cos = moments[i] @ moments[j] / (np.linalg.norm(moments[i]) * np.linalg.norm(moments[j]))
            if cos > tau or i == j:
                w[i, j] = conf[j]
        w[i] /= w[i].sum()
    return w


def test_client_statistics_match_a_dense_numpy_label_propagation():
    data, model, _ = toy_setup(hidden=8)
    hp = FedGTAHParams(fedgta_prop_steps=3, fedgta_num_moments=4, fedgta_temperature=5.0)
    params = model.init({"params": jax.random.key(1)}, jax.tree.map(lambda a: a[0], data.eval), train=False)
    k = int(model.num_classes)
    for c in range(data.eval.num_clients):
        b = jax.tree.map(lambda a: a[c], data.eval)
        mom, conf = jax.jit(lambda p, b: client_statistics(model, p, b, k, hp))(params, b)
        nodes = np.asarray(b.node_mask)
        em = np.asarray(b.edge_mask)
        s, r = np.asarray(b.senders)[em], np.asarray(b.receivers)[em]
        logits = np.asarray(model.apply(params, b), np.float64)[nodes]
        want_m, want_c = _np_statistics(logits, s, r, np.asarray(b.y)[nodes], np.asarray(b.train_mask)[nodes], k, hp)
        np.testing.assert_allclose(np.asarray(mom), want_m, rtol=1e-4, atol=1e-6)
        assert float(conf) == pytest.approx(want_c, rel=1e-4)
        assert want_c > 0


def test_aggregation_weights_match_numpy():
    rng = np.random.default_rng(0)
    base = rng.random((2, 12))
    moments = np.stack([base[0], base[0] + 0.01 * rng.random(12), base[1], -base[1], base[1] * 2])
    conf = rng.random(5) + 0.5
    for tau in (0.5, 0.99, -0.5):
        got = np.asarray(aggregation_weights(jnp.asarray(moments, jnp.float32), jnp.asarray(conf, jnp.float32), tau))
        np.testing.assert_allclose(got, _np_weights(moments, conf, tau), rtol=1e-5, atol=1e-7)
    # tau = 0.99: client 3 (moments = -m_2) accepts only itself; clients 2 and 4 (parallel) pool
    w = _np_weights(moments, conf, 0.99)
    assert w[3, 3] == 1.0 and w[2, 4] > 0


@pytest.mark.slow
def test_a_round_gives_each_client_its_weighted_aggregate():
    data, model, common = toy_setup(local_steps=2)
    hp = FedGTAHParams(fedgta_accept_alpha=0.9)
    alg = registry.get("algorithm", "fedgta")(model, common, hp)
    st1, m1 = jax.jit(alg.round)(alg.init(jax.random.key(0), data), data, jax.random.key(1))
    idx = np.asarray(data.train_index)
    trained = jax.tree.map(lambda a: np.asarray(a, np.float64)[idx], st1.trained)
    k = int(model.num_classes)
    stat = jax.jit(lambda p, b: client_statistics(model, p, b, k, hp))
    stats = [stat(jax.tree.map(lambda a: a[c], st1.trained), jax.tree.map(lambda a: a[i], data.train))
             for i, c in enumerate(idx)]
    w = _np_weights(np.stack([np.asarray(s[0], np.float64) for s in stats]),
                    np.array([float(s[1]) for s in stats]), hp.fedgta_accept_alpha)
    want = jax.tree.map(lambda x: np.tensordot(w, x, axes=1), trained)
    got = jax.tree.map(lambda a: np.asarray(a)[idx], st1.personal)
    for a, b in zip(jax.tree.leaves(got), jax.tree.leaves(want)):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)
    assert np.isfinite(float(m1["test_acc"]))


@pytest.mark.slow   # integration: builds and compiles whole runs (covered fast by the tests above)
def test_fedgta_runs_with_partial_participation():
    prog = build(RunConfig(dataset="csbm", algorithm="fedgta", clients=4, rounds=3, hidden=8, split="keep",
                           client_fraction=0.5))
    res = run(prog.algorithm, prog.data, jax.random.key(0), 3)
    assert np.isfinite(res.history["test_acc"]).all()


@pytest.mark.slow   # integration: builds and compiles whole runs (covered fast by the tests above)
def test_fedgta_cli_run_and_resume(tmp_path):
    cli_run_and_resume(tmp_path, "fedgta", "--fedgta-prop-steps", "3")
