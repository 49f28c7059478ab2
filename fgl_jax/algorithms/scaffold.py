"""SCAFFOLD (Karimireddy et al., ICML 2020, "Stochastic Controlled Averaging for Federated Learning").

Control variates correct the client drift: a server variate c and one c_i per client (on the client
axis, all zeros at the start). Each local step uses the corrected gradient g - c_i + c (added before
the client optimiser, so it applies to Adam's input as to SGD's). After K local steps from the server
model x to y_i, the client updates its variate with the paper's option II,

    c_i+ = c_i - c + (x - y_i) / (K eta),   eta = the client lr (times its schedule),

and the server moves, with global step size eta_g (`scaffold_server_lr`),

    x <- x + eta_g sum_i p_i (y_i - x),      c <- c + (1/N) sum_i (c_i+ - c_i),

(option I, `scaffold_variate=I`: c_i+ = the full-batch gradient of the local loss at x), p_i =
training-node shares (the aggregation weights of every algorithm here), N = clients holding
training nodes (they all take part every round, so c stays the plain mean of the c_i).
eta_g = 1 with c = c_i = 0 throughout would be FedAvg.

Differences from OpenFGL (openfgl/flcore/scaffold): none in the arithmetic (it also adds c - c_i to
the gradient before Adam, uses option II with 1/(epochs * lr) and sets c to the mean of the c_i);
OpenFGL has no global step size (eta_g = 1) and no option I. Differences from the paper: the paper
averages the model updates with 1/|S|, we weight them by training nodes (as OpenFGL).

Option II measures the variates in units of (x - y_i)/(K eta): the gradient for SGD, but for Adam
(the default client optimiser here and in OpenFGL) a normalised step of size ~1 per coordinate, far
larger than the gradients it corrects; with Adam prefer option I or `--optimizer sgd`.

Server step (`fgl_jax.aggregators`): the model changes y_i - x go through the run's aggregator
(params None: DP clips the changes themselves, a server optimiser steps on -aggregate), then
x <- x + eta_g * aggregate. The control variate's mean stays SCAFFOLD's own, in the clear.
"""
from __future__ import annotations

import dataclasses
from typing import Any

import flax
import jax
import jax.numpy as jnp

from fgl_jax.algorithms._common import aggregate, evaluate_round, init_params, round_start, scatter_clients, stack, weighted_loss
from fgl_jax.federated.algorithm import FedData, FederatedAlgorithm
from fgl_jax.federated.config import FedConfig, server_aggregator
from fgl_jax.reduce import client_mean
from fgl_jax.federated.chunking import map_clients
from fgl_jax.federated.client import local_step_count, local_train, make_optimizer, node_loss_fn
from fgl_jax.registry import register
from fgl_jax.schema import option

PyTree = Any


@dataclasses.dataclass(frozen=True)
class ScaffoldHParams:
    scaffold_server_lr: float = option(1.0, "SCAFFOLD global step size eta_g on the averaged update",
                                       low=0, low_open=True, traced=True)
    scaffold_variate: str = option("II", "control-variate update: II = (x - y_i)/(K lr) - c (the paper's "
                                   "cheap option), I = the local gradient at x (one extra gradient)",
                                   choices=("I", "II"))


@flax.struct.dataclass
class ScaffoldState:
    round: jax.Array     # int32 scalar: rounds done
    server: PyTree       # x, the global model
    c: PyTree            # server control variate (like x)
    c_client: PyTree     # c_i [C, ...] (zeros for clients without training nodes)
    opt: PyTree          # client optimiser states [C_t, ...]
    hp: dict             # traced: lr, scaffold_server_lr
    aggregator: PyTree = None  # the server aggregator's state (`fgl_jax.aggregators`)


@register("algorithm", "scaffold",
          dp_uncovered="its control variates' changes (c_i+ - c_i), averaged in the clear",
          tasks=("node_cls", "link_pred", "graph_cls", "graph_reg"), features="ell", hparams=ScaffoldHParams,
          paper="Karimireddy, Kale, Mohri, Reddi, Stich, Suresh, ICML 2020, arXiv:1910.06378",
          help="SCAFFOLD: control variates c, c_i correct the local gradients (option II or I)")
def scaffold(model, common: FedConfig, hp: ScaffoldHParams) -> FederatedAlgorithm:
    optimizer = make_optimizer(common.optim, lr=1.0)  # lr applied as a traced multiplier
    loss_fn = node_loss_fn(model)
    steps = common.local_steps
    aggregator = server_aggregator(common)

    def init(key: jax.Array, data: FedData) -> ScaffoldState:
        params = init_params(model, key, data)
        zeros = jax.tree.map(jnp.zeros_like, params)
        return ScaffoldState(round=jnp.zeros((), jnp.int32), server=params, c=zeros,
                             c_client=stack(zeros, data.eval.num_clients),
                             opt=stack(optimizer.init(params), data.train.num_clients),
                             hp={"lr": jnp.float32(common.optim.lr),
                                 "scaffold_server_lr": jnp.float32(hp.scaffold_server_lr)},
                             aggregator=aggregator.init(params))

    def round_fn(state: ScaffoldState, data: FedData, key: jax.Array):
        ct = data.train.num_clients
        x = state.server
        start, opt, scale = round_start(optimizer, common, state, data)
        c_i = jax.tree.map(lambda a: a[data.train_index], state.c_client)

        def client(p, o, b, k, ci):
            shift = jax.tree.map(lambda cg, cl: cg - cl, state.c, ci)   # g - c_i + c
            y, o, loss = local_train(loss_fn, optimizer, steps, p, o, b, k, scale, grad_shift=shift)
            if hp.scaffold_variate == "I":
                ci_new = jax.grad(loss_fn)(x, b, k)
            else:
                k_steps = local_step_count(steps, b)  # K: steps, or epochs x mini-batches (graph tasks)
                ci_new = jax.tree.map(lambda cl, cg, xs, ys: cl - cg + (xs - ys) / (k_steps * scale), ci, state.c, x, y)
            return y, o, loss, ci_new

        y, opt, losses, c_new = map_clients(client, common.client_chunk)(start, opt, data.train,
                                                                        jax.random.split(key, ct), c_i)
        # the uploads are the model changes y_i - x (params None: their reference is zero)
        dy, agg = aggregate(aggregator, state.aggregator, jax.tree.map(lambda ys, xs: ys - xs, y, start),
                            data.train_weight, key)
        server = jax.tree.map(lambda xs, d: xs + state.hp["scaffold_server_lr"] * d, x, dy)
        if data.train_total is None:  # client_mean: a plain .mean(0) over the client axis is slow on XLA:CPU
            c = jax.tree.map(jnp.add, state.c, client_mean(jax.tree.map(jnp.subtract, c_new, c_i)))
        else:  # a sample of the clients took part: c <- c + (1/N) sum_{i in S} (c_i+ - c_i), the paper's
            c = jax.tree.map(lambda cg, new, old: cg + (new - old).sum(0) / data.train_total, state.c, c_new, c_i)
        metrics = evaluate_round(model, common, data, server=server, trained=y)
        metrics["train_loss"] = weighted_loss(losses, data.train_weight)
        metrics["lr"] = scale
        return ScaffoldState(round=state.round + 1, server=server, c=c,
                             c_client=scatter_clients(state.c_client, data.train_index, c_new),
                             opt=opt, hp=state.hp, aggregator=agg), metrics

    # up: the trained model y_i and the variate change c_i+ - c_i; down: the model x and c
    return FederatedAlgorithm(init=init, round=round_fn,
                              messages=lambda s: ((s.server, s.c), (s.server, s.c)))
