"""Contextual stochastic block model (CSBM): the embedded default dataset, no files needed.

Labels: `num_classes` near-equal classes (sizes differ by at most one), randomly assigned.

Features (dense, sparse_features=False): x_i = mu_{y_i} + eps_i with eps_i ~ N(0, I_F) and class
means mu_c = feature_signal * u_c, u_c a random unit vector. Projected on the direction between
two class means the classes are separated by about sqrt(2) * feature_signal noise standard
deviations, so feature_signal=1 gives features that are informative but far from sufficient,
and the graph has something to add.

Features (sparse_features=True): binary bag-of-words. Feature f is active in a node of class c
with probability sigmoid(logit(0.05) + feature_signal * z_{c,f}), z ~ N(0, 1): class-dependent
word frequencies at a density of a few percent (about 7.5% for feature_signal=1). Returned as float32 CSR.

Edges: a stochastic block model with one probability p_in for pairs in the same class and one
p_out for pairs in different classes, chosen so the expected mean degree is `avg_degree` and
the expected edge homophily (fraction of edges joining same-class nodes) is `homophily`:

    E = avg_degree * N / 2,  p_in = homophily * E / P_in,  p_out = (1 - homophily) * E / P_out,

with P_in / P_out the numbers of same-class / cross-class node pairs. Sampling is exact and
vectorised: the number of same-class edges is Binomial(P_in, p_in) and, given that number, the
edges are a uniformly random set of distinct same-class pairs (likewise for cross-class pairs);
that is precisely the distribution of independent Bernoulli(p) pairs, without visiting all
N^2 / 2 pairs. The graph is symmetric with no self-loops.

Labels, features, edges and the split use independent random streams derived from `seed`, so
changing e.g. `homophily` leaves the labels and features of a seed unchanged.
"""
from __future__ import annotations

import math
import numbers
from typing import Callable

import numpy as np
import scipy.sparse as sp

from ..graph import Graph, symmetrize, unique_keys
from .splits import random_split


def _pos_int(name: str, v: int, minimum: int = 1) -> int:
    if isinstance(v, bool) or not isinstance(v, numbers.Integral) or v < minimum:
        raise ValueError(f"csbm: {name} must be an integer >= {minimum}, got {v!r}")
    return int(v)


def _positive(where: str, name: str, value) -> float:
    """value as a float when it is a positive finite real number (not a bool), else a one-line
    ValueError naming `where` and `name`."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not (math.isfinite(value) and value > 0):
        raise ValueError(f"{where}: {name} must be a positive finite number, got {value!r}")
    return float(value)


def _real(name: str, v: float, lo: float, hi: float) -> float:
    if isinstance(v, bool) or not isinstance(v, numbers.Real) or not math.isfinite(v) or not lo <= v <= hi:
        raise ValueError(f"csbm: {name} must be a finite number in [{lo}, {hi}], got {v!r}")
    return float(v)


def _sample_pairs(rng: np.random.Generator, m: int, n: int, draw: Callable[[int], tuple[np.ndarray, np.ndarray]]
                  ) -> np.ndarray:
    """m distinct unordered pairs, uniformly at random among those `draw` produces.

    `draw(k)` returns k pairs (u, v) drawn uniformly from the valid ordered pairs (u != v), so
    the unordered keys are uniform too; duplicates are removed and more are drawn until m distinct
    keys are collected, then m of them are kept at random (np.unique sorts, so a plain
    truncation would favour small ids). Returns int64 keys lo * n + hi, [m].
    """
    keys = np.zeros(0, np.int64)
    while len(keys) < m:
        need = m - len(keys)
        u, v = draw(int(need * 1.1) + 16)
        keys = np.union1d(keys, np.minimum(u, v) * n + np.maximum(u, v))
    return rng.choice(keys, size=m, replace=False) if len(keys) > m else keys


def csbm(num_nodes: int = 1000, num_classes: int = 4, num_features: int = 64, avg_degree: float = 8.0,
         homophily: float = 0.8, feature_signal: float = 1.0, sparse_features: bool = False, seed: int = 0,
         name: str = "csbm") -> Graph:
    """Sample a CSBM graph (see the module docstring) with a seeded 60/20/20 random split.

    Args:
      num_nodes: N >= 2 * num_classes.
      num_classes: C >= 2.
      num_features: F >= 1.
      avg_degree: expected mean degree 2|E|/N, > 0; must be reachable (p_in, p_out <= 1).
      homophily: expected fraction of edges inside a class, in [0, 1].
      feature_signal: class-mean strength, >= 0 (0 = features carry no label information).
      sparse_features: binary float32 CSR bag-of-words instead of dense Gaussian features.
      seed: non-negative integer.

    Returns:
      Graph with x float32 [N, F] (or CSR), y int32 [N], symmetric senders/receivers int32
      without self-loops, masks from `random_split(0.6, 0.2, 0.2, seed)`.
    """
    n = _pos_int("num_nodes", num_nodes)
    c = _pos_int("num_classes", num_classes, minimum=2)
    f = _pos_int("num_features", num_features)
    if n < 2 * c:
        raise ValueError(f"csbm: num_nodes ({n}) must be at least 2 * num_classes ({2 * c}) so every class has a pair")
    avg_degree = _positive("csbm", "avg_degree", avg_degree)
    h = _real("homophily", homophily, 0.0, 1.0)
    signal = _real("feature_signal", feature_signal, 0.0, math.inf)
    seed = _pos_int("seed", seed, minimum=0)

    ss_labels, ss_feats, ss_edges, ss_split = np.random.SeedSequence(seed).spawn(4)

    # ---- labels: near-equal class sizes, random assignment
    y = np.random.default_rng(ss_labels).permutation(np.arange(n) % c).astype(np.int32)
    sizes = np.bincount(y, minlength=c).astype(np.int64)

    # ---- edge probabilities from (avg_degree, homophily)
    pairs_in_per_class = sizes * (sizes - 1) // 2
    p_in_total = int(pairs_in_per_class.sum())
    p_out_total = n * (n - 1) // 2 - p_in_total
    e = avg_degree * n / 2.0
    p_in, p_out = h * e / p_in_total, (1.0 - h) * e / p_out_total
    if p_in > 1.0 or p_out > 1.0:
        raise ValueError(
            f"csbm: avg_degree={avg_degree} with homophily={h} needs p_in={p_in:.3g}, p_out={p_out:.3g}; "
            "both must be <= 1 (lower avg_degree, or move homophily towards 1 - 1/num_classes)")

    rng = np.random.default_rng(ss_edges)
    m_in, m_out = int(rng.binomial(p_in_total, p_in)), int(rng.binomial(p_out_total, p_out))

    # Nodes grouped by class so a same-class pair is (class, two positions in that class).
    order = np.argsort(y, kind="stable")
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    class_p = pairs_in_per_class / p_in_total

    def draw_in(k: int) -> tuple[np.ndarray, np.ndarray]:
        # class chosen in proportion to its pair count, then an ordered pair of distinct members:
        # uniform over same-class unordered pairs
        cls = rng.choice(c, size=k, p=class_p)
        a = rng.integers(0, sizes[cls])
        b = rng.integers(0, sizes[cls])
        ok = a != b
        return order[offsets[cls] + a][ok], order[offsets[cls] + b][ok]

    def draw_out(k: int) -> tuple[np.ndarray, np.ndarray]:
        u, v = rng.integers(0, n, size=k), rng.integers(0, n, size=k)
        ok = y[u] != y[v]
        return u[ok], v[ok]

    keys = np.concatenate([_sample_pairs(rng, m_in, n, draw_in) if m_in else np.zeros(0, np.int64),
                           _sample_pairs(rng, m_out, n, draw_out) if m_out else np.zeros(0, np.int64)])
    s, r = symmetrize(keys // n, keys % n, n)

    # ---- features
    frng = np.random.default_rng(ss_feats)
    if sparse_features:
        logits = math.log(0.05 / 0.95) + signal * frng.standard_normal((c, f))
        prob = 1.0 / (1.0 + np.exp(-logits))
        x = sp.csr_matrix((frng.random((n, f)) < prob[y]).astype(np.float32))
    else:
        dirs = frng.standard_normal((c, f))
        means = signal * dirs / np.linalg.norm(dirs, axis=1, keepdims=True)
        x = (means[y] + frng.standard_normal((n, f))).astype(np.float32)

    empty = np.zeros(n, bool)
    g = Graph(name=name, senders=s, receivers=r, x=x, y=y, num_classes=c,
              train_mask=empty, val_mask=empty, test_mask=empty)
    split_seed = int(ss_split.generate_state(1)[0])
    return random_split(g, 0.6, 0.2, 0.2, seed=split_seed)


def block_csbm(num_nodes: int = 200_000, num_blocks: int = 200, num_classes: int = 47, num_features: int = 100,
               avg_degree: float = 50.5, homophily: float = 0.8, feature_signal: float = 1.0, seed: int = 0,
               train: float = 0.6, val: float = 0.2, test: float = 0.2, block_draws: int = 8_000_000,
               name: str = "block_csbm") -> Graph:
    """A CSBM with many small blocks (communities), fast at ogbn-products scale (2.4 M nodes, 62 M edges).

    Nodes fall into `num_blocks` near-equal blocks (communities); the label is block % num_classes,
    so a class is a union of communities and a partitioner that keeps communities whole keeps most
    edges, as on real graphs. Edges: an SBM with one probability for pairs inside a block and one
    for pairs across blocks, set so the expected mean degree is `avg_degree` and the expected
    fraction of edges inside a block is `homophily` (the module docstring's formulas, with blocks
    in place of classes). The numbers of inside / across edges are Binomial(P, p); the pairs are
    drawn uniformly in chunks of `block_draws` (int64 keys lo * N + hi, a few hundred MB per chunk),
    duplicates merged with one sort per pass and topped up until the count is reached (a second
    pass draws the ~p / 2 duplicates of the first), so the edge set is the SBM's exactly. Node ids are
    then permuted at random (ids carry no block information). Features: dense float32, class mean
    (`feature_signal` along a random unit direction per class) + N(0, I), written block by block.
    Split: `random_split(train, val, test)`.

    Args:
      num_nodes: N >= 2 * num_blocks.
      num_blocks: communities, >= 2.
      num_classes: C, 2 <= C <= num_blocks.
      num_features: F >= 1.
      avg_degree: expected mean degree 2|E|/N, > 0.
      homophily: expected fraction of edges inside a block, in [0, 1].
      feature_signal: class-mean strength, >= 0.
      seed: non-negative integer.
      train, val, test: split fractions (`random_split`).
      block_draws: pairs drawn per chunk (bounds the temporaries' memory).
      name: the graph's name.

    Returns:
      Graph with x float32 [N, F], y int32 [N], int32 senders/receivers (both directions of each
      pair, no self-loops, not sorted), random split masks.
    """
    n = _pos_int("num_nodes", num_nodes)
    nb = _pos_int("num_blocks", num_blocks, minimum=2)
    c = _pos_int("num_classes", num_classes, minimum=2)
    f = _pos_int("num_features", num_features)
    chunk = _pos_int("block_draws", block_draws)
    if n < 2 * nb:
        raise ValueError(f"block_csbm: num_nodes ({n}) must be at least 2 * num_blocks ({2 * nb})")
    if c > nb:
        raise ValueError(f"block_csbm: num_classes ({c}) must be at most num_blocks ({nb})")
    avg_degree = _positive("block_csbm", "avg_degree", avg_degree)
    h = _real("homophily", homophily, 0.0, 1.0)
    signal = _real("feature_signal", feature_signal, 0.0, math.inf)
    seed = _pos_int("seed", seed, minimum=0)
    ss_perm, ss_feats, ss_edges, ss_split = np.random.SeedSequence(seed).spawn(4)

    # blocks are contiguous id ranges before the final permutation: block b = [start[b], start[b+1])
    sizes = np.full(nb, n // nb, np.int64)
    sizes[: n % nb] += 1
    start = np.concatenate([[0], np.cumsum(sizes)])
    pairs_in = sizes * (sizes - 1) // 2
    p_in_total = int(pairs_in.sum())
    p_out_total = n * (n - 1) // 2 - p_in_total
    e = avg_degree * n / 2.0
    p_in, p_out = h * e / p_in_total, (1.0 - h) * e / p_out_total
    if p_in > 1.0 or p_out > 1.0:
        raise ValueError(f"block_csbm: avg_degree={avg_degree} with homophily={h} needs p_in={p_in:.3g}, "
                         f"p_out={p_out:.3g}; both must be <= 1 (fewer, larger blocks or a lower avg_degree)")
    rng = np.random.default_rng(ss_edges)
    m_in, m_out = int(rng.binomial(p_in_total, p_in)), int(rng.binomial(p_out_total, p_out))
    block_p = pairs_in / p_in_total

    def draw_in(k: int) -> np.ndarray:
        b = rng.choice(nb, size=k, p=block_p)
        u = start[b] + rng.integers(0, sizes[b])
        v = start[b] + rng.integers(0, sizes[b])
        ok = u != v
        # a pair inside one block: a cross-block key never collides with it
        return np.minimum(u, v)[ok] * n + np.maximum(u, v)[ok]

    def draw_out(k: int) -> np.ndarray:
        u, v = rng.integers(0, n, size=k), rng.integers(0, n, size=k)
        block = np.searchsorted(start, np.stack([u, v]), side="right") - 1
        ok = block[0] != block[1]
        return np.minimum(u, v)[ok] * n + np.maximum(u, v)[ok]

    def distinct(m: int, draw) -> np.ndarray:
        keys = np.zeros(0, np.int64)
        while len(keys) < m:
            need = m - len(keys)
            want = int(need * 1.02) + 16
            parts = [draw(min(chunk, want - i)) for i in range(0, want, chunk)]
            keys = unique_keys(np.concatenate([keys] + parts))
        # keep m of them uniformly (np.unique sorted them: a plain truncation would favour small ids)
        return rng.choice(keys, size=m, replace=False) if len(keys) > m else keys

    keys = np.concatenate([distinct(m_in, draw_in) if m_in else np.zeros(0, np.int64),
                           distinct(m_out, draw_out) if m_out else np.zeros(0, np.int64)])
    perm = np.random.default_rng(ss_perm).permutation(n).astype(np.int32)  # old id -> new id
    lo, hi = perm[keys // n], perm[keys % n]
    del keys
    senders, receivers = np.concatenate([lo, hi]), np.concatenate([hi, lo])
    del lo, hi
    block_of_old = np.repeat(np.arange(nb, dtype=np.int64), sizes)
    y = np.empty(n, np.int32)
    y[perm] = (block_of_old % c).astype(np.int32)

    frng = np.random.default_rng(ss_feats)
    dirs = frng.standard_normal((c, f))
    means = (signal * dirs / np.linalg.norm(dirs, axis=1, keepdims=True)).astype(np.float32)
    x = np.empty((n, f), np.float32)
    rows = max(1, chunk // max(f, 1))
    for i in range(0, n, rows):   # block by block: no float64 [N, F] temporary
        x[i:i + rows] = frng.standard_normal((min(rows, n - i), f), dtype=np.float32)
        x[i:i + rows] += means[y[i:i + rows]]
    empty = np.zeros(n, bool)
    g = Graph(name=name, senders=senders, receivers=receivers, x=x, y=y, num_classes=c,
              train_mask=empty, val_mask=empty, test_mask=empty)
    return random_split(g, train, val, test, seed=int(ss_split.generate_state(1)[0]))
