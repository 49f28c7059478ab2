"""Is an AIFB K=3 gap in the random initialisation? fgl_jax FedHGN trained from the official
code's own initial parameters, group by group.

    python experiments/fedhgn/official_init.py --bin-dir <FedHGN repo>/data/aifb-hetero \
        --init-dir <dir of official_init_<edges|etypes>3_<seed>.pkl> [--setting RE|RET]
        [--official-logs '<glob of main.py logs>']

The .pkl files come from `official_init/dump_official_init.py`, run inside the official checkout
(PyTorch + DGL). For every seed this script builds our FedHGN state on the authors' split file and
replaces a group of our own randomly drawn parameters by the official ones:

    all   : every parameter from the official init (bases V, decoder, coefficients β, embeddings)
    none  : our own init (jax PRNG, same distributions), i.e. what reproduce.py measures
    emb / beta / V,dec : one official group, the rest ours

then trains with the official protocol (round-1 pool `code_quirk` as the official code, E = 3,
lr 0.1, patience 10 on validation accuracy, max 150 rounds) and reports the test accuracy at the
best validation round. With `--official-logs` (stdout of the official main.py per seed, file names
ending in _<seed>.log) the official code's own final accuracy is listed beside `all`.
Writes experiments/results/fedhgn/results_official_init_<RE|RET><K>.{md,json}.
"""
from __future__ import annotations

import argparse
import dataclasses
import glob
import re
import sys
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from experiments.common import RESULTS, provenance, write_results  # noqa: E402
from fgl_jax import load_official_split, run, safe_load  # noqa: E402
from fgl_jax.systems.fedhgn import FedHGNConfig, hetero_fed_data, program  # noqa: E402
from experiments.fedhgn.paper import PAPER  # noqa: E402

GROUPS = {"all": {"V", "dec", "beta", "emb"}, "none": set(), "emb": {"emb"}, "beta": {"beta"}, "V,dec": {"V", "dec"}}


def official_params(init: dict, graphs, alg, data):
    """Map the official state dicts onto our parameter layout -> (server dict, beta [C,R,B], emb [C,M,D])."""
    se, sd = init["server_enc"], init["server_dec"]
    server = {"b1": se["model.layers.0.h_bias"], "b2": se["model.layers.1.h_bias"], "V": se["model.layers.1.bases"],
              "W_out": sd["linear.weight"].T, "b_out": sd["linear.bias"]}
    st0 = alg.init(jax.random.key(0), data)
    if set(server) != set(st0.server):
        raise ValueError(f"official server parameters {sorted(server)} do not map onto ours {sorted(st0.server)}")
    beta, emb = np.array(st0.coeffs["beta"]), np.array(st0.private["emb"])
    for k, g in enumerate(graphs):
        oc = init["clients"][k]
        for i, r in enumerate(g.relations):
            beta[k, i] = oc["coeff"][r]
        # our embedding rows are the 2-hop sources of the labelled target nodes, in homogeneous-id order
        hom = g.homogeneous()
        src, dst, offs = hom["src"], hom["dst"], hom["offsets"]
        lab = (g.train_mask | g.val_mask | g.test_mask) & (g.y >= 0)
        tmask = np.zeros(g.total_nodes, bool)
        tmask[np.flatnonzero(lab) + offs[g.target]] = True
        smask = np.zeros(g.total_nodes, bool)
        smask[np.unique(src[tmask[dst]])] = True
        rows = np.unique(src[smask[dst]])
        types = list(g.node_types)
        starts = np.array([offs[t] for t in types])
        for row, fid in enumerate(rows):
            ti = np.searchsorted(starts, fid, side="right") - 1
            emb[k, row] = oc["emb"][types[ti]][fid - starts[ti]]
    return {k: jnp.asarray(v) for k, v in server.items()}, jnp.asarray(beta), jnp.asarray(emb)


def official_log_accuracy(path: str):
    lines = Path(path).read_text().splitlines()
    for i, line in enumerate(lines[:-1]):
        if line.startswith("accuracy"):
            return float(lines[i + 1].split()[0])
    return None


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin-dir", required=True)
    ap.add_argument("--init-dir", required=True)
    ap.add_argument("--official-logs", default=None)
    ap.add_argument("--groups", default="all;none;emb;beta;V,dec")
    ap.add_argument("--setting", default="RE", choices=("RE", "RET"))
    ap.add_argument("--clients", type=int, default=FedHGNConfig().clients)
    ap.add_argument("--max-rounds", type=int, default=150)
    ap.add_argument("--patience", type=int, default=FedHGNConfig().patience)
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    groups = args.groups.split(";")
    unknown = [g for g in groups if g not in GROUPS]
    if unknown:
        raise SystemExit(f"unknown --groups {unknown}; choose from {list(GROUPS)}")
    tag = {"RE": "edges", "RET": "etypes"}[args.setting]
    K = args.clients
    graphs = load_official_split(Path(args.bin_dir) / f"aifb-hetero_random-{tag}_{K}.bin")
    data = hetero_fed_data(graphs)
    cfg = FedHGNConfig(round1_align="code_quirk", rounds=args.max_rounds, patience=args.patience)
    prog = program(cfg, data)
    alg = prog.algorithm
    C = len(graphs)

    def train(state):
        # the engine from a given initial state (round keys from key 1, as for every seed before;
        # with C = 1 they only shuffle the coefficient pool, whose nearest-vector min ignores order)
        res = run(alg, data, jax.random.key(1), prog.num_rounds, state=state, hooks=prog.hooks)
        return res.best["best_test"]

    files = glob.glob(str(Path(args.init_dir) / f"official_init_{tag}{K}_*.pkl"))
    if not files:
        raise SystemExit(f"no official_init_{tag}{K}_<seed>.pkl in {args.init_dir}")
    seeds = sorted(int(re.findall(r"_(\d+)\.pkl$", f)[0]) for f in files)
    logs = {}
    for f in glob.glob(args.official_logs) if args.official_logs else []:
        m = re.findall(r"_(\d+)\.log$", f)
        if m and (acc := official_log_accuracy(f)) is not None:
            logs[int(m[0])] = acc
    per_seed = []
    for seed in seeds:
        init = safe_load(Path(args.init_dir) / f"official_init_{tag}{K}_{seed}.pkl")["init"]
        server, beta, emb = official_params(init, graphs, alg, data)
        own = alg.init(jax.random.split(jax.random.key(seed))[0], data)   # the engine's init key of seed
        row = {"seed": seed, "official_code": logs.get(seed)}
        for name in groups:
            use = GROUPS[name]
            ns = dict(own.server)
            if "V" in use:
                ns["V"] = server["V"]
            if "dec" in use:
                ns["W_out"], ns["b_out"] = server["W_out"], server["b_out"]
            st = dataclasses.replace(own, server=ns, shared={k: jnp.broadcast_to(v, (C,) + v.shape) for k, v in ns.items()},
                                     coeffs={"beta": beta if "beta" in use else own.coeffs["beta"]},
                                     private={"emb": emb if "emb" in use else own.private["emb"]})
            row[name] = train(st)
        per_seed.append(row)
        print(seed, {k: (round(v, 4) if isinstance(v, float) else v) for k, v in row.items() if k != "seed"}, flush=True)

    summary = {}
    for name in groups:
        v = 100 * np.array([r[name] for r in per_seed])
        summary[name] = {"n": int(v.size), "mean": float(v.mean()), "std": float(v.std(ddof=1)),
                         "se": float(v.std(ddof=1) / np.sqrt(v.size))}
    if "all" in summary and "none" in summary:
        a, o = summary["all"], summary["none"]
        diff, se = a["mean"] - o["mean"], float(np.hypot(a["se"], o["se"]))
        summary["all_minus_none"] = {"diff": diff, "se": se}
    first5 = [r for r in per_seed if r["seed"] in (1000, 2000, 3000, 4000, 5000)]
    pm, ps = PAPER[("aifb", args.setting, "fedhgn")][K]
    paper = f"{pm:.2f} ± {ps:.2f}"
    L = [f"# FedHGN AIFB {args.setting} K={K}: training fgl_jax from the official code's initial parameters", "",
         f"Authors' split file; round-1 pool `code_quirk`; patience {args.patience}, at most {args.max_rounds} rounds; "
         f"{len(seeds)} seeds ({seeds[0]}..{seeds[-1]}). Paper (seeds 1000..5000 of the official code): {paper}.", "",
         "| init | seeds | test acc mean ± std | SE |", "|---|---|---|---|"]
    for name in groups:
        s = summary[name]
        L.append(f"| {name} | {s['n']} | {s['mean']:.2f} ± {s['std']:.2f} | {s['se']:.2f} |")
    if "all_minus_none" in summary:
        d = summary["all_minus_none"]
        L += ["", f"Official init minus our init: {d['diff']:+.2f} points (SE {d['se']:.2f}; independent draws, "
              "so the seeds are not paired)."]
    if first5 and all(n in first5[0] for n in ("all", "none")):
        a = 100 * np.mean([r["all"] for r in first5])
        o = 100 * np.mean([r["none"] for r in first5])
        L += ["", f"Seeds 1000..5000 only (the paper's seeds): `all` {a:.2f}, `none` {o:.2f}."]
    both = [r for r in per_seed if r["official_code"] is not None and "all" in r]
    if both:
        same = sum(abs(r["official_code"] - r["all"]) < 5e-4 for r in both)
        L += ["", f"Official code's own final test accuracy (from its logs) equals `all` on {same}/{len(both)} seeds: "
              + ", ".join(f"{r['seed']}: {100 * r['official_code']:.2f}/{100 * r['all']:.2f}" for r in both) + "."]
    L += ["", "| seed | " + " | ".join(groups) + " | official code |", "|" + "---|" * (len(groups) + 2)]
    for r in per_seed:
        oc = "–" if r["official_code"] is None else f"{100 * r['official_code']:.2f}"
        L.append(f"| {r['seed']} | " + " | ".join(f"{100 * r[g]:.2f}" for g in groups) + f" | {oc} |")
    write_results(RESULTS / "fedhgn", f"results_official_init_{args.setting}{K}", "\n".join(L),
                  {"summary": summary, "per_seed": per_seed,
                   "provenance": provenance(t0, {"setting": args.setting, "clients": K, "groups": groups, "max_rounds": args.max_rounds,
                                                 "patience": args.patience, "seeds": seeds})})
    print("\n".join(L))


if __name__ == "__main__":
    main()
