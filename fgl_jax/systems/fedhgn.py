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

Clients hold different schemas (different numbers of relations): the relation axis of β is
padded to the largest client and a slot mask keeps padded slots out of the alignment loss (no
edge uses them, so they receive no task gradient either).

Methods (spec §3.4, §3.7): "fedhgn"; baselines with full per-relation weights: "fedavg" and
"fedprox" (schemas matched by name: relation weights over the union of names), "local" (each
client alone), "central" (one client holding the whole graph); ablations without CA: "abl_B"
(bases averaged), "abl_C" (bases private, coefficients averaged per relation name), "abl_BC"
(both averaged).

Early stopping (patience 10 on the weighted validation accuracy, delta 1e-5) is applied to the
recorded per-round history: rounds after the stopping point cannot change earlier ones, so
running a few extra rounds inside a compiled chunk and cutting the history is identical to
stopping. Local applies it per client.
"""
from __future__ import annotations

import dataclasses
import json
import math
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

__all__ = ["FedHGNConfig", "FedHGNState", "HeteroFedData", "METHODS", "alignment_loss", "server_pool",
           "server_aggregate", "fedhgn", "make_fed_data", "prepare_clients", "train", "early_stop",
           "TrainResult", "majority_accuracy", "register_cli"]

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
    round1_align: str = "zeros"    # zeros | skip | code_quirk (spec §4.5)
    shuffle_pool: bool = True

    def __post_init__(self):
        if self.method not in METHODS:
            raise ValueError(f"unknown method {self.method!r}; choose one of {METHODS}")
        if self.num_bases < 1 and self.decomposed:
            raise ValueError(f"num_bases must be >= 1 for {self.method}, got {self.num_bases}")
        if self.local_steps < 1:
            raise ValueError(f"local_steps must be >= 1, got {self.local_steps}")
        if not 0 < self.client_fraction <= 1:
            raise ValueError(f"client_fraction must be in (0, 1], got {self.client_fraction}")
        if self.round1_align not in ("zeros", "skip", "code_quirk"):
            raise ValueError(f"round1_align must be zeros, skip or code_quirk, got {self.round1_align!r}")
        if self.align_lambda < 0 or self.prox_mu < 0 or self.lr <= 0:
            raise ValueError("align_lambda and prox_mu must be >= 0 and lr > 0")

    # which mechanism each method uses
    @property
    def decomposed(self) -> bool:      # schema-weight decoupling (bases + coefficients)
        return self.method in ("fedhgn", "abl_B", "abl_C", "abl_BC")

    @property
    def schema_matched(self) -> bool:  # relation slots = union of names (privacy breach)
        return self.method in ("fedavg", "fedprox", "central", "abl_C", "abl_BC")

    @property
    def align(self) -> bool:
        return self.method == "fedhgn" and self.align_lambda > 0

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
    """blocks [C, ...]; train_weight [C] = N_k (#labelled training nodes); n_val/n_test [C]."""

    blocks: HeteroBlocks
    train_weight: jax.Array
    n_val: jax.Array
    n_test: jax.Array


def make_fed_data(blocks: HeteroBlocks) -> HeteroFedData:
    cnt = lambda m: jnp.asarray(np.asarray(m).sum(1), jnp.float32) * jnp.asarray(blocks.client_mask, jnp.float32)
    return HeteroFedData(blocks, cnt(blocks.train), cnt(blocks.val), cnt(blocks.test))


@flax.struct.dataclass
class FedHGNState:
    """round; server: averaged params; shared/coeffs/private: each client's own copy [C, ...];
    beta_store [C, R, B] and seen [C]: the server's record of the last uploaded coefficients."""

    round: jax.Array
    server: PyTree
    shared: PyTree
    coeffs: PyTree
    private: PyTree
    beta_store: jax.Array
    seen: jax.Array


# ---------------------------------------------------------------------------------------------
# Eq. (3): coefficients alignment
# ---------------------------------------------------------------------------------------------
def alignment_loss(beta: jax.Array, slot_mask: jax.Array, pool: jax.Array, pool_mask: jax.Array) -> jax.Array:
    """sum_{r in slots} min_{m in pool} ||beta_r - pool_m||^2  (Eq. 3, one layer, edge-type term).

    beta [R, B]; slot_mask [R] (padded relation slots excluded); pool [P, B] (other clients'
    coefficients, treated as constants); pool_mask [P]. An empty pool gives 0.
    """
    pool = jax.lax.stop_gradient(pool)
    d = jnp.sum((beta[:, None, :] - pool[None, :, :]) ** 2, axis=-1)        # [R, P]
    d = jnp.where(pool_mask[None, :], d, _BIG)
    dmin = jnp.min(d, axis=1)
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


def _client_update(cfg: FedHGNConfig, params: dict, blk: HeteroBlocks, pool: jax.Array, pool_mask: jax.Array,
                   anchor: dict, align_scale: jax.Array):
    """Alg. 1 lines 8-12 for one client: E full-batch SGD steps. Returns (params, first-step CE)."""
    rel = blk.rel_global if cfg.schema_matched else blk.rel_local
    slot_mask = blk.owns if cfg.schema_matched else blk.rel_mask
    y = jnp.maximum(blk.y, 0)

    def loss_fn(p):
        logits = backbone_logits(p, blk, rel)
        task = masked_cross_entropy(logits, y, blk.train)
        total = task
        if cfg.align:
            total = total + cfg.align_lambda * align_scale * alignment_loss(p["coeffs"]["beta"], slot_mask,
                                                                             pool, pool_mask)
        if cfg.method == "fedprox":
            total = total + 0.5 * cfg.prox_mu * _sqdist(p["shared"], anchor)
        return total, task

    def step(p, _):
        (_, task), g = jax.value_and_grad(loss_fn, has_aux=True)(p)
        return jax.tree.map(lambda a, b: a - cfg.lr * b, p, g), task

    params, tasks = jax.lax.scan(step, params, None, length=cfg.local_steps)
    return params, tasks[0]


def _evaluate(cfg: FedHGNConfig, params: dict, blocks: HeteroBlocks) -> dict:
    """Per-client correct counts on val/test with each client's evaluation parameters [C, ...]."""
    rel = blocks.rel_global if cfg.schema_matched else blocks.rel_local
    logits = jax.vmap(backbone_logits)(params, blocks, rel)
    correct = (jnp.argmax(logits, -1) == blocks.y)
    cnt = lambda m: jnp.sum(correct & m, axis=-1).astype(jnp.float32)
    return {"val_correct": cnt(blocks.val), "test_correct": cnt(blocks.test), "train_correct": cnt(blocks.train)}


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
                           seen=jnp.zeros(C, bool))

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
        blk = blocks.take(idx)
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
        # Lines 8-12, all sampled clients at once.
        new, loss = jax.vmap(lambda p, b, pl, pm, an, s: _client_update(cfg, p, b, pl, pm, an, s))(
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
                            beta_store=beta_store, seen=seen)
        # Evaluate every client with the new shared weights + its own private parts.
        ev = _evaluate(cfg, client_view(state, jnp.arange(C)), blocks)
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


def _stopped(cfg: FedHGNConfig, hist: dict, n_val: np.ndarray, patience: int) -> bool:
    if cfg.method == "local":
        vc = np.asarray(hist["val_correct"])
        acc = vc / np.maximum(n_val, 1)
        return all(early_stop(acc[:, k], patience)[1] < acc.shape[0] for k in range(acc.shape[1]) if n_val[k] > 0)
    return early_stop(hist["val_acc"], patience)[1] < len(hist["val_acc"])


def _chunk_runner(alg: FederatedAlgorithm, length: int):
    """Jitted (states [S,...], data, keys [S], start) -> (states, metrics [S, length, ...]):
    `length` rounds as one lax.scan, vmapped over S independent seeds (one compile for all)."""

    def one_seed(state, data, key, start):
        def body(st, r):
            return alg.round(st, data, jax.random.fold_in(key, r))
        return jax.lax.scan(body, state, start + jnp.arange(length, dtype=jnp.int32))

    return jax.jit(jax.vmap(one_seed, in_axes=(0, None, 0, None)))


def train(cfg: FedHGNConfig, data: HeteroFedData, seeds: Sequence[int] | int, max_rounds: int = 1000,
          patience: int = 10, chunk: int = 20):
    """Run rounds as compiled lax.scan chunks (seeds vmapped) until every seed has early-stopped
    (or max_rounds); report per seed the weighted test accuracy at the best validation round
    (Local: per client, weighted by n_test). Returns a TrainResult, or a list for a seed list."""
    single = isinstance(seeds, (int, np.integer))
    seeds = [int(seeds)] if single else [int(s) for s in seeds]
    alg = fedhgn(cfg)
    keys = jnp.stack([jax.random.PRNGKey(s) for s in seeds])
    init_keys, run_keys = jax.vmap(jax.random.split, out_axes=1)(keys)
    states = jax.jit(jax.vmap(alg.init, in_axes=(0, None)))(init_keys, data)
    chunk = max(1, min(chunk, max_rounds))
    t0 = time.perf_counter()
    runner = _chunk_runner(alg, chunk).lower(states, data, run_keys, jnp.int32(0)).compile()
    compile_s = time.perf_counter() - t0
    n_val, n_test = np.asarray(data.n_val), np.asarray(data.n_test)
    hists: list[dict] = [dict() for _ in seeds]
    r, run_s = 0, 0.0
    while r < max_rounds:
        t0 = time.perf_counter()
        states, met = runner(states, data, run_keys, jnp.int32(r))
        met = jax.device_get(met)
        run_s += time.perf_counter() - t0
        for i, h in enumerate(hists):
            for k, v in met.items():
                h.setdefault(k, []).extend(np.asarray(v[i]).tolist())
        r += chunk
        if not np.all(np.isfinite(met["train_loss"])):
            raise FloatingPointError(f"train_loss became non-finite within rounds {r - chunk + 1}..{r}")
        if all(_stopped(cfg, h, n_val, patience) for h in hists):
            break
    out = []
    per_round = run_s / max(r * len(seeds), 1)
    for i, h in enumerate(hists):
        h = {k: np.asarray(v)[:max_rounds] for k, v in h.items()}
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
        st = jax.tree.map(lambda a: a[i], states)
        out.append(TrainResult(test, val, best_round, rounds_run, h, st, compile_s, run_s, per_round))
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
def register_cli(subparsers) -> None:
    p = subparsers.add_parser("fedhgn", help="FedHGN: federated heterogeneous GNN (Fu & King, IJCAI 2023)")
    p.add_argument("--dataset", default="aifb", choices=["aifb", "mutag", "dblp", "imdb", "acm3025"])
    p.add_argument("--split", default="RE", choices=["RE", "RET"])
    p.add_argument("--clients", type=int, default=3)
    p.add_argument("--method", default="fedhgn", choices=list(METHODS))
    p.add_argument("--bases", type=int, default=20)
    p.add_argument("--align-lambda", type=float, default=0.5)
    p.add_argument("--local-steps", type=int, default=None, help="default 3 (FL) / 1 (local, central)")
    p.add_argument("--lr", type=float, default=0.1)
    p.add_argument("--client-fraction", type=float, default=1.0)
    p.add_argument("--max-rounds", type=int, default=1000)
    p.add_argument("--patience", type=int, default=10)
    p.add_argument("--seed", type=int, default=1000)
    p.add_argument("--data-dir", default=None)
    p.set_defaults(func=_cli_main)


def _cli_main(args) -> dict:
    steps = args.local_steps or (1 if args.method in ("local", "central") else 3)
    cfg = FedHGNConfig(method=args.method, num_bases=args.bases, align_lambda=args.align_lambda,
                       local_steps=steps, lr=args.lr, client_fraction=args.client_fraction)
    strategy = "central" if args.method == "central" else args.split
    graphs, _ = prepare_clients(args.dataset, strategy, args.clients, args.data_dir)
    blocks, _ = build_hetero_blocks(graphs)
    res = train(cfg, make_fed_data(blocks), args.seed, args.max_rounds, args.patience)
    out = {"dataset": args.dataset, "split": strategy, "clients": len(graphs), "method": args.method,
           "test_acc": res.test_acc, "val_acc": res.val_acc, "best_round": res.best_round,
           "rounds_run": res.rounds_run, "ms_per_round": 1000 * res.seconds_per_round,
           "majority_acc": majority_accuracy(graphs)}
    print(json.dumps(out))
    return out
