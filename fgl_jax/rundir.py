"""A run's output directory: one run per directory, files that are whole or absent.

    config.yaml    the resolved config; never rewritten before a resume restored its checkpoint
    metrics.jsonl  one JSON row per round; written whole (temporary file + rename) at the start
                   and on a resume (cut to the checkpoint's round), then appended after each chunk
    summary.json   results only (deterministic: an interrupted and resumed run writes the same bytes)
    timings.json   build / compile / run seconds of the latest invocation
    checkpoints/   see `fgl_jax.federated.checkpoint`
    attacks/       what `fgl-jax attack` wrote about the finished run (`attacks/mia.json`)
    .fgl-jax.lock  held (`fcntl.flock`) by the process writing the run, with its pid; left in place

Every write but metrics.jsonl's appends goes to a temporary name in the same directory and is
renamed into place, so a kill leaves either the old file or the new one, never half of one; a kill
during an append leaves at most a last line without its newline, which `read_rows` drops (a resume
then cuts the file to the checkpoint's rounds anyway). `resolve_out` turns `--out` into
one absolute path, once, at the entry (the checkpoint library needs absolute paths, and a
relative one would change meaning with the working directory); `RunLock` keeps a second process
out of a directory in use; `prepare` refuses a directory holding another run and, with
`overwrite`, deletes only what a run writes.
"""
from __future__ import annotations

import errno
import hashlib
import json
import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any, Iterable, Optional, Union

RUN_FILES = ("config.yaml", "metrics.jsonl", "summary.json", "timings.json", "checkpoints")
LOCK_FILE = ".fgl-jax.lock"
# options that may change when a run is resumed with --resume-with-changes: they do not change
# what the rounds already done computed
RESUMABLE_CHANGES = ("rounds", "data_dir", "chunk")

# what a run leaves besides RUN_FILES: write_atomic's temporaries (".metrics.jsonl.k3j_x.tmp") and,
# inside checkpoints/, the checkpoints, their manifests, orbax's and the manifests' temporaries
_RUN_TEMPORARY = re.compile(r"\.(%s)\..+\.tmp" % "|".join(re.escape(f) for f in RUN_FILES if "." in f))
_CHECKPOINT_ENTRY = re.compile(r"round_\d+(\.sha256|\.orbax-checkpoint-tmp.*)?|\.round_\d+\.sha256\..+\.tmp")



# How a user error names a run option: as the Python keyword of `fj.run_config` / `fj.RunOptions`
# (`overwrite=True`), unless the command line (`fgl_jax.cli.main`) switched to its flags (`--overwrite`),
# so a message tells the reader what to type where they are.
_SPELLING = {"flags": False}


def use_flags(on: bool = True) -> bool:
    """Name options as command-line flags in user errors (`fgl_jax.cli.main` for its duration);
    returns the previous setting, to restore."""
    before, _SPELLING["flags"] = _SPELLING["flags"], on
    return before


def arg(name: str, value: Any = None) -> str:
    """An option as the user spells it: `arg("overwrite")` is '--overwrite' on the command line and
    'overwrite=True' in Python; with a value, `arg("out", "runs/x")` is '--out runs/x' / "out='runs/x'"."""
    if _SPELLING["flags"]:
        return f"--{name.replace('_', '-')}" + ("" if value is None else f" {value}")
    return f"{name}=" + ("True" if value is None else repr(str(value) if isinstance(value, os.PathLike) else value))

def _umask() -> int:
    """The process's umask. Linux states it in /proc/self/status; elsewhere os.umask can only be
    read by setting it, so it is set and restored at once (another thread creating a file in that
    instant would get 022)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def write_atomic(path: os.PathLike, text: str) -> None:
    """Write `text` to `path` through a temporary file in the same directory and a rename.

    The file gets the mode a plain `open(path, "w")` would (0666 less the umask), not mkstemp's
    private 0600, so run files are readable by whoever the user's umask lets read them."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, 0o666 & ~_umask())
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


def append_rows(path: os.PathLike, rows: Iterable[dict]) -> None:
    """Append `rows` to a metrics.jsonl (linear in the run's length, where rewriting the whole file
    after each chunk was quadratic), flushed to disk before returning."""
    text = "".join(json.dumps(r) + "\n" for r in rows)
    if not text:
        return
    with open(path, "a") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())


def read_rows(path: os.PathLike) -> list[dict]:
    """The rows of a metrics.jsonl; a broken line is an error naming the file and the line, except
    a last line without its newline, which an append cut by a kill leaves: it is dropped."""
    path = Path(path)
    if not path.exists():
        return []
    rows = []
    text = path.read_text()
    lines = text.splitlines()
    if lines and not text.endswith("\n"):
        lines = lines[:-1]  # a torn append: the row was never completely written
    for i, line in enumerate(lines, 1):
        try:
            row = json.loads(line)
            int(row["round"])
        except (ValueError, KeyError, TypeError):
            raise ValueError(f"{path}, line {i}: not a metrics row ({line[:60]!r}); "
                             f"the file is damaged, start again with {arg('overwrite')}") from None
        rows.append(row)
    return rows


def resolve_out(out: Union[str, os.PathLike]) -> Path:
    """`out` as an absolute path (not following symlinks), checked to be usable as a run directory.

    One line (ValueError) for an `out` that is an existing file, a symlink to nothing, or below a
    file; other failures (permissions, a full disk) surface as OSError naming the path."""
    path = Path(os.path.abspath(os.path.expanduser(os.fspath(out))))
    if path.is_symlink() and not path.exists():
        raise ValueError(f"{arg('out', out)} is a symlink to {os.readlink(path)}, which does not exist")
    if path.exists() and not path.is_dir():
        raise ValueError(f"{arg('out', out)} is an existing file, not a directory")
    for parent in path.parents:  # the nearest existing ancestor must be a directory
        if parent.exists() or parent.is_symlink():
            if not parent.is_dir():
                raise ValueError(f"{arg('out', out)}: {parent} is a file, not a directory")
            break
    return path


class RunLock:
    """An exclusive `fcntl.flock` on `<out>/.fgl-jax.lock` for as long as a run writes `out`.

    The lock goes with the process (a kill releases it); the file stays, holding the pid of its
    last holder, so a refused second process can say who has the directory. Use as a context
    manager, or `release()`."""

    def __init__(self, out: Union[str, os.PathLike]):
        import fcntl
        self.path = Path(out) / LOCK_FILE
        Path(out).mkdir(parents=True, exist_ok=True)
        self._fd: Optional[int] = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as e:
            holder = os.pread(self._fd, 32, 0).decode(errors="replace").strip()
            os.close(self._fd)
            self._fd = None
            if e.errno not in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
                # a file system without flock (some network mounts): run unlocked rather than not at all
                import sys
                print(f"fgl-jax: notice: cannot lock {self.path} ({e.strerror}); a second process on --out "
                      "would not be refused", file=sys.stderr)
                return
            raise ValueError(f"{arg('out', out)} is in use by another fgl-jax process"
                             + (f" (pid {holder})" if holder.isdigit() else "")
                             + f"; wait for it to end, or choose another {arg('out', 'DIR')}") from None
        os.ftruncate(self._fd, 0)
        os.pwrite(self._fd, f"{os.getpid()}\n".encode(), 0)

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the descriptor drops the flock
            self._fd = None

    def __enter__(self) -> "RunLock":
        return self

    def __exit__(self, *exc) -> None:
        self.release()


def _is_run_entry(p: Path) -> bool:
    """Whether `p` (an entry of a run directory) is something a run writes."""
    if p.name == LOCK_FILE or _RUN_TEMPORARY.fullmatch(p.name):
        return True
    if p.name in ("checkpoints", "attacks"):  # attacks/: `fgl-jax attack`'s results on the run
        return p.is_dir() or p.is_symlink()
    return p.name in RUN_FILES and (p.is_symlink() or not p.is_dir())


def foreign_files(out: Path) -> list[str]:
    """Entries of `out` (and of its checkpoints/) that no run writes, as paths relative to `out`."""
    found = [p.name for p in sorted(out.iterdir()) if not _is_run_entry(p)]
    ckpt = out / "checkpoints"
    if ckpt.is_dir() and not ckpt.is_symlink():
        found += [f"checkpoints/{p.name}" for p in sorted(ckpt.iterdir()) if not _CHECKPOINT_ENTRY.fullmatch(p.name)]
    return found


def _names(names: list[str], most: int = 4) -> str:
    return ", ".join(names[:most]) + (f", ... ({len(names)} in all)" if len(names) > most else "")


def prepare(out: os.PathLike, *, resume: bool, overwrite: bool) -> Path:
    """Check (and with `overwrite` clear) an output directory before a run writes into it; its
    absolute path (`resolve_out`).

    A fresh run refuses a directory that already holds files unless `overwrite`, which deletes
    what a run writes (RUN_FILES and the run's temporaries, checkpoints included) and refuses,
    deleting nothing, a directory that also holds anything else; `resume` continues what is
    there. The caller holds the directory's `RunLock` (whose file does not count as content).
    """
    shown = out
    out = resolve_out(out)
    if resume and overwrite:
        raise ValueError(f"{arg('resume')} and {arg('overwrite')} exclude each other (continue the run, or replace it)")
    held = sorted(p.name for p in out.iterdir() if p.name != LOCK_FILE) if out.is_dir() else []
    if held and not resume:
        if not overwrite:
            raise ValueError(f"{arg('out', shown)} is not empty ({_names(held)}): "
                             f"add {arg('resume')} to continue that run or {arg('overwrite')} to replace it")
        foreign = foreign_files(out)
        if foreign:
            # --overwrite replaces a run; it never deletes what a run did not write
            raise ValueError(f"{arg('overwrite')}: {arg('out', shown)} holds files no fgl-jax run wrote ({_names(foreign)}); "
                             f"nothing was deleted: choose another {arg('out', 'DIR')}, or move those files away")
        for name in held:
            p = out / name
            shutil.rmtree(p) if p.is_dir() and not p.is_symlink() else p.unlink()
    out.mkdir(parents=True, exist_ok=True)
    return out


def config_digest(config: dict) -> str:
    """sha256 of a resolved config without the keys a resume may change (RESUMABLE_CHANGES): what
    every checkpoint's manifest records, so a resume can check the command against the run that
    wrote it even when config.yaml is gone. Taken of the config's normal form
    (`fgl_jax.schema.normal_form`: one form for configs written before and after a format change)."""
    from fgl_jax import schema
    kept = {k: v for k, v in schema.normal_form(config).items() if k not in RESUMABLE_CHANGES}
    return hashlib.sha256(json.dumps(kept, sort_keys=True, default=str).encode()).hexdigest()


def config_changes(saved: dict, new: dict) -> list[str]:
    """Keys whose values differ between a saved and a new config ("key: old -> new")."""
    keys = sorted(set(saved) | set(new))
    return [f"{k}: {saved.get(k, '<absent>')!r} -> {new.get(k, '<absent>')!r}" for k in keys
            if saved.get(k, "<absent>") != new.get(k, "<absent>")]


def check_resume_config(out: Path, saved_text: Optional[str], new: dict, allowed: Iterable[str] = (),
                        source: Optional[str] = None) -> None:
    """Refuse to resume with a config that differs from the saved one, except in `allowed` keys.

    source: where `saved_text` came from, for the message (default `out`/config.yaml)."""
    if saved_text is None:
        return
    from fgl_jax import schema
    source = source or str(Path(out) / "config.yaml")
    # compared in normal form: a config.yaml written by an older fgl_jax (the baseline's flat
    # algorithm options) configures the same run as today's nested one
    saved = schema.normal_form(schema.read_yaml_text(saved_text, source), source)
    new = schema.normal_form(new, "this command")
    old, now = saved.get("dataset_sha256"), new.get("dataset_sha256")
    if old and now and old != now and saved.get("dataset") == new.get("dataset"):
        # the rounds already done trained on the old file: continuing would mix two graphs
        raise ValueError(f"{arg('resume')}: dataset {new.get('dataset')} changed since the run in {out} started "
                         f"(sha256 {old[:12]}... -> {now[:12]}...); restore the file, or start again with {arg('overwrite')}")
    allowed = set(allowed)
    bad_keys = [k for k in sorted(set(saved) | set(new)) if saved.get(k, "<absent>") != new.get(k, "<absent>")
                and k not in allowed]
    if bad_keys:
        changes = config_changes({k: saved.get(k, "<absent>") for k in bad_keys},
                                 {k: new.get(k, "<absent>") for k in bad_keys})
        safe = [k for k in bad_keys if k in RESUMABLE_CHANGES]
        hint = (f"; {arg('resume_with_changes', ','.join(safe))} allows {'that' if len(safe) == 1 else 'those'}"
                if safe and len(safe) == len(bad_keys) else
                f"; only {', '.join(RESUMABLE_CHANGES)} may change on resume ({arg('resume_with_changes', '...')})")
        raise ValueError(f"{arg('resume')}: the command differs from the run saved in {source}: "
                         + "; ".join(changes) + hint)


def check_recorded_config(checkpoint: Path, manifest: dict, new: dict) -> None:
    """Refuse a checkpoint whose manifest records another config (RESUMABLE_CHANGES aside) than
    `new`, naming the keys that differ; a manifest without a recorded config passes."""
    digest = manifest.get("config_sha256")
    if digest is None or digest == config_digest(new):
        return
    from fgl_jax import schema
    try:
        saved = schema.normal_form(schema.read_yaml_text(str(manifest.get("config", "")), f"{checkpoint}.sha256"))
    except ValueError:
        saved = {}
    new = schema.normal_form(new, "this command")
    keys = [k for k in sorted(set(saved) | set(new)) if k not in RESUMABLE_CHANGES
            and saved.get(k, "<absent>") != new.get(k, "<absent>")]
    if saved and not keys:
        return  # a digest of another form (an older fgl_jax's flat config) of the same config
    what = ("; ".join(config_changes({k: saved.get(k, "<absent>") for k in keys},
                                     {k: new.get(k, "<absent>") for k in keys}))
            if keys and saved else f"config digest {digest[:12]}... recorded, {config_digest(new)[:12]}... now")
    raise ValueError(f"{arg('resume')}: checkpoint {checkpoint} does not fit this run's state: it was saved by a "
                     f"run with other options ({what}); give the options it was saved with, or start again "
                     f"with {arg('overwrite')}")


def parse_allowed(text: Optional[str]) -> tuple[str, ...]:
    """`--resume-with-changes rounds,data_dir` -> ("rounds", "data_dir"), checked."""
    if not text:
        return ()
    keys = tuple(k.strip().replace("-", "_") for k in text.split(",") if k.strip())
    wrong = [k for k in keys if k not in RESUMABLE_CHANGES]
    if wrong:
        raise ValueError(f"{arg('resume_with_changes', ','.join(wrong))}: {', '.join(wrong)} cannot change on resume "
                         f"(allowed: {', '.join(RESUMABLE_CHANGES)})")
    return keys


def read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise ValueError(f"{path}: cannot read it ({type(e).__name__}: {str(e)[:80]})") from None
