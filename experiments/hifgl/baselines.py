"""Reproduce the baseline rows of HiFGL's Tables 3 and 4 (Cora, CiteSeer).

Protocol (specs/hifgl.md §4 and §5.2 decisions 8, 9, 12): 5 random near-equal silos
(FederatedScope random splitter), FederatedScope's random Planetoid split (232/332 train per
class, 542/665 val, rest test), cross-silo edges dropped for Local/FedAvg/FedProx/FedPer,
2 layers, hidden 64, Adam lr 0.01 x0.9 every 4 rounds, 1 full-batch local step per round,
50 rounds, no dropout or weight decay, FedProx mu 0.01, FedPer keeps the last layer local,
pooled test accuracy at the round of best pooled validation accuracy, 5 model seeds on a fixed
split and partition (seed 0), mean +- population std. The 5 seeds run as one vmapped program.

Every row is a `Cell` (experiments/harness.py) of the baseline system's `RunConfig`; each writes
one record (a line of records/baselines_<run>.jsonl), and the tables are rendered from the records.

    fgl-jax reproduce hifgl [--quick]   (runs these rows first, then HiFGL's own)
    python experiments/hifgl/baselines.py [--quick] [--data-dir D] [--out DIR] [--render] [--write-configs]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Optional

if __package__ in (None, ""):  # run as a script: the checkout's root on the path (fgl_jax, experiments)
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import numpy as np

from fgl_jax import graph_information_gain, load, make_fed_data, sweep, schema, table
from fgl_jax.systems.baseline import RunConfig, algorithm_from_config, prepare

from experiments import harness
from experiments.harness import Cell

RESULTS = harness.RESULTS / "hifgl"

SPLIT = {"cora": (232, 542), "citeseer": (332, 665)}
# (framework, model) -> {dataset: (table 3 mean, table 4 value)}; None where the table has no entry.
PAPER = {
    ("local", "mlp"): {"cora": (0.5698, None), "citeseer": (0.6450, None)},
    ("local", "gcn"): {"cora": (0.8095, None), "citeseer": (0.7429, None)},
    ("fedavg", "gcn"): {"cora": (0.8358, 0.8358), "citeseer": (0.7601, 0.7601)},
    ("fedprox", "gcn"): {"cora": (None, 0.8238), "citeseer": (None, 0.7612)},
    ("fedper", "gcn"): {"cora": (None, 0.8202), "citeseer": (None, 0.7403)},
    ("global", "gcn"): {"cora": (0.8689, None), "citeseer": (0.7742, None)},
    ("local", "sage"): {"cora": (0.6207, None), "citeseer": (0.6125, None)},
    ("fedavg", "sage"): {"cora": (0.8095, 0.8295), "citeseer": (0.7656, 0.7540)},
    ("fedprox", "sage"): {"cora": (None, 0.8256), "citeseer": (None, 0.7593)},
    ("fedper", "sage"): {"cora": (None, 0.8174), "citeseer": (None, 0.7625)},
    ("global", "sage"): {"cora": (0.8686, None), "citeseer": (0.7748, None)},
}
NAMES = {"local": "Local", "fedavg": "FedAvg", "fedprox": "FedProx", "fedper": "FedPer", "global": "Global",
         "mlp": "MLP", "gcn": "GCN", "sage": "GraphSage"}


def base_config(dataset: str, data_dir, rounds: int) -> RunConfig:
    per_class, val = SPLIT[dataset]
    return RunConfig(dataset=dataset, data_dir=data_dir, clients=5, partition="random", split="per_class",
                     num_train_per_class=per_class, num_val=val, split_seed=0, partition_seed=0, rounds=rounds,
                     local_steps=1, lr=0.01, lr_gamma=0.9, lr_decay_every=4, hidden=64, num_layers=2,
                     prox_mu=0.01, personal_layers=1)


def with_cross_edges(graph, assignment, num_clients):
    """Diagnostic batch: every client sees the WHOLE graph structure (cross-silo edges kept) but
    trains and is evaluated only on its own nodes. Not a private protocol; it measures how much of
    the gap to the paper is explained by the edges the baselines drop."""
    from fgl_jax import stack_graphs
    views = [graph.with_masks(graph.train_mask & (assignment == c), graph.val_mask & (assignment == c),
                              graph.test_mask & (assignment == c)) for c in range(num_clients)]
    return make_fed_data(stack_graphs(views, [np.arange(graph.num_nodes)] * num_clients))


def row_normalised(graph):
    import dataclasses
    import scipy.sparse as sp
    deg = np.asarray(graph.x.sum(1)).ravel()
    return dataclasses.replace(graph, x=sp.csr_matrix(sp.diags(1.0 / np.maximum(deg, 1)) @ graph.x).astype(np.float32))


SENSITIVITY = [  # (label, framework, model, config changes, graph transform)
    ("paper protocol (as in the table)", "fedavg", "gcn", {}, None),
    ("5 local steps per round", "fedavg", "gcn", {"local_steps": 5}, None),
    ("200 rounds, constant LR", "fedavg", "gcn", {"rounds": 200, "lr_decay_every": 0}, None),
    ("dropout 0.5, weight decay 5e-4, 5 local steps, 100 rounds", "fedavg", "gcn",
     {"dropout": 0.5, "weight_decay": 5e-4, "local_steps": 5, "rounds": 100}, None),
    ("row-normalised features", "fedavg", "gcn", {}, "rownorm"),
    ("cross-silo edges KEPT (diagnostic)", "fedavg", "gcn", {}, "cross"),
    ("paper protocol (as in the table)", "local", "gcn", {}, None),
    ("200 rounds, constant LR", "local", "gcn", {"rounds": 200, "lr_decay_every": 0}, None),
    ("cross-silo edges KEPT (diagnostic)", "local", "gcn", {}, "cross"),
    ("paper protocol (as in the table)", "local", "mlp", {}, None),
    ("row-normalised features", "local", "mlp", {}, "rownorm"),
]


def plan(quick: bool) -> tuple[list[str], list[int], int]:
    """(datasets, seeds, rounds): the paper's, or --quick's (Cora, 2 seeds, 20 rounds)."""
    return (["cora"], [0, 1], 20) if quick else (["cora", "citeseer"], [0, 1, 2, 3, 4], 50)


def row_cells(quick: bool, data_dir=None) -> list[Cell]:
    """The table rows: one cell per (dataset, framework, model), the paper's Table 3 and 4 values beside."""
    datasets, seeds, rounds = plan(quick)
    return [Cell(f"baselines/{ds}/{framework}-{model}",
                 base_config(ds, data_dir, rounds).replace(algorithm=framework, model=model), tuple(seeds),
                 {"paper_table3": paper[ds][0], "paper_table4": paper[ds][1]})
            for ds in datasets for (framework, model), paper in PAPER.items()]


def sensitivity_cells(quick: bool, data_dir=None) -> list[Cell]:
    """Evidence for the gaps: the same cells under protocol variants the paper leaves open (3 seeds;
    none at --quick). config = the run's config plus the graph transform it trains on."""
    if quick:
        return []
    datasets, seeds, rounds = plan(quick)
    cells = []
    for ds in datasets:
        for i, (label, framework, model, changes, transform) in enumerate(SENSITIVITY):
            cfg = base_config(ds, data_dir, rounds).replace(algorithm=framework, model=model, **changes)
            cells.append(Cell(f"baselines/sensitivity/{ds}/{i:02d}", {**schema.to_dict(cfg), "graph_transform": transform},
                              tuple(seeds[:3])))
    return cells


_PREPARED: dict = {}  # (dataset, data_dir, kind) -> the prepared split and silos, shared by a dataset's rows


def measure_row(cell: Cell) -> dict:
    """A table row: the cell's seeds as one vmapped program on the dataset's fixed split and silos
    (one preparation per dataset and kind: silos, or the global graph)."""
    cfg = cell.config
    key = (cfg.dataset, cfg.data_dir, "global" if cfg.algorithm == "global" else "silos")
    if key not in _PREPARED:
        if not any(k[:2] == key[:2] for k in _PREPARED):
            _PREPARED.clear()  # a new dataset: drop the previous one's
        _PREPARED[key] = prepare(cfg, load(cfg.dataset, data_dir=cfg.data_dir))
    prep = _PREPARED[key]
    sw = sweep(algorithm_from_config(cfg, prep.graph), prep.data, list(cell.seeds), cfg.rounds)
    accs = sw.best["best_test"]
    return {"dataset": cfg.dataset, "framework": cfg.algorithm, "model": cfg.model, "mean": float(accs.mean()),
            "std": float(accs.std()), "runs": accs.tolist(), "best_round": sw.best["best_round"].tolist(),
            "seconds": sw.compile_seconds + sw.run_seconds}


def measure_sensitivity(cell: Cell) -> dict:
    c = dict(cell.config)
    transform = c.pop("graph_transform")
    cfg = schema.make(RunConfig, c)
    i = int(cell.id.rsplit("/", 1)[1])
    label = SENSITIVITY[i][0]
    graph = load(cfg.dataset, data_dir=cfg.data_dir)
    g = row_normalised(graph) if transform == "rownorm" else graph
    prep = prepare(cfg, g)
    data = with_cross_edges(prep.graph, prep.partition.assignment, cfg.clients) if transform == "cross" \
        else prep.data
    sw = sweep(algorithm_from_config(cfg, prep.graph), data, list(cell.seeds), cfg.rounds)
    acc = sw.best["best_test"]
    return {"dataset": cfg.dataset, "variant": label, "framework": cfg.algorithm, "model": cfg.model,
            "mean": float(acc.mean()), "std": float(acc.std()), "runs": acc.tolist()}


def with_gains(rows: list[dict]) -> list[dict]:
    """The rows with HiFGL's graph information gain, from our own Local-MLP and Global rows."""
    means = {(r["dataset"], r["framework"], r["model"]): r["mean"] for r in rows}
    out = []
    for r in rows:
        r = dict(r)
        lo, gl = means.get((r["dataset"], "local", "mlp")), means.get((r["dataset"], "global", r["model"]))
        if r["model"] != "mlp" and lo is not None and gl is not None:
            r["gain"] = graph_information_gain(r["mean"], lo, gl)
        out.append(r)
    return out


def explain(rows: list[dict], sens: list[dict]) -> list[str]:
    """Explanations of the gaps over 2 points, with the evidence numbers taken from this run."""
    def row(ds, f, m):
        return next((r for r in rows if (r["dataset"], r["framework"], r["model"]) == (ds, f, m)), None)

    def var(ds, f, m, label):
        return next((r for r in sens if (r["dataset"], r["framework"], r["model"]) == (ds, f, m)
                     and r["variant"].startswith(label)), None)

    out = ["", "## Why cells differ by more than 2 points", ""]
    for ds in sorted({r["dataset"] for r in rows}):
        lg, kept = row(ds, "local", "gcn"), var(ds, "local", "gcn", "cross-silo edges KEPT")
        if lg and kept:
            out.append(f"- **{ds} Local-GCN** ({lg['mean']:.4f} vs paper {lg['paper_table3']:.4f}): with 5 random silos "
                       "most edges cross silos and are dropped, leaving each silo a near-edgeless graph. Keeping "
                       f"the cross-silo edges (diagnostic, not private) gives {kept['mean']:.4f}, close to the paper, so "
                       "the paper's Local baseline most likely propagated over edges that a silo cannot hold.")
        fa = row(ds, "fedavg", "gcn")
        variants = [r for r in sens if r["dataset"] == ds and r["framework"] == "fedavg"
                    and not r["variant"].startswith("cross")]
        kept = var(ds, "fedavg", "gcn", "cross-silo edges KEPT")
        if fa and variants and abs(fa["mean"] - fa["paper_table3"]) > 0.02:
            lo, hi = min(v["mean"] for v in variants), max(v["mean"] for v in variants)
            out.append(f"- **{ds} FedAvg-GCN** ({fa['mean']:.4f} vs {fa['paper_table3']:.4f}): no protocol variant the "
                       f"paper leaves open (local steps, rounds, LR schedule, dropout/weight decay, feature "
                       f"normalisation) moves it outside {lo:.4f}–{hi:.4f}; with cross-silo edges kept it reaches "
                       f"{kept['mean']:.4f}. The paper's number lies between the edge-dropping and edge-keeping "
                       "protocols; we keep the protocol the paper states (edges dropped).")
    out.append("- **FedProx = FedAvg** here: with one local step per round (spec decision 8) the proximal term's "
               "gradient is zero at the starting point, so FedProx is exactly FedAvg. The paper's different FedProx "
               "numbers imply several local steps, which the paper does not state.")
    out.append("- **FedPer-GraphSage and FedProx/FedAvg-GraphSage on Cora**: the same edge-dropping effect as above; "
               "GraphSage's root/neighbour split suffers more when neighbourhoods are emptied (Local-GraphSage is "
               "barely above Local-MLP). Table 3 and Table 4 of the paper also disagree on FedAvg-GraphSage by "
               "2 points (0.8095 vs 0.8295).")
    out.append("- **Global** rows are above the paper (see Δ): full-graph training with a 60 % training split; "
               "the paper's models may have used dropout or fewer effective steps (not stated).")
    return out


def render(rows: list[dict], sens: list[dict], datasets, seeds, rounds) -> str:
    rows_by = {(r["dataset"], r["framework"], r["model"]): r for r in rows}
    lines = ["# HiFGL Tables 3 and 4: baseline rows", "",
             "Pooled test accuracy at the best-validation round, mean ± std over "
             f"{len(seeds)} seeds ({rounds} rounds, 5 random silos). Paper values from Table 3 (T3) and Table 4 (T4); "
             "Δ = ours − paper (T3 where it has the row, else T4), in accuracy points.", ""]
    out_rows = []
    for (framework, model) in PAPER:
        cells = {"model": f"{NAMES[framework]}-{NAMES[model]}"}
        for ds in datasets:
            r = rows_by[(ds, framework, model)]
            ref = r["paper_table3"] if r["paper_table3"] is not None else r["paper_table4"]
            cells.update({f"{ds} ours": f"{r['mean']:.4f} ± {r['std']:.4f}",
                          f"{ds} paper T3": "—" if r["paper_table3"] is None else f"{r['paper_table3']:.4f}",
                          f"{ds} paper T4": "—" if r["paper_table4"] is None else f"{r['paper_table4']:.4f}",
                          f"{ds} Δ": f"{100 * (r['mean'] - ref):+.1f}",
                          f"{ds} gain": "—" if "gain" not in r else f"{100 * r['gain']:+.1f}%"})
        out_rows.append(cells)
    lines.append(table(out_rows, disable_numparse=True))
    if sens:
        lines += ["", "## Sensitivity of the largest gaps (3 seeds each)", "",
                  "The same cells under protocol variants the paper leaves open, plus one diagnostic that keeps the "
                  "cross-silo edges the baselines are supposed to drop.", ""]
        lines.append(table([{"dataset": r["dataset"], "cell": f"{NAMES[r['framework']]}-{NAMES[r['model']]}",
                             "variant": r["variant"], "test acc": f"{r['mean']:.4f} ± {r['std']:.4f}"}
                            for r in sens], disable_numparse=True))
        lines += explain([r for r in rows if r["paper_table3"] is not None], sens)
    return "\n".join(lines)


def render_records(out: Path, quick: bool, data_dir=None) -> Path:
    """out/baselines(_quick).md from the run's records."""
    recs = harness.load(out, quick, "baselines/")
    rcells, scells = row_cells(quick, data_dir), sensitivity_cells(quick, data_dir)
    rows = with_gains(harness.metrics_of(recs, rcells))
    sens = harness.metrics_of(recs, scells)
    datasets, seeds, rounds = plan(quick)
    used = [recs[c.id] for c in rcells + scells]
    return harness.write_table(out, "baselines_quick" if quick else "baselines", render(rows, sens, datasets, seeds, rounds),
                               used)


def reproduce(out: Path, quick: bool = False, data_dir: Optional[str] = None, render_only: bool = False,
              log=print) -> None:
    """The baseline rows of Tables 3 and 4 into out/baselines(_quick).md (+ records); --quick: Cora, 2 seeds,
    20 rounds."""
    out = Path(out)
    if not render_only:
        harness.run_cells(row_cells(quick, data_dir), measure_row, out, quick, log=log)
        harness.run_cells(sensitivity_cells(quick, data_dir), measure_sensitivity, out, quick, log=log)
    path = render_records(out, quick, data_dir)
    log(f"wrote {path}")


def gains(out: Path, quick: bool) -> dict:
    """(dataset, framework, model) -> mean accuracy of the baseline rows recorded in `out` ({} when none)."""
    return {(m["dataset"], m["framework"], m["model"]): m["mean"]
            for rid, rec in harness.load(out, quick, "baselines/").items() if "/sensitivity/" not in rid
            for m in [rec["metrics"]]}


def write_configs(folder: Path) -> list[Path]:
    """One baseline YAML per table cell (`fgl-jax run --config FILE`; the cell = seeds 0-4)."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for ds in ("cora", "citeseer"):
        for framework, model in PAPER:
            cfg = base_config(ds, None, 50).replace(algorithm=framework, model=model)
            paths.append(folder / f"{ds}_{framework}_{model}.yaml")
            schema.dump(cfg, "baseline", paths[-1])
    return paths


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="Cora only, 2 seeds, 20 rounds (a smoke run)")
    ap.add_argument("--data-dir", default=None, help="directory holding the datasets")
    ap.add_argument("--out", default=str(RESULTS), help="where the records and tables are written")
    ap.add_argument("--render", action="store_true", help="rewrite the .md from the existing records only")
    ap.add_argument("--write-configs", action="store_true",
                    help="only write one YAML per table cell to experiments/configs/hifgl/ (fgl-jax run --config ...)")
    args = ap.parse_args(argv)
    if args.write_configs:
        paths = write_configs(harness.ROOT / "experiments" / "configs" / "hifgl")
        print(f"wrote {len(paths)} configs")
        return 0
    reproduce(Path(args.out), quick=args.quick, data_dir=args.data_dir, render_only=args.render)
    return 0


if __name__ == "__main__":
    sys.exit(main())
