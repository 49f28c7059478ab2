"""Small pieces the algorithm modules share (not an algorithm: the registry skips `_` modules)."""
from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from fgl_jax.aggregators import Aggregator
from fgl_jax.federated.algorithm import FedData
from fgl_jax.federated.config import AGGREGATE_KEY
from fgl_jax.federated.evaluation import evaluate_models
from fgl_jax.federated.client import lr_scale, stack, tree_sq  # noqa: F401 (the algorithms import them from here)

PyTree = Any


def init_params(model, key: jax.Array, data: FedData) -> PyTree:
    """The model's parameters, initialised on client 0's padded graph (shapes are shared)."""
    one = jax.tree.map(lambda a: a[0], data.eval)
    return model.init({"params": key, "dropout": key}, one, train=False)


def model_variant(model, common, name: str):
    """The run's model rebuilt as registered model `name` (same in_dim, hidden, classes, layers,
    dropout, norm): from `common.model` (a ModelSpec) when the run set it, else from the model's fields."""
    from fgl_jax.nn import ModelSpec
    spec = common.model or ModelSpec(type(model).__name__.lower(), model.in_dim, model.num_classes,
                                     model.hidden, model.num_layers, model.dropout, getattr(model, "norm", "none"))
    return spec.build(name=name)


def round_start(optimizer, common, state, data: FedData, start: PyTree = None) -> tuple[PyTree, PyTree, jax.Array]:
    """The prologue every algorithm's round shares: (start [C_t, ...], opt [C_t, ...], scale).

    start: the models the training clients begin from (default: the global `state.server` on every
    training client); opt: `state.opt`, or fresh optimiser states when common.reset_optimizer;
    scale: the traced LR `state.hp["lr"]` times the round's schedule (the optimiser is built with
    lr = 1, see make_optimizer)."""
    if start is None:
        start = stack(state.server, data.train.num_clients)
    opt = jax.vmap(optimizer.init)(start) if common.reset_optimizer else state.opt
    return start, opt, state.hp["lr"] * lr_scale(common.optim, state.round)


def aggregate(aggregator: Aggregator, state: PyTree, uploads: PyTree, weights: jax.Array, key: jax.Array,
              params: PyTree = None) -> tuple[PyTree, PyTree]:
    """The round's server step through the run's aggregator (`fgl_jax.federated.config.server_aggregator`):
    (aggregate, new aggregator state) of uploads [C_t, ...] with weights [C_t]; params: the server's
    value in the uploads' space (the global model when clients upload models, None when they upload
    changes). key: the round's key (the aggregator gets fold_in(key, AGGREGATE_KEY), as the
    FedAvg family's round)."""
    return aggregator.aggregate(state, uploads, weights, jax.random.fold_in(key, AGGREGATE_KEY), params=params)


def weighted_loss(losses: jax.Array, weight: jax.Array) -> jax.Array:
    """The training-node weighted mean of per-client losses [C_t]."""
    return (losses * weight).sum() / jnp.maximum(weight.sum(), 1e-12)


def tree_dot(a: PyTree, b: PyTree) -> jax.Array:
    """sum <a, b> over every leaf."""
    return sum(jnp.sum(x * y) for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b)))


def scatter_clients(full: PyTree, index: jax.Array, part: PyTree) -> PyTree:
    """full [C, ...] with rows `index` replaced by part [C_t, ...].

    `index` is a `FedData.train_index` (ascending, distinct), so when C_t == C it is arange(C)
    and the result is `part` itself: returned as it is, which spares XLA a copy of every leaf
    (FedPub on CiteSeer: two [10, 3703, 64] copies per leaf pair per round). The one case where
    it is not bit for bit the indexed update: sharding's padding (`pad_fed_data`) with two or
    more dummy training clients and no client without training nodes, where every dummy points
    at the first dummy slot; the dummies (zero weight, masked in evaluation) then keep their own
    rows instead."""
    leaves = jax.tree.leaves(full)
    if not leaves or index.shape[0] == leaves[0].shape[0]:   # (an empty tree: nothing to scatter)
        return part
    return jax.tree.map(lambda f, p: f.at[index].set(p), full, part)


def take_clients(full: PyTree, index: jax.Array) -> PyTree:
    """Rows `index` (a `FedData.train_index`: ascending, distinct) of full [C, ...] -> [C_t, ...];
    `full` itself when C_t == C (then index is arange(C))."""
    leaves = jax.tree.leaves(full)
    if not leaves or index.shape[0] == leaves[0].shape[0]:   # (an empty tree: nothing to take)
        return full
    return jax.tree.map(lambda a: a[index], full)


def evaluate_round(model, common, data: FedData, *, server: PyTree = None, trained: PyTree = None,
                   personal: PyTree = None) -> dict:
    """The round's metrics under common.eval_mode / common.eval_average (as the baselines do).

    server: the global model (None for algorithms that keep only personal models); trained
    [C_t, ...]: the models the training clients ended this round with (a client's "local model"
    for the local_model_* modes; clients without training nodes keep the global model);
    personal [C, ...]: every client's own model, for personal-model algorithms. eval_mode "auto" =
    the global model on local data, or the personal models when there is no global model."""
    mode = common.eval_mode
    if mode == "auto":
        mode = "global_model_on_local_data" if server is not None else "local_model_on_local_data"
    if server is None and mode.startswith("global_model"):
        raise ValueError(f"eval_mode={mode!r} needs a global model, but algorithm {common.algorithm!r} keeps "
                         "personal models; use a local_model_* mode or 'auto'")
    local = personal
    if local is None and mode.startswith("local_model"):
        c = data.eval.num_clients
        local = jax.tree.map(lambda s, n: jnp.broadcast_to(s, (c,) + s.shape).at[data.train_index].set(n),
                             server, trained)
    return evaluate_models(model, data, mode, server=server, local=local, chunk=common.client_chunk,
                           average=common.eval_average)


def prepared_phase(phase, name: str, extra_key: str, prepare: str, optim) -> Any:
    """`phase` as a round of an algorithm with host preparation: the preparation is checked
    (`data.extra[extra_key]` exists) and the round's learning rate is reported as `lr`.

    Args:
      phase: (state, data, key) -> (state, metrics), one phase of the algorithm's round.
      name: the algorithm's registry name (for the error message).
      extra_key: a key its preparation writes into `FedData.extra`.
      prepare: the preparation function's name (for the error message).
      optim: the run's `OptimConfig` (its lr schedule).

    Returns:
      (state, data, key) -> (state, metrics) with `metrics["lr"]` the round's learning rate.
    """
    def round_of_phase(state, data: FedData, key: jax.Array):
        if data.extra is None or extra_key not in data.extra:
            raise ValueError(f"{name} needs its host preparation (FedData.extra from {prepare}): "
                             "build the run through fgl_jax.systems.baseline (fgl-jax run / build)")
        state, m = phase(state, data, key)
        m["lr"] = state.hp["lr"] * lr_scale(optim, state.round - 1)
        return state, m
    return round_of_phase
