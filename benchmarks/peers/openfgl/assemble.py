"""Merge the runs of several compare.py invocations into the comparison record (outside CI; never
imported by tests).

    python -m benchmarks.peers.openfgl.assemble A.partial.json B.json C.log [--notes notes.md] \
        [--out benchmarks/peers/openfgl/results]

For runs split across processes (e.g. one seed per process on a loaded machine, where compare.py's
sequential loop would not finish in time). Inputs: compare.py's JSON files, or its stdout logs,
whose per-seed lines ("cora fgssl seed 1: fgl_jax 0.7893 (859.8 ms/round), OpenFGL 0.7849 (...)")
give accuracy and wall time only (no CPU time; used when an invocation was stopped before it wrote
its JSON). One run per (dataset, algorithm, seed), a JSON run over a log line. The table is
compare.py's `summarise`; its cells replace those in the record `<out>.json` (compare.py's
`write_cells`), each with every input's command and machine.
"""
from __future__ import annotations

import argparse
import json
import re
import time
from pathlib import Path

from benchmarks.peers.openfgl.compare import HERE, summarise, write_cells

LINE = re.compile(r"^(\w+) (\w+) seed (\d+): fgl_jax ([\d.]+) \(([\d.]+) ms/round\), "
                  r"OpenFGL ([\d.]+) \(([\d.]+) ms/round\)")


def read(path: Path) -> tuple[list, dict]:
    if path.suffix == ".json":
        d = json.loads(path.read_text())
        if "schema" in d:  # a comparison record: the runs of all its cells
            from fgl_jax import records
            cells = records.read(path)["metrics"]["cells"]
            return [r for c in cells.values() for r in c["runs"]], {"file": str(path), "kind": "record",
                                                                    "cells": sorted(cells)}
        return d["runs"], {"file": str(path), "command": (d.get("provenance") or {}).get("command"),
                           "machine": d.get("machine")}
    runs = []
    for line in path.read_text().splitlines():
        m = LINE.match(line)
        if m:
            ds, algo, seed, fa, ft, oa, ot = m.groups()
            runs.append({"dataset": ds, "algorithm": algo, "seed": int(seed), "from_log": str(path),
                         "fgl_jax": {"best_test": float(fa), "ms_per_round": float(ft), "compile_seconds": 0.0},
                         "openfgl": {"best_test": float(oa), "ms_per_round": float(ot)}})
    return runs, {"file": str(path), "kind": "log", "runs": len(runs)}


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("inputs", nargs="+")
    p.add_argument("--out", default=str(HERE / "results"), help="stem of the comparison record <out>.json")
    p.add_argument("--notes", default=None, help="a markdown file appended under the table")
    a = p.parse_args(argv)
    from fgl_jax import table
    started = time.time()
    best, sources = {}, []
    for path in map(Path, a.inputs):
        runs, src = read(path)
        sources.append(src)
        for r in runs:
            k = (r["dataset"], r["algorithm"], r["seed"])
            if k not in best or "from_log" in best[k]:
                best[k] = r
    runs = sorted(best.values(), key=lambda r: (r["dataset"], r["algorithm"], r["seed"]))
    rows = summarise(runs)
    notes = [Path(a.notes).read_text()] if a.notes else []
    write_cells(Path(a.out).with_suffix(".json"), runs, rows,
                {"config": vars(a), "notes": notes, "assembled_from": sources}, {}, started)
    print(table(rows, disable_numparse=True))


if __name__ == "__main__":
    main()
