"""Compile ahead: an XLA compilation started in a daemon thread and picked up by the call that needs it.

XLA releases the GIL while it compiles, so a program whose argument shapes are known early (arrays
or `jax.ShapeDtypeStruct`s) can compile while the host does other work: the engine compiles its
chunk programs while the initialisation compiles, FedGC its IB program while self-training runs and
its evaluation program while the rounds run. One helper for all of them:

    handle = compile_ahead(jitted, *shapes)              # starts the thread, returns at once
    ...                                                  # other work
    out = program(handle, jitted, *args)(*args)          # the compiled program, or plain `jitted`

A handle is keyed by `signature(args, static)` (treedef, shapes, dtypes, shardings, static
arguments): a call whose arguments differ from the ones compiled ahead gets the plain jit path
instead of a program for other shapes. `Ahead.get()` waits and returns the compiled program, or
raises the thread's exception in the caller. The handle is the only reference to the program:
it lives as long as the caller keeps it (no module-level table of programs nobody may call).

JAX's thread-local settings (`jax.enable_x64(True)` as a context manager, matmul precision, ...)
are not seen by a new thread: `scope` re-enters the ones the caller knows about, and a thread whose
settings still differ from the caller's compiles nothing (`program` then takes the jit path, `get`
raises `NotCompiled`), since it would compile another program than the call runs.
"""
from __future__ import annotations

import atexit
import concurrent.futures
import contextlib
import threading
from typing import Any, Callable, ContextManager, Hashable, Optional

import jax
import numpy as np


_LIVE: set = set()  # the compile-ahead threads still running
_LIVE_LOCK = threading.Lock()


def _join_at_exit() -> None:
    """Wait for the compilations still running when the interpreter exits normally. A daemon
    thread inside XLA when Python finalises is unwound by pthread_exit through C++ frames that
    swallow the unwinding, which aborts the process ("FATAL: exception not rethrown", signal 6)
    after its work is done, e.g. a test process that started a program it never called.
    (`fgl_jax.cli.entry` ends with os._exit: nothing is unwound there.)"""
    with _LIVE_LOCK:
        live = list(_LIVE)
    for t in live:
        t.join()


atexit.register(_join_at_exit)  # after jax's own handlers are registered, so it runs before them


class NotCompiled(RuntimeError):
    """The thread compiled nothing: its JAX settings differed from the caller's, or the handle it
    waited for (`after`) did not compile."""


def placement(x) -> str:
    """A leaf's sharding as the program sees it: "" for host values, shapes without a sharding and
    arrays on the default device alone (all three lower to the same program), else the sharding."""
    s = getattr(x, "sharding", None)
    if s is None or (isinstance(s, jax.sharding.SingleDeviceSharding) and s.device_set == {jax.devices()[0]}
                     and s.memory_kind in (None, "device")):
        return ""
    return str(s)


def signature(tree, static: tuple = ()) -> tuple:
    """(treedef, (shape, dtype, placement) per leaf..., [static]): equal for the arguments of one
    compiled program, whether given as arrays, host values or `jax.ShapeDtypeStruct`s. static:
    hashable values the program depends on besides the arguments (the jitted function, static
    arguments); appended only when given, so the engine's on-disk keys keep their form."""
    leaves, treedef = jax.tree.flatten(tree)
    sig = (treedef,) + tuple((np.shape(x), str(np.asarray(x).dtype) if not hasattr(x, "dtype") else str(x.dtype),
                              placement(x)) for x in leaves)
    return sig + (tuple(static),) if static else sig


def _trace_context():
    from jax._src import config as jax_config  # the settings that change what a trace produces
    return jax_config.trace_context()


class Ahead:
    """A compilation running in a daemon thread. signature: what it was started for."""

    def __init__(self, signature: Hashable, name: str):
        self.signature = signature
        self.name = name
        self._future: concurrent.futures.Future = concurrent.futures.Future()

    def done(self) -> bool:
        return self._future.done()

    def wait(self) -> None:
        """Wait for the thread to end (whatever its outcome); never raises."""
        concurrent.futures.wait([self._future])

    def get(self) -> Any:
        """Wait; the compiled program. The thread's exception is raised here, in the caller (its
        traceback holds the thread's frames and then the caller's); `NotCompiled` when the thread
        compiled nothing."""
        return self._future.result()

    def add_done_callback(self, fn: Callable[[], None]) -> None:
        """fn() once the thread ends (at once if it has), whatever its outcome."""
        self._future.add_done_callback(lambda _: fn())

    def matches(self, sig: Hashable) -> bool:
        return sig == self.signature

    def program(self, sig: Hashable) -> Optional[Any]:
        """get() when `sig` is this handle's signature and the thread compiled; None (take the
        plain path) when the signature differs or the thread compiled nothing. Does not wait on a
        mismatch."""
        if not self.matches(sig):
            return None
        try:
            return self.get()
        except NotCompiled:
            return None


def start(work: Callable[[], Any], sig: Hashable, *, name: str = "fgl_jax-compile-ahead",
          scope: Optional[Callable[[], ContextManager]] = None, after: Optional[Ahead] = None) -> Ahead:
    """Run `work()` (a compilation) in a daemon thread; its return value is the handle's program.

    sig: the signature the program serves (`signature`). scope: a context manager factory the thread
    enters first (settings the caller is known to run under, e.g. `jax.enable_x64(True)`); if the
    thread's trace settings still differ from the caller's, work is not run (`NotCompiled`).
    after: a handle to wait for first (one compilation after another, in the order the caller needs
    them); if it did not compile, neither does this one (`NotCompiled`: the caller's own path
    raises the real error, in order)."""
    handle = Ahead(sig, name)
    context = _trace_context()

    def main() -> None:
        try:
            if after is not None:
                after.wait()
                if after._future.exception() is not None:
                    raise NotCompiled(f"{name}: the compilation it followed ({after.name}) failed")
            with (scope() if scope is not None else contextlib.nullcontext()):
                if _trace_context() != context:
                    raise NotCompiled(f"{name}: the thread's JAX settings differ from the caller's")
                value = work()
        except BaseException as e:  # noqa: BLE001 - handed to the caller by get()
            handle._future.set_exception(e)
        else:
            handle._future.set_result(value)

    def tracked() -> None:
        try:
            main()
        finally:
            with _LIVE_LOCK:
                _LIVE.discard(threading.current_thread())

    thread = threading.Thread(target=tracked, daemon=True, name=name)
    with _LIVE_LOCK:
        _LIVE.add(thread)
    thread.start()
    return handle


def call_signature(fn, *args, static: tuple = ()) -> tuple:
    """The signature `compile_ahead(fn, *args, static=static)` keys its handle by."""
    return signature(args, (fn,) + tuple(static))


def compile_ahead(fn, *args, static: tuple = (), name: str = "fgl_jax-compile-ahead",
                  scope: Optional[Callable[[], ContextManager]] = None) -> Ahead:
    """`fn.lower(*args).compile()` in a daemon thread (fn: a `jax.jit` function; args: arrays or
    `jax.ShapeDtypeStruct`s shaped like the call's). static: what else the program depends on,
    for its signature (fn itself is always part of it)."""
    return start(lambda: fn.lower(*args).compile(), call_signature(fn, *args, static=static), name=name,
                 scope=scope)


def program(handle: Optional[Ahead], fn: Callable, *args, static: tuple = ()) -> Callable:
    """What to call on `args`: the program `handle` compiled ahead (`compile_ahead(fn, ...)`) when it
    was compiled for arguments like these, else `fn` (plain jit; it compiles on first use). Raises
    the thread's exception if the compilation failed."""
    if handle is None:
        return fn
    compiled = handle.program(call_signature(fn, *args, static=static))
    return fn if compiled is None else compiled
