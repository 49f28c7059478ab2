"""AdaFGL (Li et al., ICDE 2024, "AdaFGL: A New Paradigm for Federated Node Classification with
Topology Heterogeneity").

Two phases in one round schedule; `run` executes each as its own compiled program (`Phase`: phase 1's
rounds carry no branch over phase 2's work), and `round` (sweeps) picks the phase by `lax.cond` on the
round number:

Phase 1, rounds 1..R (`adafgl_rounds_vanilla`, default 50): FedAvg, the federated knowledge extractor.

Phase 2, rounds R+1.. (personalised local propagation; nothing is communicated): at its first round
every client takes the global model theta and, on its own subgraph (A its adjacency, X its features),
  * soft labels S = softmax(f(X; theta)) [N, K];
  * a topology-reliability score rho: label propagation (10 steps, alpha = 0.5) of the one-hot labels
    of a random half of its training nodes (the other half, val and test nodes start at 1/K),
        Y_t = alpha Â Y_{t-1} + (1 - alpha) Y_0,  Y_t[seed] += Y_0[seed],
    and rho = the accuracy of argmax Y_10 on the held-out half; Â = D^{r-1} (A + I)^T D^{-r}, r = 0.5;
  * a corrected graph A' = alpha A + (1 - alpha) 1[cos(softmax(S_u), softmax(S_v)) > 0.999] (u != v),
    and the smoothed features X~ = [X, Â' X, ..., Â'^P X] (P = `adafgl_prop_steps`, Â' normalised as Â).
It then trains (`adafgl_steps` Adam steps per round, lr `adafgl_lr`, L2 `adafgl_weight_decay`) two
models with dropout 0.5 and PReLU:
  homophilous: H = MLP_2(X~),  loss CE(H) + MSE(H, S);
  heterophilous: O = MLP_3(X), M = MLP_3'(X~), E = MLP_3''(X~) and the propagated
      Q = ((softmax(P+ E) - softmax(P- E)) + E) / 2, P+- = prelu(+-(L + I)), L = the rescaled cosine
      similarities of softmax(E) (positive part over (max - mean), negative part -sim/mean);
      loss CE(O) + CE(M) + CE(Q)   (CE over the training nodes),
and predicts p = rho (softmax(H) + softmax(S)) / 2 + (1 - rho) (softmax(O) + softmax(M) + softmax(Q)) / 3.
Phase-2 metrics are those predictions on each client's own subgraph (log p as logits).

How phase 2 is computed (the same arithmetic up to float rounding; tests compare with a dense
NumPy forward on the explicit X~):
  * MLP_2(X~)'s first layer [X~] W = sum_k Â'^k (X W_k) is computed as propagations of X W_k (Horner),
    so X~ [N, (P+1) F] is never stored and X stays sparse; the three models that read X~ propagate
    together (one [N, N] x [N, 3h] product per step).
  * The first layers of all four MLPs are one matrix of 3 (P + 1) + 1 blocks of F x h, and X W is one
    product in `fgl_jax.ops.EllFeatures` layout, built once on the host (`prepare`): XLA:CPU's scatter
    (segment sum) made the sparse product and its weight gradient most of a phase-2 round.
  * The evaluation pass after a round's update computes the first linear maps of the weights the
    next round's training step starts from; they are kept (`state.graph["first"]`, `[C, N, 4, h]`) and
    that step reuses them (its gradient still flows into the weights, `_known_first_linear`).
  * The heterophilous block Q has a hand-written gradient (`heterophilous_propagation`, tested
    against autodiff of the plain formula): it keeps only the similarities, the rescaled matrix and
    the two softmaxes, where autodiff kept a dozen [N, N] intermediates per client.
  * Dropout (rate 0.5) draws one random 32-bit word per element of [N, h] per forward pass and
    uses bit i as the keep mask of the i-th of its 7 dropout sites (same distribution: each bit is
    an independent fair coin), not one threefry draw per site.
  * Each client keeps only the rows of those blocks of the features that occur in its subgraph
    (~2/3 of Cora's words per client): the other rows never touch its outputs or its loss (their
    gradient is the weight decay alone), so dropping them changes no prediction and saves their
    Adam updates. The kept rows start from the same values as in the full matrix.

Follows OpenFGL (openfgl/flcore/adafgl; the paper's first author's code) step by step, including its
softmax of the already-softmaxed S in the similarity and in the prediction, its one Adam step per
round, and its PyTorch initialisation (Xavier-uniform with the ReLU gain, zero biases, PReLU 0.25).
Differences: padded nodes are masked out of the similarity statistics; OpenFGL's 1.1.0 release calls
a compiled CSR kernel from a hard-coded path (missing on Linux), the harness swaps in scipy's product.

Server step (`fgl_jax.aggregators`): phase 1's models go through the run's aggregator; phase 2
is local.
"""
from __future__ import annotations

import dataclasses
import functools
import math
from typing import Any

import flax
import jax
import jax.numpy as jnp
import numpy as np
import optax

from fgl_jax import ops
from fgl_jax.batch import with_ell_features
from fgl_jax.algorithms._common import (aggregate, evaluate_round, init_params, round_start, scatter_clients, stack,
                                        take_clients, weighted_loss)
from fgl_jax.federated.algorithm import FedData, FederatedAlgorithm, HostInput, Phase
from fgl_jax.federated.config import FedConfig, server_aggregator
from fgl_jax.federated.evaluation import evaluate_logits
from fgl_jax.federated.chunking import map_clients
from fgl_jax.federated.client import local_train, make_optimizer, node_loss_fn
from fgl_jax.federated.metrics import masked_cross_entropy
from fgl_jax.registry import register
from fgl_jax.schema import option

PyTree = Any
LP_STEPS, LP_ALPHA, SIM_THRESHOLD, DROPOUT = 10, 0.5, 0.999, 0.5
ELL_GROUPS, ELL_UNROLL = 4, 8     # the phase-2 features' EllFeatures layout (see prepare)


@dataclasses.dataclass(frozen=True)
class AdaFGLHParams:
    adafgl_rounds_vanilla: int = option(50, "AdaFGL rounds of phase 1 (FedAvg) before the personalised phase", low=0)
    adafgl_prop_steps: int = option(3, "AdaFGL feature propagation steps P of the smoothed features", low=1)
    adafgl_r: float = option(0.5, "AdaFGL normalisation exponent r of D^(r-1) A D^(-r)", low=0, high=1)
    adafgl_alpha: float = option(0.5, "AdaFGL weight alpha of the original edges in the corrected graph", low=0, high=1)
    adafgl_lr: float = option(1e-2, "AdaFGL phase-2 Adam learning rate", low=0, low_open=True)
    adafgl_weight_decay: float = option(5e-4, "AdaFGL phase-2 L2 weight decay", low=0)
    adafgl_steps: int = option(1, "AdaFGL phase-2 Adam steps per round (OpenFGL: 1)", low=1)


@flax.struct.dataclass
class AdaFGLState:
    round: jax.Array      # int32 scalar: rounds done
    server: PyTree        # the global model (fixed after phase 1)
    opt: PyTree           # phase-1 client optimiser states [C_t, ...]
    ada: PyTree           # phase-2 models of every client [C, ...]
    ada_opt: PyTree       # their Adam states [C, ...]
    graph: dict           # phase-2 per-client inputs [C, ...]: adj (normalised A'), soft (S), rho
    hp: dict              # traced: lr
    aggregator: PyTree = None  # the server aggregator's state (`fgl_jax.aggregators`)


# ---- graph operators ---------------------------------------------------------------------------

def dense_adjacency(senders: jax.Array, receivers: jax.Array, edge_mask: jax.Array, n: int) -> jax.Array:
    """M [N, N] with M[s, r] = number of unmasked edges s -> r (scipy's coo of edge_index)."""
    return jnp.zeros((n, n), jnp.float32).at[senders, receivers].add(edge_mask.astype(jnp.float32))


def normalise(m: jax.Array, r: float) -> jax.Array:
    """D^{r-1} (M + I)^T D^{-r}, D the row sums of M + I (OpenFGL's adj_to_symmetric_norm)."""
    m = m + jnp.eye(m.shape[0], dtype=m.dtype)
    d = m.sum(1)
    return (d ** (r - 1.0))[:, None] * m.T * (d ** (-r))[None, :]


def cosine_rescaled(emb: jax.Array, node_mask: jax.Array) -> jax.Array:
    """getre_scale: cosine similarities of softmax(emb) rows [N, N], zero diagonal (and padding)."""
    s = jax.nn.softmax(emb, -1)
    re = s @ s.T
    d = jnp.diag(re)
    re = re / jnp.maximum(jnp.sqrt(d[:, None] * d[None, :]), 1e-9)
    pair = node_mask[:, None] & node_mask[None, :]
    return jnp.where(pair & ~jnp.eye(emb.shape[0], dtype=bool), re, 0.0)


def reliability(adj: jax.Array, y: jax.Array, seed: jax.Array, held: jax.Array, unlabelled: jax.Array,
                num_classes: int, r: float) -> jax.Array:
    """rho: accuracy on `held` of label propagation from the one-hot labels of `seed` (OpenFGL's NonParaLP)."""
    a = normalise(adj, r)
    y0 = jax.nn.one_hot(y, num_classes, dtype=jnp.float32)
    y0 = jnp.where(unlabelled[:, None], 1.0 / num_classes, y0)
    boost = jnp.where(seed[:, None], y0, 0.0)

    def step(out, _):
        return LP_ALPHA * (a @ out) + (1.0 - LP_ALPHA) * y0 + boost, None

    out = jax.lax.scan(step, y0, None, length=LP_STEPS)[0]
    hit = (jnp.argmax(out, -1) == y) & held
    return hit.sum() / jnp.maximum(held.sum(), 1)


# ---- phase-2 models ----------------------------------------------------------------------------

def _xavier(key, fan_in: int, fan_out: int, shape) -> jax.Array:
    bound = math.sqrt(2.0) * math.sqrt(6.0 / (fan_in + fan_out))    # gain of relu
    return jax.random.uniform(key, shape, jnp.float32, -bound, bound)


def init_phase2(key: jax.Array, feat: int, hidden: int, k: int, prop_steps: int) -> dict:
    """Parameters of the homophilous (2 layers) and heterophilous (3 x 3 layers) models. The first
    layers of all four MLPs are one matrix "first" [F, B h], B = 3 (P + 1) + 1 blocks of width h
    (homophilous, smoothed, propagated: P + 1 blocks each, one per propagation step; local: 1), so
    one sparse product X W serves them all; each block is initialised as its torch layer
    (fan_in = (P + 1) F, or F for the local one)."""
    p1 = prop_steps + 1
    keys = iter(jax.random.split(key, 16))
    blocks = [_xavier(next(keys), p1 * feat, hidden, (p1, feat, hidden)) for _ in range(3)]
    blocks.append(_xavier(next(keys), feat, hidden, (1, feat, hidden)))
    first = jnp.moveaxis(jnp.concatenate(blocks, 0), 0, 1).reshape(feat, -1)
    z = lambda n: jnp.zeros((n,), jnp.float32)
    mlp3 = lambda: {"b0": z(hidden), "w1": _xavier(next(keys), hidden, hidden, (hidden, hidden)),
                    "b1": z(hidden), "w2": _xavier(next(keys), hidden, k, (hidden, k)), "b2": z(k)}
    return {"first": first,
            "homo": {"b0": z(hidden), "w1": _xavier(next(keys), hidden, k, (hidden, k)), "b1": z(k), "a": jnp.float32(0.25)},
            "smooth": mlp3(), "local": mlp3(), "prop": mlp3(),
            "a_hete": jnp.float32(0.25), "a_prop": jnp.float32(0.25)}


def compact_first(p: dict, feat: jax.Array) -> dict:
    """p with its first layers cut to the rows `feat` [F_c] (a client's features; padding = F, rows of 0)."""
    return dict(p, first=jnp.take(p["first"], feat, axis=0, mode="fill", fill_value=0.0))


def first_block(p: dict, which: str, prop_steps: int, feat=None, num_features: int | None = None) -> jax.Array:
    """The torch layer's weight [(P + 1) F, h] (or [F, h] for "local") inside p["first"]; for a
    client's compacted p (`compact_first`), pass its `feat` and F: rows it does not keep are 0."""
    h = p["homo"]["b0"].shape[0]
    first = p["first"]
    if feat is not None:
        first = jnp.zeros((num_features, first.shape[1]), first.dtype).at[feat].set(first, mode="drop")
    f = first.shape[0]
    p1 = prop_steps + 1
    w = first.reshape(f, -1, h)
    start = {"homo": 0, "smooth": p1, "prop": 2 * p1, "local": 3 * p1}[which]
    width = 1 if which == "local" else p1
    return jnp.moveaxis(w[:, start:start + width], 1, 0).reshape(-1, h)


def _prelu(x, a):
    return jnp.where(x >= 0, x, a * x)


def _dropout(x, bits, site: int, train: bool):
    """Dropout at rate 0.5 with bit `site` of bits [N, h] (uint32) as the keep mask: one random
    word per element serves all 7 dropout sites of a forward pass (each bit is Bernoulli(1/2),
    independent of the others), instead of one threefry draw per site."""
    if not train:
        return x
    keep = ((bits >> site) & 1).astype(bool)         # P(keep) = 1/2 = 1 - DROPOUT
    return jnp.where(keep, x / (1.0 - DROPOUT), 0.0)


def _hete_forward(emb: jax.Array, node_mask: jax.Array, a: jax.Array):
    """The heterophilous propagation Q of the module docstring and what its gradient needs."""
    n = emb.shape[0]
    re = cosine_rescaled(emb, node_mask)
    pair = (node_mask[:, None] & node_mask[None, :]).astype(re.dtype)
    mean = (re * pair).sum() / jnp.maximum(pair.sum(), 1.0)
    top = jnp.where(pair > 0, re, -jnp.inf).max()
    x = re - mean
    lrn = jnp.where(x > 0, x / jnp.maximum(top - mean, 1e-12), -(x + mean) / jnp.maximum(mean, 1e-12))
    lrn = lrn + jnp.eye(n, dtype=lrn.dtype)
    col = node_mask.astype(lrn.dtype)[None, :]        # padded nodes send nothing
    pos = jax.nn.softmax((_prelu(lrn, a) * col) @ emb, -1)
    neg = jax.nn.softmax((_prelu(-lrn, a) * col) @ emb, -1)
    return ((pos - neg) + emb) / 2.0, (re, mean, top, lrn, pos, neg)


@jax.custom_vjp
def heterophilous_propagation(emb: jax.Array, node_mask: jax.Array, a: jax.Array) -> jax.Array:
    """Q [N, K] from the propagated model's logits emb [N, K] (node_mask [N], PReLU slope a):
    the rescaled similarity L of softmax(emb) rows, P+- = prelu(+-(L + I)), and
    Q = (softmax(P+ emb) - softmax(P- emb) + emb) / 2. Its gradient is written by hand: autodiff
    of the [N, N] chain (cosines, masks, mean, max, rescaling, two PReLUs) kept a dozen [N, N]
    intermediates per client and was most of the block's cost."""
    return _hete_forward(emb, node_mask, a)[0]


def _hete_fwd(emb, node_mask, a):
    out, (re, mean, top, lrn, pos, neg) = _hete_forward(emb, node_mask, a)
    return out, (emb, node_mask, a, re, mean, top, lrn, pos, neg)


def _hete_bwd(res, g):
    emb, node_mask, a, re, mean, top, lrn, pos, neg = res
    n = emb.shape[0]
    col = node_mask.astype(emb.dtype)[None, :]
    # the output and its two softmaxes
    d_pos, d_neg = g / 2.0, -g / 2.0
    dz_pos = pos * (d_pos - (d_pos * pos).sum(-1, keepdims=True))
    dz_neg = neg * (d_neg - (d_neg * neg).sum(-1, keepdims=True))
    pp, pn = _prelu(lrn, a) * col, _prelu(-lrn, a) * col
    d_emb = g / 2.0 + pp.T @ dz_pos + pn.T @ dz_neg
    d_pp, d_pn = (dz_pos @ emb.T) * col, (dz_neg @ emb.T) * col
    # the two PReLUs: d/dx = 1 (x >= 0) or a; d/da = 0 (x >= 0) or x
    nonneg = lrn >= 0
    d_lrn = d_pp * jnp.where(nonneg, 1.0, a) - d_pn * jnp.where(-lrn >= 0, 1.0, a)
    d_a = (d_pp * jnp.where(nonneg, 0.0, lrn)).sum() + (d_pn * jnp.where(-lrn >= 0, 0.0, -lrn)).sum()
    # the rescaling lrn = (re - mean) / T above the mean, -re / M below (T = max(top - mean, eps), M = max(mean, eps))
    span, floor = top - mean, mean
    t, m = jnp.maximum(span, 1e-12), jnp.maximum(floor, 1e-12)
    x = re - mean
    up = x > 0
    d_x = jnp.where(up, d_lrn / t, -d_lrn / m)
    d_t = -(jnp.where(up, d_lrn * x, 0.0)).sum() / (t * t)
    d_m = (jnp.where(up, 0.0, d_lrn * (x + mean))).sum() / (m * m)
    d_span = jnp.where(span > 1e-12, d_t, 0.0)
    d_mean = -d_x.sum() - jnp.where(up, 0.0, d_lrn).sum() / m - d_span + jnp.where(floor > 1e-12, d_m, 0.0)
    # mean over the real pairs, top = their maximum (cotangent split over ties, as jnp.max's)
    pair = node_mask[:, None] & node_mask[None, :]
    at_top = (pair & (re == top)).astype(emb.dtype)
    d_re = d_x + d_mean * pair / jnp.maximum(pair.sum(), 1.0) + d_span * at_top / jnp.maximum(at_top.sum(), 1.0)
    # re = u u^T off the diagonal on real pairs, u = s / |s|, s = softmax(emb)
    r = jnp.where(pair & ~jnp.eye(n, dtype=bool), d_re, 0.0)
    s = jax.nn.softmax(emb, -1)
    norm = jnp.sqrt((s * s).sum(-1, keepdims=True))
    u = s / norm
    d_u = (r + r.T) @ u
    d_s = (d_u - u * (u * d_u).sum(-1, keepdims=True)) / norm
    d_emb = d_emb + s * (d_s - (d_s * s).sum(-1, keepdims=True))
    return d_emb, None, d_a.astype(a.dtype)


heterophilous_propagation.defvjp(_hete_fwd, _hete_bwd)


def first_linear(first: jax.Array, features, adj: jax.Array, hidden: int) -> jax.Array:
    """The four MLPs' first linear maps [N, 4, h] (homophilous, smoothed, propagated: [X~] W_m;
    local: X W), first = p["first"] [F, B h]; adj = Â' [N, N]."""
    n = adj.shape[0]
    p1 = (first.shape[1] // hidden - 1) // 3
    xw = ops.feature_matmul(features, first, n).reshape(n, -1, hidden)     # X W of every block [N, B, h]
    # [X, ÂX, ..., Â^P X] W = sum_k Â^k (X W_k) by Horner, the three models side by side [N, 3, h]
    blocks = xw[:, :3 * p1].reshape(n, 3, p1, hidden)
    acc = blocks[:, :, p1 - 1]
    for j in range(p1 - 2, -1, -1):
        acc = (adj @ acc.reshape(n, 3 * hidden)).reshape(n, 3, hidden) + blocks[:, :, j]
    return jnp.concatenate([acc, xw[:, 3 * p1:3 * p1 + 1]], 1)


@functools.partial(jax.custom_vjp, nondiff_argnums=(4,))
def _known_first_linear(first, value, features, adj, hidden):
    """first_linear(first, features, adj) when its value is already known (the evaluation pass
    after the last update computed it with these weights): returns `value`, differentiates as
    first_linear in `first` (a linear map: its transpose needs no forward pass)."""
    return value


def _known_fwd(first, value, features, adj, hidden):
    return value, (first, features, adj)


def _known_bwd(hidden, res, dz):
    first, features, adj = res
    dw = jax.vjp(lambda w: first_linear(w, features, adj, hidden), first)[1](dz)[0]
    zero = lambda a: (jnp.zeros_like(a) if jnp.issubdtype(a.dtype, jnp.floating)
                      else np.zeros(a.shape, jax.dtypes.float0))
    return dw, jnp.zeros_like(dz), jax.tree.map(zero, features), jnp.zeros_like(adj)


_known_first_linear.defvjp(_known_fwd, _known_bwd)


def phase2_forward(p: dict, features, adj: jax.Array, node_mask: jax.Array, key: jax.Array, train: bool,
                   known: jax.Array | None = None):
    """(H, O, M, Q) logits [N, K] of the module docstring and the first linear maps [N, 4, h];
    adj = Â' [N, N], features X (dense, SparseFeatures or EllFeatures, with as many columns as
    p["first"] has rows); known: `first_linear`'s value for these p, if already computed."""
    h = p["homo"]["b0"].shape[0]
    n = adj.shape[0]
    z = (first_linear(p["first"], features, adj, h) if known is None
         else _known_first_linear(p["first"], known, features, adj, h))
    smoothed = lambda which: z[:, which]

    bits = jax.random.bits(key, (n, h), jnp.uint32) if train else None
    sites = iter(range(7))

    def tail(first, q, a):   # the 3-layer MLP after its first linear map
        x = _dropout(_prelu(first + q["b0"], a), bits, next(sites), train)
        x = _dropout(_prelu(x @ q["w1"] + q["b1"], a), bits, next(sites), train)
        return x @ q["w2"] + q["b2"]

    hh = _dropout(_prelu(smoothed(0) + p["homo"]["b0"], p["homo"]["a"]), bits, next(sites), train)
    homo = hh @ p["homo"]["w1"] + p["homo"]["b1"]
    smooth = tail(smoothed(1), p["smooth"], p["a_hete"])
    local = tail(z[:, 3], p["local"], p["a_hete"])
    emb = tail(smoothed(2), p["prop"], p["a_prop"])
    prop = heterophilous_propagation(emb, node_mask, p["a_prop"])
    return (homo, local, smooth, prop), z


def phase2_loss(p, b, x, adj, soft, key, known=None):
    """x: b's features as p["first"] reads them (compacted EllFeatures in a run); known: as in
    phase2_forward."""
    (homo, local, smooth, prop), _ = phase2_forward(p, x, adj, b.node_mask, key, True, known)
    ce = lambda z: masked_cross_entropy(z, b.y, b.train_mask)
    real = b.node_mask.astype(homo.dtype)[:, None]
    mse = (((homo - soft) ** 2) * real).sum() / jnp.maximum(real.sum() * homo.shape[-1], 1.0)
    return ce(homo) + mse + ce(local) + ce(smooth) + ce(prop)


def phase2_predict(p, b, x, adj, soft, rho) -> tuple[jax.Array, jax.Array]:
    """log of the mixture p of the module docstring [N, K], and the first linear maps [N, 4, h]
    (the next round's training pass starts from these weights: it reuses them)."""
    (homo, local, smooth, prop), z = phase2_forward(p, x, adj, b.node_mask, jax.random.key(0), False)
    sm = lambda z: jax.nn.softmax(z, -1)
    mix = rho * (sm(homo) + sm(soft)) / 2.0 + (1.0 - rho) * (sm(local) + sm(smooth) + sm(prop)) / 3.0
    return jnp.log(jnp.maximum(mix, 1e-30)), z


def _coo(features, num_nodes: int):
    """Host: (rows, cols, vals) [C, nnz] of a client batch's features (SparseFeatures or dense [C, N, F])."""
    if isinstance(features, ops.SparseFeatures):
        return np.asarray(features.row), np.asarray(features.col), np.asarray(features.val)
    x = np.asarray(features)
    nz = [np.nonzero(xc) for xc in x]
    size = max(1, max(len(r) for r, _ in nz))
    rows, cols, vals = (np.zeros((len(x), size), t) for t in (np.int32, np.int32, np.float32))
    for i, (r, c) in enumerate(nz):
        rows[i, :len(r)], cols[i, :len(r)], vals[i, :len(r)] = r, c, x[i][r, c]
    return rows, cols, vals


def prepare(inp: HostInput, hp: AdaFGLHParams):
    """Per client (host, once): the features it holds, `adafgl_feat` [C, F_c] (padding F), and its
    feature matrix over those columns in EllFeatures layout, `adafgl_x` (phase 2's first layer);
    the batch comes back with its features in EllFeatures too (phase 1's first layer)."""
    b = inp.batch
    n = int(np.asarray(b.node_mask).shape[-1])
    num_features = int(inp.graph.num_features)
    rows, cols, vals = _coo(b.features, n)
    used = [np.unique(c[v != 0]) for c, v in zip(cols, vals)]
    width = max(1, max(len(u) for u in used))
    feat = np.full((len(used), width), num_features, np.int32)
    local = np.zeros_like(cols)
    for i, u in enumerate(used):
        feat[i, :len(u)] = u
        local[i] = np.searchsorted(u, cols[i]).clip(0, max(len(u) - 1, 0))   # val-0 entries: dropped
    # 4 width groups a side and 8 terms per loop iteration: on Cora's clients both X W [N, 13 h]
    # and X^T dz ran several times faster than with one group (where one loop and one concatenated
    # part per group, and each iteration's fixed cost, dominated)
    x = ops.ell_features(rows, local, vals, n, width, max_groups=ELL_GROUPS, unroll=ELL_UNROLL)
    # phase 1's GCN reads the batch's features only through feature_matmul: the faster layout too
    return with_ell_features(b, num_features), {"adafgl_feat": feat, "adafgl_x": x}


@register("algorithm", "adafgl", hparams=AdaFGLHParams, prepare=prepare,
          paper="Li, Wu, Zhang, Sun, Li, Wang, ICDE 2024, arXiv:2401.11750",
          help="AdaFGL: FedAvg, then per-client adaptive homophilous/heterophilous propagation (two phases)")
def adafgl(model, common: FedConfig, hp: AdaFGLHParams) -> FederatedAlgorithm:
    if common.eval_mode not in ("auto", "local_model_on_local_data"):
        raise ValueError(f"adafgl: eval_mode={common.eval_mode!r} is not available (its second phase predicts with "
                         "each client's own models on its own subgraph); use 'auto' or 'local_model_on_local_data'")
    optimizer = make_optimizer(common.optim, lr=1.0)
    aggregator = server_aggregator(common)
    loss_fn = node_loss_fn(model)
    num_classes = int(model.num_classes)
    hidden = int(common.model.hidden) if common.model is not None else int(getattr(model, "hidden"))
    ada_opt = optax.adam(hp.adafgl_lr)
    if hp.adafgl_weight_decay:
        ada_opt = optax.chain(optax.add_decayed_weights(hp.adafgl_weight_decay), ada_opt)

    def init(key: jax.Array, data: FedData) -> AdaFGLState:
        k_model, k_ada = jax.random.split(key)
        params = init_params(model, k_model, data)
        c, n = data.eval.num_clients, data.eval.num_nodes
        in_dim = int(getattr(model, "in_dim"))
        extra = data.extra or {}
        # without the host step (a FedData built by hand) every client keeps every feature row
        feat = extra["adafgl_feat"] if "adafgl_feat" in extra else jnp.tile(jnp.arange(in_dim), (c, 1))
        ada = jax.vmap(lambda k, f: compact_first(init_phase2(k, int(getattr(model, "in_dim")), hidden, num_classes,
                                                              hp.adafgl_prop_steps), f))(
            jax.random.split(k_ada, c), feat)
        graph = {"adj": jnp.zeros((c, n, n), jnp.float32), "soft": jnp.zeros((c, n, num_classes), jnp.float32),
                 "rho": jnp.zeros((c,), jnp.float32), "first": jnp.zeros((c, n, 4, hidden), jnp.float32)}
        return AdaFGLState(round=jnp.zeros((), jnp.int32), aggregator=aggregator.init(params), server=params,
                           opt=stack(optimizer.init(params), data.train.num_clients), ada=ada,
                           ada_opt=jax.vmap(ada_opt.init)(ada), graph=graph, hp={"lr": jnp.float32(common.optim.lr)})

    def switch(state: AdaFGLState, data: FedData, key: jax.Array) -> dict:
        """Phase 2's per-client inputs from the global model (its first round)."""
        def one(b, x, p, k):
            n = b.y.shape[-1]
            adj = dense_adjacency(b.senders, b.receivers, b.edge_mask, n)
            soft = jax.nn.softmax(model.apply(state.server, b, train=False), -1)
            rank = jnp.argsort(jnp.argsort(jnp.where(b.train_mask, jax.random.uniform(k, (n,)), 2.0)))
            seed = b.train_mask & (rank < b.train_mask.sum() // 2)
            held = b.train_mask & ~seed
            rho = reliability(adj, b.y, seed, held, held | b.val_mask | b.test_mask, num_classes, hp.adafgl_r)
            similar = (cosine_rescaled(soft, b.node_mask) > SIM_THRESHOLD).astype(adj.dtype)
            corrected = hp.adafgl_alpha * adj + (1.0 - hp.adafgl_alpha) * similar
            adj = normalise(corrected, hp.adafgl_r)
            return {"adj": adj, "soft": soft, "rho": rho.astype(jnp.float32),
                    "first": first_linear(p["first"], x, adj, hidden)}

        return map_clients(one, common.client_chunk)(data.eval, data.extra["adafgl_x"], state.ada,
                                                     jax.random.split(key, data.eval.num_clients))

    def phase1(state: AdaFGLState, data: FedData, key: jax.Array):
        ct = data.train.num_clients
        start, opt, scale = round_start(optimizer, common, state, data)
        train = lambda p, o, b, k: local_train(loss_fn, optimizer, common.local_steps, p, o, b, k, scale)
        new, opt, losses = map_clients(train, common.client_chunk)(start, opt, data.train, jax.random.split(key, ct))
        server, agg = aggregate(aggregator, state.aggregator, new, data.train_weight, key, params=state.server)
        # each client's own (just trained) model, as phase 2 predicts with per-client models too
        personal = scatter_clients(stack(server, data.eval.num_clients), data.train_index, new)
        metrics = evaluate_round(model, common, data, personal=personal)
        metrics["train_loss"] = weighted_loss(losses, data.train_weight)
        metrics["lr"] = scale
        return state.replace(round=state.round + 1, server=server, opt=opt, aggregator=agg), metrics

    def enter(state: AdaFGLState, data: FedData, key: jax.Array) -> AdaFGLState:
        """The hand-over to phase 2 (key: its first round's)."""
        return state.replace(graph=switch(state, data, jax.random.split(key)[0]))

    def phase2(state: AdaFGLState, data: FedData, key: jax.Array):
        """A phase-2 round after the hand-over (`enter`)."""
        k_train = jax.random.split(key)[1]
        graph = state.graph
        idx = data.train_index
        mine = lambda tree: take_clients(tree, idx)

        def client(p, o, b, x, g, k):
            def step(p, o, kk, known):
                loss, grads = jax.value_and_grad(phase2_loss)(p, b, x, g["adj"], g["soft"], kk, known)
                upd, o = ada_opt.update(grads, o, p)
                return optax.apply_updates(p, upd), o, loss
            ks = jax.random.split(k, hp.adafgl_steps)
            # the first step's weights are the last evaluation's: its first linear maps are known
            p, o, loss = step(p, o, ks[0], g["first"])
            if hp.adafgl_steps > 1:
                (p, o), _ = jax.lax.scan(lambda c, kk: (step(*c, kk, None)[:2], None), (p, o), ks[1:])
            return p, o, loss

        new, new_opt, losses = map_clients(client, common.client_chunk)(
            mine(state.ada), mine(state.ada_opt), data.train, mine(data.extra["adafgl_x"]), mine(graph),
            jax.random.split(k_train, data.train.num_clients))
        ada = scatter_clients(state.ada, idx, new)
        logits, first = map_clients(lambda p, b, x, g: phase2_predict(p, b, x, g["adj"], g["soft"], g["rho"]),
                                    common.client_chunk)(ada, data.eval, data.extra["adafgl_x"], graph)
        graph = dict(graph, first=first)
        metrics = evaluate_logits(logits, data.eval, common.eval_average)
        metrics["train_loss"] = weighted_loss(losses, data.train_weight)
        metrics["lr"] = jnp.float32(hp.adafgl_lr)
        return state.replace(round=state.round + 1, ada=ada, ada_opt=scatter_clients(state.ada_opt, idx, new_opt),
                             graph=graph), metrics

    def phase2_entering(state: AdaFGLState, data: FedData, key: jax.Array):
        graph = jax.lax.cond(state.round == hp.adafgl_rounds_vanilla,
                             lambda: enter(state, data, key).graph, lambda: state.graph)
        return phase2(state.replace(graph=graph), data, key)

    def round_fn(state: AdaFGLState, data: FedData, key: jax.Array):
        # one program (sweeps, make_scan); `run` executes the phases below as two programs instead
        return jax.lax.cond(state.round < hp.adafgl_rounds_vanilla, phase1, phase2_entering, state, data, key)

    def messages(s: AdaFGLState):
        # phase 1 (the rounds that communicate): the model both ways; phase 2 sends nothing
        return s.server, s.server

    r1 = int(hp.adafgl_rounds_vanilla)
    phases = ((Phase(0, phase1),) if r1 > 0 else ()) + (Phase(r1, phase2, enter),)
    return FederatedAlgorithm(init=init, round=round_fn, messages=messages, phases=phases)
