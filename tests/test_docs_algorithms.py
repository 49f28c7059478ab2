"""docs/algorithms.md is generated from the registry and the OpenFGL results files (docs/hooks.py):
every registered algorithm gets a row with its paper, its messages sized by hand-checkable shapes and
its hyperparameter defaults, and a docstring block; the OpenFGL table keeps the newest file's row."""
from __future__ import annotations

import importlib.util
import json
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
    for e in registry.entries("algorithm"):
        assert f"::: {e.obj.__module__}\n" in page, e.obj.__module__
    assert "<!-- algorithms: registry -->" in page and "<!-- algorithms: openfgl -->" in page


def test_openfgl_table_takes_the_newest_file_per_cell(tmp_path):
    def write(name, finished, rows):
        (tmp_path / name).write_text(json.dumps({"rows": rows, "provenance": {"finished": finished}}))

    row = lambda ds, algo, acc: {"dataset": ds, "algorithm": algo, "seeds": 3, "fgl_jax acc %": acc,
                                 "OpenFGL acc %": "70.00 ± 0.10", "diff (pts)": "+0.00", "speed-up": "6.0x"}
    write("results.json", "2026-01-01 10:00:00 UTC", [row("cora", "fedavg / fedavg", "11.11 ± 0.00")])
    write("results_new.json", "2026-02-01 10:00:00 UTC", [row("cora", "fedavg / fedavg", "22.22 ± 0.00"),
                                                          row("citeseer", "fggp / fggp", "33.33 ± 0.00")])
    (tmp_path / "results_whole.json").write_text(json.dumps({"rows": [{"dataset": "cora", "ms": 1}]}))
    table = _hooks().openfgl_table(tmp_path)
    body = [line for line in table.splitlines()[2:]]
    assert len(body) == 2
    assert "22.22" in table and "11.11" not in table and "33.33" in table
    assert "[results_new](../benchmarks/peers/openfgl/results_new.md)" in body[0]
    # a later run over fewer seeds (a speed check) does not replace the three-seed comparison
    write("results_check.json", "2026-03-01 10:00:00 UTC", [dict(row("cora", "fedavg / fedavg", "44.44 ± 0.00"), seeds=1)])
    table = _hooks().openfgl_table(tmp_path)
    assert "22.22" in table and "44.44" not in table
    # an OpenFGL side reused from another invocation ran at another load: no wall ratio, CPU kept
    (tmp_path / "results_reuse.json").write_text(json.dumps({
        "rows": [dict(row("cora", "fedavg / fedavg", "55.55 ± 0.00"), **{"cpu speed-up": "5.5x"})],
        "runs": [{"dataset": "cora", "algorithm": "fedavg", "openfgl": {"reused": True}}],
        "provenance": {"finished": "2026-04-01 10:00:00 UTC"}}))
    line = next(x for x in _hooks().openfgl_table(tmp_path).splitlines() if "55.55" in x)
    assert "6.0x" not in line and "- (OpenFGL reused)" in line and "5.5x" in line
    # compare.py's one marker (--openfgl-from), as well as the older files' `reused` above
    (tmp_path / "results_from.json").write_text(json.dumps({
        "rows": [dict(row("citeseer", "fggp / fggp", "66.66 ± 0.00"), **{"cpu speed-up": "4.4x"})],
        "runs": [{"dataset": "citeseer", "algorithm": "fggp", "openfgl": {"reused_from": ["o.jsonl"]}}],
        "provenance": {"finished": "2026-04-01 10:00:00 UTC"}}))
    line = next(x for x in _hooks().openfgl_table(tmp_path).splitlines() if "66.66" in x)
    assert "6.0x" not in line and "- (OpenFGL reused)" in line and "4.4x" in line
