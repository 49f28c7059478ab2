"""Lumos: where does the accuracy at eps = 2 go? A measured study on Facebook (GCN).

    python experiments/lumos/noise_study.py [--data-dir D] [--epochs 100] [--tasks node link]
        [--variants eps2 inf ...] [--append] [--render]

Each variant trains the same Lumos pipeline (same split, same MCMC trees, same seed) and changes
one thing in what the neighbour leaves receive or in training, so the differences are caused by
that one thing:

  eps2            paper mechanism (Eqs. 26-27, bins = recipients, recovered x'' in the leaves)
  inf             raw neighbour features (no LDP)
  self_only       neighbour leaves get the midpoint (a+b)/2 only: the eps -> 0 limit
  bits            the one-bit report x' in {0, 0.5, 1} itself instead of the recovered x''
                  (post-processing of the eps-LDP output, so still eps-LDP; biased but bounded)
  wl_bins         paper-literal bins B(u) = wl(u) (spec A3 flag)
  dropout0.5      the official code's supervised-GCN dropout
  eps2_rescale    unbiased d/|bin| rescale (spec A5 option)
  mmse            receiver-side MMSE shrinkage of x'' towards the midpoint (denoise="mmse";
                  post-processing, still eps-LDP; beyond the paper)
  central_mlp     centralised MLP on own features only (what a device knows without neighbours)
  central_gcn     centralised GCN on the full training graph with raw features
  leak_all_edges  (link) trees built from ALL edges, held-out ones included, as the official code
                  does (spec §7.4) -- evaluation pairs unchanged
  disjoint_sup    (link) trees from 7/8 of the training edges, the loss's positives = the other 1/8
                  (not in any tree): supervision edges disjoint from message-passing edges

In the link task it also records, for the trained model, the AUC on the training pairs (tree
edges vs uniform pairs), the AUC of the degree product on the test pairs, and the rank
correlation between pooled embedding norm and degree: these locate a below-0.5 AUC.
On the one harness (experiments/harness.py): a cell is one (task, variant), its config the variant's
LumosConfig (a mapping with the `variant` label: what it changes is not a config field); each writes
one record in experiments/results/lumos/records/noise_study_full.jsonl and noise_study.md is rendered
from the records. Without --append the study starts a new table (the record file is replaced); with
it the variants run now replace their own records and the others stay.
"""
from __future__ import annotations

import argparse
import dataclasses
import functools
import os
import sys
from pathlib import Path
from typing import Mapping, Optional

if __package__ in (None, ""):  # run as a script: the checkout's root on the path (fgl_jax, experiments)
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import jax
import jax.numpy as jnp
import numpy as np

from fgl_jax import EdgeSplit, onebit, run, schema
from fgl_jax.systems.lumos import (LumosConfig, link_logits, load_features, lumos_algorithm, lumos_model, prepare,
                                   roc_auc, train_central)
from fgl_jax.systems.lumos import split as paper_split

from experiments import harness
from experiments.harness import Cell

TABLE = "noise_study"          # records/noise_study_full.jsonl
OUT = harness.RESULTS / "lumos"
VARIANTS = ("mmse", "eps2", "inf", "self_only", "bits", "wl_bins", "dropout0.5", "eps2_rescale", "leak_all_edges",
            "disjoint_sup", "central_mlp", "central_gcn")


def bits_table(prep, x, cfg):
    """Same draws as prepare() (same key), but the leaves get x' in {0, 0.5, 1} (not recovered)."""
    meta = prep.meta
    key = jax.random.fold_in(jax.random.key(cfg.seed), 1)
    rec, eps_coord = onebit.onebit_ldp(key, x, meta.num_bins, meta.pair_src, meta.recipient_bin, cfg.epsilon)
    c = (jnp.exp(eps_coord) + 1) / (jnp.exp(eps_coord) - 1)
    bits = (rec - 0.5) / c[jnp.asarray(meta.pair_src)][:, None] + 0.5      # invert Eq. 27 (a=0, b=1)
    n = x.shape[0]
    return prep.data.table.at[n:n + bits.shape[0]].set(bits)


def link_diagnostics(prep, cfg, state, g):
    model = lumos_model(cfg, g.num_classes)
    h, _ = model.apply(state["params"], prep.data.table, prep.data.trees, train=False)
    d = prep.data
    deg = np.bincount(np.concatenate([g.senders, g.receivers]), minlength=g.num_nodes)
    rng = np.random.default_rng(0)
    pos = np.asarray(d.pos)
    neg = np.stack([pos[:, 0], rng.integers(0, g.num_nodes, len(pos))], 1)
    pairs = jnp.asarray(np.concatenate([pos, neg]))
    lab = jnp.asarray(np.r_[np.ones(len(pos)), np.zeros(len(neg))])
    tp = np.asarray(d.test_pairs)
    degp = jnp.asarray((deg[tp[:, 0]] * deg[tp[:, 1]]).astype(np.float32))
    norm = np.linalg.norm(np.asarray(h), axis=1)
    from scipy.stats import spearmanr
    return {"train_pair_auc": float(roc_auc(link_logits(h, pairs), lab)),
            "test_auc_final_model": float(roc_auc(link_logits(h, d.test_pairs), d.test_label)),
            "test_auc_degree_product": float(roc_auc(degp, d.test_label)),
            "spearman_norm_degree": float(spearmanr(norm, deg).correlation)}


def base_config(task: str, epochs: int = 100) -> LumosConfig:
    """The paper's T on Facebook with the simulated Alg. 3 (as when this study was run), seed 0."""
    return LumosConfig(dataset="facebook", task=task, rounds=epochs, mcmc_iters=1000, mcmc_argmax="alg3")


def variant_config(task: str, variant: str, epochs: int = 100) -> LumosConfig:
    """The LumosConfig a variant trains (variants that change the leaves' inputs, not a field, keep the base)."""
    changes = {"inf": {"epsilon": float("inf")}, "wl_bins": {"bins": "workload"}, "mmse": {"denoise": "mmse"},
               "dropout0.5": {"dropout": 0.5}, "eps2_rescale": {"rescale": True}}.get(variant, {})
    return dataclasses.replace(base_config(task, epochs), **changes)


def cells(tasks=("node", "link"), variants=VARIANTS, epochs: int = 100) -> list[Cell]:
    """One cell per (task, variant); leak_all_edges and disjoint_sup are link-only."""
    return [Cell(f"{TABLE}/{task}/{v}", {"variant": v, **schema.to_dict(variant_config(task, v, epochs))}, (0,),
                 title=f"{task}/{v}")
            for task in tasks for v in variants if task == "link" or v not in ("leak_all_edges", "disjoint_sup")]


def measure(data_dir: Optional[str] = None):
    """cell -> the variant's row: best-validation metrics, epoch seconds (Lumos variants also the command
    and the validation curve every 10 epochs; link: the diagnostics of `link_diagnostics`)."""
    @functools.lru_cache(maxsize=1)
    def graph():
        g, x = load_features("facebook", data_dir)      # 128 most frequent binary features (already in [0, 1])
        g, split = paper_split(g, "link", 0)
        return g, x, split

    @functools.lru_cache(maxsize=2)
    def prepared(task: str, epochs: int):
        g, x, split = graph()
        return prepare(g, base_config(task, epochs), split if task == "link" else None, x_scaled=x)

    def run_variant(c: Cell) -> dict:
        v, names = c.config["variant"], {f.name for f in dataclasses.fields(LumosConfig) if f.init}
        cfg = schema.make(LumosConfig, {k: x for k, x in c.config.items() if k in names}, source=c.id)
        task, base = cfg.task, base_config(cfg.task, cfg.rounds)
        g, x, split = graph()
        sp_ = split if task == "link" else None
        if v.startswith("central_"):
            out = train_central(g, x, base, sp_, backbone=v.split("_")[1])
            return {"best": out["best"], "epoch_seconds": out["epoch_seconds"]}
        prep0 = prepared(task, cfg.rounds)
        prep = prep0
        if v in ("inf", "wl_bins", "mmse", "eps2_rescale"):
            prep = prepare(g, cfg, sp_, x_scaled=x)
        elif v == "self_only":
            n = g.num_nodes
            prep = dataclasses.replace(prep0, data=prep0.data.replace(table=prep0.data.table.at[n:-1].set(0.5)))
        elif v == "bits":
            prep = dataclasses.replace(prep0, data=prep0.data.replace(table=bits_table(prep0, x, base)))
        elif v == "leak_all_edges":
            allp = np.concatenate([split.train, split.val_pos, split.test_pos])
            leak = EdgeSplit(g.num_nodes, allp, split.val_pos, split.val_neg, split.test_pos, split.test_neg)
            prep = prepare(g, cfg, leak, x_scaled=x)
        elif v == "disjoint_sup":
            rng = np.random.default_rng(1)
            tr = split.train[rng.permutation(len(split.train))]
            k = len(tr) // 8
            sup, mp = tr[:k], tr[k:]
            tree_split = EdgeSplit(g.num_nodes, mp, split.val_pos, split.val_neg, split.test_pos, split.test_neg)
            prep = prepare(g, cfg, tree_split, x_scaled=x)
            sup2 = np.concatenate([sup, sup[:, ::-1]]).astype(np.int32)
            prep = dataclasses.replace(prep, data=prep.data.replace(pos=jnp.asarray(sup2)))
        res = run(lumos_algorithm(cfg, g.num_classes), prep.data, jax.random.key(cfg.seed), cfg.rounds)
        row = {"best": res.best, "epoch_seconds": res.run_seconds / cfg.rounds, "command": " ".join(sys.argv),
               "val_every_10": res.history["val_acc"][::10].tolist()}
        if task == "link":
            row["diag"] = link_diagnostics(prep, cfg, res.state, g)
        return row
    return run_variant


def render(recs: Mapping[str, dict]) -> str:
    """noise_study.md from the records (in their file order)."""
    epochs = sorted({r["config"]["rounds"] for r in recs.values()})
    md = ["# Lumos noise study: Facebook, GCN, one seed, "
          f"{', '.join(map(str, epochs))} epochs (test at best validation)\n",
          "| task | variant | test | best val | best epoch | train-pair AUC | degree-product AUC | "
          "Spearman(norm, degree) |", "|---|---|---|---|---|---|---|---|"]
    for rec in recs.values():
        t, v, r = rec["config"]["task"], rec["config"]["variant"], rec["metrics"]
        dg = r.get("diag", {})
        # rows computed before the roc_auc int32-overflow fix (n_pos * n_neg > 2^31) show > 1: not valid
        f = lambda name: ("n/a (overflow)" if name == "train_pair_auc" and dg.get(name, 0) > 1
                          else f"{dg[name]:.3f}" if name in dg else "–")
        md.append(f"| {t} | {v} | {r['best']['best_test']:.4f} | {r['best']['best_val']:.4f} | "
                  f"{r['best']['best_round']} | {f('train_pair_auc')} | {f('test_auc_degree_product')} | "
                  f"{f('spearman_norm_degree')} |")
    md += ["", "Reading the table (each row changes one thing against `eps2`, the paper's mechanism):", "",
           "- The evaluation is sound. On the same test pairs the degree product alone scores well above 0.5, "
           "and raw neighbour features (`inf`) score high with the same code.",
           "- At ε = 2 the recovered neighbour features are worse than none. `self_only` (the midpoint only) "
           "beats `eps2` in both tasks. Bounding the noise (`bits` = the unrecovered report, or `mmse` = "
           "shrinkage) gets back to or above `self_only`. These are post-processing, so they stay ε-LDP.",
           "- Link AUC < 0.5 is memorisation of shared noise. The training positives are exactly the tree pairs, "
           "and both endpoints' pooled embeddings contain the same noisy parent node P_i. Held-out edges have "
           "no such shared node. Evidence: with the loss's positives taken from edges that are in no tree "
           "(`disjoint_sup`), the same noisy features give a high AUC. So does building the trees from all "
           "edges (`leak_all_edges`), as the official code does, because the test edges then share nodes too.",
           "- Node task: `mmse` ≈ `self_only`, above the own-features MLP (`central_mlp`). The gain over the MLP "
           "comes through POOL, which carries the raw features of the trees' owners. At d = 128 and ε ≤ 4 the "
           "neighbours' LDP features themselves carry almost no signal (SNR per coordinate ≈ s²/(C²/4)).",
           "", "Rows accumulate over invocations with `--append`; this table came from "
           "`--tasks link node --epochs 100` (stopped after link/bits), then `--append --tasks link "
           "--variants mmse leak_all_edges disjoint_sup central_mlp`, then `--append --tasks node --variants mmse "
           "eps2 self_only bits central_mlp central_gcn` (each row's `command` in its record when recorded).", ""]
    return "\n".join(md)


def render_records(out: Path = OUT) -> Path:
    recs = harness.load(out, False, f"{TABLE}/")
    if not recs:
        raise ValueError(f"no noise-study records under {harness.records_dir(out)}: "
                         "run experiments/lumos/noise_study.py")
    return harness.write_table(out, TABLE, render(recs), list(recs.values()))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data-dir", default=None)
    ap.add_argument("--epochs", type=int, default=100)
    ap.add_argument("--tasks", nargs="*", default=["node", "link"])
    ap.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=VARIANTS)
    ap.add_argument("--append", action="store_true", help="keep the other variants' records (else a new table)")
    ap.add_argument("--out", default=str(OUT), help="folder of the records and noise_study.md")
    ap.add_argument("--render", action="store_true", help="only re-render noise_study.md from the records")
    args = ap.parse_args(argv)
    if args.data_dir:
        os.environ["FGL_JAX_DATA"] = args.data_dir
    if not args.render:
        path = harness.records_file(args.out, False, TABLE)
        if not args.append and path.exists():
            path.unlink()        # a new study: its table holds only what this invocation runs
        harness.run_cells(cells(args.tasks, args.variants, args.epochs), measure(args.data_dir), args.out, quick=False)
    print(f"wrote {render_records(Path(args.out))}")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except ValueError as e:     # no records / a bad config value: one line, no stack trace
        sys.exit(f"{Path(__file__).name}: {e}")
