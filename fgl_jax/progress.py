"""Phase lines on standard error: what a command is doing and for how long.

A run spends its first seconds (on a loaded machine, minutes) loading the graph, preparing the
clients' data and compiling before the first round runs; a progress bar alone sits at 0/R then.
`report(enabled)` opens a scope in which `phase(name)` prints one line per phase,

    fgl-jax: loading [0.0 s]
    fgl-jax: preparing [2.1 s]
    fgl-jax: compiling [4.8 s]
    fgl-jax: running [31.0 s]

the bracket holding the time since the scope opened. Code deep in a system's build (a loader, a
preparation stage) calls `phase` without knowing whether anyone listens: outside a scope, or in a
scope opened with enabled=False (`--no-progress`), it prints nothing. The lines are for someone
watching: they appear when standard error is a terminal, or when FGL_JAX_PHASES=1 (a batch job's
log, tests), so a user error in a script's captured stderr stays the one line `fgl-jax: error: ...`.
`transfer(label, done, total)` is the byte-count bar of a download (`fgl-jax datasets --download`),
redrawn in place on a terminal, its last state one line in a log.
The standard library only, so the command line can import it before JAX.
"""
from __future__ import annotations

import contextlib
import os
import sys
import time
from typing import Iterator, Optional

# the innermost open scope: (enabled, start time, last phase name) or None
_SCOPE: list = []


@contextlib.contextmanager
def report(enabled: bool = True) -> Iterator[None]:
    """A scope whose `phase` calls print (enabled) or stay silent; nested scopes keep the outer
    one's clock, so a run inside a sweep reports times since the command began."""
    start = _SCOPE[-1][1] if _SCOPE else time.perf_counter()
    if not _SCOPE:
        enabled = enabled and (os.environ.get("FGL_JAX_PHASES") == "1" or _is_terminal())
    enabled = enabled and (not _SCOPE or _SCOPE[-1][0])  # an inner scope cannot re-enable a silenced one
    _SCOPE.append([enabled, start, None])
    try:
        yield
    finally:
        _SCOPE.pop()


def _is_terminal() -> bool:
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):  # a replaced or closed stderr
        return False


def phase(name: str, detail: Optional[str] = None) -> None:
    """Announce that phase `name` begins (one line on stderr with the elapsed time), when a
    reporting scope is open and enabled. detail: a few words after the name (a stage, a count)."""
    if not _SCOPE or not _SCOPE[-1][0]:
        return
    scope = _SCOPE[-1]
    scope[2] = name
    text = name if not detail else f"{name}: {detail}"
    print(f"fgl-jax: {text} [{time.perf_counter() - scope[1]:.1f} s]", file=sys.stderr, flush=True)


def enabled() -> bool:
    """Whether `phase` prints now (a reporting scope is open and not silenced)."""
    return bool(_SCOPE) and _SCOPE[-1][0]


def transfer(label: str, done: int, total: Optional[int], final: bool = False) -> None:
    """A download's progress bar, when a reporting scope is open and enabled: on a terminal one
    line redrawn in place (`label [#####.....] 1.2/3.4 MB 35%`), elsewhere (a log) only the final
    state. done: bytes so far; total: the expected size (None when the server did not say);
    final: the transfer ended (the line is finished with a newline)."""
    if not enabled():
        return
    terminal = _is_terminal()
    if not (terminal or final):
        return
    scale, unit = (1e6, "MB") if (total or done) >= 1e6 else (1e3, "kB")
    mb = f"{done / scale:.1f}" + (f"/{total / scale:.1f} {unit}" if total else f" {unit}")
    if total:
        filled = min(20, int(20 * done / total))
        bar = f"[{'#' * filled}{'.' * (20 - filled)}] {mb} {100 * done // total}%"
    else:
        bar = mb
    line = f"fgl-jax: {label} {bar} [{time.perf_counter() - _SCOPE[-1][1]:.1f} s]"
    sys.stderr.write(("\r" if terminal else "") + line + ("\n" if final else ""))
    sys.stderr.flush()
