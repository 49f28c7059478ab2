"""Build the results pages from the files the experiment scripts wrote.

* experiments/results/<system>/README.md: the paper's headline table with ours beside it
  (paper, ours ± sd over seeds, Δ, a one-sentence reason linking to the details) and the figures;
* experiments/results/README.md: the index (one summary line per system, then the benchmarks).

Nothing here is typed by hand except the choice of headline cells and the one-sentence reasons:
every number is read from experiments/results/*/*.json, the reproduction records under
experiments/results/<system>/records/ (systems on the one harness, experiments/harness.py) or
benchmarks/results/*.json.

    python experiments/make_index.py
"""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a script: the checkout's root on the path (fgl_jax, experiments)
    sys.path.insert(0, str(ROOT))
RES = ROOT / "experiments" / "results"
BENCH = ROOT / "benchmarks" / "results"


def _load(path: Path):
    return json.loads(path.read_text()) if path.exists() else None


def _bench(path: Path):
    """The measured numbers of a benchmark record (`fgl_jax.record/1`, validated), or None when absent."""
    from fgl_jax import records
    return records.read(path)["metrics"] if path.exists() else None


def _cells(system: str, cells) -> list[dict]:
    """The metrics of a system's committed full-run cells (records in RES/<system>/records/*_full.jsonl), in
    the cells' order; [] when the system has no records there."""
    from experiments import harness
    recs = harness.load(RES / system, quick=False)
    return [recs[c.id]["metrics"] for c in cells if c.id in recs]


def _fedhgl():
    """FedHGL's committed full run as {"results": ..., "paper": ...} drawn from its records (None when none)."""
    from experiments.fedhgl import paper
    return paper.results_payload(RES / "fedhgl", quick=False)


def _fedhgn():
    """FedHGN's committed full run as {"results": ..., "paper": ...} drawn from its records (None when none)."""
    from experiments.fedhgn import paper
    return paper.results_payload(RES / "fedhgn", quick=False)


def _lumos():
    """Lumos's committed full run as {"runs", "workload", "settings", "paper"} drawn from its records (None when none)."""
    from experiments.lumos import paper
    return paper.results_payload(RES / "lumos", quick=False)


def _hifgl_cells():
    """(baseline rows, Table 3 rows, Table 5 rows) of HiFGL's committed full run."""
    from experiments.hifgl import baselines, paper
    plan = paper.Plan.make(False)
    return (_cells("hifgl", baselines.row_cells(False)), _cells("hifgl", paper.table3_cells(plan)),
            _cells("hifgl", paper.table5_cells(plan)))


def _hifgl_code_options_reason(dataset: str) -> str:
    """The headline reason of a HiFGL-GCN row, from the code_options records of `dataset`: how far
    each of the authors' code's choices moves our protocol's number, alone and all together."""
    from experiments.hifgl import code_options
    cells = code_options.option_cells((dataset,))
    measured = _cells("hifgl", cells)
    got = {c.id.rsplit("/", 1)[1]: m for c, m in zip(cells, measured)} if len(measured) == len(cells) else {}
    link = "([code_options.md](code_options.md))"
    if not got:
        return f"the authors' code's choices, measured as options {link}"
    delta = {v: 100 * (m["mean"] - got["paper"]["mean"]) for v, m in got.items() if v != "paper"}
    alone = [delta[v] for v in ("select_test", "same_split", "authors_optim", "authors_norm")]
    every = 100 * got["authors_all"]["mean"]
    return (f"the authors' code's choices do not explain it: alone they move it by {min(alone):+.1f} to "
            f"{max(alone):+.1f} points (their GCN normalisation {delta['authors_norm']:+.1f}); all four together "
            f"give {every:.1f}, {every - 100 * cells[0].paper['paper']:+.1f} from the paper {link}")


def _pct(x):
    return "—" if x is None else f"{100 * x:.2f}"


def _row(table, setting, paper, ours, reason=""):
    return {"table": table, "setting": setting, "paper": paper, "ours": ours, "reason": reason}


# ---------------------------------------------------------------------------------------------
# adapters: one per system, from its own result schema to comparison rows
# ---------------------------------------------------------------------------------------------

def rows_hifgl():
    rows = []
    base, table3, table5 = _hifgl_cells()
    for r in base:
        paper = r["paper_table3"] if r["paper_table3"] is not None else r["paper_table4"]
        table = "Table 3" if r["paper_table3"] is not None else "Table 4"
        reason = ""
        if paper is not None and abs(r["mean"] - paper) > 0.02:
            reason = "baselines drop cross-silo edges; see hifgl/baselines.md (sensitivity study)"
            if r["mean"] > paper:
                reason = "above the paper: training details the paper leaves unstated; see hifgl/baselines.md"
            elif r["framework"] == "fedprox":
                reason = "FedProx = FedAvg with one local step per round; see hifgl/baselines.md"
        rows.append(_row(table, f"{r['dataset']} {r['framework']}-{r['model']}", paper, r["mean"], reason))
    for r in table3:
        rows.append(_row("Table 3", f"{r['dataset']} HiFGL-{r['model']}", r["paper"], r["mean"],
                         "our Global is also above the paper (gain matches)" if abs(r["mean"] - r["paper"]) > 0.02
                         else ""))
    for r in table5:  # the full run's depth study is on CiteSeer, whose Table 5 values the records carry
        gap = abs(r["acc"] - r["paper"]) > 0.02
        rows.append(_row("Table 5", f"citeseer HiFGL-GCN {r['layers']} layers", r["paper"], r["acc"],
                         "deep GCN without residuals: sensitive to init/optimiser details the paper omits" if gap else ""))
    return rows


def rows_fedhgl():
    d = _fedhgl()
    if not d:
        return []
    rows = []
    paper = d["paper"]["table"]
    main = d["results"]["main"]
    for method, per_ds in paper.items():
        for ds, per_k in per_ds.items():
            for k, (pm, _ps) in per_k.items():
                ours = main.get(ds, {}).get(method, {}).get(str(k), {}).get("mean")
                reason = "see fedhgl/results.md" if ours is not None and abs(ours - pm) > 0.02 else ""
                rows.append(_row("main table", f"{ds} K={k} {method}", pm, ours, reason))
    return rows


def rows_fedhgn():
    d = _fedhgn()
    if not d:
        return []
    rows = []
    for key, per_k in d["paper"]["main"].items():
        for k, (pm, _ps) in per_k.items():
            ds, split, method = key.split("|")  # paper keys "aifb|RE|fedhgn"; ours "aifb|RE|3|fedhgn"
            cell = d["results"]["main"].get(f"{ds}|{split}|{k}|{method}", {})
            ours = cell.get("mean")
            reason = ""
            if ours is not None and abs(ours - pm) > 2:
                reason = cell.get("reason") or "see fedhgn/results.md"
            rows.append(_row("Table 2", f"{key.replace('|', ' ')} K={k}", pm / 100, None if ours is None else ours / 100,
                             reason))
    for ds, (pm, _ps) in d["paper"].get("central", {}).items():
        ours = d["results"].get("central", {}).get(ds, {}).get("mean")
        reason = "see fedhgn/results.md" if ours is not None and abs(ours - pm) > 2 else ""
        rows.append(_row("Table 2", f"{ds} central", pm / 100, None if ours is None else ours / 100, reason))
    return rows


def rows_lumos():
    """Lumos reports relative gaps (%); compare ours (same definition) with the paper's."""
    d = _lumos()
    if not d:
        return []
    runs = d["runs"]
    rows = []
    for task, metric in (("node", "sup"), ("link", "link")):
        for ds in ("FB", "LFM"):
            for model in ("gcn", "gat"):
                # "lumos" = the paper's mechanism; "lumos_mmse" = + our (ε-private) shrinkage of the
                # recovered features, an option beyond the paper (lumos/noise_study.md)
                for variant, label in (("lumos", "Lumos"), ("lumos_mmse", "Lumos+MMSE")):
                    lum = runs.get(f"{ds}/{task}/{model}/{variant}", {}).get("test")
                    for other in ("central", "naive"):
                        ref = runs.get(f"{ds}/{task}/{model}/{other}", {}).get("test")
                        paper = d["paper"].get(f"{metric}_vs_{other}", {}).get(f"('{ds}', '{model}')")
                        if paper is None or lum is None or ref is None:
                            continue
                        ours = 100 * (lum - ref) / ref
                        reason = ""
                        if abs(ours - paper) > 2:
                            reason = ("LastFM's features are not available offline: degree one-hot stand-in, "
                                      "structure only" if ds == "LFM" else
                                      "the recovered one-bit features at ε = 2 are noisier than none; "
                                      "see lumos/noise_study.md")
                        rows.append(_row("relative gap %", f"{ds} {task} {model}: {label} vs {other}", paper / 100,
                                         ours / 100, reason))
    return rows


def _fedgc_runs() -> dict:
    """FedGC's committed full run: id -> run dict ("full/<dataset>/r<rate>/<variant>/s<seed>", ...) from its records."""
    from experiments.fedgc import paper
    return paper.runs(RES / "fedgc")


def rows_fedgc():
    """FedGC: the results-index rows its renderer derives from the full run's records (fractions)."""
    from experiments.fedgc import paper
    return [_row(r["table"], r["setting"], r["paper"], r["ours"], r["reason"]) for r in paper.index_rows(RES / "fedgc")]


def _generic(system: str):
    """Systems whose results.json carries a ready-made `comparison` list of rows."""
    d = _load(RES / system / "results.json")
    if not d or "comparison" not in d:
        return []
    return [_row(r.get("table", ""), r.get("setting", ""), r.get("paper"), r.get("ours"), r.get("reason", ""))
            for r in d["comparison"]]


ADAPTERS = {"hifgl": rows_hifgl, "lumos": rows_lumos, "fedhgn": rows_fedhgn,
            "fedgc": rows_fedgc, "fedhgl": rows_fedhgl}


def bench_lines():
    out = ["## Benchmarks", "", "Medians from the benchmark scripts (see each JSON for the machine and the load).", ""]
    fed = _bench(BENCH / "fedavg.json")
    if fed:
        out += ["### FedAvg-GCN on Cora (10 Louvain clients, 3 local steps, 100 rounds, eval every round)", "",
                "| clients | ms/round (ours) | compile s | peak RSS MB | published anchors |", "|---|---|---|---|---|"]
        for r in fed["rows"]:
            anchor = ("FedGraph (Ray) ≈ 23 ms/round; FederatedScope ≈ 140 ms/round; PyG simulators here ≈ 300 ms/round"
                      if r["clients"] == 10 else "")
            out.append(f"| {r['clients']} | {r['ms_per_round_median']:.1f} | {r['compile_s']:.1f} | "
                       f"{r['peak_rss_mb']:.0f} | {anchor} |")
        out.append("")
        out.append(f"Whole CLI process, 10 clients: {fed['cli_whole_process_s']:.1f} s (PyG simulators here ≈ 40 s).")
        if fed.get("sweep"):
            s = fed["sweep"]
            out.append(f"8-point sweep as one command: {s['one_command_s']:.1f} s vs 8 separate runs "
                       f"{s['separate_runs_s']:.1f} s ({s['speedup']:.2f}×).")
        out.append("")
    hif = _bench(BENCH / "hifgl.json")
    if hif:
        out += [f"### {hif.get('benchmark', 'HiFGL')}", "",
                "| silos | mode | T | ms/epoch (ours, CPU) | compile s | published anchor |", "|---|---|---|---|---|---|"]
        for r in hif.get("rows", []):
            anchor = hif.get("paper_anchor", "") if (r.get("mode") == "field" and r.get("T") == 1
                                                     and r.get("silos") == 5) else ""
            out.append(f"| {r.get('silos')} | {r.get('mode')} | {r.get('T')} | {r.get('ms_per_epoch_median', 0):.1f} | "
                       f"{r.get('compile_s', 0):.1f} | {anchor} |")
        if "secmp_over_plain" in hif:
            out.append(f"\nSecMP / plain cost: {hif['secmp_over_plain']:.2f}× (target ≤ {hif.get('targets', {}).get('secmp_over_plain', '—')}).")
        out.append("")
    sw = _bench(BENCH / "sweep.json")
    if sw:
        out += ["### Sweeps beyond the baselines", "",
                f"{sw['what']}: one command {sw['sweep_wall_seconds']:.1f} s (compile {sw['sweep_compile_seconds']:.1f} s) "
                f"vs 8 separate runs {sw['separate_runs_wall_seconds']:.1f} s = **{sw['speedup']:.2f}×**; the members "
                f"equal the separate runs (max |Δ test acc| {sw['max_abs_test_acc_difference']:.1e}). "
                f"Load average during the measurement {sw['loadavg_before'][0]:.1f} → {sw['loadavg_after'][0]:.1f}.", ""]
    targets = []
    for path in sorted(BENCH.glob("*.json")):
        d = _bench(path) or {}
        t = d.get("targets")
        if isinstance(t, dict) and path.stem not in ("fedavg", "hifgl"):
            targets.append(f"- {path.stem}: targets " + ", ".join(f"{k} = {v}" for k, v in t.items()))
    if targets:
        out += ["Targets recorded in the other benchmark files (results in the files):", ""] + targets + [""]
    out.append("All benchmark files: " + ", ".join(f"[{p.stem}](../../benchmarks/results/{p.name})"
                                                   for p in sorted(BENCH.glob("*.json"))))
    return out


def sweep_lines():
    """Links to every sweep written by `fgl-jax sweep --out experiments/results/sweeps/<name>`."""
    found = sorted((RES / "sweeps").glob("*/sweep.json")) if (RES / "sweeps").is_dir() else []
    if not found:
        return []
    out = ["## Sweeps", "", "| sweep | members | grid | best grid point (mean test acc at best val) | plot |",
           "|---|---|---|---|---|"]
    for path in found:
        d = _load(path)
        rel = path.parent.relative_to(RES)
        best = max(d["summary"], key=lambda s: s["best_test_mean"]) if d.get("summary") else None
        grid = {k: v for k, v in d["axes"].items()}
        point = "—" if best is None else (", ".join(f"{k}={best[k]}" for k in grid if k != "seed") +
                                          f": {100 * best['best_test_mean']:.2f} ± {100 * best['best_test_std']:.2f}")
        out.append(f"| [{d.get('title', rel)}]({rel}/sweep.md) | {len(d['rows'])} | {grid} | {point} | "
                   f"[sweep.png]({rel}/sweep.png) |")
    return out + [""]


def plot_lines():
    """Every figure the experiment scripts wrote (PNG), per system."""
    pngs = sorted(p for p in RES.glob("*/*.png"))
    if not pngs:
        return []
    return ["## Figures", ""] + [f"- [{p.relative_to(RES)}]({p.relative_to(RES)})" for p in pngs] + [""]


# ---------------------------------------------------------------------------------------------
# per-system pages: the paper's headline table, ours beside it
# ---------------------------------------------------------------------------------------------

def _hl(setting, paper, values=None, mean=None, sd=None, reason=""):
    """A headline row in percent: ours from per-seed `values` (mean ± population sd) or given."""
    import numpy as np
    if values is not None:
        values = [float(v) for v in values]
        mean, sd, n = float(np.mean(values)), float(np.std(values)), len(values)
    else:
        n = None
    return {"setting": setting, "paper": paper, "mean": mean, "sd": sd, "n": n, "reason": reason}


def headline_hifgl():
    rows = []
    base, table3, _ = _hifgl_cells()
    for r in table3:
        rows.append(_hl(f"{r['dataset']} HiFGL-{r['model'].upper()}", 100 * r["paper"], [100 * v for v in r["runs"]],
                        reason="above the paper as our Global-GCN is; the gain over Local matches "
                               "([baselines.md](baselines.md))"
                               + ("; " + _hifgl_code_options_reason(r["dataset"]) if r["model"] == "gcn" else "")))
    for r in base:
        if r["model"] == "gcn" and r["framework"] in ("local", "fedavg", "global") and r["paper_table3"] is not None:
            name = {"local": "Local", "fedavg": "FedAvg", "global": "Global"}[r["framework"]]
            rows.append(_hl(f"{r['dataset']} {name}-GCN", 100 * r["paper_table3"], [100 * v for v in r["runs"]],
                            reason="the federated baselines drop the cross-silo edges, most edges under the paper's "
                                   "random split ([baselines.md](baselines.md) has the sensitivity study)"
                            if r["framework"] != "global" else
                            "training details the paper leaves unstated ([baselines.md](baselines.md))"))
    return ("Table 3 (test accuracy %, 5 random silos, 5 seeds)", rows)


def _lumos_noise_reason(shrinkage: str = "row below") -> str:
    """The Facebook "vs central" reason, with the noise study's measurement in it: the paper's mechanism
    (`eps2`) against the same run with the neighbours' features replaced by the midpoint (`self_only`);
    `shrinkage` says where the shrinkage option's number for this backbone is."""
    from experiments import harness
    recs = harness.load(RES / "lumos", False, "noise_study/node/")
    got = {r["config"]["variant"]: r for r in recs.values()}
    if "eps2" not in got or "self_only" not in got:
        return "at ε = 2 the recovered one-bit neighbour features are noisier than none ([noise_study.md](noise_study.md))"
    a, b = (got[v]["metrics"]["best"]["best_test"] for v in ("self_only", "eps2"))
    return (f"at ε = 2 the recovered one-bit neighbour features (±C/2 ≈ ±8 per coordinate for a [0, 1] feature) "
            f"are worse than none: replacing them by the midpoint lifts Lumos from {b:.3f} to {a:.3f} (GCN, "
            f"{got['eps2']['config']['rounds']} epochs, seed 0, [noise_study.md](noise_study.md)), and our "
            f"ε-private shrinkage option ({shrinkage}) closes most of the gap")


def _lumos_shrinkage_where(runs: dict, epochs: dict, ds: str, model: str) -> str:
    """Where the shrinkage option's number for this backbone is: the headline row below when its seeds
    pair with the central baseline's, else the one cell there is (its gap vs central, seeds, epochs)."""
    mmse = runs.get(f"{ds}/node/{model}/lumos_mmse", {}).get("values")
    ref = runs.get(f"{ds}/node/{model}/central", {}).get("values")
    if not mmse or not ref:
        return "GCN row below"
    if len(mmse) == len(ref):
        return "row below"
    gap = 100 * (sum(mmse) / len(mmse) - sum(ref) / len(ref)) / (sum(ref) / len(ref))
    em, ec = epochs.get(f"{ds}/node/{model}/lumos_mmse"), epochs.get(f"{ds}/node/{model}/central")
    return (f"{model.upper()}: {gap:+.1f} % vs central from {len(mmse)} seed(s) at {em} epochs against the "
            f"{ec}-epoch central, [results.md](results.md)")


def headline_lumos():
    d = _lumos()
    if not d:
        return ("", [])
    runs, rows, epochs = d["runs"], [], d.get("epochs", {})
    for ds, dname in (("FB", "Facebook"), ("LFM", "LastFM")):
        for model in ("gcn", "gat"):
            lum = runs.get(f"{ds}/node/{model}/lumos", {}).get("values")
            for other in ("central", "naive"):
                ref = runs.get(f"{ds}/node/{model}/{other}", {}).get("values")
                paper = d["paper"].get(f"sup_vs_{other}", {}).get(f"('{ds}', '{model}')")
                if not lum or not ref or paper is None or len(lum) != len(ref):
                    continue
                gaps = [100 * (a - b) / b for a, b in zip(lum, ref)]  # seed by seed (same seeds, same split)
                if ds == "LFM":
                    reason = ("LastFM's real features are not available offline: a degree one-hot stand-in "
                              "([results.md](results.md))")
                elif other == "central":
                    reason = _lumos_noise_reason(_lumos_shrinkage_where(runs, epochs, ds, model))
                else:
                    mlp = runs.get(f"{ds}/node/mlp/central", {}).get("test")
                    reason = (f"the naive FedGNN reference is weak ({sum(ref) / len(ref):.3f} accuracy"
                              + (f", below the own-feature MLP's {mlp:.3f}" if mlp is not None else "")
                              + " in [results.md](results.md)), so this ratio magnifies every change of Lumos "
                              "and swings by the sd shown over seeds")
                rows.append(_hl(f"{dname} {model.upper()}: Lumos vs {other}{_ep(epochs, ds, model, other)}", paper,
                                gaps, reason=reason))
            mmse = runs.get(f"{ds}/node/{model}/lumos_mmse", {}).get("values")
            ref = runs.get(f"{ds}/node/{model}/central", {}).get("values")
            paper = d["paper"].get("sup_vs_central", {}).get(f"('{ds}', '{model}')")
            if ds == "FB" and mmse and ref and paper is not None and len(mmse) == len(ref):
                em, ec = epochs.get(f"{ds}/node/{model}/lumos_mmse"), epochs.get(f"{ds}/node/{model}/central")
                reason = ("an option beyond the paper ([noise_study.md](noise_study.md))" if em == ec else
                          f"an option beyond the paper, compared here at {em} epochs with a {ec}-epoch central "
                          "baseline: it was not re-run at the new epoch count (time budget)")
                rows.append(_hl(f"{dname} {model.upper()}: Lumos + our shrinkage option vs central"
                                f"{_ep(epochs, ds, model, 'central', 'lumos_mmse')}", paper,
                                [100 * (a - b) / b for a, b in zip(mmse, ref)], reason=reason))
    return ("node classification, relative accuracy gap % = 100·(Lumos − reference)/reference, ε = 2", rows)


def _ep(epochs: dict, ds: str, model: str, other: str, variant: str = "lumos") -> str:
    """ ", 300 epochs" (both runs' count), or ", 100 / 300 epochs" when the two runs differ; "" if unknown."""
    a, b = epochs.get(f"{ds}/node/{model}/{variant}"), epochs.get(f"{ds}/node/{model}/{other}")
    if a is None or b is None:
        return ""
    return f", {a} epochs" if a == b else f", {a} / {b} epochs"


def _fedhgn_official_code(ds: str, split: str, k: str) -> dict:
    """FedHGN test accuracies (%) from benchmarks/peers/fedhgn_official/results.json: "ours" / "authors" =
    the authors' code run here on fgl_jax's split / on theirs, "fgljax_authors" = fgl_jax's shipped config
    on their split, "quirk_authors" = the same with round1_align=code_quirk; only the lists the record holds."""
    rec = (_load(ROOT / "benchmarks" / "peers" / "fedhgn_official" / "results.json") or {}).get("metrics", {})
    keys = {"ours": ("official", f"{ds}/K{k}/ours/{split}/fedhgn"),
            "authors": ("official", f"{ds}/K{k}/authors/{split}/fedhgn"),
            "fgljax_authors": ("fgljax", f"{ds}/K{k}/authors/{split}/fedhgn/configs"),
            "quirk_authors": ("fgljax", f"{ds}/K{k}/authors/{split}/fedhgn/code_quirk")}
    return {name: [100 * v for v in rec[src][key].values()] for name, (src, key) in keys.items()
            if key in rec.get(src, {})}


def _seeds_each(runs: dict) -> str:
    """'5 seeds each', or 'at least 3 seeds each' when the lists differ in length."""
    n = sorted({len(v) for v in runs.values()})
    return f"{n[0]} seeds each" if len(n) == 1 else f"at least {n[0]} seeds each"


def _fedhgn_reason(ds: str, split: str, k: str, paper: float) -> str:
    if ds == "mutag":
        # fewer than 3 seeds explain nothing: such lists are left out
        oc = {name: v for name, v in _fedhgn_official_code(ds, split, k).items() if len(v) >= 3}
        quirk = oc.pop("quirk_authors", None)
        if "authors" in oc and "fgljax_authors" in oc:
            d = {name: sum(v) / len(v) - paper for name, v in oc.items()}
            # fgl_jax's default more than 2 points from the authors' code on one split: the authors' round-1
            # alignment pool (the one documented difference of the configs) is what to quote beside it
            q = (f"; with the authors' round-1 pool (round1_align=code_quirk) fgl_jax gives "
                 f"{sum(quirk) / len(quirk) - paper:+.1f}" if quirk and abs(d["fgljax_authors"] - d["authors"]) > 2 else "")
            same = len({len(v) for v in oc.values()}) == 1     # one seed count for all: say it once at the end
            n = {name: "" if same else f" ({len(v)} seeds)" for name, v in oc.items()}
            ours = (f"; on ours the authors' code gives {d['ours']:+.1f}{n['ours']}" if "ours" in oc else "")
            return (f"on the authors' own split fgl_jax gives {d['fgljax_authors']:+.1f} points{n['fgljax_authors']} "
                    f"and the authors' code {d['authors']:+.1f}{n['authors']} from the paper{q}{ours} "
                    f"({_seeds_each(oc) + ', ' if same else ''}[official_code.md](official_code.md))")
        return "MUTAG's accuracies sit near its majority-class floor, ours and the paper's ([results.md](results.md))"
    init = (_load(RES / "fedhgn" / "results_official_init_RE3.json") or {}).get("summary", {}).get("all")
    if (split, k) == ("RE", "3") and init:
        return (f"from the official code's initial parameters we match the official code, whose {init['n']}-seed mean "
                f"({init['mean']:.1f}) is {paper - init['mean']:.1f} under the paper's 5 seeds "
                "([results_official_init_RE3.md](results_official_init_RE3.md))")
    es = ((_load(RES / "fedhgn" / "results_official_es.json") or {}).get("results", {}).get("RET3"))
    if (split, k) == ("RET", "3") and es:
        # the paper's protocol is this same 10-round patience, so the patience is not the reason by itself:
        # the measured difference is that validation on ~28 nodes picks rounds before our model's later level
        return (f"same 10-round patience as the paper; on the authors' split it selects {es['patience10']['mean']:.1f}, "
                f"the best-validation round overall {es['best_val_overall']['mean']:.1f}, while test accuracy later in "
                f"training averages {es['mean_test_second_half']['mean']:.1f}: our model reaches the paper's level after "
                "the round that selection on ~28 validation nodes picks "
                "([results_official_es.md](results_official_es.md))")
    off = ((_load(RES / "fedhgn" / "results_official_split.json") or {}).get("results", {})
           .get(f"{split}{k}", {}).get("fedhgn"))
    if off:
        return (f"our regenerated split: on the authors' split file this cell gives {off['mean']:.1f} ± {off['std']:.1f} "
                "([results_official_split.md](results_official_split.md))")
    return "see [results.md](results.md)"



def headline_fedhgn():
    d = _fedhgn()
    if not d:
        return ("", [])
    rows = []
    floor = d["results"].get("majority", {})
    for key, per_k in d["paper"]["main"].items():
        ds, split, method = key.split("|")
        if method != "fedhgn":
            continue
        for k, (pm, _ps) in per_k.items():
            cell = d["results"]["main"].get(f"{ds}|{split}|{k}|{method}", {})
            if "per_seed" not in cell:
                continue
            setting = f"{ds} {split} K={k}"
            reason = _fedhgn_reason(ds, split, k, pm)
            rows.append(_hl(setting, pm, cell["per_seed"], reason=reason))
    for ds, (pm, _ps) in d["paper"].get("central", {}).items():
        cell = d["results"].get("central", {}).get(ds, {})
        if "per_seed" in cell:
            rows.append(_hl(f"{ds} Central", pm, cell["per_seed"], reason="see [results.md](results.md)"))
    return ("Table 2, FedHGN rows (weighted test accuracy %, 5 seeds; our AIFB splits regenerated, "
            "the authors' split files in [results_official_split.md](results_official_split.md))", rows)


def _sd(v):
    import numpy as np
    return float(np.std(v))


def _note(path: Path, prefix: str) -> str:
    """The reason a result file gives for a cell (its line `- <prefix>: ... — reason`), first clause only."""
    if not path.exists():
        return ""
    for line in path.read_text().splitlines():
        if line.startswith(f"- {prefix}:") and " — " in line:
            return line.split(" — ", 1)[1].split(";")[0].rstrip(".")
    return ""


def headline_fedgc():
    import collections
    from experiments.fedgc.cells import PAPER_T1 as t1, PAPER_T2 as t2
    runs = _fedgc_runs()
    if not runs:
        return ("", [])
    from experiments.fedgc.tables import test_selected
    acc = collections.defaultdict(list)
    acc_test = collections.defaultdict(list)  # the same runs under the code's test-based selection
    for r in runs.values():
        parts = r.get("id", "").split("/")
        if len(parts) == 5 and parts[0] == "full" and "test_acc" in r and re.fullmatch(r"r[0-9.]+", parts[2]):
            acc[(parts[1], float(parts[2][1:]), parts[3])].append(100 * r["test_acc"])
            t = test_selected(r)
            if t is not None:
                acc_test[(parts[1], float(parts[2][1:]), parts[3])].append(100 * t)
    rows = []
    for (ds, rate), paper in sorted(t1.items(), key=lambda kv: (kv[0][0] != "cora", kv[0][1])):
        v = acc.get((ds, rate, "ibfs"))
        if v:
            rows.append(_hl(f"Table 1: {ds} rate {rate} FedGC", paper, v,
                            reason="validation-selected; under the code's test-based selection the same "
                                   "configuration is within 1.3 points ([results_pp2000.md](results_pp2000.md))"))
    names = {"noib": "FedGC† (no IB)", "pl": "PL", "reg": "Reg", "ldp": "LDP"}
    for ds in ("cora", "citeseer"):
        for var, name in names.items():
            v = acc.get((ds, 0.5, var))
            key = "noib_acc" if var == "noib" else f"{var}_acc"
            paper = t2.get(ds, {}).get(key)
            if v and paper is not None:
                t = acc_test.get((ds, 0.5, var), [])
                seeds = "one seed" if len(v) == 1 else f"sd {_sd(v):.1f} over {len(v)} seeds"
                both = (f"; the code's test-based selection on the same runs gives {sum(t) / len(t):.1f}"
                        if len(t) == len(v) else "")
                rows.append(_hl(f"Table 2: {ds} {name} accuracy", paper, v,
                                reason=f"{seeds}{both}; Laplace(0.2) noise swamps the per-client gradients and the "
                                       "paper's LDP mechanism is not in its code ([results.md](results.md))"
                                if var == "ldp" else f"{seeds}{both}; see [results.md](results.md)"))
    return ("test accuracy % of a GCN trained on the condensed graph G' (our default configuration: IB "
            "encoder lr 0.01 and a sparse A' init; mean ± sd over the seeds run)", rows)


def headline_fedhgl():
    d = _fedhgl()
    if not d:
        return ("", [])
    rows = []
    paper = d["paper"]["table"].get("FedHGL w/ HC", {})
    main = d["results"]["main"]
    for ds, per_k in paper.items():
        for k, (pm, _ps) in per_k.items():
            cell = main.get(ds, {}).get("FedHGL w/ HC", {}).get(str(k), {})
            if "runs" in cell:
                note = _note(RES / "fedhgl" / "results.md", f"{ds} K={k} FedHGL w/ HC")
                rows.append(_hl(f"{ds} K={k}", 100 * pm, [100 * v for v in cell["runs"]],
                                reason=f"{note + ' ' if note else ''}([results.md](results.md))"))
    return ("main table, FedHGL with hyperedge completion (test accuracy %, 5 seeds)", rows)


def figure_fedhgl() -> None:
    """The paper's Figure 3 (accuracy against the LDP budget, with the noise-free HC line) and ours on the
    same axes: the paper's points from the numbers its reproduce script records, ours from the ε sweep."""
    d = _fedhgl()
    fig3 = (d or {}).get("paper", {}).get("fig3")
    sweep = (d or {}).get("results", {}).get("sweep")
    if not fig3 or not sweep:
        return
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    names = [ds for ds in fig3 if ds in sweep]
    fig, axes = plt.subplots(1, len(names), figsize=(3.3 * len(names), 2.9), squeeze=False)
    for ax, ds in zip(axes[0], names):
        paper, ours = fig3[ds], sweep[ds]
        xs = sorted(paper["points"], key=float)
        ax.plot([float(x) for x in xs], [100 * paper["points"][x] for x in xs], "o--", color="0.4", label="paper")
        ax.axhline(100 * paper["hc_line"], color="0.4", lw=0.8, ls=":", label="paper, no noise")
        xo = sorted(ours["points"], key=float)
        ax.errorbar([float(x) for x in xo], [100 * ours["points"][x]["mean"] for x in xo],
                    yerr=[100 * ours["points"][x]["std"] for x in xo], fmt="o-", capsize=2, label="ours")
        ax.set(title=f"{ds} ({paper.get('mechanism', '')})", xlabel="ε per attribute", ylabel="test accuracy %")
        ax.grid(alpha=0.3)
    axes[0][0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(RES / "fedhgl" / "figure3_paper_vs_ours.png", dpi=80)
    plt.close(fig)


HEADLINES = {"hifgl": headline_hifgl, "lumos": headline_lumos, "fedhgn": headline_fedhgn,
             "fedgc": headline_fedgc, "fedhgl": headline_fedhgl}
TITLES = {"hifgl": "HiFGL (KDD 2024)", "lumos": "Lumos (ICDE 2023)", "fedhgn": "FedHGN (IJCAI 2023)",
          "fedgc": "FedGC (AAAI 2025)", "fedhgl": "FedHGL (ICDE 2025)"}
# what each kept file holds (a file no page links to is not kept)
FILES = {
    "hifgl": {"hifgl.md": "HiFGL's own rows, silo-count and depth studies, leakage (Tables 2-5, Figures 4-5)",
              "baselines.md": "Tables 3-4 baseline rows with a sensitivity study of the gaps",
              "table6.md": "Table 6, hidden size (the paper's PubMed is not available offline)",
              "code_options.md": "the authors' code's choices (test-accuracy checkpoint, same-split message passing, lr, GCN normalisation) measured one at a time and together",
              "hifgl_quick.md": "the same tables at `--quick` settings (what CI runs)"},
    "lumos": {"results.md": "every table: workload trimming (Fig. 7), ε sweep, ablations, messages",
              "noise_study.md": "why the recovered features at ε = 2 hurt, and the shrinkage option",
              "ldp_budget.md": "the realised ε per (sender, recipient) pair",
              "diagnostics.md": "Facebook without LDP noise (ε = ∞)",
              "results_quick.md": "`--quick` settings (what CI runs)"},
    "fedhgn": {"results.md": "every AIFB and MUTAG cell with the reason for each gap",
               "results_official_split.md": "AIFB on the authors' own split files",
               "results_official_init_RE3.md": "RE K=3 trained from the official code's initial parameters",
               "results_official_es.md": "the early-stopping diagnostic",
               "results_quick.md": "`--quick` settings (what CI runs)"},
    "fedgc": {"results.md": "every table (1-3, ablation, γ, attack, seeds, synthetic) with the protocol",
              "results_pp2000.md": "the same cells under the official code's test-based choices",
              "results_quick.md": "`--quick` settings (what CI runs)",
              "results_mia_seeds.md": "earlier 500-round runs without the L2 term, 3 seeds (cited by results.md)",
              "results_paperprot.md": "earlier 500-round runs with test-based selection (cited by results.md)",
              "results_ablation.md": "earlier 500-round ablation (cited by results.md)"},
    "fedhgl": {"results.md": "the main table, hyperedge statistics and the ε sweep",
               "results_quick.md": "`--quick` settings (what CI runs)"},
}


FIGURE_CAPTIONS = {
    "figure3_paper_vs_ours.png": "Figure 3, the paper's points (grey) and ours (blue, mean ± sd over runs), 6 clients: "
                                 "the authors' code perturbs each foreign node per receiving client and keeps 2nd-hop "
                                 "inputs clean, ours propagates the noise as Algorithm 2 states "
                                 "([results.md](results.md) lists every point).",
}


def _fmt_row(r):
    ours = "—" if r["mean"] is None else (f"{r['mean']:.1f} ± {r['sd']:.1f}" + (f" ({r['n']})" if r["n"] else ""))
    if r["paper"] is None or r["mean"] is None:
        return f"| {r['setting']} | — | {ours} | — | |"
    delta = r["mean"] - r["paper"]
    reason = r["reason"] if abs(delta) > 2 else ""
    return f"| {r['setting']} | {r['paper']:.1f} | {ours} | {delta:+.1f} | {reason} |"


def system_page(system: str) -> tuple[str, list[dict]]:
    caption, rows = HEADLINES[system]()
    folder = RES / system
    on_records = (folder / "records").is_dir()
    source = "the records (one per paper cell) under records/" if on_records else "the JSON files beside this page"
    L = [f"# {TITLES[system]}: results", "",
         f"Reproduce: `fgl-jax reproduce {system}` (`--quick` for the small settings CI runs). What the paper does, "
         f"which code implements it and every documented difference: [the {TITLES[system].split()[0]} page]"
         f"(../../../docs/systems/{system}.md). Generated by `python experiments/make_index.py` from {source}.", "",
         f"## Headline: {caption}", "",
         "Ours: mean ± sd over seeds (number of seeds). Δ = ours − paper, in points; a reason where |Δ| > 2.", "",
         "| setting | paper | ours | Δ | reason |", "|---|---|---|---|---|"]
    L += [_fmt_row(r) for r in rows] + [""]
    pngs = sorted(p.name for p in folder.glob("*.png") if "quick" not in p.name)
    if pngs:
        L += ["## Figures", ""]
        for p in pngs:
            L += [f"![{p}]({p})", "", FIGURE_CAPTIONS.get(p, f"`{p}`, written by `fgl-jax reproduce {system}`."), ""]
    L += ["## Files", ""] + [f"- [{name}]({name}): {what}" for name, what in FILES[system].items()
                             if (folder / name).exists()]
    # every other table kept here is one results.md merges or cites: linked, so nothing is orphaned
    rest = sorted(p.name for p in folder.glob("*.md") if p.name not in FILES[system] and p.name != "README.md")
    if rest:
        L.append("- runs that results.md merges or cites: " + ", ".join(f"[{n}]({n})" for n in rest))
    # on records, tables of separate diagnostic scripts may still keep their own .json (FedHGN's official-split runs)
    beside = sorted(f"`{p.stem}.md`" for p in folder.glob("*.json") if (folder / f"{p.stem}.md").exists())
    L += ["", ("Each `.md` table is rendered from records/ (`fgl_jax.record/1`: the cell, its resolved config, "
               "seeds, metrics and provenance)" + (f", except {', '.join(beside)}: a `.json` beside each holds its "
                                                  "numbers, the command, config, versions and machine." if beside else ".")
               ) if on_records else "Each `.md` table has a `.json` beside it with the "
          "same numbers, the command, config, versions and machine.", ""]
    return "\n".join(L), rows


README = ROOT / "README.md"
COMMANDS = {"hifgl": "fgl-jax hifgl --dataset cora", "lumos": "fgl-jax lumos --dataset facebook",
            "fedhgn": "fgl-jax fedhgn --dataset aifb --split RE --clients 3", "fedgc": "fgl-jax fedgc --dataset cora",
            "fedhgl": "fgl-jax fedhgl --dataset coraca --clients 6"}
BEGIN, END = "<!-- systems table: written by python experiments/make_index.py from the result files -->", \
    "<!-- end of systems table -->"


def readme_table(pages: dict) -> list[str]:
    """The README's systems table: the first headline cell of each paper (not a chosen one) and the count of
    headline cells within 2 points."""
    out = [BEGIN, "| system | paper | run it | headline, first cell: ours vs paper | cells within 2 points | details |",
           "|---|---|---|---|---|---|"]
    for system, rows in pages.items():
        name, venue = TITLES[system].split(" (")
        first = rows[0] if rows else None
        cell = "—" if first is None else f"{first['setting']}: {first['mean']:.1f} ± {first['sd']:.1f} vs {first['paper']:.1f}"
        ok = [r for r in rows if r["paper"] is not None and r["mean"] is not None]
        within = sum(abs(r["mean"] - r["paper"]) <= 2 for r in ok)
        out.append(f"| {name} | {venue.rstrip(')')} | `{COMMANDS[system]}` | {cell} | {within} of {len(ok)} | "
                   f"[results](experiments/results/{system}/README.md), [docs](docs/systems/{system}.md) |")
    return out + [END]


def main() -> int:
    lines = ["# Results index", "",
             "Each paper's headline table beside ours is on its page; every number there is read from the JSON "
             "files the experiment scripts wrote (`python experiments/make_index.py` builds these pages). "
             "Δ = ours − paper in points.", "",
             "Headline: the paper's main table (the system page). All: every paper cell the result files compare "
             "with, including baselines, ablations and sweeps (the tables linked from each page).", "",
             "| system | headline cells | within 2 points | median Δ | all cells | within 2 points | page |",
             "|---|---|---|---|---|---|---|"]
    figure_fedhgl()
    pages = {}
    for system in HEADLINES:
        text, rows = system_page(system)
        pages[system] = rows
        (RES / system / "README.md").write_text(text)
        deltas = sorted(r["mean"] - r["paper"] for r in rows if r["paper"] is not None and r["mean"] is not None)
        within = sum(abs(x) <= 2 for x in deltas)
        med = deltas[len(deltas) // 2] if deltas else float("nan")
        every = [100 * (r["ours"] - r["paper"]) for r in ADAPTERS[system]()
                 if r["paper"] is not None and r["ours"] is not None]
        lines.append(f"| {TITLES[system]} | {len(deltas)} | {within} | {med:+.1f} | {len(every)} | "
                     f"{sum(abs(x) <= 2 for x in every)} | [{system}/README.md]({system}/README.md) |")
    lines.append("")
    lines += sweep_lines()
    lines += bench_lines()
    (RES / "README.md").write_text("\n".join(lines) + "\n")
    text = README.read_text()
    if BEGIN in text and END in text:
        i, j = text.index(BEGIN), text.index(END) + len(END)
        README.write_text(text[:i] + "\n".join(readme_table(pages)) + text[j:])
    print(f"wrote {RES / 'README.md'} and the five system pages")
    return 0


if __name__ == "__main__":
    sys.exit(main())
