"""Node-level differential privacy for GNN training (after Daigavane, Madan, Sinha, Thakurta, Aggarwal &
Jain 2021, "Node-Level Differentially Private Graph Neural Networks"): bounded-degree edge sampling,
the sensitivity it gives per-node clipped gradients, and the accounting of the noised steps.

Node-level neighbouring graphs differ by one node with its features, label and every edge. In an
r-layer message-passing GNN a node u enters the loss terms of every node its messages reach within r
hops (u itself, its out-neighbours, theirs, ...), so with unbounded degrees one node moves
unboundedly many per-node gradient terms. The method:

1. **Bounded-degree sampling** (host side, once, from a seed that does not depend on the data):
   every node keeps at most K incoming edges (`bounded_in_degree`), and then at most K outgoing ones
   (the same on the reversed edges). Then u reaches at most K nodes per hop, so it appears in at
   most N_r = sum_{i=0}^{r} K^i of the r-hop computation graphs (`occurrence_bound`).
2. **Per-node gradient clipping**: each training node's gradient term is clipped to L2 norm C
   (`fgl_jax.privacy.dp.clipped_node_grad`).
3. **Gaussian noise** on the sum of the clipped terms: replacing one node changes at most N_r terms,
   each by at most 2C, so the sum's L2 sensitivity is Delta = 2 C N_r (`sensitivity`); the step
   adds N(0, (sigma Delta)^2 I), i.e. a Gaussian mechanism of noise multiplier sigma.

Accounting (`epsilons`): a client's T noised steps compose as T Gaussian mechanisms of multiplier
sigma (RDP a / (2 sigma^2) each, `fgl_jax.privacy.rdp`). Simplifications, stated in
docs/privacy.md: every training node is in every step (full batch), so no amplification by
subsampling is claimed (Daigavane et al. derive one for node mini-batches; it is not implemented);
the sampling's randomness is not used in the guarantee; a node is private within its client (its
client's steps are the mechanism; clients hold disjoint nodes, so the server's view composes in
parallel); with client sampling, T counts every round (an upper bound).

Shapes: E edges; `senders`/`receivers` int `[E]` (u -> v means v aggregates from u).
"""
from __future__ import annotations

import dataclasses
from typing import Any, Optional

import jax
import jax.numpy as jnp
import numpy as np

from fgl_jax.privacy import rdp

PyTree = Any

__all__ = ["bounded_in_degree", "bounded_degree_edges", "occurrence_bound", "sensitivity", "epsilons", "NodeDP",
           "describe"]


def bounded_in_degree(senders: np.ndarray, receivers: np.ndarray, max_degree: int, seed: int = 0) -> np.ndarray:
    """Which edges to keep so that every node has at most `max_degree` incoming edges: each node's
    incoming edges in a uniformly random order, the first max_degree kept.

    Args:
        senders: int `[E]`, edge sources.
        receivers: int `[E]`, edge targets.
        max_degree: K >= 1.
        seed: the sampling's seed.

    Returns:
        bool `[E]`: True for a kept edge.

    Raises:
        ValueError: K < 1 or senders and receivers of different shapes.
    """
    if int(max_degree) != max_degree or max_degree < 1:
        raise ValueError(f"node_dp: max_degree K must be an integer >= 1, got {max_degree!r}")
    s, r = np.asarray(senders), np.asarray(receivers)
    if s.shape != r.shape or s.ndim != 1:
        raise ValueError(f"node_dp: senders {s.shape} and receivers {r.shape} must be equal 1-d edge lists")
    if r.size == 0:
        return np.zeros(0, bool)
    u = np.random.default_rng(seed).random(r.size)
    order = np.lexsort((u, r))  # by receiver, random within one receiver
    sorted_r = r[order]
    first = np.searchsorted(sorted_r, sorted_r, side="left")  # where each receiver's run starts
    rank = np.arange(r.size) - first
    keep = np.zeros(r.size, bool)
    keep[order] = rank < max_degree
    return keep


def bounded_degree_edges(senders: np.ndarray, receivers: np.ndarray, max_degree: int, seed: int = 0
                         ) -> np.ndarray:
    """Edges to keep so every node has at most K incoming and at most K outgoing edges: the in-degree
    bound (`bounded_in_degree`), then the same on the reversed kept edges (which removes edges only,
    so the in-degree bound still holds).

    Args:
        senders: int `[E]`, edge sources.
        receivers: int `[E]`, edge targets.
        max_degree: K >= 1.
        seed: the sampling's seed (the two passes use seed and seed + 1).

    Returns:
        bool `[E]`: True for a kept edge.
    """
    keep = bounded_in_degree(senders, receivers, max_degree, seed)
    idx = np.flatnonzero(keep)
    out = bounded_in_degree(np.asarray(receivers)[idx], np.asarray(senders)[idx], max_degree, seed + 1)
    keep2 = np.zeros_like(keep)
    keep2[idx[out]] = True
    return keep2


def occurrence_bound(max_degree: int, layers: int) -> int:
    """N_r = sum_{i=0}^{r} K^i: the most r-hop computation graphs one node can be in when every node
    sends to at most K others (itself, then at most K^i nodes i hops on).

    Args:
        max_degree: K >= 1.
        layers: r >= 0, the GNN's message-passing layers.

    Returns:
        N_r as an int.
    """
    return int(sum(int(max_degree) ** i for i in range(int(layers) + 1)))


def sensitivity(clip: float, max_degree: int, layers: int) -> float:
    """L2 sensitivity of the sum of per-node gradient terms clipped to `clip` under replacing one node:
    2 C N_r (N_r terms change, each by at most 2C).

    Args:
        clip: C > 0, the per-node gradient clipping norm.
        max_degree: K >= 1.
        layers: r >= 0.

    Returns:
        Delta = 2 C N_r.
    """
    return 2.0 * float(clip) * occurrence_bound(max_degree, layers)


def epsilons(noise_multiplier: float, steps: int, delta: float) -> np.ndarray:
    """epsilon at `delta` after 1..steps noised full-batch steps (module docstring): T Gaussian
    mechanisms of multiplier sigma, accounted with `fgl_jax.privacy.rdp` (q = 1).

    Args:
        noise_multiplier: sigma >= 0 (noise std over the sensitivity).
        steps: T >= 1.
        delta: in (0, 1).

    Returns:
        float64 `[steps]`: the epsilon after each step (inf for sigma = 0).
    """
    return rdp.epsilons(noise_multiplier, 1.0, int(steps), delta)


@dataclasses.dataclass(frozen=True)
class NodeDP:
    """Node-level DP-SGD of a client's local steps: per-node gradients clipped to `clip`, then
    N(0, (sigma 2 C N_r / n)^2) per coordinate on the mean gradient (n training nodes), applied as
    parameter noise lr * that after each SGD step (the same as noising the SGD gradient).

    Attributes:
        clip: C > 0.
        noise_multiplier: sigma >= 0.
        max_degree: K >= 1, the degree bound the graph was sampled with.
        layers: r, the GNN's message-passing layers.
    """

    clip: float
    noise_multiplier: float
    max_degree: int
    layers: int
    mechanism: str = "gaussian"  # per-node L2 clipping (what `clipped_node_grad`'s caller reads)

    def __post_init__(self):
        if not self.clip > 0:
            raise ValueError(f"node_dp: clip must be > 0, got {self.clip}")
        if self.noise_multiplier < 0:
            raise ValueError(f"node_dp: noise multiplier must be >= 0, got {self.noise_multiplier}")
        if int(self.max_degree) != self.max_degree or self.max_degree < 1:
            raise ValueError(f"node_dp: max_degree must be an integer >= 1, got {self.max_degree}")

    def noise_scale(self, lr, n_train) -> jax.Array:
        """Std of the parameter noise after one SGD step of rate lr on n_train training nodes.

        Args:
            lr: the step's learning rate (may be traced).
            n_train: the client's training nodes (traced).

        Returns:
            lr * sigma * 2 C N_r / n_train.
        """
        return lr * self.noise_multiplier * sensitivity(self.clip, self.max_degree, self.layers) / \
            jnp.maximum(n_train, 1.0)

    def noise(self, key: jax.Array, params: PyTree, scale) -> PyTree:
        """params plus N(0, scale^2) per coordinate (one key per leaf).

        Args:
            key: PRNG key.
            params: the pytree after the step.
            scale: the std (`noise_scale`).

        Returns:
            The noised pytree.
        """
        leaves, treedef = jax.tree.flatten(params)
        keys = jax.random.split(key, len(leaves))
        return jax.tree.unflatten(treedef, [x + (scale * jax.random.normal(k, x.shape, jnp.float32)).astype(x.dtype)
                                            for x, k in zip(leaves, keys)])


def describe(cfg: NodeDP, steps: int, delta: float, sampled_edges: Optional[dict] = None) -> dict:
    """summary.json's statement of a node-level DP run (level, mechanism, sensitivity, epsilon).

    Args:
        cfg: the `NodeDP` settings.
        steps: T, the noised local steps a client takes over the run (rounds x local steps).
        delta: the delta of the guarantee.
        sampled_edges: {"before": E, "after": E'} of the degree sampling, if known.

    Returns:
        A JSON-ready dict.
    """
    eps = epsilons(cfg.noise_multiplier, steps, delta)
    out = {"level": "node", "mechanism": "per-node clipped gradients + Gaussian noise, full batch, "
                                         "replace one node (Daigavane et al. 2021, simplified: docs/privacy.md)",
           "max_degree": int(cfg.max_degree), "layers": int(cfg.layers),
           "occurrences": occurrence_bound(cfg.max_degree, cfg.layers), "clip": float(cfg.clip),
           "sensitivity": sensitivity(cfg.clip, cfg.max_degree, cfg.layers),
           "noise_multiplier": float(cfg.noise_multiplier), "steps": int(steps), "delta": float(delta),
           "epsilon": float(eps[-1]) if steps > 0 else 0.0, "accountant": "fgl_jax.privacy.rdp (integer orders)"}
    if sampled_edges is not None:
        out["edges"] = sampled_edges
    return out
