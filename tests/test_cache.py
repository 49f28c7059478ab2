"""What a command leaves for the next one (issue 31): the compilation and preparation caches, the
number of XLA programs a run needs, the checkpoint policy and the compile-free seed key.

References: jax.random.key for the key; the uncached partitioner's own output for the cache;
timings.json's counts come from jax.monitoring events (not from the code under test's own tally).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import jax
import numpy as np
import pytest

from fgl_jax import cache
from fgl_jax.experiment import seed_key
from fgl_jax.federated.checkpoint import Every, Saver, committed, parse_every, restore

pytestmark = pytest.mark.no_xla_cache  # it turns the caches on in directories of its own and counts their hits


@pytest.mark.parametrize("seed", [0, 1, 7, 123456, 2 ** 31 - 1, -3, 2 ** 31])
def test_seed_key_is_jax_random_key(seed):
    want = jax.random.key_data(jax.random.key(seed))
    np.testing.assert_array_equal(np.asarray(jax.random.key_data(seed_key(seed))), np.asarray(want))


@pytest.mark.parametrize("text, want", [("30s", Every(seconds=30.0)), ("2.5s", Every(seconds=2.5)), (5, Every(rounds=5)),
                                        ("12", Every(rounds=12)), ("chunk", Every()), (None, Every(seconds=30.0))])
def test_checkpoint_every_values(text, want):
    assert parse_every(text) == want


@pytest.mark.parametrize("bad", ["0", "-1", "soon", "1.5", 0, "-2s"])
def test_a_bad_checkpoint_every_is_one_clear_error(bad):
    with pytest.raises(ValueError, match=r"checkpoint_every must be seconds \('30s'\), a number of rounds"):
        parse_every(bad)


def test_the_time_policy_saves_at_most_once_per_interval_plus_the_last_round(tmp_path):
    now = [0.0]
    saver = Saver(tmp_path / "c", Every(seconds=30.0), clock=lambda: now[0])
    state, tracker = {"w": np.arange(3, dtype=np.float32)}, {"best": np.float32(0.5)}
    wanted = []
    for r in range(1, 11):  # a chunk every 7 s: saves at 35 s (round 5), 70 s (round 10 = last anyway)
        now[0] += 7.0
        if saver.due(r, final=r == 10):
            saver.save(r, state, tracker, extra={"g": np.full(2, r)})
            wanted.append(r)
    saver.close()
    assert wanted == [5, 10]
    assert [r for r, _ in committed(tmp_path / "c")] == [5, 10]
    rounds, st, tr, extra = restore(tmp_path / "c", state, tracker)
    assert rounds == 10 and np.array_equal(st["w"], state["w"]) and extra["g"].tolist() == [10, 10]


def test_the_round_policy_saves_after_the_chunk_that_completes_n_rounds(tmp_path):
    saver = Saver(tmp_path, Every(rounds=4))
    done = []
    for r in (3, 6, 9, 12, 13):  # chunks of 3 rounds, the last one of 1
        if saver.due(r, final=r == 13):
            saver.save(r, {"w": np.zeros(2, np.float32)}, {"b": np.float32(0)})
            done.append(r)
    saver.close()
    assert done == [6, 12, 13] and [r for r, _ in committed(tmp_path)] == [6, 12, 13]


def test_checkpoints_are_orbax_checkpoint_manager_steps(tmp_path):
    """Issue 50 item 8: the checkpoints are a directory orbax's own CheckpointManager reads: it lists
    the steps retention kept (the newest 3) and restores the newest into the saved arrays; every
    listed step has the project's manifest beside it, and a removed step's manifest is gone too."""
    import orbax.checkpoint as ocp
    saver = Saver(tmp_path, Every())
    states = {r: ({"w": np.arange(4, dtype=np.float32) * r}, {"b": np.float32(r)}) for r in (3, 6, 9, 12)}
    for r, (st, tr) in states.items():
        saver.save(r, st, tr)
    saver.close()
    reader = ocp.CheckpointManager(tmp_path, options=ocp.CheckpointManagerOptions(
        step_prefix="round", step_format_fixed_length=6, create=False, enable_async_checkpointing=False))
    try:
        assert list(reader.all_steps()) == [6, 9, 12]
        like = {"state": {"w": jax.ShapeDtypeStruct((4,), np.float32)}, "tracker": {"b": jax.ShapeDtypeStruct((), np.float32)}}
        out = reader.restore(12, args=ocp.args.StandardRestore(like))
    finally:
        reader.close()
    np.testing.assert_array_equal(np.asarray(out["state"]["w"]), states[12][0]["w"])
    assert float(out["tracker"]["b"]) == 12.0
    assert sorted(p.name for p in tmp_path.glob("*.sha256")) == [f"round_{r:06d}.sha256" for r in (6, 9, 12)]


def test_a_checkpoint_written_before_the_manager_is_refused_in_one_line(tmp_path):
    """A step as fgl_jax wrote it before the CheckpointManager (the state directly in round_N/,
    written by orbax's StandardCheckpointer, with a valid manifest): one line saying so."""
    import json
    import orbax.checkpoint as ocp
    from fgl_jax.federated import checkpoint
    tree = {"state": {"w": np.ones(3, np.float32)}, "tracker": {"b": np.float32(1)}}
    ckpt = ocp.StandardCheckpointer()
    ckpt.save((tmp_path / "round_000003").absolute(), tree)
    ckpt.wait_until_finished()
    ckpt.close()
    files = checkpoint._digest(tmp_path / "round_000003")
    (tmp_path / "round_000003.sha256").write_text(json.dumps({"round": 3, "files": files}))
    with pytest.raises(ValueError, match=r"round_000003 was written by an older fgl_jax .*overwrite"):
        restore(tmp_path, tree["state"], tree["tracker"])


def _small_graph():
    from fgl_jax.data import csbm
    return csbm(num_nodes=120, num_classes=3, num_features=8, avg_degree=4.0, seed=2)


def test_a_cached_partition_equals_the_computed_one_and_a_damaged_entry_is_recomputed(tmp_path, monkeypatch):
    from fgl_jax.partition import louvain_partition, make_partition
    monkeypatch.setitem(cache._STATE, "root", tmp_path)
    (tmp_path / "prep").mkdir()
    g = _small_graph()
    want = louvain_partition(g, 4, seed=1).assignment
    first = make_partition(g, "louvain", 4, seed=1)
    files = list((tmp_path / "prep").glob("partition-*.npz"))
    assert len(files) == 1 and np.array_equal(first.assignment, want)
    with np.load(files[0], allow_pickle=False) as z:
        np.testing.assert_array_equal(z["assignment"], want)
    assert np.array_equal(make_partition(g, "louvain", 4, seed=1).assignment, want)  # from the file
    # another seed or client count is another entry
    make_partition(g, "louvain", 5, seed=1)
    assert len(list((tmp_path / "prep").glob("partition-*.npz"))) == 2
    # a damaged entry (a client id out of range) is recomputed, not used
    np.savez(files[0], assignment=np.full(g.num_nodes, 99, np.int32))
    assert np.array_equal(make_partition(g, "louvain", 4, seed=1).assignment, want)


def test_without_a_cache_directory_nothing_is_written(tmp_path, monkeypatch):
    from fgl_jax.partition import make_partition
    monkeypatch.setitem(cache._STATE, "root", None)
    monkeypatch.setenv("HOME", str(tmp_path))
    make_partition(_small_graph(), "random", 3, seed=0)
    assert not any(tmp_path.rglob("*.npz"))


def test_the_environment_turns_the_cache_off_or_moves_it(tmp_path, monkeypatch):
    monkeypatch.setenv("FGL_JAX_CACHE_DIR", "off")
    assert cache.default_root() is None
    monkeypatch.setenv("FGL_JAX_CACHE_DIR", str(tmp_path / "c"))
    assert cache.default_root() == tmp_path / "c"
    monkeypatch.delenv("FGL_JAX_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "x"))
    assert cache.default_root() == tmp_path / "x" / "fgl_jax"


def test_prune_drops_the_least_recently_used_files_first(tmp_path):
    for i, name in enumerate(["old", "mid", "new"]):
        (tmp_path / name).write_bytes(b"x" * 100)
        os.utime(tmp_path / name, (1000 + i, 1000 + i))
    assert cache.prune(tmp_path, 250) == 100
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mid", "new"]


def _cli(out: Path, cache_dir: Path, *extra: str) -> dict:
    args = ["run", "--dataset", "csbm", "--split", "keep", "--clients", "3", "--rounds", "7", "--hidden", "8",
            "--chunk", "3", "--partition", "louvain", "--no-progress", "--out", str(out), *extra]
    env = {**os.environ, "FGL_JAX_CACHE_DIR": str(cache_dir)}
    p = subprocess.run([sys.executable, "-m", "fgl_jax.cli", *args], env=env, capture_output=True, text=True,
                       timeout=600)
    assert p.returncode == 0, p.stderr[-800:]
    return json.loads((out / "timings.json").read_text())


@pytest.mark.slow
def test_a_run_needs_at_most_three_programs_and_the_second_command_compiles_none(tmp_path):
    """7 rounds in chunks of 3 (lengths 3, 3, 1) with checkpoints: one chunk program and one init
    program; the second command loads both whole from the compiled-program cache (no tracing) and
    its numbers are the same bits; a command with another config (a learning rate: traced in the
    chunk, so XLA's own cache still serves that one) loads nothing from the compiled-program cache."""
    cold = _cli(tmp_path / "a", tmp_path / "cache")
    assert 1 <= cold["programs"] <= 3 and cold["compilations"] == cold["programs"] and cold["cache_hits"] == 0
    assert cold["programs_loaded"] == 0 and len(list((tmp_path / "cache" / "exec").glob("*.bin"))) == cold["programs"]
    warm = _cli(tmp_path / "b", tmp_path / "cache")
    assert warm["programs"] == cold["programs"] and warm["compilations"] == 0 and warm["cache_hits"] == warm["programs"]
    # every program loaded whole: no tracing (how much faster a warm command is: benchmarks/peers/openfgl/whole_process.py)
    assert warm["programs_loaded"] == warm["programs"]
    assert list((tmp_path / "cache" / "prep").glob("partition-*.npz"))
    assert (tmp_path / "a" / "metrics.jsonl").read_bytes() == (tmp_path / "b" / "metrics.jsonl").read_bytes()
    other = _cli(tmp_path / "c", tmp_path / "cache", "--lr", "0.02")
    assert other["programs_loaded"] == 0 and other["cache_hits"] >= 1  # the chunk from XLA's cache (lr is traced)
    assert (tmp_path / "c" / "metrics.jsonl").read_bytes() != (tmp_path / "a" / "metrics.jsonl").read_bytes()
    # an executable XLA took from its own cache does not serialise whole (reloaded, it fails with
    # "Function ... not found"): with only XLA's cache warm, nothing is stored
    for f in (tmp_path / "cache" / "exec").glob("*.bin"):
        f.unlink()
    again = _cli(tmp_path / "d", tmp_path / "cache")
    assert again["programs_loaded"] == 0 and again["cache_hits"] == again["programs"]
    assert not list((tmp_path / "cache" / "exec").glob("*.bin"))
    assert (tmp_path / "d" / "metrics.jsonl").read_bytes() == (tmp_path / "a" / "metrics.jsonl").read_bytes()


def test_the_program_key_changes_with_everything_that_determines_the_program(tmp_path, monkeypatch):
    """A wrong hit must be impossible: the on-disk key of a compiled program moves with the config
    text, the data's bytes, the fgl_jax source, the jax config and the XLA flags; code registered
    from outside fgl_jax turns the on-disk programs off."""
    from fgl_jax import experiment, registry
    from fgl_jax.systems.baseline import RunConfig, build
    monkeypatch.setitem(cache._STATE, "root", tmp_path)
    p = build(RunConfig(dataset="csbm", split="keep", clients=3, hidden=8))
    text = "system: baseline\nlr: 0.01\n"
    ctx = experiment.program_context("baseline", text, p.data)
    key = lambda c=ctx: cache.program_key(c, "chunk", 3, "sig")
    base = key()
    assert base == key() and base != cache.program_key(ctx, "chunk", 4, "sig") != cache.program_key(ctx, "init", 3, "sig")
    assert key(experiment.program_context("baseline", text.replace("0.01", "0.02"), p.data)) != base
    x = np.asarray(p.data.eval.y).copy()
    x[0, 0] += 1  # one label of one client
    changed = p.data.replace(eval=p.data.eval.replace(y=x))
    assert key(experiment.program_context("baseline", text, changed)) != base
    monkeypatch.setitem(cache._SOURCE, "digest", "an edited module")
    assert key() != base
    monkeypatch.delitem(cache._SOURCE, "digest")
    flags = os.environ.get("XLA_FLAGS")   # conftest sets the optimisation level: put back what was there
    monkeypatch.setenv("XLA_FLAGS", (flags or "") + " --xla_cpu_enable_fast_math=true")
    assert key() != base
    if flags is None:
        monkeypatch.delenv("XLA_FLAGS")
    else:
        monkeypatch.setenv("XLA_FLAGS", flags)
    before = jax.config.jax_default_matmul_precision
    other = "default" if before == "highest" else "highest"   # other test modules set "highest" globally
    try:
        jax.config.update("jax_default_matmul_precision", other)
        assert key() != base
    finally:
        jax.config.update("jax_default_matmul_precision", before)
    assert key() == base
    monkeypatch.setitem(registry._ENTRIES["model"], "mine", registry.Entry("model", "mine", lambda: None, {}))
    assert experiment.program_context("baseline", text, p.data) is None
    monkeypatch.setitem(cache._STATE, "root", None)
    assert cache.program_key(ctx, "chunk", 3, "sig") is None


def test_a_stored_program_runs_bitwise_and_a_damaged_or_hostile_file_is_not_loaded(tmp_path, monkeypatch):
    import hashlib
    import pickle
    monkeypatch.setitem(cache._STATE, "root", tmp_path)
    (tmp_path / "exec").mkdir()
    f = jax.jit(lambda a, b: {"y": jax.numpy.sin(a) @ b})
    a, b = np.linspace(0, 1, 12, dtype=np.float32).reshape(3, 4), np.ones((4, 2), np.float32)
    compiled = f.lower(a, b).compile()
    cache.store_program("chunk-x", compiled)
    loaded = cache.load_program("chunk-x")
    np.testing.assert_array_equal(np.asarray(loaded(a, b)["y"]), np.asarray(compiled(a, b)["y"]))
    path = tmp_path / "exec" / "chunk-x.bin"
    raw = bytearray(path.read_bytes())
    raw[-10] ^= 0xFF  # a damaged byte: the checksum no longer matches
    path.write_bytes(bytes(raw))
    assert cache.load_program("chunk-x") is None
    marker = tmp_path / "ran"

    class Hostile:
        def __reduce__(self):
            return (os.system, (f"touch {marker}",))
    payload = pickle.dumps(Hostile())
    head = cache._EXEC_MAGIC
    path.write_bytes(head + hashlib.sha256(payload).digest() + payload)  # a valid checksum, a hostile global
    assert cache.load_program("chunk-x") is None and not marker.exists()
    assert cache.load_program("absent") is None


def test_compiled_programs_another_user_could_have_written_are_not_loaded(tmp_path, monkeypatch, capsys):
    """Issue 50 item 8: exec/ holds native code. A program file or directory writable by the group or
    others (or owned by another user) is not loaded, with one line naming it; a cache root that is
    writable by others turns caching off at `enable`."""
    monkeypatch.setitem(cache._STATE, "root", tmp_path)
    (tmp_path / "exec").mkdir(mode=0o700)
    f = jax.jit(lambda a: {"y": a * 2.0})
    a = np.arange(3, dtype=np.float32)
    cache.store_program("chunk-t", f.lower(a).compile())
    path = tmp_path / "exec" / "chunk-t.bin"
    assert cache.load_program("chunk-t") is not None  # the owner's 0600 file
    os.chmod(path, 0o666)
    assert cache.load_program("chunk-t") is None
    assert f"{path} is writable by its group (mode 666)" in capsys.readouterr().err
    os.chmod(path, 0o600)
    os.chmod(tmp_path / "exec", 0o777)
    assert cache.load_program("chunk-t") is None
    assert f"{tmp_path / 'exec'} is writable by its group" in capsys.readouterr().err
    os.chmod(tmp_path / "exec", 0o700)
    if os.geteuid() == 0:  # only root can give a file away
        os.chown(path, 4321, -1)
        assert cache.load_program("chunk-t") is None
        assert "is owned by uid 4321" in capsys.readouterr().err
        os.chown(path, 0, -1)
    assert cache.load_program("chunk-t") is not None
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o757)
    enabled = jax.config.jax_enable_compilation_cache
    assert cache.enable(shared) is None
    assert f"{shared} is writable by others" in capsys.readouterr().err
    assert jax.config.jax_enable_compilation_cache == enabled  # nothing switched on


@pytest.mark.parametrize("model", ["gcn", "gat"])
def test_the_unoptimised_init_program_gives_the_optimised_ones_bits(model):
    """run() compiles the initialisation at XLA backend optimisation level 0 (it runs once); its
    parameters and optimiser state must be bitwise those of the default compilation."""
    from fgl_jax.federated.run import INIT_COMPILER_OPTIONS, make_init
    from fgl_jax.systems.baseline import RunConfig, build
    p = build(RunConfig(dataset="csbm", split="keep", clients=3, hidden=8, model=model))
    low = make_init(p.algorithm).lower(seed_key(5), p.data)
    a = low.compile()(seed_key(5), p.data)
    b = low.compile(INIT_COMPILER_OPTIONS)(seed_key(5), p.data)
    for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b)):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


def test_orbax_is_imported_only_after_the_chunk_program_is_lowered():
    # preload(after=event) must leave the GIL to the chunk program's tracing until the event fires
    code = ("import sys, threading, time\n"
            "from fgl_jax.federated import checkpoint\n"
            "ev = threading.Event()\n"
            "assert 'orbax.checkpoint' not in sys.modules\n"
            "checkpoint.preload(after=ev)\n"
            "time.sleep(0.3)\n"
            "assert 'orbax.checkpoint' not in sys.modules, 'imported before the event'\n"
            "ev.set()\n"
            "t = [x for x in threading.enumerate() if x.name == 'fgl_jax-orbax-import'][0]\n"
            "t.join(60)\n"
            "assert 'orbax.checkpoint' in sys.modules\n")
    p = subprocess.run([sys.executable, "-c", code], cwd=Path(__file__).resolve().parents[1], capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-2000:]
