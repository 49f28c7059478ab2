"""SCAFFOLD against a NumPy re-derivation: softmax regression (a 1-layer MLP), 3 clients, plain SGD,
3 local steps, 3 rounds, global step size 0.8; the server model, c and every c_i are compared."""
import jax
import numpy as np
import pytest

from fgl_jax import registry, schema
from fgl_jax.systems.baseline import RunConfig
from tests.alg_helpers import assert_trees_close, softmax_regression_grad as _grad, toy_setup

LR, STEPS, ETA_G = 0.3, 3, 0.8


def test_scaffold_matches_a_numpy_rederivation():
    data, model, common = toy_setup(model="mlp", local_steps=STEPS, lr=LR, optimizer="sgd")
    common = common.__class__(local_steps=STEPS, optim=common.optim.__class__(name="sgd", lr=LR, momentum=0.0))
    model = model.clone(num_layers=1)
    alg = registry.get("algorithm", "scaffold")(model, common, registry.entry("algorithm", "scaffold").info["hparams"](ETA_G))
    state = alg.init(jax.random.key(0), data)
    p = jax.device_get(state.server)["params"]
    w, b = np.asarray(p["layer_0"]["kernel"], np.float64), np.asarray(p["bias_0"], np.float64)
    tr = data.train
    xs, ys, ms = (np.asarray(a, np.float64) for a in (tr.features, tr.y, tr.train_mask))
    ys = ys.astype(int)
    k = int(model.num_classes)
    ct = xs.shape[0]
    share = np.asarray(data.train_weight, np.float64) / np.asarray(data.train_weight).sum()
    cw, cb = np.zeros_like(w), np.zeros_like(b)
    ciw, cib = np.zeros((ct,) + w.shape), np.zeros((ct,) + b.shape)
    round_fn = jax.jit(alg.round)
    for r in range(3):
        new_w, new_b, new_ciw, new_cib = [], [], ciw.copy(), cib.copy()
        for i in range(ct):
            yw, yb = w.copy(), b.copy()
            for _ in range(STEPS):
                gw, gb = _grad(yw, yb, xs[i], ys[i], ms[i], k)
                yw, yb = yw - LR * (gw - ciw[i] + cw), yb - LR * (gb - cib[i] + cb)
            new_ciw[i] = ciw[i] - cw + (w - yw) / (STEPS * LR)
            new_cib[i] = cib[i] - cb + (b - yb) / (STEPS * LR)
            new_w.append(yw)
            new_b.append(yb)
        w = w + ETA_G * sum(s * (yw - w) for s, yw in zip(share, new_w))
        b = b + ETA_G * sum(s * (yb - b) for s, yb in zip(share, new_b))
        cw, cb = cw + (new_ciw - ciw).mean(0), cb + (new_cib - cib).mean(0)
        ciw, cib = new_ciw, new_cib
        state, metrics = round_fn(state, data, jax.random.key(r))
        got = jax.device_get(state)
        assert_trees_close(got.server["params"], {"layer_0": {"kernel": w}, "bias_0": b}, rtol=1e-4, atol=1e-6)
        assert_trees_close(got.c["params"], {"layer_0": {"kernel": cw}, "bias_0": cb}, rtol=1e-4, atol=1e-5)
        idx = np.asarray(data.train_index)
        np.testing.assert_allclose(got.c_client["params"]["layer_0"]["kernel"][idx], ciw, rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(got.c_client["params"]["bias_0"][idx], cib, rtol=1e-4, atol=1e-5)
    assert np.abs(cw).max() > 1e-3  # the control variates are not trivially zero


def test_scaffold_options():
    cfg = schema.make(RunConfig, {"algorithm": "scaffold", "scaffold_server_lr": 0.5})
    assert cfg.hparams().scaffold_server_lr == 0.5
    with pytest.raises(ValueError, match="scaffold_server_lr"):
        schema.make(RunConfig, {"algorithm": "scaffold", "scaffold_server_lr": 0.0})


def test_option_one_sets_the_variates_to_the_local_gradients_at_x():
    data, model, common = toy_setup(model="mlp", local_steps=2, lr=0.1, optimizer="sgd")
    model = model.clone(num_layers=1)
    hp = registry.entry("algorithm", "scaffold").info["hparams"](1.0, "I")
    alg = registry.get("algorithm", "scaffold")(model, common, hp)
    state = alg.init(jax.random.key(0), data)
    p = jax.device_get(state.server)["params"]
    w, b = np.asarray(p["layer_0"]["kernel"], np.float64), np.asarray(p["bias_0"], np.float64)
    new, _ = jax.jit(alg.round)(state, data, jax.random.key(1))
    tr = data.train
    for i, c in enumerate(np.asarray(data.train_index)):
        gw, gb = _grad(w, b, np.asarray(tr.features[i], np.float64), np.asarray(tr.y[i]).astype(int),
                       np.asarray(tr.train_mask[i], np.float64), int(model.num_classes))
        np.testing.assert_allclose(np.asarray(new.c_client["params"]["layer_0"]["kernel"][c]), gw, rtol=1e-4, atol=1e-6)
        np.testing.assert_allclose(np.asarray(new.c_client["params"]["bias_0"][c]), gb, rtol=1e-4, atol=1e-6)


def test_client_mean_is_the_sequential_mean_bit_for_bit():
    """client_mean (SCAFFOLD's c update) against NumPy's client-by-client float32 sum times 1/C, also
    when a consumer adds to it (no FMA contraction of the product)."""
    from fgl_jax.reduce import client_mean
    rng = np.random.default_rng(0)
    for shape in [(7, 100, 64), (10, 4096), (3, 5), (1, 80, 64)]:
        x = rng.standard_normal(shape).astype(np.float32)
        c = rng.standard_normal(shape[1:]).astype(np.float32)
        ref = x[0].copy()
        for i in range(1, shape[0]):
            ref = ref + x[i]
        ref = ref * np.float32(1.0 / shape[0])
        np.testing.assert_array_equal(np.asarray(jax.jit(client_mean)(x)), ref)
        if x[0].size >= 4096:  # the loop path (small leaves keep mean(0), which XLA may fuse into an FMA)
            np.testing.assert_array_equal(np.asarray(jax.jit(lambda c, x: c + client_mean(x))(c, x)), c + ref)
        np.testing.assert_array_equal(np.asarray(jax.jit(lambda x: client_mean({"a": x})["a"])(x)), ref)
