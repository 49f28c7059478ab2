"""Reproduce FedHGN's tables (Fu & King, IJCAI 2023) on the datasets available offline.

    python experiments/fedhgn/reproduce.py [--quick] [--data-dir ../shared/data]
        [--parts main,ablation,sweeps] [--datasets aifb,mutag]

Protocol (spec fedhgn.md §3): RGCN-like backbone (private N(0,1) embeddings, weight-free mean
layer, relation-weighted layer, ReLU + Linear), d = 64, B = 20, lambda = 0.5, E = 3 full-batch
plain-SGD steps (lr 0.1) per round, C = 1, early stopping with patience 10 on the weighted
validation accuracy (FL max 1000 rounds; Local/Central one step per "epoch", max 6000),
weighted test accuracy at the best round, seeds 1000..5000 (vmapped, one compile), mean +-
population std (ddof 0). Splits RE / RET with K+2 groups, split seed 12345, reverse edges added
per client. Parts:

* main     : Tables 3/6/7 on AIFB and MUTAG (BGS: triples not available offline), RE and RET,
             K = 3, 5, 10, Local / FedAvg / FedProx / FedHGN, Central; majority-class floor.
* ablation : Table 4 on MUTAG-RE K = 5, 10: SWD variants B, C, B+C without CA, FedAvg, FedHGN.
* sweeps   : Figure 4 on AIFB K = 3 (RE and RET): accuracy vs B and vs lambda; and the round-1
             pool diagnostic (zeros / skip / official code quirk at lambda = 0.5 and 5).

Results are written after every setting (results.json / results.md; --quick: results_quick.*), so a partial run leaves
a valid partial table.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from experiments.common import RESULTS, provenance, write_results  # noqa: E402
from fgl_jax.systems.fedhgn import FedHGNConfig, hetero_fed_data, majority_accuracy, prepare_clients, train  # noqa: E402

OUT = RESULTS / "fedhgn"
SEEDS = [1000, 2000, 3000, 4000, 5000]
KS = (3, 5, 10)
METHODS = ("local", "fedavg", "fedprox", "fedhgn")
# Paper Tables 3/6/7: (dataset, split, method) -> {K: (mean, std)}; Central per dataset.
PAPER = {
    ("aifb", "RE", "local"): {3: (74.77, 5.22), 5: (71.30, 4.30), 10: (55.08, 1.09)},
    ("aifb", "RE", "fedavg"): {3: (74.02, 3.09), 5: (65.18, 3.59), 10: (54.95, 1.42)},
    ("aifb", "RE", "fedprox"): {3: (72.34, 3.37), 5: (65.29, 5.43), 10: (53.38, 2.79)},
    ("aifb", "RE", "fedhgn"): {3: (81.87, 2.33), 5: (72.94, 3.27), 10: (59.32, 1.42)},
    ("aifb", "RET", "local"): {3: (76.11, 3.58), 5: (65.89, 2.29), 10: (59.71, 3.06)},
    ("aifb", "RET", "fedavg"): {3: (80.00, 1.72), 5: (66.56, 3.47), 10: (59.59, 3.03)},
    ("aifb", "RET", "fedprox"): {3: (80.93, 2.78), 5: (66.00, 2.95), 10: (60.99, 1.95)},
    ("aifb", "RET", "fedhgn"): {3: (86.55, 2.53), 5: (70.67, 2.42), 10: (66.76, 3.22)},
    ("mutag", "RE", "local"): {3: (63.53, 1.77), 5: (65.06, 1.28), 10: (64.88, 1.12)},
    ("mutag", "RE", "fedavg"): {3: (64.42, 1.18), 5: (65.06, 0.34), 10: (65.47, 0.74)},
    ("mutag", "RE", "fedprox"): {3: (66.08, 3.46), 5: (65.59, 0.69), 10: (65.62, 0.76)},
    ("mutag", "RE", "fedhgn"): {3: (67.06, 1.26), 5: (67.87, 0.83), 10: (65.59, 0.86)},
    ("mutag", "RET", "local"): {3: (63.24, 0.62), 5: (64.78, 0.89), 10: (64.18, 3.13)},
    ("mutag", "RET", "fedavg"): {3: (64.61, 1.33), 5: (66.04, 0.11), 10: (66.28, 0.15)},
    ("mutag", "RET", "fedprox"): {3: (65.30, 2.45), 5: (65.92, 0.29), 10: (66.13, 0.06)},
    ("mutag", "RET", "fedhgn"): {3: (65.98, 2.86), 5: (66.21, 0.40), 10: (66.21, 0.12)},
}
PAPER_CENTRAL = {"aifb": (87.78, 2.22), "mutag": (68.24, 3.79)}
# Table 4 (MUTAG-RE): variant -> {K: (mean, std)}
PAPER_ABL = {"abl_B": {5: (63.18, 2.73), 10: (60.59, 1.28)}, "abl_C": {5: (65.88, 0.46), 10: (61.26, 1.33)},
             "abl_BC": {5: (65.29, 0.93), 10: (62.83, 3.13)}, "fedavg": {5: (65.06, 0.34), 10: (65.47, 0.74)},
             "fedhgn": {5: (67.87, 0.83), 10: (65.59, 0.86)}}
ABL_NAMES = {"abl_B": "B (no CA)", "abl_C": "C (no CA)", "abl_BC": "B+C (no CA)", "fedavg": "– (FedAvg)",
             "fedhgn": "B + CA (FedHGN)"}


def _z(rec, paper):
    n = len(rec.get("per_seed", [])) or 5
    se = float(np.sqrt(rec["std"] ** 2 / n + paper[1] ** 2 / 5)) or 1e-9
    return (rec["mean"] - paper[0]) / se, n


def _official(ds, split, K, method, stem="results_official_split"):
    """Our result on the authors' split file (experiments/fedhgn/official_split.py), if measured
    (method None: the whole record of the setting, e.g. the early-stopping diagnostic)."""
    f = OUT / f"{stem}.json"
    if not f.exists() or ds != "aifb":
        return None
    rec = json.loads(f.read_text())["results"].get(f"{split}{K}")
    return rec if method is None or rec is None else rec.get(method)


def _official_init(split, K):
    """Summary of experiments/fedhgn/official_init.py for this AIFB setting, if measured."""
    f = OUT / f"results_official_init_{split}{K}.json"
    return json.loads(f.read_text())["summary"] if f.exists() else None


def gap_reason(ds, split, K, method, rec, paper, floor, local=None):
    """One line on why |ours - paper| > 2 points (None when within 2). rec: our result record;
    paper: (mean, std) over the paper's 5 seeds; floor: majority-class accuracy of the split."""
    if rec is None or abs(rec["mean"] - paper[0]) <= 2:
        return None
    z, n = _z(rec, paper)
    if abs(z) < 2:
        return f"seed noise: the gap is {abs(z):.1f} standard errors of the two {n}- and 5-seed means"
    if ds == "mutag":
        best = int(np.median(rec.get("best_round", [0]))) if rec.get("best_round") else None
        return (f"{abs(z):.1f} SE; MUTAG's majority floor is {floor:.1f}: ours is {rec['mean'] - floor:+.1f} and the "
                f"paper {paper[0] - floor:+.1f} points from it (1 test compound = 1.5 points per client)"
                + (f"; median best-validation round {best}" if best and best > 0 else ""))
    side = "above" if z > 0 else "below"
    off = _official(ds, split, K, method)
    if off is not None:
        oz = _z(off, paper)[0]
        same = abs(off["mean"] - paper[0]) <= 2 or abs(oz) < 2
        note = (f"{side} by {abs(z):.1f} SE; on the authors' own split file {off['mean']:.2f}±{off['std']:.2f} "
                f"(results_official_split.md): " + ("matches the paper, so the regenerated split explains the gap"
                                                    if same else f"still {off['mean'] - paper[0]:+.1f} points "
                                                    f"({abs(oz):.1f} SE), so the split does not explain it"))
        es = _official(ds, split, K, None, stem="results_official_es")
        if es is not None and not same and method == "fedhgn":
            late, orc = es["mean_test_second_half"], es["max_test_oracle"]
            note += (f"; trained on without stopping (results_official_es.md) the test accuracy averages "
                     f"{late['mean']:.2f} over rounds 151-300 (best-test oracle {orc['mean']:.2f}): "
                     + ("the 10-round patience stops before the paper's level"
                        if abs(late["mean"] - paper[0]) <= 2 else "below the paper even without early stopping"))
        init = _official_init(split, K) if method == "fedhgn" and not same else None
        if init is not None:
            a, o, d = init["all"], init["none"], init["all_minus_none"]
            note += (f"; the official code's own initial parameters trained by fgl_jax (same final test accuracy as "
                     f"the official code's own runs, results_official_init_{split}{K}.md) give {a['mean']:.2f}±{a['std']:.2f} "
                     f"over {a['n']} seeds, so the paper's 5 seeds are a favourable draw of the official code; our own "
                     f"init gives {o['mean']:.2f} over {o['n']} seeds ({d['diff']:+.2f} for the official init, SE {d['se']:.2f})")
        return note
    if method in ("local",):
        return f"{side} by {abs(z):.1f} SE: regenerated split/validation carve-out (NumPy, seed 12345; official files unused)"
    if local is not None and local[0] is not None:
        lz = _z(*local)[0]
        split_note = ("Local on this split matches the paper (|z| < 2), so the regenerated split alone does not "
                      "explain it" if abs(lz) < 2 or abs(local[0]["mean"] - local[1][0]) <= 2 else
                      f"Local on this split is off too (z = {lz:.1f}): the regenerated split contributes")
    else:
        split_note = "regenerated split (NumPy, seed 12345)"
    return (f"{side} by {abs(z):.1f} SE; {split_note}; FL runs early-stop after ~10-20 rounds "
            f"(28 validation nodes per client)")


def _fmt(ms):
    return "–" if ms is None else f"{ms[0]:.2f}±{ms[1]:.2f}"


def _cell(r):
    """mean±std of a result record, with its seed count when it is not the paper's 5, and the
    number of seeds whose training diverged (scored on their rounds before the NaN)."""
    if not r:
        return "–"
    n = len(r.get("per_seed", [])) or 5
    out = _fmt((r["mean"], r["std"])) + ("" if n == 5 else f" ({n} seeds)")
    return out + (f" ({r['diverged_seeds']} diverged)" if r.get("diverged_seeds") else "")


class Runner:
    def __init__(self, args):
        self.args = args
        self.cache = {}
        self.results = {"main": {}, "central": {}, "majority": {}, "ablation": {}, "sweep_B": {}, "sweep_lambda": {},
                        "round1": {}, "timing": {}}
        self.t0 = time.perf_counter()

    def data(self, ds, split, K):
        key = (ds, split, K)
        if key not in self.cache:
            graphs, central = prepare_clients(ds, split, K, self.args.data_dir)
            if split == "central":
                graphs = [central]
            self.cache[key] = (hetero_fed_data(graphs), majority_accuracy(graphs))
        return self.cache[key]

    def run(self, ds, split, K, method, **over):
        steps = 1 if method in ("local", "central") else 3
        cfg = FedHGNConfig(method=method, local_steps=steps, **over)
        data, maj = self.data(ds, "central" if method == "central" else split, K)
        # Local/Central: one full-batch step per epoch, max 6000 epochs (official configs.yaml)
        max_rounds = self.args.max_rounds if steps == 3 else 6 * self.args.max_rounds
        t = time.perf_counter()
        # a diverging seed (λ = 50: lr*2λ = 10 > 2) is scored on its rounds before the NaN, as the
        # official loop's best-validation checkpoint would be; the count is recorded
        rs = train(cfg, data, self.seeds, max_rounds=max_rounds, patience=10, chunk=self.args.chunk,
                   on_nonfinite="stop")
        acc = np.array([100 * r.test_acc for r in rs])
        rec = {"mean": float(acc.mean()), "std": float(acc.std()), "per_seed": acc.tolist(),
               "rounds_run": [r.rounds_run for r in rs], "best_round": [r.best_round for r in rs],
               "ms_per_round": 1000 * rs[0].seconds_per_round, "compile_s": rs[0].compile_seconds,
               "diverged_seeds": sum(r.diverged for r in rs),
               "wall_s": time.perf_counter() - t}
        print(f"{ds} {split} K={K} {method} {over or ''}: {rec['mean']:.2f}±{rec['std']:.2f} "
              f"rounds {rec['rounds_run']} ({rec['wall_s']:.0f}s)", flush=True)
        return rec, maj

    @property
    def seeds(self):
        return SEEDS[: self.args.seeds]

    # -- parts ---------------------------------------------------------------------------------
    def floors(self):
        """Majority-class floor of every split (no training)."""
        for ds in self.args.datasets:
            for split in ("RE", "RET"):
                for K in self.args.ks:
                    self.results["majority"][f"{ds}|{split}|{K}"] = 100 * self.data(ds, split, K)[1]
                    self.write()

    def main(self):
        for ds in self.args.datasets:
            if "central" in self.args.methods:
                rec, _ = self.run(ds, "central", 1, "central")
                self.results["central"][ds] = rec
                self.write()
            for split in ("RE", "RET"):
                for K in self.args.ks:
                    for m in self.args.methods:
                        if m == "central":
                            continue
                        rec, maj = self.run(ds, split, K, m)
                        self.results["main"][f"{ds}|{split}|{K}|{m}"] = rec
                        self.results["majority"][f"{ds}|{split}|{K}"] = 100 * maj
                        self.write()

    def ablation(self):
        for K in self.args.abl_ks:
            for m in ("abl_B", "abl_C", "abl_BC", "fedavg", "fedhgn"):
                key = f"mutag|RE|{K}|{m}"
                if f"{K}|{m}" in self.results["ablation"] and m not in ("fedavg", "fedhgn"):
                    continue                                  # merged from an earlier run
                if m in ("fedavg", "fedhgn") and key in self.results["main"]:
                    rec = self.results["main"][key]
                else:
                    rec, maj = self.run("mutag", "RE", K, m)
                    self.results["majority"][f"mutag|RE|{K}"] = 100 * maj
                self.results["ablation"][f"{K}|{m}"] = rec
                self.write()

    def sweeps(self):
        for split in self.args.sweep_splits:
            main = self.results["main"].get(f"aifb|{split}|3|fedhgn")   # = the B=20 / λ=0.5 point
            done = lambda part, key: key in self.results[part]    # merged from an earlier (interrupted) run
            for B in self.args.b_grid:
                if not done("sweep_B", f"{split}|{B}"):
                    self.results["sweep_B"][f"{split}|{B}"] = (main if B == 20 and main else
                                                               self.run("aifb", split, 3, "fedhgn", num_bases=B)[0])
                    self.write()
            for lam in self.args.lambda_grid:
                if not done("sweep_lambda", f"{split}|{lam}"):
                    self.results["sweep_lambda"][f"{split}|{lam}"] = (
                        main if lam == 0.5 and main else self.run("aifb", split, 3, "fedhgn", align_lambda=lam)[0])
                    self.write()
            # Round-1 pool (spec §4.5): why the default is "skip" (see FedHGNConfig.round1_align)
            for mode in ("zeros", "code_quirk", "skip"):
                for lam in (0.5, 5.0):
                    key = f"{split}|{mode}|{lam}"
                    if key in self.results["round1"]:
                        continue
                    if mode == "skip":   # the default: same config as the λ sweep's points
                        rec = self.results["sweep_lambda"].get(f"{split}|{lam}")
                    else:
                        rec = self.run("aifb", split, 3, "fedhgn", align_lambda=lam, round1_align=mode)[0]
                    if rec is not None:
                        self.results["round1"][key] = rec
                    self.write()

    # -- output --------------------------------------------------------------------------------
    def table(self) -> str:
        R = self.results
        lines = ["# FedHGN reproduction (accuracy %, mean±std over seeds; paper value in brackets)", ""]
        lines += ["BGS is not reproduced: its triples file is not available offline (only its label files are); "
                  "AM likewise. Floors: `majority` = test-weighted accuracy of predicting each client's "
                  "majority training class.", ""]
        if (OUT / "results_official_split.json").exists():
            lines += ["AIFB splits here are regenerated with NumPy (seed 12345). `results_official_split.md` re-runs "
                      "every AIFB setting on the authors' own split files (FedHGN repository, "
                      "data/aifb-hetero/*.bin, read by `fgl_jax.data.hetero_dglbin`), with FedHGN variants at K = 3 "
                      "(round-1 pool `code_quirk`/`zeros`, lambda = 0, B = 35); `results_official_es.md` measures what "
                      "the 10-round patience costs there (test at patience 30, at the best validation round, and the "
                      "best test round as an oracle). The gap notes quote the official-split numbers.", ""]
        for ds in self.args.datasets:
            c = R["central"].get(ds)
            lines.append(f"## {ds.upper()} (Central: {_cell(c)} "
                         f"[paper {_fmt(PAPER_CENTRAL[ds])}])")
            lines.append("")
            lines.append("| split | method | " + " | ".join(f"K={K}" for K in self.args.ks) + " |")
            lines.append("|---|---|" + "---|" * len(self.args.ks))
            for split in ("RE", "RET"):
                for m in (m for m in self.args.methods if m != "central"):
                    cells = []
                    for K in self.args.ks:
                        r = R["main"].get(f"{ds}|{split}|{K}|{m}")
                        p = PAPER[(ds, split, m)][K]
                        cells.append(f"{_cell(r)} [{_fmt(p)}]")
                    lines.append(f"| {split} | {m} | " + " | ".join(cells) + " |")
                cells = [f"{R['majority'][f'{ds}|{split}|{K}']:.2f}" if f"{ds}|{split}|{K}" in R["majority"] else "–"
                         for K in self.args.ks]
                lines.append(f"| {split} | majority floor | " + " | ".join(cells) + " |")
            lines.append("")
            reasons = []
            for split in ("RE", "RET"):
                for K in self.args.ks:
                    for m in self.args.methods:
                        rec = R["main"].get(f"{ds}|{split}|{K}|{m}")
                        if rec is None or m == "central":
                            continue
                        rec["reason"] = gap_reason(ds, split, K, m, rec, PAPER[(ds, split, m)][K],
                                                   R["majority"].get(f"{ds}|{split}|{K}", float("nan")),
                                                   (R["main"].get(f"{ds}|{split}|{K}|local"),
                                                    PAPER[(ds, split, "local")][K]))
                        if rec["reason"]:
                            reasons.append(f"- {split} K={K} {m}: {rec['reason']}")
            if reasons:
                lines += [f"Gaps over 2 points ({ds.upper()}):", ""] + reasons + [""]
        if R["ablation"]:
            lines += ["## Ablation (MUTAG-RE, Table 4)", "", "| SWD / CA | " +
                      " | ".join(f"K={K}" for K in self.args.abl_ks) + " |", "|---|" + "---|" * len(self.args.abl_ks)]
            for m in ("abl_B", "abl_C", "abl_BC", "fedavg", "fedhgn"):
                cells = []
                for K in self.args.abl_ks:
                    r = R["ablation"].get(f"{K}|{m}")
                    cells.append(f"{_cell(r)} [{_fmt(PAPER_ABL[m].get(K))}]")
                lines.append(f"| {ABL_NAMES[m]} | " + " | ".join(cells) + " |")
            lines.append("")
        for name, grid, label in (("sweep_B", self.args.b_grid, "B"), ("sweep_lambda", self.args.lambda_grid, "λ")):
            if R[name]:
                lines += [f"## Figure 4: AIFB K=3 FedHGN accuracy vs {label} (paper gives curves only)", "",
                          "| split | " + " | ".join(f"{label}={v}" for v in grid) + " |", "|---|" + "---|" * len(grid)]
                default = 20 if label == "B" else 0.5
                for split in self.args.sweep_splits:
                    # the default value's point is the main-table FedHGN run (same config)
                    get = lambda v: R[name].get(f"{split}|{v}") or (
                        R["main"].get(f"aifb|{split}|3|fedhgn") if v == default else None)
                    cells = [_cell(get(v)) for v in grid]
                    lines.append(f"| {split} | " + " | ".join(cells) + " |")
                lines.append("")
        if R.get("round1"):
            lines += ["## Round-1 coefficient pool (AIFB K=3 FedHGN; spec §4.5 [DECIDE])", "",
                      "zeros: one zero vector per client not yet heard from; code_quirk: the official code's "
                      "zeros counted twice; skip (our default): no alignment until coefficients exist. With a "
                      "zero pool each round-1 step scales β by 1 − lr·2λ·(1 or 2): at λ = 5 with `zeros` that is 0, "
                      "every β lands on 0 and the all-zero pool keeps it there; `code_quirk` gives −1 (no trap).", "",
                      "| split | pool | λ=0.5 | λ=5.0 |", "|---|---|---|---|"]
            for split in self.args.sweep_splits:
                for mode in ("zeros", "code_quirk", "skip"):
                    cells = [_cell(R["round1"].get(f"{split}|{mode}|{lam}")) for lam in (0.5, 5.0)]
                    lines.append(f"| {split} | {mode} | " + " | ".join(cells) + " |")
            lines.append("")
        return "\n".join(lines)

    def write(self):
        cfg = {k: v for k, v in vars(self.args).items()}
        cfg["seeds"] = self.seeds
        cfg["protocol"] = ("d=64, B=20, lambda=0.5, E=3 SGD steps lr 0.1 (Local/Central 1 step per epoch, max 6000), "
                           "patience 10, C=1, round-1 pool 'skip', split seed 12345, RGCN-like backbone (spec §2.3); "
                           "std = population std (ddof 0)")
        write_results(OUT, self.args.stem, self.table(), {"results": self.results, "paper": {
            "main": {"|".join(map(str, k)): v for k, v in PAPER.items()}, "central": PAPER_CENTRAL,
            "ablation": PAPER_ABL}, "provenance": provenance(self.t0, cfg)})


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="AIFB only, K=3, 2 seeds, max 60 rounds")
    ap.add_argument("--data-dir", default=None)
    ap.add_argument("--parts", default="main,ablation,sweeps")
    ap.add_argument("--datasets", default="aifb,mutag")
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--max-rounds", type=int, default=1000)
    ap.add_argument("--ks", default="3,5,10", help="client counts of the main table")
    ap.add_argument("--abl-ks", default="5,10", help="client counts of the ablation (MUTAG-RE)")
    ap.add_argument("--b-grid", default="5,10,20,35,50")
    ap.add_argument("--lambda-grid", default="0,0.05,0.5,2,5,10,50")
    ap.add_argument("--sweep-splits", default="RE,RET")
    ap.add_argument("--chunk", type=int, default=10, help="rounds per compiled scan between early-stop checks")
    ap.add_argument("--merge", default="", help="comma-separated stems of earlier results.json files to merge "
                    "into this table (e.g. results_mutag); with --parts '' only merges")
    ap.add_argument("--merge-baselines", default="", help="like --merge, but only the baselines' and "
                    "ablation variants' entries (not FedHGN's): reuse baseline runs of an earlier code version "
                    "whose FedHGN settings changed")
    ap.add_argument("--methods", default="central,local,fedavg,fedprox,fedhgn", help="main-table methods to run")
    ap.add_argument("--stem", default=None, help="output file stem (default results / results_quick)")
    args = ap.parse_args(argv)
    args.datasets = args.datasets.split(",")
    args.ks, args.abl_ks = tuple(int(k) for k in args.ks.split(",")), tuple(int(k) for k in args.abl_ks.split(","))
    args.methods = tuple(args.methods.split(","))
    args.b_grid = tuple(int(b) for b in args.b_grid.split(","))
    args.lambda_grid = tuple(float(v) for v in args.lambda_grid.split(","))
    args.sweep_splits = tuple(args.sweep_splits.split(","))
    if args.quick:
        args.datasets, args.ks, args.seeds, args.max_rounds = ["aifb"], (3,), 2, 60
        args.parts, args.abl_ks = "main", ()
    args.stem = args.stem or ("results_quick" if args.quick else "results")
    r = Runner(args)
    # --merge-baselines first, so that entries of the --merge files (newer runs) take precedence
    for stem in filter(None, args.merge_baselines.split(",")):
        old = json.loads((OUT / f"{stem}.json").read_text())["results"]
        keep = lambda part, key: not (part in ("main", "ablation") and key.split("|")[-1] == "fedhgn") \
            and part not in ("sweep_B", "sweep_lambda", "round1")
        for part, vals in old.items():
            r.results.setdefault(part, {}).update({k: v for k, v in vals.items() if keep(part, k)})
    for stem in filter(None, args.merge.split(",")):
        old = json.loads((OUT / f"{stem}.json").read_text())["results"]
        for part, vals in old.items():
            r.results.setdefault(part, {}).update(vals)
    parts = args.parts.split(",")
    if "floors" in parts:
        r.floors()
    if "main" in parts:
        r.main()
    if "ablation" in parts:
        r.ablation()
    if "sweeps" in parts:
        r.sweeps()
    r.write()
    print(f"wrote {OUT / (args.stem + '.md')}")


if __name__ == "__main__":
    main()
