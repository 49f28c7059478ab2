"""pFedMe against two independent references: three rounds on a tiny graph re-derived in NumPy (softmax
regression, 3 clients, plain SGD: K inner gradient steps on f + (lambda/2)||theta - w||^2 warm-started
from the previous theta, with and without PFLlib's inner weight decay (mu/2)||theta||^2, the outer step w <- w - eta lambda (w - theta), the server's
w <- (1 - beta) w + beta * mean), and the large-lambda limit: with beta 1 and personal LR 1/lambda the
outer step tends to a gradient step on f, so pFedMe tends to FedAvg (its gap shrinks ~1/lambda)."""
import jax
import numpy as np
import pytest

from fgl_jax import registry, schema
from fgl_jax.federated import FedConfig, OptimConfig
from fgl_jax.systems.baseline import RunConfig
from tests.alg_helpers import assert_trees_close, softmax_regression_grad as _grad, toy_setup, linear_start

LR, STEPS, K, LAM, PLR, BETA = 0.05, 2, 3, 15.0, 0.05, 0.7


def _pfedme(model, common, **kw):
    return registry.get("algorithm", "pfedme")(model, common, registry.algorithm("pfedme").hparams(**kw))


def _softmax_setup(lr, steps):
    data, model, _ = toy_setup(model="mlp")
    common = FedConfig(local_steps=steps, optim=OptimConfig(name="sgd", lr=lr, momentum=0.0))
    return data, model.clone(num_layers=1), common


@pytest.mark.parametrize("wd", [0.0, 0.5])   # 0.5: pfedme_inner_weight_decay (PFLlib's mu), large enough to show
def test_three_rounds_match_a_numpy_rederivation(wd):
    data, model, common = _softmax_setup(LR, STEPS)
    alg = _pfedme(model, common, pfedme_lambda=LAM, pfedme_inner_steps=K, pfedme_personal_lr=PLR, pfedme_beta=BETA,
                  pfedme_inner_weight_decay=wd)
    state = alg.init(jax.random.key(0), data)
    w, b, xs, ys, ms, k, ct, share = linear_start(state, data, model)
    for r in range(3):
        local_w, local_b, thetas = [], [], []
        for i in range(ct):
            lw, lb = w.copy(), b.copy()          # w_i = theta_i = w^t at the round's start
            tw, tb = w.copy(), b.copy()
            for _ in range(STEPS):
                for _ in range(K):               # inner GD on f + (lambda/2)||theta - w_i||^2, warm-started
                    gw, gb = _grad(tw, tb, xs[i], ys[i], ms[i], k)
                    tw, tb = (tw - PLR * (gw + LAM * (tw - lw) + wd * tw),     # PFLlib's step with wd = its mu
                              tb - PLR * (gb + LAM * (tb - lb) + wd * tb))
                lw, lb = lw - LR * LAM * (lw - tw), lb - LR * LAM * (lb - tb)   # the envelope's gradient step
            local_w.append(lw)
            local_b.append(lb)
            thetas.append((tw, tb))
        mw, mb = sum(s * x for s, x in zip(share, local_w)), sum(s * x for s, x in zip(share, local_b))
        w, b = (1 - BETA) * w + BETA * mw, (1 - BETA) * b + BETA * mb
        state, metrics = jax.jit(alg.round)(state, data, jax.random.key(r))
        got = jax.device_get(state)
        assert_trees_close(got.server["params"], {"layer_0": {"kernel": w}, "bias_0": b}, rtol=1e-4, atol=1e-6)
        idx = np.asarray(data.train_index)
        np.testing.assert_allclose(got.personal["params"]["layer_0"]["kernel"][idx], np.stack([t[0] for t in thetas]),
                                   rtol=1e-4, atol=1e-6)
        np.testing.assert_allclose(got.personal["params"]["bias_0"][idx], np.stack([t[1] for t in thetas]),
                                   rtol=1e-4, atol=1e-6)
    # reported test accuracy = the personal models theta_i on their own clients' test nodes, pooled
    ev = data.eval
    correct = total = 0
    for i, c in enumerate(np.asarray(data.train_index)):
        pred = (np.asarray(ev.features[c], np.float64) @ thetas[i][0] + thetas[i][1]).argmax(1)
        mask = np.asarray(ev.test_mask[c], bool)
        correct += int((pred[mask] == np.asarray(ev.y[c])[mask]).sum())
        total += int(mask.sum())
    assert data.eval.num_clients == ct and total > 0
    np.testing.assert_allclose(float(metrics["test_acc"]), correct / total, atol=1e-6)
    # the personal models really differ from the global one
    assert max(np.abs(t[0] - w).max() for t in thetas) > 1e-3


def _gap_to_fedavg(lam: float, rounds: int = 2) -> float:
    data, model, common = _softmax_setup(0.3, 2)
    alg = _pfedme(model, common, pfedme_lambda=lam, pfedme_inner_steps=5, pfedme_personal_lr=1.0 / lam,
                  pfedme_beta=1.0)
    avg = registry.get("algorithm", "fedavg")(model, common, None)
    sp, sa = alg.init(jax.random.key(0), data), avg.init(jax.random.key(0), data)
    for r in range(rounds):
        sp, _ = jax.jit(alg.round)(sp, data, jax.random.key(r))
        sa, _ = jax.jit(avg.round)(sa, data, jax.random.key(r))
    moved = max(float(np.abs(np.asarray(a) - np.asarray(b)).max())
                for a, b in zip(jax.tree.leaves(sa.server), jax.tree.leaves(alg.init(jax.random.key(0), data).server)))
    assert moved > 1e-2   # FedAvg really moved: the comparison is not between two unchanged models
    return max(float(np.abs(np.asarray(a) - np.asarray(b)).max())
               for a, b in zip(jax.tree.leaves(sp.server), jax.tree.leaves(sa.server))) / moved


@pytest.mark.slow
def test_large_lambda_with_beta_one_approaches_fedavg():
    # gap = max |w_pfedme - w_fedavg| / max |w_fedavg - w^0| after 2 rounds (2 local steps, SGD lr 0.3);
    # the O(1/lambda) bias shrinks 10x per decade until float32 cancellation in lambda (w - theta)
    gaps = {lam: _gap_to_fedavg(lam) for lam in (10.0, 100.0, 1000.0)}
    assert gaps[1000.0] < 1e-3, gaps   # measured: 4.6e-2, 4.7e-3, 4.7e-4 (1e4: 2.2e-4, the float32 floor)
    assert gaps[100.0] < 0.3 * gaps[10.0] and gaps[1000.0] < 0.3 * gaps[100.0], gaps


@pytest.mark.slow
def test_global_eval_mode_reports_the_server_model():
    import dataclasses

    from fgl_jax.federated.evaluation import evaluate
    data, model, common = toy_setup()
    common = dataclasses.replace(common, eval_mode="global_model_on_local_data")
    alg = _pfedme(model, common)
    state, m = jax.jit(alg.round)(alg.init(jax.random.key(0), data), data, jax.random.key(1))
    ref, personal = (evaluate(model, state.server, data.eval, per_client=False),
                     evaluate(model, state.personal, data.eval, per_client=True))
    for k in ("val_acc", "test_acc", "val_loss"):
        assert float(m[k]) == pytest.approx(float(ref[k]), abs=1e-6)
    assert float(m["val_loss"]) != pytest.approx(float(personal["val_loss"]), abs=1e-6)   # not the personal models


def test_pfedme_options_flags_and_block():
    cfg = schema.make(RunConfig, {"algorithm": "pfedme", "pfedme_lambda": 5.0, "pfedme_inner_steps": 2})
    assert cfg.hparams().pfedme_lambda == 5.0 and cfg.hparams().pfedme_inner_steps == 2
    assert schema.yaml_values(cfg)["algorithm"] == {"name": "pfedme", "pfedme_lambda": 5.0, "pfedme_inner_steps": 2,
                                                    "pfedme_personal_lr": 0.09, "pfedme_beta": 1.0,
                                                    "pfedme_inner_weight_decay": 0.0}
    with pytest.raises(ValueError, match="pfedme_lambda must be > 0"):
        schema.make(RunConfig, {"algorithm": "pfedme", "pfedme_lambda": 0})
    with pytest.raises(ValueError, match="option of algorithm 'pfedme'"):
        schema.make(RunConfig, {"algorithm": "fedavg", "pfedme_beta": 0.5})
