"""Lumos Module A: greedy init (Alg. 1), MCMC (Alg. 2, Eq. 16-18), Alg. 3, exact flow optimum."""
import itertools
import math

import networkx as nx
import numpy as np
import pytest
from scipy import stats

from fgl_jax.systems.lumos import workload as W
from fgl_jax.systems.lumos.secure import SecureComparator


def ba_edges(n, m, seed):
    g = nx.barabasi_albert_graph(n, m, seed=seed)
    e = np.array(g.edges())
    return W.EdgeSet.from_arrays(e[:, 0], e[:, 1], n)


def brute_force_opt(es):
    """min over all 2^M orientations of the max out-degree (tiny graphs only)."""
    best = math.inf
    for bits in itertools.product((0, 1), repeat=es.num_edges):
        owner = np.where(np.array(bits) == 1, es.eu, es.ev)
        best = min(best, np.bincount(owner, minlength=es.num_nodes).max())
    return best


def test_edgeset_rules_self_loops_duplicates():
    es = W.EdgeSet.from_arrays([0, 1, 1, 2, 2], [1, 0, 1, 3, 3], 4)
    assert es.num_edges == 2 and es.dropped_self_loops == 1 and es.dropped_duplicates == 2
    assert np.all(es.owner[es.twin] == es.nbr) and np.all(es.nbr[es.twin] == es.owner)
    with pytest.raises(ValueError, match="outside"):
        W.EdgeSet.from_arrays([0], [5], 3)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_greedy_alg1_covers_and_eq15_does_not(seed):
    es = ba_edges(600, 3, seed)
    keep, comp = W.greedy_init(es, "alg1")
    assert W.is_covered(es, keep)
    assert np.all(W.workloads(es, keep) <= es.degree)
    assert comp.calls == 2 * es.num_edges
    # independent restatement of Alg. 1 line 4
    r = np.floor(np.log(es.degree) + 0.5)
    np.testing.assert_array_equal(keep, r[es.nbr] >= r[es.owner])
    k15, _ = W.greedy_init(es, "eq15")
    assert not W.is_covered(es, k15)            # ties dropped by both endpoints
    kc, _ = W.greedy_init(es, "code")
    assert not W.is_covered(es, kc)
    with pytest.raises(ValueError, match="rule"):
        W.greedy_init(es, "bogus")


def test_exact_matches_brute_force_on_tiny_graphs():
    rng = np.random.default_rng(0)
    for trial in range(12):
        n = int(rng.integers(4, 8))
        pairs = [(a, b) for a in range(n) for b in range(a + 1, n) if rng.random() < 0.5]
        if not pairs:
            continue
        p = np.array(pairs)
        es = W.EdgeSet.from_arrays(p[:, 0], p[:, 1], n)
        f, keep = W.exact_min_max(es)
        assert f == brute_force_opt(es) == W.max_workload(es, keep)
        assert W.is_covered(es, keep)
        assert np.all(keep ^ keep[es.twin])       # each edge in exactly one tree


def test_mcmc_invariants_rollback_and_bounds():
    es = ba_edges(400, 3, 5)
    keep0, _ = W.greedy_init(es)
    opt, _ = W.exact_min_max(es)
    prev = {"keep": keep0.copy()}

    def on_step(t, keep, accepted):
        assert W.is_covered(es, keep), f"coverage lost at step {t}"
        if not accepted:
            np.testing.assert_array_equal(keep, prev["keep"])   # exact rollback
        assert W.max_workload(es, keep) >= opt                  # never below the optimum
        prev["keep"] = keep.copy()

    res = W.mcmc_trim(es, keep0, 300, seed=3, on_step=on_step)
    wl = W.workloads(es, res.keep)
    assert res.f_history[-1] == wl.max()
    assert [len(s) for s in W.neighbour_sets(es, res.keep)] == wl.tolist()
    assert res.f_history.min() >= opt
    assert 0 < res.accepted < 300 and res.comparisons > 0
    # always_accept (official code's aliasing bug) accepts every proposal
    assert W.mcmc_trim(es, keep0, 50, seed=3, always_accept=True).accepted == 50
    with pytest.raises(ValueError, match="uncovered"):
        W.mcmc_trim(es, W.greedy_init(es, "eq15")[0], 5)


def test_mcmc_quality_ba():
    """Spec T4 at CI size: MCMC beats greedy by >= 30 %, stays >= exact, far below max degree."""
    es = ba_edges(2000, 4, 0)
    keep0, _ = W.greedy_init(es)
    g0 = W.max_workload(es, keep0)
    res = W.mcmc_trim(es, keep0, 1000, seed=0, argmax="direct")
    opt, _ = W.exact_min_max(es)
    f = int(res.f_history[-1])
    assert opt <= f < g0 <= es.degree.max()
    assert f <= 0.7 * g0
    assert es.degree.max() > 5 * f


def test_mh_acceptance_rule():
    rng = np.random.default_rng(0)
    n = 20000
    acc = sum(W.mh_accept(5, 6, rng) for _ in range(n)) / n
    p = math.exp(-1)
    assert abs(acc - p) < 3 * math.sqrt(p * (1 - p) / n)
    assert all(W.mh_accept(5, 4, rng) for _ in range(200))
    assert all(W.mh_accept(5, 5, rng) for _ in range(200))


def test_step_size_range():
    rng = np.random.default_rng(0)
    assert {W.step_size(1, rng) for _ in range(50)} == {1}
    ks = [W.step_size(100, rng) for _ in range(2000)]
    assert set(ks) == set(range(1, 6))   # round(ln 100) = 5


def test_alg3_argmax_and_uniform_ties():
    es = ba_edges(200, 2, 1)
    wl = np.zeros(200, np.int64)
    ties = np.array([3, 50, 120, 170])
    wl[ties] = 9
    wl[10] = 8
    comp = SecureComparator(wl)
    rng = np.random.default_rng(0)
    picks = [W.find_max_device(es, comp, rng)[0] for _ in range(800)]
    assert set(picks) <= set(ties.tolist())
    counts = np.array([picks.count(t) for t in ties])
    assert stats.chisquare(counts).pvalue > 1e-3
    assert comp.calls > 0
    # CVS contains every local maximum
    _, cvs = W.find_max_device(es, comp, rng)
    local = [v for v in range(200) if all(wl[v] >= wl[u] for u in es.nbr[es.indptr[v]:es.indptr[v + 1]])]
    assert cvs == len(local)


def test_secure_comparator_reveals_bits_only():
    c = SecureComparator(np.array([3, 7, 7]))
    assert c.ge([1, 0], [2, 1]).tolist() == [True, False]
    assert c.calls == 2 and c.bits == 2 * c.bit_width
    assert not hasattr(c, "values")
    with pytest.raises(ValueError):
        SecureComparator(np.array([-1]))
