"""Baselines of the Lumos paper (§VIII): centralised GCN/GAT and the naive federated GNN.

Both reuse the generic full-batch trainer (`algorithm.make_algorithm`) and the foundation models
(`fgl_jax.nn.make_model`), so they share Lumos' optimiser, epochs and best-val selection.

Naive FedGNN (paper baseline 3; parameters unspecified, spec A14): every device perturbs its ego
network and uploads it; the server trains a GNN on the noisy graph.
  features: analytic Gaussian mechanism (Balle & Wang 2018), (eps_x, delta) = (2, 1e-5),
            L2 sensitivity (b - a) sqrt(d) on features scaled to [0, 1];
  adjacency: symmetric per-pair randomized response with eps_a = 2 (flip prob 1/(1+e^eps_a)):
            true edges kept w.p. 1-q, Binomial(#non-edges, q) false edges at uniform positions;
            or, when that graph is too large for memory (Facebook: ~30 M false edges),
            adjacency="expected": GCN on the expected noisy adjacency (1-2q)A + q(J - I)
            (mean field; deterministic; propagation in O(E + N) via the all-ones term);
  labels:   k-ary randomized response with eps_y = 1 on train and validation labels.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Optional

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

from fgl_jax import ops
from fgl_jax.batch import full_graph_batch, unstack
from fgl_jax.graph import Graph, symmetrize
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


# ---------------------------------------------------------------------------------------------
# naive FedGNN perturbations (host side, once)


def analytic_gaussian_sigma(eps: float, delta: float, sensitivity: float) -> float:
    """Smallest sigma with Phi(D/2s - eps s/D) - e^eps Phi(-D/2s - eps s/D) <= delta (Balle & Wang 2018)."""
    if eps <= 0 or not 0 < delta < 1 or sensitivity <= 0:
        raise ValueError(f"analytic_gaussian_sigma: need eps > 0, 0 < delta < 1, sensitivity > 0; "
                         f"got {eps}, {delta}, {sensitivity}")

    def priv_loss(s):
        a, b = sensitivity / (2 * s), eps * s / sensitivity
        from scipy.stats import norm  # here, not at import: scipy.stats is a noticeable part of every command's start-up
        return norm.cdf(a - b) - math.exp(eps) * norm.cdf(-a - b)

    lo, hi = 1e-6, 1.0
    while priv_loss(hi) > delta:
        hi *= 2
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if priv_loss(mid) > delta else (lo, mid)
    return hi


def rr_labels(y: np.ndarray, k: int, eps: float, rng: np.random.Generator) -> np.ndarray:
    """k-ary randomized response: keep w.p. e^eps/(e^eps + k - 1), else a uniform other class."""
    keep = rng.random(y.shape) < math.exp(eps) / (math.exp(eps) + k - 1)
    other = (y + rng.integers(1, k, y.shape)) % k
    return np.where(keep, y, other).astype(np.int32)


def rr_adjacency(senders, receivers, n: int, eps: float, rng: np.random.Generator, max_false: int = 10_000_000
                 ) -> tuple[np.ndarray, np.ndarray]:
    """Symmetric per-pair RR of the adjacency: directed (s, r) of the noisy undirected graph."""
    q = 1.0 / (1.0 + math.exp(eps))
    s, r = np.asarray(senders, np.int64), np.asarray(receivers, np.int64)
    und = s < r
    eu, ev = s[und], r[und]
    keep = rng.random(eu.size) >= q
    non_edges = n * (n - 1) // 2 - eu.size
    n_false = int(rng.binomial(non_edges, q))
    if n_false > max_false:
        raise MemoryError(f"rr_adjacency: {n_false} false edges exceed max_false={max_false}; "
                          "use the mean-field baseline (adjacency='expected')")
    existing = np.sort(eu * n + ev)
    got = np.zeros(0, np.int64)
    while got.size < n_false:
        need = int(1.1 * (n_false - got.size)) + 64
        a, b = rng.integers(0, n, need), rng.integers(0, n, need)
        lo, hi = np.minimum(a, b), np.maximum(a, b)
        key = (lo * n + hi)[lo != hi]
        pos = np.clip(np.searchsorted(existing, key), 0, max(existing.size - 1, 0))
        key = key[existing[pos] != key] if existing.size else key
        got = np.unique(np.concatenate([got, key]))
    got = rng.permutation(got)[:n_false]
    fu, fv = got // n, got % n
    return symmetrize(np.concatenate([eu[keep], fu]), np.concatenate([ev[keep], fv]), n)


def naive_fedgnn_graph(graph: Graph, x: np.ndarray, eps_x: float = 2.0, delta: float = 1e-5, eps_a: float = 2.0,
                       eps_y: float = 1.0, seed: int = 0, split: Optional[EdgeSplit] = None,
                       adjacency: str = "sampled"):
    """Perturbed (x, senders, receivers, y_train) as the server sees them (spec A14)."""
    rng = np.random.default_rng(seed)
    d = x.shape[1]
    sigma = analytic_gaussian_sigma(eps_x, delta, math.sqrt(d))
    xn = (x + rng.normal(0.0, sigma, x.shape)).astype(np.float32)
    if split is not None:
        s, r = split.train_directed()
    else:
        s, r = graph.senders, graph.receivers
    if adjacency == "sampled":
        s, r = rr_adjacency(s, r, graph.num_nodes, eps_a, rng)
    elif adjacency != "expected":  # expected: true edges stay; (1-2q)A + q(J-I) is applied in MeanFieldGCN
        raise ValueError(f"naive_fedgnn_graph: adjacency must be 'sampled' or 'expected', got {adjacency!r}")
    y = np.maximum(graph.y, 0)
    y_noisy = y.copy()
    tv = graph.train_mask | graph.val_mask
    y_noisy[tv] = rr_labels(y[tv], graph.num_classes, eps_y, rng)
    return xn, s, r, y_noisy, sigma


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


def train_naive_fedgnn(graph: Graph, x: np.ndarray, cfg: LumosConfig, split: Optional[EdgeSplit] = None,
                       eps_x: float = 2.0, eps_a: float = 2.0, eps_y: float = 1.0, adjacency: str = "sampled") -> dict:
    xn, s, r, yn, sigma = naive_fedgnn_graph(graph, x, eps_x, 1e-5, eps_a, eps_y, cfg.seed, split, adjacency)
    g = dataclasses.replace(graph, senders=s.astype(np.int32), receivers=r.astype(np.int32))
    q = 1.0 / (1.0 + math.exp(eps_a)) if adjacency == "expected" else 0.0
    # link task: the noisy graph replaces the training graph, evaluation pairs are the true ones
    sp = None
    if split is not None:
        sp = dataclasses.replace(split, train=np.stack([s[s < r], r[s < r]], 1))
    out = train_central(g, xn, cfg, sp, y_train=yn if cfg.task == "node" else None, mean_field_q=q)
    out["sigma"] = sigma
    out["noisy_edges"] = int(s.size // 2)
    return out
