"""Accuracy against the attacker fraction on PROTEINS (graph classification): FedAvg's mean, median,
trimmed mean and Krum under model-poisoning attacks, the graph-level sibling of cora_attackers.py
(docs/robustness.md). 10 clients with Dirichlet label skew over the graph labels; one `run_grid` per
(attack, aggregator), the attacker fraction traced, so each is one compiled program over seeds x fractions.

    nice -n 5 python experiments/robustness/proteins_attackers.py [--rounds 10] [--seeds 0] \
        [--attacks sign_flip gaussian]

Writes experiments/results/robustness/proteins_attackers.json (an `fgl_jax.record/1`) and
proteins_attackers.md (the table docs/robustness.md shows), then draws docs/img/robustness_attackers.png:
test accuracy against the attacker fraction, Cora (from cora_attackers.json) beside PROTEINS.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from cora_attackers import AGGREGATORS, FRACTIONS, OUT, ROOT, sweep_attackers, table_lines  # noqa: E402
from harness import machine, write_record  # noqa: E402

FIGURE = ROOT / "docs" / "img" / "robustness_attackers.png"
DATASETS = (("cora_attackers.json", "Cora (node_cls, GCN)"), ("proteins_attackers.json", "PROTEINS (graph_cls, GIN)"))


def draw(out: Path = FIGURE) -> Path:
    """One panel per (dataset record present, attack): the mean over seeds of best_test against the
    attacker fraction, a line per aggregator; every number read from the records."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    recs = [(json.loads((OUT / f).read_text())["metrics"], title) for f, title in DATASETS if (OUT / f).exists()]
    attacks = sorted({r["attack"] for m, _ in recs for r in m["rows"]})
    fig, axes = plt.subplots(len(recs), len(attacks), figsize=(4.2 * len(attacks), 3.2 * len(recs)), squeeze=False)
    for i, (m, title) in enumerate(recs):
        for j, attack in enumerate(attacks):
            ax = axes[i][j]
            for agg in AGGREGATORS:
                ys = [np.mean([r["best_test"] for r in m["rows"] if r["attack"] == attack and r["aggregator"] == agg
                               and r["attackers"] == f] or [np.nan]) for f in FRACTIONS]
                ax.plot(FRACTIONS, ys, marker="o", label=agg)
            ax.set_title(f"{title}: {attack}, {m['rounds']} rounds", fontsize=9)
            ax.set_xlabel("attacker fraction")
            ax.set_ylabel("test accuracy")
            ax.set_xticks(FRACTIONS)
            ax.grid(alpha=0.3)
    axes[0][0].legend(fontsize=8)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=10, help="FL rounds per run")
    ap.add_argument("--seeds", type=int, nargs="+", default=[0], help="model seeds")
    ap.add_argument("--attacks", nargs="+", default=["sign_flip", "gaussian"], help="attacks to run")
    ap.add_argument("--plot-only", action="store_true", help="only redraw the figure from the records")
    args = ap.parse_args()
    if args.plot_only:
        print(draw())
        return

    base = dict(task="graph_cls", dataset="PROTEINS", clients=10, partition="dirichlet", dirichlet_beta=0.5,
                rounds=args.rounds, hidden=32, graph_batch_size=32)
    rows, table = sweep_attackers(base, args.attacks, args.seeds)
    command = "nice -n 5 python experiments/robustness/proteins_attackers.py " + " ".join(sys.argv[1:])
    write_record(OUT / "proteins_attackers.json", {
        "experiment": "test accuracy at the best validation round vs the attacker fraction, FedAvg-GIN (hidden 32, "
                      "mean pooling) on PROTEINS, 10 clients, Dirichlet label skew (beta 0.5), OpenFGL's 80/10/10 "
                      "split per client", "rounds": args.rounds, "seeds": args.seeds, "machine": machine(),
        "command": command, "options": base, "rows": rows}, kind="experiment")
    lines = [f"Test accuracy at the best validation round (mean of seeds {', '.join(map(str, args.seeds))}), "
             f"FedAvg-GIN on PROTEINS, 10 clients (Dirichlet beta 0.5), {args.rounds} rounds; `{command.strip()}`.", ""]
    lines += table_lines(table, args.attacks)
    (OUT / "proteins_attackers.md").write_text("\n".join(lines))
    print("\n".join(lines))
    print(draw())


if __name__ == "__main__":
    main()
