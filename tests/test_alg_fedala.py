"""FedALA against two independent references: with eta 0 its aggregation weights stay at ones, every
client starts from the global model and the run is FedAvg's; and three rounds on a tiny graph
re-derived in NumPy (softmax regression, 3 clients, plain SGD): round 1 starts from w, round 2 learns
W from ones (init steps), round 3 takes one W step from there, each W step
W <- clip(W - eta * grad_theta_hat L * (w - theta), 0, 1) at theta_hat = theta + (w - theta) * W."""
import jax
import numpy as np
import pytest

from fgl_jax import registry, schema
from fgl_jax.federated import FedConfig, OptimConfig
from fgl_jax.systems.baseline import RunConfig
from tests.alg_helpers import assert_trees_close, cli_run_and_resume, softmax_regression_grad as _grad, toy_setup, linear_start

LR, STEPS, ETA, INIT = 0.3, 2, 40.0, 3


def _fedala(model, common, **kw):
    return registry.get("algorithm", "fedala")(model, common, registry.algorithm("fedala").hparams(**kw))


@pytest.mark.slow
def test_eta_zero_is_fedavg():
    data, model, common = toy_setup(local_steps=2)
    common = FedConfig(local_steps=2, optim=common.optim, eval_mode="global_model_on_local_data")
    ala = _fedala(model, common, fedala_eta=0.0, fedala_layers=2)
    avg = registry.get("algorithm", "fedavg")(model, common, None)
    sa, sf = ala.init(jax.random.key(0), data), avg.init(jax.random.key(0), data)
    for r in range(3):
        sa, ma = jax.jit(ala.round)(sa, data, jax.random.key(r))
        sf, mf = jax.jit(avg.round)(sf, data, jax.random.key(r))
        assert_trees_close(sa.server, sf.server, rtol=1e-5, atol=1e-6)
        for k in ("val_acc", "test_acc", "train_loss"):
            np.testing.assert_allclose(float(ma[k]), float(mf[k]), rtol=1e-5, atol=1e-6)
    assert all(bool((w == 1).all()) for w in sa.weights)
    assert np.asarray(sa.phase).tolist() == [2, 2, 2]


def test_three_rounds_match_a_numpy_rederivation():
    data, model, _ = toy_setup(model="mlp")
    model = model.clone(num_layers=1)
    common = FedConfig(local_steps=STEPS, optim=OptimConfig(name="sgd", lr=LR, momentum=0.0))
    alg = _fedala(model, common, fedala_eta=ETA, fedala_sample=1.0, fedala_layers=1, fedala_init_steps=INIT,
                  fedala_steps=1)
    state = alg.init(jax.random.key(0), data)
    w, b, xs, ys, ms, k, ct, share = linear_start(state, data, model)
    theta = [None] * ct                                   # local models (none before the first round)
    ww = [(np.ones_like(w), np.ones_like(b)) for _ in range(ct)]
    for r, n_w in enumerate((0, INIT, 1)):
        new = []
        for i in range(ct):
            if theta[i] is None:
                sw, sb = w.copy(), b.copy()
            else:
                tw, tb = theta[i]
                aw, ab = ww[i]
                for _ in range(n_w):                      # W steps at theta_hat = theta + (w - theta) * W
                    gw, gb = _grad(tw + (w - tw) * aw, tb + (b - tb) * ab, xs[i], ys[i], ms[i], k)
                    aw, ab = np.clip(aw - ETA * gw * (w - tw), 0, 1), np.clip(ab - ETA * gb * (b - tb), 0, 1)
                ww[i] = (aw, ab)
                sw, sb = tw + (w - tw) * aw, tb + (b - tb) * ab
            for _ in range(STEPS):                        # local training from theta_hat
                gw, gb = _grad(sw, sb, xs[i], ys[i], ms[i], k)
                sw, sb = sw - LR * gw, sb - LR * gb
            new.append((sw, sb))
        theta = new
        w, b = sum(s * t[0] for s, t in zip(share, theta)), sum(s * t[1] for s, t in zip(share, theta))
        state, metrics = jax.jit(alg.round)(state, data, jax.random.key(r))
        got = jax.device_get(state)
        assert_trees_close(got.server["params"], {"layer_0": {"kernel": w}, "bias_0": b}, rtol=1e-4, atol=1e-6)
        idx = np.asarray(data.train_index)
        # the leaves in tree order: bias_0, layer_0/kernel
        np.testing.assert_allclose(got.weights[0][idx], np.stack([a[1] for a in ww]), rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(got.weights[1][idx], np.stack([a[0] for a in ww]), rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(got.local["params"]["layer_0"]["kernel"][idx], np.stack([t[0] for t in theta]),
                                   rtol=1e-4, atol=1e-6)
    # W really moved, within [0, 1], some of it off the bounds
    kern = np.stack([a[0] for a in ww])
    assert (kern < 1 - 1e-3).mean() > 0.05 and (kern > 1e-3).mean() > 0.05, kern
    # reported test accuracy = the clients' local models on their own test nodes, pooled
    ev = data.eval
    correct = total = 0
    for i, c in enumerate(np.asarray(data.train_index)):
        pred = (np.asarray(ev.features[c], np.float64) @ theta[i][0] + theta[i][1]).argmax(1)
        mask = np.asarray(ev.test_mask[c], bool)
        correct += int((pred[mask] == np.asarray(ev.y[c])[mask]).sum())
        total += int(mask.sum())
    np.testing.assert_allclose(float(metrics["test_acc"]), correct / total, atol=1e-6)


def test_fedala_options_flags_and_block():
    cfg = schema.make(RunConfig, {"algorithm": "fedala", "fedala_eta": 0.5})
    assert cfg.hparams().fedala_eta == 0.5
    with pytest.raises(ValueError, match="fedala_sample must be"):
        schema.make(RunConfig, {"algorithm": "fedala", "fedala_sample": 0})
    with pytest.raises(ValueError, match="option of algorithm 'fedala'"):
        schema.make(RunConfig, {"algorithm": "fedavg", "fedala_eta": 0.5})


@pytest.mark.slow   # integration: three whole runs compiled (FedEM's CLI resume test stays in the default suite)
def test_fedala_cli_run_and_resume_with_client_sampling(tmp_path):
    # the per-client phase (never trained / learn W from ones / W learnt) must survive the checkpoint
    cli_run_and_resume(tmp_path, "fedala", "--clients-per-round", "2", "--fedala-init-steps", "3")


@pytest.mark.slow
def test_graph_clients_packed_equal_vmapped():
    """FedALA's W steps go through local_train and its sample is drawn per graph id: packed graph
    clients (size-class mini-batches) learn the same W and models as on the whole padded stack."""
    from tests.test_graph_client_exec import assert_same_runs
    assert_same_runs("fedala", fedala_init_steps=3)
