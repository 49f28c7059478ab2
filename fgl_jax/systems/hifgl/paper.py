"""HiFGL's paper cells (configs as data) and `reproduce`: the tables of the paper on Cora and CiteSeer.

  Table 2 + App. A.1: silo statistics and the leakage metric eps_p of the random 5-silo split
  Table 3 (HiFGL rows): HiFGL-GCN and HiFGL-GraphSage, 5 seeds, with gains against the Local-MLP
           and Global rows of `baselines.json` in the output folder (written by the baselines' script)
  Figure 5: silo count 1..50 on Cora (GraphSage), HiFGL vs FedAvg: accuracy and time per round
  Table 5:  HiFGL-GCN on CiteSeer with 1/2/4/8/16 layers: accuracy and time per round
  Figure 4: per-silo training accuracy curves (PNG)
  Table 6:  hidden size 4..128 (the paper's PubMed is not available offline: Cora and CiteSeer)

Every cell is a `HiFGLConfig` with the paper's defaults (split, silos, T, p, optimiser: see
`config.py`); seeds vary the model key only, on a fixed split and partition (spec 5.2.9). Seeds of
one cell run as one `run_sweep` (member i = `run` with key(seed i)); the reported accuracy is the
pooled test accuracy at the best pooled validation round.

    fgl-jax reproduce hifgl [--quick] [--data-dir D] [--out D]
"""
from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path
from typing import Optional, Sequence

import numpy as np

from fgl_jax.systems.hifgl.config import MODELS, HiFGLConfig

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
    """A paper cell: the defaults (the paper's setting) with `changes`."""
    return HiFGLConfig(data_dir=data_dir, **changes)


def table3_cells(plan: Plan, data_dir=None) -> list[HiFGLConfig]:
    return [cell(data_dir, dataset=ds, model=m, rounds=plan.rounds) for m in MODELS for ds in plan.datasets]


def figure5_cells(plan: Plan, data_dir=None) -> list[HiFGLConfig]:
    return [cell(data_dir, dataset="cora", model="sage", clients=k, rounds=plan.rounds) for k in plan.silo_counts]


def table5_cells(plan: Plan, data_dir=None) -> list[HiFGLConfig]:
    return [cell(data_dir, dataset=plan.depth_dataset, model="gcn", num_layers=d, rounds=plan.rounds)
            for d in plan.depths]


def table6_cells(plan: Plan, data_dir=None) -> list[HiFGLConfig]:
    return [cell(data_dir, dataset=ds, model="gcn", hidden=h, rounds=plan.rounds)
            for ds in plan.datasets for h in plan.hidden]


def figure4_cell(plan: Plan, data_dir=None) -> HiFGLConfig:
    return cell(data_dir, dataset="cora", model="gcn", rounds=plan.rounds, track_silo_acc=True)


def cells(quick: bool = False) -> dict[str, list[HiFGLConfig]]:
    """Every cell of the reproduction by table (what experiments/configs/hifgl/*.yaml hold, seed 0)."""
    plan = Plan.make(quick)
    return {"table3": table3_cells(plan), "figure5": figure5_cells(plan), "table5": table5_cells(plan),
            "table6": table6_cells(plan), "figure4": [figure4_cell(plan)]}


# ------------------------------------------------------------------------------------------------
# Running cells
# ------------------------------------------------------------------------------------------------

def sweep(cfg: HiFGLConfig, seeds: Sequence[int]):
    """The cell over `seeds` as one compiled program (member i = run_config with seed i)."""
    from fgl_jax.federated.sweep import run_sweep
    from fgl_jax.systems.hifgl.program import build
    program = build(cfg)
    return run_sweep(program.algorithm, program.data, list(seeds), program.num_rounds)


def fedavg_sweep(cfg: HiFGLConfig, seeds: Sequence[int]):
    """The FedAvg baseline on HiFGL's split and silos (cross-silo edges dropped, spec 5.2.12), with the
    cell's backbone and optimiser: one full-batch local step per round, weighted FedAvg."""
    from fgl_jax.batch import build_client_batch
    from fgl_jax.federated import FedConfig, baseline, make_fed_data
    from fgl_jax.federated.sweep import run_sweep
    from fgl_jax.nn import make_model
    from fgl_jax.systems.hifgl.data import prepare
    prep = prepare(cfg)
    g = prep.graph
    data = make_fed_data(build_client_batch(g, prep.partition.assignment, cfg.clients))
    model = make_model(cfg.model, g.num_features, g.num_classes, hidden=cfg.hidden, num_layers=cfg.num_layers)
    alg = baseline(model, FedConfig("fedavg", local_steps=1, optim=cfg.optim))
    return run_sweep(alg, data, list(seeds), cfg.rounds)


def _ms(sw, seeds, rounds) -> float:
    return 1000 * sw.run_seconds / (len(seeds) * rounds)


# ------------------------------------------------------------------------------------------------
# The tables
# ------------------------------------------------------------------------------------------------

def table2(plan: Plan, data_dir=None) -> tuple[list[str], dict]:
    from fgl_jax.partition import partition_stats
    from fgl_jax.systems.hifgl.data import prepare
    rows, payload = [], {}
    for ds in plan.datasets:
        prep = prepare(cell(data_dir, dataset=ds))
        st = partition_stats(prep.graph, prep.partition)
        row = {"nodes_per_silo": float(np.mean(st["num_nodes"])), "intra_undirected": st["mean_intra_edges_undirected"],
               "intra_directed": st["mean_intra_edges_directed"], "cross_undirected": st["cross_edges_undirected"],
               "leakage": st["leakage_mean"]}
        payload[ds] = row
        p = PAPER_T2[ds]
        rows.append([ds, f"{row['nodes_per_silo']:.0f} ({p['nodes']})",
                     f"{row['intra_undirected']:.0f} (directed {row['intra_directed']:.0f}) ({p['intra']})",
                     f"{row['cross_undirected']} ({p['cross']})", f"{row['leakage']:.4f} ({PAPER_LEAK[ds]})"])
    head = ["dataset", "nodes/silo (paper)", "intra edges/silo, undirected (paper)", "cross edges, undirected (paper)",
            "leakage ε_p (paper)"]
    lines = ["## Table 2 and App. A.1: the random 5-silo split", "", _md(rows, head), "",
             "HiFGL's own leakage is 0 by construction: no silo ever holds an edge or a neighbour id.", ""]
    return lines, payload


def _md(rows: list[list], headers: list[str], floatfmt: Sequence[str] = ()) -> str:
    """A markdown table (tabulate via fgl_jax.report.table); floatfmt: one number format per column."""
    from fgl_jax.report import table
    fmt = tuple(floatfmt) + ("",) * (len(headers) - len(floatfmt))
    return table([dict(zip(headers, r)) for r in rows], columns=headers, floatfmt=fmt)


def baseline_rows(out: Path) -> dict:
    """(dataset, framework, model) -> mean accuracy from `baselines.json` in `out`, if it was written."""
    path = Path(out) / "baselines.json"
    if not path.exists():
        return {}
    return {(r["dataset"], r["framework"], r["model"]): r["mean"] for r in json.loads(path.read_text())["rows"]}


def table3(plan: Plan, base: dict, data_dir=None, log=print) -> tuple[list[str], list]:
    from fgl_jax.federated.metrics import graph_information_gain
    head = ["model", "dataset", "ours", "paper", "Δ (points)", "our gain", "paper gain", "our FedAvg (same backbone)"]
    rows, payload = [], []
    for cfg in table3_cells(plan, data_dir):
        ds, model = cfg.dataset, cfg.model
        sw = sweep(cfg, plan.seeds)
        acc = sw.best["best_test"]
        row = {"dataset": ds, "model": model, "mean": float(acc.mean()), "std": float(acc.std()),
               "runs": acc.tolist(), "paper": PAPER_T3[(ds, model)],
               "ms_per_round": _ms(sw, plan.seeds, plan.rounds), "compile_s": sw.compile_seconds}
        lo, gl = base.get((ds, "local", "mlp")), base.get((ds, "global", model))
        row["gain"] = graph_information_gain(row["mean"], lo, gl) if lo is not None and gl is not None else None
        payload.append(row)
        fed = base.get((ds, "fedavg", model))
        rows.append([f"HiFGL-{'GCN' if model == 'gcn' else 'GraphSage'}", ds, f"{row['mean']:.4f} ± {row['std']:.4f}",
                     row["paper"], 100 * (row["mean"] - row["paper"]),
                     "—" if row["gain"] is None else f"{100 * row['gain']:+.1f}%",
                     f"{100 * PAPER_GAIN[(ds, model)]:+.1f}%", "—" if fed is None else fed])
        log(" | ".join(map(str, rows[-1])))
    lines = ["## Table 3: HiFGL rows", "",
             f"Pooled test accuracy at the best-validation round, mean ± std over {len(plan.seeds)} seeds, "
             f"{plan.rounds} rounds, 5 silos, T = 1, p = 2^31 − 1, 16 fractional bits. Gain uses our Local-MLP and "
             "Global rows.", "", _md(rows, head, ("", "", "", ".4f", "+.1f", "", "", ".4f"))]
    return lines, payload


def figure5(plan: Plan, data_dir=None, log=print) -> tuple[list[str], list]:
    head = ["silos", "HiFGL acc", "FedAvg acc", "HiFGL ms/round", "FedAvg ms/round"]
    rows, payload = [], []
    for cfg in figure5_cells(plan, data_dir):
        h, f = sweep(cfg, plan.fig_seeds), fedavg_sweep(cfg, plan.fig_seeds)
        row = {"silos": cfg.clients, "hifgl": float(h.best["best_test"].mean()),
               "fedavg": float(f.best["best_test"].mean()), "hifgl_ms": _ms(h, plan.fig_seeds, plan.rounds),
               "fedavg_ms": _ms(f, plan.fig_seeds, plan.rounds)}
        payload.append(row)
        rows.append([cfg.clients, row["hifgl"], row["fedavg"], row["hifgl_ms"], row["fedavg_ms"]])
        log(" | ".join(map(str, rows[-1])))
    lines = ["", "## Figure 5: number of silos (Cora, GraphSage)", "",
             f"Mean test accuracy over {len(plan.fig_seeds)} seeds and steady-state time per round.", "",
             _md(rows, head, ("", ".4f", ".4f", ".1f", ".1f"))]
    return lines, payload


def table5(plan: Plan, data_dir=None, log=print) -> tuple[list[str], list]:
    head = ["layers", "ours acc", "paper acc (CiteSeer)", "ours ms/round"]
    rows, payload = [], []
    for cfg in table5_cells(plan, data_dir):
        sw = sweep(cfg, plan.fig_seeds)
        row = {"layers": cfg.num_layers, "acc": float(sw.best["best_test"].mean()),
               "ms_per_round": _ms(sw, plan.fig_seeds, plan.rounds)}
        payload.append(row)
        rows.append([cfg.num_layers, row["acc"], PAPER_T5[cfg.num_layers], row["ms_per_round"]])
        log(" | ".join(map(str, rows[-1])))
    lines = ["", f"## Table 5: HiFGL-GCN depth ({plan.depth_dataset}, hidden 64)", "",
             _md(rows, head, ("", ".4f", ".4f", ".1f"))]
    return lines, payload


def figure4(plan: Plan, data_dir=None) -> np.ndarray:
    """Per-silo training accuracy [rounds, silos] of a seed-0 run (through `run_config`, key(seed))."""
    from fgl_jax.experiment import run_config
    res = run_config(figure4_cell(plan, data_dir))
    return np.asarray(res.history["silo_train_acc"])


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


def _provenance_config(plan: Plan, **more) -> dict:
    d = HiFGLConfig()
    return {"rounds": plan.rounds, **more, "T": d.T, "frac_bits": d.frac_bits, "p": d.p,
            "optim": dataclasses.asdict(d.optim)}


def reproduce_main(out: Path, quick: bool = False, data_dir: Optional[str] = None, log=print) -> None:
    """Tables 2, 3, 5 and Figures 4, 5 -> out/hifgl(_quick).md|json and out/figures(_quick).png."""
    from fgl_jax.report import provenance, write_results
    from fgl_jax.systems.hifgl.config import PAPER_SPLIT
    t0 = time.perf_counter()
    out = Path(out)
    plan = Plan.make(quick)
    lines = ["# HiFGL reproduction (Cora, CiteSeer; PubMed is not available offline)", ""]
    payload: dict = {}
    part, payload["table2"] = table2(plan, data_dir)
    lines += part
    part, payload["table3"] = table3(plan, baseline_rows(out), data_dir, log)
    lines += part
    part, payload["figure5"] = figure5(plan, data_dir, log)
    lines += part
    part, payload["table5"] = table5(plan, data_dir, log)
    lines += part
    curves = figure4(plan, data_dir)
    payload["figure4"] = curves.tolist()
    name = "figures_quick.png" if quick else "figures.png"
    lines += ["", f"![Figures 4a and 5a]({name})" if _plot(out, name, curves, payload["figure5"], plan.rounds)
              else "(matplotlib not installed: no figure)"]
    lines += ["", "## What differs from the paper", "",
              "- PubMed is not available offline (its feature file is over 4 MiB); Table 6 is run on Cora and "
              "CiteSeer instead (table6.md).",
              "- The paper's code does not implement Lagrange coding; these runs use the paper's method as written "
              "(spec §5.2 decisions: prime field 2^31 − 1, 16-bit fixed point, fresh masks per message, A + I "
              "normalisation, straight-through gradients, one local step per round, unweighted FedAvg).",
              "- Gains use our own Local-MLP / Global rows (baselines.md), whose gaps to the paper are discussed there."]
    split = {ds: list(PAPER_SPLIT[ds]) for ds in DATASETS}
    payload["provenance"] = provenance(t0, _provenance_config(plan, seeds=list(plan.seeds), split=split))
    write_results(out, "hifgl_quick" if quick else "hifgl", "\n".join(lines), payload)


def reproduce_table6(out: Path, quick: bool = False, data_dir: Optional[str] = None, log=print) -> None:
    """Table 6 (hidden size, HiFGL-GCN, 2 layers) on Cora and CiteSeer -> out/table6(_quick).md|json."""
    from fgl_jax.report import provenance, write_results
    t0 = time.perf_counter()
    plan = Plan.make(quick)
    rows = []
    for cfg in table6_cells(plan, data_dir):
        sw = sweep(cfg, plan.t6_seeds)
        rows.append({"dataset": cfg.dataset, "hidden": cfg.hidden, "acc": float(sw.best["best_test"].mean()),
                     "std": float(sw.best["best_test"].std()), "ms_per_round": _ms(sw, plan.t6_seeds, plan.rounds)})
        log(rows[-1])
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
    payload = {"rows": rows, "paper_pubmed": PAPER_T6_PUBMED,
               "provenance": provenance(t0, {"hidden": list(plan.hidden), "seeds": list(plan.t6_seeds),
                                             "rounds": plan.rounds})}
    write_results(Path(out), "table6_quick" if quick else "table6", "\n".join(lines), payload)


def reproduce(out: Path, quick: bool = False, data_dir: Optional[str] = None) -> None:
    """Every HiFGL table and figure into `out` (`fgl-jax reproduce hifgl`); --quick: Cora, 1 seed, 10 rounds.

    The baseline rows (Local, FedAvg, FedProx, FedPer, Global) are the baselines' own reproduction;
    Table 3's gains read them from `out/baselines.json` when it exists.
    """
    from fgl_jax.systems.hifgl import baselines
    baselines.reproduce(out, quick, data_dir)
    reproduce_main(out, quick, data_dir)
    reproduce_table6(out, quick, data_dir)
