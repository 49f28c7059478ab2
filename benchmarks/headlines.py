"""Headline numbers of each benchmark record: record id -> a function of its `metrics` giving a few
labelled absolute numbers (the comparisons inside a benchmark stay in its record).

Shared by `run_all.py` (the suite's table) and `render.py` (the docs' table of the current records),
so the two never pick different numbers. A function returns None for a value its record lacks.
"""
from __future__ import annotations

from typing import Any, Callable, Optional


def fmt(v: Any) -> str:
    """A number for a table cell: 3 significant digits below 1000, whole numbers above."""
    if isinstance(v, float):
        return f"{v:.3g}" if abs(v) < 1000 else f"{v:.0f}"
    return "" if v is None else str(v)


def _get(d: Any, *path, default=None) -> Any:
    for p in path:
        try:
            d = d[p]
        except (KeyError, IndexError, TypeError):
            return default
    return d


def _rows(d, key="rows"):
    return d.get(key) or d.get("results") or []


def fedavg(d: dict) -> dict:
    row = next((r for r in _rows(d) if r.get("clients") == 10), {})
    return {"ms/round (10 clients)": row.get("ms_per_round_median"), "compile s": row.get("compile_s"),
            "whole CLI process s": d.get("cli_whole_process_s")}


def hifgl(d: dict) -> dict:
    rows = _rows(d)
    pick = lambda mode: next((r["ms_per_epoch_median"] for r in rows
                              if r.get("mode") == mode and r.get("T") == 1 and r.get("silos") == 5), None)
    return {"plain ms/epoch": pick("plain"), "field ms/epoch": pick("field"), "field / plain": d.get("secmp_over_plain")}


def lumos(d: dict) -> dict:
    r = _get(d, "results", 0, default={})
    return {"devices": r.get("devices"), "epoch s": r.get("epoch_median_s"), "epoch cpu s": r.get("epoch_cpu_median_s")}


def fedhgn(d: dict) -> dict:
    r = _get(d, "results", 0, default={})
    return {"ms/round": r.get("ms_per_round_median"), "compile s": r.get("compile_s")}


def fedhgl(d: dict) -> dict:
    r = _get(d, "results", 0, default={})
    return {"dataset": r.get("dataset"), "hc s": _get(r, "hc", "median_seconds"),
            "round ms": _get(r, "round", "median_ms")}


def fedgc(d: dict) -> dict:
    r = _get(d, "results", 0, default={})
    return {"rounds": r.get("rounds"), "s/round": r.get("median_round_s"), "end to end s": r.get("end_to_end_s")}


def lcc(d: dict) -> dict:
    first = _get(d, "results", 0, default={})
    return {f"{first.get('name', 'first row')} median ms": first.get("median_ms"),
            "checks bit-exact": all(v.get("bit_exact", True) for v in (d.get("checks") or {}).values())}


def participation(d: dict) -> dict:
    out = {}
    for r in d.get("rows") or []:
        k = r.get("local_steps")
        out[f"gathered ms/round (K={k})"] = _get(r, "ms_per_round_median", "gathered")
        out[f"gathered / full (K={k})"] = _get(r, "ratio_to_full", "gathered")
    return out


def scaling(d: dict) -> dict:
    rows = _rows(d)
    return {f"{r.get('nodes')} nodes x {r.get('clients')} clients ms/round": r.get("ms_per_round_median")
            for r in rows[:3] if isinstance(r, dict)}


def round_speed(d: dict) -> dict:
    r = d.get("sections", {})
    cpu = lambda bench, variant: _get(r, bench, "variants", variant, "cpu_ms_median")
    return {"FedAvg cpu ms/round": cpu("fedavg", "after"), "HiFGL field cpu ms/epoch": cpu("hifgl", "field_after"),
            "HiFGL field/plain (cpu)": _get(r, "hifgl", "field_over_plain_cpu", "after"),
            "Lumos cpu ms/epoch": cpu("lumos", "after")}


def adafgl_phases(d: dict) -> dict:
    rows = {r.get("variant"): r for r in d.get("rows", []) if isinstance(r, dict)}
    return {f"AdaFGL Cora {v} wall ms/round": rows.get(v, {}).get("mean wall ms")
            for v in ("one program", "two phase programs")}


def command_round(d: dict) -> dict:
    med = d.get("median_cpu_ms_per_round") or {}
    return {f"command round cpu ms ({k})": v for k, v in med.items()}


def sweep(d: dict) -> dict:
    return {k: d.get(k) for k in ("one_command_s", "separate_runs_s", "speedup") if k in d}


def cache(d: dict) -> dict:
    med = d.get("median") or {}
    return {f"{v} process s": _get(med, v, "wall_s") for v in ("a_no_cache", "b_jax_only", "c_both")}


def csbm(d: dict) -> dict:
    return {f"csbm {r.get('nodes')} nodes wall s": r.get("wall_s_median") for r in d.get("rows", []) if isinstance(r, dict)}


def faults(d: dict) -> dict:
    c = d.get("counts") or {}
    return {"identical / refusals / notices / tracebacks / silent": "{} / {} / {} / {} / {}".format(
        c.get("byte_identical_resumes"), c.get("one_line_refusals"), c.get("accepted_with_notice", 0),
        c.get("tracebacks"), c.get("silent_acceptances")),
        "as declared": f"{d.get('correct')}/{d.get('cases')}"}


def whole_process(d: dict) -> dict:
    s = d.get("summary") or {}
    return {f"{c} process ratio (fgl-jax / OpenFGL)": _get(s, c, "ratio") for c in ("cold", "warm")} | {
        f"{c} per-round speed-up": _get(s, c, "per_round_speedup") for c in ("cold", "warm")}


def all_suite(d: dict) -> dict:
    rows = d.get("benchmarks") or []
    return {"benchmarks ok": f"{sum(str(r.get('status', '')).startswith('ok') for r in rows)}/{len(rows)}",
            "total s": d.get("total_s")}


def fedgc_default_cell(d: dict) -> dict:
    r = _get(d, "results", 0, default={})
    return {"whole command wall s": r.get("wall_s"), "cpu s": r.get("cpu_s"), "test acc": r.get("test_acc")}


def fedgc_wide(d: dict) -> dict:
    return {f"prepare s ({k})": v for k, v in (d.get("median_prepare_s") or {}).items()}


def products_run(large_graph: dict) -> Optional[dict]:
    """The 2.4 M-node sampled FedAvg run that `bench_large_graph.py --products --run` records under its
    metrics' "run" key, in bench_growth's point fields (None while the record holds no run).

    bench_growth cites it instead of running it again: the plot and the table read it from
    large_graph.json at drawing time, so they show the current run.
    """
    run = large_graph.get("run")
    if not run:
        return None
    t, summary = run.get("timings") or {}, run.get("summary") or {}
    rounds = summary.get("rounds_run") or summary.get("rounds")
    return {"nodes": 2_449_029, "clients": 100, "algorithm": "fedavg", "sampled": True,
            "command": run.get("command"), "process_wall_s": run.get("wall_s"), "peak_rss_mb": run.get("peak_rss_mb"),
            "prepare_s": t.get("build_seconds"), "compile_s": t.get("compile_seconds"),
            "s_per_round": t["run_seconds"] / rounds if t.get("run_seconds") and rounds else None,
            "rounds": rounds, "loadavg_at_start": run.get("load_avg_1min_at_start")}


def growth(d: dict) -> dict:
    """bench_growth.py: the largest node count each algorithm measured on its nodes axis, and its s/round."""
    out = {}
    for alg in ("fedavg", "fedgta", "hifgl"):
        done = [r for r in (d.get("points") or {}).values()
                if r.get("axis") == "nodes" and r.get("algorithm") == alg and "skipped" not in r]
        big = max(done, key=lambda r: r["nodes"], default=None)
        out[f"{alg} largest nodes"] = None if big is None else big["nodes"]
        out[f"{alg} s/round there"] = None if big is None else big.get("s_per_round")
    return out


# record id -> its headline function (a record without one is listed without headline numbers)
HEADLINES: dict[str, Callable[[dict], dict]] = {
    "fedavg": fedavg, "fedavg_quick": fedavg, "hifgl": hifgl, "round_speed": round_speed,
    "round_speed_all": round_speed, "command_round": command_round, "adafgl_phases": adafgl_phases,
    "lumos": lumos, "fedhgn": fedhgn, "fedhgl": fedhgl, "fedgc": fedgc, "fedgc_default_cell": fedgc_default_cell,
    "lcc": lcc, "participation": participation, "scaling": scaling, "scaling_quick": scaling, "sweep": sweep,
    "csbm": csbm, "faults": faults, "whole_process": whole_process, "all_cpu": all_suite, "all_gpu": all_suite,
    "fedgc_wide": fedgc_wide, "cache": cache, "growth": growth}


def headline(record_id: str, metrics: dict) -> Optional[dict]:
    """The headline numbers of a record's metrics, or None when its id has no headline function."""
    fn = HEADLINES.get(record_id)
    return None if fn is None else fn(metrics)
