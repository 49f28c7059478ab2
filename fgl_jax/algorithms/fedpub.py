"""FED-PUB (Baek, Jeong, Jin, Yoon & Hwang, ICML 2023, "Personalized Subgraph Federated Learning").

Personalised models built from a masked GCN (`fgl_jax.nn.masked.MaskedGCN`: every weight W used as
W * M with a client-local learnable mask M, entries |M| < fedpub_l1 pruned at evaluation). Per round:

1. client i starts from its personalised weights theta_bar_i (the global model before it has any)
   and its own masks, and trains CE + lambda1 sum ||M||_1 + lambda2 ||theta - theta_bar_i||^2
   (the proximal term from the second round on);
2. it computes its functional embedding e_i [H]: the mean over the nodes of a fixed random proxy
   graph (built once on the host: `fedpub_proxy_graphs` disconnected blocks of `fedpub_proxy_nodes`
   nodes, an edge inside a block with probability `fedpub_proxy_p`, features N(0, 1)) of the last
   convolution's output, with the pruned masks;
3. the server forms S_ij = cos(e_i, e_j) over the round's clients, alpha_ij = exp(tau S_ij) /
   sum_k exp(tau S_ik), and sends client i theta_bar_i = sum_j alpha_ij theta_j (masks excluded).

Each client is evaluated with its own trained model (eval_mode=auto: local_model_on_local_data).
The server also keeps the training-node weighted mean of the models (masks included), only for
the global_model_* evaluation modes.

Computation (same sums, regrouped; the host step `prepare_fedpub` runs once): the client features
are stored as `fgl_jax.ops.EllFeatures` (`fgl_jax.batch.with_ell_features`: registered with
features="ell"), so X (W*M) and its weight gradient
are row gathers; the proxy graph's first convolution reads S X from the host and its last one's
node mean is colmean(S) h (W*M) + b (`functional_embedding`). What remains of a CiteSeer round is
mostly Adam over the [C, 3703, 64] weights and masks (about six passes each per step) and the
proxy product [500, 3703] x [3703, C x 64], which OpenFGL computes too.

Differences between the paper and its code (the official FED-PUB code and OpenFGL's
openfgl/flcore/fedpub, which agree): the code adds lambda1 ||M||_1 + lambda2 ||theta - theta_bar||_2
(not squared) through `model.state_dict()`, whose tensors are detached, so neither term reaches the
gradient: training is plain CE with masks. `fedpub_reg=code` reproduces that (the terms are
dropped); the default `paper` trains with both terms. Differences from OpenFGL: the masked GCN's
dropout is the run's `dropout` (OpenFGL: fixed 0.5, torch's default, equal in the harness);
OpenFGL draws the proxy graph with networkx (seed = the run's seed) and its features from torch's
global RNG, here NumPy's default_rng(seed of the partition) draws both; OpenFGL's global model
weights clients by node counts, here by training-node counts (it only serves the global_model_*
modes). Under partial participation a client starts from the personalised weights of the last
round it took part in (the official code; OpenFGL: only those of the previous round, else the
global model).

Server step (`fgl_jax.aggregators`): the global model (the weighted mean of the trained weights
and masks) goes through the run's aggregator; the personalised weights sum_j alpha_ij theta_j are
FedPub's own, from the raw uploads (DP and a server optimiser do not reach them).
"""
from __future__ import annotations

import dataclasses
from typing import Any

import flax
import jax
import jax.numpy as jnp
import numpy as np
import scipy.sparse as sp

from fgl_jax import ops
from fgl_jax.algorithms._common import aggregate, evaluate_round, round_start, scatter_clients, stack, take_clients, weighted_loss
from fgl_jax.federated.algorithm import FedData, FederatedAlgorithm, HostInput
from fgl_jax.federated.config import FedConfig, server_aggregator
from fgl_jax.federated.chunking import map_clients
from fgl_jax.federated.client import local_train, make_optimizer
from fgl_jax.federated.metrics import masked_cross_entropy
from fgl_jax.nn.masked import MaskedGCN, is_mask, pruned
from fgl_jax.registry import register
from fgl_jax.schema import option

PyTree = Any


@dataclasses.dataclass(frozen=True)
class FedPubHParams:
    fedpub_l1: float = option(1e-3, "FedPub weight lambda1 of the masks' L1 norm, also the pruning threshold "
                              "of mask entries at evaluation", low=0)
    fedpub_loc_l2: float = option(1e-3, "FedPub weight lambda2 of the proximal term to the personalised "
                                  "weights", low=0, traced=True)
    fedpub_tau: float = option(10.0, "FedPub scale tau of the similarities in exp(tau * cos)", low=0, traced=True)
    fedpub_agg_norm: str = option("exp", "FedPub similarity normalisation: exp (softmax of tau * cos, the "
                                  "paper) or sum (cos divided by its row sum)", choices=("exp", "sum"))
    fedpub_reg: str = option("paper", "FedPub regularisers: paper (L1 on masks and the proximal term train "
                             "the model) or code (they never reach the gradient, as in the official code "
                             "and OpenFGL)", choices=("paper", "code"))
    fedpub_proxy_graphs: int = option(5, "FedPub proxy graph: number of disconnected random blocks", low=1)
    fedpub_proxy_nodes: int = option(100, "FedPub proxy graph: nodes per block", low=2)
    fedpub_proxy_p: float = option(0.1, "FedPub proxy graph: edge probability inside a block", low=0, high=1)


@flax.struct.dataclass
class FedPubState:
    round: jax.Array     # int32 scalar: rounds done
    personal: PyTree     # every client's model after its last local training, masks included [C, ...]
    base: PyTree         # every client's personalised weights theta_bar_i [C, ...] (its mask leaves unused)
    has_base: jax.Array  # bool [C]: the client has received personalised weights
    server: PyTree       # training-node weighted mean of the models (global_model_* evaluation only)
    opt: PyTree          # client optimiser states [C_t, ...]
    hp: dict             # traced: lr, fedpub_loc_l2, fedpub_tau
    aggregator: PyTree = None  # the server aggregator's state (`fgl_jax.aggregators`)


def proxy_graph(num_graphs: int, num_nodes: int, p: float, num_features: int, seed: int) -> dict:
    """FedPub's random proxy input (host side): `num_graphs` blocks of `num_nodes` nodes, each
    unordered pair inside a block joined with probability p (both directions stored), no edge
    between blocks; features N(0, 1). Returns {x [P, F] float32, senders, receivers int32 [E]}."""
    rng = np.random.default_rng(seed)
    iu, ju = np.triu_indices(num_nodes, k=1)
    src, dst = [], []
    for g in range(num_graphs):
        keep = rng.random(iu.size) < p
        a, b = iu[keep] + g * num_nodes, ju[keep] + g * num_nodes
        src += [a, b]
        dst += [b, a]
    x = rng.standard_normal((num_graphs * num_nodes, num_features)).astype(np.float32)
    return {"proxy_x": x, "proxy_senders": np.concatenate(src).astype(np.int32),
            "proxy_receivers": np.concatenate(dst).astype(np.int32)}


def propagated_proxy(x: np.ndarray, senders: np.ndarray, receivers: np.ndarray) -> dict:
    """Host: S X [P, F] and the column means of S [P] (S = D^-1/2 (A + I) D^-1/2, the masked GCN's
    propagation, `ops.gcn_propagate`) for `functional_embedding`, float32."""
    n = x.shape[0]
    a = sp.coo_matrix((np.ones(len(senders)), (receivers, senders)), shape=(n, n)).tocsr() + sp.eye(n, format="csr")
    inv = 1.0 / np.sqrt(np.asarray(a.sum(axis=1)).ravel())     # in-degree + 1
    s = sp.diags(inv) @ a @ sp.diags(inv)
    return {"proxy_sx": np.asarray(s @ x.astype(np.float64), np.float32),
            "proxy_colmean": (np.asarray(s.sum(axis=0)).ravel() / n).astype(np.float32)}


def functional_embedding(net: MaskedGCN, params: PyTree, ex: dict) -> jax.Array:
    """e [H]: the mean over the proxy graph's nodes of the masked GCN's last convolution output
    (before its ReLU; masks pruned as in evaluation), the same sums as
    `net.apply(params, proxy, embed=True).mean(0)` in another order: the first convolution reads
    S X from the host (`propagated_proxy`: no propagation of the [P, H] product per client and
    round), and the last one's node mean is colmean(S) h W + b (no [P, H] product and propagation)."""
    p = params["params"]
    w = lambda i: p[f"kernel_{i}"] * pruned(p[f"mask_{i}"], net.prune)
    layers = net.num_layers
    if layers == 1:
        return ex["proxy_sx"].mean(0) @ w(0) + p["bias_0"]
    h = jax.nn.relu(ex["proxy_sx"] @ w(0) + p["bias_0"])
    s, r = ex["proxy_senders"], ex["proxy_receivers"]
    for i in range(1, layers - 1):
        h = jax.nn.relu(ops.gcn_propagate(h @ w(i), s, r, jnp.ones(s.shape, bool), h.shape[0]) + p[f"bias_{i}"])
    return (ex["proxy_colmean"] @ h) @ w(layers - 1) + p[f"bias_{layers - 1}"]


def prepare_fedpub(inp: HostInput, hp: FedPubHParams):
    """The proxy graph (FedData.extra), once on the host (the features are then put in
    EllFeatures layout by `prepare`, as for every algorithm registered with features="ell")."""
    f = int(inp.graph.num_features)
    proxy = proxy_graph(hp.fedpub_proxy_graphs, hp.fedpub_proxy_nodes, hp.fedpub_proxy_p, f, inp.seed)
    proxy.update(propagated_proxy(proxy["proxy_x"], proxy["proxy_senders"], proxy["proxy_receivers"]))
    return inp.batch, proxy


def similarity_weights(emb: jax.Array, tau, norm: str) -> jax.Array:
    """alpha [C_t, C_t] from the functional embeddings emb [C_t, H]: row-normalised exp(tau * cos)
    (norm="exp") or cos (norm="sum"); cos as scipy's 1 - cosine distance (no floor on the norms
    beyond 1e-12)."""
    unit = emb / jnp.maximum(jnp.linalg.norm(emb, axis=-1, keepdims=True), 1e-12)
    sim = unit @ unit.T
    if norm == "exp":
        sim = jnp.exp(tau * sim)
    return sim / sim.sum(-1, keepdims=True)


def mask_l1(params: PyTree) -> jax.Array:
    """sum of |M| over the mask leaves."""
    return sum(jnp.abs(x).sum() for p, x in jax.tree_util.tree_leaves_with_path(params) if is_mask(p))


def weight_sq_dist(params: PyTree, anchor: PyTree) -> jax.Array:
    """||theta - anchor||^2 over the weight (non-mask) leaves."""
    pairs = zip(jax.tree_util.tree_leaves_with_path(params), jax.tree.leaves(anchor))
    return sum(jnp.sum((x - a) ** 2) for (p, x), a in pairs if not is_mask(p))


def with_masks_of(weights: PyTree, masks_from: PyTree) -> PyTree:
    """`weights` with its mask leaves taken from `masks_from` (same structure)."""
    return jax.tree_util.tree_map_with_path(lambda p, w, m: m if is_mask(p) else w, weights, masks_from)


def personalise(alpha: jax.Array, models: PyTree) -> PyTree:
    """theta_bar_i = sum_j alpha_ij theta_j over the weight leaves of models [C_t, ...]; the mask
    leaves are passed through untouched (the personalised weights never carry masks: a client
    trains with its own), which spares a [C_t, C_t] x [C_t, 3703 x 64] product on CiteSeer."""
    return jax.tree_util.tree_map_with_path(
        lambda p, x: x if is_mask(p) else jnp.tensordot(alpha, x, axes=1), models)


def weight_leaves(params: PyTree) -> list:
    return [x for p, x in jax.tree_util.tree_leaves_with_path(params) if not is_mask(p)]


@register("algorithm", "fedpub",
          dp_uncovered="its personalised aggregation and functional embeddings, computed from the raw uploads",
          features="ell", hparams=FedPubHParams, prepare=prepare_fedpub,
          paper="Baek, Jeong, Jin, Yoon & Hwang, ICML 2023, arXiv:2206.10206",
          help="FED-PUB: masked GCNs, personalised aggregation by functional-embedding similarity")
def fedpub(model, common: FedConfig, hp: FedPubHParams) -> FederatedAlgorithm:
    # the run's sizes (FedConfig.model; without one, those of the model object handed in)
    spec = common.model if common.model is not None else model
    net = MaskedGCN(in_dim=int(spec.in_dim), hidden=int(spec.hidden), num_classes=int(spec.num_classes),
                    num_layers=int(spec.num_layers), dropout=float(spec.dropout), prune=hp.fedpub_l1)
    optimizer = make_optimizer(common.optim, lr=1.0)
    paper = hp.fedpub_reg == "paper"
    aggregator = server_aggregator(common)

    def init(key: jax.Array, data: FedData) -> FedPubState:
        one = jax.tree.map(lambda a: a[0], data.eval)
        params = net.init({"params": key, "dropout": key}, one, train=False)
        c = data.eval.num_clients
        return FedPubState(round=jnp.zeros((), jnp.int32), personal=stack(params, c), base=stack(params, c),
                           has_base=jnp.zeros((c,), bool), server=params,
                           opt=stack(optimizer.init(params), data.train.num_clients),
                           hp={"lr": jnp.float32(common.optim.lr), "fedpub_loc_l2": jnp.float32(hp.fedpub_loc_l2),
                               "fedpub_tau": jnp.float32(hp.fedpub_tau)},
                           aggregator=aggregator.init(params))

    def round_fn(state: FedPubState, data: FedData, key: jax.Array):
        ct = data.train.num_clients
        idx = data.train_index
        pick = lambda t: take_clients(t, idx)
        has = state.has_base[idx]
        # the downloaded weights: personalised if the client has some, else the global model
        down = jax.tree.map(lambda b, s: jnp.where(has.reshape((-1,) + (1,) * s.ndim), b, s[None]),
                            pick(state.base), state.server)
        start = with_masks_of(down, pick(state.personal))
        _, opt, scale = round_start(optimizer, common, state, data, start=start)
        prox_on = (state.round > 0).astype(jnp.float32)
        ex = data.extra

        def client(p, o, b, k, anchor):
            def loss(w, b, k):
                logits = net.apply(w, b, train=True, rngs={"dropout": k})
                ce = masked_cross_entropy(logits, b.y, b.train_mask)
                if not paper:
                    return ce
                return (ce + hp.fedpub_l1 * mask_l1(w)
                        + state.hp["fedpub_loc_l2"] * prox_on * weight_sq_dist(w, anchor))

            p, o, first = local_train(loss, optimizer, common.local_steps, p, o, b, k, scale)
            emb = functional_embedding(net, p, ex)       # [H]
            return p, o, first, emb

        new, opt, losses, emb = map_clients(client, common.client_chunk)(start, opt, data.train,
                                                                         jax.random.split(key, ct), down)
        alpha = similarity_weights(emb, state.hp["fedpub_tau"], hp.fedpub_agg_norm)     # [C_t, C_t]
        pers = personalise(alpha, new)
        server, agg = aggregate(aggregator, state.aggregator, new, data.train_weight, key, params=state.server)
        personal = scatter_clients(state.personal, idx, new)
        glob = server if common.eval_mode.startswith("global_model") else None
        metrics = evaluate_round(net, common, data, server=glob, personal=personal)
        metrics["train_loss"] = weighted_loss(losses, data.train_weight)
        metrics["lr"] = scale
        return FedPubState(round=state.round + 1, personal=personal, base=scatter_clients(state.base, idx, pers),
                           has_base=state.has_base.at[idx].set(True), server=server, opt=opt,
                           hp=state.hp, aggregator=agg), metrics

    def messages(s: FedPubState):
        # up: the trained weights (masks stay on the client) and the functional embedding [H];
        # down: the personalised weights
        w = weight_leaves(s.server)
        emb = jnp.zeros((spec.hidden,), jnp.float32)
        return (w, emb), w

    return FederatedAlgorithm(init=init, round=round_fn, messages=messages)
