"""Lumos: where does the accuracy at eps = 2 go? A measured study on Facebook (GCN).

    python experiments/lumos/noise_study.py [--data-dir D] [--epochs 100] [--tasks node link]

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
Writes experiments/results/lumos/noise_study.{md,json}.
"""
from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from experiments.common import RESULTS, provenance, write_results  # noqa: E402
from fgl_jax import EdgeSplit, onebit, run  # noqa: E402
from fgl_jax.systems.lumos import (LumosConfig, link_logits, load_features, lumos_algorithm, lumos_model,  # noqa: E402
                                   prepare, roc_auc, train_central)
from fgl_jax.systems.lumos import split as paper_split  # noqa: E402

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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data-dir", default=None)
    ap.add_argument("--epochs", type=int, default=100)
    ap.add_argument("--tasks", nargs="*", default=["node", "link"])
    ap.add_argument("--variants", nargs="+", default=list(VARIANTS))
    ap.add_argument("--append", action="store_true", help="keep the rows of an earlier noise_study.json")
    args = ap.parse_args()
    if args.data_dir:
        os.environ["FGL_JAX_DATA"] = args.data_dir
    t0 = time.perf_counter()
    g, x = load_features("facebook", args.data_dir)      # 128 most frequent binary features (already in [0, 1])
    g, split = paper_split(g, "link", 0)
    rows: dict = {}
    out_path = RESULTS / "lumos"
    if args.append and (out_path / "noise_study.json").exists():
        import json
        rows.update(json.loads((out_path / "noise_study.json").read_text())["rows"])

    def save():
        md = ["# Lumos noise study: Facebook, GCN, one seed, "
              f"{args.epochs} epochs (test at best validation)\n",
              "| task | variant | test | best val | best epoch | train-pair AUC | degree-product AUC | "
              "Spearman(norm, degree) |", "|---|---|---|---|---|---|---|---|"]
        for k, r in rows.items():
            t, v = k.split("/")
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
               "eps2 self_only bits central_mlp central_gcn` (each row's `command` in the JSON when recorded).", ""]
        write_results(out_path, "noise_study", "\n".join(md), {"rows": rows, "provenance": provenance(t0, vars(args))})

    for task in args.tasks:
        sp_ = split if task == "link" else None
        # the paper's T on Facebook with the simulated Alg. 3 (as when this study was run)
        base = LumosConfig(dataset="facebook", task=task, rounds=args.epochs, mcmc_iters=1000, mcmc_argmax="alg3")
        prep0 = prepare(g, base, sp_, x_scaled=x)
        for v in args.variants:
            cfg, prep = base, prep0
            if v == "inf":
                cfg = dataclasses.replace(base, epsilon=float("inf"))
                prep = prepare(g, cfg, sp_, x_scaled=x)
            elif v == "self_only":
                n = g.num_nodes
                prep = dataclasses.replace(prep0, data=prep0.data.replace(
                    table=prep0.data.table.at[n:-1].set(0.5)))
            elif v == "bits":
                prep = dataclasses.replace(prep0, data=prep0.data.replace(table=bits_table(prep0, x, base)))
            elif v == "wl_bins":
                cfg = dataclasses.replace(base, bins="workload")
                prep = prepare(g, cfg, sp_, x_scaled=x)
            elif v == "mmse":
                cfg = dataclasses.replace(base, denoise="mmse")
                prep = prepare(g, cfg, sp_, x_scaled=x)
            elif v == "dropout0.5":
                cfg = dataclasses.replace(base, dropout=0.5)
            elif v == "eps2_rescale":
                cfg = dataclasses.replace(base, rescale=True)
                prep = prepare(g, cfg, sp_, x_scaled=x)
            elif v == "leak_all_edges":
                if task != "link":
                    continue
                allp = np.concatenate([split.train, split.val_pos, split.test_pos])
                leak = EdgeSplit(g.num_nodes, allp, split.val_pos, split.val_neg, split.test_pos, split.test_neg)
                prep = prepare(g, cfg, leak, x_scaled=x)
            elif v == "disjoint_sup":
                if task != "link":
                    continue
                rng = np.random.default_rng(1)
                tr = split.train[rng.permutation(len(split.train))]
                k = len(tr) // 8
                sup, mp = tr[:k], tr[k:]
                tree_split = EdgeSplit(g.num_nodes, mp, split.val_pos, split.val_neg, split.test_pos, split.test_neg)
                prep = prepare(g, cfg, tree_split, x_scaled=x)
                sup2 = np.concatenate([sup, sup[:, ::-1]]).astype(np.int32)
                prep = dataclasses.replace(prep, data=prep.data.replace(pos=jnp.asarray(sup2)))
            if v.startswith("central_"):
                out = train_central(g, x, base, sp_, backbone=v.split("_")[1])
                rows[f"{task}/{v}"] = {"best": out["best"], "epoch_seconds": out["epoch_seconds"]}
                print(f"[{time.strftime('%H:%M:%S')}] {task}/{v}: {out['best']}", flush=True)
                save()
                continue
            res = run(lumos_algorithm(cfg, g.num_classes), prep.data, jax.random.key(cfg.seed), cfg.rounds)
            epoch_s = res.run_seconds / cfg.rounds
            row = {"best": res.best, "epoch_seconds": epoch_s, "command": " ".join(sys.argv),
                   "val_every_10": res.history["val_acc"][::10].tolist()}
            if task == "link":
                row["diag"] = link_diagnostics(prep, cfg, res.state, g)
            rows[f"{task}/{v}"] = row
            print(f"[{time.strftime('%H:%M:%S')}] {task}/{v}: {res.best} {row.get('diag', '')} "
                  f"{epoch_s:.2f} s/epoch", flush=True)
            save()
    save()      # `--append --tasks` (no task) only re-renders the table


if __name__ == "__main__":
    main()
