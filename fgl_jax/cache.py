"""What one command leaves for the next: compiled programs and deterministic preparation, on disk.

    <root>/jax/            JAX's persistent compilation cache (XLA executables), pruned to MAX_BYTES
    <root>/prep/<key>.npz  host preparation that is a pure function of its inputs (partition
                           assignments), keyed by a sha256 of the graph's arrays, the method, its
                           arguments and the partitioner's source; plain .npz, read with
                           allow_pickle=False
    <root>/exec/<key>.bin  a command's compiled programs (the run's init and chunk executables), so a
                           repeated command skips Python tracing and lowering too, not only XLA
                           (`program_key`, `load_program`); see "compiled programs" below

<root> is $FGL_JAX_CACHE_DIR if set, else $XDG_CACHE_HOME/fgl_jax, else ~/.cache/fgl_jax.
FGL_JAX_CACHE_DIR=off (or `fgl-jax ... --no-cache`) turns both caches off. The command line
turns them on (`enable`); the Python API leaves JAX's global configuration alone unless you call
`fgl_jax.enable_cache()`.

Also here: `CompileCounter`, the number of XLA programs a piece of work needed and how many of
them were really compiled (the rest came from the persistent cache), from jax.monitoring events.
"""
from __future__ import annotations

import hashlib
import importlib
import io
import json
import os
import pickle
import stat
import sys
import tempfile
import threading
import types
from pathlib import Path
from typing import Any, Optional


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
    re-initialised through jax's internal `reset_cache`.

    Args:
        directory: the cache root (subdirectories jax/, prep/, exec/); None: `default_root()`
            ($FGL_JAX_CACHE_DIR, else $XDG_CACHE_HOME/fgl_jax or ~/.cache/fgl_jax).
        max_bytes: the compilation cache is pruned (least recently used first) to this size at
            start-up; the compiled-program cache to a quarter of it.

    Returns:
        The cache root, or None when caching is off (a warning is printed when the directory
        cannot be created).
    """
    path = Path(directory).expanduser() if directory is not None else default_root()
    if path is None:
        return None
    try:
        for sub in ("jax", "prep", "exec"):
            (path / sub).mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as e:
        print(f"fgl-jax: warning: cache directory {path} unusable ({e.strerror}); caching is off", file=sys.stderr)
        return None
    # both jax/ and exec/ hold native code this process will run: a directory another user owns or
    # may write to could hand it someone else's code, so caching is off there
    for d in (path, path / "jax", path / "exec"):
        problem = untrusted(d)
        if problem is not None:
            print(f"fgl-jax: warning: cache directory {d} {problem}; caching is off", file=sys.stderr)
            return None
    prune(path / "jax", max_bytes)
    prune(path / "exec", max_bytes // 4)
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


def untrusted(path: Path) -> Optional[str]:
    """Why `path` must not be trusted with native code, or None: it is a symlink, is owned by another
    user than this process's, or is writable by its group or by others (a file of the compiled
    caches, or one of their directories). POSIX only; elsewhere None.

    Args:
        path: a file or directory of the cache.

    Returns:
        None when `path` is this user's and writable only by them; else what is wrong, as words
        that follow the path in a message ("is owned by uid 1001, not 1000").
    """
    if not hasattr(os, "geteuid"):
        return None
    try:
        st = os.lstat(path)
    except OSError as e:
        return f"cannot be checked ({e.strerror})"
    if stat.S_ISLNK(st.st_mode):
        return "is a symlink"
    if st.st_uid != os.geteuid():
        return f"is owned by uid {st.st_uid}, not {os.geteuid()}"
    if st.st_mode & 0o022:
        return f"is writable by {'its group' if st.st_mode & 0o020 else 'others'} (mode {stat.S_IMODE(st.st_mode):o})"
    return None


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
    import numpy as np  # here, not at the top: the CLI reads `default_root` before anything heavy
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
    import numpy as np
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
    import numpy as np
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


# ---- compiled programs ---------------------------------------------------------------------------
# JAX's persistent cache stores XLA executables keyed by the lowered program, so a command with a
# warm cache still traces and lowers its programs (about a second for FedAvg's round) only to find
# the key. This cache keys the executable by what determines the program before any tracing: the
# caller's description of it (`context`: the system, its resolved config and a digest of the data
# arrays), the argument shapes, dtypes, shardings and tree structure, the compiler options, the
# source of every fgl_jax module, the versions of the libraries that trace it, every jax config
# value, the XLA/JAX environment variables and the backend. Anything else a program could depend
# on (code registered from outside fgl_jax, a module variable changed at run time) is not in the
# key: the engine uses this cache only for programs built from a config by fgl_jax's own registry
# (`fgl_jax.experiment.run_config`).
#
# Trust: an executable is native code, read from a user directory and run. So `enable` turns caching
# off when <root>, <root>/jax or <root>/exec is a symlink, belongs to another user or is writable by
# its group or others (`untrusted`; JAX's own cache in <root>/jax has no such check of its own), and
# `load_program` refuses a file that fails the same test. The file is still read defensively: a sha256 of the payload
# must match (a torn or damaged file is ignored and recompiled), and the unpickler resolves only
# classes and functions of jax, jaxlib, numpy, flax, optax, jraph and fgl_jax (no builtins beyond
# inert containers, no dotted names), so the file cannot name os.system or eval.

_EXEC_MAGIC = b"fgl-jax-exec-1\n"
_EXEC_ROOTS = frozenset({"jax", "jaxlib", "numpy", "ml_dtypes", "flax", "optax", "jraph", "fgl_jax"})
_EXEC_BUILTINS = frozenset({"list", "dict", "set", "frozenset", "tuple", "int", "float", "complex", "bool",
                            "str", "bytes", "bytearray", "slice", "object"})
_SOURCE: dict = {}


def source_digest() -> str:
    """sha256 of every .py file of the fgl_jax package (relative path and bytes), once per process."""
    if "digest" not in _SOURCE:
        base = Path(__file__).resolve().parent
        h = hashlib.sha256()
        for f in sorted(base.rglob("*.py")):
            h.update(str(f.relative_to(base)).encode() + b"\0")
            h.update(f.read_bytes())
        _SOURCE["digest"] = h.hexdigest()
    return _SOURCE["digest"]


def tree_digest(tree: Any) -> str:
    """sha256 of a pytree's structure and of every leaf's dtype, shape and bytes (the data a
    program is built for: its contents may be folded into the program by a closure)."""
    import jax
    h = hashlib.sha256()
    leaves, treedef = jax.tree.flatten(tree)
    h.update(str(treedef).encode())
    for leaf in leaves:
        if hasattr(leaf, "dtype") and jax.dtypes.issubdtype(leaf.dtype, jax.dtypes.prng_key):
            leaf = jax.random.key_data(leaf)
        _digest(h, leaf)
    return h.hexdigest()


def _environment_text() -> str:
    import jax
    import jaxlib
    import numpy as np
    versions = {"python": sys.version, "jax": jax.__version__, "jaxlib": jaxlib.__version__, "numpy": np.__version__}
    for name in ("flax", "optax", "jraph"):
        mod = sys.modules.get(name)
        versions[name] = getattr(mod, "__version__", "absent" if mod is None else "?")
    devices = jax.devices()
    backend = [devices[0].client.platform, devices[0].client.platform_version,
               [(d.id, d.device_kind, d.process_index) for d in devices], _host_cpu()]
    env = {k: v for k, v in os.environ.items() if k.startswith(("XLA_", "JAX_", "TF_", "LIBTPU", "NVIDIA_TF32"))}
    config = {k: repr(v) for k, v in jax.config.values.items()}
    return json.dumps({"versions": versions, "backend": backend, "env": env, "config": config,
                       "source": source_digest()}, sort_keys=True, default=str)


def _host_cpu() -> list:
    """The host CPU's model and instruction-set flags (XLA:CPU code is built for them, and a cache
    directory may be shared between machines)."""
    import platform
    info = [platform.machine(), platform.processor()]
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith(("model name", "flags", "Features", "CPU part")):
                    info.append(line.strip())
                if len(info) >= 4:
                    break
    except OSError:
        pass
    return info


def program_key(context: str, kind: str, length: int, signature: str, options: Any = None) -> Optional[str]:
    """The file name of a compiled program, or None when caching is off.

    context: what the caller knows determines the program (the system, its resolved config and a
    digest of its data, `fgl_jax.experiment`); kind/length/options: which program of the run;
    signature: the arguments' tree structure, shapes, dtypes and shardings.
    FGL_JAX_PROGRAM_CACHE=off keeps JAX's persistent compilation cache but stores and loads no
    compiled program of fgl_jax's own (benchmarks/bench_cache.py measures the two apart)."""
    if root() is None or os.environ.get("FGL_JAX_PROGRAM_CACHE", "").lower() == "off":
        return None
    text = json.dumps({"context": context, "kind": kind, "length": int(length), "signature": signature,
                       "options": repr(sorted((options or {}).items())), "environment": _environment_text()},
                      sort_keys=True)
    return f"{kind}-{hashlib.sha256(text.encode()).hexdigest()[:40]}"


class _ExecUnpickler(pickle.Unpickler):
    """jax's executable unpickler (devices and executables by persistent id), restricted to the
    globals of the libraries a compiled program's metadata is made of."""

    def __init__(self, file, backend):
        super().__init__(file)
        from jax.experimental.serialize_executable import _JaxPjrtUnpickler
        self._inner = _JaxPjrtUnpickler(io.BytesIO(b""), backend)

    def persistent_load(self, pid):
        return self._inner.persistent_load(pid)

    def find_class(self, module: str, name: str) -> Any:
        top = module.split(".")[0]
        ok = "." not in name and (top in _EXEC_ROOTS or (module == "builtins" and name in _EXEC_BUILTINS))
        if ok:
            obj = getattr(importlib.import_module(module), name, None)
            owner = getattr(obj, "__module__", None) or type(obj).__module__
            ok = obj is not None and not isinstance(obj, types.ModuleType) and (
                module == "builtins" or str(owner).split(".")[0] in _EXEC_ROOTS)
            if ok:
                return obj
        raise pickle.UnpicklingError(f"compiled-program cache: refusing global {module}.{name}")


def load_program(key: Optional[str]):
    """The `jax.stages.Compiled` stored under `key`, or None (off, absent, damaged or refused)."""
    base = root()
    if key is None or base is None:
        return None
    path = base / "exec" / f"{key}.bin"
    if not path.is_file():
        return None
    problem = untrusted(base / "exec") or untrusted(path)
    if problem is not None:  # someone else's code, or code someone else could have replaced: compile instead
        culprit = base / "exec" if untrusted(base / "exec") else path
        print(f"fgl-jax: warning: not loading the compiled program {path}: {culprit} {problem}", file=sys.stderr)
        return None
    try:
        raw = path.read_bytes()
    except OSError:
        return None
    head = len(_EXEC_MAGIC)
    if raw[:head] != _EXEC_MAGIC or hashlib.sha256(raw[head + 32:]).digest() != raw[head:head + 32]:
        return None
    try:
        import jax
        backend = jax.devices()[0].client
        payload, in_tree, out_tree = _ExecUnpickler(io.BytesIO(raw[head + 32:]), backend).load()
        from jax.experimental.serialize_executable import deserialize_and_load
        compiled = deserialize_and_load(payload, in_tree, out_tree, backend=backend)
    except Exception:  # a file from an incompatible build or a refused global: compile instead
        return None
    try:
        os.utime(path)  # recently used: kept by `prune`
    except OSError:
        pass
    with _LOCK:
        _COUNTS["programs"] += 1
        _COUNTS["cache_hits"] += 1
        _COUNTS["programs_loaded"] += 1
    _THREAD.hits = getattr(_THREAD, "hits", 0) + 1
    return compiled


def has_program(key: Optional[str]) -> bool:
    """Whether a compiled program is stored under `key` (not whether it will load)."""
    base = root()
    return key is not None and base is not None and (base / "exec" / f"{key}.bin").is_file()


def drop_program(key: Optional[str]) -> None:
    """Delete the stored program `key` (it failed to run)."""
    base = root()
    if key is not None and base is not None:
        try:
            os.unlink(base / "exec" / f"{key}.bin")
        except OSError:
            pass


def persistent_cache_hits() -> int:
    """How many programs JAX's persistent cache (and this one) served to the calling thread so far
    (per thread: the engine compiles its init and chunk programs on two threads at once, and a hit
    of one must not pass for a hit of the other; jax reports a hit on the thread that compiles)."""
    _register()
    return int(getattr(_THREAD, "hits", 0))


def store_program(key: Optional[str], compiled) -> None:
    """Write a compiled program under `key` atomically; programs jax cannot serialise are skipped."""
    base = root()
    if key is None or base is None:
        return
    try:
        from jax.experimental.serialize_executable import serialize
        payload = pickle.dumps(serialize(compiled), protocol=pickle.HIGHEST_PROTOCOL)
    except Exception:  # not serialisable (a closed-over constant, a backend without support)
        return
    d = base / "exec"
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{key}.", suffix=".bin", dir=d)
        with os.fdopen(fd, "wb") as f:
            f.write(_EXEC_MAGIC + hashlib.sha256(payload).digest() + payload)
        os.replace(tmp, d / f"{key}.bin")
    except OSError:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass


# ---- compilation counter -------------------------------------------------------------------------

_COUNTS = {"programs": 0, "cache_hits": 0, "programs_loaded": 0, "compile_seconds": 0.0, "trace_seconds": 0.0, "lower_seconds": 0.0}
_DURATIONS = {"/jax/core/compile/backend_compile_duration": "compile_seconds",
              "/jax/core/compile/jaxpr_trace_duration": "trace_seconds",
              "/jax/core/compile/jaxpr_to_mlir_module_duration": "lower_seconds"}
_LOCK = threading.Lock()
_THREAD = threading.local()  # per-thread cache hits (`persistent_cache_hits`)
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
        _THREAD.hits = getattr(_THREAD, "hits", 0) + 1


def _register() -> None:
    if not _REGISTERED[0]:
        import jax
        jax.monitoring.register_event_duration_secs_listener(_on_duration)
        jax.monitoring.register_event_listener(_on_event)
        _REGISTERED[0] = True


class CompileCounter:
    """XLA programs needed between `start()` and `read()` (all threads of the process):
    `programs` (each a compilation or a persistent-cache hit), `cache_hits`, `compilations`
    (= programs - cache_hits: really compiled), `programs_loaded` (the cache hits that came whole
    from the compiled-program cache, with no tracing or lowering), `xla_seconds` (XLA compilation or cache load),
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
                "programs_loaded": int(d["programs_loaded"]),
                "xla_seconds": round(float(d["compile_seconds"]), 4),
                "trace_seconds": round(float(d["trace_seconds"]), 4),
                "lower_seconds": round(float(d["lower_seconds"]), 4)}
