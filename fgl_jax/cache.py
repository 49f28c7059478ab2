"""What one command leaves for the next: compiled programs and deterministic preparation, on disk.

    <root>/jax/            JAX's persistent compilation cache (XLA executables), pruned to MAX_BYTES
    <root>/prep/<key>.npz  host preparation that is a pure function of its inputs (partition
                           assignments), keyed by a sha256 of the graph's arrays, the method, its
                           arguments and the partitioner's source; plain .npz, read with
                           allow_pickle=False

<root> is $FGL_JAX_CACHE_DIR if set, else $XDG_CACHE_HOME/fgl_jax, else ~/.cache/fgl_jax.
FGL_JAX_CACHE_DIR=off (or `fgl-jax ... --no-cache`) turns both caches off. The command line
turns them on (`enable`); the Python API leaves JAX's global configuration alone unless you call
`fgl_jax.enable_cache()`.

Also here: `CompileCounter`, the number of XLA programs a piece of work needed and how many of
them were really compiled (the rest came from the persistent cache), from jax.monitoring events.
"""
from __future__ import annotations

import hashlib
import json
import os
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any, Optional

import numpy as np

OFF = ("off", "0", "none", "false", "no")
MAX_BYTES = 1 << 30  # the compilation cache is pruned (least recently used first) beyond 1 GiB
_STATE: dict = {"root": None}


def default_root() -> Optional[Path]:
    """The cache directory the environment asks for; None when FGL_JAX_CACHE_DIR turns it off."""
    env = os.environ.get("FGL_JAX_CACHE_DIR")
    if env is not None:
        return None if env.strip().lower() in OFF or not env.strip() else Path(env).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "fgl_jax"


def root() -> Optional[Path]:
    """The directory `enable` turned on in this process (None: caching is off)."""
    return _STATE["root"]


def enable(directory: Optional[os.PathLike] = None, max_bytes: int = MAX_BYTES) -> Optional[Path]:
    """Turn on both caches under `directory` (default: `default_root()`); returns it, or None
    when the environment turned caching off or the directory cannot be created.

    JAX decides whether to use its persistent cache at the first compilation of the process, so
    call this before any jitted work (the CLI does it first thing); called later, the cache is
    re-initialised through jax's internal `reset_cache`."""
    path = Path(directory).expanduser() if directory is not None else default_root()
    if path is None:
        return None
    try:
        (path / "jax").mkdir(parents=True, exist_ok=True)
        (path / "prep").mkdir(parents=True, exist_ok=True)
    except OSError as e:
        print(f"fgl-jax: warning: cache directory {path} unusable ({e.strerror}); caching is off", file=sys.stderr)
        return None
    prune(path / "jax", max_bytes)
    import jax
    # every program is worth keeping: the defaults (1 s minimum compile time) would skip most of
    # ours, and a cache hit costs a file read
    jax.config.update("jax_compilation_cache_dir", str(path / "jax"))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", -1)
    jax.config.update("jax_enable_compilation_cache", True)
    try:  # a compilation before this call fixed the decision "no cache"; start over
        from jax._src import compilation_cache as _cc
        if _cc.is_initialized() or getattr(_cc, "_cache_checked", False):
            _cc.reset_cache()
    except (ImportError, AttributeError):  # pragma: no cover - jax internals moved
        pass
    _STATE["root"] = path
    return path


def disable() -> None:
    """Turn both caches off for the rest of the process."""
    import jax
    jax.config.update("jax_enable_compilation_cache", False)
    _STATE["root"] = None


def prune(directory: Path, max_bytes: int) -> int:
    """Delete the least recently used files of `directory` until it holds at most `max_bytes`;
    returns the bytes freed. (jax's own cap, jax_compilation_cache_max_size, needs the filelock
    package; a prune at start-up needs nothing.)"""
    try:
        files = [(e.stat().st_atime, e.stat().st_size, e.path) for e in os.scandir(directory) if e.is_file()]
    except OSError:
        return 0
    total = sum(size for _, size, _ in files)
    freed = 0
    for _, size, p in sorted(files):
        if total - freed <= max_bytes:
            break
        try:
            os.unlink(p)
            freed += size
        except OSError:
            pass
    return freed


# ---- preparation cache ---------------------------------------------------------------------------

def _digest(h, a: Any) -> None:
    if hasattr(a, "tocsr"):  # scipy sparse
        a = a.tocsr()
        for part in (a.indptr, a.indices, a.data, np.asarray(a.shape)):
            _digest(h, part)
        return
    a = np.ascontiguousarray(np.asarray(a))
    h.update(f"{a.dtype.str}{a.shape}".encode())
    h.update(a.tobytes())


def graph_digest(graph) -> str:
    """sha256 of what a host-side graph holds (edges, features, labels, masks, class count)."""
    h = hashlib.sha256()
    for name in ("senders", "receivers", "x", "y", "train_mask", "val_mask", "test_mask"):
        _digest(h, getattr(graph, name))
    h.update(str(int(graph.num_classes)).encode())
    return h.hexdigest()


def prep_key(kind: str, **parts: Any) -> str:
    text = json.dumps({"kind": kind, **{k: v for k, v in parts.items()}}, sort_keys=True, default=str)
    return f"{kind}-{hashlib.sha256(text.encode()).hexdigest()[:32]}"


def load_arrays(key: str) -> Optional[dict]:
    """The arrays stored under `key`, or None (caching off, absent or unreadable)."""
    base = root()
    if base is None:
        return None
    path = base / "prep" / f"{key}.npz"
    try:
        with np.load(path, allow_pickle=False) as z:
            out = {k: z[k] for k in z.files}
        os.utime(path)  # recently used: kept by `prune`
        return out
    except (OSError, ValueError, KeyError):
        return None


def store_arrays(key: str, arrays: dict) -> None:
    """Write `arrays` under `key` atomically (temporary file + rename); failures are ignored."""
    base = root()
    if base is None:
        return
    d = base / "prep"
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{key}.", suffix=".npz", dir=d)
        with os.fdopen(fd, "wb") as f:
            np.savez(f, **arrays)
        os.replace(tmp, d / f"{key}.npz")
    except OSError:
        try:
            os.unlink(tmp)
        except (OSError, UnboundLocalError):
            pass


# ---- compilation counter -------------------------------------------------------------------------

_COUNTS = {"programs": 0, "cache_hits": 0, "compile_seconds": 0.0, "trace_seconds": 0.0, "lower_seconds": 0.0}
_DURATIONS = {"/jax/core/compile/backend_compile_duration": "compile_seconds",
              "/jax/core/compile/jaxpr_trace_duration": "trace_seconds",
              "/jax/core/compile/jaxpr_to_mlir_module_duration": "lower_seconds"}
_LOCK = threading.Lock()
_REGISTERED = [False]


def _on_duration(event: str, duration: float, **_kw) -> None:
    name = _DURATIONS.get(event)
    if name is not None:
        with _LOCK:
            _COUNTS[name] += duration
            if name == "compile_seconds":
                _COUNTS["programs"] += 1


def _on_event(event: str, **_kw) -> None:
    if event == "/jax/compilation_cache/cache_hits":
        with _LOCK:
            _COUNTS["cache_hits"] += 1


def _register() -> None:
    if not _REGISTERED[0]:
        import jax
        jax.monitoring.register_event_duration_secs_listener(_on_duration)
        jax.monitoring.register_event_listener(_on_event)
        _REGISTERED[0] = True


class CompileCounter:
    """XLA programs needed between `start()` and `read()` (all threads of the process):
    `programs` (each a compilation or a persistent-cache hit), `cache_hits`, `compilations`
    (= programs - cache_hits: really compiled), `xla_seconds` (XLA compilation or cache load),
    `trace_seconds` (Python tracing to jaxprs) and `lower_seconds` (jaxpr -> MLIR)."""

    def __init__(self):
        _register()
        self.start()

    def start(self) -> "CompileCounter":
        with _LOCK:
            self._at = dict(_COUNTS)
        return self

    def read(self) -> dict:
        with _LOCK:
            now = dict(_COUNTS)
        d = {k: now[k] - self._at[k] for k in now}
        return {"programs": int(d["programs"]), "cache_hits": int(d["cache_hits"]),
                "compilations": int(d["programs"] - d["cache_hits"]),
                "xla_seconds": round(float(d["compile_seconds"]), 4),
                "trace_seconds": round(float(d["trace_seconds"]), 4),
                "lower_seconds": round(float(d["lower_seconds"]), 4)}
