"""The public API (issue 26): what it is, that it resolves, and that the repository's own users keep to it.

Public means: a name in `fgl_jax.__all__`; a name in `fgl_jax.systems.<name>.__all__` (each paper system's
documented surface); and, inside a public namespace module (`fgl_jax.schema`, `fgl_jax.lcc`, a system's
`paper`, ...), its `__all__` or else its names without a leading underscore. Notebooks, benchmarks,
experiments and the Python blocks of docs/README import only from `fgl_jax` and `fgl_jax.systems.<name>`
and touch only public names (`fj.federated.run`, `from fgl_jax.federated.run import ...`,
`hifgl.secmp` are internal layout).
"""
from __future__ import annotations

import ast
import importlib
import json
import re
import subprocess
import sys
import types
from pathlib import Path
from typing import Iterator

import pytest

import fgl_jax

ROOT = Path(__file__).resolve().parents[1]
SYSTEMS = sorted(p.name for p in (ROOT / "fgl_jax" / "systems").iterdir() if (p / "__init__.py").is_file())
PACKAGES = ("fgl_jax", *(f"fgl_jax.systems.{s}" for s in SYSTEMS))  # the only modules one may import from


def _public(module: types.ModuleType) -> set[str]:
    names = getattr(module, "__all__", None)
    return set(names) if names is not None else {n for n in vars(module) if not n.startswith("_")}


# ---------------------------------------------------------------------------------------------------
# (a) every exported name resolves
# ---------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("package", PACKAGES)
def test_all_names_resolve(package):
    module = importlib.import_module(package)
    assert "__all__" in (module.__doc__ or ""), f"{package}: its docstring must say that __all__ is its public API"
    names = module.__all__
    assert len(names) == len(set(names)), f"{package}.__all__ has duplicates"
    missing = [n for n in names if getattr(module, n, None) is None]
    assert not missing, f"{package}.__all__ names that do not resolve: {missing}"


def test_flat_api_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'no_such_name'"):
        fgl_jax.no_such_name  # noqa: B018
    with pytest.raises(AttributeError, match="no attribute 'no_such_name'"):
        importlib.import_module("fgl_jax.systems.hifgl").no_such_name  # noqa: B018


def test_package_namespace_holds_no_helper_names():
    """Issue 50 item 4: `fgl_jax` exported `Any`, `annotations` and `importlib` (its own imports);
    dir() and the module's attributes show only the public names (and dunders)."""
    leaked = {"Any", "annotations", "importlib"}
    assert not leaked & set(dir(fgl_jax)), sorted(leaked & set(dir(fgl_jax)))
    assert not leaked & set(vars(fgl_jax)), sorted(leaked & set(vars(fgl_jax)))
    assert set(fgl_jax.__all__) <= set(dir(fgl_jax))


def test_flat_names_are_the_defining_objects():
    # the lazy table points at the right module: the flat name is the very object of the submodule
    from fgl_jax.data.planetoid import load_planetoid
    from fgl_jax.federated.run import make_scan
    from fgl_jax.federated.sweep import sweep
    from fgl_jax.privacy import lcc
    assert fgl_jax.load_planetoid is load_planetoid and fgl_jax.engine.make_scan is make_scan and fgl_jax.lcc is lcc
    assert fgl_jax.sweep is sweep
    assert fgl_jax.register_dataset is importlib.import_module("fgl_jax.data.registry").register
    assert fgl_jax.register is importlib.import_module("fgl_jax.registry").register


def test_three_public_run_entry_points():
    """Issue 46: `run`, `sweep`, `run_config` run things; the engine's inner entry points are in the
    documented internal namespace `fgl_jax.engine`, not in `fgl_jax.__all__`."""
    inner = {"execute", "run_sweep", "run_sharded", "run_grid", "make_scan", "make_chunk", "Tracker", "round_step",
             "scan_rounds"}
    assert {"run", "sweep", "run_config", "RunOptions", "engine"} <= set(fgl_jax.__all__)
    assert not inner & set(fgl_jax.__all__), f"inner entry points exported: {sorted(inner & set(fgl_jax.__all__))}"
    assert inner - {"run_sweep"} <= set(fgl_jax.engine.__all__)
    assert "internal" in fgl_jax.engine.__doc__ and "__all__" in fgl_jax.engine.__doc__
    # the earlier names still resolve, to the same objects, with a DeprecationWarning naming the new place
    from fgl_jax.federated.run import make_scan
    from fgl_jax.federated.sweep import sweep
    with pytest.warns(DeprecationWarning, match=r"fgl_jax.run_sweep is now fgl_jax.sweep"):
        assert fgl_jax.run_sweep is sweep
    with pytest.warns(DeprecationWarning, match=r"fgl_jax.make_scan is now fgl_jax.engine.make_scan"):
        assert fgl_jax.make_scan is make_scan


# ---------------------------------------------------------------------------------------------------
# (b) notebooks, benchmarks, experiments, docs use public names only
# ---------------------------------------------------------------------------------------------------

def _check_chain(parts: list[str]) -> str | None:
    """parts: a dotted path starting at fgl_jax. Returns a one-line problem, or None when public."""
    if parts[:2] == ["fgl_jax", "systems"] and len(parts) >= 3 and f"fgl_jax.systems.{parts[2]}" in PACKAGES:
        obj, rest = importlib.import_module(".".join(parts[:3])), parts[3:]
    else:
        obj, rest = fgl_jax, parts[1:]
    for name in rest:
        if not isinstance(obj, types.ModuleType) or (name.startswith("__") and name.endswith("__")):
            return None  # past the modules (a class's attribute), or a dunder such as __file__
        if name not in _public(obj):
            return f"{'.'.join(parts)}: {name!r} is not a public name of {obj.__name__}"
        obj = getattr(obj, name)
    return None


def _dotted(node: ast.AST) -> list[str] | None:
    names = []
    while isinstance(node, ast.Attribute):
        names.append(node.attr)
        node = node.value
    return [node.id, *reversed(names)] if isinstance(node, ast.Name) else None


def violations(source: str) -> list[str]:
    """Every non-public use of fgl_jax in Python source: imports from a module other than the public
    packages, imported names outside their package's __all__, and attribute chains (fj.x.y) through
    non-public names."""
    tree = ast.parse(source)
    found, bound = [], {}  # bound: local name -> dotted path it stands for
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] != "fgl_jax":
                    continue
                if a.name not in PACKAGES:
                    found.append(f"line {node.lineno}: import {a.name}: not a public package")
                if a.asname:
                    bound[a.asname] = a.name
                else:  # `import fgl_jax.systems.x` binds fgl_jax
                    bound["fgl_jax"] = "fgl_jax"
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").split(".")[0] == "fgl_jax":
            if node.module not in PACKAGES:
                found.append(f"line {node.lineno}: from {node.module} import ...: not a public package")
                continue
            for a in node.names:
                if a.name == "*":
                    continue
                problem = _check_chain([*node.module.split("."), a.name])
                if problem:
                    found.append(f"line {node.lineno}: {problem}")
                bound[a.asname or a.name] = f"{node.module}.{a.name}"
    inner = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and id(node) not in inner:
            chain = _dotted(node)
            if chain and chain[0] in bound:
                problem = _check_chain([*bound[chain[0]].split("."), *chain[1:]])
                if problem:
                    found.append(f"line {node.lineno}: {problem}")
    return found


def _embedded_code(source: str) -> Iterator[str]:
    # notebook generators (make_notebook.py) hold the cells as string constants: check those too
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and "fgl_jax" in node.value \
                and "import" in node.value:
            try:
                ast.parse(node.value)
            except SyntaxError:
                continue  # prose (a docstring), not code
            yield node.value


def _files(folder: str, pattern: str) -> list[Path]:
    """The repository's files under `folder`, without hidden folders: a peer's virtual environment
    (benchmarks/peers/<x>/.venv, gitignored) holds other projects' code, not ours."""
    return [p for p in sorted((ROOT / folder).rglob(pattern))
            if not any(part.startswith(".") for part in p.relative_to(ROOT).parts)]


def sources() -> Iterator[tuple[str, str]]:
    """(where, Python source) for every file and cell that must keep to the public API."""
    for folder in ("notebooks", "benchmarks", "experiments"):
        for path in _files(folder, "*.py"):
            if "results" in path.relative_to(ROOT).parts:
                continue
            text = path.read_text()
            yield str(path.relative_to(ROOT)), text
            for k, code in enumerate(_embedded_code(text)):
                yield f"{path.relative_to(ROOT)} (string {k})", code
        for path in _files(folder, "*.ipynb"):
            for k, cell in enumerate(json.loads(path.read_text())["cells"]):
                if cell["cell_type"] == "code":
                    lines = "".join(cell["source"]).splitlines()
                    # IPython magics and shell lines are not Python
                    yield f"{path.relative_to(ROOT)} cell {k}", "\n".join(
                        "" if ln.lstrip().startswith(("%", "!")) else ln for ln in lines)
    for path in [*sorted((ROOT / "docs").glob("*.md")), ROOT / "README.md"]:
        for k, block in enumerate(re.findall(r"```python\n(.*?)```", path.read_text(), re.S)):
            try:
                ast.parse(block)
            except SyntaxError:
                continue  # a signature sketch (`def build(cfg) -> Program:` with no body), not runnable code
            yield f"{path.relative_to(ROOT)} block {k}", block


def test_scan_covers_the_repository():
    where = [w for w, _ in sources()]
    for must in ("notebooks/00_quickstart.ipynb cell 2", "benchmarks/bench_fedavg.py", "experiments/common.py",
                 "docs/scaling.md block 0", "README.md block 0", "experiments/lumos/make_notebook.py (string 0)"):
        assert must in where, f"the scan misses {must}"


def test_repository_uses_public_names_only():
    problems = [f"{where}: {p}" for where, src in sources() for p in violations(src)]
    assert not problems, "non-public fgl_jax names:\n" + "\n".join(problems)


@pytest.mark.parametrize("source", [
    "from fgl_jax.federated.run import Tracker",
    "import fgl_jax.systems.hifgl.secmp",
    "from fgl_jax.systems import hifgl",
    "import fgl_jax as fj\nfj.federated.run",
    "import fgl_jax\nfgl_jax.experiment.run_config",
    "import fgl_jax.systems.hifgl as H\nH.secmp.silo_decode",
    "import fgl_jax.systems.hifgl\nfgl_jax.systems.hifgl.secmp",
    "from fgl_jax.systems.lumos import algorithm",
    "from fgl_jax.systems.lumos import _with_table",
    "from fgl_jax import schema\nschema._unwrap",
    "from fgl_jax.systems.fedhgn import paper\npaper._not_public",
    "def f():\n    from fgl_jax.data.planetoid import load_planetoid",
    "from fgl_jax import make_scan",
    "import fgl_jax as fj\nfj.execute",
    "from fgl_jax import engine\nengine._not_public",
])
def test_planted_bad_use_is_caught(source):
    assert violations(source), f"not caught: {source!r}"


@pytest.mark.parametrize("source", [
    "import fgl_jax as fj\nfj.run_config\nfj.__version__\nfj.RunConfig.some_field",
    "from fgl_jax import run, sweep, RunOptions, engine\nengine.make_scan\nengine.Tracker.empty()",
    "import fgl_jax.systems.hifgl as H\nH.forward",
    "from fgl_jax.systems.fedhgn import build, FedHGNConfig\nFedHGNConfig.dataset",
    "from fgl_jax import schema\nschema.dump",
    "import numpy as np\nnp.linalg.norm",
])
def test_public_use_passes(source):
    assert violations(source) == []


# ---------------------------------------------------------------------------------------------------
# (c) `import fgl_jax` is cheap: nothing below it is imported until a name is used
# ---------------------------------------------------------------------------------------------------

def test_import_is_lazy():
    code = "import sys, fgl_jax; print(' '.join(sorted(sys.modules)))"
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                            cwd=ROOT).stdout.split()
    heavy = [m for m in loaded if m.split(".")[0] in ("jax", "jaxlib", "flax", "optax", "numpy", "scipy")
             or m.startswith("fgl_jax.")]
    assert not heavy, f"import fgl_jax loads {heavy}"
