"""Random graph augmentations of one client's graph (no client axis; vmap adds it), as graph
contrastive learning uses them (GRACE/PyGCL's EdgeRemoving and FeatureMasking).

Both act through masks, so shapes stay static inside a jitted program: a removed edge gets
edge_mask False, a masked feature column is multiplied by 0 (dense [N, F] or SparseFeatures).
"""
from __future__ import annotations

import jax
import jax.numpy as jnp

from fgl_jax.ops import SparseFeatures

Array = jax.Array


def drop_edges(edge_mask: Array, key: Array, p) -> Array:
    """Each (directed) edge removed independently with probability p: edge_mask [E] (bool, or float
    edge weights) -> the same dtype, 0 where removed."""
    keep = jax.random.uniform(key, edge_mask.shape) >= p
    return jnp.where(keep, edge_mask, jnp.zeros_like(edge_mask))


def mask_feature_columns(features, key: Array, p, num_features: int):
    """Each feature column (the same for every node) zeroed with probability p.

    features: dense [N, F] or SparseFeatures (then num_features = F is needed, the columns are not
    in its shapes); returns the same kind."""
    keep = (jax.random.uniform(key, (num_features,)) >= p).astype(jnp.float32)
    if isinstance(features, SparseFeatures):
        return features.replace(val=features.val * keep[features.col])
    return features * keep[None, :]


def augment_batch(batch, key: Array, edge_p, feature_p, num_features: int):
    """A ClientBatch slice with edges removed (prob. edge_p) and feature columns masked (prob. feature_p)."""
    ke, kf = jax.random.split(key)
    return batch.replace(edge_mask=drop_edges(batch.edge_mask, ke, edge_p),
                         features=mask_feature_columns(batch.features, kf, feature_p, num_features))
