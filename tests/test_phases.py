"""Phased algorithms (`fgl_jax.federated.algorithm.Phase`): `run` executes one compiled program per
phase, with the hand-over inside the entered phase's program.

Checked against a host loop that applies each phase's round (and its hand-over at the phase's first
round) one round at a time; a resume in the middle of either phase or at the boundary equals the
uninterrupted run bit for bit; partial participation reaches every phase's round; one program per
phase plus the initialisation is compiled."""
from __future__ import annotations

import importlib

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from fgl_jax.federated.algorithm import FederatedAlgorithm, Phase, with_round
from fgl_jax.federated.run import run

run_module = importlib.import_module("fgl_jax.federated.run")
SWITCH, ROUNDS = 5, 10


def _two_phase(switch: int = SWITCH) -> FederatedAlgorithm:
    """state: w (a random walk in phase 1), v (set from w by the hand-over, then a contraction)."""
    def init(key, data):
        return {"w": jax.random.normal(key, (3,)), "v": jnp.zeros((3,)), "n": jnp.zeros((), jnp.int32)}

    def metrics(s, x):
        return {"train_loss": jnp.sum(x ** 2), "val_acc": x[0], "test_acc": x[1], "count": s["n"]}

    def first(state, data, key):
        w = state["w"] + jax.random.normal(key, (3,)) * data
        s = {**state, "w": w, "n": state["n"] + 1}
        return s, metrics(s, w)

    def enter(state, data, key):
        return {**state, "v": 2.0 * state["w"] + jax.random.uniform(key, (3,))}

    def second(state, data, key):
        v = 0.5 * state["v"] + jax.random.normal(key, (3,)) * data
        s = {**state, "v": v, "n": state["n"] + 1}
        return s, metrics(s, v)

    def single(state, data, key):   # the same schedule in one function (not used by `run`)
        state = jax.lax.cond(state["n"] == switch, lambda s: enter(s, data, key), lambda s: s, state)
        return jax.lax.cond(state["n"] < switch, first, second, state, data, key)

    return FederatedAlgorithm(init, single, phases=(Phase(0, first), Phase(switch, second, enter)))


def _host_loop(alg: FederatedAlgorithm, data, key, rounds: int) -> dict:
    """The reference: each round's phase applied on the host, one jitted round at a time."""
    init_key, run_key = jax.random.split(key)
    state = alg.init(init_key, data)
    hist: dict = {}
    for r in range(rounds):
        ph = [p for p in alg.phases if p.start <= r][-1]
        k = jax.random.fold_in(run_key, r)
        if r == ph.start and ph.enter is not None:
            state = jax.jit(ph.enter)(state, data, k)
        state, m = jax.jit(ph.round)(state, data, k)
        for name, v in m.items():
            hist.setdefault(name, []).append(float(v))
    return {k: np.asarray(v) for k, v in hist.items()}


@pytest.mark.slow
@pytest.mark.parametrize("chunk", [3, 10])
def test_phased_run_equals_a_host_loop_over_the_phases(chunk):
    alg, data, key = _two_phase(), jnp.float32(0.5), jax.random.key(4)
    res = run(alg, data, key, ROUNDS, chunk=chunk)
    want = _host_loop(alg, data, key, ROUNDS)
    np.testing.assert_array_equal(res.history["count"], np.arange(1, ROUNDS + 1))
    for k in ("train_loss", "val_acc", "test_acc"):
        np.testing.assert_allclose(res.history[k], want[k], rtol=1e-6, atol=1e-7)
    # and the one-function form (`round`, what sweeps run) is the same schedule
    one = run(alg._replace(phases=()), data, key, ROUNDS, chunk=chunk)
    np.testing.assert_allclose(res.history["train_loss"], one.history["train_loss"], rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("stop", [2, SWITCH, 7])
def test_resume_in_either_phase_or_at_the_switch_equals_the_uninterrupted_run(tmp_path, stop):
    alg, data, key = _two_phase(), jnp.float32(0.5), jax.random.key(6)
    full = run(alg, data, key, ROUNDS, chunk=3)
    run(alg, data, key, stop, chunk=3, out_dir=tmp_path)             # "interrupted" after `stop` rounds
    resumed = run(alg, data, key, ROUNDS, chunk=3, out_dir=tmp_path, resume=True)
    for k in full.history:
        np.testing.assert_array_equal(resumed.history[k], full.history[k])
    assert resumed.best == full.best
    for a, b in zip(jax.tree.leaves(resumed.state), jax.tree.leaves(full.state)):
        np.testing.assert_array_equal(a, b)
    assert len((tmp_path / "metrics.jsonl").read_text().splitlines()) == ROUNDS


def test_one_program_per_phase_and_chunks_cut_at_the_switch(monkeypatch):
    compiles, calls = [], []
    real_compile, real_scan = run_module._compile, run_module.compiled_scan

    def spy(make, args, options, kind, *rest):
        compiles.append(kind)
        return real_compile(make, args, options, kind, *rest)

    def scan_spy(algorithm, length, *args, **kw):
        program = real_scan(algorithm, length, *args, **kw)
        if kw.get("kind", "chunk") == "chunk":
            def called(*a):
                calls.append((kw.get("phase"), int(a[4]), int(a[5])))
                return program(*a)
            return called
        return program

    monkeypatch.setattr(run_module, "_compile", spy)
    monkeypatch.setattr(run_module, "compiled_scan", scan_spy)
    run(_two_phase(), jnp.float32(0.5), jax.random.key(0), ROUNDS, chunk=4)
    assert sorted(compiles) == ["chunk0", "chunk1", "init"]
    # (phase, start, rounds) of each chunk: 4 + 1 rounds in phase 1, then 4 + 1 in phase 2
    assert calls == [(0, 0, 4), (0, 4, 1), (1, 5, 4), (1, 9, 1)]
    compiles.clear()
    run(_two_phase(), jnp.float32(0.5), jax.random.key(0), SWITCH - 1)   # never reaches phase 2
    assert sorted(compiles) == ["chunk0", "init"]


def test_round_wrappers_reach_every_phase():
    from fgl_jax.federated.participation import with_participation

    def wrap(round_):
        def round_fn(state, data, key):
            return round_(state, data, key)
        round_fn.inner = round_
        return round_fn

    alg = _two_phase()
    wrapped = with_round(alg, wrap)
    assert wrapped.round.inner is alg.round
    assert [q.round.inner for q in wrapped.phases] == [p.round for p in alg.phases]
    assert [(q.start, q.enter) for q in wrapped.phases] == [(p.start, p.enter) for p in alg.phases]
    sampled = with_participation(alg, fraction=0.5)
    assert all(q.round is not p.round for p, q in zip(alg.phases, sampled.phases))


def test_phases_must_start_at_round_zero_in_order():
    alg = _two_phase()
    bad = alg._replace(phases=(alg.phases[1], alg.phases[0]))
    with pytest.raises(ValueError, match="start at round 0 and in increasing order; got starts \\[5, 0\\]"):
        run(bad, jnp.float32(0.5), jax.random.key(0), 3)


def test_generator_algorithms_declare_their_phases():
    """FedSage+ and FedDEP change kind part-way (a generator, then FedAvg): they go through `Phase`
    like AdaFGL, so `run` compiles each phase alone (one phase mechanism, issue 46)."""
    from fgl_jax import registry
    from tests.alg_helpers import toy_setup
    _, net, common = toy_setup()
    sage = registry.algorithm("fedsage_plus").hparams
    for gen_rounds, starts in ((2, [0, 2]), (0, [0])):
        alg = registry.get("algorithm", "fedsage_plus")(net, common, sage(fedsage_gen_rounds=gen_rounds))
        assert [p.start for p in alg.phases] == starts and all(p.enter is None for p in alg.phases)
    dep = registry.get("algorithm", "feddep")(net, common, registry.algorithm("feddep").hparams())
    assert [p.start for p in dep.phases] == [0, 1]


@pytest.mark.slow  # compiles FedSage+'s two phases and its one-program round
def test_fedsage_phased_run_equals_its_one_program_round():
    from fgl_jax.systems.baseline import RunConfig, build
    cfg = RunConfig(dataset="csbm", algorithm="fedsage_plus", clients=3, rounds=4, hidden=8, split="keep",
                    fedsage_gen_rounds=2, fedsage_gen_width=16, fedsage_latent=8, fedsage_num_pred=2)
    prog = build(cfg)
    phased = run(prog.algorithm, prog.data, jax.random.key(0), 4).history
    single = run(prog.algorithm._replace(phases=()), prog.data, jax.random.key(0), 4).history
    for k in ("train_loss", "val_acc", "test_acc", "val_loss"):
        np.testing.assert_allclose(phased[k], single[k], rtol=1e-6, atol=1e-7, err_msg=k)
