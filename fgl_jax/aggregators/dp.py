"""DP-FedAvg (McMahan, Ramage, Talwar & Zhang, ICLR 2018) as aggregators: per-client clipping, the
uniform mean, Gaussian noise on the mean.

    dp_fedavg(clip_norm, z) = chain(clip(clip_norm), mean("uniform"), gaussian_noise(z, clip_norm))

releases  mean_i clip(Delta_i, C) + N(0, (z C / m)^2 I)  over the m clients of the round, with
Delta_i = upload_i - params (a client's update). Its privacy per round is what
`fgl_jax.privacy.dp.epsilons` accounts (one Gaussian mechanism of multiplier z per round).

C and z are traced: the stages keep them in their state as the Knobs "dp_clip" and "dp_noise"
(`fgl_jax.aggregators.knobs`), which a run fills from `state.hp` each round, so a sweep over the
clipping norm or the noise multiplier runs as one compiled program.

Shapes: C (or m) clients; `[C, ...]` a leaf with a leading client axis.
"""
from __future__ import annotations

from typing import Any, Optional

import jax
import jax.numpy as jnp

from fgl_jax.aggregators.base import Aggregator, chain
from fgl_jax.aggregators.knobs import Knobs
from fgl_jax.aggregators.mean import mean
from fgl_jax.privacy.dp import clip_updates

PyTree = Any


def clip(clip_norm: float) -> Aggregator:
    """Per client: the update (upload - params, or the upload itself when params is None) scaled to
    L2 norm at most the state's Knobs "dp_clip" (initially clip_norm), the norm taken over every
    leaf (`fgl_jax.privacy.dp.clip_updates`).

    Args:
        clip_norm: the largest L2 norm a client's update keeps, > 0 (traced in the state).

    Returns:
        An `Aggregator` of kind "per_client" (`[C, ...] -> [C, ...]`).

    Raises:
        ValueError: `clip_norm` is not > 0.
    """
    if not clip_norm > 0:
        raise ValueError(f"clip: clip_norm must be > 0, got {clip_norm}")

    def aggregate(state: Knobs, updates: PyTree, weights, key, *, params: Optional[PyTree] = None, mask=None):
        # a stateless caller's () state (the stage before it kept Knobs) keeps the configured norm
        bound = state.get("dp_clip") if isinstance(state, Knobs) else clip_norm
        if params is None:
            return clip_updates(updates, bound)[0], state
        delta = jax.tree.map(lambda u, p: u - p, updates, params)
        clipped, _ = clip_updates(delta, bound)
        return jax.tree.map(lambda d, p: p + d, clipped, params), state

    return Aggregator(init=lambda params: Knobs({"dp_clip": jnp.float32(clip_norm)}), aggregate=aggregate,
                      kind="per_client")


def gaussian_noise(noise_multiplier: float, clip_norm: float) -> Aggregator:
    """Server: adds N(0, (z C / m)^2) to every coordinate of the mean, z = the state's Knobs
    "dp_noise" and C = "dp_clip" (initially noise_multiplier and clip_norm, both traced), m = the
    clients that took part (`mask`, else the length of `weights`): the noise of a uniform mean of m
    updates clipped to C. One key per leaf, split from the stage's key.

    Args:
        noise_multiplier: z, the noise's standard deviation in units of the sensitivity, >= 0.
        clip_norm: the clipping norm the updates were clipped to, > 0.

    Returns:
        An `Aggregator` of kind "server" (`[...] -> [...]`).

    Raises:
        ValueError: `noise_multiplier` < 0 or `clip_norm` not > 0.
    """
    if noise_multiplier < 0 or not clip_norm > 0:
        raise ValueError(f"gaussian_noise: needs noise_multiplier >= 0 and clip_norm > 0, got "
                         f"{noise_multiplier}, {clip_norm}")

    def aggregate(state: Knobs, agg: PyTree, weights: jax.Array, key: jax.Array, *, params=None,
                  mask: Optional[jax.Array] = None):
        m = weights.shape[0] if mask is None else jnp.maximum(mask.sum(), 1).astype(jnp.float32)
        z, c = (state.get("dp_noise"), state.get("dp_clip")) if isinstance(state, Knobs) else (noise_multiplier,
                                                                                              clip_norm)
        std = z * c / m
        leaves, treedef = jax.tree.flatten(agg)
        keys = jax.random.split(key, len(leaves))
        return jax.tree.unflatten(treedef, [x + (std * jax.random.normal(k, x.shape, x.dtype)).astype(x.dtype)
                                            for x, k in zip(leaves, keys)]), state

    init = lambda params: Knobs({"dp_noise": jnp.float32(noise_multiplier), "dp_clip": jnp.float32(clip_norm)})
    return Aggregator(init=init, aggregate=aggregate, kind="server")


def dp_fedavg(clip_norm: float, noise_multiplier: float, reduce: Optional[Aggregator] = None,
              traced: bool = False) -> Aggregator:
    """DP-FedAvg's server step (see the module docstring).

    Args:
        clip_norm: the per-client clipping norm, > 0.
        noise_multiplier: z, >= 0; 0 leaves the noise stage out (clipping and the uniform mean only)
            unless `traced`.
        reduce: the uniform mean to use (default `mean("uniform")`; e.g. `secure_mean("uniform")`).
        traced: keep the noise stage even at z = 0, so a sweep can set z > 0 in the same program.

    Returns:
        `chain(clip(clip_norm), reduce, gaussian_noise(noise_multiplier, clip_norm))`, an
        `Aggregator` of kind "reduce".

    Raises:
        ValueError: `clip_norm` not > 0 or `noise_multiplier` < 0.
    """
    stages = [clip(clip_norm), mean("uniform") if reduce is None else reduce]
    if noise_multiplier > 0 or traced:
        stages.append(gaussian_noise(noise_multiplier, clip_norm))
    return chain(*stages)


def private_mean(updates: PyTree, key: jax.Array, clip_norm: float, noise_multiplier: float) -> PyTree:
    """DP-FedAvg's release of client updates [m, ...] in one call: `dp_fedavg`'s aggregate of the
    updates (params None: they are changes), i.e. the uniform mean of the clipped updates plus
    N(0, (noise_multiplier * clip_norm / m)^2) per coordinate.

    Args:
        updates: a pytree of `[m, ...]` leaves, the m clients' model changes.
        key: the PRNG key of the noise.
        clip_norm: the per-client clipping norm, > 0.
        noise_multiplier: z, >= 0 (0: no noise).

    Returns:
        The released mean, a pytree of `[...]` leaves.

    Raises:
        ValueError: `clip_norm` not > 0 or `noise_multiplier` < 0.
    """
    agg = dp_fedavg(clip_norm, noise_multiplier)
    m = jax.tree.leaves(updates)[0].shape[0]
    out, _ = agg.aggregate(agg.init(None), updates, jnp.ones((m,), jnp.float32), key)
    return out
