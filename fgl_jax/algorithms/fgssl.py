"""FGSSL (Huang, Wan, Ye & Du, IJCAI 2023, "Federated Graph Semantic and Structural Learning").

FedAvg whose local objective calibrates the local model against the round's global model (fixed,
no gradient) on two augmented views of the client's graph: a weak one for the global model (edges
removed with probability 0.3, feature columns masked with probability 0.3) and a strong one for
the local model (0.8 / 0.5), drawn anew every local step (`fgl_jax.augment`). With z the local
model's node embeddings on the strong view and g the global model's on the weak view
(`nn.models.apply_with_embedding`, the penultimate layer):

- node-level semantics (FNSC): a supervised contrast over the training nodes, pulling z_i towards
  the global embeddings of its class and away from the other classes',
      L_FNSC = -mean_i mean_{j: y_j = y_i} log( e^{cos(z_i, g_j)/tau} / sum_k e^{cos(z_i, g_k)/tau} );
- graph-level structure (FGSD): each node's similarity distribution over its neighbourhood
  N(i) + {i}, p_ij = softmax_j(cos(h_i, h_j) / omega), distilled from the global model's to the
  local model's, L_FGSD = mean_i KL(p^g_i || p^z_i);

    loss = CE(clean graph) + fgssl_nsc * L_FNSC + fgssl_gsd * L_FGSD    (`fgssl_variant=paper`).

The server averages the models as FedAvg; the global model is evaluated (eval_mode=auto).

The paper's text was not reachable from this machine when this module was written: the two terms
follow its description (semantic contrast against the global model's class-consistent nodes, a
distilled neighbourhood similarity distribution) with the constants of the authors' code (InfoNCE
temperature 0.1, similarity temperature 4, asymmetric augmentations 0.3/0.3 vs 0.8/0.5); the
weights default to 1.

The authors' code (FederatedScope trainer) and OpenFGL's openfgl/flcore/fgssl compute both terms
but train with neither: their loss is CE + 0.1 * L_edge, an edge-wise distillation
    L_edge = sum_{(u,v) in E} KL( softmax(|g_u - g_v| / 0.1) || softmax(|z_u - z_v| / 0.1) ) / |E|
(softmax over the embedding dimensions, edges of the clean graph): `fgssl_variant=code`. In
OpenFGL z and g are the GCN's hidden layer (z after dropout, as its model returns it: the code
variant applies the run's dropout rate to z); in the authors' FederatedScope code they are the
models' outputs (logits) -- not offered.

Server step (`fgl_jax.aggregators`): the clients' models go through the run's aggregator.
"""
from __future__ import annotations

import dataclasses
from typing import Any

import flax
import jax
import jax.numpy as jnp

from fgl_jax.algorithms._common import aggregate, evaluate_round, init_params, round_start, stack, weighted_loss
from fgl_jax.augment import augment_batch
from fgl_jax.federated.algorithm import FedData, FederatedAlgorithm
from fgl_jax.federated.config import FedConfig, server_aggregator
from fgl_jax.federated.chunking import map_clients
from fgl_jax.federated.client import local_train, make_optimizer
from fgl_jax.federated.metrics import masked_cross_entropy
from fgl_jax.nn.layers import add_self_loops
from fgl_jax.nn.models import apply_with_embedding
from fgl_jax.registry import register
from fgl_jax.schema import option

PyTree = Any


@dataclasses.dataclass(frozen=True)
class FGSSLHParams:
    fgssl_variant: str = option("paper", "FGSSL local objective: paper (CE + FNSC + FGSD) or code (CE + 0.1 x the "
                                "edge-wise distillation the authors' code and OpenFGL train with)",
                                choices=("paper", "code"))
    fgssl_nsc: float = option(1.0, "FGSSL weight of the node semantic contrast FNSC (paper variant)", low=0,
                              traced=True)
    fgssl_gsd: float = option(1.0, "FGSSL weight of the graph structure distillation FGSD (paper variant)", low=0,
                              traced=True)
    fgssl_edge: float = option(0.1, "FGSSL weight of the edge-wise distillation (code variant)", low=0, traced=True)
    fgssl_tau: float = option(0.1, "FGSSL temperature of the semantic contrast", low=0, low_open=True, traced=True)
    fgssl_omega: float = option(4.0, "FGSSL temperature of the neighbourhood similarity distributions", low=0,
                                low_open=True, traced=True)
    fgssl_weak: tuple[float, ...] = option((0.3, 0.3), "FGSSL weak augmentation of the global model's view: (edge removal, "
                               "feature masking) probabilities")
    fgssl_strong: tuple[float, ...] = option((0.8, 0.5), "FGSSL strong augmentation of the local model's view: (edge removal, "
                                 "feature masking) probabilities")


@flax.struct.dataclass
class FGSSLState:
    round: jax.Array   # int32 scalar: rounds done
    server: PyTree     # the global model
    opt: PyTree        # client optimiser states [C_t, ...]
    hp: dict           # traced: lr and the fgssl_* weights and temperatures
    aggregator: PyTree = None  # the server aggregator's state (`fgl_jax.aggregators`)


def _unit(x: jax.Array) -> jax.Array:
    return x / jnp.maximum(jnp.linalg.norm(x, axis=-1, keepdims=True), 1e-12)


def semantic_contrast(z: jax.Array, g: jax.Array, y: jax.Array, mask: jax.Array, tau) -> jax.Array:
    """L_FNSC: z (local), g (global) [N, D], y [N], mask [N] (the nodes taking part); 0 if none."""
    sim = _unit(z) @ _unit(g).T / tau                                         # [N, N]
    m = mask.astype(bool)
    valid = m[:, None] & m[None, :]
    pos = valid & (y[:, None] == y[None, :])
    lse = jax.nn.logsumexp(jnp.where(valid, sim, -jnp.inf), axis=1, keepdims=True)
    log_prob = jnp.where(valid, sim - jnp.where(m[:, None], lse, 0.0), 0.0)
    per = jnp.where(pos, log_prob, 0.0).sum(1) / jnp.maximum(pos.sum(1), 1)
    mf = m.astype(z.dtype)
    return -(per * mf).sum() / jnp.maximum(mf.sum(), 1.0)


def _segment_log_softmax(x: jax.Array, seg: jax.Array, mask: jax.Array, n: int) -> jax.Array:
    """log softmax of x [E] within each segment (receiver), over the entries where mask [E]."""
    x = jnp.where(mask, x, -jnp.inf)
    top = jax.ops.segment_max(x, seg, num_segments=n)
    top = jnp.where(jnp.isfinite(top), top, 0.0)
    tot = jax.ops.segment_sum(jnp.where(mask, jnp.exp(x - top[seg]), 0.0), seg, num_segments=n)
    return jnp.where(mask, x - top[seg] - jnp.log(jnp.maximum(tot[seg], 1e-30)), 0.0)


def structure_distillation(z: jax.Array, g: jax.Array, senders: jax.Array, receivers: jax.Array,
                           edge_mask: jax.Array, node_mask: jax.Array, omega) -> jax.Array:
    """L_FGSD: mean over real nodes i of KL(p^g_i || p^z_i), p_i the softmax over j in N(i) + {i}
    (j a sender of an edge into i) of cos(h_i, h_j) / omega. z, g [N, D]."""
    n = z.shape[0]
    s, r, m = add_self_loops(senders, receivers, edge_mask.astype(bool), n, loop_mask=node_mask.astype(bool))
    def logp(h):
        u = _unit(h)
        return _segment_log_softmax((u[s] * u[r]).sum(-1) / omega, r, m, n)
    lg, lz = logp(g), logp(z)
    kl = jax.ops.segment_sum(jnp.where(m, jnp.exp(lg) * (lg - lz), 0.0), r, num_segments=n)
    nm = node_mask.astype(z.dtype)
    return (kl * nm).sum() / jnp.maximum(nm.sum(), 1.0)


def edge_distillation(z: jax.Array, g: jax.Array, senders: jax.Array, receivers: jax.Array,
                      edge_mask: jax.Array, tau: float = 0.1) -> jax.Array:
    """L_edge of the code variant: mean over real edges (u, v) of KL(softmax(|g_u - g_v|/tau) ||
    softmax(|z_u - z_v|/tau)), the softmax over the embedding dimensions."""
    lz = jax.nn.log_softmax(jnp.abs(z[senders] - z[receivers]) / tau, axis=-1)
    lg = jax.nn.log_softmax(jnp.abs(g[senders] - g[receivers]) / tau, axis=-1)
    kl = (jnp.exp(lg) * (lg - lz)).sum(-1)
    em = edge_mask.astype(z.dtype)
    return (kl * em).sum() / jnp.maximum(em.sum(), 1.0)


@register("algorithm", "fgssl", hparams=FGSSLHParams,
          paper="Huang, Wan, Ye & Du, IJCAI 2023, arXiv:2406.18937",
          help="FGSSL: FedAvg + node semantic contrast and structure distillation against the global model")
def fgssl(model, common: FedConfig, hp: FGSSLHParams) -> FederatedAlgorithm:
    optimizer = make_optimizer(common.optim, lr=1.0)
    aggregator = server_aggregator(common)
    num_features = int(common.model.in_dim if common.model is not None else model.in_dim)
    dropout = float(common.model.dropout if common.model is not None else getattr(model, "dropout", 0.0))
    for name in ("fgssl_weak", "fgssl_strong"):
        pair = getattr(hp, name)
        if len(pair) != 2 or not all(0.0 <= float(q) < 1.0 for q in pair):
            raise ValueError(f"FGSSL: {name} must be two probabilities in [0, 1) (edge removal, feature masking), "
                             f"got {pair!r}")
    (we, wf), (se, sf) = (tuple(map(float, hp.fgssl_weak)), tuple(map(float, hp.fgssl_strong)))
    code = hp.fgssl_variant == "code"

    def init(key: jax.Array, data: FedData) -> FGSSLState:
        params = init_params(model, key, data)
        names = ("fgssl_nsc", "fgssl_gsd", "fgssl_edge", "fgssl_tau", "fgssl_omega")
        return FGSSLState(round=jnp.zeros((), jnp.int32), aggregator=aggregator.init(params), server=params,
                          opt=stack(optimizer.init(params), data.train.num_clients),
                          hp={"lr": jnp.float32(common.optim.lr), **{k: jnp.float32(getattr(hp, k)) for k in names}})

    def round_fn(state: FGSSLState, data: FedData, key: jax.Array):
        ct = data.train.num_clients
        start, opt, scale = round_start(optimizer, common, state, data)
        h = state.hp

        def client(p, o, b, k):
            def loss(w, b, k):
                k_ce, k_weak, k_strong, k_loc, k_drop = jax.random.split(k, 5)
                logits = model.apply(w, b, train=True, rngs={"dropout": k_ce})
                ce = masked_cross_entropy(logits, b.y, b.train_mask)
                weak = augment_batch(b, k_weak, we, wf, num_features)
                strong = augment_batch(b, k_strong, se, sf, num_features)
                g, _ = apply_with_embedding(model, state.server, weak, train=False)
                g = jax.lax.stop_gradient(g)
                z, _ = apply_with_embedding(model, w, strong, train=True, rngs={"dropout": k_loc})
                s, r = b.graph.senders, b.graph.receivers
                if code:
                    if dropout > 0:   # OpenFGL's GCN returns its hidden layer after dropout
                        keep = jax.random.bernoulli(k_drop, 1.0 - dropout, z.shape)
                        z = jnp.where(keep, z / (1.0 - dropout), 0.0)
                    return ce + h["fgssl_edge"] * edge_distillation(z, g, s, r, b.edge_mask)
                nsc = semantic_contrast(z, g, b.y, b.train_mask, h["fgssl_tau"])
                gsd = structure_distillation(z, g, s, r, b.edge_mask, b.node_mask, h["fgssl_omega"])
                return ce + h["fgssl_nsc"] * nsc + h["fgssl_gsd"] * gsd

            return local_train(loss, optimizer, common.local_steps, p, o, b, k, scale)

        new, opt, losses = map_clients(client, common.client_chunk)(start, opt, data.train, jax.random.split(key, ct))
        server, agg = aggregate(aggregator, state.aggregator, new, data.train_weight, key, params=state.server)
        metrics = evaluate_round(model, common, data, server=server, trained=new)
        metrics["train_loss"] = weighted_loss(losses, data.train_weight)
        metrics["lr"] = scale
        return FGSSLState(round=state.round + 1, aggregator=agg, server=server, opt=opt, hp=state.hp), metrics

    return FederatedAlgorithm(init=init, round=round_fn, messages=lambda s: (s.server, s.server))
