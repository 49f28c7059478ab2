"""Host-side (NumPy) node partitioners: random, Louvain, METIS, OpenFGL's louvain+/metis+,
label-Dirichlet over nodes or over communities, and their statistics.

Every partitioner is a pure function `(graph, num_clients, ..., seed) -> Partition`; the
Partition gives client node sets (`client_nodes`) and cross-client edges (`cross_edges(graph)`).
`make_partition(graph, "louvain", 10, seed=0)` dispatches by name (for configs and the CLI).

Shapes: N nodes, K clients (in the partition modules K counts clients).
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from fgl_jax import registry
from fgl_jax.graph import Graph
from fgl_jax.partition.base import Partition, PartitionError, validate
from fgl_jax.partition.dirichlet import community_dirichlet_partition, label_dirichlet_partition
from fgl_jax.partition.louvain import louvain_capacity, louvain_communities, louvain_partition
from fgl_jax.partition.metis import metis_partition
from fgl_jax.partition.plus import louvain_plus_partition, metis_plus_partition
from fgl_jax.partition.random import random_partition
from fgl_jax.partition.stats import leakage, partition_report, partition_stats

def make_partition(graph: Graph, method: str, num_clients: int, seed: int = 0, **kwargs) -> Partition:
    """Run the partitioner registered as `method` (a built-in one, `partition.base.partitioner`,
    or one a user registered with `fgl_jax.register("partition", name)`).

    Args:
        graph: the graph to partition (N nodes).
        method: a registered partition name ("random", "louvain", "metis", "dirichlet", ...).
        num_clients: K, the number of clients.
        seed: the partition's seed.
        **kwargs: the partitioner's options (e.g. beta=0.5 for "dirichlet", resolution=1.0 and
            packing="whole" for "louvain", num_communities=100 for "metis_plus").

    Returns:
        The `Partition`, assignment int32 `[N]` (built-in partitioners' results are cached).

    Raises:
        PartitionError: an unknown method, or option values the partitioner refuses.
        TypeError: an option the partitioner does not take.
    """
    if not registry.has("partition", method):
        raise PartitionError(f"unknown partition method {method!r}; choose one of {registry.names('partition')}")
    fn = registry.get("partition", method)
    if not str(getattr(fn, "__module__", "")).startswith("fgl_jax.partition."):  # a user's: maybe not deterministic
        return fn(graph, num_clients, seed=seed, **kwargs)
    return _cached(fn, graph, method, num_clients, seed, kwargs)


def _cached(fn: Callable[..., Partition], graph: Graph, method: str, num_clients: int, seed: int,
            kwargs: dict) -> Partition:
    """A built-in partitioner's result through the preparation cache (`fgl_jax.cache`): a pure
    function of the graph's arrays, the method, its arguments and its source, so a second command
    reads the assignment instead of running Louvain again."""
    from fgl_jax import cache
    if cache.root() is None:
        return fn(graph, num_clients, seed=seed, **kwargs)
    key = cache.prep_key("partition", graph=cache.graph_digest(graph), method=method, clients=num_clients,
                         seed=seed, kwargs=sorted(kwargs.items()), source=_source_digest())
    hit = cache.load_arrays(key)
    if hit is not None and "assignment" in hit:
        try:
            return validate(Partition(hit["assignment"], num_clients, method, seed), graph)
        except PartitionError:  # a damaged entry: compute it again (and replace it)
            pass
    part = fn(graph, num_clients, seed=seed, **kwargs)
    cache.store_arrays(key, {"assignment": np.asarray(part.assignment)})
    return part


def _source_digest() -> str:
    """sha256 of this package's sources and of the versions of the libraries the partitioners call
    (a partitioner's helpers live in sibling modules: louvain+ uses kmeans.py, metis.py, louvain.py)."""
    import hashlib
    from importlib import metadata
    from pathlib import Path
    h = hashlib.sha256()
    for path in sorted(Path(__file__).parent.glob("*.py")):
        h.update(path.name.encode() + path.read_bytes())
    for lib in ("networkx", "pymetis"):
        try:
            h.update(f"{lib}={metadata.version(lib)}".encode())
        except metadata.PackageNotFoundError:
            h.update(f"{lib}=none".encode())
    return h.hexdigest()[:16]


__all__ = [
    "Partition", "PartitionError", "community_dirichlet_partition", "label_dirichlet_partition",
    "leakage", "louvain_capacity", "louvain_communities", "louvain_partition", "louvain_plus_partition", "make_partition",
    "metis_partition", "metis_plus_partition", "partition_report", "partition_stats", "random_partition",
    "validate",
]
