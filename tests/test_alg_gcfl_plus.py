"""GCFL+ / GCFL+dWs: the DTW distance vs a plain NumPy dynamic programme, the sequence-based split
step vs a NumPy re-derivation of the authors' server loop (brute-force minimum cut), the recorded
gradient norm vs the last step's gradient, and the split history."""
import itertools

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from fgl_jax.algorithms.gcfl import (dtw_distance, dtw_matrix, param_norm, record_grad_norm, record_splits,
                                     split_clusters)


def numpy_dtw(a, b) -> float:
    """Textbook DTW: D[i][j] = (a_i - b_j)^2 + min of the three predecessors; sqrt of the end."""
    n, m = len(a), len(b)
    d = np.full((n + 1, m + 1), np.inf)
    d[0, 0] = 0.0
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            d[i, j] = (a[i - 1] - b[j - 1]) ** 2 + min(d[i - 1, j], d[i, j - 1], d[i - 1, j - 1])
    return float(np.sqrt(d[n, m]))


def test_dtw_distance_matches_numpy():
    dtw = jax.jit(jax.vmap(dtw_distance))                        # one compile per shape pair
    rng = np.random.default_rng(0)
    for n, m in [(5, 5), (4, 7), (1, 3)]:
        a, b = rng.normal(size=(6, n)), rng.normal(size=(6, m))
        got = np.asarray(dtw(jnp.asarray(a, jnp.float32), jnp.asarray(b, jnp.float32)))
        np.testing.assert_allclose(got, [numpy_dtw(x, y) for x, y in zip(a, b)], rtol=1e-5, atol=1e-6)


def test_dtw_known_values_and_matrix():
    # a time-shifted copy is at distance 0 under warping, not under the Euclidean distance
    a = np.array([0.0, 1.0, 2.0, 1.0, 0.0])
    b = np.array([0.0, 0.0, 1.0, 2.0, 1.0])
    assert numpy_dtw(a, b) == pytest.approx(1.0)                  # only the tail 0 vs 1 differs
    rng = np.random.default_rng(4)
    seqs = rng.uniform(0.5, 2.0, (4, 5))
    seqs[:2] = a, b
    matrix = jax.jit(dtw_matrix, static_argnames=("standardize",))
    got = np.asarray(matrix(jnp.asarray(seqs, jnp.float32)))
    assert got[0, 1] == pytest.approx(1.0, rel=1e-6)
    want = np.array([[numpy_dtw(x, y) for y in seqs] for x in seqs])
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    scaled = seqs / seqs.std(axis=1, keepdims=True)              # the authors' standardize: no centring
    got = np.asarray(matrix(jnp.asarray(seqs, jnp.float32), standardize=True))
    np.testing.assert_allclose(got, [[numpy_dtw(x, y) for y in scaled] for x in scaled], rtol=1e-4, atol=1e-5)


def numpy_gcfl_plus_step(dw, cluster, seqs, allow, eps1, eps2):
    """The authors' GCFL+ server loop (training.py run_gcflplus) with a brute-force minimum cut:
    clusters in label order, DTW similarity max(D) - D within the cluster, and after a split the
    sequences are emptied, so no later cluster of the round may split."""
    labels = cluster.copy()
    norms = np.linalg.norm(dw, axis=1)
    ready = allow
    for k in range(len(cluster)):
        members = np.flatnonzero(cluster == k)
        if not ready or len(members) <= 2:
            continue
        if np.linalg.norm(dw[members].mean(0)) < eps1 and norms[members].max() > eps2:
            d = np.array([[numpy_dtw(seqs[i], seqs[j]) for j in members] for i in members])
            sim = d.max() - d
            best, shore = np.inf, None
            for r in range(1, len(members)):
                for side in itertools.combinations(range(len(members)), r):
                    other = [v for v in range(len(members)) if v not in side]
                    cw = sim[np.ix_(list(side), other)].sum()
                    if cw < best - 1e-9:
                        best, shore = cw, {members[v] for v in side}
            moved = [v for v in members if (v in shore) != (members[0] in shore)]
            labels[moved] = np.setdiff1d(np.arange(len(cluster)), labels)[0]
            ready = False                                    # seqs_grads emptied
    return labels


def planted_sequences(seed, c=7, length=5):
    """Two groups of gradient-norm trends (rising vs falling) plus noise, interleaved."""
    rng = np.random.default_rng(seed)
    t = np.linspace(0, 1, length)
    group = np.arange(c) % 2
    seqs = np.where(group[:, None] == 0, 1.0 + t, 2.0 - t) + 0.05 * rng.normal(size=(c, length))
    return seqs.astype(np.float32), group


# one compile for every case: the thresholds and `allow` are traced arguments
_split = jax.jit(split_clusters, static_argnames=("once",))


@pytest.mark.parametrize("case", ["split", "two_eligible", "not_ready", "eps1"])
def test_sequence_split_matches_numpy(case):
    seqs, group = planted_sequences(0)
    c = len(seqs)
    rng = np.random.default_rng(1)
    dw = (0.3 * rng.normal(size=(c, 4))).astype(np.float32)     # small mean, large members: eligible
    cluster = np.zeros(c, np.int32)
    allow, eps1, eps2 = True, 1.0, 0.1
    if case == "two_eligible":                                   # both clusters qualify; only label 0 splits
        cluster = np.array([0, 0, 0, 1, 1, 1, 0], np.int32)
    if case == "not_ready":
        allow = False
    if case == "eps1":
        eps1 = 1e-4
    dist = jnp.asarray([[numpy_dtw(x, y) for y in seqs] for x in seqs], jnp.float32)   # dtw_matrix: tested above
    got = np.asarray(_split(jnp.asarray(dw), jnp.asarray(cluster), jnp.ones(c, bool), jnp.asarray(allow),
                            jnp.float32(eps1), jnp.float32(eps2), dist=dist, once=True))
    want = numpy_gcfl_plus_step(dw, cluster, seqs, allow, eps1, eps2)
    np.testing.assert_array_equal(got, want)
    if case == "split":                                          # the planted trends were separated
        assert len(set(want[group == 0])) == 1 and len(set(want[group == 1])) == 1 and want[0] != want[1]
    if case == "two_eligible":
        assert len(set(want[cluster == 1])) == 1 and len(set(want[cluster == 0])) == 2
    if case in ("not_ready", "eps1"):
        np.testing.assert_array_equal(want, cluster)


def test_recorded_gradient_norm_is_the_last_steps():
    params = {"params": {"conv_0_0": {"kernel": jnp.array([1.0, -2.0])}, "head_0": {"kernel": jnp.array([3.0])}}}
    opt = record_grad_norm(optax.sgd(0.1), "conv")
    grad = lambda p: jax.tree.map(lambda x: 2.0 * x + 1.0, p)     # gradient of sum(x^2 + x)
    state = opt.init(params)
    p = params
    for _ in range(2):
        last = p
        upd, state = opt.update(grad(p), state, p)
        p = optax.apply_updates(p, upd)
    # after one sgd step x - 0.1 (2x + 1): conv [0.7, -1.7], head [2.3]; the second step's gradient 2x + 1
    np.testing.assert_allclose(np.asarray(last["params"]["conv_0_0"]["kernel"]), [0.7, -1.7], rtol=1e-6)
    assert float(state.norm) == pytest.approx(float(np.hypot(2.4, -2.4)), rel=1e-6)      # conv leaves only
    assert float(param_norm(grad(last), "all")) == pytest.approx(float(np.linalg.norm([2.4, -2.4, 5.6])), rel=1e-6)


def test_record_splits_builds_the_tree():
    born, parent = jnp.array([0, -1, -1, -1]), jnp.array([-1, -1, -1, -1])
    step = jax.jit(record_splits)
    born, parent = step(born, parent, jnp.array([0, 0, 0, 0]), jnp.array([0, 1, 0, 1]), 3)
    born, parent = step(born, parent, jnp.array([0, 1, 0, 1]), jnp.array([0, 1, 2, 1]), 5)
    np.testing.assert_array_equal(np.asarray(born), [0, 3, 5, -1])
    np.testing.assert_array_equal(np.asarray(parent), [-1, 0, 0, -1])


def test_gcfl_family_shares_its_options():
    """gcfl_eps1 & co. belong to gcfl, gcfl_plus and gcfl_plus_dws; the window options to the last two."""
    from fgl_jax import schema
    from fgl_jax.systems.baseline.config import RunConfig
    make = lambda **kw: schema.make(RunConfig, dict(task="graph_cls", dataset="unused", **kw))
    hp = make(algorithm="gcfl_plus_dws", gcfl_eps1=0.5, gcfl_seq_length=3).hparams()
    assert (hp.gcfl_eps1, hp.gcfl_seq_length) == (0.5, 3)
    assert make(algorithm="gcfl", gcfl_eps1=0.5).hparams().gcfl_eps1 == 0.5
    with pytest.raises(ValueError, match="gcfl_seq_length=3 is an option of algorithm 'gcfl_plus'"):
        make(algorithm="gcfl", gcfl_seq_length=3)
    with pytest.raises(ValueError, match="gcfl_eps1=0.5 is an option of algorithm 'gcfl'"):
        make(algorithm="fedavg", gcfl_eps1=0.5)
