"""MOON (Li, He & Song, CVPR 2021, "Model-Contrastive Federated Learning").

FedAvg whose local objective adds a model-contrastive term pulling each node's representation z
(the penultimate-layer embedding of the model being trained, `nn.models.apply_with_embedding`)
towards z_glob, that of the round's global model, and away from z_prev, that of the client's own
model after its previous round:

    l_con(v) = -log( e^{sim(z, z_glob)/tau} / (e^{sim(z, z_glob)/tau} + e^{sim(z, z_prev)/tau}) ),
    loss     = CE + mu * mean_v l_con(v),        sim = cosine similarity.

z_glob and z_prev come from fixed models (no gradient). The previous local models live on the
client axis (`prev` [C, ...]); in the first round there is none and the term is off (as in the
paper's code, whose negative pool starts empty, and OpenFGL). The server averages the models as
FedAvg and evaluates the global model (eval_mode=auto; any of OpenFGL's four modes with eval_mode).

Differences from the paper: no projection head (z is the GNN's hidden layer, as in OpenFGL; the
paper adds a 2-layer MLP head for images). Differences from OpenFGL (openfgl/flcore/moon): it
averages l_con over every node of the subgraph, the paper over the training samples; the
paper's choice is the default, `moon_nodes=all` gives OpenFGL's. OpenFGL takes the embedding
after dropout; here it is before dropout (identical at the default dropout 0).

Server step (`fgl_jax.aggregators`): the clients' models go through the run's aggregator; the
previous local models never leave the clients.
Graph tasks (graph_cls, graph_reg): z is the graph embedding (the readout, the head's input) of
each graph of the step's mini-batch, averaged over its training graphs (`moon_nodes=all`: every
real graph); the fixed models' embeddings are computed on that mini-batch inside the step.
"""
from __future__ import annotations

import dataclasses
from typing import Any

import flax
import jax
import jax.numpy as jnp

from fgl_jax.algorithms._common import aggregate, evaluate_round, init_params, round_start, scatter_clients, stack, weighted_loss
from fgl_jax.federated.algorithm import FedData, FederatedAlgorithm
from fgl_jax.federated.config import FedConfig, server_aggregator
from fgl_jax.federated.chunking import map_clients
from fgl_jax.federated.client import local_train, make_optimizer
from fgl_jax.federated.graph_task import graph_loss, is_graph
from fgl_jax.federated.metrics import masked_cross_entropy
from fgl_jax.nn.models import apply_with_embedding
from fgl_jax.registry import register
from fgl_jax.schema import option

PyTree = Any


@dataclasses.dataclass(frozen=True)
class MoonHParams:
    moon_mu: float = option(1.0, "MOON weight mu of the model-contrastive loss", low=0, traced=True)
    moon_tau: float = option(0.5, "MOON temperature tau", low=0, low_open=True, traced=True)
    moon_nodes: str = option("train", "nodes the contrastive loss averages over (train = the paper, "
                             "all = every real node, OpenFGL)", choices=("train", "all"))


@flax.struct.dataclass
class MoonState:
    round: jax.Array   # int32 scalar: rounds done
    server: PyTree     # the global model
    prev: PyTree       # each client's model after its last round [C, ...]
    opt: PyTree        # client optimiser states [C_t, ...]
    hp: dict           # traced: lr, moon_mu, moon_tau
    aggregator: PyTree = None  # the server aggregator's state (`fgl_jax.aggregators`)


def cosine(a: jax.Array, b: jax.Array, eps: float = 1e-8) -> jax.Array:
    """Row-wise cosine similarity [N] of a, b [N, D] (norms floored at eps, as torch's)."""
    na = jnp.maximum(jnp.linalg.norm(a, axis=-1), eps)
    nb = jnp.maximum(jnp.linalg.norm(b, axis=-1), eps)
    return (a * b).sum(-1) / (na * nb)


def moon_contrastive(z: jax.Array, z_glob: jax.Array, z_prev: jax.Array, mask: jax.Array, tau) -> jax.Array:
    """Mean over masked nodes of -log softmax([sim(z, z_glob), sim(z, z_prev)] / tau)[0].

    z, z_glob, z_prev: [N, D]; mask: [N] (bool or 0/1); 0 when the mask is empty."""
    logits = jnp.stack([cosine(z, z_glob), cosine(z, z_prev)], axis=-1) / tau
    per_node = -jax.nn.log_softmax(logits, axis=-1)[:, 0]
    m = mask.astype(z.dtype)
    return (per_node * m).sum() / jnp.maximum(m.sum(), 1.0)


@register("algorithm", "moon", hparams=MoonHParams, tasks=("node_cls", "graph_cls", "graph_reg"),
          paper="Li, He, Song, CVPR 2021, arXiv:2103.16257",
          help="MOON: FedAvg + model-contrastive loss (global vs previous local representation)")
def moon(model, common: FedConfig, hp: MoonHParams) -> FederatedAlgorithm:
    optimizer = make_optimizer(common.optim, lr=1.0)
    aggregator = server_aggregator(common)

    def init(key: jax.Array, data: FedData) -> MoonState:
        params = init_params(model, key, data)
        return MoonState(round=jnp.zeros((), jnp.int32), server=params, prev=stack(params, data.eval.num_clients),
                         opt=stack(optimizer.init(params), data.train.num_clients),
                         hp={"lr": jnp.float32(common.optim.lr), "moon_mu": jnp.float32(hp.moon_mu),
                             "moon_tau": jnp.float32(hp.moon_tau)}, aggregator=aggregator.init(params))

    def round_fn(state: MoonState, data: FedData, key: jax.Array):
        ct = data.train.num_clients
        start, opt, scale = round_start(optimizer, common, state, data)
        prev = jax.tree.map(lambda a: a[data.train_index], state.prev)
        # no previous local model before the first round: the contrastive term is off
        weight = state.hp["moon_mu"] * (state.round > 0).astype(jnp.float32)

        def graph_client(p, o, b, k, p_prev):
            # graph tasks: z is a mini-batch's graph embeddings (the readout), so the fixed models'
            # embeddings are taken inside the step, on the step's mini-batch
            def loss(w, b, k):
                z_glob, _ = apply_with_embedding(model, state.server, b, train=False)
                z_prev, _ = apply_with_embedding(model, p_prev, b, train=False)
                z, out = apply_with_embedding(model, w, b, train=True, rngs={"dropout": k})
                graphs = b.train_mask if hp.moon_nodes == "train" else b.graph_mask
                # padding slots have all-zero embeddings, where the norm's gradient is NaN (0 * NaN
                # survives the mask): give them ones, the mask drops them anyway
                real = b.graph_mask[:, None]
                z, z_glob, z_prev = (jnp.where(real, e, 1.0) for e in (z, z_glob, z_prev))
                con = moon_contrastive(z, jax.lax.stop_gradient(z_glob), jax.lax.stop_gradient(z_prev), graphs,
                                       state.hp["moon_tau"])
                return graph_loss(model, out, b) + weight * con
            return local_train(loss, optimizer, common.local_steps, p, o, b, k, scale)

        def client(p, o, b, k, p_prev):
            z_glob, _ = apply_with_embedding(model, state.server, b, train=False)
            z_prev, _ = apply_with_embedding(model, p_prev, b, train=False)
            nodes = b.train_mask if hp.moon_nodes == "train" else b.node_mask

            def loss(w, b, k):
                z, logits = apply_with_embedding(model, w, b, train=True, rngs={"dropout": k})
                con = moon_contrastive(z, z_glob, z_prev, nodes, state.hp["moon_tau"])
                return masked_cross_entropy(logits, b.y, b.train_mask) + weight * con

            return local_train(loss, optimizer, common.local_steps, p, o, b, k, scale)

        train = graph_client if is_graph(model) else client
        new, opt, losses = map_clients(train, common.client_chunk)(start, opt, data.train,
                                                                   jax.random.split(key, ct), prev)
        server, agg = aggregate(aggregator, state.aggregator, new, data.train_weight, key, params=state.server)
        metrics = evaluate_round(model, common, data, server=server, trained=new)
        metrics["train_loss"] = weighted_loss(losses, data.train_weight)
        metrics["lr"] = scale
        return MoonState(round=state.round + 1, server=server,
                         prev=scatter_clients(state.prev, data.train_index, new), opt=opt, hp=state.hp,
                         aggregator=agg), metrics

    return FederatedAlgorithm(init=init, round=round_fn, messages=lambda s: (s.server, s.server))
