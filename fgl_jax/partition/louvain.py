"""Louvain community split merged into K size-balanced clients (FedSage+ / FederatedScope style).

Louvain finds however many communities the graph has; FGL needs exactly K clients of similar size.
FederatedScope's LouvainSplitter cuts communities longer than N//K - delta into chunks, sorts the
pieces by size (largest first) and deals them round-robin, skipping a client when the piece would
push it past N//K + delta. We keep the idea (whole communities, largest first, bounded client size)
with a rule that always terminates and gives hard guarantees:

Merging rule (exact):
  1. Communities = `networkx.community.louvain_communities(G, resolution, seed)` on the undirected,
     self-loop-free graph (isolated nodes are singleton communities). Canonical order: size
     descending, then smallest node id. Inside a community nodes are listed in breadth-first order
     (per connected component, components by smallest node id, each BFS from its smallest node), so
     the head cut off a community below is a BFS prefix and tends to stay connected.
  2. cap = max(ceil(N/K), floor(N/K · (1 + slack))).
  3. While there are fewer than K pieces, the largest piece (ties: the earlier one) is cut into its
     first ceil(n/2) and last floor(n/2) nodes. (Only when Louvain finds < K communities; N >= K
     makes this possible, and it is what guarantees that no client is empty.)
  4. Pieces are processed largest first (ties: first-queued first) from a priority queue. Each goes
     to the client with the fewest nodes (ties: lowest client id). If it does not fit (the client
     would exceed cap), the client gets its first cap - load nodes and the rest is queued again as a
     new piece.
Guarantees: every client holds >= 1 and <= cap nodes, hence >= N - (K-1)·cap. A community is split
only by rule 3 or when it exceeds the room left in the emptiest client. The result is a deterministic
function of (graph, K, seed, resolution, slack); the seed acts only through Louvain.

packing="whole" (a community is never cut for size, as in plain PyG loops that deal Louvain
communities to clients): rules 1 and 3 as above, then every piece, largest first, goes whole to the
client with the fewest nodes (ties: lowest id): greedy longest-processing-time packing, no cap.
Client sizes then follow the community sizes (Cora, 10 clients: the largest client holds the
largest community, 350-388 nodes against 297 capped), and only rule 3 (fewer communities than
clients) ever cuts a community. OpenFGL's `subgraph_fl_louvain` is neither: it cuts communities
longer than N//K - 20 into consecutive chunks (in node-id order) and deals the pieces round-robin
with a soft bound of N//K + 20 (docs/simulation.md compares the three on Cora and CiteSeer).
"""
from __future__ import annotations

import heapq
import math

import numpy as np
import scipy.sparse as sp

from fgl_jax.graph import Graph
from fgl_jax.partition.base import (Partition, PartitionError, partitioner, check_num_clients, check_positive,
                                    check_seed, validate)


def louvain_capacity(num_nodes: int, num_clients: int, slack: float) -> int:
    """Largest client size `louvain_partition` allows: max(ceil(N/K), floor(N/K·(1+slack)))."""
    # The 1e-9 absorbs float error when N/K·(1+slack) is an exact integer (e.g. 100/10·1.1).
    return max(-(-num_nodes // num_clients), math.floor(num_nodes * (1.0 + slack) / num_clients + 1e-9))


def _undirected_adjacency(graph: Graph) -> sp.csr_matrix:
    """Symmetric 0/1 CSR [N, N] without self-loops."""
    s, r = graph.senders.astype(np.int64), graph.receivers.astype(np.int64)
    keep = s != r
    s, r = s[keep], r[keep]
    n = graph.num_nodes
    a = sp.csr_matrix((np.ones(2 * s.size), (np.concatenate([s, r]), np.concatenate([r, s]))), shape=(n, n))
    a.data[:] = 1.0  # duplicates were summed; weights are irrelevant to the BFS order
    return a


def _bfs_order(adj: sp.csr_matrix, nodes: np.ndarray) -> np.ndarray:
    """`nodes` (sorted global ids) re-ordered breadth-first inside their induced subgraph:
    components in order of their smallest node, each from that node, neighbours in ascending
    order (scipy.sparse.csgraph's connected_components + breadth_first_order, whose import
    costs a cold command more than this loop)."""
    if nodes.size <= 2:
        return nodes
    sub = adj[nodes][:, nodes].tocsr()
    sub.sort_indices()
    indptr, indices = sub.indptr.tolist(), sub.indices.tolist()
    seen = [False] * nodes.size
    order: list[int] = []
    for start in range(nodes.size):
        if seen[start]:
            continue
        seen[start] = True
        head = len(order)
        order.append(start)
        while head < len(order):
            v = order[head]
            head += 1
            for u in indices[indptr[v]:indptr[v + 1]]:
                if not seen[u]:
                    seen[u] = True
                    order.append(u)
    return nodes[np.asarray(order, np.int64)]


PACKINGS = ("capped", "whole")


def louvain_communities(graph: Graph, resolution: float = 1.0, seed: int = 0,
                        adjacency: sp.csr_matrix | None = None) -> list[np.ndarray]:
    """Louvain communities of `graph` (edges undirected, self-loops ignored; networkx's Louvain).

    Args:
        graph: the graph (N nodes).
        resolution: Louvain's resolution, > 0 (larger gives more, smaller communities).
        seed: networkx's seed, a non-negative integer.
        adjacency: the symmetric CSR adjacency `[N, N]` if already built; None: built here.

    Returns:
        int64 arrays of sorted node ids, in canonical order: size descending, then smallest
        node id (independent of set iteration order). Isolated nodes are singleton communities.

    Raises:
        PartitionError: a resolution that is not > 0, or a bad seed.
    """
    resolution = check_positive("resolution", resolution)
    seed = check_seed(seed)
    adj = _undirected_adjacency(graph) if adjacency is None else adjacency
    import networkx as nx  # here: a cached partition (fgl_jax.cache) never needs networkx's import time
    g = nx.Graph()
    g.add_nodes_from(range(graph.num_nodes))
    coo = sp.triu(adj, k=1).tocoo()
    g.add_edges_from(zip(coo.row.tolist(), coo.col.tolist()))
    comms = [np.array(sorted(c), np.int64) for c in
             nx.community.louvain_communities(g, resolution=resolution, seed=seed)]
    comms.sort(key=lambda c: (-c.size, int(c[0])))
    return comms


@partitioner("louvain")
def louvain_partition(graph: Graph, num_clients: int, seed: int = 0, resolution: float = 1.0,
                      slack: float = 0.1, packing: str = "capped") -> Partition:
    """Louvain communities merged greedily into `num_clients` clients (capped: of size <= cap).

    graph: host Graph with N nodes (edges treated as undirected).
    resolution: Louvain resolution (> 0; larger gives more, smaller communities).
    slack: allowed relative excess of a client over N/K (>= 0); cap = louvain_capacity(N, K, slack)
        (packing "capped" only).
    packing: "capped" (default: a community that does not fit the emptiest client is cut at the
        cap) or "whole" (communities are never cut for size; largest first into the emptiest client).
    See the module docstring for the exact merging rules and their guarantees.

    Args:
        graph: as above.
        num_clients: K, at most N.
        seed: networkx's Louvain seed, a non-negative integer.
        resolution: as above.
        slack: as above.
        packing: as above.

    Returns:
        A Partition with assignment int32 `[N]`.

    Raises:
        PartitionError: a bad num_clients, seed, resolution, slack or packing.
    """
    k = check_num_clients(num_clients, graph)
    seed = check_seed(seed)
    resolution = check_positive("resolution", resolution)
    slack = check_positive("slack", slack, allow_zero=True)
    if packing not in PACKINGS:
        raise PartitionError(f"packing must be one of {PACKINGS}, got {packing!r}")
    n = graph.num_nodes
    adj = _undirected_adjacency(graph)

    # 1. Louvain on the undirected graph, in a canonical order independent of set iteration order.
    comms = louvain_communities(graph, resolution, seed, adjacency=adj)

    # BFS order is only needed for communities that will be cut, which are those larger than the
    # room in some client (<= cap); computing it lazily keeps the common case (many small
    # communities) cheap.
    cap = louvain_capacity(n, k, slack) if packing == "capped" else n
    ordered = [False] * len(comms)

    def ensure_order(i: int) -> None:
        if not ordered[i]:
            comms[i] = _bfs_order(adj, comms[i])
            ordered[i] = True

    # 3. Guarantee at least K pieces so that every client receives one (see rule 3).
    while len(comms) < k:
        i = max(range(len(comms)), key=lambda j: (comms[j].size, -j))
        ensure_order(i)
        c = comms.pop(i)
        half = -(-c.size // 2)
        comms[i:i] = [c[:half], c[half:]]
        ordered[i:i + 1] = [True, True]
    # 4. Largest piece first into the emptiest client; overflow re-queued as a new piece.
    heap = [(-c.size, i) for i, c in enumerate(comms)]
    heapq.heapify(heap)
    next_id = len(comms)
    loads = np.zeros(k, np.int64)
    assignment = np.full(n, -1, np.int32)
    while heap:
        _, i = heapq.heappop(heap)
        c = comms[i]
        target = int(np.argmin(loads))  # argmin returns the lowest id on ties
        room = cap - int(loads[target])
        # room >= 1 always: the emptiest client holds <= (N - c.size)/K < N/K <= cap nodes.
        if c.size > room:
            ensure_order(i)
            c = comms[i]
            comms.append(c[room:])
            ordered.append(True)
            heapq.heappush(heap, (-(c.size - room), next_id))
            next_id += 1
            c = c[:room]
        assignment[c] = target
        loads[target] += c.size
    return validate(Partition(assignment, k, "louvain", seed), graph)
