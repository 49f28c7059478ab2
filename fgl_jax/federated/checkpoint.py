"""Checkpoints a resume can trust: orbax's `CheckpointManager` saves, the project adds a sha256 manifest.

Layout under `directory` (the run's `checkpoints/`):

    round_000040/          orbax checkpoint (step 40, item "default") of {"state", "tracker"} after 40 rounds
    round_000040/hooks.npz the hooks' host state (`Hooks.save_state`), when there is one
    round_000040.sha256    manifest (JSON), written last: the round, sha256 of every file of that
                           checkpoint, the state's structure (leaf paths, shapes, dtypes) and what
                           the caller records (`meta`: the run's config and its digest)

What orbax's `CheckpointManager` does: the step directories and their names (`step_prefix="round"`,
six digits), the asynchronous write (the run waits only for the copy to host memory), the atomic
finalisation of a step, retention (`max_to_keep`) and step discovery (`all_steps`). What this module
adds on top: the manifest. A checkpoint counts only once its manifest exists (a kill between orbax's
finalisation and the manifest leaves a step that is ignored and later removed). On restore the newest
committed checkpoint whose files still match their manifest is used; a corrupt or unreadable one is
reported with the checkpoint it falls back to. A checkpoint whose manifest records another round than
its name (copied or renamed) is refused; one whose recorded structure differs from the run's state was
written by a different program and is refused as such; any other failure to restore names the
checkpoint and what failed.

`Saver` is what a run uses: the commit of a save (hooks' state, manifest) follows once orbax finished
writing it, at the next save or at the end. `parse_every` reads the save policy: at most one save per
30 s by default, plus the last round.

Several processes (`jax.distributed`; the directory on a file system every process sees): every
process makes the same `Saver` calls and orbax writes each process's own shards of the sharded state;
process 0 alone clears leftovers (then all wait at a barrier), writes hooks.npz and the manifest,
after orbax finalised the step, so the manifest's checksums cover every process's files. `restore`
is called by every process: each verifies the same files, reaches the same decision and reads its
own shards (`target`: the state's shardings, and the rest replicated over the state's mesh).
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


# the step directories orbax names: "round_000040" (`_path`); rundir's foreign-file check knows the pattern
STEP_PREFIX, STEP_DIGITS = "round", 6
ITEM = "default"  # the directory orbax's manager writes a step's one (unnamed) item to


def _manager(directory: Path, keep: Optional[int] = None, asynchronous: bool = False):
    """orbax's CheckpointManager over `directory` (absolute; it must exist): steps named like `_path`,
    the newest `keep` kept (None or <= 0: all), saves written in a background thread when
    `asynchronous`."""
    import orbax.checkpoint as ocp
    _quiet_orbax_errors()
    options = ocp.CheckpointManagerOptions(
        max_to_keep=keep if keep is not None and keep > 0 else None, step_prefix=STEP_PREFIX,
        step_format_fixed_length=STEP_DIGITS, enable_async_checkpointing=asynchronous, create=False)
    return ocp.CheckpointManager(directory, options=options)


def _main() -> bool:
    """True in the process that clears, commits and writes manifests (process 0, or the only one)."""
    return jax.process_index() == 0


def _barrier(name: str) -> None:
    """Every process waits here until all arrived (a no-op in a single-process run)."""
    if jax.process_count() > 1:
        from jax.experimental import multihost_utils
        multihost_utils.sync_global_devices(f"fgl_jax_checkpoint_{name}")


def target(tree: PyTree) -> PyTree:
    """ShapeDtypeStructs orbax restores `tree` into: each jax.Array leaf keeps its sharding (so a
    sharded state comes back sharded, each process reading its own shards); under several processes
    a leaf without a global sharding (the tracker's NumPy scalars) is replicated over the mesh of the
    first leaf that has one.

    Args:
        tree: a pytree of arrays (jax or NumPy) or ShapeDtypeStructs.

    Returns:
        The same pytree of `jax.ShapeDtypeStruct`s (with `sharding` where one is known).
    """
    from jax.sharding import NamedSharding, PartitionSpec
    leaves = jax.tree.leaves(tree)
    mesh = next((a.sharding.mesh for a in leaves if isinstance(getattr(a, "sharding", None), NamedSharding)), None)
    many = jax.process_count() > 1

    def one(a):
        dtype = a.dtype if hasattr(a, "dtype") else jnp.asarray(a).dtype
        sharding = getattr(a, "sharding", None) if isinstance(a, (jax.Array, jax.ShapeDtypeStruct)) else None
        if many and mesh is not None and not isinstance(sharding, NamedSharding):
            sharding = NamedSharding(mesh, PartitionSpec())
        return jax.ShapeDtypeStruct(np.shape(a), dtype, sharding=sharding)
    return jax.tree.map(one, tree)


def _path(directory: Path, rounds_done: int) -> Path:
    return directory / f"{STEP_PREFIX}_{rounds_done:0{STEP_DIGITS}d}"


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
    """Save, wait for the write, commit (manifest); orbax keeps the newest `keep` checkpoints.

    Args:
      directory: the checkpoints' directory (created if missing).
      rounds_done: the round count the checkpoint is named for.
      state, tracker: pytrees of arrays to save.
      keep: how many checkpoints to keep (<= 0: all).
      before_commit: called just before the manifest is written (fault injection).
      extra: {name: array} host-side state saved with the checkpoint (inside it, so its checksum
        covers it) and returned by `restore`.
      meta: JSON fields added to the manifest.

    Returns:
      The checkpoint's directory.
    """
    saver = Saver(directory, Every(), keep, before_commit=before_commit, meta=meta)
    try:
        path = saver.save(rounds_done, state, tracker, extra=extra)
        saver.close()
    finally:
        saver.abandon()
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
        self._manager = None
        self._pending: Optional[tuple[Path, int, Optional[dict], dict]] = None
        self.seconds = 0.0

    def due(self, rounds_done: int, final: bool = False) -> bool:
        """Whether the policy wants a save after `rounds_done` rounds (`final`: the last round)."""
        if final:
            return True
        if self.every.seconds is not None:
            return self.clock() - self._last_time >= self.every.seconds
        if self.every.rounds is not None:
            return rounds_done - (self._last_round or 0) >= self.every.rounds
        return True

    def save(self, rounds_done: int, state: PyTree, tracker: PyTree, extra: Optional[dict] = None) -> Path:
        """Start saving (state, tracker) as round `rounds_done`'s checkpoint, after committing the
        previous one; returns once orbax copied the arrays to host memory."""
        t0 = time.perf_counter()
        try:
            self._commit()
            path = _path(self.directory, rounds_done)
            if self._manager is None:
                self.directory.mkdir(parents=True, exist_ok=True)
                # what an earlier attempt left at or past this round (a resume redoes those rounds) and
                # its uncommitted steps: orbax would refuse to save a step not newer than its latest.
                # One process clears; the others wait, so none writes into a directory being cleared
                if _main():
                    _clear(self.directory, rounds_done)
                _barrier("clear")
                try:
                    self._manager = _manager(self.directory, self.keep, asynchronous=True)
                except Exception as e:  # noqa: BLE001 - one line for the user (`_write_error`)
                    raise _write_error(path, e) from None
            if _main():
                _manifest(path).unlink(missing_ok=True)
            import orbax.checkpoint as ocp
            tree = {"state": state, "tracker": tracker}
            try:
                saved = self._manager.save(rounds_done, args=ocp.args.StandardSave(tree))
            except Exception as e:  # noqa: BLE001 - one line for the user (`_write_error`)
                raise _write_error(path, e) from None
            if not saved:
                raise ValueError(f"{path}: the checkpoint library declined to save round {rounds_done} "
                                 f"(its newest step is {self._manager.latest_step()})")
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
            self._manager.wait_until_finished()  # orbax's write, finalisation and retention
        except Exception as e:  # noqa: BLE001 - the background write failed (a full disk, ...)
            raise _write_error(path, e) from None
        _commit(self.directory, path, rounds_done, extra, self.before_commit, meta)

    def close(self) -> None:
        """Wait for the last save and commit it; the library's threads end here."""
        t0 = time.perf_counter()
        try:
            self._commit()
        finally:
            if self._manager is not None:  # its background threads end here, not at interpreter exit
                manager, self._manager = self._manager, None
                try:
                    manager.close()
                except Exception:  # noqa: BLE001 - a failed write was reported by _commit already
                    pass
            self.seconds += time.perf_counter() - t0

    def abandon(self) -> None:
        """`close` that never raises (an interrupted run: an uncommitted save is ignored on resume)."""
        try:
            self.close()
        except Exception:  # noqa: BLE001 - already failing; the uncommitted save is ignored on resume
            self._pending, self._manager = None, None


def _clear(directory: Path, first: int) -> None:
    """Remove the checkpoints (and manifests) of round `first` and later, and every step without a
    manifest or orbax temporary: what an interrupted or abandoned earlier attempt left."""
    for p in list(directory.iterdir()):
        r = _round_of(p) if p.is_dir() else None
        if p.is_dir() and p.name.startswith(f"{STEP_PREFIX}_") and (
                r is None or r >= first or not _manifest(p).is_file()):
            shutil.rmtree(p, ignore_errors=True)
            _manifest(p).unlink(missing_ok=True)
        elif p.name.endswith(".sha256") and not p.with_name(p.name[:-len(".sha256")]).is_dir():
            p.unlink(missing_ok=True)


def _commit(directory: Path, path: Path, rounds_done: int, extra: Optional[dict],
            before_commit: Optional[Callable[[], None]], meta: Optional[dict] = None) -> None:
    """Make a step orbax finished count: hooks' state, then the manifest (last); then the manifests
    of the steps orbax's retention removed. meta: more fields of the manifest (the state's
    structure, the run's config). Process 0 alone commits (its manifest covers every process's
    files, which orbax finalised before `wait_until_finished` returned)."""
    if not _main():
        return
    if extra is not None:
        np.savez(path / EXTRA, **{k: np.asarray(v) for k, v in extra.items()})
    if before_commit is not None:  # fault injection for the reliability tests
        before_commit()
    write_atomic(_manifest(path), json.dumps({"round": rounds_done, "files": _digest(path), **(meta or {})},
                                             indent=1))
    for m in directory.glob(f"{STEP_PREFIX}_*.sha256"):
        if not m.with_name(m.name[:-len(".sha256")]).is_dir():
            m.unlink(missing_ok=True)


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
    target_ = target({"state": state_like, "tracker": tracker_like})
    candidates = committed(directory)[::-1]
    if not candidates:
        return None
    import orbax.checkpoint as ocp
    manager = _manager(directory)
    try:
        finished = set(manager.all_steps())  # orbax's step discovery: the steps it finalised
        problem = None
        for i, (rounds, path) in enumerate(candidates):
            problem, manifest = _verify(path)
            if problem is None and rounds not in finished:
                problem = "the checkpoint library does not list it as a finished checkpoint"
            if problem is None:
                recorded = manifest.get("round")
                if recorded is not None and recorded != rounds:
                    raise ValueError(f"checkpoint {path}: its manifest records round {recorded}, its name says "
                                     f"round {rounds} (copied or renamed?); name it round_{int(recorded):06d} "
                                     "again, or remove it and its .sha256 file")
                if "structure" in manifest and manifest["structure"] != structure(target_):
                    raise ValueError(f"checkpoint {path} does not fit this run's state "
                                     f"({_first_difference(manifest['structure'], structure(target_))}); "
                                     "it was written by a different program")
                if not (path / ITEM).is_dir():
                    raise ValueError(f"checkpoint {path} was written by an older fgl_jax (before orbax's "
                                     f"CheckpointManager; no {ITEM}/ inside): start the run again with "
                                     f"{rundir.arg('overwrite')}")
                try:
                    out = manager.restore(rounds, args=ocp.args.StandardRestore(target_))
                except OSError as e:
                    raise OSError(e.errno or errno.EIO, f"cannot read this checkpoint: {e.strerror or e}",
                                  str(path)) from None
                except Exception as e:  # noqa: BLE001 - the library raises many types; one line for the user
                    first = (str(e).strip().splitlines() or [type(e).__name__])[0]
                    raise ValueError(f"checkpoint {path}: restoring it failed ({type(e).__name__}: "
                                     f"{first[:200]})") from None
                extra = None
                if (path / EXTRA).is_file():
                    with np.load(path / EXTRA, allow_pickle=False) as z:
                        extra = {k: z[k] for k in z.files}
                return rounds, out["state"], out["tracker"], extra
            nxt = candidates[i + 1][1] if i + 1 < len(candidates) else None
            log(f"fgl-jax: checkpoint {path} is damaged ({problem}); "
                + (f"falling back to {nxt}" if nxt else "no older checkpoint to fall back to"))
    finally:
        manager.close()
    raise ValueError(f"no intact checkpoint in {directory} (last problem: {problem}); "
                     f"start again with {rundir.arg('overwrite')}")
