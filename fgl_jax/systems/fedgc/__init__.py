"""FedGC: federated graph condensation with information-bottleneck principles (Yan et al., AAAI 2025).

    config.py     FedGCConfig, the schema (the only place a FedGC default is written)
    data.py       host preparation: partition, L-hop expansion, self-training, IB, client blocks
    selftrain.py  federated self-training (line 5)
    ib.py         the information-bottleneck transformation (line 6)
    condense/     federated gradient matching (lines 7-14): relay, PGE, matching, aggregation,
                  client blocks, server step, one round; defences ldp.py and reg.py
    algorithm.py  the FederatedAlgorithm (one round = one condensation round)
    evaluate.py   GNNs trained on G' and tested on the clients (line 15), cross-architecture tests
    attack.py     the membership inference attack (honest-but-curious server)
    program.py    build(cfg) -> Program (registered), its hooks (evaluation, selection, attack, archs)

The paper's cells and tables (`fgl-jax reproduce fedgc`) live in the checkout's experiments/fedgc/.

    from fgl_jax import run_config
    res = run_config(FedGCConfig(dataset="cora"), out="runs/fedgc")   # Table 1's headline cell

Public API (what notebooks, benchmarks and experiments import): the names in `__all__` below.
"""
from fgl_jax.systems.fedgc import program
from fgl_jax.systems.fedgc.attack import MIAConfig, central_gcn_accuracy, fedgc_attack
from fgl_jax.systems.fedgc.config import DEFENCES, PROTOCOLS, FedGCConfig
from fgl_jax.systems.fedgc.data import (expand_clients, expand_nodes, normalize_features, prepare, prepare_clients,
                                        train_class_counts)
from fgl_jax.systems.fedgc.ib import IBConfig, IBPosterior, ib_resample, ib_transform, kl_analytic, kl_mc
from fgl_jax.systems.fedgc.program import FedGCResult, FedGCRun, build, select_result
from fgl_jax.systems.fedgc.selftrain import self_train, self_train_optimizer
from fgl_jax.systems.fedgc.condense import condensed_graph
from fgl_jax.systems.fedgc.evaluate import RECIPE_ARCHS, EvalConfig, client_graph_ceiling, dense_graph_batch

__all__ = ["DEFENCES", "PROTOCOLS", "FedGCConfig", "FedGCResult", "FedGCRun", "IBConfig", "IBPosterior", "MIAConfig",
           "build", "expand_clients", "expand_nodes", "fedgc_attack", "ib_resample", "ib_transform", "kl_analytic",
           "kl_mc", "normalize_features", "prepare", "prepare_clients", "program", "select_result", "self_train",
           "self_train_optimizer", "train_class_counts", "condensed_graph", "dense_graph_batch", "EvalConfig",
           "RECIPE_ARCHS", "central_gcn_accuracy", "client_graph_ceiling"]

