"""FedAvgM (Hsu et al., 2019, "Measuring the effects of non-identical data distribution"): FedAvg
with server momentum.

The server treats g = w_server - mean_c w_c (the negated averaged update) as a gradient and applies
SGD with momentum to it (optax.sgd(server_lr, momentum)): v <- beta v + g, w <- w - eta v.
server_lr = 1 and server_momentum = 0 is FedAvg.
"""
from __future__ import annotations

import dataclasses

import optax

from fgl_jax.federated.baselines import FedConfig, baseline
from fgl_jax.registry import register
from fgl_jax.schema import option


@dataclasses.dataclass(frozen=True)
class FedAvgMHParams:
    server_lr: float = option(1.0, "server learning rate applied to the averaged update", low=0, low_open=True)
    server_momentum: float = option(0.9, "server momentum beta (0 = FedAvg with a server lr)", low=0, high=1,
                                    high_open=True)


@register("algorithm", "fedavgm", tasks=("node_cls", "link_pred"), features="ell", hparams=FedAvgMHParams,
          paper="Hsu, Qi, Brown, 2019, arXiv:1909.06335",
          help="FedAvgM: FedAvg with server momentum on the averaged update (optax SGD)")
def fedavgm(model, common: FedConfig, hp: FedAvgMHParams):
    server = optax.sgd(hp.server_lr, momentum=hp.server_momentum or None)
    return baseline(model, dataclasses.replace(common, algorithm="fedavg"), server_optimizer=server)
