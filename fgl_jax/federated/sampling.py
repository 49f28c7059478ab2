"""Neighbour-sampled mini-batch local training (GraphSAGE-style fixed fan-outs) with static shapes.

A client too large for full-batch steps trains on mini-batches of `batch_size` seed nodes drawn
from its training nodes; each seed's L-hop computation tree is sampled on device from the
client's CSR with fan-outs (f_1, ..., f_L): f_1 neighbours of each seed, f_2 of each of those, ...
Every shape is fixed by (batch_size, fan-outs), so a local epoch stays one `lax.scan` over
mini-batches and the clients stay vmapped.

Sampling is **without replacement**: a node of degree d <= f contributes all its d neighbours
(the remaining f - d slots are masked), a node of degree d > f a uniformly random f-subset of its
neighbours (Floyd's algorithm, f draws per node, vectorised over nodes).

The mini-batch is a `ClientBatch` whose node slots are the computation tree laid out hop by
hop, [seeds B | hop 1: B f_1 | hop 2: B f_1 f_2 | ...], with one edge child -> parent per sampled
neighbour, features gathered from the client's rows, and `train_mask` = the real seeds. The model
runs on it unchanged. GCN's symmetric normalisation needs each slot's degree: a slot above the
last hop has its sampled children as in-edges (its true degree when f >= d); a last-hop slot has
no children, so it gets one self-edge weighted by its degree in the client's graph (`edge_mask`
is then float: an edge weight), which gives it the right degree and only changes the last-hop
slots' own outputs, which no seed reads. Hence, with every fan-out >= the maximum degree and one
mini-batch holding every training node, a GCN or GraphSAGE-mean step equals the full-batch step
(tests/test_sampling.py).

Shapes: C clients, N padded nodes, E padded edges per client, T padded training nodes per client,
B seeds per mini-batch, S = B (1 + f_1 + f_1 f_2 + ...) node slots, F features.
"""
from __future__ import annotations

import math
from typing import Optional, Sequence

import flax
import jax
import jax.numpy as jnp
import jraph
import numpy as np

from fgl_jax.batch import ClientBatch
from fgl_jax.ops import SparseFeatures

Array = jax.Array


@flax.struct.dataclass
class NeighbourSampler:
    """Per-client CSR and training nodes, stacked on the client axis, plus the static sampling plan.

    Attributes:
        indptr: int32 `[C, N + 1]`: node v's in-neighbours are `indices[indptr[v]:indptr[v + 1]]`.
        indices: int32 `[C, E]`: in-neighbour rows (edge senders) sorted by receiver; padding 0.
        train_nodes: int32 `[C, T]`: the client's training node rows, padded with 0.
        num_train: int32 `[C]`: how many of `train_nodes` are real.
        fanouts: neighbours sampled per node at each hop (static), one per model layer.
        batch_size: seed nodes per mini-batch (static).
        replace: sample with replacement (static; default False, see the module docstring).
    """

    indptr: Array
    indices: Array
    train_nodes: Array
    num_train: Array
    fanouts: tuple = flax.struct.field(pytree_node=False, default=(10, 5))
    batch_size: int = flax.struct.field(pytree_node=False, default=512)
    replace: bool = flax.struct.field(pytree_node=False, default=False)

    @property
    def num_minibatches(self) -> int:
        """Mini-batches per local epoch (static): ceil(T / batch_size)."""
        return max(1, math.ceil(self.train_nodes.shape[-1] / self.batch_size))


def parse_fanout(text: str) -> tuple[int, ...]:
    """'10,5' -> (10, 5).

    Args:
        text: comma-separated positive integers, one per model layer.

    Returns:
        The fan-outs as a tuple of ints.

    Raises:
        ValueError: one line naming the bad value.
    """
    try:
        out = tuple(int(t) for t in str(text).split(","))
    except ValueError:
        raise ValueError(f"fanout: expected comma-separated positive integers such as '10,5', got {text!r}") from None
    if not out or min(out) < 1:
        raise ValueError(f"fanout: expected comma-separated positive integers such as '10,5', got {text!r}")
    return out


def _dense_features(batch: ClientBatch) -> np.ndarray:
    """The batch's features as dense float32 `[C, N, F]` on the host (sampling gathers rows)."""
    x = batch.features
    if isinstance(x, SparseFeatures):
        row, col, val = (np.asarray(a) for a in (x.row, x.col, x.val))
        c, n = batch.y.shape
        f = int(col.max()) + 1 if col.size else 1
        out = np.zeros((c, n, f), np.float32)
        for i in range(c):  # padded entries have val 0: adding them is harmless
            np.add.at(out[i], (row[i], col[i]), val[i])
        return out
    if not hasattr(x, "shape") or np.ndim(x) != 3:
        raise ValueError(f"neighbour sampling needs dense or SparseFeatures client features, got {type(x).__name__}")
    return np.asarray(x)


def with_sampler(batch: ClientBatch, fanouts: Sequence[int], batch_size: int, replace: bool = False,
                 num_features: Optional[int] = None) -> ClientBatch:
    """`batch` with a `NeighbourSampler` attached (host side, once): local training then samples.

    Builds each client's CSR of in-neighbours from its padded edge list and lists its training
    nodes. Sparse features are made dense (rows are gathered per mini-batch).

    Args:
        batch: the clients, `[C, ...]` (node classification).
        fanouts: neighbours per node at each hop, one per model layer.
        batch_size: seed nodes per mini-batch, >= 1.
        replace: sample neighbours with replacement instead of without.
        num_features: F of sparse features (None: the largest column seen + 1).

    Returns:
        A `ClientBatch` equal to `batch` but with dense features and `sampler` set.

    Raises:
        ValueError: a bad fan-out or batch size (one line).
    """
    fanouts = tuple(int(f) for f in fanouts)
    if not fanouts or min(fanouts) < 1:
        raise ValueError(f"fanout: every fan-out must be a positive integer, got {fanouts!r}")
    if isinstance(batch_size, bool) or int(batch_size) < 1:
        raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}")
    s, r, m = (np.asarray(a) for a in (batch.graph.senders, batch.graph.receivers, batch.edge_mask))
    train = np.asarray(batch.train_mask) & np.asarray(batch.node_mask)
    c, n = train.shape
    e = s.shape[-1]
    indptr = np.zeros((c, n + 1), np.int32)
    indices = np.zeros((c, e), np.int32)
    counts = train.sum(axis=1)
    t = max(1, int(counts.max()))
    train_nodes = np.zeros((c, t), np.int32)
    for i in range(c):
        real = m[i].astype(bool)
        recv, send = r[i][real], s[i][real]
        order = np.argsort(recv, kind="stable")
        indices[i, :order.size] = send[order]
        indptr[i, 1:] = np.cumsum(np.bincount(recv, minlength=n))
        rows = np.flatnonzero(train[i])
        train_nodes[i, :rows.size] = rows
    features = batch.features
    if isinstance(features, SparseFeatures):
        dense = _dense_features(batch)
        if num_features is not None and dense.shape[-1] < num_features:
            dense = np.pad(dense, ((0, 0), (0, 0), (0, num_features - dense.shape[-1])))
        features = jax.device_put(dense)
    elif not (hasattr(features, "shape") and np.ndim(features) == 3):
        raise ValueError("neighbour sampling needs dense or SparseFeatures client features, got "
                         f"{type(features).__name__}")
    sampler = NeighbourSampler(indptr=jax.device_put(indptr), indices=jax.device_put(indices),
                               train_nodes=jax.device_put(train_nodes), num_train=jax.device_put(counts.astype(np.int32)),
                               fanouts=fanouts, batch_size=int(batch_size), replace=bool(replace))
    return batch.replace(features=features, sampler=sampler)


def sample_neighbours(indptr: Array, indices: Array, nodes: Array, fanout: int, key: Array,
                      replace: bool = False) -> tuple[Array, Array]:
    """`fanout` in-neighbours of each node of one client.

    Without replacement (default): all d neighbours when d <= fanout, else a uniform random
    `fanout`-subset (Floyd's algorithm: for j = d - f, ..., d - 1 draw t uniform in [0, j]; keep t
    unless already taken, then keep j). With replacement: `fanout` independent uniform draws.

    Args:
        indptr: int32 `[N + 1]`, the client's CSR offsets.
        indices: int32 `[E]`, the CSR's neighbour rows.
        nodes: int32 `[K]`, the nodes whose neighbours are drawn.
        fanout: f (static).
        key: PRNG key.
        replace: with replacement instead of without.

    Returns:
        `(neighbours int32 [K, f], mask bool [K, f])`; masked entries (d < f, or d = 0) are 0.
    """
    start, deg = indptr[nodes], indptr[nodes + 1] - indptr[nodes]
    k = nodes.shape[0]
    slot = jnp.arange(fanout, dtype=jnp.int32)
    if replace:
        pos = jnp.floor(jax.random.uniform(key, (k, fanout)) * deg[:, None]).astype(jnp.int32)
        pos = jnp.minimum(pos, jnp.maximum(deg[:, None] - 1, 0))
        mask = jnp.broadcast_to(deg[:, None] > 0, (k, fanout))
    else:
        u = jax.random.uniform(key, (fanout, k))

        def floyd(j, chosen):   # step j: draw among positions [0, d - f + j]
            top = deg - fanout + j                              # [K]
            t = jnp.minimum(jnp.floor(u[j] * (top + 1)).astype(jnp.int32), top)
            taken = ((chosen == t[:, None]) & (slot[None, :] < j)).any(axis=1)
            return chosen.at[:, j].set(jnp.where(taken, top, t))

        chosen = jax.lax.fori_loop(0, fanout, floyd, jnp.zeros((k, fanout), jnp.int32))
        few = deg[:, None] <= fanout                          # take every neighbour
        pos = jnp.where(few, slot[None, :], chosen)
        mask = slot[None, :] < jnp.minimum(deg, fanout)[:, None]
    nbr = indices[jnp.clip(start[:, None] + pos, 0, indices.shape[0] - 1)]
    return jnp.where(mask, nbr, 0), mask


def epoch_seeds(sampler: NeighbourSampler, key: Array) -> tuple[Array, Array]:
    """One epoch's seeds of one client: its training nodes in random order, cut into mini-batches.

    Args:
        sampler: one client's sampler (no client axis).
        key: PRNG key.

    Returns:
        `(seeds int32 [M, B], real bool [M, B])`, M = `sampler.num_minibatches`.
    """
    t = sampler.train_nodes.shape[0]
    mb, b = sampler.num_minibatches, sampler.batch_size
    valid = jnp.arange(t) < sampler.num_train
    order = jnp.argsort(jnp.where(valid, jax.random.uniform(key, (t,)), 2.0))  # real nodes first, shuffled
    order = jnp.pad(order, (0, mb * b - t)) if mb * b > t else order[:mb * b]
    real = (jnp.arange(mb * b) < sampler.num_train).reshape(mb, b)
    return sampler.train_nodes[order].reshape(mb, b), real


def sample_minibatch(batch: ClientBatch, seeds: Array, real: Array, key: Array) -> ClientBatch:
    """The sampled computation trees of `seeds` as a `ClientBatch` the models run on unchanged.

    Args:
        batch: one client's batch (no client axis) with `sampler` set (`with_sampler`).
        seeds: int32 `[B]` seed node rows.
        real: bool `[B]`, which seeds are real (the last mini-batch of an epoch may be short).
        key: PRNG key.

    Returns:
        A `ClientBatch` of S node slots (module docstring) and S - B (+ last-hop self-) edges; its
        `train_mask` marks the real seeds; features dense `[S, F]`; float `edge_mask`.
    """
    sp = batch.sampler
    rows, alive = [seeds], [real]
    send, recv, w = [], [], []
    frontier, fmask, offset = seeds, real, 0
    keys = jax.random.split(key, len(sp.fanouts))
    for hop, f in enumerate(sp.fanouts):
        nbr, nmask = sample_neighbours(sp.indptr, sp.indices, frontier, f, keys[hop], sp.replace)
        nmask = nmask & fmask[:, None]
        k = frontier.shape[0]
        child0 = offset + k
        send.append(child0 + jnp.arange(k * f, dtype=jnp.int32))          # child -> its parent
        recv.append(offset + jnp.repeat(jnp.arange(k, dtype=jnp.int32), f))
        w.append(nmask.reshape(-1).astype(jnp.float32))
        frontier, fmask, offset = nbr.reshape(-1), nmask.reshape(-1), child0
        rows.append(frontier)
        alive.append(fmask)
    # last hop: a self-edge weighted by the node's degree (GCN's normalisation reads it; no seed
    # reads the last-hop slots' outputs)
    k = frontier.shape[0]
    last = offset + jnp.arange(k, dtype=jnp.int32)
    deg = (sp.indptr[frontier + 1] - sp.indptr[frontier]).astype(jnp.float32)
    send.append(last)
    recv.append(last)
    w.append(jnp.where(fmask, deg, 0.0))
    rows, alive = jnp.concatenate(rows), jnp.concatenate(alive)
    senders, receivers, weight = jnp.concatenate(send), jnp.concatenate(recv), jnp.concatenate(w)
    s_slots = rows.shape[0]
    b = seeds.shape[0]
    seed_slot = jnp.arange(s_slots) < b
    graph = jraph.GraphsTuple(nodes=None, edges=None, senders=senders, receivers=receivers,
                              n_node=jnp.reshape(alive.sum().astype(jnp.int32), (1,)),
                              n_edge=jnp.reshape((weight > 0).sum().astype(jnp.int32), (1,)), globals=None)
    no = jnp.zeros(s_slots, bool)
    return ClientBatch(graph=graph, features=batch.features[rows] * alive[:, None].astype(batch.features.dtype),
                       y=batch.y[rows], node_mask=alive, edge_mask=weight, train_mask=seed_slot & alive,
                       val_mask=no, test_mask=no, node_ids=jnp.where(alive, batch.node_ids[rows], -1),
                       client_mask=batch.client_mask, pairs=None, sampler=None)


def sampled_step_count(epochs: int, batch: ClientBatch) -> Array:
    """Optimiser steps of `epochs` sampled local epochs of one client: epochs * ceil(T_c / B) (traced).

    Args:
        epochs: local epochs.
        batch: one client's batch with `sampler` set.

    Returns:
        float32 scalar.
    """
    sp = batch.sampler
    return epochs * jnp.ceil(sp.num_train / sp.batch_size).astype(jnp.float32)
