"""The one reproduction harness: a paper cell is data, one runner executes cells and writes records.

A system's reproduction (`experiments/<system>/paper.py`) is

* a list of `Cell`s: an id, the resolved config of the system, the seeds, the paper's value;
* a `measure(cell) -> metrics` function per kind of cell, which runs the cell through the engine;
* renderers that turn the cells' records into the paper's tables (markdown).

`run_cells` executes cells and writes one `fgl_jax.record/1` record per cell (kind "reproduction",
`fgl_jax.records`): the cell id, the resolved config, the seeds, the metrics (the paper's value
beside them) and the provenance (command, commit, versions, machine). The tables, the results pages
and the README systems table (`experiments/make_index.py`) are all rendered from those records, so
a number is written once. A table's records live in one file, `<out>/records/<table>_<run>.jsonl`
(one record per line, `records.write_lines`), table = the cell id's first "/"-part and run = "full" or
"quick" (`--quick`); rerunning some cells replaces their lines and keeps the others.

    fgl-jax reproduce <system> [--quick] [--out DIR]     # runs experiments/<system>/paper.py
"""
from __future__ import annotations

import dataclasses
import time
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Optional, Sequence

from fgl_jax import records

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "experiments" / "results"


@dataclasses.dataclass(frozen=True)
class Cell:
    """One cell of a paper's table: what runs (config, seeds) and what the paper reports for it.

    id: unique within a run, "/"-separated (e.g. "hifgl/table3/cora-gcn"); config: a system config
    (a `schema.RunSpec` dataclass) or a plain mapping for cells that are not one run of a system;
    seeds: the model seeds the cell's numbers pool over (() when none apply); paper: the paper's
    value(s) for the cell, kept beside the measured metrics in the record ({} when the paper has none).
    """

    id: str
    config: Any
    seeds: tuple[int, ...] = ()
    paper: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    title: Optional[str] = None


def run_name(quick: bool) -> str:
    return "quick" if quick else "full"


def records_dir(out: Path | str) -> Path:
    """The folder of a reproduction's record files."""
    return Path(out) / "records"


def table_of(cell_id: str) -> str:
    """The table a cell belongs to: its id's first "/"-part ("hifgl/table3/cora-gcn" -> "hifgl")."""
    return cell_id.split("/", 1)[0]


def records_file(out: Path | str, quick: bool, table: str) -> Path:
    """The file holding one table's records of one run: out/records/<table>_<full|quick>.jsonl."""
    return records_dir(out) / f"{table}_{run_name(quick)}{records.COLLECTION_SUFFIX}"


def resolved_config(config: Any) -> dict:
    """The cell's config as plain values (a config dataclass's fields, or the mapping itself)."""
    if dataclasses.is_dataclass(config):
        from fgl_jax import schema
        return schema.to_dict(config)
    return dict(config)


def record(cell: Cell, metrics: Mapping[str, Any], provenance: Mapping[str, Any]) -> dict:
    """The cell's record: metrics = the measured values, then the paper's (never overwriting a measured one)."""
    both = {**metrics, **{k: v for k, v in cell.paper.items() if k not in metrics}}
    return records.make(cell.id, both, kind="reproduction", config=resolved_config(cell.config), seeds=cell.seeds,
                        title=cell.title, provenance=provenance)


def elapsed_log() -> Callable[[str], None]:
    """The default progress log of a reproduction: each message printed with the seconds since this
    call (`[  12.3s] msg`)."""
    t0 = time.perf_counter()

    def log(msg: str) -> None:
        print(f"[{time.perf_counter() - t0:7.1f}s] {msg}", flush=True)
    return log


def cell_run_options(run_dir: Optional[Path | str], cell_id: str) -> dict:
    """Engine options (`fgl_jax.experiment.execute`'s keywords) that keep one cell's run in
    `run_dir/<cell id>` with its checkpoints, so a cell interrupted mid-run (a killed process, a
    machine that went away) continues from its newest checkpoint when the same command runs again,
    instead of from round 0. The engine refuses the resume unless the cell's config is the one the
    checkpoints recorded. A directory holding a finished run (summary.json) whose record was never
    written is run again (`overwrite`): its in-memory results are gone. {} without `run_dir`.

    Args:
        run_dir: the folder of the cells' run directories, or None (no checkpoints: the default).
        cell_id: the cell's id; its "/"-parts become nested folders.

    Returns:
        {} or {"out": path, "resume": bool, "overwrite": bool}.
    """
    if run_dir is None:
        return {}
    out = Path(run_dir).joinpath(*cell_id.split("/"))
    finished = (out / "summary.json").is_file()
    started = out.is_dir() and any(out.iterdir())
    return {"out": out, "resume": started and not finished, "overwrite": finished}


def run_cells(cells: Iterable[Cell], measure: Callable[[Cell], Mapping[str, Any]], out: Path | str, quick: bool,
              command: Optional[str | Sequence[str]] = None, log: Callable = print) -> list[dict]:
    """Measure every cell (`measure(cell)` runs it through the engine) and write its record; return
    the records in cell order. Each record carries its own provenance, taken when its cell is done, and
    is written as soon as it is, so an interrupted run keeps the cells it finished."""
    done = []
    for cell in cells:
        t0 = time.time()
        metrics = measure(cell)
        rec = record(cell, metrics, records.provenance(command, started=t0, cwd=ROOT))
        records.write_lines(records_file(out, quick, table_of(cell.id)), [rec])
        log(f"{cell.id}: " + ", ".join(f"{k}={v:.4f}" if isinstance(v, float) else f"{k}={v}"
                                        for k, v in metrics.items() if isinstance(v, (int, float, str))))
        done.append(rec)
    return done


def load(out: Path | str, quick: bool, prefix: str = "") -> dict[str, dict]:
    """cell id -> record for the records of a run in `out` (those whose id starts with `prefix`);
    {} when there are none. A malformed record is a `records.RecordError` naming the file, line and field."""
    folder = records_dir(out)
    if not folder.is_dir():
        return {}
    recs = records.read_all(folder.glob(f"*_{run_name(quick)}{records.COLLECTION_SUFFIX}"))
    return {k: v for k, v in recs.items() if k.startswith(prefix)}


def metrics_of(recs: Mapping[str, dict], cells: Iterable[Cell]) -> list[dict]:
    """The metrics of `cells` in their order (a table's rows); a cell without a record is an error
    naming it, never a silently shorter table."""
    out = []
    for c in cells:
        if c.id not in recs:
            raise ValueError(f"no record for cell {c.id!r}: run its reproduction first")
        out.append(recs[c.id]["metrics"])
    return out


def write_table(out: Path | str, stem: str, markdown: str, recs: Sequence[dict]) -> Path:
    """out/stem.md: a table rendered from records, closed by a line naming where its numbers come from
    (the records' folder, commits and finish times)."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    provs = [r["provenance"] for r in recs]
    commits = sorted({(p["commit"] or "not recorded")[:12] + (" (modified)" if p["dirty"] else "") for p in provs})
    finished = sorted(p["finished"] or "?" for p in provs)
    commands = sorted({p["command"] or "?" for p in provs})
    sources = sorted({p["converted_from"] for p in provs if p.get("converted_from")})
    span = finished[0] if finished[0] == finished[-1] else f"{finished[0]} to {finished[-1]}"
    footer = (f"Rendered from {len(recs)} records ({records.SCHEMA}) under `records/`, written by "
              f"{', '.join(f'`{c}`' for c in commands)} at commit {', '.join(commits)}, finished {span}"
              + (f"; converted from {', '.join(f'`{s}`' for s in sources)}." if sources else "."))
    path = out / f"{stem}.md"
    path.write_text(markdown.rstrip() + "\n\n" + footer + "\n")
    return path


def converted(cell: Cell, metrics: Mapping[str, Any], original: Mapping[str, Any], source: str) -> dict:
    """The record of a cell from an older result file: its numbers as they were, its provenance under
    `provenance.original`; what the old file does not say (commit, versions) is null, never invented."""
    prov = {"command": original.get("command"), "started": None, "finished": original.get("finished"),
            "commit": None, "dirty": None, "versions": None, "machine": None,
            "original": dict(original), "converted_from": source}
    return record(cell, metrics, prov)


def write_converted(out: Path | str, quick: bool, recs: Iterable[dict]) -> int:
    """Write converted records into their tables' files (as `run_cells` would); return how many."""
    by_file: dict[Path, list[dict]] = {}
    for rec in recs:
        by_file.setdefault(records_file(out, quick, table_of(rec["id"])), []).append(rec)
    for path, group in by_file.items():
        records.write_lines(path, group)
    return sum(map(len, by_file.values()))
