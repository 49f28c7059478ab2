"""Records: one JSON file per measured result, in one schema, with the provenance that produced it.

A record is the *current* result of one benchmark (or one paper reproduction, or one of your own
experiments): running it again overwrites its file, and git keeps the history. Every record has

    {"schema": "fgl_jax.record/1",
     "id": "fedavg",                       # names the result; by convention the file's stem
     "kind": "benchmark",                  # or "reproduction" / "experiment"
     "title": "FedAvg round time ...",     # optional, one line for tables
     "config": {...},                      # the resolved settings the numbers depend on
     "seeds": [0, 1, 2],                   # the seeds behind the numbers ([] when none apply)
     "metrics": {...},                     # the measured numbers, in whatever nesting the producer needs
     "provenance": {"command": ..., "started": ..., "finished": ..., "commit": ..., "dirty": ...,
                    "versions": {"python": ..., "jax": ..., ...},
                    "machine": {"cpu": ..., "cores": ..., "loadavg": [1, 5, 15 min]}, ...}}

`provenance()` fills the last one from this process and this checkout; `write()` validates and writes
atomically; `read()` validates and names the file and the field when a record is malformed, so a
renderer or a test never fails deep inside a table with a KeyError.

A provenance value that is not known is null, never invented: a record converted from an older result
file keeps that file's own provenance under `provenance.original` and says where it came from in
`provenance.converted_from`.

A *collection* holds many records in one file, one validated record per line (`.jsonl`): a paper
table's cells, say, as one file instead of one per cell. `write_lines()` replaces the records of the
ids it is given and keeps the file's other lines (like `write_parts` for parts); `read_lines()` names
the file, the line and the field when a line is malformed. `read_all()` reads both forms. Its public
API is `__all__`.
"""
from __future__ import annotations

import importlib.metadata
import json
import os
import platform
import shlex
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Iterable, Mapping, Optional, Sequence

__all__ = ["SCHEMA", "KINDS", "PROVENANCE_KEYS", "RecordError", "cpu_model", "provenance", "make", "validate", "write",
           "write_parts", "read", "read_all", "COLLECTION_SUFFIX", "write_lines", "read_lines"]

SCHEMA = "fgl_jax.record/1"
COLLECTION_SUFFIX = ".jsonl"   # a file of records, one per line
KINDS = ("benchmark", "reproduction", "experiment")
# every provenance carries these keys (a value may be null when it is not known)
PROVENANCE_KEYS = ("command", "started", "finished", "commit", "dirty", "versions", "machine")
# the distributions whose versions a record names (metadata only: nothing here imports them)
VERSIONED = ("fgl_jax", "jax", "jaxlib", "numpy", "flax", "optax", "jraph", "scipy")


class RecordError(ValueError):
    """A record file or record dict that is not a valid `fgl_jax.record/1`; the message names the file
    (or source) and the field."""


def _utc(t: Optional[float] = None) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(t))


def _git(args: Sequence[str], cwd: Path) -> Optional[str]:
    try:
        out = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def _checkout(cwd: Optional[Path] = None) -> tuple[Optional[str], Optional[bool]]:
    """(commit, dirty) of the git checkout holding `cwd` (default: this package's folder), or
    (None, None) outside one. Dirty = tracked files modified (untracked ones do not change the code)."""
    cwd = Path(cwd) if cwd is not None else Path(__file__).resolve().parent
    commit = _git(["rev-parse", "HEAD"], cwd)
    if commit is None:
        return None, None
    status = _git(["status", "--porcelain", "--untracked-files=no"], cwd)
    return commit, (bool(status) if status is not None else None)


def cpu_model() -> str:
    """This machine's CPU model name.

    Returns:
        /proc/cpuinfo's "model name", else `platform.processor()` or `platform.machine()`.
    """
    # platform.processor() is often only "x86_64" on Linux; /proc/cpuinfo names the model
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _versions() -> dict[str, Optional[str]]:
    out: dict[str, Optional[str]] = {"python": platform.python_version()}
    for dist in VERSIONED:
        try:
            out[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            out[dist] = None
    return out


def _loadavg() -> Optional[list[float]]:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


def provenance(command: Optional[str | Sequence[str]] = None, started: Optional[float] = None,
               cwd: Optional[Path | str] = None, **extra: Any) -> dict[str, Any]:
    """Where a result comes from, taken now (call it when the result is complete).

    The machine's load average is the one at the time of the call: on a shared machine it says how
    loaded the machine was when the run ended.

    Args:
        command: the command line that reproduces the result (a string, or argv to be shell-quoted);
            default `python` + this process's argv.
        started: time.time() when the measurement began (None: not known).
        cwd: a folder inside the checkout whose commit is recorded (default: the package's own).
        **extra: further keys (e.g. `original` for a converted record); they must not shadow the
            standard ones.

    Returns:
        The provenance dict: "command", "started", "finished", "commit", "dirty", "versions",
        "machine", and the `extra` keys.

    Raises:
        ValueError: an `extra` key that would replace a standard one.
    """
    clash = set(extra) & {*PROVENANCE_KEYS}
    if clash:
        raise ValueError(f"provenance: extra keys {sorted(clash)} would replace standard ones")
    if command is None:
        command = ["python", *sys.argv]
    if not isinstance(command, str):
        command = shlex.join(str(a) for a in command)
    commit, dirty = _checkout(Path(cwd) if cwd is not None else None)
    return {"command": command, "started": None if started is None else _utc(started), "finished": _utc(),
            "commit": commit, "dirty": dirty, "versions": _versions(),
            "machine": {"cpu": cpu_model(), "cores": os.cpu_count(), "loadavg": _loadavg(),
                        "platform": platform.platform()},
            **extra}


_provenance_now = provenance   # `make` takes a `provenance` argument that hides the function


def make(id: str, metrics: Mapping[str, Any], *, kind: str = "benchmark", config: Optional[Mapping] = None,
         seeds: Iterable[int] = (), title: Optional[str] = None,
         provenance: Optional[Mapping[str, Any]] = None) -> dict[str, Any]:
    """A record dict (validated). `provenance` defaults to `provenance()` taken now.

    Args:
        id: the record's id (by convention the file's stem).
        metrics: the measured numbers, non-empty (numpy / jax values become JSON types).
        kind: "benchmark", "reproduction" or "experiment".
        config: the resolved settings the numbers depend on.
        seeds: the seeds behind the numbers.
        title: one line for tables, or None.
        provenance: the provenance dict; None: `provenance()` now.

    Returns:
        The record dict.

    Raises:
        RecordError: the record does not fit the schema (naming the field).
    """
    from fgl_jax.experiment import _jsonable  # numpy / jax scalars and arrays to JSON types
    prov = provenance if provenance is not None else _provenance_now()
    rec = {"schema": SCHEMA, "id": id, "kind": kind}
    if title is not None:
        rec["title"] = title
    rec.update({"config": _jsonable(dict(config or {})), "seeds": [int(s) for s in seeds],
                "metrics": _jsonable(dict(metrics)), "provenance": _jsonable(dict(prov))})
    return validate(rec)


def _fail(source: str, field: str, problem: str) -> RecordError:
    return RecordError(f"{source}: field '{field}': {problem}")


def validate(rec: Any, source: str = "record") -> dict[str, Any]:
    """Check `rec` against the schema; return it, or raise RecordError naming `source` and the field.

    Args:
        rec: the candidate record (a parsed JSON value).
        source: where it came from, for the message (a file, a file and line).

    Returns:
        `rec` itself.

    Raises:
        RecordError: one line naming `source`, the field and what is wrong.
    """
    if not isinstance(rec, dict):
        raise RecordError(f"{source}: a record is a JSON object, not {type(rec).__name__}")
    if rec.get("schema") != SCHEMA:
        raise _fail(source, "schema", f"expected {SCHEMA!r}, got {rec.get('schema')!r}")
    for key, typ, name in (("id", str, "a string"), ("kind", str, "a string"), ("config", dict, "an object"),
                           ("seeds", list, "a list"), ("metrics", dict, "an object"),
                           ("provenance", dict, "an object")):
        if key not in rec:
            raise _fail(source, key, "missing")
        if not isinstance(rec[key], typ):
            raise _fail(source, key, f"must be {name}, got {type(rec[key]).__name__} {rec[key]!r:.60}")
    if not rec["id"]:
        raise _fail(source, "id", "is empty")
    if rec["kind"] not in KINDS:
        raise _fail(source, "kind", f"must be one of {', '.join(KINDS)}, got {rec['kind']!r}")
    if "title" in rec and not isinstance(rec["title"], str):
        raise _fail(source, "title", f"must be a string, got {type(rec['title']).__name__}")
    for i, s in enumerate(rec["seeds"]):
        if not isinstance(s, int) or isinstance(s, bool):
            raise _fail(source, f"seeds[{i}]", f"must be an integer, got {s!r}")
    if not rec["metrics"]:
        raise _fail(source, "metrics", "is empty: a record holds at least one measured value")
    prov = rec["provenance"]
    for key in PROVENANCE_KEYS:
        if key not in prov:
            raise _fail(source, f"provenance.{key}", "missing (null when it is not known)")
    for key in ("command", "started", "finished", "commit"):
        if prov[key] is not None and not isinstance(prov[key], str):
            raise _fail(source, f"provenance.{key}", f"must be a string or null, got {prov[key]!r:.60}")
    if prov["dirty"] is not None and not isinstance(prov["dirty"], bool):
        raise _fail(source, "provenance.dirty", f"must be true, false or null, got {prov['dirty']!r}")
    for key in ("versions", "machine"):
        if prov[key] is not None and not isinstance(prov[key], dict):
            raise _fail(source, f"provenance.{key}", f"must be an object or null, got {type(prov[key]).__name__}")
    return rec


def _replace(path: Path, text: str) -> None:
    # a temporary file renamed over the old one: an interrupted run never leaves half a file
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    tmp.replace(path)


def write(path: Path | str, rec: Mapping[str, Any], markdown: Optional[str] = None) -> Path:
    """Validate `rec` and write it as indented JSON to `path`, replacing the current record there.

    Args:
        path: the record's file (`.json`).
        rec: the record.
        markdown: a table (and notes) for people, written beside it as `<stem>.md` with a closing line
            naming the command, the commit and the date from the record's provenance; None: no `.md`.

    Returns:
        `path`.

    Raises:
        RecordError: `rec` does not fit the schema.
        ValueError: a NaN or infinite number in it (JSON has none).
    """
    path = Path(path)
    validate(dict(rec), str(path))
    _replace(path, json.dumps(rec, indent=1, ensure_ascii=False, allow_nan=False) + "\n")
    if markdown is not None:
        prov = rec["provenance"]
        commit = (prov["commit"] or "?")[:12] + (" (modified)" if prov["dirty"] else "")
        _replace(path.with_suffix(".md"), markdown.rstrip() + f"\n\nRecord `{path.name}` ({SCHEMA}), written by "
                 f"`{prov['command']}` at commit {commit}, finished {prov['finished'] or '?'}.\n")
    return path


def write_parts(path: Path | str, rec: Mapping[str, Any], key: str) -> Path:
    """Write `rec` over the record at `path`, keeping the parts of `metrics[key]` that this run did not
    measure; return the path.

    For a benchmark whose one invocation measures only some of its parts (some sections, some
    (dataset, algorithm) cells): `rec["metrics"][key]` maps part name -> part; each new part gets this
    run's provenance under its own `provenance` key, replaces the part of the same name in the file,
    and the file's other parts (with their own provenance) are kept, so the file stays the current
    result of every part. A file that is not a valid record is an error, not overwritten.

    Args:
        path: the record's file.
        rec: the new record; `rec["metrics"][key]` maps part name -> part (a dict).
        key: the metrics key holding the parts.

    Returns:
        `path`.

    Raises:
        RecordError: `metrics[key]` is not an object, `rec` is invalid, or the file at `path` is not
            a valid record.
    """
    path = Path(path)
    new = dict(rec)
    parts = new["metrics"].get(key)
    if not isinstance(parts, dict):
        raise _fail(str(path), f"metrics.{key}", "must be an object of parts")
    stamp = {k: v for k, v in new["provenance"].items()}
    fresh = {name: {**part, "provenance": stamp} for name, part in parts.items()}
    old = read(path)["metrics"].get(key, {}) if path.exists() else {}
    new["metrics"] = {**new["metrics"], key: {**old, **fresh}}
    return write(path, new)


def read(path: Path | str) -> dict[str, Any]:
    """The record in `path`, validated.

    Args:
        path: a record file (`.json`).

    Returns:
        The record dict.

    Raises:
        RecordError: naming the file and the field, when the file cannot be read, is not JSON or is
            not a record.
    """
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as err:
        raise RecordError(f"{path}: cannot be read ({err.strerror or err})") from None
    try:
        rec = json.loads(text)
    except ValueError as err:
        raise RecordError(f"{path}: not JSON ({err})") from None
    return validate(rec, str(path))


def read_lines(path: Path | str) -> list[dict[str, Any]]:
    """The records of the collection `path` (one JSON record per line, blank lines skipped), validated,
    in file order; RecordError naming the file, the line and the field when one is not a record, and
    when two lines hold one id.

    Args:
        path: the collection file (`.jsonl`).

    Returns:
        The records, in file order.

    Raises:
        RecordError: naming the file, the line and the field.
    """
    return [rec for _, rec in _numbered(Path(path))]


def _numbered(path: Path) -> list[tuple[int, dict[str, Any]]]:
    # (line number, record) of a collection: read_all's messages name the line too
    try:
        text = path.read_text()
    except OSError as err:
        raise RecordError(f"{path}: cannot be read ({err.strerror or err})") from None
    out: list[tuple[int, dict[str, Any]]] = []
    line_of: dict[str, int] = {}
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        source = f"{path}, line {n}"
        try:
            rec = json.loads(line)
        except ValueError as err:
            raise RecordError(f"{source}: not JSON ({err})") from None
        validate(rec, source)
        if rec["id"] in line_of:
            raise _fail(source, "id", f"{rec['id']!r} is also the id of line {line_of[rec['id']]}")
        line_of[rec["id"]] = n
        out.append((n, rec))
    return out


def write_lines(path: Path | str, recs: Iterable[Mapping[str, Any]]) -> Path:
    """Validate `recs` and write them into the collection `path`: a record replaces the file's line of
    the same id (in place), a new id is appended, and the file's other records are kept; return the path.

    Nothing is written when one of `recs` is invalid, when two of them share an id, or when the current
    file is not a valid collection (it is not overwritten: the error names it).

    Args:
        path: the collection file (`.jsonl`).
        recs: the records to write.

    Returns:
        `path`.

    Raises:
        RecordError: an invalid record, an id given twice, or a current file that is not a valid
            collection.
        ValueError: a NaN or infinite number in a record (JSON has none).
    """
    path = Path(path)
    new: dict[str, dict[str, Any]] = {}
    for i, rec in enumerate(recs):
        rec = validate(dict(rec), f"{path} (new record {i})")
        if rec["id"] in new:
            raise _fail(f"{path} (new record {i})", "id", f"{rec['id']!r} is given twice")
        new[rec["id"]] = rec
    kept = {r["id"]: r for r in read_lines(path)} if path.exists() else {}
    merged = {**kept, **new}   # an old id keeps its place, a new one goes last
    _replace(path, "".join(json.dumps(r, ensure_ascii=False, allow_nan=False) + "\n" for r in merged.values()))
    return path


def read_all(paths: Iterable[Path | str]) -> dict[str, dict[str, Any]]:
    """id -> record for every file in `paths` (validated): a `.json` file holds one record, a `.jsonl`
    file a collection (`read_lines`); two records with one id are an error naming both places.

    Args:
        paths: record files (`.json`) and collections (`.jsonl`).

    Returns:
        id -> record.

    Raises:
        RecordError: a malformed record or line, or an id found twice.
    """
    out: dict[str, dict[str, Any]] = {}
    where: dict[str, str] = {}
    for p in sorted(map(Path, paths)):
        if p.suffix == COLLECTION_SUFFIX:
            found = [(r, f"{p}, line {n}") for n, r in _numbered(p)]
        else:
            found = [(read(p), str(p))]
        for rec, at in found:
            if rec["id"] in out:
                raise RecordError(f"{at}: field 'id': {rec['id']!r} is also the id of {where[rec['id']]}")
            out[rec["id"]], where[rec["id"]] = rec, at
    return out
