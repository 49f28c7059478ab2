"""FedHGL's paper cells (Luo et al., ICDE 2025: Tables II–V, Figure 3) as configs, and `reproduce`.

Every cell is a `FedHGLConfig` (the schema's defaults are the paper's protocol, spec fedhgl.md §7
and §10): label-Dirichlet partition β = 1e4 (≥ 10 nodes per client), per-client random train /
val 20 % / test 40 % (train ratio of the dataset), N = 2 hops, Linear(F,16) → Dropout .5 →
Linear(16,C) → ReLU, Adam lr .01 + L2 5e-4 with persistent per-client state, T = 200 rounds × I = 3
local steps (Global: one client, T = 600), FedAvg weighted by training nodes, per-client
best-validation local checkpoints (validated after every local step), test-size weighted. Run r of
a cell is the config with seed = r: it re-partitions, re-splits and draws its keys from
`jax.random.key(r)` (one seed, one key).

Rows: HGNN (local) = trimmed local hypergraph, no aggregation; HGNN w/ HC = hyperedge completion, no
aggregation; FedHGL = trimmed + FedAvg; FedHGL w/ HC = HC + FedAvg; Global = whole hypergraph, one
client. Simple graphs (Cora, CiteSeer, Facebook) use 1-hop hyperedges; only the FedHGL rows are run
(the other Table V rows are the authors' simulations of other systems). News20 is not available
offline. Figure 3: FedHGL w/ HC with LDP at K = 6, RR for binary (CoraCA, Cora), Laplace for numeric
(DBLP4k, Facebook) features, per-node perturbation reused across unsafe uploads; Laplace ε is a
traced hyperparameter (X^{(N)}(ε) = X_clean + G/ε), so all ε of one run are one program.

    from fgl_jax.systems.fedhgl import paper
    paper.reproduce(pathlib.Path("experiments/results/fedhgl"), quick=True)
"""
from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path
from typing import Callable, Optional, Sequence

import numpy as np

from fgl_jax import report
from fgl_jax.data.hypergraph import Hypergraph, load_hypergraph
from fgl_jax.experiment import execute
from fgl_jax.federated.sweep import run_sweep
from fgl_jax.systems.fedhgl.config import TRAIN_RATIO, FedHGLConfig
from fgl_jax.systems.fedhgl.program import build

HYPER = ("coraca", "dblp4k", "imdb4k")
SIMPLE = ("cora", "citeseer", "facebook")
ROWS_HYPER = ("HGNN (local)", "HGNN w/ HC", "FedHGL", "FedHGL w/ HC")
ROWS_SIMPLE = ("FedHGL", "FedHGL w/ HC")
ROW_METHOD = {"HGNN (local)": "hgnn_local", "HGNN w/ HC": "hgnn_hc", "FedHGL": "fedhgl", "FedHGL w/ HC": "fedhgl_hc",
              "Global": "global"}
KS = (3, 6, 9)
RUNS = 5                  # runs per cell (seeds 0..RUNS-1); the paper uses 20
GLOBAL_ROUNDS = 600       # the Global baseline's T (spec §5, authors' code)
FIG3_CLIENTS = 6

# Paper Table III / V: row -> dataset -> {K: (mean, std)}; Global: dataset -> (mean, std)
PAPER = {
    "HGNN (local)": {"coraca": {3: (.5353, .0234), 6: (.3778, .0226), 9: (.3155, .0250)},
                     "dblp4k": {3: (.7643, .0229), 6: (.7006, .0274), 9: (.6470, .0268)},
                     "imdb4k": {3: (.4379, .0181), 6: (.3758, .0135), 9: (.3481, .0168)}},
    "HGNN w/ HC": {"coraca": {3: (.6369, .0262), 6: (.5545, .0297), 9: (.5104, .0231)},
                   "dblp4k": {3: (.7810, .0265), 6: (.7065, .0351), 9: (.6529, .0352)},
                   "imdb4k": {3: (.4882, .0224), 6: (.4466, .0201), 9: (.4191, .0179)}},
    "FedHGL": {"coraca": {3: (.5831, .0229), 6: (.4703, .0322), 9: (.3815, .0246)},
               "dblp4k": {3: (.7734, .0443), 6: (.7263, .0620), 9: (.7083, .0400)},
               "imdb4k": {3: (.4625, .0242), 6: (.4088, .0195), 9: (.3727, .0167)},
               "cora": {3: (.7565, .0149), 6: (.6514, .0258), 9: (.5802, .0208)},
               "citeseer": {3: (.5818, .0198), 6: (.4793, .0186), 9: (.4165, .0209)},
               "facebook": {3: (.8046, .0084), 6: (.7562, .0119), 9: (.7261, .0253)}},
    "FedHGL w/ HC": {"coraca": {3: (.6900, .0248), 6: (.6726, .0282), 9: (.6585, .0291)},
                     "dblp4k": {3: (.7859, .0410), 6: (.7481, .0606), 9: (.7249, .0407)},
                     "imdb4k": {3: (.5329, .0198), 6: (.5325, .0205), 9: (.5292, .0200)},
                     "cora": {3: (.8352, .0205), 6: (.8286, .0137), 9: (.8246, .0153)},
                     "citeseer": {3: (.7076, .0139), 6: (.7074, .0212), 9: (.7061, .0192)},
                     "facebook": {3: (.8409, .0092), 6: (.8396, .0065), 9: (.8394, .0094)}},
}
PAPER_GLOBAL = {"coraca": (.6953, .0216), "dblp4k": (.8515, .0187), "imdb4k": (.5413, .0205)}
# Tables II / IV: dataset -> {K: (|E*|, |v*|)}
PAPER_STATS = {"coraca": {3: (820, 852), 6: (894, 1319), 9: (921, 1606)},
               "dblp4k": {3: (5320, 2354), 6: (5813, 2932), 9: (5967, 3197)},
               "imdb4k": {3: (2379, 2243), 6: (2606, 3252), 9: (2678, 3593)},
               "cora": {3: (2351, 1501), 6: (2528, 2234), 9: (2528, 2439)},
               "citeseer": {3: (2496, 2118), 6: (2821, 2780), 9: (2821, 2983)},
               "facebook": {3: (20373, 11457), 6: (21811, 17563), 9: (21811, 19714)}}
PAPER_HYPEREDGES = {"coraca": 1072, "dblp4k": 22051, "imdb4k": 7338, "cora": 2590, "citeseer": 2996, "facebook": 22407}
# Figure 3 (K = 6, from the authors' plot scripts): dataset -> (mechanism, {eps: acc}, HC line)
PAPER_FIG3 = {
    "coraca": ("rr", {0.1: .3335, 0.2: .4233, 0.3: .4819, 0.5: .5521, 0.8: .6006, 1: .6204, 2: .6462}, .6778),
    "dblp4k": ("laplace", {0.2: .5069, 0.5: .5779, 0.8: .6394, 1: .6722, 1.2: .6971, 1.4: .7131, 1.7: .7285, 2: .7359,
                           2.4: .7463}, .7481),
    "cora": ("rr", {1: .7823, 1.5: .8086, 1.8: .8127, 2: .8204, 2.5: .8255, 3: .8286, 5: .8316}, .8316),
    "facebook": ("laplace", {1: .7471, 2: .8016, 2.2: .8064, 2.5: .8115, 2.8: .8163, 3: .8188, 4: .8257, 6: .8322}, .8396),
}


# One-line reasons for cells more than 2 points from the paper (dataset -> text); see results.md.
GAP_REASON = {
    "dblp4k": "paper std .04–.06 over 20 runs, ours within ~1 std; hypergraph statistics |E*|, |v*| match Table II, "
              "so the construction is not the cause",
    "coraca": "our HC is the paper's exact protocol (global degrees); the authors' code simulates it with "
              "extended-hypergraph degrees (spec §9)",
    ("coraca", "basic"): "no HC in this row; paper std ≈ .025 at K=9 over 20 runs, ours 5 runs; not explained further",
    "imdb4k": "paper std ≈ .02 over 20 runs; structure statistics match Table II",
    "cora": "paper std ≈ .015–.026 over 20 runs",
    "citeseer": "paper std ≈ .02 over 20 runs",
    "facebook": "DHG's Facebook has 85,501 edges (half of MUSAE's 171,002 rows) and 22,407 1-hop hyperedges; "
                "we use the full MUSAE graph (22,176 hyperedges)",
}
SWEEP_REASON = ("the authors' code perturbs each foreign node per receiving client and keeps 2nd-hop inputs clean "
                "(spec §9; our --noise-first-hop ablation), ours propagates the noise as Algorithm 2 states")


SWAP_VAL_TEST = (0.4, 0.2)   # the authors' code selects on 40 % and tests on 20 % (spec §7.2)


# ------------------------------------------------------------------------------------------------
# cells (configs as data)
# ------------------------------------------------------------------------------------------------
def cell(dataset: str, row: str, clients: int, seed: int = 0, **changes) -> FedHGLConfig:
    """The config of one row of Tables III / V (row: a key of ROW_METHOD) with run index `seed`."""
    if row == "Global":
        changes = {"rounds": GLOBAL_ROUNDS, **changes}
        clients = 1
    changes = {"train_ratio": TRAIN_RATIO[dataset], **changes}
    return FedHGLConfig(dataset=dataset, clients=clients, method=ROW_METHOD[row], seed=seed, **changes)


def table_cells(dataset: str, clients: int, seed: int = 0, **changes) -> list[tuple[str, FedHGLConfig]]:
    """(row, config) of every row run on `dataset` with K = clients (Table III or V)."""
    rows = ROWS_HYPER if dataset in HYPER else ROWS_SIMPLE
    return [(row, cell(dataset, row, clients, seed, **changes)) for row in rows]


def fig3_cells(dataset: str, eps_list: Sequence[float], seed: int = 0, **changes) -> list[FedHGLConfig]:
    """Figure 3: FedHGL w/ HC at K = 6 with the dataset's mechanism, one config per ε."""
    mech = PAPER_FIG3[dataset][0]
    return [cell(dataset, "FedHGL w/ HC", FIG3_CLIENTS, seed, mechanism=mech, eps=float(e), **changes)
            for e in eps_list]


def config_cells() -> list[tuple[str, FedHGLConfig, list[str]]]:
    """(file stem, config, comment lines) of every cell with a paper number: the files of
    experiments/configs/fedhgl/ (`fgl-jax fedhgl --config FILE` runs the cell's seed-0 run)."""
    out = []
    tag = {"HGNN (local)": "hgnn_local", "HGNN w/ HC": "hgnn_hc", "FedHGL": "fedhgl", "FedHGL w/ HC": "fedhgl_hc"}
    seeds = ",".join(str(s) for s in range(RUNS))
    for row, per_ds in PAPER.items():
        for ds, per_k in per_ds.items():
            table_name = "Table III" if ds in HYPER else "Table V"
            for k, (mean, std) in per_k.items():
                out.append((f"{table_name.split()[1].lower()}_{ds}_k{k}_{tag[row]}", cell(ds, row, k),
                            [f"{table_name}: {row} on {ds}, K={k}; paper {mean:.4f} ± {std:.4f}",
                             f"cell = mean over runs (seed = run index) {seeds}"]))
    for ds, (mean, std) in PAPER_GLOBAL.items():
        out.append((f"iii_{ds}_global", cell(ds, "Global", 1),
                    [f"Table III: Global on {ds}; paper {mean:.4f} ± {std:.4f}", f"cell = mean over seeds {seeds}"]))
    for ds, (mech, points, hc) in PAPER_FIG3.items():
        for eps, acc in points.items():
            out.append((f"fig3_{ds}_k6_{mech}_eps{eps}", fig3_cells(ds, [eps])[0],
                        [f"Figure 3: FedHGL w/ HC + {mech} LDP on {ds}, K=6, eps={eps}; paper {acc:.4f} "
                         f"(no noise {hc:.4f})", f"cell = mean over seeds {seeds}"]))
    return out


def write_configs(folder: Path) -> list[Path]:
    """Write `config_cells()` as YAML files (`system: fedhgl` first, comments above)."""
    from fgl_jax import schema
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for stem, cfg, notes in config_cells():
        text = "".join(f"# {n}\n" for n in notes) + "# run:  fgl-jax fedhgl --config experiments/configs/fedhgl/" \
            f"{stem}.yaml\n" + schema.dump(cfg, "fedhgl")
        (folder / f"{stem}.yaml").write_text(text)
        paths.append(folder / f"{stem}.yaml")
    return paths


# ------------------------------------------------------------------------------------------------
# running cells through the engine
# ------------------------------------------------------------------------------------------------
def run_cell(cfg: FedHGLConfig, hg: Hypergraph):
    """One run through the engine (key jax.random.key(cfg.seed)); the RunResult (best_test = the paper's number)."""
    return execute(build(cfg, hypergraph=hg), cfg.seed, system="fedhgl")


def ms(v):
    v = np.asarray(v, float)
    return (float(v.mean()), float(v.std())) if v.size else (float("nan"), float("nan"))


def fmt(m, s):
    return "–" if m != m else f"{m:.4f} ({s:.4f})"


def run_main(hg: Hypergraph, name: str, ks, runs: int, changes: dict, res: dict, log: Callable) -> None:
    cell_res = res.setdefault("main", {}).setdefault(name, {})
    stats = res.setdefault("stats", {}).setdefault(name, {})
    for k in ks:
        rows = table_cells(name, k, **changes)
        accs = {row: [] for row, _ in rows}
        st = []
        for run in range(runs):
            for i, (row, cfg) in enumerate(table_cells(name, k, seed=run, **changes)):
                r = run_cell(cfg, hg)
                if i == 0:
                    st.append(r.summary["describe"]["split_stats"])
                accs[row].append(r.best["best_test"])
                log(f"{name} K={k} run={run} {row}: test {r.best['best_test']:.4f} (global model "
                    f"{r.extras['global_test_acc']:.4f}), prop {r.summary['describe']['propagation_seconds']:.1f}s "
                    f"train {r.timings['wall_seconds']:.1f}s")
        for row in accs:
            cell_res.setdefault(row, {})[str(k)] = {"runs": accs[row], "mean": ms(accs[row])[0], "std": ms(accs[row])[1]}
        stats[str(k)] = {"cross_edges": ms([s["cross_edges"] for s in st])[0],
                         "unsafe_nodes": ms([s["unsafe_nodes"] for s in st])[0],
                         "uploads_per_hop": ms([s["uploads_per_hop"] for s in st])[0],
                         "upload_floats_per_hop": ms([s["upload_floats_per_hop"] for s in st])[0]}


def run_global(hg: Hypergraph, name: str, runs: int, changes: dict, res: dict, log: Callable) -> None:
    accs = []
    for run in range(runs):
        r = run_cell(cell(name, "Global", 1, run, **changes), hg)
        accs.append(r.best["best_test"])
        log(f"{name} Global run={run}: test {accs[-1]:.4f}")
    res.setdefault("global", {})[name] = {"runs": accs, "mean": ms(accs)[0], "std": ms(accs)[1]}


def run_fig3(hg: Hypergraph, name: str, eps_list, runs: int, changes: dict, res: dict, log: Callable) -> None:
    """Figure 3. Laplace datasets: ε is a traced hyperparameter (X^{(N)}(ε) = X_clean + G/ε, HC is
    linear), so all ε of one run are one program through `fgl_jax.federated.run_sweep`. RR datasets:
    one propagation + training per ε (RR is not linear in ε)."""
    mech = PAPER_FIG3[name][0]
    out_d = res.setdefault("sweep", {}).setdefault(name, {"mechanism": mech, "points": {}})
    accs = {e: [] for e in eps_list}
    clean = []
    for run in range(runs):
        r = run_cell(cell(name, "FedHGL w/ HC", FIG3_CLIENTS, run, **changes), hg)
        clean.append(r.best["best_test"])
        cells = fig3_cells(name, eps_list, run, **changes)
        if mech == "laplace" and cells[0].noise_propagation == "paper":
            cfg = dataclasses.replace(cells[0], traced_eps=True)
            prog = build(cfg, hypergraph=hg)
            sw = run_sweep(prog.algorithm, prog.data, [cfg.seed] * len(eps_list), cfg.rounds,
                           {"eps": [float(e) for e in eps_list]})
            for i, e in enumerate(eps_list):
                accs[e].append(float(sw.history["test_acc"][i, -1]))
            log(f"{name} sweep K={FIG3_CLIENTS} run={run} (vectorised over ε, compile {sw.compile_seconds:.1f}s run "
                f"{sw.run_seconds:.1f}s): " + ", ".join(f"{e}: {accs[e][-1]:.4f}" for e in eps_list))
            continue
        for e, cfg in zip(eps_list, cells):
            accs[e].append(run_cell(cfg, hg).best["best_test"])
            log(f"{name} sweep K={FIG3_CLIENTS} run={run} eps={e}: test {accs[e][-1]:.4f}")
    for e in eps_list:
        out_d["points"][str(e)] = {"runs": accs[e], "mean": ms(accs[e])[0], "std": ms(accs[e])[1]}
    out_d["no_noise"] = {"runs": clean, "mean": ms(clean)[0], "std": ms(clean)[1]}


# ------------------------------------------------------------------------------------------------
# tables
# ------------------------------------------------------------------------------------------------
DATA_NOTES = (
    "Data notes: (1) DBLP4k / IMDB4k hyperedge counts: the paper's 22,051 / 7,338 are the raw "
    "edge_by_paper + edge_by_term (edge_by_director + edge_by_actor) lists; the authors' `clean_edge_list` "
    "then drops singletons and duplicates (ours: 6,242 / 2,810), and our |E*| and |v*| on the cleaned "
    "sets match Table II within 1–2 %, so the construction matches. (2) 1-hop hypergraphs keep the "
    "singleton {v} of an isolated node (DHG `from_graph_kHop`; the authors clean the graph's edges, not the "
    "hyperedges): CiteSeer 2,996 hyperedges = Table IV. (3) Facebook: DHG's copy has 85,501 edges "
    "(half of MUSAE's 171,002 rows), ours the full MUSAE graph, so 22,176 vs 22,407 hyperedges.")


def render(res: dict, ks) -> str:
    lines = ["# FedHGL reproduction (Luo et al., ICDE 2025)", "",
             "Accuracy, mean (population std) over runs; **ours** beside the paper's. Each run re-partitions "
             "(label-Dirichlet β=1e4) and re-splits. News20 (Table III) is not available offline.", "",
             DATA_NOTES, ""]
    main = res.get("main", {})
    for title, names, rows in (("Table III (hypergraphs)", HYPER, ROWS_HYPER + ("Global",)),
                               ("Table V (simple graphs → 1-hop hyperedges)", SIMPLE, ROWS_SIMPLE)):
        have = [n for n in names if n in main]
        if not have:
            continue
        cols = ["Model"] + [f"{n} K={k} ours / paper" for n in have for k in ks]
        body = []
        for row in rows:
            line = {"Model": row}
            for n in have:
                for j, k in enumerate(ks):
                    col = f"{n} K={k} ours / paper"
                    if row == "Global":
                        g = res.get("global", {}).get(n)
                        p = PAPER_GLOBAL.get(n)
                        line[col] = (fmt(g["mean"], g["std"]) + " / " + (fmt(*p) if p else "–")) if (g and j == 0) else ""
                        continue
                    o = main[n].get(row, {}).get(str(k))
                    p = PAPER.get(row, {}).get(n, {}).get(k)
                    line[col] = f"{fmt(o['mean'], o['std']) if o else '–'} / {fmt(*p) if p else '–'}"
            body.append(line)
        lines += [f"## {title}", "", report.table(body, cols), ""]
    if res.get("stats"):
        cols = ["dataset", "hyperedges (cleaned) / paper"] + [c for k in ks for c in
                                                              (f"K={k} \\|E*\\| ours / paper", f"K={k} \\|v*\\| ours / paper")]
        body = []
        for n, st in res["stats"].items():
            line = {"dataset": n, "hyperedges (cleaned) / paper": f"{res['hyperedges'][n]} / {PAPER_HYPEREDGES.get(n, '–')}"}
            for k in ks:
                s = st.get(str(k))
                p = PAPER_STATS.get(n, {}).get(k, ("–", "–"))
                line[f"K={k} \\|E*\\| ours / paper"] = f"{s['cross_edges']:.0f} / {p[0]}" if s else "–"
                line[f"K={k} \\|v*\\| ours / paper"] = f"{s['unsafe_nodes']:.0f} / {p[1]}" if s else "–"
            body.append(line)
        lines += ["## Tables II / IV: cross-client hyperedges |E*| and unsafe nodes |v*| (mean over runs) vs paper", "",
                  report.table(body, cols), ""]
    gaps = []
    for row, per_ds in PAPER.items():
        for n, per_k in per_ds.items():
            for k in ks:
                o = main.get(n, {}).get(row, {}).get(str(k))
                p = per_k.get(k)
                if o and p and abs(o["mean"] - p[0]) > 0.02:
                    prop = "basic" if ROW_METHOD[row] in ("fedhgl", "hgnn_local") else "hc"
                    why = GAP_REASON.get((n, prop), GAP_REASON.get(n, "unexplained"))
                    gaps.append(f"- {n} K={k} {row}: ours {o['mean']:.4f} vs paper {p[0]:.4f} "
                                f"({100 * (o['mean'] - p[0]):+.1f} points) — {why}")
    for n, g in res.get("global", {}).items():
        p = PAPER_GLOBAL.get(n)
        if p and abs(g["mean"] - p[0]) > 0.02:
            gaps.append(f"- {n} Global: ours {g['mean']:.4f} vs paper {p[0]:.4f} — {GAP_REASON.get(n, 'unexplained')}")
    for n, d in res.get("sweep", {}).items():
        paper = PAPER_FIG3[n][1]
        for e, v in d["points"].items():
            pv = paper.get(float(e))
            if pv is not None and abs(v["mean"] - pv) > 0.02:
                gaps.append(f"- Fig. 3 {n} ε={e}: ours {v['mean']:.4f} vs paper {pv:.4f} "
                            f"({100 * (v['mean'] - pv):+.1f} points) — {SWEEP_REASON}")
    if gaps:
        lines += ["## Gaps above 2 points (one-line reasons)", ""] + gaps + [""]
    if res.get("sweep"):
        lines += ["## Figure 3: FedHGL w/ HC with LDP at K = 6 (accuracy vs per-attribute ε)", ""]
        for n, d in res["sweep"].items():
            paper = PAPER_FIG3[n][1]
            body = []
            for e, v in d["points"].items():
                pv = paper.get(float(e), paper.get(int(float(e)), None) if float(e).is_integer() else None)
                body.append({"ε": e, "ours": fmt(v["mean"], v["std"]), "paper": pv if pv is not None else "–"})
            lines += [f"**{n}** ({d['mechanism']}): no-noise HC ours {fmt(d['no_noise']['mean'], d['no_noise']['std'])}, "
                      f"paper line {PAPER_FIG3[n][2]:.4f}", "", report.table(body, ["ε", "ours", "paper"], floatfmt=("g", ".4f", ".4f")), ""]
    return "\n".join(lines)


def paper_payload() -> dict:
    return {"table": {r: {n: {str(k): v for k, v in d.items()} for n, d in t.items()} for r, t in PAPER.items()},
            "global": PAPER_GLOBAL,
            "fig3": {n: {"mechanism": v[0], "points": {str(e): a for e, a in v[1].items()}, "hc_line": v[2]}
                     for n, v in PAPER_FIG3.items()}}


def combine(out: Path, stems: Sequence[str], out_stem: str = "results", ks=KS) -> Path:
    """Merge the result JSONs of several invocations (same schema) in `out` into one results file."""
    t0 = time.perf_counter()
    res, parts = {}, []
    for st in stems:
        d = json.loads((Path(out) / f"{st}.json").read_text())
        for key, val in d["results"].items():
            if isinstance(val, dict):
                for name, v in val.items():
                    res.setdefault(key, {})[name] = v
            else:
                res[key] = val
        parts.append({"stem": st, **d["provenance"]})
    payload = {"results": res, "paper": paper_payload(), "provenance": report.provenance(t0, {"combined_from": parts})}
    report.write_results(Path(out), out_stem, render(res, ks), payload)
    return Path(out) / f"{out_stem}.md"


# ------------------------------------------------------------------------------------------------
# reproduce
# ------------------------------------------------------------------------------------------------
QUICK = {"datasets": ("coraca", "cora"), "ks": (3,), "runs": 1, "sweep": {"coraca": (0.5, 1, 2)}}


def reproduce(out: Path, quick: bool = False, data_dir: Optional[str] = None, *, runs: int = RUNS,
              runs_facebook: Optional[int] = None, datasets: Sequence[str] = HYPER + SIMPLE, ks: Sequence[int] = KS,
              parts: Sequence[str] = ("main", "sweep"), rounds: int = 200,
              sweep_datasets: Sequence[str] = ("coraca", "dblp4k", "cora", "facebook"),
              swap_val_test: bool = False, noise_first_hop: bool = False, stem: Optional[str] = None,
              log: Optional[Callable[[str], None]] = None) -> Path:
    """Run the paper's cells through the engine and write `out`/<stem>.md and .json (rewritten after
    every dataset). quick: CoraCA + Cora, K = 3, one run, a 3-point CoraCA sweep (stem results_quick).
    swap_val_test: the authors' 40 % / 20 % val / test; noise_first_hop: the authors' noise ablation."""
    out = Path(out)
    t0 = time.perf_counter()
    val, test = SWAP_VAL_TEST if swap_val_test else (0.2, 0.4)
    changes = {"val_ratio": val, "test_ratio": test, "noise_propagation": "first_hop" if noise_first_hop else "paper"}
    if rounds != 200:
        changes["rounds"] = rounds
    if quick:
        datasets, ks, runs, runs_fb = QUICK["datasets"], QUICK["ks"], QUICK["runs"], QUICK["runs"]
        sweep = {n: list(v) for n, v in QUICK["sweep"].items()}
        name = "results_quick"
    else:
        runs_fb = runs if runs_facebook is None else runs_facebook
        sweep = {n: list(PAPER_FIG3[n][1]) for n in sweep_datasets if n}
        name = "results"
    if swap_val_test:
        name = "results_quick_swapvaltest" if quick else "results_swapvaltest"
    if noise_first_hop and not stem:
        name += "_noisefirsthop"
    name = stem or name
    global_changes = {k: v for k, v in changes.items() if k != "rounds"}
    if rounds != 200:
        global_changes["rounds"] = 3 * rounds
    config = {"val_ratio": val, "test_ratio": test, "noise_propagation": changes["noise_propagation"],
              "datasets": list(datasets), "ks": list(ks), "runs": runs, "runs_facebook": runs_fb, "rounds": rounds,
              "global_rounds": 3 * rounds, "parts": list(parts), "sweep": sweep,
              "defaults": dataclasses.asdict(FedHGLConfig())}
    res: dict = {"hyperedges": {}}
    if log is None:
        def log(msg):
            print(f"[{time.perf_counter() - t0:7.1f}s] {msg}", flush=True)

    def save():
        payload = {"results": res, "paper": paper_payload(), "provenance": report.provenance(t0, config)}
        report.write_results(out, name, render(res, ks), payload)

    for ds in datasets:
        hg = load_hypergraph(ds, data_dir)
        res["hyperedges"][ds] = hg.num_edges
        r = runs_fb if ds == "facebook" else runs
        if "main" in parts:
            run_main(hg, ds, ks, r, changes, res, log)
            if ds in HYPER:
                run_global(hg, ds, r, global_changes, res, log)
            save()
        if "sweep" in parts and ds in sweep:
            run_fig3(hg, ds, sweep[ds], r, changes, res, log)
            save()
    save()
    log(f"done; wrote {out / (name + '.md')}")
    return out / f"{name}.md"
