"""Pooled metrics over clients, and HiFGL's graph information gain."""
from __future__ import annotations

import jax
import jax.numpy as jnp
import optax


def masked_cross_entropy(logits: jax.Array, y: jax.Array, mask: jax.Array) -> jax.Array:
    """Mean softmax cross-entropy over masked nodes (0 when the mask is empty). logits [N, K]."""
    ce = optax.softmax_cross_entropy_with_integer_labels(logits, y)
    m = mask.astype(logits.dtype)
    return (ce * m).sum() / jnp.maximum(m.sum(), 1.0)


def client_counts(logits: jax.Array, y: jax.Array, batch) -> dict:
    """Correct-prediction counts and totals for train/val/test on one client (for pooling)."""
    correct = (jnp.argmax(logits, -1) == y)
    out = {}
    for split in ("train", "val", "test"):
        m = getattr(batch, f"{split}_mask")
        out[f"{split}_correct"] = (correct & m).sum().astype(jnp.float32)
        out[f"{split}_total"] = m.sum().astype(jnp.float32)
    ce = optax.softmax_cross_entropy_with_integer_labels(logits, y)
    out["val_loss_sum"] = (ce * batch.val_mask).sum()
    return out


def pool(counts: dict, client_mask: jax.Array) -> dict:
    """Pooled (global) accuracies from per-client counts [C]: sum correct / sum total."""
    w = client_mask.astype(jnp.float32)
    tot = {k: (v * w).sum() for k, v in counts.items()}
    res = {}
    for split in ("train", "val", "test"):
        res[f"{split}_acc"] = tot[f"{split}_correct"] / jnp.maximum(tot[f"{split}_total"], 1.0)
    res["val_loss"] = tot["val_loss_sum"] / jnp.maximum(tot["val_total"], 1.0)
    return res


def graph_information_gain(acc: float, acc_local_mlp: float, acc_global: float) -> float:
    """HiFGL's Gain = (ACC - ACC(Local-MLP)) / (ACC(Global) - ACC(Local-MLP))."""
    denom = acc_global - acc_local_mlp
    if denom == 0:
        raise ZeroDivisionError("Global and Local-MLP accuracies are equal: gain undefined")
    return (acc - acc_local_mlp) / denom
