"""FedHGL: federated hypergraph learning with (LDP) hyperedge completion.

Luo et al., "Federated Hypergraph Learning with Local Differential Privacy: Toward Privacy-Aware
Hypergraph Structure Completion" (ICDE 2025). Spec: /work/shared/specs/fedhgl.md.

    config.py       FedHGLConfig: the schema (defaults = Table III FedHGL w/ HC, CoraCA, K = 3)
    clients.py      node partition, internal / cross-client hyperedges, padded per-client arrays
    propagation.py  the pre-propagation on the host (sparse; HC with per-node LDP noise, Basic, Global)
    completion.py   hyperedge completion as the explicit client/server protocol (Algorithm 2, JAX)
    data.py         prepare(hg, cfg): partition -> propagate -> per-client train/val/test rows
    model.py        the two-linear classifier (Eq. 10)
    algorithm.py    FedAvg / local training as a FederatedAlgorithm (init, round)
    program.py      build(cfg) -> Program, registered as system "fedhgl"

Public API (what notebooks, benchmarks and experiments import): the names in `__all__` below. The
paper's cells and tables live in the checkout's experiments/fedhgl/ (`fgl-jax reproduce fedhgl`).
"""
from fgl_jax.systems.fedhgl import program  # noqa: F401  (registers the system)
from fgl_jax.systems.fedhgl.algorithm import FedHGLState, evaluate, init_state, make_algorithm, make_round
from fgl_jax.systems.fedhgl.clients import (HCClients, HypergraphSplit, build_basic_clients, build_hc_clients,
                                            client_features, partition_hypergraph, split_hypergraph)
from fgl_jax.systems.fedhgl.completion import (basic_propagation, global_propagation, hyperedge_completion,
                                               server_aggregate)
from fgl_jax.systems.fedhgl.config import METHODS, TRAIN_RATIO, FedHGLConfig
from fgl_jax.systems.fedhgl.data import (FedHGLData, client_splits, make_data, preparation_key, prepare, propagate,
                                         resolve_mechanism)
from fgl_jax.systems.fedhgl.model import make_model
from fgl_jax.systems.fedhgl.program import build

__all__ = ["FedHGLConfig", "METHODS", "TRAIN_RATIO", "build", "prepare", "preparation_key", "propagate",
           "resolve_mechanism", "client_splits", "make_data", "FedHGLData", "FedHGLState", "init_state", "make_round",
           "make_algorithm", "evaluate", "make_model", "HypergraphSplit", "split_hypergraph", "partition_hypergraph",
           "HCClients", "build_hc_clients", "build_basic_clients", "client_features", "hyperedge_completion",
           "basic_propagation", "global_propagation", "server_aggregate"]
