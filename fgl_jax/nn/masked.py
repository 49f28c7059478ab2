"""A GCN whose weights are used through learnable element-wise masks (FedPub's personalised sparse
masks, Baek et al. ICML 2023).

Every weight matrix W_i has a mask M_i of the same shape (initialised to ones) and the layer uses
W_i * M_i. In evaluation (train=False) mask entries with |M| < `prune` count as 0, the masks'
sparsification; in training they are used as they are, so the gradient reaches every entry.

Layout (as FedPub's MaskedGCN): `num_layers` GCN convolutions H' = S (H (W*M)) + b (S the
GCN-normalised adjacency with self-loops), each followed by ReLU and dropout, then a masked linear
classifier. Parameters: kernel_i, mask_i, bias_i for i = 0..num_layers (the last is the
classifier), so `fgl_jax.federated.fedavg_family.layer_index` reads their layer from the name and
`is_mask` tells the masks from the weights.
"""
from __future__ import annotations

import math
from typing import Any, NamedTuple

import flax.linen as nn
import jax
import jax.numpy as jnp

from fgl_jax import ops
from fgl_jax.nn.models import EMBEDDING

MASK = "mask"


class PlainGraph(NamedTuple):
    """A graph the masked GCN can run on besides a client's ClientBatch slice (e.g. FedPub's random
    proxy graph): features [N, F] (dense or SparseFeatures), senders/receivers int [E], edge_mask [E],
    node_mask bool [N]."""

    features: Any
    senders: jax.Array
    receivers: jax.Array
    edge_mask: jax.Array
    node_mask: jax.Array


def is_mask(path) -> bool:
    """True for a mask leaf of MaskedGCN's parameters (its key path ends in mask_<i>)."""
    name = str(getattr(path[-1], "key", path[-1]))
    return name.startswith(MASK + "_")


def pruned(mask: jax.Array, prune: float) -> jax.Array:
    """The mask as evaluation uses it: entries with |M| < prune count as 0."""
    return jnp.where(jnp.abs(mask) < prune, 0.0, mask)


class MaskedGCN(nn.Module):
    """Masked GCN (see the module docstring). Called with a ClientBatch slice or a PlainGraph.

    embed=True returns the last convolution's output before its ReLU [N, hidden] (FedPub's functional
    embedding is its mean over the proxy graph's nodes) instead of the logits [N, num_classes].
    """

    in_dim: int
    hidden: int
    num_classes: int
    num_layers: int = 2
    dropout: float = 0.5
    prune: float = 1e-3

    def _weight(self, i: int, shape: tuple, train: bool) -> jax.Array:
        w = self.param(f"kernel_{i}", nn.initializers.glorot_uniform(), shape, jnp.float32)
        m = self.param(f"{MASK}_{i}", nn.initializers.ones, shape, jnp.float32)
        if not train:
            m = pruned(m, self.prune)
        return w * m

    @nn.compact
    def __call__(self, batch, train: bool = False, embed: bool = False):
        s, r, em = batch.senders, batch.receivers, batch.edge_mask
        n = batch.node_mask.shape[-1]
        h = batch.features
        for i in range(self.num_layers):
            in_dim = self.in_dim if i == 0 else self.hidden
            z = ops.feature_matmul(h, self._weight(i, (in_dim, self.hidden), train), n)
            h = ops.gcn_propagate(z, s, r, em, n)
            h = h + self.param(f"bias_{i}", nn.initializers.zeros, (self.hidden,), jnp.float32)
            if embed and i == self.num_layers - 1:
                return h
            h = nn.relu(h)
            if i == self.num_layers - 1:
                self.sow("intermediates", EMBEDDING, h)
            if self.dropout > 0 and train:
                h = nn.Dropout(self.dropout, deterministic=False)(h)
        k = self.num_layers
        # the classifier's bias is drawn like FedPub's (xavier-uniform of a [1, K] tensor)
        bound = math.sqrt(6.0 / (1 + self.num_classes))
        init = lambda key, shape, dtype=jnp.float32: jax.random.uniform(key, shape, dtype, -bound, bound)
        bias = self.param(f"bias_{k}", init, (self.num_classes,), jnp.float32)
        return h @ self._weight(k, (self.hidden, self.num_classes), train) + bias
