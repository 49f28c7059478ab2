"""Reproduce the baseline rows of HiFGL's Tables 3 and 4 (Cora, CiteSeer).

Protocol (specs/hifgl.md §4 and §5.2 decisions 8, 9, 12): 5 random near-equal silos
(FederatedScope random splitter), FederatedScope's random Planetoid split (232/332 train per
class, 542/665 val, rest test), cross-silo edges dropped for Local/FedAvg/FedProx/FedPer,
2 layers, hidden 64, Adam lr 0.01 x0.9 every 4 rounds, 1 full-batch local step per round,
50 rounds, no dropout or weight decay, FedProx mu 0.01, FedPer keeps the last layer local,
pooled test accuracy at the round of best pooled validation accuracy, 5 model seeds on a fixed
split and partition (seed 0), mean +- population std. The 5 seeds run as one vmapped program.

    fgl-jax reproduce hifgl [--quick]   (runs these rows first, then HiFGL's own)
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Optional

import numpy as np

from fgl_jax.data import load
from fgl_jax.federated import make_fed_data
from fgl_jax.federated.metrics import graph_information_gain
from fgl_jax.federated.sweep import run_sweep
from fgl_jax.report import provenance, table, write_results
from fgl_jax.systems.baseline import RunConfig, algorithm_from_config, prepare

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
    from fgl_jax.batch import stack_graphs
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


def sensitivity(ds: str, data_dir, rounds: int, seeds) -> list[dict]:
    """Evidence for the gaps: the same cells under protocol variants the paper leaves open."""
    graph = load(ds, data_dir=data_dir)
    out = []
    for label, framework, model, changes, transform in SENSITIVITY:
        cfg = base_config(ds, data_dir, rounds).replace(algorithm=framework, model=model, **changes)
        g = row_normalised(graph) if transform == "rownorm" else graph
        prep = prepare(cfg, g)
        data = with_cross_edges(prep.graph, prep.partition.assignment, cfg.clients) if transform == "cross" \
            else prep.data
        sw = run_sweep(algorithm_from_config(cfg, prep.graph), data, seeds, cfg.rounds)
        acc = sw.best["best_test"]
        out.append({"dataset": ds, "variant": label, "framework": framework, "model": model,
                    "mean": float(acc.mean()), "std": float(acc.std()), "runs": acc.tolist()})
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


def render(payload: dict, datasets, seeds, rounds) -> str:
    rows = {(r["dataset"], r["framework"], r["model"]): r for r in payload["rows"]}
    lines = ["# HiFGL Tables 3 and 4: baseline rows", "",
             "Pooled test accuracy at the best-validation round, mean ± std over "
             f"{len(seeds)} seeds ({rounds} rounds, 5 random silos). Paper values from Table 3 (T3) and Table 4 (T4); "
             "Δ = ours − paper (T3 where it has the row, else T4), in accuracy points.", ""]
    out_rows = []
    for (framework, model) in PAPER:
        cells = {"model": f"{NAMES[framework]}-{NAMES[model]}"}
        for ds in datasets:
            r = rows[(ds, framework, model)]
            ref = r["paper_table3"] if r["paper_table3"] is not None else r["paper_table4"]
            cells.update({f"{ds} ours": f"{r['mean']:.4f} ± {r['std']:.4f}",
                          f"{ds} paper T3": "—" if r["paper_table3"] is None else f"{r['paper_table3']:.4f}",
                          f"{ds} paper T4": "—" if r["paper_table4"] is None else f"{r['paper_table4']:.4f}",
                          f"{ds} Δ": f"{100 * (r['mean'] - ref):+.1f}",
                          f"{ds} gain": "—" if "gain" not in r else f"{100 * r['gain']:+.1f}%"})
        out_rows.append(cells)
    lines.append(table(out_rows, disable_numparse=True))
    sens = payload.get("sensitivity", [])
    if sens:
        lines += ["", "## Sensitivity of the largest gaps (3 seeds each)", "",
                  "The same cells under protocol variants the paper leaves open, plus one diagnostic that keeps the "
                  "cross-silo edges the baselines are supposed to drop.", ""]
        lines.append(table([{"dataset": r["dataset"], "cell": f"{NAMES[r['framework']]}-{NAMES[r['model']]}",
                             "variant": r["variant"], "test acc": f"{r['mean']:.4f} ± {r['std']:.4f}"}
                            for r in sens], disable_numparse=True))
        for r in payload["rows"]:
            r.setdefault("paper_table3", None)
        lines += explain([r for r in payload["rows"] if r["paper_table3"] is not None], sens)
    return "\n".join(lines)


def reproduce(out: Path, quick: bool = False, data_dir: Optional[str] = None, render_only: bool = False,
              log=print) -> None:
    """The baseline rows of Tables 3 and 4 into out/baselines(_quick).md|json; --quick: Cora, 2 seeds, 20 rounds."""
    import json
    t0 = time.perf_counter()
    out = Path(out)
    datasets = ["cora"] if quick else ["cora", "citeseer"]
    seeds = [0, 1] if quick else [0, 1, 2, 3, 4]
    rounds = 20 if quick else 50
    stem = "baselines_quick" if quick else "baselines"
    if render_only:
        payload = json.loads((out / f"{stem}.json").read_text())
        write_results(out, stem, render(payload, datasets, payload["seeds"], rounds), payload)
        return
    rows = {}
    for ds in datasets:
        graph = load(ds, data_dir=data_dir)
        prepared = {}
        for (framework, model), paper in PAPER.items():
            cfg = base_config(ds, data_dir, rounds).replace(algorithm=framework, model=model)
            kind = "global" if framework == "global" else "silos"
            if kind not in prepared:
                prepared[kind] = prepare(cfg, graph)
            alg = algorithm_from_config(cfg, prepared[kind].graph)
            sw = run_sweep(alg, prepared[kind].data, seeds, rounds)
            accs = sw.best["best_test"]
            rows[(ds, framework, model)] = {"mean": float(accs.mean()), "std": float(accs.std()),
                                            "runs": accs.tolist(), "best_round": sw.best["best_round"].tolist(),
                                            "paper_table3": paper[ds][0], "paper_table4": paper[ds][1],
                                            "seconds": sw.compile_seconds + sw.run_seconds}
            log(f"{ds:9s} {framework:8s} {model:5s} {accs.mean():.4f} +- {accs.std():.4f}  "
                f"(paper T3 {paper[ds][0]}, T4 {paper[ds][1]})  {rows[(ds, framework, model)]['seconds']:.1f}s")
    # graph information gain with our own Local-MLP and Global rows (HiFGL's definition)
    for (ds, framework, model), row in rows.items():
        if model == "mlp":
            continue
        lo, gl = rows[(ds, "local", "mlp")]["mean"], rows[(ds, "global", model)]["mean"]
        row["gain"] = graph_information_gain(row["mean"], lo, gl)
    sens = []
    if not quick:
        for ds in datasets:
            sens += sensitivity(ds, data_dir, rounds, seeds[:3])
    cfg0 = base_config(datasets[0], data_dir, rounds).to_dict()
    payload = {"rows": [{"dataset": d, "framework": f, "model": m, **r} for (d, f, m), r in rows.items()],
               "sensitivity": sens, "seeds": seeds,
               "provenance": provenance(t0, {"base": cfg0, "seeds": seeds, "split": SPLIT})}
    write_results(out, stem, render(payload, datasets, seeds, rounds), payload)
    log(f"wrote {out}/{stem}.md")


def write_configs(folder: Path) -> list[Path]:
    """One baseline YAML per table cell (`fgl-jax run --config FILE`; the cell = seeds 0-4)."""
    from fgl_jax import schema
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for ds in ("cora", "citeseer"):
        for framework, model in PAPER:
            cfg = base_config(ds, None, 50).replace(algorithm=framework, model=model)
            paths.append(folder / f"{ds}_{framework}_{model}.yaml")
            schema.dump(cfg, "baseline", paths[-1])
    return paths
