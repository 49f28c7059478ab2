"""FedProx (Li et al., MLSys 2020): FedAvg + (mu/2)||w - w_global||^2 in each client's objective."""
from __future__ import annotations

import dataclasses

from fgl_jax.federated.config import FedConfig
from fgl_jax.federated.fedavg_family import baseline
from fgl_jax.registry import register
from fgl_jax.schema import option


@dataclasses.dataclass(frozen=True)
class FedProxHParams:
    prox_mu: float = option(0.01, "FedProx proximal weight mu (0 = FedAvg)", low=0, traced=True)


@register("algorithm", "fedprox", tasks=("node_cls", "link_pred", "graph_cls", "graph_reg"), features="ell", hparams=FedProxHParams,
          paper="Li, Sahu, Zaheer, Sanjabi, Talwalkar, Smith, MLSys 2020, arXiv:1812.06127",
          help="FedProx: FedAvg with a proximal term pulling local models to the global one")
def fedprox(model, common: FedConfig, hp: FedProxHParams):
    return baseline(model, dataclasses.replace(common, algorithm="fedprox", prox_mu=hp.prox_mu))
