"""Issue 50 item 2: `fgl-jax --help`, every command's `--help` and an argument error are answered
without importing JAX (from the parser's saved copy, `fgl_jax.cli._light_parser`), and say exactly
what the real parser says (the reference: the parser built from the config classes, in this
process) and what the committed docs/cli.md shows."""
from __future__ import annotations

import contextlib
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from fgl_jax import cli, registry

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("jax", "jaxlib", "flax", "optax")


def _argvs() -> list[list[str]]:
    cli.build_parser()  # registers every system
    commands = [e.info.get("command", e.name) for e in registry.entries("system")]
    return ([["--help"], []] + [[c, "--help"] for c in commands]
            + [["sweep", "--help"], ["sweep", "--system", "hifgl", "--help"], ["datasets", "--help"],
               ["demo", "--help"], ["plot", "--help"], ["inspect", "--help"], ["attack", "--help"],
               ["attack", "nosuch", "runs/x"],
               ["run", "--no-such-flag"], ["run", "--rounds"], ["hifgl", "--partition"], ["nosuch"],
               ["inspect", "x", "--partition", "nosuch"], ["sweep", "--system", "nosuch"]])


_SCRIPT = """
import contextlib, io, json, sys
from fgl_jax import cli
runs = []
for argv in json.loads(sys.argv[1]):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = cli.main(argv)
        except SystemExit as e:
            code = e.code
    runs.append([argv, code, out.getvalue(), err.getvalue()])
print(json.dumps({"runs": runs, "heavy": sorted(m for m in %r if m in sys.modules)}))
""" % (HEAVY,)


def _reference(argv: list[str]) -> list:
    """What the real parser (built from the config classes) prints for argv, and its exit code."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = cli.main(argv)
        except SystemExit as e:
            code = e.code
    return [argv, code, out.getvalue(), err.getvalue()]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Every command line above answered in one fresh interpreter from the saved copy, and the
    real parser's answers (cache off: no copy) in this one."""
    argvs = _argvs()
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("COLUMNS", "100")
        reference = [_reference(a) for a in argvs]  # FGL_JAX_CACHE_DIR=off (conftest): the real parser
        mp.setenv("FGL_JAX_CACHE_DIR", str(tmp_path_factory.mktemp("cli_cache")))
        cli._save_snapshot()  # what the first command after an install writes
        assert cli._snapshot_path().is_file()
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
        proc = subprocess.run([sys.executable, "-c", _SCRIPT, json.dumps(argvs)], env=env, capture_output=True,
                              text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout), reference


def test_help_and_argument_errors_do_not_import_jax(runs):
    light, _ = runs
    assert light["heavy"] == []
    codes = {tuple(argv): code for argv, code, _, _ in light["runs"]}
    assert codes[("--help",)] == 0 and codes[("run", "--help")] == 0
    assert codes[("run", "--no-such-flag")] == 2 and codes[("nosuch",)] == 2


def test_the_copy_says_what_the_real_parser_says(runs):
    light, reference = runs
    for got, want in zip(light["runs"], reference):
        assert got == want, f"fgl-jax {' '.join(got[0])}"


def test_builtin_help_matches_the_committed_cli_reference(runs):
    light, _ = runs
    page = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    for argv, _code, out, _err in light["runs"]:
        if argv in (["sweep", "--help"], ["datasets", "--help"], ["demo", "--help"], ["plot", "--help"],
                    ["attack", "--help"]):
            block = re.search(rf"## fgl-jax {argv[0]}\n\n```text\n(.*?)\n```", page, re.S).group(1)
            assert out.rstrip() == block, f"docs/cli.md's `fgl-jax {argv[0]} --help` differs"


def test_a_foreign_registration_uses_the_real_parser(monkeypatch, tmp_path):
    """A system or algorithm registered outside fgl_jax (a notebook) is not in the copy: no copy is used."""
    monkeypatch.setenv("FGL_JAX_CACHE_DIR", str(tmp_path))
    cli._save_snapshot()
    assert cli._light_parser(["run", "--help"]) is not None
    monkeypatch.setitem(registry._ENTRIES["model"], "mine", registry.Entry("model", "mine", lambda: None, {}))
    assert cli._light_parser(["run", "--help"]) is None
