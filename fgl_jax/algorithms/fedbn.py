"""FedBN (Li, Jiang, Zhang, Kamp & Dou, ICLR 2021, "FedBN: Federated Learning on Non-IID Features
via Local Batch Normalization"): every parameter averaged except those of the normalisation
layers, which stay with each client.

Run it with a normalising model (`--norm batch`, or `layer`; `fgl_jax.nn.layers.normalise`): each
client keeps its own scale and shift per normalised feature, and its batch statistics are its own
nodes' (the paper's local running statistics; see `normalise` for why they are not running
averages here). Everything else is the FedAvg family's round (`fgl_jax.federated.fedavg_family`:
the run's aggregator, so DP-FedAvg, --server-opt and client sampling apply; the kept leaves are
uploaded as the server's values and so neither move the aggregate nor count in DP's clipping norm).

Evaluation (eval_mode auto): each client's model (the shared parameters + its own normalisation)
on its own subgraph. Without normalisation layers nothing is personal and FedBN is FedAvg, global
model evaluation included.
"""
from __future__ import annotations

import dataclasses

from fgl_jax.federated.config import FedConfig
from fgl_jax.federated.fedavg_family import baseline
from fgl_jax.registry import register


def model_norm(model) -> str:
    """The normalisation of `model`'s hidden layers ("none" for models without the option); a
    link-prediction model's is its encoder's."""
    return str(getattr(getattr(model, "encoder", model), "norm", "none"))


@register("algorithm", "fedbn", tasks=("node_cls", "link_pred", "graph_cls", "graph_reg"), features="ell",
          paper="Li, Jiang, Zhang, Kamp, Dou, ICLR 2021, arXiv:2102.07623",
          help="FedBN: everything averaged but the normalisation layers (run with --norm batch), kept per client")
def fedbn(model, common: FedConfig, hp=None):
    mode = common.eval_mode
    if model_norm(model) == "none":
        # nothing personal: FedAvg, evaluated as FedAvg is (the global model)
        mode = "global_model_on_local_data" if mode == "auto" else mode
    elif mode == "auto":
        mode = "local_model_on_local_data"
    elif mode.startswith("global_model"):
        raise ValueError(f"eval_mode={mode!r}: FedBN keeps the normalisation layers on the clients, so there is "
                         "no global model with them; use a local_model_* mode or 'auto'")
    return baseline(model, dataclasses.replace(common, algorithm="fedbn", eval_mode=mode))
