"""GCFL: the Stoer-Wagner bi-partition vs a brute-force minimum cut, the cluster step vs a NumPy
re-derivation of GCFL's criterion, and clusters forming in a graph-level run."""
import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from fgl_jax.algorithms.gcfl import min_cut_side, split_clusters


def brute_min_cut(w: np.ndarray, nodes: list[int]) -> float:
    best = np.inf
    for r in range(1, len(nodes)):
        for side in itertools.combinations(nodes, r):
            other = [v for v in nodes if v not in side]
            best = min(best, w[np.ix_(list(side), other)].sum())
    return best


def cut_weight(w: np.ndarray, side: np.ndarray, active: np.ndarray) -> float:
    return w[np.ix_(side & active, ~side & active)].sum()


@pytest.mark.parametrize("seed", range(4))
def test_min_cut_side_is_a_minimum_cut(seed):
    rng = np.random.default_rng(seed)
    n = 7
    w = rng.uniform(0, 2, (n, n))
    w = (w + w.T) / 2
    active = np.ones(n, bool)
    if seed % 2:
        active[[1, 4]] = False
    side, value = jax.jit(min_cut_side)(jnp.asarray(w, jnp.float32), jnp.asarray(active))
    side = np.asarray(side)
    nodes = list(np.flatnonzero(active))
    ref = brute_min_cut(w, nodes)
    assert side[active].any() and not side[active].all() and not side[~active].any()
    assert cut_weight(w, side, active) == pytest.approx(ref, rel=1e-5)
    assert float(value) == pytest.approx(ref, rel=1e-5)


def numpy_split(dw, cluster, trained, allow, eps1, eps2):
    """GCFL's server step (server.py / training.py) in NumPy with a brute-force min cut."""
    labels = cluster.copy()
    norms = np.linalg.norm(dw, axis=1)
    unit = dw / np.maximum(norms, 1e-12)[:, None]
    sim = unit @ unit.T + 1.0
    for k in range(len(cluster)):
        members = np.flatnonzero((cluster == k) & trained)
        if len(members) <= 2 or not allow:
            continue
        if np.linalg.norm(dw[members].mean(0)) < eps1 and norms[members].max() > eps2:
            best, shore = np.inf, None
            for r in range(1, len(members)):
                for side in itertools.combinations(members, r):
                    other = [v for v in members if v not in side]
                    cw = sim[np.ix_(list(side), other)].sum()
                    if cw < best - 1e-9:
                        best, shore = cw, set(side)
            moved = [v for v in members if (v in shore) != (members[0] in shore)]
            labels[moved] = np.setdiff1d(np.arange(len(cluster)), labels)[0]
    return labels


def planted_updates(seed, c=7, p=5):
    rng = np.random.default_rng(seed)
    v = rng.normal(size=p)
    sign = np.where(rng.permutation(c) < c // 2, 1.0, -1.0)
    return (sign[:, None] * v[None, :] + 0.05 * rng.normal(size=(c, p))).astype(np.float32)


@pytest.mark.parametrize("case", ["split", "no_split_eps1", "two_clusters", "untrained", "warmup"])
def test_cluster_step_matches_numpy(case):
    dw = planted_updates(3)
    c = dw.shape[0]
    cluster = np.zeros(c, np.int32)
    trained = np.ones(c, bool)
    eps1, eps2, allow = 1.0, 0.1, True
    if case == "no_split_eps1":
        eps1 = 1e-4
    if case == "two_clusters":
        cluster = np.array([0, 1, 0, 1, 0, 1, 0], np.int32)
        dw[cluster == 1] += 3.0            # cluster 1's mean update is large: only cluster 0 may split
    if case == "untrained":
        trained[[2, 5]] = False
    if case == "warmup":
        allow = False
    got = split_clusters(jnp.asarray(dw), jnp.asarray(cluster), jnp.asarray(trained), jnp.asarray(allow), eps1, eps2)
    want = numpy_split(dw, cluster, trained, allow, eps1, eps2)
    np.testing.assert_array_equal(np.asarray(got), want)
    if case == "split":
        assert len(set(want.tolist())) == 2          # the planted two groups were separated
        signs = np.sign(dw @ dw[0])
        assert len(set(want[signs > 0].tolist())) == 1 and len(set(want[signs < 0].tolist())) == 1
    if case in ("no_split_eps1", "warmup"):
        np.testing.assert_array_equal(want, cluster)


@pytest.mark.slow
def test_gcfl_graph_run_forms_clusters():
    from fgl_jax import run, schema
    from fgl_jax.systems.baseline.config import RunConfig
    from fgl_jax.systems.baseline.program import build
    from tests.test_graph_batch import toy_set
    gs = toy_set(num_graphs=60, seed=4)
    cfg = schema.make(RunConfig, dict(task="graph_cls", dataset="unused", algorithm="gcfl", clients=4, rounds=4,
                                      hidden=8, graph_batch_size=8, gcfl_eps1=100.0, gcfl_eps2=0.0, gcfl_warmup=1))
    prog = build(cfg, graph=gs)
    res = run(prog.algorithm, prog.data, jax.random.key(0), cfg.rounds, progress=False)
    clusters = np.asarray(res.history["num_clusters"])
    assert clusters[0] == 1 and clusters[-1] >= 2       # no split in the warm-up round, splits after it
    assert np.isfinite(res.history["test_acc"]).all()


@pytest.mark.slow   # compiles a whole GCFL round (training, cluster step, evaluation)
def test_shared_conv_averages_only_the_convolutions():
    """gcfl_shared=conv (the authors' GCFL: the server holds the graph convolutions only): after one
    round without a split, every client's conv_* parameters are the training-graph weighted mean of
    the clients' trained ones (NumPy), every other parameter is the client's own trained value."""
    from fgl_jax import schema
    from fgl_jax.federated.client import local_train, make_optimizer, node_loss_fn
    from fgl_jax.federated.config import OptimConfig
    from fgl_jax.systems.baseline.config import RunConfig
    from fgl_jax.systems.baseline.program import build, model_from_config
    from tests.test_graph_batch import toy_set
    gs = toy_set(num_graphs=48, seed=5)
    cfg = schema.make(RunConfig, dict(task="graph_cls", dataset="unused", algorithm="gcfl", clients=3, rounds=1,
                                      hidden=8, graph_batch_size=4, local_steps=1, lr=0.05, weight_decay=5e-4,
                                      gcfl_shared="conv", gcfl_eps1=0.0, gcfl_warmup=0))
    prog = build(cfg, graph=gs)
    data = prog.data
    state0 = jax.jit(prog.algorithm.init)(jax.random.key(0), data)   # jitted: eager init dispatches op by op
    key = jax.random.key(1)
    state1, _ = jax.jit(prog.algorithm.round)(state0, data, key)
    # the reference: each client's local run from the round's start, then the sharing in NumPy
    model, _ = model_from_config(cfg, gs)
    opt = make_optimizer(OptimConfig(lr=cfg.lr, weight_decay=cfg.weight_decay), lr=1.0)
    ct = data.train.num_clients
    new = jax.vmap(lambda p, o, b, k: local_train(node_loss_fn(model), opt, 1, p, o, b, k, jnp.float32(cfg.lr))[0])(
        jax.tree.map(lambda a: a[data.train_index], state0.models), state0.opt, data.train, jax.random.split(key, ct))
    w = np.asarray(data.train_weight, np.float64)
    got_paths = jax.tree_util.tree_flatten_with_path(state1.models)[0]
    conv_seen = other_seen = 0
    for (path, got), want in zip(got_paths, jax.tree.leaves(new)):
        got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
        if any(str(getattr(k, "key", "")).startswith("conv") for k in path):
            mean = np.tensordot(w / w.sum(), want, axes=1)
            np.testing.assert_allclose(got, np.broadcast_to(mean, got.shape), rtol=1e-5, atol=1e-6)
            conv_seen += 1
        else:
            np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
            assert np.abs(want[0] - want[1]).max() > 1e-6     # the clients' own values really differ
            other_seen += 1
    assert conv_seen and other_seen
