"""Local (Isolate): each client trains alone on its subgraph; nothing is shared."""
from __future__ import annotations

import dataclasses

from fgl_jax.federated.config import FedConfig
from fgl_jax.federated.fedavg_family import baseline
from fgl_jax.registry import register


@register("algorithm", "local", tasks=("node_cls", "link_pred", "graph_cls", "graph_reg"), features="ell",
          paper="baseline without federation (each client trains alone; OpenFGL's Isolate)",
          help="Local: each client trains alone on its subgraph, nothing shared")
def local(model, common: FedConfig, hp=None):
    return baseline(model, dataclasses.replace(common, algorithm="local"))
