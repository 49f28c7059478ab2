"""FedAvgM (Hsu et al., 2019, "Measuring the effects of non-identical data distribution"): FedAvg
with server momentum.

The server treats g = w_server - mean_c w_c (the negated averaged update) as a gradient and applies
SGD with momentum to it (optax.sgd(server_lr, momentum)): v <- beta v + g, w <- w - eta v.
server_lr = 1 and server_momentum = 0 is FedAvg.
"""
from __future__ import annotations

import dataclasses

from fgl_jax.federated.config import FedConfig
from fgl_jax.federated.fedavg_family import baseline
from fgl_jax.aggregators.server_opt import FedAvgMHParams, momentum
from fgl_jax.registry import register


@register("algorithm", "fedavgm", tasks=("node_cls", "link_pred", "graph_cls", "graph_reg"), features="ell", hparams=FedAvgMHParams,
          paper="Hsu, Qi, Brown, 2019, arXiv:1909.06335",
          help="FedAvgM: FedAvg with server momentum on the averaged update (optax SGD)")
def fedavgm(model, common: FedConfig, hp: FedAvgMHParams):
    return baseline(model, dataclasses.replace(common, algorithm="fedavg"), server_optimizer=momentum(hp))
