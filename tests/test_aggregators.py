"""fgl_jax.aggregators: each stage against a NumPy re-derivation, `chain`'s order rules, and one round
of SCAFFOLD, MOON and FedPub with DP-FedAvg and with FedAdam as the server step, built as `fgl-jax
run` builds them, against the server step written out in NumPy from the round's client uploads."""
from __future__ import annotations

import importlib
import json

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from fgl_jax import aggregators as A
from fgl_jax.federated.config import AGGREGATE_KEY, FedConfig, server_aggregator
from fgl_jax.systems.baseline import RunConfig, algorithm_from_config, prepare
from fgl_jax.systems.baseline.program import build, per_round_columns
from tests.helpers import toy_graph


def _uploads(c=4, seed=0):
    rng = np.random.default_rng(seed)
    return {"w": rng.normal(size=(c, 5, 3)).astype(np.float32), "b": rng.normal(size=(c, 3)).astype(np.float32)}


def _f64(tree):
    return jax.tree.map(lambda a: np.asarray(a, np.float64), tree)


def _np_clip(delta, clip):
    """Per-client updates scaled to L2 norm <= clip (norm over every leaf), and the factors."""
    leaves = jax.tree.leaves(delta)
    norms = np.sqrt(sum((x.reshape(x.shape[0], -1) ** 2).sum(1) for x in leaves))
    f = np.minimum(1.0, clip / norms)
    return jax.tree.map(lambda x: x * f.reshape((-1,) + (1,) * (x.ndim - 1)), delta), f


# ------------------------------------------------------------------------------------------ stages

def test_weighted_and_uniform_mean_match_numpy_and_the_mask_drops_clients():
    up, w = _uploads(), np.array([1.0, 3.0, 0.0, 2.0], np.float32)
    for weighting, ww in (("weights", w), ("uniform", np.ones(4))):
        agg = A.mean(weighting)
        got, _ = agg.aggregate(agg.init(None), up, jnp.asarray(w), jax.random.key(0))
        for k in up:
            np.testing.assert_allclose(got[k], np.tensordot(ww / ww.sum(), _f64(up)[k], axes=1), rtol=1e-6, atol=1e-6)
    mask = np.array([True, False, True, True])
    got, _ = A.mean().aggregate((), up, jnp.asarray(w), jax.random.key(0), mask=jnp.asarray(mask))
    wm = w * mask
    np.testing.assert_allclose(got["w"], np.tensordot(wm / wm.sum(), _f64(up)["w"], axes=1), rtol=1e-6, atol=1e-6)


def test_clip_scales_each_clients_update_from_params_to_the_norm():
    up = _uploads()
    params = {"w": np.full((5, 3), 0.5, np.float32), "b": np.zeros(3, np.float32)}
    got, _ = A.clip(1.5).aggregate((), up, jnp.ones(4), jax.random.key(0), params=params)
    delta = jax.tree.map(lambda u, p: u - p, _f64(up), _f64(params))
    want, f = _np_clip(delta, 1.5)
    assert (f < 1).all()      # every update of this draw is longer than 1.5: the clip acts
    for k in up:
        np.testing.assert_allclose(np.asarray(got[k], np.float64) - params[k], want[k], rtol=1e-5, atol=1e-6)


@pytest.mark.slow
def test_dp_fedavg_is_the_clipped_uniform_mean_plus_noise_of_std_z_clip_over_m():
    """The clipped mean exactly (noise off), the noise by reproducing the stage's key, and its std
    statistically on a large leaf."""
    up = _uploads(c=3)
    dp = A.dp_fedavg(2.0, 0.0)
    clean, _ = dp.aggregate(dp.init(None), up, jnp.ones(3), jax.random.key(1))
    want, _ = _np_clip(_f64(up), 2.0)
    for k in up:
        np.testing.assert_allclose(clean[k], want[k].mean(0), rtol=1e-5, atol=1e-6)
    key = jax.random.key(7)
    dp = A.dp_fedavg(2.0, 0.5)
    noisy, _ = dp.aggregate(dp.init(None), up, jnp.ones(3), key)
    leaves, treedef = jax.tree.flatten(clean)
    ks = jax.random.split(jax.random.fold_in(key, 2), len(leaves))   # the noise is the chain's third stage
    std = 0.5 * 2.0 / 3
    expect = jax.tree.unflatten(treedef, [np.asarray(x) + std * np.asarray(jax.random.normal(k, x.shape))
                                          for x, k in zip(leaves, ks)])
    for k in up:
        np.testing.assert_allclose(noisy[k], expect[k], rtol=1e-5, atol=1e-6)
    # std: 200,000 coordinates of noise on a zero mean, m = 4
    big = {"x": jnp.zeros((4, 200_000))}
    dp = A.dp_fedavg(1.0, 0.8)
    out, _ = dp.aggregate(dp.init(None), big, jnp.ones(4), jax.random.key(3))
    assert abs(float(np.std(out["x"])) / (0.8 * 1.0 / 4) - 1) < 0.01
    assert abs(float(np.mean(out["x"]))) < 0.01 * 0.2


def test_server_adam_stage_is_adam_on_the_pseudo_gradient_written_out():
    lr, b1, b2, eps = 0.1, 0.9, 0.99, 1e-3
    agg = A.chain(A.mean(), A.server_optimizer(optax.adam(lr, b1=b1, b2=b2, eps=eps)))
    params = {"w": np.zeros((5, 3), np.float32), "b": np.ones(3, np.float32)}
    state = agg.init(params)
    m = v = None
    p = _f64(params)
    for t in range(1, 4):
        up, w = _uploads(seed=t), np.array([1.0, 2.0, 3.0, 4.0], np.float32)
        g = jax.tree.map(lambda s, u: s - np.tensordot(w / w.sum(), u, axes=1), p, _f64(up))
        m = jax.tree.map(lambda gg: (1 - b1) * gg, g) if m is None else jax.tree.map(lambda a, gg: b1 * a + (1 - b1) * gg, m, g)
        v = jax.tree.map(lambda gg: (1 - b2) * gg ** 2, g) if v is None else jax.tree.map(lambda a, gg: b2 * a + (1 - b2) * gg ** 2, v, g)
        p = jax.tree.map(lambda s, a, b: s - lr * (a / (1 - b1 ** t)) / (np.sqrt(b / (1 - b2 ** t)) + eps), p, m, v)
        got, state = agg.aggregate(state, up, jnp.asarray(w), jax.random.key(t), params=params)
        for k in p:
            np.testing.assert_allclose(got[k], p[k], rtol=1e-5, atol=1e-6)
        params = jax.device_get(got)


@pytest.mark.parametrize("stages, message", [
    (lambda: (A.mean(), A.clip(1.0)), "per_client stages, one reduce, then server stages; got reduce -> per_client"),
    (lambda: (A.mean(), A.mean()), "got reduce -> reduce"),
    (lambda: (A.server_optimizer(optax.sgd(1.0)), A.mean()), "got server -> reduce"),
])
def test_chain_refuses_stages_out_of_order_in_one_line(stages, message):
    with pytest.raises(ValueError, match=message) as e:
        A.chain(*stages())
    assert "\n" not in str(e.value)


def test_chain_refuses_a_state_not_from_its_init():
    agg = A.chain(A.clip(1.0), A.mean())
    with pytest.raises(ValueError, match="the tuple of its 2 stages' states"):
        agg.aggregate((), _uploads(), jnp.ones(4), jax.random.key(0))


def test_fedconfig_refuses_a_custom_aggregator_that_does_not_reduce_and_one_with_dp():
    with pytest.raises(ValueError, match="kind 'reduce', got 'per_client'"):
        FedConfig(aggregator=A.clip(1.0))
    with pytest.raises(ValueError, match="aggregator and dp_clip both replace the mean"):
        FedConfig(aggregator=A.mean(), dp_clip=1.0)
    with pytest.raises(ValueError, match="applies its own server optimiser"):
        server_aggregator(FedConfig(server_opt=A.FedAdamHParams()), optax.sgd(1.0))


# --------------------------------------------------------- one round of SCAFFOLD, MOON, FedPub

OPTS = {"scaffold": {}, "moon": {}, "fedpub": {"fedpub_reg": "code", "fedpub_proxy_nodes": 10}}


def _recorded(monkeypatch, algorithm: str, **opts):
    """(config, algorithm, state, data, calls): built as `fgl-jax run` builds it on
    a toy graph, with the module's `aggregate` recording (uploads, weights, key, params) of every call."""
    g = toy_graph(n=50, num_features=10, sparse=True, seed=2)
    cfg = RunConfig(dataset="toy", algorithm=algorithm, clients=3, rounds=2, hidden=8, split="keep",
                    **OPTS[algorithm], **opts)
    prep = prepare(cfg, g)
    alg = algorithm_from_config(cfg, prep.graph)
    module = importlib.import_module(f"fgl_jax.algorithms.{algorithm}")
    real, calls = module.aggregate, []

    def recorder(aggregator, state, uploads, weights, key, params=None):
        def save(u, w, kd, p):  # the values, also when the round is jitted
            calls.append((_f64(u), np.asarray(w, np.float64), jax.random.wrap_key_data(kd),
                          None if p is None else _f64(p)))
        jax.debug.callback(save, uploads, weights, jax.random.key_data(key), params)
        return real(aggregator, state, uploads, weights, key, params)

    monkeypatch.setattr(module, "aggregate", recorder)
    return cfg, alg, alg.init(jax.random.key(0), prep.data), prep.data, calls


def _server_after(algorithm, x, step):
    """The new global model from the server's old one x and the aggregator's output: SCAFFOLD's
    uploads are changes (x + eta_g * step, eta_g = 1 here), the others' are models (step itself)."""
    return jax.tree.map(jnp.add, x, step) if algorithm == "scaffold" else step


# FedPub's eager round with DP took 270 s on the loaded 2-core machine (MOON, SCAFFOLD: ~50 s): behind -m slow
@pytest.mark.slow
@pytest.mark.parametrize("algorithm", ["moon", "scaffold", pytest.param("fedpub", marks=pytest.mark.slow)])
def test_one_round_with_dp_fedavg_matches_the_numpy_server_step(monkeypatch, algorithm):
    clip, z = 0.05, 0.5
    cfg, alg, state, data, calls = _recorded(monkeypatch, algorithm, dp_clip=clip, dp_noise=z)
    x = _f64(state.server)
    key = jax.random.key(11)
    state, _ = alg.round(state, data, key)
    (uploads, weights, k, params), = calls
    assert (params is None) == (algorithm == "scaffold")
    delta = uploads if params is None else jax.tree.map(lambda u, p: u - p, uploads, params)
    clipped, f = _np_clip(delta, clip)
    assert (f < 1).any()                                 # the clip acts on this round
    mean = jax.tree.map(lambda d: d.mean(0), clipped)    # uniform, whatever the weights
    # the noise, from the key the round hands its aggregator (server_aggregator's chain, stage 0 =
    # dp_fedavg's chain, whose stage 2 is the noise), one key per leaf
    leaves, treedef = jax.tree.flatten(mean)
    nk = jax.random.fold_in(jax.random.fold_in(jax.random.fold_in(k, AGGREGATE_KEY), 0), 2)
    std = z * clip / weights.shape[0]
    noise = jax.tree.unflatten(treedef, [std * np.asarray(jax.random.normal(kk, a.shape), np.float64)
                                         for a, kk in zip(leaves, jax.random.split(nk, len(leaves)))])
    released = jax.tree.map(lambda a, n: a + n, mean, noise)
    want = jax.tree.map(jnp.add, x, released) if params is None else jax.tree.map(jnp.add, params, released)
    for a, b in zip(jax.tree.leaves(jax.device_get(state.server)), jax.tree.leaves(want)):
        np.testing.assert_allclose(np.asarray(a, np.float64), np.asarray(b), rtol=1e-5, atol=2e-6)
    # the accountant reports epsilon for this algorithm (one Gaussian mechanism per round)
    from fgl_jax.privacy.dp import epsilons
    cols = per_round_columns(cfg, alg, data)
    np.testing.assert_allclose(cols["dp_epsilon"], epsilons(z, 3, 3, 2, cfg.dp_delta))


@pytest.mark.slow
@pytest.mark.parametrize("algorithm", sorted(OPTS))
def test_two_rounds_with_fedadam_server_step_match_adam_written_out(monkeypatch, algorithm):
    lr, b1, b2, tau = 0.05, 0.9, 0.99, 1e-3
    _, alg, state, data, calls = _recorded(monkeypatch, algorithm, server_opt="adam", adam_server_lr=lr,
                                           adam_beta1=b1, adam_beta2=b2, adam_tau=tau)
    m = v = 0.0
    for t in (1, 2):
        x = _f64(state.server)
        state, _ = alg.round(state, data, jax.random.key(20 + t))
        uploads, weights, _, params = calls[-1]
        mean = jax.tree.map(lambda u: np.tensordot(weights / weights.sum(), u, axes=1), uploads)
        g = jax.tree.map(np.negative, mean) if params is None else jax.tree.map(np.subtract, params, mean)
        m = jax.tree.map(lambda a, gg: b1 * a + (1 - b1) * gg, m if t > 1 else jax.tree.map(np.zeros_like, g), g)
        v = jax.tree.map(lambda a, gg: b2 * a + (1 - b2) * gg ** 2, v if t > 1 else jax.tree.map(np.zeros_like, g), g)
        u = jax.tree.map(lambda a, b: -lr * (a / (1 - b1 ** t)) / (np.sqrt(b / (1 - b2 ** t)) + tau), m, v)
        want = jax.tree.map(np.add, x, u)   # params (the server model) + u, or for SCAFFOLD x + eta_g u
        for a, b in zip(jax.tree.leaves(jax.device_get(state.server)), jax.tree.leaves(want)):
            np.testing.assert_allclose(np.asarray(a, np.float64), b, rtol=1e-5, atol=2e-6)


def test_dp_and_server_opt_are_refused_in_one_line_for_algorithms_without_a_server_aggregate():
    g = toy_graph(n=50, num_features=10, sparse=True, seed=2)
    for opts in ({"dp_clip": 1.0}, {"server_opt": "adam"}):
        with pytest.raises(ValueError, match="algorithm 'fedgta' has no server aggregate") as e:
            build(RunConfig(dataset="toy", algorithm="fedgta", clients=3, rounds=1, hidden=8, split="keep", **opts), g)
        assert "\n" not in str(e.value)
    with pytest.raises(ValueError, match="'fedadam' already applies its own server optimiser"):
        RunConfig(algorithm="fedadam", server_opt="yogi")
    with pytest.raises(ValueError, match="adam_server_lr=0.5 is an option of algorithm 'fedadam'"):
        RunConfig(algorithm="scaffold", adam_server_lr=0.5)       # FedAdam's options need server_opt adam
    assert RunConfig(algorithm="scaffold", server_opt="adam", adam_server_lr=0.5).server_hparams() == \
        A.FedAdamHParams(adam_server_lr=0.5)


@pytest.mark.slow
def test_cli_runs_scaffold_with_dp_and_server_adam_and_reports_epsilon(tmp_path, capsys):
    from fgl_jax.cli import main
    assert main(["run", "--algorithm", "scaffold", "--dataset", "csbm", "--split", "keep", "--clients", "3",
                 "--hidden", "8", "--rounds", "2", "--dp-clip", "1", "--dp-noise", "0.5", "--server-opt", "adam",
                 "--no-progress", "--out", str(tmp_path)]) == 0
    rows = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert len(rows) == 2 and 0 < rows[0]["dp_epsilon"] < rows[1]["dp_epsilon"] < np.inf
    assert all(np.isfinite(r["train_loss"]) for r in rows)
    with pytest.raises(SystemExit):
        main(["run", "--help"])
    assert "--server-opt {none,momentum,adam,yogi}" in " ".join(capsys.readouterr().out.split())


@pytest.mark.slow
def test_the_write_your_own_aggregator_example_in_the_docs_runs_and_trains_fedavg():
    """docs/aggregators.md's example block runs as written, and its median drives a FedAvg round
    (the server model is the coordinate-wise median of the clients' models, checked in NumPy)."""
    import re
    from pathlib import Path

    from fgl_jax import registry
    from tests.alg_helpers import toy_setup
    md = (Path(__file__).resolve().parents[1] / "docs" / "aggregators.md").read_text()
    code = re.search(r"<!-- aggregator-example -->\n```python\n(.*?)```", md, re.S).group(1)
    scope: dict = {}
    exec(compile(code, "docs/aggregators.md", "exec"), scope)
    data, model, common = toy_setup()
    common = scope["fj"].FedConfig(local_steps=common.local_steps, optim=common.optim, aggregator=scope["median"]())
    local = registry.get("algorithm", "local")(model, common.__class__(local_steps=common.local_steps,
                                                                        optim=common.optim), None)
    fedavg = registry.get("algorithm", "fedavg")(model, common, None)
    state = fedavg.init(jax.random.key(0), data)
    key = jax.random.key(5)
    new, _ = fedavg.round(state, data, key)
    # the clients' models of that round: Local's round from the same server model, optimiser states and key
    st = local.init(jax.random.key(0), data)
    st = st.replace(personal=jax.tree.map(lambda a: jnp.broadcast_to(a, (data.eval.num_clients,) + a.shape),
                                          state.server), opt=state.opt)
    models, _ = local.round(st, data, key)
    for a, b in zip(jax.tree.leaves(new.server), jax.tree.leaves(models.personal)):
        np.testing.assert_allclose(np.asarray(a), np.median(np.asarray(b, np.float64)[np.asarray(data.train_index)], 0),
                                   rtol=1e-6, atol=1e-7)


def test_a_dp_run_says_what_its_epsilon_does_not_cover(capsys):
    g = toy_graph(n=50, num_features=10, sparse=True, seed=2)
    cfg = RunConfig(dataset="toy", algorithm="scaffold", clients=3, rounds=1, hidden=8, split="keep", dp_clip=1.0)
    assert "control variates" in build(cfg, g).describe["dp_uncovered"]
    assert "warning: dp_epsilon covers scaffold's aggregated model, not its control variates" in capsys.readouterr().err
    assert "dp_uncovered" not in build(cfg.replace(algorithm="moon"), g).describe
    assert "dp_uncovered" not in build(cfg.replace(dp_clip=0.0), g).describe
