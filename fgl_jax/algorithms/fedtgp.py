"""FedTGP (Zhang et al., AAAI 2024, "FedTGP: Trainable Global Prototypes with Adaptive-Margin-Enhanced
Contrastive Learning for Data and Model Heterogeneity in Federated Learning").

Clients as in FedProto (`fedproto.prototype_algorithm`): personal models, loss CE + lambda * MSE(z,
global prototype of the node's class), then class prototypes of their training nodes go up. The
server, instead of averaging them, trains global prototypes P = fc(relu(E W1 + b1)) (a class
embedding table E [K, D] and a 2-layer MLP, kept with its Adam state across rounds) for
`tgp_server_epochs` full-batch steps on the uploaded prototypes {(C_i^k, k)} with the
adaptive-margin contrastive loss

    L = mean_{(C, k)} CE( -(d(C, P_j) + delta [j = k])_j , k ),    d = Euclidean distance,
    delta = min(max_k gap_k, tau),  gap_k = min_{j != k} ||avg_k - avg_j||,

avg_k the mean of the uploaded prototypes of class k (a class with no other class to compare to
gets the smallest gap). The margin pushes each class's prototype further from the others' clusters.
All K generated prototypes go back to the clients. Inference uses each client's own logits (as
OpenFGL; the paper's test metric is the nearest prototype, not offered).

Differences from the official code (TsingZ0/FedTGP): it trains P with minibatch SGD for
server_epochs over the uploaded prototypes each round; here full-batch Adam steps (as OpenFGL).
The distance is sqrt(max(d^2, 1e-12)) (torch's sqrt of a rounding-negative d^2 gives NaN).

Differences from OpenFGL (openfgl/flcore/fedtgp), `tgp_variant=openfgl`: a client also uploads a zero
prototype for each class it lacks (trained on as if real); the class means avg_k are divided by the
number of clients once per class (a bug shrinking every gap, hence the margin, by C^(K-1)); and
the regulariser is the sum of per-class MSEs (`fedproto` proto_loss=per_class). OpenFGL's defaults:
10 server epochs, Adam lr 0.01 with the clients' weight decay, lambda 1.

Graph classification (`--task graph_cls`): as FedProto's, the prototypes are per-class mean graph
embeddings (the readout) over a client's training graphs.

Server step: trainable global prototypes (no global model), so it does not go through
`fgl_jax.aggregators`; DP-FedAvg and `--server-opt` are refused.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Any

import jax
import jax.numpy as jnp
import optax

from fgl_jax.algorithms.fedproto import prototype_algorithm
from fgl_jax.federated.config import FedConfig
from fgl_jax.registry import register
from fgl_jax.schema import option

PyTree = Any


@dataclasses.dataclass(frozen=True)
class FedTGPHParams:
    fedtgp_lambda: float = option(1.0, "FedTGP weight lambda of the prototype regulariser", low=0, traced=True)
    tgp_margin: float = option(100.0, "FedTGP margin threshold tau (the margin is min(max gap, tau))", low=0)
    tgp_server_epochs: int = option(100, "FedTGP server steps on the prototypes per round", low=1)
    tgp_server_lr: float = option(0.01, "FedTGP server Adam learning rate", low=0, low_open=True)
    tgp_variant: str = option("paper", "paper, or openfgl (zero uploads for missing classes, its class-mean "
                              "scaling, per-class MSE; see the module docstring)", choices=("paper", "openfgl"))


def init_generator(key: jax.Array, num_classes: int, dim: int, hidden: int) -> dict:
    """E ~ N(0, 1) (torch nn.Embedding); linear layers U(-1/sqrt(fan_in), 1/sqrt(fan_in)) (torch nn.Linear)."""
    k = jax.random.split(key, 5)
    u = lambda kk, shape, fan: jax.random.uniform(kk, shape, jnp.float32, -1.0, 1.0) / math.sqrt(fan)
    return {"emb": jax.random.normal(k[0], (num_classes, dim), jnp.float32),
            "w1": u(k[1], (dim, hidden), dim), "b1": u(k[2], (hidden,), dim),
            "w2": u(k[3], (hidden, dim), hidden), "b2": u(k[4], (dim,), hidden)}


def generate(gen: dict) -> jax.Array:
    """The global prototypes P [K, D]."""
    return jax.nn.relu(gen["emb"] @ gen["w1"] + gen["b1"]) @ gen["w2"] + gen["b2"]


def distances(x: jax.Array, p: jax.Array) -> jax.Array:
    """Euclidean distances [M, K] between rows of x [M, D] and p [K, D]."""
    d2 = (x ** 2).sum(1, keepdims=True) - 2.0 * x @ p.T + (p ** 2).sum(1)[None, :]
    return jnp.sqrt(jnp.maximum(d2, 1e-12))


def adaptive_margin(avg: jax.Array, present: jax.Array, tau: float) -> jax.Array:
    """min(max_k gap_k, tau), gap_k = min distance from class mean k to another present class mean;
    classes without such a neighbour take the smallest gap (1e9 when no class has one, as the code)."""
    k = avg.shape[0]
    d = jnp.sqrt(jnp.maximum(((avg[:, None, :] - avg[None, :, :]) ** 2).sum(-1), 0.0))
    pair = present[:, None] & present[None, :] & ~jnp.eye(k, dtype=bool)
    gap = jnp.where(pair, d, 1e9).min(1)
    gap = jnp.where(gap > 1e8, gap.min(), gap)
    return jnp.minimum(gap.max(), tau)


def margin_loss(gen: dict, x: jax.Array, y: jax.Array, valid: jax.Array, margin: jax.Array) -> jax.Array:
    """Mean over valid uploaded prototypes x [M, D] (labels y [M]) of CE(-(d + margin * onehot), y)."""
    p = generate(gen)
    onehot = jax.nn.one_hot(y, p.shape[0], dtype=x.dtype)
    logits = -(distances(x, p) + margin * onehot)
    ce = optax.softmax_cross_entropy_with_integer_labels(logits, y)
    v = valid.astype(x.dtype)
    return (ce * v).sum() / jnp.maximum(v.sum(), 1.0)


@register("algorithm", "fedtgp", hetero=True, hparams=FedTGPHParams, tasks=("node_cls", "graph_cls"),
          paper="Zhang, Hua, Cao, Wang, Guan, Ma, AAAI 2024, arXiv:2401.03230",
          help="FedTGP: trainable global prototypes with an adaptive-margin contrastive server loss")
def fedtgp(model, common: FedConfig, hp: FedTGPHParams):
    openfgl = hp.tgp_variant == "openfgl"
    server_opt = optax.adam(hp.tgp_server_lr)
    if openfgl and common.optim.weight_decay:
        server_opt = optax.chain(optax.add_decayed_weights(common.optim.weight_decay), server_opt)

    def server_init(key, num_classes, dim):
        gen = init_generator(key, num_classes, dim, dim)
        return {"gen": gen, "opt": server_opt.init(gen)}

    def server_update(server, local, counts, data, _hp):
        ct, k, d = local.shape
        valid = jnp.ones((ct, k), bool) if openfgl else counts > 0
        held = valid.astype(local.dtype)
        if openfgl:   # OpenFGL divides the class sums by the client count once per class
            avg = local.sum(0) / float(ct) ** k
        else:
            avg = jnp.einsum("ck,ckd->kd", held, local) / jnp.maximum(held.sum(0), 1.0)[:, None]
        margin = adaptive_margin(avg, valid.any(0), hp.tgp_margin)
        x, y, v = local.reshape(ct * k, d), jnp.tile(jnp.arange(k), ct), valid.reshape(-1)

        def step(carry, _):
            gen, opt = carry
            g = jax.grad(margin_loss)(gen, x, y, v, margin)
            upd, opt = server_opt.update(g, opt, gen)
            return (optax.apply_updates(gen, upd), opt), None

        (gen, opt), _ = jax.lax.scan(step, (server["gen"], server["opt"]), None, length=hp.tgp_server_epochs)
        return {"gen": gen, "opt": opt}, generate(gen), jnp.ones((k,), bool)

    return prototype_algorithm(model, common, lam_name="fedtgp_lambda", lam=hp.fedtgp_lambda,
                               loss_kind="per_class" if openfgl else "mse", server_update=server_update,
                               server_init=server_init)
