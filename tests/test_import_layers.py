"""The package's import structure: no import cycles (between modules, between packages), and every
import goes to the importer's own layer or a lower one, in the layer order of docs/architecture.md.

Function-level (lazy) imports count like module-level ones: a lazy import still ties the two
modules together, it only moves the moment the cycle bites. Imports under `if TYPE_CHECKING:` do
not run and do not count. The checker is tested on crafted packages in `tmp_path`, so a cycle or
an upward import really makes it fail.
"""
from __future__ import annotations

import ast
import re
import textwrap
from collections import defaultdict
from pathlib import Path
from typing import Callable, Iterable, Optional

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "fgl_jax"

# The layers of docs/architecture.md ("Layers"), lowest first: a unit may import its own layer and
# those below. A unit is a top-level module or subpackage of fgl_jax ("__init__" is the package's
# own __init__.py, the flat public API). The page prints this same table; the test below reads it.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("registry", "graph", "ops", "reduce", "validate", "cache", "progress", "homophily"),
    ("data", "schema", "nn", "partition", "batch", "graph_batch", "augment", "privacy"),
    ("rundir", "tensorboard", "inspection", "plot", "aggregators"),
    ("federated",),
    ("algorithms",),
    ("experiment", "report", "records", "engine"),
    ("systems",),
    ("cli", "__init__"),
)


# ----------------------------------------------------------------------------------- the checker

def module_files(package_dir: Path) -> dict[str, Path]:
    """Dotted module name -> file, for every .py file under `package_dir` (a package is its __init__)."""
    out = {}
    for f in sorted(package_dir.rglob("*.py")):
        parts = list(f.relative_to(package_dir.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = f
    return out


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    """ids of the nodes inside `if TYPE_CHECKING:` (or `typing.TYPE_CHECKING`) blocks."""
    out: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If):
            t = node.test
            if getattr(t, "id", None) == "TYPE_CHECKING" or getattr(t, "attr", None) == "TYPE_CHECKING":
                for stmt in node.body:
                    out.update(id(n) for n in ast.walk(stmt))
    return out


def import_edges(package_dir: Path) -> dict[tuple[str, str], list[int]]:
    """(importer, imported) module pairs within the package -> the importer's line numbers.

    `import a.b.c` and `from a.b import c` count as importing the module `a.b.c` when it exists,
    else its longest existing parent (a name from a package's __init__ is an import of the package);
    relative imports are resolved against the importer. Function-level imports are included."""
    mods = module_files(package_dir)
    top = package_dir.name

    def existing(name: str) -> Optional[str]:
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name or None

    edges: dict[tuple[str, str], list[int]] = defaultdict(list)
    for mod, path in mods.items():
        tree = ast.parse(path.read_text(), str(path))
        skip = _type_checking_nodes(tree)
        here = mod.split(".") if path.name == "__init__.py" else mod.split(".")[:-1]
        for node in ast.walk(tree):
            if id(node) in skip:
                continue
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parent = here[: len(here) - (node.level - 1)]
                    base = ".".join(parent + ([node.module] if node.module else []))
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base for a in node.names]
            else:
                continue
            for t in targets:
                if t.split(".")[0] != top:
                    continue
                found = existing(t)
                if found and found != mod:
                    edges[(mod, found)].append(node.lineno)
    return dict(edges)


def cycles(edges: Iterable[tuple[str, str]]) -> list[list[str]]:
    """Strongly connected components of more than one node (iterative Tarjan), each sorted."""
    graph: dict[str, list[str]] = defaultdict(list)
    for a, b in edges:
        if a != b:
            graph[a].append(b)
            graph.setdefault(b, [])
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            v, children = work[-1]
            w = next(children, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return sorted(out)


def unit(module: str) -> str:
    """The top-level unit of a module: fgl_jax.data.npz -> "data"; the package itself -> "__init__"."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def system_unit(module: str) -> str:
    """Like `unit`, but each system subpackage is its own unit (systems.fedgc, systems.baseline)."""
    parts = module.split(".")
    return ".".join(parts[1:3]) if len(parts) > 2 and parts[1] == "systems" else unit(module)


def grouped(edges: dict[tuple[str, str], list[int]], group: Callable[[str], str]) -> dict[tuple[str, str], list[str]]:
    """Edges between groups of modules (the package itself, imported by every submodule, is left out)."""
    out: dict[tuple[str, str], list[str]] = defaultdict(list)
    for (a, b), lines in edges.items():
        ga, gb = group(a), group(b)
        if ga != gb and "__init__" not in (ga, gb):
            out[(ga, gb)].append(f"{a}:{lines[0]} -> {b}")
    return dict(out)


def upward_imports(edges: dict[tuple[str, str], list[int]], layers: tuple[tuple[str, ...], ...]) -> list[str]:
    """One line per import into a higher layer than the importer's; a unit in no layer is reported too."""
    level = {u: i for i, layer in enumerate(layers) for u in layer}
    problems = []
    for (a, b), lines in sorted(edges.items()):
        ua, ub = unit(a), unit(b)
        for u, m in ((ua, a), (ub, b)):
            if u not in level:
                problems.append(f"{m}: unit {u!r} is in no layer of docs/architecture.md")
        if ua in level and ub in level and level[ub] > level[ua]:
            problems.append(f"{a}:{lines[0]} imports {b}: layer {level[ub]} ({ub}) is above "
                            f"layer {level[ua]} ({ua})")
    return sorted(set(problems))


def _describe(comps: list[list[str]], edges: dict) -> str:
    lines = []
    for comp in comps:
        lines.append("cycle: " + " <-> ".join(comp))
        lines += [f"    {a} -> {b}: {where}" for (a, b), where in sorted(edges.items())
                  if a in comp and b in comp]
    return "\n".join(lines)


# ------------------------------------------------------------------------------ the project's code

@pytest.fixture(scope="module")
def edges():
    return import_edges(PACKAGE)


def test_no_import_cycle_between_modules(edges):
    comps = cycles(edges)
    assert not comps, "\n" + _describe(comps, {k: [str(v[0])] for k, v in edges.items()})


@pytest.mark.parametrize("group", [unit, system_unit], ids=["fgl_jax.X", "systems.Y"])
def test_no_import_cycle_between_packages(edges, group):
    between = grouped(edges, group)
    comps = cycles(between)
    assert not comps, "\n" + _describe(comps, {k: v[:3] for k, v in between.items()})


def test_every_import_goes_to_the_same_or_a_lower_layer(edges):
    problems = upward_imports(edges, LAYERS)
    assert not problems, "\n" + "\n".join(problems)


def test_every_unit_is_in_exactly_one_layer():
    units = {unit(m) for m in module_files(PACKAGE)}
    listed = [u for layer in LAYERS for u in layer]
    assert len(listed) == len(set(listed)), "a unit is in two layers"
    assert units == set(listed), (f"in no layer: {sorted(units - set(listed))}; "
                                  f"layers name what does not exist: {sorted(set(listed) - units)}")


def test_the_architecture_page_lists_these_layers():
    """docs/architecture.md's "Layers" list and LAYERS are the same data."""
    text = (ROOT / "docs" / "architecture.md").read_text()
    section = text.split("## Layers", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\s*(\d+)\.\s+(.+)$", section, flags=re.M)
    documented = tuple(tuple(re.findall(r"`([\w]+)(?:/|\.py)?`", body)) for _, body in rows)
    assert [int(n) for n, _ in rows] == list(range(len(rows))), "the page numbers its layers from 0"
    assert documented == LAYERS, f"page: {documented}\ntest: {LAYERS}"


# ----------------------------------------------------------------- the checker on crafted packages

def _package(tmp_path: Path, files: dict[str, str]) -> Path:
    """A package `pkg` under tmp_path with the given files (relative path -> source)."""
    root = tmp_path / "pkg"
    for rel, src in {"__init__.py": "", **files}.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(src))
    return root


def test_checker_finds_a_cycle_closed_by_a_lazy_import(tmp_path):
    root = _package(tmp_path, {
        "low.py": "import os\n\ndef f():\n    from pkg import high  # lazy, still a cycle\n",
        "high.py": "from pkg.low import f\n",
        "other.py": "from . import low\n",
    })
    e = import_edges(root)
    assert set(e) == {("pkg.low", "pkg.high"), ("pkg.high", "pkg.low"), ("pkg.other", "pkg.low")}
    assert cycles(e) == [["pkg.high", "pkg.low"]]


def test_checker_ignores_type_checking_imports_and_resolves_relative_ones(tmp_path):
    root = _package(tmp_path, {
        "a/__init__.py": "from .x import thing\n",
        "a/x.py": "thing = 1\nfrom ..b import y\n",
        "b/__init__.py": "",
        "b/y.py": ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.a.x import thing\n"
                   "def g():\n    from ..a import x\n"),
    })
    e = import_edges(root)
    assert set(e) == {("pkg.a", "pkg.a.x"), ("pkg.a.x", "pkg.b.y"), ("pkg.b.y", "pkg.a.x")}
    assert cycles(e) == [["pkg.a.x", "pkg.b.y"]]


def test_checker_finds_a_cycle_between_packages_without_one_between_modules(tmp_path):
    # a.one -> b.one and b.two -> a.two: no module cycle, but the packages a and b import each other
    root = _package(tmp_path, {
        "a/__init__.py": "", "a/one.py": "import pkg.b.one\n", "a/two.py": "",
        "b/__init__.py": "", "b/one.py": "", "b/two.py": "def h():\n    import pkg.a.two\n",
    })
    e = import_edges(root)
    assert cycles(e) == []
    assert cycles(grouped(e, unit)) == [["a", "b"]]


def test_checker_finds_an_upward_import_and_a_unit_in_no_layer(tmp_path):
    root = _package(tmp_path, {
        "core.py": "def f():\n    from pkg.app import main\n",
        "app.py": "from pkg import core\n\ndef main():\n    pass\n",
        "stray.py": "from pkg import core\n",
    })
    e = import_edges(root)
    layers = (("core",), ("app",))
    assert upward_imports(e, layers) == [
        "pkg.core:2 imports pkg.app: layer 1 (app) is above layer 0 (core)",
        "pkg.stray: unit 'stray' is in no layer of docs/architecture.md",
    ]
    assert upward_imports({k: v for k, v in e.items() if k[0] != "pkg.stray"}, (("core", "app"),)) == []
