"""The FedAvg family's round: Local, FedAvg, FedProx, FedPer and Global as one parametrised round
(FedAvgM, FedAdam, FedYogi and FedGCN are this round with another aggregator or other data).

They differ only in which parameters the server averages ("shared") and which stay with the
client ("personal"), and in FedProx's proximal term:

    Local   : nothing shared, each client trains alone on its subgraph
    FedAvg  : everything shared, weighted by training nodes (McMahan et al.)
    FedProx : FedAvg + (mu/2)||w - w_global||^2 in the local objective (Li et al.)
    FedPer  : all but the last layer shared (Arivazhagan et al.)
    FedBN   : all but the normalisation layers shared (Li et al.; `fgl_jax.nn.layers.normalise`)
    FedStar : only the structure channel shared (Tan et al.; `fgl_jax.nn.graph.DualChannelClassifier`)
    Global  : FedAvg on a one-client batch holding the whole graph == centralised training

The server step is the run's aggregator (`fgl_jax.federated.config.server_aggregator`): the clients
upload their trained models (personal leaves replaced by the server's, so they neither move the
mean nor count in DP's clipping norm), the aggregator returns the new server model.
"""
from __future__ import annotations

from typing import Any, Optional

import flax
import jax
import jax.numpy as jnp
import optax

from fgl_jax.federated.algorithm import FedData, FederatedAlgorithm
from fgl_jax.federated.chunking import map_clients
from fgl_jax.federated.client import local_train, lr_scale, make_optimizer, node_loss_fn, stack
from fgl_jax.federated.config import AGGREGATE_KEY, FedConfig, server_aggregator
from fgl_jax.federated.evaluation import evaluate_models, resolve_eval_mode
from fgl_jax.federated.link import is_link
from fgl_jax.nn.graph import is_structure
from fgl_jax.nn.layers import NORM_PREFIX
from fgl_jax.privacy.dp import clipped_node_grad

PyTree = Any


@flax.struct.dataclass
class BaselineState:
    round: jax.Array          # int32 scalar: rounds done
    server: PyTree            # global parameters (unused leaves for Local)
    personal: PyTree          # per-client parameters [C, ...] (None unless Local/FedPer)
    opt: PyTree               # per-training-client optimiser state [C_t, ...]
    hp: dict                  # traced hyperparameters {lr, prox_mu}: a vmapped sweep overrides them
    aggregator: PyTree = None  # the server aggregator's state (a server optimiser's moments; () for a mean)


def layer_index(path) -> int:
    """Layer number of a parameter from the `<name>_<i>` naming convention of fgl_jax.nn."""
    for entry in reversed(path):
        name = str(getattr(entry, "key", entry))
        tail = name.rsplit("_", 1)
        if len(tail) == 2 and tail[1].isdigit():
            return int(tail[1])
    return -1


def is_norm(path) -> bool:
    """Whether a parameter belongs to a normalisation layer (`fgl_jax.nn.layers.normalise`'s names)."""
    return any(str(getattr(e, "key", e)).startswith(NORM_PREFIX) for e in path)


def graph_top_mask(params: PyTree, num_layers: int, top: int) -> PyTree:
    """Bool tree: True on the top `top` layers of a graph model (`fgl_jax.nn.graph.GraphClassifier`),
    counted from the output: its MLP head's `head_1`, `head_0`, then the conv layers from the last
    (`conv_<i>...` with its `norm_*_<i>`). Its GIN conv names carry two numbers (`conv_<i>_<j>`), so
    `layer_index` does not order them; FedRep's head and FedALA's top layers on graph tasks use this.

    Args:
      params: the graph model's parameter tree.
      num_layers: its conv layer count.
      top: how many layers from the output are selected.
    Returns:
      A bool tree shaped like `params`.
    """
    def rank(path) -> int:
        for e in path:
            name = str(getattr(e, "key", e))
            if name in ("head_1", "head_0"):
                return 0 if name == "head_1" else 1
            if name.startswith("conv_") or name.startswith(NORM_PREFIX):
                return 2 + (num_layers - 1 - _conv_number(name))
        return 2 + num_layers
    return jax.tree_util.tree_map_with_path(lambda p, _: rank(p) < top, params)


def _conv_number(name: str) -> int:
    """The conv layer i of a graph model's parameter name `conv_<i>`, `conv_<i>_<j>`, `conv_<i>_bias` or
    `norm_<kind>_<i>`."""
    parts = name.split("_")
    return int(parts[1]) if name.startswith("conv_") else int(parts[-1])


def personal_mask(params: PyTree, algorithm: str, num_layers: int, personal_layers: int) -> PyTree:
    """Bool pytree: True where a parameter stays with the client."""
    if algorithm == "local":
        return jax.tree.map(lambda _: True, params)
    if algorithm == "fedper":
        first_personal = num_layers - personal_layers
        return jax.tree_util.tree_map_with_path(lambda p, _: layer_index(p) >= first_personal, params)
    if algorithm == "fedbn":
        return jax.tree_util.tree_map_with_path(lambda p, _: is_norm(p), params)
    if algorithm == "fedstar":   # only the structure channel is shared (fgl_jax.algorithms.fedstar)
        return jax.tree_util.tree_map_with_path(lambda p, _: not is_structure(p), params)
    return jax.tree.map(lambda _: False, params)


def shared_leaves(params: PyTree, mask: PyTree) -> list:
    """The leaves of `params` the server averages (mask False): what a client sends and receives."""
    return [x for m, x in zip(jax.tree.leaves(mask), jax.tree.leaves(params)) if not m]


def baseline(model, cfg: FedConfig, server_optimizer: Optional[optax.GradientTransformation] = None
             ) -> FederatedAlgorithm:
    """FederatedAlgorithm for Local / FedAvg / FedProx / FedPer / Global with `model`.

    server_optimizer: an optax transformation the server applies to the aggregate
    (`fgl_jax.aggregators.server_optimizer`: pseudo-gradient g = w_server - mean_c w_c, Reddi et al.):
    sgd with momentum is FedAvgM, adam FedAdam. None: the run's `cfg.server_opt`, or the aggregate
    itself (the exact FedAvg mean, no optimiser arithmetic).

    Args:
        model: a flax model taking one client's batch (`make_model`); a link model for link prediction.
        cfg: the run's `FedConfig` (algorithm name, local steps, optimiser, DP, personal layers, ...).
        server_optimizer: as above.

    Returns:
        The `FederatedAlgorithm`; its state is a `BaselineState`.

    Raises:
        ValueError: local DP (`cfg.ldp`) with a link-prediction model.
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
    aggregator = server_aggregator(cfg, server_optimizer)

    def init(key, data: FedData) -> BaselineState:
        one = jax.tree.map(lambda a: a[0], data.eval)
        params = model.init({"params": key, "dropout": key}, one, train=False)
        mask = personal_mask(params, cfg.algorithm, num_layers, cfg.personal_layers)
        has_personal = any(jax.tree.leaves(mask))
        c, ct = data.eval.num_clients, data.train.num_clients
        personal = stack(params, c) if has_personal else None
        opt = stack(optimizer.init(params), ct)
        hp = {"lr": jnp.float32(cfg.optim.lr), "prox_mu": jnp.float32(cfg.prox_mu)}
        return BaselineState(round=jnp.zeros((), jnp.int32), server=params, personal=personal, opt=opt, hp=hp,
                             aggregator=aggregator.init(params))

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
        # personal leaves are uploaded as the server's own values: they do not move the aggregate,
        # nor count in DP's clipping norm (the server keeps its value for them below)
        upload = new if not any(jax.tree.leaves(mask)) else jax.tree.map(
            lambda m, n, s: jnp.broadcast_to(s, n.shape) if m else n, mask, new, state.server)
        mean, agg_state = aggregator.aggregate(state.aggregator, upload, data.train_weight,
                                               jax.random.fold_in(key, AGGREGATE_KEY), params=state.server)
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
                             hp=state.hp, aggregator=agg_state), metrics

    def messages(state: BaselineState):
        # a client receives the shared parameters and sends its trained copy of them back
        shared = shared_leaves(state.server, personal_mask(state.server, cfg.algorithm, num_layers,
                                                           cfg.personal_layers))
        return shared, shared

    return FederatedAlgorithm(init=init, round=round_fn, messages=messages)
