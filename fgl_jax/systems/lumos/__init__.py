"""Lumos (Pan, Zhu, Chu): heterogeneity-aware federated graph learning over decentralized devices.

Every vertex is a device holding its ego network. Module A builds per-device trees after
balancing workloads (greedy Alg. 1 + MCMC Alg. 2, exact flow optimum as an oracle); Module B
trains one shared tree GNN over all devices with LDP features and mean POOL.

    secure.py     simulated CrypTFlow2 comparison oracle (counts comparisons)
    workload.py   EdgeSet, greedy_init, find_max_device (Alg. 3), mcmc_trim, exact_min_max, stats
    trees.py      build_trees: every device's tree in one padded disjoint union (TreeBatch)
    model.py      TreeEncoder (GCN / GAT), pool_mean, Lumos
    trainer.py    LumosConfig, prepare (host, once), lumos_algorithm / train (jitted lax.scan)
    baselines.py  centralised GCN/GAT, naive FedGNN (Gaussian features, RR adjacency and labels)
The one-bit LDP encoder lives in fgl_jax.privacy.onebit.

`build_program(options)` gives a `fgl_jax.federated.Program` (lr and eps traced in `state.hp`, the
LDP table drawn inside the program), so `run` (checkpoints, resume) and `run_sweep` (seeds x eps x lr
in one compile) work as for every other system.
"""
from __future__ import annotations

import argparse

from fgl_jax.systems.lumos.secure import SecureComparator
from fgl_jax.systems.lumos.trainer import LumosConfig, prepare, train
from fgl_jax.systems.lumos.workload import EdgeSet, exact_min_max, greedy_init, mcmc_trim, workload_stats

__all__ = ["SecureComparator", "LumosConfig", "prepare", "train", "EdgeSet", "exact_min_max", "greedy_init",
           "mcmc_trim", "workload_stats", "register_cli", "build_program"]


def _load(name: str, data_dir):
    from fgl_jax.systems.lumos.trainer import minmax_scale, reduce_features, top_frequent_features
    if name == "facebook":
        from fgl_jax.data.musae import load_facebook
        g = load_facebook(data_dir)
        return g, minmax_scale(top_frequent_features(g.x, 128))
    if name == "lastfm_asia":
        from fgl_jax.data.musae import load_lastfm_asia
        g = load_lastfm_asia(data_dir)
        return g, minmax_scale(g.x)
    from fgl_jax.data import load
    g = load(name, data_dir=data_dir)
    x = g.x
    if min(x.shape) > 128 and not isinstance(x, __import__("numpy").ndarray):
        x = reduce_features(x, 128)
    return g, minmax_scale(x)


DEFAULTS = {"dataset": "facebook", "data_dir": None, "model": "gcn", "task": "node", "epochs": 300, "epsilon": "2",
            "trim": "mcmc", "mcmc_iters": 1000, "mcmc_argmax": "alg3", "tree": "tree", "bins": "recipients",
            "denoise": "none", "dropout": 0.01, "lr": 0.01,
            "seed": 0}


def _parse_eps(v) -> float:
    import math
    if isinstance(v, str):
        if v.strip().lower() in ("inf", "none"):
            return math.inf
        try:
            v = float(v)
        except ValueError:
            raise ValueError(f"lumos option 'epsilon' must be a number > 0 or 'inf', got {v!r}") from None
    return float(v)


def build_program(options: dict, data_dir=None):
    """Lumos as a `fgl_jax.federated.Program` from the `fgl-jax lumos` options (argparse dests):
    dataset, data_dir, model, task, epochs, epsilon, trim, mcmc_iters, mcmc_argmax, tree, bins, dropout,
    lr, seed.

    Host side, once: load, 50/25/25 node split / 80/5/15 edge split (seed `seed`), trimming
    (greedy + MCMC with seed `seed`) and trees. In the program: the one-bit LDP table is drawn from
    the state's key and the traced `state.hp["eps"]`, and Adam uses the traced `state.hp["lr"]`, so
    `run_sweep(program.algorithm, program.data, seeds, program.num_rounds, {"eps": [...], "lr": [...]})`
    runs seeds x eps x lr with one compile; a sweep seed changes the initialisation, dropout,
    negative samples and the LDP draw (the split and the trees stay those of option `seed`).
    `run(program.algorithm, program.data, jax.random.key(seed), program.num_rounds, out_dir=, resume=)`
    gives checkpoints and resume. Missing keys take the CLI defaults.
    """
    from fgl_jax.data.splits import random_split
    from fgl_jax.federated import Program
    from fgl_jax.partition.edges import random_edge_split
    from fgl_jax.systems.lumos.trainer import lumos_algorithm
    from fgl_jax.sysconfig import merge_options
    o = merge_options("lumos", options, DEFAULTS)
    cfg = LumosConfig(backbone=o["model"], task=o["task"], epochs=int(o["epochs"]), epsilon=_parse_eps(o["epsilon"]),
                      trim=o["trim"], mcmc_iters=int(o["mcmc_iters"]), mcmc_argmax=o["mcmc_argmax"], tree=o["tree"],
                      bins=o["bins"], denoise=o["denoise"],
                      dropout=float(o["dropout"]), lr=float(o["lr"]), seed=int(o["seed"]))
    g, x = _load(o["dataset"], data_dir if data_dir is not None else o["data_dir"])
    g = random_split(g, 0.5, 0.25, 0.25, seed=cfg.seed)
    split = (random_edge_split(g.senders, g.receivers, g.num_nodes, 0.8, 0.05, 0.15, seed=cfg.seed)
             if cfg.task == "link" else None)
    prep = prepare(g, cfg, split, x_scaled=x, encode="program")
    w = prep.info["workload"]
    describe = {"method": f"Lumos-{cfg.backbone}", "dataset": g.name, "task": cfg.task, "devices": g.num_nodes,
                "edges": w["edges"], "max_degree": w["max_degree"], "max_workload": w["max"], "trim": cfg.trim,
                "tree": cfg.tree, "epsilon": cfg.epsilon, "message_saving": w["message_saving"],
                "prepare_seconds": prep.info["prepare_seconds"]}
    return Program(lumos_algorithm(cfg, g.num_classes), prep.data, cfg.epochs, describe)


def _cli_main(args) -> int:
    import jax

    from fgl_jax.federated import run
    prog = build_program(vars(args))
    d = prog.describe
    print(f"lumos: {d['dataset']} devices={d['devices']} edges={d['edges']} max_degree={d['max_degree']} "
          f"max_workload={d['max_workload']} (trim={d['trim']}) message_saving={100 * d['message_saving']:.1f}% "
          f"prepare={d['prepare_seconds']:.1f}s")
    res = run(prog.algorithm, prog.data, jax.random.key(int(args.seed)), prog.num_rounds,
              progress=not args.no_progress, out_dir=args.out, resume=bool(getattr(args, "resume", False)))
    metric = "accuracy" if d["task"] == "node" else "ROC-AUC"
    b = res.best
    print(f"lumos: best epoch {b['best_round']}: val {metric} {b['best_val']:.4f}, test {metric} {b['best_test']:.4f}; "
          f"{res.run_seconds / prog.num_rounds * 1000:.0f} ms/epoch, compile {res.compile_seconds:.1f}s")
    return 0


def register_cli(subparsers) -> argparse.ArgumentParser:
    """`fgl-jax lumos --dataset facebook --model gcn --task node --epsilon 2 --trim mcmc ...`"""
    p = subparsers.add_parser("lumos", help="Lumos: node-level federated GNN over devices (trees, MCMC, LDP)")
    p.add_argument("--dataset", default="facebook", help="facebook, lastfm_asia or any registry dataset")
    p.add_argument("--data-dir", default=None)
    p.add_argument("--model", default="gcn", choices=["gcn", "gat"])
    p.add_argument("--task", default="node", choices=["node", "link"])
    p.add_argument("--epochs", type=int, default=300)
    p.add_argument("--epsilon", default="2", help="LDP budget per device (> 0; 'inf' disables LDP)")
    p.add_argument("--trim", default="mcmc", choices=["mcmc", "greedy", "exact", "none"])
    p.add_argument("--mcmc-iters", type=int, default=1000)
    p.add_argument("--mcmc-argmax", default="alg3", choices=["alg3", "direct"],
                   help="Alg. 3 simulated with comparison counts, or the same arg-max directly (faster)")
    p.add_argument("--tree", default="tree", choices=["tree", "star"], help="star = ablation w/o virtual nodes")
    p.add_argument("--bins", default="recipients", choices=["recipients", "workload"],
                   help="LDP bins: one per recipient (spec A3) or wl(u) (paper-literal)")
    p.add_argument("--denoise", default="none", choices=["none", "mmse"],
                   help="mmse: receiver-side MMSE shrinkage of the recovered LDP features (beyond the paper)")
    p.add_argument("--dropout", type=float, default=0.01)
    p.add_argument("--lr", type=float, default=0.01)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default=None, help="directory for metrics.jsonl and checkpoints")
    p.add_argument("--resume", action="store_true", help="continue from the newest checkpoint in --out")
    p.add_argument("--no-progress", action="store_true")
    p.set_defaults(func=_cli_main)
    return p
