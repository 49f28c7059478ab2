"""FedGC's result tables (`paper_tables`, rendered by tabulate through `fgl_jax.report.table`): every
table of a stored results file is a well-formed markdown table (each row as many cells as its header,
a '|' inside a cell escaped), and the numbers are the stored records' own, re-derived here by hand."""
import json
import re
import shutil
from pathlib import Path

import pytest

from fgl_jax.systems.fedgc import paper, paper_tables

RESULTS = Path(__file__).resolve().parents[1] / "experiments" / "results" / "fedgc"


def cells(line: str) -> list:
    """The cells of a markdown table row, split on unescaped '|' only."""
    return [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]


def tables(md: str) -> list:
    """Every table of a markdown text as (header cells, [row cells]); separator rows checked and dropped."""
    out, cur = [], None
    for line in md.split("\n"):
        if not line.startswith("|"):
            cur = None
            continue
        if cur is None:
            cur = (cells(line), [])
            out.append(cur)
        elif re.fullmatch(r"\|([-:]+\|)+", line.replace(" ", "")):
            assert not cur[1], f"a separator row inside a table body: {line}"
        else:
            cur[1].append(cells(line))
    return out


def render(tmp_path: Path, name: str) -> tuple:
    """write_md of a stored results file (copied: write_md rewrites the json's index rows)."""
    for f in RESULTS.glob("results*.json"):
        shutil.copy(f, tmp_path / f.name)
    quick = name.startswith("results_quick")
    paper_tables.OUT, paper_tables.SUFFIX = tmp_path, Path(name).stem[len("results_quick" if quick else "results"):]
    data = json.loads((tmp_path / name).read_text())
    md = paper_tables.write_md(paper.Store(tmp_path / name, False, data["meta"]), "quick" if quick else "full")
    return md, {r["id"]: r for r in data["runs"]}


@pytest.mark.parametrize("name", ["results_quick.json", "results.json"])
def test_tables_are_well_formed(tmp_path, name):
    if not (RESULTS / name).exists():
        pytest.skip(f"{name} not stored")
    md, _ = render(tmp_path, name)
    found = tables(md)
    assert len(found) >= 4   # Table 1, 2, 3 and the index rows at least
    for header, rows in found:
        for row in rows:
            assert len(row) == len(header), (header, row)


def test_table2_numbers_are_the_records(tmp_path):
    if not (RESULTS / "results_quick.json").exists():
        pytest.skip("results_quick.json not stored")
    md, runs = render(tmp_path, "results_quick.json")
    t2 = next((h, rows) for h, rows in tables(md) if h[:2] == ["dataset", "variant"] and "ours AUC Z" in h)
    header, rows = t2
    assert rows, "Table 2 has no row"
    for row in rows:
        var = {"FedGC": "ib", "FedGC† (no IB)": "noib"}.get(row[1])
        if var is None:
            continue
        rec = runs[f"quick/{row[0]}/r0.5/{var}/s0"]
        for col, key in (("ours ACC (ft)", "test_acc"), ("ours AUC Z", "mia_auc_z"), ("shadow AUC", "mia_shadow_auc")):
            want = "–" if rec.get(key) is None else "%.1f" % (100 * rec[key])
            assert row[header.index(col)] == want, (row[1], col)


def test_pipe_inside_a_cell_is_escaped():
    lines = paper_tables.md_table(["a", "b"], [["m = |V_tr| pairs", 1.50]])
    assert cells(lines[2]) == ["m = |V_tr| pairs", "1.5"] and "\\|V_tr\\|" in lines[2]
    assert len(lines) == 3 and set(lines[1]) <= set("|-")
