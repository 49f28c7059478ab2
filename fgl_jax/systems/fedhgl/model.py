"""FedHGL's classifier (paper Eq. 10, the authors' code): Linear(F,16) → Dropout → Linear(16,C) → ReLU
on the pre-propagated features X^{(N)} (`fgl_jax.nn.hgnn.FedHGLClassifier`), and its folded
eval-mode form."""
from __future__ import annotations

import jax
import jax.numpy as jnp

from fgl_jax.nn.hgnn import FedHGLClassifier
from fgl_jax.systems.fedhgl.config import FedHGLConfig


def make_model(num_classes: int, cfg: FedHGLConfig) -> FedHGLClassifier:
    return FedHGLClassifier(cfg.hidden, num_classes, cfg.dropout, cfg.final_relu, cfg.bias)


def _features(x, g, hp):
    return x if g is None else x + g / hp["eps"]


def _eval_counts(params, x, g, hp, y, m, final_relu: bool):
    """Correct and total counts of the eval-mode classifier on rows x [r, F] (+ g / ε).

    Eval mode has no dropout, so the two linears fold into one [F, C] map (Eq. 10's "product of
    the parameters"): x (W1 W2) + (b1 W2 + b2), 16/C times cheaper on wide features than x W1.
    """
    p = params["params"]
    w1, w2 = p["linear_0"]["kernel"], p["linear_1"]["kernel"]
    w = w1 @ w2
    b = jnp.zeros((w2.shape[1],), w.dtype)
    if "bias" in p["linear_0"]:
        b = p["linear_0"]["bias"] @ w2
    if "bias" in p["linear_1"]:
        b = b + p["linear_1"]["bias"]
    logits = x @ w + b
    if g is not None:
        logits = logits + (g @ w) / hp["eps"]
    if final_relu:
        logits = jax.nn.relu(logits)
    pred = jnp.argmax(logits, -1)
    return ((pred == y) & m).sum().astype(jnp.float32), m.sum().astype(jnp.float32)

