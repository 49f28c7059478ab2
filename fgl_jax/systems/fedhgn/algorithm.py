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
as the per-client backbone, and faster on a CPU); with C < 1 the sampled clients'
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
seeds x values. The paper's early stopping is the program's `Hooks.stop` / `Hooks.select`
(program.py).
"""
from __future__ import annotations

from typing import Any

import flax
import jax
import jax.numpy as jnp

from fgl_jax.federated.algorithm import FederatedAlgorithm
from fgl_jax.federated.metrics import masked_cross_entropy
from fgl_jax.systems.fedhgn.config import FedHGNConfig
from fgl_jax.systems.fedhgn.data import HeteroFedData
from fgl_jax.systems.fedhgn.model import FlatBlocks, flat_logits
from fgl_jax.systems.fedhgn.rgcn import HeteroBlocks, backbone_logits, init_backbone

__all__ = ["FedHGNState", "alignment_loss", "server_pool", "server_aggregate", "server_average_coeffs", "fedhgn"]

PyTree = Any
_BIG = 1e30  # "infinite" distance for masked pool entries (finite: keeps gradients NaN-free)


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
    # [R,P,B] difference tensor was a sixth of a MUTAG K=10 round),
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

    params, tasks = jax.lax.scan(step, params, None, length=cfg.steps)
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

    params, tasks = jax.lax.scan(step, params, None, length=cfg.steps)
    return params, tasks[0]


def _evaluate_flat(cfg: FedHGNConfig, params: dict, fb: FlatBlocks) -> dict:
    """Per-client correct counts [C] on val/test of every client (params [C, ...]), flat blocks."""
    correct = jnp.argmax(flat_logits(params, fb, cfg.schema_matched), -1) == fb.y
    cnt = lambda m: jnp.sum(correct & m, axis=-1).astype(jnp.float32)
    return {"val_correct": cnt(fb.val), "test_correct": cnt(fb.test)}


# ---------------------------------------------------------------------------------------------
# The algorithm
# ---------------------------------------------------------------------------------------------
def num_sampled(cfg: FedHGNConfig, C: int) -> int:
    """Clients sampled per round (client_fraction of C, at least 1)."""
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
        m = num_sampled(cfg, C)
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

    def messages(state: FedHGNState):
        """One sampled client's round: up = its averaged shared weights and its coefficients β
        [R, B] (R relation slots, padded to the largest client's); down = the averaged weights
        and, with alignment, the anonymised pool of the other C - 1 clients' β."""
        C, R, B = state.beta_store.shape
        up = {k: state.server[k] for k in avg_keys}
        down = dict(up)
        if cfg.share_coeffs:
            up["beta"] = down["beta"] = state.server["beta"]
        elif cfg.decomposed:
            up["beta"] = state.beta_store[0]
        if cfg.align:
            down["pool"] = jnp.zeros(((C - 1) * R, B), state.beta_store.dtype)
        return up, down

    return FederatedAlgorithm(init=init, round=round_fn, messages=messages)


