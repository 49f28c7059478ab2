"""Inference attacks on what a federated run releases, for any algorithm: membership inference from a
final model's outputs and attribute inference from shared embeddings. What every attack here shares
(the ROC AUC, label-agnostic posterior features) lives here too; FedGC's shadow-model attack
(`fgl_jax.systems.fedgc.attack`) uses them.

Membership inference by threshold (Yeom, Giacomelli, Fredrikson & Jha 2018, "Privacy Risk in Machine
Learning"): a model fits its training nodes better than unseen ones, so a node's score

    loss        -CE(logits_v, y_v)              (higher = more likely a member)
    confidence  max_k softmax(logits_v)_k       (label-free)

thresholded at any level separates members (training nodes) from non-members (test nodes); the
attack's strength over all thresholds is the ROC AUC of members vs non-members (0.5 = no leakage).

Attribute inference by a linear probe: a server that receives per-node embeddings h_v fits a
multinomial logistic regression from h_v to a held-out node attribute on half of the nodes and
reports its accuracy on the other half, against the majority-class baseline.

Shapes: N nodes, K classes, d embedding width.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

Array = jax.Array

__all__ = ["SCORES", "auc", "attack_features", "membership_scores", "membership_auc", "linear_probe"]

SCORES = ("loss", "confidence")


def auc(scores, labels) -> float:
    """ROC AUC = P(score of a random positive > score of a random negative) + 1/2 P(tie), via average
    ranks (the Mann-Whitney U statistic).

    Args:
        scores: float `[n]`.
        labels: `[n]` in {0, 1} (1 = positive).

    Returns:
        The AUC in [0, 1].

    Raises:
        ValueError: shapes differ, or one class is absent.
    """
    s = np.asarray(scores, np.float64).ravel()
    y = np.asarray(labels).ravel().astype(bool)
    if s.shape != y.shape:
        raise ValueError(f"auc: scores {s.shape} and labels {y.shape} differ in shape")
    n_pos, n_neg = int(y.sum()), int((~y).sum())
    if n_pos == 0 or n_neg == 0:
        raise ValueError(f"auc needs both classes, got {n_pos} positives and {n_neg} negatives")
    order = np.argsort(s, kind="mergesort")
    ranks = np.empty(s.size, np.float64)
    _, start, counts = np.unique(s[order], return_index=True, return_counts=True)
    ranks[order] = np.repeat(start + (counts + 1) / 2.0, counts)  # tied scores share their average rank
    u = ranks[y].sum() - n_pos * (n_pos + 1) / 2.0
    return float(u / (n_pos * n_neg))


def attack_features(post: Array) -> Array:
    """Posteriors sorted in descending order (label-agnostic, as in the shadow-model literature).

    Args:
        post: `[n, K]` class probabilities.

    Returns:
        `[n, K]`, each row sorted from the largest.
    """
    return -jnp.sort(-post, axis=-1)


def membership_scores(logits, y, kind: str = "loss") -> np.ndarray:
    """Each node's membership score (module docstring): higher = more likely a training node.

    Args:
        logits: float `[..., K]`.
        y: int `[...]`, the true labels (unused by "confidence").
        kind: "loss" (minus the cross-entropy) or "confidence" (the largest softmax probability).

    Returns:
        float64 `[...]`.

    Raises:
        ValueError: an unknown kind.
    """
    if kind not in SCORES:
        raise ValueError(f"membership_scores: kind must be one of {SCORES}, got {kind!r}")
    lg = np.asarray(logits, np.float64)
    lg = lg - lg.max(-1, keepdims=True)
    logp = lg - np.log(np.exp(lg).sum(-1, keepdims=True))
    if kind == "confidence":
        return np.exp(logp.max(-1))
    return np.take_along_axis(logp, np.asarray(y, np.int64)[..., None], -1)[..., 0]


def membership_auc(logits, y, members, nonmembers, kind: str = "loss") -> float:
    """The threshold attack's AUC of members vs non-members.

    Args:
        logits: float `[..., K]` of the attacked model (e.g. `[C, N, K]`, every client's nodes).
        y: int `[...]`, the true labels.
        members: bool `[...]`, the member nodes (training nodes).
        nonmembers: bool `[...]`, the non-member nodes (test nodes).
        kind: the score (`SCORES`).

    Returns:
        The AUC (0.5 = the scores carry no membership information).
    """
    s = membership_scores(logits, y, kind)
    mem, non = np.asarray(members, bool), np.asarray(nonmembers, bool)
    return auc(np.concatenate([s[mem], s[non]]), np.concatenate([np.ones(mem.sum()), np.zeros(non.sum())]))


def linear_probe(embeddings, attribute, mask=None, seed: int = 0, steps: int = 300, lr: float = 0.5,
                 weight_decay: float = 1e-4) -> dict:
    """Attribute inference: a multinomial logistic regression from the embeddings to the attribute,
    fitted on a random half of the nodes (full-batch gradient descent in NumPy on standardised
    inputs: a few hundred small steps, cheaper than compiling), scored on the rest.

    Args:
        embeddings: float `[N, d]`, what the server receives per node.
        attribute: int `[N]`, the held-out node attribute (classes 0..A-1; negative = unknown, left out).
        mask: bool `[N]` or None, the nodes with a real embedding and attribute.
        seed: the split's and the fit's seed.
        steps: gradient steps.
        lr: the step size.
        weight_decay: L2 penalty on the weights.

    Returns:
        {"probe_acc": held-out accuracy, "majority_acc": the held-out accuracy of always predicting
        the training half's most frequent value, "nodes": the nodes used}.

    Raises:
        ValueError: fewer than 4 nodes, or embeddings and attribute of different lengths.
    """
    x = np.asarray(embeddings, np.float64)
    a = np.asarray(attribute, np.int64)
    keep = np.ones(len(a), bool) if mask is None else np.asarray(mask, bool)
    if x.ndim != 2 or x.shape[0] != a.shape[0] or keep.shape != a.shape:
        raise ValueError(f"linear_probe: embeddings {x.shape}, attribute {a.shape} and mask {keep.shape} must "
                         "be [N, d], [N], [N]")
    x, a = x[keep & (a >= 0)], a[keep & (a >= 0)]  # a negative attribute is unknown (an unlabelled node)
    if len(a) < 4:
        raise ValueError(f"linear_probe needs at least 4 nodes, got {len(a)}")
    rng = np.random.default_rng(seed)
    perm = rng.permutation(len(a))
    tr, te = perm[: len(a) // 2], perm[len(a) // 2:]
    mu, sd = x[tr].mean(0), x[tr].std(0) + 1e-8
    x = (x - mu) / sd
    k = int(a.max()) + 1
    w, b = _fit_softmax(x[tr], a[tr], k, steps, lr, weight_decay)
    pred = np.argmax(x[te] @ w + b, -1)
    majority = int(np.bincount(a[tr], minlength=k).argmax())
    return {"probe_acc": float((pred == a[te]).mean()), "majority_acc": float((a[te] == majority).mean()),
            "nodes": int(len(a))}


def _fit_softmax(x: np.ndarray, a: np.ndarray, k: int, steps: int, lr: float, weight_decay: float):
    """(w [d, k], b [k]) of L2-penalised multinomial logistic regression by full-batch gradient descent."""
    w, b = np.zeros((x.shape[1], k)), np.zeros(k)
    onehot = np.eye(k)[a]
    for _ in range(steps):
        z = x @ w + b
        p = np.exp(z - z.max(1, keepdims=True))
        p /= p.sum(1, keepdims=True)
        g = (p - onehot) / len(a)  # d(mean cross-entropy)/dz
        w -= lr * (x.T @ g + 2 * weight_decay * w)
        b -= lr * g.sum(0)
    return w, b
