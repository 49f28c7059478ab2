"""Secure aggregation (fgl_jax/privacy/secure_sum.py, fgl_jax/aggregators/secure.py, --secure-agg):
exactness against a Python-integer reference, the refusal beyond the threshold, the uniformity of
fewer than t Shamir shares, the run against the plain run, and the byte counts against a hand count."""
from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

from fgl_jax import aggregators, registry
from fgl_jax.privacy import field as F
from fgl_jax.privacy import secure_sum as S
from fgl_jax.systems.baseline import RunConfig, build
from tests.helpers import toy_graph

P = F.MERSENNE_31


def python_sum(q: np.ndarray, dropped: np.ndarray) -> np.ndarray:
    """Reference: each column's sum over the survivors in Python integers, mod p (no JAX, no int64 wrap)."""
    rows = [r for r, d in zip(q.tolist(), dropped.tolist()) if not d]
    return np.array([sum(col) % P for col in zip(*rows)], np.int64)


@pytest.mark.parametrize("self_mask", [True, False])
def test_decode_equals_the_plaintext_fixed_point_sum_for_0_to_max_dropouts(self_mask):
    """C = 6 clients, t = 3: every number of drop-outs 0..3 (random sets), the unmasked field sum equals
    the survivors' Python-integer sum mod p exactly, and decodes to the float sum of the rounded
    fixed-point values exactly (the encoding's only error is its rounding)."""
    rng = np.random.default_rng(0)
    c, d, t, f = 6, 40, 3, 16
    x = rng.normal(scale=3.0, size=(c, d))
    q = np.asarray(F.quantize(x, f, P))
    fixed = np.round(x * 2.0 ** f)                                        # integers, exact in float64
    for n_drop in range(0, c - t + 1):
        dropped = np.zeros(c, bool)
        dropped[rng.choice(c, n_drop, replace=False)] = True
        out, ok = S.secure_sum(q, dropped, jax.random.key(n_drop), t, P, self_mask=self_mask)
        assert bool(ok)
        np.testing.assert_array_equal(np.asarray(out), python_sum(q, dropped))
        decoded = np.asarray(F.dequantize(out, f, P, jnp.float64))
        np.testing.assert_array_equal(decoded, fixed[~dropped].sum(0) * 2.0 ** -f)


def test_masked_vectors_hide_the_inputs():
    """What the server receives is not the input: a masked vector differs from x_i almost everywhere."""
    c, d = 4, 200
    x = np.zeros((c, d), np.int64)
    pair, own = S.draw_seeds(jax.random.key(1), c)
    y = np.asarray(jax.jit(S.mask_inputs)(x, pair, own))
    assert (y != 0).mean() > 0.99


def test_more_dropouts_than_tolerated_are_refused():
    c, t = 6, 4
    q = np.zeros((c, 5), np.int64)
    dropped = np.array([1, 1, 1, 0, 0, 0], bool)                        # 3 survivors < t = 4
    with pytest.raises(ValueError, match="3 of 6 clients dropped, leaving 3 survivors, fewer than the threshold t=4"):
        S.secure_sum(q, dropped, jax.random.key(0), t)
    # traced drop-outs cannot raise: the result is flagged instead (the aggregator turns it into NaN)
    _, ok = jax.jit(lambda dr: S.secure_sum(q, dr, jax.random.key(0), t))(jnp.asarray(dropped))
    assert not bool(ok)
    with pytest.raises(ValueError, match="threshold t=7 must be in 1..6"):
        S.check_threshold(6, 7)


def chi2_pvalue(shares: np.ndarray, buckets: int) -> float:
    """p-value of Pearson's chi-squared test that the rows of shares [N, k] are uniform over GF(p)^k,
    each coordinate bucketed into `buckets` equal ranges (cells: buckets^k, equiprobable up to 1/p)."""
    n, k = shares.shape
    b = (shares.astype(np.float64) * buckets / P).astype(np.int64)
    cell = np.ravel_multi_index(tuple(b.T), (buckets,) * k)
    counts = np.bincount(cell, minlength=buckets ** k)
    return float(stats.chisquare(counts).pvalue)


@pytest.mark.parametrize("secret", [0, 123_456_789])
def test_fewer_than_t_colluders_see_uniform_shares(secret):
    """t = 3 of n = 5: for a fixed secret, N = 20,000 independent sharings; the joint shares of any
    2 (= t - 1) colluding holders, bucketed 16 x 16 (256 cells, 78 expected per cell), pass Pearson's
    chi-squared test of uniformity at significance 0.001 for every pair (10 pairs: a false alarm
    somewhere has probability <= 1%, the seeds are fixed so the outcome is deterministic). Negative
    control: 3 = t shares of secret 0 fall on one polynomial through the origin, and with threshold 1
    every share is the secret itself; both fail the same test by far."""
    n, t, trials, buckets = 5, 3, 20_000, 16
    secrets = np.full((trials,), secret, np.int64)
    shares = np.asarray(S.shamir_share(jax.random.key(secret % 97), secrets, n, t, P)).T   # [trials, n]
    for i in range(n):
        for j in range(i + 1, n):
            assert chi2_pvalue(shares[:, [i, j]], buckets) > 1e-3, (i, j)
    # every share reconstructs the secret with any t holders (so the shares are not just noise)
    rec = S.shamir_reconstruct(jnp.asarray(shares.T[:, :50]), jnp.array([1, 0, 1, 0, 1], bool), P)
    assert (np.asarray(rec) == secret).all()
    plain = np.asarray(S.shamir_share(jax.random.key(0), secrets, n, 1, P)).T
    assert chi2_pvalue(plain[:, [0, 1]], buckets) < 1e-12


@pytest.mark.slow
def test_secure_mean_equals_the_weighted_mean_up_to_rounding():
    """The aggregator against aggregators.mean(): without drop-outs |difference| <= C 2^-(f+1) per
    coordinate (the rounding of C encoded values) plus float32 rounding (1e-6 at |x| <= 4); clients
    outside `mask` drop out and the mean is over the rest (weights renormalised)."""
    rng = np.random.default_rng(3)
    c, f = 5, 20
    params = {"w": jnp.asarray(rng.normal(size=(3, 4)), jnp.float32), "b": jnp.asarray(rng.normal(size=4), jnp.float32)}
    ups = jax.tree.map(lambda a: a[None] + jnp.asarray(rng.normal(scale=0.5, size=(c,) + a.shape), jnp.float32), params)
    weights = jnp.asarray(rng.integers(1, 50, c), jnp.float32)
    bound = c * 2.0 ** -(f + 1) + 1e-6
    sec = aggregators.secure_mean("weights", threshold=3, frac_bits=f)
    # (mask, params): all clients around the server model; a mask; uploads that are changes (SCAFFOLD's)
    for mask, base in ((None, params), (jnp.array([1, 0, 1, 1, 0], bool), params), (None, None)):
        got = jax.jit(lambda u, m, b: sec.aggregate((), u, weights, jax.random.key(0), params=b,
                                                    mask=m)[0])(ups, mask, base)
        w = np.asarray(weights) * (1 if mask is None else np.asarray(mask))
        for k in params:
            ref = np.tensordot(w / w.sum(), np.asarray(ups[k], np.float64), axes=1)
            assert np.abs(np.asarray(got[k], np.float64) - ref).max() <= bound


@pytest.mark.slow
def test_secure_mean_overflow_and_too_few_survivors_give_nan():
    """Values outside the field's range (2^30 / 2^20 / C) or a round with fewer than t survivors
    (here: every client outside the mask) aggregate to NaN, never to a wrong number."""
    sec = aggregators.secure_mean("uniform", threshold=2, frac_bits=20)
    big = {"w": jnp.full((3, 2), 5000.0)}
    out = jax.jit(lambda u: sec.aggregate((), u, jnp.ones(3), jax.random.key(0))[0])(big)
    assert np.isnan(np.asarray(out["w"])).all()
    small = {"w": jnp.ones((3, 2))}
    out = jax.jit(lambda m: sec.aggregate((), small, jnp.ones(3), jax.random.key(0), mask=m)[0])(
        jnp.array([1, 0, 0], bool))
    assert np.isnan(np.asarray(out["w"])).all()
    with pytest.raises(ValueError, match="2 of 3 clients dropped, leaving 1 survivors"):
        aggregators.secure_mean("uniform", threshold=2, dropout=0.67).aggregate((), small, jnp.ones(3),
                                                                                jax.random.key(0))


@pytest.mark.slow
def test_secure_agg_run_equals_the_plain_run_up_to_rounding():
    """fedavg with --secure-agg vs without, one round from the same init and key: the server models
    differ by at most C 2^-(f+1) = 4 * 2^-21 per coordinate plus float32 rounding (2e-6)."""
    g = toy_graph(n=60, seed=3)
    cfg = RunConfig(dataset="toy", clients=4, rounds=1, hidden=8, split="keep")
    out = []
    for c in (cfg, cfg.replace(secure_agg=True)):
        prog = build(c, graph=g)
        state = prog.algorithm.init(jax.random.key(0), prog.data)
        new, _ = jax.jit(prog.algorithm.round)(state, prog.data, jax.random.key(1))
        out.append(new.server)
    bound = 4 * 2.0 ** -21 + 2e-6
    for a, b in zip(jax.tree.leaves(out[0]), jax.tree.leaves(out[1])):
        assert np.abs(np.asarray(a, np.float64) - np.asarray(b, np.float64)).max() <= bound


def test_byte_counts_match_a_hand_count():
    """C = 5 clients, D = 100 parameters, 1 drop-out, self-mask, seeds of 2 field elements, 4 bytes each:
    setup 4 recipients x (4 pair seeds + 1 self seed) x 2 x 4 B = 160 B; masked vector 100 x 4 = 400 B;
    unmasking: 1 dropped x 4 survivors' pair seeds x 2 x 4 = 32 B plus 4 survivors' self seeds x 2 x
    4 = 32 B; so a survivor sends 624 B, the dropped client 160 B, the server receives 4 x 624 + 160 =
    2,656 B and relays 5 x 160 = 800 B."""
    assert S.protocol_bytes(5, 100, 1) == {"client_up": 624, "dropped_up": 160, "server_in": 2656,
                                           "server_out": 800}
    # without a self-mask: setup 4 x 4 x 2 x 4 = 128, unmasking 32: 128 + 400 + 32 = 560
    assert S.protocol_bytes(5, 100, 1, self_mask=False)["client_up"] == 560


def test_run_columns_and_summary_carry_the_bytes():
    """The run's columns for a 2-layer GCN, 12 features, hidden 8, 3 classes: D = 12*8 + 8 + 8*3 + 3
    = 131; 4 clients, dropout 0.25 -> 1 drop-out: a survivor sends 3 x 4 x 2 x 4 (setup) + 131 x 4 +
    (1 x 3 + 3) x 2 x 4 = 96 + 524 + 48 = 668 B; the server receives 3 x 668 + 96 = 2,100 B, relays 4 x 96."""
    g = toy_graph(n=60, seed=3)
    cfg = RunConfig(dataset="toy", clients=4, rounds=3, hidden=8, split="keep", secure_agg=True,
                    secure_agg_dropout=0.25)
    prog = build(cfg, graph=g)
    np.testing.assert_array_equal(prog.per_round["secagg_client_up_bytes"], [668] * 3)
    np.testing.assert_array_equal(prog.per_round["comm_secagg_up_bytes"], [2100] * 3)
    np.testing.assert_array_equal(prog.per_round["comm_secagg_down_bytes"], [384] * 3)
    assert prog.describe["secure_aggregation"]["threshold"] == 3
    assert prog.describe["secure_aggregation"]["dropped_per_round"] == 1


def test_run_refusals():
    g = toy_graph(n=60, seed=3)
    cfg = RunConfig(dataset="toy", clients=4, rounds=1, hidden=8, split="keep", secure_agg=True)
    with pytest.raises(ValueError, match="2 of 4 clients dropped, leaving 2 survivors, fewer than the threshold t=3"):
        build(cfg.replace(secure_agg_dropout=0.5), graph=g)
    with pytest.raises(ValueError, match="secure_agg_threshold=3 is an option of secure_agg, which is off"):
        RunConfig(secure_agg_threshold=3)
    with pytest.raises(ValueError, match="secure_agg: algorithm 'fedgta' has no server aggregate"):
        build(cfg.replace(algorithm="fedgta"), graph=g)
