"""HiFGL's paper cells (configs as data) and `reproduce`: the tables of the paper on Cora and CiteSeer.

  Table 2 + App. A.1: silo statistics and the leakage metric eps_p of the random 5-silo split
  Table 3 (HiFGL rows): HiFGL-GCN and HiFGL-GraphSage, 5 seeds, with gains against the Local-MLP
           and Global rows of `baselines.json` in the output folder (written by the baselines' script)
  Figure 5: silo count 1..50 on Cora (GraphSage), HiFGL vs FedAvg: accuracy and time per round
  Table 5:  HiFGL-GCN on CiteSeer with 1/2/4/8/16 layers: accuracy and time per round
  Figure 4: per-silo training accuracy curves (PNG)
  Table 6:  hidden size 4..128 (the paper's PubMed is not available offline: Cora and CiteSeer)

Every cell is a `Cell` (experiments/harness.py) holding a `HiFGLConfig` with the paper's defaults (split, silos, T, p, optimiser: see
`config.py`); seeds vary the model key only, on a fixed split and partition (spec 5.2.9). Seeds of
one cell run as one `sweep` (member i = `run` with key(seed i)); the reported accuracy is the
pooled test accuracy at the best pooled validation round. Each cell writes one record
(a line of records/hifgl_<run>.jsonl or records/table6_<run>.jsonl); the tables are rendered from the records.

    fgl-jax reproduce hifgl [--quick] [--data-dir D] [--out D]
    python experiments/hifgl/paper.py [--quick] [--data-dir D] [--out D]
"""
from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path
from typing import Optional, Sequence

if __package__ in (None, ""):  # run as a script: the checkout's root on the path (fgl_jax, experiments)
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import numpy as np

from fgl_jax.systems.hifgl import MODELS, HiFGLConfig

from experiments import harness
from experiments.harness import Cell

PAPER_T3 = {("cora", "gcn"): 0.8555, ("citeseer", "gcn"): 0.7724, ("cora", "sage"): 0.8642,
            ("citeseer", "sage"): 0.7791}
PAPER_GAIN = {("cora", "gcn"): 0.9552, ("citeseer", "gcn"): 0.9861, ("cora", "sage"): 0.9853,
              ("citeseer", "sage"): 1.0331}
PAPER_T2 = {"cora": {"nodes": 542, "intra": 431, "cross": 4199},
            "citeseer": {"nodes": 665, "intra": 183, "cross": 3637}}
PAPER_LEAK = {"cora": 0.9516, "citeseer": 0.8870}
PAPER_T5 = {1: 0.7304, 2: 0.7791, 4: 0.7087, 8: 0.3984, 16: 0.2602}
PAPER_T6_PUBMED = {4: 0.8345, 8: 0.8515, 16: 0.8533, 32: 0.8527, 64: 0.8588, 128: 0.8639}

DATASETS = ("cora", "citeseer")        # PubMed is not available offline
SILO_COUNTS = (1, 5, 10, 20, 30, 50)    # Figure 5 (the repo's configs; the paper's text says 1..50)
DEPTHS = (1, 2, 4, 8, 16)               # Table 5
HIDDEN = (4, 8, 16, 32, 64, 128)        # Table 6


@dataclasses.dataclass(frozen=True)
class Plan:
    """Which cells a reproduction runs: the full paper, or `--quick` (Cora, one seed, 10 rounds)."""

    datasets: tuple = DATASETS
    seeds: tuple = (0, 1, 2, 3, 4)      # Table 3: 5 runs
    fig_seeds: tuple = (0, 1)           # Figure 5, Table 5
    t6_seeds: tuple = (0, 1, 2)         # Table 6
    rounds: int = 50
    silo_counts: tuple = SILO_COUNTS
    depths: tuple = DEPTHS
    depth_dataset: str = "citeseer"
    hidden: tuple = HIDDEN

    @staticmethod
    def make(quick: bool = False) -> "Plan":
        if not quick:
            return Plan()
        return Plan(datasets=("cora",), seeds=(0,), fig_seeds=(0,), t6_seeds=(0,), rounds=10, silo_counts=(1, 5, 10),
                    depths=(1, 2), depth_dataset="cora", hidden=(4, 64))


def cell(data_dir: Optional[str] = None, **changes) -> HiFGLConfig:
    """A paper config: the defaults (the paper's setting) with `changes`."""
    return HiFGLConfig(data_dir=data_dir, **changes)


def table2_cells(plan: Plan, data_dir=None) -> list[Cell]:
    """Table 2 / App. A.1: the split's statistics (no training, no seeds)."""
    return [Cell(f"hifgl/table2/{ds}", cell(data_dir, dataset=ds), (),
                 {"paper": PAPER_T2[ds], "paper_leakage": PAPER_LEAK[ds]}) for ds in plan.datasets]


def table3_cells(plan: Plan, data_dir=None) -> list[Cell]:
    return [Cell(f"hifgl/table3/{ds}-{m}", cell(data_dir, dataset=ds, model=m, rounds=plan.rounds), tuple(plan.seeds),
                 {"paper": PAPER_T3[(ds, m)]}) for m in MODELS for ds in plan.datasets]


def figure5_cells(plan: Plan, data_dir=None) -> list[Cell]:
    return [Cell(f"hifgl/figure5/silos{k}", cell(data_dir, dataset="cora", model="sage", clients=k, rounds=plan.rounds),
                 tuple(plan.fig_seeds)) for k in plan.silo_counts]


def table5_cells(plan: Plan, data_dir=None) -> list[Cell]:
    return [Cell(f"hifgl/table5/layers{d}", cell(data_dir, dataset=plan.depth_dataset, model="gcn", num_layers=d,
                                                  rounds=plan.rounds), tuple(plan.fig_seeds),
                 {"paper": PAPER_T5[d]} if plan.depth_dataset == "citeseer" else {}) for d in plan.depths]


def table6_cells(plan: Plan, data_dir=None) -> list[Cell]:
    return [Cell(f"table6/{ds}/hidden{h}", cell(data_dir, dataset=ds, model="gcn", hidden=h, rounds=plan.rounds),
                 tuple(plan.t6_seeds), {"paper_pubmed": PAPER_T6_PUBMED[h]}) for ds in plan.datasets for h in plan.hidden]


def figure4_cell(plan: Plan, data_dir=None) -> Cell:
    return Cell("hifgl/figure4/cora-gcn", cell(data_dir, dataset="cora", model="gcn", rounds=plan.rounds,
                                               track_silo_acc=True), (0,))


def cells(quick: bool = False) -> dict[str, list[HiFGLConfig]]:
    """Every training config of the reproduction by table (what experiments/configs/hifgl/*.yaml hold, seed 0)."""
    plan = Plan.make(quick)
    return {"table3": [c.config for c in table3_cells(plan)], "figure5": [c.config for c in figure5_cells(plan)],
            "table5": [c.config for c in table5_cells(plan)], "table6": [c.config for c in table6_cells(plan)],
            "figure4": [figure4_cell(plan).config]}


# ------------------------------------------------------------------------------------------------
# Running cells (each `measure_*` is a cell -> metrics function for harness.run_cells)
# ------------------------------------------------------------------------------------------------

def sweep(cfg: HiFGLConfig, seeds: Sequence[int]):
    """The config over `seeds` as one compiled program (member i = run_config with seed i)."""
    from fgl_jax import sweep
    from fgl_jax.systems.hifgl import build
    program = build(cfg)
    return sweep(program.algorithm, program.data, list(seeds), program.num_rounds)


def fedavg_sweep(cfg: HiFGLConfig, seeds: Sequence[int]):
    """The FedAvg baseline on HiFGL's split and silos (cross-silo edges dropped, spec 5.2.12), with the
    cell's backbone and optimiser: one full-batch local step per round, weighted FedAvg."""
    from fgl_jax import FedConfig, baseline, build_client_batch, make_fed_data, make_model, sweep
    from fgl_jax.systems.hifgl import prepare
    prep = prepare(cfg)
    g = prep.graph
    data = make_fed_data(build_client_batch(g, prep.partition.assignment, cfg.clients))
    model = make_model(cfg.model, g.num_features, g.num_classes, hidden=cfg.hidden, num_layers=cfg.num_layers)
    alg = baseline(model, FedConfig("fedavg", local_steps=1, optim=cfg.optim))
    return sweep(alg, data, list(seeds), cfg.rounds)


def _ms(sw, seeds, rounds) -> float:
    return 1000 * sw.run_seconds / (len(seeds) * rounds)


def measure_table2(c: Cell) -> dict:
    from fgl_jax import partition_stats
    from fgl_jax.systems.hifgl import prepare
    prep = prepare(c.config)
    st = partition_stats(prep.graph, prep.partition)
    return {"nodes_per_silo": float(np.mean(st["num_nodes"])), "intra_undirected": st["mean_intra_edges_undirected"],
            "intra_directed": st["mean_intra_edges_directed"], "cross_undirected": st["cross_edges_undirected"],
            "leakage": st["leakage_mean"]}


def measure_table3(base: dict):
    """Table 3's measure, with the gain against the baseline rows `base` ((dataset, framework, model) -> mean)."""
    from fgl_jax import graph_information_gain

    def measure(c: Cell) -> dict:
        cfg = c.config
        sw = sweep(cfg, c.seeds)
        acc = sw.best["best_test"]
        row = {"dataset": cfg.dataset, "model": cfg.model, "mean": float(acc.mean()), "std": float(acc.std()),
               "runs": acc.tolist(), "ms_per_round": _ms(sw, c.seeds, cfg.rounds), "compile_s": sw.compile_seconds}
        lo, gl = base.get((cfg.dataset, "local", "mlp")), base.get((cfg.dataset, "global", cfg.model))
        row["gain"] = graph_information_gain(row["mean"], lo, gl) if lo is not None and gl is not None else None
        return row
    return measure


def measure_figure5(c: Cell) -> dict:
    cfg = c.config
    h, f = sweep(cfg, c.seeds), fedavg_sweep(cfg, c.seeds)
    return {"silos": cfg.clients, "hifgl": float(h.best["best_test"].mean()), "fedavg": float(f.best["best_test"].mean()),
            "hifgl_ms": _ms(h, c.seeds, cfg.rounds), "fedavg_ms": _ms(f, c.seeds, cfg.rounds)}


def measure_table5(c: Cell) -> dict:
    cfg = c.config
    sw = sweep(cfg, c.seeds)
    return {"layers": cfg.num_layers, "acc": float(sw.best["best_test"].mean()),
            "ms_per_round": _ms(sw, c.seeds, cfg.rounds)}


def measure_table6(c: Cell) -> dict:
    cfg = c.config
    sw = sweep(cfg, c.seeds)
    return {"dataset": cfg.dataset, "hidden": cfg.hidden, "acc": float(sw.best["best_test"].mean()),
            "std": float(sw.best["best_test"].std()), "ms_per_round": _ms(sw, c.seeds, cfg.rounds)}


def measure_figure4(c: Cell) -> dict:
    """Per-silo training accuracy [rounds, silos] of a seed-0 run (through `run_config`, key(seed))."""
    from fgl_jax import run_config
    res = run_config(c.config)
    return {"silo_train_acc": np.asarray(res.history["silo_train_acc"]).tolist()}


# ------------------------------------------------------------------------------------------------
# The tables, rendered from the cells' records
# ------------------------------------------------------------------------------------------------

def _md(rows: list[list], headers: list[str], floatfmt: Sequence[str] = ()) -> str:
    """A markdown table (tabulate via fgl_jax.report.table); floatfmt: one number format per column."""
    from fgl_jax import table
    fmt = tuple(floatfmt) + ("",) * (len(headers) - len(floatfmt))
    return table([dict(zip(headers, r)) for r in rows], columns=headers, floatfmt=fmt)


def table2(plan: Plan, recs: dict, data_dir=None) -> list[str]:
    rows = []
    for c in table2_cells(plan, data_dir):
        m = recs[c.id]["metrics"]
        p = m["paper"]
        rows.append([c.config.dataset, f"{m['nodes_per_silo']:.0f} ({p['nodes']})",
                     f"{m['intra_undirected']:.0f} (directed {m['intra_directed']:.0f}) ({p['intra']})",
                     f"{m['cross_undirected']} ({p['cross']})", f"{m['leakage']:.4f} ({m['paper_leakage']})"])
    head = ["dataset", "nodes/silo (paper)", "intra edges/silo, undirected (paper)", "cross edges, undirected (paper)",
            "leakage ε_p (paper)"]
    return ["## Table 2 and App. A.1: the random 5-silo split", "", _md(rows, head), "",
            "HiFGL's own leakage is 0 by construction: no silo ever holds an edge or a neighbour id.", ""]


def table3(plan: Plan, recs: dict, base: dict, data_dir=None) -> list[str]:
    head = ["model", "dataset", "ours", "paper", "Δ (points)", "our gain", "paper gain", "our FedAvg (same backbone)"]
    rows = []
    for row in harness.metrics_of(recs, table3_cells(plan, data_dir)):
        ds, model = row["dataset"], row["model"]
        fed = base.get((ds, "fedavg", model))
        rows.append([f"HiFGL-{'GCN' if model == 'gcn' else 'GraphSage'}", ds, f"{row['mean']:.4f} ± {row['std']:.4f}",
                     row["paper"], 100 * (row["mean"] - row["paper"]),
                     "—" if row["gain"] is None else f"{100 * row['gain']:+.1f}%",
                     f"{100 * PAPER_GAIN[(ds, model)]:+.1f}%", "—" if fed is None else fed])
    return ["## Table 3: HiFGL rows", "",
            f"Pooled test accuracy at the best-validation round, mean ± std over {len(plan.seeds)} seeds, "
            f"{plan.rounds} rounds, 5 silos, T = 1, p = 2^31 − 1, 16 fractional bits. Gain uses our Local-MLP and "
            "Global rows.", "", _md(rows, head, ("", "", "", ".4f", "+.1f", "", "", ".4f"))]


def figure5(plan: Plan, recs: dict, data_dir=None) -> list[str]:
    head = ["silos", "HiFGL acc", "FedAvg acc", "HiFGL ms/round", "FedAvg ms/round"]
    rows = [[r["silos"], r["hifgl"], r["fedavg"], r["hifgl_ms"], r["fedavg_ms"]]
            for r in harness.metrics_of(recs, figure5_cells(plan, data_dir))]
    return ["", "## Figure 5: number of silos (Cora, GraphSage)", "",
            f"Mean test accuracy over {len(plan.fig_seeds)} seeds and steady-state time per round.", "",
            _md(rows, head, ("", ".4f", ".4f", ".1f", ".1f"))]


def table5(plan: Plan, recs: dict, data_dir=None) -> list[str]:
    head = ["layers", "ours acc", "paper acc (CiteSeer)", "ours ms/round"]
    rows = [[r["layers"], r["acc"], PAPER_T5[r["layers"]], r["ms_per_round"]]
            for r in harness.metrics_of(recs, table5_cells(plan, data_dir))]
    return ["", f"## Table 5: HiFGL-GCN depth ({plan.depth_dataset}, hidden 64)", "",
            _md(rows, head, ("", ".4f", ".4f", ".1f"))]


def _plot(out: Path, name: str, curves: np.ndarray, f5: list, rounds: int) -> bool:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    out.mkdir(parents=True, exist_ok=True)
    fig, ax = plt.subplots(1, 2, figsize=(9, 3.2))
    for i in range(curves.shape[1]):
        ax[0].plot(np.arange(1, rounds + 1), curves[:, i], label=f"silo {i + 1}")
    ax[0].set(xlabel="round", ylabel="train acc of silo model", title="Fig. 4a (Cora, HiFGL-GCN)")
    ax[0].legend(fontsize=7)
    ax[1].plot([r["silos"] for r in f5], [r["hifgl"] for r in f5], "o-", label="HiFGL-GraphSage")
    ax[1].plot([r["silos"] for r in f5], [r["fedavg"] for r in f5], "s-", label="FedAvg-GraphSage")
    ax[1].set(xlabel="silos", ylabel="test acc", title="Fig. 5a (Cora)")
    ax[1].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out / name, dpi=120)
    plt.close(fig)
    return True


def main_cells(plan: Plan, data_dir=None) -> list[Cell]:
    return (table2_cells(plan, data_dir) + table3_cells(plan, data_dir) + figure5_cells(plan, data_dir)
            + table5_cells(plan, data_dir) + [figure4_cell(plan, data_dir)])


def render_main(out: Path, quick: bool = False, data_dir: Optional[str] = None, figure: bool = True) -> Path:
    """out/hifgl(_quick).md (and the figure PNG) from the run's records."""
    from experiments.hifgl import baselines
    out = Path(out)
    plan = Plan.make(quick)
    recs = harness.load(out, quick, "hifgl/")
    base = baselines.gains(out, quick=False)  # the paper-protocol rows, as Table 3's gains (see reproduce)
    lines = ["# HiFGL reproduction (Cora, CiteSeer; PubMed is not available offline)", ""]
    lines += table2(plan, recs, data_dir)
    lines += table3(plan, recs, base, data_dir)
    lines += figure5(plan, recs, data_dir)
    lines += table5(plan, recs, data_dir)
    curves = np.asarray(recs[figure4_cell(plan).id]["metrics"]["silo_train_acc"])
    f5 = harness.metrics_of(recs, figure5_cells(plan, data_dir))
    name = "figures_quick.png" if quick else "figures.png"
    drawn = _plot(out, name, curves, f5, plan.rounds) if figure else (out / name).exists()
    lines += ["", f"![Figures 4a and 5a]({name})" if drawn else "(matplotlib not installed: no figure)"]
    lines += ["", "## What differs from the paper", "",
              "- PubMed is not available offline (its feature file is over 4 MiB); Table 6 is run on Cora and "
              "CiteSeer instead (table6.md).",
              "- The paper's code does not implement Lagrange coding; these runs use the paper's method as written "
              "(spec §5.2 decisions: prime field 2^31 − 1, 16-bit fixed point, fresh masks per message, A + I "
              "normalisation, straight-through gradients, one local step per round, unweighted FedAvg).",
              "- Gains use our own Local-MLP / Global rows (baselines.md), whose gaps to the paper are discussed there."]
    used = [recs[c.id] for c in main_cells(plan, data_dir)]
    return harness.write_table(out, "hifgl_quick" if quick else "hifgl", "\n".join(lines), used)


def render_table6(out: Path, quick: bool = False, data_dir: Optional[str] = None) -> Path:
    """out/table6(_quick).md from the run's records."""
    plan = Plan.make(quick)
    recs = harness.load(out, quick, "table6/")
    rows = harness.metrics_of(recs, table6_cells(plan, data_dir))
    head = ["hidden"] + [c for d in plan.datasets for c in (f"{d} acc", f"{d} ms/round")] + ["paper (PubMed)"]
    body = []
    for h in plan.hidden:
        cells_ = [h]
        for d in plan.datasets:
            r = next(r for r in rows if r["dataset"] == d and r["hidden"] == h)
            cells_ += [f"{r['acc']:.4f} ± {r['std']:.4f}", r["ms_per_round"]]
        body.append(cells_ + [PAPER_T6_PUBMED[h]])
    lines = ["# HiFGL Table 6: hidden size (HiFGL-GCN, 2 layers, 5 silos)", "",
             f"Mean ± std over {len(plan.t6_seeds)} seeds, {plan.rounds} rounds. The paper's Table 6 is on PubMed "
             "(not available offline); its numbers are listed for the trend only.", "",
             _md(body, head, ("",) + ("", ".1f") * len(plan.datasets) + (".4f",))]
    used = [recs[c.id] for c in table6_cells(plan, data_dir)]
    return harness.write_table(out, "table6_quick" if quick else "table6", "\n".join(lines), used)


def reproduce_main(out: Path, quick: bool = False, data_dir: Optional[str] = None, log=print) -> None:
    """Tables 2, 3, 5 and Figures 4, 5: their cells' records, then out/hifgl(_quick).md and the figure."""
    from experiments.hifgl import baselines
    out = Path(out)
    plan = Plan.make(quick)
    harness.run_cells(table2_cells(plan, data_dir), measure_table2, out, quick, log=log)
    harness.run_cells(table3_cells(plan, data_dir), measure_table3(baselines.gains(out, quick=False)), out, quick, log=log)
    harness.run_cells(figure5_cells(plan, data_dir), measure_figure5, out, quick, log=log)
    harness.run_cells(table5_cells(plan, data_dir), measure_table5, out, quick, log=log)
    harness.run_cells([figure4_cell(plan, data_dir)], measure_figure4, out, quick, log=log)
    render_main(out, quick, data_dir)


def reproduce_table6(out: Path, quick: bool = False, data_dir: Optional[str] = None, log=print) -> None:
    """Table 6 (hidden size, HiFGL-GCN, 2 layers) on Cora and CiteSeer: records, then out/table6(_quick).md."""
    harness.run_cells(table6_cells(Plan.make(quick), data_dir), measure_table6, out, quick, log=log)
    render_table6(Path(out), quick, data_dir)


def reproduce(out: Path, quick: bool = False, data_dir: Optional[str] = None) -> None:
    """Every HiFGL table and figure into `out` (`fgl-jax reproduce hifgl`); --quick: Cora, 1 seed, 10 rounds.

    The baseline rows (Local, FedAvg, FedProx, FedPer, Global) run first (experiments/hifgl/baselines.py).
    Table 3's gains and FedAvg column read the full (paper-protocol) baseline records in `out` when
    they are there, also at --quick (a 20-round quick baseline is no reference for a gain): "—" otherwise.
    """
    from experiments.hifgl import baselines
    baselines.reproduce(out, quick, data_dir)
    reproduce_main(out, quick, data_dir)
    reproduce_table6(out, quick, data_dir)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="Cora, 1 seed, 10 rounds, few silo counts")
    ap.add_argument("--data-dir", default=None, help="directory holding the datasets (else $FGL_JAX_DATA)")
    ap.add_argument("--out", default=str(harness.RESULTS / "hifgl"), help="folder of the records and tables")
    ap.add_argument("--render", action="store_true", help="only re-render the tables from the records in --out")
    args = ap.parse_args(argv)
    if args.render:
        from experiments.hifgl import baselines
        if harness.load(args.out, args.quick, "baselines/"):
            baselines.render_records(Path(args.out), args.quick, args.data_dir)
        render_main(Path(args.out), args.quick, args.data_dir, figure=False)
        if harness.load(args.out, args.quick, "table6/"):
            render_table6(Path(args.out), args.quick, args.data_dir)
    else:
        reproduce(Path(args.out), quick=args.quick, data_dir=args.data_dir)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
