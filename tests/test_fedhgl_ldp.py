"""FedHGL LDP mechanisms (T6, T7): closed-form probabilities, unbiasedness, variance, and an
empirical likelihood-ratio check of the per-attribute ε guarantee; bad input."""
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from fgl_jax.privacy.ldp import (LDPError, attribute_range, check_binary, check_epsilon, laplace, laplace_variance,
                                 randomized_response, rr_p, rr_variance)

N = 1_000_000


@pytest.mark.parametrize("eps", [0.5, 2.0])
def test_rr_probabilities_ratio_mean_variance(eps):
    d = 4.0
    p = float(rr_p(eps))
    assert p == pytest.approx((math.exp(eps) - 1) / (math.exp(eps) + 1), rel=1e-6)
    assert (1 + p) / (1 - p) == pytest.approx(math.exp(eps), rel=1e-5)          # bound holds with equality
    x = jnp.concatenate([jnp.ones(N // 2), jnp.zeros(N // 2)])[:, None]
    out = np.asarray(randomized_response(jax.random.PRNGKey(1), x, 1 / math.sqrt(d), eps))[:, 0].astype(np.float64)
    hi, lo = (1 + p) / (2 * p * math.sqrt(d)), -(1 - p) / (2 * p * math.sqrt(d))
    assert np.all(np.isclose(out, hi, rtol=1e-5) | np.isclose(out, lo, rtol=1e-5))   # Eq. 13 alphabet
    keep = (1 + p) / 2
    n2 = N // 2
    for half, xval in ((out[:n2], 1), (out[n2:], 0)):
        f_hi = np.isclose(half, hi, rtol=1e-5).mean()
        want = keep if xval == 1 else 1 - keep
        assert abs(f_hi - want) < 4 * math.sqrt(want * (1 - want) / n2)
        sd = math.sqrt(rr_variance(eps, d))
        assert abs(half.mean() - xval / math.sqrt(d)) < 4 * sd / math.sqrt(n2)       # unbiased
        assert half.var() == pytest.approx(rr_variance(eps, d), rel=0.02)
    assert rr_variance(eps, d) == pytest.approx((1 - p * p) / (4 * p * p * d), rel=1e-6)
    # empirical likelihood ratio of each output under x=1 vs x=0 stays <= e^eps (and reaches it)
    for v in (hi, lo):
        p1 = np.isclose(out[:n2], v, rtol=1e-5).mean()
        p0 = np.isclose(out[n2:], v, rtol=1e-5).mean()
        r = max(p1 / p0, p0 / p1)
        assert r <= math.exp(eps) * 1.03 and r >= math.exp(eps) * 0.97


def test_rr_code_centered_mean():
    eps, n = 1.0, 400_000
    for xval in (0.0, 1.0):
        out = np.asarray(randomized_response(jax.random.PRNGKey(2), jnp.full((n, 1), xval), 1.0, eps, "code_centered"))
        p = float(rr_p(eps))
        assert abs(out.mean() - (xval - 0.5)) < 4 * (1 / (2 * p)) / math.sqrt(n)


def test_laplace_mean_variance_and_density_ratio():
    eps, rng_, scale = 0.8, 2.0, 0.5
    s = rng_ * scale                               # sensitivity of d^{-1/2} x (Eq. 16)
    b = s / eps
    x0 = jnp.zeros((N, 1))
    out0 = np.asarray(laplace(jax.random.PRNGKey(3), x0, scale, eps, rng_))[:, 0].astype(np.float64)
    assert abs(out0.mean()) < 4 * math.sqrt(2) * b / math.sqrt(N)
    assert out0.var() == pytest.approx(laplace_variance(rng_, scale, eps), rel=0.02)
    assert laplace_variance(rng_, scale, eps) == pytest.approx(2 * b * b)
    # neighbouring input at the full range: scaled values differ by exactly s
    out1 = np.asarray(laplace(jax.random.PRNGKey(4), jnp.full((N, 1), rng_), scale, eps, rng_))[:, 0]
    bins = np.linspace(-2 * b, s + 2 * b, 25)
    h0, _ = np.histogram(out0, bins)
    h1, _ = np.histogram(out1, bins)
    ok = (h0 > 2000) & (h1 > 2000)
    ratio = np.maximum(h0[ok] / h1[ok], h1[ok] / h0[ok])
    assert ok.sum() > 10
    assert ratio.max() <= math.exp(eps) * 1.1           # ε-LDP per attribute (sampling slack)
    assert ratio.max() >= math.exp(eps) * 0.85          # and the bound is nearly attained in the tails


def test_attribute_range_eq16_hand_example():
    x = jnp.array([[0.1, 3.0], [0.5, -1.0], [9.0, 9.0], [0.3, 2.0]])
    border = jnp.array([True, True, False, True])       # the non-border row is excluded
    np.testing.assert_allclose(np.asarray(attribute_range(x, border)), [0.4, 4.0], rtol=1e-6)
    np.testing.assert_allclose(np.asarray(attribute_range(x, jnp.zeros(4, bool))), [0.0, 0.0])


def test_infinite_eps_is_noise_free():
    x = jnp.array([[1.0, 0.0, 1.0]])
    np.testing.assert_allclose(np.asarray(randomized_response(jax.random.PRNGKey(0), x, 0.5, math.inf)), 0.5 * x)
    np.testing.assert_allclose(np.asarray(laplace(jax.random.PRNGKey(0), x, 0.5, math.inf, 1.0)), 0.5 * x)


def test_mechanisms_jit_with_traced_eps():
    f = jax.jit(lambda k, e: randomized_response(k, jnp.ones((3, 2)), 1.0, e))
    assert f(jax.random.PRNGKey(0), 1.0).shape == (3, 2)
    g = jax.jit(lambda k, e: laplace(k, jnp.ones((3, 2)), 1.0, e, 1.0))
    assert g(jax.random.PRNGKey(0), 2.0).shape == (3, 2)


@pytest.mark.parametrize("bad", [0, -1.0, float("nan"), "1", True, None])
def test_bad_epsilon(bad):
    with pytest.raises(LDPError, match="eps"):
        check_epsilon(bad)
    with pytest.raises(LDPError):
        randomized_response(jax.random.PRNGKey(0), jnp.ones((2, 2)), 1.0, bad)
    with pytest.raises(LDPError):
        laplace(jax.random.PRNGKey(0), jnp.ones((2, 2)), 1.0, bad, 1.0)


def test_rr_rejects_non_binary_features():
    with pytest.raises(LDPError, match="binary"):
        check_binary(np.array([[0.0, 0.5]]), "x")
    with pytest.raises(LDPError, match="variant"):
        randomized_response(jax.random.PRNGKey(0), jnp.ones((2, 2)), 1.0, 1.0, variant="nope")
    check_binary(np.array([[0.0, 1.0]]))
