"""Baseline frameworks: Local, FedAvg, FedProx, FedPer and Global, as one parametrised round.

They differ only in which parameters the server averages ("shared") and which stay with the
client ("personal"), and in FedProx's proximal term:

    Local   : nothing shared, each client trains alone on its subgraph
    FedAvg  : everything shared, weighted by training nodes (McMahan et al.)
    FedProx : FedAvg + (mu/2)||w - w_global||^2 in the local objective (Li et al.)
    FedPer  : all but the last layer shared (Arivazhagan et al.)
    Global  : FedAvg on a one-client batch holding the whole graph == centralised training
"""
from __future__ import annotations

import dataclasses
from typing import Any, Optional

import flax
import jax
import jax.numpy as jnp
import optax

from fgl_jax.federated.algorithm import FedData, FederatedAlgorithm
from fgl_jax.federated.chunking import check_chunk, map_clients
from fgl_jax.federated.link import evaluate_links, is_link
from fgl_jax.federated.client import OptimConfig, local_train, lr_scale, make_optimizer, node_loss_fn, stack
from fgl_jax.batch import unstack
from fgl_jax.reduce import client_mean  # noqa: F401  (SCAFFOLD's and the tests' import path)
from fgl_jax.privacy.dp import LocalDP, clipped_node_grad, private_mean
from fgl_jax.federated.metrics import AVERAGES, client_counts, summarise
from fgl_jax import validate as V

PyTree = Any
ALGORITHMS = ("local", "fedavg", "fedprox", "fedper", "global")
PERSONALISED = ("local", "fedper")
# OpenFGL's evaluation modes (which model, on which graph); "auto" = fgl_jax's own choice: the
# global model on each client's subgraph, or each client's model for personalised algorithms.
EVAL_MODES = ("auto", "global_model_on_local_data", "global_model_on_global_data",
              "local_model_on_local_data", "local_model_on_global_data")


@dataclasses.dataclass(frozen=True)
class FedConfig:
    """Hyperparameters of the baseline frameworks."""

    algorithm: str = "fedavg"
    local_steps: int = 1
    prox_mu: float = 0.01
    personal_layers: int = 1  # FedPer: how many of the last layers stay local
    reset_optimizer: bool = False  # True: fresh optimiser state every round
    optim: OptimConfig = OptimConfig()
    # None: vmap all clients at once; k: local training and evaluation run k clients at a time
    # (lax.map over client blocks): same numbers, peak memory bounded by k clients' work.
    client_chunk: Optional[int] = None
    eval_mode: str = "auto"         # one of EVAL_MODES (see `evaluate_models`)
    eval_average: str = "pooled"    # "pooled" counts, or "client_nodes": OpenFGL's node-weighted mean
    # client-level DP-FedAvg (`fgl_jax.privacy.dp`): clip each client's update to L2 norm dp_clip
    # (0 = off) and add N(0, (dp_noise * dp_clip / m)^2) to the uniform mean of the m updates
    dp_clip: float = 0.0
    dp_noise: float = 0.0
    # OpenFGL's local DP (per-node clipped gradients + noise on the local model every step); None = off
    ldp: Optional[LocalDP] = None
    # the run's model as data (fgl_jax.nn.ModelSpec), for algorithms that build a variant of it
    model: Optional[Any] = None

    def __post_init__(self):
        V.one_of("FedConfig", "algorithm", self.algorithm, ALGORITHMS)
        V.one_of("FedConfig", "eval_mode", self.eval_mode, EVAL_MODES)
        V.one_of("FedConfig", "eval_average", self.eval_average, AVERAGES)
        if self.algorithm in PERSONALISED and self.eval_mode.startswith("global_model"):
            raise ValueError(f"FedConfig: eval_mode={self.eval_mode!r} needs a global model, but algorithm "
                             f"{self.algorithm!r} keeps personal models; use a local_model_* mode or 'auto'")
        V.at_least("FedConfig", "local_steps", self.local_steps, 1)
        V.non_negative("FedConfig", "prox_mu", self.prox_mu)
        V.non_negative("FedConfig", "personal_layers", self.personal_layers)
        check_chunk(self.client_chunk)
        V.non_negative("FedConfig", "dp_clip", self.dp_clip)
        V.non_negative("FedConfig", "dp_noise", self.dp_noise)
        if self.dp_noise > 0 and self.dp_clip <= 0:
            raise ValueError(f"FedConfig: dp_noise={self.dp_noise} needs a clipping norm dp_clip > 0")
        if self.dp_clip > 0 and self.algorithm == "local":
            raise ValueError("FedConfig: dp_clip (DP-FedAvg) has nothing to protect with algorithm 'local', "
                             "which sends nothing")


@flax.struct.dataclass
class BaselineState:
    round: jax.Array          # int32 scalar: rounds done
    server: PyTree            # global parameters (unused leaves for Local)
    personal: PyTree          # per-client parameters [C, ...] (None unless Local/FedPer)
    opt: PyTree               # per-training-client optimiser state [C_t, ...]
    hp: dict                  # traced hyperparameters {lr, prox_mu}: a vmapped sweep overrides them
    server_opt: PyTree = None  # server optimiser state (FedAvgM, FedAdam, ...); None for plain averaging


def layer_index(path) -> int:
    """Layer number of a parameter from the `<name>_<i>` naming convention of fgl_jax.nn."""
    for entry in reversed(path):
        name = str(getattr(entry, "key", entry))
        tail = name.rsplit("_", 1)
        if len(tail) == 2 and tail[1].isdigit():
            return int(tail[1])
    return -1


def personal_mask(params: PyTree, algorithm: str, num_layers: int, personal_layers: int) -> PyTree:
    """Bool pytree: True where a parameter stays with the client."""
    if algorithm == "local":
        return jax.tree.map(lambda _: True, params)
    if algorithm == "fedper":
        first_personal = num_layers - personal_layers
        return jax.tree_util.tree_map_with_path(lambda p, _: layer_index(p) >= first_personal, params)
    return jax.tree.map(lambda _: False, params)


def weighted_mean(tree: PyTree, weight: jax.Array) -> PyTree:
    """sum_c w_c x_c / sum_c w_c over the leading client axis."""
    w = weight / jnp.maximum(weight.sum(), 1e-12)
    return jax.tree.map(lambda x: jnp.tensordot(w, x, axes=1), tree)


def evaluate(model, params: PyTree, batch, per_client: bool, chunk: Optional[int] = None, *,
             average: str = "pooled") -> dict:
    """Metrics of `params` on every client of `batch`; params [C, ...] if per_client else one model.

    Keys: train/val/test_acc and val_loss (as always), and per split precision_macro,
    recall_macro, f1_macro (+ auc, ap for two classes). A link-prediction model is evaluated on
    the batch's node pairs instead (`fgl_jax.federated.link.evaluate_links`: auc, ap, hits@K, acc). average "pooled": counts summed over
    clients; "client_nodes": OpenFGL's mean of per-client metrics weighted by client node counts.
    """
    if average not in AVERAGES:
        raise ValueError(f"average must be one of {AVERAGES}, got {average!r}")
    if is_link(model):  # link prediction: AUC, AP, Hits@K over the clients' pairs
        return evaluate_links(model, params, batch, per_client, chunk, average=average)
    one = lambda p, b: client_counts(model.apply(p, b, train=False), b.y, b)
    counts = map_clients(one, chunk, in_axes=(0 if per_client else None, 0))(params, batch)
    return summarise(counts, batch.client_mask, average, batch.node_mask.sum(-1).astype(jnp.float32))


def resolve_eval_mode(mode: str, algorithm: str) -> str:
    """'auto' -> the mode fgl_jax uses for `algorithm`; other modes are returned unchanged."""
    if mode == "auto":
        return "local_model_on_local_data" if algorithm in PERSONALISED else "global_model_on_local_data"
    return mode


def evaluate_models(model, data: FedData, mode: str, *, server: PyTree = None, local: PyTree = None,
                    chunk: Optional[int] = None, average: str = "pooled") -> dict:
    """OpenFGL's four evaluation modes (its `FGLTrainer.evaluate`), inside the jitted round.

    global_model_on_local_data: `server` on each client's subgraph (fgl_jax's FedAvg default).
    local_model_on_local_data: client c's model `local` [C, ...] on its own subgraph.
    global_model_on_global_data: `server` once on the whole graph `data.glob` (every edge, the
        union of the clients' masks).
    local_model_on_global_data: every client's model on the whole graph; OpenFGL weights the C
        results equally (each has the global graph's node count), "pooled" sums their counts.
    """
    if mode not in EVAL_MODES or mode == "auto":
        raise ValueError(f"evaluate_models: mode must be one of {EVAL_MODES[1:]}, got {mode!r}")
    if mode.startswith("global_model") and server is None:
        raise ValueError(f"evaluate_models: mode {mode!r} needs the global model (server=...)")
    if mode.startswith("local_model") and local is None:
        raise ValueError(f"evaluate_models: mode {mode!r} needs the clients' models (local=...)")
    if mode.endswith("global_data") and is_link(model):
        raise ValueError(f"evaluate_models: mode {mode!r} is not available for link prediction (each client's "
                         "edge split is its own); use global_model_on_local_data or local_model_on_local_data")
    if mode.endswith("global_data") and data.glob is None:
        raise ValueError(f"evaluate_models: mode {mode!r} needs the whole graph in FedData.glob "
                         "(make_fed_data(batch, glob=full_graph_batch(graph)))")
    if mode == "global_model_on_local_data":
        return evaluate(model, server, data.eval, per_client=False, chunk=chunk, average=average)
    if mode == "local_model_on_local_data":
        return evaluate(model, local, data.eval, per_client=True, chunk=chunk, average=average)
    if mode == "global_model_on_global_data":
        return evaluate(model, server, data.glob, per_client=False, chunk=chunk, average=average)
    # each client's model on the same global graph: a batch of C identical "clients"
    whole = unstack(data.glob, 0)
    counts = map_clients(lambda p: client_counts(model.apply(p, whole, train=False), whole.y, whole), chunk)(local)
    real = data.eval.client_mask
    return summarise(counts, real, average, jnp.ones(real.shape, jnp.float32))


def shared_leaves(params: PyTree, mask: PyTree) -> list:
    """The leaves of `params` the server averages (mask False): what a client sends and receives."""
    return [x for m, x in zip(jax.tree.leaves(mask), jax.tree.leaves(params)) if not m]


def baseline(model, cfg: FedConfig, server_optimizer: Optional[optax.GradientTransformation] = None
             ) -> FederatedAlgorithm:
    """FederatedAlgorithm for Local / FedAvg / FedProx / FedPer / Global with `model`.

    server_optimizer: an optax transformation the server applies to the averaged update, with the
    pseudo-gradient g = w_server - mean_c w_c (Reddi et al., "Adaptive Federated Optimization"):
    optax.sgd(1.0) is plain averaging, sgd with momentum is FedAvgM, adam FedAdam. None = w_server
    <- mean_c w_c directly (the exact FedAvg aggregate, no optimiser arithmetic).
    """
    # lr = 1: the LR is applied as a traced multiplier (hp["lr"]), exact for Adam and SGD, so
    # LR sweeps vectorise without recompiling.
    if cfg.ldp is not None and is_link(model):
        raise ValueError("FedConfig: ldp (OpenFGL's local DP clips per-node gradients of node classification) "
                         "is not available for link prediction")
    optimizer = make_optimizer(cfg.optim, lr=1.0)
    loss_fn = node_loss_fn(model)
    num_layers = getattr(model, "num_layers", 2)
    use_prox = cfg.algorithm == "fedprox"
    eval_mode = resolve_eval_mode(cfg.eval_mode, cfg.algorithm)

    def init(key, data: FedData) -> BaselineState:
        one = jax.tree.map(lambda a: a[0], data.eval)
        params = model.init({"params": key, "dropout": key}, one, train=False)
        mask = personal_mask(params, cfg.algorithm, num_layers, cfg.personal_layers)
        has_personal = any(jax.tree.leaves(mask))
        c, ct = data.eval.num_clients, data.train.num_clients
        personal = stack(params, c) if has_personal else None
        opt = stack(optimizer.init(params), ct)
        hp = {"lr": jnp.float32(cfg.optim.lr), "prox_mu": jnp.float32(cfg.prox_mu)}
        server_opt = server_optimizer.init(params) if server_optimizer is not None else None
        return BaselineState(round=jnp.zeros((), jnp.int32), server=params, personal=personal, opt=opt, hp=hp,
                             server_opt=server_opt)

    def local_dp(b, lr) -> dict:
        """local_train's hooks for OpenFGL's local DP on client batch b (none when off)."""
        if cfg.ldp is None:
            return {}
        ce = lambda p, k: optax.softmax_cross_entropy_with_integer_labels(
            model.apply(p, b, train=True, rngs={"dropout": k}), b.y)
        norm = "l1" if cfg.ldp.mechanism == "laplace" else "l2"
        grad_fn = lambda p, k: clipped_node_grad(lambda q: ce(q, k), p, b.train_mask, cfg.ldp.clip, norm)
        scale = cfg.ldp.noise_scale(lr, b.train_mask.sum().astype(jnp.float32))
        return {"grad_fn": grad_fn, "post_step": lambda p, k: cfg.ldp.noise(k, p, scale)}

    def round_fn(state: BaselineState, data: FedData, key: jax.Array):
        mask = personal_mask(state.server, cfg.algorithm, num_layers, cfg.personal_layers)
        ct = data.train.num_clients
        if state.personal is None:
            start = jax.tree.map(lambda a: jnp.broadcast_to(a, (ct,) + a.shape), state.server)
        else:
            mine = jax.tree.map(lambda a: a[data.train_index], state.personal)
            start = jax.tree.map(lambda m, s, p: p if m else jnp.broadcast_to(s, p.shape),
                                 mask, state.server, mine)
        opt = state.opt
        if cfg.reset_optimizer:
            opt = jax.vmap(optimizer.init)(start)
        schedule = lr_scale(cfg.optim, state.round)
        scale = state.hp["lr"] * schedule
        prox = state.hp["prox_mu"] if use_prox else None
        keys = jax.random.split(key, ct)
        train = lambda p, o, b, k, a: local_train(loss_fn, optimizer, cfg.local_steps, p, o, b, k, scale,
                                                  prox, a, **local_dp(b, scale))
        new, opt, losses = map_clients(train, cfg.client_chunk)(start, opt, data.train, keys, start)
        if cfg.dp_clip > 0:
            # DP-FedAvg: clipped updates of the shared parameters, uniform mean + server noise
            upd = jax.tree.map(lambda m, n, s: jnp.zeros_like(n) if m else n - s, mask, new, start)
            noisy = private_mean(upd, jax.random.fold_in(key, 0x5EED), cfg.dp_clip, cfg.dp_noise)
            mean = jax.tree.map(jnp.add, state.server, noisy)
        else:
            mean = weighted_mean(new, data.train_weight)
        server_opt = state.server_opt
        if server_optimizer is not None:
            pseudo_grad = jax.tree.map(lambda s, a: s - a, state.server, mean)
            upd, server_opt = server_optimizer.update(pseudo_grad, server_opt, state.server)
            mean = optax.apply_updates(state.server, upd)
        server = jax.tree.map(lambda m, s, a: s if m else a, mask, state.server, mean)
        if state.personal is None:
            personal = None
            local = None
            if eval_mode.startswith("local_model"):
                # a client's model = the one it trained this round (clients without training
                # nodes: the global model they received)
                c = data.eval.num_clients
                if data.train_is_eval and data.train.num_clients == c:  # train_index = arange(C)
                    local = new  # (the scatter below would copy every client's model once more)
                else:
                    local = jax.tree.map(lambda s, n: jnp.broadcast_to(s, (c,) + s.shape).at[data.train_index].set(n),
                                         state.server, new)
            metrics = evaluate_models(model, data, eval_mode, server=server, local=local,
                                      chunk=cfg.client_chunk, average=cfg.eval_average)
        else:
            if data.train_is_eval and data.train.num_clients == data.eval.num_clients:  # train_index = arange(C)
                personal = new
            else:
                personal = jax.tree.map(lambda p, n: p.at[data.train_index].set(n), state.personal, new)
            eval_params = jax.tree.map(lambda m, s, p: p if m else jnp.broadcast_to(s, p.shape),
                                       mask, server, personal)
            metrics = evaluate_models(model, data, eval_mode, local=eval_params, chunk=cfg.client_chunk,
                                      average=cfg.eval_average)
        w = data.train_weight / data.train_weight.sum()
        metrics["train_loss"] = (losses * w).sum()
        metrics["lr"] = scale
        return BaselineState(round=state.round + 1, server=server, personal=personal, opt=opt,
                             hp=state.hp, server_opt=server_opt), metrics

    def messages(state: BaselineState):
        # a client receives the shared parameters and sends its trained copy of them back
        shared = shared_leaves(state.server, personal_mask(state.server, cfg.algorithm, num_layers,
                                                           cfg.personal_layers))
        return shared, shared

    return FederatedAlgorithm(init=init, round=round_fn, messages=messages)


def evaluate_logits(logits: jax.Array, batch, average: str = "pooled") -> dict:
    """`evaluate`'s metrics from per-client logits [C, N, K] already computed (for algorithms whose
    prediction is not one `model.apply`, e.g. AdaFGL's ensemble)."""
    counts = jax.vmap(lambda lg, b: client_counts(lg, b.y, b))(logits, batch)
    return summarise(counts, batch.client_mask, average, batch.node_mask.sum(-1).astype(jnp.float32))
