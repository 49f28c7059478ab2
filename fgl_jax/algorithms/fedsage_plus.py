"""FedSage+ (Zhang, Yang, Li, Sun, Yiu, NeurIPS 2021, arXiv:2106.13430): missing-neighbour
generation (NeighGen), then FedAvg of a GraphSAGE classifier on the mended subgraphs.

Phase 1, rounds < `fedsage_gen_rounds`: every client hides part of its nodes (the impaired graph),
learns from it how many neighbours each remaining node lost (`missing`, the hidden nodes among its
neighbours) and their features, and trains its NeighGen

    z = SAGE_enc(impaired graph)                      [N, latent]   (2 layers)
    d~ = relu(z w_d + b_d)                            [N]           (dGen: number of missing neighbours)
    g~ = tanh(MLP(z + eps)),  eps ~ N(0, I)            [N, P, F]     (fGen: P = fedsage_num_pred)

jointly with its own SAGE classifier, on
    L = lambda_d SmoothL1(d~, missing) + lambda_f L_f + lambda_c CE(classifier(mended impaired graph))
        + lambda_f sum_{j != i} L_f^j                                   (FedSage+; LocSage+ without it)
with the greedy feature loss  L_f = 1/(|V| P) sum_i sum_{p < n_i} min_{k < m_i} mean_F (g~_ip - x_ik)^2,
n_i = min(P, floor(d~_i)), m_i = min(P, missing_i), x_ik the hidden neighbours' features (i over the
training nodes of the impaired graph); L_f^j the same loss against P neighbours of random nodes of
client j (the cross-client term that makes the generators federated). At the end of phase 1 the
server averages the clients' classifiers and every client mends its subgraph: node i gets
n_i generated neighbours with features g~_i. Phase 2: FedAvg of the classifier on the mended graphs.

Host preparation (`prepare`, once): the hidden nodes, missing counts, the hidden neighbours' ids, the
neighbour table for the cross-client draws and each client's training rows, in `FedData.extra`.
After it the two phases are `Phase`s (`fgl_jax.federated.algorithm`): `run` executes NeighGen's rounds
and the FedAvg rounds as one compiled program each (no branch over the other phase's work); `round`
is both in one function (`lax.cond` on the round) for the engines that run a single program.
Either way the rounds run through the engine's one round body (`fgl_jax.federated.run.round_step`);
only the client schedule below nests phase 1's rounds inside round 0 (docs/architecture.md says why:
memory).

Phase 1 needs nothing from the other clients' models (the cross-client term reads their data, the
classifiers are averaged only at its end), so with every client taking part each client's whole
phase 1 is independent of the others. `fedsage_schedule=client` (default) uses that: round 0 trains
the clients one after the other through all `fedsage_gen_rounds` rounds, each NeighGen and its Adam
state (on Cora 15 M weights, x3 with Adam's moments; 38 M on CiteSeer) living only while its client
trains, updated in place in the loop, and keeps the classifiers after each round, which rounds
0..G-1 report. `fedsage_schedule=round` is the round-by-round program with every client's NeighGen
in the state; it follows partial participation (the client schedule refuses it). Both draw step s
of client c in round r from fold_in(fold_in(seed, r), c) split per step, so with every client
taking part they give the same history (tests/test_alg_fedsage_plus.py).

Communication (`fedsage_pre_bytes`, summary.json's `describe.pre_training_communication`): the
cross-client term reads every other training client's features and neighbour lists, which each
client hands out once (OpenFGL puts the same `feat` and `original_neighbors` in its message pool);
per round, the classifier each way (`messages`; in phase 1 OpenFGL's server uses it only at the end).

Mending with static shapes: client i's mended graph has N + N P nodes (slot p of node i is node
N + i P + p, its edge live when p < n_i); `mend_batch` builds it. With the true hidden neighbours
as generated features and counts, the mended impaired graph has the same first-layer aggregates as
the full local graph (tests/test_alg_fedsage_plus.py).

Differences from OpenFGL 1.1.0 (openfgl/flcore/fedsage_plus); `fedsage_variant=openfgl` selects
OpenFGL's behaviour where it changes the numbers:
  - mending edges: OpenFGL adds one directed edge node -> generated per slot, so (PyG flow
    source -> target) the generated nodes receive from their node but never send to it: the
    classifier's outputs on the original nodes equal those on the unmended graph, in phase 1 and in
    phase 2. The paper mends undirected neighbours (what `paper` does). With `openfgl` we therefore
    skip building the mended graph (exactly equal outputs) and run fGen only on the training rows
    with a hidden neighbour (the only rows with a feature loss; OpenFGL runs it on every node).
  - loss scale: OpenFGL divides the phase-1 loss by the number of sampled clients (`openfgl`); the
    paper does not.
  - server weights in phase 2: OpenFGL averages uniformly (`openfgl`), we weight by training nodes.
  - both variants follow OpenFGL where the paper leaves it open: nodes hidden = `fedsage_hidden_portion`
    of each client's validation nodes (the paper hides a random portion of the subgraph's nodes),
    classifiers trained locally during phase 1 and averaged (uniformly) at its end, the cross-client
    term compared with the client's own missing counts, one optimiser over generator + classifier.
  - initialisation: all clients start from one draw of classifier and generator (OpenFGL draws each
    client's model independently).

Server step (`fgl_jax.aggregators`): the classifiers of phase 2 go through the run's
aggregator; phase 1's NeighGen exchange is FedSage+'s own.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Optional

import flax
import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

from fgl_jax.algorithms._common import aggregate, evaluate_round, prepared_phase, scatter_clients, stack, weighted_loss
from fgl_jax.algorithms._neighbour_generation import (dense_features, greedy_loss, hide_validation_nodes,
                                                      impaired_batch, padded_rows)
from fgl_jax.batch import ClientBatch
from fgl_jax.federated.algorithm import FedData, FederatedAlgorithm, HostInput, Phase
from fgl_jax.federated.config import FedConfig, server_aggregator
from fgl_jax.federated.chunking import map_clients
from fgl_jax.federated.client import local_train, lr_scale, make_optimizer
from fgl_jax.federated.metrics import masked_cross_entropy
from fgl_jax.nn.models import SAGE
from fgl_jax.registry import register
from fgl_jax.schema import option

PyTree = Any


@dataclasses.dataclass(frozen=True)
class FedSagePlusHParams:
    fedsage_num_pred: int = option(5, "P: most neighbours NeighGen generates per node", low=1)
    fedsage_latent: int = option(128, "NeighGen encoder output width", low=1)
    fedsage_gen_width: int = option(2048, "width of fGen's second hidden layer (its first is 256)", low=1)
    fedsage_gen_rounds: int = option(10, "rounds of phase 1 (NeighGen training) before mending", low=0)
    fedsage_hidden_portion: float = option(0.5, "fraction of each client's validation nodes hidden to "
                                           "simulate missing neighbours", low=0.0, high=1.0)
    fedsage_lambda_d: float = option(1.0, "weight of the missing-count loss", low=0.0)
    fedsage_lambda_f: float = option(1.0, "weight of the feature (greedy) losses", low=0.0)
    fedsage_lambda_c: float = option(1.0, "weight of the classification loss in phase 1", low=0.0)
    fedsage_cross: bool = option(True, "the cross-client feature loss (FedSage+); off = LocSage+")
    fedsage_gen_chunk: int = option(1, "phase 1 trains this many clients at a time (lax.map over blocks; "
                                    "0 = all vmapped): fGen's output layer, 2048 x P F weights plus Adam "
                                    "state per client, dominates memory", low=0)
    fedsage_schedule: str = option("client", "client = round 0 runs each client's whole phase 1 in turn (its "
                                   "NeighGen and Adam state live only while it trains: less memory, no copies; "
                                   "needs every client in every round); round = one phase-1 round per round with "
                                   "every NeighGen in the state (partial participation). Same numbers "
                                   "with every client taking part", choices=("client", "round"))
    fedsage_variant: str = option("paper", "paper = undirected mending edges, unscaled loss, training-node "
                                  "weights; openfgl = OpenFGL 1.1.0 (node->generated edges only, so mending "
                                  "leaves the classifier unchanged; loss / clients; uniform average)",
                                  choices=("paper", "openfgl"))


# ----------------------------------------------------------------------------------- host preparation

def fedsage_prepare(inp: HostInput, hp: FedSagePlusHParams):
    """Hidden nodes, missing counts and targets, neighbour tables, training rows (host, once).

    extra (all [C, ...]): keep bool [C, N] (node in the impaired graph), missing f32 [C, N],
    targets int32 [C, N, P] (local ids of hidden neighbours, 0-padded; first `missing` valid),
    nbr int32 [C, N, D] / deg int32 [C, N] (each node's neighbours, for the cross-client draws),
    rows int32 [C, T] / row_mask bool [C, T] (the training nodes of the impaired graph), frows int32
    [C, T_f] / frow_mask (those of them with a hidden neighbour: only they have a feature loss, own
    or cross-client, since both compare against min(P, missing_i) targets)."""
    b = inp.batch
    rng = np.random.default_rng([inp.seed, 0x5A6E])
    hidden = hide_validation_nodes(b, hp.fedsage_hidden_portion, hp.fedsage_num_pred, rng)
    keep, missing, tm = hidden["keep"], hidden["missing"], np.asarray(b.train_mask)
    rows, row_mask = padded_rows(tm & keep)
    frows, frow_mask = padded_rows(tm & keep & (missing > 0))
    return b, {**hidden, "rows": rows, "row_mask": row_mask, "frows": frows, "frow_mask": frow_mask}


def fedsage_pre_bytes(inp: HostInput, hp: FedSagePlusHParams) -> tuple[int, int]:
    """Bytes of the generator phase's cross-client exchange, summed over the clients: (up, down).

    The cross-client feature loss of client i draws random nodes of every other training client j
    and compares its generated features with features of their neighbours, so (as in OpenFGL, whose
    clients put `feat` and `original_neighbors` in the message pool) each client j hands out once
    its feature matrix [n_j, F] float32 and its neighbour lists (degrees [n_j] int32 plus the
    neighbour ids, sum of degrees int32); through the server: up = each training client's share,
    down = every other training client's shares. n_j counts real nodes (no padding). Nothing when
    the cross-client term is off (LocSage+) or there is no phase 1. The paper's own protocol sends
    NeighGen weights out and gradients back instead of features; that is not what runs here."""
    b = inp.batch
    if not hp.fedsage_cross or hp.fedsage_gen_rounds == 0:
        return 0, 0
    f = inp.graph.num_features
    nm, em, tm = np.asarray(b.node_mask), np.asarray(b.edge_mask), np.asarray(b.train_mask)
    s_all, r_all = np.asarray(b.graph.senders), np.asarray(b.graph.receivers)
    share = []
    for k in np.flatnonzero(tm.any(axis=1)):   # the training clients (the cross-client draws' pool)
        s, r = s_all[k][em[k]], r_all[k][em[k]]
        loops = s != r
        pairs = np.unique(np.concatenate([r[loops].astype(np.int64) * b.num_nodes + s[loops],
                                          s[loops].astype(np.int64) * b.num_nodes + r[loops]]))
        n_k = int(nm[k].sum())
        share.append(4 * n_k * f + 4 * n_k + 4 * len(pairs))
    total = sum(share)
    return total, sum(total - x for x in share)


# ----------------------------------------------------------------------------------- pieces

def mend_batch(b: ClientBatch, x: jax.Array, gen: jax.Array, count: jax.Array) -> ClientBatch:
    """One client's graph mended with generated neighbours (undirected edges), static shapes.

    b: the client's graph (N nodes); x: its dense features [N, F]; gen [N, P, F]: generated
    features; count int [N]: how many of node i's P slots are live. Returns a graph of N + N P
    nodes with dense features: slot p of node i is node N + i P + p, linked both ways to i."""
    n, p, f = gen.shape
    live = (jnp.arange(p)[None, :] < count[:, None]) & b.node_mask[:, None]              # [N, P]
    slot = n + jnp.arange(n * p, dtype=b.graph.senders.dtype)
    owner = jnp.repeat(jnp.arange(n, dtype=b.graph.senders.dtype), p)
    flat = live.reshape(-1)
    senders = jnp.concatenate([b.graph.senders, slot, owner])
    receivers = jnp.concatenate([b.graph.receivers, owner, slot])
    no = jnp.zeros((n * p,), bool)
    graph = b.graph._replace(senders=senders, receivers=receivers)
    return ClientBatch(graph=graph, features=jnp.concatenate([x, gen.reshape(n * p, f)]),
                       y=jnp.concatenate([b.y, jnp.zeros((n * p,), b.y.dtype)]),
                       node_mask=jnp.concatenate([b.node_mask, flat]),
                       edge_mask=jnp.concatenate([b.edge_mask, flat, flat]),
                       train_mask=jnp.concatenate([b.train_mask, no]), val_mask=jnp.concatenate([b.val_mask, no]),
                       test_mask=jnp.concatenate([b.test_mask, no]),
                       node_ids=jnp.concatenate([b.node_ids, jnp.full((n * p,), -1, b.node_ids.dtype)]),
                       client_mask=b.client_mask)


class NeighGen(nn.Module):
    """NeighGen: a 2-layer SAGE encoder, dGen (missing count) and fGen (P neighbours' features)."""

    in_dim: int
    hidden: int
    latent: int
    num_pred: int
    width: int
    dropout: float

    def setup(self):
        self.encoder = SAGE(self.in_dim, self.hidden, self.latent, num_layers=2, dropout=self.dropout)
        self.d_gen = nn.Dense(1)
        self.fc1, self.fc2 = nn.Dense(256), nn.Dense(self.width)
        self.fc_flat = nn.Dense(self.num_pred * self.in_dim)
        self.drop = nn.Dropout(self.dropout)

    def encode(self, batch, train: bool):
        """(z [N, latent], d~ [N]) on the given (impaired) graph."""
        z = self.encoder(batch, train=train)
        return z, nn.relu(self.d_gen(z))[:, 0]

    def features(self, z, key, train: bool):
        """g~ [rows, P, F] from encodings z [rows, latent] (Gaussian noise added, as the paper)."""
        h = z + jax.random.normal(key, z.shape)
        h = nn.relu(self.fc2(nn.relu(self.fc1(h))))
        h = self.drop(h, deterministic=not train)
        return jnp.tanh(self.fc_flat(h)).reshape(z.shape[0], self.num_pred, self.in_dim)

    def __call__(self, batch, key, train: bool = False):
        z, d = self.encode(batch, train)
        return d, self.features(z, key, train)


@flax.struct.dataclass
class FedSagePlusState:
    round: jax.Array          # int32 scalar: rounds done
    server: PyTree            # the global SAGE classifier (phase 2; the mean of `local` after phase 1)
    local: PyTree             # [C, ...] the clients' classifiers of phase 1
    gen: PyTree               # [C, ...] the clients' NeighGens (schedule round; None for client)
    cls_opt: PyTree           # [C_t, ...] optimiser states of the classifier
    gen_opt: PyTree           # [C_t, ...] optimiser states of the NeighGen (schedule round; None for client)
    gen_seed: jax.Array       # uint32 scalar: the NeighGens' initialisation and phase-1 step keys
    snaps: PyTree             # [G, C_t, ...] the classifiers after each phase-1 round (schedule client; else None)
    snap_loss: Optional[jax.Array]  # [G, C_t] their first-step losses (schedule client; else None)
    mend_x: Optional[jax.Array]   # [C, N, P, F] generated features (paper variant; None for openfgl)
    mend_n: Optional[jax.Array]   # int32 [C, N] live slots per node (paper variant)
    hp: dict                  # traced: lr
    aggregator: PyTree = None  # the server aggregator's state (`fgl_jax.aggregators`)


@register("algorithm", "fedsage_plus",
          dp_uncovered="its NeighGen phase's exchange",
          hparams=FedSagePlusHParams, prepare=fedsage_prepare,
          pre_communication=fedsage_pre_bytes,
          paper="Zhang, Yang, Li, Sun, Yiu, NeurIPS 2021, arXiv:2106.13430",
          help="FedSage+: NeighGen learns missing neighbours, then FedAvg of GraphSAGE on the mended subgraphs")
def fedsage_plus(model, common: FedConfig, hp: FedSagePlusHParams) -> FederatedAlgorithm:
    f, p = int(model.in_dim), hp.fedsage_num_pred
    cls = SAGE(in_dim=f, hidden=int(model.hidden), num_classes=int(model.num_classes),
               num_layers=int(getattr(model, "num_layers", 2)), dropout=float(getattr(model, "dropout", 0.0)))
    gen_net = NeighGen(f, int(model.hidden), hp.fedsage_latent, p, hp.fedsage_gen_width,
                       float(getattr(model, "dropout", 0.0)))
    optimizer = make_optimizer(common.optim, lr=1.0)
    aggregator = server_aggregator(common)
    steps, gen_rounds, paper = common.local_steps, hp.fedsage_gen_rounds, hp.fedsage_variant == "paper"
    by_client = hp.fedsage_schedule == "client"

    def init(key: jax.Array, data: FedData) -> FedSagePlusState:
        one = jax.tree.map(lambda a: a[0], data.eval)
        k1, k2 = jax.random.split(key)
        params = cls.init({"params": k1, "dropout": k1}, one, train=False)
        gen_seed = jax.random.bits(k2, (), jnp.uint32)
        c, ct, n = data.eval.num_clients, data.train.num_clients, data.eval.num_nodes
        gen = gen_opt = snaps = snap_loss = None
        if by_client:
            snaps = jax.tree.map(lambda a: jnp.zeros((gen_rounds, ct) + a.shape, a.dtype), params)
            snap_loss = jnp.zeros((gen_rounds, ct), jnp.float32)
        else:
            g = init_gen(gen_seed, one)
            gen, gen_opt = stack(g, c), stack(optimizer.init(g), ct)
        return FedSagePlusState(
            round=jnp.zeros((), jnp.int32), aggregator=aggregator.init(params), server=params, local=stack(params, c), gen=gen,
            cls_opt=stack(optimizer.init(params), ct), gen_opt=gen_opt, gen_seed=gen_seed, snaps=snaps,
            snap_loss=snap_loss,
            mend_x=jnp.zeros((c, n, p, f), jnp.float32) if paper else None,
            mend_n=jnp.zeros((c, n), jnp.int32) if paper else None,
            hp={"lr": jnp.float32(common.optim.lr)})

    def init_gen(gen_seed, one):   # every client's NeighGen starts from this draw
        k = jax.random.key(gen_seed)
        return gen_net.init({"params": k, "dropout": k}, one, k, train=False)

    def counts(d):   # n_i = min(P, floor(d~_i)) (OpenFGL's int cast of a non-negative float)
        return jnp.clip(jnp.floor(d), 0, p).astype(jnp.int32)

    def client_phase1(cp, gp, co, go, b, me, keep, missing, targets, rows, row_mask, frows, frow_mask, x,
                      others, gen_key, rounds, scales):
        """One client's phase 1 over the rounds `rounds` int32 [R] (their LR multipliers `scales` [R]).

        cp/gp/co/go: its classifier, NeighGen and their optimiser states; b: its graph; me: its client
        id; x [N, F] its dense features; others = (xs [C_t, N, F], nbr, deg, ids [C_t]): the training
        clients' features, neighbour tables and ids (the cross-client targets). Every step's key is
        fold_in(fold_in(gen_key, round), me) split per step, so the result does not depend on how
        the rounds are grouped (`fedsage_schedule`). Returns the final (cp, gp, co, go), the
        classifier after each round [R, ...], the first-step loss of each round [R] and the paper
        variant's mending (generated features [N, P, F], live counts [N]) from the final NeighGen."""
        xs, nbr, deg, ids = others
        n, ct = b.num_nodes, xs.shape[0]
        imp = impaired_batch(b, keep)
        m_true = jnp.clip(missing, 0, p).astype(jnp.int32)

        def loss_fn(both, kk):
            c_p, g_p = both
            k_enc, k_noise, k_cls, k_other = jax.random.split(kk, 4)
            z, d = gen_net.apply(g_p, imp, True, method=NeighGen.encode, rngs={"dropout": k_enc})
            if paper:   # every node's neighbours: they mend the graph the classifier sees
                g_all = gen_net.apply(g_p, z, k_noise, True, method=NeighGen.features, rngs={"dropout": k_enc})
                g_rows = g_all[frows]
                mended = mend_batch(imp, x, g_all, counts(d))
                logits = cls.apply(c_p, mended, train=True, rngs={"dropout": k_cls})[:n]
            else:       # OpenFGL's mending never reaches the original nodes: fGen on the rows only
                g_rows = gen_net.apply(g_p, z[frows], k_noise, True, method=NeighGen.features,
                                       rngs={"dropout": k_enc})
                logits = cls.apply(c_p, imp, train=True, rngs={"dropout": k_cls})
            mt_r, nc_r, denom = m_true[frows], counts(d)[frows], row_mask.sum()
            diff = jnp.abs(d[rows] - missing[rows])
            l_d = jnp.sum(jnp.where(row_mask, jnp.where(diff < 1.0, 0.5 * diff ** 2, diff - 0.5), 0.0)) \
                / jnp.maximum(row_mask.sum(), 1)
            l_f = greedy_loss(g_rows, nc_r, x[targets[frows]], mt_r, frow_mask, denom)
            l_c = masked_cross_entropy(logits, b.y, imp.train_mask)
            total = hp.fedsage_lambda_d * l_d + hp.fedsage_lambda_f * l_f + hp.fedsage_lambda_c * l_c
            if hp.fedsage_cross:
                def other(acc, j):
                    ku, kn = jax.random.split(jax.random.fold_in(k_other, ids[j]))
                    has = deg[j] > 0
                    u = jax.random.choice(ku, n, (frows.shape[0],), p=has / jnp.maximum(has.sum(), 1))
                    pick = jnp.floor(jax.random.uniform(kn, (frows.shape[0], p)) * deg[j][u][:, None]).astype(jnp.int32)
                    tgt = xs[j][nbr[j][u[:, None], pick]]                                  # [T, P, F]
                    l = greedy_loss(g_rows, nc_r, tgt, mt_r, frow_mask, denom)
                    return acc + jnp.where((ids[j] == me) | (has.sum() == 0), 0.0, l), None   # no edges: no draw
                l_o, _ = jax.lax.scan(other, jnp.float32(0.0), jnp.arange(ct))
                total = total + hp.fedsage_lambda_f * l_o
            return total / ct if not paper else total

        def one_round(carry, r_scale):
            r, scale = r_scale

            def step(carry, kk):
                both, (o1, o2) = carry
                val, g = jax.value_and_grad(loss_fn)(both, kk)
                u1, o1 = optimizer.update(g[0], o1, both[0])
                u2, o2 = optimizer.update(g[1], o2, both[1])
                new = (jax.tree.map(lambda w, u: w + scale * u, both[0], u1),
                       jax.tree.map(lambda w, u: w + scale * u, both[1], u2))
                return (new, (o1, o2)), val

            kr = jax.random.fold_in(jax.random.fold_in(gen_key, r), me)
            carry, losses = jax.lax.scan(step, carry, jax.random.split(kr, steps))
            return carry, (carry[0][0], losses[0])

        ((cp, gp), (co, go)), (snaps, losses) = jax.lax.scan(one_round, ((cp, gp), (co, go)), (rounds, scales))
        mend = None
        if paper:  # the mended neighbours of the (whole) local graph, for phase 2
            km = jax.random.fold_in(jax.random.fold_in(jax.random.fold_in(gen_key, rounds[-1]), me), 7)
            z, d = gen_net.apply(gp, b, False, method=NeighGen.encode)
            mend = (gen_net.apply(gp, z, km, False, method=NeighGen.features), counts(d))
        return cp, gp, co, go, snaps, losses, mend

    def train_phase1(state, data: FedData, cp, gp, go, rounds, shared_gen: bool = False):
        """client_phase1 on every training client of `data` (lax.map in blocks of fedsage_gen_chunk).

        shared_gen: gp / go are one NeighGen and optimiser state every client starts from (not
        stacked [C_t, ...]), and the trained ones are not returned (None): the client schedule
        drops them, and stacking C_t copies of fGen's output layer and its Adam moments cost
        3 x C_t x 2048 x P F floats (4.5 GB on CiteSeer) and a pass over them."""
        ex, idx = data.extra, data.train_index
        n = data.eval.num_nodes
        scales = state.hp["lr"] * jax.vmap(lambda r: lr_scale(common.optim, r))(rounds)
        xs = jax.vmap(lambda b: dense_features(b.features, n, f))(data.train)              # [C_t, N, F]
        others = (xs, ex["nbr"][idx], ex["deg"][idx], idx)

        def run(cp, gp, co, go, b, me, *a):
            out = client_phase1(cp, gp, co, go, b, me, *a, others=others, gen_key=jax.random.key(state.gen_seed),
                                rounds=rounds, scales=scales)
            return out[:1] + (None,) + out[2:3] + (None,) + out[4:] if shared_gen else out

        g_axis = None if shared_gen else 0
        return map_clients(run, hp.fedsage_gen_chunk or None, in_axes=(0, g_axis, 0, g_axis) + (0,) * 10)(
            cp, gp, state.cls_opt, go, data.train, idx, ex["keep"][idx], ex["missing"][idx],
            ex["targets"][idx], ex["rows"][idx], ex["row_mask"][idx], ex["frows"][idx], ex["frow_mask"][idx], xs)

    def end_phase1_round(state, data: FedData, cp, losses, **changes):
        """The round's bookkeeping: the clients' classifiers cp [C_t] and first-step losses [C_t]."""
        local = scatter_clients(state.local, data.train_index, cp)
        # the server's classifier: OpenFGL's uniform mean of the clients' (used from phase 2 on)
        server = jax.tree.map(lambda a: a.mean(0), cp)
        metrics = evaluate_round(cls, common, data, server=server, trained=cp)
        metrics["train_loss"] = weighted_loss(losses, data.train_weight)
        return dataclasses.replace(state, round=state.round + 1, server=server, local=local, **changes), metrics

    def phase1_by_round(state: FedSagePlusState, data: FedData, key: jax.Array):
        """fedsage_schedule=round: this round's step of the sampled clients; NeighGens in the state."""
        idx = data.train_index
        cp = jax.tree.map(lambda a: a[idx], state.local)
        gp = jax.tree.map(lambda a: a[idx], state.gen)
        go = state.gen_opt   # already on the training-client axis (train_axis)
        cp, gp, co, go, _, losses, mend = train_phase1(state, data, cp, gp, go, state.round[None])
        mend_x, mend_n = state.mend_x, state.mend_n
        if paper:
            mend_x, mend_n = mend_x.at[idx].set(mend[0]), mend_n.at[idx].set(mend[1])
        return end_phase1_round(state, data, cp, losses[:, 0], gen=scatter_clients(state.gen, idx, gp),
                                cls_opt=co, gen_opt=go, mend_x=mend_x, mend_n=mend_n)

    def phase1_by_client(state: FedSagePlusState, data: FedData, key: jax.Array):
        """fedsage_schedule=client: round 0 runs every client's whole phase 1 (one client at a time,
        its NeighGen and Adam state updated in place and dropped at the end) and keeps the
        classifiers after each round; rounds 0..gen_rounds-1 report them."""
        if data.train_total is not None and data.train.num_clients < data.train_total:
            raise ValueError("fedsage_plus: fedsage_schedule=client trains every client's generator at round 0 and "
                             "cannot follow a per-round client sample; use fedsage_schedule=round with "
                             "client_fraction / clients_per_round")

        def run_all(state):
            idx = data.train_index
            g = init_gen(state.gen_seed, jax.tree.map(lambda a: a[0], data.eval))
            cp = jax.tree.map(lambda a: a[idx], state.local)
            _, _, co, _, snaps, losses, mend = train_phase1(state, data, cp, g, optimizer.init(g),
                                                            jnp.arange(gen_rounds, dtype=jnp.int32), shared_gen=True)
            snaps = jax.tree.map(lambda a: jnp.swapaxes(a, 0, 1), snaps)                    # [G, C_t, ...]
            mend_x, mend_n = state.mend_x, state.mend_n
            if paper:
                mend_x, mend_n = mend_x.at[idx].set(mend[0]), mend_n.at[idx].set(mend[1])
            return dataclasses.replace(state, cls_opt=co, gen_opt=None, snaps=snaps, snap_loss=losses.T,
                                       mend_x=mend_x, mend_n=mend_n)

        state = jax.lax.cond(state.round == 0, run_all, lambda s: s, state)
        cp = jax.tree.map(lambda a: a[state.round], state.snaps)
        return end_phase1_round(state, data, cp, state.snap_loss[state.round])

    def with_mending(data: FedData, state: FedSagePlusState) -> FedData:
        """data with every client's graph mended (paper variant; openfgl: unchanged, see above)."""
        if not paper:
            return data
        n = data.eval.num_nodes
        mend = jax.vmap(lambda b, gx, gn: mend_batch(b, dense_features(b.features, n, f), gx, gn))
        ev = mend(data.eval, state.mend_x, state.mend_n)
        tr = mend(data.train, state.mend_x[data.train_index], state.mend_n[data.train_index])
        return data.replace(eval=ev, train=tr, glob=None)

    def phase2(state: FedSagePlusState, data: FedData, key: jax.Array):
        ct = data.train.num_clients
        mdata = with_mending(data, state)
        scale = state.hp["lr"] * lr_scale(common.optim, state.round)
        loss = lambda prm, b, k: masked_cross_entropy(cls.apply(prm, b, train=True, rngs={"dropout": k}), b.y,
                                                      b.train_mask)
        start = stack(state.server, ct)
        train = lambda prm, o, b, k: local_train(loss, optimizer, steps, prm, o, b, k, scale)
        new, co, losses = map_clients(train, common.client_chunk)(start, state.cls_opt, mdata.train,
                                                                 jax.random.split(key, ct))
        w = data.train_weight if paper else jnp.ones_like(data.train_weight)
        server, agg = aggregate(aggregator, state.aggregator, new, w, key, params=state.server)
        metrics = evaluate_round(cls, common, mdata, server=server, trained=new)
        metrics["train_loss"] = weighted_loss(losses, data.train_weight)
        return dataclasses.replace(state, round=state.round + 1, server=server, cls_opt=co, aggregator=agg), metrics

    def reporting(phase):
        return prepared_phase(phase, "fedsage_plus", "keep", "fedsage_prepare", common.optim)

    phase1 = reporting(phase1_by_client if by_client else phase1_by_round)
    mended = reporting(phase2)

    def round_fn(state: FedSagePlusState, data: FedData, key: jax.Array):
        # one program (sweeps, make_scan); `run` executes the phases below as two programs instead
        if gen_rounds == 0:
            return mended(state, data, key)
        return jax.lax.cond(state.round < gen_rounds, phase1, mended, state, data, key)

    # NeighGen (rounds < gen_rounds), then FedAvg on the mended graphs: no hand-over step, the
    # mending reads the generators' output kept in the state (mend_x, mend_n)
    phases = ((Phase(0, phase1),) if gen_rounds > 0 else ()) + (Phase(gen_rounds, mended),)
    # the classifier each way per round; the generator phase's one-off exchange of features and
    # neighbour lists is `fedsage_pre_bytes` (registry info pre_communication)
    return FederatedAlgorithm(init=init, round=round_fn, train_axis=("cls_opt", "gen_opt"),
                              messages=lambda s: (s.server, s.server), phases=phases)
