"""`fgl-jax fedhgl`: a FedHGLConfig -> a Program for the one engine (`fgl_jax.experiment.run_config`).

Host preparation happens once here (`data.prepare`: partition, pre-propagation, splits); the
rounds run through `fgl_jax.federated.run` with key `jax.random.key(cfg.seed)`. Hooks: `select`
reports the paper's number (the per-client best-validation models' test accuracy after the last
round, not the engine's best-validation round) and `finalize` adds the final global model's test
accuracy (spec §10.11).
"""
from __future__ import annotations

from typing import Optional

import jax
import numpy as np

from fgl_jax import progress
from fgl_jax.data.hypergraph import Hypergraph, load_hypergraph
from fgl_jax.federated.communication import per_round_columns
from fgl_jax.federated.algorithm import Hooks, Program
from fgl_jax.registry import register
from fgl_jax.systems.fedhgl.algorithm import evaluate, make_algorithm
from fgl_jax.systems.fedhgl.config import FedHGLConfig
from fgl_jax.systems.fedhgl.data import prepare


def select_final(history: dict, evaluations: list) -> dict:
    """The reported round: the last one (per-client best-validation checkpoints, test-size weighted)."""
    n = len(history["test_acc"])
    return {"best_val": float(np.asarray(history["best_val_acc"])[-1]), "best_test": float(np.asarray(history["test_acc"])[-1]),
            "best_round": n, "rule": "per-client best-validation models after the last round (spec §10.11)"}


def final_evaluation(state, data, final_relu: bool) -> dict:
    """Test accuracy of the per-client best models and of the final global (server) model."""
    return {k: float(v) for k, v in jax.device_get(evaluate(state, data, final_relu)).items()}


def load_input(dataset: str, data_dir: Optional[str] = None) -> Hypergraph:
    """The hypergraph of `dataset` (`fgl_jax.data.hypergraph.load_hypergraph`): a built-in FedHGL
    name (its paper preprocessing), any other name or path holding a hypergraph, or a plain graph
    made into 1-hop hyperedges e_v = {v} ∪ N(v) as the paper does for Cora / CiteSeer / Facebook. A
    user's features are kept as they are (feature_kind binary when every value is 0 or 1, so LDP
    uses randomized response; else numeric, Laplace), and so are the masks (`split: auto` keeps them)."""
    return load_hypergraph(dataset, data_dir)


@register("system", "fedhgl", config=FedHGLConfig,
          help="FedHGL: federated hypergraph learning with hyperedge completion and LDP (ICDE'25)")
def build(cfg: FedHGLConfig, hypergraph: Optional[Hypergraph] = None) -> Program:
    """The run of `cfg` (hypergraph: use this one instead of loading cfg.dataset, e.g. in tests)."""
    hg = hypergraph if hypergraph is not None else load_input(cfg.dataset, cfg.data_dir)
    progress.phase("preparing", f"{cfg.clients} clients, {cfg.propagation} propagation")
    data, info = prepare(hg, cfg)
    describe = {"system": "fedhgl", "dataset": hg.name, "clients": cfg.clients, "method": cfg.method,
                "propagation": cfg.propagation, "mode": cfg.mode, "mechanism": info.get("mechanism"),
                "eps": cfg.eps, "seed": cfg.seed, "traced_eps": cfg.traced_eps, "train_ratio": info["train_ratio"],
                "propagation_seconds": info["propagation_seconds"], "split_stats": info["split_stats"],
                "pre_training_communication": info["pre_training_communication"]}
    hooks = Hooks(select=select_final, finalize=lambda res: final_evaluation(res.state, data, cfg.final_relu))
    algorithm = make_algorithm(hg.num_classes, cfg)
    return Program(algorithm, data, cfg.rounds, describe, hooks,
                   per_round=per_round_columns(algorithm, data, int(data.x_train.shape[0]), cfg.rounds))
