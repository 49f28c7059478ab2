"""Graph-level models: GIN / GCN node layers, a readout (sum, mean or max pooling on segment ops)
and an MLP head, on a `fgl_jax.graph_batch.GraphBatch`.

    model = GraphClassifier(in_dim=F, hidden=64, num_classes=K, conv="gin", pooling="sum")
    logits = model.apply(params, minibatch)        # [G, K]   (one mini-batch)
    logits = model.apply(params, client_stack)     # [M, G, K] (a client's M mini-batches at once)
    fedstar = DualChannelClassifier(in_dim=F, se_dim=32, hidden=64, num_classes=K)   # FedStar's two channels

A client's stack [M, ...] is read as one disjoint union of its M mini-batches (node rows, edge
endpoints and graph slots offset per mini-batch, as jraph's batching), so evaluation is one call.
`task` ("graph_cls" or "graph_reg": the output is [..., G] then) tells the shared client functions
(`fgl_jax.federated.client.node_loss_fn`, `fgl_jax.federated.evaluation.evaluate`) to use the
graph-level loss and metrics (`fgl_jax.federated.graph_task`).
"""
from __future__ import annotations

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

from fgl_jax import ops
from fgl_jax.nn import layers
from fgl_jax.nn.models import EMBEDDING

Array = jax.Array
POOLINGS = ("sum", "mean", "max")
CONVS = ("gin", "gcn")
GRAPH_TASKS = ("graph_cls", "graph_reg")


def readout(h: Array, node_graph: Array, node_mask: Array, num_graphs: int, pooling: str = "sum") -> Array:
    """Graph embeddings [G, D] of node states h [N, D]: sum, mean or max over each graph's real
    nodes (node_graph int [N] slot of each node, node_mask bool [N]); a graph without real nodes
    (a padding slot) gets zeros."""
    m = node_mask.astype(h.dtype)[:, None]
    if pooling == "sum":
        return jax.ops.segment_sum(h * m, node_graph, num_segments=num_graphs)
    count = jax.ops.segment_sum(m, node_graph, num_segments=num_graphs)
    if pooling == "mean":
        return jax.ops.segment_sum(h * m, node_graph, num_segments=num_graphs) / jnp.maximum(count, 1.0)
    if pooling == "max":
        top = jax.ops.segment_max(jnp.where(m > 0, h, -jnp.inf), node_graph, num_segments=num_graphs)
        return jnp.where(count > 0, top, 0.0)
    raise ValueError(f"pooling must be one of {POOLINGS}, got {pooling!r}")


def dropout_bits(rate: float) -> int:
    """Bits of randomness per element that `dropout` draws: the fewest of 1, 2, 4 and 8 for which the keep
    probability 1 - rate is a multiple of 1 / 2^bits (1 bit for 0.5, 2 for 0.25 and 0.75, ...: then
    exact), else 16 (keep probability rounded to a multiple of 1/65536, off by at most 7.7e-6)."""
    for bits in (1, 2, 4, 8):
        if float((1.0 - rate) * 2 ** bits).is_integer():
            return bits
    return 16


def dropout(h: Array, rate: float, key: jax.Array) -> Array:
    """Inverted dropout of h [..., W]: each element kept with probability 1 - rate (as `dropout_bits`
    rounds it) and scaled by 1 / that probability, else zeroed.

    Why not `flax.linen.Dropout`: it draws 32 threefry bits per element. Here one uint32 word serves
    32 / bits neighbouring elements of a row (word j gives elements j * 32 / bits, ..., its low bits
    first): 32 elements per word at rate 0.5. Each word is the XOR of two threefry words, taken as a
    reduction: XLA:CPU fuses elementwise producers into every consumer, so without it the threefry of
    a word ran once per element it serves, in the forward product and again in the gradient (an
    optimisation barrier does not stop that: XLA:CPU removes barriers before fusing), while a
    reduction's result is computed once and read by both. The draws of a row depend on its position
    only, so a mini-batch re-padded to fewer rows (packed client execution,
    `fgl_jax.graph_batch.with_size_classes`) gets the same masks on its real rows.

    Args:
        h: float [..., W], the activations.
        rate: the drop probability in [0, 1] (1: every element dropped).
        key: the PRNG key of this dropout.

    Returns:
        float [..., W], h masked and rescaled.
    """
    if rate >= 1.0:
        return jnp.zeros_like(h)
    bits = dropout_bits(rate)
    per = 32 // bits
    width = h.shape[-1]
    words = -(-width // per)
    keep = int(round((1.0 - rate) * 2 ** bits))
    pairs = jax.random.bits(key, h.shape[:-1] + (words, 2), jnp.uint32)
    raw = jax.lax.reduce(pairs, jnp.uint32(0), jax.lax.bitwise_xor, (pairs.ndim - 1,))      # [..., words]
    shifts = jnp.arange(0, 32, bits, dtype=jnp.uint32)                          # [per]
    draws = jnp.right_shift(raw[..., None], shifts) & jnp.uint32(2 ** bits - 1)  # [..., words, per]
    kept = draws.reshape(h.shape[:-1] + (words * per,))[..., :width] < jnp.uint32(keep)
    return jnp.where(kept, h * jnp.asarray(2 ** bits / keep, h.dtype), jnp.zeros((), h.dtype))


@jax.custom_vjp
def _matmul(x: Array, w: Array) -> Array:
    return x @ w


def _matmul_fwd(x, w):
    return x @ w, (x, w)


def _matmul_bwd(res, g):
    x, w = res
    # the weight gradient as x^T (made contiguous) @ g: XLA:CPU runs a dot contracting both operands'
    # row axis (x^T g read in place) about 1.4x slower than the transpose plus a plain product
    return g @ w.T, jax.lax.optimization_barrier(x.T) @ g


_matmul.defvjp(_matmul_fwd, _matmul_bwd)


def contiguous_dot(lhs: Array, rhs: Array, dimension_numbers, precision=None, preferred_element_type=None) -> Array:
    """`jax.lax.dot_general` for `flax.linen.Dense` (its `dot_general`), the same product, whose weight
    gradient of an input [N, I] is computed from a contiguous transpose of the input (`_matmul_bwd`);
    any other contraction is `jax.lax.dot_general` itself.

    Args:
        lhs: the input [..., I]; rhs: the kernel [I, O].
        dimension_numbers, precision, preferred_element_type: as `jax.lax.dot_general`.

    Returns:
        lhs @ rhs, [..., O].
    """
    if (lhs.ndim == 2 and rhs.ndim == 2 and precision is None and preferred_element_type is None
            and tuple(map(tuple, dimension_numbers[0])) == ((1,), (0,)) and not any(dimension_numbers[1])):
        return _matmul(lhs, rhs)
    return jax.lax.dot_general(lhs, rhs, dimension_numbers, precision=precision,
                               preferred_element_type=preferred_element_type)


def dense(features: int, name: str, use_bias: bool = True) -> nn.Dense:
    """`flax.linen.Dense(features, name=name)` with `contiguous_dot` (same parameters and values).

    `contiguous_dot` has a custom gradient, so reverse mode only: `jax.jvp` (and forward-over-reverse
    Hessian-vector products) through the graph models raises JAX's custom_vjp error.
    """
    return nn.Dense(features, use_bias=use_bias, name=name, dot_general=contiguous_dot)


def _dropper(module: nn.Module, train: bool):
    """h -> `dropout(h, module.dropout, <a key of the 'dropout' stream>)` in training, identity otherwise."""
    if not train or module.dropout <= 0:
        return lambda h: h
    return lambda h: dropout(h, module.dropout, module.make_rng("dropout"))


def gin_aggregate(h: Array, senders: Array, receivers: Array, edge_mask: Array, num_nodes: int,
                  eps: float | Array = 0.0) -> Array:
    """GIN's (1 + eps) h_v + sum_{u -> v} h_u (Xu et al., ICLR 2019), before its MLP. [N, D]."""
    return (1.0 + eps) * h + ops.neighbour_sum(h, senders, receivers, edge_mask, num_nodes)


def flatten_stack(batch) -> tuple:
    """(x [M*N, F], senders [M*E], receivers, edge_mask, node_graph [M*N], node_mask, G_total) of a
    client's stack [M, ...] as one disjoint graph (offsets per mini-batch); a mini-batch as it is."""
    if batch.y.ndim == 1:
        return (batch.x, batch.senders, batch.receivers, batch.edge_mask, batch.node_graph, batch.node_mask,
                batch.y.shape[0])
    m, n = batch.x.shape[0], batch.x.shape[1]
    g = batch.y.shape[-1]
    node_off = (jnp.arange(m, dtype=jnp.int32) * n)[:, None]
    flat = lambda a: a.reshape((-1,) + a.shape[2:])
    return (flat(batch.x), flat(batch.senders + node_off), flat(batch.receivers + node_off), flat(batch.edge_mask),
            flat(batch.node_graph + (jnp.arange(m, dtype=jnp.int32) * g)[:, None]), flat(batch.node_mask), m * g)


def own_domain_logits(out: Array, which: Array, node_graph: Array, node_mask: Array, num_graphs: int,
                      domains: tuple) -> Array:
    """Cross-domain heads: logits out [G, K] with every class outside a graph's dataset set to -1e9.

    Args:
        out: the logits of the G graph slots [G, K].
        which: the nodes' one-hot dataset columns [N, D] (D = len(domains)).
        node_graph: int [N], the slot of each node.
        node_mask: bool [N], the real nodes.
        num_graphs: G (static).
        domains: D class ranges (lo, hi), one per dataset.

    Returns:
        [G, K], out inside each graph's range, -1e9 outside (a padding slot: -1e9 everywhere).
    """
    blocks = np.zeros((len(domains), out.shape[-1]), np.float32)
    for i, (lo, hi) in enumerate(domains):
        blocks[i, lo:hi] = 1.0
    own = readout(which, node_graph, node_mask, num_graphs, "max") @ jnp.asarray(blocks)   # [G, K]
    return jnp.where(own > 0, out, -1e9)


class GraphClassifier(nn.Module):
    """num_layers GIN (2-layer MLP, eps = 0, GIN-0) or GCN layers with ReLU, a readout, then the head
    Dense(hidden) - ReLU - dropout - Dense(num_classes). Parameters: conv_i, head_0, head_1, and with
    `norm` batch or layer a scale and shift per conv layer (`fgl_jax.nn.layers.normalise`, before the
    ReLU; batch statistics over the real nodes of what is applied: a mini-batch in training, the
    client's whole stack in evaluation), which FedBN keeps per client.
    The graph embedding (the readout, the head's input) is sown for `apply_with_embedding` (MOON).

    Cross-domain sets (`fgl_jax.data.graph_domains`): with `domains` = D class ranges (lo, hi), the
    last D feature columns are each node's one-hot dataset (read, not fed to the layers) and a graph's
    logits outside its dataset's range are set to -1e9, so each dataset's block of head_1 is its own
    head (softmax, loss and argmax over that dataset's classes only)."""

    in_dim: int
    hidden: int
    num_classes: int          # 1 for graph_reg
    num_layers: int = 2
    dropout: float = 0.0
    conv: str = "gin"
    pooling: str = "sum"
    task: str = "graph_cls"
    norm: str = "none"        # none | batch | layer after each conv layer
    domains: tuple = ()       # cross-domain: ((lo, hi), ...) class range of each dataset

    @nn.compact
    def __call__(self, batch, train: bool = False):
        x, s, r, em, node_graph, nm, num_graphs = flatten_stack(batch)
        n = x.shape[0]
        if self.domains:  # the trailing one-hot dataset columns pick the head, they are no input
            x, which = x[:, :-len(self.domains)], x[:, -len(self.domains):]
        drop = _dropper(self, train)
        h = x
        for i in range(self.num_layers):
            h = drop(h) if i > 0 else h
            h = conv_layer(self, i, h, s, r, em, n)
            h = nn.relu(layers.normalise(self, i, h, self.norm, nm))
        g = readout(h, node_graph, nm, num_graphs, self.pooling)
        self.sow("intermediates", EMBEDDING, g)
        out = dense(self.num_classes, "head_1")(drop(nn.relu(dense(self.hidden, "head_0")(g))))
        if self.domains:
            out = own_domain_logits(out, which, node_graph, nm, num_graphs, self.domains)
        out = out.reshape(batch.y.shape + (self.num_classes,))
        return out[..., 0] if self.task == "graph_reg" else out


def conv_layer(module: nn.Module, i: int, h: jax.Array, s: jax.Array, r: jax.Array, em: jax.Array,
               n: int) -> jax.Array:
    """Layer i of a graph classifier's node stack (before its normalisation and ReLU), created in
    `module`'s scope: GIN-0 (neighbour sum + self, then a two-layer MLP `conv_i_0`, `conv_i_1`) or GCN
    (`conv_i` without bias, propagated, plus `conv_i_bias`), as `module.conv` says.

    Args:
        module: the calling classifier (its `conv` and `hidden` fields; the parameters are its own).
        i: the layer index (parameter names).
        h: float [N, H_in], node states.
        s, r: int [E] senders and receivers; em: bool [E] real edges; n: N.

    Returns:
        float [N, hidden].
    """
    if module.conv == "gin":
        h = gin_aggregate(h, s, r, em, n)
        h = dense(module.hidden, f"conv_{i}_0")(h)
        return dense(module.hidden, f"conv_{i}_1")(nn.relu(h))
    h = ops.gcn_propagate(dense(module.hidden, f"conv_{i}", use_bias=False)(h), s, r, em, n)
    return h + module.param(f"conv_{i}_bias", nn.initializers.zeros, (module.hidden,), jnp.float32)


STRUCT_PREFIX = "struct_"   # the parameters of DualChannelClassifier's structure channel (FedStar shares them)


class DualChannelClassifier(nn.Module):
    """FedStar's decoupled graph classifier (Tan et al., AAAI 2023, Sec. 4.2): a structure channel
    and a feature channel side by side, the structure embedding concatenated into the feature
    channel's input at every layer.

    The node inputs are x = [features (in_dim) | structure encoding (se_dim) | D dataset columns]
    (`fgl_jax.data.structure.with_structure_encoding`; the dataset columns only with `domains`, as in
    `GraphClassifier`). With h = hidden, for i = 0..num_layers-1:

        f_0 = feat_embed(features),  s_0 = struct_embed(encoding)           # [N, h] each
        f_{i+1} = dropout(relu(conv_i([f_i | s_i])))                        # GIN (or GCN) on [N, 2h]
        s_{i+1} = tanh(struct_conv_i(s_i))                                   # GCN: D^-1/2 (A+I) D^-1/2 s W + b
        g = readout(fuse([f_L | s_L]))                                       # [G, h]
        logits = head_1(dropout(relu(head_0(g))))                            # [G, K]

    Parameters whose name starts with `STRUCT_PREFIX` (struct_embed, struct_conv_i, struct_conv_i_bias)
    are the structure channel, the part FedStar averages; the rest (feat_embed, conv_i*, fuse,
    head_*, norm_*) is the feature channel and head, kept by each client. `conv`, `pooling`, `norm`,
    `task` and `domains` mean what they mean in `GraphClassifier` (norm: after each feature layer).
    """

    in_dim: int               # node feature columns (without the encoding and dataset columns)
    se_dim: int               # structure encoding columns
    hidden: int
    num_classes: int          # 1 for graph_reg
    num_layers: int = 3
    dropout: float = 0.0
    conv: str = "gin"
    pooling: str = "sum"
    task: str = "graph_cls"
    norm: str = "none"
    domains: tuple = ()

    @nn.compact
    def __call__(self, batch, train: bool = False):
        x, s, r, em, node_graph, nm, num_graphs = flatten_stack(batch)
        n = x.shape[0]
        which = x[:, x.shape[1] - len(self.domains):] if self.domains else None
        feat, enc = x[:, :self.in_dim], x[:, self.in_dim:self.in_dim + self.se_dim]
        drop = _dropper(self, train)
        f = dense(self.hidden, "feat_embed")(feat)
        st = dense(self.hidden, STRUCT_PREFIX + "embed")(enc)
        for i in range(self.num_layers):
            h = jnp.concatenate([f, st], axis=-1)
            h = conv_layer(self, i, h, s, r, em, n)
            f = drop(nn.relu(layers.normalise(self, i, h, self.norm, nm)))
            st = ops.gcn_propagate(dense(self.hidden, f"{STRUCT_PREFIX}conv_{i}", use_bias=False)(st),
                                   s, r, em, n)
            st = jnp.tanh(st + self.param(f"{STRUCT_PREFIX}conv_{i}_bias", nn.initializers.zeros, (self.hidden,),
                                          jnp.float32))
        h = dense(self.hidden, "fuse")(jnp.concatenate([f, st], axis=-1))
        g = readout(h, node_graph, nm, num_graphs, self.pooling)
        self.sow("intermediates", EMBEDDING, g)
        out = dense(self.num_classes, "head_1")(drop(nn.relu(dense(self.hidden, "head_0")(g))))
        if self.domains:
            out = own_domain_logits(out, which, node_graph, nm, num_graphs, self.domains)
        out = out.reshape(batch.y.shape + (self.num_classes,))
        return out[..., 0] if self.task == "graph_reg" else out


def is_structure(path) -> bool:
    """Whether a parameter (its key path in the model's tree) belongs to `DualChannelClassifier`'s
    structure channel.

    Args:
        path: a key path from `jax.tree_util.tree_map_with_path`.

    Returns:
        True when a key on the path starts with `STRUCT_PREFIX`.
    """
    return any(str(getattr(k, "key", getattr(k, "name", ""))).startswith(STRUCT_PREFIX) for k in path)


def is_graph(model) -> bool:
    """True when `model` is a graph-level model (its `task` is graph_cls or graph_reg)."""
    return getattr(model, "task", "node_cls") in GRAPH_TASKS
