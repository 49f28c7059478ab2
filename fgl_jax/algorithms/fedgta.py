"""FedGTA (Li et al., VLDB 2024, "FedGTA: Topology-aware Averaging for Federated Graph Learning").

A personalised aggregation. After local training each client i

1. propagates its model's soft labels over its subgraph (non-parametric label propagation, K steps):
       Y_0 = softmax(f(X)) on the training nodes, 0 elsewhere,
       Y_k = clip(alpha * D^-1/2 A D^-1/2 Y_{k-1} + (1 - alpha) * Y_0, 0, 1)
   (A without self-loops, D its degrees; PyG's LabelPropagation);
2. uploads the mixed moments of the propagated labels, m_i = [raw moments E_v[P^p], central moments
   E_v[(P - E_v P)^p]] for p = 1..P over its nodes v (each [K], flattened to 2PK), where P =
   softmax(Y_K) with the training nodes' rows replaced by their one-hot labels;
3. and its local smoothing confidence
       w_i = sum_v d_v * (K / e + sum_k Q_vk log(Q_vk + 1e-8)),   Q = softmax(Y_K / T) (labels on
   training nodes), d_v = in- plus out-degree: large when the propagated labels are sharp.
The server gives every participating client i its own model,
       theta_i = sum_{j in S_i} w_j theta_j / sum_{j in S_i} w_j,   S_i = {j : cos(m_i, m_j) > tau},
over this round's participants j (i itself is always in S_i), which i starts from next round.
Clients are evaluated with the model they trained this round (as OpenFGL's local_model_on_local_data).

Follows OpenFGL (openfgl/flcore/fedgta, the paper's authors' code) in every step; defaults are its
config (K=5, alpha=0.5, T=20, P=10, hybrid moments, tau=0.5). Its LP input is the soft labels of
the training nodes only (mask=train_mask); the moments average over every node of the subgraph.
`fedgta_moment_type` raw / central keeps one half of the mixed moments (the code's options).
Padded nodes and edges are masked out of every sum (they would change the moments' means).

Server step: personalised aggregation only (no global model), so it does not go through
`fgl_jax.aggregators`; DP-FedAvg and `--server-opt` are refused.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Any

import flax
import jax
import jax.numpy as jnp

from fgl_jax import ops
from fgl_jax.algorithms._common import evaluate_round, init_params, round_start, scatter_clients, stack, weighted_loss
from fgl_jax.federated.algorithm import FedData, FederatedAlgorithm
from fgl_jax.federated.config import FedConfig
from fgl_jax.federated.chunking import map_clients
from fgl_jax.federated.client import local_train, make_optimizer, node_loss_fn
from fgl_jax.registry import register
from fgl_jax.schema import option

PyTree = Any
MOMENT_TYPES = ("hybrid", "raw", "central")


@dataclasses.dataclass(frozen=True)
class FedGTAHParams:
    fedgta_prop_steps: int = option(5, "FedGTA label-propagation steps K", low=1)
    fedgta_lp_alpha: float = option(0.5, "FedGTA label-propagation alpha (weight of the propagated part)",
                                    low=0, high=1)
    fedgta_temperature: float = option(20.0, "FedGTA temperature T of the smoothing-confidence softmax",
                                       low=0, low_open=True)
    fedgta_num_moments: int = option(10, "FedGTA moment orders P (1..P)", low=1)
    fedgta_moment_type: str = option("hybrid", "FedGTA moments: hybrid (raw and central, the paper's mixed "
                                     "moments), raw or central", choices=MOMENT_TYPES)
    fedgta_accept_alpha: float = option(0.5, "FedGTA similarity threshold tau: client j joins i's aggregate "
                                        "when cos(m_i, m_j) > tau", low=-1, high=1)


@flax.struct.dataclass
class FedGTAState:
    round: jax.Array      # int32 scalar: rounds done
    personal: PyTree      # every client's personalised aggregate [C, ...] (its next starting point)
    trained: PyTree       # every client's last locally trained model [C, ...] (what it is evaluated with)
    opt: PyTree           # client optimiser states [C_t, ...]
    hp: dict              # traced: lr


def label_propagation(y0: jax.Array, senders: jax.Array, receivers: jax.Array, edge_mask: jax.Array,
                      steps: int, alpha: float) -> jax.Array:
    """Y_K of the module docstring from Y_0 [N, K] (already zero outside the seed nodes)."""
    n = y0.shape[0]
    res = (1.0 - alpha) * y0

    def step(y, _):
        y = alpha * ops.gcn_propagate(y, senders, receivers, edge_mask, n, self_loop=False) + res
        return jnp.clip(y, 0.0, 1.0), None

    return jax.lax.scan(step, y0, None, length=steps)[0]


def mixed_moments(p: jax.Array, node_mask: jax.Array, num_moments: int, kind: str = "hybrid") -> jax.Array:
    """[raw; central] moments of orders 1..P of p [N, K] over the masked nodes, flattened ([2PK] or [PK])."""
    w = node_mask.astype(p.dtype)[:, None]
    n = jnp.maximum(w.sum(), 1.0)
    mean = (p * w).sum(0) / n
    orders = jnp.arange(1, num_moments + 1, dtype=p.dtype)[:, None, None]            # [P, 1, 1]
    raw = ((p[None] ** orders) * w[None]).sum(1) / n                                 # [P, K]
    central = (((p - mean)[None] ** orders) * w[None]).sum(1) / n
    parts = {"hybrid": (raw, central), "raw": (raw,), "central": (central,)}[kind]
    return jnp.concatenate(parts).reshape(-1)


def smoothing_confidence(q: jax.Array, degree: jax.Array) -> jax.Array:
    """w = sum_v d_v (K/e + sum_k q_vk log(q_vk + 1e-8)) for q [N, K], degree [N] (0 on padding)."""
    k = q.shape[-1]
    return degree.sum() * k * math.exp(-1.0) + (degree * (q * jnp.log(q + 1e-8)).sum(-1)).sum()


def aggregation_weights(moments: jax.Array, confidence: jax.Array, accept: float) -> jax.Array:
    """W [C_t, C_t], row i = client i's aggregation weights over the participants (rows sum to 1)."""
    norm = jnp.maximum(jnp.linalg.norm(moments, axis=1), 1e-8)
    sim = (moments @ moments.T) / (norm[:, None] * norm[None, :])
    # i always accepts itself (cos = 1 > tau); set explicitly so rounding cannot drop it
    keep = (sim > accept) | jnp.eye(moments.shape[0], dtype=bool)
    w = keep * confidence[None, :]
    total = w.sum(1, keepdims=True)
    # all accepted clients with zero confidence (no edges): a plain mean over them, not 0/0 (OpenFGL: NaN)
    uniform = keep / keep.sum(1, keepdims=True)
    return jnp.where(total > 0, w / jnp.where(total > 0, total, 1.0), uniform)


def client_statistics(model, params: PyTree, batch, num_classes: int, hp: FedGTAHParams
                      ) -> tuple[jax.Array, jax.Array]:
    """(moments [M], confidence []) of one client's trained model on its padded subgraph."""
    s, r, m = batch.graph.senders, batch.graph.receivers, batch.edge_mask
    n = batch.y.shape[-1]
    logits = model.apply(params, batch, train=False)
    train = batch.train_mask[:, None]
    y0 = jnp.where(train, jax.nn.softmax(logits, -1), 0.0)
    out = label_propagation(y0, s, r, m, hp.fedgta_prop_steps, hp.fedgta_lp_alpha)
    onehot = jax.nn.one_hot(batch.y, num_classes, dtype=out.dtype)
    raw = jnp.where(train, onehot, jax.nn.softmax(out, -1))
    dis = jnp.where(train, onehot, jax.nn.softmax(out / hp.fedgta_temperature, -1))
    degree = ops.in_degree(r, m, n) + ops.in_degree(s, m, n)   # out-degree = in-degree of the senders
    return (mixed_moments(raw, batch.node_mask, hp.fedgta_num_moments, hp.fedgta_moment_type),
            smoothing_confidence(dis, degree))


@register("algorithm", "fedgta", hparams=FedGTAHParams,
          paper="Li, Wu, Zhang, Zhu, Li, Wang, VLDB 2024, arXiv:2401.11755",
          help="FedGTA: personalised aggregation weighted by label-propagation smoothing confidence "
               "over clients with similar label-propagation moments")
def fedgta(model, common: FedConfig, hp: FedGTAHParams) -> FederatedAlgorithm:
    optimizer = make_optimizer(common.optim, lr=1.0)
    loss_fn = node_loss_fn(model)
    num_classes = int(model.num_classes)

    def init(key: jax.Array, data: FedData) -> FedGTAState:
        params = init_params(model, key, data)
        c = data.eval.num_clients
        return FedGTAState(round=jnp.zeros((), jnp.int32), personal=stack(params, c), trained=stack(params, c),
                           opt=stack(optimizer.init(params), data.train.num_clients),
                           hp={"lr": jnp.float32(common.optim.lr)})

    def round_fn(state: FedGTAState, data: FedData, key: jax.Array):
        ct = data.train.num_clients
        start, opt, scale = round_start(optimizer, common, state, data,
                                        start=jax.tree.map(lambda a: a[data.train_index], state.personal))

        def client(p, o, b, k):
            p, o, first = local_train(loss_fn, optimizer, common.local_steps, p, o, b, k, scale)
            mom, conf = client_statistics(model, p, b, num_classes, hp)
            return p, o, first, mom, conf

        new, opt, losses, moments, confidence = map_clients(client, common.client_chunk)(
            start, opt, data.train, jax.random.split(key, ct))
        w = aggregation_weights(moments, confidence, hp.fedgta_accept_alpha)             # [C_t, C_t]
        agg = jax.tree.map(lambda x: jnp.tensordot(w, x, axes=1), new)
        trained = scatter_clients(state.trained, data.train_index, new)
        metrics = evaluate_round(model, common, data, personal=trained)
        metrics["train_loss"] = weighted_loss(losses, data.train_weight)
        metrics["lr"] = scale
        return FedGTAState(round=state.round + 1, personal=scatter_clients(state.personal, data.train_index, agg),
                           trained=trained, opt=opt, hp=state.hp), metrics

    def messages(s: FedGTAState):
        # up: the trained model, its label-propagation moments [M] and smoothing confidence [];
        # down: the client's personalised aggregate
        one = jax.tree.map(lambda a: a[0], s.personal)
        k = num_classes * hp.fedgta_num_moments * (2 if hp.fedgta_moment_type == "hybrid" else 1)
        return (one, jnp.zeros((k,), jnp.float32), jnp.zeros((), jnp.float32)), one

    return FederatedAlgorithm(init=init, round=round_fn, messages=messages)
