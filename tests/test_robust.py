"""Robust aggregators and model-poisoning attacks (fgl_jax.aggregators.robust / attacks, fgl_jax.federated
.adversary): each reduction against a NumPy re-derivation in float64 (with a mask and zero weights),
Krum / multi-Krum / Bulyan selections against a brute-force search over subsets, the attacks' uploads
written out, and runs built as `fgl-jax run` builds them."""
from __future__ import annotations

import itertools
import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from fgl_jax import aggregators as A
from fgl_jax.aggregators import knobs as K
from fgl_jax.aggregators.attacks import flip_labels
from fgl_jax.systems.baseline import RunConfig
from fgl_jax.systems.baseline.program import build
from tests.helpers import toy_graph

TOL = dict(rtol=1e-5, atol=1e-6)


def _uploads(c=7, seed=0):
    rng = np.random.default_rng(seed)
    return {"w": rng.normal(size=(c, 4, 3)).astype(np.float32), "b": rng.normal(size=(c, 3)).astype(np.float32)}


def _flat(tree):
    """[C, D] float64: every client's upload as one vector (leaves in tree order)."""
    return np.concatenate([np.asarray(x, np.float64).reshape(x.shape[0], -1) for x in jax.tree.leaves(tree)], 1)


def _vec(tree):
    """One aggregate (no client axis) as a float64 vector."""
    return np.concatenate([np.asarray(x, np.float64).ravel() for x in jax.tree.leaves(tree)])


def _unflat(vec, like):
    out, i = [], 0
    for x in jax.tree.leaves(like):
        size = int(np.prod(x.shape[1:]))
        out.append(vec[i:i + size].reshape(x.shape[1:]))
        i += size
    return jax.tree.unflatten(jax.tree.structure(like), out)


def _run(agg, updates, weights, mask=None, params=None, values=None, key=0):
    state = agg.init(params)
    if values:
        state = K.fill(state, values)
    out, _ = agg.aggregate(state, updates, jnp.asarray(weights, jnp.float32), jax.random.key(key),
                           params=params, mask=None if mask is None else jnp.asarray(mask))
    return out


def _close(got, want_vec, like):
    for a, b in zip(jax.tree.leaves(got), jax.tree.leaves(_unflat(want_vec, like))):
        np.testing.assert_allclose(np.asarray(a, np.float64), b, **TOL)


# the clients that count: in the mask and of positive weight (client 5 has weight 0)
WEIGHTS = np.array([3.0, 1.0, 2.0, 5.0, 1.0, 0.0, 4.0])
MASK = np.array([True, True, False, True, True, True, True])
CASES = [(None, np.ones(7)), (None, WEIGHTS), (MASK, WEIGHTS)]


def _valid(mask, weights):
    return (weights > 0) & (np.ones(len(weights), bool) if mask is None else mask)


# -------------------------------------------------------------------------- coordinate-wise reductions

@pytest.mark.parametrize("mask,weights", CASES)
def test_median_is_numpys_median_over_the_clients_that_count(mask, weights):
    u = _uploads()
    x = _flat(u)[_valid(mask, weights)]
    _close(_run(A.median(), u, weights, mask), np.median(x, axis=0), u)


def _np_trimmed(x, w, beta):
    """Per coordinate: sort, drop floor(beta n) on each side, weighted mean of the rest (a loop)."""
    n = x.shape[0]
    k = int(np.floor(beta * n))
    out = np.empty(x.shape[1])
    for j in range(x.shape[1]):
        order = np.argsort(x[:, j], kind="stable")[k:n - k]
        out[j] = (x[order, j] * w[order]).sum() / w[order].sum()
    return out


@pytest.mark.parametrize("beta", [0.0, 0.15, 0.3, 0.49])
@pytest.mark.parametrize("mask,weights", CASES)
def test_trimmed_mean_matches_numpy_and_beta_is_a_traced_knob(mask, weights, beta):
    u = _uploads()
    valid = _valid(mask, weights)
    want = _np_trimmed(_flat(u)[valid], weights[valid], beta)
    agg = A.trimmed_mean(0.1)  # built with another beta: the knob sets it
    f = jax.jit(lambda b: _run(agg, u, weights, mask, values={"aggregator_trim": b}))
    _close(f(jnp.float32(beta)), want, u)


def test_trimmed_mean_with_beta_0_is_fedavgs_weighted_mean():
    u = _uploads()
    _close(_run(A.trimmed_mean(0.0), u, WEIGHTS), (_flat(u) * WEIGHTS[:, None]).sum(0) / WEIGHTS.sum(), u)


def test_past_rank_by_comparison_the_sort_path_gives_the_same_median_and_trimmed_mean():
    # C = 20 > RANK_BY_COMPARISON: order statistics from a sort instead of the C x C comparisons
    assert 20 > A.robust.RANK_BY_COMPARISON
    rng = np.random.default_rng(8)
    u = _uploads(c=20, seed=8)
    weights = rng.uniform(0.5, 3.0, 20)
    weights[3] = 0.0
    mask = rng.random(20) < 0.8
    valid = (weights > 0) & mask
    x = _flat(u)[valid]
    _close(_run(A.median(), u, weights, mask), np.median(x, axis=0), u)
    want = _np_trimmed(x, weights[valid], 0.2)
    _close(_run(A.trimmed_mean(0.2), u, weights, mask), want, u)


# ------------------------------------------------------------------------------- Krum, Bulyan: brute force

def _brute_krum_score(x, i, others, f):
    """min over all subsets of n - f - 2 of the other clients of the summed squared distances."""
    size = max(len(others) + 1 - f - 2, 1)
    d = {j: ((x[i] - x[j]) ** 2).sum() for j in others}
    return min(sum(d[j] for j in s) for s in itertools.combinations(others, size))


def _brute_scores(x, ids, f):
    return {i: _brute_krum_score(x, i, [j for j in ids if j != i], f) for i in ids}


@pytest.mark.parametrize("mask,weights", CASES)
@pytest.mark.parametrize("f,m", [(1, 1), (2, 1), (1, 3), (1, 0)])
def test_krum_and_multi_krum_select_what_a_brute_force_search_selects(mask, weights, f, m):
    u = _uploads(seed=3)
    x = _flat(u)
    ids = list(np.flatnonzero(_valid(mask, weights)))
    scores = _brute_scores(x, ids, f)
    take = min(m, len(ids)) if m else len(ids) - f
    chosen = sorted(ids, key=lambda i: (scores[i], i))[:take]
    w = weights[chosen]
    want = (x[chosen] * w[:, None]).sum(0) / w.sum()
    agg = A.krum(f) if m == 1 else A.multi_krum(f, m)
    _close(_run(agg, u, weights, mask), want, u)


@pytest.mark.parametrize("mask,weights,f", [(None, np.ones(7), 1), (np.array([True] * 6 + [False]), np.ones(7), 1),
                                            (np.array([True] * 17 + [False] * 3), np.ones(20), 3)])
def test_bulyan_matches_iterated_brute_force_krum_then_the_closest_to_the_median(mask, weights, f):
    # 20 clients: past RANK_BY_COMPARISON, the closest values come from a sort
    u = _uploads(c=len(weights), seed=5)
    x = _flat(u)
    left = list(np.flatnonzero(_valid(mask, weights)))
    theta = len(left) - 2 * f
    picked = []
    for _ in range(theta):
        scores = _brute_scores(x, left, f)
        best = min(left, key=lambda i: (scores[i], i))
        picked.append(best)
        left.remove(best)
    sel = x[sorted(picked)]
    beta = theta - 2 * f
    med = np.median(sel, axis=0)
    want = np.array([sel[np.argsort(np.abs(sel[:, j] - med[j]), kind="stable")[:beta], j].mean()
                     for j in range(x.shape[1])])
    _close(_run(A.bulyan(f), u, weights, mask), want, u)


def test_krum_and_bulyan_refuse_too_few_clients_in_one_line():
    u = _uploads(c=4)
    with pytest.raises(ValueError, match=r"krum: needs at least 5 clients per round for f=1"):
        _run(A.krum(1), u, np.ones(4))
    with pytest.raises(ValueError, match=r"bulyan: needs at least 7 clients per round for f=1"):
        _run(A.bulyan(1), u, np.ones(4))


# --------------------------------------------------------------------- geometric median, norm bound

@pytest.mark.parametrize("mask,weights", CASES)
def test_geometric_median_is_weiszfeld_written_out(mask, weights):
    u = _uploads()
    valid = _valid(mask, weights)
    x, w = _flat(u)[valid], weights[valid]
    z = (x * w[:, None]).sum(0) / w.sum()
    for _ in range(6):
        a = w / np.maximum(np.linalg.norm(x - z, axis=1), 1e-3)
        z = (x * a[:, None]).sum(0) / a.sum()
    _close(_run(A.geometric_median(6, 1e-3), u, weights, mask), z, u)


def test_geometric_median_resists_one_far_upload_where_the_mean_does_not():
    u = jax.tree.map(lambda a: a * 0.01, _uploads())
    u = jax.tree.map(lambda a: jnp.asarray(a).at[0].set(100.0), u)
    gm = _vec(_run(A.geometric_median(20, 1e-6), u, np.ones(7)))
    assert np.abs(gm).max() < 1.0 < np.abs(_vec(_run(A.mean(), u, np.ones(7)))).max()


def test_norm_bound_clips_each_update_from_params_with_a_traced_norm_and_adds_weak_noise():
    u = _uploads()
    params = jax.tree.map(lambda a: a[0] * 0.5, u)
    delta = _flat(u) - _flat(jax.tree.map(lambda p: p[None], params))
    clip = 1.5
    norms = np.linalg.norm(delta, axis=1)
    assert (norms > clip).any()
    want = _flat(jax.tree.map(lambda p: p[None], params)) + delta * np.minimum(1, clip / norms)[:, None]
    got = _run(A.norm_bound(9.0), u, np.ones(7), params=params, values={"aggregator_clip": jnp.float32(clip)})
    np.testing.assert_allclose(_flat(got), want, **TOL)
    # the --aggregator norm_bound chain: weighted mean of the clipped models + N(0, (z clip / m)^2)
    agg = A.robust.by_name("norm_bound", clip=clip, noise=0.0)
    mean = (want * WEIGHTS[:, None]).sum(0) / WEIGHTS.sum()
    _close(_run(agg, u, WEIGHTS, params=params), mean, u)
    noisy = _flat(jax.tree.map(lambda a: a[None], _run(agg, u, WEIGHTS, params=params,
                                                        values={"aggregator_noise": jnp.float32(2.0)})))[0]
    m = 6  # client 5 has weight 0
    assert 0.5 < np.std(noisy - mean) / (2.0 * clip / m) < 1.6  # 15 coordinates: a loose check of the scale


# ------------------------------------------------------------------------------------------- attacks

def test_attacker_mask_draws_round_fraction_c_clients_nested_as_the_fraction_grows():
    sets = [np.asarray(A.attacker_mask(3, 10, f)) for f in (0.0, 0.1, 0.2, 0.3, 1.0)]
    assert [int(s.sum()) for s in sets] == [0, 1, 2, 3, 10]
    for a, b in zip(sets, sets[1:]):
        assert not (a & ~b).any()
    assert not np.array_equal(np.asarray(A.attacker_mask(4, 10, 0.3)), sets[3])  # the seed draws the set


@pytest.mark.parametrize("kind", ["sign_flip", "scale", "gaussian"])
def test_attacks_replace_only_the_attackers_uploads(kind):
    u = _uploads()
    params = jax.tree.map(lambda a: a[1], u)
    bad = np.array([True, False, False, True, False, False, False])
    got = _flat(_run(A.attack(kind, boost=4.0, std=0.1), u, np.ones(7), params=params,
                     values={"attacker_mask": jnp.asarray(bad)}))
    x, p = _flat(u), _flat(jax.tree.map(lambda a: a[None], params))
    np.testing.assert_allclose(got[~bad], x[~bad], **TOL)
    if kind == "sign_flip":
        np.testing.assert_allclose(got[bad], p - (x[bad] - p), **TOL)
    elif kind == "scale":
        np.testing.assert_allclose(got[bad], p + 4.0 * (x[bad] - p), **TOL)
    else:
        assert 0.07 < np.std(got[bad] - p) < 0.13
    # no mask in the state (nobody attacks): the uploads unchanged
    np.testing.assert_array_equal(_flat(_run(A.attack(kind), u, np.ones(7), params=params)), x)


def test_sign_flip_by_every_client_negates_the_mean_update():
    u = _uploads()
    params = jax.tree.map(lambda a: a.mean(0) + 0.3, u)
    agg = A.chain(A.attack("sign_flip"), A.mean())
    honest = _flat(jax.tree.map(lambda a: a[None], _run(agg, u, WEIGHTS, params=params)))
    evil = _flat(jax.tree.map(lambda a: a[None], _run(agg, u, WEIGHTS, params=params,
                                                       values={"attacker_mask": jnp.ones(7, bool)})))
    p = _flat(jax.tree.map(lambda a: a[None], params))
    np.testing.assert_allclose(evil - p, -(honest - p), **TOL)


def test_flip_labels_shifts_only_the_attackers_rows():
    y = np.array([[0, 1, 2], [2, 2, 0]], np.int32)
    got = np.asarray(flip_labels(jnp.asarray(y), jnp.asarray([False, True]), 3))
    np.testing.assert_array_equal(got, [[0, 1, 2], [0, 0, 1]])


# ------------------------------------------------------------------------------------------ runs

def _graph():
    return toy_graph(n=60, num_features=8, sparse=True, seed=1)


def _cfg(**opts):
    return RunConfig(**{**dict(dataset="toy", clients=6, rounds=2, hidden=8, split="keep"), **opts})


def _history(cfg, rounds=2):
    from fgl_jax.federated.run import run
    prog = build(cfg, _graph())
    return run(prog.algorithm, prog.data, jax.random.key(0), rounds).history, prog


@pytest.mark.slow
def test_sign_flip_by_every_client_negates_fedavgs_server_step_in_a_round():
    # one compiled round: the attacker fraction is a traced value in state.hp
    prog = build(_cfg(rounds=1, attack="sign_flip"), _graph())
    state = jax.jit(prog.algorithm.init)(jax.random.key(0), prog.data)
    round_ = jax.jit(prog.algorithm.round)

    def server_step(fraction):
        new, _ = round_(state.replace(hp={**state.hp, "attackers": jnp.float32(fraction)}), prog.data,
                        jax.random.key(1))
        return [np.asarray(a, np.float64) - np.asarray(b, np.float64)
                for a, b in zip(jax.tree.leaves(new.server), jax.tree.leaves(state.server))]
    for h, e in zip(server_step(0.0), server_step(1.0)):
        np.testing.assert_allclose(e, -h, rtol=1e-4, atol=1e-6)
    assert round_._cache_size() == 1


def test_traced_options_are_in_state_hp_and_the_attacker_set_is_in_the_summary():
    prog = build(_cfg(aggregator="trimmed_mean", attack="label_flip", attackers=0.5, attack_seed=2), _graph())
    state = jax.eval_shape(prog.algorithm.init, jax.random.key(0), prog.data)
    assert {"attackers", "aggregator_trim"} <= set(state.hp)
    want = [int(i) for i in np.flatnonzero(np.asarray(A.attacker_mask(2, 6, 0.5)))]
    assert prog.describe["attack"] == {"kind": "label_flip", "fraction": 0.5, "seed": 2, "attackers": want}
    assert build(_cfg(attack="sign_flip"), _graph()).describe["attack"]["attackers"] == []
    prog = build(_cfg(aggregator="norm_bound"), _graph())
    state = jax.eval_shape(prog.algorithm.init, jax.random.key(0), prog.data)
    assert {"aggregator_clip", "aggregator_noise"} <= set(state.hp) and "attackers" not in state.hp


@pytest.mark.parametrize("opts,message", [
    (dict(attackers=0.2), r"attackers=0.2 needs an attack"),
    (dict(aggregator_trim=0.2), r"aggregator_trim=0.2 is an option of aggregator trimmed_mean, not of 'mean'"),
    (dict(attack="sign_flip", attack_boost=3.0), r"attack_boost=3.0 is an option of attack scale"),
    (dict(aggregator="median", dp_clip=1.0), r"dp_clip \(DP-FedAvg\) needs aggregator mean"),
    (dict(aggregator="krum", algorithm="local"), r"algorithm 'local' sends nothing"),
])
def test_bad_robustness_options_are_refused_in_one_line(opts, message):
    with pytest.raises(ValueError, match=message):
        RunConfig(**opts)


def test_an_algorithm_without_a_server_aggregate_refuses_an_aggregator():
    with pytest.raises(ValueError, match=r"aggregator: algorithm 'fedgta' has no server aggregate"):
        build(_cfg(algorithm="fedgta", aggregator="median", rounds=1), _graph())


@pytest.mark.slow
def test_cli_runs_krum_with_20_percent_sign_flippers_on_csbm(tmp_path):
    from fgl_jax.cli import main
    out = tmp_path / "run"
    assert main(["run", "--dataset", "csbm", "--clients", "10", "--rounds", "2", "--hidden", "8",
                 "--aggregator", "krum", "--aggregator-f", "2", "--attack", "sign_flip", "--attackers", "0.2",
                 "--no-progress", "--out", str(out)]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["describe"]["attack"]["attackers"] == \
        [int(i) for i in np.flatnonzero(np.asarray(A.attacker_mask(0, 10, 0.2)))]
    rows = [json.loads(l) for l in (out / "metrics.jsonl").read_text().splitlines()]
    assert len(rows) == 2 and all(np.isfinite(r["train_loss"]) for r in rows)


@pytest.mark.slow
def test_a_sweep_over_attackers_and_trim_is_one_program_whose_zero_member_is_the_plain_fedavg_run():
    from fgl_jax.federated.sweep import run_grid
    opts = dict(dataset="toy", clients=6, rounds=2, hidden=8, split="keep", aggregator="trimmed_mean",
                attack="sign_flip")
    res = run_grid(lambda o: build(RunConfig(**o), _graph()), opts, [0],
                   {"attackers": [0.0, 0.5], "aggregator_trim": [0.0, 0.2]}, log=lambda *a: None)
    assert res.programs == 1 and res.vector_axes == ["attackers", "aggregator_trim"]
    # member (attackers 0, trim 0) is the plain FedAvg run, to float tolerance: the trimmed mean sums
    # the sorted values, FedAvg's tensordot sums in client order
    plain, _ = _history(_cfg())
    row = [i for i, r in enumerate(res.rows) if r["attackers"] == 0.0 and r["aggregator_trim"] == 0.0][0]
    for k in ("train_loss", "val_loss", "val_acc", "test_acc"):
        np.testing.assert_allclose(res.history[k][row], np.asarray(plain[k]), rtol=1e-4, atol=1e-5)
    # and 50% sign-flippers change the run
    bad = [i for i, r in enumerate(res.rows) if r["attackers"] == 0.5 and r["aggregator_trim"] == 0.0][0]
    assert not np.allclose(res.history["train_loss"][bad], res.history["train_loss"][row])
