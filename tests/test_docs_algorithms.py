"""docs/algorithms.md is generated from the registry (docs/hooks.py): every registered algorithm gets a
row with its paper, its messages sized by hand-checkable shapes and its hyperparameter defaults, and a
docstring block. Its OpenFGL table is rendered from the comparison record (tests/test_records.py)."""
from __future__ import annotations

import pytest
import importlib.util
import re
from pathlib import Path

from fgl_jax import registry
from tests.helpers import toy_graph

ROOT = Path(__file__).resolve().parents[1]
F, H, K = 12, 8, 3                          # the toy graph's features and classes, hidden width 8
GCN = (F * H + H + H * K + K) * 4           # two float32 GCN layers with biases, by hand: 524 bytes


def _hooks():
    spec = importlib.util.spec_from_file_location("fgl_jax_docs_hooks", ROOT / "docs" / "hooks.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _rows(md: str) -> dict[str, list[str]]:
    out = {}
    for line in md.splitlines():
        m = re.match(r"\| `(\w+)` \|", line)
        if m:
            out[m.group(1)] = [c.strip() for c in line.strip().strip("|").split(" | ")]
    return out


@pytest.mark.slow
def test_every_registered_algorithm_has_a_row_with_paper_messages_and_defaults():
    md = _hooks().algorithms_table(dataset="toy", clients=3, partition="random", graph=toy_graph(n=60, seed=3),
                                   hidden=H, split="keep")
    rows = _rows(md)
    assert sorted(rows) == registry.names("algorithm")
    for name, (_, paper, help_, up, down, _hp) in rows.items():
        assert paper and help_ == registry.entry("algorithm", name).help, name
        assert up != "not described" and down != "not described", name
    assert rows["fedavg"][3] == rows["fedavg"][4] == f"model ({GCN} B)"
    assert rows["scaffold"][3] == f"model + model ({2 * GCN / 1e3:.1f} kB)"
    assert rows["global"][3] == "nothing (0 B)"
    assert rows["fedproto"][3] == f"f32[{K},{H}] + f32[{K}] ({K * H * 4 + K * 4} B)"
    assert "`fedproto_lambda` = 1.0\\*" in rows["fedproto"][5] and "`proto_loss` = mse" in rows["fedproto"][5]
    assert rows["fedavg"][5] == "none of its own"


def test_every_registered_algorithm_has_its_docstring_block():
    page = (ROOT / "docs" / "algorithms.md").read_text()
    assert "<!-- algorithms: registry -->" in page and "<!-- records: openfgl -->" in page
    assert "<!-- algorithms: modules -->" in page and ":::" not in page  # generated, not hand-kept
    blocks = _hooks().algorithm_modules()
    found = re.findall(r"^::: (\S+)$", blocks, flags=re.M)
    assert found == list(dict.fromkeys(e.obj.__module__ for e in registry.entries("algorithm")))   # each once
    assert all(importlib.util.find_spec(m) is not None for m in found)
