"""Lumos (Pan, Zhu, Chu, ICDE'23): heterogeneity-aware federated graph learning over decentralized devices.

Every vertex is a device holding its ego network. Module A builds per-device trees after
balancing workloads (greedy Alg. 1 + MCMC Alg. 2, exact flow optimum as an oracle); Module B
trains one shared tree GNN over all devices with LDP features and mean POOL.

    config.py     LumosConfig: the one schema (paper defaults, valid values)
    data.py       host preparation: features, splits, trimming, trees, LDP inputs (prepare)
    model.py      TreeEncoder (GCN / GAT), pool_mean, Lumos
    algorithm.py  the FederatedAlgorithm (one round = one epoch), losses, in-program LDP table
    program.py    build(cfg) -> Program, registered as system "lumos"
    secure.py     simulated CrypTFlow2 comparison oracle (counts comparisons)
    workload.py   EdgeSet, greedy_init, find_max_device (Alg. 3), mcmc_trim, exact_min_max, stats
    trees.py      build_trees: every device's tree in one padded disjoint union (TreeBatch)
    baselines.py  centralised GCN/GAT/MLP, naive FedGNN (Gaussian features, RR adjacency and labels)
    paper.py      the paper's cells and `reproduce` (fgl-jax reproduce lumos)
The one-bit LDP encoder lives in fgl_jax.privacy.onebit.

Run: `fgl_jax.experiment.run_config(LumosConfig(dataset="facebook"), out=...)` (= `fgl-jax lumos`).
"""
from fgl_jax.systems.lumos.algorithm import lumos_algorithm
from fgl_jax.systems.lumos.config import LumosConfig
from fgl_jax.systems.lumos.data import load_features, prepare
from fgl_jax.systems.lumos.program import build
from fgl_jax.systems.lumos.secure import SecureComparator
from fgl_jax.systems.lumos.workload import EdgeSet, exact_min_max, greedy_init, mcmc_trim, workload_stats

__all__ = ["LumosConfig", "build", "prepare", "load_features", "lumos_algorithm", "SecureComparator", "EdgeSet",
           "exact_min_max", "greedy_init", "mcmc_trim", "workload_stats"]
