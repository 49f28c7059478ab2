"""FedHGL's host-side preparation of a run: pre-propagation X^{(N)} (Algorithm 1, lines 1–3) and
the per-client training rows.

`prepare(hg, cfg)` partitions the nodes (NumPy seed cfg.seed), propagates once (hyperedge
completion with optional LDP, Basic FedHGL's trimmed local hypergraphs, or Global) and gathers the
per-client train / val / test rows (spec §7.2) into the padded blocks `FedHGLData` the training
reads. The LDP noise is drawn with `preparation_key(cfg.seed)`, a stream of the run key
`jax.random.key(cfg.seed)` that the engine never uses (it splits the run key into an init key and a
round key: fold_in(key, 0) and fold_in(key, 1)).
"""
from __future__ import annotations

import dataclasses
import time
from typing import Optional

import flax
import jax
import jax.numpy as jnp
import numpy as np
import scipy.sparse as sp

from fgl_jax.data.hypergraph import Hypergraph
from fgl_jax.privacy.ldp import check_binary
from fgl_jax.schema import split_mode
from fgl_jax.systems.fedhgl import propagation as P
from fgl_jax.systems.fedhgl.clients import (ID_DTYPE, PAD, HypergraphSplit, _round_up, _to_global, build_basic_clients,
                                            build_hc_clients, client_features, partition_hypergraph,
                                            split_hypergraph)
from fgl_jax.systems.fedhgl.completion import auto_chunk, basic_propagation, hyperedge_completion
from fgl_jax.systems.fedhgl.config import FedHGLConfig

Array = jax.Array

# fold_in constant of the preparation stream (the engine uses fold_in 0 and 1: split(key))
PREPARATION_STREAM = 0x46484C   # "FHL"


def preparation_key(seed: int) -> Array:
    """The key of the host preparation's randomness (LDP noise) for a run with this seed."""
    return jax.random.fold_in(jax.random.key(int(seed)), PREPARATION_STREAM)


def resolve_mechanism(cfg: FedHGLConfig, hg: Hypergraph) -> str:
    """"auto" -> "rr" for binary features, "laplace" for numeric; checks RR's binary domain."""
    mech = cfg.mechanism
    if mech == "auto":
        mech = "rr" if hg.feature_kind == "binary" else "laplace"
    if mech == "rr":
        check_binary(hg.x, f"{hg.name} features")
    return mech


def propagate(split: HypergraphSplit, cfg: FedHGLConfig, key: Array, impl: str = "fast") -> tuple[np.ndarray, dict]:
    """The one-time pre-propagation of Algorithm 1, lines 1–3.

    Returns (X^{(N)} float32 [N, F] in global node order, info). impl "fast" (default): the host
    sparse computation of `fedhgl_prop` (X stays sparse until it fills in); "protocol": the explicit
    per-client message passing (`hyperedge_completion` / `basic_propagation`, jitted JAX), which the
    fast path is tested equal to. noise_propagation="first_hop" (an ablation) always uses "protocol".
    """
    if impl not in ("fast", "protocol"):
        raise ValueError(f"propagate: impl must be 'fast' or 'protocol', got {impl!r}")
    hg = split.hypergraph
    t0 = time.perf_counter()
    mech = resolve_mechanism(cfg, hg) if cfg.propagation == "hc" else "none"
    if cfg.propagation == "hc" and (impl == "protocol" or (cfg.noise_propagation == "first_hop" and mech != "none")):
        hc = build_hc_clients(split)
        x = jnp.asarray(client_features(split, hc.inc.num_nodes))
        out = hyperedge_completion(x, hc, key, cfg.hops, mech, float(cfg.eps), cfg.rr_variant, cfg.sensitivity,
                                   float(cfg.public_range), auto_chunk(cfg.feature_chunk, hc.inc.he_nodes.size, hg.num_features),
                                   cfg.noise_propagation)
        out = _to_global(split, np.asarray(jax.block_until_ready(out)))
    elif cfg.propagation == "basic" and impl == "protocol":
        inc = build_basic_clients(split)
        x = jnp.asarray(client_features(split, inc.num_nodes))
        out = basic_propagation(x, inc, cfg.hops, auto_chunk(cfg.feature_chunk, inc.he_nodes.size, hg.num_features))
        out = _to_global(split, np.asarray(jax.block_until_ready(out)))
    elif cfg.propagation == "hc":
        out = P.hc_propagate(split, cfg.hops, key, mech, float(cfg.eps), cfg.rr_variant, cfg.sensitivity,
                              float(cfg.public_range))
    elif cfg.propagation == "basic":
        xs = sp.csr_matrix(hg.x, dtype=np.float32) if sp.issparse(hg.x) else np.asarray(hg.x, np.float32)
        out = P.propagate_sparse(P.basic_operator(split), xs, cfg.hops)
    else:
        if split.clients != 1:
            raise ValueError("propagation='global' needs a one-client split")
        xs = sp.csr_matrix(hg.x, dtype=np.float32) if sp.issparse(hg.x) else np.asarray(hg.x, np.float32)
        out = P.propagate_sparse(P.global_operator(hg), xs, cfg.hops)
    return np.asarray(out, np.float32), {"propagation_seconds": time.perf_counter() - t0, "mechanism": mech}


def pre_communication(split: HypergraphSplit, cfg: FedHGLConfig, feature_dtype) -> dict:
    """Bytes of the one-time pre-propagation exchange (Algorithm 2), summed over the clients.

    Hyperedge completion, every hop: client k uploads, for each cross hyperedge it touches (E*_k),
    its partial sum [F] (Eq. 7; the perturbed vector for an unsafe upload, same size) tagged with
    the hyperedge id, and the server returns that hyperedge's total [F] (in the order asked, so no
    id). Dense rows of `feature_dtype` (the propagated features' dtype) and ids of
    `clients.ID_DTYPE`, as `completion.hyperedge_completion` moves them. Basic FedHGL smooths
    each client's trimmed local hypergraph and Global is the centralised reference: no exchange.
    The authors'-code ablation noise_propagation="first_hop" needs clean sums no client has; the
    count is the paper's protocol's.

    Returns {"up_bytes", "down_bytes", "per_client_up_bytes", "per_client_down_bytes",
    "hops", "uploads_per_hop"} (per-client lists [C]).
    """
    c = split.clients
    if cfg.propagation != "hc":
        slots = np.zeros(c, np.int64)
    else:
        slots = np.asarray([len(split.client_cross_edges(k)) for k in range(c)], np.int64)
    f = split.hypergraph.num_features
    row = f * np.dtype(feature_dtype).itemsize
    up = cfg.hops * slots * (row + np.dtype(ID_DTYPE).itemsize)
    down = cfg.hops * slots * row
    return {"up_bytes": int(up.sum()), "down_bytes": int(down.sum()), "per_client_up_bytes": up.tolist(),
            "per_client_down_bytes": down.tolist(), "hops": int(cfg.hops), "uploads_per_hop": int(slots.sum())}


def client_splits(split: HypergraphSplit, train_ratio: float, val_ratio: float, test_ratio: float,
                  seed: int) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Per client, random non-stratified train/val/test local indices of sizes int(n_k·ratio)
    drawn without overlap from its labelled nodes (spec §7.2; val 20 %, test 40 %)."""
    rng = np.random.default_rng(seed)
    out = []
    for nodes in split.client_nodes:
        lab = np.flatnonzero(split.hypergraph.y[nodes] >= 0)
        n = nodes.size
        perm = rng.permutation(lab)
        a, b, c = int(n * train_ratio), int(n * val_ratio), int(n * test_ratio)
        out.append((np.sort(perm[:a]), np.sort(perm[a:a + b]), np.sort(perm[a + b:a + b + c])))
    return out


def kept_splits(split: HypergraphSplit) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Per client, the local indices of its labelled nodes in the hypergraph's own train/val/test masks."""
    hg = split.hypergraph
    out = []
    for nodes in split.client_nodes:
        lab = hg.y[nodes] >= 0
        out.append(tuple(np.flatnonzero(m[nodes] & lab) for m in (hg.train_mask, hg.val_mask, hg.test_mask)))
    return out


@flax.struct.dataclass
class FedHGLData:
    """Rows of X^{(N)} the training needs, per client: x_* [C, r, F], y_* int32 [C, r], m_* bool [C, r].

    g_* (optional, [C, r, F]): the propagated Laplace noise at ε = 1 when ε is a traced
    hyperparameter (`traced_eps`): the features are then x + g / hp["eps"] (HC is linear and the
    Laplace noise scale is s/ε, so the noisy X^{(N)} is exactly this; spec §4.2).
    """

    x_train: Array
    y_train: Array
    m_train: Array
    x_val: Array
    y_val: Array
    m_val: Array
    x_test: Array
    y_test: Array
    m_test: Array
    g_train: Optional[Array] = None
    g_val: Optional[Array] = None
    g_test: Optional[Array] = None


def make_data(xn: np.ndarray, split: HypergraphSplit, idx: list, gn: Optional[np.ndarray] = None) -> FedHGLData:
    """Gather the train/val/test rows of the propagated features into padded per-client blocks.

    xn: X^{(N)} [N, F] in global node order (`propagate`) or [C, n_max, F] per client.
    gn: optional propagated unit-ε noise [N, F] (traced-ε programs)."""
    y = split.hypergraph.y
    out = {}
    for j, name in enumerate(("train", "val", "test")):
        # training rows are few and used 3x per round (forward + backward): pad them tightly;
        # val/test rows to PAD so runs with different partitions share compiled shapes
        r = _round_up(max(max(t[j].size for t in idx), 1), 8 if name == "train" else PAD)
        xs = np.zeros((len(idx), r, xn.shape[-1]), np.float32)
        gs = np.zeros((len(idx), r, xn.shape[-1]), np.float32) if gn is not None else None
        ys = np.zeros((len(idx), r), np.int32)
        ms = np.zeros((len(idx), r), bool)
        for c, t in enumerate(idx):
            ii = t[j]
            xs[c, :ii.size] = xn[split.client_nodes[c][ii]] if xn.ndim == 2 else xn[c, ii]
            if gs is not None:
                gs[c, :ii.size] = gn[split.client_nodes[c][ii]]
            ys[c, :ii.size] = y[split.client_nodes[c][ii]]
            ms[c, :ii.size] = True
        out[f"x_{name}"], out[f"y_{name}"], out[f"m_{name}"] = jnp.asarray(xs), jnp.asarray(ys), jnp.asarray(ms)
        if gs is not None:
            out[f"g_{name}"] = jnp.asarray(gs)
    return FedHGLData(**out)


def prepare(hg: Hypergraph, cfg: FedHGLConfig, split: Optional[HypergraphSplit] = None) -> tuple[FedHGLData, dict]:
    """Host side of one run: partition (NumPy seed cfg.seed), propagate, split rows -> (FedHGLData, info).

    cfg.traced_eps (HC + Laplace only): keep the clean X^{(N)} and the propagated unit-ε noise apart
    so ε is a traced hyperparameter (hp["eps"]) that `run_sweep` can vectorise.
    """
    k = cfg.clients
    if split is None:
        if k == 1:
            split = split_hypergraph(hg, np.zeros(hg.num_nodes, np.int64), 1)
        else:
            split = partition_hypergraph(hg, k, cfg.beta, cfg.seed, cfg.min_client_size)
    key = preparation_key(cfg.seed)
    gn = None
    if cfg.traced_eps:
        mech = resolve_mechanism(cfg, hg)
        if mech != "laplace":
            raise ValueError(f"traced_eps needs the Laplace mechanism (numeric features); {hg.name} has "
                             f"{hg.feature_kind} features, so mechanism {cfg.mechanism!r} is {mech!r}. Randomized "
                             "response is not linear in eps (which bits flip depends on eps), so RR sweeps need one "
                             "program per eps")
        t0 = time.perf_counter()
        xn, _ = propagate(split, dataclasses.replace(cfg, mechanism="none", traced_eps=False), key)
        op = P.global_operator(hg)
        a, d = P.unsafe_noise_term(split, hg.x, op, key, "laplace", 1.0, sensitivity=cfg.sensitivity,
                                   public_range=cfg.public_range)
        zero = sp.csr_matrix((hg.num_nodes, hg.num_features), dtype=np.float32)
        gn = np.asarray(P.propagate_sparse(op, zero, cfg.hops, (a, d)), np.float32)
        info = {"propagation_seconds": time.perf_counter() - t0, "mechanism": "laplace"}
    else:
        xn, info = propagate(split, cfg, key)
    ratio = cfg.ratio_for(hg.name)
    if split_mode(cfg.split, cfg.dataset, bool(hg.train_mask.any())) == "keep":
        idx, ratio = kept_splits(split), "kept (the data's own masks)"
    else:
        idx = client_splits(split, ratio, cfg.val_ratio, cfg.test_ratio, cfg.seed)
    data = make_data(xn, split, idx, gn)
    info["pre_training_communication"] = pre_communication(split, cfg, xn.dtype)
    info["split_stats"] = split.stats()
    info["train_ratio"] = ratio
    return data, info
