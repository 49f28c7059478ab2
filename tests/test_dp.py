"""DP-FedAvg (the clipping of fgl_jax/privacy/dp.py, the aggregator fgl_jax.aggregators.dp_fedavg, the
baseline round), its accountant, and OpenFGL's local DP."""
from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from fgl_jax import registry
from fgl_jax.aggregators import private_mean
from fgl_jax.privacy.dp import LocalDP, clip_updates, clipped_node_grad, epsilons
from fgl_jax.systems.baseline import RunConfig, build
from tests.alg_helpers import client_models, toy_setup
from tests.helpers import toy_graph


def test_clipping_matches_numpy():
    rng = np.random.default_rng(0)
    upd = {"a": rng.normal(size=(5, 3, 4)).astype(np.float32), "b": rng.normal(size=(5, 7)).astype(np.float32)}
    upd["b"][2] *= 1e-3                                      # one small update, left alone
    clip = 1.5
    flat = np.concatenate([upd["a"].reshape(5, -1), upd["b"]], axis=1).astype(np.float64)
    norms = np.linalg.norm(flat, axis=1)
    factor = np.minimum(1.0, clip / norms)
    out, got_norms = clip_updates(jax.tree.map(jnp.asarray, upd), clip)
    np.testing.assert_allclose(np.asarray(got_norms), norms, rtol=1e-5)
    np.testing.assert_allclose(np.asarray(out["a"]), upd["a"] * factor[:, None, None], rtol=1e-5)
    np.testing.assert_allclose(np.asarray(out["b"]), upd["b"] * factor[:, None], rtol=1e-5)


def test_server_noise_std_is_z_clip_over_m():
    """Zero updates: the release is pure noise; its sample std over n = 200,000 coordinates has a
    relative standard error of 1/sqrt(2n) = 0.16%, so a 1% tolerance is over 6 standard errors."""
    m, z, clip, n = 8, 1.3, 0.7, 200_000
    noise = private_mean({"w": jnp.zeros((m, n))}, jax.random.key(0), clip, z)["w"]
    expected = z * clip / m
    got = np.asarray(noise, np.float64)
    assert abs(got.std() / expected - 1) < 0.01
    assert abs(got.mean()) < 5 * expected / np.sqrt(n)


def test_dp_without_noise_is_the_uniform_mean_of_clipped_updates():
    data, net, common = toy_setup(n=150, clients=4)
    clip = 0.05                                              # small enough that some updates are clipped
    alg = registry.get("algorithm", "fedavg")(net, dataclasses.replace(common, dp_clip=clip, dp_noise=0.0), None)
    state = alg.init(jax.random.key(0), data)
    key = jax.random.key(2)
    new, _ = jax.jit(alg.round)(state, data, key)
    trained = client_models(net, common, state.server, state.opt, data, key)
    server = jax.tree.map(lambda a: np.asarray(a, np.float64), state.server)
    upd = jax.tree.map(lambda t, s: t - s[None], trained, server)
    norms = np.sqrt(sum((u.reshape(u.shape[0], -1) ** 2).sum(1) for u in jax.tree.leaves(upd)))
    assert (norms > clip).any()
    f = np.minimum(1.0, clip / norms)
    ref = jax.tree.map(lambda s, u: s + np.tensordot(f / len(f), u, axes=1), server, upd)
    for a, b in zip(jax.tree.leaves(new.server), jax.tree.leaves(ref)):
        np.testing.assert_allclose(np.asarray(a, np.float64), b, rtol=1e-4, atol=1e-6)


def test_accountant_matches_the_librarys_documented_example():
    """dp-accounting's own test (rdp_privacy_accountant_test.test_compute_epsilon_delta_gaussian):
    one Gaussian release with noise multiplier 4.530877117 is exactly (1, 1e-6)-DP over fine orders."""
    orders = [0.001 * i for i in range(1000, 100000)]
    assert epsilons(4.530877117, 1, 1, 1, 1e-6, orders=orders)[0] == pytest.approx(1.0, abs=1e-6)


@pytest.mark.parametrize("sampling", ["poisson", "without_replacement"])
def test_accountant_per_round_equals_the_library_composed(sampling):
    import dp_accounting
    from dp_accounting import rdp
    z, m, n, delta = 1.1, 10, 100, 1e-5
    eps = epsilons(z, m, n, 20, delta, sampling)
    assert (np.diff(eps) > 0).all()
    for t in (1, 7, 20):                                     # reference: the library's accountant directly
        if sampling == "poisson":
            acc = rdp.RdpAccountant()
            acc.compose(dp_accounting.PoissonSampledDpEvent(m / n, dp_accounting.GaussianDpEvent(z)), t)
        else:
            acc = rdp.RdpAccountant(neighboring_relation=dp_accounting.NeighboringRelation.REPLACE_ONE)
            acc.compose(dp_accounting.SampledWithoutReplacementDpEvent(n, m, dp_accounting.GaussianDpEvent(z / 2)), t)
        assert eps[t - 1] == pytest.approx(acc.get_epsilon(delta), rel=1e-9)


def test_epsilon_column_and_refusals():
    g = toy_graph(n=60, seed=3)
    cfg = RunConfig(dataset="toy", clients=4, rounds=3, hidden=8, split="keep", dp_clip=1.0, dp_noise=1.0,
                    clients_per_round=2)
    cols = build(cfg, graph=g).per_round
    np.testing.assert_allclose(cols["dp_epsilon"], epsilons(1.0, 2, 4, 3, 1e-5))
    # every algorithm with a server aggregate takes DP (scaffold: tests/test_aggregators.py); one
    # without (personalised aggregation only) is refused, and the local DP stays in the FedAvg round
    with pytest.raises(ValueError, match="algorithm 'fedgta' has no server aggregate"):
        build(cfg.replace(algorithm="fedgta"), graph=g)
    with pytest.raises(ValueError, match="ldp is implemented in the FedAvg family's round"):
        build(cfg.replace(algorithm="scaffold", dp_clip=0.0, dp_noise=0.0, ldp="gaussian"), graph=g)
    with pytest.raises(ValueError, match="dp_clip"):
        RunConfig(dp_noise=1.0)


@pytest.mark.parametrize("norm", ["l2", pytest.param("l1", marks=pytest.mark.slow)])
def test_clipped_node_grad_matches_a_per_node_loop(norm):
    data, net, common = toy_setup(n=40, clients=2)
    b = jax.tree.map(lambda a: a[0], data.train)
    params = net.init({"params": jax.random.key(0), "dropout": jax.random.key(0)}, b, train=False)
    import optax
    per_node = lambda p: optax.softmax_cross_entropy_with_integer_labels(net.apply(p, b, train=False), b.y)
    clip = 0.3
    for norm in (norm,):
        loss, g = jax.jit(lambda p: clipped_node_grad(per_node, p, b.train_mask, clip, norm, block=8))(params)
        nodes = np.flatnonzero(np.asarray(b.train_mask))
        ref = jax.tree.map(lambda a: np.zeros(a.shape), params)
        grad_v = jax.jit(jax.grad(lambda p, v: per_node(p)[v]))
        for v in nodes:                                      # reference: one gradient per node
            gv = grad_v(params, v)
            leaves = [np.asarray(x, np.float64) for x in jax.tree.leaves(gv)]
            nv = (sum(np.abs(x).sum() for x in leaves) if norm == "l1"
                  else np.sqrt(sum((x ** 2).sum() for x in leaves)))
            ref = jax.tree.map(lambda r, x: r + np.asarray(x, np.float64) * min(1.0, clip / nv) / len(nodes), ref, gv)
        for a, r in zip(jax.tree.leaves(g), jax.tree.leaves(ref)):
            np.testing.assert_allclose(np.asarray(a, np.float64), r, rtol=1e-4, atol=1e-7)
        np.testing.assert_allclose(float(loss), float(np.asarray(per_node(params))[nodes].mean()), rtol=1e-5)


def test_local_dp_noise_scale_is_openfgls_formula():
    q = 100 * 0.5                                            # rounds * client_fraction
    lap = LocalDP("laplace", clip=2.0, epsilon=10.0, delta=1e-5, queries=q)
    gau = dataclasses.replace(lap, mechanism="gaussian")
    s = 2 * 0.01 * 2.0 / 40                                  # 2 lr C / n_train
    assert float(lap.noise_scale(0.01, 40.0)) == pytest.approx(s / (10.0 / q), rel=1e-6)
    assert float(gau.noise_scale(0.01, 40.0)) == pytest.approx(s * np.sqrt(2 * np.log(1.25 / (1e-5 / q))) / (10.0 / q),
                                                               rel=1e-6)
    draw = np.asarray(gau.noise(jax.random.key(0), {"w": jnp.zeros(100_000)}, 0.5)["w"])
    assert abs(draw.std() / 0.5 - 1) < 0.02                  # 1/sqrt(2e5) = 0.22% standard error
    draw = np.asarray(lap.noise(jax.random.key(0), {"w": jnp.zeros(100_000)}, 0.5)["w"])
    assert abs(draw.std() / (0.5 * np.sqrt(2)) - 1) < 0.03   # Laplace(b) has std b sqrt(2)


@pytest.mark.slow
def test_local_dp_runs_through_the_baseline_round():
    """--ldp gaussian end to end: local training uses the clipped per-node gradient and the noise,
    so the run differs from the plain one, and stays finite."""
    from fgl_jax import experiment
    g = toy_graph(n=40, seed=3)
    cfg = RunConfig(dataset="toy", clients=2, rounds=1, hidden=4, split="keep")
    plain = experiment.execute(build(cfg, graph=g), 0)
    noisy = experiment.execute(build(cfg.replace(ldp="gaussian", ldp_epsilon=1e3), graph=g), 0)
    assert np.isfinite(noisy.history["train_loss"]).all()
    assert any(not np.array_equal(np.asarray(a), np.asarray(b))
               for a, b in zip(jax.tree.leaves(plain.state.server), jax.tree.leaves(noisy.state.server)))
