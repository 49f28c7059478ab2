"""Global: centralised training on the whole graph (FedAvg over one client that holds everything)."""
from __future__ import annotations

import dataclasses

from fgl_jax.federated.config import FedConfig
from fgl_jax.federated.fedavg_family import baseline
from fgl_jax.registry import register


@register("algorithm", "global", tasks=("node_cls", "link_pred", "graph_cls", "graph_reg"), features="ell", data="full_graph",
          paper="baseline without federation (centralised training on the whole graph)",
          help="Global: centralised training on the whole graph (one client holding every node)")
def centralised(model, common: FedConfig, hp=None):
    # one client holding the whole graph: nothing is communicated
    return baseline(model, dataclasses.replace(common, algorithm="fedavg"))._replace(messages=lambda s: ((), ()))
