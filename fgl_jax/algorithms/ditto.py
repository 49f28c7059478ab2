"""Ditto (Li, Hu, Beirami & Smith, ICML 2021, "Ditto: Fair and Robust Federated Learning Through
Personalization").

Each client k keeps a personal model v_k beside the global model w. In a round every training
client, starting from the round's global model w^t,

  * trains a copy of w^t on its own loss F_k (`local_steps` optimiser steps) and uploads it: the
    global model is FedAvg's (through the run's aggregator, so DP-FedAvg and --server-opt apply);
  * trains its personal model on  F_k(v_k) + (lambda / 2) ||v_k - w^t||^2  (`local_steps` steps,
    the proximal gradient lambda (v_k - w^t) added in closed form by `local_train`); v_k never
    leaves the client.

lambda = 0 is Local (each client trains alone); a large lambda pulls the personal models to the
global one. Reported metrics are those of the personal models (eval_mode auto =
local_model_on_local_data; the global model with a global_model_* mode); `train_loss` is the
personal models' first-step loss, `global_train_loss` that of the global model's local training.

Both models start from the same initialisation; each has its own optimiser state per client.
Differences from the paper: its Algorithm 1 samples the personal update's clients as the global
one's and runs s SGD steps on v_k; here both use the run's optimiser (adam by default) and
`local_steps`, with `--optimizer sgd` giving the paper's update.
"""
from __future__ import annotations

import dataclasses
from typing import Any

import flax
import jax
import jax.numpy as jnp

from fgl_jax.algorithms._common import aggregate, init_params, round_start, scatter_clients, stack, take_clients, weighted_loss
from fgl_jax.federated.algorithm import FedData, FederatedAlgorithm
from fgl_jax.federated.chunking import map_clients
from fgl_jax.federated.client import local_train, make_optimizer, node_loss_fn
from fgl_jax.federated.config import FedConfig, server_aggregator
from fgl_jax.federated.evaluation import evaluate_models
from fgl_jax.registry import register
from fgl_jax.schema import option

PyTree = Any
GLOBAL_KEY = 1  # fold_in of the round's key for the global model's local training (the personal
                # models train with the round's own per-client keys, as Local does)


@dataclasses.dataclass(frozen=True)
class DittoHParams:
    ditto_lambda: float = option(0.1, "Ditto weight lambda of the personal models' proximal term "
                                      "(lambda/2)||v - w||^2 toward the global model (0 = Local)", low=0, traced=True)


@flax.struct.dataclass
class DittoState:
    round: jax.Array   # int32 scalar: rounds done
    server: PyTree     # the global model w
    personal: PyTree   # every client's personal model v_k [C, ...]
    opt: PyTree        # optimiser states of the global model's local training [C_t, ...]
    popt: PyTree       # optimiser states of the personal models [C_t, ...]
    hp: dict           # traced: lr, ditto_lambda
    aggregator: PyTree = None  # the server aggregator's state (`fgl_jax.aggregators`)


@register("algorithm", "ditto", tasks=("node_cls", "link_pred", "graph_cls", "graph_reg"), features="ell", hparams=DittoHParams,
          paper="Li, Hu, Beirami, Smith, ICML 2021, arXiv:2012.04221",
          help="Ditto: FedAvg's global model + personal models trained with a proximal pull (lambda) toward it")
def ditto(model, common: FedConfig, hp: DittoHParams) -> FederatedAlgorithm:
    optimizer = make_optimizer(common.optim, lr=1.0)
    aggregator = server_aggregator(common)
    loss_fn = node_loss_fn(model)
    mode = "local_model_on_local_data" if common.eval_mode == "auto" else common.eval_mode

    def init(key: jax.Array, data: FedData) -> DittoState:
        params = init_params(model, key, data)
        ct = data.train.num_clients
        return DittoState(round=jnp.zeros((), jnp.int32), server=params, personal=stack(params, data.eval.num_clients),
                          opt=stack(optimizer.init(params), ct), popt=stack(optimizer.init(params), ct),
                          hp={"lr": jnp.float32(common.optim.lr), "ditto_lambda": jnp.float32(hp.ditto_lambda)},
                          aggregator=aggregator.init(params))

    def round_fn(state: DittoState, data: FedData, key: jax.Array):
        ct = data.train.num_clients
        start, opt, scale = round_start(optimizer, common, state, data)   # start: w^t on every client
        mine = take_clients(state.personal, data.train_index)
        popt = jax.vmap(optimizer.init)(mine) if common.reset_optimizer else state.popt
        keys = jax.random.split(key, ct)
        gkeys = jax.random.split(jax.random.fold_in(key, GLOBAL_KEY), ct)

        def glob(p, o, b, k):
            return local_train(loss_fn, optimizer, common.local_steps, p, o, b, k, scale)

        def personal(v, o, b, k, w):
            return local_train(loss_fn, optimizer, common.local_steps, v, o, b, k, scale,
                               prox_mu=state.hp["ditto_lambda"], anchor=w)

        new, opt, glosses = map_clients(glob, common.client_chunk)(start, opt, data.train, gkeys)
        mine, popt, losses = map_clients(personal, common.client_chunk)(mine, popt, data.train, keys, start)
        server, agg = aggregate(aggregator, state.aggregator, new, data.train_weight, key, params=state.server)
        everyone = scatter_clients(state.personal, data.train_index, mine)
        metrics = evaluate_models(model, data, mode, server=server, local=everyone, chunk=common.client_chunk,
                                  average=common.eval_average)
        metrics["train_loss"] = weighted_loss(losses, data.train_weight)
        metrics["global_train_loss"] = weighted_loss(glosses, data.train_weight)
        metrics["lr"] = scale
        return DittoState(round=state.round + 1, server=server, personal=everyone, opt=opt, popt=popt, hp=state.hp,
                          aggregator=agg), metrics

    # a client downloads the global model and uploads its trained copy; v_k stays on the client
    return FederatedAlgorithm(init=init, round=round_fn, train_axis=("opt", "popt"),
                              messages=lambda s: (s.server, s.server))
