"""Seeded train / validation / test node splits (host side, NumPy).

The graph-level functions return a copy of the graph with new masks and leave everything else alone.
Nodes with label -1 (no label) are never placed in any mask. The same seed always gives the
same masks (`numpy.random.default_rng(seed)`, consumed in a fixed order).

Shapes: N nodes.
"""
from __future__ import annotations

import math
import numbers
from typing import Optional

import numpy as np

from ..graph import Graph
from .paths import DataFormatError


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

    Args:
        graph: the graph; its labels y `[N]` (-1: unlabelled, never in a mask).
        num_train_per_class: the training cap per class, a positive integer.
        num_val: the validation cap, >= 0.
        num_test: the test cap, >= 0; None: every remaining labelled node.
        seed: the shuffling seed, >= 0.

    Returns:
        The graph with its bool `[N]` masks replaced.

    Raises:
        ValueError: a count or seed that is not a (non-negative, or for the cap positive) integer.
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


# OpenFGL's default per-client fractions (its NodeClsTask.default_train_val_test_split), by the
# dataset names fgl_jax loads them under.
OPENFGL_FRACTIONS = {
    **{name: (0.2, 0.4, 0.4) for name in ("cora", "citeseer", "pubmed", "cs", "physics", "photo", "computers")},
    **{name: (0.48, 0.32, 0.2) for name in ("chameleon", "squirrel")},
    "ogbn-arxiv": (0.6, 0.2, 0.2),
    "ogbn-products": (0.1, 0.05, 0.85),
    **{name: (0.5, 0.25, 0.25) for name in ("roman-empire", "amazon-ratings", "tolokers", "actor", "questions",
                                             "minesweeper")},
}


def stratified_split(y: np.ndarray, num_classes: int, train: float = 0.6, val: float = 0.2, test: float = 0.2,
                     seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The default split of a user graph: per class, seeded, fractions of each class's labelled nodes.

    For each class c = 0..C-1 in order the class's nodes (ascending id) are permuted with one
    ``numpy.random.default_rng(seed)`` and cut at round(train * n_c) and round((train + val) * n_c);
    test takes the rest when the fractions sum to 1, else round(test * n_c) more. Every class
    with >= 1 node has >= 1 training node. Unlabelled nodes (y = -1) are in no mask.

    Returns bool [N] train, val, test masks (disjoint).
    """
    train, val, test = _fraction("train", train), _fraction("val", val), _fraction("test", test)
    if train <= 0 or train + val + test > 1 + 1e-9:
        raise ValueError(f"need train > 0 and train + val + test <= 1, got {train}, {val}, {test}")
    rng = np.random.default_rng(seed)
    n = y.shape[0]
    masks = [np.zeros(n, bool) for _ in range(3)]
    whole = abs(train + val + test - 1) <= 1e-9
    for c in range(num_classes):
        idx = rng.permutation(np.flatnonzero(y == c))
        nc = idx.size
        if nc == 0:
            continue
        a = max(1, int(round(train * nc)))
        b = min(nc, a + int(round(val * nc)))
        end = nc if whole else min(nc, b + int(round(test * nc)))
        masks[0][idx[:a]] = True
        masks[1][idx[a:b]] = True
        masks[2][idx[b:end]] = True
    return masks[0], masks[1], masks[2]


def openfgl_fractions(dataset: str) -> tuple[float, float, float]:
    """OpenFGL's default (train, val, test) fractions of each client's nodes for `dataset`."""
    key = dataset.lower()
    if key not in OPENFGL_FRACTIONS:
        raise ValueError(f"OpenFGL has no default split for dataset {dataset!r} (it has one for "
                         f"{sorted(OPENFGL_FRACTIONS)}); use split='per_client' with train/val/test_frac")
    return OPENFGL_FRACTIONS[key]


def per_client_split(graph: Graph, assignment: np.ndarray, num_clients: int, train: float = 0.2,
                     val: float = 0.4, test: float = 0.4, seed: int = 0) -> Graph:
    """OpenFGL's split: each client's nodes, class by class, into train/val/test fractions.

    Done after partitioning, per client k = 0..C-1 and per class c = 0..K-1 in that order: the
    client's nodes of class c (n of them, ascending global id) are shuffled and cut at
    int(train * n) and int((train + val) * n); test takes the next ones up to
    min(n, int((train + val + test) * n)). The products are taken in float32, as OpenFGL's
    `python float * torch int tensor` does, so the counts equal OpenFGL's for the same n (the node
    choice differs: OpenFGL shuffles with numpy's global RNG). Flooring per class leaves a few nodes
    of each class in no split when the fractions sum to < 1, and puts the rounding remainder into
    test when they sum to 1. Unlabelled nodes (label -1) are in no mask.

    Args:
      graph: Graph with y int32 [N]; assignment: int [N] client of each node (0..num_clients-1).
      train, val, test: fractions in [0, 1], train + val + test <= 1.
      seed: seed of the numpy Generator (one permutation per (client, class), in the order above).
    Returns:
      the graph with bool [N] masks replaced (global masks: the union of the clients').
    """
    train, val, test = _fraction("train", train), _fraction("val", val), _fraction("test", test)
    if train + val + test > 1.0 + 1e-9:
        raise ValueError(f"train + val + test fractions must sum to at most 1, got {train} + {val} + {test}")
    _count("seed", seed)
    num_clients = _count("num_clients", num_clients, allow_zero=False)
    assignment = np.asarray(assignment)
    if assignment.shape != (graph.num_nodes,):
        raise ValueError(f"assignment has shape {assignment.shape}, expected ({graph.num_nodes},)")
    if assignment.size and (assignment.min() < 0 or assignment.max() >= num_clients):
        raise ValueError(f"assignment holds client ids outside 0..{num_clients - 1}")
    cut1, cut2, cut3 = (np.float32(f) for f in (train, train + val, train + val + test))
    rng = np.random.default_rng(seed)
    masks = [np.zeros(graph.num_nodes, bool) for _ in range(3)]
    for k in range(num_clients):
        mine = assignment == k
        for c in range(graph.num_classes):
            idx = rng.permutation(np.flatnonzero(mine & (graph.y == c)))
            n = np.float32(idx.size)
            a, b = int(cut1 * n), int(cut2 * n)
            end = min(idx.size, int(cut3 * n))
            masks[0][idx[:a]] = True
            masks[1][idx[a:b]] = True
            masks[2][idx[b:end]] = True
    return graph.with_masks(*masks)


def fixed_split(graph: Graph, index: int) -> Graph:
    """`graph` with fixed split `index` of ``graph.meta["fixed_splits"]`` as its masks.

    Raises DataFormatError naming the count when the graph has no fixed splits or `index` is out of range.
    """
    splits = graph.meta.get("fixed_splits")
    if not splits:
        raise DataFormatError(f"{graph.meta.get('path', graph.name)}: --split-index {index}: the graph has no fixed "
                              "splits (only a heterophily .npz with train_masks/val_masks/test_masks [k, N] and a Geom-GCN "
                              "directory with <name>_split_0.6_0.2_<i>.npz files have)")
    k = splits["train"].shape[0]
    if not 0 <= index < k:
        raise DataFormatError(f"{graph.meta.get('path', graph.name)}: --split-index {index} is out of range: the file "
                              f"has {k} fixed splits (0..{k - 1})")
    out = graph.with_masks(splits["train"][index], splits["val"][index], splits["test"][index])
    out.meta["split"] = {"kind": "fixed", "index": int(index), "of": int(k)}
    return out
