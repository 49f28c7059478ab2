"""Accuracy against the attacker fraction on Cora: FedAvg's mean, median, trimmed mean and Krum under
model-poisoning attacks (docs/robustness.md). One `run_grid` per (attack, aggregator): the attacker
fraction is a traced value, so each is one compiled program over seeds x fractions.

    python experiments/robustness/cora_attackers.py [--rounds 30] [--seeds 0 1] [--attacks sign_flip gaussian]

Writes experiments/results/robustness/cora_attackers.json (an `fgl_jax.record/1`, every member's best
validation round's test accuracy) and cora_attackers.md (the table docs/robustness.md shows: the mean
over seeds of the test accuracy at the best validation round). `sweep_attackers` and `table_lines`
serve the sibling experiments (proteins_attackers.py).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]
from harness import machine, write_record  # noqa: E402

OUT = ROOT / "experiments" / "results" / "robustness"
FRACTIONS = [0.0, 0.1, 0.2, 0.3]
# f = 3 and beta = 0.3 cover the largest attacker fraction (3 of 10 clients)
AGGREGATORS = {"mean": {}, "median": {}, "trimmed_mean": {"aggregator_trim": 0.3}, "krum": {"aggregator_f": 3}}


def sweep_attackers(base: dict, attacks, seeds) -> tuple[list, dict]:
    """(rows, table) of every (attack, aggregator) in AGGREGATORS over seeds x FRACTIONS, each one
    compiled program: rows = one dict per member (best_test, best_val), table[(attack, aggregator,
    fraction)] = the mean over seeds of best_test."""
    import numpy as np
    from fgl_jax import RunConfig, build, engine

    rows, table = [], {}
    for attack in attacks:
        for agg, extra in AGGREGATORS.items():
            opts = {**base, "aggregator": agg, "attack": attack, **extra}
            res = engine.run_grid(lambda o: build(RunConfig(**o)), opts, seeds, {"attackers": FRACTIONS},
                                  log=lambda *a: None)
            assert res.programs == 1, res.messages
            for r in res.rows:
                rows.append({"attack": attack, "aggregator": agg, **extra, "seed": r["seed"],
                             "attackers": r["attackers"], "best_test": r["best_test"], "best_val": r["best_val"]})
            for frac in FRACTIONS:
                acc = [r["best_test"] for r in res.rows if r["attackers"] == frac]
                table[(attack, agg, frac)] = float(np.mean(acc))
            print(f"{attack} {agg}: " + ", ".join(f"{f:.1f}: {table[(attack, agg, f)]:.3f}" for f in FRACTIONS)
                  + f" (compile {res.compile_seconds:.1f} s, run {res.run_seconds:.1f} s)", flush=True)
    return rows, table


def table_lines(table: dict, attacks) -> list[str]:
    """The markdown tables of `sweep_attackers`' table: one per attack, a row per aggregator."""
    lines = []
    for attack in attacks:
        lines += [f"| {attack} | " + " | ".join(f"{int(100 * f)}% attackers" for f in FRACTIONS) + " |",
                  "|---|" + "---|" * len(FRACTIONS)]
        for agg, extra in AGGREGATORS.items():
            name = agg + "".join(f" ({k.split('_', 1)[1]} {v})" for k, v in extra.items())
            lines.append(f"| {name} | " + " | ".join(f"{table[(attack, agg, f)]:.3f}" for f in FRACTIONS) + " |")
        lines.append("")
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=30, help="FL rounds per run")
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1], help="model seeds")
    ap.add_argument("--attacks", nargs="+", default=["sign_flip", "gaussian"], help="attacks to run")
    args = ap.parse_args()

    base = dict(dataset="cora", clients=10, split="openfgl", rounds=args.rounds)
    rows, table = sweep_attackers(base, args.attacks, args.seeds)
    command = "python experiments/robustness/cora_attackers.py " + " ".join(sys.argv[1:])
    write_record(OUT / "cora_attackers.json", {
        "experiment": "test accuracy at the best validation round vs the attacker fraction, FedAvg-GCN (hidden 64) "
                      "on Cora, 10 clients, random partition, split openfgl", "rounds": args.rounds,
        "seeds": args.seeds, "machine": machine(), "command": command, "rows": rows}, kind="experiment")
    lines = [f"Test accuracy at the best validation round (mean of seeds {', '.join(map(str, args.seeds))}), "
             f"FedAvg-GCN on Cora, 10 clients, {args.rounds} rounds; `{command.strip()}`.", ""]
    lines += table_lines(table, args.attacks)
    (OUT / "cora_attackers.md").write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
