"""From a config to results, the same way for every system: build -> run (one engine) -> outputs.

    from fgl_jax import experiment
    from fgl_jax.systems.hifgl import HiFGLConfig
    res = experiment.run_config(HiFGLConfig(dataset="cora"), out="runs/h")

`run_config` looks the system up in the registry by its config class, builds its `Program`
(host-side preparation, once), runs it through `fgl_jax.federated.run` with the program's hooks and
the key `jax.random.key(cfg.seed)`, and with `out` writes the four outputs every command writes:

    config.yaml    the resolved config (`system:` first), replayable with `--config`
    metrics.jsonl  one row per round (+ "eval" rows from the program's evaluation hook)
    summary.json   system, describe, best, final, rounds_run, extras, timings, environment
    checkpoints/   orbax checkpoints of the state (what `--resume` restores)
"""
from __future__ import annotations

import json
import math
import platform
import time
from pathlib import Path
from typing import Any, Optional

import numpy as np

from fgl_jax import registry, schema


def system_of(cfg: Any) -> registry.Entry:
    """The registered system whose config class `cfg` is an instance of."""
    for e in registry.entries("system"):
        if type(cfg) is e.info.get("config"):
            return e
    raise ValueError(f"{type(cfg).__name__} is not the config of a registered system "
                     f"(systems: {', '.join(registry.names('system'))})")


def config_class(system: str) -> type:
    return registry.entry("system", system).info["config"]


def default_config(system: str, **changes: Any):
    """The system's config with its paper defaults, `changes` checked and applied."""
    return schema.make(config_class(system), changes, source=f"{system} config")


def build(cfg: Any):
    """The config's `Program` (host preparation done once)."""
    return system_of(cfg).obj(cfg)


def environment() -> dict:
    """Versions and machine, recorded beside every result."""
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


def summary_dict(system: str, program, res, timings: dict) -> dict:
    return _jsonable({"system": system, "describe": dict(program.describe or {}), "best": res.best,
                      "final": res.final, "rounds": int(program.num_rounds), "rounds_run": res.rounds_run,
                      "diverged": res.diverged, "evaluations": res.evaluations, "extras": res.extras, **timings,
                      "environment": environment()})


def execute(program, seed: int, *, system: str = "custom", config_text: Optional[str] = None,
            out: Optional[str] = None, resume: bool = False, progress: bool = False, chunk: Optional[int] = None,
            build_seconds: float = 0.0, on_nonfinite: str = "raise"):
    """Run a built Program with its hooks; with `out`, write config.yaml, metrics.jsonl, summary.json, checkpoints/."""
    import jax
    from fgl_jax.federated.run import run
    t0 = time.perf_counter()
    if out is not None:
        Path(out).mkdir(parents=True, exist_ok=True)
        if config_text is not None:
            (Path(out) / "config.yaml").write_text(config_text)
    res = run(program.algorithm, program.data, jax.random.key(int(seed)), program.num_rounds, chunk=chunk,
              progress=progress, out_dir=out, resume=resume, hooks=program.hooks, on_nonfinite=on_nonfinite)
    timings = {"build_seconds": build_seconds, "compile_seconds": res.compile_seconds,
               "run_seconds": res.run_seconds, "wall_seconds": build_seconds + time.perf_counter() - t0}
    res.summary = summary_dict(system, program, res, timings)
    if out is not None:
        (Path(out) / "summary.json").write_text(json.dumps(res.summary, indent=2))
    return res


def run_config(cfg: Any, *, out: Optional[str] = None, resume: bool = False, progress: bool = False,
               chunk: Optional[int] = None, on_nonfinite: str = "raise"):
    """Build and run any system's config; the CLI, the experiments and the notebooks all call this."""
    entry = system_of(cfg)
    t0 = time.perf_counter()
    program = entry.obj(cfg)
    t_build = time.perf_counter() - t0
    return execute(program, cfg.seed, system=entry.name, config_text=schema.dump(cfg, entry.name), out=out,
                   resume=resume, progress=progress, chunk=chunk, build_seconds=t_build, on_nonfinite=on_nonfinite)
