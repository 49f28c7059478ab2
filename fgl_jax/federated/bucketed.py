"""FedAvg / FedProx over size buckets: clients grouped by padded size, one shape per bucket.

With very unequal client sizes, one common padded size makes every small client pay for the
largest one (node padding ratio = C * N_max / N). `fgl_jax.batch.build_bucketed_batches`
groups clients so each is padded to < max_ratio x its own size; this round runs the usual
vmapped local update once per bucket (a static Python loop over a handful of buckets, traced
once: B shapes, B compiled client updates, still one program) and averages across buckets:

    w_global = sum_b sum_{c in b} n_c w_c / sum_b sum_{c in b} n_c         (FedAvg, McMahan et al.)

which is exactly the unbucketed FedAvg aggregate (padding is inert; tests/test_sharding.py
checks bucketed == unbucketed). Personalised variants (Local/FedPer) are not bucketed here.
"""
from __future__ import annotations

from typing import Any

import flax
import jax
import jax.numpy as jnp
import numpy as np

from fgl_jax.batch import build_bucketed_batches, padding_report, select_clients
from fgl_jax.federated.algorithm import FedData, FederatedAlgorithm
from fgl_jax.federated.fedavg_family import BaselineState
from fgl_jax.federated.config import FedConfig
from fgl_jax.federated.chunking import map_clients
from fgl_jax.federated.client import local_train, lr_scale, make_optimizer, node_loss_fn
from fgl_jax.federated.metrics import client_counts, pool
from fgl_jax.graph import Graph

PyTree = Any


@flax.struct.dataclass
class BucketedData:
    """One FedData per size bucket (each its own padded shape)."""
    buckets: tuple


def _bucket_fed_data(batch) -> FedData:
    counts = np.asarray(batch.train_mask).sum(axis=1) * np.asarray(batch.client_mask)
    index = np.flatnonzero(counts > 0).astype(np.int32)
    if index.size == 0:  # a bucket without training nodes: one inert client, weight 0
        index = np.zeros(1, np.int32)
    train = batch if index.size == batch.num_clients else select_clients(batch, index)
    return FedData(eval=batch, train=train, train_index=jnp.asarray(index),
                   train_weight=jnp.asarray(counts[index], jnp.float32))


def make_bucketed_data(graph: Graph, assignment: np.ndarray, num_clients: int,
                       max_ratio: float = 2.0) -> tuple[BucketedData, dict]:
    """Partitioned graph -> (BucketedData, padding report of the buckets' training clients)."""
    buckets = [_bucket_fed_data(b) for _, b in build_bucketed_batches(graph, assignment, num_clients, max_ratio)]
    if sum(float(np.asarray(d.train_weight).sum()) for d in buckets) == 0:
        raise ValueError("no client holds a training node: check the split masks")
    return BucketedData(tuple(buckets)), padding_report([d.eval for d in buckets])


def bucketed_baseline(model, cfg: FedConfig) -> FederatedAlgorithm:
    """FederatedAlgorithm for FedAvg / FedProx on BucketedData (state: BaselineState with
    `opt` a tuple of per-bucket optimiser states [C_t_b, ...])."""
    if cfg.algorithm not in ("fedavg", "fedprox"):
        raise ValueError(f"bucketed_baseline supports 'fedavg' and 'fedprox', got algorithm={cfg.algorithm!r}")
    optimizer = make_optimizer(cfg.optim, lr=1.0)
    loss_fn = node_loss_fn(model)
    use_prox = cfg.algorithm == "fedprox"

    def init(key, data: BucketedData) -> BaselineState:
        one = jax.tree.map(lambda a: a[0], data.buckets[0].eval)
        params = model.init({"params": key, "dropout": key}, one, train=False)
        stack = lambda t, n: jax.tree.map(lambda a: jnp.broadcast_to(a, (n,) + a.shape), t)
        opt = tuple(stack(optimizer.init(params), d.train.num_clients) for d in data.buckets)
        hp = {"lr": jnp.float32(cfg.optim.lr), "prox_mu": jnp.float32(cfg.prox_mu)}
        return BaselineState(round=jnp.zeros((), jnp.int32), server=params, personal=None, opt=opt, hp=hp)

    def round_fn(state: BaselineState, data: BucketedData, key: jax.Array):
        scale = state.hp["lr"] * lr_scale(cfg.optim, state.round)
        prox = state.hp["prox_mu"] if use_prox else None
        train = lambda p, o, b, k, a: local_train(loss_fn, optimizer, cfg.local_steps, p, o, b, k, scale, prox, a)
        wsum = jax.tree.map(jnp.zeros_like, state.server)
        wtot, loss_sum, opts = jnp.float32(0.0), jnp.float32(0.0), []
        for b, d in enumerate(data.buckets):  # static: a few buckets, each its own shape
            ct = d.train.num_clients
            start = jax.tree.map(lambda a: jnp.broadcast_to(a, (ct,) + a.shape), state.server)
            opt = jax.vmap(optimizer.init)(start) if cfg.reset_optimizer else state.opt[b]
            keys = jax.random.split(jax.random.fold_in(key, b), ct)
            new, opt, losses = map_clients(train, cfg.client_chunk)(start, opt, d.train, keys, start)
            w = d.train_weight
            wsum = jax.tree.map(lambda s, x: s + jnp.tensordot(w, x, axes=1), wsum, new)
            wtot, loss_sum = wtot + w.sum(), loss_sum + (losses * w).sum()
            opts.append(opt)
        server = jax.tree.map(lambda s: s / jnp.maximum(wtot, 1e-12), wsum)

        def one(p, b):
            return client_counts(model.apply(p, b, train=False), b.y, b)
        counts = [map_clients(one, cfg.client_chunk, in_axes=(None, 0))(server, d.eval) for d in data.buckets]
        counts = jax.tree.map(lambda *xs: jnp.concatenate(xs), *counts)
        metrics = pool(counts, jnp.concatenate([d.eval.client_mask for d in data.buckets]))
        metrics["train_loss"] = loss_sum / jnp.maximum(wtot, 1e-12)
        metrics["lr"] = scale
        return BaselineState(round=state.round + 1, server=server, personal=None, opt=tuple(opts),
                             hp=state.hp), metrics

    return FederatedAlgorithm(init=init, round=round_fn)
