"""LDP defence baseline (FedGC Table 2 "LDP", App. D): every client clips its upload per coordinate
and adds Laplace noise before the server aggregates."""
from __future__ import annotations

from typing import Optional

import jax
import jax.numpy as jnp

from fgl_jax import validate as V
from fgl_jax.privacy.ldp import laplace
from fgl_jax.systems.fedgc.condense.aggregation import aggregation_weights
from fgl_jax.systems.fedgc.condense.blocks import ClientData, all_client_grads, client_class_grads
from fgl_jax.systems.fedgc.condense.relay import Params

Array = jax.Array


# ---------------------------------------------------------------------------------------------
# LDP defence baseline (FedGC Table 2 "LDP", App. D; spec §5 item 17): every client clips its
# upload per coordinate to [-clip, clip] and adds i.i.d. Laplace(0, b) noise BEFORE the server
# aggregates. One coordinate's sensitivity is 2·clip, so ε = 2·clip / b per coordinate (clip 0.1,
# b 0.2 -> ε = 1, the code's unused `clip` / `laplace_lambda`). The fused path never forms a
# client's upload, so the private path runs the clients one after another (lax.scan) or vmapped.
# ---------------------------------------------------------------------------------------------
def check_ldp(clip, noise) -> None:
    """clip > 0 (required); noise = Laplace scale b > 0, or None for clip-only (no noise); both finite."""
    V.in_interval("LDP", "clip", clip, 0.0, float("inf"))
    if noise is not None:
        V.in_interval("LDP", "noise scale b", noise, 0.0, float("inf"))


def ldp_upload(key: Array, grads: Params, clip: float, noise: Optional[float]) -> Params:
    """One client's privatised upload: clip(g, -clip, clip) + Lap(0, noise) per coordinate.

    grads: any pytree (e.g. leaves [C, ...]); key: the client's key (one sub-key per leaf).
    noise=None: clip only. Uses the shared Laplace mechanism (fgl_jax.privacy.ldp.laplace) with
    value range 2·clip and ε = 2·clip/b, i.e. noise scale exactly b.
    """
    check_ldp(clip, noise)
    leaves, tree = jax.tree.flatten(grads)
    clipped = [jnp.clip(g, -clip, clip) for g in leaves]
    if noise is None:
        return jax.tree.unflatten(tree, clipped)
    eps = 2.0 * float(clip) / float(noise)
    keys = jax.random.split(key, len(leaves))
    return jax.tree.unflatten(tree, [laplace(k, g, 1.0, eps, 2.0 * float(clip)) for k, g in zip(keys, clipped)])


def private_client_uploads(theta: Params, data: ClientData, pool: Array, key: Array, clip: float,
                           noise: Optional[float], relay: str = "gcn") -> Params:
    """Every client's privatised per-class upload (leaves [M, C, ...]); client j uses
    jax.random.split(key, M)[j] (as `private_aggregated_client_grads`)."""
    keys = jax.random.split(key, data.counts.shape[0])
    g = all_client_grads(theta, data, pool, relay)
    return jax.vmap(lambda k, gj: ldp_upload(k, gj, clip, noise))(keys, g)


def private_aggregated_client_grads(theta: Params, data: ClientData, pool: Array, key: Array, clip: float,
                                    noise: Optional[float], relay: str = "gcn", agg: str = "weighted") -> Params:
    """Σ_j w_jc · LDP(g_jc) (leaves [C, ...]): the server's aggregate of privatised uploads.

    Clients run in a lax.scan (one [C, ...] upload at a time, as `client_axis="scan"`); client j
    privatises its own upload with key split(key, M)[j], so the result equals
    `server.aggregate(private_client_uploads(...), counts, agg)`.
    """
    check_ldp(clip, noise)
    w = aggregation_weights(data.counts, agg)  # [M, C]
    keys = jax.random.split(key, data.counts.shape[0])

    def body(acc, xs):
        x, b, wj, kj = xs
        gj = ldp_upload(kj, client_class_grads(theta, x, b, pool, relay), clip, noise)  # what client j uploads
        return jax.tree.map(lambda a, g: a + jnp.einsum("c,c...->c...", wj, g), acc, gj), None

    c = data.counts.shape[1]
    acc0 = jax.tree.map(lambda a: jnp.zeros((c,) + a.shape, a.dtype), theta)
    return jax.lax.scan(body, acc0, (data.inputs, data.blocks, w, keys))[0]
