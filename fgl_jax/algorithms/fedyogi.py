"""FedYogi (Reddi et al., ICLR 2021, "Adaptive Federated Optimization"): FedAvg whose server applies
Yogi to the averaged update.

As FedAdam (`fedadam`), but the second moment moves additively, v <- v - (1-b2) g^2 sign(v - g^2),
so it grows slowly when updates are rare and large (optax.yogi).

Differences from the paper: optax's Yogi divides m and v by their bias corrections (1 - b^t); the
paper's Algorithm 2 does not. v starts at tau^2 as the paper asks (v_{-1} >= tau^2); optax starts m
there too (the paper at 0), a 1e-6 offset that the first round's (1-b1) g dwarfs. OpenFGL has no
FedYogi.
"""
from __future__ import annotations

import dataclasses

from fgl_jax.federated.config import FedConfig
from fgl_jax.federated.fedavg_family import baseline
from fgl_jax.aggregators.server_opt import FedYogiHParams, yogi
from fgl_jax.registry import register


@register("algorithm", "fedyogi", tasks=("node_cls", "link_pred", "graph_cls", "graph_reg"), features="ell", hparams=FedYogiHParams,
          paper="Reddi, Charles, Zaheer, Garrett, Rush, Konečný, Kumar, McMahan, ICLR 2021, arXiv:2003.00295",
          help="FedYogi: FedAvg with a server Yogi step on the averaged update (Reddi et al.)")
def fedyogi(model, common: FedConfig, hp: FedYogiHParams):
    return baseline(model, dataclasses.replace(common, algorithm="fedavg"), server_optimizer=yogi(hp))
