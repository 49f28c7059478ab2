"""Lumos diagnostic: the same pipeline without LDP noise (eps = inf) on Facebook, to separate the cost
of the one-bit mechanism from the cost of the tree architecture / POOL.

    python experiments/lumos/diagnostics.py [--data-dir D] [--epochs 100]

Writes experiments/results/lumos/diagnostics.{md,json}.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from experiments.common import RESULTS, provenance, write_results  # noqa: E402
from fgl_jax.data.musae import load_facebook  # noqa: E402
from fgl_jax.data.splits import random_split  # noqa: E402
from fgl_jax.partition.edges import random_edge_split  # noqa: E402
from fgl_jax.systems.lumos.trainer import LumosConfig, prepare, top_frequent_features, train  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data-dir", default=None)
    ap.add_argument("--epochs", type=int, default=100)
    args = ap.parse_args()
    t0 = time.perf_counter()
    g = random_split(load_facebook(args.data_dir), 0.5, 0.25, 0.25, seed=0)
    x = top_frequent_features(g.x, 128)
    split = random_edge_split(g.senders, g.receivers, g.num_nodes, 0.8, 0.05, 0.15, seed=0)
    rows = {}
    for task in ("node", "link"):
        cfg = LumosConfig(task=task, epochs=args.epochs, epsilon=float("inf"), mcmc_iters=1000)
        out = train(prepare(g, cfg, split if task == "link" else None, x_scaled=x), cfg, g.num_classes)
        rows[task] = {"best": out["best"], "val_curve_every_10": out["history"]["val_acc"][::10],
                      "train_loss_every_10": out["history"]["train_loss"][::10]}
        print(task, out["best"], flush=True)
    md = ["# Lumos diagnostic: Facebook without LDP noise (ε = ∞), GCN\n",
          "| task | metric | best val | test at best val | best epoch |", "|---|---|---|---|---|"]
    for task, r in rows.items():
        b = r["best"]
        md.append(f"| {task} | {'accuracy' if task == 'node' else 'ROC-AUC'} | {b['best_val']:.4f} | "
                  f"{b['best_test']:.4f} | {b['best_round']} |")
    write_results(RESULTS / "lumos", "diagnostics", "\n".join(md),
                  {"rows": rows, "provenance": provenance(t0, vars(args))})


if __name__ == "__main__":
    main()
