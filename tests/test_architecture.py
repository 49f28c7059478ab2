"""The three shared pieces: the schema (config classes -> checks, YAML, flags), the registry, and
the engine's hooks. References are hand-written expectations, never the code's own output."""
import dataclasses
import json
from typing import Optional

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from fgl_jax import registry, schema
from fgl_jax.federated import FederatedAlgorithm, NonFiniteError, run
from fgl_jax.federated.algorithm import Hooks


@dataclasses.dataclass(frozen=True)
class ToyConfig(schema.RunSpec):
    clients: int = schema.option(5, "number of clients", low=1)
    mode: str = schema.option("field", "arithmetic of the sum", choices=("field", "real"))
    lr: float = schema.option(0.01, "learning rate", low=0, low_open=True, traced=True)
    flag: bool = schema.option(False, "a switch for the test")
    archs: tuple[str, ...] = schema.option(("gcn",), "architectures to test")
    bins: Optional[int] = schema.option(None, "optional count", low=1)


# ---------------------------------------------------------------------------------------------- schema

@pytest.mark.parametrize("values, message", [
    ({"clients": 2.5}, "clients must be an integer, got 2.5"),
    ({"clients": 0}, "clients must be >= 1, got 0"),
    ({"clients": True}, "clients must be an integer"),
    ({"mode": "feild"}, "mode must be one of field, real; got 'feild' (did you mean 'field'?)"),
    ({"lr": 0}, "lr must be > 0, got 0"),
    ({"lr": "fast"}, "lr must be a number"),
    ({"flag": "maybe"}, "flag must be true or false"),
    ({"hidden": 3}, "unknown key 'hidden'"),
    ({"bins": 0}, "bins must be >= 1"),
])
def test_bad_values_are_one_line_errors_naming_source_field_and_value(values, message):
    with pytest.raises(ValueError) as e:
        schema.make(ToyConfig, values, source="file.yaml")
    assert str(e.value).startswith("file.yaml: ") and message in str(e.value)
    assert "\n" not in str(e.value)


def test_values_are_converted_to_the_field_types():
    cfg = schema.make(ToyConfig, {"clients": 16.0, "rounds": "7", "lr": "1e-3", "flag": "true",
                                  "archs": "gcn,sage", "bins": "none", "seed": 3})
    assert (cfg.clients, cfg.rounds, cfg.lr, cfg.flag, cfg.archs, cfg.bins, cfg.seed) == \
        (16, 7, 0.001, True, ("gcn", "sage"), None, 3)


def test_yaml_round_trip_and_precedence(tmp_path):
    path = tmp_path / "c.yaml"
    cfg = schema.make(ToyConfig, {"clients": 7, "archs": ("a", "b"), "lr": 0.5})
    schema.dump(cfg, "toy", path)
    assert path.read_text().startswith("system: toy\n")
    assert schema.resolve(ToyConfig, path, system="toy") == cfg
    # defaults < file < flags
    got = schema.resolve(ToyConfig, path, {"lr": "0.25"}, system="toy")
    assert (got.clients, got.lr, got.mode) == (7, 0.25, "field")
    with pytest.raises(ValueError, match="is for system 'toy', not 'other'"):
        schema.resolve(ToyConfig, path, system="other")


def test_flags_carry_help_valid_values_and_defaults():
    import argparse
    p = argparse.ArgumentParser()
    schema.add_flags(p, ToyConfig)
    acts = {a.dest: a for a in p._actions}
    assert "one of: field, real" in acts["mode"].help and "default: field" in acts["mode"].help
    assert ">= 1" in acts["clients"].help and "> 0" in acts["lr"].help
    args = p.parse_args(["--clients", "9", "--flag", "--archs", "x", "y"])
    assert schema.given_flags(args, ToyConfig) == {"clients": "9", "flag": True, "archs": ["x", "y"]}
    assert schema.traced_names(ToyConfig) == ["lr"]


def test_an_option_without_help_is_refused():
    with pytest.raises(ValueError, match="help text"):
        schema.option(1, "x")


# ---------------------------------------------------------------------------------------------- registry

def test_registry_names_get_and_clear_unknown_errors():
    assert {"baseline"} <= set(registry.names("system"))
    assert {"fedavg", "fedprox", "fedavgm"} <= set(registry.names("algorithm"))
    with pytest.raises(registry.UnknownNameError, match="Did you mean 'fedavg'"):
        registry.get("algorithm", "fedavgg")
    with pytest.raises(ValueError, match="kind must be one of"):
        registry.names("optimizer")


def test_register_refuses_duplicates_and_bad_names():
    registry.add("model", "scratch_model_for_test", object())
    try:
        with pytest.raises(ValueError, match="already registered"):
            registry.add("model", "scratch-model-for-test", object())
        with pytest.raises(ValueError, match="letters, digits"):
            registry.add("model", "bad name!", object())
    finally:
        registry._ENTRIES["model"].pop("scratch_model_for_test", None)


def test_a_new_algorithm_is_one_new_module(tmp_path, monkeypatch):
    """Drop a module into the algorithms package path: the registry finds it, with no other edit."""
    import fgl_jax.algorithms as pkg
    (tmp_path / "zz_scratch_algo.py").write_text(
        "from fgl_jax.registry import register\n"
        "@register('algorithm', 'zz_scratch', help='a scratch algorithm for a test')\n"
        "def zz(model, common, hp=None):\n    return None\n")
    monkeypatch.setattr(pkg, "__path__", list(pkg.__path__) + [str(tmp_path)])
    monkeypatch.setattr(registry, "_LOADED", registry._LOADED - {"algorithm"})
    try:
        assert "zz_scratch" in registry.names("algorithm")
    finally:
        registry._ENTRIES["algorithm"].pop("zz_scratch", None)
        import sys
        sys.modules.pop("fgl_jax.algorithms.zz_scratch_algo", None)


# ---------------------------------------------------------------------------------------------- hooks

def _counter(bad_round: Optional[int] = None) -> FederatedAlgorithm:
    """state = number of rounds done; metrics val_acc follows a fixed tent, loss NaN at `bad_round`."""
    tent = jnp.asarray([0.1, 0.3, 0.5, 0.4, 0.6, 0.6, 0.2, 0.1, 0.1, 0.1, 0.1, 0.1], jnp.float32)

    def init(key, data):
        return jnp.zeros((), jnp.int32)

    def round_fn(state, data, key):
        r = state
        loss = jnp.where(r + 1 == (bad_round or -1), jnp.nan, 1.0 / (r + 1.0))
        return state + 1, {"train_loss": loss, "val_acc": tent[r], "test_acc": tent[r] * 2}

    return FederatedAlgorithm(init, round_fn)


def test_every_and_on_chunk_see_the_state_at_evaluation_rounds(tmp_path):
    seen = []

    def on_chunk(rounds_done, state, history):
        seen.append((rounds_done, int(state), len(history.get("val_acc", []))))
        return {"score": float(rounds_done) / 10}

    res = run(_counter(), None, jax.random.key(0), 10, hooks=Hooks(every=4, on_chunk=on_chunk), out_dir=tmp_path)
    assert seen == [(4, 4, 4), (8, 8, 8), (10, 10, 10)]
    assert [e["round"] for e in res.evaluations] == [4, 8, 10]
    rows = [json.loads(l) for l in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [r["round"] for r in rows if "eval" in r] == [4, 8, 10] and rows[3]["eval"] == {"score": 0.4}
    # resume rebuilds the evaluations from metrics.jsonl
    again = run(_counter(), None, jax.random.key(0), 10, hooks=Hooks(every=4, on_chunk=on_chunk), out_dir=tmp_path,
                resume=True)
    assert again.evaluations == res.evaluations


def test_stop_cuts_history_and_log_and_select_picks_the_reported_round(tmp_path):
    # stop after 2 rounds without improvement: best 0.6 at round 5, patience ends at round 7
    def stop(h):
        v = h["val_acc"]
        best = int(np.argmax(v))
        return best + 3 if len(v) >= best + 3 else None

    select = lambda h, ev: {"best_val": float(h["val_acc"].max()), "best_test": -1.0, "best_round": 99}
    res = run(_counter(), None, jax.random.key(0), 12, chunk=1, out_dir=tmp_path,
              hooks=Hooks(stop=stop, select=select, finalize=lambda r: {"rounds_seen": r.rounds_run}))
    assert res.rounds_run == 7 and len((tmp_path / "metrics.jsonl").read_text().splitlines()) == 7
    assert res.best == {"best_val": pytest.approx(0.6), "best_test": -1.0, "best_round": 99}
    assert res.extras == {"rounds_seen": 7}


def test_non_finite_round_is_named_exactly_and_earlier_rounds_are_written(tmp_path):
    with pytest.raises(NonFiniteError, match=r"round 6: train_loss became nan"):
        run(_counter(bad_round=6), None, jax.random.key(0), 10, chunk=4, out_dir=tmp_path)
    rows = [json.loads(l)["round"] for l in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert rows == [1, 2, 3, 4, 5]
    res = run(_counter(bad_round=6), None, jax.random.key(0), 10, chunk=4, on_nonfinite="stop")
    assert res.diverged and res.rounds_run == 5 and res.best["best_round"] == 5


def test_hooks_do_not_change_the_numbers():
    plain = run(_counter(), None, jax.random.key(0), 10)
    hooked = run(_counter(), None, jax.random.key(0), 10, hooks=Hooks(every=3, on_chunk=lambda *a: None))
    for k in plain.history:
        np.testing.assert_array_equal(plain.history[k], hooked.history[k])
    assert plain.best == hooked.best


def test_the_flat_public_api_resolves_every_name():
    import fgl_jax
    for name in fgl_jax.__all__:
        assert getattr(fgl_jax, name) is not None, name
    assert fgl_jax.register_dataset is __import__("fgl_jax.data", fromlist=["register"]).register
    with pytest.raises(AttributeError):
        fgl_jax.no_such_name


def test_a_second_run_of_the_same_program_reuses_the_compiled_scan():
    import importlib
    run_module = importlib.import_module("fgl_jax.federated.run")
    alg = _counter()
    first = run(alg, None, jax.random.key(0), 6, chunk=3)
    cached = dict(run_module._COMPILED)
    assert any(k[0] is alg for k in cached), "the first run did not cache its compiled scan"
    second = run(alg, None, jax.random.key(1), 6, chunk=3)
    # the second run found the same compiled executable: no new entry for this algorithm
    assert [k for k in run_module._COMPILED if k[0] is alg] == [k for k in cached if k[0] is alg]
    assert all(run_module._COMPILED[k] is cached[k] for k in cached if k[0] is alg)
    np.testing.assert_array_equal(first.history["val_acc"], second.history["val_acc"])


def _noisy(x64: bool) -> FederatedAlgorithm:
    """state: a random walk (and an int64 round counter under x64, as the field algorithms)."""
    def init(key, data):
        return {"w": jax.random.normal(key, (3,)), "n": jnp.zeros((), jnp.int64 if x64 else jnp.int32)}

    def round_fn(state, data, key):
        w = state["w"] + jax.random.normal(key, (3,)) * data
        return {"w": w, "n": state["n"] + 1}, {"train_loss": jnp.sum(w ** 2), "val_acc": w[0], "test_acc": w[1],
                                               "count": state["n"] + 1}

    return FederatedAlgorithm(init, round_fn, needs_x64=x64)


@pytest.mark.parametrize("x64", [False, True])
def test_the_chunk_program_compiled_ahead_in_a_thread_is_the_one_used_and_changes_nothing(x64, monkeypatch):
    import importlib
    import threading
    run_module = importlib.import_module("fgl_jax.federated.run")
    compiles = []
    real = run_module._compile

    def spy(make, args, options, kind, *rest):
        compiles.append((kind, threading.current_thread().name))
        return real(make, args, options, kind, *rest)

    monkeypatch.setattr(run_module, "_compile", spy)
    data = jnp.float32(0.5)
    ahead = run(_noisy(x64), data, jax.random.key(3), 7, chunk=3)
    # two programs: the chunk compiled on the engine's thread and found by the engine (a key that
    # missed, e.g. x64 not seen by the thread, would compile it a second time on the main thread)
    assert sorted(compiles) == [("chunk", "fgl_jax-compile-chunk"), ("init", threading.current_thread().name)]
    monkeypatch.setattr(run_module, "_compile_ahead", lambda *a, **k: None)
    plain = run(_noisy(x64), data, jax.random.key(3), 7, chunk=3)
    assert compiles[-1][1] == threading.current_thread().name
    for k in plain.history:
        np.testing.assert_array_equal(ahead.history[k], plain.history[k])
    assert ahead.state["n"].dtype == plain.state["n"].dtype == (np.int64 if x64 else np.int32)


# ------------------------------------------------------------------------- host-side preparation

@pytest.mark.slow
def test_an_algorithms_host_preparation_reaches_its_round_and_model_spec_rebuilds_the_model():
    """registry info `prepare`: its batch replaces the prepared one and its dict is FedData.extra;
    the round sees both (a degree sum the round reports, checked against NumPy on the batch); and
    common.model rebuilds the run's model (same parameter shapes)."""
    from fgl_jax.federated.algorithm import HostInput
    from fgl_jax.systems.baseline import RunConfig, build

    seen = {}

    def host(inp: HostInput, hp):
        assert isinstance(inp, HostInput) and inp.assignment.shape == (inp.graph.num_nodes,)
        b = inp.batch
        deg = np.zeros(b.y.shape, np.float32)  # [C, N] in-degree of each client's node, from the edge lists
        for c in range(b.num_clients):
            r = np.asarray(b.graph.receivers[c])[np.asarray(b.edge_mask[c])]
            np.add.at(deg[c], r, 1.0)
        seen["deg"] = deg
        return b.replace(features=jnp.asarray(b.features) * 0.0), {"deg": deg}

    def factory(model, common, hp):
        base = registry.get("algorithm", "fedavg")(model, common, None)
        seen["spec_model"] = common.model.build()

        def round_fn(state, data, key):
            state, m = base.round(state, data, key)
            m["deg_sum"] = data.extra["deg"][data.train_index].sum()
            m["feat_abs"] = jnp.abs(data.train.features).sum()
            return state, m
        return base._replace(round=round_fn)

    registry.add("algorithm", "zz_hostprep", factory, prepare=host, help="test algorithm with a host step")
    try:
        prog = build(RunConfig(dataset="csbm", algorithm="zz_hostprep", clients=3, rounds=2, hidden=8, split="keep"))
        res = run(prog.algorithm, prog.data, jax.random.key(0), 2)
    finally:
        registry._ENTRIES["algorithm"].pop("zz_hostprep", None)
    idx = np.asarray(prog.data.train_index)
    np.testing.assert_allclose(res.history["deg_sum"], seen["deg"][idx].sum())
    np.testing.assert_array_equal(res.history["feat_abs"], 0.0)
    init = jax.eval_shape(seen["spec_model"].init, {"params": jax.random.key(0), "dropout": jax.random.key(0)},
                          jax.tree.map(lambda a: a[0], prog.data.eval), train=False)
    state_shapes = jax.tree.map(lambda a: a.shape, res.state.server)
    assert jax.tree.map(lambda a: a.shape, init) == state_shapes
