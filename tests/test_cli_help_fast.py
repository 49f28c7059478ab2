"""Issue 50 item 2: `fgl-jax --help`, every command's `--help` and an argument error are answered
without importing JAX, from the first call after an install on (the parser's copy shipped in the
package, `fgl_jax/_cli_parser.json`), and after a source edit from the copy the cache keeps; they say
exactly what the real parser says (the reference: the parser built from the config classes, in this
process) and what the committed docs/cli.md shows. A copy made from other source is never used."""
from __future__ import annotations

import contextlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from fgl_jax import cli, registry

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("jax", "jaxlib", "flax", "optax")
ENV = {**os.environ, "COLUMNS": "100",
       "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}


def _argvs() -> list[list[str]]:
    cli.build_parser()  # registers every system
    commands = [e.info.get("command", e.name) for e in registry.entries("system")]
    return ([["--help"], []] + [[c, "--help"] for c in commands]
            + [["sweep", "--help"], ["sweep", "--system", "hifgl", "--help"], ["datasets", "--help"],
               ["demo", "--help"], ["plot", "--help"], ["inspect", "--help"], ["reproduce", "--help"],
               ["attack", "--help"], ["attack", "nosuch", "runs/x"],
               ["run", "--no-such-flag"], ["run", "--bogus"], ["run", "--rounds"], ["hifgl", "--partition"], ["nosuch"],
               ["inspect", "x", "--partition", "nosuch"], ["sweep", "--system", "nosuch"], ["reproduce", "nosuch"]])


# every command line in one fresh interpreter; argv[2], when given, replaces the shipped copy's path
_SCRIPT = """
import contextlib, io, json, sys
from pathlib import Path
from fgl_jax import cli
if len(sys.argv) > 2:
    cli.PARSER_COPY = Path(sys.argv[2])
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


def _answer(argv: list[str]) -> list:
    """What cli.main prints for argv in this process, and its exit code."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = cli.main(argv)
        except SystemExit as e:
            code = e.code
    return [argv, code, out.getvalue(), err.getvalue()]


def _light(argvs: list[list[str]], cache: Path, shipped: Path | None = None) -> dict:
    env = {**ENV, "FGL_JAX_CACHE_DIR": str(cache)}
    extra = [] if shipped is None else [str(shipped)]
    proc = subprocess.run([sys.executable, "-c", _SCRIPT, json.dumps(argvs), *extra], env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


@pytest.fixture(scope="module")
def reference():
    """argv -> the real parser's answer (no copy used: `_light_parser` off), COLUMNS=100."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("COLUMNS", "100")
        mp.setattr(cli, "_light_parser", lambda argv: None)
        return {tuple(a): _answer(a) for a in _argvs()}


@pytest.fixture(scope="module")
def shipped(reference, tmp_path_factory):
    """Every command line answered in a fresh interpreter with an empty cache: the shipped copy's answers."""
    cache = tmp_path_factory.mktemp("cli_cache_empty")
    light = _light([list(a) for a in reference], cache)
    light["cache_files"] = sorted(p.name for p in cache.rglob("*"))
    return light


def test_the_shipped_copy_is_current():
    assert cli.parser_copy_is_current(), \
        "fgl_jax/_cli_parser.json is not of the current source: run python docs/hooks.py --write"


def test_the_shipped_copy_is_what_the_parser_gives_now(reference):
    assert not registry.foreign(), [e.name for e in registry.foreign()]  # (the copy holds fgl_jax's own only)
    assert json.loads(cli.PARSER_COPY.read_text(encoding="utf-8")) == cli._snapshot_all()


def test_help_and_argument_errors_do_not_import_jax(shipped):
    assert shipped["heavy"] == []
    assert shipped["cache_files"] == []  # answered from the shipped copy: nothing written
    codes = {tuple(argv): code for argv, code, _, _ in shipped["runs"]}
    assert codes[("--help",)] == 0 and codes[("run", "--help")] == 0
    assert codes[("run", "--no-such-flag")] == 2 and codes[("nosuch",)] == 2


def test_the_shipped_copy_says_what_the_real_parser_says(shipped, reference):
    for got in shipped["runs"]:
        assert got == reference[tuple(got[0])], f"fgl-jax {' '.join(got[0])}"


@pytest.mark.parametrize("argv", [["run", "--help"], ["run", "--bogus"]])
def test_the_program_itself_from_an_empty_cache(argv, reference, tmp_path):
    """`python -m fgl_jax.cli ...` as a user types it, the first call after an install (empty cache):
    no JAX module among the ones imported (-X importtime lists each), the real parser's answer."""
    env = {**ENV, "FGL_JAX_CACHE_DIR": str(tmp_path)}
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "fgl_jax.cli", *argv], env=env,
                          capture_output=True, text=True, timeout=120)
    lines = proc.stderr.splitlines()
    imported = {line.rsplit("|", 1)[1].strip() for line in lines if line.startswith("import time:")}
    assert "fgl_jax.cli" in imported or "fgl_jax.registry" in imported  # the listing is there
    assert not imported & set(HEAVY), sorted(imported & set(HEAVY))
    err = "".join(line + "\n" for line in lines if not line.startswith("import time:"))
    assert [argv, proc.returncode, proc.stdout, err] == reference[tuple(argv)]
    assert list(tmp_path.iterdir()) == []


def test_after_an_edit_the_cache_copy_answers(reference, tmp_path, monkeypatch):
    """The shipped copy not of this source (an edited checkout): the real parser answers the first
    --help and writes the cache's copy; the next commands are answered from it, without JAX."""
    monkeypatch.setattr(cli, "PARSER_COPY", tmp_path / "absent.json")
    monkeypatch.setenv("FGL_JAX_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("COLUMNS", "100")
    assert cli._light_parser(["run", "--help"]) is None
    assert _answer(["run", "--help"]) == reference[("run", "--help")]  # the real parser, which saves the copy
    assert cli._snapshot_path().is_file()
    argvs = [["--help"], ["run", "--help"], ["sweep", "--system", "hifgl", "--help"], ["run", "--no-such-flag"],
             ["reproduce", "nosuch"]]
    light = _light(argvs, tmp_path / "cache", tmp_path / "absent.json")
    assert light["heavy"] == []
    for got in light["runs"]:
        assert got == reference[tuple(got[0])], f"fgl-jax {' '.join(got[0])}"


def test_a_copy_of_other_source_is_never_used(reference, tmp_path, monkeypatch):
    """A copy whose key is not the source's (it would list a flag that is gone) is ignored: the real
    parser answers."""
    data = json.loads(cli.PARSER_COPY.read_text(encoding="utf-8"))
    run = next(p for name, _, p in data["commands"] if name == "run")
    run["actions"].append({**run["actions"][0], "option_strings": ["--gone"], "dest": "gone", "help": "removed"})
    data["key"] = "0" * 24
    stale = tmp_path / "stale.json"
    stale.write_text(json.dumps(data), encoding="utf-8")
    monkeypatch.setattr(cli, "PARSER_COPY", stale)
    monkeypatch.setenv("FGL_JAX_CACHE_DIR", "off")
    monkeypatch.setenv("COLUMNS", "100")
    assert not cli.parser_copy_is_current()
    assert cli._light_parser(["run", "--help"]) is None
    assert _answer(["run", "--help"]) == reference[("run", "--help")]
    data["key"] = cli._source_key()  # the same copy with the right key would be used (the check above can fail)
    stale.write_text(json.dumps(data), encoding="utf-8")
    assert "--gone" in _answer(["run", "--help"])[2]


def test_the_key_follows_the_source_contents(tmp_path):
    """Same files (copied: other paths and times) -> same key; an edited or a new module -> another."""
    shutil.copytree(Path(cli.__file__).parent, tmp_path / "pkg", ignore=shutil.ignore_patterns("__pycache__"))
    assert cli._source_hash(tmp_path / "pkg") == cli._source_key()
    schema = tmp_path / "pkg" / "schema.py"
    schema.write_text(schema.read_text(encoding="utf-8") + "# an edit\n", encoding="utf-8")
    edited = cli._source_hash(tmp_path / "pkg")
    (tmp_path / "pkg" / "algorithms" / "zz_new.py").write_text("", encoding="utf-8")
    assert len({cli._source_key(), edited, cli._source_hash(tmp_path / "pkg")}) == 3


def test_builtin_help_matches_the_committed_cli_reference(shipped):
    page = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    for argv, _code, out, _err in shipped["runs"]:
        if argv in (["sweep", "--help"], ["datasets", "--help"], ["demo", "--help"], ["plot", "--help"],
                    ["attack", "--help"]):
            block = re.search(rf"## fgl-jax {argv[0]}\n\n```text\n(.*?)\n```", page, re.S).group(1)
            assert out.rstrip() == block, f"docs/cli.md's `fgl-jax {argv[0]} --help` differs"


def test_a_foreign_registration_uses_the_real_parser(monkeypatch):
    """A system or algorithm registered outside fgl_jax (a notebook) is not in the copy: no copy is used."""
    assert cli._light_parser(["run", "--help"]) is not None
    monkeypatch.setitem(registry._ENTRIES["model"], "mine", registry.Entry("model", "mine", lambda: None, {}))
    assert cli._light_parser(["run", "--help"]) is None
    with pytest.raises(ValueError, match="model 'mine'"):
        cli.write_parser_copy(Path("/nonexistent/never_written.json"))
