"""Module A of Lumos: workload balancing (paper §V-B/C, Alg. 1-3, Eqs. 10 and 15-18).

State. An undirected edge {u, v} has two *half-edges* (u -> v) and (v -> u). `keep[h] = True`
for half-edge h = (o -> t) means x_(o,t) = 1: device o keeps neighbour t in its tree, so
N_o = {t : keep[(o -> t)]} and the workload wl(o) = |N_o| (Eq. 10). Coverage (the constraint
of Eq. 10) is keep[h] | keep[twin(h)] for every half-edge.

Everything here is host-side NumPy: it runs once before training. Device-side decisions read
other devices' degrees / workloads only through `SecureComparator` (Def. 2), which counts the
comparisons a real CrypTFlow2 deployment would make.

Beyond the paper, `exact_min_max` solves Eq. 10 exactly in polynomial time. Keeping an edge in
both trees never helps the objective, so Eq. 10 is minimum max-out-degree orientation (Hakimi
1965): feasibility of "max workload <= k" is a bipartite max-flow (edges -> endpoints, endpoint
capacity k); binary search over k. The paper's Theorem 1 (NP-hard) does not hold for this
problem (spec §3.2); the solver is a test oracle and an option (`trim="exact"`), not Lumos.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Optional

import numpy as np
import scipy.sparse as sp

from fgl_jax.systems.lumos.secure import SecureComparator

GREEDY_RULES = ("alg1", "eq15", "code")


@dataclasses.dataclass(frozen=True)
class EdgeSet:
    """Undirected simple graph as half-edges, sorted by owner (CSR over owners).

    num_nodes: N. eu, ev: int64 [M] with eu < ev (each undirected edge once).
    owner, nbr: int64 [2M] half-edge (owner -> nbr), sorted by (owner, nbr).
    twin: int64 [2M] index of the reverse half-edge. indptr: int64 [N+1] owner offsets.
    dropped_self_loops / dropped_duplicates: how many input rows were discarded (documented
    rule: self-loops are not ego-network edges, duplicates are one edge).
    """

    num_nodes: int
    eu: np.ndarray
    ev: np.ndarray
    owner: np.ndarray
    nbr: np.ndarray
    twin: np.ndarray
    indptr: np.ndarray
    dropped_self_loops: int = 0
    dropped_duplicates: int = 0

    @property
    def num_edges(self) -> int:
        return int(self.eu.shape[0])

    @property
    def degree(self) -> np.ndarray:
        return np.diff(self.indptr)

    @staticmethod
    def from_arrays(senders, receivers, num_nodes: int) -> "EdgeSet":
        """From an edge list (directed or undirected, any order). Self-loops dropped, duplicates merged."""
        s = np.asarray(senders, np.int64).ravel()
        r = np.asarray(receivers, np.int64).ravel()
        if s.shape != r.shape:
            raise ValueError(f"EdgeSet: senders {s.shape} and receivers {r.shape} differ in length")
        if int(num_nodes) < 0:
            raise ValueError(f"EdgeSet: num_nodes must be >= 0, got {num_nodes}")
        if s.size and (min(s.min(), r.min()) < 0 or max(s.max(), r.max()) >= num_nodes):
            raise ValueError(f"EdgeSet: edge endpoint outside [0, {num_nodes})")
        loops = s == r
        lo, hi = np.minimum(s, r)[~loops], np.maximum(s, r)[~loops]
        key = np.unique(lo * num_nodes + hi)
        # Duplicates in a directed symmetric list are expected (each edge twice); count the excess.
        eu, ev = key // num_nodes, key % num_nodes
        return EdgeSet._build(int(num_nodes), eu, ev, int(loops.sum()), int(lo.size - key.size))

    @staticmethod
    def from_graph(graph) -> "EdgeSet":
        """From an `fgl_jax.graph.Graph` (symmetric directed edges)."""
        es = EdgeSet.from_arrays(graph.senders, graph.receivers, graph.num_nodes)
        # a symmetric directed list has every edge twice: that is not a duplicate
        return dataclasses.replace(es, dropped_duplicates=max(0, es.dropped_duplicates - es.num_edges))

    @staticmethod
    def _build(n, eu, ev, loops, dups) -> "EdgeSet":
        m = eu.size
        owner = np.concatenate([eu, ev])
        nbr = np.concatenate([ev, eu])
        order = np.lexsort((nbr, owner))
        inv = np.empty_like(order)
        inv[order] = np.arange(2 * m)
        twin_unsorted = np.concatenate([np.arange(m, 2 * m), np.arange(m)])
        twin = inv[twin_unsorted[order]]
        indptr = np.zeros(n + 1, np.int64)
        np.cumsum(np.bincount(owner, minlength=n), out=indptr[1:])
        return EdgeSet(n, eu, ev, owner[order], nbr[order], twin, indptr, loops, dups)


# ---------------------------------------------------------------------------------------------
# Objective, constraint, statistics


def workloads(es: EdgeSet, keep: np.ndarray) -> np.ndarray:
    """wl(u) = |N_u| = number of kept half-edges owned by u, int64 [N] (Eq. 10)."""
    return np.bincount(es.owner[keep], minlength=es.num_nodes)


def max_workload(es: EdgeSet, keep: np.ndarray) -> int:
    """f(X) = max_u wl(u) (objective of Eq. 10)."""
    wl = workloads(es, keep)
    return int(wl.max()) if wl.size else 0


def is_covered(es: EdgeSet, keep: np.ndarray) -> bool:
    """Constraint of Eq. 10: every edge is in at least one tree."""
    return bool(np.all(keep | keep[es.twin]))


def neighbour_sets(es: EdgeSet, keep: np.ndarray) -> list[np.ndarray]:
    """N_u for every u (list of int arrays), for inspection and tests."""
    return [es.nbr[es.indptr[u]:es.indptr[u + 1]][keep[es.indptr[u]:es.indptr[u + 1]]] for u in range(es.num_nodes)]


def workload_stats(es: EdgeSet, keep: np.ndarray) -> dict:
    """Max / mean workload, forward-message saving 1 - sum wl / 2|E| (spec §6), both-kept share."""
    wl = workloads(es, keep)
    total = int(wl.sum())
    both = int(np.sum(keep & keep[es.twin])) // 2
    return {"max": int(wl.max()) if wl.size else 0, "mean": float(wl.mean()) if wl.size else 0.0,
            "sum": total, "edges": es.num_edges, "covered": is_covered(es, keep),
            "message_saving": 1.0 - total / max(1, 2 * es.num_edges),
            "edges_in_both_trees": both / max(1, es.num_edges),
            "max_degree": int(es.degree.max()) if es.num_nodes else 0}


def workload_cdf(wl: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Empirical CDF of workloads (Fig. 7): sorted values and cumulative fractions."""
    v = np.sort(np.asarray(wl))
    return v, np.arange(1, v.size + 1) / max(1, v.size)


# ---------------------------------------------------------------------------------------------
# A1: greedy initialisation (Alg. 1; Eq. 15 and the code's rule only for comparison)


def _round_ln(deg: np.ndarray) -> np.ndarray:
    # round half up (np.round is half-to-even); degree >= 1 for every edge endpoint
    return np.floor(np.log(np.maximum(deg, 1)) + 0.5).astype(np.int64)


def greedy_init(es: EdgeSet, rule: str = "alg1", comparator: Optional[SecureComparator] = None
                ) -> tuple[np.ndarray, SecureComparator]:
    """Greedy X_0 -> keep bool [2M].

    rule="alg1" (default, Alg. 1 line 4): u keeps v iff round(ln deg v) >= round(ln deg u);
        on ties both keep the edge, so coverage always holds.
    rule="eq15" (Eq. 15 as printed): u keeps v iff round(ln deg u) < round(ln deg v); ties are
        dropped by both endpoints (breaks coverage; kept to document the discrepancy).
    rule="code" (official mcmc.py): u keeps v iff ln deg v > ln deg u (strict, unrounded).
    Each half-edge costs one secure comparison between its two endpoints.
    """
    if rule not in GREEDY_RULES:
        raise ValueError(f"greedy_init: rule must be one of {GREEDY_RULES}, got {rule!r}")
    deg = es.degree
    if comparator is None:
        comparator = SecureComparator(deg if rule == "code" else _round_ln(deg))
    if rule == "alg1":
        keep = comparator.ge(es.nbr, es.owner)
    else:  # eq15 on rounded logs, code on raw degrees (ln is monotone): keep iff NOT owner >= nbr
        keep = ~comparator.ge(es.owner, es.nbr)
    return keep, comparator


# ---------------------------------------------------------------------------------------------
# Alg. 3: find the device with the largest workload


def find_max_device(es: EdgeSet, comparator: SecureComparator, rng: np.random.Generator) -> tuple[int, int]:
    """Alg. 3 simulated: (arg-max device, size of the candidate set CVS).

    Op1: every v compares w_v with each neighbour's in 𝒩(v) (original graph) and is a candidate
    iff it is >= all of them (a local maximum; the global maximum is always one). Op2: CVS
    members compare with each other; the server picks uniformly among those reporting "largest".
    """
    n = es.num_nodes
    ge = comparator.ge(es.owner, es.nbr)            # one comparison per half-edge, both parties learn it
    cand = np.ones(n, bool)
    has = es.indptr[1:] > es.indptr[:-1]
    # all() over each owner's contiguous half-edge block
    cand[has] = np.logical_and.reduceat(ge, es.indptr[:-1][has])
    cvs = np.flatnonzero(cand)
    largest = cvs[comparator.is_max_among(cvs)]
    return int(largest[rng.integers(largest.size)]), int(cvs.size)


# ---------------------------------------------------------------------------------------------
# A2: MCMC trimming (Alg. 2, Eqs. 16-18)


def mh_accept(f_old: int, f_new: int, rng: np.random.Generator) -> bool:
    """Metropolis-Hastings at temperature 1 (Eq. 18): accept w.p. min(1, exp(f(X_t) - f(X')))."""
    delta = f_old - f_new
    return bool(delta >= 0 or rng.random() < math.exp(delta))


def step_size(n_u: int, rng: np.random.Generator) -> int:
    """Eq. 17's k ~ U{1..round(ln |N_u|)}, clamped to {1..max(1, .)} (spec A2; the code crashes at |N_u|=1)."""
    k_max = max(1, int(math.floor(math.log(max(n_u, 1)) + 0.5)))
    return min(int(rng.integers(1, k_max + 1)), max(n_u, 1))


@dataclasses.dataclass
class MCMCResult:
    keep: np.ndarray            # bool [2M] final state
    f_history: np.ndarray       # int [T+1] f(X_t) (t = 0 is the greedy state)
    accepted: int
    proposals: int
    comparisons: int            # secure comparisons (greedy + Alg. 3 + differences)
    comparison_bits: int
    cvs_sizes: np.ndarray       # |CVS| per Alg. 3 call


def mcmc_trim(es: EdgeSet, keep0: np.ndarray, num_iters: int, seed: int = 0, always_accept: bool = False,
              argmax: str = "alg3", comparator: Optional[SecureComparator] = None,
              on_step=None) -> MCMCResult:
    """Alg. 2: MCMC over neighbour selections starting from `keep0` (the greedy X_0).

    Each iteration: u = arg-max device (Alg. 3); k from Eq. 17; move k random branches of 𝒯(u)
    to the neighbours' trees (Eq. 16, coverage preserved); u' = arg-max of X'; accept by Eq. 18,
    else roll back exactly. always_accept=True reproduces the official code (its `newx = x`
    aliasing applies every proposal). argmax="direct" skips the Alg. 3 simulation (faster, same
    arg-max set, no comparison counts).
    """
    if num_iters < 0:
        raise ValueError(f"mcmc_trim: num_iters must be >= 0, got {num_iters}")
    if argmax not in ("alg3", "direct"):
        raise ValueError(f"mcmc_trim: argmax must be 'alg3' or 'direct', got {argmax!r}")
    keep0 = np.asarray(keep0, bool)
    if keep0.shape != es.owner.shape:
        raise ValueError(f"mcmc_trim: keep0 has shape {keep0.shape}, expected {es.owner.shape}")
    if not is_covered(es, keep0):
        raise ValueError("mcmc_trim: the initial state leaves an edge uncovered (use greedy rule 'alg1')")
    rng = np.random.default_rng(seed)
    keep = keep0.copy()
    wl = workloads(es, keep)
    comp = SecureComparator(wl) if comparator is None else comparator
    calls0, bits0 = comp.calls, comp.bits
    cvs_sizes = []

    def argmax_device() -> int:
        if argmax == "direct":
            top = np.flatnonzero(wl == wl.max())
            return int(top[rng.integers(top.size)])
        u, c = find_max_device(es, comp, rng)
        cvs_sizes.append(c)
        return u

    f = int(wl.max()) if wl.size else 0
    hist = [f]
    accepted = 0
    for _ in range(num_iters):
        if f == 0:
            hist.append(f)
            continue
        u = argmax_device()                                   # line 2
        lo, hi = es.indptr[u], es.indptr[u + 1]
        mine = lo + np.flatnonzero(keep[lo:hi])               # half-edges of N_u
        k = step_size(mine.size, rng)                         # line 3 (Eq. 17)
        hs = rng.choice(mine, size=k, replace=False)          # line 4, distinct v_1..v_k
        tw = es.twin[hs]
        prev_tw = keep[tw].copy()
        # line 5, Eq. 16: N_u <- N_u \ {v}, N_v <- N_v ∪ {u}
        keep[hs] = False
        keep[tw] = True
        gained = es.owner[tw][~prev_tw]
        wl[u] -= k
        np.add.at(wl, gained, 1)
        comp.add(np.array([u]), -k)
        comp.add(gained, 1)
        u2 = argmax_device()                                  # line 6
        # line 7: u holds f(X_t) (its old workload), u' holds f(X') = wl'(u'); 2-party subtraction
        f_new = f - comp.difference(f, u2) if argmax == "alg3" else int(wl.max())
        if always_accept or mh_accept(f, f_new, rng):       # line 8 (Eq. 18)
            f = f_new
            accepted += 1
            accepted_now = True
        else:                                                 # line 9: rollback
            keep[hs] = True
            keep[tw] = prev_tw
            wl[u] += k
            np.add.at(wl, gained, -1)
            comp.add(np.array([u]), k)
            comp.add(gained, -1)
            accepted_now = False
        hist.append(f)
        if on_step is not None:
            on_step(len(hist) - 1, keep, accepted_now)
    return MCMCResult(keep, np.asarray(hist), accepted, num_iters, comp.calls - calls0, comp.bits - bits0,
                      np.asarray(cvs_sizes, np.int64))


# ---------------------------------------------------------------------------------------------
# Exact optimum (beyond the paper; test oracle and `trim="exact"` option)


def _orientation_flow(es: EdgeSet, k: int):
    """Max flow source -> edge (cap 1) -> endpoints (cap 1) -> sink (cap k)."""
    m, n = es.num_edges, es.num_nodes
    src, sink = 0, m + n + 1
    e_nodes = 1 + np.arange(m)
    rows = np.concatenate([np.zeros(m, np.int64), e_nodes, e_nodes, 1 + m + np.arange(n)])
    cols = np.concatenate([e_nodes, 1 + m + es.eu, 1 + m + es.ev, np.full(n, sink)])
    caps = np.concatenate([np.ones(3 * m, np.int32), np.full(n, k, np.int32)])
    g = sp.csr_matrix((caps, (rows, cols)), shape=(m + n + 2, m + n + 2))
    from scipy.sparse.csgraph import maximum_flow  # lazily: csgraph's import time is paid only here
    return maximum_flow(g, src, sink, method="dinic"), rows, cols


def exact_min_max(es: EdgeSet) -> tuple[int, np.ndarray]:
    """Optimal f for Eq. 10 and an optimal keep [2M] (each edge kept by exactly one endpoint).

    Binary search over k in [ceil(M/N), max degree] with a max-flow feasibility test; the
    optimum equals max_S ceil(|E(S)| / |S|) (Hakimi 1965).
    """
    m, n = es.num_edges, es.num_nodes
    if m == 0:
        return 0, np.zeros(0, bool)
    lo, hi = max(1, -(-m // n)), int(es.degree.max())
    best = None
    while lo < hi:
        mid = (lo + hi) // 2
        res, rows, cols = _orientation_flow(es, mid)
        if res.flow_value == m:
            hi, best = mid, (res, rows, cols)
        else:
            lo = mid + 1
    if best is None or hi != lo:
        best = _orientation_flow(es, lo)
    res, _, _ = best
    flow = res.flow.tocsr()
    e_nodes = 1 + np.arange(m)
    to_u = np.asarray(flow[e_nodes, 1 + m + es.eu]).ravel() > 0
    # edge assigned to endpoint eu -> eu keeps ev (half-edge eu -> ev), else ev keeps eu
    keep = np.zeros(2 * m, bool)
    key_h = es.owner * n + es.nbr
    pos = np.searchsorted(key_h, np.where(to_u, es.eu * n + es.ev, es.ev * n + es.eu))
    keep[pos] = True
    return int(lo), keep


def no_trim(es: EdgeSet) -> np.ndarray:
    """w/o TT: N_v = 𝒩(v) (every half-edge kept)."""
    return np.ones(es.owner.shape, bool)
