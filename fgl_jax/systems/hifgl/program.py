"""`fgl-jax hifgl`: a HiFGLConfig -> a Program (host preparation once) for the one engine."""
from __future__ import annotations

import numpy as np

from fgl_jax.federated.algorithm import Program
from fgl_jax.federated.communication import per_round_columns
from fgl_jax.systems.hifgl.model import secmp_bytes
from fgl_jax.registry import register
from fgl_jax.systems.hifgl.algorithm import hifgl
from fgl_jax.systems.hifgl.config import HiFGLConfig, split_sizes
from fgl_jax.systems.hifgl.data import prepare


@register("system", "hifgl", config=HiFGLConfig,
          help="HiFGL (KDD'24): secret message passing over silos of devices")
def build(cfg: HiFGLConfig) -> Program:
    """Split, silos and HiFGLData built once; the run reports test accuracy at the best pooled
    validation round (the engine's default selection, spec 5.2.9), or at the best test round with
    `select="test"` (the authors' code's checkpoint choice); `state.hp` holds `lr`."""
    prep = prepare(cfg)
    g = prep.graph
    per_class, num_val = split_sizes(cfg, g.num_nodes, g.num_classes)
    describe = {"method": f"HiFGL-{cfg.model}", "dataset": cfg.dataset, "clients": cfg.clients, "mode": cfg.mode,
                "T": cfg.T, "nodes": g.num_nodes, "train_per_class": per_class, "num_val": num_val,
                "train_nodes": int(g.train_mask.sum()), "val_nodes": int(g.val_mask.sum()),
                "test_nodes": int(g.test_mask.sum()), "select": cfg.select, "edges": cfg.edges,
                "message_edges": int(np.asarray(prep.data.edge_mask).sum())}
    algorithm = hifgl(cfg, g.num_features, g.num_classes)
    if cfg.select == "test":  # the authors' code keeps the checkpoint of the best test accuracy
        algorithm = algorithm._replace(select=("test_acc", "test_acc"))
    return Program(algorithm, prep.data, cfg.rounds, describe,
                   per_round=communication_columns(cfg, algorithm, prep.data, g.num_features, g.num_classes))


def communication_columns(cfg: HiFGLConfig, algorithm, data, in_dim: int, num_classes: int) -> dict:
    """metrics.jsonl columns: every silo's model up and down (`comm_*`, all silos take part) and
    `comm_secmp_bytes`, the devices' coded shares of one training forward pass (the evaluation
    pass the simulation adds for its metrics is not counted)."""
    cols = per_round_columns(algorithm, data, data.clients, cfg.rounds)
    cols["comm_secmp_bytes"] = np.full(cfg.rounds, secmp_bytes(cfg, data, in_dim, num_classes), np.int64)
    return cols
