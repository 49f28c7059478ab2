"""Random edge splits for link prediction (host side): train / val / test edges plus negatives.

Like PyG's `train_test_split_edges` (Lumos uses 80/5/15): undirected edges are shuffled with a
seed and cut by fraction; validation and test negatives are sampled uniformly among vertex
pairs that are not edges of the full graph (and not self-pairs), as many as the positives.
`train_negatives=True` also draws a fixed set of training negatives (OpenFGL's link prediction
keeps one such set for the whole run), disjoint from the evaluation negatives. On a graph too
dense or too small to hold that many non-edges (a small client's subgraph), every non-edge is
used: a split then has fewer negatives than positives, never an error.

Shapes: N nodes, E directed edges, M undirected pairs, k pairs of one part.
"""
from __future__ import annotations

import dataclasses

import numpy as np


@dataclasses.dataclass(frozen=True)
class EdgeSplit:
    """An edge split for link prediction: undirected pairs (u, v) with u < v, int64 `[k, 2]` each.

    Attributes:
        num_nodes: N, the graph's node count.
        train: int64 `[k_train, 2]`, the training edges.
        val_pos: int64 `[k_val, 2]`, the validation edges.
        val_neg: int64 `[k_val, 2]` (fewer when non-edges run out), validation non-edges.
        test_pos: int64 `[k_test, 2]`, the test edges.
        test_neg: int64 `[k_test, 2]`, test non-edges.
        train_neg: int64 `[k_train, 2]` fixed training non-edges (train_negatives=True), else None.
    """

    num_nodes: int
    train: np.ndarray
    val_pos: np.ndarray
    val_neg: np.ndarray
    test_pos: np.ndarray
    test_neg: np.ndarray
    train_neg: np.ndarray = None   # fixed training negatives (train_negatives=True), else None

    def train_directed(self) -> tuple[np.ndarray, np.ndarray]:
        """Training edges in both directions (senders, receivers) int32."""
        s = np.concatenate([self.train[:, 0], self.train[:, 1]]).astype(np.int32)
        r = np.concatenate([self.train[:, 1], self.train[:, 0]]).astype(np.int32)
        return s, r


def undirected_pairs(senders, receivers) -> np.ndarray:
    """Unique (u, v), u < v, from a directed or undirected list (self-loops dropped) -> int64 [M, 2]."""
    s, r = np.asarray(senders, np.int64), np.asarray(receivers, np.int64)
    keep = s != r
    lo, hi = np.minimum(s, r)[keep], np.maximum(s, r)[keep]
    pairs = np.unique(np.stack([lo, hi], 1), axis=0)
    return pairs.reshape(-1, 2)


def sample_non_edges(num_nodes: int, count: int, forbidden: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """`count` distinct pairs (u < v) that are not in `forbidden` (sorted int64 keys u*N+v)."""
    if count > num_nodes * (num_nodes - 1) // 2 - forbidden.size:
        raise ValueError(f"sample_non_edges: cannot draw {count} non-edges from a graph with {num_nodes} nodes")
    if 2 * count > num_nodes * (num_nodes - 1) // 2 - forbidden.size:
        # most of the non-edges are wanted (a small or dense graph): list them all rather than
        # rejection-sample (which would wait for the last few to be hit)
        lo, hi = np.triu_indices(num_nodes, 1)
        key = lo.astype(np.int64) * num_nodes + hi
        key = key[~np.isin(key, forbidden)]
        got = rng.permutation(key)[:count]
        return np.stack([got // num_nodes, got % num_nodes], 1)
    got = np.zeros(0, np.int64)
    while got.size < count:
        need = 2 * (count - got.size) + 16
        u, v = rng.integers(0, num_nodes, need), rng.integers(0, num_nodes, need)
        lo, hi = np.minimum(u, v), np.maximum(u, v)
        key = lo * num_nodes + hi
        key = key[(lo != hi)]
        pos = np.searchsorted(forbidden, key)
        hit = (pos < forbidden.size) & (forbidden[np.minimum(pos, max(forbidden.size - 1, 0))] == key)
        got = np.unique(np.concatenate([got, key[~hit]]))
    got = rng.permutation(got)[:count]
    return np.stack([got // num_nodes, got % num_nodes], 1)


def random_edge_split(senders, receivers, num_nodes: int, train: float = 0.8, val: float = 0.05,
                      test: float = 0.15, seed: int = 0, train_negatives: bool = False) -> EdgeSplit:
    """Split the undirected edges into train/val/test by fraction (must sum to 1 within 1e-6):
    round(val * M) validation and round(test * M) test edges, the rest training edges, so every
    edge is in exactly one part. Negatives: as many as the positives of each part (val, test, and
    train when `train_negatives`), distinct, never an edge; capped by the non-edges there are.

    Args:
        senders: int `[E]` edge sources (either or both directions; merged into M undirected pairs).
        receivers: int `[E]` edge targets.
        num_nodes: N.
        train: the training fraction in [0, 1].
        val: the validation fraction in [0, 1].
        test: the test fraction in [0, 1].
        seed: the seed of `np.random.default_rng` (an int or a sequence, e.g. (seed, client)).
        train_negatives: also sample fixed training negatives.

    Returns:
        An `EdgeSplit` of int64 `[k, 2]` pair arrays.

    Raises:
        ValueError: a fraction outside [0, 1], or fractions not summing to 1.
    """
    for name, f in (("train", train), ("val", val), ("test", test)):
        if not 0.0 <= f <= 1.0:
            raise ValueError(f"random_edge_split: {name} fraction must be in [0, 1], got {f}")
    if abs(train + val + test - 1.0) > 1e-6:
        raise ValueError(f"random_edge_split: fractions must sum to 1, got {train}+{val}+{test}")
    pairs = undirected_pairs(senders, receivers)
    rng = np.random.default_rng(seed)
    perm = rng.permutation(pairs.shape[0])
    n_val = int(round(val * pairs.shape[0]))
    n_test = int(round(test * pairs.shape[0]))
    va, te, tr = perm[:n_val], perm[n_val:n_val + n_test], perm[n_val + n_test:]
    forbidden = np.sort(pairs[:, 0] * num_nodes + pairs[:, 1])
    free = num_nodes * (num_nodes - 1) // 2 - forbidden.size   # non-edges there are
    neg = sample_non_edges(num_nodes, min(n_val + n_test, free), forbidden, rng)
    train_neg = None
    if train_negatives:
        taken = np.sort(np.concatenate([forbidden, neg[:, 0] * num_nodes + neg[:, 1]]))
        train_neg = sample_non_edges(num_nodes, min(len(tr), free - len(neg)), taken, rng)
    return EdgeSplit(num_nodes, pairs[tr], pairs[va], neg[:n_val], pairs[te], neg[n_val:], train_neg)
