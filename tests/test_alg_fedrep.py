"""FedRep against independent references: without a head (fedrep_head_layers 0) it is FedAvg with
the same step count, and three rounds of a 2-layer MLP re-derived in NumPy (plain SGD, 3 clients):
each client trains its own head with the body frozen, then the body with its new head frozen; the
server averages only the bodies; the reported accuracy is each client's (global body + own head)."""
import dataclasses

import jax
import numpy as np
import pytest

from fgl_jax import registry, schema
from fgl_jax.systems.baseline import RunConfig
from tests.alg_helpers import assert_trees_close, cli_run_and_resume, toy_setup

LR, HEAD, BODY = 0.3, 3, 2


def _fedrep(model, common, **kw):
    return registry.get("algorithm", "fedrep")(model, common, registry.algorithm("fedrep").hparams(**kw))


def _mlp_grads(w0, b0, w1, b1, x, y, mask, k):
    """Gradients of the mean masked CE of relu(x w0 + b0) w1 + b1 (a hand-written backward pass)."""
    a = x @ w0 + b0
    h = np.maximum(a, 0)
    z = h @ w1 + b1
    p = np.exp(z - z.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    dz = (p - np.eye(k)[y]) * mask[:, None] / max(mask.sum(), 1.0)
    da = (dz @ w1.T) * (a > 0)
    return x.T @ da, da.sum(0), h.T @ dz, dz.sum(0)


def test_without_a_head_it_is_fedavg():
    data, model, common = toy_setup(local_steps=2)
    rep = _fedrep(model, common, fedrep_head_layers=0, fedrep_head_epochs=4)
    avg = registry.get("algorithm", "fedavg")(model, common, None)
    sr, sa = rep.init(jax.random.key(0), data), avg.init(jax.random.key(0), data)
    for r in range(3):
        sr, mr = jax.jit(rep.round)(sr, data, jax.random.key(r))
        sa, ma = jax.jit(avg.round)(sa, data, jax.random.key(r))
        assert_trees_close(sr.server, sa.server, rtol=1e-6, atol=1e-7)
        for k in ("val_acc", "test_acc", "train_loss", "val_loss"):
            np.testing.assert_allclose(float(mr[k]), float(ma[k]), rtol=1e-6, atol=1e-7)


def test_three_rounds_match_a_numpy_rederivation():
    data, model, common = toy_setup(model="mlp", local_steps=BODY, lr=LR, optimizer="sgd")
    common = dataclasses.replace(common, optim=dataclasses.replace(common.optim, momentum=0.0))
    alg = _fedrep(model, common, fedrep_head_layers=1, fedrep_head_epochs=HEAD)
    state = alg.init(jax.random.key(0), data)
    p = {k: np.asarray(v, np.float64) for k, v in (
        ("w0", state.server["params"]["layer_0"]["kernel"]), ("b0", state.server["params"]["bias_0"]),
        ("w1", state.personal["params"]["layer_1"]["kernel"][0]), ("b1", state.personal["params"]["bias_1"][0]))}
    assert set(state.server["params"]) == {"layer_0", "bias_0"}          # the body
    assert set(state.personal["params"]) == {"layer_1", "bias_1"}        # the head
    tr = data.train
    xs, ys, ms = (np.asarray(a, np.float64) for a in (tr.features, tr.y, tr.train_mask))
    ys = ys.astype(int)
    k, ct = int(model.num_classes), xs.shape[0]
    assert data.eval.num_clients == ct
    share = np.asarray(data.train_weight, np.float64) / np.asarray(data.train_weight).sum()
    w0, b0 = p["w0"], p["b0"]
    heads = [(p["w1"].copy(), p["b1"].copy()) for _ in range(ct)]
    for r in range(3):
        bodies = []
        for i in range(ct):
            w1, b1 = heads[i]
            for _ in range(HEAD):                       # head phase, body frozen at the global w0, b0
                _, _, g1, gb1 = _mlp_grads(w0, b0, w1, b1, xs[i], ys[i], ms[i], k)
                w1, b1 = w1 - LR * g1, b1 - LR * gb1
            v0, c0 = w0.copy(), b0.copy()
            for _ in range(BODY):                       # body phase, the new head frozen
                g0, gb0, _, _ = _mlp_grads(v0, c0, w1, b1, xs[i], ys[i], ms[i], k)
                v0, c0 = v0 - LR * g0, c0 - LR * gb0
            heads[i] = (w1, b1)
            bodies.append((v0, c0))
        w0 = sum(s * b[0] for s, b in zip(share, bodies))
        b0 = sum(s * b[1] for s, b in zip(share, bodies))
        state, metrics = jax.jit(alg.round)(state, data, jax.random.key(r))
        got = jax.device_get(state)
        assert_trees_close(got.server["params"], {"bias_0": b0, "layer_0": {"kernel": w0}}, rtol=1e-4, atol=1e-6)
        np.testing.assert_allclose(got.personal["params"]["layer_1"]["kernel"], np.stack([h[0] for h in heads]),
                                   rtol=1e-4, atol=1e-6)
        np.testing.assert_allclose(got.personal["params"]["bias_1"], np.stack([h[1] for h in heads]),
                                   rtol=1e-4, atol=1e-6)
    assert max(np.abs(heads[i][0] - heads[0][0]).max() for i in range(ct)) > 1e-3   # the heads really differ
    ev = data.eval
    correct = total = 0
    for i in range(ct):
        pred = (np.maximum(np.asarray(ev.features[i], np.float64) @ w0 + b0, 0) @ heads[i][0] + heads[i][1]).argmax(1)
        mask = np.asarray(ev.test_mask[i], bool)
        correct += int((pred[mask] == np.asarray(ev.y[i])[mask]).sum())
        total += int(mask.sum())
    np.testing.assert_allclose(float(metrics["test_acc"]), correct / total, atol=1e-6)


def test_fedrep_options_and_refusals():
    cfg = schema.make(RunConfig, {"algorithm": "fedrep", "fedrep_head_epochs": 2})
    assert schema.yaml_values(cfg)["algorithm"] == {"name": "fedrep", "fedrep_head_layers": 1,
                                                    "fedrep_head_epochs": 2}
    _, model, common = toy_setup()
    with pytest.raises(ValueError, match="fedrep_head_layers=2 leaves no shared body of the 2-layer model"):
        _fedrep(model, common, fedrep_head_layers=2)
    with pytest.raises(ValueError, match="FedRep's heads stay on the clients"):
        _fedrep(model, dataclasses.replace(common, eval_mode="global_model_on_local_data"))


@pytest.mark.slow
def test_fedrep_cli_run_resume_and_sampling(tmp_path):
    cli_run_and_resume(tmp_path, "fedrep", "--fedrep-head-epochs", "2", "--client-fraction", "0.67")
