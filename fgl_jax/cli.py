"""`fgl-jax` command line: run, demo, datasets, and one subcommand per system.

    fgl-jax demo                                  # FedAvg-GCN on the embedded CSBM graph
    fgl-jax run --dataset cora --algorithm fedavg --model gcn --clients 10 --partition louvain \
                --rounds 100 --out runs/cora_fedavg
    fgl-jax run --config runs/cora_fedavg/config.yaml --out runs/replay
    fgl-jax run ... --out runs/x --resume           # continue an interrupted run
    fgl-jax datasets --data-dir ../shared/data
    fgl-jax hifgl --config experiments/configs/hifgl/cora_hifgl_gcn.yaml --rounds 20 --out runs/h
    fgl-jax hifgl --config runs/h/config.yaml                # replay exactly
    fgl-jax sweep --system hifgl --config c.yaml --seeds 0,1,2,3 --grid lr=0.01,0.05 --out runs/sweep
    fgl-jax reproduce all --quick --out /tmp/repro           # every paper's quick tables, outside the repo
"""
from __future__ import annotations

import argparse
import importlib
import json
import sys
from typing import Optional, Sequence

from fgl_jax.config import RunConfig, config_fields, from_dict, load_config

SYSTEMS = ("hifgl", "lumos", "fedhgn", "fedgc", "fedhgl")
# systems whose own command does something the generic runner does not (their --runner auto = native)
NATIVE_BY_DEFAULT = {"fedhgn": "the paper's early stopping (--patience) is applied by its own command only",
                     "fedgc": "only with --mia or --archs: the membership attack and the evaluation of G' with "
                              "other architectures run in its own command only"}


def _native_by_default(system: str, options: dict) -> bool:
    if system == "fedgc":
        return bool(options.get("mia")) or bool(options.get("archs"))
    return system in NATIVE_BY_DEFAULT


def _add_run_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", help="YAML file with RunConfig fields; command-line options override it")
    for name, field in config_fields().items():
        flag = "--" + name.replace("_", "-")
        # annotations are strings ("int", "Optional[str]", ...): take the innermost type name
        tname = str(field.type).replace("Optional[", "").rstrip("]")
        ftype = {"int": int, "float": float, "str": str}.get(tname, str)
        p.add_argument(flag, dest=name, type=ftype, default=None,
                       help=f"(default: {field.default!r})")
    p.add_argument("--out", help="output directory: config.yaml, metrics.jsonl, checkpoints/, summary.json")
    p.add_argument("--resume", action="store_true", help="continue from the newest checkpoint in --out")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")


def _config_from_args(args: argparse.Namespace) -> RunConfig:
    overrides = {name: getattr(args, name) for name in config_fields() if getattr(args, name) is not None}
    if args.config:
        return load_config(args.config, **overrides)
    return from_dict(overrides, source="command line")


def _print_result(cfg: RunConfig, res) -> None:
    print(f"dataset={cfg.dataset} algorithm={cfg.algorithm} model={cfg.model} clients={cfg.clients} "
          f"rounds={cfg.rounds} seed={cfg.seed}")
    print(f"final: train_loss={res.final['train_loss']:.4f} val_acc={res.final['val_acc']:.4f} "
          f"test_acc={res.final['test_acc']:.4f}")
    print(f"best-val round {res.best['best_round']}: val_acc={res.best['best_val']:.4f} "
          f"test_acc={res.best['best_test']:.4f}")
    print(f"compile {res.compile_seconds:.2f} s, run {res.run_seconds:.2f} s "
          f"({1000 * res.run_seconds / max(cfg.rounds, 1):.1f} ms/round)")


def cmd_run(args: argparse.Namespace) -> int:
    from fgl_jax.pipeline import train
    cfg = _config_from_args(args)
    if args.resume and not args.out:
        raise SystemExit("fgl-jax run: --resume needs --out (the directory of the interrupted run)")
    res = train(cfg, out_dir=args.out, resume=args.resume, progress=not args.no_progress)
    _print_result(cfg, res)
    if args.out:
        print(f"wrote {args.out}/config.yaml, metrics.jsonl, summary.json, checkpoints/")
    return 0


def _floats(text: str, name: str) -> list[float]:
    try:
        return [float(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise ValueError(f"--{name} must be a comma-separated list of numbers, got {text!r}") from None


def _sweep_grid(args: argparse.Namespace) -> dict:
    from fgl_jax.sysconfig import parse_assignment
    grid = {}
    for text in args.grid or []:
        name, values = parse_assignment(text, "--grid")
        if name in grid:
            raise ValueError(f"--grid {name} given twice")
        grid[name] = values
    if args.lrs:  # older spellings of --grid lr=... / --grid prox_mu=...
        grid["lr"] = _floats(args.lrs, "lrs")
    if args.prox_mus:
        grid["prox_mu"] = _floats(args.prox_mus, "prox-mus")
    if "lr" in grid and any(not isinstance(v, (int, float)) or v <= 0 for v in grid["lr"]):
        raise ValueError(f"--grid lr values must all be positive numbers, got {grid['lr']}")
    return grid


def _sweep_setup(args: argparse.Namespace, parser: argparse.ArgumentParser):
    """(system, build_program, base options, coerce) for `fgl-jax sweep`."""
    import yaml
    from fgl_jax import sysconfig
    from fgl_jax.sysconfig import parse_assignment
    system = args.system
    flags = {name: getattr(args, name) for name in config_fields() if getattr(args, name) is not None}
    sets = dict(parse_assignment(t, "--set") for t in args.set or [])
    if system is None and args.config:  # a config written by `fgl-jax <system> --out` names its system
        head = yaml.safe_load(open(args.config)) if args.config.endswith((".yaml", ".yml")) else None
        system = head.get("system") if isinstance(head, dict) else None
    system = system or "baseline"
    if system == "baseline":
        from fgl_jax.pipeline import build_program
        cfg = _config_from_args(args)
        options = cfg.to_dict()
        for k, v in sets.items():
            if k not in options or len(v) != 1:
                raise ValueError(f"--set {k}: baseline options are {sorted(options)} (one value each)")
            options[k] = v[0]
        return system, build_program, from_dict(options, "baseline options").to_dict(), lambda k, v: v
    if system not in SYSTEMS:
        raise ValueError(f"--system must be 'baseline' or one of {SYSTEMS}, got {system!r}")
    mod = importlib.import_module(_system_module(system))
    if not hasattr(mod, "build_program"):
        raise ValueError(f"system {system!r} has no build_program(options) yet, so it cannot be swept")
    sp = _subparsers(parser)[system]
    options = sysconfig.default_options(sp)
    if args.config:
        options.update(sysconfig.read_options(args.config, sp, system))
    for k, v in flags.items():  # run flags (--rounds, --lr, --seed, ...) that the system also has
        if k not in options:
            raise ValueError(f"option --{k.replace('_', '-')} does not apply to system {system!r}; "
                             f"its options are {sorted(options)} (use --set key=value)")
        options[k] = sysconfig.coerce(sp, k, v, "command line")
    for k, v in sets.items():
        if len(v) != 1:
            raise ValueError(f"--set {k} takes one value; use --grid for several")
        options[k] = sysconfig.coerce(sp, k, v[0], "--set")
    coerce = lambda k, v: sysconfig.coerce(sp, k, v, "--grid") if k in options else v
    return system, mod.build_program, options, coerce


def cmd_sweep(args: argparse.Namespace, parser: Optional[argparse.ArgumentParser] = None) -> int:
    """Seeds x grid for any system: traced hyperparameters (state.hp) vectorised in one compiled
    program, shape-changing options as separate programs (with a message)."""
    from fgl_jax.federated.sweep import run_grid, write_grid_report
    try:
        seeds = [int(v) for v in args.seeds.split(",") if v.strip()]
    except ValueError:
        raise ValueError(f"--seeds must be a comma-separated list of integers, got {args.seeds!r}") from None
    grid = _sweep_grid(args)
    system, build, options, coerce = _sweep_setup(args, parser or build_parser())
    grid = {k: [coerce(k, v) for v in vs] for k, vs in grid.items()}
    data_dir = options.get("data_dir")
    res = run_grid(lambda o: build(o, data_dir=data_dir), options, seeds, grid, mode=args.mode)
    keys = [k for k in res.axes if k != "seed"]
    print(" | ".join(["seed"] + keys) + " | best_round | best val_acc | test_acc at best val")
    for r in res.rows:
        print(" | ".join(str(r[k]) for k in ["seed"] + keys) +
              f" | {r['best_round']} | {r['best_val']:.4f} | {r['best_test']:.4f}")
    print(f"{len(res.rows)} members in {res.programs} program(s): compile {res.compile_seconds:.2f} s, "
          f"run {res.run_seconds:.2f} s")
    if "seed" in options and system != "baseline":
        res.messages.append(f"--seeds vary the run key (initialisation, dropout, in-program noise); host-side "
                            f"preparation (split, partition) used the config's seed={options['seed']}")
    if args.out:
        from pathlib import Path
        from fgl_jax.sysconfig import dump_options
        dump_options(system, options, Path(args.out) / "config.yaml")
        title = f"{system} sweep: " + ", ".join(f"{k}={options.get(k)}" for k in ("dataset", "algorithm", "model")
                                                 if options.get(k) is not None)
        paths = write_grid_report(res, args.out, title, {"system": system, "options": options})
        print(f"wrote {paths['md']}, {paths['json']}, {paths['png']}, {Path(args.out) / 'config.yaml'}")
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    from fgl_jax.pipeline import train
    cfg = RunConfig(dataset="csbm", algorithm="fedavg", model="gcn", clients=5, partition="louvain",
                    split="keep", rounds=args.rounds, local_steps=3, lr=0.01, weight_decay=5e-4, seed=0)
    res = train(cfg, out_dir=args.out, progress=not args.no_progress)
    _print_result(cfg, res)
    return 0


def cmd_datasets(args: argparse.Namespace) -> int:
    from fgl_jax.data import list_datasets
    rows = list_datasets(args.data_dir)
    width = max(len(r["name"]) for r in rows)
    for r in rows:
        state = "found" if r["found"] else "MISSING " + ", ".join(r["missing"][:3])
        print(f"{r['name']:<{width}}  {state:<30}  {r.get('where', '')}  {r.get('description', '')}")
    return 0


def experiments_dir():
    """The source checkout's experiments/ folder (experiments are scripts, not part of the wheel)."""
    from pathlib import Path
    here = Path(__file__).resolve().parents[1] / "experiments"
    if not here.is_dir():
        raise FileNotFoundError(f"no experiments/ folder next to the package ({here}); `fgl-jax reproduce` needs the "
                                "source checkout (git clone, then pip install -e .)")
    return here


def _accepts_out(script) -> bool:
    return '"--out"' in script.read_text()


def _staged_copy(root, dest):
    """A copy of experiments/ (scripts and configs, no results) under dest, so scripts that write
    next to themselves write into dest instead of the committed experiments/results."""
    import shutil
    target = dest / "_scripts" / "experiments"
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(root, target, ignore=shutil.ignore_patterns("results", "__pycache__", "*.ipynb"))
    return target


def _children_cpu() -> float:
    import resource
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def cmd_reproduce(args: argparse.Namespace) -> int:
    """Run a paper's experiment scripts: experiments/<system>/{baselines,reproduce,table6}.py.

    --out DIR writes every table into DIR/<system>/ and leaves experiments/results untouched:
    scripts with an --out option get it; the others run from a staged copy of experiments/ under
    DIR/_scripts whose results folder is then copied to DIR/<system>/.
    """
    import shutil
    import subprocess
    import time
    from pathlib import Path
    root = experiments_dir()
    systems = list(SYSTEMS) if args.system == "all" else [args.system]
    out = Path(args.out).absolute() if args.out else None
    staged = None
    timings = {}
    t_all = time.perf_counter()
    for system in systems:
        scripts = [root / system / name for name in ("baselines.py", "reproduce.py", "table6.py") if (root / system / name).exists()]
        if not scripts:
            raise FileNotFoundError(f"no experiment script in {root / system}")
        for script in scripts:
            extra = []
            if out is not None:
                (out / system).mkdir(parents=True, exist_ok=True)
                if _accepts_out(script):
                    extra = ["--out", str(out / system)]
                else:
                    staged = staged or _staged_copy(root, out)
                    script = staged / system / script.name
            cmd = [sys.executable, str(script)] + (["--quick"] if args.quick else []) + extra
            if args.data_dir:
                cmd += ["--data-dir", args.data_dir]
            print(f"== {system}: {' '.join(cmd[1:])}", flush=True)
            t0 = time.perf_counter()
            cpu0 = _children_cpu()
            rc = subprocess.call(cmd, cwd=root.parent)
            if rc != 0:
                raise RuntimeError(f"{script.name} for {system} failed with exit code {rc}")
            name = f"{system}/{script.name}"
            # CPU seconds (all threads) besides wall time: on a shared machine the steadier measure
            timings[name] = {"wall_s": round(time.perf_counter() - t0, 1), "cpu_s": round(_children_cpu() - cpu0, 1)}
            print(f"== {system}: {script.name} done in {timings[name]['wall_s']:.0f} s "
                  f"(CPU {timings[name]['cpu_s']:.0f} s)", flush=True)
        if staged is not None and (staged / "results" / system).is_dir():
            shutil.copytree(staged / "results" / system, out / system, dirs_exist_ok=True)
    if out is not None:
        import json
        timings["total"] = {"wall_s": round(time.perf_counter() - t_all, 1),
                            "cpu_s": round(sum(v["cpu_s"] for v in timings.values()), 1),
                            "loadavg_end": list(__import__("os").getloadavg())}
        (out / "timings.json").write_text(json.dumps(timings, indent=2))
        print(f"wrote results under {out} (timings.json: total {timings['total']['wall_s']:.0f} s wall, "
              f"{timings['total']['cpu_s']:.0f} s CPU)")
    index = root / "make_index.py"
    if index.exists() and not args.quick and out is None:
        subprocess.call([sys.executable, str(index)], cwd=root.parent)
    return 0


def _system_module(system: str) -> str:
    return f"fgl_jax.systems.{system}"


def _subparsers(parser: argparse.ArgumentParser) -> dict:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action.choices
    raise RuntimeError("fgl-jax parser has no subcommands")


def _add_system_controls(p: argparse.ArgumentParser, system: str) -> None:
    """Config file, replayable resolved config, output dir and resume for a system subcommand.

    Added here, generically, so no system module needs to know about YAML: the subcommand's own
    options (argparse dests) are the config keys.
    """
    have = dict(p._option_string_actions)
    before = {a.dest for a in p._actions}
    p.add_argument("--config", default=None,
                   help=f"YAML file of {system} options (keys = this command's option names); flags override it")
    p.add_argument("--print-config", action="store_true",
                   help="print the resolved options as YAML (replayable with --config) and exit")
    if "--out" not in have:
        p.add_argument("--out", default=None,
                       help="output directory: config.yaml, metrics.jsonl, checkpoints/, summary.json")
    if "--resume" not in have:
        p.add_argument("--resume", action="store_true", help="continue from the newest checkpoint in --out")
    if "--no-progress" not in have:
        p.add_argument("--no-progress", action="store_true", help="no progress bar")
    why = NATIVE_BY_DEFAULT.get(system)
    p.add_argument("--runner", default="auto", choices=["auto", "program", "native"],
                   help="program = build_program + fgl_jax.federated.run (progress, metrics.jsonl, checkpoints, "
                        "--resume, summary.json); native = the system's own command; auto = program when the "
                        "system has build_program" + (f", except here: native ({why})" if why else ""))
    added = sorted({a.dest for a in p._actions} - before)
    p.set_defaults(native_func=p.get_default("func"), func=cmd_system, system_name=system, system_parser=p,
                   system_added=added)


def _native_namespace(args: argparse.Namespace) -> argparse.Namespace:
    """The namespace the system's own command expects: without the flags and defaults added here."""
    drop = set(args.system_added) | {"native_func", "system_name", "system_parser", "system_added"}
    ns = argparse.Namespace(**{k: v for k, v in vars(args).items() if k not in drop})
    ns.func = args.native_func
    return ns


def cmd_system(args: argparse.Namespace) -> int:
    """`fgl-jax <system> ...`: write/print the resolved options, then run.

    When the system module exposes build_program(options), the run goes through
    `fgl_jax.federated.run` (progress bar with round and metrics, metrics.jsonl, orbax checkpoints,
    --resume, summary.json); otherwise (or with --runner native) through the system's own command.
    """
    from pathlib import Path
    from fgl_jax.sysconfig import dump_options, resolved_options
    system, sp = args.system_name, args.system_parser
    options = resolved_options(args, sp)
    if args.print_config:
        print(dump_options(system, options), end="")
        return 0
    if args.resume and not args.out:
        raise SystemExit(f"fgl-jax {system}: --resume needs --out (the directory of the interrupted run)")
    if args.out:
        dump_options(system, options, Path(args.out) / "config.yaml")
    mod = importlib.import_module(_system_module(system))
    runner = args.runner
    if runner == "auto":
        runner = "program" if hasattr(mod, "build_program") and not _native_by_default(system, options) else "native"
    if runner == "program" and not hasattr(mod, "build_program"):
        raise ValueError(f"system {system!r} has no build_program(options) yet: use --runner native")
    if runner == "program":
        return run_program(system, mod.build_program, options, out=args.out, resume=args.resume,
                           progress=not args.no_progress)
    if args.native_func is None:
        raise ValueError(f"system {system!r} has neither build_program nor a command of its own")
    return args.native_func(_native_namespace(args))


def run_program(system: str, build, options: dict, out=None, resume: bool = False, progress: bool = True) -> int:
    """build_program(options) -> run (key = options['seed']) -> printed summary (+ summary.json)."""
    import time
    from pathlib import Path
    import jax
    from fgl_jax.federated import run
    from fgl_jax.pipeline import environment
    t0 = time.perf_counter()
    program = build(options, data_dir=options.get("data_dir"))
    t_build = time.perf_counter() - t0
    res = run(program.algorithm, program.data, jax.random.key(int(options.get("seed") or 0)), program.num_rounds,
              progress=progress, out_dir=out, resume=resume)
    rounds = program.num_rounds
    desc = " ".join(f"{k}={(round(v, 3) if isinstance(v, float) else v)}" for k, v in dict(program.describe or {}).items()
                    if isinstance(v, (int, float, str, bool)) and k != "system")
    print(f"{system}: {desc} rounds={rounds} seed={options.get('seed')}")
    first = [k for k in ("train_loss", "val_acc", "test_acc") if k in res.final]
    print("final: " + " ".join(f"{k}={res.final[k]:.4f}" for k in first + sorted(set(res.final) - set(first))))
    print(f"best-val round {res.best['best_round']}: val_acc={res.best['best_val']:.4f} "
          f"test_acc={res.best['best_test']:.4f}")
    print(f"build {t_build:.2f} s, compile {res.compile_seconds:.2f} s, run {res.run_seconds:.2f} s "
          f"({1000 * res.run_seconds / max(rounds, 1):.1f} ms/round)")
    if out:
        summary = {"system": system, "describe": dict(program.describe or {}), "best": res.best, "final": res.final,
                   "rounds": rounds, "build_seconds": t_build, "compile_seconds": res.compile_seconds,
                   "run_seconds": res.run_seconds, "wall_seconds": time.perf_counter() - t0,
                   "environment": environment()}
        (Path(out) / "summary.json").write_text(json.dumps(summary, indent=2, default=str))
        print(f"wrote {out}/config.yaml, metrics.jsonl, summary.json, checkpoints/")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="fgl-jax", description="Federated graph learning in JAX")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("run", help="run a baseline framework (local/fedavg/fedprox/fedper/global)")
    _add_run_options(p)
    p.add_argument("--print-config", action="store_true", help="print the resolved config as YAML and exit")
    p.set_defaults(func=cmd_run)
    p = sub.add_parser("sweep", help="seeds x hyperparameter grid of any system (traced values in one program)")
    _add_run_options(p)
    p.add_argument("--system", default=None, choices=["baseline"] + list(SYSTEMS),
                   help="what to sweep (default: the config's `system:` key, else baseline); --config is then "
                        "that system's YAML")
    p.add_argument("--seeds", default="0", help="comma-separated seeds")
    p.add_argument("--grid", action="append", metavar="NAME=V1,V2",
                   help="a grid axis (repeatable): a traced hyperparameter (lr, eps, prox_mu, ...) is vectorised; "
                        "any other option runs as separate programs")
    p.add_argument("--set", action="append", metavar="NAME=VALUE", help="override one option of the system")
    p.add_argument("--mode", default="auto", choices=["auto", "vmap", "sequential"],
                   help="vmap = one program over all members; sequential = compiled once, called per member; "
                        "auto = vmap on GPU/TPU, sequential on CPU")
    p.add_argument("--lrs", default=None, help="comma-separated learning rates (= --grid lr=...)")
    p.add_argument("--prox-mus", default=None, help="comma-separated FedProx mu values (= --grid prox_mu=...)")
    p.set_defaults(func=lambda a: cmd_sweep(a, parser))
    p = sub.add_parser("demo", help="FedAvg-GCN on the embedded synthetic graph (no downloads)")
    p.add_argument("--rounds", type=int, default=100)
    p.add_argument("--out", default=None)
    p.add_argument("--no-progress", action="store_true")
    p.set_defaults(func=cmd_demo)
    p = sub.add_parser("reproduce", help="run a paper's experiments and write its tables and figures")
    p.add_argument("system", choices=list(SYSTEMS) + ["all"])
    p.add_argument("--quick", action="store_true", help="small settings (a few minutes)")
    p.add_argument("--data-dir", default=None)
    p.add_argument("--out", default=None,
                   help="write the tables into OUT/<system>/ instead of experiments/results/ (e.g. in CI)")
    p.set_defaults(func=cmd_reproduce)
    p = sub.add_parser("datasets", help="list datasets and whether their files are found")
    p.add_argument("--data-dir", default=None)
    p.set_defaults(func=cmd_datasets)
    for system in SYSTEMS:
        try:
            mod = importlib.import_module(_system_module(system))
        except ImportError:
            continue
        if hasattr(mod, "register_cli"):
            mod.register_cli(sub)
            if system in sub.choices:
                _add_system_controls(sub.choices[system], system)
    return parser


def _apply_system_config(parser: argparse.ArgumentParser, args: argparse.Namespace,
                         argv: Optional[Sequence[str]]) -> argparse.Namespace:
    """`fgl-jax <system> --config f.yaml [flags]`: the file's options become the subcommand's
    defaults, then the command line is parsed again so explicit flags win."""
    from fgl_jax.sysconfig import read_options
    system = getattr(args, "system_name", None)
    if system is None or not getattr(args, "config", None):
        return args
    sp = _subparsers(parser)[system]
    sp.set_defaults(**read_options(args.config, sp, system))
    return parser.parse_args(argv)


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        args = _apply_system_config(parser, args, argv)
        if args.command == "run" and args.print_config:
            import yaml
            print(yaml.safe_dump(_config_from_args(args).to_dict(), sort_keys=False), end="")
            return 0
        return args.func(args)
    except (ValueError, KeyError, FileNotFoundError, FloatingPointError, RuntimeError) as e:
        # user-facing errors: one clear line, no deep traceback
        msg = e.args[0] if isinstance(e, KeyError) and e.args else e
        print(f"fgl-jax: error: {msg}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
