"""Lumos diagnostic: the same pipeline without LDP noise (eps = inf) on Facebook, to separate the cost
of the one-bit mechanism from the cost of the tree architecture / POOL.

    python experiments/lumos/diagnostics.py [--data-dir D] [--epochs 100] [--render]

On the one harness (experiments/harness.py): one cell per task (the paper's T on Facebook with the
simulated Alg. 3, split and chain of seed 0, no LDP noise), each a record in
experiments/results/lumos/records/diagnostics_full.jsonl; diagnostics.md is rendered from the records.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Optional

if __package__ in (None, ""):  # run as a script: the checkout's root on the path (fgl_jax, experiments)
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from fgl_jax import run_config
from fgl_jax.systems.lumos import LumosConfig

from experiments import harness
from experiments.harness import Cell

TABLE = "diagnostics"          # records/diagnostics_full.jsonl
OUT = harness.RESULTS / "lumos"


def cells(epochs: int = 100, data_dir: Optional[str] = None) -> list[Cell]:
    """One cell per task: Facebook GCN at eps = inf (seed 0)."""
    return [Cell(f"{TABLE}/{task}", LumosConfig(dataset="facebook", data_dir=data_dir, task=task, rounds=epochs,
                                                 epsilon=float("inf"), mcmc_iters=1000, mcmc_argmax="alg3"), (0,),
                 title=f"Facebook {task}, eps = inf") for task in ("node", "link")]


def measure(c: Cell) -> dict:
    """One run through the engine: best-validation metrics and the validation / loss curves every 10 epochs."""
    res = run_config(c.config)
    return {"best": res.best, "val_curve_every_10": res.history["val_acc"][::10].tolist(),
            "train_loss_every_10": res.history["train_loss"][::10].tolist()}


def render(recs: dict) -> str:
    md = ["# Lumos diagnostic: Facebook without LDP noise (ε = ∞), GCN\n",
          "| task | metric | best val | test at best val | best epoch |", "|---|---|---|---|---|"]
    for rec in recs.values():
        task, b = rec["config"]["task"], rec["metrics"]["best"]
        md.append(f"| {task} | {'accuracy' if task == 'node' else 'ROC-AUC'} | {b['best_val']:.4f} | "
                  f"{b['best_test']:.4f} | {b['best_round']} |")
    return "\n".join(md)


def render_records(out: Path = OUT) -> Path:
    recs = harness.load(out, False, f"{TABLE}/")
    if not recs:
        raise ValueError(f"no diagnostics records under {harness.records_dir(out)}: "
                         "run experiments/lumos/diagnostics.py")
    return harness.write_table(out, TABLE, render(recs), list(recs.values()))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data-dir", default=None)
    ap.add_argument("--epochs", type=int, default=100)
    ap.add_argument("--out", default=str(OUT), help="folder of the records and diagnostics.md")
    ap.add_argument("--render", action="store_true", help="only re-render diagnostics.md from the records")
    args = ap.parse_args(argv)
    if not args.render:
        harness.run_cells(cells(args.epochs, args.data_dir), measure, args.out, quick=False)
    print(f"wrote {render_records(Path(args.out))}")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except ValueError as e:     # no records / a bad config value: one line, no stack trace
        sys.exit(f"{Path(__file__).name}: {e}")
