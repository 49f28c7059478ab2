"""Metrics over clients: pooled accuracy and validation loss, macro precision/recall/F1 and binary
ROC-AUC/AP (pooled or OpenFGL's node-weighted client average), and HiFGL's graph information gain.

Shapes: N nodes, K classes, M scored entries (node pairs).
"""
from __future__ import annotations

from typing import Optional

import jax
import jax.numpy as jnp
import optax


def masked_cross_entropy(logits: jax.Array, y: jax.Array, mask: jax.Array) -> jax.Array:
    """Mean softmax cross-entropy over masked nodes (0 when the mask is empty).

    Args:
        logits: float `[N, K]` (N nodes, K classes).
        y: int `[N]`, the labels in 0..K-1.
        mask: bool `[N]`, the nodes that count.

    Returns:
        The mean loss, a scalar of `logits`' dtype.
    """
    ce = optax.softmax_cross_entropy_with_integer_labels(logits, y)
    m = mask.astype(logits.dtype)
    return (ce * m).sum() / jnp.maximum(m.sum(), 1.0)


def graph_information_gain(acc: float, acc_local_mlp: float, acc_global: float) -> float:
    """HiFGL's Gain = (ACC - ACC(Local-MLP)) / (ACC(Global) - ACC(Local-MLP)).

    Args:
        acc: the method's accuracy.
        acc_local_mlp: Local training with an MLP's accuracy (gain 0).
        acc_global: centralised (Global) training's accuracy (gain 1).

    Returns:
        The gain, a float (negative below Local-MLP, above 1 beyond Global).

    Raises:
        ZeroDivisionError: `acc_global` equals `acc_local_mlp`.
    """
    denom = acc_global - acc_local_mlp
    if denom == 0:
        raise ZeroDivisionError("Global and Local-MLP accuracies are equal: gain undefined")
    return (acc - acc_local_mlp) / denom


# ---------------------------------------------------------------------------------------------
# Classification metrics beyond accuracy (OpenFGL's set): macro precision / recall / F1 from
# per-class counts, ROC-AUC and average precision from scores for binary tasks. Everything is
# jittable and masked, so it runs inside the round: `client_counts` counts one client's nodes,
# `summarise` turns the counts of all clients into either pooled metrics (counts summed over
# clients, fgl_jax's default) or OpenFGL's average of per-client metrics weighted by the client's
# node count.

SPLITS = ("train", "val", "test")
AVERAGES = ("pooled", "client_nodes")


SPREAD_KEYS = ("test_acc_clients_mean", "test_acc_clients_worst10", "test_acc_clients_sd")


def accuracy_spread(acc: jax.Array, valid: jax.Array) -> dict:
    """The distribution over clients of per-client accuracies, as scalars (`SPREAD_KEYS`).

    The node tasks' `client_spread` (accuracy over a client's test nodes) and the graph tasks'
    (over its test graphs, `fgl_jax.federated.graph_task.evaluate_graphs`) both end here.

    Args:
        acc: float [C], every client's test accuracy (any value where not valid).
        valid: bool [C], the real clients that hold test nodes / graphs.

    Returns:
        {test_acc_clients_mean: the unweighted mean over the valid clients, test_acc_clients_worst10:
        the mean of the worst 10 % (the ceil(n / 10) lowest, at least one), test_acc_clients_sd: the
        population standard deviation}.
    """
    n = jnp.maximum(valid.sum(), 1).astype(jnp.float32)
    mean = jnp.where(valid, acc, 0.0).sum() / n
    sd = jnp.sqrt(jnp.where(valid, (acc - mean) ** 2, 0.0).sum() / n)
    k = jnp.maximum(jnp.ceil(0.1 * n), 1.0)
    low = jnp.sort(jnp.where(valid, acc, jnp.inf))                             # the valid ones first
    worst = jnp.where(jnp.arange(low.shape[0]) < k, low, 0.0).sum() / k
    return dict(zip(SPREAD_KEYS, (mean, worst, sd)))


def class_counts(logits: jax.Array, y: jax.Array, mask: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
    """(true positives, predicted, true) per class over masked nodes, float32 [K] each; for masks
    [N, S] (one column per split) [S, K] each.

    logits [N, K], y int [N], mask bool or 0/1 [N] or [N, S]. The prediction is argmax (first class
    on ties, as torch.max / numpy.argmax). Every split's counts are one [S, N] x [N, 3K] product:
    the evaluation is compiled into every round program, and split-by-split sums cost XLA dozens
    of operations.
    """
    k = logits.shape[-1]
    m = mask.astype(jnp.float32)
    single = m.ndim == 1
    m = m[:, None] if single else m
    pred = jax.nn.one_hot(jnp.argmax(logits, -1), k, dtype=jnp.float32)
    true = jax.nn.one_hot(y, k, dtype=jnp.float32)
    # 0/1 entries, float32 sums: exact counts (below 2^24 nodes) at the highest precision
    c = jnp.einsum("ns,nk->sk", m, jnp.concatenate([pred * true, pred, true], -1),
                   precision=jax.lax.Precision.HIGHEST)
    tp, npred, ntrue = c[:, :k], c[:, k:2 * k], c[:, 2 * k:]
    return (tp[0], npred[0], ntrue[0]) if single else (tp, npred, ntrue)


def macro_scores(tp: jax.Array, pred: jax.Array, true: jax.Array) -> dict:
    """Macro precision, recall and F1 from per-class counts [..., K] (scikit-learn's rules).

    The mean runs over the classes present in the labels or the predictions (sklearn's default
    `labels`); a class never predicted has precision 0, a class never present recall 0, and
    F1_k = 2 tp / (pred + true). With no masked node at all every score is 0.
    """
    present = (pred + true) > 0
    n = jnp.maximum(present.sum(-1), 1).astype(jnp.float32)
    safe = lambda num, den: jnp.where(den > 0, num / jnp.maximum(den, 1.0), 0.0)
    mean = lambda v: jnp.where(present, v, 0.0).sum(-1) / n
    return {"precision_macro": mean(safe(tp, pred)), "recall_macro": mean(safe(tp, true)),
            "f1_macro": mean(safe(2.0 * tp, pred + true))}


def binary_scores(score: jax.Array, positive: jax.Array, mask: jax.Array) -> tuple[jax.Array, jax.Array]:
    """(ROC-AUC, average precision) of scores for the positive class over masked entries.

    score float [M], positive bool [M], mask bool [M]. AUC = P(score_pos > score_neg) + P(=)/2
    (the trapezoidal ROC area, ties counted half); AP = mean over positives i of the precision at
    threshold score_i, ties grouped (scikit-learn's step-wise `average_precision_score`). Both by
    sorting and `searchsorted`, O(M log M). NaN when there is no positive (or, for AUC, no
    negative): the metric is undefined.

    Args:
        score: float `[M]`, the scores (higher: more likely positive).
        positive: bool `[M]`, the true class of each entry.
        mask: bool `[M]`, the entries that count.

    Returns:
        `(auc, ap)`, two float32 scalars.
    """
    score = score.astype(jnp.float32)
    pos = positive & mask
    neg = ~positive & mask
    npos = pos.sum().astype(jnp.float32)
    nneg = neg.sum().astype(jnp.float32)
    inf = jnp.float32(jnp.inf)
    # negatives' scores ascending (others pushed to +inf, so never counted as below a score)
    neg_sorted = jnp.sort(jnp.where(neg, score, inf))
    below = jnp.searchsorted(neg_sorted, score, side="left").astype(jnp.float32)
    upto = jnp.searchsorted(neg_sorted, score, side="right").astype(jnp.float32)
    wins = jnp.where(pos, below + 0.5 * (upto - below), 0.0).sum()
    auc = jnp.where((npos > 0) & (nneg > 0), wins / jnp.maximum(npos * nneg, 1.0), jnp.nan)
    # counts of entries scoring >= s: (-inf for the excluded, so they are never >= a real score)
    all_sorted = jnp.sort(jnp.where(mask, score, -inf))
    pos_sorted = jnp.sort(jnp.where(pos, score, -inf))
    m = score.shape[0]
    at_least = m - jnp.searchsorted(all_sorted, score, side="left")
    tp_at_least = m - jnp.searchsorted(pos_sorted, score, side="left")
    precision = tp_at_least.astype(jnp.float32) / jnp.maximum(at_least, 1).astype(jnp.float32)
    ap = jnp.where(npos > 0, jnp.where(pos, precision, 0.0).sum() / jnp.maximum(npos, 1.0), jnp.nan)
    return auc, ap


def split_masks(batch) -> jax.Array:
    """float32 [N, 3]: one client's train / val / test masks as columns."""
    return jnp.stack([getattr(batch, f"{s}_mask") for s in SPLITS], -1).astype(jnp.float32)


def client_counts(logits: jax.Array, y: jax.Array, batch) -> dict:
    """Every count the metrics need, of one client, for the three splits at once.

    logits [N, K], y int [N], batch: its train/val/test masks [N]. Returns total [3] (the
    split's nodes), tp / pred / true [3, K] (per split and class: true positives, predictions,
    labels; correct predictions = tp summed over K) and val_loss_sum (cross-entropy summed over
    the validation nodes); with K == 2 also score [N] (softmax probability of class 1), positive
    [N] (y == 1) and mask bool [N, 3], so scores can be pooled across clients before ranking.
    """
    k = logits.shape[-1]
    m = split_masks(batch)
    tp, npred, ntrue = class_counts(logits, y, m)
    ce = optax.softmax_cross_entropy_with_integer_labels(logits, y)
    out = {"total": m.sum(0), "tp": tp, "pred": npred, "true": ntrue, "val_loss_sum": (ce * m[:, 1]).sum()}
    if k == 2:
        out["score"] = jax.nn.softmax(logits.astype(jnp.float32), -1)[:, 1]
        out["positive"] = y == 1
        out["mask"] = m > 0
    return out


def _per_split(prefix_values: dict) -> dict:
    """{name: [3] array} -> {"train_name": v[0], "val_name": v[1], "test_name": v[2]}."""
    return {f"{s}_{name}": v[..., i] for name, v in prefix_values.items() for i, s in enumerate(SPLITS)}


def pool(counts: dict, client_mask: jax.Array) -> dict:
    """Pooled (global) accuracies from `client_counts` stacked over clients [C, ...]: sum correct /
    sum total per split; val_loss = summed validation cross-entropy / validation nodes."""
    w = client_mask.astype(jnp.float32)
    correct = (counts["tp"].sum(-1) * w[:, None]).sum(0)
    total = (counts["total"] * w[:, None]).sum(0)
    res = _per_split({"acc": correct / jnp.maximum(total, 1.0)})
    res["val_loss"] = (counts["val_loss_sum"] * w).sum() / jnp.maximum(total[1], 1.0)
    return res


def _weighted_mean(values: jax.Array, weight: jax.Array) -> jax.Array:
    """sum_c w_c v_c / sum_c w_c over the leading client axis of values [C, ...], weight [C], where
    v_c is finite (undefined clients are skipped, per trailing entry)."""
    w = jnp.expand_dims(weight, tuple(range(1, values.ndim)))
    ok = jnp.isfinite(values) & (w > 0)
    w = jnp.where(ok, w, 0.0)
    tot = w.sum(0)
    return jnp.where(tot > 0, (jnp.where(ok, values, 0.0) * w).sum(0) / jnp.maximum(tot, 1e-12), jnp.nan)


def summarise(counts: dict, client_mask: jax.Array, average: str = "pooled",
              weight: Optional[jax.Array] = None) -> dict:
    """Every classification metric per split from `client_counts` stacked over clients [C, ...].

    average "pooled": the counts (and scores) of all real clients (client_mask [C]) together, one
    metric (`pool` for the accuracies); "client_nodes": OpenFGL's aggregation, each client's metric
    averaged with weights `weight` [C] (its node count). Keys: {split}_acc, val_loss,
    {split}_precision_macro, {split}_recall_macro, {split}_f1_macro, and {split}_auc, {split}_ap
    for binary tasks. The splits (and, averaged per client, the metrics) are computed as trailing
    axes of one array: fewer, larger XLA operations in every round program.
    """
    if average not in AVERAGES:
        raise ValueError(f"average must be one of {AVERAGES}, got {average!r}")
    real = client_mask.astype(jnp.float32)
    tp, pred, true = (counts[k] * real[:, None, None] for k in ("tp", "pred", "true"))   # [C, 3, K]
    if average == "pooled":
        res = pool(counts, client_mask)
        res.update(_per_split(macro_scores(tp.sum(0), pred.sum(0), true.sum(0))))
    else:
        w = weight * real
        total = jnp.maximum(counts["total"], 1.0)                                        # [C, 3]
        per = {"acc": counts["tp"].sum(-1) / total, **macro_scores(tp, pred, true)}      # [C, 3] each
        mean = _weighted_mean(jnp.stack(list(per.values()), -1), w)                      # [3, M]
        res = _per_split({k: mean[:, j] for j, k in enumerate(per)})
        res["val_loss"] = _weighted_mean(counts["val_loss_sum"] / total[:, 1], w)
    if "score" in counts:
        mask = counts["mask"] & client_mask[:, None, None]                               # [C, N, 3]
        by_split = jax.vmap(binary_scores, in_axes=(None, None, -1))                     # -> [3]
        if average == "pooled":
            auc, ap = by_split(counts["score"].reshape(-1), counts["positive"].reshape(-1), mask.reshape(-1, 3))
        else:
            auc, ap = jax.vmap(by_split)(counts["score"], counts["positive"], mask)      # [C, 3]
            auc, ap = _weighted_mean(jnp.stack([auc, ap], -1), weight * real).T
        res.update(_per_split({"auc": auc, "ap": ap}))
    return res


def hits_at_k(score: jax.Array, positive: jax.Array, mask: jax.Array, k: int) -> jax.Array:
    """OGB's Hits@K over masked entries: the fraction of positives scoring strictly above the K-th
    highest negative score (`ogb.linkproppred.Evaluator`); 1 when there are fewer than K negatives
    (as OGB), NaN when there is no positive.

    Args:
        score: float `[M]`, the scores.
        positive: bool `[M]`, True for a positive (an edge).
        mask: bool `[M]`, the entries that count.
        k: K (static).

    Returns:
        Hits@K, a float32 scalar in [0, 1] or NaN.
    """
    score = score.astype(jnp.float32)
    pos = positive & mask
    neg = ~positive & mask
    kk = min(int(k), score.shape[0])
    kth = jax.lax.top_k(jnp.where(neg, score, -jnp.inf), kk)[0][kk - 1]
    npos = pos.sum().astype(jnp.float32)
    hits = jnp.where(pos & (score > kth), 1.0, 0.0).sum() / jnp.maximum(npos, 1.0)
    hits = jnp.where(neg.sum() < k, 1.0, hits)
    return jnp.where(npos > 0, hits, jnp.nan)
