"""The graph models' dropout and dense product (`fgl_jax.nn.graph.dropout`, `contiguous_dot`): the keep
rate within a binomial tolerance, inverted scaling, row masks independent of the padded row count, and
the product's value and gradients against NumPy."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from fgl_jax.nn.graph import contiguous_dot, dropout, dropout_bits


@pytest.mark.parametrize("rate", [0.5, 0.1, 0.3])
def test_dropout_keeps_one_minus_rate_and_rescales(rate):
    h = jnp.ones((400, 64), jnp.float32)
    out = np.asarray(jax.jit(dropout, static_argnums=1)(h, rate, jax.random.key(3)))
    kept = out != 0
    n = kept.size
    # 25,600 Bernoulli(1 - rate) draws: the kept fraction lies within 5 standard deviations
    sd = np.sqrt(rate * (1 - rate) / n)
    assert abs(kept.mean() - (1 - rate)) < 5 * sd
    # kept entries are scaled by 1 / (the keep probability on the draws' grid), so E[out] = h
    grid = 2 ** dropout_bits(rate)
    np.testing.assert_allclose(out[kept], grid / round((1 - rate) * grid), rtol=1e-6)
    # every column and every row gets draws of its own (no repeated word across columns)
    assert 0.2 < kept.mean(0).min() and kept.mean(0).max() < 1.0
    assert not np.array_equal(kept[:, 0], kept[:, 1])


def test_dropout_bits_fewest_that_are_exact():
    assert dropout_bits(0.5) == 1 and dropout_bits(0.25) == 2 and dropout_bits(0.125) == 4
    assert dropout_bits(1 - 3 / 256) == 8 and dropout_bits(0.1) == 16 and dropout_bits(0.0) == 1


@pytest.mark.parametrize("rate", [0.5, 0.25])
def test_dropout_elements_of_one_word_are_uncorrelated(rate):
    # at rate 0.5 one uint32 word serves 32 neighbouring columns, at 0.25 16: neighbouring columns must
    # still be independent draws. 20,000 rows: each correlation lies within 5 / sqrt(n) of 0
    kept = np.asarray(dropout(jnp.ones((20_000, 64)), rate, jax.random.key(11))) != 0
    c = np.corrcoef(kept.T.astype(np.float64))
    off = c[~np.eye(64, dtype=bool)]
    assert np.abs(off).max() < 5 / np.sqrt(kept.shape[0])


def test_dropout_masks_of_a_row_do_not_depend_on_the_row_count():
    key = jax.random.key(7)
    big = np.asarray(dropout(jnp.ones((50, 24)), 0.5, key))
    small = np.asarray(dropout(jnp.ones((13, 24)), 0.5, key))
    np.testing.assert_array_equal(big[:13], small)


def test_dropout_edges():
    h = jnp.arange(12.0).reshape(3, 4)
    np.testing.assert_array_equal(np.asarray(dropout(h, 1.0, jax.random.key(0))), 0.0)
    np.testing.assert_array_equal(np.asarray(dropout(h, 0.0, jax.random.key(0))), np.asarray(h))


def test_contiguous_dot_value_and_gradients_match_numpy():
    rng = np.random.default_rng(0)
    x, w, g = rng.normal(size=(9, 5)), rng.normal(size=(5, 3)), rng.normal(size=(9, 3))
    dims = (((1,), (0,)), ((), ()))
    f = lambda a, b: (contiguous_dot(a, b, dims) * jnp.asarray(g, jnp.float32)).sum()
    out = contiguous_dot(jnp.asarray(x, jnp.float32), jnp.asarray(w, jnp.float32), dims)
    np.testing.assert_allclose(np.asarray(out), x @ w, rtol=1e-5, atol=1e-5)
    dx, dw = jax.grad(f, argnums=(0, 1))(jnp.asarray(x, jnp.float32), jnp.asarray(w, jnp.float32))
    np.testing.assert_allclose(np.asarray(dx), g @ w.T, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(np.asarray(dw), x.T @ g, rtol=1e-5, atol=1e-5)
    # a batched input takes jax.lax.dot_general's own path, same value
    x3 = rng.normal(size=(2, 9, 5)).astype(np.float32)
    out3 = contiguous_dot(jnp.asarray(x3), jnp.asarray(w, jnp.float32), (((2,), (0,)), ((), ())))
    np.testing.assert_allclose(np.asarray(out3), x3 @ w, rtol=1e-5, atol=1e-5)
