"""experiments/harness.py: cells are data, the runner writes one valid record per cell, tables are
rendered from the records, and a converted result keeps its numbers and its own provenance.
Expected values are written by hand here, never taken from the harness's own output."""
import dataclasses
import json

import pytest

from experiments import harness
from experiments.harness import Cell
from fgl_jax import records


@dataclasses.dataclass(frozen=True)
class _Cfg:
    dataset: str = "toy"
    hidden: tuple = (4, 8)


def _cells():
    return [Cell("t/a", _Cfg("a"), (0, 1), {"paper": 0.5}), Cell("t/b", {"dataset": "b", "k": 3}, (2,))]


def test_run_cells_writes_one_valid_record_per_cell(tmp_path):
    measured = []

    def measure(c):
        measured.append(c.id)
        return {"mean": 0.25 if c.id == "t/a" else 0.75, "runs": [0.2, 0.3]}

    got = harness.run_cells(_cells(), measure, tmp_path, quick=True, command="cmd --quick", log=lambda *a: None)
    assert measured == ["t/a", "t/b"]
    # one file for the table "t" of the quick run, a line per cell in cell order
    assert sorted(p.name for p in (tmp_path / "records").iterdir()) == ["t_quick.jsonl"]
    lines = (tmp_path / "records" / "t_quick.jsonl").read_text().splitlines()
    assert [json.loads(x)["id"] for x in lines] == ["t/a", "t/b"]
    rec, b = records.read_lines(tmp_path / "records" / "t_quick.jsonl")  # valid fgl_jax.record/1 each
    assert rec == got[0]
    assert (rec["id"], rec["kind"], rec["seeds"]) == ("t/a", "reproduction", [0, 1])
    assert rec["config"] == {"dataset": "a", "hidden": [4, 8]}          # the resolved config, tuples as lists
    assert rec["metrics"] == {"mean": 0.25, "runs": [0.2, 0.3], "paper": 0.5}  # the paper's value beside ours
    assert rec["provenance"]["command"] == "cmd --quick" and rec["provenance"]["started"] is not None
    assert (b["config"], b["seeds"], b["metrics"]) == ({"dataset": "b", "k": 3}, [2], {"mean": 0.75, "runs": [0.2, 0.3]})


def test_rerunning_some_cells_replaces_their_lines_and_keeps_the_others(tmp_path):
    quiet = lambda *a: None
    harness.run_cells(_cells(), lambda c: {"v": 1}, tmp_path, quick=False, command="first", log=quiet)
    harness.run_cells([Cell("t/b", {"k": 4}), Cell("t/c", {})], lambda c: {"v": 2}, tmp_path, quick=False,
                      command="second", log=quiet)
    harness.run_cells([Cell("u/x", {})], lambda c: {"v": 3}, tmp_path, quick=False, log=quiet)
    got = records.read_lines(tmp_path / "records" / "t_full.jsonl")
    assert [(r["id"], r["metrics"]["v"], r["provenance"]["command"]) for r in got] == \
        [("t/a", 1, "first"), ("t/b", 2, "second"), ("t/c", 2, "second")]   # t/b replaced in place
    assert got[1]["config"] == {"k": 4}
    assert sorted(harness.load(tmp_path, quick=False)) == ["t/a", "t/b", "t/c", "u/x"]


def test_a_measured_value_is_never_replaced_by_the_papers():
    rec = harness.record(Cell("x", {"a": 1}, (), {"paper": 0.9, "mean": 0.0}), {"mean": 0.4}, records.provenance("c"))
    assert rec["metrics"] == {"mean": 0.4, "paper": 0.9}


def test_load_and_metrics_of_follow_the_cells_and_name_a_missing_one(tmp_path):
    harness.run_cells(_cells(), lambda c: {"v": len(c.id)}, tmp_path, quick=False, log=lambda *a: None)
    recs = harness.load(tmp_path, quick=False)
    assert sorted(recs) == ["t/a", "t/b"] and harness.load(tmp_path, quick=True) == {}
    assert harness.load(tmp_path, False, prefix="t/b").keys() == {"t/b"}
    rows = harness.metrics_of(recs, list(reversed(_cells())))
    assert rows == [{"v": 3}, {"v": 3, "paper": 0.5}]
    with pytest.raises(ValueError, match="no record for cell 't/c'"):
        harness.metrics_of(recs, [Cell("t/c", {})])


def test_a_malformed_record_is_named(tmp_path):
    harness.run_cells(_cells(), lambda c: {"v": 1}, tmp_path, quick=False, log=lambda *a: None)
    bad = tmp_path / "records" / "t_full.jsonl"
    bad.write_text(bad.read_text() + json.dumps({"schema": "fgl_jax.record/1", "id": "t/c"}) + "\n")
    with pytest.raises(records.RecordError, match=r"t_full\.jsonl, line 3: field 'kind': missing"):
        harness.load(tmp_path, quick=False)


def test_write_table_closes_with_where_the_numbers_come_from(tmp_path):
    recs = harness.run_cells(_cells(), lambda c: {"v": 1}, tmp_path, quick=False, command="run-it", log=lambda *a: None)
    path = harness.write_table(tmp_path, "t", "# T\n\n| a |\n", recs)
    text = path.read_text()
    assert text.startswith("# T\n\n| a |\n\nRendered from 2 records (fgl_jax.record/1) under `records/`, written by "
                           "`run-it` at commit ")


def test_a_converted_record_keeps_its_numbers_and_original_provenance(tmp_path):
    original = {"command": "python old.py", "finished": "2026-01-01 00:00:00 UTC", "wall_seconds": 12.5,
                "environment": {"jax": "0.1"}}
    rec = harness.converted(Cell("t/a", _Cfg(), (0,)), {"mean": 0.8755336999893188}, original, "old.json")
    assert rec["metrics"] == {"mean": 0.8755336999893188}
    prov = rec["provenance"]
    assert (prov["command"], prov["finished"], prov["commit"], prov["versions"], prov["machine"]) == \
        ("python old.py", "2026-01-01 00:00:00 UTC", None, None, None)      # unknown: null, not invented
    assert prov["original"] == original and prov["converted_from"] == "old.json"
    assert harness.write_converted(tmp_path, False, [rec]) == 1
    (back,) = records.read_lines(tmp_path / "records" / "t_full.jsonl")
    assert back["metrics"]["mean"] == 0.8755336999893188  # the float survives the JSON round trip exactly
    md = harness.write_table(tmp_path, "t", "x", [back]).read_text()
    assert "commit not recorded" in md and "converted from `old.json`" in md


def test_committed_hifgl_records_are_valid_and_hold_every_full_cell():
    """The committed full-run results of HiFGL are records of exactly the reproduction's cells."""
    from experiments.hifgl import baselines, code_options, paper
    recs = harness.load(harness.RESULTS / "hifgl", quick=False)
    plan = paper.Plan.make(False)
    cells = (paper.main_cells(plan) + paper.table6_cells(plan) + baselines.row_cells(False)
             + baselines.sensitivity_cells(False) + code_options.option_cells())
    assert sorted(recs) == sorted(c.id for c in cells)
    for c in cells:
        assert recs[c.id]["seeds"] == list(c.seeds)
    # one number checked by hand against the committed table (hifgl.md, Table 3, Cora GCN: 0.8755 ± 0.0118)
    m = recs["hifgl/table3/cora-gcn"]["metrics"]
    assert (round(m["mean"], 4), round(m["std"], 4), m["paper"]) == (0.8755, 0.0118, 0.8555)


def test_committed_fedhgl_records_hold_every_full_cell_and_render_the_committed_tables(tmp_path):
    """FedHGL's committed results are records of exactly the reproduction's cells, and results(_quick).md
    are their rendering (the tables hold no number the records do not)."""
    import shutil
    from experiments.fedhgl import paper
    folder = harness.RESULTS / "fedhgl"
    recs = harness.load(folder, quick=False)
    assert sorted(recs) == sorted(c.id for c in paper.cells(paper.Plan.make(False)))
    # one number checked by hand against the paper's Table III and the committed table (coraca K=3 FedHGL)
    m = recs["fedhgl/main/coraca/k3/fedhgl"]["metrics"]
    assert (round(m["mean"], 4), round(m["std"], 4), m["paper"], len(m["runs"])) == (0.5904, 0.0113, 0.5831, 5)
    assert recs["fedhgl/main/facebook/k3/fedhgl"]["seeds"] == [0, 1, 2]      # the run used 3 Facebook seeds
    shutil.copytree(folder / "records", tmp_path / "records")
    for quick in (False, True):
        made = paper.render_records(tmp_path, paper.Plan.make(quick), quick)
        assert made.read_text() == (folder / made.name).read_text(), made.name


def test_committed_fedhgn_records_hold_every_full_cell_and_render_the_committed_tables(tmp_path):
    """FedHGN's committed results are records of exactly the reproduction's cells, with their own
    seeds, and results(_quick).md are their rendering (gap notes included)."""
    import shutil
    from experiments.fedhgn import paper
    folder = harness.RESULTS / "fedhgn"
    recs = harness.load(folder, quick=False)
    assert sorted(recs) == sorted(c.id for c in paper.cells(paper.Plan.make(False)))
    # numbers checked by hand against the committed table before the move (results.md, 2026-11-22)
    m = recs["fedhgn/main/aifb/RE/k3/fedhgn"]["metrics"]
    assert (round(m["mean"], 2), round(m["std"], 2), m["paper"], recs["fedhgn/main/aifb/RE/k3/fedhgn"]["seeds"]) == \
        (75.00, 2.51, 81.87, [1000, 2000, 3000, 4000, 5000])
    m = recs["fedhgn/ablation/k10/fedavg"]          # Table 4's FedAvg at K=10 came from a 3-seed run
    assert (round(m["metrics"]["mean"], 2), m["seeds"]) == (65.64, [1000, 2000, 3000])
    assert round(recs["fedhgn/floor/aifb/RE/k3"]["metrics"]["majority"], 2) == 40.38
    assert recs["fedhgn/sweep_lambda/RE/lambda50"]["metrics"]["diverged_seeds"] == 2
    prov = recs["fedhgn/main/aifb/RE/k3/fedhgn"]["provenance"]
    assert prov["converted_from"] == "results_aifb.json" and "--stem results_aifb" in prov["original"]["command"]
    # the gap notes the page printed are kept on their cells, and the renderer draws the same ones
    res = paper.results_of(recs, paper.Plan.make(False))
    kept = {paper._key(c)[1]: recs[c.id]["metrics"].get("gap_note") for c in paper.main_cells(paper.Plan.make(False))
            if "/main/" in c.id}
    assert {k: v for k, v in kept.items() if v} == paper.gap_notes(res, folder) and len(paper.gap_notes(res, folder)) == 17
    for name in ("records", "results_official_split.json", "results_official_es.json",
                 "results_official_init_RE3.json", "results_init_distributions.json", "official_code.md"):
        (shutil.copytree if name == "records" else shutil.copy)(folder / name, tmp_path / name)
    for quick in (False, True):
        made = paper.render_records(tmp_path, paper.Plan.make(quick), quick)
        assert made.read_text() == (folder / made.name).read_text(), made.name


def test_fedhgn_cells_equal_to_an_earlier_one_reuse_its_runs(monkeypatch):
    """The ablation's FedAvg / FedHGN rows and the sweeps' default points are the main table's configs:
    measured once per process, not once per table."""
    from experiments.fedhgn import paper
    runs = []
    monkeypatch.setattr(paper, "run_cell", lambda cfg, seeds: runs.append((cfg, seeds)) or {
        "mean": float(len(runs)), "std": 0.0, "per_seed": [0.0] * len(seeds), "rounds_run": [], "wall_s": 0.0})
    plan = paper.Plan.make(False, parts=("main", "sweeps"), datasets=("aifb",), ks=(3,), methods=("fedhgn",),
                           seeds=2, b_grid=(5, 20), lambda_grid=(0.5,), sweep_splits=("RE",))
    run = paper.measure(log=lambda *a: None)
    got = {c.id: run(c)["mean"] for c in paper.cells(plan) if "/floor/" not in c.id}
    main = got["fedhgn/main/aifb/RE/k3/fedhgn"]
    assert got["fedhgn/sweep_B/RE/B20"] == got["fedhgn/sweep_lambda/RE/lambda0.5"] == main
    assert got["fedhgn/round1/RE/skip/lambda0.5"] == main
    assert got["fedhgn/sweep_B/RE/B5"] != main and got["fedhgn/round1/RE/zeros/lambda0.5"] != main
    # main RE + RET, B=5, then zeros / code_quirk at 0.5 and 5 and skip at 5: each distinct config run once
    from fgl_jax import schema
    assert len(runs) == len({(json.dumps(schema.to_dict(c), sort_keys=True), s) for c, s in runs}) == 8
    assert all(s == (1000, 2000) for _, s in runs)


def test_fgl_jax_reproduce_runs_fedhgn_from_the_checkouts_experiments():
    """`fgl-jax reproduce fedhgn` uses experiments/fedhgn/paper.py (the harness), not a package module."""
    from fgl_jax import cli, registry
    assert cli.paper_module(registry.entry("system", "fedhgn")) == "experiments.fedhgn.paper"
    assert cli.paper_module(registry.entry("system", "fedhgl")) == "experiments.fedhgl.paper"


def test_committed_lumos_records_hold_every_full_cell_and_render_the_committed_tables(tmp_path):
    """Lumos's committed results are records of exactly the cells of the options the full run used, and
    results(_quick).md are their rendering (the tables hold no number the records do not)."""
    import shutil
    from experiments.lumos import paper
    folder = harness.RESULTS / "lumos"
    recs = harness.load(folder, quick=False, prefix="lumos/")
    # the committed full run: --epochs 100 --seeds 3 --aux-seeds 2 --facebook-aux-seeds 1 --no-gat-on
    # --facebook-gat-seeds 1 --facebook-gat-tasks node (its command, kept under provenance.original), then
    # (issue 49) the Facebook node GCN headline cells re-run at the paper's 300 epochs with --only, and the
    # authors-code encoder rows on the two Facebook node headline backbones only (GCN 3 seeds, GAT 2)
    opts = paper.Options(rounds=100, seeds=3, aux_seeds=2, facebook_aux_seeds=1, no_gat_on=(), facebook_gat_seeds=1,
                         facebook_gat_tasks=("node",))
    cells = [c for c in paper.cells(False, opts) if not c.id.endswith("/lumos_authors")]
    authors = {"lumos/FB/node/gcn/lumos_authors": [0, 1, 2], "lumos/FB/node/gat/lumos_authors": [0, 1]}
    assert sorted(recs) == sorted([c.id for c in cells] + list(authors))
    rerun = {r: 300 for r in recs if r.startswith("lumos/FB/node/gcn/") and r.rsplit("/", 1)[1] in
             ("lumos", "lumos_mmse", "central", "naive", "lumos_authors")}
    # and the Facebook node GAT headline pair at 300 epochs, both over 3 seeds, and its authors-code row
    rerun.update({"lumos/FB/node/gat/lumos": 300, "lumos/FB/node/gat/central": 300,
                  "lumos/FB/node/gat/lumos_authors": 300})
    seeds = {"lumos/FB/node/gat/central": [0, 1, 2], "lumos/FB/node/gat/lumos": [0, 1, 2]}
    for c in cells:
        assert recs[c.id]["seeds"] == seeds.get(c.id, list(c.seeds)), c.id
        assert recs[c.id]["config"].get("rounds", 100) == rerun.get(c.id, 100), c.id
    for r in rerun:
        assert "--facebook-rounds 300" in recs[r]["provenance"]["command"], r
    for a, a_seeds in authors.items():
        assert recs[a]["seeds"] == a_seeds and recs[a]["config"]["encoder"] == "authors-code", a
    assert "--facebook-gat-tasks node" in recs["lumos/FB/node/gat/lumos"]["provenance"]["command"]
    # numbers checked by hand against the committed tables before the move (results.md: FB link GCN Lumos
    # 0.6952 ± 0.1736, paper gap vs central -7.13; LastFM node GCN eps = 0.5: 0.2075; Fig. 7 Facebook: 39)
    m = recs["lumos/FB/link/gcn/lumos"]["metrics"]
    assert (round(m["test"], 4), round(m["std"], 4), len(m["values"]), m["paper_vs_central"]) == (0.6952, 0.1736, 3,
                                                                                                  -7.13)
    assert round(recs["lumos/LFM/node/gcn/eps"]["metrics"]["points"]["0.5"]["test"], 4) == 0.2075
    assert recs["lumos/workload/facebook"]["metrics"]["mcmc_long_max"] == 39
    assert "gap_note" in recs["lumos/FB/link/gcn/nott"]["metrics"]
    shutil.copytree(folder / "records", tmp_path / "records")
    for quick in (False, True):
        made = paper.render_records(tmp_path, quick)
        assert made.read_text() == (folder / made.name).read_text(), made.name


def test_committed_lumos_studies_are_records_that_render_the_committed_pages(tmp_path):
    """The noise study and the eps = inf diagnostic (experiments/lumos/) are records too; their pages are
    rendered from them."""
    import shutil
    from experiments.lumos import diagnostics, noise_study
    folder = harness.RESULTS / "lumos"
    study = harness.load(folder, quick=False, prefix="noise_study/")
    assert len(study) == 14 and set(study) <= {c.id for c in noise_study.cells()}
    # by hand from the committed noise_study.md: link eps2 0.4597 at best epoch 69; node central_gcn 0.8823
    assert round(study["noise_study/link/eps2"]["metrics"]["best"]["best_test"], 4) == 0.4597
    assert study["noise_study/link/eps2"]["metrics"]["best"]["best_round"] == 69
    assert round(study["noise_study/node/central_gcn"]["metrics"]["best"]["best_test"], 4) == 0.8823
    diag = harness.load(folder, quick=False, prefix="diagnostics/")
    assert sorted(diag) == ["diagnostics/link", "diagnostics/node"]
    assert diag["diagnostics/node"]["config"]["epsilon"] == "inf"      # eps = inf, kept as JSON text
    shutil.copytree(folder / "records", tmp_path / "records")
    for module in (noise_study, diagnostics):
        made = module.render_records(tmp_path)
        assert made.read_text() == (folder / made.name).read_text(), made.name


def test_the_package_holds_no_paper_table_code_and_reproduce_uses_the_one_harness():
    """Issue 46: every system's reproduction is `experiments/<system>/paper.py` on the harness; the
    package ships none (no fgl_jax/systems/*/paper*.py, and `fgl-jax reproduce` does not look there)."""
    from pathlib import Path

    from fgl_jax import registry
    from fgl_jax.cli import paper_module
    root = Path(__file__).resolve().parents[1]
    assert not sorted((root / "fgl_jax").rglob("paper*.py"))
    systems = {e.name: paper_module(e) for e in registry.entries("system")}
    for name in ("hifgl", "lumos", "fedhgn", "fedgc", "fedhgl"):
        assert systems[name] == f"experiments.{name}.paper", (name, systems[name])
        assert (root / "experiments" / name / "paper.py").is_file()


def test_cell_run_options_start_continue_or_redo_a_cells_run_dir(tmp_path):
    assert harness.cell_run_options(None, "t/a/s0") == {}
    fresh = harness.cell_run_options(tmp_path, "t/a/s0")
    assert fresh == {"out": tmp_path / "t" / "a" / "s0", "resume": False, "overwrite": False}
    (tmp_path / "t" / "a" / "s0" / "checkpoints").mkdir(parents=True)   # an interrupted run
    assert harness.cell_run_options(tmp_path, "t/a/s0")["resume"] is True
    (tmp_path / "t" / "a" / "s0" / "summary.json").write_text("{}")      # finished, but no record written
    done = harness.cell_run_options(tmp_path, "t/a/s0")
    assert done["resume"] is False and done["overwrite"] is True
