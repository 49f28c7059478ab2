"""Reproduce FedGC's tables through the engine: Table 1 accuracy, Table 2 attack AUC, Table 3
architectures, the ablation and γ sweep, a synthetic arxiv-sized scaling run, and diagnostics
(`zceiling`, `attacksel`, `synthinit`). Writes results{_quick}.{json,md} into `out`.

    from fgl_jax.systems.fedgc import paper
    paper.reproduce(Path("experiments/results/fedgc"), quick=True)

Cells are configs (`paper_cells`); every cell runs as `FedGCRun(cfg, graph, cache)` + the engine
(`fgl_jax.experiment.execute`), with the attack and the architectures from the run's own hooks.
Results are appended run by run to results.json, so an interrupted full run keeps what finished
(re-running skips finished runs unless `fresh`). Tables: `paper_tables.write_md`.
"""
from __future__ import annotations

import dataclasses
import json
import os
import platform
import shlex
import sys
import time
from pathlib import Path
from typing import Optional, Sequence

import jax
import jax.numpy as jnp
import numpy as np
import optax

from fgl_jax import experiment, schema
from fgl_jax.batch import full_graph_batch, stack_graphs, unstack
from fgl_jax.federated.evaluation import evaluate as evaluate_pooled
from fgl_jax.federated.client import local_train
from fgl_jax.federated.metrics import masked_cross_entropy
from fgl_jax.nn import make_model
from fgl_jax.systems.fedgc import paper_tables
from fgl_jax.systems.fedgc.attack import MIAConfig, posteriors, train_gcn
from fgl_jax.systems.fedgc.config import FedGCConfig
from fgl_jax.systems.fedgc.data import normalize_features, prepare
from fgl_jax.systems.fedgc.paper_cells import (BASES, CEILING_SPACES, DEFAULT_BASE, GAMMA_GRID, SPARSE_INIT_BIAS,
                                               SYNTH_VARIANTS, VARIANTS, base_config, synthetic_config, variant_config)
from fgl_jax.systems.fedgc.program import FedGCRun

PARTS = ("table1", "table2", "table3", "ablation", "gamma", "synthetic", "synthinit", "zceiling", "attacksel")
QUICK_PARTS = "table2,table3,synthetic"       # the CI smoke run stays a few minutes
FULL_PARTS = "table1,table2,table3,ablation,gamma,synthetic"


def versions() -> dict:
    import flax
    return {"python": sys.version.split()[0], "jax": jax.__version__, "flax": flax.__version__,
            "optax": optax.__version__, "numpy": np.__version__}


def machine() -> dict:
    return {"platform": platform.platform(), "processor": platform.processor() or platform.machine(),
            "cpus": os.cpu_count(), "loadavg_at_start": os.getloadavg()}


class Store:
    """results*.json: meta + one record per run id, rewritten after every run."""

    def __init__(self, path: Path, fresh: bool, meta: dict):
        self.path = path
        data = json.loads(path.read_text()) if path.exists() and not fresh else {}
        self.data = {"meta": meta, "runs": data.get("runs", [])}

    def has(self, rid: str) -> bool:
        return any(r["id"] == rid for r in self.data["runs"])

    def get(self, rid: str):
        return next((r for r in self.data["runs"] if r["id"] == rid), None)

    def add(self, rec: dict):
        self.data["runs"] = [r for r in self.data["runs"] if r["id"] != rec["id"]] + [rec]
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.write_text(json.dumps(self.data, indent=1, default=float))


class Runner:
    """Runs cells through the engine, sharing host preparation (partition, self-training, IB,
    shadow models) across the cells of one invocation: identical results, computed once."""

    def __init__(self, store: Store, log=None):
        self.store = store
        self.cache: dict = {}
        self.log = log or (lambda m: print(m, flush=True))

    def execute(self, graph, cfg: FedGCConfig):
        """(FedGCRun, RunResult, FedGCResult) of one cell."""
        run = FedGCRun(cfg, graph=graph, cache=self.cache, log=self.log)
        res = experiment.execute(run.program, cfg.seed, system="fedgc", config_text=schema.dump(cfg, "fedgc"))
        return run, res, run.result(res)

    def run_one(self, rid, graph, cfg: FedGCConfig, extra=None):
        """Run a cell (unless stored) and store its record; cfg.mia adds the attack (Hooks.finalize)."""
        if self.store.has(rid):
            self.log(f"[skip] {rid}")
            return self.store.get(rid), None
        t = time.perf_counter()
        run, res, fr = self.execute(graph, cfg)
        rec = {"id": rid, "dataset": graph.name, "num_classes": int(graph.num_classes), "seed": cfg.seed,
               "config": schema.to_dict(cfg), **fr.final, "history": fr.history, **(extra or {})}
        rec.update({k: v for k, v in res.extras.items() if k.startswith("mia_")})
        rec["wall_s"] = time.perf_counter() - t
        self.store.add(rec)
        self.log(f"[done] {rid}: " + json.dumps({k: rec[k] for k in rec if k.startswith(("test_acc", "mia_auc"))}))
        return rec, (run, fr)


def reproduce(out: Path, quick: bool = False, data_dir: Optional[str] = None, *, only: Optional[str] = None,
              datasets: str = "cora,citeseer", seeds: int = 1, seed_start: int = 0, fresh: bool = False,
              write_md_only: bool = False, variants: str = "ib,ibfs,noib,pl,reg,ldp", ib_dim: Optional[int] = None,
              ib_hidden: Optional[int] = None, suffix: str = "", merge: str = "", rounds: Optional[int] = None,
              eval_rounds: Optional[Sequence[int]] = None, rates: Optional[str] = None, base: str = DEFAULT_BASE,
              gammas: Optional[str] = None, protocol: str = "val", command: Optional[str] = None) -> str:
    """Run the parts `only` (default: table2,table3,synthetic in quick mode, else table1,table2,table3,
    ablation,gamma,synthetic) and write out/results{_quick}{suffix}.{json,md}; returns the markdown.

    base: the FedGC configuration Table 1 (rates other than 0.5), Table 3, the ablation and the γ
    sweep build on ('ibfs': IB lr 0.01 + sparse A' init; 'ib': the code's IB lr and Φ init).
    protocol 'paper': the official code's test-based choices (self-training, Z*, reported checkpoint).
    rounds / eval_rounds / ib_dim / ib_hidden override every cell (partial or diagnostic runs).
    """
    out = Path(out)
    if base not in BASES:
        raise ValueError(f"base must be one of {BASES}, got {base!r}")
    overrides: dict = {}
    if protocol != "val":
        overrides["protocol"] = protocol
    if rounds:
        overrides["rounds"] = int(rounds)
    if eval_rounds:
        overrides["eval_rounds"] = tuple(int(v) for v in eval_rounds)
    overrides.update({k: v for k, v in (("ib_dim", ib_dim), ("ib_hidden", ib_hidden)) if v})
    t0 = time.perf_counter()
    parts = set((only or (QUICK_PARTS if quick else FULL_PARTS)).split(","))
    unknown = parts - set(PARTS)
    if unknown:
        raise ValueError(f"unknown part(s) {sorted(unknown)}; choose from {', '.join(PARTS)}")
    if quick:
        fresh = True     # a quick run is a smoke test of the code: never reuse stored runs
    tag = "quick" if quick else "full"
    meta = {"command": command or "fgl-jax reproduce fedgc" + (" --quick" if quick else ""), "mode": tag,
            "versions": versions(), "machine": machine()}
    paper_tables.OUT, paper_tables.SUFFIX = out, suffix
    path = out / (("results_quick" if quick else "results") + suffix + ".json")
    if write_md_only:
        store = Store(path, False, json.loads(path.read_text())["meta"])
    else:
        store = Store(path, fresh, meta)
    for sfx in filter(None, merge.split(",")):
        src = out / (("results_quick" if quick else "results") + sfx + ".json")
        other = json.loads(src.read_text())
        store.data["meta"].setdefault("merged", []).append(
            {"file": src.name, "command": other["meta"].get("command"),
             "wall_s": next((r["wall_s"] for r in other["runs"] if r["id"] == "_meta_last"), None)})
        for rec in other["runs"]:
            if not rec["id"].startswith("_meta"):
                store.add(rec)
    if write_md_only:
        return paper_tables.write_md(store, tag)
    runner = Runner(store)
    names = ["cora"] if quick else datasets.split(",")
    rate_list = [0.5] if quick else [float(v) for v in (rates or "0.25,0.5,1.0").split(",")]
    gamma_list = ([float(v) for v in gammas.split(",")] if gammas else [0.0, 1e-2] if quick else list(GAMMA_GRID))
    if any(g < 0 for g in gamma_list):
        raise ValueError(f"gammas must be >= 0, got {gammas}")
    pre = "" if base == "ib" else base + "-"    # run-id prefix of the ablation / γ runs on this base
    cell = lambda var, seed, **kw: dataclasses.replace(variant_config(var, quick, overrides), seed=seed, **kw)
    from fgl_jax.data.planetoid import load_planetoid
    for ds in names:
        graph = load_planetoid(ds, data_dir=data_dir)
        for seed in range(seed_start, seed_start + seeds):
            res_base = None
            if "table2" in parts or "table1" in parts:
                # Table 2 at the middle ratio: every variant with the attack
                chosen = [v for v in variants.split(",") if v]
                bad = [v for v in chosen if v not in VARIANTS]
                if bad:
                    raise ValueError(f"unknown variants {bad}; choose from {list(VARIANTS)}")
                for var in chosen:
                    _, got = runner.run_one(f"{tag}/{ds}/r0.5/{var}/s{seed}", graph,
                                            cell(var, seed, dataset=ds, mia=True))
                    if var == base:
                        res_base = got
            t3_ids = [f"{tag}/{ds}/r0.5/{base}/s{seed}/{k}" for k in ("arch", "arch_gcond")]
            if "table3" in parts and not all(store.has(i) for i in t3_ids):
                if res_base is None:  # stored by an earlier invocation: recompute G' (deterministic) without the attack
                    run, _, fr = runner.execute(graph, cell(base, seed, dataset=ds))
                    res_base = (run, fr)
                    old = store.get(f"{tag}/{ds}/r0.5/{base}/s{seed}")
                    if old is not None and abs(old["test_acc"] - fr.final["test_acc"]) > 1e-6:
                        raise RuntimeError(f"{ds} seed {seed}: recomputed G' differs from the stored run "
                                           f"({fr.final['test_acc']} vs {old['test_acc']}): not deterministic?")
                    runner.log(f"[table3] {ds} s{seed} {base}: recomputed G' test acc {fr.final['test_acc']:.4f}")
                table3(store, tag, ds, seed, *res_base, base)
            if "table1" in parts:
                for rate in rate_list:
                    if rate != 0.5:
                        runner.run_one(f"{tag}/{ds}/r{rate}/{base}/s{seed}", graph, cell(base, seed, dataset=ds, rate=rate))
            if "zceiling" in parts:
                z_ceiling(runner, tag, ds, graph, seed, quick, overrides)
            if "attacksel" in parts:
                for var in (base, "noib"):
                    attack_selected(runner, tag, ds, graph, seed, var, quick, overrides)
            if "ablation" in parts and ds == "cora":
                # (results_ablation.json also holds a 500-round diagnostic run "_lr_feat0.05", a 5x larger X' lr)
                for name, kw in (("-com", {"l_hop": 0}), ("-st", {"self_train": False})):
                    runner.run_one(f"{tag}/{ds}/r0.5/{pre}ablation{name}/s{seed}", graph,
                                   cell(base, seed, dataset=ds, mia=True, **kw))
            if "gamma" in parts and ds == "cora":
                for gamma in gamma_list:
                    runner.run_one(f"{tag}/{ds}/r0.5/{pre}gamma{gamma}/s{seed}", graph,
                                   cell(base, seed, dataset=ds, mia=True, gamma=gamma))
    if "synthetic" in parts:
        synthetic(runner, tag, quick)
    if "synthinit" in parts:
        synthetic_init(runner, tag, quick)
    store.data["meta"]["wall_s_this_invocation"] = time.perf_counter() - t0
    store.add({"id": "_meta_last", "wall_s": time.perf_counter() - t0})
    return paper_tables.write_md(store, tag)


def attack_selected(runner: Runner, tag, ds, graph, seed, var, quick, overrides=None):
    """Which G' the attack targets (`attacksel`): Table 2 attacks the LAST round's G'; a deployment
    would publish the checkpoint the run reports. Re-runs the Table 2 cell `var` (deterministic on one
    machine; checked against the stored cell when this store has it) and attacks both G' with the same
    shadow, key and queries; stored as `.../s<seed>/attack_selected`."""
    store = runner.store
    rid = f"{tag}/{ds}/r0.5/{var}/s{seed}/attack_selected"
    if store.has(rid):
        runner.log(f"[skip] {rid}")
        return
    t = time.perf_counter()
    cfg = dataclasses.replace(variant_config(var, quick, overrides), dataset=ds, seed=seed)
    run, _, res = runner.execute(graph, cfg)
    old = store.get(f"{tag}/{ds}/r0.5/{var}/s{seed}")
    if old is not None and abs(old["test_acc"] - res.final["test_acc"]) > 1e-6:
        raise RuntimeError(f"{rid}: the re-run differs from the stored Table 2 cell "
                           f"({res.final['test_acc']} vs {old['test_acc']}): not deterministic?")
    rec = {"id": rid, "dataset": ds, "seed": seed, "variant": var, "test_acc": res.final["test_acc"],
           "round": res.final.get("round"), "config": schema.to_dict(cfg)}
    for which in ("last", "selected"):
        out = run.attack(res, MIAConfig(target_graph=which))
        rec[which] = {k: v for k, v in out.items() if k.startswith("mia_")}
    rec["wall_s"] = time.perf_counter() - t
    store.add(rec)
    runner.log(f"[done] {rid}: AUC Z last {rec['last'].get('mia_auc_z'):.4f} (round {rec['last']['mia_target_round']}) "
               f"selected {rec['selected'].get('mia_auc_z'):.4f} (round {rec['selected']['mia_target_round']})")


def table3(store, tag, ds, seed, run: FedGCRun, res, base="ib"):
    """Cross-architecture: train each architecture on the same G' (from the `base` variant's run).

    Two protocols, two records: `.../arch` trains every library architecture with the GCN evaluation
    recipe of Table 1; `.../arch_gcond` follows GCond's cross-architecture tester, which the paper's
    Table 3 comes from (its architectures and training settings: `evaluate.gcond_arch_configs`).
    """
    for kind, protocol in (("arch", "recipe"), ("arch_gcond", "gcond")):
        rid = f"{tag}/{ds}/r0.5/{base}/s{seed}/{kind}"
        if store.has(rid):
            continue
        # on the G' of the checkpoint Table 1 reports (validation-selected), not the last round's
        out = run.architectures(res, protocol)
        store.add({"id": rid, "dataset": ds, "seed": seed, "archs": out,
                   "g_round": res.final.get("round") if res.selected is not None else run.cfg.rounds})


def synthetic(runner: Runner, tag, quick):
    """Synthetic arxiv-sized CSBM (NOT ogbn-arxiv): 169,343 nodes, 40 classes, 128 features, 5 clients,
    GCN relay with per-class caps (256 targets) and fanout 10, rate 0.005 (the paper's middle arxiv ratio
    0.25 %: N' = 508, about 13 synthetic nodes per class), no IB (scaling). Beside it: a GCN trained
    centrally on the whole graph's training nodes (the graph's learnability ceiling for a 2-layer GCN)
    and the chance level 1/40. Two variants (SYNTH_VARIANTS); quick runs only the sparse-init one."""
    from fgl_jax.data.synthetic import csbm
    n = 20000 if quick else 169343
    g = csbm(num_nodes=n, num_classes=40, num_features=128, avg_degree=13.7, homophily=0.65,
             feature_signal=1.0, seed=0, name=f"synthetic-arxiv-csbm-{n}")
    rounds = 10 if quick else 300
    central = None
    for sfx, (bias, ft, note) in SYNTH_VARIANTS.items():
        rid = f"{tag}/synthetic-arxiv/csbm{sfx}"
        if runner.store.has(rid) or (quick and bias is None):
            continue
        cfg = synthetic_config(0.005, rounds, (rounds,) if quick else (150, rounds), bias, ft)
        mcfg = dataclasses.replace(MIAConfig(), iters=50 if quick else 300)
        if central is None:
            t = time.perf_counter()
            gs = normalize_features(g, "standard")
            batch = unstack(full_graph_batch(gs), 0)  # one graph, no client axis
            model, params = train_gcn(jax.random.PRNGKey(1), batch, batch.train_mask, 128, 40, mcfg)
            pred = np.asarray(posteriors(model, params, batch)).argmax(-1)[:g.num_nodes]  # drop node padding
            te = np.asarray(g.test_mask)
            central = float((pred[te] == g.y[te]).mean())
            runner.log(f"[synthetic] central GCN on the whole graph: test acc {central:.4f} "
                       f"({time.perf_counter() - t:.0f} s)")
        runner.run_one(rid, g, cfg, extra={"note": "synthetic CSBM of ogbn-arxiv's size; NOT ogbn-arxiv; "
                                                   f"l_hop=1 to fit memory; no IB; {note}",
                                           "central_gcn_test_acc": central, "central_gcn_iters": mcfg.iters,
                                           "chance": 1.0 / g.num_classes})


def synthetic_init(runner: Runner, tag, quick):
    """Φ-init comparison on a 20k-node CSBM (40 classes, same generator as `synthetic`): N' = 200
    (rate 1/60, 5 synthetic nodes per class), 200 rounds, no fine-tuning, default init vs bias -4.6.
    Stores the matching loss, A' density and how well X' class means align with the real ones."""
    from fgl_jax.data.synthetic import csbm
    n, rounds = (4000, 20) if quick else (20000, 200)
    g = csbm(num_nodes=n, num_classes=40, num_features=128, avg_degree=13.7, homophily=0.65,
             feature_signal=1.0, seed=0, name=f"synthetic-csbm-{n}")
    real = np.asarray(normalize_features(g, "standard").x)
    real_mean = np.stack([real[g.train_mask & (g.y == c)].mean(0) for c in range(40)])
    for bias in (None, SPARSE_INIT_BIAS):
        rid = f"{tag}/synthetic-init/csbm{n}/bias{bias}"
        if runner.store.has(rid):
            continue
        cfg = synthetic_config(1 / 60, rounds, (rounds // 2, rounds), bias, 0)
        rec, (_, res) = runner.run_one(rid, g, cfg, extra={"pge_init_bias": bias, "chance": 1.0 / g.num_classes})
        a, x, y = res.condensed
        off = a[~np.eye(len(a), dtype=bool)]
        syn_mean = np.stack([x[y == c].mean(0) for c in range(40)])
        rec.update(loss_first=float(res.losses[0]), loss_last=float(res.losses[-1]),
                   a_offdiag_mean=float(off.mean()), x_syn_std=float(x.std()),
                   class_mean_corr=float(np.mean([np.corrcoef(syn_mean[c], real_mean[c])[0, 1] for c in range(40)])))
        runner.store.add(rec)


def client_graph_ceiling(key, batch, in_dim: int, num_classes: int, steps: int = 300, check_every: int = 10) -> dict:
    """The real-graph reference for any G' in a feature space: ONE 2-layer GCN (hidden 256, dropout 0.5, Adam 1e-2,
    L2 5e-4) trained directly on every client's real local graph at once (shared weights, loss over
    all clients' own training nodes), keeping the weights with the best pooled validation accuracy
    (checked every `check_every` steps). batch: stacked client graphs [M, ...] in that feature space.
    Returns pooled val_acc / test_acc of the kept weights. Not a strict bound: the G' evaluation
    also fine-tunes locally and selects per client, and can land above it."""
    model = make_model("gcn", in_dim, num_classes, hidden=256, num_layers=2, dropout=0.5)
    opt = optax.chain(optax.add_decayed_weights(5e-4), optax.adam(1e-2))
    n_train = jnp.maximum(batch.train_mask.sum(), 1)

    def loss(p, b, k):  # mean CE over all clients' own training nodes (b: every client, [M, ...])
        ks = jax.random.split(k, b.y.shape[0])
        per = jax.vmap(lambda c, kk: masked_cross_entropy(model.apply(p, c, train=True, rngs={"dropout": kk}),
                                                          c.y, c.train_mask) * c.train_mask.sum())(b, ks)
        return per.sum() / n_train

    @jax.jit
    def run(key):
        k0, k1 = jax.random.split(key)
        p = model.init(k0, unstack(batch, 0), train=False)

        def chunk(carry, kk):
            p, o, best_v, best_t = carry
            p, o, _ = local_train(loss, opt, check_every, p, o, batch, kk, 1.0)
            acc = evaluate_pooled(model, p, batch, per_client=False)
            better = acc["val_acc"] > best_v
            return (p, o, jnp.where(better, acc["val_acc"], best_v), jnp.where(better, acc["test_acc"], best_t)), None

        init = (p, opt.init(p), jnp.float32(-1.0), jnp.float32(0.0))
        (_, _, v, t), _ = jax.lax.scan(chunk, init, jax.random.split(k1, steps // check_every))
        return v, t

    v, t = run(key)
    return {"val_acc": float(v), "test_acc": float(t)}


def z_ceiling(runner: Runner, tag, ds, graph, seed, quick, overrides=None):
    """`zceiling`: how well a GCN can do on the clients' real graphs in each feature space the
    condensation sees (raw X; Z from the IB encoder at lr 2e-3 and at IB_FAST_LR), so the IB runs'
    accuracy gap can be split into what Z loses and what condensing loses."""
    for name, kw in CEILING_SPACES.items():
        rid = f"{tag}/{ds}/zceiling/{name}/s{seed}"
        if runner.store.has(rid):
            continue
        cfg = base_config(quick, overrides, dataset=ds, seed=seed, **kw)
        t = time.perf_counter()
        prep = prepare(graph, cfg, seed, log=runner.log, cache=runner.cache)
        batch = stack_graphs(prep.eval_graphs, prep.ids)
        res = client_graph_ceiling(jax.random.PRNGKey(seed + 20), batch, prep.eval_graphs[0].x.shape[1],
                                   graph.num_classes)
        rec = {"id": rid, "dataset": graph.name, "seed": seed, "config": schema.to_dict(cfg), "space": name, **res,
               "pseudo_label_test_acc": prep.info.get("pseudo_label_test_acc"), "wall_s": time.perf_counter() - t}
        runner.store.add(rec)
        runner.log(f"[done] {rid}: val {res['val_acc']:.3f} test {res['test_acc']:.3f}")
