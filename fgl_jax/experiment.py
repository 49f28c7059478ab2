"""From a config to results, the same way for every system: build -> run (one engine) -> outputs.

    from fgl_jax import experiment
    from fgl_jax.systems.hifgl import HiFGLConfig
    res = experiment.run_config(HiFGLConfig(dataset="cora"), out="runs/h")

`run_config` looks the system up in the registry by its config class, builds its `Program`
(host-side preparation, once), runs it through `fgl_jax.federated.run` with the program's hooks and
the key `jax.random.key(cfg.seed)`, and with `out` writes the four outputs every command writes:

    config.yaml    the resolved config (`system:` first), replayable with `--config`
    metrics.jsonl  one row per round (+ "eval" rows from the program's evaluation hook)
    summary.json   system, describe, best, final, rounds_run, extras, warnings, environment
    timings.json   build, compile, run, checkpoint and wall seconds; XLA programs and compilations
                   (`fgl_jax.cache.CompileCounter`; kept out of summary.json, which is deterministic)
    checkpoints/   orbax checkpoints of the state with checksums (what `--resume` restores)

A fresh run refuses a non-empty output directory (`overwrite=True` deletes the run it holds, and
nothing else); a resume checks the saved config first, against config.yaml and against the config
every checkpoint's manifest records (`fgl_jax.rundir`). The run holds a lock on its directory
(`rundir.RunLock`) while it writes there.
"""
from __future__ import annotations

import contextlib
import dataclasses
import json
import math
import platform
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, Optional, Sequence

import numpy as np

from fgl_jax import registry, schema

if TYPE_CHECKING:  # the engine (jax) is imported when a run starts, not with this module
    from fgl_jax.federated.options import RunOptions


def system_of(cfg: Any) -> registry.Entry:
    """The registered system whose config class `cfg` is an instance of."""
    # the systems imported so far first (a command imports only its own), then all of them
    for everything in (False, True):
        for e in registry.entries("system") if everything else registry.loaded_entries("system"):
            if type(cfg) is e.info.get("config"):
                return e
    raise ValueError(f"{type(cfg).__name__} is not the config of a registered system "
                     f"(systems: {', '.join(registry.names('system'))})")


def config_class(system: str) -> type:
    """The config dataclass of a registered system (its one schema).

    Args:
        system: a system name, e.g. "baseline", "hifgl", "fedgc".

    Returns:
        The config class, e.g. `RunConfig` for "baseline".

    Raises:
        UnknownNameError: no system of that name (the message lists the known ones).
    """
    return registry.entry("system", system).info["config"]


def default_config(system: str, **changes: Any):
    """The system's config with its paper defaults, `changes` checked and applied.

    Args:
        system: a system name, e.g. "baseline", "hifgl".
        **changes: field=value overrides (e.g. ``dataset="cora", clients=10``), checked against
            the system's schema.

    Returns:
        An instance of `config_class(system)`.

    Raises:
        UnknownNameError: no system of that name.
        ValueError: an unknown field or a value outside its range (one line naming both).
    """
    return schema.make(config_class(system), changes, source=f"{system} config")


def dataset_path(dataset: str, data_dir: Optional[str] = None) -> Optional[Path]:
    """The absolute path `dataset` names, or None for a registered name (`fgl_jax.data.source`
    decides; a relative path is looked up in the working directory, then under `data_dir`)."""
    from fgl_jax.data import UnknownDatasetError, source
    try:
        path = source(dataset, data_dir or None).path
    except UnknownDatasetError:  # no path and no registered name: the system's loader says so
        return None
    return None if path is None else path.resolve()


def resolve_dataset(cfg: Any, warn: bool = True) -> Any:
    """`cfg` with a dataset path made absolute and its digest recorded in `dataset_sha256`.

    A config whose recorded digest differs from the file's (a replay after the file changed) gets
    one warning line on standard error and the current digest; a registered name is left as is."""
    import dataclasses
    if not hasattr(cfg, "dataset_sha256"):
        return cfg
    from fgl_jax.data import path_sha256
    path = dataset_path(cfg.dataset, getattr(cfg, "data_dir", None))
    if path is None:  # a registered name: a given digest is checked against its files (one line if not)
        if cfg.dataset_sha256 is not None:
            from fgl_jax.data.registry import check_registered_sha256
            check_registered_sha256(cfg.dataset, cfg.dataset_sha256, getattr(cfg, "data_dir", None))
        return cfg
    digest = path_sha256(path)
    if warn and cfg.dataset_sha256 and cfg.dataset_sha256 != digest:
        print(f"fgl-jax: warning: dataset {path} changed since this config was written (sha256 "
              f"{cfg.dataset_sha256[:12]}... recorded, now {digest[:12]}...); running on the current file",
              file=sys.stderr)
    return dataclasses.replace(cfg, dataset=str(path), dataset_sha256=digest)


def build(cfg: Any):
    """The config's `Program` (host preparation done once).

    Args:
        cfg: a system's config (e.g. from `default_config`).

    Returns:
        The system's `Program`: algorithm, data, rounds and hooks, ready for `fgl_jax.engine.execute`.

    Raises:
        ValueError: `cfg` is not the config of a registered system, or the system refuses it.
    """
    return system_of(cfg).obj(cfg)


def environment() -> dict:
    """Versions and machine, recorded beside every result.

    Returns:
        A dict: "python", "jax", "flax", "optax", "numpy" versions, "platform", "processor" and
        "devices" (list of str).
    """
    import flax
    import jax
    import optax
    return {"python": platform.python_version(), "jax": jax.__version__, "flax": flax.__version__,
            "optax": optax.__version__, "numpy": np.__version__, "platform": platform.platform(),
            "processor": platform.processor() or platform.machine(), "devices": [str(d) for d in jax.devices()]}


def _jsonable(x: Any) -> Any:
    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    if isinstance(x, np.ndarray):
        return _jsonable(x.tolist())
    if isinstance(x, (np.floating, float)):
        v = float(x)
        return v if math.isfinite(v) else str(v)
    if isinstance(x, np.integer):
        return int(x)
    if hasattr(x, "shape") and hasattr(x, "dtype"):  # a jax array
        return _jsonable(np.asarray(x))
    if isinstance(x, (str, int, bool)) or x is None:
        return x
    return str(x)


def summary_dict(system: str, program, res) -> dict:
    """What summary.json holds: results only, so an interrupted and resumed run writes the same bytes
    as an uninterrupted one (timings go to timings.json)."""
    return _jsonable({"system": system, "describe": dict(program.describe or {}), "best": res.best,
                      "final": res.final, "rounds": int(program.num_rounds), "rounds_run": res.rounds_run,
                      "diverged": res.diverged, "evaluations": res.evaluations, "extras": res.extras,
                      "warnings": run_warnings(res), **totals(res.history), "environment": environment()})


def totals(history: dict) -> dict:
    """Sums over the rounds run of the communication columns (`fgl_jax.federated.communication.totals`)."""
    from fgl_jax.federated.communication import totals as comm_totals
    return comm_totals(history)


def run_warnings(res) -> list[str]:
    """What a reader of the results must know: a loss that ended far above where it started."""
    out = []
    loss = res.history.get("train_loss")
    if loss is not None and len(loss) > 1:
        first, last = float(np.mean(loss[0])), float(np.mean(loss[-1]))
        if math.isfinite(first) and first > 0 and last > 1e3 * first:
            out.append(f"train_loss ended at {last:.3g}, {last / first:.3g} x its first value: training diverged")
    return out


def _finished(out: Path) -> bool:
    return (out / "summary.json").is_file()


def execute(program, seed: int, options: Optional[RunOptions] = None, *, system: str = "custom",
            config_text: Optional[str] = None, build_seconds: float = 0.0, counter=None,
            cache_programs: bool = False, **changes: Any):
    """Run a built Program with its hooks (internal: `run_config` builds and calls this; paper
    drivers and tests that build a Program themselves call it too); with `options.out_dir`, write
    config.yaml, metrics.jsonl, summary.json, timings.json and checkpoints/.

    options: a `RunOptions` (keyword `changes` are applied to it; `out=` is `out_dir`). The
    program's hooks and per-round columns are the run's (`options.hooks` is not used).
    The run directory is made absolute once, here, and locked for the run (`rundir.RunLock`: a
    second process is refused). A fresh run refuses a non-empty directory unless `overwrite` (which
    deletes the run it holds and refuses a directory holding anything else: `rundir.prepare`).
    `resume` continues the run there: its saved config.yaml, and the config each checkpoint's
    manifest records, must equal `config_text` except in the keys of `resume_with_changes` (see
    `fgl_jax.rundir.RESUMABLE_CHANGES`); without config.yaml the newest manifest's config stands in
    for it. config.yaml is rewritten only after the checkpoint was restored. A finished run (summary.json) is not resumed unless
    its rounds grow. checkpoint_every: `fgl_jax.federated.run`'s save policy ("30s", rounds, "chunk").
    counter: a started `fgl_jax.cache.CompileCounter` (run_config starts one before the build).
    devices: None/0 = every local device, N = the first N (`fgl_jax.federated.devices`); the client
    axis is sharded when there is more than one. Under jax.distributed only process 0 writes the
    directory. tensorboard: also write the per-round metrics as TensorBoard event files into this
    directory, after each chunk (`fgl_jax.tensorboard`; needs tensorboardX). A resumed run appends
    from the restored round.
    cache_programs: the program was built by its system from `config_text` alone (`run_config`), so
    its compiled programs may go through the on-disk compiled-program cache (`program_context`).
    """
    from fgl_jax.federated.options import resolve
    opts = resolve(options, changes, "execute")
    with contextlib.ExitStack() as stack:
        return _execute(stack, program, seed, system, config_text, opts, build_seconds, counter, cache_programs)


def _check_resume(out: Path, saved: Optional[str], config_text: str, allowed: Sequence[str]) -> None:
    """The command's config against the run in `out`: config.yaml (`saved`) when it is there, else
    the config the newest checkpoint's manifest records, and every checkpoint's recorded digest;
    refused when neither can be checked but there are checkpoints to restore."""
    from fgl_jax import rundir
    from fgl_jax.federated import checkpoint
    new = schema.read_yaml_text(config_text, "this command")
    recorded = [(path, m) for path, m in checkpoint.manifests(out / "checkpoints") if "config_sha256" in m]
    if saved is not None:
        rundir.check_resume_config(out, saved, new, allowed=allowed)
    elif recorded:
        path, m = recorded[0]
        rundir.check_resume_config(out, str(m.get("config", "")), new, allowed=allowed,
                                   source=f"{path}.sha256 ({out / 'config.yaml'} is missing)")
    elif checkpoint.committed(out / "checkpoints"):
        raise ValueError(f"{rundir.arg('resume')}: {out / 'config.yaml'} is missing and the checkpoints in {out / 'checkpoints'} "
                         "record no config (written by an older fgl_jax), so this command cannot be checked "
                         f"against the run: put config.yaml back, or start again with {rundir.arg('overwrite')}")
    for path, m in recorded:
        rundir.check_recorded_config(path, m, new)


def _execute(stack: contextlib.ExitStack, program, seed, system, config_text, opts: RunOptions, build_seconds,
             counter, cache_programs):
    from fgl_jax import cache, rundir
    out, resume, overwrite, chunk = opts.out_dir, opts.resume, opts.overwrite, opts.chunk
    from fgl_jax.federated import devices as dev
    t0 = time.perf_counter()
    counter = counter or cache.CompileCounter()
    on_restored = None
    mesh = dev.choose_mesh(opts.devices)
    multi = jax_process_count() > 1
    # what a checkpoint's shards were cut for: a resume over another layout is refused (_check_layout)
    layout = {"processes": jax_process_count(), "devices": 1 if mesh is None else int(mesh.size)}
    if multi and chunk is None:
        # every process must run the same chunks (each chunk is a collective program): the chunk
        # length may not depend on a process's progress display; ~20 chunks give checkpoints to resume from
        chunk = max(1, math.ceil(program.num_rounds / 20)) if out is not None else program.num_rounds
    writer = not multi or dev.is_main_process()  # process 0 writes the run's files; all write checkpoints
    meta = None
    if out is not None:
        out = rundir.resolve_out(out)  # absolute, once: checkpoints are saved and restored by this path
        if resume:  # every process reads the same manifests, so all refuse alike
            _check_layout(out, layout)
        meta = dict(layout)
        if config_text is not None:  # every checkpoint records the config it continues
            meta.update({"config": config_text,
                         "config_sha256": rundir.config_digest(schema.read_yaml_text(config_text, "this command"))})
    failure = None
    if out is not None and writer:
        try:
            on_restored = _claim(stack, out, resume, overwrite, config_text, opts, program)
        except Exception as e:  # noqa: BLE001 - re-raised below, once the other processes know
            if not multi:
                raise
            failure = e
    if multi:
        main_ok, same_out = dev.agree_with_main(failure is None, None if out is None else str(out))
        if failure is not None:
            raise failure
        if not main_ok:
            raise ValueError("process 0 refused this run's directory (its error says why)")
        if not same_out:
            raise ValueError(f"{rundir.arg('out', out)}: process 0 was given another --out; every process of a "
                             "multi-process run gives the same --out, a directory all of them see")
    hooks, tb = program.hooks, None
    if opts.tensorboard is not None and writer:  # process 0 writes, as for `out`
        from fgl_jax import tensorboard as tbmod
        tb = tbmod.TensorBoardLog(opts.tensorboard)
        hooks = tbmod.with_tensorboard(hooks, tb)
        restored = on_restored

        def on_restored(start: int) -> None:  # a resumed run's earlier rounds are in the log already
            tb.rounds_written = int(start)
            if restored is not None:
                restored(start)
    try:
        engine = dataclasses.replace(
            opts, chunk=chunk, out_dir=out, overwrite=False, resume_with_changes=(), devices=None, tensorboard=None,
            hooks=hooks, state=None, on_restored=on_restored, per_round=getattr(program, "per_round", None),
            checkpoints=opts.checkpoints, checkpoint_meta=meta,
            program_context=program_context(system, config_text, program.data)
            if cache_programs and mesh is None and not multi else None)
        res = dev.run_on_devices(program.algorithm, program.data, seed_key(int(seed)), program.num_rounds, engine,
                                 mesh=mesh, system=system)
        if tb is not None:  # rounds after the last chunk hook (a stop, a divergence)
            tb.write({k: list(v) for k, v in res.history.items()})
    finally:
        if tb is not None:
            tb.close()
    timings = {"build_seconds": build_seconds, "compile_seconds": res.compile_seconds,
               "run_seconds": res.run_seconds, "checkpoint_seconds": res.checkpoint_seconds,
               "wall_seconds": build_seconds + time.perf_counter() - t0, **counter.read(),
               "cache_dir": str(cache.root()) if cache.root() is not None else None,
               "devices": 1 if mesh is None else int(mesh.size), "processes": jax_process_count(),
               "writer": out is not None and writer, "per_process_data": _per_process(program.data)}
    res.summary = summary_dict(system, program, res)
    res.timings = timings
    for w in res.summary["warnings"]:
        print(f"fgl-jax: warning: {w}", file=sys.stderr)
    if out is not None and writer:
        rundir.write_atomic(Path(out) / "summary.json", json.dumps(res.summary, indent=2))
        rundir.write_atomic(Path(out) / "timings.json", json.dumps(_jsonable(timings), indent=2))
    return res


def _claim(stack: contextlib.ExitStack, out: Path, resume: bool, overwrite: bool, config_text: Optional[str],
           opts: "RunOptions", program):
    """Process 0's (or the only process's) hold on the run directory: lock it, check it (`rundir.prepare`,
    the resumed config, a finished run) and write config.yaml. Returns the `on_restored` callback that
    rewrites config.yaml once a resume with allowed changes restored its checkpoint, or None."""
    from fgl_jax import rundir
    stack.enter_context(rundir.RunLock(out))  # before anything is deleted or written there
    out_path = rundir.prepare(out, resume=resume, overwrite=overwrite)
    saved = (out_path / "config.yaml").read_text() if (out_path / "config.yaml").is_file() else None
    if resume and config_text is not None:
        _check_resume(out_path, saved, config_text, opts.resume_with_changes)
    if resume and _finished(out_path):
        done = rundir.read_json(out_path / "summary.json")
        if int(program.num_rounds) <= int(done.get("rounds", 0)) or done.get("extras", {}).get("stopped_early"):
            raise ValueError(f"{out_path} holds a finished run (summary.json): nothing to resume; "
                             f"{rundir.arg('overwrite')} runs it again")
    if not resume and config_text is not None:
        rundir.write_atomic(out_path / "config.yaml", config_text)
    elif config_text is not None and config_text != saved:
        def on_restored(_start: int) -> None:
            rundir.write_atomic(out_path / "config.yaml", config_text)
        return on_restored
    return None


def _check_layout(out: Path, layout: dict) -> None:
    """Refuse a resume whose checkpoint was cut for another process or device count, when either
    side is a multi-process run: each process holds the shards of its own devices, and the client
    axis is padded to the device count, so the state would not fit. (One process over another
    --devices count is left to the structure check of `checkpoint.restore`, as before.) A manifest
    without the fields was written by a single-process run."""
    from fgl_jax import rundir
    from fgl_jax.federated import checkpoint
    found = checkpoint.manifests(out / "checkpoints")
    if not found:
        return
    path, m = found[0]
    saved = {"processes": int(m.get("processes", 1)), "devices": m.get("devices")}
    if saved["processes"] == 1 and layout["processes"] == 1:
        return
    if saved["processes"] != layout["processes"] or (saved["devices"] is not None
                                                     and int(saved["devices"]) != layout["devices"]):
        show = lambda d: (f"{d['processes']} process{'es' if d['processes'] != 1 else ''}"
                          + (f" x {d['devices']} device(s) in all" if d.get("devices") is not None else ""))
        raise ValueError(f"{rundir.arg('resume')}: checkpoint {path} was written by a run over {show(saved)}, this run "
                         f"has {show(layout)}; resume with the same --num-processes and devices per process, or "
                         f"start again with {rundir.arg('overwrite')}")


def program_context(system: str, config_text: Optional[str], data: Any) -> Optional[str]:
    """What keys a config-built run's compiled programs on disk (`fgl_jax.cache.program_key`): the
    system, its resolved config and a sha256 of the data arrays; None (no on-disk programs) when
    caching is off, there is no config, or code from outside fgl_jax is registered (its source is
    not in the key)."""
    from fgl_jax import cache
    if cache.root() is None or config_text is None or registry.foreign():
        return None
    return json.dumps({"system": system, "config": config_text, "data": cache.tree_digest(data)})


def _per_process(data: Any) -> bool:
    """True when each process built only its own clients' rows (`fgl_jax.federated.local_data`)."""
    if jax_process_count() < 2:
        return False
    from fgl_jax.federated.sharding import is_global
    return is_global(data)


def jax_process_count() -> int:
    import jax
    return jax.process_count()


def seed_key(seed: int):
    """`jax.random.key(seed)` without compiling anything: for the default threefry keys and
    0 <= seed < 2**31 its key data is [0, seed] (tests/test_cache.py checks it against
    jax.random.key); other seeds and key implementations go through jax.random.key."""
    import jax
    if 0 <= seed < 2 ** 31 and str(jax.config.jax_default_prng_impl) == "threefry2x32":
        return jax.random.wrap_key_data(np.array([0, seed], np.uint32))
    return jax.random.key(seed)


def run_config(cfg: Any, options: Optional[RunOptions] = None, **changes: Any):
    """Build and run any system's config; the CLI, the experiments and the notebooks all call this.

    options: a `RunOptions` (out_dir, resume, overwrite, resume_with_changes, progress, chunk,
    on_nonfinite, checkpoint_every, devices, tensorboard); keyword `changes` are applied to it
    (`run_config(cfg, out="runs/x", chunk=5)`; `out` is `out_dir`). A chunk or loss_guard not given
    comes from the config (`cfg.chunk`, `cfg.loss_guard`), when it has one.
    A dataset path is recorded absolute with its sha256 (`resolve_dataset`) in config.yaml.
    checkpoint_every: "30s" (default; at most one save per 30 s plus the last round), a number of
    rounds, or "chunk". tensorboard: a directory for TensorBoard event files (`execute`).

    Args:
        cfg: a system's config (`default_config`, `schema.load`, ...).
        options: a `RunOptions`; None: the defaults.
        **changes: `RunOptions` fields to change (``out`` is ``out_dir``).

    Returns:
        The `RunResult`, with ``summary`` (as summary.json) and ``timings`` (as timings.json) set.

    Raises:
        ValueError: `cfg` is not a registered system's config; an unusable run directory (not empty
            without overwrite/resume, in use, a resume whose config or dataset changed).
        TypeError: `options` is not a `RunOptions`, or an unknown option in `changes`.
    """
    from fgl_jax.cache import CompileCounter
    from fgl_jax.federated.options import resolve
    opts = resolve(options, changes, "run_config")
    if opts.tensorboard is not None:  # a missing writer fails before the build, not after it
        from fgl_jax.tensorboard import check_available
        check_available(opts.tensorboard)
    from fgl_jax import progress
    counter = CompileCounter()
    entry = system_of(cfg)
    with progress.report(opts.progress):  # phase lines: loading, preparing (the system's), compiling, running
        progress.phase("loading", str(getattr(cfg, "dataset", entry.name)))
        cfg = resolve_dataset(cfg, warn=not opts.resume)  # a resume with a changed file is refused instead
        t0 = time.perf_counter()
        program = entry.obj(cfg)
        t_build = time.perf_counter() - t0
        opts = dataclasses.replace(opts, chunk=opts.chunk if opts.chunk is not None else getattr(cfg, "chunk", None),
                                   loss_guard=opts.loss_guard or float(getattr(cfg, "loss_guard", 0.0)))
        return execute(program, cfg.seed, opts, system=entry.name, config_text=schema.dump(cfg, entry.name),
                       build_seconds=t_build, counter=counter, cache_programs=True)


class LoadedRun(NamedTuple):
    """A finished run directory rebuilt (`load_run`).

    Attributes:
        system: the registered system's name.
        config: its config, as config.yaml holds it (with `load_run`'s changes applied).
        program: the `Program` built from that config (host preparation redone, as `--resume` does).
        state: the algorithm state of the newest intact checkpoint (the last round of a finished run).
        rounds: the rounds that checkpoint has done.
    """

    system: str
    config: Any
    program: Any
    state: Any
    rounds: int


def load_run(run_dir: Any, **changes: Any) -> LoadedRun:
    """Rebuild a finished run from its directory: its config.yaml, the program built from it (data,
    partition and model, as `--resume` rebuilds them) and its final checkpoint's state.

    Args:
        run_dir: a directory written by `run_config(..., out=...)` / `fgl-jax ... --out`.
        **changes: config fields to change before the build (fields that do not change the state,
            e.g. ``eval_mia=True`` to get the membership attack's hook).

    Returns:
        A `LoadedRun`.

    Raises:
        ValueError: one line for a directory that is missing, holds no finished run (no
            summary.json), no config.yaml, no checkpoint, or a checkpoint that does not fit the config.
    """
    import jax

    from fgl_jax import rundir
    from fgl_jax.federated import checkpoint
    from fgl_jax.federated.run import Tracker
    shown = run_dir
    out = rundir.resolve_out(run_dir)
    if not out.is_dir():
        raise ValueError(f"run directory {shown} does not exist")
    if not (out / "config.yaml").is_file():
        raise ValueError(f"{shown} holds no run: {out / 'config.yaml'} is missing (a directory written with --out)")
    if not (out / "summary.json").is_file():
        raise ValueError(f"{shown} holds no finished run (no summary.json): finish it with --resume first")
    if not checkpoint.committed(out / "checkpoints"):
        raise ValueError(f"{shown} holds no checkpoint ({out / 'checkpoints'} is missing or empty): the run's final "
                         "model is not stored; run it again with --out")
    text = (out / "config.yaml").read_text(encoding="utf-8")
    values = schema.read_yaml_text(text, str(out / "config.yaml"))
    system = str(values.pop("system", "baseline"))
    entry = registry.entry("system", system)
    cls = entry.info["config"]
    where = str(out / "config.yaml")
    values = schema.check(cls, schema.from_yaml(cls, values, where), where)
    unknown = sorted(set(changes) - set(schema.fields(cls)))
    if unknown:
        raise ValueError(f"{shown} holds a {system} run, whose config has no {', '.join(unknown)}")
    cfg = schema.make(cls, {**values, **changes}, source=where)
    program = entry.obj(resolve_dataset(cfg))
    key = seed_key(int(cfg.seed))
    like = jax.eval_shape(program.algorithm.init, key, program.data)
    found = checkpoint.restore(out / "checkpoints", like, Tracker.empty(program.algorithm.select))
    if found is None:  # (committed() saw one: only a race with a deletion gets here)
        raise ValueError(f"{shown} holds no checkpoint to restore")
    rounds, state, _, _ = found
    return LoadedRun(entry.name, cfg, program, state, int(rounds))
