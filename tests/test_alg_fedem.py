"""FedEM against two independent references: with one component it is FedAvg (same init, keys and
optimiser), and three rounds with two components on a tiny graph re-derived in NumPy (softmax regression,
3 clients, plain SGD): the E-step's responsibilities q_j(m) ~ pi(m) exp(-CE_m(j)), pi = mean q over
training nodes, each component trained on sum_j q_j(m) CE_m(j) / n, components averaged, and the
reported accuracy that of each client's mixture sum_m pi(m) softmax(Theta_m x)."""
import jax
import numpy as np
import pytest

from fgl_jax import registry, schema
from fgl_jax.federated import FedConfig, OptimConfig
from fgl_jax.systems.baseline import RunConfig
from tests.alg_helpers import assert_trees_close, cli_run_and_resume, softmax_regression_grad as _grad, toy_setup

LR, STEPS, K = 0.3, 2, 2


def _fedem(model, common, k):
    return registry.get("algorithm", "fedem")(model, common, registry.algorithm("fedem").hparams(fedem_components=k))


@pytest.mark.slow
def test_one_component_is_fedavg():
    data, model, common = toy_setup(local_steps=2)
    em = _fedem(model, common, 1)
    avg = registry.get("algorithm", "fedavg")(model, common, None)
    se, sa = em.init(jax.random.key(0), data), avg.init(jax.random.key(0), data)
    for r in range(3):
        se, me = jax.jit(em.round)(se, data, jax.random.key(r))
        sa, ma = jax.jit(avg.round)(sa, data, jax.random.key(r))
        assert_trees_close(jax.tree.map(lambda a: a[0], se.server), sa.server, rtol=1e-5, atol=1e-6)
        for k in ("val_acc", "test_acc", "train_loss", "val_loss"):
            np.testing.assert_allclose(float(me[k]), float(ma[k]), rtol=1e-5, atol=1e-6)
    assert np.asarray(se.pi).tolist() == [[1.0]] * 3


def _softmax(z):
    p = np.exp(z - z.max(1, keepdims=True))
    return p / p.sum(1, keepdims=True)


def test_three_rounds_match_a_numpy_rederivation():
    data, model, _ = toy_setup(model="mlp")
    model = model.clone(num_layers=1)
    common = FedConfig(local_steps=STEPS, optim=OptimConfig(name="sgd", lr=LR, momentum=0.0))
    alg = _fedem(model, common, K)
    state = alg.init(jax.random.key(0), data)
    p = jax.device_get(state.server)["params"]
    comps = [(np.asarray(p["layer_0"]["kernel"][m], np.float64), np.asarray(p["bias_0"][m], np.float64))
             for m in range(K)]
    assert np.abs(comps[0][0] - comps[1][0]).max() > 1e-3   # independently initialised
    tr = data.train
    xs, ys, ms = (np.asarray(a, np.float64) for a in (tr.features, tr.y, tr.train_mask))
    ys = ys.astype(int)
    nc, ct = int(model.num_classes), xs.shape[0]
    share = np.asarray(data.train_weight, np.float64) / np.asarray(data.train_weight).sum()
    pis = [np.full(K, 1.0 / K) for _ in range(ct)]
    for r in range(3):
        trained = []
        for i in range(ct):
            x, y, msk = xs[i], ys[i], ms[i]
            ce = np.stack([-np.log(_softmax(x @ w + b)[np.arange(len(y)), y]) for w, b in comps])   # [K, N]
            logq = np.log(pis[i])[:, None] - ce
            q = np.exp(logq - logq.max(0))
            q /= q.sum(0)                                            # E-step
            pis[i] = (q * msk).sum(1) / msk.sum()                    # M-step: pi
            mine = []
            for m, (w, b) in enumerate(comps):                       # M-step: q-weighted SGD per component
                wq = msk * q[m]
                for _ in range(STEPS):
                    gw, gb = _grad(w, b, x, y, wq, nc)               # (divided by sum wq: rescale to / n)
                    w, b = w - LR * gw * wq.sum() / msk.sum(), b - LR * gb * wq.sum() / msk.sum()
                mine.append((w, b))
            trained.append(mine)
        comps = [(sum(s * t[m][0] for s, t in zip(share, trained)), sum(s * t[m][1] for s, t in zip(share, trained)))
                 for m in range(K)]
        state, metrics = jax.jit(alg.round)(state, data, jax.random.key(r))
        got = jax.device_get(state)
        idx = np.asarray(data.train_index)
        np.testing.assert_allclose(np.asarray(got.pi)[idx], np.stack(pis), rtol=1e-4, atol=1e-6)
        np.testing.assert_allclose(got.server["params"]["layer_0"]["kernel"], np.stack([c[0] for c in comps]),
                                   rtol=1e-4, atol=1e-6)
        np.testing.assert_allclose(got.server["params"]["bias_0"], np.stack([c[1] for c in comps]),
                                   rtol=1e-4, atol=1e-6)
    assert max(np.abs(pi - 1.0 / K).max() for pi in pis) > 1e-3   # the mixtures really differ from uniform
    ev = data.eval
    correct = total = 0
    for i, c in enumerate(np.asarray(data.train_index)):
        x = np.asarray(ev.features[c], np.float64)
        prob = sum(pis[i][m] * _softmax(x @ w + b) for m, (w, b) in enumerate(comps))
        mask = np.asarray(ev.test_mask[c], bool)
        correct += int((prob.argmax(1)[mask] == np.asarray(ev.y[c])[mask]).sum())
        total += int(mask.sum())
    np.testing.assert_allclose(float(metrics["test_acc"]), correct / total, atol=1e-6)


def test_responsibilities_match_numpy():
    from fgl_jax.algorithms.fedem import responsibilities
    rng = np.random.default_rng(0)
    losses, pi = rng.exponential(2.0, (3, 7)), rng.dirichlet(np.ones(3))
    want = pi[:, None] * np.exp(-losses)
    want /= want.sum(0, keepdims=True)                   # Bayes' rule per node, no log-space tricks
    got = np.asarray(responsibilities(np.float32(losses), np.float32(pi)))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(got.sum(0), 1.0, rtol=1e-6)


@pytest.mark.slow
def test_fedem_cli_run_and_resume_with_client_sampling(tmp_path):
    cli_run_and_resume(tmp_path, "fedem", "--fedem-components", "2", "--clients-per-round", "2")


def test_fedem_options_and_refusals():
    cfg = schema.make(RunConfig, {"algorithm": "fedem", "fedem_components": 2})
    assert cfg.hparams().fedem_components == 2
    with pytest.raises(ValueError, match="fedem_components must be >= 1"):
        schema.make(RunConfig, {"algorithm": "fedem", "fedem_components": 0})
    data, model, common = toy_setup()
    with pytest.raises(ValueError, match="FedEM: eval_mode='global_model_on_local_data' is not available"):
        _fedem(model, FedConfig(eval_mode="global_model_on_local_data"), 2)
