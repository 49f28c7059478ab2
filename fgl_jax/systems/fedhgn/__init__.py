"""FedHGN (Fu & King, IJCAI 2023): federated heterogeneous GNNs with private schemas.

    config.py     FedHGNConfig: the one schema (defaults = the paper's headline cell)
    rgcn.py       the RGCN-like backbone and the per-client two-hop blocks (host side)
    model.py      the flat all-clients form of the backbone (the fast path every round runs)
    data.py       client graphs -> HeteroFedData (host side, once)
    algorithm.py  fedhgn(cfg): FederatedAlgorithm (Algorithm 1: SWD, CA, server pool / averaging)
    program.py    build(cfg) -> Program (registered), early stopping as Hooks

    fgl-jax fedhgn --dataset aifb --split RE --clients 3

Public API (what notebooks, benchmarks and experiments import): the names in `__all__` below. The
paper's cells and tables live in the checkout's experiments/fedhgn/ (`fgl-jax reproduce fedhgn`).
"""
from fgl_jax.systems.fedhgn.algorithm import (FedHGNState, alignment_loss, fedhgn, server_aggregate,
                                              server_average_coeffs, server_pool)
from fgl_jax.systems.fedhgn.config import METHODS, FedHGNConfig
from fgl_jax.systems.fedhgn.data import (HeteroFedData, client_data, hetero_fed_data, majority_accuracy,
                                         make_fed_data, prepare_clients)
from fgl_jax.systems.fedhgn.model import FlatBlocks, flat_logits, flatten_blocks
from fgl_jax.systems.fedhgn.program import build, early_stop, early_stopping_hooks, program
from fgl_jax.systems.fedhgn.rgcn import build_hetero_blocks

__all__ = ["FedHGNConfig", "METHODS", "FedHGNState", "HeteroFedData", "FlatBlocks", "alignment_loss", "server_pool",
           "server_aggregate", "server_average_coeffs", "fedhgn", "make_fed_data", "hetero_fed_data",
           "prepare_clients", "client_data", "majority_accuracy", "flatten_blocks", "flat_logits", "early_stop",
           "early_stopping_hooks", "program", "build", "build_hetero_blocks"]
