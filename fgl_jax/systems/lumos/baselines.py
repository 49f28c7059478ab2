"""Baselines of the Lumos paper (§VIII) that a user trains: the centralised GCN/GAT/MLP.

`train_central` reuses the generic full-batch trainer (`algorithm.make_algorithm`) and the
foundation models (`fgl_jax.nn.make_model`), so it shares Lumos' optimiser, epochs and best-val
selection. `mean_field_q` > 0 trains a GCN on the expected randomized-response adjacency
(1-2q)A + q(J - I) (`MeanFieldGCN`, propagation in O(E + N)): the server model of the paper's naive
FedGNN baseline, whose perturbations (Gaussian features, RR adjacency and labels) live with the
reproduction in experiments/lumos/baselines.py.
"""
from __future__ import annotations

import dataclasses
from typing import Optional

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

from fgl_jax import ops
from fgl_jax.batch import full_graph_batch, unstack
from fgl_jax.graph import Graph
from fgl_jax.nn import make_model
from fgl_jax.partition.edges import EdgeSplit
from fgl_jax.federated import Program, run
from fgl_jax.systems.lumos.algorithm import make_algorithm
from fgl_jax.systems.lumos.config import LumosConfig


@jax.tree_util.register_dataclass
@dataclasses.dataclass
class CentralData:
    batch: object            # ClientBatch slice (no client axis)
    y: jax.Array
    y_test: jax.Array
    pos: jax.Array
    val_pairs: jax.Array
    val_label: jax.Array
    test_pairs: jax.Array
    test_label: jax.Array
    mf_q: jax.Array          # mean-field RR flip probability (0 = plain adjacency)

    # the fields `make_algorithm` reads besides y / link arrays
    @property
    def train_mask(self):
        return self.batch.train_mask

    @property
    def val_mask(self):
        return self.batch.val_mask

    @property
    def test_mask(self):
        return self.batch.test_mask


def _link_arrays(split: Optional[EdgeSplit]):
    if split is None:
        z = jnp.zeros((1, 2), jnp.int32)
        return z, z, jnp.zeros(1), z, jnp.zeros(1)
    s, r = split.train_directed()
    vp = np.concatenate([split.val_pos, split.val_neg])
    tp = np.concatenate([split.test_pos, split.test_neg])
    vl = np.r_[np.ones(len(split.val_pos)), np.zeros(len(split.val_neg))]
    tl = np.r_[np.ones(len(split.test_pos)), np.zeros(len(split.test_neg))]
    return (jnp.asarray(np.stack([s, r], 1), jnp.int32), jnp.asarray(vp, jnp.int32), jnp.asarray(vl, jnp.float32),
            jnp.asarray(tp, jnp.int32), jnp.asarray(tl, jnp.float32))


def central_data(graph: Graph, x: np.ndarray, split: Optional[EdgeSplit] = None, y_train=None, mf_q: float = 0.0
                 ) -> CentralData:
    """Full-graph data; in the link task the message-passing graph is the training edges only."""
    g = dataclasses.replace(graph, x=np.asarray(x, np.float32))
    if split is not None:
        s, r = split.train_directed()
        g = dataclasses.replace(g, senders=s, receivers=r)
    batch = unstack(full_graph_batch(g, node_multiple=1, edge_multiple=1), 0)
    y = np.maximum(graph.y, 0)
    pos, vp, vl, tp, tl = _link_arrays(split)
    return CentralData(batch, jnp.asarray(y if y_train is None else y_train, jnp.int32), jnp.asarray(y, jnp.int32),
                       pos, vp, vl, tp, tl, jnp.float32(mf_q))


class MeanFieldGCN(nn.Module):
    """GCN on the expected RR adjacency Ã = (1-2q)A + q(J - I), plus self-loops, sym. normalised."""

    in_dim: int
    hidden: int
    num_classes: int
    num_layers: int = 2
    dropout: float = 0.0

    @nn.compact
    def __call__(self, batch, q, train: bool = False):
        n = batch.y.shape[-1]
        s, r, m = batch.graph.senders, batch.graph.receivers, batch.edge_mask
        deg = ops.in_degree(r, m, n)
        deg_t = (1 - 2 * q) * deg + q * (n - 1) + 1.0
        dinv = jax.lax.rsqrt(deg_t)[:, None]
        h = batch.features
        for i in range(self.num_layers):
            last = i == self.num_layers - 1
            width = self.num_classes if last else self.hidden
            if i > 0 and train and self.dropout > 0:
                h = nn.Dropout(self.dropout, deterministic=False)(h)
            z = nn.Dense(width, use_bias=False, name=f"layer_{i}")(h) * dinv
            az = jax.ops.segment_sum(z[s] * m[:, None], r, num_segments=n)
            h = ((1 - 2 * q) * az + q * (z.sum(0, keepdims=True) - z) + z) * dinv
            h = h + self.param(f"bias_{i}", nn.initializers.zeros, (width,))
            if not last:
                h = nn.relu(h)
        return h


def central_algorithm(cfg: LumosConfig, in_dim: int, num_classes: int, mean_field: bool = False,
                      backbone: Optional[str] = None):
    """Centralised GCN/GAT (fgl_jax.nn) with Lumos' hidden size, dropout and optimiser.
    backbone: override cfg.model (e.g. "mlp": own features only, the reference for what a
    device can learn without any neighbour information)."""
    backbone = backbone or cfg.model
    out = num_classes if cfg.task == "node" else cfg.hidden
    if mean_field:
        if cfg.model != "gcn":
            raise ValueError("central_algorithm: the mean-field (expected RR adjacency) baseline supports gcn only")
        model = MeanFieldGCN(in_dim, cfg.hidden, out, cfg.num_layers, cfg.dropout)
    else:
        kw = {"heads": cfg.heads, "out_heads": 1} if backbone == "gat" else {}
        model = make_model(backbone, in_dim, out, hidden=cfg.hidden, num_layers=cfg.num_layers,
                           dropout=cfg.dropout, **kw)

    def apply(params, data, train, key):
        rngs = {"dropout": key} if train else None
        if mean_field:
            return model.apply(params, data.batch, data.mf_q, train=train, rngs=rngs)
        return model.apply(params, data.batch, train=train, rngs=rngs)

    def forward(params, data, train, key):
        out_ = apply(params, data, train, key)
        return (out_, None) if cfg.task == "link" else (None, out_)

    def init_params(key, data):
        if mean_field:
            return model.init(key, data.batch, data.mf_q, False)
        return model.init(key, data.batch, False)

    return make_algorithm(forward, init_params, cfg.task, cfg.lr)


def central_program(graph: Graph, x: np.ndarray, cfg: LumosConfig, split: Optional[EdgeSplit] = None,
                    y_train=None, mean_field_q: float = 0.0, backbone: Optional[str] = None) -> Program:
    """The centralised model (or the naive FedGNN server model) as a Program for the engine: one
    full-batch Adam step per round, cfg.rounds rounds, best-validation selection."""
    data = central_data(graph, x, split, y_train, mean_field_q)
    alg = central_algorithm(cfg, x.shape[1], graph.num_classes, mean_field=mean_field_q > 0, backbone=backbone)
    method = "naive-fedgnn" if y_train is not None or mean_field_q > 0 else "central"
    return Program(alg, data, cfg.rounds, {"method": f"{method}-{backbone or cfg.model}", "dataset": graph.name,
                                           "task": cfg.task})


def train_central(graph: Graph, x: np.ndarray, cfg: LumosConfig, split: Optional[EdgeSplit] = None,
                  y_train=None, mean_field_q: float = 0.0, backbone: Optional[str] = None) -> dict:
    """Train the centralised model (or the naive FedGNN server model) through the engine with key
    jax.random.key(cfg.seed); best-val metrics, history and timings."""
    prog = central_program(graph, x, cfg, split, y_train, mean_field_q, backbone)
    res = run(prog.algorithm, prog.data, jax.random.key(cfg.seed), prog.num_rounds)
    return {"best": res.best, "history": {k: np.asarray(v).tolist() for k, v in res.history.items()},
            "compile_seconds": res.compile_seconds, "epoch_seconds": res.run_seconds / cfg.rounds}
