"""Baseline FL frameworks on a graph (`fgl-jax run`): the registered algorithms with a GNN.

Public API (what notebooks, benchmarks and experiments import): the names in `__all__` below.
"""
from fgl_jax.systems.baseline.config import SPLITS, RunConfig
from fgl_jax.systems.baseline.graph_fl import graph_model, graph_split, graph_train_order, task_targets
from fgl_jax.systems.baseline.program import Prepared, algorithm_from_config, build, prepare, split_graph

__all__ = ["SPLITS", "RunConfig", "Prepared", "algorithm_from_config", "build", "prepare",
           "split_graph", "graph_split", "graph_train_order", "graph_model", "task_targets"]
