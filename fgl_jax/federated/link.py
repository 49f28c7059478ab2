"""Link prediction inside the round: the training loss and the metrics of a `LinkModel`
(`fgl_jax.nn.link`) on a client batch carrying `pairs` (`fgl_jax.batch.link_client_batch`).

The shared client functions dispatch here when the model's `task` is "link_pred"
(`fgl_jax.federated.client.node_loss_fn`, `fgl_jax.federated.evaluation.evaluate`), so an
algorithm built on them trains and reports link prediction without a copy of its round.

Training negatives: with `train_negatives="resample"` (default; PyG's and OGB's practice) every
local step draws one negative pair per training edge from the step's key, uniformly among
ordered pairs of distinct real nodes of the client; the draw is not filtered against the
client's edges (a true edge is drawn with probability ~ 2E / N^2 per pair, 0.2% on Cora's
average client; filtering inside a jitted step would need a dense adjacency). "fixed" uses the
training negatives drawn once on the host (OpenFGL's). Evaluation negatives are always the fixed
host-drawn ones, so the metrics compare across rounds and runs.

Metrics per split (train, val, test): `{split}_auc` (ROC-AUC), `{split}_ap` (average precision),
`{split}_hits@K` (OGB's Hits@K), `{split}_acc` (sigmoid > 0.5, OpenFGL's "accuracy"), and
`val_loss` (BCE on the validation pairs). Pooled over clients (scores of every client ranked
together; the global model gives every client comparable scores) or OpenFGL's per-client metrics
averaged by client node count (`average="client_nodes"`). The engine selects the reported round
by `val_auc` (`FederatedAlgorithm.select`).

Shapes: C clients, P padded node pairs per client.
"""
from __future__ import annotations

from typing import Callable, Optional

import jax
import jax.numpy as jnp
import optax

from fgl_jax.federated.chunking import map_clients
from fgl_jax.federated.metrics import SPLITS, AVERAGES, _weighted_mean, binary_scores, hits_at_k

SELECT = ("val_auc", "test_auc")


def is_link(model) -> bool:
    """True when `model` is a link-prediction model (`fgl_jax.nn.link.LinkModel`)."""
    return getattr(model, "task", "node_cls") == "link_pred"


def sample_negatives(key: jax.Array, num_nodes: jax.Array, shape: tuple) -> tuple[jax.Array, jax.Array]:
    """(src, dst) int32 [shape]: uniform ordered pairs of distinct nodes in [0, num_nodes)
    (num_nodes traced, >= 2; dst = src + 1 + uniform[0, n-2] mod n, so dst != src)."""
    ku, kv = jax.random.split(key)
    n = jnp.maximum(num_nodes, 2)
    u = jax.random.randint(ku, shape, 0, n)
    v = (u + 1 + jax.random.randint(kv, shape, 0, n - 1)) % n
    return u.astype(jnp.int32), v.astype(jnp.int32)


def link_loss_fn(model) -> Callable:
    """loss(params, batch, key) = mean BCE over the client's training edges and as many negatives."""

    def loss(params, batch, key):
        kd, kn = jax.random.split(key)
        rngs = {"dropout": kd}
        p = batch.pairs
        z = model.apply(params, batch, train=True, rngs=rngs)
        score = lambda s, d: model.apply(params, z, s, d, train=True, rngs=rngs, method="score")
        logits = score(p.src, p.dst)
        if model.train_negatives == "fixed":
            m = p.train_mask.astype(jnp.float32)
            bce = optax.sigmoid_binary_cross_entropy(logits, p.label.astype(jnp.float32))
            return (bce * m).sum() / jnp.maximum(m.sum(), 1.0)
        pos = (p.train_mask & p.label).astype(jnp.float32)
        u, v = sample_negatives(kn, batch.node_mask.sum(), p.src.shape)
        neg_logits = score(u, v)
        # softplus(-s) = BCE(s, 1), softplus(s) = BCE(s, 0); one negative per training edge
        total = (jax.nn.softplus(-logits) * pos).sum() + (jax.nn.softplus(neg_logits) * pos).sum()
        return total / jnp.maximum(2.0 * pos.sum(), 1.0)

    return loss


def pair_scores(model, params, batch) -> jax.Array:
    """Logits [P] of one client's pairs (evaluation: no dropout)."""
    z = model.apply(params, batch, train=False)
    return model.apply(params, z, batch.pairs.src, batch.pairs.dst, method="score")


def split_metrics(score: jax.Array, label: jax.Array, mask: jax.Array, k: int) -> dict:
    """auc, ap, hits@k, acc and mean BCE of scores [M] over the masked entries."""
    auc, ap = binary_scores(score, label, mask)
    m = mask.astype(jnp.float32)
    total = jnp.maximum(m.sum(), 1.0)
    correct = ((score > 0) == label).astype(jnp.float32)
    bce = optax.sigmoid_binary_cross_entropy(score.astype(jnp.float32), label.astype(jnp.float32))
    return {"auc": auc, "ap": ap, f"hits@{k}": hits_at_k(score, label, mask, k),
            "acc": (correct * m).sum() / total, "loss": (bce * m).sum() / total}


def link_metrics(score: jax.Array, pairs, client_mask: jax.Array, k: int, average: str = "pooled",
                 weight: Optional[jax.Array] = None) -> dict:
    """The metrics of scores of `pairs` (see the module docstring).

    Args:
        score: float `[C, P]`, each pair's score (a logit) for C clients, P pairs.
        pairs: the `LinkPairs`, `[C, P]` arrays.
        client_mask: bool `[C]`, the clients that count.
        k: the K of Hits@K (static).
        average: "pooled" (every client's pairs ranked together) or "client_nodes" (per-client
            metrics averaged by `weight`).
        weight: float `[C]`, the per-client weights of "client_nodes" (node counts); unused when pooled.

    Returns:
        A dict of scalars: `{split}_auc`, `{split}_ap`, `{split}_hits@K`, `{split}_acc` for the
        splits train, val, test, and `val_loss`.

    Raises:
        ValueError: an unknown `average`.
    """
    if average not in AVERAGES:
        raise ValueError(f"average must be one of {AVERAGES}, got {average!r}")
    res = {}
    for split in SPLITS:
        mask = getattr(pairs, f"{split}_mask") & client_mask[:, None]
        if average == "pooled":
            got = split_metrics(score.reshape(-1), pairs.label.reshape(-1), mask.reshape(-1), k)
        else:
            per = jax.vmap(lambda s, l, m: split_metrics(s, l, m, k))(score, pairs.label, mask)
            w = weight * client_mask.astype(jnp.float32)
            got = {name: _weighted_mean(v, w) for name, v in per.items()}
        loss = got.pop("loss")
        if split == "val":
            res["val_loss"] = loss
        res.update({f"{split}_{name}": v for name, v in got.items()})
    return res


def evaluate_links(model, params, batch, per_client: bool, chunk: Optional[int] = None, *,
                   average: str = "pooled") -> dict:
    """`baselines.evaluate` for link prediction: params [C, ...] if per_client else one model."""
    if batch.pairs is None:
        raise ValueError("link prediction needs a client batch with node pairs (fgl_jax.batch.link_client_batch)")
    score = map_clients(lambda q, b: pair_scores(model, q, b), chunk,
                        in_axes=(0 if per_client else None, 0))(params, batch)
    nodes = batch.node_mask.sum(-1).astype(jnp.float32)
    return link_metrics(score, batch.pairs, batch.client_mask, model.hits_k, average, nodes)
