"""Issue 49 item 1: the Lumos authors' public encoder as an opt-in variant (`--encoder authors-code`),
checked against a NumPy transcription of their `encode` (tree_constructor.py), and its realised
per-recipient epsilon reported."""
from __future__ import annotations

import json
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from fgl_jax.cli import main
from fgl_jax.graph import Graph
from fgl_jax.privacy import onebit


def _authors_numpy(x: np.ndarray, m: float, eps: float):
    """The authors' encode() as printed, with d the feature dimension: (the two output values, P[t=1])."""
    d = x.shape[0]
    alpha, beta = x.max(), x.min()
    em = math.exp(math.exp(eps / m))
    p = (x - alpha) / (beta - alpha)
    p = (p * (em - 1) + 1) / (em + 1)
    scale = d * (beta - alpha) / (2 * m) * (em + 1) / (em - 1)
    return (-scale + (alpha + beta) / 2, scale + (alpha + beta) / 2), p


@pytest.mark.slow
def test_the_encoder_follows_the_authors_formula():
    rng = np.random.default_rng(0)
    n, d, eps = 5, 6, 2.0
    x = rng.random((n, d)).astype(np.float32)
    src = np.array([0, 0, 0, 1, 1, 2, 3, 3, 3, 3])        # m = 3, 2, 1, 4 recipients; node 4 sends nothing
    m = np.bincount(src, minlength=n)
    draws = jax.vmap(lambda k: onebit.authors_code_encode(k, jnp.asarray(x), jnp.asarray(src), eps, d))(
        jax.random.split(jax.random.key(1), 4000))       # [R, P, d]
    draws = np.asarray(draws)
    for p_i, u in enumerate(src):
        (lo, hi), prob = _authors_numpy(x[u].astype(np.float64), m[u], eps)
        vals = draws[:, p_i, :]
        assert np.all(np.isclose(vals, lo, rtol=1e-4, atol=1e-5) | np.isclose(vals, hi, rtol=1e-4, atol=1e-5))
        freq = np.isclose(vals, hi, rtol=1e-4, atol=1e-5).mean(0)
        # 4000 Bernoulli draws: 5 standard errors (<= 0.04) as the tolerance
        assert np.all(np.abs(freq - prob) <= 5 * np.sqrt(prob * (1 - prob) / 4000) + 1e-3), (u, freq, prob)


def test_flat_vectors_are_sent_unchanged_and_large_budgets_do_not_overflow():
    x = jnp.array([[0.3, 0.3, 0.3], [0.0, 1.0, 0.5]])
    out = onebit.authors_code_encode(jax.random.key(0), x, jnp.array([0, 1]), 500.0, 3)
    assert np.array_equal(np.asarray(out[0]), np.asarray(x[0])) and np.all(np.isfinite(np.asarray(out)))


def test_the_realised_epsilon_is_d_exp_eps_over_m():
    src = np.array([0, 0, 1])
    got = onebit.authors_code_epsilon(2.0, src, 3, 128)
    np.testing.assert_allclose(got, [128 * math.exp(1.0), 128 * math.exp(1.0), 128 * math.exp(2.0)])


def _ring(tmp_path):
    n = 24
    rng = np.random.default_rng(3)
    s = np.arange(n)
    r = (s + 1) % n
    y = (np.arange(n) % 2).astype(np.int32)
    x = (rng.random((n, 4)) + y[:, None]).astype(np.float32)
    tr = np.zeros(n, bool); tr[:12] = True
    va = np.zeros(n, bool); va[12:18] = True
    g = Graph("ring", np.concatenate([s, r]).astype(np.int32), np.concatenate([r, s]).astype(np.int32), x, y, 2,
              tr, va, ~(tr | va))
    return g.save(tmp_path / "ring.npz")


@pytest.mark.slow
def test_the_cli_runs_it_and_reports_the_realised_epsilon(tmp_path):
    path = _ring(tmp_path)
    out = tmp_path / "run"
    assert main(["lumos", "--dataset", str(path), "--encoder", "authors-code", "--epsilon", "2", "--rounds", "3",
                 "--mcmc-iters", "10", "--no-progress", "--out", str(out)]) == 0
    ldp = json.loads((out / "summary.json").read_text())["describe"]["ldp"]
    assert ldp["encoder"] == "authors-code" and ldp["eps"] == 2.0
    # every ring node has at most 2 recipients after trimming (1 or 2): each pair realises d exp(eps/m)
    # = 4 e^2 (m = 1) or 4 e (m = 2), never the eps the flag names
    assert any(math.isclose(ldp["eps_recipient_max"], v, rel_tol=1e-9) for v in (4 * math.e ** 2, 4 * math.e))
    assert 4 * math.e - 1e-9 <= ldp["eps_recipient_mean"] <= 4 * math.e ** 2 + 1e-9
    assert ldp["recipients_over_eps"] == ldp["pairs"] > 0 and "minimum and maximum" in ldp["also_revealed"]


def test_bins_options_do_not_combine_with_it():
    from fgl_jax.systems.lumos.config import LumosConfig
    with pytest.raises(ValueError, match="rescale and denoise do not apply"):
        LumosConfig(encoder="authors-code", rescale=True)
