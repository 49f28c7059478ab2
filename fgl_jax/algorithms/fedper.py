"""FedPer (Arivazhagan et al., 2019): the base layers are averaged, the last layers stay with each client."""
from __future__ import annotations

import dataclasses

from fgl_jax.federated.config import FedConfig
from fgl_jax.federated.fedavg_family import baseline
from fgl_jax.registry import register
from fgl_jax.schema import option


@dataclasses.dataclass(frozen=True)
class FedPerHParams:
    personal_layers: int = option(1, "FedPer: how many of the last layers stay with each client", low=0)


@register("algorithm", "fedper", tasks=("node_cls", "link_pred"), features="ell", hparams=FedPerHParams,
          paper="Arivazhagan, Aggarwal, Singh, Choudhary, 2019, arXiv:1912.00818",
          help="FedPer: base layers averaged, the last layer(s) personal to each client")
def fedper(model, common: FedConfig, hp: FedPerHParams):
    return baseline(model, dataclasses.replace(common, algorithm="fedper", personal_layers=hp.personal_layers))
