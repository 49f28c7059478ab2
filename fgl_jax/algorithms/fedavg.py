"""FedAvg (McMahan et al., AISTATS 2017): every parameter averaged, weighted by training nodes."""
from __future__ import annotations

import dataclasses

from fgl_jax.federated.config import FedConfig
from fgl_jax.federated.fedavg_family import baseline
from fgl_jax.registry import register


@register("algorithm", "fedavg", tasks=("node_cls", "link_pred", "graph_cls", "graph_reg"), features="ell",
          paper="McMahan, Moore, Ramage, Hampson, Agüera y Arcas, AISTATS 2017, arXiv:1602.05629",
          help="FedAvg: every parameter averaged, weighted by training nodes")
def fedavg(model, common: FedConfig, hp=None):
    return baseline(model, dataclasses.replace(common, algorithm="fedavg"))
