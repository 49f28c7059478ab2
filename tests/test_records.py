"""Records (`fgl_jax.records`, issue 46): the writer/reader round trip, one clear line naming the file
and field for a malformed record, parts kept across partial runs, the benchmark harness's writer, and
that every table committed in the docs equals what benchmarks/render.py makes of the committed records."""
from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from fgl_jax import records

ROOT = Path(__file__).resolve().parents[1]


def _module(name: str, path: Path):
    sys.path.insert(0, str(path.parent))
    try:
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module        # dataclasses look their module up there
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(path.parent))
    return module


def _record(**over) -> dict:
    rec = {"schema": "fgl_jax.record/1", "id": "toy", "kind": "benchmark", "config": {"rounds": 3},
           "seeds": [0, 1], "metrics": {"ms_per_round": 1.5},
           "provenance": {"command": "python toy.py", "started": None, "finished": "2026-01-01 00:00:00 UTC",
                          "commit": None, "dirty": None, "versions": None, "machine": None}}
    rec.update(over)
    return rec


def test_round_trip_keeps_every_value_and_provenance_is_complete(tmp_path):
    import numpy as np
    metrics = {"ms": np.float32(2.5), "rows": [{"clients": np.int64(10), "acc": [0.5, 0.25]}], "name": "x"}
    rec = records.make("toy", metrics, config={"rounds": 3, "lr": 0.01}, seeds=(0, 1, 2), title="a toy")
    path = records.write(tmp_path / "toy.json", rec)
    back = records.read(path)
    assert back == json.loads(json.dumps(rec))
    # numpy scalars became plain JSON numbers with the same values
    assert back["metrics"] == {"ms": 2.5, "rows": [{"clients": 10, "acc": [0.5, 0.25]}], "name": "x"}
    assert back["seeds"] == [0, 1, 2] and back["config"] == {"rounds": 3, "lr": 0.01}
    prov = back["provenance"]
    assert set(records.PROVENANCE_KEYS) <= set(prov)
    # taken from this checkout: the commit git itself reports
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    assert prov["commit"] == (head or None) and isinstance(prov["dirty"], (bool, type(None)))
    assert prov["versions"]["python"] == ".".join(map(str, sys.version_info[:3]))
    assert prov["machine"]["cores"] and prov["finished"].endswith("UTC")
    assert not list(tmp_path.glob("*.tmp"))          # the temporary file was renamed away


@pytest.mark.parametrize("change, field", [
    ({"schema": "other/1"}, "schema"),
    ({"kind": "diary"}, "kind"),
    ({"metrics": {}}, "metrics"),
    ({"metrics": [1, 2]}, "metrics"),
    ({"seeds": [0, "1"]}, "seeds[1]"),
    ({"id": ""}, "id"),
])
def test_a_malformed_record_names_the_file_and_the_field(tmp_path, change, field):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(_record(**change)))
    with pytest.raises(records.RecordError) as err:
        records.read(path)
    msg = str(err.value)
    assert str(path) in msg and f"field '{field}'" in msg and "\n" not in msg


def test_missing_fields_and_provenance_keys_are_named(tmp_path):
    rec = _record()
    del rec["config"]
    (tmp_path / "a.json").write_text(json.dumps(rec))
    with pytest.raises(records.RecordError, match=r"a\.json: field 'config': missing"):
        records.read(tmp_path / "a.json")
    rec = _record()
    del rec["provenance"]["commit"]
    (tmp_path / "b.json").write_text(json.dumps(rec))
    with pytest.raises(records.RecordError, match=r"b\.json: field 'provenance\.commit': missing"):
        records.read(tmp_path / "b.json")
    rec = _record()
    rec["provenance"]["dirty"] = "yes"
    (tmp_path / "c.json").write_text(json.dumps(rec))
    with pytest.raises(records.RecordError, match=r"c\.json: field 'provenance\.dirty'"):
        records.read(tmp_path / "c.json")
    (tmp_path / "d.json").write_text("{not json")
    with pytest.raises(records.RecordError, match=r"d\.json: not JSON"):
        records.read(tmp_path / "d.json")
    with pytest.raises(records.RecordError, match=r"absent\.json: cannot be read"):
        records.read(tmp_path / "absent.json")


def test_write_refuses_an_invalid_record_and_leaves_the_current_one(tmp_path):
    path = records.write(tmp_path / "r.json", _record())
    before = path.read_text()
    with pytest.raises(records.RecordError, match="field 'kind'"):
        records.write(path, _record(kind="nope"))
    assert path.read_text() == before


def test_two_files_with_one_id_are_an_error(tmp_path):
    records.write(tmp_path / "a.json", _record())
    records.write(tmp_path / "b.json", _record())
    with pytest.raises(records.RecordError, match="also the id of"):
        records.read_all(tmp_path.glob("*.json"))


def test_write_parts_replaces_the_parts_run_and_keeps_the_others_with_their_provenance(tmp_path):
    path = tmp_path / "speed.json"
    first = _record(metrics={"sections": {"a": {"ms": 1.0}, "b": {"ms": 2.0}}})
    records.write_parts(path, first, "sections")
    second = _record(metrics={"sections": {"b": {"ms": 3.0}}, "targets": {"ms": 1}})
    second["provenance"] = dict(second["provenance"], command="python speed.py --only b")
    records.write_parts(path, second, "sections")
    got = records.read(path)["metrics"]
    assert got["sections"]["a"]["ms"] == 1.0 and got["sections"]["b"]["ms"] == 3.0
    assert got["sections"]["a"]["provenance"]["command"] == "python toy.py"
    assert got["sections"]["b"]["provenance"]["command"] == "python speed.py --only b"
    assert got["targets"] == {"ms": 1}
    # a file that is not a record is not overwritten
    path.write_text("[]")
    with pytest.raises(records.RecordError):
        records.write_parts(path, second, "sections")
    assert path.read_text() == "[]"


def test_a_collection_is_one_record_per_line_and_a_rewrite_keeps_the_other_lines(tmp_path):
    path = tmp_path / "t_full.jsonl"
    records.write_lines(path, [_record(id="a"), _record(id="b", metrics={"x": 1})])
    lines = path.read_text().splitlines()
    assert len(lines) == 2 and json.loads(lines[1])["metrics"] == {"x": 1}   # one JSON object per line
    later = _record(id="a", metrics={"x": 2})
    later["provenance"] = dict(later["provenance"], command="python toy.py --again")
    records.write_lines(path, [later, _record(id="c")])
    got = records.read_lines(path)
    assert [r["id"] for r in got] == ["a", "b", "c"]                        # a replaced in place, c appended
    assert got[0]["metrics"] == {"x": 2} and got[0]["provenance"]["command"] == "python toy.py --again"
    assert got[1]["metrics"] == {"x": 1} and got[1]["provenance"]["command"] == "python toy.py"
    assert records.read_all([path]).keys() == {"a", "b", "c"}


def test_a_bad_collection_line_is_named_by_file_line_and_field(tmp_path):
    path = tmp_path / "t.jsonl"
    good = json.dumps(_record(id="a"))
    path.write_text(good + "\n\n" + json.dumps(_record(id="b", seeds=[0, "1"])) + "\n")
    with pytest.raises(records.RecordError, match=r"t\.jsonl, line 3: field 'seeds\[1\]': must be an integer"):
        records.read_lines(path)
    path.write_text(good + "\n{oops\n")
    with pytest.raises(records.RecordError, match=r"t\.jsonl, line 2: not JSON"):
        records.read_lines(path)
    path.write_text(good + "\n" + good + "\n")
    with pytest.raises(records.RecordError, match=r"t\.jsonl, line 2: field 'id': 'a' is also the id of line 1"):
        records.read_lines(path)
    # a file that is not a valid collection is not overwritten; nor is anything written for a bad new record
    before = path.read_text()
    with pytest.raises(records.RecordError, match="line 2"):
        records.write_lines(path, [_record(id="z")])
    ok = tmp_path / "ok.jsonl"
    records.write_lines(ok, [_record(id="a")])
    before = ok.read_text()
    with pytest.raises(records.RecordError, match=r"ok\.jsonl \(new record 1\): field 'kind'"):
        records.write_lines(ok, [_record(id="b"), _record(id="c", kind="nope")])
    with pytest.raises(records.RecordError, match="given twice"):
        records.write_lines(ok, [_record(id="b"), _record(id="b")])
    assert ok.read_text() == before


def test_one_id_in_a_collection_and_in_a_file_is_an_error_naming_both(tmp_path):
    records.write_lines(tmp_path / "c.jsonl", [_record(id="x"), _record(id="toy")])
    records.write(tmp_path / "d.json", _record())
    with pytest.raises(records.RecordError, match=r"d\.json: field 'id': 'toy' is also the id of .*c\.jsonl, line 2"):
        records.read_all([tmp_path / "c.jsonl", tmp_path / "d.json"])


def test_the_harness_moves_the_run_description_into_the_provenance(tmp_path):
    harness = _module("fgl_jax_bench_harness", ROOT / "benchmarks" / "harness.py")
    payload = {"rows": [{"ms": 1.25}], "command": "python benchmarks/bench_toy.py --quick",
               "machine": {"cpu": "test cpu"}, "date": "yesterday"}
    path = harness.write_record(tmp_path / "toy_quick.json", payload, config={"quick": True}, seeds=[0])
    rec = records.read(path)
    assert rec["id"] == "toy_quick" and rec["kind"] == "benchmark"
    assert rec["metrics"] == {"rows": [{"ms": 1.25}]}
    assert rec["provenance"]["command"] == "python benchmarks/bench_toy.py --quick"
    assert rec["provenance"]["environment"] == {"cpu": "test cpu"}
    assert rec["provenance"]["started"] is not None


# ---------------------------------------------------------------------------------------------------
# the rendered tables
# ---------------------------------------------------------------------------------------------------

def _render():
    return _module("fgl_jax_bench_render", ROOT / "benchmarks" / "render.py")


def test_every_committed_benchmark_file_is_a_valid_record():
    recs = _render().load()
    assert len(recs) >= 20
    # one current record per benchmark: no numbered or per-session copies beside it
    stems = [Path(p).stem for p in recs]
    assert not [s for s in stems if s.rsplit("_", 1)[-1] in {f"s{i}" for i in range(30)} | {"run1", "run2"}]


def test_the_committed_tables_equal_the_rendering_of_the_committed_records():
    render = _render()
    assert render.stale() == [], "run: python benchmarks/render.py"
    for page in render.PAGES:  # every page has at least one table, so the check above checks something
        assert "<!-- records: " in (ROOT / page).read_text(), page


def test_openfgl_table_rows_come_from_the_cells_and_reused_runs_drop_the_wall_ratio():
    render = _render()
    prov = _record()["provenance"]
    row = lambda ds, algo, acc: {"dataset": ds, "algorithm": algo, "seeds": 3, "fgl_jax acc %": acc,
                                 "OpenFGL acc %": "70.00 ± 0.10", "diff (pts)": "+0.00", "speed-up": "6.0x",
                                 "cpu speed-up": "5.5x"}
    cells = {"cora/fedavg": {"row": row("cora", "fedavg / fedavg", "11.11 ± 0.00"),
                             "runs": [{"openfgl": {"reused_from": ["o.jsonl"]}}], "provenance": prov},
             "citeseer/fggp": {"row": row("citeseer", "fggp / fggp", "33.33 ± 0.00"),
                               "runs": [{"openfgl": {}}], "provenance": prov}}
    table = render.openfgl({render.OPENFGL: _record(metrics={"cells": cells})})
    lines = table.splitlines()
    assert len(lines) == 4
    fedavg = next(x for x in lines if "11.11" in x)
    assert "- (OpenFGL reused)" in fedavg and "6.0x" not in fedavg and "5.5x" in fedavg
    fggp = next(x for x in lines if "33.33" in x)
    assert "6.0x" in fggp and "2026-01-01 00:00" in fggp


def test_an_unknown_table_or_a_missing_record_is_named():
    render = _render()
    with pytest.raises(render.RenderError, match=r"page\.md: unknown table <!-- records: nope -->"):
        render.render_page("<!-- records: nope -->\n<!-- /records: nope -->", {}, "page.md")
    with pytest.raises(render.RenderError, match="needs the record .*whole_process.json"):
        render.render_page("<!-- records: whole_process -->\nold\n<!-- /records: whole_process -->", {}, "p.md")
