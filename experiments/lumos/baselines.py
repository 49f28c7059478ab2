"""The naive federated GNN of the Lumos paper (§VIII baseline 3; parameters unspecified, spec A14).

Every device perturbs its ego network and uploads it; the server trains a GNN on the noisy graph
(`fgl_jax.systems.lumos.train_central`, Lumos' optimiser, epochs and best-val selection).
  features: analytic Gaussian mechanism (Balle & Wang 2018), (eps_x, delta) = (2, 1e-5),
            L2 sensitivity (b - a) sqrt(d) on features scaled to [0, 1];
  adjacency: symmetric per-pair randomized response with eps_a = 2 (flip prob 1/(1+e^eps_a)):
            true edges kept w.p. 1-q, Binomial(#non-edges, q) false edges at uniform positions;
            or, when that graph is too large for memory (Facebook: ~30 M false edges),
            adjacency="expected": GCN on the expected noisy adjacency (1-2q)A + q(J - I)
            (mean field; deterministic; train_central's mean_field_q);
  labels:   k-ary randomized response with eps_y = 1 on train and validation labels.

Used by experiments/lumos/paper.py (the `naive` cells); moved out of the package with it.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Optional

import numpy as np

from fgl_jax import EdgeSplit, Graph, symmetrize
from fgl_jax.systems.lumos import LumosConfig, train_central


def analytic_gaussian_sigma(eps: float, delta: float, sensitivity: float) -> float:
    """Smallest sigma with Phi(D/2s - eps s/D) - e^eps Phi(-D/2s - eps s/D) <= delta (Balle & Wang 2018)."""
    if eps <= 0 or not 0 < delta < 1 or sensitivity <= 0:
        raise ValueError(f"analytic_gaussian_sigma: need eps > 0, 0 < delta < 1, sensitivity > 0; "
                         f"got {eps}, {delta}, {sensitivity}")

    def priv_loss(s):
        a, b = sensitivity / (2 * s), eps * s / sensitivity
        from scipy.stats import norm  # here, not at import: scipy.stats is a noticeable part of every command's start-up
        return norm.cdf(a - b) - math.exp(eps) * norm.cdf(-a - b)

    lo, hi = 1e-6, 1.0
    while priv_loss(hi) > delta:
        hi *= 2
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if priv_loss(mid) > delta else (lo, mid)
    return hi


def rr_labels(y: np.ndarray, k: int, eps: float, rng: np.random.Generator) -> np.ndarray:
    """k-ary randomized response: keep w.p. e^eps/(e^eps + k - 1), else a uniform other class."""
    keep = rng.random(y.shape) < math.exp(eps) / (math.exp(eps) + k - 1)
    other = (y + rng.integers(1, k, y.shape)) % k
    return np.where(keep, y, other).astype(np.int32)


def rr_adjacency(senders, receivers, n: int, eps: float, rng: np.random.Generator, max_false: int = 10_000_000
                 ) -> tuple[np.ndarray, np.ndarray]:
    """Symmetric per-pair RR of the adjacency: directed (s, r) of the noisy undirected graph."""
    q = 1.0 / (1.0 + math.exp(eps))
    s, r = np.asarray(senders, np.int64), np.asarray(receivers, np.int64)
    und = s < r
    eu, ev = s[und], r[und]
    keep = rng.random(eu.size) >= q
    non_edges = n * (n - 1) // 2 - eu.size
    n_false = int(rng.binomial(non_edges, q))
    if n_false > max_false:
        raise MemoryError(f"rr_adjacency: {n_false} false edges exceed max_false={max_false}; "
                          "use the mean-field baseline (adjacency='expected')")
    existing = np.sort(eu * n + ev)
    got = np.zeros(0, np.int64)
    while got.size < n_false:
        need = int(1.1 * (n_false - got.size)) + 64
        a, b = rng.integers(0, n, need), rng.integers(0, n, need)
        lo, hi = np.minimum(a, b), np.maximum(a, b)
        key = (lo * n + hi)[lo != hi]
        pos = np.clip(np.searchsorted(existing, key), 0, max(existing.size - 1, 0))
        key = key[existing[pos] != key] if existing.size else key
        got = np.unique(np.concatenate([got, key]))
    got = rng.permutation(got)[:n_false]
    fu, fv = got // n, got % n
    return symmetrize(np.concatenate([eu[keep], fu]), np.concatenate([ev[keep], fv]), n)


def naive_fedgnn_graph(graph: Graph, x: np.ndarray, eps_x: float = 2.0, delta: float = 1e-5, eps_a: float = 2.0,
                       eps_y: float = 1.0, seed: int = 0, split: Optional[EdgeSplit] = None,
                       adjacency: str = "sampled"):
    """Perturbed (x, senders, receivers, y_train) as the server sees them (spec A14)."""
    rng = np.random.default_rng(seed)
    d = x.shape[1]
    sigma = analytic_gaussian_sigma(eps_x, delta, math.sqrt(d))
    xn = (x + rng.normal(0.0, sigma, x.shape)).astype(np.float32)
    if split is not None:
        s, r = split.train_directed()
    else:
        s, r = graph.senders, graph.receivers
    if adjacency == "sampled":
        s, r = rr_adjacency(s, r, graph.num_nodes, eps_a, rng)
    elif adjacency != "expected":  # expected: true edges stay; (1-2q)A + q(J-I) is applied in MeanFieldGCN
        raise ValueError(f"naive_fedgnn_graph: adjacency must be 'sampled' or 'expected', got {adjacency!r}")
    y = np.maximum(graph.y, 0)
    y_noisy = y.copy()
    tv = graph.train_mask | graph.val_mask
    y_noisy[tv] = rr_labels(y[tv], graph.num_classes, eps_y, rng)
    return xn, s, r, y_noisy, sigma




def train_naive_fedgnn(graph: Graph, x: np.ndarray, cfg: LumosConfig, split: Optional[EdgeSplit] = None,
                       eps_x: float = 2.0, eps_a: float = 2.0, eps_y: float = 1.0, adjacency: str = "sampled") -> dict:
    xn, s, r, yn, sigma = naive_fedgnn_graph(graph, x, eps_x, 1e-5, eps_a, eps_y, cfg.seed, split, adjacency)
    g = dataclasses.replace(graph, senders=s.astype(np.int32), receivers=r.astype(np.int32))
    q = 1.0 / (1.0 + math.exp(eps_a)) if adjacency == "expected" else 0.0
    # link task: the noisy graph replaces the training graph, evaluation pairs are the true ones
    sp = None
    if split is not None:
        sp = dataclasses.replace(split, train=np.stack([s[s < r], r[s < r]], 1))
    out = train_central(g, xn, cfg, sp, y_train=yn if cfg.task == "node" else None, mean_field_q=q)
    out["sigma"] = sigma
    out["noisy_edges"] = int(s.size // 2)
    return out
