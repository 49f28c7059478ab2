"""Evaluation inside the jitted round: one model or one per client, on the clients' subgraphs or on
the whole graph (OpenFGL's four evaluation modes), pooled or averaged by client node counts."""
from __future__ import annotations

from typing import Any, Optional

import jax
import jax.numpy as jnp

from fgl_jax.batch import unstack
from fgl_jax.federated.algorithm import FedData
from fgl_jax.federated.chunking import map_clients
from fgl_jax.federated.config import EVAL_MODES, PERSONALISED
from fgl_jax.federated.graph_task import client_sums, evaluate_graphs, graph_metrics, is_graph
from fgl_jax.federated.link import evaluate_links, is_link
from fgl_jax.federated.metrics import AVERAGES, SPREAD_KEYS, accuracy_spread, client_counts, summarise  # noqa: F401 (SPREAD_KEYS re-exported)

PyTree = Any


def evaluate(model, params: PyTree, batch, per_client: bool, chunk: Optional[int] = None, *,
             average: str = "pooled") -> dict:
    """Metrics of `params` on every client of `batch`; params [C, ...] if per_client else one model.

    Keys: train/val/test_acc and val_loss (as always), and per split precision_macro,
    recall_macro, f1_macro (+ auc, ap for two classes). A link-prediction model is evaluated on
    the batch's node pairs instead (`fgl_jax.federated.link.evaluate_links`: auc, ap, hits@K, acc). average "pooled": counts summed over
    clients; "client_nodes": OpenFGL's mean of per-client metrics weighted by client node counts.
    """
    if average not in AVERAGES:
        raise ValueError(f"average must be one of {AVERAGES}, got {average!r}")
    if is_link(model):  # link prediction: AUC, AP, Hits@K over the clients' pairs
        return evaluate_links(model, params, batch, per_client, chunk, average=average)
    if is_graph(model):  # graph_cls / graph_reg: over the clients' graphs
        return evaluate_graphs(model, params, batch, per_client, chunk, average=average)
    one = lambda p, b: client_counts(model.apply(p, b, train=False), b.y, b)
    counts = map_clients(one, chunk, in_axes=(0 if per_client else None, 0))(params, batch)
    res = summarise(counts, batch.client_mask, average, batch.node_mask.sum(-1).astype(jnp.float32))
    if per_client:   # each client's own model: how its accuracy spreads over the clients
        res.update(client_spread(counts, batch.client_mask))
    return res


def client_spread(counts: dict, client_mask: jax.Array) -> dict:
    """The per-client test accuracy's distribution over the real clients with test nodes (counts:
    `client_counts` stacked over clients [C, ...]; client_mask bool [C]), as scalars (`SPREAD_KEYS`):
    the unweighted mean over clients, the mean of the worst 10 % (the ceil(n / 10) lowest, at
    least one) and the population standard deviation (`fgl_jax.federated.metrics.accuracy_spread`).
    Personalised FL reports these beside the pooled test_acc (Ditto's fairness: a good mean can
    hide clients left behind)."""
    total = counts["total"][:, 2]
    acc = counts["tp"][:, 2].sum(-1) / jnp.maximum(total, 1.0)                 # [C]
    return accuracy_spread(acc, client_mask & (total > 0))


def resolve_eval_mode(mode: str, algorithm: str) -> str:
    """'auto' -> the mode fgl_jax uses for `algorithm`; other modes are returned unchanged."""
    if mode == "auto":
        return "local_model_on_local_data" if algorithm in PERSONALISED else "global_model_on_local_data"
    return mode


def evaluate_models(model, data: FedData, mode: str, *, server: PyTree = None, local: PyTree = None,
                    chunk: Optional[int] = None, average: str = "pooled") -> dict:
    """OpenFGL's four evaluation modes (its `FGLTrainer.evaluate`), inside the jitted round.

    global_model_on_local_data: `server` on each client's subgraph (fgl_jax's FedAvg default).
    local_model_on_local_data: client c's model `local` [C, ...] on its own subgraph.
    global_model_on_global_data: `server` once on the whole graph `data.glob` (every edge, the
        union of the clients' masks).
    local_model_on_global_data: every client's model on the whole graph; OpenFGL weights the C
        results equally (each has the global graph's node count), "pooled" sums their counts.
    """
    if mode not in EVAL_MODES or mode == "auto":
        raise ValueError(f"evaluate_models: mode must be one of {EVAL_MODES[1:]}, got {mode!r}")
    if mode.startswith("global_model") and server is None:
        raise ValueError(f"evaluate_models: mode {mode!r} needs the global model (server=...)")
    if mode.startswith("local_model") and local is None:
        raise ValueError(f"evaluate_models: mode {mode!r} needs the clients' models (local=...)")
    if mode.endswith("global_data") and is_graph(model):
        raise ValueError(f"evaluate_models: mode {mode!r} is not available for graph-level tasks (each client's "
                         "graphs are its own); use global_model_on_local_data or local_model_on_local_data")
    if mode.endswith("global_data") and is_link(model):
        raise ValueError(f"evaluate_models: mode {mode!r} is not available for link prediction (each client's "
                         "edge split is its own); use global_model_on_local_data or local_model_on_local_data")
    if mode.endswith("global_data") and data.glob is None:
        raise ValueError(f"evaluate_models: mode {mode!r} needs the whole graph in FedData.glob "
                         "(make_fed_data(batch, glob=full_graph_batch(graph)))")
    if mode == "global_model_on_local_data":
        return evaluate(model, server, data.eval, per_client=False, chunk=chunk, average=average)
    if mode == "local_model_on_local_data":
        return evaluate(model, local, data.eval, per_client=True, chunk=chunk, average=average)
    if mode == "global_model_on_global_data":
        return evaluate(model, server, data.glob, per_client=False, chunk=chunk, average=average)
    # each client's model on the same global graph: a batch of C identical "clients"
    whole = unstack(data.glob, 0)
    counts = map_clients(lambda p: client_counts(model.apply(p, whole, train=False), whole.y, whole), chunk)(local)
    real = data.eval.client_mask
    return summarise(counts, real, average, jnp.ones(real.shape, jnp.float32))



def evaluate_logits(logits: jax.Array, batch, average: str = "pooled") -> dict:
    """`evaluate`'s metrics from per-client logits [C, N, K] already computed (for algorithms whose
    prediction is not one `model.apply`, e.g. AdaFGL's ensemble)."""
    counts = jax.vmap(lambda lg, b: client_counts(lg, b.y, b))(logits, batch)
    res = summarise(counts, batch.client_mask, average, batch.node_mask.sum(-1).astype(jnp.float32))
    res.update(client_spread(counts, batch.client_mask))   # each client's own prediction, as `evaluate`
    return res


def evaluate_groups(groups, personal: tuple, data: FedData, mode: str, chunk: Optional[int] = None,
                    average: str = "pooled") -> dict:
    """`evaluate`'s metrics of heterogeneous client models: each client's own model on its own data.

    Args:
        groups: the architectures' `fgl_jax.federated.client_models.Group`s (static index arrays).
        personal: per group its clients' parameters `[C_g, ...]`.
        data: the run's `FedData` (node batches, or `GraphBatch` stacks on graph tasks).
        mode: the resolved evaluation mode; only local_model_on_local_data exists here (there is no
            global model, and clients of different architectures cannot share one).
        chunk: clients per block (`map_clients`), or None.
        average: "pooled" or "client_nodes".

    Returns:
        The pooled metrics and the per-client spread (`client_spread`), as `evaluate` gives them
        for one model per client; for graph models those of `graph_task.graph_metrics` (every
        group's per-client sums gathered back on the client axis, then reduced once).
    """
    from fgl_jax.federated.client_models import take, ungroup
    if mode not in ("auto", "local_model_on_local_data"):
        raise ValueError(f"eval_mode={mode!r}: heterogeneous client models are evaluated each on its own client's "
                         "data (local_model_on_local_data or auto)")
    c = data.eval.num_clients
    graphs = is_graph(groups[0].model)
    parts = []
    for g, params in zip(groups, personal):
        if graphs:
            one = lambda p, b, m=g.model: client_sums(m, m.apply(p, b, train=False), b)
        else:
            one = lambda p, b, m=g.model: client_counts(m.apply(p, b, train=False), b.y, b)
        parts.append(map_clients(one, chunk)(params, take(data.eval, g.eval_index, c)))
    counts = ungroup(parts, [g.eval_index for g in groups])
    batch = data.eval
    if graphs:
        return graph_metrics(groups[0].model, counts, batch, per_client=True, average=average)
    res = summarise(counts, batch.client_mask, average, batch.node_mask.sum(-1).astype(jnp.float32))
    res.update(client_spread(counts, batch.client_mask))
    return res
