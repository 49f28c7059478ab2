"""Attribute-inference probes of what FedSage+ and FedTAD share (fgl_jax.privacy.inference; issue 51
item 2), NumPy only: the ridge probe against its normal equations written out, the
FedSage+ view (mean of the live generated slots) against a loop over nodes and slots, and on toy
client arrays each probe recovers a planted label from a view that contains it and stays at chance
on a view that does not (stated tolerances)."""
from __future__ import annotations

import numpy as np
import pytest

from fgl_jax.privacy import inference


def test_ridge_path_equals_the_normal_equations_with_an_unpenalised_intercept():
    rng = np.random.default_rng(0)
    for n, d in ((40, 12), (12, 40)):  # both the primal (d <= n) and the dual (d > n) solve
        x, a = rng.normal(size=(n, d)), rng.integers(0, 3, n)
        lam = 0.5
        (w, b), = inference._ridge_path(x, a, 3, (lam,))
        # reference: minimise |[x 1] theta - Y|^2 + lam n |w|^2 by its normal equations, written out
        z = np.hstack([x, np.ones((n, 1))])
        pen = lam * n * np.diag([1.0] * d + [0.0])
        theta = np.linalg.lstsq(z.T @ z + pen, z.T @ np.eye(3)[a], rcond=None)[0]
        np.testing.assert_allclose(w, theta[:d], atol=1e-8)
        np.testing.assert_allclose(b, theta[d], atol=1e-8)


def test_fedsage_view_is_the_mean_of_the_live_or_of_all_generated_slots():
    rng = np.random.default_rng(1)
    c, n, p, f = 2, 5, 3, 4
    gen, count = rng.normal(size=(c, n, p, f)), rng.integers(0, p + 1, (c, n))
    mask = rng.random((c, n)) < 0.8
    view, m = inference.fedsage_generated_view(gen, mask, count)
    every, _ = inference.fedsage_generated_view(gen, mask)
    np.testing.assert_allclose(every, gen.mean(2).reshape(c * n, f), rtol=1e-5, atol=1e-6)
    for i in range(c):
        for v in range(n):
            want = gen[i, v, :count[i, v]].mean(0) if count[i, v] else np.zeros(f)
            np.testing.assert_allclose(view[i * n + v], want, rtol=1e-5, atol=1e-6)
    assert (m == mask.reshape(-1)).all()


def _toy_clients(rng, c=6, n=60, k=3):
    """Node labels of c clients of n nodes."""
    return rng.integers(0, k, (c, n)), np.ones((c, n), bool)


def test_fedsage_probe_recovers_a_label_the_generated_features_carry_and_not_noise():
    rng = np.random.default_rng(2)
    y, mask = _toy_clients(rng)
    c, n, p, f = *y.shape, 4, 8
    centres = rng.normal(size=(3, f))
    # homophilous generated neighbours: features around the node's own class centre
    planted = centres[y][:, :, None, :] + 0.5 * rng.normal(size=(c, n, p, f))
    count = rng.integers(1, p + 1, (c, n))
    view, m = inference.fedsage_generated_view(planted, mask, count)
    r = inference.linear_probe(view, y.reshape(-1), mask=m)
    assert r["probe_acc"] > 0.9 > r["majority_acc"] + 0.3
    noise, m = inference.fedsage_generated_view(rng.normal(size=(c, n, p, f)), mask, count)
    r0 = inference.linear_probe(noise, y.reshape(-1), mask=m)
    assert r0["probe_acc"] < r["majority_acc"] + 0.12  # 180 scored nodes, chance ~1/3; stated tolerance


def test_fedtad_probe_recovers_each_clients_majority_label_from_its_class_knowledge():
    rng = np.random.default_rng(3)
    c, n, k = 200, 20, 4
    # each client skewed to one class (its majority), its training nodes drawn from that profile
    skew = rng.integers(0, k, c)
    profile = np.full((c, k), 0.1) + 0.6 * np.eye(k)[skew]
    y = np.stack([rng.choice(k, n, p=pr / pr.sum()) for pr in profile])
    train = rng.random((c, n)) < 0.7
    major = inference.majority_label(y, train)
    for i in range(5):  # against a direct count
        vals, counts = np.unique(y[i][train[i]], return_counts=True)
        assert major[i] == vals[counts.argmax()]
    # CKR: per class, the sum of the training nodes' reliabilities (here uniform in [0.5, 1])
    rel = rng.uniform(0.5, 1.0, (c, n)) * train
    ckr = np.stack([np.bincount(y[i], weights=rel[i], minlength=k) for i in range(c)])
    view = inference.fedtad_ckr_view(ckr)
    np.testing.assert_allclose(view.sum(1), 1.0)
    r = inference.linear_probe(view, major)
    assert r["probe_acc"] > 0.85 > r["majority_acc"] + 0.4
    r0 = inference.linear_probe(inference.fedtad_ckr_view(rng.random((c, k))), major)
    assert r0["probe_acc"] < r["majority_acc"] + 0.15  # 100 scored clients, chance ~1/4; stated tolerance
    assert inference.majority_label(y, np.zeros_like(train))[0] == -1
