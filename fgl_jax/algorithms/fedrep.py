"""FedRep (Collins, Hassani, Mokhtari & Shakkottai, ICML 2021, "Exploiting Shared Representations
for Personalized Federated Learning").

The model is split into a shared body (the representation: every layer but the last
`fedrep_head_layers`) and a personal head (those last layers; FedPer's split, `layer_index`).
In a round every training client, starting from the global body and its own head,

  1. trains its head for `fedrep_head_epochs` optimiser steps with the body frozen;
  2. trains the body for `local_steps` steps with its new head frozen, and uploads the body.

The server aggregates the bodies through the run's aggregator (DP-FedAvg, --server-opt, client
sampling apply; the head never leaves the client, so it is neither in the upload nor in DP's
clipping norm). A step is one full-batch pass over the client's subgraph, so the paper's
"epochs" are steps here. Each phase has its own optimiser state per client (the run's optimiser).

Reported metrics (eval_mode auto): each client's model (the new global body + its own head) on its
own subgraph; `train_loss` is the body phase's first-step loss, `head_train_loss` the head phase's.
With `fedrep_head_layers` 0 there is no head: FedRep is FedAvg (global model evaluation included).
Graph tasks (`fgl_jax.nn.graph.GraphClassifier`): the head is the last 1 or 2 Dense layers of the
model's MLP head after the readout (`head_1`, then `head_0`); every conv layer is body
(`fgl_jax.federated.fedavg_family.graph_top_mask`).
Difference from the paper: its Algorithm 1 uses SGD; `--optimizer sgd` gives that update.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import flax
import jax
import jax.numpy as jnp

from fgl_jax.algorithms._common import (aggregate, evaluate_round, init_params, round_start, scatter_clients, stack,
                                        take_clients, weighted_loss)
from fgl_jax.federated.algorithm import FedData, FederatedAlgorithm
from fgl_jax.federated.chunking import map_clients
from fgl_jax.federated.client import local_train, make_optimizer, node_loss_fn
from fgl_jax.federated.config import FedConfig, server_aggregator
from fgl_jax.federated.fedavg_family import graph_top_mask, personal_mask
from fgl_jax.nn.graph import is_graph
from fgl_jax.registry import register
from fgl_jax.schema import option

PyTree = Any
HEAD_KEY = 2  # fold_in of a client's key for the head phase (the body phase uses the key itself, as FedAvg)


@dataclasses.dataclass(frozen=True)
class FedRepHParams:
    fedrep_head_layers: int = option(1, "FedRep: how many of the last layers form each client's personal head "
                                        "(0 = no head: FedAvg)", low=0)
    fedrep_head_epochs: int = option(5, "FedRep: optimiser steps on the head (body frozen) before the body's "
                                        "local_steps (head frozen) in each round", low=0)


def split_tree(tree: PyTree, mask: PyTree) -> tuple[dict, dict]:
    """(selected, rest): the nested dict `tree` cut in two by the bool tree `mask` (True -> selected),
    each keeping its leaves' nesting and dropping emptied sub-dicts."""
    def cut(t, m):
        if isinstance(t, Mapping):
            a, b = {}, {}
            for k, v in t.items():
                x, y = cut(v, m[k])
                if x is not None:
                    a[k] = x
                if y is not None:
                    b[k] = y
            return a or None, b or None
        return (t, None) if m else (None, t)

    a, b = cut(tree, mask)
    return a or {}, b or {}


def join_trees(a: dict, b: dict) -> dict:
    """The nested dict holding the leaves of both halves of a `split_tree`."""
    out = dict(a)
    for k, v in b.items():
        out[k] = join_trees(out[k], v) if k in out else v
    return out


@flax.struct.dataclass
class FedRepState:
    round: jax.Array   # int32 scalar: rounds done
    server: PyTree     # the global body
    personal: PyTree   # every client's head [C, ...]
    opt: PyTree        # optimiser states of the body phase [C_t, ...]
    hopt: PyTree       # optimiser states of the head phase [C_t, ...]
    hp: dict           # traced: lr
    aggregator: PyTree = None  # the server aggregator's state over the body (`fgl_jax.aggregators`)


@register("algorithm", "fedrep", tasks=("node_cls", "link_pred", "graph_cls", "graph_reg"), features="ell", hparams=FedRepHParams,
          paper="Collins, Hassani, Mokhtari, Shakkottai, ICML 2021, arXiv:2102.07078",
          help="FedRep: shared body averaged, personal head per client; the head trains first (body frozen), "
               "then the body")
def fedrep(model, common: FedConfig, hp: FedRepHParams) -> FederatedAlgorithm:
    optimizer = make_optimizer(common.optim, lr=1.0)
    aggregator = server_aggregator(common)
    loss_fn = node_loss_fn(model)
    num_layers = int(getattr(model, "num_layers", 2))
    has_head = hp.fedrep_head_layers > 0
    graph = is_graph(model)
    if graph and hp.fedrep_head_layers > 2:
        raise ValueError(f"fedrep_head_layers={hp.fedrep_head_layers}: a graph model's head has 2 Dense layers "
                         "after the readout; use 1 or 2")
    if not graph and hp.fedrep_head_layers >= num_layers:
        raise ValueError(f"fedrep_head_layers={hp.fedrep_head_layers} leaves no shared body of the "
                         f"{num_layers}-layer model; use fewer head layers (or algorithm local)")
    if has_head and common.eval_mode.startswith("global_model"):
        raise ValueError(f"eval_mode={common.eval_mode!r}: FedRep's heads stay on the clients, so there is no global "
                         "model; use a local_model_* mode or 'auto'")

    def halves(params: PyTree) -> tuple[dict, dict]:   # (head, body)
        if graph:
            return split_tree(params, graph_top_mask(params, num_layers, hp.fedrep_head_layers))
        return split_tree(params, personal_mask(params, "fedper", num_layers, hp.fedrep_head_layers))

    def init(key: jax.Array, data: FedData) -> FedRepState:
        head, body = halves(init_params(model, key, data))
        ct = data.train.num_clients
        return FedRepState(round=jnp.zeros((), jnp.int32), server=body, personal=stack(head, data.eval.num_clients),
                           opt=stack(optimizer.init(body), ct), hopt=stack(optimizer.init(head), ct),
                           hp={"lr": jnp.float32(common.optim.lr)}, aggregator=aggregator.init(body))

    def client(head, body, hopt, bopt, batch, key, scale):
        """One client's round: the head phase, then the body phase -> (head, body, opts, losses)."""
        hloss = jnp.float32(0.0)
        if has_head and hp.fedrep_head_epochs > 0:
            head, hopt, hloss = local_train(lambda h, b, k: loss_fn(join_trees(h, body), b, k), optimizer,
                                            hp.fedrep_head_epochs, head, hopt, batch,
                                            jax.random.fold_in(key, HEAD_KEY), scale)
        body, bopt, loss = local_train(lambda p, b, k: loss_fn(join_trees(head, p), b, k), optimizer,
                                       common.local_steps, body, bopt, batch, key, scale)
        return head, body, hopt, bopt, loss, hloss

    def round_fn(state: FedRepState, data: FedData, key: jax.Array):
        ct = data.train.num_clients
        start, bopt, scale = round_start(optimizer, common, state, data)   # the global body on every client
        heads = take_clients(state.personal, data.train_index)
        hopt = jax.vmap(optimizer.init)(heads) if common.reset_optimizer and has_head else state.hopt
        keys = jax.random.split(key, ct)
        run = lambda h, b, ho, bo, batch, k: client(h, b, ho, bo, batch, k, scale)
        heads, bodies, hopt, bopt, losses, hlosses = map_clients(run, common.client_chunk)(
            heads, start, hopt, bopt, data.train, keys)
        server, agg = aggregate(aggregator, state.aggregator, bodies, data.train_weight, key, params=state.server)
        everyone = scatter_clients(state.personal, data.train_index, heads)
        c = data.eval.num_clients
        if has_head:
            metrics = evaluate_round(model, common, data, personal=join_trees(everyone, stack(server, c)))
        else:   # FedAvg: the global model, or the clients' trained ones for a local_model_* mode
            metrics = evaluate_round(model, common, data, server=server, trained=bodies)
        metrics["train_loss"] = weighted_loss(losses, data.train_weight)
        if has_head:
            metrics["head_train_loss"] = weighted_loss(hlosses, data.train_weight)
        metrics["lr"] = scale
        return FedRepState(round=state.round + 1, server=server, personal=everyone, opt=bopt, hopt=hopt,
                           hp=state.hp, aggregator=agg), metrics

    # a client downloads the global body and uploads its trained copy; the head stays on the client
    return FederatedAlgorithm(init=init, round=round_fn, train_axis=("opt", "hopt"),
                              messages=lambda s: (s.server, s.server))
