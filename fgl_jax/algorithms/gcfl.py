"""GCFL (Xie, Ma, Liu, Yang, Yu, NeurIPS 2021, "Federated Graph Classification over Non-IID Graphs"):
clustered FL whose clusters split when their clients' updates disagree.

Every client holds its cluster's model. Each round the clients train from it and upload their
updates dW_i = W_i - W_cluster; then, cluster by cluster (Sattler et al.'s CFL criterion),
    mean_norm = || mean_{i in k} dW_i ||,   max_norm = max_{i in k} || dW_i ||,
and a cluster with mean_norm < eps1 (the federation is near a stationary point of its joint
objective) and max_norm > eps2 (some clients are not), more than two members, after the first
`gcfl_warmup` rounds, is bi-partitioned by the minimum cut of its clients' update similarity graph
(weights cos(dW_i, dW_j) + 1, Stoer-Wagner: `min_cut_side`). Each cluster then adds the mean of its
members' updates, weighted by training graphs, to its model.
The cluster assignment is state on the client axis (`GCFLState.cluster`, labels 0..C-1; a split
cluster keeps its label on the shore of its lowest-index client: `split_clusters`), so the
whole run stays one jitted program and resumes from a checkpoint like any other.

Differences from GCFL's code (github.com/Oxfordblue7/GCFL, server.py / training.py): none in the
criterion, the similarity (cosine + 1 of the flattened updates) or the cluster-wise weighted
update; its min cut is networkx's Stoer-Wagner, whose choice among equal-weight cuts may differ
from ours (any minimum cut is one). Statistics use the clients that trained this round (all of them
without client sampling, as GCFL). GCFL caches the models of split clusters for reporting; not here.
Defaults: eps1 = 0.05, eps2 = 0.1, 20 warm-up rounds (GCFL's main_oneDS.py). Evaluation (`eval_mode
auto`): each client's cluster model on its own graphs, as GCFL's code; an explicit
`local_model_on_local_data` (or `_global_data`) evaluates the model each client trained this round, as
OpenFGL's gcfl_plus does and as the mode means for the FedAvg family. No server aggregator (cluster-wise means in the clear).

GCFL+ and GCFL+dWs (the same paper, Sec. 4.2; `gcfl_plus`, `gcfl_plus_dws`): the same criterion, but
the bi-partition compares the clients' *sequences* of a norm over the last `gcfl_seq_length` rounds
instead of their last updates: each client keeps s_i, the norm of its graph-convolution layers'
gradient at its last local step of every round (GCFL+, the authors' `convGradsNorm`) or of its
convolution layers' update dW (GCFL+dWs, `convDWsNorm`); the split uses D_ij = DTW(s_i, s_j)
(`dtw_distance`: sqrt of the least sum of squared differences along a warping path, dtaidistance's
`dtw.distance` without window) and cuts the similarity max(D) - D (max over the cluster's members).
A split also needs every client to hold a full window, and empties every window, so at most one
cluster splits per round and the next split waits another `gcfl_seq_length` rounds.
`gcfl_standardize` divides each sequence by its standard deviation first (the authors' flag: no
centring). `gcfl_seq_params=all` takes the norm over every parameter instead of the convolutions.

Where the paper, the authors' code (training.py `run_gcflplus`, `run_gcflplus_dWs`) and OpenFGL
(`openfgl/flcore/gcfl_plus`) differ: the paper describes the sequences as the clients' gradient
norms, the authors' code has both variants (gradient: the `.grad` of the last optimiser step; dWs:
the update), OpenFGL only the gradient one (`gcfl_plus`). The authors' and OpenFGL's models share only
the convolution layers (the head stays local and the criterion's norms are over the convolutions):
`gcfl_shared=conv` does the same; the default `all` makes the whole model the cluster model (the
criterion then sees every parameter's update, so the authors' eps1/eps2 mean something else; the
side-by-side with the authors' code, benchmarks/peers/gcfl, runs conv). OpenFGL counts rounds from 0, so its
first possible split is one round later (round > 20 of 0..R-1). Both collect sequences from the
sampled clients only and require every client's window to be full (with sampling, a client not
sampled since the last split delays it); here too, over the clients holding training graphs (a
client without any never trains, so it would block every split). Split history: `GCFLState.born`
and `parent` (the round each cluster label appeared and the label it split from), the picture of
the cluster tree (notebooks/08_graph_fl.ipynb).
"""
from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple, Optional

import flax
import jax
import jax.numpy as jnp
import optax
from jax.flatten_util import ravel_pytree

from fgl_jax.algorithms._common import evaluate_round, init_params, round_start, stack, weighted_loss
from fgl_jax.federated.algorithm import FedData, FederatedAlgorithm
from fgl_jax.federated.chunking import map_clients
from fgl_jax.federated.client import local_train, make_optimizer, node_loss_fn
from fgl_jax.federated.config import FedConfig
from fgl_jax.registry import register
from fgl_jax.schema import option

PyTree = Any


@dataclasses.dataclass(frozen=True)
class GCFLHParams:
    gcfl_eps1: float = option(0.05, "GCFL: split a cluster when the norm of its mean update is below this ...",
                              low=0)
    gcfl_eps2: float = option(0.1, "GCFL: ... and the largest client update norm is above this", low=0)
    gcfl_warmup: int = option(20, "GCFL: no split in the first this many rounds", low=0)
    gcfl_shared: str = option("all", "GCFL: parameters the clusters share: all (the whole model) or conv (the "
                              "graph convolutions only, the authors' code and OpenFGL: every other layer stays "
                              "each client's own and the criterion's norms and similarity are over the "
                              "convolutions)", choices=("all", "conv"))


SEQ_PARAMS = ("conv", "all")


@dataclasses.dataclass(frozen=True)
class GCFLPlusHParams(GCFLHParams):
    gcfl_seq_length: int = option(5, "GCFL+: rounds in each client's norm sequence compared by DTW (the "
                                  "authors' seq_length)", low=1)
    gcfl_standardize: bool = option(False, "GCFL+: divide each norm sequence by its standard deviation before "
                                    "DTW (the authors' --standardize)")
    gcfl_seq_params: str = option("conv", "GCFL+: parameters of the sequence's norm: conv (graph convolution "
                                  "layers, the authors' code and OpenFGL) or all", choices=SEQ_PARAMS)


@flax.struct.dataclass
class GCFLState:
    round: jax.Array     # int32 scalar: rounds done
    models: PyTree       # every client's (= its cluster's) model [C, ...]
    cluster: jax.Array   # int32 [C] cluster label of each client (0..C-1)
    opt: PyTree          # client optimiser states [C_t, ...]
    hp: dict             # traced: lr
    born: jax.Array = None     # int32 [C]: round after which cluster label l first held clients (-1: never; 0: label 0)
    parent: jax.Array = None   # int32 [C]: the label cluster l split from (-1: the root or unused)
    seq: jax.Array = None      # GCFL+: float32 [C, L] each client's last L norms, oldest first
    seq_count: jax.Array = None  # GCFL+: int32 [C] norms collected since the last split (capped at L)
    trains: jax.Array = None     # GCFL+: bool [C] clients holding training graphs (the only ones whose
                                 # windows must be full: one without training graphs never reports)


class GradNormState(NamedTuple):
    """Optimiser state that also keeps the norm of the last gradient it saw (GCFL+'s sequence value)."""
    inner: Any           # the wrapped optimiser's state
    norm: jax.Array      # float32 scalar


def conv_mask(tree: PyTree, which: str = "conv") -> PyTree:
    """Which leaves of `tree` are graph convolution parameters: those under a name starting with
    "conv" (conv_i_0, conv_i_1, conv_i_bias of `fgl_jax.nn.graph.GraphClassifier`); every leaf when
    which="all" or the model has no such layer (node-level models: every layer is a convolution).

    Args:
        tree: a parameter-shaped pytree.
        which: "conv" or "all".

    Returns:
        A pytree of Python bools with `tree`'s structure.
    """
    paths, treedef = jax.tree_util.tree_flatten_with_path(tree)
    conv = [any(str(getattr(k, "key", getattr(k, "name", ""))).startswith("conv") for k in path) for path, _ in paths]
    if which != "conv" or not any(conv):
        conv = [True] * len(conv)
    return jax.tree_util.tree_unflatten(treedef, conv)


def param_norm(tree: PyTree, which: str = "conv") -> jax.Array:
    """The L2 norm of the leaves of `tree` under a name starting with "conv" (the graph convolution
    layers of `fgl_jax.nn.graph.GraphClassifier`: conv_i_0, conv_i_1, conv_i_bias), or of every leaf
    when which="all" or the model has no such layer (node-level models: every layer is a convolution).

    Args:
        tree: a parameter-shaped pytree (gradients, updates).
        which: "conv" or "all".

    Returns:
        The norm, a float32 scalar.
    """
    chosen = [x for x, keep in zip(jax.tree.leaves(tree), jax.tree.leaves(conv_mask(tree, which))) if keep]
    return jnp.sqrt(sum(jnp.sum(jnp.square(x.astype(jnp.float32))) for x in chosen))


def record_grad_norm(inner: optax.GradientTransformation, which: str = "conv") -> optax.GradientTransformation:
    """`inner`, whose state also keeps `param_norm` of the last gradient it was given: after a local
    run, the gradient of the last optimiser step, the `.grad` the authors' GCFL+ reads (a skipped
    padding mini-batch leaves the whole state, so the norm too, unchanged).

    Args:
        inner: the optimiser to wrap.
        which: the parameters of the norm (`param_norm`).

    Returns:
        An optax transformation with `GradNormState` states.
    """
    def init(params):
        return GradNormState(inner.init(params), jnp.zeros((), jnp.float32))

    def update(grads, state, params=None):
        upd, inner_state = inner.update(grads, state.inner, params)
        return upd, GradNormState(inner_state, param_norm(grads, which))

    return optax.GradientTransformation(init, update)


def dtw_distance(a: jax.Array, b: jax.Array) -> jax.Array:
    """Dynamic time warping distance of two sequences a [L], b [M]: sqrt of the least sum of
    (a_i - b_j)^2 over warping paths from (0, 0) to (L-1, M-1) with steps (1,0), (0,1), (1,1)
    (dtaidistance's `dtw.distance` with no window or penalty, which GCFL+ calls).

    Args:
        a: the first sequence [L].
        b: the second sequence [M].

    Returns:
        The distance, a scalar.
    """
    cost = (a[:, None] - b[None, :]) ** 2                        # [L, M]
    inf = jnp.asarray(jnp.inf, cost.dtype)

    def row(prev, c):
        # prev = D[i-1, -1..M-1] (column -1 in front); D[i, j] = c_j + min(D[i-1, j], D[i, j-1], D[i-1, j-1])
        def cell(left, xs):
            up, diag, cj = xs
            v = cj + jnp.minimum(jnp.minimum(up, left), diag)
            return v, v

        _, vals = jax.lax.scan(cell, inf, (prev[1:], prev[:-1], c))
        return jnp.concatenate([inf[None], vals]), None

    first = jnp.concatenate([jnp.zeros((1,), cost.dtype), jnp.full((b.shape[0],), inf)])   # D[-1, -1] = 0
    last, _ = jax.lax.scan(row, first, cost)
    return jnp.sqrt(last[-1])


def dtw_matrix(seqs: jax.Array, standardize: bool = False) -> jax.Array:
    """Pairwise `dtw_distance` of the rows of seqs [C, L] -> [C, C] (symmetric, zero diagonal);
    standardize divides each row by its standard deviation first (the authors' GCFL+ flag; a
    constant row is left as it is).

    Args:
        seqs: one sequence per row [C, L].
        standardize: scale each row to unit standard deviation.

    Returns:
        The distances [C, C].
    """
    if standardize:
        sd = seqs.std(axis=1, keepdims=True)
        seqs = seqs / jnp.where(sd > 0, sd, 1.0)
    return jax.vmap(lambda a: jax.vmap(lambda b: dtw_distance(a, b))(seqs))(seqs)


def min_cut_side(w: jax.Array, active: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Stoer-Wagner minimum cut of the graph on the `active` vertices with weights w [n, n]
    (symmetric, >= 0; the diagonal is ignored). Returns (side bool [n]: one shore, a non-empty
    proper subset of the active vertices when >= 2 are active; the cut weight)."""
    n = w.shape[0]
    act = active.astype(bool)
    off = 1.0 - jnp.eye(n, dtype=w.dtype)
    w = w * off * (act[:, None] & act[None, :])
    groups = jnp.eye(n, dtype=bool)

    def phase(_, carry):
        w, alive, groups, best, side = carry
        count = alive.sum()
        start = jnp.argmax(alive)
        in_a = jnp.zeros(n, bool).at[start].set(True)

        def add(_, c):
            in_a, conn, prev, last = c
            cand = alive & ~in_a
            v = jnp.argmax(jnp.where(cand, conn, -jnp.inf))
            go = cand.any()
            return (jnp.where(go, in_a.at[v].set(True), in_a), jnp.where(go, conn + w[v], conn),
                    jnp.where(go, last, prev), jnp.where(go, v, last))

        _, _, s, t = jax.lax.fori_loop(0, n - 1, add, (in_a, w[start], start, start))
        cut = jnp.where(alive, w[t], 0.0).sum()        # t's weight to everything else still alive
        run = count >= 2
        better = run & (cut < best)
        best, side = jnp.where(better, cut, best), jnp.where(better, groups[t], side)
        # merge t into s
        merged = w.at[s].add(w[t]).at[:, s].add(w[:, t])
        merged = merged.at[t].set(0.0).at[:, t].set(0.0).at[s, s].set(0.0)
        return (jnp.where(run, merged, w), jnp.where(run, alive.at[t].set(False), alive),
                jnp.where(run, groups.at[s].set(groups[s] | groups[t]), groups), best, side)

    init = (w, act, groups, jnp.asarray(jnp.inf, w.dtype), jnp.zeros(n, bool))
    _, _, _, best, side = jax.lax.fori_loop(0, n - 1, phase, init)
    return side & act, best


def split_clusters(dw: jax.Array, cluster: jax.Array, trained: jax.Array, allow: jax.Array, eps1, eps2,
                   dist: Optional[jax.Array] = None, once: bool = False) -> jax.Array:
    """GCFL's cluster step: new labels int32 [C] from the updates dw [C, P] (rows of clients that did
    not train are ignored: trained bool [C]), labels cluster [C], allow (bool scalar: past the warm-up).

    Clusters are visited in label order; a cluster that meets the criterion (module docstring) is cut
    by `min_cut_side` of its trained members' similarity; the shore holding the member of lowest
    index keeps the label, the other shore takes the smallest unused label.

    Args:
        dw: the clients' flattened updates [C, P].
        cluster: the current labels int32 [C].
        trained: bool [C], the clients that trained this round.
        allow: bool scalar, splits allowed this round.
        eps1: split when the norm of the cluster's mean update is below this ...
        eps2: ... and its largest update norm is above this.
        dist: None for GCFL's similarity cos(dw_i, dw_j) + 1; GCFL+'s distances [C, C] (DTW of the
            norm sequences), whose similarity in a cluster is max(D over its members) - D.
        once: at most one split in the call (GCFL+: a split empties the sequence windows).

    Returns:
        The new labels int32 [C].
    """
    c = dw.shape[0]
    norms = jnp.linalg.norm(dw, axis=1)
    if dist is None:
        unit = dw / jnp.maximum(norms, 1e-12)[:, None]
        sim = unit @ unit.T + 1.0

    def visit(k, carry):
        labels, allow_now = carry
        members = (cluster == k) & trained
        size = members.sum()
        mean = (dw * members[:, None]).sum(0) / jnp.maximum(size, 1)
        mean_norm = jnp.linalg.norm(mean)
        max_norm = jnp.where(members, norms, -jnp.inf).max()
        split = allow_now & (size > 2) & (mean_norm < eps1) & (max_norm > eps2)

        def cut(labels):
            if dist is None:
                w = sim
            else:
                pair = members[:, None] & members[None, :]
                w = jnp.where(pair, dist, -jnp.inf).max() - dist
            side, _ = min_cut_side(w, members)
            first = jnp.argmax(members)
            moved = jnp.where(side[first], members & ~side, side)   # the shore without the first member
            used = jnp.zeros(c, bool).at[labels].set(True)
            fresh = jnp.argmin(used)
            return jnp.where(moved, fresh, labels).astype(labels.dtype)

        labels = jax.lax.cond(split, cut, lambda l: l, labels)
        return labels, (allow_now & ~split) if once else allow_now

    return jax.lax.fori_loop(0, c, visit, (cluster, jnp.asarray(allow, bool)))[0]


def record_splits(born: jax.Array, parent: jax.Array, old: jax.Array, new: jax.Array, round_done: jax.Array
                  ) -> tuple[jax.Array, jax.Array]:
    """The split history after a cluster step: a label first holding clients in `new` gets
    born = round_done and parent = the label its clients had in `old` (all of one cluster: a split
    moves one shore of one cluster).

    Args:
        born: int32 [C], the round each label appeared (-1: not yet).
        parent: int32 [C], the label each label split from (-1: none).
        old: the labels before the step [C].
        new: the labels after it [C].
        round_done: int32 scalar, the round the step ends.

    Returns:
        (born, parent), both int32 [C].
    """
    c = new.shape[0]
    present = jnp.zeros(c, bool).at[new].set(True)
    fresh = present & (born < 0)
    came_from = jnp.zeros(c, parent.dtype).at[new].set(old.astype(parent.dtype))
    return jnp.where(fresh, round_done, born), jnp.where(fresh, came_from, parent)


@register("algorithm", "gcfl", hparams=GCFLHParams, tasks=("node_cls", "graph_cls", "graph_reg"),
          paper="Xie, Ma, Liu, Yang, Yu, NeurIPS 2021, arXiv:2106.13423",
          help="GCFL: clusters of clients, bi-partitioned by update similarity when the mean update is small "
               "and the largest is not")
def gcfl(model, common: FedConfig, hp: GCFLHParams) -> FederatedAlgorithm:
    return clustered(model, common, hp)


@register("algorithm", "gcfl_plus", hparams=GCFLPlusHParams, tasks=("node_cls", "graph_cls", "graph_reg"),
          paper="Xie, Ma, Liu, Yang, Yu, NeurIPS 2021, arXiv:2106.13423",
          help="GCFL+: GCFL whose splits compare the clients' gradient-norm sequences by DTW")
def gcfl_plus(model, common: FedConfig, hp: GCFLPlusHParams) -> FederatedAlgorithm:
    return clustered(model, common, hp, sequence="grad")


@register("algorithm", "gcfl_plus_dws", hparams=GCFLPlusHParams, tasks=("node_cls", "graph_cls", "graph_reg"),
          paper="Xie, Ma, Liu, Yang, Yu, NeurIPS 2021, arXiv:2106.13423",
          help="GCFL+dWs: GCFL+ on the sequences of the clients' update (dW) norms")
def gcfl_plus_dws(model, common: FedConfig, hp: GCFLPlusHParams) -> FederatedAlgorithm:
    return clustered(model, common, hp, sequence="dw")


def clustered(model, common: FedConfig, hp: GCFLHParams, sequence: Optional[str] = None) -> FederatedAlgorithm:
    """GCFL's clustered federation (module docstring).

    Args:
        model: the Flax model.
        common: the run's common options.
        hp: GCFL's options (`GCFLPlusHParams` when `sequence` is set).
        sequence: None (GCFL: split by update similarity), "grad" (GCFL+: by DTW of gradient-norm
            sequences) or "dw" (GCFL+dWs: of update-norm sequences).

    Returns:
        The algorithm.
    """
    which = getattr(hp, "gcfl_seq_params", "conv")
    length = getattr(hp, "gcfl_seq_length", 1)
    base = make_optimizer(common.optim, lr=1.0)
    optimizer = record_grad_norm(base, which) if sequence == "grad" else base
    loss_fn = node_loss_fn(model)

    def init(key: jax.Array, data: FedData) -> GCFLState:
        params = init_params(model, key, data)
        c = data.eval.num_clients
        seq = ((jnp.zeros((c, length), jnp.float32), jnp.zeros(c, jnp.int32),
                jnp.zeros(c, bool).at[data.train_index].set(True)) if sequence else (None, None, None))
        return GCFLState(round=jnp.zeros((), jnp.int32), models=stack(params, c), cluster=jnp.zeros(c, jnp.int32),
                         opt=stack(optimizer.init(params), data.train.num_clients),
                         hp={"lr": jnp.float32(common.optim.lr)},
                         born=jnp.full(c, -1, jnp.int32).at[0].set(0), parent=jnp.full(c, -1, jnp.int32),
                         seq=seq[0], seq_count=seq[1], trains=seq[2])

    def round_fn(state: GCFLState, data: FedData, key: jax.Array):
        c, ct = data.eval.num_clients, data.train.num_clients
        start = jax.tree.map(lambda a: a[data.train_index], state.models)
        start, opt, scale = round_start(optimizer, common, state, data, start=start)
        train = lambda p, o, b, k: local_train(loss_fn, optimizer, common.local_steps, p, o, b, k, scale)
        new, opt, losses = map_clients(train, common.client_chunk)(start, opt, data.train, jax.random.split(key, ct))
        # shared = the parameters the clusters average (gcfl_shared); the criterion, the similarity and
        # the cluster update see only these (the authors' server holds only the convolutions)
        shared = conv_mask(jax.tree.map(lambda a: a[0], state.models), "conv" if hp.gcfl_shared == "conv" else "all")
        only = lambda t: jax.tree.map(lambda x, keep: x if keep else jnp.zeros_like(x), t, shared)
        dw_t = jax.vmap(lambda a, b: ravel_pytree(only(a))[0] - ravel_pytree(only(b))[0])(new, start)   # [C_t, P]
        dw = jnp.zeros((c, dw_t.shape[1]), dw_t.dtype).at[data.train_index].set(dw_t)
        trained = jnp.zeros(c, bool).at[data.train_index].set(True)
        allow = state.round + 1 > hp.gcfl_warmup
        seq, count, dist = state.seq, state.seq_count, None
        if sequence:
            value_t = opt.norm if sequence == "grad" else jax.vmap(
                lambda a, b: param_norm(jax.tree.map(jnp.subtract, a, b), which))(new, start)        # [C_t]
            value = jnp.zeros(c, jnp.float32).at[data.train_index].set(value_t)
            seq = jnp.where(trained[:, None], jnp.concatenate([seq[:, 1:], value[:, None]], axis=1), seq)
            count = jnp.minimum(count + trained.astype(jnp.int32), length)
            allow = allow & ((count >= length) | ~state.trains).all()    # every client holds a full window
            dist = dtw_matrix(seq, hp.gcfl_standardize)
        cluster = split_clusters(dw, state.cluster, trained, allow, hp.gcfl_eps1, hp.gcfl_eps2,
                                 dist=dist, once=sequence is not None)
        if sequence:   # a split empties every client's window (the authors' seqs_grads reset)
            count = jnp.where((cluster != state.cluster).any(), 0, count)
        born, parent = record_splits(state.born, state.parent, state.cluster, cluster, state.round + 1)
        # each client's model += its cluster's update mean, weighted by training graphs (nodes)
        same = (cluster[:, None] == cluster[data.train_index][None, :]) * data.train_weight[None, :]   # [C, C_t]
        share = same / jnp.maximum(same.sum(1, keepdims=True), 1e-12)
        # a parameter the clusters do not share keeps what its client trained (clients without training
        # graphs keep theirs)
        models = jax.tree.map(lambda m, n, s, keep: m + jnp.tensordot(share, n - s, axes=1).astype(m.dtype) if keep
                              else m.at[data.train_index].set(n.astype(m.dtype)), state.models, new, start, shared)
        # eval_mode auto: each client's cluster model, as the authors' code evaluates (a client's W is reset
        # to W_old, then gets its cluster's mean dW). An explicit local_model_* mode is the model each
        # client trained this round (OpenFGL's evaluation; the FedAvg family's meaning of the mode).
        evaluated = models
        if common.eval_mode.startswith("local_model"):
            evaluated = jax.tree.map(lambda m, n: m.at[data.train_index].set(n.astype(m.dtype)), models, new)
        metrics = evaluate_round(model, common, data, personal=evaluated)
        metrics["train_loss"] = weighted_loss(losses, data.train_weight)
        metrics["lr"] = scale
        metrics["num_clusters"] = jnp.zeros(c, bool).at[cluster].set(True).sum().astype(jnp.float32)
        return GCFLState(round=state.round + 1, models=models, cluster=cluster, opt=opt, hp=state.hp,
                         born=born, parent=parent, seq=seq, seq_count=count, trains=state.trains), metrics

    # up: the update dW_i (model-sized; GCFL+ adds one norm); down: the cluster's model
    one = lambda s: jax.tree.map(lambda a: a[0], s.models)
    return FederatedAlgorithm(init=init, round=round_fn, messages=lambda s: (one(s), one(s)))
