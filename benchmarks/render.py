"""The benchmark tables of the docs, rendered from the committed records (`fgl_jax.record/1`).

    python benchmarks/render.py            # rewrite every table in PAGES
    python benchmarks/render.py --check    # exit 1 (naming the page and table) where a committed table differs

A page marks a table with two lines, `<!-- records: NAME -->` and `<!-- /records: NAME -->`; what lies
between them is replaced by `TABLES[NAME]` of the records under benchmarks/results/ and
benchmarks/peers/. So a page shows a benchmark's numbers only through its current record, and
tests/test_records.py fails when a committed page and its records disagree. Reading validates
every record (`fgl_jax.records.read`): a malformed one stops the renderer with one line naming the
file and the field. Neither jax nor numpy is imported.
"""
from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import Callable, Optional

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))     # headlines.py
sys.path.insert(0, str(ROOT))     # fgl_jax, when run from elsewhere
import headlines  # noqa: E402
from headlines import fmt, headline  # noqa: E402

from fgl_jax import records  # noqa: E402

RECORD_DIRS = ("benchmarks/results", "benchmarks/peers")
# the pages that show benchmark numbers (repository paths)
PAGES = ("docs/algorithms.md", "docs/workflow.md", "benchmarks/results/README.md",
         "benchmarks/peers/openfgl/README.md", "docs/scaling.md")
OPENFGL = "benchmarks/peers/openfgl/results.json"
MARK = re.compile(r"(<!-- records: ([\w-]+) -->\n)(.*?)(<!-- /records: \2 -->)", re.S)


class RenderError(ValueError):
    """A page whose markers or records cannot be rendered (the message names the page and table)."""


def load(root: Path = ROOT) -> dict[str, dict]:
    """Repository path -> record, for every *.json under RECORD_DIRS (each validated)."""
    out = {}
    for d in RECORD_DIRS:
        for path in sorted((root / d).rglob("*.json")):
            out[path.relative_to(root).as_posix()] = records.read(path)
    return out


def _need(recs: dict, path: str, table: str) -> dict:
    if path not in recs:
        raise RenderError(f"table {table!r} needs the record {path}, which is missing")
    return recs[path]


def _when(prov: dict) -> str:
    """'finished, load x' of a provenance (what a reader needs to weigh a time on a shared machine)."""
    load = (prov.get("machine") or {}).get("loadavg")
    while isinstance(load, list) and load and isinstance(load[-1], list):  # [at start, at end]: the end
        load = load[-1]
    load = f", load {load[0]:.1f}" if isinstance(load, list) and load and isinstance(load[0], (int, float)) else ""
    # a converted record whose file did not say when it finished: the date its result was committed
    when = (prov.get("finished") or "")[:16]
    if not when:
        when = f"committed {prov['committed'][:16]}" if prov.get("committed") else "?"
    return f"{when}{load}"


def _table(header: list[str], rows: list[list]) -> str:
    cell = lambda v: ("" if v is None else str(v)).replace("|", "\\|").replace("\n", " ")
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell(v) for v in r) + " |" for r in rows]
    return "\n".join(lines)


def openfgl(recs: dict) -> str:
    """fgl_jax against OpenFGL, one row per (algorithm, dataset) cell of the comparison record. The
    wall speed-up is left out where the OpenFGL side was reused from an earlier invocation (it ran at
    another load; the CPU ratio still compares)."""
    cells = _need(recs, OPENFGL, "openfgl")["metrics"]["cells"]
    rows = []
    for key in sorted(cells, key=lambda k: (k.split("/")[1], k.split("/")[0])):
        c, r = cells[key], cells[key]["row"]
        reused = any(isinstance(run.get("openfgl"), dict)
                     and (run["openfgl"].get("reused") or run["openfgl"].get("reused_from")) for run in c["runs"])
        rows.append([r["algorithm"], r["dataset"], r.get("seeds", ""), r["fgl_jax acc %"], r["OpenFGL acc %"],
                     r["diff (pts)"], "- (OpenFGL reused)" if reused else r.get("speed-up", "-"),
                     r.get("cpu speed-up", "-"), _when(c["provenance"])])
    return _table(["algorithm (fgl_jax / OpenFGL)", "dataset", "seeds", "fgl_jax acc %", "OpenFGL acc %",
                   "diff (pts)", "speed-up (wall)", "speed-up (CPU)", "measured (UTC, load)"], rows)


def whole_process(recs: dict) -> str:
    rec = _need(recs, "benchmarks/peers/openfgl/whole_process.json", "whole_process")
    m = rec["metrics"]
    rows = [[state, fmt(s["fgl_jax_wall"]), fmt(s["openfgl_wall"]), f"{s['ratio']:.2f}", fmt(s["fgl_jax_ms_per_round"]),
             fmt(s["openfgl_ms_per_round"]), f"{s['per_round_speedup']:.1f}x"] for state, s in m["summary"].items()]
    mach = m.get("machine") or {}
    load = (f"load {mach['loadavg_start'][0]:.1f} at start, {mach['loadavg_end'][0]:.1f} at end"
            if mach.get("loadavg_start") and mach.get("loadavg_end") else "load not recorded")
    return (_table(["cache", "fgl-jax process s", "OpenFGL process s", "ratio", "fgl-jax ms/round",
                    "OpenFGL ms/round", "per-round speed-up"], rows)
            + f"\n\nMedians of {m.get('pairs')} alternated pairs, {m.get('rounds')} rounds; started "
              f"{mach.get('started', '?')}, {load}. Targets: {m.get('targets')}.")


def _rows_table(rec: dict, columns: list[str]) -> str:
    return _table(columns, [[r.get(c, "") for c in columns] for r in rec["metrics"]["rows"]])


def linkpred(recs: dict) -> str:
    rec = _need(recs, "benchmarks/peers/openfgl/results_linkpred.json", "linkpred")
    columns = ["dataset", "algorithm", "seeds", "fgl_jax test AUC %", "OpenFGL test AUC %", "diff (pts)",
               "fgl_jax AP %", "OpenFGL AP %", "cpu speed-up"]
    return _rows_table(rec, columns) + f"\n\nMeasured {_when(rec['provenance'])}."


def feddep_acc(recs: dict) -> str:
    out = []
    for name in ("results_feddep_acc_cora", "results_feddep_acc"):
        rec = _need(recs, f"benchmarks/peers/openfgl/{name}.json", "feddep_acc")
        ds = rec["config"].get("dataset", "?")
        out.append([[ds, r.get("side"), r.get("variant"), r.get("seeds"), r.get("acc % (best val)"),
                     r.get("acc % (last round)")] for r in rec["metrics"]["rows"]])
    return _table(["dataset", "side", "variant", "seeds", "acc % (best val)", "acc % (last round)"],
                  [r for rows in out for r in rows])


def round_speed(recs: dict) -> str:
    rec = _need(recs, "benchmarks/results/round_speed.json", "round_speed")
    rows = []
    for name, sec in rec["metrics"]["sections"].items():
        when = _when(sec.get("provenance") or {})
        for v, t in (sec.get("variants") or {}).items():
            rows.append([name, v, f"{t['wall_ms_median']:.1f}", f"{t['cpu_ms_median']:.1f}", sec.get("unit", ""), when])
        for part, t in (sec.get("parts") or {}).items():
            if isinstance(t, dict) and "cpu_ms" in t:
                rows.append([name, part, f"{t.get('wall_ms', float('nan')):.3g}" if "wall_ms" in t else "",
                             f"{t['cpu_ms']:.3g}", f"x {t.get('per_round', 1)} per round", when])
    return (_table(["section", "variant / part", "wall ms (median)", "CPU ms (median)", "unit", "measured (UTC, load)"],
                   rows) + f"\n\nTargets: {rec['metrics'].get('targets')}.")


def cache(recs: dict) -> str:
    """bench_cache.py: fresh `fgl-jax run` processes with no cache, JAX's cache only, and both."""
    rec = _need(recs, "benchmarks/results/cache.json", "cache")
    m = rec["metrics"]
    rows = [[v, fmt(med["wall_s"]), f"{m['ratio_to_b_jax_only'][v]['wall_s']:.2f}", fmt(med["cpu_s"]),
             f"{m['ratio_to_b_jax_only'][v]['cpu_s']:.2f}", fmt(med["compile_seconds"]),
             "{programs} / {cache_hits} / {programs_loaded}".format(**m["programs_served"][v])]
            for v, med in m["median"].items()]
    return (_table(["variant", "process wall s", "wall / b", "process CPU s", "CPU / b", "compile s (timings.json)",
                    "programs / cache hits / loaded whole"], rows)
            + f"\n\nMedians of {m['repeats']} alternated fresh processes each: {m['workload']}; "
              f"`{rec['provenance'].get('command', '')}`, {_when(rec['provenance'])}.")


def index(recs: dict) -> str:
    """Every benchmark record: where it is, its headline numbers (`headlines.py`), when it ran."""
    rows = []
    for path, rec in recs.items():
        head = headline(rec["id"], rec["metrics"])
        text = "; ".join(f"{k}: {fmt(v)}" for k, v in (head or {}).items() if v is not None)
        m = rec["metrics"]
        what = rec.get("title") or m.get("title") or m.get("benchmark") or m.get("what") or ""
        rows.append([f"`{path}`", what, text or "(see the record)", _when(rec["provenance"])])
    return _table(["record", "what", "headline", "finished (UTC, load)"], rows)


def growth(recs: dict) -> str:
    """bench_growth.py: one row per point (axis, algorithm, size) with its costs, or why it was skipped
    (with the phases it finished); then the 2.4 M-node run it cites from large_graph.json."""
    rec = _need(recs, "benchmarks/results/growth.json", "growth")
    m = rec["metrics"]
    order = {"nodes": 0, "clients": 1}
    prep = lambda r: (f"{fmt(r['prepare_s'])} ({fmt(r['generate_s'])})" if r.get("generate_s") is not None
                      else fmt(r.get("prepare_s")))
    rows = []
    for r in sorted(m["points"].values(), key=lambda r: (order.get(r["axis"], 2), r["algorithm"], r["nodes"],
                                                         r["clients"])):
        load = r.get("loadavg_at_start")
        load = f"{load[0]:.0f}" if isinstance(load, list) and load else ""
        when = (r.get("provenance") or {}).get("finished", "")[:16]
        skipped = "skipped: " + r["skipped"] if "skipped" in r else None
        rss = r.get("peak_rss_mb", r.get("process_peak_rss_mb"))
        rows.append([r["axis"], r["algorithm"], f"{r['nodes']:,}", f"{r['clients']:,}",
                     "sampled" if r.get("sampled") else "full-batch", skipped or fmt(r.get("s_per_round")),
                     "" if skipped else fmt(r.get("cpu_s_per_round")), prep(r), fmt(r.get("prepare_cpu_s")),
                     fmt(r.get("compile_s")), fmt(rss), load, when])
    c = headlines.products_run(recs.get("benchmarks/results/large_graph.json", {}).get("metrics", {}))
    if c:
        rows.append(["nodes (cited)", "fedavg", f"{c['nodes']:,}", f"{c['clients']:,}", "sampled",
                     fmt(c.get("s_per_round")), "", fmt(c.get("prepare_s")), "", fmt(c.get("compile_s")),
                     fmt(c.get("peak_rss_mb")), fmt(c.get("loadavg_at_start")), "large_graph.json `run`"])
    return (_table(["axis", "algorithm", "nodes", "clients", "training", "s/round", "CPU s/round",
                    "prepare s (of it generation)", "prepare CPU s", "compile s", "peak RSS MiB", "load",
                    "measured (UTC)"], rows)
            + f"\n\nRecord `benchmarks/results/growth.json`, written by `{rec['provenance'].get('command', '')}`. "
              "A skipped point's prepare / compile columns show the phases it finished before it was stopped, "
              "its RSS column the process's peak. Times are wall seconds except the CPU columns (process CPU "
              "time): on a shared machine the load column says how far wall exceeds CPU.")


TABLES: dict[str, Callable[[dict], str]] = {
    "openfgl": openfgl, "whole_process": whole_process, "linkpred": linkpred, "feddep_acc": feddep_acc,
    "round_speed": round_speed, "cache": cache, "index": index, "growth": growth}


def render_page(text: str, recs: dict, page: str = "page") -> str:
    """`text` with every marked table rendered from `recs`; RenderError on an unknown table name."""
    def one(m: re.Match) -> str:
        name = m.group(2)
        if name not in TABLES:
            raise RenderError(f"{page}: unknown table <!-- records: {name} --> (known: {', '.join(TABLES)})")
        return f"{m.group(1)}{TABLES[name](recs)}\n{m.group(4)}"
    return MARK.sub(one, text)


def stale(root: Path = ROOT, pages=PAGES) -> list[str]:
    """The pages whose committed tables differ from the records (repository paths)."""
    recs = load(root)
    return [p for p in pages if (root / p).read_text() != render_page((root / p).read_text(), recs, p)]


def main(argv: Optional[list[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="change nothing; exit 1 when a page's tables are stale")
    a = ap.parse_args(argv)
    try:
        recs = load()
        changed = []
        for page in PAGES:
            path = ROOT / page
            old = path.read_text()
            new = render_page(old, recs, page)
            if new != old:
                changed.append(page)
                if not a.check:
                    path.write_text(new)
    except (records.RecordError, RenderError) as err:
        print(err, file=sys.stderr)
        return 2
    if a.check and changed:
        print(f"stale tables (run python benchmarks/render.py): {', '.join(changed)}", file=sys.stderr)
        return 1
    print(("rewrote " + ", ".join(changed)) if changed else "every table is current")
    return 0


if __name__ == "__main__":
    sys.exit(main())
