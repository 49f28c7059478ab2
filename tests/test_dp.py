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


@pytest.mark.slow
def test_server_noise_std_is_z_clip_over_m():
    """Zero updates: the release is pure noise; its sample std over n = 200,000 coordinates has a
    relative standard error of 1/sqrt(2n) = 0.16%, so a 1% tolerance is over 6 standard errors."""
    m, z, clip, n = 8, 1.3, 0.7, 200_000
    noise = private_mean({"w": jnp.zeros((m, n))}, jax.random.key(0), clip, z)["w"]
    expected = z * clip / m
    got = np.asarray(noise, np.float64)
    assert abs(got.std() / expected - 1) < 0.01
    assert abs(got.mean()) < 5 * expected / np.sqrt(n)


@pytest.mark.slow
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


@pytest.mark.slow
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


# --- the NumPy accountant (fgl_jax/privacy/rdp.py) and summary.json's privacy statement ---------------

def quadrature_rdp(q: float, z: float, alpha: int) -> float:
    """Independent re-derivation of the subsampled Gaussian's RDP at order alpha: the Renyi divergence
    D_alpha(mu || mu0) of mu = (1-q) N(0, z^2) + q N(1, z^2) from mu0 = N(0, z^2), by the definition
    log E_{mu0}[(mu / mu0)^alpha] / (alpha - 1), integrated numerically in log space on a fine grid
    (no binomial expansion, no dp-accounting)."""
    x = np.linspace(-60 * z, 60 * z + alpha, 400_001)
    log_pdf0 = -x ** 2 / (2 * z ** 2) - 0.5 * np.log(2 * np.pi * z ** 2)
    log_ratio = np.logaddexp(np.log1p(-q), np.log(q) + (2 * x - 1) / (2 * z ** 2))
    f = log_pdf0 + alpha * log_ratio
    m = f.max()
    integral = np.trapezoid(np.exp(f - m), x)
    return (m + np.log(integral)) / (alpha - 1)


@pytest.mark.parametrize("q,z", [(0.1, 1.1), (0.01, 0.8), (0.5, 2.0)])
def test_own_rdp_equals_the_quadrature_of_the_renyi_divergence(q, z):
    """The closed form of fgl_jax.privacy.rdp against numerical integration of its definition, orders
    2..24, relative tolerance 1e-6 (the quadrature's error on this grid is below 1e-9)."""
    from fgl_jax.privacy import rdp
    orders = list(range(2, 25))
    got = rdp.subsampled_gaussian_rdp(q, z, orders)
    ref = np.array([quadrature_rdp(q, z, a) for a in orders])
    np.testing.assert_allclose(got, ref, rtol=1e-6)
    # q = 1: the Gaussian mechanism's alpha / (2 z^2)
    np.testing.assert_allclose(rdp.subsampled_gaussian_rdp(1.0, z, orders), np.array(orders) / (2 * z * z))


def test_own_epsilon_conversion_by_hand():
    """epsilon = min_a r_a + log(1 - 1/a) - log(delta a)/(a - 1), computed here for two orders."""
    from fgl_jax.privacy import rdp
    r, delta = np.array([0.3, 0.5]), 1e-5
    by_hand = min(0.3 + np.log(1 - 1 / 2) - np.log(delta * 2) / 1, 0.5 + np.log(1 - 1 / 3) - np.log(delta * 3) / 2)
    assert rdp.epsilon_from_rdp(r, delta, [2, 3]) == pytest.approx(by_hand, rel=1e-12)


@pytest.mark.parametrize("q,z,rounds", [(0.1, 1.1, 50), (0.02, 0.9, 500), (1.0, 3.0, 10)])
def test_own_accountant_equals_dp_accounting(q, z, rounds):
    """fgl_jax.privacy.rdp against Google's dp-accounting for the same mechanism (Poisson-subsampled
    Gaussian, T rounds) at the same integer orders: RDP and epsilon equal to relative 1e-9."""
    dp_accounting = pytest.importorskip("dp_accounting")
    from dp_accounting import rdp as lib
    from fgl_jax.privacy import rdp
    orders = list(rdp.ORDERS)
    acc = lib.RdpAccountant(orders)
    gauss = dp_accounting.GaussianDpEvent(z)
    acc.compose(gauss if q == 1.0 else dp_accounting.PoissonSampledDpEvent(q, gauss), rounds)
    np.testing.assert_allclose(rdp.subsampled_gaussian_rdp(q, z, orders) * rounds, acc._rdp, rtol=1e-9)
    assert rdp.epsilons(z, q, rounds, 1e-5)[-1] == pytest.approx(acc.get_epsilon(1e-5), rel=1e-9)


def test_epsilons_fall_back_to_the_own_accountant(monkeypatch):
    """Without dp-accounting (simulated), Poisson sampling is accounted by fgl_jax.privacy.rdp."""
    from fgl_jax.privacy import dp, rdp
    monkeypatch.setattr(dp, "accountant_name", lambda sampling="poisson": dp.OWN_ACCOUNTANT)
    np.testing.assert_array_equal(dp.epsilons(1.1, 10, 100, 5, 1e-5), rdp.epsilons(1.1, 0.1, 5, 1e-5))


def test_summary_states_epsilon_mechanism_and_sampling_rate():
    g = toy_graph(n=60, seed=3)
    cfg = RunConfig(dataset="toy", clients=4, rounds=3, hidden=8, split="keep", dp_clip=1.0, dp_noise=1.2,
                    clients_per_round=2, dp_delta=1e-4)
    priv = build(cfg, graph=g).describe["privacy"]
    assert priv["sampling_rate"] == 0.5 and priv["delta"] == 1e-4 and priv["noise_multiplier"] == 1.2
    assert priv["mechanism"].startswith("Poisson-subsampled Gaussian")
    assert priv["epsilon"] == epsilons(1.2, 2, 4, 3, 1e-4)[-1]
