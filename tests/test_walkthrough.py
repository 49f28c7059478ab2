"""A researcher's first hour (issue 50): the README's and docs/getting_started.md's commands, run verbatim.

The commands are read from the pages' fenced code blocks (so the docs' own examples are the test):
every `fgl-jax ...` line of a ```bash block (continuation lines joined, comments dropped, `a && b`
split) and every ```python block. They run in order in one temporary working directory, with the
pages' relative paths (`--out runs/...`), through the CLI's `main` in this process. The setup
commands that create a virtual environment or install (`python3 -m venv ...`, `pip install ...`,
`bash .ci/run`) are not run; the `fgl-jax` part of a setup line is (`.venv/bin/fgl-jax demo` runs as
`fgl-jax demo`). A command that appears on both pages runs once.

Cost: the README's demo and the getting-started page's first Cora run stay in the default suite;
the other commands (more Cora runs, the paper systems, the Python blocks) are marked `slow`. The CLI
has no variable that shortens a run, so the commands run exactly as written.
"""
from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = ("README.md", "docs/getting_started.md")
# setup commands the test does not run (they create environments or install); any other command
# that is not fgl-jax makes test_every_command_is_run_or_named_as_setup fail
SETUP = (("python3", "-m", "venv"), (".venv/bin/pip", "install"), ("pip", "install"), ("bash", ".ci/run"))
FAST = ("fgl-jax demo",
        "fgl-jax run --dataset cora --algorithm fedavg --model gcn --clients 10 --partition louvain "
        "--local-steps 3 --rounds 100 --out runs/cora_fedavg")
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)


def _blocks(page: str) -> list[tuple[str, str]]:
    """(language, text) of every fenced code block of a page, in order."""
    return [(m.group(1), m.group(2)) for m in FENCE.finditer((ROOT / page).read_text())]


def _shell_commands(text: str) -> list[list[str]]:
    """The commands of a bash block: continuation lines joined, comments dropped, `&&` split."""
    out = []
    for line in text.replace("\\\n", " ").splitlines():
        words = shlex.split(line, comments=True)
        while words:
            cut = words.index("&&") if "&&" in words else len(words)
            out.append(words[:cut])
            words = words[cut + 1:]
    return out


def _is_setup(words: list[str]) -> bool:
    return any(tuple(words[:len(s)]) == s for s in SETUP)


def _steps() -> list[tuple[str, str, object]]:
    """(id, page, argv list or python text) of every step, in page order, duplicates once."""
    steps, seen = [], set()
    for page in PAGES:
        for lang, text in _blocks(page):
            if lang == "python":
                steps.append((f"{page}:python{len(steps)}", page, text))
                continue
            if lang not in ("bash", "sh", "shell"):
                continue
            for words in _shell_commands(text):
                if words and Path(words[0]).name == "fgl-jax":
                    argv = words[1:]
                    name = shlex.join(["fgl-jax", *argv])
                    if name not in seen:
                        seen.add(name)
                        steps.append((name, page, argv))
    return steps


def _params():
    out = []
    for name, page, what in _steps():
        marks = () if name in FAST else (pytest.mark.slow,)
        out.append(pytest.param(page, what, id=name if len(name) < 90 else name[:87] + "...", marks=marks))
    return out


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    """The one working directory every step runs in (a later step reads an earlier one's runs/)."""
    return tmp_path_factory.mktemp("walkthrough")


def test_every_command_is_run_or_named_as_setup():
    """Each command of the pages' bash blocks is an fgl-jax command (run below) or a known setup
    command; the two pages' fast steps are there (the docs did not drop them)."""
    for page in PAGES:
        for lang, text in _blocks(page):
            if lang in ("bash", "sh", "shell"):
                for words in _shell_commands(text):
                    assert Path(words[0]).name == "fgl-jax" or _is_setup(words), (page, shlex.join(words))
    names = [name for name, _, _ in _steps()]
    assert all(f in names for f in FAST), names


@pytest.mark.parametrize("page, what", _params())
def test_the_docs_command_runs_verbatim(page, what, workdir, monkeypatch, data_dir):
    monkeypatch.chdir(workdir)
    monkeypatch.setenv("FGL_JAX_DATA", str(data_dir))
    if isinstance(what, str):  # a Python block
        exec(compile(what, f"{page} (python block)", "exec"), {"__name__": "__main__"})
        return
    if "mine.npz" in what and not (workdir / "mine.npz").exists():
        _write_mine(workdir / "mine.npz")  # the README's comment: np.savez("mine.npz", edge_index=E, x=X, y=y)
    own = what[what.index("--out") + 1] if "--out" in what else None
    for arg in what:  # a run an earlier step writes (deselected in this session, e.g. `-m slow`): run it first
        if arg.startswith("runs/") and arg != own and not (workdir / arg).exists():
            _run(next(argv for _, _, argv in _steps() if isinstance(argv, list) and arg in argv), page)
    _run(what, page)
    out = own
    if out is not None and what[0] in ("run", "hifgl", "fedgc", "fedhgn", "fedhgl", "lumos"):
        assert (workdir / out / "summary.json").is_file() and (workdir / out / "config.yaml").is_file()
    elif out is not None:
        assert (workdir / out).exists()


def _run(argv: list, page: str) -> None:
    from fgl_jax.cli import main
    try:
        code = main(list(argv))
    except SystemExit as e:  # argparse's --help
        code = e.code
    assert code in (0, None), f"{page}: fgl-jax {shlex.join(argv)} exited {code}"


def _write_mine(path: Path) -> None:
    """A graph saved as the README's comment says: edge_index int [2, E], x [N, F], y [N]."""
    import numpy as np
    from fgl_jax.data import csbm
    g = csbm(num_nodes=200, num_classes=3, num_features=16, avg_degree=5.0, seed=0)
    np.savez(path, edge_index=np.stack([np.asarray(g.senders), np.asarray(g.receivers)]).astype(np.int64),
             x=np.asarray(g.x), y=np.asarray(g.y))


def test_the_readme_says_what_ci_runs_and_how_long_it_took():
    """Issue 50 item 7: the README says how long `bash .ci/run` takes and what it runs; each thing it
    names is a command of .ci/run itself (so the sentence cannot drift from the script)."""
    text = (ROOT / "README.md").read_text()
    para = text[text.index("bash .ci/run"):]
    para = para[:para.index("\n## ")]
    assert re.search(r"\d[\d,]* s \(\d+ min\)", para), para  # the measured duration
    ci = (ROOT / ".ci" / "run").read_text()
    named = ["mkdocs build --strict", "pytest -n auto", "fgl-jax reproduce all --quick", "constraints.txt"]
    for thing in named:
        assert thing in " ".join(para.split()), thing
        words = thing.split()
        assert all(w in ci for w in words), (thing, "not in .ci/run")
