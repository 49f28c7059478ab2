"""Ditto against two independent references: with lambda 0 its personal models are Local's (same
init, same keys, same optimiser), and three rounds on a tiny graph re-derived in NumPy (softmax
regression, 3 clients, plain SGD): the global model is FedAvg's, each personal model takes SGD steps
on CE + (lambda/2)||v - w^t||^2, and the reported accuracy is the personal models'."""
import jax
import numpy as np
import pytest

from fgl_jax import registry, schema
from fgl_jax.systems.baseline import RunConfig
from tests.alg_helpers import assert_trees_close, softmax_regression_grad as _grad, toy_setup, linear_start

LR, STEPS, LAM = 0.3, 3, 0.7


def _ditto(model, common, lam):
    return registry.get("algorithm", "ditto")(model, common, registry.algorithm("ditto").hparams(ditto_lambda=lam))


@pytest.mark.slow
def test_lambda_zero_is_local():
    data, model, common = toy_setup(local_steps=2)
    ditto = _ditto(model, common, 0.0)
    local = registry.get("algorithm", "local")(model, common, None)
    sd, sl = ditto.init(jax.random.key(0), data), local.init(jax.random.key(0), data)
    for r in range(3):
        sd, md = jax.jit(ditto.round)(sd, data, jax.random.key(r))
        sl, ml = jax.jit(local.round)(sl, data, jax.random.key(r))
        assert_trees_close(sd.personal, sl.personal, rtol=1e-6, atol=1e-7)
        for k in ("val_acc", "test_acc", "train_loss"):
            np.testing.assert_allclose(float(md[k]), float(ml[k]), rtol=1e-6, atol=1e-7)
    # the personal models really differ from the global one (FedAvg's) after training
    gap = max(float(np.abs(np.asarray(a)[0] - np.asarray(b)).max())
              for a, b in zip(jax.tree.leaves(sd.personal), jax.tree.leaves(sd.server)))
    assert gap > 1e-3


def test_three_rounds_match_a_numpy_rederivation():
    data, model, common = toy_setup(model="mlp", local_steps=STEPS, lr=LR, optimizer="sgd")
    common = common.__class__(local_steps=STEPS, optim=common.optim.__class__(name="sgd", lr=LR, momentum=0.0))
    model = model.clone(num_layers=1)
    alg = _ditto(model, common, LAM)
    state = alg.init(jax.random.key(0), data)
    w, b, xs, ys, ms, k, ct, share = linear_start(state, data, model)
    vw, vb = [w.copy() for _ in range(ct)], [b.copy() for _ in range(ct)]   # personal models start at w^0
    for r in range(3):
        glob_w, glob_b = [], []
        for i in range(ct):
            yw, yb = w.copy(), b.copy()                   # FedAvg's local training from w^t
            for _ in range(STEPS):
                gw, gb = _grad(yw, yb, xs[i], ys[i], ms[i], k)
                yw, yb = yw - LR * gw, yb - LR * gb
            glob_w.append(yw)
            glob_b.append(yb)
            for _ in range(STEPS):                        # the personal model, pulled toward w^t
                gw, gb = _grad(vw[i], vb[i], xs[i], ys[i], ms[i], k)
                vw[i], vb[i] = vw[i] - LR * (gw + LAM * (vw[i] - w)), vb[i] - LR * (gb + LAM * (vb[i] - b))
        w, b = sum(s * x for s, x in zip(share, glob_w)), sum(s * x for s, x in zip(share, glob_b))
        state, metrics = jax.jit(alg.round)(state, data, jax.random.key(r))
        got = jax.device_get(state)
        assert_trees_close(got.server["params"], {"layer_0": {"kernel": w}, "bias_0": b}, rtol=1e-4, atol=1e-6)
        idx = np.asarray(data.train_index)
        np.testing.assert_allclose(got.personal["params"]["layer_0"]["kernel"][idx], np.stack(vw), rtol=1e-4, atol=1e-6)
        np.testing.assert_allclose(got.personal["params"]["bias_0"][idx], np.stack(vb), rtol=1e-4, atol=1e-6)
    # reported test accuracy = the personal models on their own clients' test nodes, pooled
    ev = data.eval
    correct = total = 0
    for i, c in enumerate(np.asarray(data.train_index)):
        pred = (np.asarray(ev.features[c], np.float64) @ vw[i] + vb[i]).argmax(1)
        mask = np.asarray(ev.test_mask[c], bool)
        correct += int((pred[mask] == np.asarray(ev.y[c])[mask]).sum())
        total += int(mask.sum())
    assert data.eval.num_clients == ct and total > 0
    np.testing.assert_allclose(float(metrics["test_acc"]), correct / total, atol=1e-6)
    # lambda really pulled: the personal models differ from an unpulled (Local) step
    assert max(np.abs(v - w).max() for v in vw) > 1e-3


def test_ditto_options_flags_and_block():
    cfg = schema.make(RunConfig, {"algorithm": "ditto", "ditto_lambda": 0.5})
    assert cfg.hparams().ditto_lambda == 0.5
    assert schema.yaml_values(cfg)["algorithm"] == {"name": "ditto", "ditto_lambda": 0.5}
    with pytest.raises(ValueError, match="ditto_lambda must be >= 0"):
        schema.make(RunConfig, {"algorithm": "ditto", "ditto_lambda": -1})
    with pytest.raises(ValueError, match="option of algorithm 'ditto'"):
        schema.make(RunConfig, {"algorithm": "fedavg", "ditto_lambda": 0.5})
