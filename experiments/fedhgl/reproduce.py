"""Reproduce FedHGL's Tables II–V and Figure 3 (Luo et al., ICDE 2025) on the offline datasets.

    python experiments/fedhgl/reproduce.py [--quick] [--data-dir ../shared/data] [--runs 5]
        [--datasets coraca,dblp4k,imdb4k,cora,citeseer,facebook] [--ks 3,6,9] [--parts main,sweep]

Protocol (spec fedhgl.md §7, recommended decisions of §10): label-Dirichlet partition β = 1e4
(min 10 nodes per client), per-client random train / val 20 % / test 40 % (train ratio of the
dataset), N = 2 propagation hops, classifier Linear(F,16) → Dropout .5 → Linear(16,C) → ReLU,
Adam lr .01 + L2 5e-4 with persistent per-client state, T = 200 rounds × I = 3 local steps (Global:
one client, T = 600), FedAvg weighted by training nodes, evaluation = per-client best-validation
local checkpoint (validated after every local step, as the authors' code), test-size weighted. Every run re-partitions and re-splits (seed = run index).
Rows:
  HGNN (local)   trimmed local hypergraph, no aggregation      FedHGL        trimmed + FedAvg
  HGNN w/ HC     hyperedge completion, no aggregation          FedHGL w/ HC  HC + FedAvg
  Global         whole hypergraph, one client
Simple graphs (Cora, CiteSeer, Facebook) use 1-hop hyperedges; only FedHGL rows are run (the
other Table V rows are the authors' simulations of other systems). News20 is not available
offline. Figure 3: FedHGL w/ HC with LDP at K = 6, RR for binary (CoraCA, Cora), Laplace for
numeric (DBLP4k, Facebook) features, per-node perturbation reused across unsafe uploads.

Results are rewritten after every dataset (results.json / results.md; --quick: results_quick.*).
"""
from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from pathlib import Path

import jax
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from experiments.common import RESULTS, provenance, write_results  # noqa: E402
from fgl_jax.data.hypergraph import load_hypergraph  # noqa: E402
from fgl_jax.federated.sweep import run_sweep as engine_sweep  # noqa: E402
from fgl_jax.systems.fedhgl import (TRAIN_RATIO, FedHGLConfig, client_splits, make_algorithm, make_data,  # noqa: E402
                                    partition_hypergraph, prepare, propagate, split_hypergraph, train)

OUT = RESULTS / "fedhgl"
HYPER = ("coraca", "dblp4k", "imdb4k")
SIMPLE = ("cora", "citeseer", "facebook")
ROWS_HYPER = ("HGNN (local)", "HGNN w/ HC", "FedHGL", "FedHGL w/ HC")
ROWS_SIMPLE = ("FedHGL", "FedHGL w/ HC")
ROW_SETTING = {"HGNN (local)": ("basic", "local"), "HGNN w/ HC": ("hc", "local"),
               "FedHGL": ("basic", "fedavg"), "FedHGL w/ HC": ("hc", "fedavg")}

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


def ms(v):
    v = np.asarray(v, float)
    return (float(v.mean()), float(v.std())) if v.size else (float("nan"), float("nan"))


def fmt(m, s):
    return "–" if m != m else f"{m:.4f} ({s:.4f})"


VAL_TEST = (0.2, 0.4)   # paper: validation 20 %, test 40 % (--swap-val-test: the authors' code, 40 % / 20 %)
NOISE_PROPAGATION = "paper"   # --noise-first-hop: the authors' code keeps second-hop neighbour inputs clean


def base_cfg(name: str, k: int, rounds: int) -> FedHGLConfig:
    return FedHGLConfig(num_clients=k, train_ratio=TRAIN_RATIO[name], rounds=rounds, val_ratio=VAL_TEST[0],
                        test_ratio=VAL_TEST[1], noise_propagation=NOISE_PROPAGATION)


def run_main(hg, name, ks, runs, rounds, res, log):
    rows = ROWS_HYPER if name in HYPER else ROWS_SIMPLE
    cell = res.setdefault("main", {}).setdefault(name, {})
    stats = res.setdefault("stats", {}).setdefault(name, {})
    for k in ks:
        accs = {r: [] for r in rows}
        st = []
        for run in range(runs):
            cfg = base_cfg(name, k, rounds)
            split = partition_hypergraph(hg, k, cfg.beta, seed=run, min_size=cfg.min_client_size)
            st.append(split.stats())
            idx = client_splits(split, cfg, seed=run)
            for prop in ("basic", "hc"):
                xn, info = propagate(split, dataclasses.replace(cfg, propagation=prop), jax.random.PRNGKey(run))
                data = make_data(xn, split, idx)
                del xn
                for row in rows:
                    if ROW_SETTING[row][0] != prop:
                        continue
                    out = train(data, hg.num_classes, dataclasses.replace(cfg, mode=ROW_SETTING[row][1]),
                                jax.random.PRNGKey(10_000 + run))
                    accs[row].append(out["test_acc"])
                    log(f"{name} K={k} run={run} {row}: test {out['test_acc']:.4f} (global model "
                        f"{out['global_test_acc']:.4f}), prop {info['propagation_seconds']:.1f}s train {out['train_seconds']:.1f}s")
        for row in rows:
            cell.setdefault(row, {})[str(k)] = {"runs": accs[row], "mean": ms(accs[row])[0], "std": ms(accs[row])[1]}
        stats[str(k)] = {"cross_edges": ms([s["cross_edges"] for s in st])[0],
                         "unsafe_nodes": ms([s["unsafe_nodes"] for s in st])[0],
                         "uploads_per_hop": ms([s["uploads_per_hop"] for s in st])[0],
                         "upload_floats_per_hop": ms([s["upload_floats_per_hop"] for s in st])[0]}


def run_global(hg, name, runs, rounds, res, log):
    accs = []
    for run in range(runs):
        cfg = dataclasses.replace(base_cfg(name, 1, rounds), mode="global")
        split = split_hypergraph(hg, np.zeros(hg.num_nodes, np.int64), 1)
        xn, _ = propagate(split, dataclasses.replace(cfg, propagation="global"), jax.random.PRNGKey(run))
        data = make_data(xn, split, client_splits(split, cfg, seed=run))
        out = train(data, hg.num_classes, cfg, jax.random.PRNGKey(10_000 + run))
        accs.append(out["test_acc"])
        log(f"{name} Global run={run}: test {out['test_acc']:.4f}")
    res.setdefault("global", {})[name] = {"runs": accs, "mean": ms(accs)[0], "std": ms(accs)[1]}


def run_sweep(hg, name, eps_list, runs, rounds, res, log, k=6):
    """Figure 3. Laplace datasets: ε is a traced hyperparameter (X^{(N)}(ε) = X_clean + G/ε, HC is
    linear), so all ε of one run are one compiled program through `fgl_jax.federated.run_sweep`.
    RR datasets: one propagation + training per ε (RR is not linear in ε)."""
    mech = PAPER_FIG3[name][0]
    out_d = res.setdefault("sweep", {}).setdefault(name, {"mechanism": mech, "points": {}})
    accs = {e: [] for e in eps_list}
    clean = []
    for run in range(runs):
        cfg = base_cfg(name, k, rounds)
        split = partition_hypergraph(hg, k, cfg.beta, seed=run, min_size=cfg.min_client_size)
        idx = client_splits(split, cfg, seed=run)
        xn, _ = propagate(split, cfg, jax.random.PRNGKey(run))
        out = train(make_data(xn, split, idx), hg.num_classes, cfg, jax.random.PRNGKey(10_000 + run))
        del xn
        clean.append(out["test_acc"])
        if mech == "laplace" and NOISE_PROPAGATION == "paper":
            c = dataclasses.replace(cfg, mechanism=mech, eps=float(eps_list[0]))
            data, _ = prepare(hg, c, seed=run, split=split, traced_eps=True)
            sw = engine_sweep(make_algorithm(hg.num_classes, c), data, [10_000 + run] * len(eps_list), rounds,
                              {"eps": [float(e) for e in eps_list]})
            for i, e in enumerate(eps_list):
                accs[e].append(float(sw.history["test_acc"][i, -1]))
            log(f"{name} sweep K={k} run={run} (vectorised over ε, compile {sw.compile_seconds:.1f}s run "
                f"{sw.run_seconds:.1f}s): " + ", ".join(f"{e}: {accs[e][-1]:.4f}" for e in eps_list))
            continue
        for eps in eps_list:
            c = dataclasses.replace(cfg, mechanism=mech, eps=float(eps))
            xn, _ = propagate(split, c, jax.random.PRNGKey(run))
            data = make_data(xn, split, idx)
            del xn
            out = train(data, hg.num_classes, c, jax.random.PRNGKey(10_000 + run))
            accs[eps].append(out["test_acc"])
            log(f"{name} sweep K={k} run={run} eps={eps}: test {out['test_acc']:.4f}")
    for e in eps_list:
        out_d["points"][str(e)] = {"runs": accs[e], "mean": ms(accs[e])[0], "std": ms(accs[e])[1]}
    out_d["no_noise"] = {"runs": clean, "mean": ms(clean)[0], "std": ms(clean)[1]}


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


def render(res, ks) -> str:
    lines = ["# FedHGL reproduction (Luo et al., ICDE 2025)", "",
             "Accuracy, mean (population std) over runs; **ours** beside the paper's. Each run re-partitions "
             "(label-Dirichlet β=1e4) and re-splits. News20 (Table III) is not available offline.", "",
             "Data notes: (1) DBLP4k / IMDB4k hyperedge counts: the paper's 22,051 / 7,338 are the raw "
             "edge_by_paper + edge_by_term (edge_by_director + edge_by_actor) lists; the authors' `clean_edge_list` "
             "then drops singletons and duplicates (ours: 6,242 / 2,810), and our |E*| and |v*| on the cleaned "
             "sets match Table II within 1–2 %, so the construction matches. (2) 1-hop hypergraphs keep the "
             "singleton {v} of an isolated node (DHG `from_graph_kHop`; the authors clean the graph's edges, not the "
             "hyperedges): CiteSeer 2,996 hyperedges = Table IV. (3) Facebook: DHG's copy has 85,501 edges "
             "(half of MUSAE's 171,002 rows), ours the full MUSAE graph, so 22,176 vs 22,407 hyperedges.", ""]
    main = res.get("main", {})
    for title, names, rows in (("Table III (hypergraphs)", HYPER, ROWS_HYPER + ("Global",)),
                               ("Table V (simple graphs → 1-hop hyperedges)", SIMPLE, ROWS_SIMPLE)):
        have = [n for n in names if n in main]
        if not have:
            continue
        lines += [f"## {title}", ""]
        hdr = "| Model | " + " | ".join(f"{n} K={k} ours / paper" for n in have for k in ks) + " |"
        lines += [hdr, "|" + "---|" * (1 + len(have) * len(ks))]
        for row in rows:
            cells = []
            for n in have:
                for j, k in enumerate(ks):
                    if row == "Global":
                        g = res.get("global", {}).get(n)
                        p = PAPER_GLOBAL.get(n)
                        cells.append((fmt(g["mean"], g["std"]) + " / " + (fmt(*p) if p else "–")) if (g and j == 0) else "")
                        continue
                    o = main[n].get(row, {}).get(str(k))
                    p = PAPER.get(row, {}).get(n, {}).get(k)
                    cells.append(f"{fmt(o['mean'], o['std']) if o else '–'} / {fmt(*p) if p else '–'}")
            lines.append(f"| {row} | " + " | ".join(cells) + " |")
        lines.append("")
    if res.get("stats"):
        lines += ["## Tables II / IV: cross-client hyperedges |E*| and unsafe nodes |v*| (mean over runs) vs paper", "",
                  "| dataset | hyperedges (cleaned) / paper | " + " | ".join(f"K={k} |E*| ours / paper | K={k} |v*| ours / paper" for k in ks) + " |",
                  "|" + "---|" * (2 + 2 * len(ks))]
        for n, st in res["stats"].items():
            cells = []
            for k in ks:
                s = st.get(str(k))
                p = PAPER_STATS.get(n, {}).get(k, ("–", "–"))
                cells += [f"{s['cross_edges']:.0f} / {p[0]}" if s else "–", f"{s['unsafe_nodes']:.0f} / {p[1]}" if s else "–"]
            lines.append(f"| {n} | {res['hyperedges'][n]} / {PAPER_HYPEREDGES.get(n, '–')} | " + " | ".join(cells) + " |")
        lines.append("")
    gaps = []
    for row, per_ds in PAPER.items():
        for n, per_k in per_ds.items():
            for k in ks:
                o = main.get(n, {}).get(row, {}).get(str(k))
                p = per_k.get(k)
                if o and p and abs(o["mean"] - p[0]) > 0.02:
                    why = GAP_REASON.get((n, ROW_SETTING.get(row, ("",))[0]), GAP_REASON.get(n, "unexplained"))
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
            lines += [f"**{n}** ({d['mechanism']}): no-noise HC ours {fmt(d['no_noise']['mean'], d['no_noise']['std'])}, "
                      f"paper line {PAPER_FIG3[n][2]:.4f}", "", "| ε | ours | paper |", "|---|---|---|"]
            for e, v in d["points"].items():
                pv = paper.get(float(e), paper.get(int(float(e)), None) if float(e).is_integer() else None)
                lines.append(f"| {e} | {fmt(v['mean'], v['std'])} | {pv if pv is not None else '–'} |")
            lines.append("")
    return "\n".join(lines)


def combine(stems, out_stem, ks) -> int:
    """Merge the result JSONs of several invocations (same schema) into one results file."""
    import json
    t0 = time.perf_counter()
    res, parts = {}, []
    for st in stems:
        d = json.loads((OUT / f"{st}.json").read_text())
        for key, val in d["results"].items():
            if isinstance(val, dict):
                for name, v in val.items():
                    res.setdefault(key, {})[name] = v
            else:
                res[key] = val
        parts.append({"stem": st, **d["provenance"]})
    config = {"combined_from": parts}
    payload = {"results": res, "paper": {"table": {r: {n: {str(k): v for k, v in d.items()} for n, d in t.items()}
                                                   for r, t in PAPER.items()},
                                         "global": PAPER_GLOBAL,
                                         "fig3": {n: {"mechanism": v[0], "points": {str(e): a for e, a in v[1].items()},
                                                      "hc_line": v[2]} for n, v in PAPER_FIG3.items()}},
               "provenance": provenance(t0, config)}
    write_results(OUT, out_stem, render(res, ks), payload)
    print(f"wrote {OUT / (out_stem + '.md')}")
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="CoraCA + Cora, K=3, 1 run, 3-point sweep (a few minutes)")
    ap.add_argument("--data-dir", default=None)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--runs-facebook", type=int, default=None, help="default: --runs")
    ap.add_argument("--datasets", default=",".join(HYPER + SIMPLE))
    ap.add_argument("--ks", default="3,6,9")
    ap.add_argument("--parts", default="main,sweep")
    ap.add_argument("--rounds", type=int, default=200)
    ap.add_argument("--sweep-datasets", default="coraca,dblp4k,cora,facebook")
    ap.add_argument("--swap-val-test", action="store_true",
                    help="authors' code compat: select on 40 %% and test on 20 %% (writes results_swapvaltest.*)")
    ap.add_argument("--noise-first-hop", action="store_true",
                    help="ablation: LDP noise reaches only the first hop, as in the authors' code (spec §9)")
    ap.add_argument("--stem", default=None, help="output file stem (default results / results_quick)")
    ap.add_argument("--combine", default=None,
                    help="comma-separated stems of earlier runs (e.g. a main and a sweep run) to merge into --stem "
                         "(default results); runs nothing else")
    args = ap.parse_args(argv)
    if args.combine:
        return combine(args.combine.split(","), args.stem or "results", [int(k) for k in args.ks.split(",")])
    global VAL_TEST, NOISE_PROPAGATION
    if args.noise_first_hop:
        NOISE_PROPAGATION = "first_hop"
    if args.swap_val_test:
        VAL_TEST = (0.4, 0.2)
    t0 = time.perf_counter()
    if args.quick:
        datasets, ks, runs, runs_fb = ["coraca", "cora"], [3], 1, 1
        sweep = {"coraca": [0.5, 1, 2]}
        stem = "results_quick"
    else:
        datasets = args.datasets.split(",")
        ks = [int(k) for k in args.ks.split(",")]
        runs, runs_fb = args.runs, (args.runs if args.runs_facebook is None else args.runs_facebook)
        sweep = {n: list(PAPER_FIG3[n][1]) for n in args.sweep_datasets.split(",") if n}
        stem = "results"
    if args.swap_val_test:
        stem = "results_swapvaltest" if not args.quick else "results_quick_swapvaltest"
    stem = args.stem or stem
    parts = args.parts.split(",")
    if args.noise_first_hop and not args.stem:
        stem += "_noisefirsthop"
    config = {"val_ratio": VAL_TEST[0], "test_ratio": VAL_TEST[1], "noise_propagation": NOISE_PROPAGATION, "datasets": datasets, "ks": ks, "runs": runs, "runs_facebook": runs_fb, "rounds": args.rounds,
              "global_rounds": 3 * args.rounds, "parts": parts, "sweep": sweep,
              "defaults": dataclasses.asdict(FedHGLConfig())}
    res = {"hyperedges": {}}

    def log(msg):
        print(f"[{time.perf_counter() - t0:7.1f}s] {msg}", flush=True)

    def save():
        payload = {"results": res, "paper": {"table": {r: {n: {str(k): v for k, v in d.items()} for n, d in t.items()}
                                                       for r, t in PAPER.items()},
                                             "global": PAPER_GLOBAL, "fig3": {n: {"mechanism": v[0], "points": {str(e): a for e, a in v[1].items()},
                                                                                   "hc_line": v[2]} for n, v in PAPER_FIG3.items()}},
                   "provenance": provenance(t0, config)}
        write_results(OUT, stem, render(res, ks), payload)

    for name in datasets:
        hg = load_hypergraph(name, args.data_dir)
        res["hyperedges"][name] = hg.num_edges
        r = runs_fb if name == "facebook" else runs
        if "main" in parts:
            run_main(hg, name, ks, r, args.rounds, res, log)
            if name in HYPER:
                run_global(hg, name, r, 3 * args.rounds, res, log)
            save()
        if "sweep" in parts and name in sweep:
            run_sweep(hg, name, sweep[name], r, args.rounds, res, log)
            save()
    save()
    log(f"done; wrote {OUT / (stem + '.md')}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
