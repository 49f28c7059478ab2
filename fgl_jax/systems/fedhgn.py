"""FedHGN (Fu & King, IJCAI 2023): federated heterogeneous GNNs with private schemas.

Reads top to bottom like Algorithm 1 of the paper (spec fedhgn.md §2):

    server draws the shared weights once; clients draw their private coefficients/embeddings
    for round t:                                                (one step of lax.scan)
        S_t <- max(round(C*K), 1) clients                       (Alg. 1 line 3)
        pool_k <- shuffled coefficients of every other client   (server_pool: sees only β)
        each k in S_t, vmapped:                                 (ClientUpdate, lines 8-12)
            W_r = sum_i beta_ri V_i                             (Eq. 2, schema-weight decoupling)
            E full-batch SGD steps on CE + lambda * L_align     (Eq. 3, coefficients alignment)
        server averages bases + schema-free weights by N_k     (server_aggregate, line 6)
        server stores each sampled client's β; others keep theirs (line 7)
        every client is evaluated with the new shared weights + its own private parts

With every client sampled (C = 1, the paper's setting) the local steps and the evaluation run
on all clients' blocks flattened into one graph (`flatten_blocks` / `flat_logits`: same numbers
as the per-client backbone, ~2.5x faster on the 2-core CPU); with C < 1 the sampled clients'
updates are vmapped over their per-client blocks.

Clients hold different schemas (different numbers of relations): the relation axis of β is
padded to the largest client and a slot mask keeps padded slots out of the alignment loss (no
edge uses them, so they receive no task gradient either).

Methods (spec §3.4, §3.7): "fedhgn"; baselines with full per-relation weights: "fedavg" and
"fedprox" (schemas matched by name: relation weights over the union of names), "local" (each
client alone), "central" (one client holding the whole graph); ablations without CA: "abl_B"
(bases averaged), "abl_C" (bases private, coefficients averaged per relation name), "abl_BC"
(both averaged).

Traced hyper-parameters live in `state.hp` (lr, align_lambda, prox_mu), so `run_sweep` vectorises
seeds x values and `build_program(options)` gives a `fgl_jax.federated.Program` for `run`
(checkpoints, resume) and `fgl-jax sweep`.

Early stopping (patience 10 on the weighted validation accuracy, delta 1e-5) is applied to the
recorded per-round history: rounds after the stopping point cannot change earlier ones, so
running a few extra rounds inside a compiled chunk and cutting the history is identical to
stopping. Local applies it per client.
"""
from __future__ import annotations

import dataclasses
import json
import time
from typing import Any, Optional, Sequence

import flax
import jax
import jax.numpy as jnp
import numpy as np

from fgl_jax.data.hetero import HeteroGraph, load_hetero
from fgl_jax.federated.algorithm import FederatedAlgorithm
from fgl_jax.federated.metrics import masked_cross_entropy
from fgl_jax.nn.rgcn import HeteroBlocks, backbone_logits, build_hetero_blocks, init_backbone
from fgl_jax.partition.hetero import SPLIT_SEED, split_hetero
from fgl_jax import validate as V

__all__ = ["FedHGNConfig", "FedHGNState", "HeteroFedData", "METHODS", "alignment_loss", "server_pool",
           "server_aggregate", "fedhgn", "make_fed_data", "hetero_fed_data", "prepare_clients", "train", "early_stop",
           "TrainResult", "majority_accuracy", "register_cli", "build_program", "CLI_DEFAULTS"]

PyTree = Any
METHODS = ("fedhgn", "fedavg", "fedprox", "local", "central", "abl_B", "abl_C", "abl_BC")
_BIG = 1e30  # "infinite" distance for masked pool entries (finite: keeps gradients NaN-free)


@dataclasses.dataclass(frozen=True)
class FedHGNConfig:
    """Hyper-parameters (defaults = paper Appendix C / official configs.yaml, spec §3.3)."""

    method: str = "fedhgn"
    num_bases: int = 20            # B
    hidden: int = 64               # d
    align_lambda: float = 0.5      # lambda of Eq. (3)
    local_steps: int = 3           # E full-batch SGD steps per round
    lr: float = 0.1                # plain SGD
    prox_mu: float = 1.0           # FedProx
    client_fraction: float = 1.0   # C
    # Round-1 pool (spec §4.5 [DECIDE]; the paper is silent): "skip" = no alignment until a client
    # has uploaded (the pool holds only real coefficients); "zeros" = one zero vector per
    # unheard-of client (spec recommendation); "code_quirk" = zeros counted twice (official code).
    # Default "skip", against the spec's recommendation, for a measured reason: with a zero pool
    # each round-1 step scales beta by (1 - lr*2*lambda); at lambda = 5 (lr 0.1) that is 0, so
    # every beta lands on 0 in round 1, every client uploads ~0, the pool is ~0 and beta stays
    # pinned there (all W_r ~ 0): AIFB-RET K=3 50.0 +- 13.3 % at lambda = 5 with "zeros" vs
    # 82.8 +- 1.7 % with "skip" (5 seeds, results.md "Round-1 coefficient pool"), against the
    # paper's Fig. 4 (flat for lambda <= 5). ("code_quirk" doubles the pull: factor -1, no trap.)
    round1_align: str = "skip"
    shuffle_pool: bool = True

    def __post_init__(self):
        own = "FedHGNConfig"
        V.one_of(own, "method", self.method, METHODS)
        if self.decomposed:
            V.at_least(own, "num_bases", self.num_bases, 1)
        V.at_least(own, "local_steps", self.local_steps, 1)
        V.in_interval(own, "client_fraction", self.client_fraction, 0.0, 1.0, closed="right")
        V.one_of(own, "round1_align", self.round1_align, ("zeros", "skip", "code_quirk"))
        V.non_negative(own, "align_lambda", self.align_lambda)
        V.non_negative(own, "prox_mu", self.prox_mu)
        V.positive(own, "lr", self.lr)

    # which mechanism each method uses
    @property
    def decomposed(self) -> bool:      # schema-weight decoupling (bases + coefficients)
        return self.method in ("fedhgn", "abl_B", "abl_C", "abl_BC")

    @property
    def schema_matched(self) -> bool:  # relation slots = union of names (privacy breach)
        return self.method in ("fedavg", "fedprox", "central", "abl_C", "abl_BC")

    @property
    def align(self) -> bool:
        # Structural (is the CA term in the program?); its weight lambda is traced in state.hp,
        # so a lambda sweep including 0 is one program (lambda = 0 multiplies the term away).
        return self.method == "fedhgn"

    def hparams(self) -> dict:
        """Traced, shape-free hyper-parameters (state.hp): what run_sweep can vectorise."""
        return {"lr": jnp.float32(self.lr), "align_lambda": jnp.float32(self.align_lambda),
                "prox_mu": jnp.float32(self.prox_mu)}

    @property
    def share_coeffs(self) -> bool:
        return self.method in ("abl_C", "abl_BC")

    def averaged_keys(self) -> tuple[str, ...]:
        """Shared-group parameters the server averages (θ_c and, unless ablated, the bases)."""
        if self.method == "local":
            return ()
        theta_c = ("b1", "b2", "W_out", "b_out")
        if self.method in ("fedavg", "fedprox", "central"):
            return theta_c + ("W",)
        if self.method == "abl_C":
            return theta_c
        return theta_c + ("V",)


@flax.struct.dataclass
class HeteroFedData:
    """blocks [C, ...]: evaluated every round (val/test targets); train_blocks [C, ...]: the local
    steps' blocks (train targets; may be `blocks` itself); train_weight [C] = N_k (#labelled
    training nodes); n_val/n_test [C]."""

    blocks: HeteroBlocks
    train_weight: jax.Array
    n_val: jax.Array
    n_test: jax.Array
    train_blocks: HeteroBlocks
    flat_train: "FlatBlocks"     # train_blocks, all clients flattened (the fast path, see flatten_blocks)
    flat_eval: "FlatBlocks"      # blocks, flattened


def make_fed_data(blocks: HeteroBlocks, train_blocks: Optional[HeteroBlocks] = None) -> HeteroFedData:
    """From one block set (all labelled targets), or an evaluation set plus a training set built
    with build_hetero_blocks(..., targets="eval" / "train") (same numbers, less work)."""
    train_blocks = blocks if train_blocks is None else train_blocks
    if (train_blocks.num_emb_rows, train_blocks.num_rel_local, train_blocks.num_rel_global) != \
            (blocks.num_emb_rows, blocks.num_rel_local, blocks.num_rel_global):
        raise ValueError("train and evaluation blocks must come from the same client graphs")
    cnt = lambda m: jnp.asarray(np.asarray(m).sum(1), jnp.float32) * jnp.asarray(blocks.client_mask, jnp.float32)
    return HeteroFedData(blocks, cnt(train_blocks.train), cnt(blocks.val), cnt(blocks.test), train_blocks,
                         flatten_blocks(train_blocks), flatten_blocks(blocks))


# ---------------------------------------------------------------------------------------------
# Fast path: every client's block in one flat graph, layer 2 on (target, relation) pairs only
# ---------------------------------------------------------------------------------------------
# Measured on the 2-core CPU (MUTAG-RE K=10, benchmarks/bench_fedhgn.py): vmapping the per-client
# backbone turns each gather/segment_sum into a batched scatter that costs ~2x ten unbatched ones,
# and the dense layer-2 product [T, R2*D] @ [R2*D, D] spends ~77 % of its flops on (target,
# relation) pairs without an edge (873 of 224*17 = 3,808 pairs are used). The flat form offsets
# every client's node ids into one graph (one sorted segment_sum per layer for all clients; the
# clients' parameters stay separate [C, ...] arrays, so the gradient of the summed per-client
# losses is exactly each client's own gradient) and multiplies each used (target, relation) pair
# by its W_r once: pairs are grouped by relation, relations ranked by how many targets they
# reach, and ranks of similar size padded to a common capacity and multiplied as one batched
# einsum. Same function as rgcn.backbone_logits (tests compare them), different summation order.
@flax.struct.dataclass
class FlatBlocks:
    """All C clients' two-hop blocks as one graph (built on the host by `flatten_blocks`).

    src1/dst1/norm1 [E1f]: layer-1 edges, src into the flat embedding table [C*U], dst into the
    flat hidden rows [C*S], sorted by dst (padding: norm 0 at the last row).
    src2/pair2/norm2 [E2f]: layer-2 edges, src into flat hidden rows, pair2 = flat (target,
    relation) pair [C*P], sorted by pair. pair_tgt [C*P]: each pair's flat target row [C*T].
    slot_local/slot_global [C, Q]: the relation slot (row of beta / W) of each rank group.
    y/train/val/test [C, T]: targets (as in HeteroBlocks). groups: static (first rank, number of
    ranks, capacity, pair offset) per batched einsum.
    """

    src1: jax.Array
    dst1: jax.Array
    norm1: jax.Array
    src2: jax.Array
    pair2: jax.Array
    norm2: jax.Array
    pair_tgt: jax.Array
    slot_local: jax.Array
    slot_global: jax.Array
    y: jax.Array
    train: jax.Array
    val: jax.Array
    test: jax.Array
    groups: tuple = flax.struct.field(pytree_node=False)
    num_clients: int = flax.struct.field(pytree_node=False)
    num_emb_rows: int = flax.struct.field(pytree_node=False)
    num_hidden: int = flax.struct.field(pytree_node=False)
    num_targets: int = flax.struct.field(pytree_node=False)
    num_pairs: int = flax.struct.field(pytree_node=False)


def _rank_groups(caps: np.ndarray) -> list[tuple[int, int, int]]:
    """Host: (first rank, number of ranks, capacity) buckets over capacities sorted descending;
    a bucket takes ranks while they need at least half its capacity (<= 2x padding per rank)."""
    out, i = [], 0
    while i < len(caps):
        c0 = max(int(caps[i]), 1)
        j = i + 1
        while j < len(caps) and 2 * int(caps[j]) >= c0:
            j += 1
        out.append((i, j - i, c0))
        i = j
    return out


def _pad_edges(arrays: list, fill: list, multiple: int = 64) -> list:
    n = arrays[0].size
    pad = (-n) % multiple if n else multiple
    return [np.concatenate([a, np.full(pad, f, a.dtype)]) for a, f in zip(arrays, fill)]


def flatten_blocks(blocks: HeteroBlocks) -> FlatBlocks:
    """Host: HeteroBlocks [C, ...] -> FlatBlocks (padding edges dropped, clients offset into one
    graph, layer-2 edges keyed by their (target, relation) pair)."""
    b = jax.tree.map(np.asarray, blocks)
    C, U, S, T = b.num_clients, b.num_emb_rows, b.num_hidden, b.num_targets
    s1, d1, n1, pairs = [], [], [], []
    for c in range(C):
        m = b.norm1[c] > 0
        s1.append(b.src1[c][m].astype(np.int64) + c * U)
        d1.append(b.dst1[c][m].astype(np.int64) + c * S)
        n1.append(b.norm1[c][m])
        m2 = b.norm2[c] > 0
        t = b.dst2[c][m2].astype(np.int64)
        ls = b.slots2_local[c][b.rel2_local[c][m2]].astype(np.int64)
        gs = b.slots2_global[c][b.rel2_global[c][m2]].astype(np.int64)
        uk, inv = np.unique(ls * T + t, return_inverse=True)
        pslot, ptgt = uk // T, uk % T
        slots, cnt = np.unique(pslot, return_counts=True)
        order = np.lexsort((slots, -cnt))                       # ranks: most-used relation first
        g_of_l = dict(zip(ls.tolist(), gs.tolist()))
        pairs.append(dict(src=b.src2[c][m2].astype(np.int64), norm=b.norm2[c][m2], inv=inv.reshape(-1),
                          pslot=pslot, ptgt=ptgt, slots=slots[order], cnt=cnt[order],
                          gslots=np.array([g_of_l[int(x)] for x in slots[order]], np.int64)))
    Q = max(1, max(p["slots"].size for p in pairs))
    caps = np.zeros(Q, np.int64)
    for p in pairs:
        caps[:p["cnt"].size] = np.maximum(caps[:p["cnt"].size], p["cnt"])
    groups, off_of_rank, cap_of_rank, P = [], np.zeros(Q, np.int64), np.zeros(Q, np.int64), 0
    for q0, n, cap in _rank_groups(caps):
        groups.append((q0, n, cap, P))
        off_of_rank[q0:q0 + n] = P + cap * np.arange(n)
        cap_of_rank[q0:q0 + n] = cap
        P += n * cap
    s2, p2, n2 = [], [], []
    pair_tgt = np.zeros((C, P), np.int64) + (np.arange(C) * T)[:, None]
    slot_local, slot_global = np.zeros((C, Q), np.int32), np.zeros((C, Q), np.int32)
    for c, p in enumerate(pairs):
        rank = np.zeros(int(p["slots"].max()) + 1 if p["slots"].size else 1, np.int64)
        rank[p["slots"]] = np.arange(p["slots"].size)
        r = rank[p["pslot"]]
        # position of each pair inside its relation's group: pairs are sorted by (slot, target)
        first = np.searchsorted(p["pslot"], p["pslot"], side="left")
        pos = off_of_rank[r] + (np.arange(p["pslot"].size) - first)
        pair_tgt[c, pos] = c * T + p["ptgt"]
        s2.append(p["src"] + c * S)
        p2.append(pos[p["inv"]] + c * P)
        n2.append(p["norm"])
        slot_local[c, :p["slots"].size] = p["slots"]
        slot_global[c, :p["slots"].size] = p["gslots"]
    cat = lambda xs, dt: np.concatenate(xs).astype(dt) if xs else np.zeros(0, dt)
    s1, d1, n1 = cat(s1, np.int64), cat(d1, np.int64), cat(n1, np.float32)
    o = np.argsort(d1, kind="stable")
    s1, d1, n1 = _pad_edges([s1[o], d1[o], n1[o]], [0, C * S - 1, 0.0])
    s2, p2, n2 = cat(s2, np.int64), cat(p2, np.int64), cat(n2, np.float32)
    o = np.argsort(p2, kind="stable")
    s2, p2, n2 = _pad_edges([s2[o], p2[o], n2[o]], [0, C * P - 1, 0.0])
    i32 = lambda a: jnp.asarray(a.astype(np.int32))
    return FlatBlocks(src1=i32(s1), dst1=i32(d1), norm1=jnp.asarray(n1), src2=i32(s2), pair2=i32(p2),
                      norm2=jnp.asarray(n2), pair_tgt=i32(pair_tgt.reshape(-1)), slot_local=jnp.asarray(slot_local),
                      slot_global=jnp.asarray(slot_global), y=jnp.asarray(b.y), train=jnp.asarray(b.train),
                      val=jnp.asarray(b.val), test=jnp.asarray(b.test), groups=tuple(groups), num_clients=C,
                      num_emb_rows=U, num_hidden=S, num_targets=T, num_pairs=P)


def flat_logits(params: dict, fb: FlatBlocks, schema_matched: bool = False) -> jax.Array:
    """Logits [C, T, classes] of every client's targets; params with a leading client axis [C, ...]
    (as rgcn.backbone_logits vmapped over clients, spec §2.3)."""
    shared, emb = params["shared"], params["private"]["emb"]
    C, U, D = emb.shape
    S, T, P = fb.num_hidden, fb.num_targets, fb.num_pairs
    # Layer 1 (i2h): weight-free per-canonical-type mean (norm1), summed over types, + b1, ReLU.
    h1 = jax.ops.segment_sum(emb.reshape(C * U, D)[fb.src1] * fb.norm1[:, None], fb.dst1, num_segments=C * S,
                             indices_are_sorted=True)
    h1 = jax.nn.relu(h1.reshape(C, S, D) + shared["b1"][:, None, :]).reshape(C * S, D)
    # Layer 2 (h2o): agg[pair] = sum of normalised h1 messages of one relation into one target.
    agg = jax.ops.segment_sum(h1[fb.src2] * fb.norm2[:, None], fb.pair2, num_segments=C * P,
                              indices_are_sorted=True).reshape(C, P, D)
    slot = fb.slot_global if schema_matched else fb.slot_local                   # [C, Q]
    if "V" in shared:
        beta = jnp.take_along_axis(params["coeffs"]["beta"], slot[:, :, None], axis=1)       # [C, Q, B]
        B = beta.shape[-1]
        W = jnp.einsum("cqb,cbk->cqk", beta, shared["V"].reshape(C, B, D * D)).reshape(C, -1, D, D)  # Eq. (2)
    else:
        W = jnp.take_along_axis(shared["W"], slot[:, :, None, None], axis=1)                 # [C, Q, D, D]
    msg = [jnp.einsum("cgpd,cgde->cgpe", agg[:, off:off + n * cap].reshape(C, n, cap, D), W[:, q0:q0 + n])
           .reshape(C, n * cap, D) for q0, n, cap, off in fb.groups]
    msg = jnp.concatenate(msg, axis=1).reshape(C * P, D)
    h2 = jax.ops.segment_sum(msg, fb.pair_tgt, num_segments=C * T).reshape(C, T, D) + shared["b2"][:, None, :]
    # NodeClassifier: ReLU then Linear.
    return jnp.einsum("ctd,cdk->ctk", jax.nn.relu(h2), shared["W_out"]) + shared["b_out"][:, None, :]


def hetero_fed_data(graphs: Sequence[HeteroGraph]) -> HeteroFedData:
    """Client graphs -> HeteroFedData with separate training (train targets) and evaluation
    (val/test targets) blocks: each local step computes only the logits it trains on."""
    ev, vocab = build_hetero_blocks(graphs, targets="eval")
    tr, _ = build_hetero_blocks(graphs, vocab=vocab, targets="train")
    return make_fed_data(ev, tr)


@flax.struct.dataclass
class FedHGNState:
    """round; server: averaged params; shared/coeffs/private: each client's own copy [C, ...];
    beta_store [C, R, B] and seen [C]: the server's record of the last uploaded coefficients;
    hp: traced scalars {lr, align_lambda, prox_mu} (sweepable with run_sweep)."""

    round: jax.Array
    server: PyTree
    shared: PyTree
    coeffs: PyTree
    private: PyTree
    beta_store: jax.Array
    seen: jax.Array
    hp: dict


# ---------------------------------------------------------------------------------------------
# Eq. (3): coefficients alignment
# ---------------------------------------------------------------------------------------------
def alignment_loss(beta: jax.Array, slot_mask: jax.Array, pool: jax.Array, pool_mask: jax.Array) -> jax.Array:
    """sum_{r in slots} min_{m in pool} ||beta_r - pool_m||^2  (Eq. 3, one layer, edge-type term).

    beta [R, B]; slot_mask [R] (padded relation slots excluded); pool [P, B] (other clients'
    coefficients, treated as constants); pool_mask [P]. An empty pool gives 0.
    """
    pool = jax.lax.stop_gradient(pool)
    # Nearest pooled vector via ||beta_r||^2 - 2 beta_r.p + ||p||^2 (an [R,B]x[B,P] product; the
    # [R,P,B] difference tensor cost ~10 ms of a 60 ms MUTAG K=10 round, an argmin another 3),
    # then the exact squared distance to it: the value and gradient 2 (beta_r - p*) of the min
    # over exact distances (ties: the first one, as argmin, whose variadic reduction is slower
    # here than two plain min reductions).
    b = jax.lax.stop_gradient(beta)
    score = jnp.sum(pool ** 2, axis=-1)[None, :] - 2.0 * (b @ pool.T)            # [R, P]
    score = jnp.where(pool_mask[None, :], score, _BIG)
    pos = jnp.arange(pool.shape[0])
    hit = score <= jnp.min(score, axis=1, keepdims=True)                        # [R, P]
    nearest = pool[jnp.min(jnp.where(hit, pos[None, :], pool.shape[0] - 1), axis=1)]   # [R, B]
    dmin = jnp.sum((beta - nearest) ** 2, axis=-1)
    total = jnp.sum(jnp.where(slot_mask, dmin, 0.0))
    return jnp.where(jnp.any(pool_mask), total, 0.0)


# ---------------------------------------------------------------------------------------------
# Server side: takes only what clients upload (weights, coefficients and how many there are)
# ---------------------------------------------------------------------------------------------
def server_pool(beta_store: jax.Array, slot_mask: jax.Array, seen: jax.Array, receivers: jax.Array,
                key: jax.Array, round1: str = "zeros", shuffle: bool = True) -> tuple[jax.Array, jax.Array]:
    """Coefficient pool for each receiving client: every *other* client's stored β, anonymised.

    beta_store [C, R, B]; slot_mask [C, R] (how many vectors each client uploaded); seen [C]
    (has uploaded at least once); receivers [m]. Returns pool [m, C*R, B], mask [m, C*R].
    A client never heard from contributes one zero vector (round1="zeros"/"code_quirk") or
    nothing ("skip"). Rows are shuffled per receiver, so a receiver cannot tell which client
    a vector came from (the min in Eq. 3 is permutation-invariant).
    """
    C, R, B = beta_store.shape
    flat = beta_store.reshape(C * R, B)
    owner = jnp.repeat(jnp.arange(C), R)
    slot = jnp.tile(jnp.arange(R), C)
    valid = slot_mask.reshape(-1) & seen[owner]
    if round1 != "skip":
        valid = valid | ((~seen[owner]) & (slot == 0))
    flat = jnp.where(seen[owner][:, None], flat, 0.0)

    def for_receiver(k, kk):
        mask = valid & (owner != k)
        if not shuffle:
            return flat, mask
        perm = jax.random.permutation(kk, C * R)
        return flat[perm], mask[perm]

    return jax.vmap(for_receiver)(receivers, jax.random.split(key, receivers.shape[0]))


def server_aggregate(uploads: dict, weights: jax.Array, previous: dict) -> dict:
    """Line 6: sum_k (N_k / N_S) theta_k over the sampled clients, per uploaded leaf.

    uploads: {name: [m, ...]}; weights [m] = N_k; previous: the server's current values (kept
    when all sampled clients have N_k = 0).
    """
    tot = jnp.sum(weights)
    w = weights / jnp.maximum(tot, 1e-12)

    def avg(x, old):
        new = jnp.tensordot(w, x, axes=1)
        return jnp.where(tot > 0, new, old)

    return {k: avg(v, previous[k]) for k, v in uploads.items()}


def server_average_coeffs(beta: jax.Array, owns: jax.Array, weights: jax.Array, previous: jax.Array) -> jax.Array:
    """Ablations C / B+C: per relation name, the N_k-weighted mean over the sampled clients that
    hold it (schema matched). beta [m, R, B], owns [m, R]; slots nobody sampled holds keep `previous`."""
    w = weights[:, None] * owns.astype(beta.dtype)                 # [m, R]
    tot = w.sum(0)                                                 # [R]
    new = jnp.einsum("mr,mrb->rb", w, beta) / jnp.maximum(tot, 1e-12)[:, None]
    return jnp.where((tot > 0)[:, None], new, previous)


# ---------------------------------------------------------------------------------------------
# Client side
# ---------------------------------------------------------------------------------------------
def _sqdist(a: dict, b: dict) -> jax.Array:
    return sum(jnp.sum((a[k] - b[k]) ** 2) for k in a)


def _client_update(cfg: FedHGNConfig, hp: dict, params: dict, blk: HeteroBlocks, pool: jax.Array,
                   pool_mask: jax.Array, anchor: dict, align_scale: jax.Array):
    """Alg. 1 lines 8-12 for one client: E full-batch SGD steps with lr = hp["lr"] on
    CE + hp["align_lambda"] * L_align (FedHGN) or + hp["prox_mu"]/2 ||shared - anchor||^2
    (FedProx). Returns (params, first-step CE)."""
    rel, slots = (blk.rel2_global, blk.slots2_global) if cfg.schema_matched else (blk.rel2_local, blk.slots2_local)
    slot_mask = blk.owns if cfg.schema_matched else blk.rel_mask
    y = jnp.maximum(blk.y, 0)

    def loss_fn(p):
        logits = backbone_logits(p, blk, rel, slots)
        task = masked_cross_entropy(logits, y, blk.train)
        total = task
        if cfg.align:
            total = total + hp["align_lambda"] * align_scale * alignment_loss(p["coeffs"]["beta"], slot_mask,
                                                                               pool, pool_mask)
        if cfg.method == "fedprox":
            total = total + 0.5 * hp["prox_mu"] * _sqdist(p["shared"], anchor)
        return total, task

    def step(p, _):
        (_, task), g = jax.value_and_grad(loss_fn, has_aux=True)(p)
        return jax.tree.map(lambda a, b: a - hp["lr"] * b, p, g), task

    params, tasks = jax.lax.scan(step, params, None, length=cfg.local_steps)
    return params, tasks[0]


def _clients_update_flat(cfg: FedHGNConfig, hp: dict, params: dict, fb: FlatBlocks, slot_mask: jax.Array,
                        pool: jax.Array, pool_mask: jax.Array, anchor: dict, align_scale: jax.Array):
    """_client_update for all C clients at once on the flat blocks (same result): the loss is the
    sum of the clients' losses, whose gradient w.r.t. the stacked [C, ...] parameters is each
    client's own gradient. Returns (params, first-step CE [C])."""
    y = jnp.maximum(fb.y, 0)

    def loss_fn(p):
        task = jax.vmap(masked_cross_entropy)(flat_logits(p, fb, cfg.schema_matched), y, fb.train)   # [C]
        total = task
        if cfg.align:
            total = total + hp["align_lambda"] * align_scale * jax.vmap(alignment_loss)(
                p["coeffs"]["beta"], slot_mask, pool, pool_mask)
        if cfg.method == "fedprox":
            total = total + 0.5 * hp["prox_mu"] * jax.vmap(_sqdist)(p["shared"], anchor)
        return jnp.sum(total), task

    def step(p, _):
        (_, task), g = jax.value_and_grad(loss_fn, has_aux=True)(p)
        return jax.tree.map(lambda a, b: a - hp["lr"] * b, p, g), task

    params, tasks = jax.lax.scan(step, params, None, length=cfg.local_steps)
    return params, tasks[0]


def _evaluate_flat(cfg: FedHGNConfig, params: dict, fb: FlatBlocks) -> dict:
    """Per-client correct counts [C] on val/test of every client (params [C, ...]), flat blocks."""
    correct = jnp.argmax(flat_logits(params, fb, cfg.schema_matched), -1) == fb.y
    cnt = lambda m: jnp.sum(correct & m, axis=-1).astype(jnp.float32)
    return {"val_correct": cnt(fb.val), "test_correct": cnt(fb.test)}


# ---------------------------------------------------------------------------------------------
# The algorithm
# ---------------------------------------------------------------------------------------------
def _num_sampled(cfg: FedHGNConfig, C: int) -> int:
    return max(int(round(cfg.client_fraction * C)), 1)


def fedhgn(cfg: FedHGNConfig) -> FederatedAlgorithm:
    """FederatedAlgorithm(init, round) for any method of `cfg` (data: HeteroFedData)."""
    avg_keys = cfg.averaged_keys()

    def num_slots(blocks: HeteroBlocks) -> int:
        return blocks.num_rel_global if cfg.schema_matched else blocks.num_rel_local

    def init(key: jax.Array, data: HeteroFedData) -> FedHGNState:
        blocks = data.blocks
        C, R = blocks.num_clients, num_slots(blocks)
        k_server, k_clients = jax.random.split(key)
        nb = cfg.num_bases if cfg.decomposed else 0
        # Server draws the shared weights once (spec §4.11); private parts per client.
        server_p = init_backbone(k_server, R, blocks.num_classes, blocks.num_emb_rows, cfg.hidden, nb)
        per_client = jax.vmap(lambda k: init_backbone(k, R, blocks.num_classes, blocks.num_emb_rows,
                                                      cfg.hidden, nb))(jax.random.split(k_clients, C))
        shared = jax.tree.map(lambda a: jnp.broadcast_to(a, (C,) + a.shape), server_p["shared"])
        coeffs = per_client["coeffs"]
        server = dict(server_p["shared"])
        if cfg.share_coeffs:
            server["beta"] = server_p["coeffs"]["beta"]
            coeffs = {"beta": jnp.broadcast_to(server["beta"], (C,) + server["beta"].shape)}
        B = cfg.num_bases if cfg.decomposed else 1
        return FedHGNState(round=jnp.int32(0), server=server, shared=shared, coeffs=coeffs,
                           private=per_client["private"], beta_store=jnp.zeros((C, R, B)),
                           seen=jnp.zeros(C, bool), hp=cfg.hparams())

    def client_view(state: FedHGNState, idx) -> dict:
        """Parameters a client trains/evaluates with: averaged keys from the server, the rest its own."""
        shared = {k: (jnp.broadcast_to(state.server[k], (idx.shape[0],) + state.server[k].shape)
                      if k in avg_keys else v[idx]) for k, v in state.shared.items()}
        coeffs = {k: v[idx] for k, v in state.coeffs.items()}
        if cfg.share_coeffs:
            coeffs = {"beta": jnp.broadcast_to(state.server["beta"], (idx.shape[0],) + state.server["beta"].shape)}
        return {"shared": shared, "coeffs": coeffs, "private": jax.tree.map(lambda a: a[idx], state.private)}

    def round_fn(state: FedHGNState, data: HeteroFedData, key: jax.Array):
        blocks = data.blocks
        C = blocks.num_clients
        m = _num_sampled(cfg, C)
        k_sample, k_pool = jax.random.split(key)
        # Line 3: sample S_t (all clients when C = 1).
        idx = jnp.arange(C) if m == C else jnp.sort(jax.random.permutation(k_sample, C)[:m])
        blk = data.train_blocks.take(idx)
        slot_mask = blocks.owns if cfg.schema_matched else blocks.rel_mask
        params = client_view(state, idx)
        # Server -> clients: anonymous pool of other clients' coefficients (only β crosses over).
        if cfg.align:
            pool, pool_mask = server_pool(state.beta_store, slot_mask, state.seen, idx, k_pool,
                                          cfg.round1_align, cfg.shuffle_pool)
            quirk = 2.0 if cfg.round1_align == "code_quirk" else 1.0
            align_scale = jnp.where(jnp.any(state.seen), 1.0, quirk) * jnp.ones(m)
        else:
            pool = jnp.zeros((m, 1, state.beta_store.shape[-1]))
            pool_mask = jnp.zeros((m, 1), bool)
            align_scale = jnp.ones(m)
        anchor = params["shared"]
        # Lines 8-12, all sampled clients at once (every client: the flat fast path).
        if m == C:
            new, loss = _clients_update_flat(cfg, state.hp, params, data.flat_train, slot_mask, pool, pool_mask,
                                             anchor, align_scale)
        else:
            new, loss = jax.vmap(lambda p, b, pl, pm, an, s: _client_update(cfg, state.hp, p, b, pl, pm, an, s))(
                params, blk, pool, pool_mask, anchor, align_scale)
        w = data.train_weight[idx]
        # Line 6: the server averages the shared weights (it never sees embeddings or names).
        server = dict(state.server)
        if avg_keys:
            server.update(server_aggregate({k: new["shared"][k] for k in avg_keys}, w,
                                           {k: state.server[k] for k in avg_keys}))
        if cfg.share_coeffs:
            server["beta"] = server_average_coeffs(new["coeffs"]["beta"], slot_mask[idx], w, state.server["beta"])
        # Line 7: store uploaded coefficients; unsampled clients keep their previous ones.
        beta_store, seen = state.beta_store, state.seen
        if cfg.decomposed:
            beta_store = beta_store.at[idx].set(new["coeffs"]["beta"])
            seen = seen.at[idx].set(True)
        put = lambda old, upd: jax.tree.map(lambda o, u: o.at[idx].set(u), old, upd)
        state = FedHGNState(round=state.round + 1, server=server, shared=put(state.shared, new["shared"]),
                            coeffs=put(state.coeffs, new["coeffs"]), private=put(state.private, new["private"]),
                            beta_store=beta_store, seen=seen, hp=state.hp)
        # Evaluate every client with the new shared weights + its own private parts.
        ev = _evaluate_flat(cfg, client_view(state, jnp.arange(C)), data.flat_eval)
        metrics = {
            "train_loss": jnp.sum(loss * w) / jnp.maximum(jnp.sum(w), 1e-12),
            "val_acc": jnp.sum(ev["val_correct"]) / jnp.maximum(jnp.sum(data.n_val), 1.0),
            "test_acc": jnp.sum(ev["test_correct"]) / jnp.maximum(jnp.sum(data.n_test), 1.0),
            "val_correct": ev["val_correct"], "test_correct": ev["test_correct"],
        }
        return state, metrics

    return FederatedAlgorithm(init=init, round=round_fn)


# ---------------------------------------------------------------------------------------------
# Host: data preparation, early stopping, training driver
# ---------------------------------------------------------------------------------------------
def prepare_clients(dataset: str, strategy: str, num_clients: int, data_dir=None,
                    split_seed: int = SPLIT_SEED) -> tuple[list[HeteroGraph], HeteroGraph]:
    """(client graphs with reverse edges, the central graph with reverse edges).

    strategy "central" returns the whole graph as the single client."""
    g = load_hetero(dataset, data_dir=data_dir, reverse=False) if dataset in ("aifb", "mutag") \
        else load_hetero(dataset, data_dir=data_dir)
    central = g.add_reverse()
    if strategy.lower() == "central":
        return [central], central
    return list(split_hetero(g, strategy, num_clients, split_seed).clients), central


def early_stop(val: np.ndarray, patience: int = 10, delta: float = 1e-5) -> tuple[int, int]:
    """(best index, number of rounds actually run) of early stopping on a val-accuracy history:
    improvement means val >= best + delta; stop after `patience` rounds without one."""
    best, best_i, wait = -np.inf, 0, 0
    for i, v in enumerate(np.asarray(val, float)):
        if v >= best + delta:
            best, best_i, wait = v, i, 0
        else:
            wait += 1
            if wait >= patience:
                return best_i, i + 1
    return best_i, len(val)


@dataclasses.dataclass
class TrainResult:
    test_acc: float           # weighted test accuracy at the early-stopping point
    val_acc: float
    best_round: int           # 1-based
    rounds_run: int           # where early stopping ended (== max_rounds if it never triggered)
    history: dict
    state: Any
    compile_seconds: float
    run_seconds: float
    seconds_per_round: float
    diverged: bool = False    # training loss became NaN/inf (on_nonfinite="stop"); scored on the rounds before


def _stopped(cfg: FedHGNConfig, hist: dict, n_val: np.ndarray, patience: int) -> bool:
    if cfg.method == "local":
        vc = np.asarray(hist["val_correct"])
        acc = vc / np.maximum(n_val, 1)
        return all(early_stop(acc[:, k], patience)[1] < acc.shape[0] for k in range(acc.shape[1]) if n_val[k] > 0)
    return early_stop(hist["val_acc"], patience)[1] < len(hist["val_acc"])


def _chunk_runner(alg: FederatedAlgorithm, length: int, batched: bool = False):
    """Jitted (state, data, key, start) -> (state, metrics [length, ...]): `length` rounds as one
    lax.scan. batched=True vmaps it over a leading seed axis of state/key (one program for S
    seeds: the win on accelerators; on a CPU, seeds one after another are faster, since a vmapped
    scatter costs more than S unbatched ones and the CPU has no idle parallel units)."""

    def one_seed(state, data, key, start):
        def body(st, r):
            return alg.round(st, data, jax.random.fold_in(key, r))
        return jax.lax.scan(body, state, start + jnp.arange(length, dtype=jnp.int32))

    return jax.jit(jax.vmap(one_seed, in_axes=(0, None, 0, None)) if batched else one_seed)


def train(cfg: FedHGNConfig, data: HeteroFedData, seeds: Sequence[int] | int, max_rounds: int = 1000,
          patience: int = 10, chunk: int = 20, on_nonfinite: str = "raise"):
    """Run rounds as compiled lax.scan chunks until early stopping (or max_rounds), one seed after
    another with one compiled program; report per seed the weighted test accuracy at the best
    validation round (Local: per client, weighted by n_test). Seed s uses
    jax.random.split(PRNGKey(s)) -> (init key, run key) and round r the key fold_in(run key, r).
    Returns a TrainResult, or a list for a seed list.

    on_nonfinite: "raise" (FloatingPointError) or "stop": a seed whose training loss becomes
    NaN/inf stops there and is scored by early stopping on its finite rounds (what the official
    PyTorch loop amounts to: it keeps the best-validation checkpoint); TrainResult.diverged says so.
    """
    if on_nonfinite not in ("raise", "stop"):
        raise ValueError(f"on_nonfinite must be 'raise' or 'stop', got {on_nonfinite!r}")
    single = isinstance(seeds, (int, np.integer))
    seeds = [int(seeds)] if single else [int(s) for s in seeds]
    alg = fedhgn(cfg)
    init = jax.jit(alg.init)
    chunk = max(1, min(chunk, max_rounds))
    runner = None
    n_val, n_test = np.asarray(data.n_val), np.asarray(data.n_test)
    out = []
    for seed in seeds:
        init_key, run_key = jax.random.split(jax.random.PRNGKey(seed))
        state = init(init_key, data)
        compile_s = 0.0
        if runner is None:
            t0 = time.perf_counter()
            runner = _chunk_runner(alg, chunk).lower(state, data, run_key, jnp.int32(0)).compile()
            compile_s = time.perf_counter() - t0
        h: dict = {}
        r, run_s = 0, 0.0
        while r < max_rounds:
            t0 = time.perf_counter()
            state, met = runner(state, data, run_key, jnp.int32(r))
            met = jax.device_get(met)
            run_s += time.perf_counter() - t0
            for k, v in met.items():
                h.setdefault(k, []).extend(np.asarray(v).tolist())
            r += chunk
            finite = np.isfinite(np.asarray(h["train_loss"]))
            if not finite.all():
                if on_nonfinite == "raise":
                    raise FloatingPointError(f"train_loss became non-finite within rounds {r - chunk + 1}..{r} "
                                             f"(seed {seed}); lower lr or align_lambda")
                break
            if _stopped(cfg, h, n_val, patience):
                break
        finite = np.isfinite(np.asarray(h["train_loss"]))
        diverged = not finite.all()
        n_ok = int(np.argmin(finite)) if diverged else len(finite)
        h = {k: np.asarray(v)[:min(max_rounds, max(n_ok, 1))] for k, v in h.items()}
        if cfg.method == "local":
            vc, tc = h["val_correct"], h["test_correct"]
            acc_v = vc / np.maximum(n_val, 1)
            tests, vals, ran = [], [], []
            for k in range(vc.shape[1]):
                b, n = early_stop(acc_v[:, k], patience)
                tests.append(tc[b, k]); vals.append(vc[b, k]); ran.append(n)
            test = float(np.sum(tests) / max(n_test.sum(), 1))
            val = float(np.sum(vals) / max(n_val.sum(), 1))
            best_round, rounds_run = -1, int(max(ran))
        else:
            b, rounds_run = early_stop(h["val_acc"], patience)
            test, val, best_round = float(h["test_acc"][b]), float(h["val_acc"][b]), b + 1
        out.append(TrainResult(test, val, best_round, rounds_run, h, state, compile_s, run_s, run_s / max(r, 1),
                               diverged))
    return out[0] if single else out


def majority_accuracy(graphs: Sequence[HeteroGraph]) -> float:
    """Test-count-weighted accuracy of predicting each client's majority training class (a floor)."""
    correct = total = 0
    for g in graphs:
        tr = g.y[g.train_mask]
        if g.test_mask.sum() == 0:
            continue
        maj = np.bincount(tr, minlength=g.num_classes).argmax() if tr.size else 0
        correct += int((g.y[g.test_mask] == maj).sum())
        total += int(g.test_mask.sum())
    return correct / max(total, 1)


# ---------------------------------------------------------------------------------------------
# CLI: fgl-jax fedhgn --dataset aifb --split RE --clients 3 --method fedhgn
# ---------------------------------------------------------------------------------------------
# Options of `fgl-jax fedhgn` (argparse dest names) = the keys of a YAML run file = build_program's options.
CLI_DEFAULTS = {"dataset": "aifb", "split": "RE", "clients": 3, "method": "fedhgn", "bases": 20, "align_lambda": 0.5,
                "local_steps": None, "lr": 0.1, "prox_mu": 1.0, "client_fraction": 1.0, "round1_align": "skip",
                "max_rounds": 1000, "patience": 10, "seed": 1000, "data_dir": None}


def _config_from_options(o: dict) -> FedHGNConfig:
    steps = o["local_steps"] or (1 if o["method"] in ("local", "central") else 3)
    return FedHGNConfig(method=o["method"], num_bases=int(o["bases"]), align_lambda=float(o["align_lambda"]),
                        local_steps=int(steps), lr=float(o["lr"]), prox_mu=float(o["prox_mu"]),
                        client_fraction=float(o["client_fraction"]), round1_align=o["round1_align"])


def build_program(options: dict, data_dir=None):
    """FedHGN (any method) as a `fgl_jax.federated.Program` from the `fgl-jax fedhgn` options.

    Keys (missing ones take CLI_DEFAULTS): dataset, split (RE/RET), clients, method, bases,
    align_lambda, local_steps, lr, prox_mu, client_fraction, round1_align, max_rounds, patience,
    seed, data_dir. `state.hp` holds lr, align_lambda and prox_mu (traced: run_sweep vectorises
    seeds x these). num_rounds = max_rounds. `fgl_jax.federated.run` selects the best-validation
    round over all rounds (no patience); `train` (the CLI and experiments) applies the paper's
    early stopping to the same round function, so with the same seed both give identical
    histories up to the stopping round.
    """
    from fgl_jax.federated import Program
    from fgl_jax.sysconfig import merge_options, require_at_least_one
    o = merge_options("fedhgn", options, CLI_DEFAULTS)
    require_at_least_one("fedhgn", o, ("clients", "max_rounds"))
    if str(o["split"]).upper() not in ("RE", "RET"):
        raise ValueError(f"fedhgn option 'split' must be RE or RET, got {o['split']!r}")
    cfg = _config_from_options(o)
    strategy = "central" if cfg.method == "central" else str(o["split"]).upper()
    graphs, _ = prepare_clients(o["dataset"], strategy, int(o["clients"]),
                                data_dir if data_dir is not None else o["data_dir"])
    return Program(fedhgn(cfg), hetero_fed_data(graphs), int(o["max_rounds"]),
                   {"method": cfg.method, "dataset": o["dataset"], "split": strategy, "clients": len(graphs),
                    "num_bases": cfg.num_bases, "local_steps": cfg.local_steps,
                    "majority_acc": majority_accuracy(graphs)})


# ---------------------------------------------------------------------------------------------
# CLI: fgl-jax fedhgn --dataset aifb --split RE --clients 3 --method fedhgn
# ---------------------------------------------------------------------------------------------
def register_cli(subparsers) -> None:
    d = CLI_DEFAULTS
    p = subparsers.add_parser("fedhgn", help="FedHGN: federated heterogeneous GNN (Fu & King, IJCAI 2023)")
    p.add_argument("--dataset", default=d["dataset"], choices=["aifb", "mutag", "dblp", "imdb", "acm3025"])
    p.add_argument("--split", default=d["split"], choices=["RE", "RET"])
    p.add_argument("--clients", type=int, default=d["clients"])
    p.add_argument("--method", default=d["method"], choices=list(METHODS))
    p.add_argument("--bases", type=int, default=d["bases"])
    p.add_argument("--align-lambda", type=float, default=d["align_lambda"])
    p.add_argument("--local-steps", type=int, default=d["local_steps"], help="default 3 (FL) / 1 (local, central)")
    p.add_argument("--lr", type=float, default=d["lr"])
    p.add_argument("--prox-mu", type=float, default=d["prox_mu"], help="FedProx proximal weight")
    p.add_argument("--client-fraction", type=float, default=d["client_fraction"])
    p.add_argument("--round1-align", default=d["round1_align"], choices=["skip", "zeros", "code_quirk"],
                   help="coefficient pool before any client has uploaded (see FedHGNConfig)")
    p.add_argument("--max-rounds", type=int, default=d["max_rounds"])
    p.add_argument("--patience", type=int, default=d["patience"])
    p.add_argument("--seed", type=int, default=d["seed"])
    p.add_argument("--data-dir", default=d["data_dir"])
    p.set_defaults(func=_cli_main)


def _cli_main(args) -> dict:
    o = {k: getattr(args, k) for k in CLI_DEFAULTS}
    cfg = _config_from_options(o)
    strategy = "central" if args.method == "central" else args.split
    graphs, _ = prepare_clients(args.dataset, strategy, args.clients, args.data_dir)
    res = train(cfg, hetero_fed_data(graphs), args.seed, args.max_rounds, args.patience)
    out = {"dataset": args.dataset, "split": strategy, "clients": len(graphs), "method": args.method,
           "test_acc": res.test_acc, "val_acc": res.val_acc, "best_round": res.best_round,
           "rounds_run": res.rounds_run, "ms_per_round": 1000 * res.seconds_per_round,
           "majority_acc": majority_accuracy(graphs)}
    print(json.dumps(out))
    return out
