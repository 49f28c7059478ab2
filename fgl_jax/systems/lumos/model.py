"""Module B2-B3 of Lumos: tree GNN encoders (GCN, GAT) on the union of all trees, and POOL.

Conventions follow the paper / official code (spec §4.4): 2 layers, hidden = output = 16,
ReLU after *every* layer (also the last, so pooled embeddings are >= 0), dropout 0.01 after each
layer; GCN = PyG GCNConv (self-loops, D^-1/2 (A+I) D^-1/2, bias after aggregation); GAT: layer 1
4 heads concatenated, layer 2 one head (concat=False), LeakyReLU 0.2, self-loops, no attention
dropout. The layers are the shared `fgl_jax.nn.layers` (GCN / GAT after the projection, bias after
aggregation); the ReLU after the last layer, the hash dropout, the table gather and POOL are
Lumos's own. Node features come from a table gathered by `feat_src` (see trees.py, Eq. 25); the first
projection is applied to the table (N + P + 1 rows) and then gathered: (T W)[src] = T[src] W.
"""
from __future__ import annotations

import flax.linen as nn
import jax
import jax.numpy as jnp

from fgl_jax.nn import layers
from fgl_jax.systems.lumos.trees import TreeBatch

BACKBONES = ("gcn", "gat")


def hash_dropout(x: jax.Array, rate: float, key: jax.Array) -> jax.Array:
    """Inverted dropout with a counter-based hash mask (murmur3 finaliser of index ^ seed).

    Why not nn.Dropout: threefry Bernoulli draws for the ~11 M tree-node activations per layer
    cost more than the whole GCN forward pass on this CPU (benchmarks/bench_lumos.py); a
    32-bit integer hash per element is ~10x cheaper and statistically adequate for a 1 % mask.
    """
    seed = jax.random.bits(key, (), jnp.uint32)
    idx = jax.lax.iota(jnp.uint32, x.size).reshape(x.shape)
    h = idx * jnp.uint32(0x9E3779B1) ^ seed
    h = (h ^ (h >> 16)) * jnp.uint32(0x85EBCA6B)
    h = (h ^ (h >> 13)) * jnp.uint32(0xC2B2AE35)
    h = h ^ (h >> 16)
    keep = h >= jnp.uint32(min(int(rate * 2.0 ** 32), 2 ** 32 - 1))
    return jnp.where(keep, x / (1.0 - rate), 0.0)


class TreeEncoder(nn.Module):
    """h^l for every tree node (Eq. 2 on each tree). Returns [T, hidden]."""

    backbone: str = "gcn"
    hidden: int = 16
    num_layers: int = 2
    heads: int = 4
    dropout: float = 0.01
    negative_slope: float = 0.2

    @nn.compact
    def __call__(self, table: jax.Array, trees: TreeBatch, train: bool = False) -> jax.Array:
        if self.backbone not in BACKBONES:
            raise ValueError(f"TreeEncoder: backbone must be one of {BACKBONES}, got {self.backbone!r}")
        t = trees.num_nodes
        s, r, m = trees.senders, trees.receivers, trees.edge_mask
        if self.backbone == "gat":
            s, r, m = layers.add_self_loops(s, r, m, t)
        h = None
        for i in range(self.num_layers):
            last = i == self.num_layers - 1
            k = 1 if (self.backbone == "gcn" or last) else self.heads
            dense = nn.Dense(k * self.hidden, use_bias=False, name=f"layer_{i}")
            z = dense(table)[trees.feat_src] if i == 0 else dense(h)     # Eq. 25 features via the table
            if self.backbone == "gcn":
                out = layers.gcn_layer(self, i, z, s, r, m, t)
            else:
                out = layers.gat_layer(self, i, z, s, r, m, t, heads=k, concat=not last,
                                       negative_slope=self.negative_slope)
            h = nn.relu(out)                                             # also after the last layer
            if train and self.dropout > 0:
                h = hash_dropout(h, self.dropout, self.make_rng("dropout"))
        return h


def pool_mean(h: jax.Array, trees: TreeBatch) -> jax.Array:
    """POOL (Eq. 31): h_u = mean of h over every leaf standing for u (its self-leaves and its copies
    in other devices' trees). Virtual and padding nodes are excluded (the official code pools
    them into vertex 0, a bug). h [T, H] -> [N, H]."""
    leaf = trees.node_vertex >= 0
    seg = jnp.where(leaf, trees.node_vertex, 0)
    total = jax.ops.segment_sum(jnp.where(leaf[:, None], h, 0.0), seg, num_segments=trees.leaf_count.shape[0])
    return total / jnp.maximum(trees.leaf_count, 1.0)[:, None]


class Lumos(nn.Module):
    """Tree encoder + POOL (+ LINEAR head for node classification, Eq. 32).

    __call__(table, trees, train) -> (h [N, hidden], logits [N, num_classes] or None).
    """

    backbone: str = "gcn"
    hidden: int = 16
    num_layers: int = 2
    heads: int = 4
    dropout: float = 0.01
    num_classes: int = 0   # 0: no head (link prediction)

    @nn.compact
    def __call__(self, table, trees, train: bool = False):
        h_tree = TreeEncoder(self.backbone, self.hidden, self.num_layers, self.heads, self.dropout,
                             name="encoder")(table, trees, train)
        h = pool_mean(h_tree, trees)
        logits = nn.Dense(self.num_classes, name="head")(h) if self.num_classes > 0 else None
        return h, logits


def lumos_model(cfg, num_classes: int) -> Lumos:
    """The model of a LumosConfig (no head in the link task)."""
    return Lumos(backbone=cfg.model, hidden=cfg.hidden, num_layers=cfg.num_layers, heads=cfg.heads,
                 dropout=cfg.dropout, num_classes=num_classes if cfg.task == "node" else 0)
