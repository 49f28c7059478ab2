"""HGNN hypergraph convolution on segment sums, and FedHGL's classifier.

HGNN (Feng et al. 2019; FedHGL paper Eq. 5):

    X' = σ( D_V^{-1/2} H W D_E^{-1} Hᵀ D_V^{-1/2} X Θ ),   L := D_V^{-1/2} H W D_E^{-1} Hᵀ D_V^{-1/2}

computed without forming H: vertex → hyperedge is a gather over the incidence pairs and a
segment sum by hyperedge id (Eq. 7, "hyperedge gathering"); hyperedge → vertex is a gather by
hyperedge id and a segment sum by node id (Eq. 8, "node aggregation"). d_v = Σ_e w(e) h(v,e),
d_e = |e|; zero degrees give zero inverse powers (DHG convention), so isolated nodes propagate
to zero rows. No self-loops are added.

Shapes: N nodes, M hyperedges, nnz incidence pairs, F features.
"""
from __future__ import annotations

from typing import Optional

import flax
import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

Array = jax.Array

__all__ = ["Incidence", "make_incidence", "vertex_to_edge", "edge_to_vertex", "hgnn_propagate",
           "hgnn_smooth", "HGNNConv", "HGNN", "FedHGLClassifier", "safe_inv_pow"]


def safe_inv_pow(d, power: float):
    """d ** -power with 0 -> 0 (DHG's zero-degree rule); NumPy or JAX arrays."""
    xp = jnp if isinstance(d, jax.Array) else np
    return xp.where(d > 0, xp.maximum(d, 1e-30) ** (-power), 0.0)


@flax.struct.dataclass
class Incidence:
    """A (padded) hypergraph incidence with its normalisation, as a pytree.

    he_nodes, he_ids: int32 [nnz]; mask: float32 [nnz] (0 = padding pair, contributes nothing).
    inv_sqrt_dv: float32 [N] d_v^{-1/2}; edge_scale: float32 [M] w(e)/d_e.
    num_nodes, num_edges: static sizes.
    """

    he_nodes: Array
    he_ids: Array
    mask: Array
    inv_sqrt_dv: Array
    edge_scale: Array
    num_nodes: int = flax.struct.field(pytree_node=False)
    num_edges: int = flax.struct.field(pytree_node=False)


def make_incidence(he_nodes, he_ids, num_nodes: int, num_edges: int, edge_weight=None, mask=None,
                   node_degree=None, edge_size=None, dtype=jnp.float32) -> Incidence:
    """Host-side: degrees from the pairs (or given global ones), 0-degree -> 0, as an Incidence.

    dtype: of the normalisers (float64 under `jax.enable_x64(True)` for exactness tests).
    node_degree / edge_size override the degrees measured on these pairs; FedHGL's hyperedge
    completion uses the *global* d_v and d_e on a client's part of the hypergraph (Eq. 9).
    """
    he_nodes = np.asarray(he_nodes, np.int32)
    he_ids = np.asarray(he_ids, np.int32)
    m = np.ones(he_nodes.shape, np.float32) if mask is None else np.asarray(mask, np.float32)
    w = np.ones(num_edges, np.float64) if edge_weight is None else np.asarray(edge_weight, np.float64)
    if edge_size is None:
        edge_size = np.bincount(he_ids, weights=m, minlength=num_edges)
    if node_degree is None:
        node_degree = np.bincount(he_nodes, weights=m * w[he_ids], minlength=num_nodes)
    return Incidence(he_nodes=jnp.asarray(he_nodes), he_ids=jnp.asarray(he_ids), mask=jnp.asarray(m, dtype),
                     inv_sqrt_dv=jnp.asarray(safe_inv_pow(np.asarray(node_degree, np.float64), 0.5), dtype),
                     edge_scale=jnp.asarray(w * safe_inv_pow(np.asarray(edge_size, np.float64), 1.0), dtype),
                     num_nodes=int(num_nodes), num_edges=int(num_edges))


def vertex_to_edge(x: Array, inc: Incidence) -> Array:
    """Eq. 7 for every hyperedge: δ(e) = Σ_u h(u,e) d_u^{-1/2} x_u.   x [N, F] -> [M, F]."""
    s = x * inc.inv_sqrt_dv[:, None]
    return jax.ops.segment_sum(s[inc.he_nodes] * inc.mask[:, None], inc.he_ids, num_segments=inc.num_edges)


def edge_to_vertex(e: Array, inc: Incidence) -> Array:
    """Eq. 8 for every node: Σ_e w(e) h(v,e) / (d_e √d_v) · δ(e).   e [M, F] -> [N, F]."""
    e = e * inc.edge_scale[:, None]
    v = jax.ops.segment_sum(e[inc.he_ids] * inc.mask[:, None], inc.he_nodes, num_segments=inc.num_nodes)
    return v * inc.inv_sqrt_dv[:, None]


def hgnn_propagate(x: Array, inc: Incidence) -> Array:
    """L x (Eq. 5 without Θ and σ).   x [N, F] -> [N, F]."""
    return edge_to_vertex(vertex_to_edge(x, inc), inc)


def hgnn_smooth(x: Array, inc: Incidence, n_hops: int, chunk: Optional[int] = None) -> Array:
    """L^n x, the activation-free precomputation of FedHGL §IV-B (like SGC).

    chunk: process feature columns in blocks of this width (propagation is column-separable) to
    bound the [nnz, chunk] gather intermediates on wide features (Facebook: F = 4714).
    """
    def run(cols):
        for _ in range(n_hops):
            cols = hgnn_propagate(cols, inc)
        return cols

    f = x.shape[1]
    if chunk is None or chunk >= f:
        return run(x)
    nb = -(-f // chunk)
    xp = jnp.pad(x, ((0, 0), (0, nb * chunk - f)))
    blocks = xp.reshape(x.shape[0], nb, chunk).transpose(1, 0, 2)
    out = jax.lax.map(run, blocks)
    return out.transpose(1, 0, 2).reshape(x.shape[0], nb * chunk)[:, :f]


class HGNNConv(nn.Module):
    """One HGNN layer: L (x Θ) (+ bias). Θ is applied first, the cheaper order when F_out < F_in."""

    features: int
    use_bias: bool = True

    @nn.compact
    def __call__(self, x: Array, inc: Incidence) -> Array:
        h = nn.Dense(self.features, use_bias=False, name="theta")(x)
        h = hgnn_propagate(h, inc)
        if self.use_bias:
            h = h + self.param("bias", nn.initializers.zeros, (self.features,))
        return h


class HGNN(nn.Module):
    """The standard 2-layer HGNN (conv → ReLU → dropout → conv), end-to-end on one hypergraph."""

    hidden: int
    num_classes: int
    dropout: float = 0.5

    @nn.compact
    def __call__(self, x: Array, inc: Incidence, train: bool = False) -> Array:
        h = nn.relu(HGNNConv(self.hidden, name="conv_0")(x, inc))
        h = nn.Dropout(self.dropout, deterministic=not train)(h)
        return HGNNConv(self.num_classes, name="conv_1")(h, inc)


def torch_linear_init(key, shape, dtype=jnp.float32):
    """PyTorch nn.Linear's default U(±1/√fan_in) (spec §11.7 compat option)."""
    bound = 1.0 / np.sqrt(shape[0])
    return jax.random.uniform(key, shape, dtype, -bound, bound)


class FedHGLClassifier(nn.Module):
    """FedHGL's model on pre-propagated features x^{(N)} = L^N x (paper Eq. 10; spec §3/§10.1).

    Linear(F→hidden) → Dropout → Linear(hidden→C) [→ ReLU] → logits. The two linears with no
    nonlinearity between them are the "product of the parameters across the HGNN layers"; the
    final ReLU on the logits is the authors' code (flag `final_relu`).
    Input x [n, F] dense; output logits [n, C] (softmax cross-entropy is applied by the loss).
    """

    hidden: int
    num_classes: int
    dropout: float = 0.5
    final_relu: bool = True
    use_bias: bool = False
    torch_init: bool = True

    @nn.compact
    def __call__(self, x: Array, train: bool = False) -> Array:
        init = torch_linear_init if self.torch_init else nn.initializers.lecun_normal()
        h = nn.Dense(self.hidden, use_bias=self.use_bias, kernel_init=init, name="linear_0")(x)
        h = nn.Dropout(self.dropout, deterministic=not train)(h)
        h = nn.Dense(self.num_classes, use_bias=self.use_bias, kernel_init=init, name="linear_1")(h)
        return nn.relu(h) if self.final_relu else h
