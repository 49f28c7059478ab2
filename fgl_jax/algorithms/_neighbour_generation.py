"""Pieces the missing-neighbour generators share (FedSage+'s NeighGen, FedDEP's DGen).

Both hide part of each client's nodes, learn from the impaired graph how many neighbours each
remaining node lost and what they looked like, and score generated neighbours with a greedy
(nearest-target) loss. FedSage+ and FedDEP both use these.

Host side (NumPy, once): `hide_validation_nodes`. Traced: the rest.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from fgl_jax.batch import ClientBatch
from fgl_jax.ops import SparseFeatures


def hide_validation_nodes(batch: ClientBatch, portion: float, num_pred: int, rng: np.random.Generator) -> dict:
    """Hide `portion` of each client's validation nodes and count what every kept node lost.

    batch: the padded client batch (host arrays [C, N, ...]). Returns (all [C, ...]):
    keep bool [C, N] (node in the impaired graph: real and not hidden), missing f32 [C, N] (number
    of hidden neighbours of a kept node; 0 for hidden and padded nodes), targets int32 [C, N, P]
    (local ids of the first P hidden neighbours, in increasing id order, 0-padded), nbr int32
    [C, N, D] / deg int32 [C, N] (each node's undirected neighbour set, for draws from a client)."""
    c, n = batch.num_clients, batch.num_nodes
    s_all, r_all = np.asarray(batch.graph.senders), np.asarray(batch.graph.receivers)
    em, vm, nm = np.asarray(batch.edge_mask), np.asarray(batch.val_mask), np.asarray(batch.node_mask)
    keep = nm.copy()
    nbrs = []
    for k in range(c):
        val = np.flatnonzero(vm[k])
        hide = rng.choice(val, int(portion * len(val)), replace=False) if len(val) else val
        keep[k, hide] = False
        s, r = s_all[k][em[k]], r_all[k][em[k]]
        loops = s != r
        s, r = np.concatenate([s[loops], r[loops]]), np.concatenate([r[loops], s[loops]])  # undirected sets
        key = np.unique(r.astype(np.int64) * n + s)
        nbrs.append([[] for _ in range(n)])
        for rv, sv in zip(key // n, key % n):
            nbrs[k][rv].append(int(sv))
    dmax = max(1, max(len(l) for cl in nbrs for l in cl))
    nbr = np.zeros((c, n, dmax), np.int32)
    deg = np.zeros((c, n), np.int32)
    missing = np.zeros((c, n), np.float32)
    targets = np.zeros((c, n, num_pred), np.int32)
    for k in range(c):
        for i, l in enumerate(nbrs[k]):
            deg[k, i] = len(l)
            nbr[k, i, :len(l)] = l
            if keep[k, i]:
                hidden = [j for j in l if not keep[k, j] and nm[k, j]]
                missing[k, i] = len(hidden)
                targets[k, i, :min(num_pred, len(hidden))] = hidden[:num_pred]
    return {"keep": keep, "missing": missing, "targets": targets, "nbr": nbr, "deg": deg}


def padded_rows(sel: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Host: the selected positions of each row of bool sel [C, N], as (rows int32 [C, T], mask [C, T])."""
    c = sel.shape[0]
    t = max(1, int(sel.sum(axis=1).max()))
    rows, mask = np.zeros((c, t), np.int32), np.zeros((c, t), bool)
    for k in range(c):
        idx = np.flatnonzero(sel[k])
        rows[k, :len(idx)], mask[k, :len(idx)] = idx, True
    return rows, mask


def dense_features(features, num_nodes: int, num_features: int) -> jax.Array:
    """One client's features as a dense [N, F] array (SparseFeatures scattered)."""
    if isinstance(features, SparseFeatures):
        return jnp.zeros((num_nodes, num_features), jnp.float32).at[features.row, features.col].add(features.val)
    return features


def impaired_batch(b: ClientBatch, keep: jax.Array) -> ClientBatch:
    """One client's graph without its hidden nodes (their edges dropped, out of every mask)."""
    s, r = b.graph.senders, b.graph.receivers
    return b.replace(edge_mask=b.edge_mask & keep[s] & keep[r], node_mask=b.node_mask & keep,
                     train_mask=b.train_mask & keep, val_mask=b.val_mask & keep, test_mask=b.test_mask & keep)


def greedy_loss(pred: jax.Array, pred_count: jax.Array, target: jax.Array, true_count: jax.Array,
                rows: jax.Array, denom: jax.Array) -> jax.Array:
    """1/(denom P) sum_i sum_{p < n_i} min_{k < m_i} mean_D (pred_ip - target_ik)^2 over rows i with m_i > 0.

    pred, target [T, P, D]; pred_count, true_count int [T] (clipped to [0, P]); rows bool [T];
    denom: the number of rows the mean is over (OpenFGL: every row, with or without a loss)."""
    t, p, d = pred.shape
    dist = (jnp.sum(pred ** 2, -1)[:, :, None] - 2.0 * jnp.einsum("tpd,tkd->tpk", pred, target)
            + jnp.sum(target ** 2, -1)[:, None, :]) / d                                  # [T, P, P]
    dist = jnp.where(jnp.arange(p)[None, None, :] < true_count[:, None, None], dist, jnp.inf)
    best = jnp.min(dist, axis=-1)                                                        # [T, P]
    use = (jnp.arange(p)[None, :] < pred_count[:, None]) & (true_count > 0)[:, None] & rows[:, None]
    return jnp.sum(jnp.where(use, best, 0.0)) / (jnp.maximum(denom, 1) * p)


def smooth_l1(pred: jax.Array, target: jax.Array, rows: jax.Array) -> jax.Array:
    """torch's smooth_l1_loss (beta 1), averaged over the rows where bool rows [T] is True."""
    diff = jnp.abs(pred - target)
    val = jnp.where(diff < 1.0, 0.5 * diff ** 2, diff - 0.5)
    return jnp.sum(jnp.where(rows, val, 0.0)) / jnp.maximum(rows.sum(), 1)
