"""Compiles you can see (issue 50 item 2): a run and a sweep print their phases (loading,
preparing, compiling, running) with the elapsed time on stderr, the rounds' bar appears only once
the program is compiled, and `--no-progress` silences both, for `sweep` as for every run command."""
import re

import pytest

from fgl_jax import progress
from fgl_jax.cli import main

TINY = ["--dataset", "csbm", "--split", "keep", "--clients", "2", "--rounds", "2", "--hidden", "8"]
PHASES = ["loading", "preparing", "compiling", "running"]
LINE = re.compile(r"^fgl-jax: (loading|preparing|compiling|running)\b.* \[\d+\.\d s\]$")


@pytest.fixture(autouse=True)
def _phases_to_captured_stderr(monkeypatch):
    monkeypatch.setenv("FGL_JAX_PHASES", "1")  # the lines are for a terminal; captured stderr is not one


def _phase_lines(err: str) -> list[tuple[int, str]]:
    """(line index, phase) of every phase line; tqdm's carriage-return updates split too."""
    lines = re.split(r"[\r\n]+", err)
    return [(i, m.group(1)) for i, line in enumerate(lines) if (m := LINE.match(line.strip()))]


@pytest.mark.slow
def test_run_prints_its_phases_in_order_and_the_bar_after_compiling(tmp_path, capsys):
    assert main(["run", *TINY, "--out", str(tmp_path / "r")]) == 0
    err = capsys.readouterr().err
    found = _phase_lines(err)
    assert [p for _, p in found] == PHASES, err
    lines = re.split(r"[\r\n]+", err)
    running = found[-1][0]
    bar = [i for i, line in enumerate(lines) if "round/s" in line or "s/round" in line]
    assert bar and min(bar) > running, err  # no bar (and no ETA) while compiling


@pytest.mark.slow
def test_sweep_prints_the_same_phases_and_accepts_no_progress(tmp_path, capsys):
    args = ["sweep", *TINY, "--seeds", "0,1", "--grid", "lr=0.01,0.1"]
    assert main([*args, "--out", str(tmp_path / "a")]) == 0
    found = _phase_lines(capsys.readouterr().err)
    assert [p for _, p in found] == PHASES, found
    assert main([*args, "--out", str(tmp_path / "b"), "--no-progress"]) == 0
    assert _phase_lines(capsys.readouterr().err) == []


def test_phase_lines_only_for_a_terminal_or_when_asked(monkeypatch, capsys):
    monkeypatch.delenv("FGL_JAX_PHASES")
    with progress.report(True):  # captured stderr is not a terminal: a script's stderr stays its errors
        progress.phase("loading")
    assert capsys.readouterr().err == ""


def test_phase_scopes(capsys):
    progress.phase("loading")  # no scope open: silent
    with progress.report(False):
        with progress.report(True):  # an inner scope cannot re-enable a silenced one
            progress.phase("compiling")
    with progress.report(True):
        progress.phase("running", "rounds 1..2")
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and LINE.match(err[0]) and "running: rounds 1..2" in err[0]
