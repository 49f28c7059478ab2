"""Node-level DP for GNN training (fgl_jax.privacy.node_dp; issue 51 item 3b): the degree bounds after
sampling, the occurrence bound checked by breadth-first search, the sensitivity and noise written out,
epsilon vs dp-accounting for the same Gaussian mechanism, and the run's statement in summary.json."""
from __future__ import annotations

import numpy as np
import pytest

from fgl_jax.privacy import node_dp
from fgl_jax.systems.baseline import RunConfig
from fgl_jax.systems.baseline.program import build
from tests.helpers import toy_graph


def _random_edges(n=40, e=400, seed=0):
    rng = np.random.default_rng(seed)
    s, r = rng.integers(0, n, e), rng.integers(0, n, e)
    r[:60] = 3  # one node with a large in-degree, one with a large out-degree
    s[60:120] = 5
    return s, r


@pytest.mark.parametrize("k", [1, 3])
def test_in_degree_bound_holds_and_only_excess_edges_are_dropped(k):
    s, r = _random_edges()
    keep = node_dp.bounded_in_degree(s, r, k, seed=1)
    indeg = np.bincount(r, minlength=40)
    kept = np.bincount(r[keep], minlength=40)
    np.testing.assert_array_equal(kept, np.minimum(indeg, k))  # at most K, and nothing more dropped
    both = node_dp.bounded_degree_edges(s, r, k, seed=1)
    assert not (both & ~keep).any()  # the second pass only removes edges
    assert np.bincount(r[both], minlength=40).max() <= k
    assert np.bincount(s[both], minlength=40).max() <= k


def test_a_node_occurs_in_at_most_n_r_computation_graphs():
    s, r = _random_edges(seed=2)
    k, layers = 2, 2
    keep = node_dp.bounded_degree_edges(s, r, k, seed=0)
    out = {u: set() for u in range(40)}
    for a, b in zip(s[keep], r[keep]):
        out[int(a)].add(int(b))
    worst = 0
    for u in range(40):  # the nodes whose r-hop computation graph contains u: reached from u in <= r hops
        seen, frontier = {u}, {u}
        for _ in range(layers):
            frontier = {v for w in frontier for v in out[w]} - seen
            seen |= frontier
        worst = max(worst, len(seen))
    assert worst <= node_dp.occurrence_bound(k, layers) == 1 + 2 + 4
    # without the sampling the hub node 5 reaches far more
    assert len({int(b) for a, b in zip(s, r) if a == 5}) > 7


def test_sensitivity_and_noise_scale_are_written_out():
    cfg = node_dp.NodeDP(clip=0.5, noise_multiplier=1.5, max_degree=3, layers=2)
    assert node_dp.sensitivity(0.5, 3, 2) == 2 * 0.5 * (1 + 3 + 9)
    assert float(cfg.noise_scale(0.1, 20.0)) == pytest.approx(0.1 * 1.5 * 13.0 / 20.0)


def test_epsilon_matches_dp_accounting_for_the_same_gaussian_mechanism():
    dp_accounting = pytest.importorskip("dp_accounting")
    from dp_accounting import rdp as lib
    from fgl_jax.privacy import rdp
    clip, sigma, k, layers, steps = 1.0, 4.0, 3, 2, 30
    delta_sum = 2 * clip * (1 + k + k * k)  # the sum's sensitivity, counted by hand
    acc = lib.RdpAccountant(list(rdp.ORDERS))
    acc.compose(dp_accounting.GaussianDpEvent((sigma * delta_sum) / delta_sum), steps)  # noise std / sensitivity
    eps = node_dp.epsilons(sigma, steps, 1e-5)
    assert eps[-1] == pytest.approx(acc.get_epsilon(1e-5), rel=1e-9)
    assert (np.diff(eps) > 0).all()


def test_run_states_node_privacy_and_bounds_the_graph():
    g = toy_graph(n=60, num_features=8, sparse=True, seed=1)
    cfg = RunConfig(dataset="toy", clients=3, rounds=4, hidden=8, split="keep", optimizer="sgd", local_steps=2,
                    node_dp_degree=2, node_dp_clip=0.5, node_dp_noise=2.0)
    prog = build(cfg, g)
    p = prog.describe["node_privacy"]
    assert p["level"] == "node" and p["steps"] == 8 and p["sensitivity"] == 2 * 0.5 * (1 + 2 + 4)
    from fgl_jax.privacy import rdp
    assert p["epsilon"] == pytest.approx(rdp.epsilons(2.0, 1.0, 8, 1e-5)[-1])
    assert p["edges"]["after"] < p["edges"]["before"] == g.num_edges


@pytest.mark.parametrize("opts,message", [
    (dict(node_dp_degree=2), "needs optimizer sgd"),
    (dict(node_dp_noise=2.0), "node-level DP, which is off"),
    (dict(node_dp_degree=2, optimizer="sgd", ldp="gaussian"), "choose one"),
])
def test_bad_node_dp_options_are_refused_in_one_line(opts, message):
    with pytest.raises(ValueError, match=message):
        RunConfig(dataset="toy", clients=3, rounds=1, split="keep", **opts)
