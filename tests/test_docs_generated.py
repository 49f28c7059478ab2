"""Issue 50 item 7: the generated sections of the docs pages (results pages included into the system
pages, the equation tables) are written into the committed markdown, so GitHub shows them, and they
are current. (The algorithms table, which builds every algorithm on Cora, is checked by CI's strict
`mkdocs build`, whose hook warns on a stale page.)"""
from __future__ import annotations

import importlib.util
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _hooks():
    spec = importlib.util.spec_from_file_location("fgl_jax_docs_hooks_gen", ROOT / "docs" / "hooks.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_included_results_and_equation_tables_are_current(monkeypatch):
    hooks = _hooks()
    pages = hooks._pages()
    assert any(p.name == "fedgc.md" for p in pages) and any(p.name == "algorithms.md" for p in pages)
    stale = []
    for path in pages:
        text = path.read_text()
        # the registry table as committed (checked by the docs build), everything else afresh
        block = re.search(r"<!-- algorithms: registry -->\n(.*?)\n<!-- /algorithms: registry -->", text, re.S)
        monkeypatch.setattr(hooks, "algorithms_table", lambda: block.group(1) if block else "")
        if hooks.generate(text, path.relative_to(ROOT).as_posix()) != text:
            stale.append(path.relative_to(ROOT).as_posix())
    assert not stale, f"stale generated sections in {stale}: run python docs/hooks.py --write"


def test_every_generated_marker_is_filled_on_the_page():
    for path in _hooks()._pages():
        text = path.read_text()
        for kind, arg in re.findall(r"<!--\s*(include|equations):\s*(\S+)\s*-->", text):
            assert f"<!-- /{kind}: {arg} -->" in text, f"{path.name}: {kind}: {arg} is not written into the page"
        assert "<!-- algorithms: registry -->" not in text or "<!-- /algorithms: registry -->" in text


def test_a_stale_page_is_found(tmp_path):
    hooks = _hooks()
    text = "# t\n\n<!-- equations: fedgc -->\n| old | table |\n<!-- /equations: fedgc -->\n"
    fresh = hooks.generate(text, "docs/systems/t.md")
    assert fresh != text and "| old | table |" not in fresh and fresh.count("<!-- /equations: fedgc -->") == 1
    assert hooks.generate(fresh, "docs/systems/t.md") == fresh  # idempotent
