"""The personalised-FL results table of docs/personalised.md: every personalised method beside FedAvg
and Local on a node task (Cora, 10 Louvain clients) and a graph task (PROTEINS, 10 clients,
Dirichlet label skew), 3 seeds each, mean +- sd of the test accuracy at the best validation round and
of the worst-10 % client's test accuracy there.

    python experiments/personalised/table.py [--rounds-cora 20] [--rounds-proteins 10] [--algorithms ...]
        [--datasets cora proteins] [--docs] [--render]

Each (dataset, algorithm) is one `fj.build` and one `fj.sweep` over the seeds (the member program
compiled once, the seeds run one after another on a CPU). Cora: split openfgl (20/40/40 per client),
GCN hidden 64; PROTEINS: GIN, mean readout, dirichlet_beta 0.5; every other option the CLI default
(lr 0.01 Adam, the algorithm's own local steps). An algorithm that refuses a task is recorded with
its one-line reason. Writes experiments/results/personalised/table.json
(one record, overwritten; `--algorithms` / `--datasets` rerun only those and keep the record's other
rows of the same round budget, so the two datasets can run as two processes) and
prints the markdown table the docs show; `--docs` also writes it between the markers in
docs/personalised.md.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]
import fgl_jax as fj  # noqa: E402
from harness import machine, write_record  # noqa: E402

OUT = ROOT / "experiments" / "results" / "personalised" / "table.json"
DOC = ROOT / "docs" / "personalised.md"
COMMAND = "nice -n 5 python experiments/personalised/table.py --rounds-cora 20 --rounds-proteins 10"
BEGIN, END = "<!-- personalised-table:begin -->", "<!-- personalised-table:end -->"
ALGORITHMS = ("fedavg", "local", "ditto", "fedbn", "fedrep", "apfl", "pfedme", "fedala", "fedem", "fedproto",
              "fedtgp", "feddistill")
SEEDS = (0, 1, 2)
DATASETS = {
    "cora": dict(dataset="cora", clients=10, partition="louvain", split="openfgl", model="gcn", hidden=64),
    "proteins": dict(dataset="PROTEINS", task="graph_cls", clients=10, partition="dirichlet", dirichlet_beta=0.5),
}


def config(dataset: str, algorithm: str, rounds: int):
    """The run's config; FedBN gets batch norm (without a normalisation layer it is FedAvg)."""
    extra = {"norm": "batch"} if algorithm == "fedbn" else {}
    return fj.default_config("baseline", **DATASETS[dataset], algorithm=algorithm, rounds=rounds, **extra)


def measure(dataset: str, algorithm: str, rounds: int) -> dict:
    """One row: per seed the best-validation round's test accuracy and worst-10 % client accuracy."""
    try:
        cfg = config(dataset, algorithm, rounds)
        prog = fj.build(cfg)
    except ValueError as e:   # e.g. FedEM on a graph task: the registry's one line
        return {"dataset": dataset, "algorithm": algorithm, "refused": str(e)}
    sw = fj.sweep(prog.algorithm, prog.data, list(SEEDS), rounds)
    at = np.asarray(sw.best["best_round"]) - 1                      # 1-based -> index
    rows = np.arange(len(SEEDS))
    test = np.asarray(sw.best["best_test"], float)
    worst = sw.history.get("test_acc_clients_worst10")
    row = {"dataset": dataset, "algorithm": algorithm, "rounds": rounds, "seeds": list(SEEDS),
           "test_acc": test.tolist(), "best_round": np.asarray(sw.best["best_round"]).tolist(),
           "worst10": None if worst is None else np.asarray(worst)[rows, at].astype(float).tolist(),
           "compile_seconds": round(sw.compile_seconds, 2), "run_seconds": round(sw.run_seconds, 2),
           "diverged": [d for d in sw.diverged if d]}
    if worst is None:   # FedAvg's global model: no per-client spread in the history
        row["worst10_note"] = "no per-client spread reported"
    return row


def cell(values) -> str:
    if values is None:
        return "n/a"
    v = 100 * np.asarray(values, float)
    return f"{v.mean():.1f} ± {v.std():.1f}"


def render(rows: list, rounds: dict, command: str) -> str:
    by = {(r["dataset"], r["algorithm"]): r for r in rows}
    algs = [a for a in ALGORITHMS if any((d, a) in by for d in DATASETS)]
    lines = [f"Test accuracy (%) at the best validation round, mean ± sd over seeds {', '.join(map(str, SEEDS))} "
             f"(model seeds; partition and split fixed), and the worst-10 % client's test accuracy at that round "
             f"(`test_acc_clients_worst10`). Cora: 10 Louvain clients, split openfgl, GCN 2x64, {rounds['cora']} "
             f"rounds; PROTEINS: 10 clients, Dirichlet(0.5) label skew, GIN, {rounds['proteins']} rounds. "
             f"Measured by `{command}` (record `experiments/results/personalised/table.json`).", "",
             "| algorithm | Cora test | Cora worst 10 % | PROTEINS test | PROTEINS worst 10 % |",
             "|---|---|---|---|---|"]
    for a in algs:
        cells = []
        for d in DATASETS:
            r = by.get((d, a))
            if r is None:
                cells += ["not run", "not run"]
            elif "refused" in r:
                cells += ["refused", "refused"]
            elif r.get("diverged") and len(r["diverged"]) == len(r["seeds"]):
                cells += ["diverged", "diverged"]
            else:
                cells += [cell(r["test_acc"]), cell(r["worst10"]) if r["worst10"] else "n/a"]
        lines.append(f"| {a} | " + " | ".join(cells) + " |")
    notes = [f"- {r['algorithm']} on {r['dataset']}: refused ({r['refused']})" for r in rows if "refused" in r]
    notes += [f"- {r['algorithm']} on {r['dataset']}: every seed diverged ({r['diverged'][0]})" for r in rows
              if r.get("diverged") and len(r["diverged"]) == len(r["seeds"])]
    notes.append("- n/a: the run reports no per-client spread (FedAvg evaluates its global model; a PROTEINS row "
                 "measured before graph-task evaluation reported the spread and not rerun since); not run: no "
                 "time left for that cell")
    return "\n".join(lines + ([""] + notes if notes else [])) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds-cora", type=int, default=20, help="FL rounds on Cora")
    ap.add_argument("--rounds-proteins", type=int, default=10, help="FL rounds on PROTEINS")
    ap.add_argument("--algorithms", nargs="+", default=list(ALGORITHMS), help="algorithms to (re)run")
    ap.add_argument("--datasets", nargs="+", default=list(DATASETS), choices=list(DATASETS), help="datasets to (re)run")
    ap.add_argument("--docs", action="store_true", help="write the table into docs/personalised.md")
    ap.add_argument("--render", action="store_true", help="run nothing: render the existing record's table")
    args = ap.parse_args()
    rounds = {"cora": args.rounds_cora, "proteins": args.rounds_proteins}
    todo = [] if args.render else [(d, a) for d in args.datasets for a in args.algorithms]
    rows = merge(rounds, [])
    for d, a in todo:
        r = measure(d, a, rounds[d])
        print(d, a, "refused: " + r["refused"] if "refused" in r else f"test {cell(r['test_acc'])} "
              f"worst10 {cell(r['worst10'])} compile {r['compile_seconds']} s run {r['run_seconds']} s", flush=True)
        rows = merge(rounds, [r])   # re-read: a second process may fill the other dataset's rows meanwhile
    table = render(rows, rounds, COMMAND)
    print(table)
    if args.docs:
        text = DOC.read_text()
        if BEGIN not in text:
            raise SystemExit(f"{DOC}: no {BEGIN} marker")
        head, rest = text.split(BEGIN, 1)
        DOC.write_text(head + BEGIN + "\n" + table + END + rest.split(END, 1)[1])


def merge(rounds: dict, new: list) -> list:
    """The record's rows of this budget with `new` in place of the same (dataset, algorithm); written back."""
    old = json.loads(OUT.read_text())["metrics"] if OUT.exists() else {}
    rows = old.get("rows", []) if old.get("rounds") == rounds else []   # another budget: not comparable
    mine = {(r["dataset"], r["algorithm"]) for r in new}
    rows = [r for r in rows if (r["dataset"], r["algorithm"]) not in mine] + list(new)
    order = {(d, a): i for i, (d, a) in enumerate((d, a) for d in DATASETS for a in ALGORITHMS)}
    rows.sort(key=lambda r: order.get((r["dataset"], r["algorithm"]), 1 << 30))
    if new:
        write_record(OUT, {"experiment": "personalised FL table", "rounds": rounds, "seeds": list(SEEDS),
                           "datasets": DATASETS, "machine": machine(), "rows": rows, "command": COMMAND},
                     kind="experiment")
    return rows


if __name__ == "__main__":
    main()
