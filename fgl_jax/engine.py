"""The engine's inner entry points: a documented internal namespace (`fgl_jax.engine`).

Users run through three public entry points, `fgl_jax.run` (an algorithm on its data),
`fgl_jax.sweep` (seeds x traced hyperparameters of one algorithm as one program) and
`fgl_jax.run_config` (a config: build, run, write the run directory), each taking one
`fgl_jax.RunOptions`. The names here are what those are built from; they are importable
(`from fgl_jax import engine; engine.make_scan`) for the code that needs a lower level, but they
are internal layout, not API, and may change between releases:

    execute      run a Program already built (`run_config` = build + execute): paper drivers and
                 notebooks whose Program needs data a config cannot name (a hypergraph, a cache)
    run_sharded  `run` with the client axis sharded over a device mesh (`run_config(devices=N)`
                 does this for config runs)
    run_grid     the `fgl-jax sweep` command's grid: traced values through `sweep`, other options
                 as separate programs
    make_scan, make_chunk, round_step, scan_rounds, Tracker
                 the compiled round loop (benchmarks time `make_scan` without the engine's host
                 work); every path runs the one round body `round_step`

__all__ lists them.
"""
from fgl_jax.experiment import execute
from fgl_jax.federated.run import Tracker, make_chunk, make_scan, round_step, scan_rounds
from fgl_jax.federated.sharding import run_sharded
from fgl_jax.federated.sweep import run_grid

__all__ = ["execute", "run_sharded", "run_grid", "make_scan", "make_chunk", "round_step", "scan_rounds", "Tracker"]
