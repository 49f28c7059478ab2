"""FedProto (Tan et al., AAAI 2022, "FedProto: Federated Prototype Learning across Heterogeneous
Clients").

Clients keep their own models (nothing is averaged) and exchange class prototypes: the mean
embedding (penultimate layer, `nn.models.apply_with_embedding`) of each class over the client's
training nodes, C_i^k [K, D], with counts n_ik. The server averages them per class,

    C^k = sum_i n_ik C_i^k / sum_i n_ik          (`proto_weights=class_counts`, the paper's Eq. 6),

and each client's next local objective regularises its embeddings towards them:

    loss = CE + lambda * L_R,   L_R = sum_{v train, C^{y_v} exists} ||z_v - C^{y_v}||^2 / (n_train D),

the mean squared error of the official code (a node whose class has no global prototype yet
contributes 0). In the first round there are no global prototypes and L_R is 0. Each client is
evaluated with its own model's logits (as OpenFGL).

Differences from OpenFGL (openfgl/flcore/fedproto): OpenFGL weights client i's prototypes by its
number of training nodes n_i and sends a zero prototype for a class it lacks, which is then averaged
in (shrinking the global prototypes of rare classes towards 0): `proto_weights=openfgl`; and its
L_R is a sum over classes of per-class MSEs, sum_k mean_{v in k}||z_v - C^k||^2 / D
(`proto_loss=per_class`). The official FedProto code averages the clients holding the class without
weights (`proto_weights=uniform`). Differences from the paper: inference by the nearest global
prototype (the paper's test metric) is not offered; the models' logits are used.

Graph classification (`--task graph_cls`): the embedding is a graph's readout (the head's input),
so the prototypes are per-class mean graph embeddings over the client's training graphs, and L_R
runs over the training graphs of each local step's mini-batch. graph_reg has no classes: refused.

Server step: prototype aggregation (no global model), so it does not go through
`fgl_jax.aggregators`; DP-FedAvg and `--server-opt` are refused.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable, Optional

import flax
import jax
import jax.numpy as jnp

from fgl_jax.algorithms._common import evaluate_round, init_params, round_start, scatter_clients, stack, weighted_loss
from fgl_jax.federated.algorithm import FedData, FederatedAlgorithm
from fgl_jax.federated.config import FedConfig
from fgl_jax.federated.chunking import map_clients
from fgl_jax.federated.client_models import take, ungroup
from fgl_jax.federated.evaluation import evaluate_groups
from fgl_jax.federated.client import local_train, make_optimizer
from fgl_jax.federated.metrics import masked_cross_entropy
from fgl_jax.federated.participation import restrict
from fgl_jax.nn.models import apply_with_embedding
from fgl_jax.registry import register
from fgl_jax.schema import option

PyTree = Any
PROTO_WEIGHTS = ("class_counts", "uniform", "openfgl")
PROTO_LOSSES = ("mse", "per_class")


@dataclasses.dataclass(frozen=True)
class FedProtoHParams:
    fedproto_lambda: float = option(1.0, "FedProto weight lambda of the prototype regulariser", low=0, traced=True)
    proto_weights: str = option("class_counts", "how the server averages client prototypes: class_counts "
                                "(paper), uniform over holders (official code), openfgl (client sizes, "
                                "zeros for missing classes)", choices=PROTO_WEIGHTS)
    proto_loss: str = option("mse", "prototype regulariser: mse over training nodes (official code) or "
                             "per_class (sum of per-class MSEs, OpenFGL)", choices=PROTO_LOSSES)


@flax.struct.dataclass
class ProtoState:
    round: jax.Array      # int32 scalar: rounds done
    personal: PyTree      # every client's own model [C, ...]
    opt: PyTree           # client optimiser states [C_t, ...]
    protos: jax.Array     # global prototypes [K, D]
    present: jax.Array    # bool [K]: class k has a global prototype
    server: PyTree        # server-side state of the prototype step (None for FedProto)
    hp: dict              # traced: lr, the regulariser weight


def class_prototypes(z: jax.Array, y: jax.Array, mask: jax.Array, num_classes: int
                     ) -> tuple[jax.Array, jax.Array]:
    """Per-class means of z [N, D] over the nodes in mask [N]: (protos [K, D], counts [K]);
    a class without masked nodes gets a zero prototype and count 0."""
    onehot = jax.nn.one_hot(y, num_classes, dtype=z.dtype) * mask.astype(z.dtype)[:, None]   # [N, K]
    counts = onehot.sum(0)
    return (onehot.T @ z) / jnp.maximum(counts, 1.0)[:, None], counts


def aggregate_prototypes(local: jax.Array, counts: jax.Array, client_weight: jax.Array, weighting: str
                         ) -> tuple[jax.Array, jax.Array]:
    """Global prototypes [K, D] and presence [K] from the clients' local [C, K, D], counts [C, K]
    and sizes client_weight [C] (see the module docstring for the weightings)."""
    held = (counts > 0).astype(local.dtype)
    w = {"class_counts": counts, "uniform": held,
         "openfgl": jnp.broadcast_to(client_weight[:, None], counts.shape).astype(local.dtype)}[weighting]
    total = w.sum(0)                                                             # [K]
    protos = jnp.einsum("ck,ckd->kd", w, local) / jnp.maximum(total, 1e-12)[:, None]
    return protos, held.sum(0) > 0


def proto_regulariser(z: jax.Array, y: jax.Array, mask: jax.Array, protos: jax.Array, present: jax.Array,
                      kind: str) -> jax.Array:
    """L_R of the module docstring: z [N, D], y [N], mask [N], protos [K, D], present [K]."""
    use = mask & present[y]
    sq = ((z - protos[y]) ** 2).sum(-1) * use.astype(z.dtype)                # [N]
    d = z.shape[-1]
    if kind == "mse":
        return sq.sum() / (jnp.maximum(mask.sum(), 1) * d)
    k = protos.shape[0]
    onehot = jax.nn.one_hot(y, k, dtype=z.dtype) * use.astype(z.dtype)[:, None]
    per_class = (onehot * sq[:, None]).sum(0) / (jnp.maximum(onehot.sum(0), 1.0) * d)
    return per_class.sum()


def embedding_dim(model, data: FedData, params: PyTree, represent: Callable = None) -> int:
    """D, the width of what `represent` (default `apply_with_embedding`) gives as the representation."""
    represent = represent or (lambda m, p, b, **kw: apply_with_embedding(m, p, b, **kw))
    one = jax.tree.map(lambda a: a[0], data.eval)
    h, _ = jax.eval_shape(lambda p, b: represent(model, p, b), params, one)
    return int(h.shape[-1])


def logits_as_representation(model, params: PyTree, batch, train: bool = False, rngs=None
                             ) -> tuple[jax.Array, jax.Array]:
    """(logits, logits): for methods that exchange per-class mean logits instead of embeddings (FedDistill)."""
    logits = model.apply(params, batch, train=train, rngs=rngs)
    return logits, logits


ServerInit = Callable[[jax.Array, int, int], PyTree]
# (server_state, local [C_t,K,D], counts [C_t,K], data, hp) -> (server_state, protos [K,D], present [K])
ServerUpdate = Callable[..., tuple]
# (z [N,D], logits [N,K], y [N], mask [N], protos [K,D], present [K], hp) -> scalar: the term added to CE
Regulariser = Callable[..., jax.Array]


def prototype_algorithm(model, common: FedConfig, *, lam_name: str, lam: float, loss_kind: str,
                        server_update: ServerUpdate, server_init: Optional[ServerInit] = None,
                        extra_hp: Optional[dict] = None, represent: Optional[Callable] = None,
                        regulariser: Optional[Regulariser] = None) -> FederatedAlgorithm:
    """Personal models trained with CE + hp[lam_name] * L_R(z, global prototypes); after training the
    clients' class prototypes go to `server_update`, which returns the next global prototypes.

    represent(model, params, batch, train=, rngs=) -> (z [N, D], logits [N, K]): what is averaged per
    class (default: the penultimate embedding, `apply_with_embedding`); regulariser(z, logits, y,
    mask, protos, present, hp): L_R (default: `proto_regulariser` of `loss_kind` on z).

    Heterogeneous client models (`common.client_models`, `fgl_jax.federated.client_models`): the
    clients of one architecture are one group, trained by one vmapped update (a static loop over the
    groups inside the one traced round); the state's `personal` and `opt` are then tuples with one
    entry per group ([C_g, ...], [C_t_g, ...]). Every group's representation must have the same
    width D (the prototypes are averaged across groups). Client c uses the key it would have in a
    homogeneous run, so one architecture for every client gives the homogeneous run's numbers.
    Client sampling (`fgl_jax.federated.participation`) cannot gather static groups: the round gets
    the sample in `FedData.sample`, every group trains all its training clients, the others keep
    their models and optimiser states, and only the sampled clients' prototypes reach the server,
    with the gathered run's keys (one architecture: the homogeneous sampled run's numbers)."""
    optimizer = make_optimizer(common.optim, lr=1.0)
    num_classes = int(model.num_classes)
    represent = represent or (lambda m, p, b, **kw: apply_with_embedding(m, p, b, **kw))
    if regulariser is None:
        def regulariser(z, logits, y, mask, protos, present, hp):
            return proto_regulariser(z, y, mask, protos, present, loss_kind)
    hetero = common.client_models is not None
    groups = common.client_models.groups() if hetero else None

    def init(key: jax.Array, data: FedData) -> ProtoState:
        k_model, k_server = jax.random.split(key)
        hp = {"lr": jnp.float32(common.optim.lr), lam_name: jnp.float32(lam)}
        hp.update({k: jnp.float32(v) for k, v in (extra_hp or {}).items()})
        if not hetero:
            params = init_params(model, k_model, data)
            personal, opt = stack(params, data.eval.num_clients), stack(optimizer.init(params), data.train.num_clients)
            d = embedding_dim(model, data, params, represent)
        else:
            personal, opt, dims = [], [], {}
            for i, g in enumerate(groups):   # group 0 takes the homogeneous run's key
                params = init_params(g.model, k_model if i == 0 else jax.random.fold_in(k_model, i), data)
                personal.append(stack(params, len(g.eval_index)))
                opt.append(stack(optimizer.init(params), len(g.train_pos)))
                dims[str(g.arch)] = embedding_dim(g.model, data, params, represent)
            if len(set(dims.values())) > 1:
                raise ValueError(f"client_models: the class prototypes must have one width across architectures, got "
                                 f"{', '.join(f'{a} -> {d}' for a, d in dims.items())} (the width of the last hidden "
                                 "layer; GAT's is hidden x heads; a graph classifier's readout is HIDDEN wide): give "
                                 "every architecture the same last hidden width")
            personal, opt, d = tuple(personal), tuple(opt), next(iter(dims.values()))
        return ProtoState(round=jnp.zeros((), jnp.int32), personal=personal, opt=opt,
                          protos=jnp.zeros((num_classes, d), jnp.float32), present=jnp.zeros((num_classes,), bool),
                          server=None if server_init is None else server_init(k_server, num_classes, d), hp=hp)

    def client_update(net, state: ProtoState, scale):
        def client(p, o, b, k):
            def loss(w, b, k):
                z, logits = represent(net, w, b, train=True, rngs={"dropout": k})
                reg = regulariser(z, logits, b.y, b.train_mask, state.protos, state.present, state.hp)
                return masked_cross_entropy(logits, b.y, b.train_mask) + state.hp[lam_name] * reg

            p, o, first = local_train(loss, optimizer, common.local_steps, p, o, b, k, scale)
            z, _ = represent(net, p, b, train=False)
            z = z.reshape(-1, z.shape[-1])   # graph_cls logits come as [M, G, K]: one row per graph slot
            # graph_cls: z holds the graph embeddings (the readout) of the client's M mini-batches as
            # one union [M*G, D]; labels and masks [M, G] flatten to match (padding slots are unmasked)
            protos, counts = class_prototypes(z, b.y.reshape(-1), b.train_mask.reshape(-1), num_classes)
            return p, o, first, protos, counts
        return map_clients(client, common.client_chunk)

    def round_fn(state: ProtoState, data: FedData, key: jax.Array):
        ct = data.train.num_clients
        on = None   # bool [C_t]: the clients sampled this round (masked participation), None: all
        if data.sample is None:
            keys = jax.random.split(key, ct)
        else:   # the j-th sampled client gets the key the gathered path gives it: split(key, m)[j]
            m = data.sample.shape[0]
            slot = jnp.zeros((ct,), jnp.int32).at[data.sample].set(jnp.arange(m, dtype=jnp.int32))
            keys = jax.random.split(key, m)[slot]
            on = jnp.zeros((ct,), bool).at[data.sample].set(True)
        if not hetero:
            start, opt, scale = round_start(optimizer, common, state, data,
                                            start=jax.tree.map(lambda a: a[data.train_index], state.personal))
            new, opt, losses, local, counts = client_update(model, state, scale)(start, opt, data.train, keys)
            personal = scatter_clients(state.personal, data.train_index, new)
        else:
            personal, opts, outs, scale = list(state.personal), list(state.opt), [], None
            for i, g in enumerate(groups):   # static: one vmapped update per architecture
                if len(g.train_pos) == 0:
                    continue
                n_g = len(g.eval_index)
                sub = state.replace(opt=state.opt[i])
                start, opt_g, scale = round_start(optimizer, common, sub, data,
                                                  start=take(state.personal[i], g.train_local, n_g))
                new, opts[i], *rest = client_update(g.model, state, scale)(
                    start, opt_g, take(data.train, g.train_pos, ct), take(keys, g.train_pos, ct))
                if on is not None:   # clients left out this round keep their model and optimiser state
                    keep = lambda fresh, old, on_g=on[jnp.asarray(g.train_pos)]: jnp.where(
                        on_g.reshape((-1,) + (1,) * (fresh.ndim - 1)), fresh, old)
                    new = jax.tree.map(keep, new, start)
                    opts[i] = jax.tree.map(keep, opts[i], state.opt[i])
                personal[i] = scatter_clients(state.personal[i], jnp.asarray(g.train_local), new)
                outs.append((g.train_pos, rest))
            personal, opt = tuple(personal), tuple(opts)
            losses, local, counts = ungroup([r for _, r in outs], [pos for pos, _ in outs])
            if data.sample is not None:   # the server hears from the sampled clients only
                losses, local, counts = jax.tree.map(lambda a: a[data.sample], (losses, local, counts))
                data = restrict(data, data.sample)
        server, protos, present = server_update(state.server, local, counts, data, state.hp)
        if not hetero:
            metrics = evaluate_round(model, common, data, personal=personal)
        else:
            metrics = evaluate_groups(groups, personal, data, common.eval_mode, common.client_chunk,
                                      common.eval_average)
        metrics["train_loss"] = weighted_loss(losses, data.train_weight)
        metrics["lr"] = scale
        return ProtoState(round=state.round + 1, personal=personal, opt=opt, protos=protos, present=present,
                          server=server, hp=state.hp), metrics

    def messages(s: ProtoState):
        # up: the client's class prototypes [K, D] and class counts [K]; down: the global prototypes
        # and which classes have one [K] (the models never leave the clients)
        counts = jnp.zeros(s.present.shape, s.protos.dtype)
        return (s.protos, counts), (s.protos, s.present)

    # grouped clients are static positions: client sampling trains the sample by mask
    return FederatedAlgorithm(init=init, round=round_fn, messages=messages, masked_sampling=hetero)


@register("algorithm", "fedproto", hparams=FedProtoHParams, tasks=("node_cls", "graph_cls"), hetero=True,
          paper="Tan, Long, Liu, Zhou, Lu, Jiang, Zhang, AAAI 2022, arXiv:2105.00243",
          help="FedProto: personal models regularised towards averaged class prototypes")
def fedproto(model, common: FedConfig, hp: FedProtoHParams) -> FederatedAlgorithm:
    def server_update(server, local, counts, data, _hp):
        protos, present = aggregate_prototypes(local, counts, data.train_weight, hp.proto_weights)
        return server, protos, present

    return prototype_algorithm(model, common, lam_name="fedproto_lambda", lam=hp.fedproto_lambda,
                               loss_kind=hp.proto_loss, server_update=server_update)
