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

import optax

from fgl_jax.federated.baselines import FedConfig, baseline
from fgl_jax.registry import register
from fgl_jax.schema import option


@dataclasses.dataclass(frozen=True)
class FedYogiHParams:
    yogi_server_lr: float = option(0.01, "FedYogi server learning rate eta", low=0, low_open=True)
    yogi_beta1: float = option(0.9, "FedYogi server first-moment decay beta1", low=0, high=1, high_open=True)
    yogi_beta2: float = option(0.99, "FedYogi server second-moment decay beta2", low=0, high=1, high_open=True)
    yogi_tau: float = option(1e-3, "FedYogi adaptivity tau (epsilon added to sqrt(v); v starts at tau^2)",
                             low=0, low_open=True)


def server_yogi(hp: FedYogiHParams) -> optax.GradientTransformation:
    # optax.yogi with the accumulators started at tau^2 (optax starts both m and v there)
    return optax.chain(optax.scale_by_yogi(hp.yogi_beta1, hp.yogi_beta2, hp.yogi_tau,
                                           initial_accumulator_value=hp.yogi_tau ** 2),
                       optax.scale_by_learning_rate(hp.yogi_server_lr))


@register("algorithm", "fedyogi", tasks=("node_cls", "link_pred"), features="ell", hparams=FedYogiHParams,
          paper="Reddi, Charles, Zaheer, Garrett, Rush, Konečný, Kumar, McMahan, ICLR 2021, arXiv:2003.00295",
          help="FedYogi: FedAvg with a server Yogi step on the averaged update (Reddi et al.)")
def fedyogi(model, common: FedConfig, hp: FedYogiHParams):
    return baseline(model, dataclasses.replace(common, algorithm="fedavg"), server_optimizer=server_yogi(hp))
