"""APFL against independent references: with alpha fixed at 0 its global model trains and reports
exactly as FedAvg's, and three rounds on a tiny graph re-derived in NumPy (softmax regression, 3
clients, plain SGD, 2 local steps): w is FedAvg's, v_k steps on the gradient at the mixed model
times alpha_k, alpha_k steps on <grad F(mix), v_k - w> and is clipped to [0, 1], and the reported
accuracy is that of the personalised models alpha_k v_k + (1 - alpha_k) w; and the same for
`apfl_variant pfllib` (PFLlib's clientAPFL: v_k on its own loss, alpha's gradient from the two
models' gradients plus 0.02 alpha, v_k mixed with the client's trained w at the round's end)."""
import dataclasses

import jax
import numpy as np
import pytest

from fgl_jax import registry, schema
from fgl_jax.systems.baseline import RunConfig
from tests.alg_helpers import assert_trees_close, cli_run_and_resume, softmax_regression_grad as _grad, toy_setup, linear_start

LR, STEPS, ALPHA, ALPHA_LR = 0.3, 2, 0.4, 5.0


def _apfl(model, common, **kw):
    return registry.get("algorithm", "apfl")(model, common, registry.algorithm("apfl").hparams(**kw))


@pytest.mark.slow
def _pooled_test_acc(ev, models) -> float:
    """Test accuracy pooled over clients, client i scored by its own linear model (w [F, K], b [K])."""
    correct = total = 0
    for i, (w, b) in enumerate(models):
        pred = (np.asarray(ev.features[i], np.float64) @ w + b).argmax(1)
        mask = np.asarray(ev.test_mask[i], bool)
        correct += int((pred[mask] == np.asarray(ev.y[i])[mask]).sum())
        total += int(mask.sum())
    return correct / total


def test_alpha_fixed_at_zero_is_fedavg():
    data, model, common = toy_setup(local_steps=2)
    ap = _apfl(model, common, apfl_alpha=0.0, apfl_alpha_lr=0.0)
    avg = registry.get("algorithm", "fedavg")(model, common, None)
    sp, sa = ap.init(jax.random.key(0), data), avg.init(jax.random.key(0), data)
    for r in range(3):
        sp, mp = jax.jit(ap.round)(sp, data, jax.random.key(r))
        sa, ma = jax.jit(avg.round)(sa, data, jax.random.key(r))
        assert_trees_close(sp.server, sa.server, rtol=0, atol=0)
        np.testing.assert_array_equal(np.asarray(sp.alpha), 0.0)
        np.testing.assert_allclose(float(mp["global_train_loss"]), float(ma["train_loss"]), rtol=1e-6)
        for k in ("val_acc", "test_acc", "val_loss"):
            np.testing.assert_allclose(float(mp[k]), float(ma[k]), rtol=1e-6, atol=1e-7)


def test_three_rounds_and_the_alpha_gradient_match_numpy():
    data, model, common = toy_setup(model="mlp", local_steps=STEPS, lr=LR, optimizer="sgd")
    common = dataclasses.replace(common, optim=dataclasses.replace(common.optim, momentum=0.0))
    model = model.clone(num_layers=1)
    alg = _apfl(model, common, apfl_alpha=ALPHA, apfl_alpha_lr=ALPHA_LR)
    state = alg.init(jax.random.key(0), data)
    w, b, xs, ys, ms, k, ct, share = linear_start(state, data, model)
    assert data.eval.num_clients == ct
    vw, vb = [w.copy() for _ in range(ct)], [b.copy() for _ in range(ct)]
    alpha = [ALPHA] * ct
    moved = []
    for r in range(3):
        new_w, new_b = [], []
        for i in range(ct):
            yw, yb, a = w.copy(), b.copy(), alpha[i]
            for _ in range(STEPS):
                mw, mb = a * vw[i] + (1 - a) * yw, a * vb[i] + (1 - a) * yb
                gmw, gmb = _grad(mw, mb, xs[i], ys[i], ms[i], k)      # gradient at the mixed model
                ga = (gmw * (vw[i] - yw)).sum() + (gmb * (vb[i] - yb)).sum()
                gw, gb = _grad(yw, yb, xs[i], ys[i], ms[i], k)
                vw[i], vb[i] = vw[i] - LR * a * gmw, vb[i] - LR * a * gmb
                yw, yb = yw - LR * gw, yb - LR * gb
                a = float(np.clip(a - ALPHA_LR * ga, 0.0, 1.0))
                moved.append(abs(ga))
            alpha[i] = a
            new_w.append(yw)
            new_b.append(yb)
        w, b = sum(s * x for s, x in zip(share, new_w)), sum(s * x for s, x in zip(share, new_b))
        state, metrics = jax.jit(alg.round)(state, data, jax.random.key(r))
        got = jax.device_get(state)
        assert_trees_close(got.server["params"], {"bias_0": b, "layer_0": {"kernel": w}}, rtol=1e-4, atol=1e-6)
        np.testing.assert_allclose(got.alpha, alpha, rtol=1e-4, atol=1e-6)
        np.testing.assert_allclose(got.personal["params"]["layer_0"]["kernel"], np.stack(vw), rtol=1e-4, atol=1e-6)
        np.testing.assert_allclose(got.personal["params"]["bias_0"], np.stack(vb), rtol=1e-4, atol=1e-6)
    assert max(moved) > 1e-4 and max(abs(a - ALPHA) for a in alpha) > 1e-3   # alpha really learnt
    mixed = [(alpha[i] * vw[i] + (1 - alpha[i]) * w, alpha[i] * vb[i] + (1 - alpha[i]) * b) for i in range(ct)]
    np.testing.assert_allclose(float(metrics["test_acc"]), _pooled_test_acc(data.eval, mixed), atol=1e-6)


def test_pfllib_variant_three_rounds_match_numpy():
    data, model, common = toy_setup(model="mlp", local_steps=STEPS, lr=LR, optimizer="sgd")
    common = dataclasses.replace(common, optim=dataclasses.replace(common.optim, momentum=0.0))
    model = model.clone(num_layers=1)
    alg = _apfl(model, common, apfl_alpha=ALPHA, apfl_alpha_lr=ALPHA_LR, apfl_variant="pfllib")
    state = alg.init(jax.random.key(0), data)
    w, b, xs, ys, ms, k, ct, share = linear_start(state, data, model)
    vw, vb = [w.copy() for _ in range(ct)], [b.copy() for _ in range(ct)]
    alpha = [ALPHA] * ct
    for r in range(3):
        new_w, new_b = [], []
        for i in range(ct):
            yw, yb, a = w.copy(), b.copy(), alpha[i]
            for _ in range(STEPS):   # PFLlib's clientAPFL.train: w's step, v's step on F(v), alpha_update
                gw, gb = _grad(yw, yb, xs[i], ys[i], ms[i], k)
                gvw, gvb = _grad(vw[i], vb[i], xs[i], ys[i], ms[i], k)
                yw, yb = yw - LR * gw, yb - LR * gb
                vw[i], vb[i] = vw[i] - LR * gvw, vb[i] - LR * gvb
                ga = (((vw[i] - yw) * (a * gvw + (1 - a) * gw)).sum() + ((vb[i] - yb) * (a * gvb + (1 - a) * gb)).sum()
                      + 0.02 * a)
                a = float(np.clip(a - ALPHA_LR * ga, 0.0, 1.0))
            vw[i], vb[i] = a * vw[i] + (1 - a) * yw, a * vb[i] + (1 - a) * yb   # mixed with the client's own w
            alpha[i] = a
            new_w.append(yw)
            new_b.append(yb)
        w, b = sum(s * x for s, x in zip(share, new_w)), sum(s * x for s, x in zip(share, new_b))
        state, metrics = jax.jit(alg.round)(state, data, jax.random.key(r))
        got = jax.device_get(state)
        assert_trees_close(got.server["params"], {"bias_0": b, "layer_0": {"kernel": w}}, rtol=1e-4, atol=1e-6)
        np.testing.assert_allclose(got.alpha, alpha, rtol=1e-4, atol=1e-6)
        np.testing.assert_allclose(got.personal["params"]["layer_0"]["kernel"], np.stack(vw), rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(got.personal["params"]["bias_0"], np.stack(vb), rtol=1e-4, atol=1e-5)
    assert max(abs(a - ALPHA) for a in alpha) > 1e-3   # alpha really learnt
    # reported: the mixed v_k itself (not re-mixed with the new global w)
    np.testing.assert_allclose(float(metrics["test_acc"]), _pooled_test_acc(data.eval, list(zip(vw, vb))), atol=1e-6)


@pytest.mark.slow
def test_alpha_is_clipped_to_the_unit_interval():
    data, model, common = toy_setup(local_steps=3)
    for lr, start in ((1e4, 0.5), (1e4, 0.99)):
        alg = _apfl(model, common, apfl_alpha=start, apfl_alpha_lr=lr)
        state = alg.init(jax.random.key(0), data)
        for r in range(2):
            state, _ = jax.jit(alg.round)(state, data, jax.random.key(r))
        a = np.asarray(state.alpha)
        assert ((a >= 0) & (a <= 1)).all() and np.isin(a, (0.0, 1.0)).any()


def test_apfl_options():
    cfg = schema.make(RunConfig, {"algorithm": "apfl", "apfl_alpha": 0.5})
    assert schema.yaml_values(cfg)["algorithm"] == {"name": "apfl", "apfl_alpha": 0.5, "apfl_alpha_lr": 0.1,
                                                         "apfl_variant": "paper"}
    with pytest.raises(ValueError, match="apfl_alpha must be <= 1"):
        schema.make(RunConfig, {"algorithm": "apfl", "apfl_alpha": 1.5})
    with pytest.raises(ValueError, match="apfl_variant"):
        schema.make(RunConfig, {"algorithm": "apfl", "apfl_variant": "fedtorch"})


@pytest.mark.slow
def test_apfl_cli_run_and_resume_with_sampling(tmp_path):
    cli_run_and_resume(tmp_path, "apfl", "--clients-per-round", "2")


@pytest.mark.slow
def test_apfl_sweep_vectorises_alpha_lr_and_matches_single_runs(tmp_path):
    import json

    from fgl_jax.cli import main
    base = ["--algorithm", "apfl", "--dataset", "csbm", "--split", "keep", "--clients", "3", "--hidden", "8",
            "--rounds", "3"]
    out = tmp_path / "sweep"
    assert main(["sweep", *base, "--grid", "apfl_alpha_lr=0,0.5", "--out", str(out)]) == 0
    payload = json.loads((out / "sweep.json").read_text())
    assert payload["vector_axes"] == ["apfl_alpha_lr"] and payload["programs"] == 1
    for lr in (0.0, 0.5):
        single = tmp_path / f"single{lr}"
        assert main(["run", *base, "--apfl-alpha-lr", str(lr), "--no-progress", "--out", str(single)]) == 0
        best = json.loads((single / "summary.json").read_text())["best"]
        row = next(r for r in payload["rows"] if r["apfl_alpha_lr"] == lr)
        assert row["best_test"] == pytest.approx(best["best_test"], abs=1e-6)
        assert row["best_round"] == best["best_round"]


@pytest.mark.slow
def test_graph_clients_packed_equal_vmapped():
    """APFL's steps go through local_train: a graph client steps mini-batch by mini-batch, in its
    size-class shapes (packed) exactly as on the whole padded stack (vmap), dropout and alpha included."""
    from tests.test_graph_client_exec import assert_same_runs
    assert_same_runs("apfl", apfl_alpha_lr=0.5)
