"""Data perturbations for robustness studies (OpenFGL's `--processing` set), on the host.

Each function takes a `Graph`, a rate r in [0, 1] and a seed, and returns a new Graph; r = 0
returns the graph unchanged. The number of items changed is round(r * items), drawn uniformly
without replacement (so "rate r changes r of the items" holds exactly, not only on average):

    feature_sparsity  zero r of the nonzero feature entries (OpenFGL: r of each node's nonzeros)
    feature_noise     add N(0, std^2) to r of all feature entries (r = 1, std = s: OpenFGL's
                      random_feature_noise with noise_std s; the features become dense)
    topology_sparsity remove r of the undirected edges (both directions; self-loops kept)
    topology_noise    remove r of the undirected edges and add as many new random ones (node
                      pairs not already linked), so the edge count stays (OpenFGL removes r and
                      adds r as two independent draws)
    label_sparsity    drop r of the training nodes from the training mask (their labels unseen)
    label_noise       give r of the training nodes a uniformly drawn *different* class

Label perturbations act on training nodes only; validation and test labels stay clean.
Differences from OpenFGL (openfgl/data/processing.py): it perturbs each client's subgraph after
the partition (and caches the draw on disk); here the whole graph is perturbed once before the
partition (labels: right after the split), so the partition sees the perturbed topology.
"""
from __future__ import annotations

import dataclasses
import zlib

import numpy as np
import scipy.sparse as sp

from fgl_jax.graph import Graph

KINDS = ("feature_sparsity", "feature_noise", "topology_sparsity", "topology_noise", "label_sparsity",
         "label_noise")


def _rng(seed: int, kind: str) -> np.random.Generator:
    # one stream per kind, so the same seed perturbs features and edges independently
    return np.random.default_rng([int(seed), zlib.crc32(kind.encode())])


def _check(kind: str, rate: float) -> None:
    if not 0.0 <= rate <= 1.0:
        raise ValueError(f"{kind}: rate must be in [0, 1], got {rate}")


def _count(rate: float, n: int) -> int:
    return int(round(rate * n))


def feature_sparsity(graph: Graph, rate: float, seed: int = 0) -> Graph:
    """Zero round(rate * nnz) of the nonzero feature entries, chosen uniformly."""
    _check("feature_sparsity", rate)
    if rate == 0:
        return graph
    rng = _rng(seed, "feature_sparsity")
    if sp.issparse(graph.x):
        x = graph.x.tocsr(copy=True)
        nz = np.flatnonzero(x.data != 0)
        x.data[rng.choice(nz, _count(rate, nz.size), replace=False)] = 0
        x.eliminate_zeros()
    else:
        x = np.array(graph.x, copy=True)
        nz = np.flatnonzero(x.reshape(-1) != 0)
        x.reshape(-1)[rng.choice(nz, _count(rate, nz.size), replace=False)] = 0
    return dataclasses.replace(graph, x=x)


def feature_noise(graph: Graph, rate: float, seed: int = 0, std: float = 1.0) -> Graph:
    """Add N(0, std^2) noise to round(rate * N * F) feature entries, chosen uniformly (dense result)."""
    _check("feature_noise", rate)
    if std < 0:
        raise ValueError(f"feature_noise: std must be >= 0, got {std}")
    if rate == 0:
        return graph
    rng = _rng(seed, "feature_noise")
    x = graph.dense_x().copy()
    flat = x.reshape(-1)
    k = _count(rate, flat.size)
    idx = np.arange(flat.size) if k == flat.size else rng.choice(flat.size, k, replace=False)
    flat[idx] += (std * rng.standard_normal(idx.size)).astype(np.float32)
    return dataclasses.replace(graph, x=x)


def _pair_keys(graph: Graph) -> tuple[np.ndarray, np.ndarray]:
    """(key per directed edge, -1 for self-loops) and the unique undirected keys lo * N + hi."""
    s, r = graph.senders.astype(np.int64), graph.receivers.astype(np.int64)
    key = np.where(s != r, np.minimum(s, r) * graph.num_nodes + np.maximum(s, r), -1)
    return key, np.unique(key[key >= 0])


def _drop_pairs(graph: Graph, rate: float, rng: np.random.Generator) -> tuple[Graph, np.ndarray, int]:
    key, pairs = _pair_keys(graph)
    drop = rng.choice(pairs, _count(rate, pairs.size), replace=False)
    keep = ~np.isin(key, drop)
    out = dataclasses.replace(graph, senders=graph.senders[keep], receivers=graph.receivers[keep])
    return out, pairs, drop.size


def topology_sparsity(graph: Graph, rate: float, seed: int = 0) -> Graph:
    """Remove round(rate * U) of the U undirected edges (both directions)."""
    _check("topology_sparsity", rate)
    if rate == 0:
        return graph
    out, _pairs, _n = _drop_pairs(graph, rate, _rng(seed, "topology_sparsity"))
    return out


def topology_noise(graph: Graph, rate: float, seed: int = 0) -> Graph:
    """Replace round(rate * U) of the U undirected edges by as many new random node pairs."""
    _check("topology_noise", rate)
    if rate == 0:
        return graph
    rng = _rng(seed, "topology_noise")
    out, pairs, k = _drop_pairs(graph, rate, rng)
    n = graph.num_nodes
    if k > n * (n - 1) // 2 - pairs.size:
        raise ValueError(f"topology_noise: {graph.name!r} has too few unlinked node pairs to add {k} edges")
    taken = set(pairs.tolist())
    new: list[int] = []
    while len(new) < k:  # rejection sampling: graphs are sparse, so few draws are rejected
        u = rng.integers(0, n, 2 * (k - len(new)) + 16)
        v = rng.integers(0, n, u.size)
        for a, b in zip(np.minimum(u, v).tolist(), np.maximum(u, v).tolist()):
            if a != b and a * n + b not in taken:
                taken.add(a * n + b)
                new.append(a * n + b)
                if len(new) == k:
                    break
    lo, hi = np.divmod(np.asarray(new, np.int64), n)
    dtype = graph.senders.dtype
    return dataclasses.replace(out, senders=np.concatenate([out.senders, lo.astype(dtype), hi.astype(dtype)]),
                               receivers=np.concatenate([out.receivers, hi.astype(dtype), lo.astype(dtype)]))


def label_sparsity(graph: Graph, rate: float, seed: int = 0) -> Graph:
    """Remove round(rate * n_train) nodes from the training mask."""
    _check("label_sparsity", rate)
    if rate == 0:
        return graph
    rng = _rng(seed, "label_sparsity")
    train = np.flatnonzero(graph.train_mask)
    mask = graph.train_mask.copy()
    mask[rng.choice(train, _count(rate, train.size), replace=False)] = False
    return dataclasses.replace(graph, train_mask=mask)


def label_noise(graph: Graph, rate: float, seed: int = 0) -> Graph:
    """Give round(rate * n_train) training nodes a uniformly drawn class other than their own."""
    _check("label_noise", rate)
    if rate == 0:
        return graph
    if graph.num_classes < 2:
        raise ValueError(f"label_noise: {graph.name!r} has {graph.num_classes} class; nothing to flip to")
    rng = _rng(seed, "label_noise")
    train = np.flatnonzero(graph.train_mask & (graph.y >= 0))
    pick = rng.choice(train, _count(rate, train.size), replace=False)
    y = graph.y.copy()
    # y + s (mod K) with s uniform in 1..K-1 is uniform over the other classes
    y[pick] = (y[pick] + rng.integers(1, graph.num_classes, pick.size)) % graph.num_classes
    return dataclasses.replace(graph, y=y.astype(graph.y.dtype))


def perturb(graph: Graph, *, seed: int = 0, feature_noise_std: float = 1.0, **rates: float) -> Graph:
    """Apply the given perturbations (keyword = a name of KINDS, value = its rate) in KINDS order.

    Args:
        graph: the graph to perturb.
        seed: the seed; each kind draws from its own stream of it.
        feature_noise_std: the standard deviation of "feature_noise"'s Gaussian noise.
        **rates: kind=rate in [0, 1] for kinds of `KINDS` (feature_sparsity, feature_noise,
            topology_sparsity, topology_noise, label_sparsity, label_noise); 0 skips a kind.

    Returns:
        The perturbed graph (`graph` itself when every rate is 0).

    Raises:
        ValueError: an unknown kind, or a rate outside [0, 1].
    """
    unknown = set(rates) - set(KINDS)
    if unknown:
        raise ValueError(f"perturb: unknown perturbation(s) {sorted(unknown)}; known: {', '.join(KINDS)}")
    fns = {"feature_sparsity": feature_sparsity, "topology_sparsity": topology_sparsity,
           "topology_noise": topology_noise, "label_sparsity": label_sparsity, "label_noise": label_noise,
           "feature_noise": lambda g, r, s: feature_noise(g, r, s, std=feature_noise_std)}
    for kind in KINDS:
        if rates.get(kind, 0.0):
            graph = fns[kind](graph, rates[kind], seed)
    return graph


def normalize_features(graph: Graph, how: str = "row") -> Graph:
    """Row-normalise (PyG NormalizeFeatures) or standardise the features; CSR stays CSR.

    Args:
        graph: the graph whose features `x` `[N, F]` are transformed.
        how: "row" (each row divided by its L1 norm; all-zero rows stay zero), "standard" (each
            column to mean 0, sd 1; dense) or "none" (unchanged).

    Returns:
        The graph with the new features (float32).
    """
    if how == "none":
        return graph
    if how == "row":
        x = sp.csr_matrix(graph.x) if sp.issparse(graph.x) else np.asarray(graph.x, np.float32)
        s = np.asarray(abs(x).sum(1)).ravel()
        inv = np.where(s > 0, 1.0 / np.maximum(s, 1e-12), 0.0).astype(np.float32)
        x = (sp.diags(inv) @ x).tocsr().astype(np.float32) if sp.issparse(x) else x * inv[:, None]
    else:
        x = graph.dense_x()
        x = (x - x.mean(0)) / np.where(x.std(0) > 0, x.std(0), 1.0)
    return dataclasses.replace(graph, x=x)
