"""Lumos registered as a system: `build(cfg) -> Program`, run by the one engine.

Host side, once: load the features (data.load_features), split (50/25/25 vertices; 80/5/15 edges
for the link task) with `cfg.split_seed`, trim workloads (greedy + MCMC with the same seed), build
the trees. In the program: the one-bit LDP table is drawn from the state's key and the traced
`state.hp["epsilon"]`, Adam uses the traced `state.hp["lr"]`, so `fgl_jax.federated.run_sweep` runs
seeds x eps x lr with one compile (a sweep seed changes the initialisation, dropout, negatives and
the LDP draw; the split and the trees are those of `data_seed`).

    from fgl_jax import experiment
    from fgl_jax.systems.lumos import LumosConfig
    res = experiment.run_config(LumosConfig(dataset="lastfm_asia"), out="runs/lumos")
"""
from __future__ import annotations

from fgl_jax.federated import Program
from fgl_jax.registry import register
from fgl_jax.schema import split_mode
from fgl_jax.systems.lumos import communication
from fgl_jax.systems.lumos.algorithm import lumos_algorithm
from fgl_jax.systems.lumos.config import LumosConfig
from fgl_jax.systems.lumos.data import Prepared, load_features, prepare, split
from fgl_jax.systems.lumos.model import lumos_model


def prepare_config(cfg: LumosConfig):
    """(graph with masks, Prepared) of a config: the host-side work of `build`."""
    g, x = load_features(cfg.dataset, cfg.data_dir)
    keep = split_mode(cfg.split, cfg.dataset, bool(g.train_mask.any())) == "keep"
    g, edge_split = split(g, cfg.task, cfg.split_seed, keep_nodes=keep)
    return g, prepare(g, cfg, edge_split, x_scaled=x, encode="program")


def describe(cfg: LumosConfig, g, prep: Prepared) -> dict:
    """What the run is, for logs and summary.json (workload, trimming and message statistics)."""
    w = prep.info["workload"]
    trim = {k: v for k, v in prep.info.items() if k in ("greedy_max", "greedy_comparisons", "mcmc_accepted",
                                                          "mcmc_comparisons", "exact_opt")}
    return {"method": f"Lumos-{cfg.model}", "dataset": g.name, "task": cfg.task, "devices": g.num_nodes,
            "edges": w["edges"], "max_degree": w["max_degree"], "max_workload": w["max"], "trim": cfg.trim,
            "mcmc_iters": cfg.chain_length if cfg.trim == "mcmc" else 0, "tree": cfg.tree, "epsilon": cfg.epsilon,
            "message_saving": w["message_saving"], "messages": prep.info["messages"], **trim,
            "tree_nodes": prep.info["tree_nodes"], "prepare_seconds": prep.info["prepare_seconds"],
            "ldp": prep.info["ldp_accounting"]}


def program(cfg: LumosConfig, g, prep: Prepared) -> Program:
    """The Program of a prepared config, with its communication (communication.py): per epoch the
    server columns and `comm_p2p_bytes` in metrics.jsonl, the per-device p2p statistics in
    describe.communication_per_device, the one-off exchanges in describe.pre_training_communication."""
    algorithm = lumos_algorithm(cfg, g.num_classes)
    emb, table = communication.traced_specs(algorithm, lumos_model(cfg, g.num_classes), prep.data)
    cols, per_device = communication.epoch_columns(algorithm, prep.data, g.num_nodes, cfg.rounds, prep.meta, emb,
                                                   cfg.task)
    desc = describe(cfg, g, prep)
    desc["communication_per_device"] = per_device
    desc["pre_training_communication"] = communication.pre_training_bytes(
        prep.meta, table, prep.info, mcmc_counted=cfg.trim == "mcmc" and cfg.mcmc_argmax == "alg3")
    return Program(algorithm, prep.data, cfg.rounds, desc, per_round=cols)


@register("system", "lumos", config=LumosConfig,
          help="Lumos: federated GNN over devices (workload-balanced trees, one-bit LDP, tree GNN)")
def build(cfg: LumosConfig) -> Program:
    return program(cfg, *prepare_config(cfg))
