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


# local_steps=3: the run's default local steps for FedProx (`local_steps` 0 in the baseline config). With one
# step the client starts at the global model, where the proximal gradient mu (w - w_global) is zero, so
# prox_mu changed nothing; 3 is OpenFGL's default number of local epochs (its config.py, --num_epochs 3;
# full-batch, so one epoch is one step), the common setting of the FGL benchmarks.
@register("algorithm", "fedprox", tasks=("node_cls", "link_pred", "graph_cls", "graph_reg"), features="ell", hparams=FedProxHParams, local_steps=3,
          paper="Li, Sahu, Zaheer, Sanjabi, Talwalkar, Smith, MLSys 2020, arXiv:1812.06127",
          help="FedProx: FedAvg with a proximal term pulling local models to the global one")
def fedprox(model, common: FedConfig, hp: FedProxHParams):
    return baseline(model, dataclasses.replace(common, algorithm="fedprox", prox_mu=hp.prox_mu))
