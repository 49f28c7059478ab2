"""Vectorised sweeps: many seeds / hyperparameter values as ONE compiled program.

`sweep` (public as `fgl_jax.sweep`) vmaps `init` and the `lax.scan` over rounds across S members,
every seed with every combination of the given values (the product, as `fgl-jax sweep --seeds
--grid`; `run_sweep` = `sweep(paired=True)` takes explicit member lists). Members differ in
their PRNG key and in traced hyperparameters stored in `state.hp` (e.g. lr, prox_mu): values
that do not change any shape. A shape-changing parameter (hidden size, clients) cannot be
vmapped; `check_sweepable` refuses it with a clear message.

Shapes: S members (len(seeds)); `[S, rounds]` one value per member and round.
"""
from __future__ import annotations

import dataclasses
import time
from typing import Any, Mapping, Optional, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from fgl_jax import progress as phase_lines
from fgl_jax.federated.algorithm import FederatedAlgorithm, x64_scope
from fgl_jax.federated.run import Tracker, bad_round, best_by_validation, lowest, scan_rounds

SHAPE_CHANGING = ("hidden", "num_layers", "clients", "local_steps", "rounds", "model", "dataset",
                  "partition", "algorithm", "heads")


@dataclasses.dataclass
class SweepResult:
    """The members of a sweep (`sweep`), S = len(seeds).

    Attributes:
        history: metric -> np.ndarray `[S, rounds]`.
        best: "best_val", "best_test", "best_round" -> np.ndarray `[S]`, each member's
            best-validation round.
        members: one dict per member: its seed and hyperparameter values.
        compile_seconds: the time spent compiling.
        run_seconds: the time spent running.
        diverged: per member, None or "round r: why" for a member that diverged.
    """

    history: dict          # metric -> np.ndarray [S, rounds]
    best: dict             # best_val, best_test, best_round -> np.ndarray [S]
    members: list          # one dict per member: seed + hyperparameter values
    compile_seconds: float
    run_seconds: float
    diverged: list = dataclasses.field(default_factory=list)  # per member: None or "round r: why"
    # XLA programs (compilations or persistent-cache loads) while compiling the member program and
    # while running it: {"compile": 1, "run": 0} when every member shares the one program
    programs: dict = dataclasses.field(default_factory=dict)


def check_sweepable(names: Sequence[str], hp_keys: Sequence[str]) -> None:
    for n in names:
        if n in SHAPE_CHANGING:
            raise ValueError(f"cannot vectorise a sweep over {n!r}: it changes array shapes or the program; "
                             "run separate programs (one per value) instead")
        if n not in hp_keys:
            raise ValueError(f"cannot vectorise a sweep over {n!r}: this algorithm's traced hyperparameters "
                             f"are {sorted(hp_keys)}")


def sweep(algorithm: FederatedAlgorithm, data: Any, seeds: Sequence[int], num_rounds: int,
          hparams: Optional[Mapping[str, Sequence[float]]] = None, *, paired: bool = False, mode: str = "auto",
          loss_guard: float = 0.0, mesh=None, data_axes: Any = None) -> SweepResult:
    """Run every seed with every combination of the traced values: the product, as `fgl-jax sweep
    --seeds --grid` takes it.

    hparams maps a name in state.hp to its values. The members are
    `itertools.product(seeds, *hparams.values())` in that order (seed outermost, then each name
    in the mapping's order), S = len(seeds) * prod(len(values)); `SweepResult.members` names each
    one's seed and values. `paired=True` passes an explicit member list instead: member i is
    seeds[i] with value i of every list (all lists as long as `seeds`), e.g. a hand-picked set of
    points; `run_sweep` is that form.

    data_axes: None (every member trains on `data`) or a pytree like `data` of 0 / None: the
    leaves marked 0 carry a leading member axis [S, ...] (e.g. the masks of S fixed splits,
    `fgl_jax.systems.baseline.fixed_splits`), so data that differs only in values is a member axis of the one
    program, like the seeds.

    Every member runs the one round body of `fgl_jax.run` (`fgl_jax.federated.run.scan_rounds`),
    with its own key and traced values; the result holds every member's history [S, rounds] and
    its best-validation round.

    mesh: a 1-D device mesh (`fgl_jax.federated.devices.choose_mesh`): the members are split over
    its devices (vmap mode; the member axis is padded to a multiple of the device count with
    copies of member 0, dropped afterwards) and the data is replicated. Members are independent,
    so this needs no communication and gives the one-device numbers.

    mode: "vmap" = one program over all members at once (the win on accelerators);
    "sequential" = the single-member program compiled ONCE and called S times (on a CPU,
    which has no idle parallel hardware, this is faster: see benchmarks/results/fedavg.json);
    "auto" = vmap on GPU/TPU, sequential on CPU. Both give the same numbers.
    Member i uses key jax.random.key(seeds[i]) exactly as `run(..., key(seeds[i]))` does, so a
    member equals the corresponding single run (tested). A member whose metrics turn non-finite
    (or whose loss passes `loss_guard` x its first, see `fgl_jax.federated.run`) is reported on
    its rounds before that, with `SweepResult.diverged` saying where; the others are unaffected.

    Args:
        algorithm: the `FederatedAlgorithm`.
        data: its data (a `FedData`), shared by every member.
        seeds: the S members' seeds.
        num_rounds: the rounds each member runs.
        hparams: name in ``state.hp`` -> its values (the product with the seeds; paired: S values,
            one per member); None: every member uses the algorithm's own values. Names that change
            shapes or the program are refused.
        paired: member i is seeds[i] with value i of every list, instead of the product.
        mode: "auto", "vmap" or "sequential" (above).
        loss_guard: when positive, a round whose train_loss exceeds loss_guard x the first counts as diverged.
        mesh: a 1-D device mesh over which the members are split, or None.
        data_axes: None, or a pytree like `data` of 0 / None marking leaves with a member axis.

    Returns:
        A `SweepResult` with `[S, rounds]` histories and `[S]` best-round metrics.

    Raises:
        ValueError: no seeds, an unknown mode, a value list whose length is not S, or a
            hyperparameter that is not traced (not in ``state.hp``) or changes shapes.
    """
    varied = [k for k, v in (hparams or {}).items() if len(set(map(float, v))) > 1]
    seeds, hparams = members_of(seeds, hparams, paired)
    with x64_scope(algorithm):
        res = _run_sweep(algorithm, data, seeds, num_rounds, hparams, mode, loss_guard, mesh, data_axes)
    if not paired:
        hists = [{k: v[i] for k, v in res.history.items()} for i in range(len(res.members))]
        for k in unvaried_axes(res.members, hists, varied):
            import warnings
            warnings.warn(f"sweep: hparams[{k!r}] changes no member's result (every value gives identical metrics): "
                          "this algorithm's configuration does not use it", UserWarning, stacklevel=2)
    return res


def members_of(seeds: Sequence[int], hparams: Optional[Mapping[str, Sequence[float]]],
               paired: bool) -> tuple[list, dict]:
    """The member list (seeds [S], name -> values [S]) of `sweep`: the product of the seeds and
    every value list, or, paired, the lists as given (each as long as `seeds`)."""
    import itertools
    seeds = [int(s) for s in seeds]
    hparams = {k: list(v) for k, v in (hparams or {}).items()}
    if paired:
        for name, vals in hparams.items():
            if len(vals) != len(seeds):
                raise ValueError(f"sweep(paired=True): hparams[{name!r}] has {len(vals)} values, expected "
                                 f"{len(seeds)} (one per seed); without paired=True every seed runs every value")
        return seeds, hparams
    for name, vals in hparams.items():
        if not vals:
            raise ValueError(f"sweep: hparams[{name!r}] has no values")
    members = list(itertools.product(seeds, *hparams.values()))
    return [m[0] for m in members], {k: [m[1 + i] for m in members] for i, k in enumerate(hparams)}


def run_sweep(algorithm: FederatedAlgorithm, data: Any, seeds: Sequence[int], num_rounds: int,
              hparams: Optional[Mapping[str, Sequence[float]]] = None, **kwargs) -> SweepResult:
    """`sweep(..., paired=True)`: member i is seeds[i] with value i of every list (the engine's
    explicit member lists: `run_grid`, the systems' tests). `fgl_jax.run_sweep`, the earlier
    public name, resolves to `sweep` itself."""
    return sweep(algorithm, data, seeds, num_rounds, hparams, paired=True, **kwargs)


def _run_sweep(algorithm, data, seeds, num_rounds, hparams, mode, loss_guard=0.0, mesh=None,
               data_axes=None) -> SweepResult:
    if mesh is not None and mesh.size > 1 and mode == "sequential":
        import sys
        print(f"fgl-jax: notice: a sequential sweep runs on one device; --sweep-mode vmap (or auto) splits the "
              f"members over the {mesh.size} devices", file=sys.stderr)
        mesh = None
    if mesh is not None and mesh.size == 1:
        mesh = None
    if data_axes is not None and mesh is not None:
        mesh = None  # per-member data is not split over devices (_split_members replicates data)
    if mode == "auto":
        mode = "vmap" if mesh is not None or jax.default_backend() != "cpu" else "sequential"
    if mode not in ("vmap", "sequential"):
        raise ValueError(f"sweep mode must be 'auto', 'vmap' or 'sequential', got {mode!r}")
    seeds = [int(s) for s in seeds]
    s = len(seeds)
    if s == 0:
        raise ValueError("sweep needs at least one member")
    hparams = dict(hparams or {})
    for name, vals in hparams.items():
        if len(vals) != s:
            raise ValueError(f"sweep value list for {name!r} has {len(vals)} entries, expected {s} (one per seed)")
    keys = jax.vmap(jax.random.key)(jnp.asarray(seeds, jnp.uint32))
    split = jax.vmap(jax.random.split)(keys)
    init_keys, run_keys = split[:, 0], split[:, 1]

    def member(data, init_key, run_key, hp_values):  # data is an argument: closed-over arrays become constants
        state = algorithm.init(init_key, data)
        if hp_values:
            check_sweepable(list(hp_values), list(state.hp))
            state = state.replace(hp={**state.hp, **{k: jnp.asarray(v, jnp.float32) for k, v in hp_values.items()}})

        _, tracker, metrics = scan_rounds(algorithm.round, state, Tracker.empty(algorithm.select), data, run_key,
                                          jnp.arange(num_rounds, dtype=jnp.int32))
        return tracker, metrics

    from fgl_jax.cache import CompileCounter
    hp_arrays = {k: jnp.asarray(v, jnp.float32) for k, v in hparams.items()}
    phase_lines.phase("compiling", f"{s} member{'s' if s > 1 else ''}, {mode}")
    if mode == "vmap":
        args = (data, init_keys, run_keys, hp_arrays)
        if mesh is not None:
            args = _split_members(args, mesh)
        counter = CompileCounter()
        t0 = time.perf_counter()
        compiled = jax.jit(jax.vmap(member, in_axes=(data_axes, 0, 0, 0))).lower(*args).compile()
        t1 = time.perf_counter()
        at_compile = counter.read()["programs"]
        phase_lines.phase("running", f"{s} member{'s' if s > 1 else ''} x {num_rounds} rounds")
        tracker, metrics = jax.tree.map(lambda a: np.asarray(a)[:s], _gather(compiled(*args)))
        t2 = time.perf_counter()
    else:
        mine = (lambda i: data) if data_axes is None else (
            lambda i: jax.tree.map(lambda ax, a: a if ax is None else a[i], data_axes, data,
                                   is_leaf=lambda x: x is None))
        pick = lambda i: (mine(i), init_keys[i], run_keys[i], {k: v[i] for k, v in hp_arrays.items()})
        first = pick(0)  # its key indexing is compiled here, outside the counted window
        counter = CompileCounter()
        t0 = time.perf_counter()
        compiled = jax.jit(member).lower(*first).compile()
        t1 = time.perf_counter()
        at_compile = counter.read()["programs"]
        phase_lines.phase("running", f"{s} member{'s' if s > 1 else ''} x {num_rounds} rounds")
        outs = [jax.device_get(compiled(*pick(i))) for i in range(s)]
        t2 = time.perf_counter()
        tracker, metrics = jax.tree.map(lambda *xs: np.stack(xs), *outs)
    history = {k: np.asarray(v) for k, v in metrics.items()}
    members = [{"seed": seeds[i], **{k: float(v[i]) for k, v in hparams.items()}} for i in range(s)]
    # a "min" selection (val_loss) is tracked negated: reported as it was
    best = {"best_val": np.array(tracker.best_val) * (-1.0 if lowest(algorithm.select) else 1.0),
            "best_test": np.array(tracker.best_test),
            "best_round": np.array(tracker.best_round) + 1}
    diverged = []
    for i in range(s):
        # a diverged member is reported on its finite rounds (its later rounds become NaN), the others stand
        mine = {k: v[i] for k, v in history.items()}
        first = float(np.mean(mine["train_loss"][0])) if "train_loss" in mine else None
        bad = bad_round(mine, first, loss_guard)
        diverged.append(None if bad is None else f"round {bad[0] + 1}: {bad[1]}")
        if bad is not None:
            for k in history:
                if np.issubdtype(history[k].dtype, np.floating):
                    history[k][i, bad[0]:] = np.nan
            ok = {k: v[i, :bad[0]] for k, v in history.items() if k in algorithm.select}
            b = best_by_validation(ok, algorithm.select) if bad[0] > 0 and algorithm.select[0] in ok else \
                {"best_val": np.nan, "best_test": np.nan, "best_round": 0}
            for k in best:
                best[k][i] = b[k]
    programs = {"compile": int(at_compile), "run": int(counter.read()["programs"] - at_compile)}
    return SweepResult(history, best, members, t1 - t0, t2 - t1, diverged, programs)


def _gather(tree):
    """Every member's outputs on the host of every process: a member axis split over several
    processes' devices is all-gathered (`process_allgather`, each process contributes its own
    members); one process's arrays are fetched as they are."""
    leaves = jax.tree.leaves(tree)
    if all(getattr(a, "is_fully_addressable", True) for a in leaves):
        return jax.device_get(tree)
    from jax.experimental import multihost_utils
    return jax.tree.map(lambda a: a if a.is_fully_addressable else multihost_utils.process_allgather(a, tiled=True),
                        tree)


def _split_members(args, mesh):
    """(data, init_keys, run_keys, hp_arrays) placed on `mesh`: data replicated, the member axis
    padded (copies of member 0) to a multiple of the device count and split over the devices."""
    from jax.sharding import NamedSharding, PartitionSpec as P
    from fgl_jax.federated.sharding import put_global
    data, *members = args
    s = int(members[0].shape[0])
    pad = -s % mesh.size
    split, rep = NamedSharding(mesh, P(mesh.axis_names[0])), NamedSharding(mesh, P())

    def place(a):
        if pad:
            a = jnp.concatenate([a, jnp.repeat(a[:1], pad, axis=0)])
        return put_global(a, split)  # each process places its own devices' members (several hosts too)
    return (jax.tree.map(lambda a: put_global(a, rep), data), *jax.tree.map(place, members))


# ------------------------------------------------------------------------------------------------
# Grids over any system: `fgl-jax sweep --system <name> --config f.yaml --seeds ... --grid k=v1,v2`
# ------------------------------------------------------------------------------------------------

@dataclasses.dataclass
class GridResult:
    """A seeds x hyperparameter grid of one system, possibly over several programs.

    rows: one dict per member (seed, grid values, best_val, best_test, best_round, final_*);
    history: metric -> np.ndarray [members, max rounds] (NaN-padded when programs differ in length);
    vector_axes: grid names vectorised in one program (traced `state.hp` entries);
    program_axes: grid names that change the program (one build + one compile per value).
    """

    axes: dict
    vector_axes: list
    program_axes: list
    rows: list
    history: dict
    compile_seconds: float
    run_seconds: float
    programs: int
    messages: list


def traced_hparams(program) -> list[str]:
    """Names in the program's `state.hp` (what `sweep` can vectorise), from shapes only."""
    with x64_scope(program.algorithm):
        state = jax.eval_shape(program.algorithm.init, jax.random.key(0), program.data)
    return sorted(getattr(state, "hp", {}) or {})


def run_grid(build, options: Mapping[str, Any], seeds: Sequence[int], grid: Mapping[str, Sequence[Any]],
             mode: str = "auto", log=print, devices: Optional[int] = None) -> GridResult:
    """Run every (seed, grid point): traced hyperparameters vectorised with `sweep`, the rest
    (shape- or program-changing options) as separate programs, one per value, with a message.

    build(options) -> Program (a system's `build_program`); options: the base options; grid:
    name -> values, where a name is a `state.hp` entry or an option of the system. devices: the
    members of each program are split over this many local devices (None/0 = all; see `sweep`).
    """
    import itertools
    from fgl_jax.federated.devices import choose_mesh
    mesh = choose_mesh(devices)
    seeds = [int(s) for s in seeds]
    if not seeds:
        raise ValueError("sweep needs at least one seed")
    grid = {k: list(v) for k, v in grid.items()}
    for k, v in grid.items():
        if not v:
            raise ValueError(f"sweep grid {k!r} has no values")
        if k == "seed":
            raise ValueError("give seeds with --seeds, not in the grid")
    first = {k: v[0] for k, v in grid.items() if k in options}
    # the members are split over the devices and the data replicated: every process needs all of it
    build = (lambda b: lambda o: _whole(b, o))(build)
    program = build({**options, **first})
    hp_keys = traced_hparams(program)
    vector = [k for k in grid if k in hp_keys]
    other = [k for k in grid if k not in hp_keys]
    for k in other:
        if k not in options:
            raise ValueError(f"cannot sweep over {k!r}: it is neither a traced hyperparameter of this program "
                             f"({hp_keys}) nor an option ({sorted(options)})")
    messages = []
    for k in other:
        why = "changes array shapes or the program" if k in SHAPE_CHANGING else "is not a traced hyperparameter"
        messages.append(f"{k!r} {why} (traced: {hp_keys}): running {len(grid[k])} separate programs, one per value")
        log(messages[-1])
    combos = list(itertools.product(*[grid[k] for k in other])) or [()]
    guard = float(options.get("loss_guard", 0.0) or 0.0)
    rows, hists = [], []
    compile_s = run_s = 0.0
    for ci, combo in enumerate(combos):
        prog_vals = dict(zip(other, combo))
        if ci > 0:
            phase_lines.phase("preparing", f"program {ci + 1}/{len(combos)}: "
                          + ", ".join(f"{k}={v}" for k, v in prog_vals.items()))
            program = build({**options, **first, **prog_vals})
        members = list(itertools.product(seeds, *[grid[k] for k in vector]))
        hp = {k: [float(m[1 + i]) for m in members] for i, k in enumerate(vector)}
        if any(h is not None for h in program.hooks):
            # the program's hooks (evaluation, early stopping, its own selection, finaliser) decide what
            # a run reports: members go through the engine one by one (compiled once, see run.compiled_scan)
            res = _run_members_with_hooks(program, members, vector, guard)
        else:
            res = run_sweep(program.algorithm, program.data, [m[0] for m in members], program.num_rounds, hp,
                            mode=mode, loss_guard=guard, mesh=mesh)
        compile_s += res.compile_seconds
        run_s += res.run_seconds
        for i, m in enumerate(members):  # both paths keep the member order
            row = {"seed": m[0], **{k: m[1 + j] for j, k in enumerate(vector)}, **prog_vals, "rounds": int(program.num_rounds),
                   "best_val": float(res.best["best_val"][i]), "best_test": float(res.best["best_test"][i]),
                   "best_round": int(res.best["best_round"][i])}
            why = res.diverged[i] if i < len(res.diverged) else None
            if why is not None:
                row["diverged"] = why
                named = ", ".join(f"{k}={v}" for k, v in row.items() if k in ["seed", *vector, *prog_vals])
                messages.append(f"member {named} diverged at {why} (its finite rounds are reported)")
                log(messages[-1])
            for name, hist in res.history.items():  # every metric's last round (e.g. FedHGL's sel_test_acc)
                if hist.ndim == 2:
                    row[f"final_{name}"] = float(hist[i, -1])
            ran = rounds_run(res.history, i, int(program.num_rounds))
            row.update(resource_columns(getattr(program, "per_round", None) or {}, ran))
            if getattr(program, "account", None) is not None and vector:  # e.g. dp_epsilon of its own dp_noise
                row.update(program.account({k: float(m[1 + j]) for j, k in enumerate(vector)}, ran))
            rows.append(row)
            hists.append({k: np.asarray(v[i], np.float64) for k, v in res.history.items() if v.ndim == 2})
    names = sorted(set().union(*[h.keys() for h in hists]))
    longest = max(len(next(iter(h.values()))) for h in hists if h)
    history = {}
    for n in names:
        arr = np.full((len(hists), longest), np.nan)
        for i, h in enumerate(hists):
            if n in h:
                arr[i, :len(h[n])] = h[n]
        history[n] = arr
    for k in unvaried_axes(rows, hists, [k for k in grid if len(grid[k]) > 1]):
        messages.append(f"warning: grid axis {k}={','.join(str(v) for v in grid[k])} changes no member's result "
                        "(every value gives identical metrics): this configuration does not use it")
        import sys
        print(f"fgl-jax: {messages[-1]}", file=sys.stderr)
    axes = {"seed": seeds, **grid}
    return GridResult(axes, vector, other, rows, history, compile_s, run_s, len(combos), messages)


def _whole(build, options):
    """build(options) with the whole data in every process (`local_data.whole_data`)."""
    from fgl_jax.federated.local_data import whole_data
    with whole_data():
        return build(options)


def unvaried_axes(members: Sequence[Mapping[str, Any]], histories: Sequence[Mapping[str, np.ndarray]],
                  axes: Sequence[str]) -> list[str]:
    """The axes whose values change no member's result: for every setting of the other keys
    (seed, other axes), the members that differ only in that axis have identical histories
    (metric -> [rounds], compared exactly: an unused option gives bit-identical programs' results).

    members: one dict per member naming its seed and axis values; histories: the members' metrics."""
    out = []
    for axis in axes:
        groups: dict = {}
        for m, h in zip(members, histories):
            rest = tuple(sorted((k, repr(v)) for k, v in m.items() if k != axis and (k == "seed" or k in axes)))
            groups.setdefault(rest, []).append(h)
        compared = [g for g in groups.values() if len(g) > 1]
        if compared and all(_same_history(g[0], h) for g in compared for h in g[1:]):
            out.append(axis)
    return out


def _same_history(a: Mapping[str, np.ndarray], b: Mapping[str, np.ndarray]) -> bool:
    return a.keys() == b.keys() and all(np.array_equal(np.asarray(a[k]), np.asarray(b[k]), equal_nan=True)
                                        for k in a)


def rounds_run(history: dict, member: int, num_rounds: int) -> int:
    """Rounds member `member` ran: up to its first non-finite train_loss (a diverged member), else all."""
    loss = history.get("train_loss")
    if loss is None or loss.ndim != 2:
        return num_rounds
    bad = np.flatnonzero(~np.isfinite(loss[member]))
    return int(bad[0]) if bad.size else min(num_rounds, loss.shape[1])


def resource_columns(per_round: dict, rounds: int) -> dict:
    """A sweep row's columns from the program's host-computed per-round values (`Program.per_round`)
    over its first `rounds` rounds: comm_up_bytes / comm_down_bytes (totals, as in summary.json) and
    dp_epsilon (the accountant's epsilon after the last round run). Empty when the run has neither."""
    from fgl_jax.federated.communication import totals
    out = {}
    comm = totals({k: np.asarray(v)[:rounds] for k, v in per_round.items()}).get("communication")
    if comm:
        out["comm_up_bytes"], out["comm_down_bytes"] = comm["up_bytes"], comm["down_bytes"]
    if "dp_epsilon" in per_round and rounds > 0:
        out["dp_epsilon"] = float(np.asarray(per_round["dp_epsilon"])[rounds - 1])
    return out


def _run_members_with_hooks(program, members: list, vector: list, loss_guard: float = 0.0) -> SweepResult:
    """Each member (seed, traced values) through `fgl_jax.federated.run` with the program's hooks; the
    traced values are set in `state.hp` after init, exactly as `sweep` sets them."""
    from fgl_jax.federated.run import run
    results = []
    for m in members:
        key = jax.random.key(int(m[0]))
        with x64_scope(program.algorithm):
            state = jax.jit(program.algorithm.init)(jax.random.split(key)[0], program.data)
            if vector:
                state = state.replace(hp={**state.hp, **{k: jnp.asarray(m[1 + i], state.hp[k].dtype)
                                                          for i, k in enumerate(vector)}})
        results.append(run(program.algorithm, program.data, key, program.num_rounds, state=state,
                           hooks=program.hooks, on_nonfinite="stop", loss_guard=loss_guard))
    longest = max(r.rounds_run for r in results)
    names = sorted(set().union(*[r.history.keys() for r in results]))
    history = {}
    for n in names:
        arr = np.full((len(results), longest), np.nan)
        for i, r in enumerate(results):
            h = np.asarray(r.history.get(n, []), np.float64)
            if h.ndim == 1:
                arr[i, :len(h)] = h
        history[n] = arr
    best = {k: np.asarray([r.best[k] for r in results]) for k in ("best_val", "best_test", "best_round")}
    return SweepResult(history, best, [{"seed": m[0]} for m in members],
                       sum(r.compile_seconds for r in results), sum(r.run_seconds for r in results),
                       [f"round {r.rounds_run + 1}: non-finite metrics" if r.diverged else None for r in results])


def merge_grids(results: Sequence[GridResult]) -> GridResult:
    """One GridResult of several (e.g. one per seed for systems whose randomness is drawn at build time)."""
    first = results[0]
    seeds = [s for r in results for s in r.axes["seed"]]
    names = sorted(set().union(*[r.history.keys() for r in results]))
    longest = max(next(iter(r.history.values())).shape[1] for r in results if r.history)
    history = {}
    for n in names:
        parts = []
        for r in results:
            h = r.history.get(n, np.full((len(r.rows), longest), np.nan))
            parts.append(np.pad(h, ((0, 0), (0, longest - h.shape[1])), constant_values=np.nan))
        history[n] = np.concatenate(parts)
    return GridResult({**first.axes, "seed": seeds}, first.vector_axes, first.program_axes,
                      [row for r in results for row in r.rows], history, sum(r.compile_seconds for r in results),
                      sum(r.run_seconds for r in results), sum(r.programs for r in results),
                      list(dict.fromkeys(m for r in results for m in r.messages)))


def summarize_grid(result: GridResult) -> list[dict]:
    """Rows aggregated over seeds: one per grid point, mean/std/min/max of best_test and best_val."""
    keys = [k for k in result.axes if k != "seed"]
    groups: dict = {}
    for r in result.rows:
        groups.setdefault(tuple(r[k] for k in keys), []).append(r)
    out = []
    for point, rs in groups.items():
        bt = np.array([r["best_test"] for r in rs])
        bv = np.array([r["best_val"] for r in rs])
        row = {**dict(zip(keys, point)), "seeds": len(rs), "best_test_mean": float(bt.mean()),
               "best_test_std": float(bt.std()), "best_test_min": float(bt.min()),
               "best_test_max": float(bt.max()), "best_val_mean": float(bv.mean()),
               "best_val_std": float(bv.std())}
        for col in RESOURCE_COLUMNS:  # the same for every seed unless a member diverged: the mean
            vals = [r[col] for r in rs if col in r]
            if vals:
                row[f"{col}_mean"] = float(np.mean(vals))
        out.append(row)
    return out


# per-member columns a sweep reports when its runs have them (communication accounting, DP accountant)
RESOURCE_COLUMNS = ("comm_up_bytes", "comm_down_bytes", "dp_epsilon")


def resource_cells(row: dict, suffix: str = "") -> dict:
    """Table cells (floats) for a row's resource columns: "MB up", "MB down" (totals over the rounds
    run, 1 MB = 1e6 bytes), "epsilon" (after the last round); absent when the row has none."""
    out = {}
    if f"comm_up_bytes{suffix}" in row:
        out["MB up"] = row[f"comm_up_bytes{suffix}"] / 1e6
        out["MB down"] = row[f"comm_down_bytes{suffix}"] / 1e6
    if f"dp_epsilon{suffix}" in row:
        out["epsilon"] = float(row[f"dp_epsilon{suffix}"])
    return out
