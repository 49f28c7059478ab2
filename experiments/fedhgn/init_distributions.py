"""Do fgl_jax's FedHGN initial parameters follow the authors' initialisers? Group by group, from samples.

    python experiments/fedhgn/init_distributions.py --bin-dir <FedHGN repo>/data/aifb-hetero
        --init-dir <dir of official_init_edges3_<seed>.pkl> [--seeds 1000,2000,...]

The .pkl files come from `official_init/dump_official_init.py`, run inside the authors' checkout
(their FedHGN(args) object built after set_random_seeds(seed), nothing trained). For each parameter
group this script pools the authors' values over the seeds and the values fgl_jax's FedHGN draws
on the same split file (the algorithm's init with the engine's init key of each seed; only the
relation slots and embedding rows in use), and compares: the initialiser each side uses (read from
the authors' HGNModel.py / Decoders.py, DGL 2.1's HeteroEmbedding and torch.nn.Linear), the
bound or sd it implies, the empirical max |x| and sd of both samples, and a two-sample
Kolmogorov-Smirnov test (scipy) of the two pools.

Groups: V (bases of the h2o layer, [B, D, D]), beta (every client's basis coefficients), emb
(every client's node embeddings), W_out / b_out (the classifier), b1 / b2 (layer biases).
With the record of official_init.py (results_official_init_RE3.json, 40 seeds of fgl_jax trained from
the authors' initial parameters "all", its own "none", and the mixes), it also tests whether those
five groups' test accuracies could come from one distribution (one-way ANOVA and Kruskal-Wallis,
scipy), and "all" against "none" alone (Welch's t-test): with identical initialisers the groups
differ only by their draws.
Writes experiments/results/fedhgn/results_init_distributions.{md,json}.
"""
from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import jax
import numpy as np
from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from experiments.common import RESULTS, provenance, write_results  # noqa: E402
from fgl_jax import load_official_split, safe_load  # noqa: E402
from fgl_jax.systems.fedhgn import FedHGNConfig, hetero_fed_data, program  # noqa: E402

D, B = 64, 20
RELU_GAIN = math.sqrt(2.0)          # torch.nn.init.calculate_gain('relu')
# group -> (the authors' initialiser, fgl_jax's, the theoretical bound (uniform) or sd (normal), kind)
INITS = {
    "V": ("xavier_uniform_(gain=calculate_gain('relu')) on a (B, D, D) tensor: torch fans D*D in, B*D out",
          "U(±basis_init_bound(B, D, D))", RELU_GAIN * math.sqrt(6 / (D * D + B * D)), "uniform"),
    "beta": ("xavier_uniform_(gain=calculate_gain('relu')) on each relation's (1, B) view",
             "U(±coeff_init_bound(B))", RELU_GAIN * math.sqrt(6 / (B + 1)), "uniform"),
    "emb": ("dgl.nn.HeteroEmbedding = one torch nn.Embedding per node type: N(0, 1)",
            "N(0, 1)", 1.0, "normal"),
    "W_out": ("nn.Linear default: kaiming_uniform_(a=√5) = U(±1/√fan_in), fan_in = D",
              "U(±1/√D)", 1 / math.sqrt(D), "uniform"),
    "b_out": ("nn.Linear default bias: U(±1/√fan_in)", "U(±1/√D)", 1 / math.sqrt(D), "uniform"),
    "b1": ("zeros_", "zeros", 0.0, "zero"),
    "b2": ("zeros_", "zeros", 0.0, "zero"),
}


def official_groups(init: dict) -> dict:
    """One seed's dump -> {group: flat float64 values}."""
    se, sd = init["server_enc"], init["server_dec"]
    out = {"V": se["model.layers.1.bases"], "b1": se["model.layers.0.h_bias"], "b2": se["model.layers.1.h_bias"],
           "W_out": sd["linear.weight"], "b_out": sd["linear.bias"],
           "beta": np.concatenate([np.ravel(v) for c in init["clients"] for v in c["coeff"].values()]),
           "emb": np.concatenate([np.ravel(v) for c in init["clients"] for v in c["emb"].values()])}
    return {k: np.asarray(v, np.float64).ravel() for k, v in out.items()}


def ours_groups(alg, data, seed: int) -> dict:
    """fgl_jax's draw for a seed: the state the engine starts from (init key = first split of the seed's key)."""
    st = alg.init(jax.random.split(jax.random.key(seed))[0], data)
    blocks = data.blocks
    rel_mask, n_emb = np.asarray(blocks.rel_mask), np.asarray(blocks.num_emb)
    beta, emb = np.asarray(st.coeffs["beta"]), np.asarray(st.private["emb"])
    out = {k: np.asarray(st.server[k]) for k in ("V", "b1", "b2", "W_out", "b_out")}
    out["beta"] = beta[rel_mask]                                        # slots a client has
    out["emb"] = np.concatenate([emb[c, :n_emb[c]] for c in range(emb.shape[0])])   # rows in use
    return {k: np.asarray(v, np.float64).ravel() for k, v in out.items()}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin-dir", required=True, help="the authors' data/aifb-hetero (their split files)")
    ap.add_argument("--init-dir", required=True, help="folder of official_init_edges3_<seed>.pkl")
    ap.add_argument("--seeds", default="1000,2000,3000,4000,5000,6000,7000,8000,9000,10000")
    a = ap.parse_args(argv)
    t0 = time.perf_counter()
    seeds = [int(s) for s in a.seeds.split(",") if s]
    data = hetero_fed_data(load_official_split(Path(a.bin_dir) / "aifb-hetero_random-edges_3.bin"))
    alg = program(FedHGNConfig(), data).algorithm
    theirs, ours = {}, {}
    for seed in seeds:
        path = Path(a.init_dir) / f"official_init_edges3_{seed}.pkl"
        if not path.exists():
            raise SystemExit(f"{path}: missing (run official_init/dump_official_init.py --seed {seed} first)")
        o = official_groups(safe_load(path)["init"])
        mine = ours_groups(alg, data, seed)
        for g in INITS:
            theirs.setdefault(g, []).append(o[g])
            ours.setdefault(g, []).append(mine[g])
    rows, L = {}, ["# FedHGN initial parameters: the authors' code vs fgl_jax (AIFB RE K=3)", "",
                   f"Pooled over seeds {seeds[0]}..{seeds[-1]} ({len(seeds)} seeds): the authors' values dumped from "
                   "their FedHGN(args) after set_random_seeds(seed) (official_init/dump_official_init.py), and as "
                   "fgl_jax's initial state on the same split file (the engine's init key of each seed; relation slots "
                   "and embedding rows in use: fgl_jax keeps only the 2-hop rows, hence fewer emb values). KS = two-sample "
                   "Kolmogorov-Smirnov statistic and p-value of the two pools (zeros: exact equality).", "",
                   "| group | authors' initialiser | fgl_jax | bound / sd | authors' max abs, sd | fgl_jax max abs, sd "
                   "| values each | KS stat | KS p |", "|---|---|---|---|---|---|---|---|---|"]
    for g, (t_init, o_init, ref, kind) in INITS.items():
        x, y = np.concatenate(theirs[g]), np.concatenate(ours[g])
        if kind == "zero":
            ks, p = (0.0, 1.0) if not x.any() and not y.any() else (float("nan"), float("nan"))
        else:
            r = stats.ks_2samp(x, y)
            ks, p = float(r.statistic), float(r.pvalue)
        rows[g] = {"authors_init": t_init, "fgljax_init": o_init, "reference": ref, "kind": kind,
                   "authors_max": float(np.abs(x).max()), "authors_sd": float(x.std()),
                   "fgljax_max": float(np.abs(y).max()), "fgljax_sd": float(y.std()), "n_authors": int(x.size),
                   "n_fgljax": int(y.size), "ks": ks, "ks_p": p}
        refs = {"uniform": f"bound {ref:.4f} (sd {ref / math.sqrt(3):.4f})", "normal": f"sd {ref:.3f}", "zero": "0"}
        L.append(f"| {g} | {t_init} | {o_init} | {refs[kind]} | {rows[g]['authors_max']:.4f}, {rows[g]['authors_sd']:.4f} "
                 f"| {rows[g]['fgljax_max']:.4f}, {rows[g]['fgljax_sd']:.4f} | {x.size:,} / {y.size:,} | {ks:.4f} | "
                 f"{p:.2f} |")
    init_rec = RESULTS / "fedhgn" / "results_official_init_RE3.json"
    tests = {}
    if init_rec.exists():
        import json
        per_seed = json.loads(init_rec.read_text())["per_seed"]
        groups = [g for g in ("all", "none", "emb", "beta", "V,dec") if all(g in r for r in per_seed)]
        acc = {g: np.array([100 * r[g] for r in per_seed]) for g in groups}
        an, kw = stats.f_oneway(*acc.values()), stats.kruskal(*acc.values())
        wt = stats.ttest_ind(acc["all"], acc["none"], equal_var=False)
        tests = {"groups": groups, "seeds": len(per_seed), "means": {g: float(v.mean()) for g, v in acc.items()},
                 "anova_p": float(an.pvalue), "kruskal_p": float(kw.pvalue), "all_vs_none_welch_p": float(wt.pvalue)}
        L += ["", f"Trained accuracies of results_official_init_RE3.json ({len(per_seed)} seeds; groups "
              + ", ".join(f"{g} {acc[g].mean():.2f}" for g in groups) + f"): one-way ANOVA of the {len(groups)} groups "
              f"p = {an.pvalue:.3f}, Kruskal-Wallis p = {kw.pvalue:.3f}; `all` vs `none` alone (Welch) p = {wt.pvalue:.4f}."]
    rows["_tests"] = tests
    write_results(RESULTS / "fedhgn", "results_init_distributions", "\n".join(L),
                  {"groups": rows, "provenance": provenance(t0, {"seeds": seeds, "hidden": D, "num_bases": B,
                                                                 "setting": "RE", "clients": 3})})
    print("\n".join(L))


if __name__ == "__main__":
    main()
