"""The federated engine: algorithms as (init, round) pairs, run as lax.scan over rounds."""
from fgl_jax.federated.algorithm import (FedData, FederatedAlgorithm, Hooks, HostInput, Phase, Program, make_fed_data,
                                         with_round)
from fgl_jax.federated.config import ALGORITHMS, FedConfig
from fgl_jax.federated.fedavg_family import BaselineState, baseline
from fgl_jax.federated.client import OptimConfig, local_train, lr_scale, make_optimizer
from fgl_jax.federated.metrics import graph_information_gain, masked_cross_entropy
from fgl_jax.federated.run import NonFiniteError, RunResult, run
from fgl_jax.federated.sharding import client_mesh, run_sharded
from fgl_jax.federated.bucketed import bucketed_baseline
from fgl_jax.federated.sweep import run_sweep

__all__ = ["FedData", "FederatedAlgorithm", "Hooks", "HostInput", "Phase", "with_round", "Program", "make_fed_data", "ALGORITHMS", "BaselineState", "FedConfig",
           "baseline", "OptimConfig", "local_train", "lr_scale", "make_optimizer", "graph_information_gain",
           "masked_cross_entropy", "NonFiniteError", "RunResult", "run", "client_mesh", "run_sharded",
           "bucketed_baseline", "run_sweep"]
