"""Metrics over clients: pooled accuracy and validation loss, macro precision/recall/F1 and binary
ROC-AUC/AP (pooled or OpenFGL's node-weighted client average), and HiFGL's graph information gain."""
from __future__ import annotations

from typing import Optional

import jax
import jax.numpy as jnp
import optax


def masked_cross_entropy(logits: jax.Array, y: jax.Array, mask: jax.Array) -> jax.Array:
    """Mean softmax cross-entropy over masked nodes (0 when the mask is empty). logits [N, K]."""
    ce = optax.softmax_cross_entropy_with_integer_labels(logits, y)
    m = mask.astype(logits.dtype)
    return (ce * m).sum() / jnp.maximum(m.sum(), 1.0)


def client_counts(logits: jax.Array, y: jax.Array, batch) -> dict:
    """Correct-prediction counts and totals for train/val/test on one client (for pooling)."""
    correct = (jnp.argmax(logits, -1) == y)
    out = {}
    for split in ("train", "val", "test"):
        m = getattr(batch, f"{split}_mask")
        out[f"{split}_correct"] = (correct & m).sum().astype(jnp.float32)
        out[f"{split}_total"] = m.sum().astype(jnp.float32)
    ce = optax.softmax_cross_entropy_with_integer_labels(logits, y)
    out["val_loss_sum"] = (ce * batch.val_mask).sum()
    return out


def pool(counts: dict, client_mask: jax.Array) -> dict:
    """Pooled (global) accuracies from per-client counts [C]: sum correct / sum total."""
    w = client_mask.astype(jnp.float32)
    tot = {k: (v * w).sum() for k, v in counts.items()}
    res = {}
    for split in ("train", "val", "test"):
        res[f"{split}_acc"] = tot[f"{split}_correct"] / jnp.maximum(tot[f"{split}_total"], 1.0)
    res["val_loss"] = tot["val_loss_sum"] / jnp.maximum(tot["val_total"], 1.0)
    return res


def graph_information_gain(acc: float, acc_local_mlp: float, acc_global: float) -> float:
    """HiFGL's Gain = (ACC - ACC(Local-MLP)) / (ACC(Global) - ACC(Local-MLP))."""
    denom = acc_global - acc_local_mlp
    if denom == 0:
        raise ZeroDivisionError("Global and Local-MLP accuracies are equal: gain undefined")
    return (acc - acc_local_mlp) / denom


# ---------------------------------------------------------------------------------------------
# Classification metrics beyond accuracy (OpenFGL's set): macro precision / recall / F1 from
# per-class counts, ROC-AUC and average precision from scores for binary tasks. Everything is
# jittable and masked, so it runs inside the round; `pool_classes` turns per-client counts into
# either pooled metrics (counts summed over clients, fgl_jax's default) or OpenFGL's average of
# per-client metrics weighted by the client's node count.

SPLITS = ("train", "val", "test")
AVERAGES = ("pooled", "client_nodes")


def class_counts(logits: jax.Array, y: jax.Array, mask: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
    """(true positives, predicted, true) per class over masked nodes, float32 [K] each.

    logits [N, K], y int [N], mask bool [N]. The prediction is argmax (first class on ties, as
    torch.max / numpy.argmax).
    """
    k = logits.shape[-1]
    m = mask.astype(jnp.float32)[:, None]
    pred = jax.nn.one_hot(jnp.argmax(logits, -1), k, dtype=jnp.float32) * m
    true = jax.nn.one_hot(y, k, dtype=jnp.float32) * m
    return (pred * true).sum(0), pred.sum(0), true.sum(0)


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


def client_class_counts(logits: jax.Array, y: jax.Array, batch) -> dict:
    """Per-class counts of one client for every split, and (binary tasks) its positive-class scores.

    Returns {split}_tp/_pred/_true [K] for train/val/test; with K == 2 also score [N] (softmax
    probability of class 1), positive [N] (y == 1) and {split}_mask [N], so scores can be pooled
    across clients before ranking.
    """
    out = {}
    for split in SPLITS:
        m = getattr(batch, f"{split}_mask")
        out[f"{split}_tp"], out[f"{split}_pred"], out[f"{split}_true"] = class_counts(logits, y, m)
    if logits.shape[-1] == 2:
        out["score"] = jax.nn.softmax(logits.astype(jnp.float32), -1)[:, 1]
        out["positive"] = y == 1
        for split in SPLITS:
            out[f"{split}_mask"] = getattr(batch, f"{split}_mask")
    return out


def _weighted_mean(values: jax.Array, weight: jax.Array) -> jax.Array:
    """sum_c w_c v_c / sum_c w_c over clients where v_c is finite (undefined clients are skipped)."""
    ok = jnp.isfinite(values) & (weight > 0)
    w = jnp.where(ok, weight, 0.0)
    return jnp.where(w.sum() > 0, (jnp.where(ok, values, 0.0) * w).sum() / jnp.maximum(w.sum(), 1e-12), jnp.nan)


def pool_classes(cls: dict, client_mask: jax.Array, average: str = "pooled",
                 weight: Optional[jax.Array] = None) -> dict:
    """Macro precision/recall/F1 (and binary AUC/AP) per split from per-client counts.

    cls: `client_class_counts` stacked over clients ([C, K], scores [C, N]). average "pooled":
    counts (and scores) of all real clients together, one metric; "client_nodes": the metric of each
    client, averaged with weights `weight` [C] (OpenFGL: the client's node count). Keys:
    {split}_precision_macro, {split}_recall_macro, {split}_f1_macro, and {split}_auc, {split}_ap
    for binary tasks.
    """
    if average not in AVERAGES:
        raise ValueError(f"average must be one of {AVERAGES}, got {average!r}")
    real = client_mask.astype(jnp.float32)
    res = {}
    for split in SPLITS:
        tp, pred, true = (cls[f"{split}_{k}"] * real[:, None] for k in ("tp", "pred", "true"))
        if average == "pooled":
            scores = macro_scores(tp.sum(0), pred.sum(0), true.sum(0))
        else:
            scores = {k: _weighted_mean(v, weight * real) for k, v in macro_scores(tp, pred, true).items()}
        res.update({f"{split}_{k}": v for k, v in scores.items()})
        if "score" in cls:
            mask = cls[f"{split}_mask"] & client_mask[:, None]
            if average == "pooled":
                auc, ap = binary_scores(cls["score"].reshape(-1), cls["positive"].reshape(-1), mask.reshape(-1))
            else:
                auc, ap = jax.vmap(binary_scores)(cls["score"], cls["positive"], mask)
                auc, ap = _weighted_mean(auc, weight * real), _weighted_mean(ap, weight * real)
            res[f"{split}_auc"], res[f"{split}_ap"] = auc, ap
    return res


def average_clients(counts: dict, client_mask: jax.Array, weight: jax.Array) -> dict:
    """OpenFGL's aggregation of `client_counts`: each client's accuracy (and mean validation loss)
    averaged with weights `weight` [C] (its node count), instead of `pool`'s sum-then-divide."""
    w = weight * client_mask.astype(jnp.float32)
    per = lambda num, den: num / jnp.maximum(den, 1.0)
    res = {f"{s}_acc": _weighted_mean(per(counts[f"{s}_correct"], counts[f"{s}_total"]), w) for s in SPLITS}
    res["val_loss"] = _weighted_mean(per(counts["val_loss_sum"], counts["val_total"]), w)
    return res


def hits_at_k(score: jax.Array, positive: jax.Array, mask: jax.Array, k: int) -> jax.Array:
    """OGB's Hits@K over masked entries: the fraction of positives scoring strictly above the K-th
    highest negative score (`ogb.linkproppred.Evaluator`); 1 when there are fewer than K negatives
    (as OGB), NaN when there is no positive. score float [M], positive/mask bool [M], k static."""
    score = score.astype(jnp.float32)
    pos = positive & mask
    neg = ~positive & mask
    kk = min(int(k), score.shape[0])
    kth = jax.lax.top_k(jnp.where(neg, score, -jnp.inf), kk)[0][kk - 1]
    npos = pos.sum().astype(jnp.float32)
    hits = jnp.where(pos & (score > kth), 1.0, 0.0).sum() / jnp.maximum(npos, 1.0)
    hits = jnp.where(neg.sum() < k, 1.0, hits)
    return jnp.where(npos > 0, hits, jnp.nan)
