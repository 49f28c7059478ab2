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

Attribute inference by a linear probe: an observer that receives per-node (or per-client) vectors
h_v fits a linear classifier (closed-form ridge regression onto the one-hot attribute) from h_v to a
held-out attribute on half of the rows and reports its accuracy on the other half, against the
majority-class baseline. The views probed: FedGCN's server aggregates (`fgl_jax.fedgcn_server_view`),
FedSage+'s generated neighbour features (`fedsage_generated_view`) and FedTAD's class-wise
knowledge uploads (`fedtad_ckr_view`, a client-level attribute: `majority_label`).

Shapes: N nodes, K classes, d embedding width.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

Array = jax.Array

__all__ = ["SCORES", "auc", "attack_features", "membership_scores", "membership_auc", "linear_probe",
           "fedsage_generated_view", "fedtad_ckr_view", "majority_label"]

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


def linear_probe(embeddings, attribute, mask=None, seed: int = 0,
                 ridges: tuple = (1e-3, 1e-2, 1e-1, 1.0, 10.0, 100.0)) -> dict:
    """Attribute inference: a linear classifier from the embeddings to the attribute, fitted on a
    random half of the rows, scored on the other half.

    The classifier is ridge regression onto the one-hot attribute (argmax of the d -> A linear map
    on standardised inputs), solved in closed form: through the d x d covariance when d <= n rows,
    else through the n x n Gram matrix, so a 3,703-dimensional input (CiteSeer's raw features) costs
    a few linear solves of the smaller side instead of hundreds of gradient steps. The ridge
    penalty (times n) is chosen from `ridges` on a held-out quarter of the fitting half, then the
    whole fitting half is refitted with it; the scored half is never seen.

    Args:
        embeddings: float `[N, d]`, what the observer receives per node (or per client).
        attribute: int `[N]`, the held-out attribute (classes 0..A-1; negative = unknown, left out).
        mask: bool `[N]` or None, the rows with a real embedding and attribute.
        seed: the split's seed.
        ridges: candidate ridge penalties (relative to the number of fitting rows).

    Returns:
        {"probe_acc": held-out accuracy, "majority_acc": the held-out accuracy of always predicting
        the fitting half's most frequent value, "nodes": the rows used, "ridge": the penalty chosen}.

    Raises:
        ValueError: fewer than 8 rows, or embeddings and attribute of different lengths.
    """
    x = np.asarray(embeddings, np.float64)
    a = np.asarray(attribute, np.int64)
    keep = np.ones(len(a), bool) if mask is None else np.asarray(mask, bool)
    if x.ndim != 2 or x.shape[0] != a.shape[0] or keep.shape != a.shape:
        raise ValueError(f"linear_probe: embeddings {x.shape}, attribute {a.shape} and mask {keep.shape} must "
                         "be [N, d], [N], [N]")
    x, a = x[keep & (a >= 0)], a[keep & (a >= 0)]  # a negative attribute is unknown (an unlabelled node)
    if len(a) < 8:
        raise ValueError(f"linear_probe needs at least 8 rows, got {len(a)}")
    rng = np.random.default_rng(seed)
    perm = rng.permutation(len(a))
    tr, te = perm[: len(a) // 2], perm[len(a) // 2:]
    mu, sd = x[tr].mean(0), x[tr].std(0) + 1e-8
    x = (x - mu) / sd
    k = int(a.max()) + 1
    inner, held = tr[: 3 * len(tr) // 4], tr[3 * len(tr) // 4:]
    scores = [float((_predict(x[held], w, b) == a[held]).mean())
              for w, b in _ridge_path(x[inner], a[inner], k, ridges)]
    ridge = ridges[int(np.argmax(scores))]  # the first of the best on the held-out quarter
    (w, b), = _ridge_path(x[tr], a[tr], k, (ridge,))
    pred = _predict(x[te], w, b)
    majority = int(np.bincount(a[tr], minlength=k).argmax())
    return {"probe_acc": float((pred == a[te]).mean()), "majority_acc": float((a[te] == majority).mean()),
            "nodes": int(len(a)), "ridge": float(ridge)}


def _predict(x: np.ndarray, w: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.argmax(x @ w + b, -1)


def _ridge_path(x: np.ndarray, a: np.ndarray, k: int, ridges) -> list:
    """[(w [d, k], b [k])] of ridge regression of one-hot(a) on x for each penalty lam (minimising
    |x w + b - Y|^2 + lam n |w|^2), through the smaller of x^T x and x x^T."""
    y = np.eye(k)[a]
    xm, ym = x.mean(0), y.mean(0)
    xc, yc = x - xm, y - ym   # the intercept, unpenalised
    n, d = xc.shape
    out = []
    # linear solves, not an eigendecomposition shared by the penalties: on this 2-core machine
    # LAPACK's eigh of a 1,656 x 1,656 matrix cost ~9x the CPU of six solves (multithreaded under load)
    if d <= n:
        cov, rhs = xc.T @ xc, xc.T @ yc
        ws = [np.linalg.solve(cov + lam * n * np.eye(d), rhs) for lam in ridges]
    else:  # the dual: w = x^T (x x^T + lam n I)^-1 y
        gram = xc @ xc.T
        ws = [xc.T @ np.linalg.solve(gram + lam * n * np.eye(n), yc) for lam in ridges]
    for w in ws:
        out.append((w, ym - xm @ w))
    return out


def fedsage_generated_view(mend_x, node_mask, mend_n=None) -> tuple[np.ndarray, np.ndarray]:
    """What FedSage+'s neighbour generator reveals about each node: the mean of the features fGen
    generated for its missing neighbours (`FedSagePlusState.mend_x`), one row per client node.
    Without `mend_n`: all P slots, what a party holding the client's NeighGen computes from its
    impaired graph; with it: the live slots only, what the mended graph adds (zeros for a node that
    got none).

    Args:
        mend_x: float `[C, N, P, F]`, the generated neighbour features of every client's nodes.
        node_mask: bool `[C, N]`, the real (unpadded) nodes.
        mend_n: int `[C, N]` or None, the live slots of each node (n_i <= P).

    Returns:
        (view float32 `[C * N, F]`, mask bool `[C * N]` of the real nodes), rows in client-major order
        (the order of `batch.y.reshape(-1)`).
    """
    gen = np.asarray(mend_x, np.float32)
    c, n, p, f = gen.shape
    count = np.full((c, n), p) if mend_n is None else np.asarray(mend_n)
    live = (np.arange(p)[None, None, :] < count[..., None]).astype(np.float32)  # [C, N, P]
    total = np.einsum("cnp,cnpf->cnf", live, gen)
    view = total / np.maximum(live.sum(-1, keepdims=True), 1.0)
    return view.reshape(c * n, f), np.asarray(node_mask, bool).reshape(-1)


def fedtad_ckr_view(ckr) -> np.ndarray:
    """What FedTAD's server receives from each client: its class-wise knowledge reliability
    ckr_ck (sum over its training nodes of class k of their topology-aware reliability), here as
    the client's class profile (each row over its sum; a client without training nodes stays 0).

    Args:
        ckr: float `[C, K]`, the unnormalised CKR of every client (`fgl_jax.algorithms.fedtad.class_reliability`).

    Returns:
        float64 `[C, K]`, rows summing to 1 (or 0).
    """
    r = np.asarray(ckr, np.float64)
    return r / np.maximum(r.sum(1, keepdims=True), 1e-12)


def majority_label(y, train_mask, node_mask=None) -> np.ndarray:
    """Each client's most frequent training label (the client-level attribute a FedTAD probe targets).

    Args:
        y: int `[C, N]`, node labels.
        train_mask: bool `[C, N]`, the training nodes.
        node_mask: bool `[C, N]` or None, the real nodes.

    Returns:
        int64 `[C]`: the label (the smallest on ties), -1 for a client without training nodes.
    """
    y = np.asarray(y, np.int64)
    m = np.asarray(train_mask, bool) & (True if node_mask is None else np.asarray(node_mask, bool))
    k = int(y.max()) + 1 if y.size else 1
    counts = np.stack([np.bincount(y[c][m[c]], minlength=k) for c in range(y.shape[0])])
    return np.where(counts.sum(1) > 0, counts.argmax(1), -1)
