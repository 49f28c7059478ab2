"""A run's output directory: one run per directory, files that are whole or absent.

    config.yaml    the resolved config; never rewritten before a resume restored its checkpoint
    metrics.jsonl  one JSON row per round; rewritten whole (temporary file + rename) after each chunk
    summary.json   results only (deterministic: an interrupted and resumed run writes the same bytes)
    timings.json   build / compile / run seconds of the latest invocation
    checkpoints/   see `fgl_jax.federated.checkpoint`

Every write goes to a temporary name in the same directory and is renamed into place, so a kill
leaves either the old file or the new one, never half of one.
"""
from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any, Iterable, Optional

RUN_FILES = ("config.yaml", "metrics.jsonl", "summary.json", "timings.json", "checkpoints")
# options that may change when a run is resumed with --resume-with-changes: they do not change
# what the rounds already done computed
RESUMABLE_CHANGES = ("rounds", "data_dir", "chunk")


def write_atomic(path: os.PathLike, text: str) -> None:
    """Write `text` to `path` through a temporary file in the same directory and a rename."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_rows(path: os.PathLike, rows: Iterable[dict]) -> None:
    write_atomic(path, "".join(json.dumps(r) + "\n" for r in rows))


def read_rows(path: os.PathLike) -> list[dict]:
    """The rows of a metrics.jsonl; a broken line is an error naming the file and the line."""
    path = Path(path)
    if not path.exists():
        return []
    rows = []
    for i, line in enumerate(path.read_text().splitlines(), 1):
        try:
            row = json.loads(line)
            int(row["round"])
        except (ValueError, KeyError, TypeError):
            raise ValueError(f"{path}, line {i}: not a metrics row ({line[:60]!r}); "
                             "the file is damaged, start again with --overwrite") from None
        rows.append(row)
    return rows


def prepare(out: os.PathLike, *, resume: bool, overwrite: bool) -> Path:
    """Check (and with `overwrite` clear) an output directory before a run writes into it.

    A fresh run refuses a directory that already holds files unless `overwrite` (which deletes
    them, checkpoints included); `resume` continues what is there.
    """
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise ValueError(f"--out {out} is an existing file, not a directory")
    if resume and overwrite:
        raise ValueError("--resume and --overwrite exclude each other (continue the run, or replace it)")
    if out.is_dir() and any(out.iterdir()) and not resume:
        if not overwrite:
            held = sorted(p.name for p in out.iterdir())
            raise ValueError(f"--out {out} is not empty ({', '.join(held[:4])}{', ...' if len(held) > 4 else ''}): "
                             "add --resume to continue that run or --overwrite to replace it")
        for p in out.iterdir():
            shutil.rmtree(p) if p.is_dir() and not p.is_symlink() else p.unlink()
    out.mkdir(parents=True, exist_ok=True)
    return out


def config_changes(saved: dict, new: dict) -> list[str]:
    """Keys whose values differ between a saved and a new config ("key: old -> new")."""
    keys = sorted(set(saved) | set(new))
    return [f"{k}: {saved.get(k, '<absent>')!r} -> {new.get(k, '<absent>')!r}" for k in keys
            if saved.get(k, "<absent>") != new.get(k, "<absent>")]


def check_resume_config(out: Path, saved_text: Optional[str], new: dict, allowed: Iterable[str] = ()) -> None:
    """Refuse to resume with a config that differs from the saved one, except in `allowed` keys."""
    if saved_text is None:
        return
    from fgl_jax import schema
    saved = schema.read_yaml_text(saved_text, str(out / "config.yaml"))
    old, now = saved.get("dataset_sha256"), new.get("dataset_sha256")
    if old and now and old != now and saved.get("dataset") == new.get("dataset"):
        # the rounds already done trained on the old file: continuing would mix two graphs
        raise ValueError(f"--resume: dataset {new.get('dataset')} changed since the run in {out} started "
                         f"(sha256 {old[:12]}... -> {now[:12]}...); restore the file, or start again with --overwrite")
    allowed = set(allowed)
    bad_keys = [k for k in sorted(set(saved) | set(new)) if saved.get(k, "<absent>") != new.get(k, "<absent>")
                and k not in allowed]
    if bad_keys:
        changes = config_changes({k: saved.get(k, "<absent>") for k in bad_keys},
                                 {k: new.get(k, "<absent>") for k in bad_keys})
        safe = [k for k in bad_keys if k in RESUMABLE_CHANGES]
        hint = (f"; --resume-with-changes {','.join(safe)} allows {'that' if len(safe) == 1 else 'those'}"
                if safe and len(safe) == len(bad_keys) else
                f"; only {', '.join(RESUMABLE_CHANGES)} may change on resume (--resume-with-changes)")
        raise ValueError(f"--resume: the command differs from the run saved in {out}/config.yaml: "
                         + "; ".join(changes) + hint)


def parse_allowed(text: Optional[str]) -> tuple[str, ...]:
    """`--resume-with-changes rounds,data_dir` -> ("rounds", "data_dir"), checked."""
    if not text:
        return ()
    keys = tuple(k.strip().replace("-", "_") for k in text.split(",") if k.strip())
    wrong = [k for k in keys if k not in RESUMABLE_CHANGES]
    if wrong:
        raise ValueError(f"--resume-with-changes: {', '.join(wrong)} cannot change on resume "
                         f"(allowed: {', '.join(RESUMABLE_CHANGES)})")
    return keys


def read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise ValueError(f"{path}: cannot read it ({type(e).__name__}: {str(e)[:80]})") from None
