"""FedALA (J. Zhang, Hua, Wang, Song, Xue, Ma & Guan, AAAI 2023, "FedALA: Adaptive Local Aggregation
for Personalized Federated Learning").

Instead of overwriting its model with the global one, client i starts a round from

    theta_hat = theta_i + (w - theta_i) * W_i        (element-wise, W_i in [0, 1])

on the top `fedala_layers` (p) layers, and from the global model w on the layers below. The
element-wise weights W_i are the client's own: learnt by gradient descent on its loss at theta_hat,
over a random fraction `fedala_sample` (s) of its training nodes (graphs, on graph tasks) drawn each round,

    W_i <- clip(W_i - eta * dL/dtheta_hat * (w - theta_i), 0, 1),

`fedala_init_steps` steps the first time (the paper trains W until its loss settles; a fixed count
keeps the program's shapes static) and `fedala_steps` steps at every later round, W_i carried over
(a graph client's step is a pass over its mini-batches, as its local epochs are).
The client then trains theta_hat (`local_steps` steps of the run's optimiser), keeps the result as
theta_i and uploads it; the server averages through the run's aggregator (DP-FedAvg,
`--server-opt` and client sampling apply). A client that has not trained yet has no local
knowledge: it starts from w and learns no W (the authors' code skips ALA while theta_i == w).

W = ones everywhere (eta 0) is FedAvg. Reported metrics are those of the clients' local models
theta_i after the round's training (eval_mode auto = local_model_on_local_data; the global model
with a global_model_* mode); `train_loss` is the local training's first-step loss. Defaults: eta 1,
s 0.8, p 1 as the authors' code. Differences from the paper: whole-subgraph batches, and the
evaluated personal model is the trained theta_i (PFLlib evaluates the next round's theta_hat).
"""
from __future__ import annotations

import dataclasses
from typing import Any

import flax
import jax
import jax.numpy as jnp
import optax

from fgl_jax.algorithms._common import (aggregate, init_params, round_start, scatter_clients, stack, take_clients,
                                        weighted_loss)
from fgl_jax.federated.algorithm import FedData, FederatedAlgorithm
from fgl_jax.federated.chunking import map_clients
from fgl_jax.federated.client import local_step_count, local_train, make_optimizer, node_loss_fn
from fgl_jax.federated.config import FedConfig, server_aggregator
from fgl_jax.federated.evaluation import evaluate_models
from fgl_jax.federated.fedavg_family import graph_top_mask, layer_index
from fgl_jax.nn.graph import is_graph
from fgl_jax.registry import register
from fgl_jax.schema import option

PyTree = Any
SAMPLE_KEY, ALA_KEY = 1, 2   # fold_in of a client's round key: its node sample, its W steps' dropout


@dataclasses.dataclass(frozen=True)
class FedALAHParams:
    fedala_eta: float = option(1.0, "FedALA learning rate eta of the element-wise aggregation weights W "
                                    "(0 = W stays at ones: FedAvg)", low=0, traced=True)
    fedala_sample: float = option(0.8, "FedALA fraction s of a client's training nodes, drawn each round, "
                                       "on which W is learnt", low=0, high=1, low_open=True, traced=True)
    fedala_layers: int = option(1, "FedALA p: how many top layers are aggregated adaptively (the layers "
                                   "below take the global model)", low=1)
    fedala_init_steps: int = option(20, "FedALA gradient steps on W at a client's first adaptive aggregation "
                                        "(the paper trains W to convergence there)", low=1)
    fedala_steps: int = option(1, "FedALA gradient steps on W at a client's later rounds", low=1)


@flax.struct.dataclass
class FedALAState:
    round: jax.Array   # int32 scalar: rounds done
    server: PyTree     # the global model w
    local: PyTree      # every client's local model theta_i [C, ...]
    weights: tuple     # every client's W_i: one [C, ...] array per adaptively aggregated leaf
    phase: jax.Array   # int32 [C]: 0 never trained, 1 trained once (W to learn from ones), 2 W learnt
    opt: PyTree        # optimiser states of the local training [C_t, ...]
    hp: dict           # traced: lr, fedala_eta, fedala_sample
    aggregator: PyTree = None  # the server aggregator's state (`fgl_jax.aggregators`)


def top_leaves(params: PyTree, num_layers: int, top: int, graph: bool = False) -> tuple[int, ...]:
    """Positions in `jax.tree.leaves(params)` of the parameters of the top `top` layers (by the
    `<name>_<i>` layer numbering of fgl_jax.nn; a graph model's by `graph_top_mask`: its MLP head first)."""
    if graph:
        return tuple(i for i, m in enumerate(jax.tree.leaves(graph_top_mask(params, num_layers, top))) if m)
    paths = [path for path, _ in jax.tree_util.tree_flatten_with_path(params)[0]]
    return tuple(i for i, path in enumerate(paths) if layer_index(path) >= num_layers - top)


def combine(theta: PyTree, w: PyTree, weights: tuple, top: tuple[int, ...]) -> PyTree:
    """theta_hat: theta + (w - theta) * W on the leaves `top` (W in the same order), w elsewhere."""
    lt, lw = jax.tree.leaves(theta), jax.tree.leaves(w)
    out = list(lw)
    for j, i in enumerate(top):
        out[i] = lt[i] + (lw[i] - lt[i]) * weights[j]
    return jax.tree.unflatten(jax.tree.structure(w), out)


def thin(batch, key: jax.Array, frac: jax.Array):
    """`batch` with its training mask kept on a random fraction `frac` of the samples drawn with `key`:
    per node of a node-level client's batch; per graph of a graph-level (mini-)batch, each graph's
    draw a function of its graph id, so that it is drawn alike in whatever padded view (mini-batch or
    size class, `fgl_jax.graph_batch`) it is seen.

    Args:
        batch: a node-level `ClientBatch` (train_mask [N]) or a graph-level `GraphBatch` (train_mask
            and graph_ids [..., G]) of one client.
        key: the draw's PRNG key (one per client and round).
        frac: the kept fraction (traced scalar in (0, 1]).

    Returns:
        `batch` with train_mask AND-ed with the draw.
    """
    ids = getattr(batch, "graph_ids", None)
    if ids is None:
        pick = jax.random.uniform(key, batch.train_mask.shape) < frac
    else:
        draw = jax.vmap(lambda g: jax.random.uniform(jax.random.fold_in(key, g)))
        pick = draw(ids.reshape(-1)).reshape(ids.shape) < frac
    return batch.replace(train_mask=batch.train_mask & pick)


def gated_descent(limit: jax.Array) -> optax.GradientTransformation:
    """Plain gradient descent (the step size is `local_train`'s scale) whose first `limit` (traced)
    steps move and later ones leave the parameters as they are; its state counts the steps.

    Args:
        limit: the number of steps that move (traced int scalar).

    Returns:
        The optax transformation (update = -gradient while the count < limit, else 0).
    """
    def init(params):
        return jnp.zeros((), jnp.int32)

    def update(grads, n, params=None):
        return jax.tree.map(lambda g: jnp.where(n < limit, -g, jnp.zeros_like(g)), grads), n + 1

    return optax.GradientTransformation(init, update)


def learn_weights(loss_fn, theta: PyTree, w: PyTree, weights: tuple, top: tuple[int, ...], batch, key: jax.Array,
                  eta: jax.Array, steps: int, active: jax.Array, sample_key: jax.Array, frac: jax.Array) -> tuple:
    """`steps` projected gradient steps W <- clip(W - eta dL(theta_hat(W))/dW, 0, 1) on one client's
    training samples thinned to `frac` (`thin` with `sample_key`, one draw for the round); only the
    first `active` (traced int) steps change W, so clients needing fewer steps share one static scan.

    The steps run through `local_train`, so a graph client takes each one as a pass over its
    mini-batches in their size-class shapes (packed execution) as its local training does; a
    node-level client takes full-batch steps.

    Args:
        loss_fn: `loss_fn(params, batch, key) -> scalar`.
        theta, w: the client's local model and the global model (pytrees of one model).
        weights: W, one array per leaf of `top` (its shape).
        top: positions in `jax.tree.leaves` of the adaptively aggregated leaves.
        batch: the client's data; key: the steps' dropout keys are split from it.
        eta: W's step size; steps: static step count; active: traced count of steps that move.
        sample_key, frac: the round's sample of training nodes or graphs (`thin`).

    Returns:
        The learnt W (a tuple like `weights`).
    """
    per_epoch = local_step_count(1, batch)   # a graph client's step is an epoch of mini-batch steps
    descent = gated_descent(active * per_epoch)
    loss = lambda ws, b, k: loss_fn(combine(theta, w, ws, top), thin(b, sample_key, frac), k)
    clip = lambda ws, k: tuple(jnp.clip(a, 0.0, 1.0) for a in ws)
    ws, _, _ = local_train(loss, descent, steps, weights, descent.init(weights), batch, key, eta, post_step=clip)
    return ws


@register("algorithm", "fedala", tasks=("node_cls", "graph_cls", "graph_reg"), features="ell", hparams=FedALAHParams,
          paper="J. Zhang, Hua, Wang, Song, Xue, Ma, Guan, AAAI 2023, arXiv:2212.01197",
          help="FedALA: each client starts from its model + (global - its model) * W, element-wise W learnt locally")
def fedala(model, common: FedConfig, hp: FedALAHParams) -> FederatedAlgorithm:
    optimizer = make_optimizer(common.optim, lr=1.0)
    aggregator = server_aggregator(common)
    loss_fn = node_loss_fn(model)
    num_layers = getattr(model, "num_layers", 2)
    mode = "local_model_on_local_data" if common.eval_mode == "auto" else common.eval_mode
    n_init, n_later = hp.fedala_init_steps, hp.fedala_steps

    def init(key: jax.Array, data: FedData) -> FedALAState:
        params = init_params(model, key, data)
        c, ct = data.eval.num_clients, data.train.num_clients
        top = top_leaves(params, num_layers, hp.fedala_layers, is_graph(model))
        leaves = jax.tree.leaves(params)
        return FedALAState(round=jnp.zeros((), jnp.int32), server=params, local=stack(params, c),
                           weights=tuple(jnp.ones((c,) + leaves[i].shape, leaves[i].dtype) for i in top),
                           phase=jnp.zeros((c,), jnp.int32), opt=stack(optimizer.init(params), ct),
                           hp={"lr": jnp.float32(common.optim.lr), "fedala_eta": jnp.float32(hp.fedala_eta),
                               "fedala_sample": jnp.float32(hp.fedala_sample)},
                           aggregator=aggregator.init(params))

    def round_fn(state: FedALAState, data: FedData, key: jax.Array):
        ct = data.train.num_clients
        top = top_leaves(state.server, num_layers, hp.fedala_layers, is_graph(model))
        glob, opt, scale = round_start(optimizer, common, state, data)
        theta = take_clients(state.local, data.train_index)
        weights = take_clients(state.weights, data.train_index)
        phase = take_clients(state.phase, data.train_index)
        keys = jax.random.split(key, ct)
        eta, frac = state.hp["fedala_eta"], state.hp["fedala_sample"]

        def ala(steps):
            def one(t, w, ws, b, k, ph):
                active = jnp.where(ph == 0, 0, jnp.where(ph == 1, n_init, n_later))
                return learn_weights(loss_fn, t, w, ws, top, b, jax.random.fold_in(k, ALA_KEY), eta, steps, active,
                                     jax.random.fold_in(k, SAMPLE_KEY), frac)
            return lambda: map_clients(one, common.client_chunk)(theta, glob, weights, data.train, keys, phase)

        # one static scan for the round: the long one only when some client learns W for the first time
        weights = jax.lax.cond(jnp.any(phase == 1), ala(max(n_init, n_later)), ala(n_later))
        # a client that never trained starts from w (no local knowledge to keep)
        start = map_clients(lambda t, w, ws, ph: jax.tree.map(lambda a, b: jnp.where(ph == 0, b, a),
                                                              combine(t, w, ws, top), w),
                            common.client_chunk)(theta, glob, weights, phase)
        train = lambda p, o, b, k: local_train(loss_fn, optimizer, common.local_steps, p, o, b, k, scale)
        new, opt, losses = map_clients(train, common.client_chunk)(start, opt, data.train, keys)
        server, agg = aggregate(aggregator, state.aggregator, new, data.train_weight, key, params=state.server)
        local = scatter_clients(state.local, data.train_index, new)
        metrics = evaluate_models(model, data, mode, server=server, local=local, chunk=common.client_chunk,
                                  average=common.eval_average)
        metrics["train_loss"] = weighted_loss(losses, data.train_weight)
        metrics["lr"] = scale
        return FedALAState(round=state.round + 1, server=server, local=local,
                           weights=scatter_clients(state.weights, data.train_index, weights),
                           phase=scatter_clients(state.phase, data.train_index, jnp.minimum(phase + 1, 2)),
                           opt=opt, hp=state.hp, aggregator=agg), metrics

    # a client downloads the global model and uploads its trained local model; W_i stays on the client
    return FederatedAlgorithm(init=init, round=round_fn, messages=lambda s: (s.server, s.server))
