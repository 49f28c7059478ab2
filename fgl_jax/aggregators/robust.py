"""Byzantine-robust aggregation over the client axis, as aggregators (`fgl_jax.aggregators.base`).

    median()                 coordinate-wise median (Yin et al., ICML 2018)
    trimmed_mean(beta)       coordinate-wise: drop the floor(beta n) largest and smallest values, the
                             weighted mean of the rest (Yin et al.); beta = 0 is FedAvg's weighted mean
    krum(f)                  the upload closest to its n - f - 2 nearest others (Blanchard et al., 2017)
    multi_krum(f, m)         the weighted mean of the m uploads of best Krum score (m = 0: n - f)
    bulyan(f)                n - 2f uploads chosen by Krum one at a time, then per coordinate the mean
                             of the n - 4f values closest to their median (El Mhamdi et al., ICML 2018)
    norm_bound(clip)         per client: the update clipped to L2 norm clip (Sun et al., 2019)
    geometric_median(T, nu)  T Weiszfeld steps from the weighted mean, distances floored at nu
                             (Pillutla et al.'s RFA)

All are "reduce" aggregators except `norm_bound` ("per_client"). n is the number of clients that
count this round: those in `mask` (all when None) with a positive weight (a zero-weight client is
sharding's padding, or a client without training nodes). Shapes stay static: a masked client's
values are pushed to +inf before a sort, so the n valid ones come first, and the positions are
compared with traced counts (n, floor(beta n)). So the trim level, the clipping norm and the
participating set are traced values; f and m are static (Python ints).

The trim level and the clipping norm live in the stage's state as `Knobs` (`fgl_jax.aggregators.knobs`),
under the config names "aggregator_trim" and "aggregator_clip", so a run can set them from `state.hp`.
Distances for Krum and Bulyan are taken between whole uploads (every leaf); an upload minus the
server model has the same distances, so models and model changes select alike.
"""
from __future__ import annotations

from typing import Any, Optional

import jax
import jax.numpy as jnp
from jax import lax

from fgl_jax.aggregators.base import Aggregator, stateless
from fgl_jax.aggregators.knobs import Knobs
from fgl_jax.privacy.dp import clip_updates

PyTree = Any


def valid_clients(weights: jax.Array, mask: Optional[jax.Array]) -> jax.Array:
    """bool [C]: the clients that count (in `mask`, or all, and of positive weight)."""
    ok = weights > 0
    return ok if mask is None else ok & mask.astype(bool)


def _clients_last(x: jax.Array) -> jax.Array:
    """x [C, ...] as [..., C] (the sorts and comparisons below run along the minor axis)."""
    return jnp.moveaxis(x, 0, -1)


# Up to this many clients, order statistics come from all C^2 comparisons per coordinate instead of
# a sort: XLA's CPU sort calls a comparator per element pair (the median of [10, 1433 x 64] took
# ~700 ms by sort and ~1.3 ms by comparisons in a one-off check on the loaded 2-core machine); at 100
# clients the sort was ~2x faster than a comparison loop. 16 sits between the two, untuned.
RANK_BY_COMPARISON = 16


def client_ranks(xt: jax.Array, valid: jax.Array) -> jax.Array:
    """int32 [..., C]: each value's position in the ascending order of the valid values along the last
    (client) axis of xt [..., C], ties broken by the client index; C for an invalid client. Built from
    the C x C comparisons (for C <= RANK_BY_COMPARISON)."""
    c = xt.shape[-1]
    a, b = xt[..., :, None], xt[..., None, :]  # [..., i, j]: value i against value j
    idx = jnp.arange(c)
    before = (b < a) | ((b == a) & (idx[None, :] < idx[:, None]))
    r = jnp.sum(before & valid[None, :], axis=-1, dtype=jnp.int32)
    return jnp.where(valid, r, c)


def masked_median(x: jax.Array, valid: jax.Array) -> jax.Array:
    """The coordinate-wise median of the valid rows of x [C, ...] (the mean of the two middle
    values when their count n is even); zeros when n = 0."""
    xt = _clients_last(x)
    n = valid.sum()
    lo = jnp.maximum((n - 1) // 2, 0)
    hi = jnp.maximum(n // 2, 0)
    if x.shape[0] <= RANK_BY_COMPARISON:
        r = client_ranks(xt, valid)
        med = 0.5 * (jnp.sum(jnp.where(r == lo, xt, 0.0), axis=-1) + jnp.sum(jnp.where(r == hi, xt, 0.0), axis=-1))
    else:
        xs = jnp.sort(jnp.where(valid, xt, jnp.inf), axis=-1)  # invalid clients last (+inf)
        pick = lambda i: lax.dynamic_index_in_dim(xs, i, xs.ndim - 1, keepdims=False)
        med = 0.5 * (pick(lo) + pick(hi))
    return jnp.where(n > 0, med, jnp.zeros_like(med))


def median() -> Aggregator:
    """Reduce `[C, ...]` -> `[...]`: the coordinate-wise median over the clients that count (unweighted).

    Returns:
        A stateless `Aggregator` of kind "reduce" (clients outside `mask` or of weight 0 left out).
    """

    def fn(updates: PyTree, weights: jax.Array, key, *, params=None, mask=None):
        valid = valid_clients(weights, mask)
        return jax.tree.map(lambda x: masked_median(x, valid), updates)

    return stateless(fn, "reduce")


def masked_trimmed_mean(x: jax.Array, weights: jax.Array, valid: jax.Array, beta: jax.Array) -> jax.Array:
    """Per coordinate of x [C, ...]: the k = floor(beta n) smallest and k largest of the n valid values
    dropped, the rest averaged with their clients' weights [C]. beta in [0, 0.5)."""
    n = valid.sum()
    k = jnp.floor(beta * n).astype(n.dtype)
    xt = _clients_last(x)
    if x.shape[0] <= RANK_BY_COMPARISON:
        pos, xs, ws = client_ranks(xt, valid), xt, weights.astype(x.dtype)
    else:  # the values sorted with their clients' weights alongside (one sort, no gather); invalid last
        xs, ws = lax.sort((jnp.where(valid, xt, jnp.inf), jnp.broadcast_to(weights.astype(x.dtype), xt.shape)),
                          dimension=xt.ndim - 1, num_keys=1, is_stable=True)
        pos = jnp.arange(x.shape[0])
    keep = (pos >= k) & (pos < n - k)
    w = jnp.where(keep, ws, 0.0)
    return jnp.sum(jnp.where(keep, xs, 0.0) * w, axis=-1) / jnp.maximum(jnp.sum(w, axis=-1), 1e-12)


def trimmed_mean(beta: float = 0.1) -> Aggregator:
    """Reduce `[C, ...]` -> `[...]`: the coordinate-wise trimmed mean (see `masked_trimmed_mean`).

    Args:
        beta: the fraction trimmed at each end, in [0, 0.5); the state's Knobs "aggregator_trim"
            (traced, so a sweep varies it in one program) starts at it.

    Returns:
        An `Aggregator` of kind "reduce"; trim 0 is FedAvg's weighted mean.
    """
    if not 0 <= beta < 0.5:
        raise ValueError(f"trimmed_mean: beta (the fraction trimmed on each side) must be in [0, 0.5), got {beta}")

    def aggregate(state: Knobs, updates: PyTree, weights: jax.Array, key, *, params=None, mask=None):
        valid = valid_clients(weights, mask)
        b = state.get("aggregator_trim")
        return jax.tree.map(lambda x: masked_trimmed_mean(x, weights, valid, b), updates), state

    return Aggregator(init=lambda params: Knobs({"aggregator_trim": jnp.float32(beta)}), aggregate=aggregate,
                      kind="reduce")


def pairwise_sq_distances(updates: PyTree) -> jax.Array:
    """float32 [C, C]: ||u_i - u_j||^2 over every leaf (from Gram matrices; clipped at 0)."""
    flat = [jnp.reshape(x, (x.shape[0], -1)).astype(jnp.float32) for x in jax.tree.leaves(updates)]
    gram = sum(a @ a.T for a in flat)
    sq = jnp.diag(gram)
    return jnp.maximum(sq[:, None] + sq[None, :] - 2.0 * gram, 0.0)


def krum_scores(dist: jax.Array, valid: jax.Array, f: int) -> jax.Array:
    """float [C]: client i's Krum score, the sum of its n - f - 2 smallest squared distances to the
    other valid clients (at least one); +inf for invalid clients. dist [C, C]."""
    c = dist.shape[0]
    n = valid.sum()
    others = valid[None, :] & valid[:, None] & ~jnp.eye(c, dtype=bool)
    d = jnp.sort(jnp.where(others, dist, jnp.inf), axis=1)
    count = jnp.maximum(n - f - 2, 1)
    near = jnp.arange(c)[None, :] < count
    score = jnp.sum(jnp.where(near, d, 0.0), axis=1)
    return jnp.where(valid, score, jnp.inf)


def _check_f(name: str, c: int, f: int, need: int) -> None:
    # shapes are static: the client count is known when the round is traced
    if c < need:
        raise ValueError(f"{name}: needs at least {need} clients per round for f={f} assumed attackers, "
                         f"got {c}; lower --aggregator-f or use more clients")


def _check_f_value(name: str, f: int) -> None:
    if isinstance(f, bool) or not isinstance(f, int) or f < 0:
        raise ValueError(f"{name}: f (assumed attackers) must be an integer >= 0, got {f!r}")


def _weighted_mean_of(updates: PyTree, w: jax.Array) -> PyTree:
    w = w / jnp.maximum(w.sum(), 1e-12)
    return jax.tree.map(lambda x: jnp.tensordot(w.astype(x.dtype), x, axes=1), updates)


def multi_krum(f: int = 1, m: int = 0) -> Aggregator:
    """Reduce `[C, ...]` -> `[...]`: the weighted mean of the min(m, n) valid uploads with the lowest
    Krum scores (`krum_scores`).

    Args:
        f: the number of attackers assumed (static).
        m: how many uploads to keep; 0 keeps n - f.

    Returns:
        An `Aggregator` of kind "reduce"; a round with fewer than 2f + 3 clients is refused in one line.

    Raises:
        ValueError: a negative f or m.
    """
    _check_f_value("multi_krum", f)
    if isinstance(m, bool) or not isinstance(m, int) or m < 0:
        raise ValueError(f"multi_krum: m (uploads selected) must be an integer >= 0 (0 = n - f), got {m!r}")

    def fn(updates: PyTree, weights: jax.Array, key, *, params=None, mask=None):
        c = weights.shape[0]
        _check_f("krum" if m == 1 else "multi_krum", c, f, 2 * f + 3)
        valid = valid_clients(weights, mask)
        score = krum_scores(pairwise_sq_distances(updates), valid, f)
        rank = jnp.argsort(jnp.argsort(score))  # ties: the lower index first
        n = valid.sum()
        take = jnp.minimum(m, n) if m else jnp.maximum(n - f, 1)
        chosen = (rank < take) & valid
        return _weighted_mean_of(updates, jnp.where(chosen, weights, 0.0))

    return stateless(fn, "reduce")


def krum(f: int = 1) -> Aggregator:
    """Reduce `[C, ...]` -> `[...]`: the one valid upload of lowest Krum score (`multi_krum` with m = 1).

    Args:
        f: the number of attackers assumed (static); a round needs at least 2f + 3 clients.

    Returns:
        An `Aggregator` of kind "reduce".
    """
    return multi_krum(f, 1)


def bulyan_selection(dist: jax.Array, valid: jax.Array, f: int) -> jax.Array:
    """bool [C]: the theta = n - 2f clients Bulyan's first stage picks, one at a time, each the Krum
    winner (`krum_scores`) among the valid clients not yet picked."""
    c = dist.shape[0]
    theta = valid.sum() - 2 * f

    def step(t, chosen):
        left = valid & ~chosen
        pick = jnp.argmin(krum_scores(dist, left, f))
        return chosen.at[pick].set(chosen[pick] | (t < theta))

    return lax.fori_loop(0, max(c - 2 * f, 0), step, jnp.zeros((c,), bool))


def bulyan(f: int = 1) -> Aggregator:
    """Reduce `[C, ...]` -> `[...]`: Bulyan over Krum. The theta = n - 2f clients of `bulyan_selection`,
    then per coordinate the uniform mean of the beta = theta - 2f of their values closest to the
    coordinate's median among them.

    Args:
        f: the number of attackers assumed (static); a round needs at least 4f + 3 clients.

    Returns:
        An `Aggregator` of kind "reduce".
    """
    _check_f_value("bulyan", f)

    def fn(updates: PyTree, weights: jax.Array, key, *, params=None, mask=None):
        c = weights.shape[0]
        _check_f("bulyan", c, f, 4 * f + 3)
        valid = valid_clients(weights, mask)
        chosen = bulyan_selection(pairwise_sq_distances(updates), valid, f)
        beta = jnp.maximum(chosen.sum() - 2 * f, 1)

        def closest_mean(x):
            med = masked_median(x, chosen)
            xt = _clients_last(x)
            gap = jnp.where(chosen, jnp.abs(xt - med[..., None]), jnp.inf)
            if c <= RANK_BY_COMPARISON:
                xs, keep = xt, client_ranks(gap, chosen) < beta
            else:  # the values sorted by their gap (stable: ties keep the lower client index first)
                _, xs = lax.sort((gap, xt), dimension=xt.ndim - 1, num_keys=1, is_stable=True)
                keep = jnp.arange(c) < beta
            return jnp.sum(jnp.where(keep, xs, 0.0), axis=-1) / beta.astype(x.dtype)

        return jax.tree.map(closest_mean, updates)

    return stateless(fn, "reduce")


def geometric_median(iters: int = 4, nu: float = 1e-6) -> Aggregator:
    """Reduce `[C, ...]` -> `[...]`: the weighted geometric median by `iters` Weiszfeld steps from the
    weighted mean: z <- sum_i a_i u_i / sum_i a_i, a_i = w_i / max(nu, ||u_i - z||) (norm over
    every leaf), w_i the weights of the valid clients.

    Args:
        iters: the Weiszfeld steps (static).
        nu: the smoothing floor of the distances, > 0.

    Returns:
        An `Aggregator` of kind "reduce".
    """
    if isinstance(iters, bool) or not isinstance(iters, int) or iters < 0:
        raise ValueError(f"geometric_median: iters must be an integer >= 0, got {iters!r}")
    if not nu > 0:
        raise ValueError(f"geometric_median: nu (the smoothing floor of the distances) must be > 0, got {nu}")

    def fn(updates: PyTree, weights: jax.Array, key, *, params=None, mask=None):
        w = jnp.where(valid_clients(weights, mask), weights, 0.0).astype(jnp.float32)

        def step(z, _):
            sq = sum(jnp.sum(jnp.reshape(x - zz, (x.shape[0], -1)).astype(jnp.float32) ** 2, axis=1)
                     for x, zz in zip(jax.tree.leaves(updates), jax.tree.leaves(z)))
            a = w / jnp.maximum(jnp.sqrt(sq), nu)
            return _weighted_mean_of(updates, a), None

        z, _ = lax.scan(step, _weighted_mean_of(updates, w), None, length=iters)
        return z

    return stateless(fn, "reduce")


def norm_bound(clip_norm: float = 1.0) -> Aggregator:
    """Per client `[C, ...]` -> `[C, ...]`: each update (upload - params, or the upload when params is
    None) scaled to L2 norm at most the state's Knobs "aggregator_clip", the norm over every leaf.

    Args:
        clip_norm: the initial clipping norm, > 0 (traced in the state, so a sweep varies it).

    Returns:
        An `Aggregator` of kind "per_client".
    """
    if not clip_norm > 0:
        raise ValueError(f"norm_bound: clip_norm must be > 0, got {clip_norm}")

    def aggregate(state: Knobs, updates: PyTree, weights, key, *, params=None, mask=None):
        bound = state.get("aggregator_clip")
        if params is None:
            return clip_updates(updates, bound)[0], state
        delta = jax.tree.map(lambda u, p: u - p, updates, params)
        clipped, _ = clip_updates(delta, bound)
        return jax.tree.map(lambda d, p: p + d, clipped, params), state

    return Aggregator(init=lambda params: Knobs({"aggregator_clip": jnp.float32(clip_norm)}), aggregate=aggregate,
                      kind="per_client")


def weak_noise(noise_multiplier: float = 0.0, clip_norm: float = 1.0) -> Aggregator:
    """Server `[...]` -> `[...]`: adds N(0, (z M / m)^2) per coordinate, z = the Knobs "aggregator_noise"
    and M = "aggregator_clip" (both traced), m = the clients that count: Sun et al.'s weak DP after a
    norm bound, with DP-FedAvg's scale. No privacy is accounted (the mean it follows is weighted).

    Args:
        noise_multiplier: the initial z, >= 0.
        clip_norm: the initial M, > 0.

    Returns:
        An `Aggregator` of kind "server".
    """
    if noise_multiplier < 0:
        raise ValueError(f"weak_noise: noise_multiplier must be >= 0, got {noise_multiplier}")

    def aggregate(state: Knobs, agg: PyTree, weights: jax.Array, key, *, params=None, mask=None):
        m = jnp.maximum(valid_clients(weights, mask).sum(), 1).astype(jnp.float32)
        std = state.get("aggregator_noise") * state.get("aggregator_clip") / m
        leaves, treedef = jax.tree.flatten(agg)
        keys = jax.random.split(key, len(leaves))
        return jax.tree.unflatten(treedef, [x + (std * jax.random.normal(k, x.shape, jnp.float32)).astype(x.dtype)
                                            for x, k in zip(leaves, keys)]), state

    init = lambda params: Knobs({"aggregator_noise": jnp.float32(noise_multiplier),
                                 "aggregator_clip": jnp.float32(clip_norm)})
    return Aggregator(init=init, aggregate=aggregate, kind="server")


# `--aggregator` choice -> the reduction it names ("mean" = the run's default, FedAvg's weighted mean)
ROBUST = ("mean", "median", "trimmed_mean", "krum", "multi_krum", "bulyan", "norm_bound", "geomed")


def by_name(name: str, *, trim: float = 0.1, f: int = 1, m: int = 0, clip: float = 1.0, noise: float = 0.0,
            iters: int = 4, nu: float = 1e-6) -> Optional[Aggregator]:
    """The reduce aggregator `name` (one of ROBUST) with its options; None for "mean" (the run keeps
    its default reduction). norm_bound is chain(norm_bound(clip), mean(), weak_noise(noise, clip))."""
    from fgl_jax.aggregators.base import chain
    from fgl_jax.aggregators.mean import mean
    if name == "mean":
        return None
    if name == "median":
        return median()
    if name == "trimmed_mean":
        return trimmed_mean(trim)
    if name == "krum":
        return krum(f)
    if name == "multi_krum":
        return multi_krum(f, m)
    if name == "bulyan":
        return bulyan(f)
    if name == "norm_bound":
        return chain(norm_bound(clip), mean(), weak_noise(noise, clip))
    if name == "geomed":
        return geometric_median(iters, nu)
    raise ValueError(f"aggregator must be one of {', '.join(ROBUST)}, got {name!r}")
