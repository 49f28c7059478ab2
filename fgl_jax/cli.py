"""`fgl-jax`: every command generated from the registry and the systems' config classes.

    fgl-jax demo                                   # FedAvg-GCN on the embedded CSBM graph
    fgl-jax run --dataset cora --algorithm fedavg --model gcn --clients 10 --partition louvain \
                --rounds 100 --out runs/cora_fedavg
    fgl-jax run --config runs/cora_fedavg/config.yaml --out runs/replay
    fgl-jax run ... --out runs/x --resume           # continue an interrupted run
    fgl-jax hifgl --dataset cora --out runs/h        # any registered system; flags = its config's fields
    fgl-jax sweep --system hifgl --config c.yaml --seeds 0,1,2,3 --grid lr=0.01,0.05 --out runs/sweep
    fgl-jax datasets --data-dir ../shared/data
    fgl-jax inspect my_graph.npz --partition louvain --clients 10
    fgl-jax run --dataset my_graph.npz --clients 10 --partition louvain   # any path: docs/your_own_graph.md
    fgl-jax reproduce all --quick --out /tmp/repro   # every paper's quick tables
    fgl-jax plot runs/a runs/b --out ab.png          # the runs' curves on one figure
    fgl-jax attack mia runs/cora_fedavg              # membership inference on a finished run's final model

A system's command is its config class as flags (`fgl_jax.schema.add_flags`), so its defaults, help
text and valid values are written once, in the config. This module is the top layer: nothing in the
package imports it.

A user error (a bad value, a missing file, an unusable --out, a full disk) is one line on standard
error, `fgl-jax: error: ...`, exit code 2 (1 for running out of memory); FGL_JAX_TRACEBACK=1 shows
the Python traceback instead (and the checkpoint library's own error logs).
"""
from __future__ import annotations

import argparse
import contextlib
import functools
import logging
import os
import sys
from pathlib import Path
from typing import Iterator, Optional, Sequence

from fgl_jax import registry


def _command_name(entry: registry.Entry) -> str:
    return entry.info.get("command", entry.name)


BUILTIN_COMMANDS = ("sweep", "demo", "reproduce", "plot", "datasets", "inspect", "attack")


def _only_system(command: Optional[str]) -> Optional[registry.Entry]:
    """The system a command line's first word names (importing that system alone), or None when
    it names something else (a built-in command, an option, a typo): then the whole parser."""
    if not command or command in BUILTIN_COMMANDS or not command.isidentifier():
        return None
    from fgl_jax.systems import COMMANDS
    try:
        e = registry.entry("system", COMMANDS.get(command, command))
    except registry.UnknownNameError:
        return None
    return e if _command_name(e) == command else None


def _system_for_command(name: str) -> registry.Entry:
    e = _only_system(name)  # importing that system alone, when the name says which
    if e is not None:
        return e
    for e in registry.entries("system"):  # e.g. a system registered outside fgl_jax with its own command
        if _command_name(e) == name:
            return e
    return registry.entry("system", name)


def _add_config_source(p: argparse.ArgumentParser, command: str) -> None:
    p.add_argument("--config", default=None, metavar="YAML",
                   help=f"YAML file of {command} options (keys = the option names); flags override it")


def _add_run_controls(p: argparse.ArgumentParser, command: str) -> None:
    _add_config_source(p, command)
    p.add_argument("--print-config", action="store_true",
                   help="print the resolved config as YAML (replayable with --config) and exit")
    p.add_argument("--out", default=None, metavar="DIR",
                   help="output directory: config.yaml, metrics.jsonl, summary.json, checkpoints/")
    p.add_argument("--resume", action="store_true",
                   help="continue the run in --out from its newest intact checkpoint (the options must be the "
                        "saved ones)")
    p.add_argument("--resume-with-changes", default=None, metavar="KEYS",
                   help="with --resume: options allowed to differ from the saved run (comma-separated; "
                        "valid: rounds, data_dir, chunk)")
    p.add_argument("--overwrite", action="store_true",
                   help="replace the run --out holds (its files and checkpoints) instead of refusing a non-empty "
                        "directory; a directory that also holds other files is refused, nothing deleted")
    p.add_argument("--no-progress", action="store_true", help="no phase lines or progress bar on standard error")
    p.add_argument("--checkpoint-every", default="30s", metavar="WHEN",
                   help="checkpoint at most every WHEN: seconds ('30s', the default), a number of rounds, or "
                        "'chunk'; the last round is always saved (asynchronously, while training goes on)")
    _add_tensorboard_flag(p)
    _add_cache_flag(p)
    _add_device_flags(p)


def _add_device_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--devices", type=int, default=0, metavar="N",
                   help="shard the client axis over the first N local devices (default 0 = all of them; a CPU "
                        "is one device)")
    _add_process_flags(p, "run", "--out's config, metrics and summary; every process saves its own checkpoint shards there")


def _add_process_flags(p: argparse.ArgumentParser, what: str, writes: str) -> None:
    """--coordinator, --num-processes, --process-id: one command over several processes (hosts)."""
    p.add_argument("--coordinator", default=None, metavar="HOST:PORT",
                   help=f"multi-process {what} (jax.distributed): address of process 0; give the same command on "
                        "every process with --num-processes and --process-id (docs/scaling.md)")
    p.add_argument("--num-processes", type=int, default=None, metavar="N",
                   help="multi-process: how many processes take part (with --coordinator)")
    p.add_argument("--process-id", type=int, default=None, metavar="I",
                   help=f"multi-process: this process's index, 0..N-1; process 0 writes {writes} (with --coordinator)")


def _add_tensorboard_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument("--tensorboard", default=None, metavar="DIR",
                   help="also write the per-round metrics as TensorBoard event files into DIR (needs the optional "
                        "tensorboardX package)")


def _add_cache_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument("--no-cache", action="store_true",
                   help="do not use or fill the caches of compiled programs and preparation "
                        "(~/.cache/fgl_jax, or $FGL_JAX_CACHE_DIR; FGL_JAX_CACHE_DIR=off does the same)")


def _resolve(entry: registry.Entry, args: argparse.Namespace):
    from fgl_jax import schema
    cls = entry.info["config"]
    return schema.resolve(cls, args.config, schema.given_flags(args, cls), system=entry.name)


def _fmt(v) -> str:
    return f"{v:.4f}" if isinstance(v, float) else str(v)


def print_result(system: str, cfg, res) -> None:
    """The few lines every run prints: what ran, the final and the reported round, the timings."""
    desc = " ".join(f"{k}={_fmt(v)}" for k, v in res.summary.get("describe", {}).items()
                    if isinstance(v, (int, float, str, bool)))
    print(f"{system}: {desc} rounds={res.rounds_run} seed={cfg.seed}")
    chosen = res.best.get("select", "val_acc")    # link prediction: val_auc, test_auc first
    first = [k for k in ("train_loss", chosen, chosen.replace("val_", "test_", 1)) if k in res.final]
    print("final: " + " ".join(f"{k}={res.final[k]:.4f}" for k in first + sorted(set(res.final) - set(first))))
    best = res.best
    print(f"reported round {best.get('best_round')}: " +
          " ".join(f"{k}={_fmt(v)}" for k, v in best.items() if k != "best_round"))
    for k, v in res.extras.items():
        if isinstance(v, (int, float, str)):
            print(f"{k}: {_fmt(v)}")
    s = res.timings
    print(f"build {s['build_seconds']:.2f} s, compile {s['compile_seconds']:.2f} s, run {s['run_seconds']:.2f} s "
          f"({1000 * s['run_seconds'] / max(res.rounds_run, 1):.1f} ms/round)")


def cmd_system(args: argparse.Namespace) -> int:
    """`fgl-jax <system>` / `fgl-jax run`: config -> program -> engine -> the four outputs."""
    from fgl_jax import experiment, schema
    entry = registry.entry("system", args.system)
    cfg = _resolve(entry, args)
    if args.print_config:
        print(schema.dump(experiment.resolve_dataset(cfg), entry.name), end="")
        return 0
    from fgl_jax import rundir
    if (args.resume or args.overwrite) and not args.out:
        raise ValueError(f"--{'resume' if args.resume else 'overwrite'} needs --out (the run's directory)")
    allowed = rundir.parse_allowed(args.resume_with_changes)
    if allowed and not args.resume:
        raise ValueError("--resume-with-changes goes with --resume")
    _collector_after_imports()
    out = _out_dir(args.out)
    if getattr(cfg, "split_index", "") == "all":  # every fixed split as a member of one program
        if args.resume:
            raise ValueError("--split-index all runs in one go; --resume is for single runs")
        from fgl_jax.systems.baseline.fixed_splits import run_all_splits
        run_all_splits(experiment.resolve_dataset(cfg), out=out, overwrite=args.overwrite)
        return 0
    res = experiment.run_config(cfg, out=out, resume=args.resume, overwrite=args.overwrite,
                                resume_with_changes=allowed, progress=not args.no_progress,
                                checkpoint_every=args.checkpoint_every, devices=args.devices,
                                tensorboard=args.tensorboard)
    print_result(_command_name(entry), cfg, res)
    if args.out and res.timings.get("writer", True):
        print(f"wrote {args.out}/config.yaml, metrics.jsonl, summary.json, checkpoints/")
    return 0


def _out_dir(out: Optional[str]) -> Optional[str]:
    """--out as one absolute path, resolved once here at the entry for every command (the
    checkpoint library needs absolute paths), with one line for an unusable one (`rundir.resolve_out`)."""
    from fgl_jax import rundir
    return None if out is None else str(rundir.resolve_out(out))


def cmd_demo(args: argparse.Namespace) -> int:
    from fgl_jax import experiment
    cfg = experiment.default_config("baseline", dataset="csbm", algorithm="fedavg", model="gcn", clients=5,
                                    partition="louvain", split="keep", rounds=args.rounds, local_steps=3,
                                    lr=0.01, weight_decay=5e-4, seed=0)
    res = experiment.run_config(cfg, out=_out_dir(args.out), overwrite=args.overwrite, progress=not args.no_progress)
    print_result("demo", cfg, res)
    return 0


def cmd_datasets(args: argparse.Namespace) -> int:
    if args.download:
        return _download(args)
    if args.to:
        raise ValueError("--to goes with --download NAME (where to write the downloaded files)")
    from fgl_jax.data import list_datasets
    rows = list_datasets(args.data_dir)
    width = max(len(r["name"]) for r in rows)
    print(f"{'name':<{width}}  {'kind':<10}  {'files':<30}  where / description / source")
    for r in rows:
        state = "found" if r["found"] else "MISSING " + ", ".join(r["missing"][:3])
        print(f"{r['name']:<{width}}  {r['kind']:<10}  {state:<30}  {r.get('where', '')}  {r.get('description', '')}")
        if r.get("source") and r["source"] != "generated":
            print(f"{'':<{width}}  {'':<10}  {'source':<30}  {r['source']}")
    print(YOUR_OWN)
    return 0


def _download(args: argparse.Namespace) -> int:
    """`fgl-jax datasets --download NAME [--to DIR]`: each file fetched and checked (`fgl_jax.data.download`)."""
    from fgl_jax import progress
    from fgl_jax.data.download import download
    from fgl_jax.data.registry import get_info
    to = args.to if args.to else args.data_dir
    info = get_info(args.download)  # an unknown name: one line listing the names
    with progress.report(not args.no_progress):
        done = download(info.name, to)
    for f in done:
        what = "already present" if f.status == "present" else "downloaded"
        check = "sha256 ok" if f.verified else "no published sha256: unverified"
        print(f"{f.path}: {what} ({f.size:,} bytes, {check})")
    return 0


YOUR_OWN = """
Your own data: give a path wherever a dataset name goes (--dataset path/to/file-or-dir, every command):
  graph       .npz: the GNN-benchmark / PPNP layout (adj_data, adj_indices, adj_indptr, adj_shape,
              attr_* or attr_matrix, labels) or the plain one (edge_index, x, y, optional masks);
              a directory with edges.csv + nodes.csv; an OGB node-property directory (raw/, split/)
  hypergraph  a directory with hyperedges.txt + nodes.csv (FedHGL; a plain graph works too: 1-hop hyperedges)
  hetero      a directory with node_types.csv + edges/<relation>.csv (FedHGN)
  graphs      a TU directory (<NAME>_A.txt, _graph_indicator.txt, _graph_labels.txt, ...) or its .zip
              (graph-level FL: fgl-jax run --task graph_cls)
Check it first: fgl-jax inspect PATH [--partition louvain --clients 10]. In Python: convert a
networkx / scipy / PyG / DGL graph with fgl_jax.data, or fgl_jax.register_dataset(name, loader, kind=...).
Details: docs/your_own_graph.md"""


def cmd_inspect(args: argparse.Namespace) -> int:
    from fgl_jax.inspection import inspect_dataset
    options = {}
    for text in args.partition_option or []:
        name, eq, value = text.partition("=")
        if not eq or not name.strip():
            raise ValueError(f"--partition-option expects KEY=VALUE (e.g. packing=whole), got {text!r}")
        import yaml
        options[name.strip().replace("-", "_")] = yaml.safe_load(value)
    if options and not args.partition:
        raise ValueError("--partition-option needs --partition")
    for line in inspect_dataset(args.dataset, data_dir=args.data_dir, partition=args.partition,
                                clients=args.clients, seed=args.partition_seed, options=options):
        print(line)
    return 0


def _parse_seeds(text: str) -> list[int]:
    from fgl_jax import schema
    try:
        seeds = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise ValueError(f"--seeds must be a comma-separated list of integers, got {text!r}") from None
    if not seeds:
        raise ValueError("--seeds needs at least one seed")
    bad = [s for s in seeds if not 0 <= s <= schema.SEED_MAX]
    if bad:
        raise ValueError(f"--seeds: seed {bad[0]} is outside 0..{schema.SEED_MAX} (2**32 - 1: the run key keeps "
                         "32 bits of the seed)")
    return seeds


def _parse_grid(texts: Optional[Sequence[str]], cls: type) -> dict:
    """`--grid name=v1,v2` (repeatable) -> {name: [checked values]}."""
    from fgl_jax import schema
    specs = schema.fields(cls)
    grid = {}
    for text in texts or []:
        if "=" not in text:
            raise ValueError(f"--grid expects name=value[,value...], got {text!r}")
        name, _, rest = text.partition("=")
        name = name.strip().replace("-", "_")
        values = [v.strip() for v in rest.split(",") if v.strip()]
        if not name or not values:
            raise ValueError(f"--grid expects name=value[,value...], got {text!r}")
        if name in grid:
            raise ValueError(f"--grid {name} given twice")
        if name not in specs:
            raise ValueError(f"--grid: unknown option {name!r}; options: {', '.join(specs)}")
        grid[name] = [schema.check_value(specs[name], v, f"--grid {name}") for v in values]
    return grid


def cmd_sweep(args: argparse.Namespace) -> int:
    """Seeds x grid of any system: traced hyperparameters vectorised in one compiled program, the
    other options as separate programs (with a message)."""
    import contextlib
    from fgl_jax import rundir
    if args.tensorboard:  # a missing writer fails before --out is made or locked
        from fgl_jax.tensorboard import check_available
        check_available(args.tensorboard)
    args.out = _out_dir(args.out)
    import jax
    if jax.process_count() > 1 and jax.process_index() != 0:
        args.out = args.tensorboard = None  # process 0 writes the sweep's files (every process gets the rows)
    with (rundir.RunLock(args.out) if args.out else contextlib.nullcontext()):  # one writer per --out
        return _sweep(args)


def _sweep(args: argparse.Namespace) -> int:
    from fgl_jax import schema
    from fgl_jax.federated.sweep import merge_grids, run_grid
    from fgl_jax.report import write_grid_report
    entry = registry.entry("system", args.system)
    cls = entry.info["config"]
    if args.tensorboard:  # a missing writer fails before the sweep runs
        from fgl_jax.tensorboard import check_available
        check_available(args.tensorboard)
    from fgl_jax import progress
    from fgl_jax.experiment import resolve_dataset
    with progress.report(not args.no_progress):  # the same phase lines as a run's
        cfg = _resolve(entry, args)
        progress.phase("loading", str(getattr(cfg, "dataset", entry.name)))
        cfg = resolve_dataset(cfg)
        seeds = _parse_seeds(args.seeds)
        grid = _parse_grid(args.grid, cls)
        options = schema.to_dict(cfg)
        build = lambda o: entry.obj(schema.make(cls, o, source="sweep"))
        if entry.info.get("seeds") == "build":
            # this system draws its randomness from the seed while building (host-side stages), not from the
            # run key: one program per seed, so the members really differ
            res = merge_grids([run_grid(build, {**options, "seed": s}, [s], grid, mode=args.sweep_mode,
                                         devices=args.devices) for s in seeds])
            res.messages.append(f"{entry.name} draws its randomness at build time: one program per seed")
        else:
            res = run_grid(build, options, seeds, grid, mode=args.sweep_mode, devices=args.devices)
    from fgl_jax.federated.sweep import resource_cells
    keys = [k for k in res.axes if k != "seed"]
    extra = list(resource_cells(res.rows[0])) if res.rows else []  # MB up / MB down / epsilon, when the runs have them
    print(" | ".join(["seed"] + keys) + " | best_round | best val_acc | test_acc at best val"
          + "".join(f" | {c}" for c in extra))
    for r in res.rows:
        cells = resource_cells(r)
        print(" | ".join(str(r[k]) for k in ["seed"] + keys) +
              f" | {r['best_round']} | {r['best_val']:.4f} | {r['best_test']:.4f}"
              + "".join(f" | {cells[c]:.4f}" if c in cells else " | " for c in extra))
    print(f"{len(res.rows)} members in {res.programs} program(s): compile {res.compile_seconds:.2f} s, "
          f"run {res.run_seconds:.2f} s")
    if args.out:
        schema.dump(cfg, entry.name, Path(args.out) / "config.yaml")
        title = f"{_command_name(entry)} sweep: " + ", ".join(
            f"{k}={options[k]}" for k in ("dataset", "algorithm", "model", "method") if k in options)
        paths = write_grid_report(res, args.out, title, {"system": entry.name, "options": options})
        print(f"wrote {paths['md']}, {paths['json']}, {paths['png']}, {Path(args.out) / 'config.yaml'}")
    if args.tensorboard:
        from fgl_jax.tensorboard import write_sweep
        dirs = write_sweep(args.tensorboard, res.rows, res.history, keys)
        print(f"wrote TensorBoard event files of {len(dirs)} members under {args.tensorboard}")
    return 0


def _checkout() -> Optional[Path]:
    """The source checkout holding this package (its experiments/ beside fgl_jax/), or None for an
    installed package without one."""
    root = Path(__file__).resolve().parents[1]
    return root if (root / "experiments" / "harness.py").is_file() else None


def paper_module(entry: registry.Entry) -> Optional[str]:
    """`experiments.<name>.paper` when the checkout holds the system's reproduction (its cells, on the
    one harness experiments/harness.py), else None: the package ships no paper-table code."""
    return f"experiments.{entry.name}.paper" if _has_paper(entry.name) else None


def _has_paper(system: str) -> bool:
    root = _checkout()
    return root is not None and (root / "experiments" / system / "paper.py").is_file()


def _reproduce_choices(systems: Sequence[str]) -> Optional[list[str]]:
    """`reproduce`'s choices: those of `systems` (names) whose reproduction the checkout holds, then
    "all"; None without a checkout (any name is taken, then `cmd_reproduce` says that it needs one).
    Read from the files, not the registry, so the parser's copy (`_light_parser`) fills them in
    without importing the systems: the copy itself is the same with and without a checkout."""
    return [s for s in systems if _has_paper(s)] + ["all"] if _checkout() is not None else None


def _import_reproduction(module: str):
    """The reproduction module; `experiments` is the checkout's folder above the package (the only
    place the package reaches it), put on the path when it is not there yet."""
    import importlib
    if module.startswith("experiments."):
        root = str(_checkout())
        if root not in sys.path:
            sys.path.insert(0, root)
    return importlib.import_module(module)


def _default_results_dir() -> Path:
    here = Path(__file__).resolve().parents[1] / "experiments" / "results"
    if not here.parent.is_dir():
        raise ValueError("give --out DIR: this installation has no source checkout's experiments/results")
    return here


def cmd_reproduce(args: argparse.Namespace) -> int:
    """Run the paper's cells of a system (or all) in this process and write its tables."""
    if _checkout() is None:
        raise ValueError("reproduce needs a source checkout: the paper reproductions live in its experiments/ "
                         f"folder, which this installation ({Path(__file__).resolve().parent}) does not have")
    import json
    import os
    import resource
    import time
    systems = [e.name for e in registry.entries("system") if paper_module(e)] if args.system == "all" \
        else [args.system]
    root = Path(args.out).absolute() if args.out else _default_results_dir()
    timings = {}
    t_all = time.perf_counter()
    for name in systems:
        entry = registry.entry("system", name)
        module = paper_module(entry)
        if not module:
            raise ValueError(f"system {name!r} has no paper reproduction")
        out = root / name
        out.mkdir(parents=True, exist_ok=True)
        print(f"== {name}: reproduce{' --quick' if args.quick else ''} -> {out}", flush=True)
        t0, c0 = time.perf_counter(), sum(resource.getrusage(resource.RUSAGE_SELF)[:2])
        _import_reproduction(module).reproduce(out, quick=args.quick, data_dir=args.data_dir)
        timings[name] = {"wall_s": round(time.perf_counter() - t0, 1),
                         "cpu_s": round(sum(resource.getrusage(resource.RUSAGE_SELF)[:2]) - c0, 1)}
        print(f"== {name}: done in {timings[name]['wall_s']:.0f} s (CPU {timings[name]['cpu_s']:.0f} s)", flush=True)
    timings["total"] = {"wall_s": round(time.perf_counter() - t_all, 1), "loadavg_end": list(os.getloadavg())}
    if args.out:
        (root / "timings.json").write_text(json.dumps(timings, indent=2))
    print(f"wrote results under {root} ({timings['total']['wall_s']:.0f} s)")
    return 0


def cmd_attack(args: argparse.Namespace) -> int:
    """`fgl-jax attack mia RUN_DIR`: the attack on the finished run's final checkpoint, RUN_DIR/attacks/."""
    from fgl_jax.systems.baseline.attack import attack_run
    record = attack_run(args.run_dir, args.attack, overwrite=args.overwrite)
    mia = record["mia"]
    print(f"membership inference on the final {mia['model']} model after {record['rounds']} rounds "
          f"({mia['members']} members, {mia['nonmembers']} non-members):")
    for kind in ("loss", "confidence"):
        print(f"  {kind:10s} AUC {mia[f'auc_{kind}']:.4f}")
    print(f"wrote {Path(record['run_dir']) / 'attacks' / (args.attack + '.json')}")
    return 0


def cmd_plot(args: argparse.Namespace) -> int:
    from fgl_jax.plot import plot_runs
    metrics = [m.strip() for m in args.metrics.split(",") if m.strip()] if args.metrics else None
    labels = [x.strip() for x in args.labels.split(",")] if args.labels else None
    path = plot_runs(args.runs, args.out, metrics=metrics, labels=labels, title=args.title, dpi=args.dpi)
    print(f"wrote {path}")
    return 0


def _sweep_system(argv: Sequence[str]) -> str:
    """The system a `fgl-jax sweep ...` command line sweeps: --system, else the config's `system:`."""
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--system", default=None)
    pre.add_argument("--config", default=None)
    known, _ = pre.parse_known_args(list(argv))
    if known.system:
        return known.system
    if known.config and Path(known.config).is_file():
        from fgl_jax import schema
        try:
            return str(schema.read_yaml_text(Path(known.config).read_text(encoding="utf-8"), known.config)
                       .get("system", "run"))
        except ValueError:  # (UnicodeDecodeError too) read_yaml names the problem when the command reads it
            return "run"
    return "run"


def build_parser(sweep_system: str = "run", command: Optional[str] = None) -> argparse.ArgumentParser:
    """The CLI's parser. command: the command line's first word; when it names a system, the
    parser holds that system's command alone (its flags and help are the same), so the other
    systems are not imported."""
    from fgl_jax import schema
    parser = argparse.ArgumentParser(prog="fgl-jax", description="Federated graph learning in JAX")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    only = _only_system(command)
    systems = [only] if only is not None else registry.entries("system")
    for e in systems:
        name = _command_name(e)
        p = sub.add_parser(name, help=e.help, description=e.help)
        schema.add_flags(p, e.info["config"], title=f"{name} options")
        _add_run_controls(p, name)
        _add_verbosity(p)
        p.set_defaults(func=cmd_system, system=e.name)
    if only is not None:
        return parser

    _add_sweep_command(sub, _system_for_command(sweep_system), systems)
    _add_builtin_commands(sub, systems)
    return parser


def _add_sweep_command(sub, e: registry.Entry, systems: Sequence[registry.Entry]) -> None:
    """`sweep`: the flags of one system `e` (chosen with --system, default run) + seeds and grid."""
    from fgl_jax import schema
    name = _command_name(e)
    p = sub.add_parser("sweep", help="seeds x option grid of any system (traced values in one program)",
                       description=f"Sweep {name} ({e.help}). `fgl-jax sweep --system S --help` lists S's options.")
    p.add_argument("--system", default=name, choices=[_command_name(x) for x in systems],
                   help="which system to sweep (default: the config file's system, else run); its options "
                        "become this command's options")
    schema.add_flags(p, e.info["config"], title=f"{name} options (the sweep's base config)")
    _add_config_source(p, name)
    p.add_argument("--seeds", default="0", help="comma-separated seeds (each a run key)")
    p.add_argument("--grid", action="append", metavar="NAME=V1,V2",
                   help="a grid axis (repeatable): a traced option (lr, epsilon, prox_mu, ...) is vectorised in "
                        "one program; any other option runs as separate programs")
    p.add_argument("--sweep-mode", default="auto", choices=["auto", "vmap", "sequential"],
                   help="vmap = one program over all members; sequential = compiled once, called per member; "
                        "auto = vmap on GPU/TPU or over several devices, sequential on one CPU")
    p.add_argument("--out", default=None, metavar="DIR",
                   help="write sweep.md, sweep.json, sweep.png and config.yaml here")
    p.add_argument("--tensorboard", default=None, metavar="DIR",
                   help="also write each member's per-round metrics as TensorBoard event files into DIR/<member> "
                        "(needs the optional tensorboardX package)")
    p.add_argument("--devices", type=int, default=0, metavar="N",
                   help="split the members of each program over the first N local devices (default 0 = all; "
                        "a CPU is one device)")
    _add_process_flags(p, "sweep (its members split over every process's devices)", "sweep.md, sweep.json")
    p.add_argument("--no-progress", action="store_true",
                   help="no phase lines (loading, preparing, compiling, running) on standard error")
    _add_cache_flag(p)
    _add_verbosity(p)
    p.set_defaults(func=cmd_sweep, system=e.name)


def _add_builtin_commands(sub, systems: Sequence[registry.Entry]) -> None:
    """demo, reproduce, plot, attack, datasets, inspect."""
    p = sub.add_parser("demo", help="FedAvg-GCN on the embedded synthetic graph (no downloads)")
    p.add_argument("--rounds", type=int, default=100, help="number of federated rounds (default: 100)")
    p.add_argument("--out", default=None, metavar="DIR", help="also write the run's outputs here")
    p.add_argument("--overwrite", action="store_true", help="replace what --out holds")
    p.add_argument("--no-progress", action="store_true", help="no phase lines or progress bar on standard error")
    _add_cache_flag(p)
    _add_verbosity(p)
    p.set_defaults(func=cmd_demo)

    p = sub.add_parser("reproduce", help="run a paper's cells and write its tables and figures")
    # without a checkout there is nothing to choose from: any name, then cmd_reproduce's one-line error
    p.add_argument("system", choices=_reproduce_choices([e.name for e in systems]),
                   help="which paper (all = every system); needs a source checkout (its experiments/)")
    p.add_argument("--quick", action="store_true", help="small settings (a few minutes)")
    p.add_argument("--data-dir", default=None, metavar="DIR", help="directory holding the datasets")
    p.add_argument("--out", default=None, metavar="DIR",
                   help="write the tables into OUT/<system>/ (default: the checkout's experiments/results)")
    _add_cache_flag(p)
    _add_verbosity(p)
    p.set_defaults(func=cmd_reproduce)

    p = sub.add_parser("plot", help="draw the loss/accuracy (and communication) curves of runs on one figure",
                       description="Read each RUN's metrics.jsonl (a directory written with --out) and draw "
                                   "its curves, one line per run: losses, accuracies and, when logged, bytes.")
    p.add_argument("runs", nargs="+", metavar="RUN", help="run directories written with --out (or metrics.jsonl files)")
    p.add_argument("--out", default="runs.png", metavar="FILE",
                   help="image to write; the suffix picks the format: .png, .svg, .pdf (default: runs.png)")
    p.add_argument("--metrics", default=None, metavar="A,B",
                   help="comma-separated metric names to draw (default: every *loss, *_acc and *bytes* field)")
    p.add_argument("--labels", default=None, metavar="A,B",
                   help="comma-separated legend labels, one per RUN (default: the directory names)")
    p.add_argument("--title", default=None, help="figure title (default: none)")
    p.add_argument("--dpi", type=int, default=100, help="resolution of a raster image (default: 100)")
    _add_verbosity(p)
    p.set_defaults(func=cmd_plot)

    p = sub.add_parser("attack", help="attack a finished run's final model (mia: membership inference)",
                       description="Rebuild a finished `fgl-jax run --out` directory (its config.yaml and final "
                                   "checkpoint) and attack its final model as --eval-mia does; writes "
                                   "RUN_DIR/attacks/ATTACK.json and prints the AUC of each attack.")
    p.add_argument("attack", choices=["mia"], help="mia = membership inference (loss- and confidence-threshold "
                   "attacks; members = training nodes, non-members = test nodes)")
    p.add_argument("run_dir", metavar="RUN_DIR", help="a finished run's directory (written with --out)")
    p.add_argument("--overwrite", action="store_true", help="replace RUN_DIR/attacks/ATTACK.json if it exists")
    _add_verbosity(p)
    p.set_defaults(func=cmd_attack)

    p = sub.add_parser("datasets", help="list datasets of every kind, whether their files are found and where they "
                                        "are published; --download NAME fetches one")
    p.add_argument("--data-dir", default=None, metavar="DIR", help="directory holding the datasets")
    p.add_argument("--download", default=None, metavar="NAME",
                   help="fetch dataset NAME's files from their public source (each checked against its published "
                        "sha256; an interrupted download resumes when run again)")
    p.add_argument("--to", default=None, metavar="DIR",
                   help="with --download: the data directory to write into (default: --data-dir, else $FGL_JAX_DATA, "
                        "else ~/.cache/fgl_jax/data)")
    p.add_argument("--no-progress", action="store_true", help="with --download: no progress bar on standard error")
    _add_verbosity(p)
    p.set_defaults(func=cmd_datasets)

    p = sub.add_parser("inspect", help="statistics of a dataset (name or path) and what a partition gives",
                       description="Nodes, edges, features, classes, homophily, degrees and split of a dataset; "
                                   "with --partition, the client sizes and cut edges of that partitioner.")
    p.add_argument("dataset", metavar="NAME_OR_PATH", help="dataset name (see `fgl-jax datasets`) or path to a "
                   "graph file or directory")
    p.add_argument("--data-dir", default=None, metavar="DIR", help="directory holding the datasets")
    p.add_argument("--partition", default=None, choices=registry.names("partition"),
                   help="also show what this partitioner gives (client sizes, edges cut, label skew)")
    p.add_argument("--clients", type=int, default=10, help="number of clients of --partition (default: 10)")
    p.add_argument("--partition-seed", type=int, default=0, help="seed of --partition (default: 0)")
    p.add_argument("--partition-option", action="append", metavar="KEY=VALUE",
                   help="a keyword of the partitioner, repeatable (e.g. packing=whole for louvain, beta=0.1 for "
                        "dirichlet, num_communities=50 for metis_plus)")
    _add_verbosity(p)
    p.set_defaults(func=cmd_inspect)


# ---- help and argument errors without JAX ---------------------------------------------------------
#
# The parser is generated from the systems' config classes, and a config class is composed from the
# registered algorithms' hyperparameters (`fgl_jax.systems.baseline.config`): building it imports every
# algorithm module and every system's `program` (where it registers), hence JAX (seconds). Building it
# without JAX would mean moving each algorithm's hyperparameters and registration, and each system's,
# out of the modules that compute with them. Instead the parser is kept as plain data (JSON: every
# command's arguments), marked with the source it was built from (`_source_key`: a hash of every .py
# file of the package), and `--help` and a mistyped flag or choice are answered from that copy without
# importing JAX. Two copies are looked at; one made from other source is never used (it could list
# flags that are gone or lack new ones):
#  * fgl_jax/_cli_parser.json, shipped in the package (`write_parser_copy`, which `python docs/hooks.py
#    --write` runs; tests/test_cli_help_fast.py fails while it is stale), so the first --help after an
#    install or a clone is fast too;
#  * <cache>/cli/parser-<key>.json (see `fgl_jax.cache`) for source the shipped copy was not made from
#    (an edited checkout): the first --help or argument error after an edit is answered by the real
#    parser, which then writes it (importing every system once per version of the source; a run never
#    does; FGL_JAX_CACHE_DIR=off or --no-cache write none).
# A copy is only a gate: a command line it accepts is parsed again by the real parser, so it never
# changes what runs (an edited copy could print wrong help or refuse a flag). A system or algorithm
# registered from outside fgl_jax (a notebook calling `main`): the real parser.

_ACTIONS = {"_StoreAction": "store", "_StoreTrueAction": "store_true", "_StoreFalseAction": "store_false",
            "_StoreConstAction": "store_const", "_AppendAction": "append", "_CountAction": "count",
            "BooleanOptionalAction": "boolean"}
_TYPES = {None: None, str: "str", int: "int", float: "float"}


def _snapshot_parser(p: argparse.ArgumentParser) -> dict:
    """A parser (without its sub-commands) as JSON-able data: prog, description, its argument groups
    with every action's constructor arguments. Raises TypeError for what the copy cannot hold (a
    custom action or type), so that parser is then never copied."""
    group_of = {id(a): i for i, g in enumerate(p._action_groups) for a in g._group_actions}
    actions = []
    for a in p._actions:  # in the order they were added: the usage line's order
        kind = type(a).__name__
        if kind in ("_HelpAction", "_SubParsersAction"):
            continue
        if kind not in _ACTIONS or a.type not in _TYPES:
            raise TypeError(f"{p.prog}: {a.dest} ({kind}) cannot be copied")
        actions.append({"kind": _ACTIONS[kind], "option_strings": list(a.option_strings), "dest": a.dest,
                        "nargs": a.nargs, "const": a.const, "default": a.default, "type": _TYPES[a.type],
                        "choices": list(a.choices) if a.choices is not None else None, "required": a.required,
                        "help": a.help, "metavar": a.metavar, "group": group_of[id(a)]})
    return {"prog": p.prog, "usage": p.usage, "description": p.description, "actions": actions,
            # (the first two are the parser's own, titled by the running Python's argparse: no title kept)
            "groups": [{"title": g.title if i >= 2 else None, "description": g.description}
                       for i, g in enumerate(p._action_groups)]}


def _rebuild_parser(data: dict, p: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Fill `p` (made with data's prog and description) with the snapshot's groups and actions."""
    types = {v: k for k, v in _TYPES.items()}
    groups = [p._action_groups[i] if i < 2 else p.add_argument_group(g["title"], g["description"])
              for i, g in enumerate(data["groups"])]
    for a in data["actions"]:
        where = groups[a["group"]]
        kw = {k: a[k] for k in ("default", "help", "metavar", "required", "choices", "nargs", "const")}
        kw["type"] = types[a["type"]]
        opts = a["option_strings"]
        if a["kind"] == "boolean":  # it adds the --no- spelling itself
            opts = [o for o in opts if not o.startswith("--no-")]
            kw = {"default": a["default"], "help": a["help"], "required": a["required"],
                  "action": argparse.BooleanOptionalAction}
        elif a["kind"] in ("store_true", "store_false", "count"):
            kw = {"default": a["default"], "help": a["help"], "required": a["required"], "action": a["kind"]}
        else:
            kw["action"] = a["kind"]
            if kw["const"] is None:
                kw.pop("const")
            if kw["nargs"] is None:
                kw.pop("nargs")
        if not opts:  # a positional: its dest is its name
            kw.pop("required", None)
            where.add_argument(a["dest"], **kw)
        else:
            where.add_argument(*opts, dest=a["dest"], **kw)
    return p


PARSER_COPY = Path(__file__).resolve().parent / "_cli_parser.json"  # the copy shipped in the package


@functools.lru_cache(maxsize=None)
def _source_key() -> str:
    """The key of the source the parser is generated from: `_source_hash` of the package, once per
    process (the source it imported)."""
    return _source_hash(Path(__file__).resolve().parent)


def _source_hash(root: Path) -> str:
    """A hash of every .py file under `root` (its path there and its bytes; the package's ~2 MB take
    ~15 ms). Contents, not file times: a fresh clone or an installed wheel of the same source has the
    shipped copy's key. Neither the checkout's experiments/ (`_reproduce_choices` reads them when a
    copy is used) nor the Python version (a copy holds the arguments; the running argparse formats
    them)."""
    import hashlib
    h = hashlib.sha256()
    for rel, path in sorted((p.relative_to(root).as_posix(), p) for p in root.rglob("*.py")):
        data = path.read_bytes()
        h.update(f"{rel}\0{len(data)}\0".encode())
        h.update(data)
    return h.hexdigest()[:24]


def _snapshot_path() -> Optional[Path]:
    from fgl_jax.cache import default_root
    root = default_root()
    return None if root is None else root / "cli" / f"parser-{_source_key()}.json"


def _snapshot_all() -> dict:
    """Every command's parser as data (`_snapshot_parser`), and `sweep`'s for each system it can sweep,
    under the source's key. `reproduce`'s choices are left out (None): they depend on the checkout."""
    full = build_parser()
    sub = next(a for a in full._actions if isinstance(a, argparse._SubParsersAction))
    helps = {c.dest: c.help for c in sub._choices_actions}
    systems = registry.entries("system")
    sweeps = {}
    for e in systems:
        holder = argparse.ArgumentParser(prog="fgl-jax").add_subparsers()
        _add_sweep_command(holder, e, systems)
        sweeps[_command_name(e)] = _snapshot_parser(holder.choices["sweep"])
    commands = [[name, helps.get(name), _snapshot_parser(p)] for name, p in sub.choices.items()]
    for name, _, p in commands:
        if name == "reproduce":
            p["actions"] = _with_reproduce_choices(p["actions"], None)
    return {"key": _source_key(), "top": _snapshot_parser(full), "metavar": sub.metavar, "dest": sub.dest,
            "commands": commands, "sweep": sweeps, "systems": {e.name: _command_name(e) for e in systems}}


def _with_reproduce_choices(actions: list, choices: Optional[list]) -> list:
    """`reproduce`'s actions (snapshot data) with its positional's choices set to `choices`."""
    return [{**a, "choices": choices} if not a["option_strings"] and a["dest"] == "system" else a for a in actions]


def _save_snapshot() -> None:
    """Write the parser's copy for the next commands into the cache (failures ignored: it is only a
    cache); nothing when the shipped copy or the cache already has one for this source."""
    path = _snapshot_path()
    if path is None or path.is_file() or registry.foreign() or _parser_copy() is not None:
        return
    import json
    from fgl_jax import rundir
    try:
        data = json.dumps(_snapshot_all())
    except Exception:  # noqa: BLE001 (a system that cannot be imported here: its own command says why)
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        for old in path.parent.glob("parser-*.json"):  # copies of other versions of the source
            old.unlink()
        rundir.write_atomic(path, data)
    except (OSError, TypeError, ValueError):
        pass


def write_parser_copy(path: Optional[Path] = None) -> Path:
    """Write the parser's copy shipped in the package for the current source (imports every system).
    `python docs/hooks.py --write` runs it; tests/test_cli_help_fast.py fails while the committed copy
    is stale (`parser_copy_is_current`).

    Args:
        path: where to write it (default: `PARSER_COPY`, fgl_jax/_cli_parser.json).

    Returns:
        The path written.
    """
    from fgl_jax import rundir
    if registry.foreign():
        raise ValueError("the parser's copy is of fgl_jax's own commands: registered from outside fgl_jax: "
                         + ", ".join(f"{e.kind} {e.name!r}" for e in registry.foreign()))
    path = PARSER_COPY if path is None else Path(path)
    rundir.write_atomic(path, _json_lines(_snapshot_all()) + "\n")
    return path


def _json_lines(value, indent: str = "") -> str:
    """JSON with one argument (or group) per line: a changed option is a one-line change of the file."""
    import json

    def flat(v) -> bool:
        return not isinstance(v, (dict, list)) or all(not isinstance(x, (dict, list)) for x in
                                                       (v.values() if isinstance(v, dict) else v))
    if flat(value) or (isinstance(value, dict) and all(flat(x) for x in value.values())):
        return json.dumps(value)
    inner = indent + " "
    if isinstance(value, dict):
        items = [f"{inner}{json.dumps(k)}: {_json_lines(v, inner)}" for k, v in value.items()]
        return "{\n" + ",\n".join(items) + "\n" + indent + "}"
    return "[\n" + ",\n".join(inner + _json_lines(v, inner) for v in value) + "\n" + indent + "]"


def parser_copy_is_current(path: Optional[Path] = None) -> bool:
    """Whether the shipped parser copy was made from the current source (no JAX imported).

    Args:
        path: the copy to check (default: `PARSER_COPY`).

    Returns:
        True when its key is the current source's (`python docs/hooks.py --write` rewrites it otherwise).
    """
    return _read_copy(PARSER_COPY if path is None else Path(path)) is not None


def _read_copy(path: Optional[Path]) -> Optional[dict]:
    """The parser copy at `path` when it is made from the current source, else None."""
    if path is None:
        return None
    import json
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and data.get("key") == _source_key() else None


def _parser_copy() -> Optional[dict]:
    """The parser's copy for the current source: the shipped one, else the cache's; None for neither."""
    return _read_copy(PARSER_COPY) or _read_copy(_snapshot_path())


def _light_parser(argv: Sequence[str]) -> Optional[tuple[argparse.ArgumentParser, dict]]:
    """The CLI's parser rebuilt from its copy for the current source (no JAX imported), with the copy;
    None when there is none or a system / algorithm is registered from outside fgl_jax."""
    if any(registry.foreign()):
        return None
    data = _parser_copy()
    if data is None:
        return None
    try:
        top = data["top"]
        parser = _rebuild_parser(top, argparse.ArgumentParser(prog=top["prog"], description=top["description"]))
        sub = parser.add_subparsers(dest=data["dest"], required=True, metavar=data["metavar"])
        sweep = _sweep_system(argv[1:]) if argv[:1] == ["sweep"] else "run"
        sweep = data["systems"].get(sweep, sweep)
        for name, help, p in data["commands"]:
            p = data["sweep"].get(sweep, p) if name == "sweep" else p
            kw = {"help": help} if help is not None else {}
            made = sub.add_parser(name, description=p["description"], usage=p["usage"], **kw)
            if argv[:1] == [name]:  # only the command given is parsed: the others need their name and help
                if name == "reproduce":
                    p = {**p, "actions": _with_reproduce_choices(p["actions"], _reproduce_choices(data["systems"]))}
                _rebuild_parser(p, made)
    except (KeyError, TypeError, ValueError, IndexError):
        return None
    return parser, data


def _add_verbosity(p: argparse.ArgumentParser) -> None:
    """-v / -q: how much the `fgl_jax` logger prints on standard error (`_logging`)."""
    p.add_argument("-v", "--verbose", action="count", default=0,
                   help="more detail on standard error (-vv: debugging lines)")
    p.add_argument("-q", "--quiet", action="count", default=0,
                   help="no data notices on standard error (errors only)")


def main(argv: Optional[Sequence[str]] = None) -> int:
    from fgl_jax import rundir
    before = rundir.use_flags(True)  # user errors name the flags typed here, not the Python keywords
    try:
        return _main(argv)
    finally:
        rundir.use_flags(before)  # a caller in Python (a test, a notebook) gets Python's spelling back


def _main(argv: Optional[Sequence[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    light = _light_parser(argv)
    if light is not None:  # --help and argument errors end here, before JAX is imported
        parser, data = light
        if argv[:1] == ["sweep"]:
            commands = list(data["systems"].values())
            sweep_system = _sweep_system(argv[1:])
            if sweep_system not in commands + list(data["systems"]):
                print(f"fgl-jax: error: --system must be one of {', '.join(commands)}, got {sweep_system!r}",
                      file=sys.stderr)
                return 2
        parser.parse_args(argv)
    sweep_system = "run"
    if argv[:1] == ["sweep"]:
        sweep_system = _sweep_system(argv[1:])
        if sweep_system not in [_command_name(e) for e in registry.entries("system")] + registry.names("system"):
            print(f"fgl-jax: error: --system must be one of "
                  f"{', '.join(_command_name(e) for e in registry.entries('system'))}, got {sweep_system!r}",
                  file=sys.stderr)
            return 2
    parser = build_parser(sweep_system, command=argv[0] if argv else None)
    try:
        args = parser.parse_args(argv)
    except SystemExit:  # help or an argument error, answered by the real parser: copy it for the next ones
        if light is None and "--no-cache" not in argv:
            _save_snapshot()  # (imports every system, once per version of the source; a run never pays it)
        raise
    with _logging(getattr(args, "verbose", 0) - getattr(args, "quiet", 0)):
        return _command(args, argv)


def _command(args: argparse.Namespace, argv: Sequence[str]) -> int:
    if getattr(args, "coordinator", None) is not None or getattr(args, "num_processes", None) is not None \
            or getattr(args, "process_id", None) is not None:
        from fgl_jax.federated import devices  # before anything touches a device
        try:
            devices.initialize(args.coordinator, args.num_processes, args.process_id)
        except ValueError as e:
            print(f"fgl-jax: error: {e}", file=sys.stderr)
            return 2
    if hasattr(args, "no_cache"):  # before anything compiles (`fgl_jax.cache`)
        from fgl_jax import cache
        cache.disable() if args.no_cache else cache.enable()
    if args.func is not cmd_system:  # (cmd_system does it once its imports are done)
        _collector_after_imports()
    try:
        return args.func(args)
    except (ValueError, KeyError, OSError, FloatingPointError, RuntimeError, MemoryError) as e:
        # user-facing errors (a full disk, an unwritable --out, ...): one clear line, no deep traceback
        if os.environ.get("FGL_JAX_TRACEBACK"):
            raise
        print(f"fgl-jax: error: {_one_line(e)}", file=sys.stderr)
        return 1 if isinstance(e, MemoryError) else 2
    except KeyboardInterrupt:
        print(f"fgl-jax: interrupted{_resume_hint(args, argv)}", file=sys.stderr)
        return 130


def _one_line(e: BaseException) -> str:
    """An error as the one line the CLI prints: an OSError with a path as `<path>: <what>`."""
    if isinstance(e, KeyError) and e.args:
        return str(e.args[0])
    if isinstance(e, MemoryError):
        return "out of memory" + (f" ({e})" if str(e) else "")
    if isinstance(e, OSError) and e.strerror and e.filename is not None:
        two = f" -> {e.filename2}" if e.filename2 is not None else ""
        return f"{e.filename}{two}: {e.strerror}"
    text = str(e) or type(e).__name__
    return text.splitlines()[0] if isinstance(e, OSError) else text


class _StderrLines(logging.Handler):
    """The `fgl_jax` logger's records as one line each on the current standard error (looked up at
    each record, so a test's captured stream gets them): `fgl-jax: notice: ...` for a warning (a data
    notice: symmetrised edges, default split, ...), `fgl-jax: error: ...`, `fgl-jax: ...` for details."""

    PREFIX = {logging.WARNING: "notice: ", logging.ERROR: "error: ", logging.CRITICAL: "error: "}

    def emit(self, record: logging.LogRecord) -> None:
        try:
            text = " ".join(record.getMessage().splitlines())
            sys.stderr.write(f"fgl-jax: {self.PREFIX.get(record.levelno, '')}{text}\n")
            sys.stderr.flush()
        except (OSError, ValueError):  # a closed stderr: nothing to report to
            pass


VERBOSITY = {-1: logging.ERROR, 0: logging.WARNING, 1: logging.INFO, 2: logging.DEBUG}


@contextlib.contextmanager
def _logging(verbosity: int) -> Iterator[None]:
    """For one command: the `fgl_jax` logger prints through `_StderrLines` at the level -q / -v chose
    (-q: errors only, no notices; default: notices; -v: details; -vv: debugging), not to the
    root logger's handlers (no line twice); a Python caller's logging is restored afterwards."""
    logger = logging.getLogger("fgl_jax")
    before = (logger.level, logger.propagate)
    handler = _StderrLines()
    logger.addHandler(handler)
    logger.setLevel(VERBOSITY[max(-1, min(2, verbosity))])
    logger.propagate = False
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(before[0])
        logger.propagate = before[1]


def _resume_hint(args: argparse.Namespace, argv: Sequence[str]) -> str:
    """'; resume with: fgl-jax ... --resume' for a run with --out (checkpoints were being written)."""
    if not getattr(args, "out", None) or args.func is not cmd_system:
        return ""
    import shlex
    again = [a for a in argv if a not in ("--overwrite", "--resume")]
    return "; resume with: fgl-jax " + " ".join(shlex.quote(a) for a in again + ["--resume"])


_PROCESS = [False]  # True when `entry` runs the command as its own process (not `main` called from Python)


def _collector_after_imports() -> None:
    """In the program's own process (`entry`, which turned the cyclic garbage collector off while
    the modules are imported: its collections there are a large part of the import, for objects
    that live until the process exits): the objects there are now (import-time cycles among them)
    leave the collector's view for good (`gc.freeze`), and it is turned back on. Its full
    collections during the run then scan only what the run creates, instead of holding the GIL
    over every module while the chunk program is traced. The metrics are unchanged.
    Called from Python (`main`: a notebook, the tests), the caller's collector is left alone."""
    if _PROCESS[0]:
        import gc
        gc.freeze()
        gc.enable()


def entry() -> None:
    """The `fgl-jax` program: `main`, then a normal interpreter exit with its exit code.

    The exit is the normal one (`sys.exit`), so `atexit` handlers run (a user's, jax.distributed's
    shutdown, logging's); only a failed or interrupted command bounds its wait for threads of the
    checkpoint library, whose unfinished save is uncommitted and ignored by a resume."""
    _PROCESS[0] = True
    import gc
    gc.disable()  # until the imports are done (`_collector_after_imports`)
    code = main()
    import threading
    for t in threading.enumerate():
        if t is not threading.main_thread() and not t.daemon:
            # a failed or interrupted command does not wait long: what a thread of the checkpoint
            # library may still be writing is an uncommitted save, which a resume ignores
            t.join(None if code == 0 else 5.0)
    import logging
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    code = 0 if code is None else code if isinstance(code, int) else 1
    if any(t.is_alive() and not t.daemon and t is not threading.main_thread() for t in threading.enumerate()):
        # a failed command whose checkpoint thread still writes after the bounded wait: run the
        # exit handlers, then leave without waiting for that thread (sys.exit would wait forever)
        import atexit
        import os
        atexit._run_exitfuncs()
        os._exit(code)
    sys.exit(code)


if __name__ == "__main__":
    entry()
