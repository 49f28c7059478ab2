"""FedGC's result pages (experiments/fedgc: `tables` rendered by tabulate through `fgl_jax.table`, fed
from the committed records): every table of a page is a well-formed markdown table (each row as many
cells as its header, a '|' inside a cell escaped), the numbers are the records' own, re-derived here
by hand, and the committed pages are the rendering of the committed records."""
import re
import shutil
from pathlib import Path

import pytest

from experiments import harness
from experiments.fedgc import paper, tables
from experiments.fedgc.cells import VARIANTS
from fgl_jax import records

RESULTS = Path(__file__).resolve().parents[1] / "experiments" / "results" / "fedgc"


def cells(line: str) -> list:
    """The cells of a markdown table row, split on unescaped '|' only."""
    return [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]


def md_tables(md: str) -> list:
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


def render(tmp_path: Path, quick: bool, table: str = paper.MAIN) -> tuple:
    """The page of a committed table rendered again into tmp_path, and its runs (id -> flat run dict)."""
    shutil.copytree(RESULTS / "records", tmp_path / "records")
    if (RESULTS / "notes").is_dir():
        shutil.copytree(RESULTS / "notes", tmp_path / "notes")
    path = paper.render(tmp_path, quick, table)
    return path, paper.runs(tmp_path, quick, table)


@pytest.mark.parametrize("quick", [True, False])
def test_tables_are_well_formed(tmp_path, quick):
    path, _ = render(tmp_path, quick)
    found = md_tables(path.read_text())
    assert len(found) >= 4   # Table 1, 2, 3 and the index rows at least
    for header, rows in found:
        for row in rows:
            assert len(row) == len(header), (header, row)


def test_table2_numbers_are_the_records(tmp_path):
    path, _ = render(tmp_path, True)
    recs = {r["id"]: r for r in records.read_lines(RESULTS / "records" / "fedgc_quick.jsonl")}
    header, rows = next((h, rows) for h, rows in md_tables(path.read_text())
                        if h[:2] == ["dataset", "variant"] and "ours AUC Z" in h)
    assert rows, "Table 2 has no row"
    checked = 0
    for row in rows:
        var = {"FedGC": "ib", "FedGC† (no IB)": "noib", VARIANTS["ibfs"][0]: "ibfs"}.get(row[1])
        if var is None:
            continue
        m = recs[f"fedgc/{row[0]}/r0.5/{var}/s0"]["metrics"]   # read from the file, not through the renderer
        for col, key in (("ours ACC (ft)", "test_acc"), ("ours AUC Z", "mia_auc_z"), ("shadow AUC", "mia_shadow_auc")):
            want = "–" if m.get(key) is None else "%.1f" % (100 * m[key])
            assert row[header.index(col)] == want, (row[1], col)
            checked += 1
    assert checked >= 6


def test_committed_pages_are_the_rendering_of_the_committed_records(tmp_path):
    """Every results*.md beside the records is what `paper.render` makes of them (so the pages hold no
    number the records do not), and every record file has its page."""
    shutil.copytree(RESULTS / "records", tmp_path / "records")
    shutil.copytree(RESULTS / "notes", tmp_path / "notes")
    made = []
    for quick in (False, True):
        for table in paper.tables_in(tmp_path, quick):
            got = paper.render(tmp_path, quick, table)
            assert got.read_text() == (RESULTS / got.name).read_text(), got.name
            made.append(got.name)
    assert sorted(made) == sorted(p.name for p in RESULTS.glob("results*.md"))


def test_committed_records_keep_the_original_provenance():
    recs = harness.load(RESULTS, quick=False)
    r = recs["fedgc/cora/r0.5/ibfs/s0"]
    orig = r["provenance"]["original"]
    assert r["provenance"]["converted_from"] == "experiments/results/fedgc/results.json"
    assert orig["command"].startswith("python experiments/fedgc/reproduce.py") and orig["mode"] == "full"
    # the config as that run stored it (this one in the nested schema of its time: `tables.conf` reads both)
    assert r["seeds"] == [0] and r["metrics"]["dataset"] == "cora" and tables.conf(r, "ib_lr") == 0.01
    # one number by hand against the committed page (results.md, Table 1, cora 0.5, ibfs: 81.0 / 80.9, round 750)
    m = r["metrics"]
    assert (round(100 * m["test_acc"], 1), round(100 * m["test_acc_noft"], 1), m["round"]) == (81.0, 80.9, 750)
    assert (m["paper_acc"], m["paper_auc"]) == (80.8, 53.2)
    # an architectures cell names the cell whose G' it trained on
    arch = recs["fedgc/cora/r0.5/ibfs/s0/arch_gcond"]
    assert arch["config"] == {"g_from": "fedgc/cora/r0.5/ibfs/s0", "arch_protocol": "gcond"}


def test_cells_of_the_quick_plan():
    """--quick: Cora only, Table 2's ibfs, noib and reg with the attack, Table 3 (both protocols) on
    the base's G', the sparse-init synthetic run, at small settings; bad options are one-line errors."""
    cs = paper.cells(paper.Plan.make(True))
    ids = [c.id for c in cs]
    assert ids == [f"fedgc/cora/r0.5/{v}/s0" for v in ("ibfs", "noib", "reg")] + [
        "fedgc/cora/r0.5/ibfs/s0/arch", "fedgc/cora/r0.5/ibfs/s0/arch_gcond", "fedgc/synthetic-arxiv/csbm-sparse-init"]
    ibfs = cs[0].config
    assert (ibfs.mia, ibfs.rounds, ibfs.mia_iters, ibfs.ib_lr, ibfs.pge_init_bias) == (True, 20, 100, 1e-2, -4.6)
    assert ibfs.rounds > ibfs.adj_period > ibfs.adj_steps > 0        # both halves of the X'/Φ alternation run
    assert {c.config.defence for c in cs[:3]} == {"ib", "none", "reg"}
    full = paper.cells(paper.Plan.make(False))
    assert len(full) == 30 and full[0].config.rounds == 2000 and full[0].config.mia_iters == 600
    with pytest.raises(ValueError, match="unknown part"):
        paper.Plan.make(only="table9")
    with pytest.raises(ValueError, match="unknown variants"):
        paper.Plan.make(variants="ib,nope")
    with pytest.raises(ValueError, match="gammas must be >= 0"):
        paper.Plan.make(gammas="-1")
    assert paper.Plan.make(protocol="paper").table == paper.PP_TABLE


def test_pipe_inside_a_cell_is_escaped():
    lines = tables.md_table(["a", "b"], [["m = |V_tr| pairs", 1.50]])
    assert cells(lines[2]) == ["m = |V_tr| pairs", "1.5"] and "\\|V_tr\\|" in lines[2]
    assert len(lines) == 3 and set(lines[1]) <= set("|-")


def test_test_selected_is_the_best_test_checkpoint_of_protocol_free_variants():
    hist = [{"round": 250, "val_acc": 0.9, "test_acc": 0.70}, {"round": 500, "val_acc": 0.5, "test_acc": 0.75},
            {"round": 750, "val_acc": 0.6, "test_acc": None}]
    for var in tables.PROTOCOL_FREE:
        assert tables.test_selected({"id": f"full/cora/r0.5/{var}/s0", "history": hist}) == 0.75
    # self-training / IB choose on the protocol too: only a --protocol paper run gives their number
    assert tables.test_selected({"id": "full/cora/r0.5/ibfs/s0", "history": hist}) is None
    assert tables.test_selected({"id": "full/cora/r0.5/ldp/s0", "history": []}) is None


def test_protocol_pair_rows_are_the_records_histories(tmp_path):
    """The page's both-protocols table against the committed records' histories, re-derived by hand."""
    path, _ = render(tmp_path, False)
    recs = [r for r in records.read_lines(RESULTS / "records" / "fedgc_full.jsonl")
            if re.fullmatch(r"fedgc/citeseer/r0\.5/noib/s\d+", r["id"]) and r["config"].get("protocol") == "val"]
    assert len(recs) >= 3
    header, rows = next((h, rs) for h, rs in md_tables(path.read_text()) if "test-selected (paper's code)" in h)
    row = next(r for r in rows if r[0] == "citeseer" and r[1] == VARIANTS["noib"][0])
    best = [100 * max(h["test_acc"] for h in r["metrics"]["history"]) for r in recs]
    val = [100 * r["metrics"]["test_acc"] for r in recs]
    mean_sd = lambda v: "%.1f ± %.1f" % (sum(v) / len(v), (sum((x - sum(v) / len(v)) ** 2 for x in v) / len(v)) ** 0.5)
    assert row[header.index("test-selected (paper's code)")] == mean_sd(best)
    assert row[header.index("validation-selected")] == mean_sd(val)
