"""FedHGN's paper (Fu & King, IJCAI 2023) as data: its numbers, its cells as FedHGNConfigs, and
`reproduce`, which runs the cells through the engine and writes the result tables.

    fgl-jax reproduce fedhgn [--quick] [--data-dir D] [--out D]
    python experiments/fedhgn/reproduce.py [--quick] [--parts main,ablation,sweeps] ...   (more knobs)

Protocol (spec fedhgn.md §3, = FedHGNConfig's defaults): RGCN-like backbone (private N(0,1)
embeddings, weight-free mean layer, relation-weighted layer, ReLU + Linear), d = 64, B = 20,
lambda = 0.5, E = 3 full-batch plain-SGD steps (lr 0.1) per round, C = 1, early stopping with
patience 10 on the weighted validation accuracy (FL max 1000 rounds; Local/Central one step per
"epoch", max 6000), weighted test accuracy at the best round, seeds 1000..5000 (one engine run
per seed, key jax.random.key(seed)), mean +- population std (ddof 0). Splits RE / RET with K+2
groups, split seed 12345, reverse edges added per client. Parts:

* main     : Tables 3/6/7 on AIFB and MUTAG (BGS: triples not available offline), RE and RET,
             K = 3, 5, 10, Local / FedAvg / FedProx / FedHGN, Central; majority-class floor.
* ablation : Table 4 on MUTAG-RE K = 5, 10: SWD variants B, C, B+C without CA, FedAvg, FedHGN.
* sweeps   : Figure 4 on AIFB K = 3 (RE and RET): accuracy vs B and vs lambda; and the round-1
             pool diagnostic (zeros / skip / official code quirk at lambda = 0.5 and 5).
* floors   : the majority-class floor of every split (no training).

Results are written after every setting (results.json / results.md; quick: results_quick.*), so
a partial run leaves a valid partial table. Gap notes quote the official-split diagnostics
(results_official_split.json, results_official_es.json, results_official_init_*.json) when they
are in the output folder (experiments/fedhgn/official_split.py, official_init.py write them).
"""
from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path
from typing import Optional, Sequence

import numpy as np

from fgl_jax import experiment, report
from fgl_jax.systems.fedhgn.config import FedHGNConfig
from fgl_jax.systems.fedhgn.data import client_data
from fgl_jax.systems.fedhgn.program import build

SEEDS = (1000, 2000, 3000, 4000, 5000)
KS = (3, 5, 10)
MAIN_METHODS = ("local", "fedavg", "fedprox", "fedhgn")
ABL_METHODS = ("abl_B", "abl_C", "abl_BC", "fedavg", "fedhgn")
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
# Figure 4 (grids not given in the paper; spec §5.16)
B_GRID = (5, 10, 20, 35, 50)
LAMBDA_GRID = (0.0, 0.05, 0.5, 2.0, 5.0, 10.0, 50.0)
PROTOCOL = ("d=64, B=20, lambda=0.5, E=3 SGD steps lr 0.1 (Local/Central 1 step per epoch, max 6000), patience 10, "
            "C=1, round-1 pool 'skip', split seed 12345, RGCN-like backbone (spec §2.3); "
            "std = population std (ddof 0)")


# ------------------------------------------------------------------------------------------------
# The paper's cells as configs (one run each; a cell is the mean over SEEDS)
# ------------------------------------------------------------------------------------------------
def cell(dataset: str, split: str, clients: int, method: str, **changes) -> FedHGNConfig:
    """One cell's config: the paper protocol (FedHGNConfig's defaults) with seed SEEDS[0]."""
    return FedHGNConfig(dataset=dataset, split=split, clients=clients, method=method, seed=SEEDS[0], **changes)


def cells() -> list[tuple[str, str, FedHGNConfig]]:
    """(name, what it is, config) of every cell of Tables 3/4 and Figure 4 (the YAML files of
    experiments/configs/fedhgn are these configs)."""
    out = []
    for (ds, split, method), per_k in PAPER.items():
        for k, (mean, std) in per_k.items():
            out.append((f"table3_{ds}_{split}_k{k}_{method}",
                        f"Table 3/6/7: {method} on {ds}-{split}, K={k}; paper {mean:.2f} ± {std:.2f}",
                        cell(ds, split, k, method)))
    for ds, (mean, std) in PAPER_CENTRAL.items():
        out.append((f"table3_{ds}_central", f"Table 3: Central on {ds}; paper {mean:.2f} ± {std:.2f}",
                    cell(ds, "RE", 3, "central")))
    for variant, per_k in PAPER_ABL.items():
        for k, (mean, std) in per_k.items():
            out.append((f"table4_mutag_RE_k{k}_{variant}",
                        f"Table 4: {ABL_NAMES[variant]} on MUTAG-RE, K={k}; paper {mean:.2f} ± {std:.2f}",
                        cell("mutag", "RE", k, variant)))
    for split in ("RE", "RET"):
        out.append((f"fig4_aifb_{split}_k3_fedhgn",
                    f"Figure 4: AIFB-{split}, K=3; the B grid {', '.join(map(str, B_GRID))} (num_bases) and the "
                    f"lambda grid {', '.join(map(str, LAMBDA_GRID))} (align_lambda) vary this config",
                    cell("aifb", split, 3, "fedhgn")))
    return out


def run_cell(cfg: FedHGNConfig, seeds: Sequence[int]) -> dict:
    """Mean/std of the early-stopping test accuracy (%) over seeds: one engine run per seed (key
    jax.random.key(seed)) on one built Program. A seed whose loss becomes NaN/inf (λ = 50:
    lr*2λ = 10 > 2) is scored on its rounds before it, as the official loop's best-validation
    checkpoint would be; `diverged_seeds` counts them."""
    t = time.perf_counter()
    program = build(cfg)
    rs = [experiment.execute(program, s, system="fedhgn", on_nonfinite="stop") for s in seeds]
    acc = np.array([100 * r.best["best_test"] for r in rs])
    return {"mean": float(acc.mean()), "std": float(acc.std()), "per_seed": acc.tolist(),
            "rounds_run": [int(r.best["stop_round"]) for r in rs], "best_round": [int(r.best["best_round"]) for r in rs],
            "ms_per_round": 1000 * rs[0].run_seconds / max(rs[0].rounds_run, 1), "compile_s": rs[0].compile_seconds,
            "diverged_seeds": sum(bool(r.diverged) for r in rs), "wall_s": time.perf_counter() - t}


# ------------------------------------------------------------------------------------------------
# Gap notes
# ------------------------------------------------------------------------------------------------
def _z(rec, paper):
    n = len(rec.get("per_seed", [])) or 5
    se = float(np.sqrt(rec["std"] ** 2 / n + paper[1] ** 2 / 5)) or 1e-9
    return (rec["mean"] - paper[0]) / se, n


def _official(folder: Path, ds, split, K, method, stem="results_official_split"):
    """Our result on the authors' split file (experiments/fedhgn/official_split.py), if measured
    (method None: the whole record of the setting, e.g. the early-stopping diagnostic)."""
    f = folder / f"{stem}.json"
    if not f.exists() or ds != "aifb":
        return None
    rec = json.loads(f.read_text())["results"].get(f"{split}{K}")
    return rec if method is None or rec is None else rec.get(method)


def _official_init(folder: Path, split, K):
    """Summary of experiments/fedhgn/official_init.py for this AIFB setting, if measured."""
    f = folder / f"results_official_init_{split}{K}.json"
    return json.loads(f.read_text())["summary"] if f.exists() else None


def gap_reason(ds, split, K, method, rec, paper, floor, local=None, folder: Optional[Path] = None):
    """One line on why |ours - paper| > 2 points (None when within 2). rec: our result record;
    paper: (mean, std) over the paper's 5 seeds; floor: majority-class accuracy of the split;
    folder: where the official-split diagnostics are."""
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
    off = _official(folder, ds, split, K, method) if folder is not None else None
    if off is not None:
        oz = _z(off, paper)[0]
        same = abs(off["mean"] - paper[0]) <= 2 or abs(oz) < 2
        note = (f"{side} by {abs(z):.1f} SE; on the authors' own split file {off['mean']:.2f}±{off['std']:.2f} "
                f"(results_official_split.md): " + ("matches the paper, so the regenerated split explains the gap"
                                                    if same else f"still {off['mean'] - paper[0]:+.1f} points "
                                                    f"({abs(oz):.1f} SE), so the split does not explain it"))
        es = _official(folder, ds, split, K, None, stem="results_official_es")
        if es is not None and not same and method == "fedhgn":
            late, orc = es["mean_test_second_half"], es["max_test_oracle"]
            note += (f"; trained on without stopping (results_official_es.md) the test accuracy averages "
                     f"{late['mean']:.2f} over rounds 151-300 (best-test oracle {orc['mean']:.2f}): "
                     + ("the 10-round patience stops before the paper's level"
                        if abs(late["mean"] - paper[0]) <= 2 else "below the paper even without early stopping"))
        init = _official_init(folder, split, K) if method == "fedhgn" and not same else None
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


# ------------------------------------------------------------------------------------------------
# The runner
# ------------------------------------------------------------------------------------------------
@dataclasses.dataclass
class Options:
    """What to run (the full paper by default; `quick()` is the smoke version)."""

    parts: tuple = ("main", "ablation", "sweeps")
    datasets: tuple = ("aifb", "mutag")
    seeds: int = 5
    max_rounds: int = 1000          # FL rounds; Local/Central get 6x as many epochs
    ks: tuple = KS
    abl_ks: tuple = (5, 10)
    b_grid: tuple = B_GRID
    lambda_grid: tuple = LAMBDA_GRID
    sweep_splits: tuple = ("RE", "RET")
    methods: tuple = ("central",) + MAIN_METHODS
    stem: str = "results"
    merge: tuple = ()               # stems of earlier results files (in out) merged into this table
    merge_baselines: tuple = ()     # like merge, but only the baselines' and ablation variants' entries

    @staticmethod
    def quick() -> "Options":
        """AIFB only, K = 3, 2 seeds, at most 60 rounds (360 epochs for Local/Central), main table."""
        return Options(parts=("main",), datasets=("aifb",), seeds=2, max_rounds=60, ks=(3,), abl_ks=(),
                       stem="results_quick")


class Runner:
    def __init__(self, out: Path, opts: Options, data_dir: Optional[str] = None):
        self.out, self.opts, self.data_dir = Path(out), opts, data_dir
        self.results = {"main": {}, "central": {}, "majority": {}, "ablation": {}, "sweep_B": {}, "sweep_lambda": {},
                        "round1": {}, "timing": {}}
        self.t0 = time.perf_counter()

    @property
    def seeds(self):
        return list(SEEDS[: self.opts.seeds])

    def config(self, ds, split, K, method, **over) -> FedHGNConfig:
        single = method in ("local", "central")
        return FedHGNConfig(dataset=ds, split=split, clients=K, method=method, data_dir=self.data_dir,
                            rounds=6 * self.opts.max_rounds if single else self.opts.max_rounds, **over)

    def majority(self, ds, split, K) -> float:
        return 100 * client_data(ds, split, K, self.data_dir)[1]

    def run(self, ds, split, K, method, **over):
        rec = run_cell(self.config(ds, split, K, method, **over), self.seeds)
        print(f"{ds} {split} K={K} {method} {over or ''}: {rec['mean']:.2f}±{rec['std']:.2f} "
              f"rounds {rec['rounds_run']} ({rec['wall_s']:.0f}s)", flush=True)
        return rec

    # -- parts ---------------------------------------------------------------------------------
    def floors(self):
        """Majority-class floor of every split (no training)."""
        for ds in self.opts.datasets:
            for split in ("RE", "RET"):
                for K in self.opts.ks:
                    self.results["majority"][f"{ds}|{split}|{K}"] = self.majority(ds, split, K)
                    self.write()

    def main(self):
        for ds in self.opts.datasets:
            if "central" in self.opts.methods:
                self.results["central"][ds] = self.run(ds, "RE", 1, "central")
                self.write()
            for split in ("RE", "RET"):
                for K in self.opts.ks:
                    for m in self.opts.methods:
                        if m == "central":
                            continue
                        self.results["main"][f"{ds}|{split}|{K}|{m}"] = self.run(ds, split, K, m)
                        self.results["majority"][f"{ds}|{split}|{K}"] = self.majority(ds, split, K)
                        self.write()

    def ablation(self):
        for K in self.opts.abl_ks:
            for m in ABL_METHODS:
                key = f"mutag|RE|{K}|{m}"
                if f"{K}|{m}" in self.results["ablation"] and m not in ("fedavg", "fedhgn"):
                    continue                                  # merged from an earlier run
                if m in ("fedavg", "fedhgn") and key in self.results["main"]:
                    rec = self.results["main"][key]
                else:
                    rec = self.run("mutag", "RE", K, m)
                    self.results["majority"][f"mutag|RE|{K}"] = self.majority("mutag", "RE", K)
                self.results["ablation"][f"{K}|{m}"] = rec
                self.write()

    def sweeps(self):
        for split in self.opts.sweep_splits:
            main = self.results["main"].get(f"aifb|{split}|3|fedhgn")   # = the B=20 / λ=0.5 point
            done = lambda part, key: key in self.results[part]    # merged from an earlier (interrupted) run
            for B in self.opts.b_grid:
                if not done("sweep_B", f"{split}|{B}"):
                    self.results["sweep_B"][f"{split}|{B}"] = (main if B == 20 and main else
                                                               self.run("aifb", split, 3, "fedhgn", num_bases=B))
                    self.write()
            for lam in self.opts.lambda_grid:
                if not done("sweep_lambda", f"{split}|{lam}"):
                    self.results["sweep_lambda"][f"{split}|{lam}"] = (
                        main if lam == 0.5 and main else self.run("aifb", split, 3, "fedhgn", align_lambda=lam))
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
                        rec = self.run("aifb", split, 3, "fedhgn", align_lambda=lam, round1_align=mode)
                    if rec is not None:
                        self.results["round1"][key] = rec
                    self.write()

    # -- output --------------------------------------------------------------------------------
    def table(self) -> str:
        R, o = self.results, self.opts
        lines = ["# FedHGN reproduction (accuracy %, mean±std over seeds; paper value in brackets)", ""]
        lines += ["BGS is not reproduced: its triples file is not available offline (only its label files are); "
                  "AM likewise. Floors: `majority` = test-weighted accuracy of predicting each client's "
                  "majority training class.", ""]
        if (self.out / "results_official_split.json").exists():
            lines += ["AIFB splits here are regenerated with NumPy (seed 12345). `results_official_split.md` re-runs "
                      "every AIFB setting on the authors' own split files (FedHGN repository, "
                      "data/aifb-hetero/*.bin, read by `fgl_jax.data.hetero_dglbin`), with FedHGN variants at K = 3 "
                      "(round-1 pool `code_quirk`/`zeros`, lambda = 0, B = 35); `results_official_es.md` measures what "
                      "the 10-round patience costs there (test at patience 30, at the best validation round, and the "
                      "best test round as an oracle). The gap notes quote the official-split numbers.", ""]
        if (self.out / "official_code.md").exists():
            lines += ["`official_code.md`: the authors' own code run on this machine, on our split and on theirs "
                      "(benchmarks/peers/fedhgn_official), and checked round by round against fgl_jax.", ""]
        methods = [m for m in o.methods if m != "central"]
        for ds in o.datasets:
            lines += [f"## {ds.upper()} (Central: {_cell(R['central'].get(ds))} [paper {_fmt(PAPER_CENTRAL[ds])}])", ""]
            rows = []
            for split in ("RE", "RET"):
                for m in methods:
                    rows.append({"split": split, "method": m, **{
                        f"K={K}": f"{_cell(R['main'].get(f'{ds}|{split}|{K}|{m}'))} [{_fmt(PAPER[(ds, split, m)][K])}]"
                        for K in o.ks}})
                rows.append({"split": split, "method": "majority floor", **{
                    f"K={K}": (f"{R['majority'][f'{ds}|{split}|{K}']:.2f}" if f"{ds}|{split}|{K}" in R["majority"]
                               else "–") for K in o.ks}})
            lines += [report.table(rows, ["split", "method"] + [f"K={K}" for K in o.ks]), ""]
            reasons = []
            for split in ("RE", "RET"):
                for K in o.ks:
                    for m in o.methods:
                        rec = R["main"].get(f"{ds}|{split}|{K}|{m}")
                        if rec is None or m == "central":
                            continue
                        rec["reason"] = gap_reason(ds, split, K, m, rec, PAPER[(ds, split, m)][K],
                                                   R["majority"].get(f"{ds}|{split}|{K}", float("nan")),
                                                   (R["main"].get(f"{ds}|{split}|{K}|local"),
                                                    PAPER[(ds, split, "local")][K]), self.out)
                        if rec["reason"]:
                            reasons.append(f"- {split} K={K} {m}: {rec['reason']}")
            if reasons:
                lines += [f"Gaps over 2 points ({ds.upper()}):", ""] + reasons + [""]
        if R["ablation"]:
            rows = [{"SWD / CA": ABL_NAMES[m], **{f"K={K}": f"{_cell(R['ablation'].get(f'{K}|{m}'))} "
                                                           f"[{_fmt(PAPER_ABL[m].get(K))}]" for K in o.abl_ks}}
                    for m in ABL_METHODS]
            lines += ["## Ablation (MUTAG-RE, Table 4)", "",
                      report.table(rows, ["SWD / CA"] + [f"K={K}" for K in o.abl_ks]), ""]
        for name, grid, label in (("sweep_B", o.b_grid, "B"), ("sweep_lambda", o.lambda_grid, "λ")):
            if R[name]:
                default = 20 if label == "B" else 0.5
                rows = []
                for split in o.sweep_splits:
                    # the default value's point is the main-table FedHGN run (same config)
                    get = lambda v: R[name].get(f"{split}|{v}") or (
                        R["main"].get(f"aifb|{split}|3|fedhgn") if v == default else None)
                    rows.append({"split": split, **{f"{label}={v}": _cell(get(v)) for v in grid}})
                lines += [f"## Figure 4: AIFB K=3 FedHGN accuracy vs {label} (paper gives curves only)", "",
                          report.table(rows, ["split"] + [f"{label}={v}" for v in grid]), ""]
        if R.get("round1"):
            rows = [{"split": split, "pool": mode, **{f"λ={lam}": _cell(R["round1"].get(f"{split}|{mode}|{lam}"))
                                                       for lam in (0.5, 5.0)}}
                    for split in o.sweep_splits for mode in ("zeros", "code_quirk", "skip")]
            lines += ["## Round-1 coefficient pool (AIFB K=3 FedHGN; spec §4.5 [DECIDE])", "",
                      "zeros: one zero vector per client not yet heard from; code_quirk: the official code's "
                      "zeros counted twice; skip (our default): no alignment until coefficients exist. With a "
                      "zero pool each round-1 step scales β by 1 − lr·2λ·(1 or 2): at λ = 5 with `zeros` that is 0, "
                      "every β lands on 0 and the all-zero pool keeps it there; `code_quirk` gives −1 (no trap).", "",
                      report.table(rows, ["split", "pool", "λ=0.5", "λ=5.0"]), ""]
        return "\n".join(lines)

    def write(self):
        cfg = {**dataclasses.asdict(self.opts), "data_dir": self.data_dir, "seeds": self.seeds, "protocol": PROTOCOL}
        report.write_results(self.out, self.opts.stem, self.table(), {"results": self.results, "paper": {
            "main": {"|".join(map(str, k)): v for k, v in PAPER.items()}, "central": PAPER_CENTRAL,
            "ablation": PAPER_ABL}, "provenance": report.provenance(self.t0, cfg)})

    def merge(self):
        """Entries of earlier results files in `out` (--merge-baselines first, so that entries of the
        --merge files, newer runs, take precedence)."""
        for stem in self.opts.merge_baselines:
            old = json.loads((self.out / f"{stem}.json").read_text())["results"]
            keep = lambda part, key: not (part in ("main", "ablation") and key.split("|")[-1] == "fedhgn") \
                and part not in ("sweep_B", "sweep_lambda", "round1")
            for part, vals in old.items():
                self.results.setdefault(part, {}).update({k: v for k, v in vals.items() if keep(part, k)})
        for stem in self.opts.merge:
            old = json.loads((self.out / f"{stem}.json").read_text())["results"]
            for part, vals in old.items():
                self.results.setdefault(part, {}).update(vals)


def reproduce(out: Path, quick: bool = False, data_dir: Optional[str] = None,
              options: Optional[Options] = None) -> None:
    """Run the paper's tables (quick: the AIFB K=3 main table, 2 seeds, <= 60 rounds) through the
    engine and write `results[_quick].md/.json` into `out`. `options` overrides what to run."""
    opts = options if options is not None else (Options.quick() if quick else Options())
    r = Runner(Path(out), opts, data_dir)
    r.merge()
    for part in ("floors", "main", "ablation", "sweeps"):
        if part in opts.parts:
            getattr(r, part)()
    r.write()
    print(f"wrote {Path(out) / (opts.stem + '.md')}")
