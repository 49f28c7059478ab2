"""Checkpoints a resume can trust: orbax saves, a sha256 manifest per checkpoint, fallback, retention.

Layout under `directory` (the run's `checkpoints/`):

    round_000040/          orbax checkpoint of {"state", "tracker"} after 40 rounds
    round_000040/hooks.npz the hooks' host state (`Hooks.save_state`), when there is one
    round_000040.sha256    manifest (JSON), written last: the round, sha256 of every file of that
                           checkpoint, the state's structure (leaf paths, shapes, dtypes) and what
                           the caller records (`meta`: the run's config and its digest)

A checkpoint counts only once its manifest exists (a kill during a save leaves an uncommitted
directory that is ignored and later removed). On restore the newest committed checkpoint whose
files still match their manifest is used; a corrupt or unreadable one is reported with the
checkpoint it falls back to. A checkpoint whose manifest records another round than its name
(copied or renamed) is refused; one whose recorded structure differs from the run's state was
written by a different program and is refused as such; any other failure to restore names the
checkpoint and what failed. Only the newest `keep` committed checkpoints are kept.

`Saver` is what a run uses: orbax's asynchronous checkpointer writes the state in a background
thread while the next rounds run (the run waits only for the copy to host memory); the commit
(hooks' state, manifest, retention) follows once the write finished, at the next save or at the
end. `parse_every` reads the save policy: at most one save per 30 s by default, plus the last round.
"""
from __future__ import annotations

import errno
import hashlib
import json
import logging
import os
import re
import shutil
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable, NamedTuple, Optional, Union

import jax
import jax.numpy as jnp
import numpy as np

from fgl_jax import rundir
from fgl_jax.rundir import write_atomic

PyTree = Any
KEEP = 3
EXTRA = "hooks.npz"


def _checkpointer():
    import orbax.checkpoint as ocp
    _quiet_orbax_errors()
    return ocp.StandardCheckpointer()


class _OrbaxErrors(logging.Filter):
    """Drops orbax's error records (a background thread's traceback, logged before the error
    reaches the run): the run reports that error itself, in one line naming the checkpoint."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.levelno >= logging.ERROR and f"{os.sep}orbax{os.sep}" in record.pathname)


def _quiet_orbax_errors() -> None:
    """Install `_OrbaxErrors` on absl's logger once, and `_quiet_closed_loops` as the unraisable-
    exception hook; FGL_JAX_TRACEBACK=1 keeps orbax's tracebacks."""
    log = logging.getLogger("absl")
    if os.environ.get("FGL_JAX_TRACEBACK") or any(isinstance(f, _OrbaxErrors) for f in log.filters):
        return
    log.addFilter(_OrbaxErrors())
    if getattr(sys.unraisablehook, "fgl_jax_quiet", None) is None:
        _quiet_closed_loops.fgl_jax_quiet = sys.unraisablehook  # the hook it hands everything else to
        sys.unraisablehook = _quiet_closed_loops


def _quiet_closed_loops(unraisable) -> None:
    """After a failed write, orbax's background threads still post to event loops it closed; Python
    prints each "Event loop is closed" as a traceback ("Exception ignored in: ...") before the run's
    one-line error. Those alone are dropped."""
    e = unraisable.exc_value
    if isinstance(e, RuntimeError) and str(e) == "Event loop is closed":
        return
    _quiet_closed_loops.fgl_jax_quiet(unraisable)


def _write_error(path: Path, e: BaseException) -> Exception:
    """The error of a failed checkpoint write, as one line naming the checkpoint: an OSError (a full
    disk, a file-size limit, permissions) when the checkpoint library's message carries the OS
    error, else a ValueError with its first line."""
    if isinstance(e, OSError) and e.errno is not None:
        return OSError(e.errno, f"cannot write this checkpoint: {e.strerror}", str(path))
    code = re.search(r"os_error_code='?(\d+)", str(e))
    if code:
        n = int(code.group(1))
        return OSError(n, f"cannot write this checkpoint: {os.strerror(n)}", str(path))
    first = (str(e).strip().splitlines() or [type(e).__name__])[0]
    return ValueError(f"{path}: cannot write this checkpoint ({type(e).__name__}: {first[:200]})")


def preload(after: Optional[threading.Event] = None) -> None:
    """Import orbax in a background thread (its import is a noticeable part of a short run): a run calls this
    before its rounds, so the import overlaps the compiled program's XLA compilation or the
    rounds (both release the GIL) instead of delaying the first save. after: an event to wait for
    first (the engine's: the chunk program is lowered), so the import does not take the GIL from
    the chunk program's tracing, which is on the way to the first round."""
    if "orbax.checkpoint" not in sys.modules:
        def work() -> None:
            if after is not None:
                after.wait()
            __import__("orbax.checkpoint")
        threading.Thread(target=work, daemon=True, name="fgl_jax-orbax-import").start()


def _digest(path: Path) -> dict:
    """{relative file path: sha256} of every file under a checkpoint directory."""
    out = {}
    for f in sorted(p for p in path.rglob("*") if p.is_file()):
        h = hashlib.sha256()
        with f.open("rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
        out[str(f.relative_to(path))] = h.hexdigest()
    return out


def _manifest(path: Path) -> Path:
    return path.with_name(path.name + ".sha256")


def structure(tree: PyTree) -> list:
    """[[leaf path, shape, dtype], ...] of a pytree of arrays (or of ShapeDtypeStructs): what a
    manifest records, so a restore can tell a state of another program from other failures."""
    leaves = jax.tree_util.tree_flatten_with_path(tree)[0]
    return [[jax.tree_util.keystr(k), list(np.shape(a)),
             str(a.dtype if hasattr(a, "dtype") else jnp.asarray(a).dtype)] for k, a in leaves]


def _first_difference(saved: list, now: list) -> str:
    saved_d, now_d = {p: (s, d) for p, s, d in saved}, {p: (s, d) for p, s, d in now}
    for p in sorted(set(saved_d) | set(now_d)):
        a, b = saved_d.get(p), now_d.get(p)
        if a != b:
            show = lambda x: "absent" if x is None else f"{tuple(x[0])} {x[1]}"
            return f"{p}: {show(a)} saved, {show(b)} in this run"
    return "leaf order"


def _round_of(path: Path) -> Optional[int]:
    tail = path.name.split("_", 1)[-1]
    return int(tail) if path.name.startswith("round_") and tail.isdigit() else None


def committed(directory: Path) -> list[tuple[int, Path]]:
    """(rounds done, path) of the checkpoints with a manifest, oldest first."""
    if not directory.is_dir():
        return []
    found = [(_round_of(p), p) for p in directory.iterdir() if p.is_dir() and _round_of(p) is not None]
    return sorted((r, p) for r, p in found if _manifest(p).is_file())


def manifests(directory: Path) -> list[tuple[Path, dict]]:
    """(checkpoint, its manifest) of the committed checkpoints whose manifest is readable, newest first."""
    out = []
    for _, path in committed(Path(directory))[::-1]:
        try:
            m = json.loads(_manifest(path).read_text())
        except (OSError, ValueError):
            continue  # restore reports it as damaged
        if isinstance(m, dict):
            out.append((path, m))
    return out


def save(directory: Path, rounds_done: int, state: PyTree, tracker: PyTree, keep: int = KEEP,
         before_commit: Optional[Callable[[], None]] = None, extra: Optional[dict] = None,
         meta: Optional[dict] = None) -> Path:
    """Save, then commit (manifest), then drop all but the newest `keep` committed checkpoints.

    extra: {name: array} host-side state saved with the checkpoint (inside it, so its checksum
    covers it) and returned by `restore`. meta: JSON fields added to the manifest."""
    directory = Path(directory).absolute()
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"round_{rounds_done:06d}"
    _manifest(path).unlink(missing_ok=True)
    ckpt = _checkpointer()
    tree = {"state": state, "tracker": tracker}
    try:
        ckpt.save(path, tree, force=True)
        ckpt.wait_until_finished()
    except Exception as e:  # noqa: BLE001 - the library raises many types; one line for the user
        raise _write_error(path, e) from None
    _commit(directory, path, rounds_done, extra, keep, before_commit, {**(meta or {}), "structure": structure(tree)})
    return path


class Every(NamedTuple):
    """When a run saves between chunks: after `seconds` of wall time since the last save, or after
    `rounds` rounds since it, or (both None) after every chunk; the last round always."""

    seconds: Optional[float] = None
    rounds: Optional[int] = None


DEFAULT_EVERY = "30s"


def parse_every(value: Union[str, int, float, Every, None]) -> Every:
    """"30s" / "2.5s" (seconds), 10 / "10" (rounds), "chunk" (every chunk) -> Every; one clear error."""
    if isinstance(value, Every):
        return value
    if value is None:
        value = DEFAULT_EVERY
    text = str(value).strip().lower()
    try:
        if text == "chunk":
            return Every()
        if text.endswith("s"):
            seconds = float(text[:-1])
            if seconds >= 0:
                return Every(seconds=seconds)
        elif not isinstance(value, float) and int(text) >= 1:
            return Every(rounds=int(text))
    except ValueError:
        pass
    raise ValueError(f"checkpoint_every must be seconds ('30s'), a number of rounds (>= 1) or 'chunk', "
                     f"got {value!r}")


class Saver:
    """Asynchronous, committed checkpoints for one run (see the module docstring).

    due(rounds_done, final) says whether the policy wants a save now; save(...) starts one (first
    committing the previous); close() waits for the last and commits it; abandon() is close() that
    never raises (for an interrupted run). `seconds`: time the caller spent blocked in here.
    """

    def __init__(self, directory: Path, every: Every = Every(seconds=30.0), keep: int = KEEP,
                 before_commit: Optional[Callable[[], None]] = None, clock: Callable[[], float] = time.monotonic,
                 meta: Optional[dict] = None):
        # absolute: the checkpoint library refuses relative paths, and the run's files must not move
        # with the working directory
        self.directory, self.every, self.keep = Path(directory).absolute(), every, keep
        self.before_commit, self.clock, self.meta = before_commit, clock, dict(meta or {})
        self._last_time, self._last_round = clock(), None
        self._ckpt = None
        self._pending: Optional[tuple[Path, int, Optional[dict], dict]] = None
        self.seconds = 0.0

    def due(self, rounds_done: int, final: bool = False) -> bool:
        if final:
            return True
        if self.every.seconds is not None:
            return self.clock() - self._last_time >= self.every.seconds
        if self.every.rounds is not None:
            return rounds_done - (self._last_round or 0) >= self.every.rounds
        return True

    def save(self, rounds_done: int, state: PyTree, tracker: PyTree, extra: Optional[dict] = None) -> Path:
        t0 = time.perf_counter()
        try:
            self._commit()
            self.directory.mkdir(parents=True, exist_ok=True)
            path = self.directory / f"round_{rounds_done:06d}"
            _manifest(path).unlink(missing_ok=True)
            if self._ckpt is None:
                self._ckpt = _checkpointer()
            tree = {"state": state, "tracker": tracker}
            # returns once the arrays are copied to host memory; the files are written in the background
            try:
                self._ckpt.save(path, tree, force=True)
            except Exception as e:  # noqa: BLE001 - one line for the user (`_write_error`)
                raise _write_error(path, e) from None
            self._pending = (path, rounds_done, None if extra is None else
                             {k: np.array(v, copy=True) for k, v in extra.items()},
                             {**self.meta, "structure": structure(tree)})
            self._last_time, self._last_round = self.clock(), rounds_done
            return path
        finally:
            self.seconds += time.perf_counter() - t0

    def _commit(self) -> None:
        if self._pending is None:
            return
        path, rounds_done, extra, meta = self._pending
        self._pending = None
        try:
            self._ckpt.wait_until_finished()
        except Exception as e:  # noqa: BLE001 - the background write failed (a full disk, ...)
            raise _write_error(path, e) from None
        _commit(self.directory, path, rounds_done, extra, self.keep, self.before_commit, meta)

    def close(self) -> None:
        t0 = time.perf_counter()
        try:
            self._commit()
        finally:
            if self._ckpt is not None:  # its background threads end here, not at interpreter exit
                ckpt, self._ckpt = self._ckpt, None
                ckpt.close()
            self.seconds += time.perf_counter() - t0

    def abandon(self) -> None:
        try:
            self.close()
        except Exception:  # noqa: BLE001 - already failing; the uncommitted save is ignored on resume
            self._pending, self._ckpt = None, None


def _commit(directory: Path, path: Path, rounds_done: int, extra: Optional[dict], keep: int,
            before_commit: Optional[Callable[[], None]], meta: Optional[dict] = None) -> None:
    """Make a written checkpoint count: hooks' state, manifest (last), then retention and cleanup.
    meta: more fields of the manifest (the state's structure, the run's config)."""
    if extra is not None:
        np.savez(path / EXTRA, **{k: np.asarray(v) for k, v in extra.items()})
    if before_commit is not None:  # fault injection for the reliability tests
        before_commit()
    write_atomic(_manifest(path), json.dumps({"round": rounds_done, "files": _digest(path), **(meta or {})},
                                             indent=1))
    good = committed(directory)
    for _, old in good[:-keep] if keep > 0 else []:
        _manifest(old).unlink(missing_ok=True)
        shutil.rmtree(old, ignore_errors=True)
    # uncommitted leftovers of an interrupted save (and orbax's temporary directories of one)
    for p in directory.iterdir():
        if p.is_dir() and p.name.startswith("round_") and not _manifest(p).is_file():
            shutil.rmtree(p, ignore_errors=True)


def _verify(path: Path) -> tuple[Optional[str], dict]:
    """(None if the checkpoint's files match its manifest, else what is wrong; the manifest)."""
    try:
        manifest = json.loads(_manifest(path).read_text())
        expected = manifest["files"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        return f"unreadable manifest {_manifest(path)} ({type(e).__name__})", {}
    actual = _digest(path)
    if actual != expected:
        changed = sorted(set(expected) ^ set(actual) | {k for k in expected if actual.get(k) != expected[k]})
        return (f"checksum mismatch in {path / changed[0]}" + (f" (+{len(changed) - 1} more files)"
                                                               if len(changed) > 1 else ""), manifest)
    return None, manifest


def restore(directory: Path, state_like: PyTree, tracker_like: PyTree, log=None
            ) -> Optional[tuple[int, PyTree, PyTree, Optional[dict]]]:
    """(rounds done, state, tracker, extra) from the newest intact checkpoint; None if there is none.

    A corrupt or unreadable checkpoint falls back to the previous one, with a line on `log`
    (default stderr) naming both. ValueError naming the checkpoint: its manifest records another
    round than its name says (copied or renamed); its recorded structure differs from
    `state_like`'s (a different program: older ones would not fit either); or the checkpoint
    library failed to read it (the message says what failed).
    """
    log = log or (lambda msg: print(msg, file=sys.stderr))
    directory = Path(directory).absolute()  # the checkpoint library refuses relative paths
    target = jax.tree.map(lambda a: jax.ShapeDtypeStruct(np.shape(a), a.dtype if hasattr(a, "dtype")
                                                         else jnp.asarray(a).dtype),
                          {"state": state_like, "tracker": tracker_like})
    candidates = committed(directory)[::-1]
    problem = None
    for i, (rounds, path) in enumerate(candidates):
        problem, manifest = _verify(path)
        if problem is None:
            recorded = manifest.get("round")
            if recorded is not None and recorded != rounds:
                raise ValueError(f"checkpoint {path}: its manifest records round {recorded}, its name says round "
                                 f"{rounds} (copied or renamed?); name it round_{int(recorded):06d} again, or remove "
                                 "it and its .sha256 file")
            if "structure" in manifest and manifest["structure"] != structure(target):
                raise ValueError(f"checkpoint {path} does not fit this run's state "
                                 f"({_first_difference(manifest['structure'], structure(target))}); "
                                 "it was written by a different program")
            try:
                out = _checkpointer().restore(path, target)
            except OSError as e:
                raise OSError(e.errno or errno.EIO, f"cannot read this checkpoint: {e.strerror or e}",
                              str(path)) from None
            except Exception as e:  # noqa: BLE001 - the library raises many types; one line for the user
                first = (str(e).strip().splitlines() or [type(e).__name__])[0]
                raise ValueError(f"checkpoint {path}: restoring it failed ({type(e).__name__}: {first[:200]})"
                                 ) from None
            extra = None
            if (path / EXTRA).is_file():
                with np.load(path / EXTRA, allow_pickle=False) as z:
                    extra = {k: z[k] for k in z.files}
            return rounds, out["state"], out["tracker"], extra
        nxt = candidates[i + 1][1] if i + 1 < len(candidates) else None
        log(f"fgl-jax: checkpoint {path} is damaged ({problem}); "
            + (f"falling back to {nxt}" if nxt else "no older checkpoint to fall back to"))
    if candidates:
        raise ValueError(f"no intact checkpoint in {directory} (last problem: {problem}); "
                         f"start again with {rundir.arg('overwrite')}")
    return None
