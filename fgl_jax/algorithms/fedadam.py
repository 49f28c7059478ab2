"""FedAdam (Reddi et al., ICLR 2021, "Adaptive Federated Optimization"): FedAvg whose server applies
Adam to the averaged update.

Each round the clients train from the server model w as in FedAvg; the server treats the negated
average update g = w - sum_c p_c w_c (p_c = training-node share) as a gradient and takes one
optax.adam step on it (m <- b1 m + (1-b1) g, v <- b2 v + (1-b2) g^2, w <- w - eta m/(sqrt(v) + tau)).

Differences from the paper: optax's Adam divides m and v by their bias corrections (1 - b^t); the
paper's Algorithm 2 does not (it starts v at tau^2 instead). The two agree after a few dozen rounds
(b2 = 0.99); early rounds take larger steps here. OpenFGL has no FedAdam.
"""
from __future__ import annotations

import dataclasses

from fgl_jax.federated.config import FedConfig
from fgl_jax.federated.fedavg_family import baseline
from fgl_jax.aggregators.server_opt import FedAdamHParams, adam
from fgl_jax.registry import register


@register("algorithm", "fedadam", tasks=("node_cls", "link_pred", "graph_cls", "graph_reg"), features="ell", hparams=FedAdamHParams,
          paper="Reddi, Charles, Zaheer, Garrett, Rush, Konečný, Kumar, McMahan, ICLR 2021, arXiv:2003.00295",
          help="FedAdam: FedAvg with a server Adam step on the averaged update (Reddi et al.)")
def fedadam(model, common: FedConfig, hp: FedAdamHParams):
    return baseline(model, dataclasses.replace(common, algorithm="fedavg"), server_optimizer=adam(hp))
