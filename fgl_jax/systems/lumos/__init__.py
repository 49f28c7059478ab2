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
    baselines.py  centralised GCN/GAT/MLP (train_central; mean_field_q: the naive FedGNN's server model)
The paper's cells, the naive FedGNN baseline and `reproduce` (fgl-jax reproduce lumos) live in the
checkout's experiments/lumos/ (paper.py, baselines.py), on the one harness experiments/harness.py.
The one-bit LDP encoder lives in fgl_jax.privacy.onebit (public as `fgl_jax.onebit`).

Run: `fgl_jax.run_config(LumosConfig(dataset="facebook"), out=...)` (= `fgl-jax lumos`).

Public API (what notebooks, benchmarks and experiments import): the names in `__all__` below.
`prepare_config` (host-side preparation of a config) and `prepared_program` (its Program) are `build`
in two steps, for callers that read the preparation's statistics or run one prepared program as a
sweep (experiments/lumos/paper.py). `with_ldp_table` is the per-round input step
(the LDP table drawn in the program and cached in the state; identity without program-side LDP).
"""
from fgl_jax.systems.lumos.algorithm import _with_table as with_ldp_table
from fgl_jax.systems.lumos.algorithm import link_logits, lumos_algorithm, node_loss, roc_auc
from fgl_jax.systems.lumos.baselines import train_central
from fgl_jax.systems.lumos.config import LumosConfig
from fgl_jax.systems.lumos.data import load_features, minmax_scale, prepare, split, top_frequent_features
from fgl_jax.systems.lumos.model import lumos_model
from fgl_jax.systems.lumos.program import build, prepare_config
from fgl_jax.systems.lumos.program import program as prepared_program
from fgl_jax.systems.lumos.secure import SecureComparator
from fgl_jax.systems.lumos.trees import build_trees
from fgl_jax.systems.lumos.workload import (EdgeSet, exact_min_max, greedy_init, is_covered, max_workload, mcmc_trim,
                                            workload_cdf, workload_stats, workloads)

__all__ = ["LumosConfig", "build", "prepare", "load_features", "lumos_algorithm", "SecureComparator", "EdgeSet",
           "exact_min_max", "greedy_init", "mcmc_trim", "workload_stats", "is_covered", "max_workload",
           "workload_cdf", "workloads", "build_trees", "minmax_scale", "split", "top_frequent_features",
           "train_central", "lumos_model", "node_loss", "link_logits", "roc_auc", "with_ldp_table", "prepare_config",
           "prepared_program"]

