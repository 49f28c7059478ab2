"""Message-passing layers shared by the models of `fgl_jax.nn.models` and the systems (Lumos's tree encoder).

Each layer is a function called from inside a module's compact `__call__` with that module as
`module`: its parameters (`bias_{i}`, `att_src_{i}`, `att_dst_{i}`) are created in the caller's
scope under the caller's layer index `i`, so the parameter tree (names, shapes and, since Flax
draws init keys per scope in creation order, values) is that of a model written in one piece.
Why functions, not submodules: a submodule would nest its parameters one level deeper and change
every init key (Flax folds module paths into the keys), so every stored number would move.

A layer starts from the projected features `z = X W` (the caller owns the linear map: sparse
inputs go through `ops.feature_matmul`, Lumos gathers a projected feature table, Eq. 25), then
aggregates over the edge arrays it is given and adds its bias after the aggregation. The
activation, dropout and any pooling stay with the caller.

The neighbour sum is a parameter (`aggregate`, the `ops.neighbour_sum` signature), the way jraph's
models take `aggregate_edges_for_nodes_fn`: HiFGL plugs its secure sum in here.
"""
from __future__ import annotations

from typing import Callable, Optional

import flax.linen as nn
import jax
import jax.numpy as jnp

from fgl_jax import ops

Array = jax.Array


def _bias(module: nn.Module, i: int, width: int) -> Array:
    return module.param(f"bias_{i}", nn.initializers.zeros, (width,), jnp.float32)


def gcn_layer(module: nn.Module, i: int, z: Array, senders: Array, receivers: Array, edge_mask: Array,
              num_nodes: int, *, aggregate: Optional[Callable] = None, self_loop: bool = True,
              use_bias: bool = True, propagate: Optional[Callable] = None) -> Array:
    """GCN propagation of projected features: D^-1/2 (A + I) D^-1/2 z (+ bias_i after it).

    z: [N, W] = X W; senders/receivers: int [E]; edge_mask: bool or float [E] (float = edge weight).
    aggregate: neighbour sum (None: plain segment sums); self_loop=False: D^-1/2 A D^-1/2 z with
    degrees floored at 1. use_bias=False leaves the bias to the caller. propagate: another
    normalisation in place of `ops.gcn_propagate`, called as propagate(z, senders, receivers,
    edge_mask, num_nodes, aggregate=aggregate, layer=i) (self_loop is then unused; HiFGL's
    `norm="authors_code"`). Returns [N, W].
    """
    if propagate is not None:
        out = propagate(z, senders, receivers, edge_mask, num_nodes, aggregate=aggregate, layer=i)
    else:
        out = ops.gcn_propagate(z, senders, receivers, edge_mask, num_nodes, aggregate=aggregate,
                                self_loop=self_loop, layer=i)
    return out + _bias(module, i, z.shape[-1]) if use_bias else out


def sage_layer(module: nn.Module, i: int, z: Array, senders: Array, receivers: Array, edge_mask: Array,
               num_nodes: int, *, aggregate: Optional[Callable] = None, use_bias: bool = True) -> Array:
    """GraphSAGE-mean of projected features z = X [W_r | W_n]: z_r + mean over in-neighbours of z_n.

    z: [N, 2W] (one matmul for both maps; the mean commutes with the linear map). aggregate: the
    neighbour sum the mean divides by the in-degree (None: plain segment sums). Returns [N, W].
    """
    width = z.shape[-1] // 2
    root, nbr = z[:, :width], z[:, width:]
    if aggregate is None:
        out = root + ops.mean_aggregate(nbr, senders, receivers, edge_mask, num_nodes)
    else:
        deg = ops.in_degree(receivers, edge_mask, num_nodes)
        out = root + aggregate(nbr, senders, receivers, edge_mask, num_nodes, layer=i) / jnp.maximum(deg, 1.0)[:, None]
    return out + _bias(module, i, width) if use_bias else out


def add_self_loops(senders: Array, receivers: Array, edge_mask: Array, num_nodes: int,
                   loop_mask: Optional[Array] = None) -> tuple[Array, Array, Array]:
    """Append one loop v -> v per node: (senders, receivers, mask), each [E + N].

    loop_mask: bool [N] which loops are real (e.g. the node mask, so padded nodes get none);
    None = every node gets one.
    """
    loops = jnp.arange(num_nodes, dtype=senders.dtype)
    if loop_mask is None:
        loop_mask = jnp.ones(num_nodes, bool)
    return (jnp.concatenate([senders, loops]), jnp.concatenate([receivers, loops]),
            jnp.concatenate([edge_mask, loop_mask]))


def gat_layer(module: nn.Module, i: int, z: Array, senders: Array, receivers: Array, edge_mask: Array,
              num_nodes: int, *, heads: int, concat: bool = True, negative_slope: float = 0.2,
              use_bias: bool = True) -> Array:
    """GAT attention (Velickovic et al.) over the given edges of projected features z = X W.

    z: [N, heads * W]; the edge arrays are used as given (add self-loops first with
    `add_self_loops`); edge_mask: bool [E]. Per head k: e_uv = LeakyReLU(a_src.z_u + a_dst.z_v),
    alpha = softmax over v's in-edges, out_v = sum_u alpha_uv z_u. Parameters att_src_i /
    att_dst_i [1, heads, W] (Glorot) and bias_i after aggregation. concat: heads concatenated
    -> [N, heads * W], else averaged -> [N, W]. No attention dropout.
    """
    width = z.shape[-1] // heads
    z = z.reshape(num_nodes, heads, width)
    a_src = module.param(f"att_src_{i}", nn.initializers.glorot_uniform(), (1, heads, width), jnp.float32)
    a_dst = module.param(f"att_dst_{i}", nn.initializers.glorot_uniform(), (1, heads, width), jnp.float32)
    e_src, e_dst = (z * a_src).sum(-1), (z * a_dst).sum(-1)                       # [N, K]
    logits = nn.leaky_relu(e_src[senders] + e_dst[receivers], negative_slope)     # [E, K]
    alpha = ops.segment_softmax(logits, receivers, edge_mask, num_nodes)
    out = jax.ops.segment_sum(z[senders] * alpha[..., None], receivers, num_segments=num_nodes)  # [N, K, W]
    out = out.reshape(num_nodes, heads * width) if concat else out.mean(axis=1)
    return out + _bias(module, i, out.shape[-1]) if use_bias else out


NORMS = ("none", "batch", "layer")
NORM_PREFIX = "norm_"  # the normalisation parameters are norm_scale_{i}, norm_bias_{i} (FedBN keeps them local)


def normalise(module: nn.Module, i: int, h: Array, kind: str, node_mask: Array, eps: float = 1e-5) -> Array:
    """Normalisation `kind` of hidden layer i's output h [N, W] -> [N, W], with a learnt per-feature
    scale `norm_scale_{i}` (ones) and shift `norm_bias_{i}` (zeros); kind "none" returns h as is and
    creates no parameter (so a model without normalisation keeps its parameter tree and init keys).

    "batch": each feature standardised by its mean and (biased) variance over the client's real
    nodes (node_mask: bool [N]; padded nodes neither enter the statistics nor matter after). The
    statistics are those of the batch in training and in evaluation alike. Why no running
    statistics: training here is full-batch and transductive, so the evaluation pass sees the very
    node set the training pass normalised over; running averages would only converge (with a lag)
    to these statistics, and would be mutable model state threaded through every algorithm's
    vmapped, scanned local training and its checkpoints. The statistics are each client's own
    data, so under FedBN they are local by construction, as the paper's running statistics are.
    "layer": each node's features standardised over its W features (Ba et al.).
    """
    if kind == "none":
        return h
    if kind == "batch":
        # the masked sums as mask @ h products: on XLA's CPU a [N] x [N, W] dot is cheaper than a
        # masked column reduction, forward and backward (benchmarks/bench_norm.py)
        m = node_mask.astype(h.dtype)
        count = jnp.maximum(m.sum(), 1.0)
        mean = (m @ h) / count
        var = (m @ ((h - mean) ** 2)) / count
    elif kind == "layer":
        mean = h.mean(-1, keepdims=True)
        var = ((h - mean) ** 2).mean(-1, keepdims=True)
    else:
        raise ValueError(f"norm must be one of {', '.join(NORMS)}, got {kind!r}")
    width = h.shape[-1]
    scale = module.param(f"{NORM_PREFIX}scale_{i}", nn.initializers.ones, (width,), jnp.float32)
    shift = module.param(f"{NORM_PREFIX}bias_{i}", nn.initializers.zeros, (width,), jnp.float32)
    # h * a + (shift - mean * a): one [N, W] multiply-add, and a backward pass with one fewer [N, W]
    # term than (h - mean) * rsqrt(var + eps) * scale + shift
    a = jax.lax.rsqrt(var + eps) * scale
    return h * a + (shift - mean * a)
