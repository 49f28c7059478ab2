"""benchmarks/bench_growth.py (issue 53 item 4): the plan of points, the limited launcher that turns a
point too slow or too large into "skipped", the committed record's schema, its table, and (slow) one
tiny point end to end. Expected values are written by hand here, not taken from the script."""
from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from fgl_jax import records

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "benchmarks"


def _module(name: str, path: Path):
    sys.path.insert(0, str(path.parent))
    try:
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(path.parent))
    return module


@pytest.fixture(scope="module")
def growth():
    return _module("fgl_jax_bench_growth", BENCH / "bench_growth.py")


@pytest.fixture(scope="module")
def harness():
    return _module("fgl_jax_bench_harness", BENCH / "harness.py")


def test_plan_takes_every_series_small_end_first_and_gives_hifgl_its_own_sizes(growth):
    pts = growth.plan(("nodes", "clients"), ("fedavg", "hifgl"), nodes=(10, 20), clients=(3, 30))
    got = [(p["axis"], p["algorithm"], p["nodes"], p["clients"]) for p in pts]
    assert got == [("nodes", "fedavg", 10, 100), ("nodes", "hifgl", 10, 10),
                   ("clients", "fedavg", 100_000, 3), ("clients", "hifgl", 10_000, 3),
                   ("nodes", "fedavg", 20, 100), ("nodes", "hifgl", 20, 10),
                   ("clients", "fedavg", 100_000, 30), ("clients", "hifgl", 10_000, 30)]
    assert not any(p["sampled"] for p in pts)
    sampled = growth.plan(("nodes", "clients"), ("fedavg", "fedgta"), nodes=(10,), clients=(3,), sampled=True)
    # only FedAvg's nodes axis samples (FedGTA has no sampled mode; small clients have nothing to sample)
    assert [p["sampled"] for p in sampled] == [True, False, False, False]


def test_client_chunk_is_a_tenth_of_the_clients_at_least_ten(growth):
    assert [growth.client_chunk(k) for k in (5, 10, 100, 1000, 10_000)] == [5, 10, 10, 100, 1000]


def test_graph_spec_keeps_products_shape(growth):
    spec = growth.graph_spec(300_000)
    assert spec["num_blocks"] == 300 and spec["num_classes"] == 47 and spec["num_features"] == 100
    assert spec["avg_degree"] == pytest.approx(50.517, abs=1e-3)   # 2 x 61,859,140 / 2,449,029
    assert growth.graph_spec(10_000)["num_blocks"] == 47             # a class needs a block


def test_launch_limited_returns_output_and_the_childs_own_peak_rss(harness):
    """The launcher runs in a small parent of its own, as bench_growth's driver is: Linux's ru_maxrss of
    a child counts the launching process's resident set up to the exec, so under a large parent (a
    pytest worker holding compiled programs) the child's figure would be the parent's."""
    driver = ("import sys; sys.path.insert(0, sys.argv[1]); import harness; "
              # 200 MB touched by the child (bytearray is zero-filled: every page is written)
              "r = harness.launch_limited([sys.executable, '-c', \"b = bytearray(200 * 2**20); print('done')\"], "
              "budget_s=60, max_rss_mb=10_000); "
              "print(r.stopped, r.returncode, r.stdout.strip(), r.peak_rss_mb)")
    out = subprocess.run([sys.executable, "-c", driver, str(BENCH)], capture_output=True, text=True, check=True)
    stopped, code, printed, peak = out.stdout.split()
    assert (stopped, code, printed) == ("None", "0", "done")
    assert 200 <= float(peak) < 400


def test_launch_limited_stops_a_point_past_its_time_or_memory(harness):
    slow = harness.launch_limited([sys.executable, "-c", "import time; print('started', flush=True); time.sleep(60)"],
                                  budget_s=2, max_rss_mb=10_000, poll_s=0.1)
    assert slow.stopped == "budget" and slow.returncode < 0 and slow.wall_s < 30
    assert "started" in slow.stdout                     # what it printed before the kill is kept
    big = harness.launch_limited([sys.executable, "-c", "import time; b = bytearray(400 * 2**20); time.sleep(60)"],
                                 budget_s=60, max_rss_mb=150, poll_s=0.1)
    assert big.stopped == "memory" and big.wall_s < 30
    failed = harness.launch_limited([sys.executable, "-c", "raise SystemExit('bad input: x')"], budget_s=60,
                                    max_rss_mb=10_000)
    assert failed.stopped is None and failed.returncode == 1 and "bad input: x" in failed.stderr


POINT_KEYS = {"axis", "algorithm", "nodes", "clients", "sampled"}
MEASURED = ("prepare_s", "compile_s", "s_per_round", "cpu_s_per_round", "peak_rss_mb")


def _check_schema(rec: dict) -> None:
    points = rec["metrics"]["points"]
    assert points
    for name, p in points.items():
        assert POINT_KEYS <= set(p), name
        assert name == f"{p['axis']}/{p['algorithm']}/{p['nodes']}/{p['clients']}"
        assert p["axis"] in ("nodes", "clients") and p["algorithm"] in ("fedavg", "fedgta", "hifgl")
        if "skipped" in p:
            assert isinstance(p["skipped"], str) and p["skipped"], name
        else:
            for k in MEASURED:
                assert isinstance(p[k], (int, float)) and p[k] > 0, (name, k)
            assert len(p["round_s"]) == p["config"]["rounds"], name
        assert "provenance" in p, name


def test_the_committed_record_holds_every_planned_point_measured_or_skipped(growth):
    path = BENCH / "results" / "growth.json"
    rec = records.read(path)
    _check_schema(rec)
    planned = {growth.part_name(p) for p in growth.plan(("nodes", "clients"), growth.ALGORITHMS)}
    assert planned <= set(rec["metrics"]["points"]), sorted(planned - set(rec["metrics"]["points"]))
    measured = [p for p in rec["metrics"]["points"].values() if "skipped" not in p]
    assert measured  # the record is not all skips


def test_the_growth_table_shows_a_skipped_point_and_its_reason():
    render = _module("fgl_jax_bench_render", BENCH / "render.py")
    prov = {"command": "python benchmarks/bench_growth.py", "finished": "2026-01-01 00:00:00 UTC"}
    ok = {"axis": "nodes", "algorithm": "fedavg", "nodes": 10_000, "clients": 100, "sampled": False,
          "s_per_round": 1.25, "cpu_s_per_round": 0.5, "prepare_s": 3.0, "generate_s": 1.0, "prepare_cpu_s": 2.5,
          "compile_s": 7.0,
          "peak_rss_mb": 900.0, "loadavg_at_start": [4.0, 3.0, 2.0], "provenance": prov}
    skipped = {"axis": "clients", "algorithm": "hifgl", "nodes": 10_000, "clients": 10_000, "sampled": False,
               "skipped": "exceeded --budget-s 600 s after prepare_s", "prepare_s": 30.0, "provenance": prov}
    rec = {"metrics": {"points": {"a": ok, "b": skipped}}, "provenance": prov}
    lines = render.growth({"benchmarks/results/growth.json": rec}).splitlines()
    row = next(x for x in lines if "| fedavg |" in x)
    assert "| 10,000 | 100 | full-batch | 1.25 | 0.5 | 3 (1) | 2.5 | 7 | 900 | 4 |" in row
    row = next(x for x in lines if "| hifgl |" in x)
    assert "skipped: exceeded --budget-s 600 s after prepare_s" in row and "| 30 (" not in row


@pytest.mark.slow
def test_one_tiny_point_end_to_end_writes_a_valid_record(tmp_path):
    out = tmp_path / "growth.json"
    proc = subprocess.run([sys.executable, str(BENCH / "bench_growth.py"), "--axis", "nodes", "--algorithms",
                           "fedavg", "--nodes", "3000", "--rounds", "2", "--budget-s", "300", "--out", str(out)],
                          capture_output=True, text=True, cwd=ROOT, env={**__import__("os").environ,
                                                                         "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0, proc.stderr[-2000:]
    rec = records.read(out)
    _check_schema(rec)
    (p,) = rec["metrics"]["points"].values()
    assert "skipped" not in p, p.get("skipped")
    assert (p["nodes"], p["clients"], p["config"]["client_chunk"]) == (3000, 100, 10)
    assert json.loads(json.dumps(rec["provenance"]))["command"].startswith("python benchmarks/bench_growth.py")


def test_the_cited_products_run_is_read_from_large_graphs_run_entry():
    headlines = _module("fgl_jax_bench_headlines", BENCH / "headlines.py")
    assert headlines.products_run({"rows": []}) is None            # no run recorded yet: nothing cited
    run = {"command": "fgl-jax run ...", "wall_s": 2400.0, "peak_rss_mb": 12_000.0, "load_avg_1min_at_start": 2.5,
           "timings": {"build_seconds": 540.0, "compile_seconds": 60.0, "run_seconds": 1500.0},
           "summary": {"rounds": 10, "rounds_run": 10}}
    c = headlines.products_run({"run": run})
    assert (c["nodes"], c["clients"], c["sampled"]) == (2_449_029, 100, True)
    assert (c["s_per_round"], c["prepare_s"], c["compile_s"], c["peak_rss_mb"]) == (150.0, 540.0, 60.0, 12_000.0)


def test_merge_copies_points_with_their_own_provenance(growth, tmp_path):
    def rec(points, command):
        prov = {"command": command, "started": None, "finished": "2026-01-01 00:00:00 UTC", "commit": None,
                "dirty": None, "versions": None, "machine": None}
        return {"schema": "fgl_jax.record/1", "id": "growth", "kind": "benchmark", "config": {}, "seeds": [],
                "metrics": {"points": {k: {**v, "provenance": prov} for k, v in points.items()}}, "provenance": prov}
    main, side = tmp_path / "growth.json", tmp_path / "side" / "growth.json"
    side.parent.mkdir()
    pt = lambda k, v: {"axis": "nodes", "algorithm": "fedavg", "nodes": 10 * k, "clients": 100, "sampled": False,
                       "s_per_round": v, "v": v}
    records.write(main, rec({"a": pt(1, 1), "b": pt(2, 2)}, "main run"))
    records.write(side, rec({"b": pt(2, 3), "c": pt(3, 4)}, "side run"))
    growth.merge(side, main)
    pts = records.read(main)["metrics"]["points"]
    assert {k: v["v"] for k, v in pts.items()} == {"a": 1, "b": 3, "c": 4}
    assert [pts[k]["provenance"]["command"] for k in "abc"] == ["main run", "side run", "side run"]


def test_a_point_not_run_takes_the_same_point_measured_on_the_other_axis(growth):
    measured = {"axis": "nodes", "algorithm": "fedgta", "nodes": 100_000, "clients": 100, "sampled": False,
                "s_per_round": 2.0}
    points = {"nodes/fedgta/100000/100": measured,
              "clients/fedgta/100000/100": {"axis": "clients", "algorithm": "fedgta", "nodes": 100_000,
                                            "clients": 100, "sampled": False, "skipped": "not run: the smaller ..."},
              "clients/fedgta/100000/1000": {"axis": "clients", "algorithm": "fedgta", "nodes": 100_000,
                                             "clients": 1000, "sampled": False, "skipped": "exceeded --budget-s 1 s"}}
    out = growth.fill_crossings(points)
    assert out["clients/fedgta/100000/100"] == {**measured, "axis": "clients", "same_as": "nodes/fedgta/100000/100"}
    assert out["clients/fedgta/100000/1000"] == points["clients/fedgta/100000/1000"]   # a real skip stays
    assert out["nodes/fedgta/100000/100"] == measured
