"""FedHGN's client splits of a heterogeneous graph: random edges (RE) and random edge types (RET).

Both follow Appendix A of the FedHGN paper and the official `prepare_data.ipynb` (spec §3.2),
applied to the graph *without* reverse edges; reverse edges are added per client afterwards.

Items (edges for RE, canonical edge types for RET) are shuffled and cut into K+2 groups of
seg = floor(n / (K+2)) items:

    group i (i < K)     -> client i only (exclusive)
    group K             -> each item to p ~ U{2, ..., K-1} random clients, p drawn per item
    tail [(K+1)seg, n)  -> every client (includes the remainder)

RE: client graph = edge-induced subgraph (isolated nodes and empty types dropped).
RET: client graph = edge-type subgraph, compacted. If there are exactly K+1 types, client i
gets [type i, last type] (the official special case). Fewer than K+1 types is an error.

Shapes: K clients, R canonical edge types.
"""
from __future__ import annotations

import dataclasses
from typing import Optional

import numpy as np

from fgl_jax.data.hetero import HeteroGraph

__all__ = ["HeteroSplit", "group_assignment", "random_edge_split", "random_edge_type_split", "split_hetero",
           "SPLIT_SEED"]

SPLIT_SEED = 12345


@dataclasses.dataclass(frozen=True)
class HeteroSplit:
    """Client graphs plus the host-side record of who got what.

    clients: K HeteroGraphs (with reverse edges when the split was asked to add them).
    owners: bool [n_items, K]: item -> clients holding it (items = edges in canonical-type
    order for RE, canonical types for RET); strategy: "RE" or "RET".
    """

    clients: tuple[HeteroGraph, ...]
    owners: np.ndarray
    strategy: str

    @property
    def num_clients(self) -> int:
        return len(self.clients)


def group_assignment(n_items: int, num_clients: int, rng: np.random.Generator) -> np.ndarray:
    """bool [n_items, K]: the K+2-group recipe over a shuffled item list (see module doc)."""
    K = num_clients
    if K < 1:
        raise ValueError(f"num_clients must be >= 1, got {K}")
    owners = np.zeros((n_items, K), bool)
    if K == 1:
        owners[:] = True
        return owners
    order = rng.permutation(n_items)
    seg = n_items // (K + 2)
    for i in range(K):
        owners[order[i * seg:(i + 1) * seg], i] = True
    for item in order[K * seg:(K + 1) * seg]:
        # p in 2..K-1 (Python randint(2, K-1)); K = 2 has no such p, the item then goes to both.
        p = int(rng.integers(2, K)) if K > 2 else 2
        owners[item, rng.choice(K, p, replace=False)] = True
    owners[order[(K + 1) * seg:]] = True
    return owners


def _check(g: HeteroGraph, K: int) -> None:
    if not isinstance(K, (int, np.integer)) or K < 1:
        raise ValueError(f"num_clients must be a positive integer, got {K!r}")
    if any(r.startswith("rev_") for r in g.relations):
        raise ValueError("split the graph without reverse edges (load with reverse=False); reverse edges "
                         "are added per client after splitting")


def random_edge_split(g: HeteroGraph, num_clients: int, seed: int = SPLIT_SEED, add_reverse: bool = True,
                      rng: Optional[np.random.Generator] = None) -> HeteroSplit:
    """RE: shuffle all edges (canonical type, edge id) and deal them out by the K+2-group recipe."""
    _check(g, num_clients)
    if g.num_edges < num_clients + 2:
        raise ValueError(f"RE needs at least num_clients + 2 = {num_clients + 2} edges, graph has {g.num_edges}")
    rng = rng or np.random.default_rng(seed)
    owners = group_assignment(g.num_edges, num_clients, rng)
    bounds = np.cumsum([0] + [s.size for s, _ in g.edges])
    clients = []
    for k in range(num_clients):
        keep = [owners[bounds[i]:bounds[i + 1], k] for i in range(len(g.edges))]
        c = g.edge_subgraph(keep, name=f"{g.name}-RE{num_clients}-c{k}")
        clients.append(c.add_reverse() if add_reverse else c)
    return HeteroSplit(tuple(clients), owners, "RE")


def random_edge_type_split(g: HeteroGraph, num_clients: int, seed: int = SPLIT_SEED, add_reverse: bool = True,
                           rng: Optional[np.random.Generator] = None) -> HeteroSplit:
    """RET: deal out whole canonical edge types; each client's schema is a different subset.

    Args:
        g: the heterogeneous graph, without reverse edges (R canonical edge types).
        num_clients: K, at most R - 1.
        seed: the seed of the dealing (when `rng` is None).
        add_reverse: add each client's reverse edges after the split.
        rng: a generator to draw from instead of one seeded with `seed`.

    Returns:
        A `HeteroSplit`: K client graphs, owners bool `[R, K]` (edge type -> clients holding it),
        strategy "RET".

    Raises:
        ValueError: num_clients not a positive integer, fewer than K + 1 edge types, or a graph
            that already holds reverse edges.
    """
    _check(g, num_clients)
    K, R = num_clients, len(g.canonical_etypes)
    if R < K + 1:
        raise ValueError(f"RET with num_clients={K} needs at least K+1 = {K + 1} canonical edge types; "
                         f"{g.name} has {R} (without reverse edges). Use fewer clients or the RE split.")
    rng = rng or np.random.default_rng(seed)
    if R == K + 1:
        owners = np.zeros((R, K), bool)
        owners[np.arange(K), np.arange(K)] = True
        owners[R - 1] = True
    else:
        owners = group_assignment(R, K, rng)
    clients = []
    for k in range(K):
        c = g.edge_type_subgraph([g.canonical_etypes[i] for i in np.flatnonzero(owners[:, k])],
                                 name=f"{g.name}-RET{K}-c{k}")
        clients.append(c.add_reverse() if add_reverse else c)
    return HeteroSplit(tuple(clients), owners, "RET")


def split_hetero(g: HeteroGraph, strategy: str, num_clients: int, seed: int = SPLIT_SEED,
                 add_reverse: bool = True) -> HeteroSplit:
    """Dispatch on strategy in {"RE", "RET"} (case-insensitive; "edges"/"etypes" accepted)."""
    s = strategy.upper()
    if s in ("RE", "EDGES"):
        return random_edge_split(g, num_clients, seed, add_reverse)
    if s in ("RET", "ETYPES"):
        return random_edge_type_split(g, num_clients, seed, add_reverse)
    raise ValueError(f"unknown split strategy {strategy!r}; choose 'RE' or 'RET'")
