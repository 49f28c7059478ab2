"""Seeded train / validation / test node splits (host side, NumPy).

Both functions return a copy of the graph with new masks and leave everything else alone.
Nodes with label -1 (no label) are never placed in any mask. The same seed always gives the
same masks (`numpy.random.default_rng(seed)`, consumed in a fixed order).
"""
from __future__ import annotations

import math
import numbers
from typing import Optional

import numpy as np

from ..graph import Graph


def _fraction(name: str, value: float) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
        raise ValueError(f"{name} fraction must be a finite number, got {value!r}")
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"{name} fraction must lie in [0, 1], got {value}")
    return float(value)


def _count(name: str, value: Optional[int], allow_zero: bool = True, allow_none: bool = False) -> Optional[int]:
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ValueError(f"{name} must be an integer, got {value!r}")
    if value < 0 or (value == 0 and not allow_zero):
        raise ValueError(f"{name} must be {'non-negative' if allow_zero else 'positive'}, got {value}")
    return int(value)


def random_split(graph: Graph, train: float = 0.6, val: float = 0.2, test: float = 0.2, seed: int = 0,
                 labelled_only: bool = True) -> Graph:
    """Uniformly random train/val/test masks with the given fractions (HiFGL's 60/20/20 default).

    Counts: n_train = round(train * n), n_val = round(val * n); n_test = the remaining nodes when
    the fractions sum to 1, else round(test * n). With labelled_only=True, n is the number of
    labelled nodes and only they are shuffled. With labelled_only=False, n is the number of all
    nodes and all nodes are shuffled (the counting PyG's RandomNodeSplit uses); unlabelled nodes
    that land in a split are then dropped from its mask, so masks may be slightly smaller.

    Args:
      graph: a Graph with y int32 [N].
      train, val, test: fractions in [0, 1], train > 0, train + val + test <= 1.
      seed: seed of the numpy Generator (one permutation).
    Returns:
      the graph with bool [N] masks replaced; disjoint by construction.
    """
    train, val, test = _fraction("train", train), _fraction("val", val), _fraction("test", test)
    if train <= 0:
        raise ValueError(f"train fraction must be positive, got {train}")
    total = train + val + test
    if total > 1.0 + 1e-9:
        raise ValueError(f"train + val + test fractions must sum to at most 1, got {train} + {val} + {test} = {total}")
    _count("seed", seed)
    labelled = graph.y >= 0
    pool = np.flatnonzero(labelled) if labelled_only else np.arange(graph.num_nodes)
    n = len(pool)
    n_train, n_val = int(round(train * n)), int(round(val * n))
    n_test = n - n_train - n_val if abs(total - 1.0) <= 1e-9 else int(round(test * n))
    n_test = max(0, min(n_test, n - n_train - n_val))
    if n_train == 0:
        raise ValueError(f"random_split: train fraction {train} of {n} {'labelled ' if labelled_only else ''}"
                         f"nodes in graph {graph.name!r} gives no training node")
    perm = np.random.default_rng(seed).permutation(pool)
    masks = []
    for idx in (perm[:n_train], perm[n_train:n_train + n_val], perm[n_train + n_val:n_train + n_val + n_test]):
        m = np.zeros(graph.num_nodes, bool)
        m[idx] = True
        masks.append(m & labelled)
    return graph.with_masks(*masks)


def per_class_split(graph: Graph, num_train_per_class: int, num_val: int, num_test: Optional[int] = None,
                    seed: int = 0) -> Graph:
    """PyG ``RandomNodeSplit(split="random")`` / FederatedScope's random Planetoid split.

    1. For each class c = 0..C-1 in order, shuffle its nodes and put the first
       min(num_train_per_class, |class c|) into train: a class smaller than the cap goes
       *entirely* to train and has no val/test nodes (HiFGL spec §4: Cora's classes of 217 and
       180 nodes with a cap of 232).
    2. Shuffle every remaining labelled node (all classes together), put the first num_val into
       val and the next num_test into test (num_test=None: all the rest). As in PyG, num_val and
       num_test are caps: if fewer nodes remain, val/test are simply smaller.

    FederatedScope's 6/2/2 settings: Cora (232, 542), CiteSeer (332, 665), PubMed (3943, 3943).

    Difference from PyG on CiteSeer: PyG gives the 15 featureless CiteSeer nodes label 0 (argmax
    of an all-zero row), so its class 0 has 264 nodes; here they have label -1 and are never in
    a mask, so class 0 has 249 nodes.

    Returns the graph with bool [N] masks replaced.
    """
    cap = _count("num_train_per_class", num_train_per_class, allow_zero=False)
    num_val = _count("num_val", num_val)
    num_test = _count("num_test", num_test, allow_none=True)
    _count("seed", seed)
    rng = np.random.default_rng(seed)
    y = graph.y
    n = graph.num_nodes
    train = np.zeros(n, bool)
    for c in range(graph.num_classes):
        idx = np.flatnonzero(y == c)
        train[rng.permutation(idx)[:cap]] = True
    rest = rng.permutation(np.flatnonzero((y >= 0) & ~train))
    val = np.zeros(n, bool)
    val[rest[:num_val]] = True
    test = np.zeros(n, bool)
    test[rest[num_val:] if num_test is None else rest[num_val:num_val + num_test]] = True
    return graph.with_masks(train, val, test)
