"""Graph-level tasks inside the round: the loss and the metrics of a `fgl_jax.nn.graph.GraphClassifier`
on `fgl_jax.graph_batch.GraphBatch` clients.

The shared client functions dispatch here when the model's `task` is graph_cls or graph_reg
(`fgl_jax.federated.client.node_loss_fn`, `fgl_jax.federated.evaluation.evaluate`), so an algorithm
built on them trains and reports graph classification and regression without a copy of its round.

graph_cls: cross-entropy over the training graphs; metrics {split}_acc and val_loss (validation
cross-entropy). graph_reg: squared error; metrics {split}_mse, {split}_mae, val_loss (= val_mse) and
val_score = 1 / (1 + val_mse), the engine's selection metric (it keeps the round with the highest
value: `SELECT_REG`). Pooled over clients (every graph counts once) or OpenFGL's mean of per-client
metrics weighted by the client's graph count (`average="client_nodes"`). With one model per client
(personalised evaluation) graph_cls also reports the per-client spread of test accuracy
(`graph_spread`: mean, worst 10 %, sd over clients, each client's accuracy over its own test graphs).
"""
from __future__ import annotations

from typing import Callable, Optional

import jax
import jax.numpy as jnp
import optax

from fgl_jax.federated.chunking import map_clients
from fgl_jax.federated.metrics import AVERAGES, SPLITS, _weighted_mean, accuracy_spread, masked_cross_entropy
from fgl_jax.nn.graph import is_graph  # noqa: F401 (dispatch test, re-exported for the client functions)

SELECT_REG = ("val_score", "test_mse")


def graph_loss(model, out: jax.Array, batch) -> jax.Array:
    """Mean loss over the training graphs of `batch` (one mini-batch [G] or a stack [M, G])."""
    m = batch.train_mask.reshape(-1)
    if model.task == "graph_reg":
        w = m.astype(jnp.float32)
        return (((out.reshape(-1) - batch.y.reshape(-1)) ** 2) * w).sum() / jnp.maximum(w.sum(), 1.0)
    return masked_cross_entropy(out.reshape(-1, out.shape[-1]), batch.y.reshape(-1), m)


def graph_loss_fn(model) -> Callable:
    """loss(params, batch, key): `graph_loss` of the model's output with dropout key `key`."""

    def loss(params, batch, key):
        return graph_loss(model, model.apply(params, batch, train=True, rngs={"dropout": key}), batch)

    return loss


def client_sums(model, out: jax.Array, batch) -> dict:
    """Per-split sums of one client: count [3], and correct [3] + val CE (cls) or se, ae [3] (reg)."""
    masks = jnp.stack([getattr(batch, f"{s}_mask").reshape(-1) for s in SPLITS], -1).astype(jnp.float32)  # [G', 3]
    y = batch.y.reshape(-1)
    res = {"count": masks.sum(0)}
    if model.task == "graph_reg":
        err = out.reshape(-1) - y
        res["se"] = ((err ** 2)[:, None] * masks).sum(0)
        res["ae"] = (jnp.abs(err)[:, None] * masks).sum(0)
    else:
        logits = out.reshape(-1, out.shape[-1])
        res["correct"] = ((logits.argmax(-1) == y).astype(jnp.float32)[:, None] * masks).sum(0)
        res["ce"] = (optax.softmax_cross_entropy_with_integer_labels(logits, y)[:, None] * masks).sum(0)
    return res


def evaluate_graphs(model, params, batch, per_client: bool, chunk: Optional[int] = None, *,
                    average: str = "pooled") -> dict:
    """`evaluation.evaluate` for graph tasks: params [C, ...] if per_client else one model."""
    if average not in AVERAGES:
        raise ValueError(f"average must be one of {AVERAGES}, got {average!r}")
    one = packed_sums if batch.packed else lambda m, p, b: client_sums(m, m.apply(p, b, train=False), b)
    sums = map_clients(lambda p, b: one(model, p, b), chunk, in_axes=(0 if per_client else None, 0))(params, batch)
    return graph_metrics(model, sums, batch, per_client, average)


def packed_sums(model, params, batch) -> dict:
    """`client_sums` of one client whose batch [M, ...] has the size-class view (packed execution,
    `fgl_jax.graph_batch.with_size_classes(..., steps="graphs")`): the sums of its mini-batches one at
    a time, each in its class's shape, the empty ones skipped by a `lax.switch` (the same sums as the
    whole stack at once, up to float round-off; run one client at a time, as `map_clients` does)."""
    def sums_of(view, slot):
        b = view.minibatch(slot)
        return client_sums(model, model.apply(params, b, train=False), b)

    zero = jax.tree.map(lambda s: jnp.zeros(s.shape, s.dtype), jax.eval_shape(sums_of, batch.classes[0], 0))
    branches = [lambda slot: zero] + [lambda slot, v=v: sums_of(v, slot) for v in batch.classes]

    def add(total, j):
        part = jax.lax.switch(batch.step_class[j] + 1, branches, batch.step_slot[j])
        return jax.tree.map(jnp.add, total, part), None

    return jax.lax.scan(add, zero, jnp.arange(batch.num_minibatches))[0]


def graph_metrics(model, sums: dict, batch, per_client: bool, average: str = "pooled") -> dict:
    """The reported metrics from every client's `client_sums` (for algorithms whose prediction is
    not one `model.apply`, e.g. FedEM's mixture).

    Args:
        model: the graph model (its `task` picks the metrics).
        sums: `client_sums` stacked over clients, every leaf [C, 3].
        batch: the evaluation `GraphBatch` [C, M, ...] (client_mask, graph_mask).
        per_client: each client was predicted by its own model (adds the graph_cls spread).
        average: "pooled" or "client_nodes" (weighted by the clients' graph counts).

    Returns:
        {split}_acc and val_loss (graph_cls, + `graph_spread` when per_client) or {split}_mse,
        {split}_mae, val_loss, val_score (graph_reg), as scalars.
    """
    if average not in AVERAGES:
        raise ValueError(f"average must be one of {AVERAGES}, got {average!r}")
    real = batch.client_mask.astype(jnp.float32)
    if average == "pooled":
        tot = {k: (v * real[:, None]).sum(0) for k, v in sums.items()}
        ratio = lambda k: tot[k] / jnp.maximum(tot["count"], 1.0)             # [3]
    else:
        weight = batch.graph_mask.sum(axis=(1, 2)).astype(jnp.float32) * real
        ratio = lambda k: _weighted_mean(jnp.where(sums["count"] > 0, sums[k] / jnp.maximum(sums["count"], 1.0),
                                                   jnp.nan), weight)
    res = {}
    if model.task == "graph_reg":
        mse, mae = ratio("se"), ratio("ae")
        for i, s in enumerate(SPLITS):
            res[f"{s}_mse"], res[f"{s}_mae"] = mse[i], mae[i]
        res["val_loss"] = mse[1]
        res["val_score"] = 1.0 / (1.0 + mse[1])
    else:
        acc, ce = ratio("correct"), ratio("ce")
        for i, s in enumerate(SPLITS):
            res[f"{s}_acc"] = acc[i]
        res["val_loss"] = ce[1]
        if per_client:   # each client's own model: how its accuracy over its test graphs spreads
            res.update(graph_spread(sums, batch.client_mask))
    return res


def graph_spread(sums: dict, client_mask: jax.Array) -> dict:
    """The per-client test accuracy's distribution of a graph_cls run (`metrics.SPREAD_KEYS`).

    Args:
        sums: `client_sums` stacked over clients: count [C, 3] and correct [C, 3].
        client_mask: bool [C], the real clients.

    Returns:
        The mean over clients, worst 10 % and sd of each client's accuracy over its own test graphs
        (every graph counts once within its client, as a node does in the node tasks' spread);
        clients without a test graph are left out.
    """
    total = sums["count"][:, 2]
    acc = sums["correct"][:, 2] / jnp.maximum(total, 1.0)                         # [C]
    return accuracy_spread(acc, client_mask & (total > 0))
