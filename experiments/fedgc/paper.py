"""FedGC's paper reproduction on the one harness: Table 1 accuracy, Table 2 attack AUC, Table 3
architectures, the ablation and γ sweep, a synthetic arxiv-sized scaling run, and diagnostics
(`zceiling`, `attacksel`, `synthinit`).

Every paper cell is a `Cell` (experiments/harness.py) whose id is "<table>/<what>", e.g.
"fedgc/cora/r0.5/ibfs/s0" (Cora, rate 0.5, the `ibfs` setting, seed 0); its config is the
`FedGCConfig` it runs (`cells.py`: the paper's cells as data), and `Measure` runs it through the
engine (`FedGCRun` + `fgl_jax.engine.execute`) with the attack and the architectures from the run's
own hooks, sharing host preparation (partition, self-training, IB, shadow models) and the condensed
graph G' across the cells of one invocation (identical results, computed once). Each cell writes one
record, a line of records/<table>_<full|quick>.jsonl; the pages are rendered from the records only
(`tables.markdown`): table "fedgc" -> results.md / results_quick.md, any other table T (a partial
or diagnostic run, `--table T`) -> results_T.md. The committed results_pp2000.md (`--protocol
paper`) and the earlier 500-round runs (results_mia_seeds.md, results_paperprot.md, results_ablation.md)
are such tables.

    fgl-jax reproduce fedgc [--quick] [--out D]
    python experiments/fedgc/paper.py [--quick] [--only table1,table2,...] [--seeds 3] [--table T] ...
    python experiments/fedgc/paper.py --render          # re-render every page from the records in --out
    python experiments/fedgc/paper.py ... --run-dir D   # checkpoint each cell in D/<cell id>; rerun to continue

Rerunning keeps the cells already in the records (an interrupted full run resumes) unless `--fresh`;
a quick run is a smoke test of the code and always runs every cell.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import shlex
import sys
import time
from pathlib import Path
from typing import Callable, Optional, Sequence

if __package__ in (None, ""):  # run as a script: the checkout's root on the path (fgl_jax, experiments)
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import numpy as np

import fgl_jax as fj
from fgl_jax.systems.fedgc import (FedGCRun, central_gcn_accuracy, client_graph_ceiling, normalize_features,
                                   prepare)

from experiments import harness
from experiments.harness import Cell
from experiments.fedgc import tables
from experiments.fedgc.cells import (BASES, CEILING_SPACES, DEFAULT_BASE, GAMMA_GRID, PAPER_ROW, PAPER_T1, PAPER_T2,
                                     PAPER_T3, QUICK_VARIANTS, SPARSE_INIT_BIAS, SYNTH_VARIANTS, VARIANTS, base_config,
                                     synthetic_config, variant_config)

PARTS = ("table1", "table2", "table3", "ablation", "gamma", "synthetic", "synthinit", "zceiling", "attacksel")
QUICK_PARTS = "table2,table3,synthetic"       # the CI smoke run
FULL_PARTS = "table1,table2,table3,ablation,gamma,synthetic"
FULL_VARIANTS = "ib,ibfs,noib,pl,reg,ldp"   # Table 2's variants (--quick: cells.QUICK_VARIANTS)
MAIN = "fedgc"          # the table of results.md / results_quick.md
PP_TABLE = "pp2000"     # the `--protocol paper` runs of the main cells (results_pp2000.md)
RESULTS = harness.RESULTS / "fedgc"


@dataclasses.dataclass(frozen=True)
class Plan:
    """Which cells one invocation runs (the full paper by default; `--quick` is a smoke run of the code).

    parts: of PARTS; datasets / seeds: every (dataset, seed) pair runs each part; variants: Table 2's
    (VARIANTS keys); base: the setting Table 1 (rates other than 0.5), Table 3, the ablation and the γ
    sweep build on (BASES); overrides: rounds / eval_rounds / protocol / ib_dim / ib_hidden for every
    cell (`cells.base_config`); table: the record file and page the cells go to.
    """

    quick: bool = False
    parts: tuple = tuple(FULL_PARTS.split(","))
    datasets: tuple = ("cora", "citeseer")
    seeds: tuple = (0,)
    variants: tuple = ("ib", "ibfs", "noib", "pl", "reg", "ldp")
    rates: tuple = (0.25, 0.5, 1.0)
    gammas: tuple = GAMMA_GRID
    base: str = DEFAULT_BASE
    overrides: tuple = ()          # (key, value) pairs (hashable)
    table: str = MAIN

    @staticmethod
    def make(quick: bool = False, only: Optional[str] = None, datasets: str = "cora,citeseer", seeds: int = 1,
             seed_start: int = 0, variants: str = FULL_VARIANTS, rates: Optional[str] = None,
             gammas: Optional[str] = None, base: str = DEFAULT_BASE, protocol: str = "val",
             rounds: Optional[int] = None, eval_rounds: Optional[Sequence[int]] = None, ib_dim: Optional[int] = None,
             ib_hidden: Optional[int] = None, table: Optional[str] = None) -> "Plan":
        """The plan of the command line's options; a bad option is a one-line ValueError naming it."""
        if base not in BASES:
            raise ValueError(f"base must be one of {BASES}, got {base!r}")
        parts = tuple((only or (QUICK_PARTS if quick else FULL_PARTS)).split(","))
        unknown = sorted(set(parts) - set(PARTS) - {"none"})
        if unknown:
            raise ValueError(f"unknown part(s) {unknown}; choose from {', '.join(PARTS)}")
        if quick and variants == FULL_VARIANTS:
            variants = ",".join(QUICK_VARIANTS)
        chosen = tuple(v for v in variants.split(",") if v)
        bad = [v for v in chosen if v not in VARIANTS]
        if bad:
            raise ValueError(f"unknown variants {bad}; choose from {list(VARIANTS)}")
        gamma_list = (tuple(float(v) for v in gammas.split(",")) if gammas else (0.0, 1e-2) if quick else GAMMA_GRID)
        if any(g < 0 for g in gamma_list):
            raise ValueError(f"gammas must be >= 0, got {gammas}")
        over: dict = {}
        if protocol != "val":
            over["protocol"] = protocol
        if rounds:
            over["rounds"] = int(rounds)
        if eval_rounds:
            over["eval_rounds"] = tuple(int(v) for v in eval_rounds)
        over.update({k: v for k, v in (("ib_dim", ib_dim), ("ib_hidden", ib_hidden)) if v})
        if table is not None and (not table or "/" in table or table.startswith("_")):
            raise ValueError(f"--table must be a plain name (no '/', not starting with '_'), got {table!r}")
        return Plan(quick=quick, parts=parts, datasets=("cora",) if quick else tuple(datasets.split(",")),
                    seeds=tuple(range(seed_start, seed_start + seeds)), variants=chosen,
                    rates=(0.5,) if quick else tuple(float(v) for v in (rates or "0.25,0.5,1.0").split(",")),
                    gammas=gamma_list, base=base, overrides=tuple(over.items()),
                    table=table or (PP_TABLE if protocol == "paper" else MAIN))


def paper_of(what: str) -> dict:
    """The paper's numbers (percent) for a cell "<dataset>/r<rate>/<variant>/s<seed>[/<kind>]"; {} for none."""
    parts = what.split("/")
    if len(parts) < 4 or parts[0] not in PAPER_T2 or not parts[1].startswith("r"):
        return {}
    ds, rate, var = parts[0], float(parts[1][1:]), parts[2]
    if parts[4:] in (["arch"], ["arch_gcond"]):
        return {"paper_archs": PAPER_T3[ds]}
    if len(parts) != 4 or var not in VARIANTS:
        return {}
    if rate == 0.5:
        row = PAPER_ROW[var]
        return {"paper_acc": PAPER_T2[ds][row + "_acc"], "paper_auc": PAPER_T2[ds][row + "_auc"]}
    return {"paper_acc": PAPER_T1[(ds, rate)]} if PAPER_ROW[var] == "ib" and (ds, rate) in PAPER_T1 else {}


def arch_config(table: str, g_from: str, protocol: str) -> dict:
    """An architectures cell's config: the cell whose G' it trains on and the test protocol (not a run of
    FedGC of its own, so no FedGCConfig)."""
    return {"g_from": f"{table}/{g_from}", "arch_protocol": protocol}


def cells(plan: Plan) -> list[Cell]:
    """Every cell of the plan, in the order they run (a dataset's seeds one after the other: each
    seed's Table 2 cells, then its Table 3 cells on the base's G', its Table 1 rates, ...)."""
    t, quick = plan.table, plan.quick
    over = dict(plan.overrides)
    out: list[Cell] = []

    def add(what: str, config, seed: Optional[int]):
        out.append(Cell(f"{t}/{what}", config, () if seed is None else (seed,), paper_of(what)))

    def cfg(var, seed, **kw):
        return dataclasses.replace(variant_config(var, quick, over), seed=seed, **kw)
    parts, base = set(plan.parts), plan.base
    pre = "" if base == "ib" else base + "-"    # run-id prefix of the ablation / γ runs on this base
    for ds in plan.datasets:
        for seed in plan.seeds:
            if "table2" in parts or "table1" in parts:   # Table 2 at the middle ratio: every variant with the attack
                for var in plan.variants:
                    add(f"{ds}/r0.5/{var}/s{seed}", cfg(var, seed, dataset=ds, mia=True), seed)
            if "table3" in parts:
                for kind, protocol in (("arch", "recipe"), ("arch_gcond", "gcond")):
                    add(f"{ds}/r0.5/{base}/s{seed}/{kind}", arch_config(t, f"{ds}/r0.5/{base}/s{seed}", protocol), seed)
            if "table1" in parts:
                for rate in plan.rates:
                    if rate != 0.5:
                        add(f"{ds}/r{rate}/{base}/s{seed}", cfg(base, seed, dataset=ds, rate=rate), seed)
            if "zceiling" in parts:
                for name, kw in CEILING_SPACES.items():
                    add(f"{ds}/zceiling/{name}/s{seed}", base_config(quick, over, dataset=ds, seed=seed, **kw), seed)
            if "attacksel" in parts:
                for var in (base, "noib"):
                    add(f"{ds}/r0.5/{var}/s{seed}/attack_selected", cfg(var, seed, dataset=ds), seed)
            if "ablation" in parts and ds == "cora":
                for name, kw in (("-com", {"l_hop": 0}), ("-st", {"self_train": False})):
                    add(f"{ds}/r0.5/{pre}ablation{name}/s{seed}", cfg(base, seed, dataset=ds, mia=True, **kw), seed)
            if "gamma" in parts and ds == "cora":
                for gamma in plan.gammas:
                    add(f"{ds}/r0.5/{pre}gamma{gamma}/s{seed}", cfg(base, seed, dataset=ds, mia=True, gamma=gamma), seed)
    if "synthetic" in parts:
        rounds = 10 if quick else 300
        for sfx, (bias, ft, _) in SYNTH_VARIANTS.items():
            if quick and bias is None:   # quick runs only the sparse-init one
                continue
            add(f"synthetic-arxiv/csbm{sfx}",
                synthetic_config(0.005, rounds, (rounds,) if quick else (150, rounds), bias, ft), 0)
    if "synthinit" in parts:
        n, rounds = synthinit_size(quick)
        for bias in (None, SPARSE_INIT_BIAS):
            add(f"synthetic-init/csbm{n}/bias{bias}", synthetic_config(1 / 60, rounds, (rounds // 2, rounds), bias, 0), 0)
    return out


def g_configs(plan: Plan) -> dict:
    """Cell id -> FedGCConfig of the Table 2 cells whose G' the plan's Table 3 cells train on (the base
    setting's), whether or not the plan runs them."""
    over, t = dict(plan.overrides), plan.table
    return {f"{t}/{ds}/r0.5/{plan.base}/s{seed}": dataclasses.replace(variant_config(plan.base, plan.quick, over),
                                                                      seed=seed, dataset=ds, mia=True)
            for ds in plan.datasets for seed in plan.seeds}


def synthetic_size(quick: bool) -> int:
    """Nodes of the arxiv-sized CSBM (`synthetic`): ogbn-arxiv's 169,343, or 20,000 in quick mode."""
    return 20000 if quick else 169343


def synthinit_size(quick: bool) -> tuple[int, int]:
    """(nodes, rounds) of the Φ-init comparison (`synthinit`)."""
    return (4000, 20) if quick else (20000, 200)


def csbm_graph(n: int, name: str):
    """The synthetic CSBM of the scaling runs (NOT ogbn-arxiv): 40 classes, 128 features, arxiv's degree."""
    return fj.csbm(num_nodes=n, num_classes=40, num_features=128, avg_degree=13.7, homophily=0.65,
                   feature_signal=1.0, seed=0, name=name)


def what_of(cell_id: str) -> str:
    """A cell id without its table ("fedgc/cora/r0.5/ib/s0" -> "cora/r0.5/ib/s0")."""
    return cell_id.split("/", 1)[1]


class Measure:
    """`measure(cell) -> metrics` for `harness.run_cells`, sharing host preparation (`cache`), the graphs,
    the condensed graphs of this invocation (Table 3 trains on the G' of its base's Table 2 cell) and
    the central reference of the synthetic graph across cells.

    known: cell id -> metrics of the cells already recorded (a re-run is checked against them: a run
    is deterministic on one machine)."""

    def __init__(self, data_dir: Optional[str], quick: bool, configs: dict, known: dict, log: Callable = print,
                 run_dir: Optional[Path] = None):
        self.data_dir, self.quick, self.configs, self.known = data_dir, quick, configs, dict(known)
        self.run_dir = run_dir  # cells checkpoint into run_dir/<cell id> and resume there (harness.cell_run_options)
        self.log = log
        self.cache: dict = {}
        self.graphs: dict = {}
        self.condensed: dict = {}     # cell id -> (FedGCRun, FedGCResult) of a measured run cell
        self.central: dict = {}       # synthetic graph name -> central GCN test accuracy

    def graph(self, cfg):
        name = cfg.dataset
        if name not in self.graphs:
            self.graphs[name] = fj.load_planetoid(name, data_dir=self.data_dir)
        return self.graphs[name]

    def execute(self, graph, cfg, cell_id: Optional[str] = None):
        """(FedGCRun, RunResult, FedGCResult) of one config; with `cell_id` and `run_dir`, the run keeps
        its checkpoints in run_dir/<cell id> and continues an interrupted run found there."""
        run = FedGCRun(cfg, graph=graph, cache=self.cache, log=self.log)
        where = harness.cell_run_options(self.run_dir, cell_id) if cell_id is not None else {}
        if where.get("resume"):
            self.log(f"[resume] {cell_id} from {where['out']}")
        res = fj.engine.execute(run.program, cfg.seed, system="fedgc", config_text=fj.schema.dump(cfg, "fedgc"),
                                **where)
        return run, res, run.result(res)

    def run_metrics(self, cell: Cell, graph, extra: Optional[dict] = None) -> dict:
        """Run a FedGC cell (cfg.mia adds the attack, Hooks.finalize): the reported checkpoint's metrics,
        the evaluation history, the attack's numbers and `extra`."""
        cfg = cell.config
        t = time.perf_counter()
        run, res, fr = self.execute(graph, cfg, cell.id)
        m = {"dataset": graph.name, "num_classes": int(graph.num_classes), "seed": cfg.seed, **fr.final,
             "history": fr.history, **(extra or {})}
        m.update({k: v for k, v in res.extras.items() if k.startswith("mia_")})
        m["wall_s"] = time.perf_counter() - t
        self.condensed[cell.id] = (run, fr)
        self.known[cell.id] = m
        return m

    def rerun(self, cell_id: str, cfg, graph):
        """(FedGCRun, FedGCResult) of a run cell measured earlier (this invocation's, else recomputed
        without the attack and checked against its record)."""
        if cell_id in self.condensed:
            return self.condensed[cell_id]
        run, _, fr = self.execute(graph, dataclasses.replace(cfg, mia=False))
        old = self.known.get(cell_id)
        if old is not None and abs(old["test_acc"] - fr.final["test_acc"]) > 1e-6:
            raise RuntimeError(f"{cell_id}: the re-run differs from its record "
                               f"({fr.final['test_acc']} vs {old['test_acc']}): not deterministic?")
        self.log(f"[rerun] {cell_id}: test acc {fr.final['test_acc']:.4f}")
        self.condensed[cell_id] = (run, fr)
        return run, fr

    def __call__(self, cell: Cell) -> dict:
        what = what_of(cell.id)
        if what.endswith(("/arch", "/arch_gcond")):
            return self.architectures(cell)
        if what.endswith("/attack_selected"):
            return self.attack_selected(cell)
        if "/zceiling/" in what:
            return self.ceiling(cell)
        if what.startswith("synthetic-arxiv/"):
            return self.synthetic(cell)
        if what.startswith("synthetic-init/"):
            return self.synthetic_init(cell)
        return self.run_metrics(cell, self.graph(cell.config))

    def architectures(self, cell: Cell) -> dict:
        """Table 3: every architecture of the cell's protocol trained on the G' of the checkpoint Table 1
        reports (validation-selected), not the last round's. `.../arch`: every library architecture with
        the GCN evaluation recipe; `.../arch_gcond`: GCond's cross-architecture tester, which the paper's
        Table 3 follows (`evaluate.gcond_arch_configs`)."""
        g_from, protocol = cell.config["g_from"], cell.config["arch_protocol"]
        cfg = self.configs[g_from]
        run, fr = self.rerun(g_from, cfg, self.graph(cfg))
        out = run.architectures(fr, protocol)
        return {"dataset": cfg.dataset, "seed": cfg.seed, "archs": out,
                "g_round": fr.final.get("round") if fr.selected is not None else run.cfg.rounds}

    def attack_selected(self, cell: Cell) -> dict:
        """`attacksel`: which G' the attack targets. Table 2 attacks the LAST round's G'; a deployment would
        publish the checkpoint the run reports. Re-runs the Table 2 cell (checked against its record when
        there is one) and attacks both G' with the same shadow, key and queries."""
        t = time.perf_counter()
        cfg = cell.config
        run, _, res = self.execute(self.graph(cfg), cfg)
        table2 = cell.id.rsplit("/", 1)[0]
        old = self.known.get(table2)
        if old is not None and abs(old["test_acc"] - res.final["test_acc"]) > 1e-6:
            raise RuntimeError(f"{cell.id}: the re-run differs from the recorded Table 2 cell "
                               f"({res.final['test_acc']} vs {old['test_acc']}): not deterministic?")
        m = {"dataset": cfg.dataset, "seed": cfg.seed, "variant": what_of(table2).split("/")[2],
             "test_acc": res.final["test_acc"], "round": res.final.get("round")}
        for which in ("last", "selected"):
            got = run.attack(res, dataclasses.replace(cfg.mia_config, target_graph=which))
            m[which] = {k: v for k, v in got.items() if k.startswith("mia_")}
        m["wall_s"] = time.perf_counter() - t
        return m

    def ceiling(self, cell: Cell) -> dict:
        """`zceiling`: a GCN trained on the clients' real graphs in the feature space the condensation sees
        (raw X; Z from the IB encoder at two learning rates), so the IB runs' accuracy gap splits into
        what Z loses and what condensing loses."""
        cfg = cell.config
        graph = self.graph(cfg)
        t = time.perf_counter()
        prep = prepare(graph, cfg, cfg.seed, log=self.log, cache=self.cache)
        batch = fj.stack_graphs(prep.eval_graphs, prep.ids)
        res = client_graph_ceiling(_key(cfg.seed + 20), batch, prep.eval_graphs[0].x.shape[1], graph.num_classes)
        return {"dataset": graph.name, "seed": cfg.seed, "space": what_of(cell.id).split("/")[2], **res,
                "pseudo_label_test_acc": prep.info.get("pseudo_label_test_acc"), "wall_s": time.perf_counter() - t}

    def synthetic(self, cell: Cell) -> dict:
        """Synthetic arxiv-sized CSBM (NOT ogbn-arxiv): 169,343 nodes, 40 classes, 128 features, 5 clients,
        GCN relay with per-class caps (256 targets) and fanout 10, rate 0.005 (the paper's middle arxiv
        ratio 0.25 %: N' = 508, about 13 synthetic nodes per class), no IB (scaling). Beside it: a GCN
        trained centrally on the whole graph's training nodes (the graph's learnability ceiling for a
        2-layer GCN) and the chance level 1/40."""
        n = synthetic_size(self.quick)
        g = self._csbm(n, f"synthetic-arxiv-csbm-{n}")
        iters = 50 if self.quick else 300
        if g.name not in self.central:
            t = time.perf_counter()
            self.central[g.name] = central_gcn_accuracy(g, iters, _key(1))
            self.log(f"[synthetic] central GCN on the whole graph: test acc {self.central[g.name]:.4f} "
                     f"({time.perf_counter() - t:.0f} s)")
        note = next(v[2] for s, v in SYNTH_VARIANTS.items() if what_of(cell.id) == f"synthetic-arxiv/csbm{s}")
        return self.run_metrics(cell, g, extra={"note": "synthetic CSBM of ogbn-arxiv's size; NOT ogbn-arxiv; "
                                                        f"l_hop=1 to fit memory; no IB; {note}",
                                                "central_gcn_test_acc": self.central[g.name],
                                                "central_gcn_iters": iters, "chance": 1.0 / g.num_classes})

    def synthetic_init(self, cell: Cell) -> dict:
        """Φ-init comparison on a 20k-node CSBM (40 classes, same generator as `synthetic`): N' = 200 (rate
        1/60, 5 synthetic nodes per class), 200 rounds, no fine-tuning, default init vs bias -4.6: the
        matching loss, A' density and how well X' class means align with the real ones."""
        n = int(what_of(cell.id).split("/")[1][len("csbm"):])
        g = self._csbm(n, f"synthetic-csbm-{n}")
        real = np.asarray(normalize_features(g, "standard").x)
        real_mean = np.stack([real[g.train_mask & (g.y == c)].mean(0) for c in range(40)])
        bias = cell.config.pge_init_bias
        m = self.run_metrics(cell, g, extra={"pge_init_bias": bias, "chance": 1.0 / g.num_classes})
        _, res = self.condensed[cell.id]
        a, x, y = res.condensed
        off = a[~np.eye(len(a), dtype=bool)]
        syn_mean = np.stack([x[y == c].mean(0) for c in range(40)])
        m.update(loss_first=float(res.losses[0]), loss_last=float(res.losses[-1]),
                 a_offdiag_mean=float(off.mean()), x_syn_std=float(x.std()),
                 class_mean_corr=float(np.mean([np.corrcoef(syn_mean[c], real_mean[c])[0, 1] for c in range(40)])))
        return m

    def _csbm(self, n: int, name: str):
        if name not in self.graphs:
            self.graphs[name] = csbm_graph(n, name)
        return self.graphs[name]


def _key(seed: int):
    import jax
    return jax.random.PRNGKey(seed)


# ------------------------------------------------------------------------------------------------
# Records -> runs -> pages
# ------------------------------------------------------------------------------------------------

def run_of(rec: dict, tag: str) -> dict:
    """The flat run dict the tables read from a cell's record: id "<tag>/<cell id without its table>",
    the metrics, and the FedGCConfig it ran under "config" (an architectures cell has none of its own)."""
    run = {"id": f"{tag}/{what_of(rec['id'])}", **rec["metrics"]}
    if rec["config"] and "g_from" not in rec["config"]:
        run["config"] = rec["config"]
    return run


def runs(out: Path | str, quick: bool = False, table: str = MAIN) -> dict:
    """id -> run dict of one table's records in `out` ({} when there are none)."""
    tag = harness.run_name(quick)
    return {r["id"]: r for r in (run_of(rec, tag) for rec in harness.load(out, quick, table + "/").values())}


def page_stem(table: str, quick: bool) -> str:
    """The page of a table: results(_quick).md for the main table, results(_quick)_<table>.md otherwise."""
    return ("results_quick" if quick else "results") + ("" if table == MAIN else f"_{table}")


def index_rows(out: Path | str = RESULTS) -> list:
    """The results index's rows {table, setting, paper, ours, reason} (fractions) of the full run in `out`."""
    return tables.index_rows(runs(out), "full", runs(out, table=PP_TABLE))


def render(out: Path | str, quick: bool = False, table: str = MAIN) -> Path:
    """out/<page_stem>.md from the table's records (the `--protocol paper` records, when present, give
    the validation-selected cells their test-set leak), closed by out/notes/<page_stem>.md when there is
    one (notes written by hand about those runs: the pages converted from the package-era results keep
    there the words their own renderer wrote, where today's differs) and the records' footer."""
    recs = harness.load(out, quick, table + "/")
    if not recs:
        raise ValueError(f"no records of table {table!r} ({harness.run_name(quick)} run) under {out}/records")
    tag, stem = harness.run_name(quick), page_stem(table, quick)
    text, _ = tables.markdown({r["id"]: r for r in (run_of(x, tag) for x in recs.values())}, tag,
                              runs(out, table=PP_TABLE))
    notes = Path(out) / "notes" / f"{stem}.md"
    if notes.is_file():   # hand-kept notes on these runs (e.g. the gap notes of a page converted to records)
        text = text.rstrip() + "\n\n" + notes.read_text().strip()
    return harness.write_table(out, stem, text, list(recs.values()))


def tables_in(out: Path | str, quick: bool) -> list[str]:
    """The tables with records of the run `quick` in `out`, the main one first."""
    names = sorted({harness.table_of(i) for i in harness.load(out, quick)})
    return sorted(names, key=lambda t: (t != MAIN, t))


def reproduce(out: Path, quick: bool = False, data_dir: Optional[str] = None, *, plan: Optional[Plan] = None,
              fresh: bool = False, command: Optional[str] = None, log: Callable = print,
              run_dir: Optional[Path] = None) -> Path:
    """Run the plan's cells (default: `Plan.make(quick)`) into out/records and render its page; return it.
    Cells already recorded are kept unless `fresh` (a quick run is always fresh: a smoke test of the code).
    run_dir: keep each run cell's checkpoints in run_dir/<cell id>, so an interrupted cell continues
    there when the command runs again (`harness.cell_run_options`)."""
    out = Path(out)
    plan = plan or Plan.make(quick)
    todo = cells(plan)
    known = {k: v["metrics"] for k, v in harness.load(out, plan.quick).items()}
    if not (fresh or plan.quick):
        for c in todo:
            if c.id in known:
                log(f"[skip] {c.id}")
        todo = [c for c in todo if c.id not in known]
    measure = Measure(data_dir, plan.quick, g_configs(plan), known, log=log, run_dir=run_dir)
    t0 = time.perf_counter()
    command = command or "fgl-jax reproduce fedgc" + (" --quick" if plan.quick else "")
    harness.run_cells(todo, measure, out, plan.quick, command=command, log=log)
    log(f"[fedgc] {len(todo)} cells in {time.perf_counter() - t0:.0f} s")
    return render(out, plan.quick, plan.table)


# ------------------------------------------------------------------------------------------------
# The committed results of the package-era reproduction (results*.json) as records
# ------------------------------------------------------------------------------------------------

def convert(folder: Path | str = RESULTS) -> int:
    """Convert every results*.json in `folder` (the runs store of fgl_jax.systems.fedgc.paper, up to
    this move) into records, numbers untouched: results.json / results_quick.json -> table "fedgc",
    results_<T>.json -> table T; each record keeps its file's meta (command, versions, machine, merged
    partial runs, wall time) under provenance.original. Returns how many records were written."""
    folder = Path(folder)
    n = 0
    for path in sorted(folder.glob("results*.json")):
        stem = path.stem
        quick = stem.startswith("results_quick")
        rest = stem[len("results_quick" if quick else "results"):]
        table = rest[1:] if rest else MAIN
        data = json.loads(path.read_text())
        last = next((r for r in data["runs"] if r["id"] == "_meta_last"), None)
        original = {**data["meta"], "file": path.name,
                    "wall_s_last_invocation": None if last is None else last["wall_s"]}
        recs = []
        for r in data["runs"]:
            if r["id"].startswith("_meta"):
                continue
            tag, what = r["id"].split("/", 1)
            if tag != harness.run_name(quick):
                raise ValueError(f"{path}: run {r['id']!r} is not a {harness.run_name(quick)} run")
            config = r.get("config")
            if config is None:   # an architectures record: trained on its base cell's G'
                config = arch_config(table, what.rsplit("/", 1)[0],
                                     "gcond" if what.endswith("/arch_gcond") else "recipe")
            cell = Cell(f"{table}/{what}", config, (r["seed"],) if isinstance(r.get("seed"), int) else (),
                        paper_of(what))
            metrics = {k: v for k, v in r.items() if k not in ("id", "config")}
            recs.append(harness.converted(cell, metrics, original, f"experiments/results/fedgc/{path.name}"))
        n += harness.write_converted(folder, quick, recs)
    return n


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="smoke run: Cora only, " + QUICK_PARTS)
    ap.add_argument("--data-dir", default=None, help="directory holding the Planetoid files (else $FGL_JAX_DATA)")
    ap.add_argument("--out", default=str(RESULTS), help="folder of the records and pages")
    ap.add_argument("--only", default=None, help="comma-separated parts, of: " + ",".join(PARTS)
                    + f" (default: {FULL_PARTS}; --quick: {QUICK_PARTS})")
    ap.add_argument("--datasets", default="cora,citeseer", help="comma-separated datasets")
    ap.add_argument("--seeds", type=int, default=1, help="number of seeds (partitions) per cell")
    ap.add_argument("--seed-start", type=int, default=0, help="first seed (seeds seed_start .. seed_start+seeds-1)")
    ap.add_argument("--fresh", action="store_true", help="run the cells already in the records again")
    ap.add_argument("--render", action="store_true", help="only re-render the pages from the records in --out")
    ap.add_argument("--write-md-only", action="store_true", help="the same as --render (the older name)")
    ap.add_argument("--variants", default=FULL_VARIANTS, help="Table 2 variants, of: " + ",".join(VARIANTS)
                    + " (--quick: " + ",".join(QUICK_VARIANTS) + ")")
    ap.add_argument("--ib-dim", type=int, default=None, help="override dim(z) of every cell")
    ap.add_argument("--ib-hidden", type=int, default=None, help="override the IB encoder hidden width of every cell")
    ap.add_argument("--table", default=None, help=f"record file and page of the cells (default {MAIN!r}, "
                    f"{PP_TABLE!r} with --protocol paper): records/<table>_<run>.jsonl, results_<table>.md")
    ap.add_argument("--suffix", default=None, help="the older name of --table: --suffix _x is --table x")
    ap.add_argument("--rounds", type=int, default=None, help="override the number of condensation rounds")
    ap.add_argument("--eval-rounds", default=None, help="comma-separated evaluation rounds (override)")
    ap.add_argument("--rates", default=None, help="comma-separated rates for Table 1 (default 0.25,0.5,1.0)")
    ap.add_argument("--base", default=DEFAULT_BASE, choices=BASES,
                    help="configuration Table 1 (rates other than 0.5), Table 3, the ablation and the γ sweep build on")
    ap.add_argument("--gammas", default=None, help="γ values of the sweep (default "
                    + ",".join(f"{g:g}" for g in GAMMA_GRID) + "; --quick: 0,0.01)")
    ap.add_argument("--protocol", default="val", choices=("val", "paper"),
                    help="model selection: val, or paper = the official code's test-based choices")
    ap.add_argument("--run-dir", default=None, type=Path,
                    help="keep each run cell's checkpoints in RUN_DIR/<cell id>; the same command run again "
                         "continues an interrupted cell from its newest checkpoint (default: no checkpoints)")
    args = ap.parse_args(argv)
    argv = sys.argv[1:] if argv is None else argv
    table = args.table or (args.suffix.lstrip("_") if args.suffix else None)
    if args.render or args.write_md_only:
        for t in ([table] if table else tables_in(args.out, args.quick)):
            print(f"wrote {render(args.out, args.quick, t)}")
        return 0
    try:
        plan = Plan.make(args.quick, args.only, args.datasets, args.seeds, args.seed_start, args.variants, args.rates,
                         args.gammas, args.base, args.protocol, args.rounds,
                         [int(v) for v in args.eval_rounds.split(",")] if args.eval_rounds else None,
                         args.ib_dim, args.ib_hidden, table)
    except ValueError as e:
        ap.error(str(e))
    path = reproduce(Path(args.out), args.quick, args.data_dir, plan=plan, fresh=args.fresh,
                     command="python experiments/fedgc/paper.py " + shlex.join(argv), run_dir=args.run_dir)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
