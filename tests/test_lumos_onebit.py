"""One-bit LDP encoder with binning (Lumos Eqs. 26-27, Thms 3-4)."""
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from fgl_jax.privacy import onebit


def test_unbiased_monte_carlo():
    """Thm 3 on an encoded coordinate: mean of x'' over n = 10^6 draws within 4 sigma/sqrt(n),
    for 6 (eps', x) combinations at once (one column each)."""
    n = 1_000_000
    eps_c = jnp.array([0.25, 1.0, 3.0, 0.25, 1.0, 3.0])
    xval = jnp.array([0.0, 0.3, 1.0, 0.3, 1.0, 0.0])
    p = onebit.encode_probs(jnp.broadcast_to(xval, (n, 6)), eps_c[None, :])
    bits = (jax.random.uniform(jax.random.PRNGKey(7), (n, 6)) < p).astype(jnp.float32)
    mean = np.asarray(onebit.recover(bits, eps_c[None, :]).mean(0), np.float64)
    c = (np.exp(np.asarray(eps_c)) + 1) / (np.exp(np.asarray(eps_c)) - 1)
    sigma = 0.5 * c          # |x'' - mid| = C/2 on [0, 1], so sd <= C/2
    assert np.all(np.abs(mean - np.asarray(xval)) < 4 * sigma / math.sqrt(n))


def test_probability_ratio_and_levels():
    for eps_c in (0.1, 0.61, 2.0):
        p_hi = float(onebit.encode_probs(jnp.array(1.0), eps_c))
        p_lo = float(onebit.encode_probs(jnp.array(0.0), eps_c))
        xs = jnp.linspace(0, 1, 11)
        p = onebit.encode_probs(xs, eps_c)
        # worst-case ratios over outputs 1 and 0 equal e^eps' (<= up to float error)
        assert p_hi / p_lo == pytest.approx(math.exp(eps_c), rel=1e-5)
        assert (1 - p_lo) / (1 - p_hi) == pytest.approx(math.exp(eps_c), rel=1e-5)
        ratio = np.max(np.asarray(p)[:, None] / np.asarray(p)[None, :])
        assert ratio <= math.exp(eps_c) * (1 + 1e-5)
    # empirical ratio from samples
    n = 400_000
    b1 = onebit.encode_bits(jax.random.PRNGKey(1), jnp.ones((n, 1)), jnp.full((n,), 1.0))
    b0 = onebit.encode_bits(jax.random.PRNGKey(2), jnp.zeros((n, 1)), jnp.full((n,), 1.0))
    assert float(b1.mean() / b0.mean()) == pytest.approx(math.e, rel=0.03)


def test_binning_partitions_and_outputs():
    n, d = 40, 23
    key = jax.random.PRNGKey(0)
    x = jax.random.uniform(key, (n, d))
    num_bins = jnp.asarray(np.arange(n) % 9 + 1)
    bins = np.asarray(onebit.make_bins(key, num_bins, d))
    for u in range(n):
        b = int(num_bins[u])
        sizes = np.bincount(bins[u], minlength=b)
        assert sizes.size == b and set(sizes) <= {d // b, -(-d // b)}
    np.testing.assert_array_equal(np.bincount(bins[n - 1], minlength=int(num_bins[n - 1])),
                                  onebit.bin_sizes(num_bins[n - 1], d, jnp.arange(int(num_bins[n - 1]))))
    # every recipient bin of every sender
    src = np.repeat(np.arange(n), np.asarray(num_bins))
    rbin = np.concatenate([np.arange(b) for b in np.asarray(num_bins)])
    xx, eps_c = onebit.onebit_ldp(key, x, num_bins, src, rbin, 2.0)
    xx, eps_c = np.asarray(xx), np.asarray(eps_c)
    np.testing.assert_allclose(eps_c, 2.0 / np.ceil(d / np.asarray(num_bins)), rtol=1e-6)     # default: per recipient
    _, eps_avg = onebit.onebit_ldp(key, x, num_bins, src, rbin, 2.0, budget="per-coordinate-average")
    np.testing.assert_allclose(np.asarray(eps_avg), 2.0 * np.asarray(num_bins) / d, rtol=1e-6)
    c = (np.exp(eps_c) + 1) / (np.exp(eps_c) - 1)
    dev = np.abs(xx - 0.5)
    half_c = 0.5 * c[src][:, None]
    assert np.all((dev < 1e-6) | (np.abs(dev - half_c) < 1e-4 * half_c))   # outputs in {lo, mid, hi}
    assert np.all((dev > 1e-6).sum(1) <= -(-d // np.asarray(num_bins)[src]))
    # union of one sender's bins covers all d coordinates exactly once
    u = 8
    rows = xx[src == u]
    assert np.all((np.abs(rows - 0.5) > 1e-6).sum(0) == 1)


def test_budget_per_recipient():
    d = 23
    for b in range(1, d + 1):
        eps_c = float(onebit.coordinate_budget(2.0, jnp.array([b]), d)[0])      # default: per-recipient
        assert -(-d // b) * eps_c <= 2.0 + 1e-6
    # paper-literal budget: (d / B) * eps * B / d = eps when B divides d
    avg = float(onebit.coordinate_budget(2.0, jnp.array([4]), 128, budget="per-coordinate-average")[0])
    assert avg * 32 == pytest.approx(2.0)
    with pytest.raises(ValueError, match="budget"):
        onebit.coordinate_budget(2.0, jnp.array([4]), 128, budget="strict")


def test_rescale_unbiased_over_bins():
    n, d, b = 20000, 8, 4
    x = jnp.full((n, d), 0.8)
    src, rbin = jnp.arange(n), jnp.zeros(n, jnp.int32)
    xx, _ = onebit.onebit_ldp(jax.random.PRNGKey(3), x, jnp.full((n,), b), src, rbin, 8.0, rescale=True)
    m = np.asarray(xx).mean(0)
    assert np.all(np.abs(m - 0.8) < 0.05)
    xx0, _ = onebit.onebit_ldp(jax.random.PRNGKey(3), x, jnp.full((n,), b), src, rbin, 8.0)
    # paper-literal partial vectors shrink towards the midpoint by |bin|/d
    assert np.all(np.abs(np.asarray(xx0).mean(0) - (0.5 + 0.3 * 2 / 8)) < 0.03)


def test_bad_input():
    x = jnp.zeros((2, 3))
    args = (jnp.array([1, 1]), jnp.array([0]), jnp.array([0]))
    with pytest.raises(ValueError, match="epsilon"):
        onebit.onebit_ldp(jax.random.PRNGKey(0), x, *args, 0.0)
    with pytest.raises(ValueError, match="epsilon"):
        onebit.onebit_ldp(jax.random.PRNGKey(0), x, *args, -1.0)
    with pytest.raises(ValueError, match="a < b"):
        onebit.onebit_ldp(jax.random.PRNGKey(0), x, *args, 1.0, a=1.0, b=1.0)


def test_mmse_shrinkage_is_exact_post_processing_and_lowers_mse():
    """prior_var: output = mid + lam (x'' - mid) on the same draws (post-processing => still eps-LDP),
    and for x ~ Bernoulli(p) with prior variance p(1-p) its MSE is below the unbiased recovery's."""
    rng = np.random.default_rng(0)
    n, d, p = 4000, 32, 0.2
    x = (rng.random((n, d)) < p).astype(np.float32)
    nb = np.full(n, 4)
    src = np.repeat(np.arange(n), 4)
    rb = np.tile(np.arange(4), n)
    key = jax.random.PRNGKey(3)
    raw, epsc = onebit.onebit_ldp(key, x, nb, src, rb, 2.0)
    sh, _ = onebit.onebit_ldp(key, x, nb, src, rb, 2.0, prior_var=p * (1 - p))
    lam = np.asarray(onebit.mmse_factor(epsc, p * (1 - p)))[src][:, None]
    np.testing.assert_allclose(np.asarray(sh), 0.5 + lam * (np.asarray(raw) - 0.5), rtol=1e-5, atol=1e-6)
    sent = np.asarray(raw) != 0.5
    xs = x[src]
    mse_raw = np.mean((np.asarray(raw) - xs)[sent] ** 2)
    mse_sh = np.mean((np.asarray(sh) - xs)[sent] ** 2)
    assert mse_sh < 0.05 * mse_raw
    with pytest.raises(ValueError, match="prior_var"):
        onebit.onebit_ldp(key, x, nb, src, rb, 2.0, prior_var=0.0)
