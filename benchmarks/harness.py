"""Plumbing shared by the `benchmarks/bench_*.py` scripts: machine description, peak memory, timing
loops, worker processes and the result record (`write_record`: an `fgl_jax.record/1`, see
fgl_jax/records.py). Small pure helpers, no policy: each script still decides what to time, how many
times, and which metrics its record holds.

The scripts import it as a sibling module (`from harness import ...`): a script run as
`python benchmarks/bench_x.py`, and every `--worker` process it starts the same way, has `benchmarks/`
first on sys.path. jax is imported inside the functions that need it, so that a parent process that
only launches workers does not load it (and its thread pools) while a worker is being measured.
"""
from __future__ import annotations

import dataclasses
import importlib.metadata
import json
import os
import resource
import shlex
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable, Mapping, Optional, Sequence

ROOT = Path(__file__).resolve().parents[1]
# `python -m benchmarks all` points this elsewhere, so a suite run never overwrites the committed results
RESULTS = Path(os.environ.get("FGL_JAX_BENCH_RESULTS") or ROOT / "benchmarks" / "results")

# when this process started (harness is imported first thing): a record's provenance.started
STARTED = time.time()

# printed by a worker process in front of its one JSON line, so that the parent can find that line
# among whatever else the worker (jax, the library) prints on stdout
RESULT_PREFIX = "RESULT "


def loadavg() -> Optional[list[float]]:
    """1, 5 and 15 minute load averages, or None where the OS has none.

    The benchmark machine is shared, so every result records the load it ran under.
    """
    try:
        return list(os.getloadavg())
    except OSError:
        return None


def _version(dist: str) -> Optional[str]:
    # package metadata, not `import`: asking for a version should not load the package
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def machine() -> dict[str, Any]:
    """What the numbers were measured on, for the humans who read the result file: the library's
    own `fgl_jax.experiment.environment()` (versions, platform, devices) plus what a timing needs
    beside it (CPU model, core count, jaxlib, load average).

    Initialises jax's default backend (for `devices`): call it where the script may use jax anyway,
    not in a parent process before it starts the workers it measures.
    """
    from fgl_jax import environment, records
    return {**environment(), "cpu": records.cpu_model(), "cpu_count": os.cpu_count(), "jaxlib": _version("jaxlib"),
            "loadavg": loadavg()}


def peak_rss_mb() -> float:
    """Peak resident set size of this process so far, in MiB (ru_maxrss).

    It is the high-water mark of the whole process (data loading and compilation included), which is
    why the scripts that compare configurations run each one in its own worker process.
    """
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    # ru_maxrss is in KiB on Linux but in bytes on macOS
    return rss / (1024 * 1024) if sys.platform == "darwin" else rss / 1024


@dataclasses.dataclass(frozen=True)
class Timing:
    """Result of `timed`: seconds per call, wall clock and process CPU time.

    first_s: wall seconds of the first warm-up call (it holds the compile when `fn` is a jitted function
        called for the first time); None when there was no warm-up.
    wall_s / cpu_s: one entry per timed call. CPU time is of the whole process (all threads): other jobs
        on a shared machine inflate wall time much more than the work this process does.
    last: what the last call returned (to report a loss or accuracy without running again).
    """
    first_s: Optional[float]
    wall_s: tuple[float, ...]
    cpu_s: tuple[float, ...]
    last: Any = dataclasses.field(default=None, repr=False, compare=False)

    @property
    def median(self) -> float:
        """Median wall seconds per timed call (robust to the odd call slowed down by other jobs)."""
        return statistics.median(self.wall_s)

    @property
    def cpu_median(self) -> float:
        """Median process CPU seconds per timed call."""
        return statistics.median(self.cpu_s)


def timed(fn: Callable[[], Any], repeats: int, warmup: int = 1) -> Timing:
    """Call `fn` `warmup` times, then time `repeats` further calls, each until its result is ready.

    `fn` takes no arguments; jax dispatches asynchronously, so every call's return value goes through
    `jax.block_until_ready` before the clock stops. A loop that advances a state (a scan over rounds
    that returns the next state) passes a closure that stores the state in a box, e.g.
    `def step(): box["s"], loss = scan(box["s"]); return loss`.
    """
    import jax
    first = None
    out = None
    for i in range(warmup):
        t0 = time.perf_counter()
        out = jax.block_until_ready(fn())
        if i == 0:
            first = time.perf_counter() - t0
    wall, cpu = [], []
    for _ in range(repeats):
        t0, c0 = time.perf_counter(), time.process_time()
        out = jax.block_until_ready(fn())
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    return Timing(first, tuple(wall), tuple(cpu), out)


class LaunchError(RuntimeError):
    """A benchmark subprocess exited with a non-zero status; `stderr` holds its whole error output."""

    def __init__(self, cmd: Sequence[str], returncode: int, stderr: str):
        self.cmd, self.returncode, self.stderr = list(cmd), returncode, stderr
        super().__init__(f"benchmark command failed (exit {returncode}): {shlex.join(self.cmd)}\n{stderr[-3000:]}")


def launch(cmd: Sequence[str], cwd: Optional[Path | str] = None,
           env: Optional[Mapping[str, str]] = None) -> tuple[float, str]:
    """Run `cmd` to completion and return (wall seconds, stdout); raise `LaunchError` if it fails.

    The wall time covers the whole process (interpreter start, imports, data loading, compilation):
    what a user of the command waits for. `env` holds variables added to this process's environment
    (not a replacement for it). stdout and stderr are captured, so the worker's output does not mix
    with the parent's progress lines.
    """
    t0 = time.perf_counter()
    proc = subprocess.run(list(cmd), capture_output=True, text=True, cwd=cwd,
                          env=None if env is None else {**os.environ, **env})
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise LaunchError(cmd, proc.returncode, proc.stderr)
    return wall, proc.stdout


def emit_result(result: Mapping[str, Any]) -> None:
    """Worker side: print the worker's result as one JSON line for `read_result` in the parent."""
    print(RESULT_PREFIX + json.dumps(result, default=_json_default), flush=True)


def read_result(stdout: str) -> dict[str, Any]:
    """Parent side: the result of the last `emit_result` line in a worker's stdout.

    Raises ValueError if there is none: a worker that exited normally without its result is a bug.
    """
    lines = [ln for ln in stdout.splitlines() if ln.startswith(RESULT_PREFIX)]
    if not lines:
        raise ValueError(f"no {RESULT_PREFIX.strip()} line in the worker's output:\n{stdout[-2000:]}")
    return json.loads(lines[-1][len(RESULT_PREFIX):])


def command(script: Path | str, argv: Optional[Sequence[str]] = None) -> str:
    """The command line that reproduces this run, for the result file: `python <script> <argv>`.

    The script path is made relative to the repository root when it lies inside it (the file is
    committed, the checkout path is not); arguments are shell-quoted (an empty argument survives).
    `argv` defaults to this process's arguments (sys.argv[1:]).
    """
    path = Path(script).resolve()
    shown = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
    return shlex.join(["python", str(shown), *(sys.argv[1:] if argv is None else argv)])


def _json_default(obj: Any) -> Any:
    # numpy / jax scalars and arrays are not JSON types; tolist() gives Python ints, floats and lists
    # of them (an int stays an int). Anything else must at least convert to a float.
    if hasattr(obj, "tolist"):
        return obj.tolist()
    return float(obj)


# payload keys that describe the run rather than measure it: `write_record` moves them into the
# record's provenance (the machine, the versions, the date are taken there once, the same for every script)
RUN_KEYS = ("command", "machine", "environment", "date", "finished", "timestamp", "jax")


def write_record(path: Path | str, payload: Mapping[str, Any], *, config: Optional[Mapping[str, Any]] = None,
                 seeds: Sequence[int] = (), title: Optional[str] = None, kind: str = "benchmark",
                 parts: Optional[str] = None) -> Path:
    """Write a benchmark's result as its current `fgl_jax.record/1` at `path` (overwriting the one
    there; git keeps the history) and return the path.

    The record's id is the file's stem; its metrics are `payload` without RUN_KEYS; its provenance is
    `fgl_jax.records.provenance()` with the payload's command (default: this process's), the start of
    this process and, under `environment`, the payload's own machine description when it has one.
    The file is replaced atomically: an interrupted run never leaves half a record.
    parts: the metrics key of a benchmark whose invocations each measure only some of its parts
        (`metrics[parts]` maps part name -> part): the file's other parts are kept, each with the
        provenance of the run that measured it (`fgl_jax.records.write_parts`).
    """
    from fgl_jax import records
    path = Path(path)
    metrics = {k: v for k, v in payload.items() if k not in RUN_KEYS}
    env = payload.get("machine", payload.get("environment"))
    extra = {"environment": env} if env is not None else {}
    prov = records.provenance(payload.get("command") or command(sys.argv[0]), started=STARTED, cwd=ROOT, **extra)
    rec = records.make(path.stem, json.loads(json.dumps(metrics, default=_json_default)), kind=kind,
                       config=config, seeds=seeds, title=title, provenance=prov)
    return records.write(path, rec) if parts is None else records.write_parts(path, rec, parts)


@dataclasses.dataclass(frozen=True)
class Limited:
    """Result of `launch_limited`: how a worker process ended and what it used.

    wall_s: seconds from start to exit (or to the kill).
    stdout: everything it printed on stdout (also when it was stopped).
    stderr: its error output.
    returncode: the exit status (negative: killed by that signal).
    peak_rss_mb: the process's own peak RSS (ru_maxrss from wait4), in MiB.
    stopped: None when it exited by itself, else why it was killed ("budget", "memory",
        "machine memory": the machine's available memory fell below the floor).
    """
    wall_s: float
    stdout: str
    stderr: str
    returncode: int
    peak_rss_mb: float
    stopped: Optional[str]


def _rss_mb(pid: int) -> float:
    # current resident set of a live process (Linux /proc; 0 elsewhere, where only the budget applies)
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0.0


def available_mb() -> Optional[float]:
    """MemAvailable of the machine in MiB (Linux /proc/meminfo), or None where there is none."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) / 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def launch_limited(cmd: Sequence[str], budget_s: float, max_rss_mb: float, cwd: Optional[Path | str] = None,
                   env: Optional[Mapping[str, str]] = None, poll_s: float = 0.5,
                   min_available_mb: float = 0.0) -> Limited:
    """Run `cmd` as `launch` does, but kill it once it runs longer than `budget_s` or its resident
    set grows past `max_rss_mb`; never raises for the worker's own failure (the caller records it).

    For a benchmark whose points may not fit the machine: a point that is too slow or too large is
    stopped and recorded as skipped, and the next point still runs. Output goes to temporary files
    (a full pipe would stall a worker that nobody reads while it runs). The peak RSS is the
    child's own high-water mark from `os.wait4` (not RUSAGE_CHILDREN, which is the largest child
    of this process so far). Linux counts in it the launching process's resident set up to the
    child's exec (the memory it was forked with), so the calling process must stay small: a driver
    that imports no JAX, as bench_growth's is.

    Args:
        cmd: the worker's command line.
        budget_s: wall seconds after which it is killed.
        max_rss_mb: resident MiB above which it is killed (checked every `poll_s` seconds).
        cwd, env: as for `launch` (`env` is added to this process's environment).
        poll_s: seconds between checks.
        min_available_mb: kill it when the machine's available memory (`available_mb`) falls below
            this: on a shared machine the worker must not push another job into the OOM killer.

    Returns:
        A `Limited`.
    """
    import signal
    import tempfile
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(list(cmd), stdout=out, stderr=err, text=True, cwd=cwd,
                                env=None if env is None else {**os.environ, **env})
        stopped = None
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if stopped is None and time.perf_counter() - t0 > budget_s:
                stopped = "budget"
            elif stopped is None and _rss_mb(proc.pid) > max_rss_mb:
                stopped = "memory"
            elif stopped is None and (available_mb() or float("inf")) < min_available_mb:
                stopped = "machine memory"
            if stopped is not None:
                proc.send_signal(signal.SIGKILL)
                pid, status, usage = os.wait4(proc.pid, 0)
                break
            time.sleep(poll_s)
        proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
        wall = time.perf_counter() - t0
        out.seek(0)
        err.seek(0)
        rss = usage.ru_maxrss / (1024 * 1024) if sys.platform == "darwin" else usage.ru_maxrss / 1024
        return Limited(wall, out.read(), err.read(), proc.returncode, rss, stopped)
