"""HiFGL: SecMP equals plain message passing, straight-through gradients, federated algebra, guards."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from fgl_jax.batch import build_client_batch, full_graph_batch
from fgl_jax.federated import FedConfig, NonFiniteError, OptimConfig, baseline, make_fed_data, run
from fgl_jax.federated.algorithm import x64_scope
from fgl_jax.nn import make_model
from fgl_jax.systems import hifgl as H
from tests.helpers import dense_adj, toy_graph


def _setup(model="gcn", mode="field", silos=3, norm="gcn_selfloop", n=40, seed=0, T=1):
    g = toy_graph(n=n, seed=seed)
    assign = np.arange(g.num_nodes) % silos
    data = H.make_hifgl_data(g, assign, silos)
    cfg = H.HiFGLConfig(model=model, hidden=8, mode=mode, norm=norm, T=T)
    alg = H.hifgl(cfg, g.num_features, g.num_classes)
    return g, assign, data, cfg, alg


def _dense_reference(g, params, model, norm):
    """Dense NumPy GCN/SAGE with Eq. 2/3 (norm 'paper_eq23': no self-loops) or A+I normalisation."""
    p = jax.tree.map(np.asarray, params)["params"]
    a = dense_adj(g)
    x = g.dense_x().astype(np.float64)
    deg = a.sum(1)
    h = x
    for i in range(2):
        k = p[f"layer_{i}"]["kernel"]
        if model == "gcn":
            if norm == "gcn_selfloop":
                ah = a + np.eye(len(a))
                d = ah.sum(1)
            else:
                ah, d = a, np.maximum(deg, 1)
            h = (ah / np.sqrt(d)[:, None] / np.sqrt(d)[None, :]) @ h @ k + p[f"bias_{i}"]
        else:
            w = k.shape[1] // 2
            h = h @ k[:, :w] + (a / np.maximum(deg, 1)[:, None]) @ h @ k[:, w:] + p[f"bias_{i}"]
        if i == 0:
            h = np.maximum(h, 0)
    return h


@pytest.mark.parametrize("model,norm", [("gcn", "gcn_selfloop"), ("gcn", "paper_eq23"), ("sage", "gcn_selfloop")])
@pytest.mark.parametrize("mode", ["field", "real", "plain"])
def test_secmp_forward_equals_dense_reference(model, norm, mode):
    g, _, data, cfg, alg = _setup(model=model, mode=mode, norm=norm)
    with x64_scope(alg):
        state = alg.init(jax.random.key(0), data)
        logits, overflow = jax.jit(lambda s, k: H.forward(s.params, data, s.codes, cfg, k))(state, jax.random.key(1))
    ref = _dense_reference(g, state.params, model, norm)
    # field mode: each neighbour sum carries <= deg * 2^-(f+1) rounding, amplified by at most the layer maps
    tol = 2e-3 if mode == "field" else 1e-4
    np.testing.assert_allclose(np.asarray(logits), ref, atol=tol, rtol=1e-3)
    assert not bool(overflow)


def test_secure_sum_is_exact_up_to_quantisation():
    g, _, data, cfg, alg = _setup(mode="field")
    rng = np.random.default_rng(0)
    msgs = jnp.asarray(rng.normal(size=(g.num_nodes, 5)), jnp.float32)
    with x64_scope(alg):
        state = alg.init(jax.random.key(0), data)
        sec, flag = jax.jit(lambda m, k: H.secure_neighbour_sum(m, data, state.codes, cfg, k))(msgs, jax.random.key(3))
    ref = dense_adj(g) @ np.asarray(msgs, np.float64)
    deg = dense_adj(g).sum(1)
    bound = (deg + 1)[:, None] * 2.0 ** -(cfg.frac_bits + 1) + 1e-6  # per-message rounding, float32 output
    assert np.all(np.abs(np.asarray(sec) - ref) <= bound)
    assert not bool(flag)


def test_gradients_are_the_plain_gradients():
    g, _, data, cfg, alg = _setup(mode="field")
    plain_cfg = H.HiFGLConfig(model="gcn", hidden=8, mode="plain")
    with x64_scope(alg):
        state = alg.init(jax.random.key(0), data)
        ct = jnp.asarray(np.random.default_rng(1).normal(size=(g.num_nodes, g.num_classes)), jnp.float32)
        f_sec = lambda p: jnp.sum(H.forward(p, data, state.codes, cfg, jax.random.key(2))[0] * ct)
        f_pl = lambda p: jnp.sum(H.forward(p, data, state.codes, plain_cfg, jax.random.key(2))[0] * ct)
        g_sec, g_pl = jax.grad(f_sec)(state.params), jax.grad(f_pl)(state.params)
    for a, b in zip(jax.tree.leaves(g_sec), jax.tree.leaves(g_pl)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


@pytest.mark.parametrize("mode", ["plain", "field"])
def test_one_silo_equals_global_training(mode):
    """S = 1: HiFGL is centralised full-graph training (spec test 8), step for step."""
    g = toy_graph(n=50, seed=3)
    data = H.make_hifgl_data(g, np.zeros(g.num_nodes, np.int32), 1)
    optim = OptimConfig(lr=0.02, gamma=0.9, decay_every=2)
    cfg = H.HiFGLConfig(model="gcn", hidden=8, mode=mode, optim=optim)
    alg = H.hifgl(cfg, g.num_features, g.num_classes)
    res = run(alg, data, jax.random.key(4), 5)
    model = make_model("gcn", g.num_features, g.num_classes, hidden=8)
    glob = run(baseline(model, FedConfig("fedavg", local_steps=1, optim=optim)), make_fed_data(full_graph_batch(g)),
               jax.random.key(4), 5)
    tol = 1e-5 if mode == "plain" else 2e-3
    for a, b in zip(jax.tree.leaves(res.state.params), jax.tree.leaves(glob.state.server)):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), atol=tol, rtol=tol)


def test_without_cross_edges_forward_equals_fedavg_baseline_forward():
    g = toy_graph(n=45, seed=6)
    assign = np.arange(g.num_nodes) % 3
    keep = assign[g.senders] == assign[g.receivers]
    import dataclasses
    g_intra = dataclasses.replace(g, senders=g.senders[keep], receivers=g.receivers[keep])
    data = H.make_hifgl_data(g_intra, assign, 3)
    cfg = H.HiFGLConfig(model="gcn", hidden=8, mode="field")
    alg = H.hifgl(cfg, g.num_features, g.num_classes)
    with x64_scope(alg):
        state = alg.init(jax.random.key(0), data)
        logits, _ = jax.jit(lambda s: H.forward(s.params, data, s.codes, cfg, jax.random.key(1)))(state)
    batch = build_client_batch(g, assign, 3)
    model = make_model("gcn", g.num_features, g.num_classes, hidden=8)
    per_client = jax.vmap(lambda b: model.apply(state.params, b))(batch)
    ids, mask = np.asarray(batch.node_ids), np.asarray(batch.node_mask)
    np.testing.assert_allclose(np.asarray(per_client)[mask], np.asarray(logits)[ids[mask]], atol=2e-3)


def test_silo_decode_sees_only_per_target_aggregates(monkeypatch):
    g, _, data, cfg, alg = _setup(mode="field", T=2)
    seen = []
    original = H.silo_decode

    def spy(coded_aggregate, lam, p):
        seen.append((tuple(coded_aggregate.shape), tuple(lam.shape)))
        return original(coded_aggregate, lam, p)

    monkeypatch.setattr(H, "silo_decode", spy)
    with x64_scope(alg):
        state = alg.init(jax.random.key(0), data)
        H.secure_neighbour_sum(jnp.ones((g.num_nodes, 4)), data, state.codes, cfg, jax.random.key(1))
    # one call per target (vmapped): T+1 aggregated shares of width d, and that silo's T+1 weights only
    assert seen == [((cfg.T + 1, 4), (cfg.T + 1,))]


def test_server_average_of_identical_models_is_identity():
    p = {"w": jnp.arange(6.0).reshape(2, 3)}
    stacked = jax.tree.map(lambda a: jnp.stack([a, a, a]), p)
    np.testing.assert_array_equal(H.server_average(stacked)["w"], p["w"])


def test_field_overflow_stops_the_run():
    g = toy_graph(n=30, seed=1)
    data = H.make_hifgl_data(g, np.arange(g.num_nodes) % 2, 2)
    cfg = H.HiFGLConfig(model="gcn", hidden=8, frac_bits=29)  # 2^29 scale: aggregates of |x| >= 2 overflow
    with pytest.raises(NonFiniteError, match="finite field"):
        run(H.hifgl(cfg, g.num_features, g.num_classes), data, jax.random.key(0), 2)


@pytest.mark.parametrize("kwargs, message", [
    ({"T": 0}, "T"), ({"mode": "fhe"}, "mode"), ({"norm": "rw"}, "norm"), ({"model": "gat"}, "model"),
    ({"frac_bits": 40}, "frac"), ({"p": 12}, "prime"), ({"p": 5, "T": 2, "frac_bits": 1}, "T=2"),
])
def test_bad_config(kwargs, message):
    with pytest.raises(ValueError, match=message):
        H.HiFGLConfig(**kwargs)


def test_empty_silo_is_rejected():
    g = toy_graph(n=20)
    with pytest.raises(ValueError, match="no device"):
        H.make_hifgl_data(g, np.zeros(g.num_nodes, np.int32), 2)
