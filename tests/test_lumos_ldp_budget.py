"""Per-recipient privacy of Lumos's one-bit LDP encoder (fgl_jax/privacy/onebit.py).

The statistical test measures what a recipient sees: the empirical likelihood ratio of the
mechanism's output (its bin of recovered coordinates, 0.5-filled elsewhere) for the two extreme
inputs x = 0 and x = 1 (the worst pair: every coordinate's ratio is monotone in x). Under the
default budget ("per-recipient") no outcome's ratio is significantly above e^eps; under the
paper's split ("per-coordinate-average") the recipient of a larger bin sees e^(1.2 eps) on the toy
case d = 5, B = 3 (bins of 2, 2, 1 coordinates; 2 * 3/5 = 1.2), far outside the interval.
"""
import math

import jax
import numpy as np
import pytest

from fgl_jax.privacy import onebit
from fgl_jax.systems.lumos import LumosConfig, prepare
from fgl_jax.systems.lumos.program import describe
from tests.helpers import toy_graph

D, B, EPS = 5, 3, 1.0
N_DRAWS = 400_000        # per input and recipient bin
Z = 4.0                  # half-width of the interval in standard errors (40 outcomes x 2 bins x 2 budgets)


def outcome_counts(x_value: float, rbin: int, budget: str, seed: int) -> dict:
    """How often each output vector occurs over N_DRAWS independent draws (one device per draw):
    {code: count}, code = base-3 digits per coordinate (0 = not in the bin, 1 = low, 2 = high)."""
    x = np.full((N_DRAWS, D), x_value, np.float32)
    out, _ = onebit.onebit_ldp(jax.random.key(seed), x, np.full(N_DRAWS, B), np.arange(N_DRAWS),
                               np.full(N_DRAWS, rbin), EPS, budget=budget)
    out = np.asarray(out)
    digit = np.where(np.abs(out - 0.5) < 1e-6, 0, np.where(out > 0.5, 2, 1))
    codes = digit @ (3 ** np.arange(D))
    u, c = np.unique(codes, return_counts=True)
    return dict(zip(u.tolist(), c.tolist()))


def log_lr_intervals(rbin: int, budget: str):
    """For every outcome seen under both inputs: (log LR estimate, its standard error, exact log LR).

    SE by the delta method, var(log p_hat) = (1 - p) / (n p). Exact: each coordinate in the bin is
    high with probability e/(e+1) (x = 1) or 1/(e+1) (x = 0), e = e^eps'; the bin is independent of x."""
    c1 = outcome_counts(1.0, rbin, budget, seed=2 * rbin + 1)
    c0 = outcome_counts(0.0, rbin, budget, seed=2 * rbin + 2)
    eps_c = float(onebit.coordinate_budget(EPS, np.array([B]), D, budget)[0])
    rows = []
    for code in set(c1) & set(c0):
        p1, p0 = c1[code] / N_DRAWS, c0[code] / N_DRAWS
        se = math.sqrt((1 - p1) / (N_DRAWS * p1) + (1 - p0) / (N_DRAWS * p0))
        digits = [(code // 3 ** i) % 3 for i in range(D)]
        exact = eps_c * (sum(d == 2 for d in digits) - sum(d == 1 for d in digits))
        rows.append((math.log(p1 / p0), se, exact))
    return rows


@pytest.mark.parametrize("budget,rbin,exact_max", [
    ("per-recipient", 0, 1.0),                 # bin of 2 at eps/2 each: exactly eps
    ("per-recipient", 2, 0.5),                 # bin of 1
    ("per-coordinate-average", 0, 1.2),        # bin of 2 at 3/5 eps each: 1.2 eps
    ("per-coordinate-average", 2, 0.6),
])
def test_empirical_likelihood_ratio_per_recipient(budget, rbin, exact_max):
    rows = log_lr_intervals(rbin, budget)
    size = int(onebit.bin_sizes(np.array(B), D, np.array(rbin)))
    assert len(rows) == math.comb(D, size) * 2 ** size           # every output was seen under both inputs
    for est, se, exact in rows:                                   # the closed form, outcome by outcome
        assert abs(est - exact) < Z * se, (est, exact, se)
    est, se, exact = max(rows, key=lambda r: r[0])
    assert max(r[2] for r in rows) == pytest.approx(exact_max * EPS)
    # the realised accounting the run reports is the exact worst case
    assert onebit.recipient_epsilon(EPS, [B], [0], [rbin], D, budget)[0] == pytest.approx(exact_max * EPS)
    if budget == "per-recipient":
        # no outcome significantly above e^eps (the bound is attained by the all-high output of bin 0)
        assert all(e - Z * s <= EPS for e, s, _ in rows)
    elif rbin == 0:
        # the larger bin exceeds e^eps: the whole interval lies above it
        assert est - Z * se > EPS
        assert math.exp(est) == pytest.approx(math.exp(1.2 * EPS), rel=0.1)


def test_recipient_epsilon_against_the_bins_drawn():
    """Accounting = |bin| * eps' with |bin| counted in the bins make_bins draws; default max <= eps,
    with equality for the largest bin; the paper's split reaches ceil(d/B) B / d * eps."""
    d = 23
    num_bins = np.arange(1, d + 1)
    bins = np.asarray(onebit.make_bins(jax.random.key(0), num_bins, d))
    src = np.repeat(np.arange(d), num_bins)
    rbin = np.concatenate([np.arange(b) for b in num_bins])
    counted = np.array([np.sum(bins[u] == k) for u, k in zip(src, rbin)])
    for budget in onebit.BUDGETS:
        eps_c = np.asarray(onebit.coordinate_budget(2.0, num_bins, d, budget), np.float64)
        got = onebit.recipient_epsilon(2.0, num_bins, src, rbin, d, budget)
        np.testing.assert_allclose(got, counted * eps_c[src], rtol=1e-6)
        worst = np.array([got[src == u].max() for u in range(d)])
        if budget == "per-recipient":
            np.testing.assert_allclose(worst, 2.0, rtol=1e-12)
        else:
            np.testing.assert_allclose(worst, 2.0 * np.ceil(d / num_bins) * num_bins / d, rtol=1e-12)
            assert worst.max() == pytest.approx(2.0 * 2 * 22 / 23)       # B = 22: a bin of 2 at 22/23 eps each
    with pytest.raises(ValueError, match="recipient_bin"):
        onebit.recipient_epsilon(1.0, [2], [0], [2], d)


def test_run_summary_reports_the_realised_budget():
    g = toy_graph(60, num_features=12, seed=1)
    out = {}
    for budget in onebit.BUDGETS:
        cfg = LumosConfig(rounds=1, trim="greedy", epsilon=2.0, budget=budget)
        prep = prepare(g, cfg, encode="program")
        ldp = describe(cfg, g, prep)["ldp"]
        meta = prep.meta
        rel = onebit.recipient_epsilon(1.0, np.minimum(meta.num_bins, 12), meta.pair_src, meta.recipient_bin, 12,
                                       budget)
        assert ldp["budget"] == budget and ldp["pairs"] == len(meta.pair_src)
        assert ldp["eps_recipient_max"] == pytest.approx(2.0 * rel.max())
        assert ldp["eps_recipient_mean"] == pytest.approx(2.0 * rel.mean())
        out[budget] = ldp
    assert LumosConfig().budget == "per-recipient"
    assert out["per-recipient"]["eps_recipient_max"] <= 2.0 * (1 + 1e-9)
    assert out["per-recipient"]["recipients_over_eps"] == 0
    # on this graph some devices have a number of recipients that does not divide d = 12
    assert out["per-coordinate-average"]["eps_recipient_max"] > 2.0
    assert out["per-coordinate-average"]["recipients_over_eps"] > 0
    with pytest.raises(ValueError, match="budget"):
        LumosConfig(budget="strict")


def test_results_state_the_budget_they_used():
    from experiments.lumos import paper
    old = {"LFM/node/gcn/lumos": {"test": 0.2, "info": {"epsilon": 2.0}}}
    assert "predate the per-recipient default" in paper.budget_note(old)
    acc = {"budget": "per-recipient", "eps_recipient_max_over_eps": 1.0, "eps_recipient_mean_over_eps": 0.9}
    new = {"LFM/node/gcn/lumos": {"test": 0.2, "info": {"ldp_accounting": acc}}}
    note = paper.budget_note(new)
    assert "`per-recipient`" in note and "1.00ε" in note and "0.90ε" in note and "Not the paper's" in note
