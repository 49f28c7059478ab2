"""Node-classification models on one (padded) client graph.

Every model is called as `model.apply(params, batch, train=..., rngs={"dropout": key})` with a
single client's `ClientBatch` slice (no client axis; the engine vmaps over clients) and returns
logits [N, num_classes]. Layers are named `layer_0 .. layer_{L-1}` so that personalisation
(FedPer: the last layer stays local) can select parameters by name.

The first layer multiplies the raw features through `ops.feature_matmul`, so bag-of-words
features stay sparse; every later layer works on dense hidden states.
"""
from __future__ import annotations

from typing import Callable

import flax.linen as nn
import jax
import jax.numpy as jnp

from fgl_jax import ops


class InputDense(nn.Module):
    """Linear map whose input may be SparseFeatures (then `in_dim` must be given)."""

    features: int
    in_dim: int
    use_bias: bool = True

    @nn.compact
    def __call__(self, x, num_nodes: int):
        w = self.param("kernel", nn.initializers.glorot_uniform(), (self.in_dim, self.features), jnp.float32)
        out = ops.feature_matmul(x, w, num_nodes)
        if self.use_bias:
            out = out + self.param("bias", nn.initializers.zeros, (self.features,), jnp.float32)
        return out


def _dropout(x, rate: float, train: bool, module: nn.Module):
    if rate <= 0.0 or not train or isinstance(x, ops.SparseFeatures):
        return x
    return nn.Dropout(rate, deterministic=False)(x)


def _relu_stack(module: nn.Module, batch, train: bool, layer: Callable) -> jax.Array:
    """The layer skeleton GCN, SAGE and MLP share: dropout before every layer but the first, then
    `layer(i, h, width, in_dim, n)` (linear map + propagation), a bias `bias_i`, ReLU between layers.

    Called from inside the module's compact `__call__`, so parameter names stay `layer_i`/`bias_i`.
    """
    n = batch.y.shape[-1]
    h = batch.features
    for i in range(module.num_layers):
        last = i == module.num_layers - 1
        width = module.num_classes if last else module.hidden
        h = _dropout(h, module.dropout, train, module) if i > 0 else h
        h = layer(i, h, width, module.in_dim if i == 0 else module.hidden, n)
        h = h + module.param(f"bias_{i}", nn.initializers.zeros, (width,), jnp.float32)
        if not last:
            h = nn.relu(h)
    return h


class GCN(nn.Module):
    """Kipf & Welling GCN: H' = D^-1/2 (A+I) D^-1/2 H W + b, ReLU between layers."""

    in_dim: int
    hidden: int
    num_classes: int
    num_layers: int = 2
    dropout: float = 0.0

    @nn.compact
    def __call__(self, batch, train: bool = False):
        s, r, m = batch.graph.senders, batch.graph.receivers, batch.edge_mask

        def layer(i, h, width, in_dim, n):
            # propagate after the projection: S (X W) == (S X) W, and X W is the small side.
            lin = InputDense(width, in_dim, use_bias=False, name=f"layer_{i}")
            return ops.gcn_propagate(lin(h, n), s, r, m, n)

        return _relu_stack(self, batch, train, layer)


class SAGE(nn.Module):
    """GraphSAGE with the mean aggregator: H' = H W_r + mean_N(H) W_n + b."""

    in_dim: int
    hidden: int
    num_classes: int
    num_layers: int = 2
    dropout: float = 0.0

    @nn.compact
    def __call__(self, batch, train: bool = False):
        s, r, m = batch.graph.senders, batch.graph.receivers, batch.edge_mask

        def layer(i, h, width, in_dim, n):
            # one matmul for [W_r | W_n]; the mean commutes with the linear map.
            both = InputDense(2 * width, in_dim, use_bias=False, name=f"layer_{i}")(h, n)
            return both[:, :width] + ops.mean_aggregate(both[:, width:], s, r, m, n)

        return _relu_stack(self, batch, train, layer)


class GAT(nn.Module):
    """GAT (Velickovic et al.): multi-head attention over in-neighbours plus a self-loop.

    Hidden layers concatenate `heads` heads; the output layer averages `out_heads` heads.
    """

    in_dim: int
    hidden: int
    num_classes: int
    num_layers: int = 2
    heads: int = 8
    out_heads: int = 1
    dropout: float = 0.0
    negative_slope: float = 0.2

    @nn.compact
    def __call__(self, batch, train: bool = False):
        n = batch.y.shape[-1]
        loops = jnp.arange(n, dtype=batch.graph.senders.dtype)
        s = jnp.concatenate([batch.graph.senders, loops])
        r = jnp.concatenate([batch.graph.receivers, loops])
        m = jnp.concatenate([batch.edge_mask, batch.node_mask])
        h = batch.features
        for i in range(self.num_layers):
            last = i == self.num_layers - 1
            k = self.out_heads if last else self.heads
            width = self.num_classes if last else self.hidden
            h = _dropout(h, self.dropout, train, self) if i > 0 else h
            in_dim = self.in_dim if i == 0 else self.hidden * self.heads
            z = InputDense(k * width, in_dim, use_bias=False, name=f"layer_{i}")(h, n).reshape(n, k, width)
            a_src = self.param(f"att_src_{i}", nn.initializers.glorot_uniform(), (1, k, width), jnp.float32)
            a_dst = self.param(f"att_dst_{i}", nn.initializers.glorot_uniform(), (1, k, width), jnp.float32)
            e_src = (z * a_src).sum(-1)  # [N, K]
            e_dst = (z * a_dst).sum(-1)
            logits = nn.leaky_relu(e_src[s] + e_dst[r], self.negative_slope)  # [E+N, K]
            alpha = ops.segment_softmax(logits, r, m, n)
            out = jax.ops.segment_sum(z[s] * alpha[..., None], r, num_segments=n)  # [N, K, W]
            bias = self.param(f"bias_{i}", nn.initializers.zeros, (width,) if last else (k * width,), jnp.float32)
            if last:
                h = out.mean(axis=1) + bias
            else:
                h = nn.elu(out.reshape(n, k * width) + bias)
        return h


class SGC(nn.Module):
    """SGC (Wu et al.): logits = S^K X W + b with S the GCN-normalised adjacency."""

    in_dim: int
    hidden: int  # unused; kept for a uniform constructor
    num_classes: int
    num_layers: int = 2  # K propagation steps
    dropout: float = 0.0

    @nn.compact
    def __call__(self, batch, train: bool = False):
        n = batch.y.shape[-1]
        s, r, m = batch.graph.senders, batch.graph.receivers, batch.edge_mask
        h = InputDense(self.num_classes, self.in_dim, use_bias=False, name="layer_0")(batch.features, n)
        for _ in range(self.num_layers):
            h = ops.gcn_propagate(h, s, r, m, n)
        return h + self.param("bias_0", nn.initializers.zeros, (self.num_classes,), jnp.float32)


class MLP(nn.Module):
    """Graph-agnostic MLP on node features."""

    in_dim: int
    hidden: int
    num_classes: int
    num_layers: int = 2
    dropout: float = 0.0

    @nn.compact
    def __call__(self, batch, train: bool = False):
        def layer(i, h, width, in_dim, n):
            return InputDense(width, in_dim, use_bias=False, name=f"layer_{i}")(h, n)

        return _relu_stack(self, batch, train, layer)


MODELS: dict[str, Callable[..., nn.Module]] = {"gcn": GCN, "sage": SAGE, "graphsage": SAGE, "gat": GAT,
                                               "sgc": SGC, "mlp": MLP}


def make_model(name: str, in_dim: int, num_classes: int, hidden: int = 64, num_layers: int = 2,
               dropout: float = 0.0, **kwargs) -> nn.Module:
    """Build a model by name ("gcn", "sage", "gat", "sgc", "mlp")."""
    key = name.lower()
    if key not in MODELS:
        raise ValueError(f"unknown model {name!r}; choose one of {sorted(set(MODELS))}")
    for field, value in (("in_dim", in_dim), ("num_classes", num_classes), ("hidden", hidden),
                         ("num_layers", num_layers)):
        if int(value) <= 0:
            raise ValueError(f"model {name!r}: {field} must be positive, got {value}")
    if not 0.0 <= dropout < 1.0:
        raise ValueError(f"model {name!r}: dropout must be in [0, 1), got {dropout}")
    return MODELS[key](in_dim=in_dim, hidden=hidden, num_classes=num_classes, num_layers=num_layers,
                       dropout=dropout, **kwargs)
