"""HiFGL's network: the shared `nn.GCN` / `nn.SAGE` with SecMP as their neighbour sum.

The source-side projection, Eq. 2 (m_v = h_v W / sqrt(deg_v)), Eq. 3 (agg_u / sqrt(deg_u) [+ self
term]) and the bias after decoding are the shared layers' own (spec 5.2.2-5.2.4); only the neighbour
sum goes through `SecureSum`. `norm="authors_code"` swaps in the authors' code's normalisation
(`authors_code_propagate`) around the same secure sum. GraphSAGE's source side is degree-free and its target divides by the
degree after decoding (spec 5.2.11).
"""
from __future__ import annotations

from typing import Any, Callable, Optional

import jax
import jax.numpy as jnp
import numpy as np

from fgl_jax import ops
from fgl_jax.nn.models import GCN, SAGE
from fgl_jax.systems.hifgl.config import HiFGLConfig
from fgl_jax.systems.hifgl.data import HiFGLData
from fgl_jax.systems.hifgl.secmp import SecureSum, SiloCodes

PyTree = Any


def authors_code_propagate(h: jax.Array, senders: jax.Array, receivers: jax.Array, edge_mask: jax.Array,
                           num_nodes: int, aggregate: Optional[Callable] = None, layer: int = 0) -> jax.Array:
    """The GCN normalisation of the authors' public code (`norm="authors_code"`). [N, H] -> [N, H].

    In github.com/usail-hkust/HiFGL, `code/modules.py` `Device.message_passing`, a device v sends
    h_v / sqrt(1 + deg_v), deg_v = the length of its whole neighbour list (every edge of the graph,
    cross-silo ones and other splits' included); `code/models.py` `GCNAgg` stacks the receiver's own
    unscaled h_u with the n_u - 1 messages it received, divides by sqrt(n_u + 1), applies the
    bias-free linear map and takes the MEAN over the n_u items:

        out_u = (h_u + sum_{v -> u carried} h_v / sqrt(1 + deg_v)) / (n_u sqrt(n_u + 1)),
        n_u = 1 + the number of messages u receives.

    So deg_v counts every listed edge, while n_u counts only the edges that carry messages
    (`edge_mask`: all of them, or the same-split ones with `edges="same_split"`, as the authors' code
    passes them). Each side uses only its own count, so the neighbour sum still runs through SecMP:
    the source scales before encoding, the target adds its own term and scales after decoding.

    Args:
        h: float `[N, H]`, the projected node states (X W; the linear map commutes with the scaling).
        senders: int32 `[E]`, every directed edge of the graph (each device's whole neighbour list).
        receivers: int32 `[E]`.
        edge_mask: bool `[E]`, the edges that carry messages.
        num_nodes: N (static).
        aggregate: the neighbour sum (`ops.neighbour_sum` signature; HiFGL's `SecureSum`), None = plain.
        layer: the layer index, passed to `aggregate`.

    Returns:
        float `[N, H]`, the propagated states (before the bias).
    """
    deg = ops.in_degree(receivers, jnp.ones_like(edge_mask), num_nodes)    # every listed neighbour
    n = ops.in_degree(receivers, edge_mask, num_nodes) + 1.0               # own state + messages received
    msg = h * jax.lax.rsqrt(1.0 + deg)[:, None]
    agg = (aggregate or ops.neighbour_sum)(msg, senders, receivers, edge_mask, num_nodes, layer=layer)
    return (agg + h) * (jax.lax.rsqrt(n + 1.0) / n)[:, None]


def network(cfg: HiFGLConfig, in_dim: int, num_classes: int, aggregate: Optional[Callable] = None):
    """The flax module; aggregate None = the plain neighbour sum (`ops.neighbour_sum`)."""
    agg = aggregate or ops.neighbour_sum
    if cfg.model == "gcn":
        return GCN(in_dim=in_dim, hidden=cfg.hidden, num_classes=num_classes, num_layers=cfg.num_layers,
                   aggregate=agg, self_loop=cfg.norm == "gcn_selfloop",
                   propagate=authors_code_propagate if cfg.norm == "authors_code" else None)
    return SAGE(in_dim=in_dim, hidden=cfg.hidden, num_classes=num_classes, num_layers=cfg.num_layers, aggregate=agg)


def _dims(params: PyTree, num_layers: int) -> tuple[int, int]:
    p = params["params"]
    return int(p["layer_0"]["kernel"].shape[0]), int(p[f"bias_{num_layers - 1}"].shape[0])


def forward(params: PyTree, data: HiFGLData, codes: SiloCodes, cfg: HiFGLConfig, key: jax.Array,
            secure: bool = True, differentiable: bool = True) -> tuple[jax.Array, jax.Array]:
    """Logits [N, C] of the GCN/SAGE over the whole federated graph, and the field-overflow flag.

    Forward values are the SecMP computation (every layer's neighbour sums through the LCC
    pipeline); the backward pass is the plain network's VJP exactly (spec 5.2.7, straight-through:
    out = plain + stop_gradient(secmp - plain)), since backpropagation across devices is unspecified.
    differentiable=False (evaluation): the SecMP logits alone, without the plain network the
    straight-through form needs only for its VJP (the same values up to the rounding of
    plain + (secmp - plain)).
    """
    in_dim, num_classes = _dims(params, cfg.num_layers)
    batch = data.batch()
    if secure and cfg.mode != "plain" and not differentiable:
        secure_sum = SecureSum(data.silo, codes, cfg, key)
        sec = network(cfg, in_dim, num_classes, aggregate=secure_sum).apply(jax.lax.stop_gradient(params), batch)
        return sec, secure_sum.overflow()
    plain = network(cfg, in_dim, num_classes).apply(params, batch)
    if not secure or cfg.mode == "plain":
        return plain, jnp.array(False)
    secure_sum = SecureSum(data.silo, codes, cfg, key)
    sec = network(cfg, in_dim, num_classes, aggregate=secure_sum).apply(jax.lax.stop_gradient(params), batch)
    return plain + jax.lax.stop_gradient(sec - plain), secure_sum.overflow()


def secmp_bytes(cfg: HiFGLConfig, data: HiFGLData, in_dim: int, num_classes: int) -> int:
    """Bytes the devices exchange in one SecMP forward pass over the federated graph (0 in plain mode).

    Every neighbour sum a layer asks for (its message width d read from the model itself, by
    tracing it with a recording `aggregate`) costs, per real directed edge, the source device's
    T+1 coded shares [T+1, d] to the target device, and per device its T+1 aggregated shares to its
    silo; each entry is a field element (int64) or, in real mode, a float64: 8 bytes."""
    if cfg.mode == "plain":
        return 0
    widths: list = []

    def record(msg, senders, receivers, edge_mask, num_nodes, *args, **kwargs):
        widths.append(int(msg.shape[-1]))
        return ops.neighbour_sum(msg, senders, receivers, edge_mask, num_nodes)

    plain = network(cfg, in_dim, num_classes)
    params = jax.eval_shape(lambda k: plain.init({"params": k, "dropout": k}, data.batch()), jax.random.key(0))
    model = network(cfg, in_dim, num_classes, aggregate=record)
    jax.eval_shape(lambda p: model.apply(p, data.batch()), params)  # fills `widths`, computes nothing
    edges, nodes = int(np.asarray(data.edge_mask).sum()), int(np.asarray(data.node_mask).sum())
    return int(sum((edges + nodes) * (cfg.T + 1) * d * 8 for d in widths))
