"""FGGP (Wan, Huang & Ye, "Federated Graph Learning under Domain Shift with Generalizable Prototypes",
AAAI 2024), as OpenFGL 1.1.0 trains it.

FedAvg whose local objective adds a second, augmented view of the client's graph and aligns the two
views' class prototypes. At every local step, with the current model f (hidden embedding h = the
input of the last layer, `nn.models.apply_with_embedding`):

    S = softmax_row((h h^T + G) / tau)          dense [N, N] view adjacency, G Gumbel(0, 1) noise,
                                                h without gradient (`fggp_tau`, OpenFGL 0.5)
    (h, z), (h', z') = f on the client graph, f on the graph S (S replaces the neighbour sum)
    pseudo labels yhat_v = argmax softmax(z_v) with confidence c_v = max softmax(z_v); the labels
    and confidence 1 on training nodes
    P_k  = sum_v c_v [yhat_v = k] h_v  / (sum_v c_v [yhat_v = k] + 1e-6)     over the client's nodes,
    P'_k the same with h' (and the same yhat, c), for the classes k present in yhat
    L_align = mean_k -log( e^{cos(P'_k, P_k)/T} / (e^{cos(P'_k, P_k)/T} + sum_{j != k} e^{P'_k . P_j / T}) )
    loss = CE(z, train) + fggp_view_weight * CE(z', train) + fggp_align_weight * L_align

(T = `fggp_temperature`, 0.5; the negatives are dot products, the positive a cosine, as OpenFGL;
L_align is computed as a log-sum-exp, the same number without overflow). The server averages the
models (training-node shares, as FedAvg here). A client uploads and downloads the model only.

The view S enters the network through its neighbour sum (`aggregate`): with `fggp_model=openfgl`
(OpenFGL's FedGCN, raw adjacency: `gcn_sum`) a layer is S (H W) exactly as OpenFGL's; with the run's
GCN (the default) the layer keeps the GCN normalisation of the client's graph around S (D^-1/2
(S D^-1/2 H W) + D^-1 H W). Other models (gat, sage, ...) are refused.
S is dense: each client step holds [N, N] floats (N = the padded client size), as OpenFGL does.

Differences from the paper. OpenFGL implements part of FGGP, and this module follows OpenFGL: the
paper's server clusters the clients' class prototypes (FINCH) into several prototypes per class
and the clients learn against them; OpenFGL's server computes the clusters but never sends them, so
they cannot change its training, and they are not implemented here. The paper's structure
augmentation with a k-NN graph of the global model's embeddings is, in OpenFGL, used only in a
graph-reconstruction term whose logits are computed without gradient (a constant in the loss), so
neither is implemented here; the reported train_loss lacks that constant.

Differences from OpenFGL (openfgl/flcore/fggp): OpenFGL computes the view's similarity features of
the second and later local steps on the previous step's sampled graph (a chain restarted every
round), here always on the client's graph; its embeddings are taken after dropout, here before;
its model averaging weights are node counts, here training-node counts.

Server step (`fgl_jax.aggregators`): the clients' models go through the run's aggregator.
"""
from __future__ import annotations

import dataclasses
from typing import Any

import flax
import jax
import jax.numpy as jnp

from fgl_jax.algorithms._common import aggregate, evaluate_round, init_params, model_variant, round_start, stack, weighted_loss
from fgl_jax.federated.algorithm import FedData, FederatedAlgorithm
from fgl_jax.federated.config import FedConfig, server_aggregator
from fgl_jax.federated.chunking import map_clients
from fgl_jax.federated.client import local_train, make_optimizer
from fgl_jax.federated.metrics import masked_cross_entropy
from fgl_jax.nn.models import GCN, SumGCN, apply_with_embedding
from fgl_jax.registry import register
from fgl_jax.schema import option

PyTree = Any


@dataclasses.dataclass(frozen=True)
class FGGPHParams:
    fggp_tau: float = option(0.5, "FGGP Gumbel-softmax temperature of the augmented view's adjacency",
                             low=0, low_open=True, traced=True)
    fggp_temperature: float = option(0.5, "FGGP temperature T of the prototype alignment (InfoNCE)",
                                     low=0, low_open=True, traced=True)
    fggp_view_weight: float = option(1.0, "FGGP weight of the augmented view's cross-entropy", low=0, traced=True)
    fggp_align_weight: float = option(1.0, "FGGP weight of the prototype alignment", low=0, traced=True)
    fggp_model: str = option("run", "FGGP's network: run (the run's --model, gcn or gcn_sum) or openfgl "
                             "(OpenFGL's FedGCN: GCN layers on the raw adjacency, `gcn_sum`)", choices=("run", "openfgl"))


@flax.struct.dataclass
class FGGPState:
    round: jax.Array     # int32 scalar: rounds done
    server: PyTree       # the global model
    opt: PyTree          # client optimiser states [C_t, ...]
    hp: dict             # traced: lr and the FGGP hyperparameters
    aggregator: PyTree = None  # the server aggregator's state (`fgl_jax.aggregators`)


def view_adjacency(h: jax.Array, node_mask: jax.Array, tau, key: jax.Array) -> jax.Array:
    """S [N, N]: row softmax of (h h^T + Gumbel noise) / tau over the real nodes (columns of padded
    nodes get 0, rows of padded nodes are 0). h [N, D] (used without gradient)."""
    h = jax.lax.stop_gradient(h)
    u = jax.random.uniform(key, (h.shape[0], h.shape[0]), h.dtype, minval=1e-12, maxval=1.0)
    logits = (h @ h.T - jnp.log(-jnp.log(u))) / tau
    logits = jnp.where(node_mask[None, :], logits, -jnp.inf)
    return jax.nn.softmax(logits, axis=-1) * node_mask[:, None].astype(h.dtype)


def weighted_prototypes(h: jax.Array, labels: jax.Array, weight: jax.Array, num_classes: int
                        ) -> tuple[jax.Array, jax.Array]:
    """(P [K, D], present bool [K]): P_k = sum_v w_v [l_v = k] h_v / (sum_v w_v [l_v = k] + 1e-6);
    weight [N] is 0 on nodes that do not count (padding)."""
    onehot = jax.nn.one_hot(labels, num_classes, dtype=h.dtype) * weight[:, None]     # [N, K]
    total = onehot.sum(0)
    return (onehot.T @ h) / (total + 1e-6)[:, None], (onehot > 0).any(0)


def prototype_alignment(p_view: jax.Array, p: jax.Array, present: jax.Array, temperature) -> jax.Array:
    """OpenFGL's proto_align_loss over the present classes: mean_k of
    -log(e^{cos(p'_k, p_k)/T} / (e^{cos(p'_k, p_k)/T} + sum_{j != k present} e^{p'_k . p_j / T}))."""
    # norms floored inside the sqrt: an absent class has a zero prototype, whose plain norm has a NaN gradient
    norm = lambda x: jnp.sqrt(jnp.maximum((x * x).sum(-1), 1e-16))
    cos = (p_view * p).sum(-1) / jnp.maximum(norm(p_view) * norm(p), 1e-8)
    pos = cos / temperature                                                          # [K]
    neg = (p_view @ p.T) / temperature                                               # [K, K]
    k = p.shape[0]
    use = present[None, :] & ~jnp.eye(k, dtype=bool)
    neg = jnp.where(use, neg, -jnp.inf)
    per_class = jax.nn.logsumexp(jnp.concatenate([pos[:, None], neg], axis=1), axis=1) - pos
    m = present.astype(p.dtype)
    return (per_class * m).sum() / jnp.maximum(m.sum(), 1.0)


def dense_aggregate(s: jax.Array):
    """A neighbour-sum function (`ops.neighbour_sum` signature) that ignores the edge list: S @ msg."""
    return lambda msg, senders, receivers, edge_mask, num_nodes, layer=0: s @ msg


@register("algorithm", "fggp", hparams=FGGPHParams,
          paper="Wan, Huang, Ye, AAAI 2024 (Federated Graph Learning under Domain Shift with Generalizable Prototypes)",
          help="FGGP: FedAvg + an augmented Gumbel-softmax similarity view and two-view prototype alignment")
def fggp(model, common: FedConfig, hp: FGGPHParams) -> FederatedAlgorithm:
    if hp.fggp_model == "openfgl":
        model = model_variant(model, common, "gcn_sum")
    if not isinstance(model, (GCN, SumGCN)):   # SAGE's aggregate is a sum later divided by the graph's degree
        raise ValueError(f"fggp: the augmented view replaces the neighbour sum of a GCN layer; model "
                         f"{type(model).__name__} is not one (use model gcn or gcn_sum, or fggp_model=openfgl)")
    optimizer = make_optimizer(common.optim, lr=1.0)
    aggregator = server_aggregator(common)
    num_classes = int(model.num_classes)
    names = ("fggp_tau", "fggp_temperature", "fggp_view_weight", "fggp_align_weight")

    def init(key: jax.Array, data: FedData) -> FGGPState:
        params = init_params(model, key, data)
        hp_state = {"lr": jnp.float32(common.optim.lr), **{n: jnp.float32(getattr(hp, n)) for n in names}}
        return FGGPState(round=jnp.zeros((), jnp.int32), aggregator=aggregator.init(params), server=params,
                         opt=stack(optimizer.init(params), data.train.num_clients), hp=hp_state)

    def client_loss(hps):
        def loss(w, b, key):
            k_drop, k_gumbel, k_view = jax.random.split(key, 3)
            h, logits = apply_with_embedding(model, w, b, train=True, rngs={"dropout": k_drop})
            # the similarity features: h itself (no dropout acts before the hidden embedding of a 2-layer
            # model, so OpenFGL's separate no-gradient forward gives the same h)
            s = view_adjacency(h, b.node_mask, hps["fggp_tau"], k_gumbel)
            view = model.clone(aggregate=dense_aggregate(s))
            h_view, logits_view = apply_with_embedding(view, w, b, train=True, rngs={"dropout": k_view})
            prob = jax.nn.softmax(logits, -1)
            labels = jnp.where(b.train_mask, b.y, jnp.argmax(prob, -1))
            conf = jnp.where(b.train_mask, 1.0, prob.max(-1)) * b.node_mask.astype(prob.dtype)
            p, present = weighted_prototypes(h, labels, conf, num_classes)
            p_view, _ = weighted_prototypes(h_view, labels, conf, num_classes)
            return (masked_cross_entropy(logits, b.y, b.train_mask)
                    + hps["fggp_view_weight"] * masked_cross_entropy(logits_view, b.y, b.train_mask)
                    + hps["fggp_align_weight"] * prototype_alignment(p_view, p, present, hps["fggp_temperature"]))
        return loss

    def round_fn(state: FGGPState, data: FedData, key: jax.Array):
        ct = data.train.num_clients
        start, opt, scale = round_start(optimizer, common, state, data)
        loss = client_loss(state.hp)
        train = lambda p, o, b, k: local_train(loss, optimizer, common.local_steps, p, o, b, k, scale)
        new, opt, losses = map_clients(train, common.client_chunk)(start, opt, data.train, jax.random.split(key, ct))
        server, agg = aggregate(aggregator, state.aggregator, new, data.train_weight, key, params=state.server)
        metrics = evaluate_round(model, common, data, server=server, trained=new)
        metrics["train_loss"] = weighted_loss(losses, data.train_weight)
        metrics["lr"] = scale
        return FGGPState(round=state.round + 1, aggregator=agg, server=server, opt=opt, hp=state.hp), metrics

    # up: the trained model; down: the global model
    return FederatedAlgorithm(init=init, round=round_fn, messages=lambda s: (s.server, s.server))
