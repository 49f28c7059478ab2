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
"""
from __future__ import annotations

import argparse

from fgl_jax.systems.lumos.secure import SecureComparator
from fgl_jax.systems.lumos.trainer import LumosConfig, prepare, train
from fgl_jax.systems.lumos.workload import EdgeSet, exact_min_max, greedy_init, mcmc_trim, workload_stats

__all__ = ["SecureComparator", "LumosConfig", "prepare", "train", "EdgeSet", "exact_min_max", "greedy_init",
           "mcmc_trim", "workload_stats", "register_cli"]


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


def _cli_main(args) -> int:
    import math

    from fgl_jax.data.splits import random_split
    from fgl_jax.partition.edges import random_edge_split
    g, x = _load(args.dataset, args.data_dir)
    g = random_split(g, 0.5, 0.25, 0.25, seed=args.seed)
    eps = math.inf if args.epsilon.lower() in ("inf", "none") else float(args.epsilon)
    cfg = LumosConfig(backbone=args.model, task=args.task, epochs=args.epochs, epsilon=eps, trim=args.trim,
                      mcmc_iters=args.mcmc_iters, tree=args.tree, lr=args.lr, seed=args.seed)
    split = random_edge_split(g.senders, g.receivers, g.num_nodes, seed=args.seed) if args.task == "link" else None
    prep = prepare(g, cfg, split, x_scaled=x)
    w = prep.info["workload"]
    print(f"lumos: {g.name} devices={g.num_nodes} edges={w['edges']} max_degree={w['max_degree']} "
          f"max_workload={w['max']} (trim={cfg.trim}) message_saving={100 * w['message_saving']:.1f}% "
          f"prepare={prep.info['prepare_seconds']:.1f}s")
    out = train(prep, cfg, g.num_classes, progress=not args.no_progress, out_dir=args.out)
    metric = "accuracy" if cfg.task == "node" else "ROC-AUC"
    b = out["best"]
    print(f"lumos: best epoch {b['best_round']}: val {metric} {b['best_val']:.4f}, test {metric} {b['best_test']:.4f}; "
          f"{out['epoch_seconds'] * 1000:.0f} ms/epoch, compile {out['compile_seconds']:.1f}s")
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
    p.add_argument("--tree", default="tree", choices=["tree", "star"], help="star = ablation w/o virtual nodes")
    p.add_argument("--lr", type=float, default=0.01)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default=None, help="directory for metrics.jsonl and checkpoints")
    p.add_argument("--no-progress", action="store_true")
    p.set_defaults(func=_cli_main)
    return p
