"""The relay GNN of gradient matching, in two equivalent forms.

* dense form (server side): the synthetic graph is a dense weighted adjacency A' [N', N'].
* block form (client side): the real graph is reached through host-built "class blocks"
  (fgl_jax.systems.fedgc.condense.blocks): for every target node a padded list of weighted sources, so the
  same parameters give the same logits as the dense form on the full normalised adjacency.

Relays (FedGC §3.2 / spec §2.1, PyTorch-default init U(±1/sqrt(fan_in)) for weights AND biases):
  "gcn": out = Â relu(Â X W1 + b1) W2 + b2                    (2-layer GCN, dropout 0)
  "sgc": out = Â Â (relu(X W1 + b1) W2 + b2)                   (the code's `sgc_multi`: MLP then 2 hops)
Parameters: {"w1": [d, h], "b1": [h], "w2": [h, C], "b2": [C]}.
"""
from __future__ import annotations

from typing import Dict

import jax
import jax.numpy as jnp

Array = jax.Array
Params = Dict[str, Array]
RELAYS = ("gcn", "sgc")


def check_relay(name: str) -> str:
    if name not in RELAYS:
        raise ValueError(f"relay must be one of {RELAYS}, got {name!r}")
    return name


def init_relay(key: Array, in_dim: int, hidden: int, num_classes: int, dtype=jnp.float32) -> Params:
    """θ ~ P_θ: every weight and bias ~ U(-1/sqrt(fan_in), 1/sqrt(fan_in)) (torch.nn.Linear default,
    which deeprobust's GraphConvolution re-creates). A fresh θ is drawn every round (Eq. 3)."""
    k1, k2, k3, k4 = jax.random.split(key, 4)
    s1, s2 = 1.0 / jnp.sqrt(in_dim), 1.0 / jnp.sqrt(hidden)
    u = lambda k, shape, s: jax.random.uniform(k, shape, dtype, -s, s)
    return {"w1": u(k1, (in_dim, hidden), s1), "b1": u(k2, (hidden,), s1),
            "w2": u(k3, (hidden, num_classes), s2), "b2": u(k4, (num_classes,), s2)}


def normalize_dense(a: Array) -> Array:
    """Â = D̃^{-1/2} (A + I) D̃^{-1/2}, D̃ = row sums of A + I. a: [N, N] -> [N, N]."""
    a = a + jnp.eye(a.shape[0], dtype=a.dtype)
    inv = jax.lax.rsqrt(a.sum(1))
    return a * inv[:, None] * inv[None, :]


def relay_dense(params: Params, x: Array, a_norm: Array, relay: str = "gcn") -> Array:
    """Logits [N, C] of the relay on a dense normalised adjacency a_norm [N, N], x [N, d]."""
    if relay == "gcn":
        h = jax.nn.relu(a_norm @ (x @ params["w1"]) + params["b1"])
        return a_norm @ (h @ params["w2"]) + params["b2"]
    if relay == "sgc":
        h = jax.nn.relu(x @ params["w1"] + params["b1"]) @ params["w2"] + params["b2"]
        return a_norm @ (a_norm @ h)
    raise ValueError(f"relay must be one of {RELAYS}, got {relay!r}")


def relay_block(params: Params, inputs: Array, nbr: Array, weight: Array, relay: str = "gcn") -> Array:
    """Logits [S, C] of S target nodes from R gathered source rows.

    inputs: [R, d] source rows: (Â X) rows for "gcn" (the first propagation is pre-computed on the
        client, since X is fixed), raw X rows for "sgc".
    nbr: int [S, K] indices into the R rows; weight: [S, K] the matching entries of Â ("gcn") or of
        Â² ("sgc"), 0 for padding. Self-loops are ordinary entries.
    The last linear map is applied before aggregation (it commutes with it), so the gathered
    tensor is [S, K, C] rather than [S, K, hidden].
    """
    if relay == "gcn":
        h = jax.nn.relu(inputs @ params["w1"] + params["b1"]) @ params["w2"]
        return jnp.einsum("sk,skc->sc", weight, h[nbr]) + params["b2"]
    if relay == "sgc":
        h = jax.nn.relu(inputs @ params["w1"] + params["b1"]) @ params["w2"] + params["b2"]
        return jnp.einsum("sk,skc->sc", weight, h[nbr])
    raise ValueError(f"relay must be one of {RELAYS}, got {relay!r}")
