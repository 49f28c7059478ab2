"""GCFL (Xie, Ma, Liu, Yang, Yu, NeurIPS 2021, "Federated Graph Classification over Non-IID Graphs"):
clustered FL whose clusters split when their clients' updates disagree.

Every client holds its cluster's model. Each round the clients train from it and upload their
updates dW_i = W_i - W_cluster; then, cluster by cluster (Sattler et al.'s CFL criterion),
    mean_norm = || mean_{i in k} dW_i ||,   max_norm = max_{i in k} || dW_i ||,
and a cluster with mean_norm < eps1 (the federation is near a stationary point of its joint
objective) and max_norm > eps2 (some clients are not), more than two members, after the first
`gcfl_warmup` rounds, is bi-partitioned by the minimum cut of its clients' update similarity graph
(weights cos(dW_i, dW_j) + 1, Stoer-Wagner: `min_cut_side`). Each cluster then adds the mean of its
members' updates, weighted by training graphs, to its model.
The cluster assignment is state on the client axis (`GCFLState.cluster`, labels 0..C-1; a split
cluster keeps its label on the shore of its lowest-index client: `split_clusters`), so the
whole run stays one jitted program and resumes from a checkpoint like any other.

Differences from GCFL's code (github.com/Oxfordblue7/GCFL, server.py / training.py): none in the
criterion, the similarity (cosine + 1 of the flattened updates) or the cluster-wise weighted
update; its min cut is networkx's Stoer-Wagner, whose choice among equal-weight cuts may differ
from ours (any minimum cut is one). Statistics use the clients that trained this round (all of them
without client sampling, as GCFL). GCFL caches the models of split clusters for reporting; not here.
Defaults: eps1 = 0.05, eps2 = 0.1, 20 warm-up rounds (GCFL's main_oneDS.py). Evaluation: each
client's cluster model on its own graphs. No server aggregator (cluster-wise means in the clear).
"""
from __future__ import annotations

import dataclasses
from typing import Any

import flax
import jax
import jax.numpy as jnp
from jax.flatten_util import ravel_pytree

from fgl_jax.algorithms._common import evaluate_round, init_params, round_start, stack, weighted_loss
from fgl_jax.federated.algorithm import FedData, FederatedAlgorithm
from fgl_jax.federated.chunking import map_clients
from fgl_jax.federated.client import local_train, make_optimizer, node_loss_fn
from fgl_jax.federated.config import FedConfig
from fgl_jax.registry import register
from fgl_jax.schema import option

PyTree = Any


@dataclasses.dataclass(frozen=True)
class GCFLHParams:
    gcfl_eps1: float = option(0.05, "GCFL: split a cluster when the norm of its mean update is below this ...",
                              low=0)
    gcfl_eps2: float = option(0.1, "GCFL: ... and the largest client update norm is above this", low=0)
    gcfl_warmup: int = option(20, "GCFL: no split in the first this many rounds", low=0)


@flax.struct.dataclass
class GCFLState:
    round: jax.Array     # int32 scalar: rounds done
    models: PyTree       # every client's (= its cluster's) model [C, ...]
    cluster: jax.Array   # int32 [C] cluster label of each client (0..C-1)
    opt: PyTree          # client optimiser states [C_t, ...]
    hp: dict             # traced: lr


def min_cut_side(w: jax.Array, active: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Stoer-Wagner minimum cut of the graph on the `active` vertices with weights w [n, n]
    (symmetric, >= 0; the diagonal is ignored). Returns (side bool [n]: one shore, a non-empty
    proper subset of the active vertices when >= 2 are active; the cut weight)."""
    n = w.shape[0]
    act = active.astype(bool)
    off = 1.0 - jnp.eye(n, dtype=w.dtype)
    w = w * off * (act[:, None] & act[None, :])
    groups = jnp.eye(n, dtype=bool)

    def phase(_, carry):
        w, alive, groups, best, side = carry
        count = alive.sum()
        start = jnp.argmax(alive)
        in_a = jnp.zeros(n, bool).at[start].set(True)

        def add(_, c):
            in_a, conn, prev, last = c
            cand = alive & ~in_a
            v = jnp.argmax(jnp.where(cand, conn, -jnp.inf))
            go = cand.any()
            return (jnp.where(go, in_a.at[v].set(True), in_a), jnp.where(go, conn + w[v], conn),
                    jnp.where(go, last, prev), jnp.where(go, v, last))

        _, _, s, t = jax.lax.fori_loop(0, n - 1, add, (in_a, w[start], start, start))
        cut = jnp.where(alive, w[t], 0.0).sum()        # t's weight to everything else still alive
        run = count >= 2
        better = run & (cut < best)
        best, side = jnp.where(better, cut, best), jnp.where(better, groups[t], side)
        # merge t into s
        merged = w.at[s].add(w[t]).at[:, s].add(w[:, t])
        merged = merged.at[t].set(0.0).at[:, t].set(0.0).at[s, s].set(0.0)
        return (jnp.where(run, merged, w), jnp.where(run, alive.at[t].set(False), alive),
                jnp.where(run, groups.at[s].set(groups[s] | groups[t]), groups), best, side)

    init = (w, act, groups, jnp.asarray(jnp.inf, w.dtype), jnp.zeros(n, bool))
    _, _, _, best, side = jax.lax.fori_loop(0, n - 1, phase, init)
    return side & act, best


def split_clusters(dw: jax.Array, cluster: jax.Array, trained: jax.Array, allow: jax.Array, eps1, eps2
                   ) -> jax.Array:
    """GCFL's cluster step: new labels int32 [C] from the updates dw [C, P] (rows of clients that did
    not train are ignored: trained bool [C]), labels cluster [C], allow (bool scalar: past the warm-up).

    Clusters are visited in label order; a cluster that meets the criterion (module docstring) is cut
    by `min_cut_side` of its trained members' similarity cos + 1; the shore holding the member of
    lowest index keeps the label, the other shore takes the smallest unused label."""
    c = dw.shape[0]
    norms = jnp.linalg.norm(dw, axis=1)
    unit = dw / jnp.maximum(norms, 1e-12)[:, None]
    sim = unit @ unit.T + 1.0

    def visit(k, labels):
        members = (cluster == k) & trained
        size = members.sum()
        mean = (dw * members[:, None]).sum(0) / jnp.maximum(size, 1)
        mean_norm = jnp.linalg.norm(mean)
        max_norm = jnp.where(members, norms, -jnp.inf).max()
        split = allow & (size > 2) & (mean_norm < eps1) & (max_norm > eps2)

        def cut(labels):
            side, _ = min_cut_side(sim, members)
            first = jnp.argmax(members)
            moved = jnp.where(side[first], members & ~side, side)   # the shore without the first member
            used = jnp.zeros(c, bool).at[labels].set(True)
            fresh = jnp.argmin(used)
            return jnp.where(moved, fresh, labels).astype(labels.dtype)

        return jax.lax.cond(split, cut, lambda l: l, labels)

    return jax.lax.fori_loop(0, c, visit, cluster)


@register("algorithm", "gcfl", hparams=GCFLHParams, tasks=("node_cls", "graph_cls", "graph_reg"),
          paper="Xie, Ma, Liu, Yang, Yu, NeurIPS 2021, arXiv:2106.13423",
          help="GCFL: clusters of clients, bi-partitioned by update similarity when the mean update is small "
               "and the largest is not")
def gcfl(model, common: FedConfig, hp: GCFLHParams) -> FederatedAlgorithm:
    optimizer = make_optimizer(common.optim, lr=1.0)
    loss_fn = node_loss_fn(model)

    def init(key: jax.Array, data: FedData) -> GCFLState:
        params = init_params(model, key, data)
        c = data.eval.num_clients
        return GCFLState(round=jnp.zeros((), jnp.int32), models=stack(params, c), cluster=jnp.zeros(c, jnp.int32),
                         opt=stack(optimizer.init(params), data.train.num_clients),
                         hp={"lr": jnp.float32(common.optim.lr)})

    def round_fn(state: GCFLState, data: FedData, key: jax.Array):
        c, ct = data.eval.num_clients, data.train.num_clients
        start = jax.tree.map(lambda a: a[data.train_index], state.models)
        start, opt, scale = round_start(optimizer, common, state, data, start=start)
        train = lambda p, o, b, k: local_train(loss_fn, optimizer, common.local_steps, p, o, b, k, scale)
        new, opt, losses = map_clients(train, common.client_chunk)(start, opt, data.train, jax.random.split(key, ct))
        dw_t = jax.vmap(lambda a, b: ravel_pytree(a)[0] - ravel_pytree(b)[0])(new, start)       # [C_t, P]
        dw = jnp.zeros((c, dw_t.shape[1]), dw_t.dtype).at[data.train_index].set(dw_t)
        trained = jnp.zeros(c, bool).at[data.train_index].set(True)
        cluster = split_clusters(dw, state.cluster, trained, state.round + 1 > hp.gcfl_warmup,
                                 hp.gcfl_eps1, hp.gcfl_eps2)
        # each client's model += its cluster's update mean, weighted by training graphs (nodes)
        same = (cluster[:, None] == cluster[data.train_index][None, :]) * data.train_weight[None, :]   # [C, C_t]
        share = same / jnp.maximum(same.sum(1, keepdims=True), 1e-12)
        models = jax.tree.map(lambda m, n, s: m + jnp.tensordot(share, n - s, axes=1).astype(m.dtype),
                              state.models, new, start)
        metrics = evaluate_round(model, common, data, personal=models)
        metrics["train_loss"] = weighted_loss(losses, data.train_weight)
        metrics["lr"] = scale
        metrics["num_clusters"] = jnp.zeros(c, bool).at[cluster].set(True).sum().astype(jnp.float32)
        return GCFLState(round=state.round + 1, models=models, cluster=cluster, opt=opt, hp=state.hp), metrics

    # up: the update dW_i (model-sized); down: the cluster's model
    one = lambda s: jax.tree.map(lambda a: a[0], s.models)
    return FederatedAlgorithm(init=init, round=round_fn, messages=lambda s: (one(s), one(s)))
