"""fgl_jax: federated graph learning in JAX.

The flat public API (optax style): everything a user, an experiment, a benchmark or a notebook
needs is importable from here.

    import fgl_jax as fj
    cfg = fj.default_config("baseline", dataset="cora", algorithm="fedavg", clients=10)
    res = fj.run_config(cfg, out="runs/cora")          # config.yaml, metrics.jsonl, summary.json, checkpoints/
    fj.names("algorithm")                             # what the registry knows

Names are loaded on first use, so `import fgl_jax` stays cheap.
"""
from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

# public name -> module that defines it
_EXPORTS = {
    # registry and configs
    "register": "fgl_jax.registry", "get": "fgl_jax.registry", "names": "fgl_jax.registry",
    "option": "fgl_jax.schema", "RunSpec": "fgl_jax.schema",
    # one engine
    "run_config": "fgl_jax.experiment", "build": "fgl_jax.experiment", "default_config": "fgl_jax.experiment",
    "execute": "fgl_jax.experiment", "config_class": "fgl_jax.experiment",
    "FederatedAlgorithm": "fgl_jax.federated", "Program": "fgl_jax.federated", "Hooks": "fgl_jax.federated",
    "RunResult": "fgl_jax.federated", "NonFiniteError": "fgl_jax.federated", "run": "fgl_jax.federated",
    "run_sweep": "fgl_jax.federated", "run_sharded": "fgl_jax.federated", "FedConfig": "fgl_jax.federated",
    "OptimConfig": "fgl_jax.federated", "baseline": "fgl_jax.federated", "make_fed_data": "fgl_jax.federated",
    "local_train": "fgl_jax.federated", "make_optimizer": "fgl_jax.federated",
    "masked_cross_entropy": "fgl_jax.federated",
    # data, partitions, client batches, models
    "Graph": "fgl_jax.graph", "load": "fgl_jax.data", "load_graph": "fgl_jax.data",
    "register_dataset": "fgl_jax.data", "list_datasets": "fgl_jax.data", "csbm": "fgl_jax.data",
    "random_split": "fgl_jax.data", "per_class_split": "fgl_jax.data",
    "make_partition": "fgl_jax.partition", "louvain_partition": "fgl_jax.partition",
    "random_partition": "fgl_jax.partition", "partition_stats": "fgl_jax.partition",
    "ClientBatch": "fgl_jax.batch", "build_client_batch": "fgl_jax.batch", "full_graph_batch": "fgl_jax.batch",
    "make_model": "fgl_jax.nn",
    # each system's config (its one schema)
    "RunConfig": "fgl_jax.systems.baseline", "HiFGLConfig": "fgl_jax.systems.hifgl.config",
    "LumosConfig": "fgl_jax.systems.lumos.config", "FedHGNConfig": "fgl_jax.systems.fedhgn.config",
    "FedGCConfig": "fgl_jax.systems.fedgc.config", "FedHGLConfig": "fgl_jax.systems.fedhgl.config",
    # result files
    "table": "fgl_jax.report", "write_results": "fgl_jax.report", "provenance": "fgl_jax.report",
}
_RENAMED = {"register_dataset": "register"}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'fgl_jax' has no attribute {name!r}")
    value = getattr(importlib.import_module(_EXPORTS[name]), _RENAMED.get(name, name))
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
