"""FedTAD (Zhu et al., IJCAI 2024, "FedTAD: Topology-aware Data-free Knowledge Distillation for
Subgraph Federated Learning").

FedAvg, then a data-free distillation on the server that moves the averaged model towards the
clients' models class by class, each class weighted by how reliable that client's knowledge of it is.

Class-wise knowledge reliability (host side, once, `prepare`): client i embeds every node as
e_v = [x_v, t_v] (features and a topology embedding t_v from random walks), scores each training
node by its mean similarity to its neighbourhood, r_v = (1 + sum_{u in N(v)} cos(e_v, e_u)) / (|N(v)| + 1),
and sums the scores per class: ckr_ik = sum_{v train, y_v = k} r_v. The authors' code normalises
each class over the clients, ckr_ik / sum_j ckr_jk (`fedtad_ckr_norm=clients`, the default).

Server, every round (inside the jitted round): theta = the training-node weighted mean of the
clients' models; then `fedtad_glb_epochs` times: draw z ~ N(0, I) [M, 32] with M = `fedtad_num_gen`
pseudo nodes of fixed classes c (M/K each, the remainder to the last class); the conditional
generator G(z, c) = MLP([emb(c), z]) (tanh; widths 64, 128, 256, then the feature width) gives node
features X, and the pseudo graph joins each node to its top-k cosine neighbours in X (symmetrised).
With l_i = f(X; theta_i), g = f(X; theta) the logits on that graph and n_k the pseudo nodes of class k:
  generator (`fedtad_it_g` Adam steps, lr_g):
      L_G = lam1 * sum_i sum_k ckr_ik CE_k(l_i, c)  -  sum_i sum_k ckr_ik mean_{v in k} mean_K |g_v - sg(l_iv)|
            + lam2 * C * exp(-mean_{v,w} ||z_v - z_w||^2/32 * |X_v - X_w|_1/F)
    (match the clients' classes, find where the global model disagrees with them, stay diverse);
  global model (`fedtad_it_d` Adam steps, lr_d, dropout on):
      L_D = sum_i sum_k ckr_ik mean_{v in k} mean_K |g_v - l_iv|   on the generator's graph.
The generator and both Adam states persist across rounds. Clients receive theta after distillation.

Defaults are OpenFGL's fedtad_config and the authors' defaults (5 outer epochs, it_g 1, it_d 5, lr
1e-3 for both, 100 pseudo nodes, top-5, lam1 = lam2 = 1; Adam with the clients' L2 weight decay).

The topology embedding of the authors' code (cal_topo_emb, also OpenFGL's): t_v = the node indices
visited by one random walk of each length 1..5 from v (15 numbers), with the transition
softmax(T[u, :]) where T = A~ * pinv(D~) is an *elementwise* product (A~ = A + I), so T is diagonal:
the walk stays at u with probability e^{1/d_u} / (e^{1/d_u} + n - 1) and otherwise jumps uniformly.
We reproduce that sampler (host NumPy, seeded by the partition seed); t_v is then a vector of node
indices, which dominates the cosine over binary features. `fedtad_walk_length` sets the longest walk.

Differences from OpenFGL (openfgl/flcore/fedtad): it normalises each client's CKR over its classes,
ckr_ik / sum_k ckr_ik (`fedtad_ckr_norm=classes`); it averages the clients' models by node counts,
fgl_jax by training-node counts (as its FedAvg). Only the code's default `raw_distill` (logits) is
offered. Not in the round: the per-class accuracy printing of the authors' code.

Server step (`fgl_jax.aggregators`): the clients' models go through the run's aggregator; the
server's data-free distillation then starts from the aggregate (its own Adam, not the run's
server optimiser).
"""
from __future__ import annotations

import dataclasses
import math
from typing import Any

import flax
import jax
import jax.numpy as jnp
import numpy as np
import optax

from fgl_jax.algorithms._common import aggregate, evaluate_round, init_params, round_start, stack, weighted_loss
from fgl_jax.batch import ClientBatch, dense_graph_batch
from fgl_jax.federated.algorithm import FedData, FederatedAlgorithm, HostInput
from fgl_jax.federated.config import FedConfig, server_aggregator
from fgl_jax.federated.chunking import map_clients
from fgl_jax.federated.client import local_train, make_optimizer, node_loss_fn
from fgl_jax.registry import register
from fgl_jax.schema import option

PyTree = Any
CKR_NORMS = ("clients", "classes")


@dataclasses.dataclass(frozen=True)
class FedTADHParams:
    fedtad_glb_epochs: int = option(5, "FedTAD server distillation epochs per round (a fresh noise draw each)", low=1)
    fedtad_it_g: int = option(1, "FedTAD generator steps per server epoch", low=0)
    fedtad_it_d: int = option(5, "FedTAD global-model distillation steps per server epoch", low=0)
    fedtad_lr_g: float = option(1e-3, "FedTAD generator Adam learning rate", low=0, low_open=True)
    fedtad_lr_d: float = option(1e-3, "FedTAD global-model distillation Adam learning rate", low=0, low_open=True)
    fedtad_num_gen: int = option(100, "FedTAD pseudo nodes the generator makes (at least one per class)", low=1)
    fedtad_noise_dim: int = option(32, "FedTAD generator noise width", low=1)
    fedtad_topk: int = option(5, "FedTAD neighbours per pseudo node in the kNN pseudo graph", low=1)
    fedtad_lam1: float = option(1.0, "FedTAD weight lam1 of the generator's class-matching loss", low=0)
    fedtad_lam2: float = option(1.0, "FedTAD weight lam2 of the generator's diversity loss", low=0)
    fedtad_walk_length: int = option(5, "FedTAD longest random walk of the topology embedding", low=1)
    fedtad_ckr_norm: str = option("clients", "FedTAD CKR normalisation: clients (each class over the clients, the "
                                  "authors' code) or classes (each client over its classes, OpenFGL)",
                                  choices=CKR_NORMS)


# ---- host side: class-wise knowledge reliability ---------------------------------------------------

def code_random_walks(a_diag: np.ndarray, degree: np.ndarray, max_len: int, rng: np.random.Generator) -> np.ndarray:
    """The authors' walk embedding [n, max_len (max_len + 1) / 2]: for each length L = 1..max_len one
    walk of L nodes from every node, under the (diagonal) transition of the module docstring.
    a_diag [n]: diagonal of A + I; degree [n]: row sums of A + I."""
    n = len(degree)
    stay = np.exp(a_diag / degree)
    p_stay = stay / (stay + n - 1)
    cols = []
    for length in range(1, max_len + 1):
        cur = np.arange(n)
        cols.append(cur)
        for _ in range(length - 1):
            if n == 1:
                cols.append(cur)
                continue
            other = rng.integers(0, n - 1, n)
            other = other + (other >= cur)          # uniform over the nodes other than cur
            cur = np.where(rng.random(n) < p_stay[cur], cur, other)
            cols.append(cur)
    return np.stack(cols, 1).astype(np.float64)


def node_reliability(emb: np.ndarray, senders: np.ndarray, receivers: np.ndarray, nodes: np.ndarray) -> np.ndarray:
    """r_v = (1 + sum_{u: v -> u} cos(e_v, e_u)) / (outdeg(v) + 1) for v in nodes (emb [n, D])."""
    norm = np.maximum(np.linalg.norm(emb, axis=1), 1e-8)
    cos = (emb[senders] * emb[receivers]).sum(1) / (norm[senders] * norm[receivers])
    total = np.bincount(senders, weights=cos, minlength=len(emb))
    count = np.bincount(senders, minlength=len(emb))
    return (1.0 + total[nodes]) / (count[nodes] + 1.0)


def class_reliability(inp: HostInput, hp: FedTADHParams) -> np.ndarray:
    """Unnormalised CKR [C, K] of every client (0 for padded clients)."""
    b, g = inp.batch, inp.graph
    x = g.dense_x()
    rng = np.random.default_rng(inp.seed)
    node_mask, train = np.asarray(b.node_mask), np.asarray(b.train_mask)
    ids, y = np.asarray(b.node_ids), np.asarray(b.y)
    s_all, r_all, e_all = np.asarray(b.senders), np.asarray(b.receivers), np.asarray(b.edge_mask)
    ckr = np.zeros((b.num_clients, g.num_classes))
    for c in range(b.num_clients):
        n = int(node_mask[c].sum())   # real nodes come first in a client's padded rows
        if n == 0:
            continue
        s, r = s_all[c][e_all[c]], r_all[c][e_all[c]]
        a_diag = 1.0 + np.bincount(s[s == r], minlength=n)
        degree = np.bincount(s, minlength=n) + 1.0
        walks = code_random_walks(a_diag, degree, hp.fedtad_walk_length, rng)
        emb = np.concatenate([x[ids[c, :n]].astype(np.float64), walks], 1)
        v = np.flatnonzero(train[c, :n])
        np.add.at(ckr[c], y[c, v], node_reliability(emb, s, r, v))
    return ckr


def normalise_ckr(ckr: np.ndarray, how: str) -> np.ndarray:
    axis = 0 if how == "clients" else 1
    return ckr / np.maximum(ckr.sum(axis, keepdims=True), 1e-12)


def prepare(inp: HostInput, hp: FedTADHParams) -> tuple[ClientBatch, dict]:
    ckr = normalise_ckr(class_reliability(inp, hp), hp.fedtad_ckr_norm)
    return inp.batch, {"ckr": ckr.astype(np.float32)}


# ---- server side: generator, pseudo graph, distillation ------------------------------------------

def init_generator(key: jax.Array, num_classes: int, noise_dim: int, feat_dim: int) -> dict:
    """torch's initialisation: nn.Embedding N(0, 1), nn.Linear U(+-1/sqrt(fan_in)) for weights and biases."""
    dims = [noise_dim + num_classes, 64, 128, 256, feat_dim]
    keys = jax.random.split(key, 2 * len(dims) - 1)
    gen = {"emb": jax.random.normal(keys[0], (num_classes, num_classes), jnp.float32)}
    for i, (a, b) in enumerate(zip(dims[:-1], dims[1:])):
        bound = 1.0 / math.sqrt(a)
        gen[f"w{i}"] = jax.random.uniform(keys[2 * i + 1], (a, b), jnp.float32, -bound, bound)
        gen[f"b{i}"] = jax.random.uniform(keys[2 * i + 2], (b,), jnp.float32, -bound, bound)
    return gen


def generate(gen: dict, z: jax.Array, c: jax.Array) -> jax.Array:
    """Pseudo node features [M, F] from noise z [M, noise_dim] and classes c [M]."""
    h = jnp.concatenate([gen["emb"][c], z], -1)
    for i in range(3):
        h = jnp.tanh(h @ gen[f"w{i}"] + gen[f"b{i}"])
    return h @ gen["w3"] + gen["b3"]


def knn_adjacency(x: jax.Array, k: int) -> jax.Array:
    """0/1 [M, M]: each node's top-k cosine neighbours (itself included, as torch.topk picks it),
    symmetrised, without self-loops (the GCN adds one per node)."""
    xn = x / jnp.maximum(jnp.linalg.norm(x, axis=1, keepdims=True), 1e-12)
    _, idx = jax.lax.top_k(jax.lax.stop_gradient(xn @ xn.T), k)
    m = x.shape[0]
    a = jnp.zeros((m, m), jnp.float32).at[jnp.arange(m)[:, None], idx].set(1.0)
    a = jnp.maximum(a, a.T)
    return a * (1.0 - jnp.eye(m, dtype=a.dtype))


def pseudo_classes(num_gen: int, num_classes: int) -> np.ndarray:
    """c [M]: num_gen // K nodes of each class in order, the remainder added to the last class."""
    counts = [num_gen // num_classes] * num_classes
    counts[-1] += num_gen - sum(counts)
    return np.repeat(np.arange(num_classes), counts).astype(np.int32)


def diversity_loss(z: jax.Array, x: jax.Array) -> jax.Array:
    """exp(-mean_{v,w} mean_d (z_v - z_w)^2 * mean_f |x_v - x_w|) (the code's DiversityLoss, l1)."""
    noise = ((z[:, None, :] - z[None, :, :]) ** 2).mean(-1)
    layer = jnp.abs(x[:, None, :] - x[None, :, :]).mean(-1)
    return jnp.exp(-(noise * layer).mean())


def class_weights(ckr: jax.Array, c: jax.Array) -> jax.Array:
    """w [C, M] = ckr_i,c_v / n_{c_v}: sum_v w_iv a_v = sum_k ckr_ik mean_{v in k} a_v."""
    k = ckr.shape[1]
    n = jnp.maximum(jnp.bincount(c, length=k), 1).astype(ckr.dtype)
    return ckr[:, c] / n[c][None, :]


@flax.struct.dataclass
class FedTADState:
    round: jax.Array      # int32 scalar: rounds done
    server: PyTree        # the global model
    opt: PyTree           # client optimiser states [C_t, ...]
    gen: dict             # the generator
    gen_opt: PyTree       # its Adam state
    server_opt: PyTree    # the global model's distillation Adam state
    hp: dict              # traced: lr
    aggregator: PyTree = None  # the server aggregator's state (`fgl_jax.aggregators`)


@register("algorithm", "fedtad",
          dp_uncovered="its class reliabilities (uploaded before training)",
          hparams=FedTADHParams, prepare=prepare,
          paper="Zhu, Li, Wu, Wu, Hu, Li, IJCAI 2024, arXiv:2404.14061",
          help="FedTAD: FedAvg + server-side data-free distillation weighted by class-wise knowledge reliability")
def fedtad(model, common: FedConfig, hp: FedTADHParams) -> FederatedAlgorithm:
    optimizer = make_optimizer(common.optim, lr=1.0)
    loss_fn = node_loss_fn(model)
    num_classes = int(model.num_classes)
    if hp.fedtad_num_gen < num_classes:
        raise ValueError(f"fedtad_num_gen={hp.fedtad_num_gen} must be at least the number of classes ({num_classes})")
    if hp.fedtad_topk > hp.fedtad_num_gen:
        raise ValueError(f"fedtad_topk={hp.fedtad_topk} must be at most fedtad_num_gen={hp.fedtad_num_gen}")
    wd = common.optim.weight_decay
    adam = lambda lr: optax.chain(optax.add_decayed_weights(wd), optax.adam(lr)) if wd else optax.adam(lr)
    gen_optimizer, server_optimizer = adam(hp.fedtad_lr_g), adam(hp.fedtad_lr_d)
    classes = pseudo_classes(hp.fedtad_num_gen, num_classes)
    aggregator = server_aggregator(common)

    def init(key: jax.Array, data: FedData) -> FedTADState:
        k_model, k_gen = jax.random.split(key)
        params = init_params(model, k_model, data)
        gen = init_generator(k_gen, num_classes, hp.fedtad_noise_dim, int(getattr(model, "in_dim")))
        return FedTADState(round=jnp.zeros((), jnp.int32), aggregator=aggregator.init(params), server=params,
                           opt=stack(optimizer.init(params), data.train.num_clients), gen=gen,
                           gen_opt=gen_optimizer.init(gen), server_opt=server_optimizer.init(params),
                           hp={"lr": jnp.float32(common.optim.lr)})

    def distill(server, server_opt, gen, gen_opt, local, ckr, key):
        """The server's distillation epochs; local [C_t, ...] the clients' models, ckr [C_t, K]."""
        c = jnp.asarray(classes)
        w = class_weights(ckr, c)                                                   # [C_t, M]
        ct = w.shape[0]
        logits_on = lambda p, g, train=False, k=None: model.apply(
            p, g, train=train, rngs=None if k is None else {"dropout": k})
        local_logits = lambda g: jax.vmap(lambda p: logits_on(p, g))(local)         # [C_t, M, K]

        def gen_loss(gen_p, z, glob):
            x = generate(gen_p, z, c)
            g = dense_graph_batch(x, knn_adjacency(x, hp.fedtad_topk))
            loc = local_logits(g)
            glo = logits_on(glob, g)
            ce = optax.softmax_cross_entropy_with_integer_labels(loc, c[None, :])   # [C_t, M]
            gap = jnp.abs(glo[None] - jax.lax.stop_gradient(loc)).mean(-1)         # [C_t, M]
            return (hp.fedtad_lam1 * (w * ce).sum() - (w * gap).sum()
                    + hp.fedtad_lam2 * ct * diversity_loss(z, x))

        def epoch(carry, k):
            server, server_opt, gen, gen_opt = carry
            kz, kd = jax.random.split(k)
            z = jax.random.normal(kz, (len(classes), hp.fedtad_noise_dim), jnp.float32)

            def g_step(cg, _):
                gp, go = cg
                grads = jax.grad(gen_loss)(gp, z, server)
                upd, go = gen_optimizer.update(grads, go, gp)
                return (optax.apply_updates(gp, upd), go), None

            (gen, gen_opt), _ = jax.lax.scan(g_step, (gen, gen_opt), None, length=hp.fedtad_it_g)
            x = jax.lax.stop_gradient(generate(gen, z, c))
            g = dense_graph_batch(x, knn_adjacency(x, hp.fedtad_topk))
            loc = local_logits(g)                                                   # fixed in this phase

            def d_loss(p, kk):
                glo = jax.vmap(lambda k1: logits_on(p, g, True, k1))(jax.random.split(kk, ct))   # [C_t, M, K]
                return (w * jnp.abs(glo - loc).mean(-1)).sum()

            def d_step(cd, kk):
                p, o = cd
                grads = jax.grad(d_loss)(p, kk)
                upd, o = server_optimizer.update(grads, o, p)
                return (optax.apply_updates(p, upd), o), None

            (server, server_opt), _ = jax.lax.scan(d_step, (server, server_opt), jax.random.split(kd, hp.fedtad_it_d))
            return (server, server_opt, gen, gen_opt), None

        (server, server_opt, gen, gen_opt), _ = jax.lax.scan(
            epoch, (server, server_opt, gen, gen_opt), jax.random.split(key, hp.fedtad_glb_epochs))
        return server, server_opt, gen, gen_opt

    def round_fn(state: FedTADState, data: FedData, key: jax.Array):
        if data.extra is None or "ckr" not in data.extra:
            raise ValueError("fedtad needs its host preparation (FedData.extra['ckr']): build the run through "
                             "fgl_jax.systems.baseline (fgl-jax run) or call fgl_jax.algorithms.fedtad.prepare")
        ct = data.train.num_clients
        k_train, k_dist = jax.random.split(key)
        start, opt, scale = round_start(optimizer, common, state, data)
        train = lambda p, o, b, k: local_train(loss_fn, optimizer, common.local_steps, p, o, b, k, scale)
        new, opt, losses = map_clients(train, common.client_chunk)(start, opt, data.train, jax.random.split(k_train, ct))
        avg, agg = aggregate(aggregator, state.aggregator, new, data.train_weight, key, params=state.server)
        ckr = data.extra["ckr"][data.train_index]
        server, server_opt, gen, gen_opt = distill(avg, state.server_opt, state.gen, state.gen_opt, new, ckr, k_dist)
        metrics = evaluate_round(model, common, data, server=server, trained=new)
        metrics["train_loss"] = weighted_loss(losses, data.train_weight)
        metrics["lr"] = scale
        return FedTADState(round=state.round + 1, aggregator=agg, server=server, opt=opt, gen=gen, gen_opt=gen_opt,
                           server_opt=server_opt, hp=state.hp), metrics

    def messages(s: FedTADState):
        # up: the trained model and the client's CKR [K] (fixed, but OpenFGL sends it every round); down: the model
        return (s.server, jnp.zeros((num_classes,), jnp.float32)), s.server

    return FederatedAlgorithm(init=init, round=round_fn, messages=messages)
