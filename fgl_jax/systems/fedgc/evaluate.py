"""Evaluate a condensed graph: train a GNN on G' and test it on the clients' real graphs (spec §2.6).

G' = (A', X', Y') is turned into a one-graph `ClientBatch` whose edges are all ordered pairs i≠j
with edge weight A'_ij carried in `edge_mask` (the foundation's `gcn_propagate` and
`mean_aggregate` use the mask as a weight, so GCN/SGC see D̃^{-1/2}(A'+I)D̃^{-1/2} exactly as
the dense form; GAT treats it as a complete graph). Any `fgl_jax.nn.make_model` architecture
therefore trains on G' unchanged.

Protocol (FedGC code): hidden 256, dropout 0.5, Adam lr 5e-3, L2 5e-4, 600 iterations with the
LR ×0.1 at 300; every client keeps the weights with its best validation accuracy on its own
local graph; then (fine-tuning, "ft") 30 more Adam steps on the client's own training nodes,
again keeping the best-validation weights (the pre-fine-tuning weights are a candidate, so
fine-tuning never lowers the selected validation accuracy). Test accuracy is pooled over
clients (weighted by test counts).

Cross-architecture evaluation (FedGC Table 3): `arch_configs(protocol, base, archs)` gives one
EvalConfig per column, either every library model with this recipe ("recipe") or GCond's tester
("gcond", `GCOND_ARCHS`), and `evaluate_architectures` trains them all on the same G'.
"""
from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
import jraph
import numpy as np
import optax

from fgl_jax import ops, registry
from fgl_jax.batch import ClientBatch
from fgl_jax.federated.ahead import call_signature, compile_ahead, program
from fgl_jax.federated.client import local_train
from fgl_jax.federated.metrics import masked_cross_entropy
from fgl_jax.nn import make_model
from fgl_jax.systems.fedgc.rows import (RowPlan, bernoulli_rows, closed_neighbourhoods, dropout_key, gcn2_rows,
                                        pad_lists)
from fgl_jax import validate as V

Array = jax.Array


@dataclasses.dataclass(frozen=True)
class EvalConfig:
    arch: str = "gcn"
    hidden: int = 256
    num_layers: int = 2
    dropout: float = 0.5
    lr: float = 5e-3
    weight_decay: float = 5e-4
    iters: int = 600
    decay_at: int = 300        # LR x0.1 from this iteration (0 = never)
    eval_every: int = 50       # validation check period while training on G' (cost: M local forwards)
    finetune_steps: int = 30   # 0 disables fine-tuning ("-ft")
    ft_eval_every: int = 10    # validation check period while fine-tuning
    runs: int = 1              # evaluation repeats averaged (code: 3; arxiv 1)
    # Train on X' alone (A' dropped, each node only its self-loop), then select, fine-tune and test
    # the same model on the real graphs: GCond's "MLP" column (see `gcond_arch_configs`).
    graph_free: bool = False
    model_kwargs: tuple = ()   # extra (name, value) pairs for `make_model`, e.g. (("K", 2),)
    syn_model_kwargs: tuple = ()  # further pairs for the model while it trains on G' only (same parameters)

    def __post_init__(self):
        for name in ("hidden", "num_layers", "iters", "eval_every", "runs"):
            V.at_least("EvalConfig", name, getattr(self, name), 1)
        if self.iters % self.eval_every:
            raise ValueError(f"EvalConfig.iters={self.iters} must be a multiple of eval_every={self.eval_every}")
        if self.finetune_steps and (self.ft_eval_every <= 0 or self.finetune_steps % self.ft_eval_every):
            raise ValueError(f"EvalConfig.finetune_steps={self.finetune_steps} must be a multiple of "
                             f"ft_eval_every={self.ft_eval_every}")
        V.non_negative("EvalConfig", "finetune_steps", self.finetune_steps)


def dense_graph_batch(a: Array, x: Array, y: Array) -> ClientBatch:
    """One-graph ClientBatch (no client axis) of a dense weighted graph: all ordered pairs i≠j.

    a: [N', N'] symmetric weights (diagonal ignored; self-loops are added by the models);
    x: [N', d]; y: int [N']. Every node is a training node.
    """
    n = a.shape[0]
    ii, jj = np.nonzero(~np.eye(n, dtype=bool))
    s, r = jnp.asarray(jj, jnp.int32), jnp.asarray(ii, jnp.int32)  # edge u=j -> v=i carries A'[i, j]
    gt = jraph.GraphsTuple(nodes=None, edges=None, globals=None, senders=s, receivers=r,
                           n_node=jnp.asarray([n], jnp.int32), n_edge=jnp.asarray([s.shape[0]], jnp.int32))
    ones = jnp.ones((n,), bool)
    return ClientBatch(graph=gt, features=x, y=y.astype(jnp.int32), node_mask=ones, edge_mask=a[r, s],
                       train_mask=ones, val_mask=~ones, test_mask=~ones,
                       node_ids=jnp.arange(n, dtype=jnp.int32), client_mask=jnp.ones((), bool))


def _optimizer(cfg: EvalConfig):
    sched = optax.piecewise_constant_schedule(cfg.lr, {cfg.decay_at: 0.1}) if cfg.decay_at else cfg.lr
    # torch-style coupled L2 (Adam's weight_decay), as in GCond/FedGC.
    return optax.chain(optax.add_decayed_weights(cfg.weight_decay), optax.adam(sched))


def _accuracy(logits, y, mask):
    correct = ((jnp.argmax(logits, -1) == y) & mask).sum()
    return correct.astype(jnp.float32), mask.sum().astype(jnp.float32)


@functools.lru_cache(maxsize=64)  # one jitted function per (config, sizes): compiled once per process and shape
def make_evaluator(cfg: EvalConfig, in_dim: int, num_classes: int, restrict_rows: bool = True):
    """Returns evaluate(key, syn_batch, clients) -> dict of per-client arrays [M] (jitted).

    clients: ClientBatch with a client axis [M, ...] (real local graphs, same feature space as X').
    Result: val_correct/val_total/test_correct/test_total before and after fine-tuning.
    restrict_rows: for the plain 2-layer GCN on dense features, compute the clients' scores and
    fine-tuning steps only on the rows they read (`rows.gcn2_rows`; same numbers up to float
    reassociation, the same dropout bits). False = the full local graphs (the reference).
    """
    model = make_model(cfg.arch, in_dim, num_classes, hidden=cfg.hidden, num_layers=cfg.num_layers,
                       dropout=cfg.dropout, **dict(cfg.model_kwargs))
    syn_model = make_model(cfg.arch, in_dim, num_classes, hidden=cfg.hidden, num_layers=cfg.num_layers,
                           dropout=cfg.dropout, **{**dict(cfg.model_kwargs), **dict(cfg.syn_model_kwargs)})
    opt = _optimizer(cfg)
    ft_opt = optax.chain(optax.add_decayed_weights(cfg.weight_decay), optax.adam(cfg.lr))
    # A plain GCN on dense features no wider than its hidden layer: the graphs' features are fixed
    # while it trains, so its first propagation S X is taken once per call (at width d) and layer 0
    # is a dense product (S X) W instead of a propagation at the hidden width every step (same
    # parameters, the product reassociated). Sparse features keep the sparse first layer.
    pre_gcn = cfg.arch == "gcn" and not cfg.model_kwargs and not cfg.syn_model_kwargs and in_dim <= cfg.hidden
    model_pre = make_model("gcn", in_dim, num_classes, hidden=cfg.hidden, num_layers=cfg.num_layers,
                           dropout=cfg.dropout, pre_aggregated=True) if pre_gcn else None
    # ... and with two layers, the clients' scores and fine-tuning read only a few rows' logits
    by_rows = restrict_rows and pre_gcn and cfg.num_layers == 2

    def propagated(b: ClientBatch) -> ClientBatch:  # one graph slice: features := S X
        return b.replace(features=ops.gcn_propagate(b.features, b.graph.senders, b.graph.receivers, b.edge_mask,
                                                    b.y.shape[-1]))

    def loss_of(m):
        def train_loss(p, b, k):  # cross-entropy on b's training nodes, dropout on
            return masked_cross_entropy(m.apply(p, b, train=True, rngs={"dropout": k}), b.y, b.train_mask)
        return train_loss

    def client_scores(model):
        def one(p, b):
            logits = model.apply(p, b, train=False)
            vc, vt = _accuracy(logits, b.y, b.val_mask)
            tc, tt = _accuracy(logits, b.y, b.test_mask)
            return vc, vt, tc, tt
        return one

    def row_fns(probe: ClientBatch):
        """(train_loss, score) of the row-restricted forward; their `b` is (client slice, RowPlan of
        its training nodes, RowPlan of its validation and test nodes)."""
        keep_prob = 1.0 - cfg.dropout

        def logits(p, b, plan, keep=None):
            n = b.y.shape[-1]
            return gcn2_rows(p["params"], plan, b.graph.senders, b.graph.receivers, b.edge_mask, n, keep)

        def train_loss(p, bp, k):
            b, tp, _ = bp
            keep = None
            if cfg.dropout > 0:
                dk = dropout_key(model_pre, p, k, probe)
                keep = (bernoulli_rows(dk, keep_prob, (b.y.shape[-1], cfg.hidden), tp.rows), keep_prob)
            return masked_cross_entropy(logits(p, b, tp, keep), b.y, b.train_mask)

        def score(p, bp):
            b, _, sp = bp
            out = logits(p, b, sp)
            vc, vt = _accuracy(out, b.y, b.val_mask)
            tc, tt = _accuracy(out, b.y, b.test_mask)
            return vc, vt, tc, tt
        return train_loss, score

    @jax.jit
    def evaluate_jit(key, syn: ClientBatch, clients: ClientBatch, plans):
        k_init, k_train, k_ft = jax.random.split(key, 3)
        if cfg.graph_free:
            syn = syn.replace(edge_mask=jnp.zeros_like(syn.edge_mask))
        params = model.init({"params": k_init, "dropout": k_init}, syn, train=False)
        opt_state = opt.init(params)
        m = clients.y.shape[0]
        if pre_gcn and not isinstance(clients.features, ops.SparseFeatures):
            syn, clients = propagated(syn), jax.vmap(propagated)(clients)
            train_loss = syn_loss = loss_of(model_pre)
            score = client_scores(model_pre)
        else:
            train_loss, syn_loss = loss_of(model), loss_of(syn_model)
            score = client_scores(model)
        if plans is not None:  # clients := (slice, training-node plan, scoring plan) per client
            def plan(b, idx):
                rows, row_ok, edges, edge_ok = idx
                return RowPlan(rows, row_ok, b.features[rows], edges, edge_ok)
            clients = (clients, jax.vmap(plan)(clients, plans[0]), jax.vmap(plan)(clients, plans[1]))
            train_loss, score = row_fns(syn)
        per_client_score = jax.vmap(score, in_axes=(None, 0))
        tile = lambda p: jax.tree.map(lambda a: jnp.broadcast_to(a, (m,) + a.shape), p)

        def chunk(carry, k):
            p, o, best_p, best_v, best_t = carry
            p, o, _ = local_train(syn_loss, opt, cfg.eval_every, p, o, syn, k, 1.0)
            vc, vt, tc, tt = per_client_score(p, clients)
            v = vc / jnp.maximum(vt, 1.0)
            better = v > best_v
            best_p = jax.tree.map(lambda b, a: jnp.where(better.reshape((m,) + (1,) * a.ndim), a[None], b),
                                  best_p, p)
            return (p, o, best_p, jnp.where(better, v, best_v), jnp.where(better, tc, best_t)), None

        init = (params, opt_state, tile(params), -jnp.ones((m,)), jnp.zeros((m,)))
        (_, _, best_p, _, _), _ = jax.lax.scan(chunk, init, jax.random.split(k_train, cfg.iters // cfg.eval_every))
        vc0, vt, tc0, tt = jax.vmap(score)(best_p, clients)
        out = {"val_total": vt, "test_total": tt, "val_correct_noft": vc0, "test_correct_noft": tc0}
        if cfg.finetune_steps == 0:
            out.update(val_correct=vc0, test_correct=tc0)
            return out

        def finetune(p, b, k, vc_start, tc_start):
            o = ft_opt.init(p)

            def ft_chunk(carry, kk):
                q, o, bv, bt = carry
                q, o, _ = local_train(train_loss, ft_opt, cfg.ft_eval_every, q, o, b, kk, 1.0)
                vc, _, tc, _ = score(q, b)
                better = vc > bv
                return (q, o, jnp.where(better, vc, bv), jnp.where(better, tc, bt)), None

            (_, _, bv, bt), _ = jax.lax.scan(ft_chunk, (p, o, vc_start, tc_start),
                                             jax.random.split(k, cfg.finetune_steps // cfg.ft_eval_every))
            return bv, bt

        vc1, tc1 = jax.vmap(finetune)(best_p, clients, jax.random.split(k_ft, m), vc0, tc0)
        out.update(val_correct=vc1, test_correct=tc1)
        return out

    plan_cache: list = []  # [(clients, plans)]: the last clients' row plans (host index arrays)

    def row_plans(clients: ClientBatch):
        if plan_cache and plan_cache[0][0] is clients:
            return plan_cache[0][1]
        g = clients.graph
        plans = []
        for targets in (clients.train_mask, np.asarray(clients.val_mask) | np.asarray(clients.test_mask)):
            rows, edges, _ = closed_neighbourhoods(g.senders, g.receivers, clients.edge_mask, targets)
            plans.append((*pad_lists(rows), *pad_lists(edges)))
        plan_cache[:] = [(clients, tuple(plans))]
        return plan_cache[0][1]

    def arguments(key, syn: ClientBatch, clients: ClientBatch) -> tuple:
        usable = (by_rows and not isinstance(clients.features, ops.SparseFeatures) and clients.y.ndim == 2
                  and not isinstance(clients.train_mask, jax.core.Tracer))
        return key, syn, clients, (row_plans(clients) if usable else None)

    ahead: list = []  # [handle]: the program compiled ahead for the last `precompile`'s shapes

    def precompile(key, syn: ClientBatch, clients: ClientBatch) -> None:
        """Compile the program for arguments shaped like these in a background thread (XLA releases
        the GIL), so the first evaluation does not wait for it; the same program `evaluate` runs."""
        args = arguments(key, syn, clients)
        if any(isinstance(a, jax.core.Tracer) for a in jax.tree.leaves(args)):
            return
        if not (ahead and ahead[0].matches(call_signature(evaluate_jit, *args))):
            ahead[:] = [compile_ahead(evaluate_jit, *args, name="fedgc-eval-compile")]

    def evaluate(key, syn: ClientBatch, clients: ClientBatch):
        args = arguments(key, syn, clients)
        return program(ahead[0] if ahead else None, evaluate_jit, *args)(*args)

    evaluate.precompile = precompile
    return evaluate


# GCond's cross-architecture tester (tester_other_arcs.py), which FedGC's Table 3 follows (FedGC's
# own code has no cross-architecture evaluation):
# column -> (architecture, make_model kwargs, graph-free, extra kwargs while training on G').
GCOND_ARCHS: dict[str, tuple[str, tuple, bool, tuple]] = {
    # a GCN trained with A' zeroed (GCond: adj_syn - adj_syn, normalised to I) and then used as a GCN
    # on the real graph (its final predict on adj_full overrides the feature-only one).
    "mlp": ("gcn", (), True, ()),
    "appnp": ("appnp", (("K", 2), ("alpha", 0.1)), False, ()),   # APPNP1: K = nlayers = 2
    # Cheby, single_param, K = 2; on G' normalised without the self-loop, on real graphs with it
    "cheb": ("cheb_gcond", (), False, (("self_loops", False),)),
    "gcn": ("gcn", (), False, ()),
    # GraphSage with its default root_weight=False: S H W_l + b_l on the GCN-normalised graph, i.e.
    # the GCN layer (only the init distribution differs); evaluated as GCN.
    "sage": ("gcn", (), False, ()),
    "sgc": ("appnp", (("K", 2), ("alpha", 0.0)), False, ()),      # SGC1 (sgc_multi): 2-layer MLP, then S²
}


def gcond_arch_configs(base: EvalConfig) -> dict[str, EvalConfig]:
    """EvalConfigs of GCond's cross-architecture protocol, keyed by FedGC Table 3 column.

    GCond trains every architecture with hidden 256, two layers, dropout 0 (0.5 only on Reddit),
    Adam lr 0.01 (the models' default) with L2 5e-4, 600 iterations, LR x0.1 at 300, best-validation
    weights. `base` supplies the rest (validation period, fine-tuning, runs).
    """
    common = dict(hidden=256, num_layers=2, dropout=0.0, lr=0.01, weight_decay=5e-4, iters=600, decay_at=300)
    return {col: dataclasses.replace(base, arch=arch, model_kwargs=kw, graph_free=free, syn_model_kwargs=syn_kw,
                                     **common)
            for col, (arch, kw, free, syn_kw) in GCOND_ARCHS.items()}


# the library's architectures, one name each, in FedGC Table 3's column order (GAT is not in the paper)
RECIPE_ARCHS = ("mlp", "appnp", "cheb", "gcn", "sage", "sgc", "gat")


def recipe_arch_configs(base: EvalConfig, archs) -> dict[str, EvalConfig]:
    """Every named library architecture trained with `base`'s recipe (GAT: `hidden` 8 per head)."""
    unknown = [a for a in archs if a.lower() not in registry.names("model")]
    if unknown:
        raise ValueError(f"unknown architecture(s) {unknown}; choose from {registry.names('model')}")
    return {a: dataclasses.replace(base, arch=a.lower(), hidden=8 if a.lower() == "gat" else base.hidden)
            for a in archs}


ARCH_PROTOCOLS = ("recipe", "gcond")


def arch_configs(protocol: str, base: EvalConfig, archs=None) -> dict[str, EvalConfig]:
    """The EvalConfig per column of a cross-architecture evaluation.

    protocol "recipe": each library architecture with `base`'s training recipe; "gcond": GCond's
    tester (`gcond_arch_configs`). `archs` restricts the columns; None gives every column of the
    protocol (`RECIPE_ARCHS` / `GCOND_ARCHS`), in FedGC Table 3's order.
    """
    if protocol == "recipe":
        return recipe_arch_configs(base, RECIPE_ARCHS if archs is None else archs)
    if protocol == "gcond":
        cfgs = gcond_arch_configs(base)
        archs = list(cfgs) if archs is None else list(archs)
        unknown = [a for a in archs if a not in cfgs]
        if unknown:
            raise ValueError(f"architecture(s) {unknown} are not in GCond's protocol; choose from {list(cfgs)}")
        return {a: cfgs[a] for a in archs}
    raise ValueError(f"unknown cross-architecture protocol {protocol!r}; choose one of {ARCH_PROTOCOLS}")


def evaluate_architectures(key: Array, syn: ClientBatch, clients: ClientBatch, configs: dict[str, EvalConfig],
                           in_dim: int, num_classes: int, log=None) -> dict[str, float]:
    """Train every config of `configs` on the same G' (`syn`) with the same key and test on `clients`.

    Returns {column: pooled test accuracy after fine-tuning, column + "_noft": before}. Columns whose
    configs are equal (GCond's SAGE and GCN) are trained once and share the numbers.
    """
    out: dict[str, float] = {}
    done: dict[EvalConfig, str] = {}
    for col, ec in configs.items():
        if ec in done:
            out[col], out[col + "_noft"] = out[done[ec]], out[done[ec] + "_noft"]
        else:
            r = make_evaluator(ec, in_dim, num_classes)(key, syn, clients)
            out[col], out[col + "_noft"] = pooled(r, True)["test_acc"], pooled(r, False)["test_acc"]
            done[ec] = col
        if log is not None:
            log(f"{col}: {out[col]:.4f} (no ft {out[col + '_noft']:.4f})")
    return out


def pooled(result: dict, finetune: bool = True) -> dict:
    """Pooled accuracies (test-count weighted) from an evaluator result."""
    sfx = "" if finetune else "_noft"
    r = {k: np.asarray(v) for k, v in result.items()}
    return {"val_acc": float(r["val_correct" + sfx].sum() / max(r["val_total"].sum(), 1.0)),
            "test_acc": float(r["test_correct" + sfx].sum() / max(r["test_total"].sum(), 1.0))}


def client_graph_ceiling(key: Array, batch: ClientBatch, in_dim: int, num_classes: int, steps: int = 300,
                         check_every: int = 10) -> dict:
    """The real-graph reference for any G' in a feature space: ONE 2-layer GCN (hidden 256, dropout 0.5,
    Adam 1e-2, L2 5e-4) trained directly on every client's real local graph at once (shared weights,
    loss over all clients' own training nodes), keeping the weights with the best pooled validation
    accuracy (checked every `check_every` steps).

    batch: stacked client graphs [M, ...] in that feature space. Returns pooled val_acc / test_acc of
    the kept weights. Not a strict bound: the G' evaluation also fine-tunes locally and selects per
    client, and can land above it.
    """
    from fgl_jax.batch import unstack
    from fgl_jax.federated.evaluation import evaluate as evaluate_pooled
    model = make_model("gcn", in_dim, num_classes, hidden=256, num_layers=2, dropout=0.5)
    opt = optax.chain(optax.add_decayed_weights(5e-4), optax.adam(1e-2))
    n_train = jnp.maximum(batch.train_mask.sum(), 1)

    def loss(p, b, k):  # mean CE over all clients' own training nodes (b: every client, [M, ...])
        ks = jax.random.split(k, b.y.shape[0])
        per = jax.vmap(lambda c, kk: masked_cross_entropy(model.apply(p, c, train=True, rngs={"dropout": kk}),
                                                          c.y, c.train_mask) * c.train_mask.sum())(b, ks)
        return per.sum() / n_train

    @jax.jit
    def run(key):
        k0, k1 = jax.random.split(key)
        p = model.init(k0, unstack(batch, 0), train=False)

        def chunk(carry, kk):
            p, o, best_v, best_t = carry
            p, o, _ = local_train(loss, opt, check_every, p, o, batch, kk, 1.0)
            acc = evaluate_pooled(model, p, batch, per_client=False)
            better = acc["val_acc"] > best_v
            return (p, o, jnp.where(better, acc["val_acc"], best_v), jnp.where(better, acc["test_acc"], best_t)), None

        init = (p, opt.init(p), jnp.float32(-1.0), jnp.float32(0.0))
        (_, _, v, t), _ = jax.lax.scan(chunk, init, jax.random.split(k1, steps // check_every))
        return v, t

    v, t = run(key)
    return {"val_acc": float(v), "test_acc": float(t)}

