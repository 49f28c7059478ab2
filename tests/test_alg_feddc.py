"""FedDC against a NumPy re-derivation (softmax regression, plain SGD, 3 clients, 3 local steps,
3 rounds) for the paper's algorithm and OpenFGL's variant: global model, drifts and correction states."""
import jax
import numpy as np
import pytest

from fgl_jax import registry, schema
from fgl_jax.federated import FedConfig, OptimConfig
from fgl_jax.systems.baseline import RunConfig
from tests.alg_helpers import softmax_regression_grad as _grad, toy_setup

LR, STEPS, ALPHA = 0.3, 3, 0.5


def _numpy_feddc(w, b, xs, ys, ms, k, share, variant, rounds):
    ct = xs.shape[0]
    h = [np.zeros((ct,) + a.shape) for a in (w, b)]
    ci = [np.zeros((ct,) + a.shape) for a in (w, b)]
    c = [np.zeros_like(w), np.zeros_like(b)]
    out = []
    for r in range(rounds):
        on = 1.0 if (variant == "paper" or r > 0) else 0.0
        thetas, new_h, new_c = [], [np.copy(a) for a in h], [np.copy(a) for a in ci]
        for i in range(ct):
            t = [w.copy(), b.copy()]
            if variant == "paper":
                shift = [c[j] - ci[j][i] for j in range(2)]
            else:
                shift = [on * ci[j][i] / (STEPS * LR) for j in range(2)]
            for _ in range(STEPS):
                g = _grad(t[0], t[1], xs[i], ys[i], ms[i], k)
                g = [g[j] + on * ALPHA * (h[j][i] + t[j] - (w, b)[j]) + shift[j] for j in range(2)]
                t = [t[j] - LR * g[j] for j in range(2)]
            delta = [t[0] - w, t[1] - b]
            for j in range(2):
                if variant == "paper":
                    new_h[j][i] = h[j][i] + delta[j]
                    new_c[j][i] = ci[j][i] - c[j] - delta[j] / (STEPS * LR)
                else:
                    new_h[j][i] = h[j][i] + ci[j][i]
                    new_c[j][i] = delta[j]
            thetas.append(t)
        q = np.full(ct, 1.0 / ct) if variant == "paper" else share
        w = sum(q[i] * (thetas[i][0] + new_h[0][i]) for i in range(ct))
        b = sum(q[i] * (thetas[i][1] + new_h[1][i]) for i in range(ct))
        if variant == "paper":
            c = [c[j] + sum(q[i] * (new_c[j][i] - ci[j][i]) for i in range(ct)) for j in range(2)]
        h, ci = new_h, new_c
        out.append((w, b, h, ci, c))
    return out


@pytest.mark.parametrize("variant,weights", [("paper", "uniform"), ("openfgl", "nodes")])
def test_feddc_matches_a_numpy_rederivation(variant, weights):
    data, model, _ = toy_setup(model="mlp")
    model = model.clone(num_layers=1)
    common = FedConfig(local_steps=STEPS, optim=OptimConfig(name="sgd", lr=LR, momentum=0.0))
    hp = registry.entry("algorithm", "feddc").info["hparams"](feddc_alpha=ALPHA, feddc_weights=weights,
                                                             feddc_variant=variant)
    alg = registry.get("algorithm", "feddc")(model, common, hp)
    state = alg.init(jax.random.key(0), data)
    p = jax.device_get(state.server)["params"]
    w, b = np.asarray(p["layer_0"]["kernel"], np.float64), np.asarray(p["bias_0"], np.float64)
    tr = data.train
    xs, ms = np.asarray(tr.features, np.float64), np.asarray(tr.train_mask, np.float64)
    ys = np.asarray(tr.y).astype(int)
    share = np.asarray(data.train_weight, np.float64) / np.asarray(data.train_weight).sum()
    expect = _numpy_feddc(w, b, xs, ys, ms, int(model.num_classes), share, variant, 3)
    idx = np.asarray(data.train_index)
    round_fn = jax.jit(alg.round)
    for r, (ew, eb, eh, eci, ec) in enumerate(expect):
        state, _ = round_fn(state, data, jax.random.key(r))
        got = jax.device_get(state)
        np.testing.assert_allclose(got.server["params"]["layer_0"]["kernel"], ew, rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(got.server["params"]["bias_0"], eb, rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(got.drift["params"]["layer_0"]["kernel"][idx], eh[0], rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(got.ctrl["params"]["bias_0"][idx], eci[1], rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(got.c["params"]["layer_0"]["kernel"], ec[0], rtol=1e-4, atol=1e-4)
    assert np.abs(eh[0]).max() > 1e-3


def test_feddc_options():
    cfg = schema.make(RunConfig, {"algorithm": "feddc", "feddc_alpha": 0.1, "feddc_variant": "openfgl"})
    assert cfg.hparams().feddc_alpha == 0.1 and cfg.hparams().feddc_weights == "uniform"
    with pytest.raises(ValueError, match="feddc_variant"):
        schema.make(RunConfig, {"algorithm": "feddc", "feddc_variant": "x"})
