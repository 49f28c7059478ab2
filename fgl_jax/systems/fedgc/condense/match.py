"""Per-class gradient matching (FedGC Eq. 2-3, GCond/DosCond one-step mode).

Gradients are relay-parameter pytrees {"w1","b1","w2","b2"} with a leading class axis [C, ...].
The matching loss differentiates through ∇_θ L_syn (second order): `matching_loss` calls
`jax.vjp` of the synthetic loss inside a function that `jax.grad` differentiates w.r.t. X' and Φ.
"""
from __future__ import annotations

from typing import Dict

import jax
import jax.numpy as jnp

from fgl_jax.systems.fedgc.condense.relay import normalize_dense, relay_dense
from fgl_jax.systems.fedgc.condense.pge import pge_adjacency

Array = jax.Array
Params = Dict[str, Array]
DISTANCES = ("mse", "gcond")
GCOND_EPS = 1e-6


def dist_mse(g1: Params, g2: Params) -> Array:
    """D = Σ over all flattened parameters (biases included) of (g1 − g2)² — a sum, not a mean."""
    return sum(jnp.sum(jnp.square(a - b)) for a, b in zip(jax.tree.leaves(g1), jax.tree.leaves(g2)))


def _safe_norm(a: Array) -> Array:
    """Column L2 norms with a zero (not NaN) gradient at an all-zero column (a dead ReLU unit gives
    an exactly-zero weight-gradient column; torch's norm backward returns 0 there too)."""
    return jnp.sqrt(jnp.maximum(jnp.sum(a * a, axis=0), 1e-30))


def dist_gcond(g1: Params, g2: Params) -> Array:
    """GCond distance (Eq. 15): Σ_layers Σ_columns (1 − <g1_i, g2_i> / (‖g1_i‖‖g2_i‖ + 1e-6)).

    g_i is column i of a weight gradient of shape [in, out] (one term per output unit);
    1-D (bias) gradients contribute 0, as in GCond's `distance_wb`.
    """
    total = jnp.float32(0.0)
    for a, b in zip(jax.tree.leaves(g1), jax.tree.leaves(g2)):
        if a.ndim < 2:
            continue
        dot = jnp.sum(a * b, axis=0)
        norm = _safe_norm(a) * _safe_norm(b)
        total = total + jnp.sum(1.0 - dot / (norm + GCOND_EPS))
    return total


def distance(name: str):
    if name == "mse":
        return dist_mse
    if name == "gcond":
        return dist_gcond
    raise ValueError(f"distance must be one of {DISTANCES}, got {name!r}")


def class_coefficients(class_counts) -> Array:
    """coeff_c = N'_c / max_c' N'_c (GCond's class weighting; in the code, not in the paper)."""
    counts = jnp.asarray(class_counts, jnp.float32)
    return counts / counts.max()


def class_nll(logits: Array, labels: Array, num_classes: int) -> Array:
    """Per-class mean NLL: [C] with entry c = mean over rows of class c of −log softmax(logits)[y].

    labels int [N]; classes without rows give 0 (the Y' builder guarantees ≥ 1 row per class).
    """
    logp = jax.nn.log_softmax(logits, axis=-1)
    nll = -jnp.take_along_axis(logp, labels[:, None], axis=-1)[:, 0]
    onehot = jax.nn.one_hot(labels, num_classes, dtype=logits.dtype)  # [N, C]
    return (onehot * nll[:, None]).sum(0) / jnp.maximum(onehot.sum(0), 1.0)


def synthetic_class_grads(theta: Params, x_syn: Array, a_norm: Array, y_syn: Array, num_classes: int,
                          relay: str = "gcn") -> Params:
    """∇_θ L^{G'}_c for every class c: one forward on the WHOLE synthetic graph, loss on the
    class-c rows (spec §5.3: GCond's form), then C vector-Jacobian products. Leaves [C, ...]."""
    def per_class(t):
        return class_nll(relay_dense(t, x_syn, a_norm, relay), y_syn, num_classes)

    _, vjp = jax.vjp(per_class, theta)
    return jax.vmap(lambda e: vjp(e)[0])(jnp.eye(num_classes, dtype=x_syn.dtype))


def matching_loss(x_syn: Array, pge_params: Params, theta: Params, g_real: Params, y_syn: Array,
                  coeff: Array, relay: str = "gcn", dist: str = "mse") -> Array:
    """L(X', Φ) = Σ_c coeff_c · D(∇_θ L^{G'}_c(θ), g_real_c)   (Eq. 3 for one θ).

    x_syn: [N', d]; pge_params: Φ; theta: relay θ; g_real: aggregated client gradients, leaves [C, ...];
    y_syn: int [N']; coeff: [C].
    """
    num_classes = coeff.shape[0]
    a_norm = normalize_dense(pge_adjacency(pge_params, x_syn))
    g_syn = synthetic_class_grads(theta, x_syn, a_norm, y_syn, num_classes, relay)
    d = distance(dist)
    per_class = jax.vmap(d)(g_syn, g_real)  # [C]
    return jnp.sum(coeff * per_class)
