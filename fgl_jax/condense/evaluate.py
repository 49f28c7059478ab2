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
"""
from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
import jraph
import numpy as np
import optax

from fgl_jax.batch import ClientBatch
from fgl_jax.federated.client import local_train
from fgl_jax.federated.metrics import masked_cross_entropy
from fgl_jax.nn import make_model
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


def make_evaluator(cfg: EvalConfig, in_dim: int, num_classes: int):
    """Returns evaluate(key, syn_batch, clients) -> dict of per-client arrays [M] (jitted).

    clients: ClientBatch with a client axis [M, ...] (real local graphs, same feature space as X').
    Result: val_correct/val_total/test_correct/test_total before and after fine-tuning.
    """
    model = make_model(cfg.arch, in_dim, num_classes, hidden=cfg.hidden, num_layers=cfg.num_layers,
                       dropout=cfg.dropout)
    opt = _optimizer(cfg)
    ft_opt = optax.chain(optax.add_decayed_weights(cfg.weight_decay), optax.adam(cfg.lr))

    def train_loss(p, b, k):  # cross-entropy on b's training nodes, dropout on
        return masked_cross_entropy(model.apply(p, b, train=True, rngs={"dropout": k}), b.y, b.train_mask)

    def client_scores(params, clients):
        def one(p, b):
            logits = model.apply(p, b, train=False)
            vc, vt = _accuracy(logits, b.y, b.val_mask)
            tc, tt = _accuracy(logits, b.y, b.test_mask)
            return vc, vt, tc, tt
        return one

    @jax.jit
    def evaluate(key, syn: ClientBatch, clients: ClientBatch):
        k_init, k_train, k_ft = jax.random.split(key, 3)
        params = model.init({"params": k_init, "dropout": k_init}, syn, train=False)
        opt_state = opt.init(params)
        m = clients.y.shape[0]
        score = client_scores(None, clients)
        per_client_score = jax.vmap(score, in_axes=(None, 0))
        tile = lambda p: jax.tree.map(lambda a: jnp.broadcast_to(a, (m,) + a.shape), p)

        def chunk(carry, k):
            p, o, best_p, best_v, best_t = carry
            p, o, _ = local_train(train_loss, opt, cfg.eval_every, p, o, syn, k, 1.0)
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

    return evaluate


def pooled(result: dict, finetune: bool = True) -> dict:
    """Pooled accuracies (test-count weighted) from an evaluator result."""
    sfx = "" if finetune else "_noft"
    r = {k: np.asarray(v) for k, v in result.items()}
    return {"val_acc": float(r["val_correct" + sfx].sum() / max(r["val_total"].sum(), 1.0)),
            "test_acc": float(r["test_correct" + sfx].sum() / max(r["test_total"].sum(), 1.0))}
