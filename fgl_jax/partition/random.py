"""Equal-size random node split (FederatedScope-GNN's random splitter without overlap).

HiFGL (spec §4) splits each Planetoid graph this way into 5 silos of near-equal node count.

Shapes: N nodes, K clients.
"""
from __future__ import annotations

import numpy as np

from fgl_jax.graph import Graph
from fgl_jax.partition.base import Partition, check_num_clients, check_seed, partitioner, validate


@partitioner("random")
def random_partition(graph: Graph, num_clients: int, seed: int = 0) -> Partition:
    """Assign nodes to `num_clients` clients by cutting a seeded permutation into near-equal parts.

    Client k receives positions [floor(k·N/K), floor((k+1)·N/K)) of a permutation of the N nodes
    drawn with `np.random.default_rng(seed)`, so sizes are floor(N/K) or ceil(N/K) (differ by at
    most 1). Edges play no role.

    Args:
        graph: the graph (N nodes).
        num_clients: K, at most N.
        seed: the permutation's seed, a non-negative integer.

    Returns:
        A Partition with assignment int32 `[N]`.

    Raises:
        PartitionError: a bad num_clients or seed.
    """
    k = check_num_clients(num_clients, graph)
    seed = check_seed(seed)
    n = graph.num_nodes
    perm = np.random.default_rng(seed).permutation(n)
    # Integer cut points (no float rounding) so the sizes are exactly floor/ceil(N/K).
    bounds = (np.arange(k + 1, dtype=np.int64) * n) // k
    assignment = np.empty(n, np.int32)
    assignment[perm] = np.repeat(np.arange(k, dtype=np.int32), np.diff(bounds))
    return validate(Partition(assignment, k, "random", seed), graph)
