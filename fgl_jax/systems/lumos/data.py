"""Host-side preparation of Lumos (once per run): features, split, trimming, trees, LDP inputs.

Module A of the paper (workload trimming: greedy Alg. 1 + MCMC Alg. 2, or the exact flow optimum;
per-device trees) and the inputs of Module B's one-bit LDP encoder, assembled into `LumosData`,
the device arrays the jitted epoch reads. Features (spec A4): min-max scaled to [0, 1] with
dataset-wide (public) bounds; Facebook uses its 128 most frequent binary MUSAE features (d = 128
as in the paper). Splits (paper §VIII): 50/25/25 random nodes, 80/5/15 random edges.
"""
from __future__ import annotations

import dataclasses
import functools
import math
import time
from typing import Optional

import flax
import jax
import jax.numpy as jnp
import numpy as np
import scipy.sparse as sp

from fgl_jax.graph import Graph
from fgl_jax.partition.edges import EdgeSplit
from fgl_jax.privacy import onebit
from fgl_jax.systems.lumos import workload as wlmod
from fgl_jax.systems.lumos.config import LumosConfig
from fgl_jax.systems.lumos.trees import TreeBatch, TreeMeta, build_trees

FEATURE_DIM = 128                      # d of the paper's features (spec A4)
NODE_SPLIT = (0.5, 0.25, 0.25)         # train / val / test vertices (paper §VIII)
EDGE_SPLIT = (0.8, 0.05, 0.15)         # train / val / test edges (PyG train_test_split_edges)


@flax.struct.dataclass
class LumosData:
    """Everything the jitted epoch needs (device arrays).

    table: float32 [N + P + 1, d] feature table (trees.py), or None when `ldp` is set (the table
    is then encoded inside the program from the traced state.hp["epsilon"], see `ldp_table`).
    trees: TreeBatch.
    y: int32 [N] labels for training/validation; y_test: int32 [N] labels for test.
    train/val/test_mask: bool [N]. pos: int32 [Q, 2] training pairs (u, v in N_u) for the link loss.
    val_pairs / test_pairs: int32 [K, 2]; val_label / test_label: float32 [K] (1 edge, 0 non-edge).
    """

    table: jax.Array
    trees: TreeBatch
    y: jax.Array
    y_test: jax.Array
    train_mask: jax.Array
    val_mask: jax.Array
    test_mask: jax.Array
    pos: jax.Array
    val_pairs: jax.Array
    val_label: jax.Array
    test_pairs: jax.Array
    test_label: jax.Array
    ldp: Optional["LdpInputs"] = None


@flax.struct.dataclass
class LdpInputs:
    """What the one-bit encoder needs to build the feature table inside the program.

    x: float32 [N, d] own features in [a, b] = [0, 1]; pair_src / recipient_bin: int32 [P]
    (TreeMeta); num_bins: int32 [N] B(u). budget / rescale: static encoder options.
    """

    x: jax.Array
    pair_src: jax.Array
    recipient_bin: jax.Array
    num_bins: jax.Array
    budget: str = flax.struct.field(pytree_node=False, default="per-recipient")
    rescale: bool = flax.struct.field(pytree_node=False, default=False)
    prior_var: Optional[float] = flax.struct.field(pytree_node=False, default=None)
    encoder: str = flax.struct.field(pytree_node=False, default="paper")


def minmax_scale(x) -> np.ndarray:
    """Per-dimension min-max scaling to [0, 1] with dataset-wide bounds, treated as public (spec A4).
    A constant dimension (min = max) has no range; it is mapped to 0 (documented rule)."""
    x = np.asarray(x.todense() if sp.issparse(x) else x, np.float32)
    lo, hi = x.min(0), x.max(0)
    rng = np.where(hi > lo, hi - lo, 1.0)
    return np.where(hi > lo, (x - lo) / rng, 0.0).astype(np.float32)


def top_frequent_features(x, dim: int = 128) -> np.ndarray:
    """The `dim` most frequent columns of binary bag-of-words features, dense float32 [N, dim].

    Stand-in for PyG's 128-dim MUSAE features (not available offline; spec A4 uses d = 128), so
    the per-coordinate LDP budget eps*B/d matches the paper's setting. Binary features already lie
    in [a, b] = [0, 1], the natural domain of the one-bit mechanism. Column frequencies are
    dataset-wide statistics treated as public, like the min-max bounds of spec A4. (A 128-dim SVD
    min-max scaled gave a centralised GCN only ~0.52 accuracy on Facebook vs ~0.88 with these.)
    """
    xs = sp.csr_matrix(x)
    if dim >= xs.shape[1]:
        return np.asarray(xs.todense(), np.float32)
    freq = np.asarray(xs.sum(0)).ravel()
    top = np.sort(np.argsort(-freq, kind="stable")[:dim])
    return np.asarray(xs[:, top].todense(), np.float32)


def reduce_features(x, dim: int = 128, seed: int = 0, power_iters: int = 2) -> np.ndarray:
    """Rank-`dim` randomized SVD (Halko et al. 2011) of (sparse) features: U_k S_k [N, dim].

    Stand-in for PyG's 128-dim MUSAE features (not available offline; spec A4 uses 128 dims), so
    the LDP budget per coordinate matches the paper's setting (d = 128). Computed once,
    dataset-wide, like the public min-max bounds. Returns x unchanged (dense) if dim >= its width.
    """
    x = sp.csr_matrix(x, dtype=np.float64)
    if dim >= min(x.shape):
        return np.asarray(x.todense(), np.float32)
    rng = np.random.default_rng(seed)
    q, _ = np.linalg.qr(x @ rng.normal(size=(x.shape[1], dim + 16)))
    for _ in range(power_iters):
        q, _ = np.linalg.qr(x.T @ q)
        q, _ = np.linalg.qr(x @ q)
    u, s, _ = np.linalg.svd(np.asarray((x.T @ q).T), full_matrices=False)
    return (q @ u[:, :dim] * s[:dim]).astype(np.float32)


@dataclasses.dataclass
class Prepared:
    data: LumosData
    meta: TreeMeta
    edges: wlmod.EdgeSet
    keep: np.ndarray
    info: dict


def select_neighbours(es: wlmod.EdgeSet, cfg: LumosConfig) -> tuple[np.ndarray, dict]:
    """Module A1-A2: keep [2M] and statistics for the configured trimming."""
    info: dict = {}
    t0 = time.perf_counter()
    if cfg.trim == "none":
        keep = wlmod.no_trim(es)
    elif cfg.trim == "exact":
        f, keep = wlmod.exact_min_max(es)
        info["exact_opt"] = f
    else:
        keep, comp = wlmod.greedy_init(es, cfg.greedy_rule)
        info["greedy_max"] = wlmod.max_workload(es, keep)
        info["greedy_comparisons"] = comp.calls
        info["greedy_comparison_bits"] = comp.bits
        if cfg.trim == "mcmc":
            res = wlmod.mcmc_trim(es, keep, cfg.chain_length, seed=cfg.split_seed, always_accept=cfg.always_accept,
                                  argmax=cfg.mcmc_argmax)
            keep = res.keep
            info.update(mcmc_accepted=res.accepted, mcmc_comparisons=res.comparisons,
                        mcmc_comparison_bits=res.comparison_bits,
                        f_history=res.f_history.tolist())
    info["trim_seconds"] = time.perf_counter() - t0
    info["workload"] = wlmod.workload_stats(es, keep)
    return keep, info


def prepare(graph: Graph, cfg: LumosConfig, edge_split: Optional[EdgeSplit] = None,
            x_scaled: Optional[np.ndarray] = None, encode: str = "host") -> Prepared:
    """Host-side, once: scale features, trim, build trees, LDP-encode, assemble LumosData.

    graph: labelled graph with masks (node task) or any graph plus `edge_split` (link task; the
    trees, degrees and MCMC then use training edges only, spec A16). x_scaled: features already
    in [0, 1] (skips `minmax_scale`). encode="host": the LDP table is drawn here once with key
    fold_in(key(cfg.seed), 1); encode="program": data.ldp holds the encoder inputs and the
    algorithm draws the table from its own key and the traced state.hp["epsilon"] (sweepable).
    """
    if encode not in ("host", "program"):
        raise ValueError(f"prepare: encode must be 'host' or 'program', got {encode!r}")
    t0 = time.perf_counter()
    if cfg.task == "link" and edge_split is None:
        raise ValueError("prepare: task='link' needs an edge_split (fgl_jax.partition.edges.random_edge_split)")
    n = graph.num_nodes
    x = minmax_scale(graph.x) if x_scaled is None else np.asarray(x_scaled, np.float32)
    if x.shape[0] != n:
        raise ValueError(f"prepare: x_scaled has {x.shape[0]} rows, graph has {n} nodes")
    if cfg.task == "link":
        s, r = edge_split.train_directed()
        es = wlmod.EdgeSet.from_arrays(s, r, n)
    else:
        es = wlmod.EdgeSet.from_graph(graph)
    keep, info = select_neighbours(es, cfg)
    t1 = time.perf_counter()
    trees, meta = build_trees(es, keep, x.shape[1], kind=cfg.tree, bins=cfg.bins)
    info["tree_seconds"] = time.perf_counter() - t1
    t2 = time.perf_counter()
    key = jax.random.fold_in(jax.random.key(cfg.seed), 1)
    # public prior for the optional MMSE shrinkage: mean per-dimension variance (dataset-wide, like A4's bounds)
    prior_var = max(float(x.var(0).mean()), 1e-6) if cfg.denoise == "mmse" else None
    info["prior_var"] = prior_var
    ldp = None
    if encode == "program":
        ldp = LdpInputs(jnp.asarray(x), jnp.asarray(meta.pair_src, jnp.int32), jnp.asarray(meta.recipient_bin, jnp.int32),
                        jnp.asarray(np.minimum(meta.num_bins, x.shape[1]), jnp.int32), cfg.budget, cfg.rescale,
                        prior_var, cfg.encoder)
        table = None
        info["eps_coord_mean"] = float(np.mean(onebit.coordinate_budget(cfg.epsilon, meta.num_bins, x.shape[1],
                                                                        cfg.budget)))
    elif math.isinf(cfg.epsilon):
        nbr_x = jnp.asarray(x)[jnp.asarray(meta.pair_src, jnp.int32)]
        info["eps_coord_mean"] = float("inf")
    elif cfg.encoder == "authors-code":
        nbr_x = onebit.authors_code_encode(key, jnp.asarray(x), jnp.asarray(meta.pair_src, jnp.int32), cfg.epsilon,
                                           x.shape[1])
        info["eps_coord_mean"] = float(np.mean(onebit.authors_code_epsilon(cfg.epsilon, meta.pair_src, x.shape[0], 1)))
    else:
        nbr_x, eps_coord = onebit.onebit_ldp(key, x, meta.num_bins, meta.pair_src, meta.recipient_bin, cfg.epsilon,
                                             0.0, 1.0, budget=cfg.budget, rescale=cfg.rescale, prior_var=prior_var)
        info["eps_coord_mean"] = float(jnp.mean(eps_coord))
    if encode == "host":
        table = jnp.concatenate([jnp.asarray(x), nbr_x, jnp.zeros((1, x.shape[1]), jnp.float32)])
        table.block_until_ready()
    info["ldp_seconds"] = time.perf_counter() - t2
    info["ldp_accounting"] = ldp_accounting(meta, x.shape[1], cfg.epsilon, cfg.budget, cfg.encoder)
    info["prepare_seconds"] = time.perf_counter() - t0
    info["tree_nodes"] = meta.num_real_nodes
    info["tree_nodes_padded"] = trees.num_nodes
    info["messages"] = message_counts(es, keep, cfg.task)
    y = jnp.asarray(np.maximum(graph.y, 0), jnp.int32)
    if cfg.task == "link":
        pos = np.stack([es.owner[keep], es.nbr[keep]], 1)
        vp = np.concatenate([edge_split.val_pos, edge_split.val_neg])
        tp = np.concatenate([edge_split.test_pos, edge_split.test_neg])
        vl = np.concatenate([np.ones(len(edge_split.val_pos)), np.zeros(len(edge_split.val_neg))])
        tl = np.concatenate([np.ones(len(edge_split.test_pos)), np.zeros(len(edge_split.test_neg))])
    else:
        pos = np.zeros((1, 2), np.int64)
        vp = tp = np.zeros((1, 2), np.int64)
        vl = tl = np.zeros(1)
    labelled = graph.y >= 0
    data = LumosData(table=table, trees=trees, y=y, y_test=y,
                     train_mask=jnp.asarray(graph.train_mask & labelled), val_mask=jnp.asarray(graph.val_mask & labelled),
                     test_mask=jnp.asarray(graph.test_mask & labelled),
                     pos=jnp.asarray(pos, jnp.int32), val_pairs=jnp.asarray(vp, jnp.int32),
                     val_label=jnp.asarray(vl, jnp.float32), test_pairs=jnp.asarray(tp, jnp.int32),
                     test_label=jnp.asarray(tl, jnp.float32), ldp=ldp)
    return Prepared(data, meta, es, keep, info)


def ldp_accounting(meta: TreeMeta, d: int, eps: float, budget: str, encoder: str = "paper") -> dict:
    """The budget each recipient of a device's features realises (onebit.recipient_epsilon), over
    all (sender, recipient) pairs: max and mean, also relative to eps (eps-free: the realised budget
    is linear in eps, so the ratios hold for every eps of a sweep). Empty pair set: zeros.
    encoder="authors-code": onebit.authors_code_epsilon, d * exp(eps / m_u) per pair (not linear in
    eps), and the exact leak of each sender's feature minimum and maximum stated beside it."""
    if encoder == "authors-code":
        real = onebit.authors_code_epsilon(eps, meta.pair_src, len(meta.num_bins), d)
        if real.size == 0:
            real = np.zeros(1)
        return {"encoder": encoder, "pairs": int(len(meta.pair_src)), "eps": float(eps),
                "eps_recipient_max": float(real.max()), "eps_recipient_mean": float(real.mean()),
                "eps_recipient_max_over_eps": float(real.max() / eps), "eps_recipient_mean_over_eps":
                float(real.mean() / eps), "recipients_over_eps": int(np.sum(real > eps * (1 + 1e-9))),
                "also_revealed": "each recipient's view gives the sender's feature minimum and maximum exactly"}
    num_bins = np.minimum(meta.num_bins, d)
    rel = onebit.recipient_epsilon(1.0, num_bins, meta.pair_src, meta.recipient_bin, d, budget)
    if rel.size == 0:
        rel = np.zeros(1)
    return {"budget": budget, "pairs": int(len(meta.pair_src)), "eps": float(eps),
            "eps_recipient_max": float(eps * rel.max()), "eps_recipient_mean": float(eps * rel.mean()),
            "eps_recipient_max_over_eps": float(rel.max()), "eps_recipient_mean_over_eps": float(rel.mean()),
            "recipients_over_eps": int(np.sum(rel > 1.0 + 1e-9))}


def message_counts(es: wlmod.EdgeSet, keep: np.ndarray, task: str) -> dict:
    """Device-to-device messages per device per epoch (spec A12): forward leaf embeddings
    (one per kept half-edge, sent by the tree's owner to the leaf's device), plus in the link task
    one embedding request per positive and per negative pair. Also the untrimmed reference."""
    n = max(1, es.num_nodes)
    fwd = int(keep.sum())
    full = 2 * es.num_edges
    extra = 2 * fwd if task == "link" else 0
    extra_full = 2 * full if task == "link" else 0
    # untrimmed baseline messages for the saving; negative requests are not trimmed (spec §6)
    return {"forward_per_device": fwd / n, "total_per_device": (fwd + extra) / n,
            "untrimmed_total_per_device": (full + extra_full) / n,
            "saving_vs_untrimmed": 1.0 - (fwd + extra) / max(1, full + extra_full)}


@functools.lru_cache(maxsize=2)
def load_features(dataset: str, data_dir: Optional[str] = None) -> tuple[Graph, np.ndarray]:
    """(graph, features in [0, 1]) as the paper's cells use them (cached: the cells of one
    dataset load it once; callers must not modify the arrays).

    facebook: the 128 most frequent binary MUSAE features (PyG's 128-dim features are not available
    offline); lastfm_asia: the loader's features, min-max scaled; any other registered dataset: its
    features (reduced to 128 dims by randomized SVD when sparse and wider), min-max scaled.
    """
    if dataset == "facebook":
        from fgl_jax.data.musae import load_facebook
        g = load_facebook(data_dir)
        return g, minmax_scale(top_frequent_features(g.x, FEATURE_DIM))
    if dataset == "lastfm_asia":
        from fgl_jax.data.musae import load_lastfm_asia
        g = load_lastfm_asia(data_dir)
        return g, minmax_scale(g.x)
    from fgl_jax.data import load_graph
    g = load_graph(dataset, data_dir=data_dir)
    x = g.x
    if min(x.shape) > FEATURE_DIM and not isinstance(x, np.ndarray):
        x = reduce_features(x, FEATURE_DIM)
    return g, minmax_scale(x)


def split(graph: Graph, task: str, seed: int, keep_nodes: bool = False) -> tuple[Graph, Optional[EdgeSplit]]:
    """The paper's splits with one seed: node masks 50/25/25 (unless `keep_nodes`: the graph's own
    masks), and for the link task edges 80/5/15."""
    from fgl_jax.data.splits import random_split
    from fgl_jax.partition.edges import random_edge_split
    g = graph if keep_nodes else random_split(graph, *NODE_SPLIT, seed=seed)
    es = random_edge_split(g.senders, g.receivers, g.num_nodes, *EDGE_SPLIT, seed=seed) if task == "link" else None
    return g, es


