"""Runs that never lie, part two (issue 45): the run directory, checkpoints, resume and the CLI entry.

Each test feeds the input that once went wrong: a relative --out on resume, a deleted config.yaml,
--overwrite on a directory holding other files, an --out that cannot be a directory, a full disk,
a renamed checkpoint, two processes on one --out, Ctrl-C and an unwritable --out. Reference for
"correct": the uninterrupted run of the same config in a fresh directory, compared byte for byte.
"""
from __future__ import annotations

import errno
import importlib
import json
import os
import re
import shlex
import shutil
import signal
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from fgl_jax import experiment, rundir, schema
from fgl_jax.cli import main

SMALL = dict(dataset="csbm", split="keep", clients=3, rounds=12, hidden=8, chunk=3, partition="random")
CLI_SMALL = ["--dataset", "csbm", "--split", "keep", "--clients", "3", "--rounds", "12", "--hidden", "8",
             "--chunk", "3", "--no-progress", "--checkpoint-every", "chunk"]
FILES = ("metrics.jsonl", "summary.json", "config.yaml")


def _cfg(**changes):
    return experiment.default_config("baseline", **{**SMALL, **changes})


def _files(d: Path) -> dict:
    return {name: (d / name).read_bytes() for name in FILES}


def _cli(*args) -> int:
    return main([str(a) for a in args])


def _err_lines(capsys) -> list[str]:
    return capsys.readouterr().err.strip().splitlines()


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> dict:
    """The uninterrupted 12-round run's files."""
    d = tmp_path_factory.mktemp("ref") / "run"
    experiment.run_config(_cfg(), out=str(d))
    return _files(d)


class _Stop(Exception):
    pass


def _interrupted(d) -> Path:
    """The 12-round run stopped after its third chunk (round 9), as a kill leaves it: checkpoints
    3..9, rows 1..9, no summary.json. `d` may be relative (to the working directory)."""
    # the module (fgl_jax.federated.run is also a function); imported here, so the test does not
    # depend on another test having imported it first
    engine = importlib.import_module("fgl_jax.federated.run")
    chunks = []

    def stop_after_three() -> None:
        chunks.append(1)
        if len(chunks) == 3:
            raise _Stop

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(engine, "_fault", lambda stage: stop_after_three if stage == "chunk" else engine._noop)
        with pytest.raises(_Stop):
            experiment.run_config(_cfg(), out=str(d), checkpoint_every="chunk")
    d = Path(d)
    assert not (d / "summary.json").exists() and (d / "checkpoints" / "round_000009.sha256").is_file()
    return d


def _run_cli(args, env_extra=None, cwd=None, **kw) -> subprocess.CompletedProcess:
    env = {**os.environ, **(env_extra or {})}
    return subprocess.run([sys.executable, "-m", "fgl_jax.cli", *map(str, args)], env=env, cwd=cwd,
                          capture_output=True, text=True, timeout=600, **kw)


# ---- 1. a relative --out ---------------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("out", ["runs/x", "./x"])  # an absolute one: tests/test_reliability.py
def test_resume_with_a_relative_out_continues_the_run(tmp_path, monkeypatch, reference, out):
    monkeypatch.chdir(tmp_path)
    _interrupted(out)
    assert _cli("run", *CLI_SMALL, "--out", out, "--resume") == 0
    assert _files(Path(out)) == reference


@pytest.mark.slow
def test_extending_a_finished_run_with_a_relative_out(tmp_path, monkeypatch, reference):
    monkeypatch.chdir(tmp_path)
    assert _cli("run", *CLI_SMALL, "--rounds", "6", "--out", "runs/x") == 0
    assert _cli("run", *CLI_SMALL, "--out", "runs/x", "--resume", "--resume-with-changes", "rounds") == 0
    assert _files(tmp_path / "runs" / "x") == reference


@pytest.mark.slow
def test_a_restore_that_fails_says_what_failed_not_another_program(tmp_path, capsys, monkeypatch):
    """An I/O error while reading a checkpoint names the checkpoint and the error; it does not
    blame the checkpoint's program (which steered users to --overwrite, throwing the run away)."""
    import orbax.checkpoint as ocp
    d = _interrupted(tmp_path / "run")

    def failing(self, step, *args, **kwargs):  # the library's read fails as a bad disk makes it fail
        raise OSError(errno.EIO, "Input/output error", str(d / "checkpoints" / f"round_{step:06d}" / "d" / "0123"))

    monkeypatch.setattr(ocp.CheckpointManager, "restore", failing)
    assert _cli("run", *CLI_SMALL, "--out", d, "--resume") == 2
    err = _err_lines(capsys)
    assert len(err) == 1, err
    assert "round_000009" in err[0] and "Input/output error" in err[0]
    assert "different program" not in err[0]


@pytest.mark.slow
def test_a_state_of_another_structure_is_named_as_such(tmp_path, capsys):
    """A real structure mismatch (a manifest without a recorded config, as older versions wrote,
    and config.yaml edited to the new command) says which leaf differs and blames the program."""
    d = _interrupted(tmp_path / "run")
    for m in (d / "checkpoints").glob("*.sha256"):
        manifest = json.loads(m.read_text())
        del manifest["config"], manifest["config_sha256"]
        m.write_text(json.dumps(manifest))
    (d / "config.yaml").write_text(schema.dump(_cfg(hidden=16), "baseline"))
    assert _cli("run", *CLI_SMALL, "--hidden", "16", "--out", d, "--resume") == 2
    err = _err_lines(capsys)
    assert len(err) == 1 and "round_000009 does not fit this run's state" in err[0]
    assert "saved" in err[0] and "written by a different program" in err[0]


# ---- 2. the resume check does not depend on config.yaml -------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("change", [("--lr", "0.05", "lr: 0.01 -> 0.05"), ("--seed", "3", "seed: 0 -> 3")])
def test_a_deleted_config_yaml_does_not_switch_the_resume_check_off(tmp_path, capsys, change):
    d = _interrupted(tmp_path / "run")
    (d / "config.yaml").unlink()
    rows = (d / "metrics.jsonl").read_bytes()
    flag, value, message = change
    assert _cli("run", *CLI_SMALL, flag, value, "--out", d, "--resume") == 2
    err = _err_lines(capsys)
    assert len(err) == 1 and message in err[0] and "config.yaml is missing" in err[0], err
    assert not (d / "config.yaml").exists() and (d / "metrics.jsonl").read_bytes() == rows


@pytest.mark.slow
def test_a_deleted_config_yaml_resumes_with_the_same_options(tmp_path, reference):
    d = _interrupted(tmp_path / "run")
    (d / "config.yaml").unlink()
    assert _cli("run", *CLI_SMALL, "--out", d, "--resume") == 0
    assert _files(d) == reference


def test_a_config_yaml_edited_to_match_is_caught_by_the_manifests(tmp_path, capsys):
    d = _interrupted(tmp_path / "run")
    (d / "config.yaml").write_text(schema.dump(_cfg(lr=0.05), "baseline"))
    assert _cli("run", *CLI_SMALL, "--lr", "0.05", "--out", d, "--resume") == 2
    err = _err_lines(capsys)
    assert len(err) == 1 and "lr: 0.01 -> 0.05" in err[0] and "round_0000" in err[0]


def test_no_config_yaml_and_no_recorded_config_is_refused(tmp_path, capsys):
    d = _interrupted(tmp_path / "run")
    (d / "config.yaml").unlink()
    for m in (d / "checkpoints").glob("*.sha256"):  # as an older fgl_jax wrote them
        manifest = json.loads(m.read_text())
        m.write_text(json.dumps({"round": manifest["round"], "files": manifest["files"]}))
    assert _cli("run", *CLI_SMALL, "--out", d, "--resume") == 2
    err = _err_lines(capsys)
    assert len(err) == 1 and "config.yaml is missing" in err[0] and "cannot be checked" in err[0]


# ---- 3. --overwrite deletes only what a run wrote -------------------------------------------------

def _a_run_and(d: Path, *others: str) -> dict:
    """`d` holding a finished 6-round run and files no run writes; returns what is there (bytes)."""
    experiment.run_config(_cfg(rounds=6), out=str(d))
    for name in others:
        (d / name).parent.mkdir(parents=True, exist_ok=True)
        (d / name).write_text(f"my {name}")
    return {str(p.relative_to(d)): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file()}


def _held(d: Path) -> dict:
    return {str(p.relative_to(d)): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file()}


def test_overwrite_refuses_a_directory_holding_other_files_and_names_them(tmp_path, capsys):
    d = tmp_path / "run"
    before = _a_run_and(d, "notes.txt", "checkpoints/mine.bin")
    assert _cli("run", *CLI_SMALL, "--out", d, "--overwrite") == 2
    err = _err_lines(capsys)
    assert len(err) == 1 and "notes.txt" in err[0] and "checkpoints/mine.bin" in err[0], err
    assert "nothing was deleted" in err[0]
    assert _held(d) == before


def test_overwrite_through_a_symlink_leaves_the_targets_other_files(tmp_path, capsys):
    target = tmp_path / "scratch"
    before = _a_run_and(target, "thesis.tex")
    link = tmp_path / "link"
    link.symlink_to(target)
    assert _cli("run", *CLI_SMALL, "--out", link, "--overwrite") == 2
    assert "thesis.tex" in _err_lines(capsys)[0]
    assert _held(target) == before


def test_overwrite_of_the_working_directory_refuses(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.py").write_text("print('mine')")
    (tmp_path / "data").mkdir()
    assert _cli("run", *CLI_SMALL, "--out", ".", "--overwrite") == 2
    err = _err_lines(capsys)
    assert len(err) == 1 and "train.py" in err[0] and "data" in err[0]
    assert (tmp_path / "train.py").read_text() == "print('mine')" and (tmp_path / "data").is_dir()


@pytest.mark.slow
def test_overwrite_replaces_a_run_with_its_temporaries_and_lock(tmp_path, reference):
    d = tmp_path / "run"
    # what an older, killed run leaves: its files, a checkpoint, temporaries of a write and of a save
    for name in ["config.yaml", "metrics.jsonl", rundir.LOCK_FILE, ".metrics.jsonl.abc123.tmp",
                 "checkpoints/round_000006.sha256", "checkpoints/round_000006/d/0a1b", "checkpoints/.round_000009.sha256.x.tmp",
                 "checkpoints/round_000009.orbax-checkpoint-tmp/d/0c2d"]:
        (d / name).parent.mkdir(parents=True, exist_ok=True)
        (d / name).write_text("old")
    assert _cli("run", *CLI_SMALL, "--out", d, "--overwrite") == 0
    assert _files(d) == reference
    assert not (d / ".metrics.jsonl.abc123.tmp").exists()
    assert sorted(p.name for p in (d / "checkpoints").iterdir()) == [
        f"round_{r:06d}{s}" for r in (6, 9, 12) for s in ("", ".sha256")]  # this run's newest three
    assert not (d / "checkpoints" / "round_000006" / "d" / "0a1b").exists()  # the old round 6 is gone


def test_foreign_files_lists_what_no_run_writes(tmp_path):
    d = tmp_path / "run"
    for name in ["config.yaml", "metrics.jsonl", ".summary.json.x1.tmp", rundir.LOCK_FILE, "notes.md",
                 "checkpoints/round_000003.sha256", "checkpoints/.round_000003.sha256.q.tmp", "checkpoints/x"]:
        (d / name).parent.mkdir(parents=True, exist_ok=True)
        (d / name).write_text("")
    for name in ["checkpoints/round_000003", "checkpoints/round_000006.orbax-checkpoint-tmp", "summary.json"]:
        (d / name).mkdir()  # a directory named summary.json is not a run's file
    assert rundir.foreign_files(d) == ["notes.md", "summary.json", "checkpoints/x"]


# ---- 4. the CLI entry: one line naming the path ---------------------------------------------------

def test_out_below_a_regular_file_is_one_line(tmp_path, capsys):
    (tmp_path / "f").write_text("x")
    assert _cli("run", *CLI_SMALL, "--out", tmp_path / "f" / "run") == 2
    err = _err_lines(capsys)
    assert len(err) == 1 and err[0].startswith("fgl-jax: error: ") and str(tmp_path / "f") in err[0], err


def test_out_a_dangling_symlink_is_one_line(tmp_path, capsys):
    (tmp_path / "run").symlink_to(tmp_path / "gone")
    assert _cli("run", *CLI_SMALL, "--out", tmp_path / "run") == 2
    err = _err_lines(capsys)
    assert len(err) == 1 and "symlink" in err[0] and str(tmp_path / "gone") in err[0], err


def test_a_full_disk_during_a_checkpoint_manifest_is_one_line_with_the_path(tmp_path, capsys, monkeypatch):
    from fgl_jax.federated import checkpoint
    real = checkpoint.write_atomic

    def full(path, text):
        if str(path).endswith(".sha256"):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
        real(path, text)

    monkeypatch.setattr(checkpoint, "write_atomic", full)
    assert _cli("run", *CLI_SMALL, "--out", tmp_path / "run") == 2
    err = _err_lines(capsys)
    assert len(err) == 1, err
    assert err[0] == f"fgl-jax: error: {tmp_path / 'run' / 'checkpoints' / 'round_000003.sha256'}: " \
                     "No space left on device"


@pytest.mark.slow
def test_a_file_size_limit_during_a_checkpoint_save_is_one_line(tmp_path, capsys, caplog):
    """The checkpoint library's background write fails (RLIMIT_FSIZE gives EFBIG where a full disk
    gives ENOSPC): one line naming the checkpoint, and none of the library's tracebacks."""
    import logging
    import resource
    import jax
    from jax._src import compilation_cache
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    xla_cache = jax.config.jax_enable_compilation_cache
    # JAX's persistent cache off meanwhile: its entries would be written truncated, for later tests to read
    jax.config.update("jax_enable_compilation_cache", False)
    compilation_cache.reset_cache()
    xfsz = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails instead of killing us
    # config.yaml and the first rows fit; a checkpoint's array file (~13-15 kB) does not
    resource.setrlimit(resource.RLIMIT_FSIZE, (12_000, hard))
    try:
        code = _cli("run", *CLI_SMALL, "--out", tmp_path / "run")
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
        signal.signal(signal.SIGXFSZ, xfsz)
        jax.config.update("jax_enable_compilation_cache", xla_cache)
        compilation_cache.reset_cache()
    err = _err_lines(capsys)
    assert code == 2 and len(err) == 1, err
    assert re.fullmatch(rf"fgl-jax: error: {re.escape(str(tmp_path / 'run' / 'checkpoints'))}/round_\d{{6}}: "
                        "cannot write this checkpoint: File too large", err[0]), err[0]
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], caplog.records[0].getMessage()[:300]


LIMITED = ("import resource, runpy, signal, sys; signal.signal(signal.SIGXFSZ, signal.SIG_IGN); "
           "resource.setrlimit(resource.RLIMIT_FSIZE, (12000, resource.getrlimit(resource.RLIMIT_FSIZE)[1])); "
           "sys.argv = ['fgl-jax'] + sys.argv[1:]; runpy.run_module('fgl_jax.cli', run_name='__main__')")


@pytest.mark.slow
def test_a_file_size_limit_in_a_fresh_process_is_one_line_on_stderr(tmp_path):
    """The same in a process of its own, where orbax's error logs would reach standard error."""
    r = subprocess.run([sys.executable, "-c", LIMITED, "run", *CLI_SMALL, "--out", str(tmp_path / "run")],
                       env={**os.environ, "JAX_ENABLE_COMPILATION_CACHE": "false"},  # its entries pass 12 kB
                       capture_output=True, text=True, timeout=600)
    err = r.stderr.strip().splitlines()
    assert r.returncode == 2 and len(err) == 1, r.stderr[-3000:]
    assert re.fullmatch(rf"fgl-jax: error: {re.escape(str(tmp_path / 'run' / 'checkpoints'))}/round_\d{{6}}: "
                        "cannot write this checkpoint: File too large", err[0]), err[0]


def test_an_unwritable_out_is_one_line(tmp_path, capsys, monkeypatch):
    """What a read-only --out gives (chmod has no effect for root, so the refusal is simulated where
    the run creates its first file there)."""
    class ReadOnly:  # `os` as fgl_jax.rundir sees it, refusing to create files under tmp_path/run
        def __getattr__(self, name):
            return getattr(os, name)

        def open(self, path, *a, **k):
            if str(path).startswith(str(tmp_path / "run")):
                raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(path))
            return os.open(path, *a, **k)

    monkeypatch.setattr(rundir, "os", ReadOnly())
    assert _cli("run", *CLI_SMALL, "--out", tmp_path / "run") == 2
    err = _err_lines(capsys)
    assert err == [f"fgl-jax: error: {tmp_path / 'run' / rundir.LOCK_FILE}: Permission denied"]


def test_a_read_only_out_is_one_line(tmp_path):
    d = tmp_path / "run"
    d.mkdir()
    d.chmod(0o555)
    try:
        if os.access(d, os.W_OK):
            pytest.skip("chmod does not make a directory read-only for this user (root)")
        r = _run_cli(["run", *CLI_SMALL, "--out", d])
    finally:
        d.chmod(0o755)
    err = r.stderr.strip().splitlines()
    assert r.returncode == 2 and len(err) == 1 and str(d) in err[0] and "Permission denied" in err[0], r.stderr


# ---- 5. a checkpoint's round; one process per --out -----------------------------------------------

@pytest.mark.slow
def test_a_renamed_checkpoint_is_refused(tmp_path, capsys):
    d = _interrupted(tmp_path / "run")
    ck = d / "checkpoints"
    shutil.rmtree(ck / "round_000009")
    (ck / "round_000009.sha256").unlink()
    shutil.copytree(ck / "round_000006", ck / "round_000009")  # round 6's state under round 9's name
    shutil.copy(ck / "round_000006.sha256", ck / "round_000009.sha256")
    assert _cli("run", *CLI_SMALL, "--out", d, "--resume") == 2
    err = _err_lines(capsys)
    assert len(err) == 1 and "round_000009" in err[0] and "records round 6" in err[0], err


def test_a_second_process_on_the_same_out_is_refused_naming_the_holder(tmp_path, capsys):
    d = tmp_path / "run"
    d.mkdir()
    # another process holding the lock the documented way (flock on the lock file, its pid inside)
    holder = subprocess.Popen([sys.executable, "-c", "import fcntl, os, sys; "
                               f"f = open({str(d / rundir.LOCK_FILE)!r}, 'a+'); fcntl.flock(f, fcntl.LOCK_EX); "
                               "f.truncate(0); f.write(str(os.getpid())); f.flush(); print('locked', flush=True); "
                               "sys.stdin.read()"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        assert _cli("run", *CLI_SMALL, "--out", d) == 2
        err = _err_lines(capsys)
        assert len(err) == 1 and str(d) in err[0] and f"pid {holder.pid}" in err[0], err
        assert sorted(p.name for p in d.iterdir()) == [rundir.LOCK_FILE]  # nothing written
    finally:
        holder.communicate("")
    assert _cli("run", *CLI_SMALL, "--out", d) == 0  # the holder ended: the lock is free, the directory "empty"


# ---- 6. Ctrl-C ------------------------------------------------------------------------------------

def _first_save_then(d: Path, action) -> threading.Thread:
    """A thread that waits for the first committed checkpoint under `d`, then calls `action`."""
    def watch() -> None:
        deadline = time.monotonic() + 300
        while not list((d / "checkpoints").glob("round_*.sha256")) and time.monotonic() < deadline:
            time.sleep(0.01)
        action()
    t = threading.Thread(target=watch, daemon=True)
    t.start()
    return t


# chunks of two rounds, each saved: the run is still going when its first save is committed
SIGINT = ["--rounds", "30", "--chunk", "2"]


# slow: on a loaded machine the run can finish before the signal lands (seen at load 15: exit 0, not 130)
@pytest.mark.slow
def test_sigint_prints_the_resume_command_which_gives_the_uninterrupted_summary(tmp_path, capsys):
    ref = tmp_path / "ref"
    experiment.run_config(_cfg(rounds=30, chunk=2), out=str(ref))
    d = tmp_path / "run"
    args = ["run", *CLI_SMALL, *SIGINT, "--out", d]
    watcher = _first_save_then(d, lambda: os.kill(os.getpid(), signal.SIGINT))  # a real SIGINT, to this process
    assert _cli(*args) == 130
    watcher.join()
    err = _err_lines(capsys)
    assert len(err) == 1 and err[0].startswith("fgl-jax: interrupted; resume with: fgl-jax run "), err
    assert not (d / "summary.json").exists() and len((d / "metrics.jsonl").read_text().splitlines()) < 30
    again = shlex.split(err[0].split("resume with: fgl-jax ", 1)[1])
    assert again[-1] == "--resume"
    assert main(again + ["--checkpoint-every", "30s"]) == 0  # (saving less often changes no result)
    assert (d / "summary.json").read_bytes() == (ref / "summary.json").read_bytes()
    assert (d / "metrics.jsonl").read_bytes() == (ref / "metrics.jsonl").read_bytes()


@pytest.mark.slow
def test_sigint_to_the_command_process(tmp_path):
    """The same with the `fgl-jax` process of its own (its exit path: `cli.entry`)."""
    ref = tmp_path / "ref"
    experiment.run_config(_cfg(rounds=30, chunk=2), out=str(ref))
    d = tmp_path / "run"
    args = ["run", *CLI_SMALL, *SIGINT, "--out", d]
    p = subprocess.Popen([sys.executable, "-m", "fgl_jax.cli", *map(str, args)], stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True)
    _first_save_then(d, lambda: p.send_signal(signal.SIGINT)).join()
    err = p.communicate(timeout=300)[1].strip().splitlines()
    assert p.returncode == 130, err[-20:]
    assert len(err) == 1 and err[0].startswith("fgl-jax: interrupted; resume with: fgl-jax run "), err
    r = _run_cli(shlex.split(err[0].split("resume with: fgl-jax ", 1)[1]))
    assert r.returncode == 0, r.stderr[-2000:]
    assert (d / "summary.json").read_bytes() == (ref / "summary.json").read_bytes()


@pytest.mark.parametrize("umask", [0o022, 0o077, 0o002])
def test_run_files_respect_the_umask(tmp_path, umask):
    """Issue 50 item 6: run files were written 0600 (mkstemp's mode) whatever the umask."""
    from fgl_jax.rundir import write_atomic
    old = os.umask(umask)
    try:
        write_atomic(tmp_path / "summary.json", "{}")
        plain = tmp_path / "plain.txt"
        plain.write_text("x")  # what open(path, "w") gives under the same umask
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "summary.json").stat().st_mode) == 0o666 & ~umask
    assert stat.S_IMODE((tmp_path / "summary.json").stat().st_mode) == stat.S_IMODE(plain.stat().st_mode)


def test_metrics_rows_are_appended_per_chunk_not_rewritten(tmp_path, monkeypatch, reference):
    """Issue 50 item 6: metrics.jsonl was rewritten whole after every chunk (quadratic in the run's
    length). Now it is written once at the start and appended per chunk; the bytes are unchanged."""
    whole, appended = [], []
    real_write, real_append = rundir.write_atomic, rundir.append_rows
    monkeypatch.setattr(rundir, "write_atomic",
                        lambda p, text: (whole.append(Path(p).name), real_write(p, text))[1])
    monkeypatch.setattr(rundir, "append_rows",
                        lambda p, rows: (appended.append(len(list(rows))), real_append(p, rows))[1])
    # re-bind the append inside the engine's module namespace too (it calls rundir.append_rows)
    d = tmp_path / "run"
    experiment.run_config(_cfg(), out=str(d))
    assert whole.count("metrics.jsonl") == 1  # the start (an empty file), nothing per chunk
    assert appended == [3, 3, 3, 3]  # 12 rounds in chunks of 3
    assert _files(d) == reference


def test_a_torn_last_metrics_line_is_dropped_but_a_broken_middle_line_is_an_error(tmp_path):
    p = tmp_path / "metrics.jsonl"
    p.write_text('{"round": 1}\n{"round": 2}\n{"rou')  # a kill during an append
    assert [r["round"] for r in rundir.read_rows(p)] == [1, 2]
    p.write_text('{"round": 1}\n{"rou\n{"round": 3}\n')
    with pytest.raises(ValueError, match="line 2"):
        rundir.read_rows(p)
