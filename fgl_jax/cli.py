"""`fgl-jax` command line: run, demo, datasets, and one subcommand per system.

    fgl-jax demo                                  # FedAvg-GCN on the embedded CSBM graph
    fgl-jax run --dataset cora --algorithm fedavg --model gcn --clients 10 --partition louvain \
                --rounds 100 --out runs/cora_fedavg
    fgl-jax run --config runs/cora_fedavg/config.yaml --out runs/replay
    fgl-jax run ... --out runs/x --resume           # continue an interrupted run
    fgl-jax datasets --data-dir ../shared/data
"""
from __future__ import annotations

import argparse
import dataclasses
import importlib
import json
import sys
from typing import Optional, Sequence

from fgl_jax.config import RunConfig, config_fields, from_dict, load_config

SYSTEMS = ("hifgl", "lumos", "fedhgn", "fedgc", "fedhgl")


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


def cmd_sweep(args: argparse.Namespace) -> int:
    """Grid of seeds x traced hyperparameters as ONE vmapped program."""
    import itertools
    from fgl_jax.federated.sweep import run_sweep
    from fgl_jax.pipeline import algorithm_from_config, prepare
    cfg = _config_from_args(args)
    try:
        seeds = [int(v) for v in args.seeds.split(",") if v.strip()]
    except ValueError:
        raise ValueError(f"--seeds must be a comma-separated list of integers, got {args.seeds!r}") from None
    axes = {"seed": seeds}
    if args.lrs:
        axes["lr"] = _floats(args.lrs, "lrs")
        if any(v <= 0 for v in axes["lr"]):
            raise ValueError(f"--lrs must all be positive, got {axes['lr']}")
    if args.prox_mus:
        axes["prox_mu"] = _floats(args.prox_mus, "prox-mus")
    grid = list(itertools.product(*axes.values()))
    names = list(axes)
    hp = {n: [g[i] for g in grid] for i, n in enumerate(names) if n != "seed"}
    prepared = prepare(cfg)
    res = run_sweep(algorithm_from_config(cfg, prepared.graph), prepared.data, [g[0] for g in grid], cfg.rounds, hp)
    print(" | ".join(names) + " | best_round | best val_acc | test_acc at best val")
    for i, m in enumerate(res.members):
        print(" | ".join(str(m[n]) for n in names) +
              f" | {int(res.best['best_round'][i])} | {res.best['best_val'][i]:.4f} | {res.best['best_test'][i]:.4f}")
    print(f"{len(grid)} members in one program: compile {res.compile_seconds:.2f} s, run {res.run_seconds:.2f} s")
    if args.out:
        import json
        from pathlib import Path
        from fgl_jax.config import save_config
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        save_config(cfg, out / "config.yaml")
        rows = [{**m, **{k: float(v[i]) for k, v in res.best.items()}} for i, m in enumerate(res.members)]
        (out / "sweep.json").write_text(json.dumps({"axes": axes, "rows": rows,
                                                    "history": {k: v.tolist() for k, v in res.history.items()}}))
        print(f"wrote {out}/sweep.json")
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


def cmd_reproduce(args: argparse.Namespace) -> int:
    """Run a paper's experiment scripts: experiments/<system>/{baselines,reproduce}.py."""
    import subprocess
    import time
    root = experiments_dir()
    systems = list(SYSTEMS) if args.system == "all" else [args.system]
    for system in systems:
        scripts = [root / system / name for name in ("baselines.py", "reproduce.py", "table6.py") if (root / system / name).exists()]
        if not scripts:
            raise FileNotFoundError(f"no experiment script in {root / system}")
        for script in scripts:
            cmd = [sys.executable, str(script)] + (["--quick"] if args.quick else [])
            if args.data_dir:
                cmd += ["--data-dir", args.data_dir]
            print(f"== {system}: {' '.join(cmd[1:])}", flush=True)
            t0 = time.perf_counter()
            rc = subprocess.call(cmd, cwd=root.parent)
            if rc != 0:
                raise RuntimeError(f"{script.name} for {system} failed with exit code {rc}")
            print(f"== {system}: {script.name} done in {time.perf_counter() - t0:.0f} s", flush=True)
    index = root / "make_index.py"
    if index.exists() and not args.quick:
        subprocess.call([sys.executable, str(index)], cwd=root.parent)
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="fgl-jax", description="Federated graph learning in JAX")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("run", help="run a baseline framework (local/fedavg/fedprox/fedper/global)")
    _add_run_options(p)
    p.set_defaults(func=cmd_run)
    p = sub.add_parser("sweep", help="a grid of seeds x learning rates (x FedProx mu) as one vmapped program")
    _add_run_options(p)
    p.add_argument("--seeds", default="0", help="comma-separated seeds")
    p.add_argument("--lrs", default=None, help="comma-separated learning rates")
    p.add_argument("--prox-mus", default=None, help="comma-separated FedProx mu values")
    p.set_defaults(func=cmd_sweep)
    p = sub.add_parser("demo", help="FedAvg-GCN on the embedded synthetic graph (no downloads)")
    p.add_argument("--rounds", type=int, default=100)
    p.add_argument("--out", default=None)
    p.add_argument("--no-progress", action="store_true")
    p.set_defaults(func=cmd_demo)
    p = sub.add_parser("reproduce", help="run a paper's experiments and write its tables and figures")
    p.add_argument("system", choices=list(SYSTEMS) + ["all"])
    p.add_argument("--quick", action="store_true", help="small settings (a few minutes)")
    p.add_argument("--data-dir", default=None)
    p.set_defaults(func=cmd_reproduce)
    p = sub.add_parser("datasets", help="list datasets and whether their files are found")
    p.add_argument("--data-dir", default=None)
    p.set_defaults(func=cmd_datasets)
    for system in SYSTEMS:
        try:
            mod = importlib.import_module(f"fgl_jax.systems.{system}")
        except ImportError:
            continue
        if hasattr(mod, "register_cli"):
            mod.register_cli(sub)
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except (ValueError, KeyError, FileNotFoundError, FloatingPointError, RuntimeError) as e:
        # user-facing errors: one clear line, no deep traceback
        msg = e.args[0] if isinstance(e, KeyError) and e.args else e
        print(f"fgl-jax: error: {msg}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
