"""Write experiments/configs/<system>/*.yaml: one YAML per paper table cell (one run; a cell's
mean over seeds is `fgl-jax sweep --config FILE --seeds ...`, see the header of each file).

The cells and settings are read from the same constants the reproduce scripts use
(experiments/<system>/reproduce.py: the PAPER tables, seeds, rounds, ratios), and every file is
checked against the live CLI parser of its system (`fgl_jax.sysconfig.read_options`), so a file
that `fgl-jax <system> --config FILE` would refuse is never written. Settings of a reproduce
script that the system's CLI cannot express are listed in the file header (`not in the CLI`).

    python experiments/configs/make_configs.py            # rewrite all
    python experiments/configs/make_configs.py --check    # exit 1 if a committed file is stale/invalid
"""
from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))

from fgl_jax import sysconfig  # noqa: E402
from fgl_jax.cli import _subparsers, build_parser  # noqa: E402


def _module(system: str):
    """experiments/<system>/reproduce.py as a module (its constants; main() is not run)."""
    path = ROOT / "experiments" / system / "reproduce.py"
    spec = importlib.util.spec_from_file_location(f"_repro_{system}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


# ------------------------------------------------------------------------------------------------
# cells: system -> list of (file stem, options, header lines)
# ------------------------------------------------------------------------------------------------

def cells_hifgl():
    m = _module("hifgl")
    base = {"silos": 5, "rounds": 50, "hidden": 64, "layers": 2, "T": 1, "frac_bits": 16, "mode": "field",
            "norm": "gcn_selfloop", "lr": 0.01, "seed": 0}
    seeds = "0,1,2,3,4"
    out = []
    for (ds, model), paper in m.PAPER_T3.items():
        out.append((f"table3_{ds}_hifgl_{model}", {"dataset": ds, "model": model, **base},
                    [f"Table 3: HiFGL-{model} on {ds}; paper {paper}", f"cell = mean over seeds {seeds}"], seeds))
    for k in (1, 2, 5, 10, 20, 50):
        out.append((f"fig5_cora_sage_silos{k}", {"dataset": "cora", "model": "sage", **base, "silos": k},
                    [f"Figure 5: HiFGL-GraphSage on Cora with {k} silos", "reproduce.py averages seeds 0,1"], "0,1"))
    for depth, paper in m.PAPER_T5.items():
        out.append((f"table5_citeseer_gcn_layers{depth}", {"dataset": "citeseer", "model": "gcn", **base,
                                                           "layers": depth},
                    [f"Table 5: HiFGL-GCN on CiteSeer with {depth} layers; paper {paper}",
                     "reproduce.py averages seeds 0,1"], "0,1"))
    notes = ["not in the CLI: the CLI splits with round(0.6 n / C) train nodes per class; reproduce.py uses "
             "baselines.SPLIT (CiteSeer 332, the CLI 333)"]
    return out, notes


def cells_fedhgl():
    m = _module("fedhgl")
    seeds = "0,1,2,3,4"
    rows = {"HGNN (local)": ("basic", "local"), "HGNN w/ HC": ("hc", "local"), "FedHGL": ("basic", "fedavg"),
            "FedHGL w/ HC": ("hc", "fedavg")}
    out = []
    for row, per_ds in m.PAPER.items():
        prop, mode = rows[row]
        tag = {"HGNN (local)": "hgnn_local", "HGNN w/ HC": "hgnn_hc", "FedHGL": "fedhgl",
               "FedHGL w/ HC": "fedhgl_hc"}[row]
        for ds, per_k in per_ds.items():
            table = "Table III" if ds in m.HYPER else "Table V"
            for k, (mean, std) in per_k.items():
                out.append((f"{table.split()[1].lower()}_{ds}_k{k}_{tag}",
                            {"dataset": ds, "clients": k, "propagation": prop, "mode": mode, "mechanism": "none",
                             "rounds": 200, "local_steps": 3, "hops": 2, "seed": 0},
                            [f"{table}: {row} on {ds}, K={k}; paper {mean:.4f} ± {std:.4f}",
                             f"cell = mean over runs (seed = run index) {seeds}"], seeds))
    for ds, (mean, std) in m.PAPER_GLOBAL.items():
        out.append((f"iii_{ds}_global", {"dataset": ds, "clients": 1, "propagation": "global", "mode": "global",
                                         "mechanism": "none", "rounds": 600, "local_steps": 3, "hops": 2, "seed": 0},
                    [f"Table III: Global on {ds}; paper {mean:.4f} ± {std:.4f}", f"cell = mean over seeds {seeds}"],
                    seeds))
    for ds, (mech, points, hc) in m.PAPER_FIG3.items():
        for eps, acc in points.items():
            out.append((f"fig3_{ds}_k6_{mech}_eps{eps}",
                        {"dataset": ds, "clients": 6, "propagation": "hc", "mode": "fedavg", "mechanism": mech,
                         "eps": float(eps), "rounds": 200, "local_steps": 3, "hops": 2, "seed": 0},
                        [f"Figure 3: FedHGL w/ HC + {mech} LDP on {ds}, K=6, eps={eps}; paper {acc:.4f} "
                         f"(no noise {hc:.4f})", f"cell = mean over seeds {seeds}; the eps axis is "
                         f"`fgl-jax sweep --config FILE --grid eps=...`"], seeds))
    notes = [f"checked: reproduce.py's validation/test ratios {m.VAL_TEST} and noise propagation "
             f"{m.NOISE_PROPAGATION!r} are the FedHGLConfig defaults the CLI uses too"]
    return out, notes


def cells_fedhgn():
    m = _module("fedhgn")
    seeds = ",".join(str(s) for s in m.SEEDS)
    out = []
    for (ds, split, method), per_k in m.PAPER.items():
        for k, (mean, std) in per_k.items():
            out.append((f"table3_{ds}_{split}_k{k}_{method}",
                        {"dataset": ds, "split": split, "clients": k, "method": method, "bases": 20,
                         "align_lambda": 0.5, "lr": 0.1, "client_fraction": 1.0, "max_rounds": 1000,
                         "patience": 10, "seed": m.SEEDS[0]},
                        [f"Table 3/6/7: {method} on {ds}-{split}, K={k}; paper {mean:.2f} ± {std:.2f}",
                         f"cell = mean over seeds {seeds}"], seeds))
    for ds, (mean, std) in m.PAPER_CENTRAL.items():
        out.append((f"table3_{ds}_central", {"dataset": ds, "split": "RE", "clients": 3, "method": "central",
                                             "lr": 0.1, "max_rounds": 3000, "patience": 10, "seed": m.SEEDS[0]},
                    [f"Table 3: Central on {ds}; paper {mean:.2f} ± {std:.2f}", f"cell = mean over seeds {seeds}"],
                    seeds))
    for variant, per_k in m.PAPER_ABL.items():
        for k, (mean, std) in per_k.items():
            out.append((f"table4_mutag_RE_k{k}_{variant}",
                        {"dataset": "mutag", "split": "RE", "clients": k, "method": variant, "bases": 20,
                         "align_lambda": 0.5, "lr": 0.1, "max_rounds": 1000, "patience": 10, "seed": m.SEEDS[0]},
                        [f"Table 4: {m.ABL_NAMES[variant]} on MUTAG-RE, K={k}; paper {mean:.2f} ± {std:.2f}",
                         f"cell = mean over seeds {seeds}"], seeds))
    for split in ("RE", "RET"):
        out.append((f"fig4_aifb_{split}_k3_fedhgn", {"dataset": "aifb", "split": split, "clients": 3,
                                                     "method": "fedhgn", "bases": 20, "align_lambda": 0.5, "lr": 0.1,
                                                     "max_rounds": 1000, "patience": 10, "seed": m.SEEDS[0]},
                    [f"Figure 4: AIFB-{split}, K=3; sweep B with `--grid bases=5,10,20,35,50` and lambda with "
                     "`--grid align_lambda=0,0.05,0.5,5,10,50`"], seeds))
    notes = ["not in the CLI: the local-step default is 3 for FL methods and 1 for local/central (CLI default None "
             "picks it)"]
    return out, notes


def cells_lumos():
    m = _module("lumos")
    out = []
    for ds in ("facebook", "lastfm_asia"):
        # reproduce.py trains on trees from the long MCMC chain (the paper's T = 1000 / 300 cannot
        # reach its reported maximum workload; see lumos/results.md), with the direct argmax
        iters = 30000 if ds == "facebook" else 10000
        short = m.DS_SHORT[ds]
        base = {"dataset": ds, "epochs": 300, "epsilon": "2", "trim": "mcmc", "mcmc_iters": iters,
                "mcmc_argmax": "direct", "tree": "tree", "lr": 0.01, "seed": 0}
        for task in ("node", "link"):
            key = "sup_vs_central" if task == "node" else "link_vs_central"
            for bb in ("gcn", "gat"):
                paper = m.PAPER[key][(short, bb)]
                out.append((f"main_{ds}_{task}_{bb}", {**base, "model": bb, "task": task},
                            [f"§VIII main comparison: Lumos-{bb} {task} task on {ds}; paper gap vs centralised "
                             f"{paper} %", "the relative gaps also need the centralised and naive baselines "
                             "(reproduce.py)"], "0"))
            out.append((f"ablation_{ds}_{task}_gcn_star", {**base, "model": "gcn", "task": task, "tree": "star"},
                        [f"Ablation w/o virtual nodes (star trees), {task} task on {ds}; paper gain of the trees "
                         f"{m.PAPER['sup_vs_novn' if task == 'node' else 'link_vs_novn'][(short, 'gcn')]} %"], "0"))
            out.append((f"ablation_{ds}_{task}_gcn_notrim", {**base, "model": "gcn", "task": task, "trim": "none"},
                        [f"Fig. 8: without workload trimming, {task} task on {ds}"], "0"))
            # the same cells with the receiver-side MMSE decoding (beyond the paper; lumos/noise_study.md)
            for stem, extra in (("main", {}), ("ablation_star", {"tree": "star"}),
                                ("ablation_notrim", {"trim": "none"})):
                out.append((f"{stem}_{ds}_{task}_gcn_mmse", {**base, "model": "gcn", "task": task, **extra,
                                                            "denoise": "mmse"},
                            [f"Lumos+MMSE ({stem.replace('_', ' ')}), {task} task on {ds}: the {stem} cell with "
                             "denoise=mmse (not in the paper; see lumos/results.md)"], "0"))
            for eps in (0.5, 1.0, 4.0):
                out.append((f"eps_{ds}_{task}_gcn_eps{eps}", {**base, "model": "gcn", "task": task,
                                                                "epsilon": str(eps)},
                            [f"eps sweep (reproduce.py: 0.5, 1, 4; paper gains {m.PAPER['eps_sup' if task == 'node' else 'eps_link'][short]})",
                             "vectorised: `fgl-jax sweep --config FILE --grid eps=0.5,1,4` when eps is in state.hp"],
                            "0"))
    notes = ["checked: the CLI loads features as reproduce.py does (Facebook: 128 most frequent, min-max "
             "scaled) and splits with seed = option seed (reproduce.py: 0)"]
    return out, notes


def cells_fedgc():
    m = _module("fedgc")
    out = []
    cfg = m.base_config(False)
    base = {"clients": cfg.num_clients, "beta": cfg.beta, "rounds": cfg.rounds,
            "eval_rounds": ",".join(map(str, cfg.eval_rounds)), "gamma": cfg.ib.gamma, "protocol": "val",
            "seed": 0, "st_rounds": cfg.st_rounds, "st_weight_decay": cfg.st_weight_decay,
            "lr_feat": cfg.condense.lr_feat, "lr_adj": cfg.condense.lr_adj, "ib_hidden": cfg.ib.hidden,
            "ib_dim": cfg.ib.dim, "ib_lr": cfg.ib.lr, "ib_epochs": cfg.ib.epochs}

    def variant_options(var):
        """The CLI options of a reproduce.py variant that differ from the base config."""
        vc, opts = m.variant_config(var, False), {}
        if not vc.use_ib:
            opts["no_ib"] = True
        if vc.condense.pge_init_bias is not None:
            opts["pge_init_bias"] = vc.condense.pge_init_bias
        if vc.ib != cfg.ib:  # (γ is a separate option; no variant changes it)
            opts.update(ib_dim=vc.ib.dim, ib_hidden=vc.ib.hidden, ib_lr=vc.ib.lr, ib_epochs=vc.ib.epochs)
        if vc.defence != cfg.defence:
            opts["defence"] = vc.defence
        return opts
    for (ds, rate), paper in m.PAPER_T1.items():
        for b in m.BASES:   # reproduce.py --base: the code's knobs, or both open knobs
            stem = f"table1_{ds}_rate{rate}" + ("" if b == "ib" else f"_{b}")
            out.append((stem, {"dataset": ds, **base, "rate": rate, **variant_options(b)},
                        [f"Table 1: FedGC ({m.BASE_NAME[b]}) on {ds}, condensation rate {rate}; paper {paper} %"], "0"))
    for ds, p in m.PAPER_T2.items():
        for var, (name, _) in m.VARIANTS.items():
            opts = {"dataset": ds, **base, "rate": 0.5, "mia": True, **variant_options(var)}
            paper = m.PAPER_ROW[var]
            out.append((f"table2_{ds}_{var}_mia", opts,
                        [f"Table 2: {name} on {ds}; paper ({m.VARIANTS[paper][0]}) acc {p[paper + '_acc']} %, "
                         f"MIA AUC {p[paper + '_auc']} %"], "0"))
    notes = ["not in the CLI: reproduce.py's server Adam (st_lr 0.01), "
             "evaluation iterations 600 and raw (unnormalised) features for FedGC†/PL/Reg/LDP are FedGCConfig settings "
             "of base_config(); Table 3 (architectures), the ablation and the gamma sweep need options the CLI "
             "does not have"]
    return out, notes


SYSTEMS = {"hifgl": cells_hifgl, "fedhgl": cells_fedhgl, "fedhgn": cells_fedhgn, "lumos": cells_lumos,
           "fedgc": cells_fedgc}


def render(system: str, options: dict, header: list, seeds: str, notes: list) -> str:
    lines = [f"# {h}" for h in header]
    lines += [f"# run:   fgl-jax {system} --config experiments/configs/{system}/<this file>",
              f"# cell:  fgl-jax sweep --config experiments/configs/{system}/<this file> --seeds {seeds}",
              "# generated by experiments/configs/make_configs.py from experiments/" + system + "/reproduce.py"]
    lines += [f"# {n}" for n in notes]
    return "\n".join(lines) + "\n" + sysconfig.dump_options(system, options)


def build(systems) -> dict:
    """{path: text} for every valid cell; {path: error} in the second dict for dropped options."""
    parser = build_parser()
    subs = _subparsers(parser)
    files, problems = {}, {}
    for system in systems:
        cells, notes = SYSTEMS[system]()
        sp = subs.get(system)
        if sp is None:
            problems[system] = "no CLI subcommand"
            continue
        valid = sysconfig.option_actions(sp)
        for stem, options, header, seeds in cells:
            dropped = sorted(k for k in options if k not in valid)
            kept = {k: v for k, v in options.items() if k in valid}
            extra = list(notes) + ([f"not in the CLI (dropped): {', '.join(f'{k}={options[k]}' for k in dropped)}"]
                                   if dropped else [])
            if dropped:
                problems[f"{system}/{stem}"] = f"dropped {dropped}"
            full = {**sysconfig.default_options(sp), **kept}
            path = HERE / system / f"{stem}.yaml"
            text = render(system, full, header, seeds, extra)
            sysconfig.read_options_text(text, sp, system, str(path))  # what the CLI would do with it
            files[path] = text
    return files, problems


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true", help="only compare with the committed files")
    ap.add_argument("--systems", default=",".join(SYSTEMS))
    args = ap.parse_args(argv)
    files, problems = build([s for s in args.systems.split(",") if s])
    stale = [p for p, t in files.items() if not p.exists() or p.read_text() != t]
    for k, v in problems.items():
        print(f"note: {k}: {v}")
    if args.check:
        for p in stale:
            print(f"stale: {p.relative_to(ROOT)}")
        return 1 if stale else 0
    for p, t in files.items():
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(t)
    print(f"wrote {len(files)} config files ({len(stale)} changed) under {HERE.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
