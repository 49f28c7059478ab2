"""The `Partition` result shared by every node partitioner, its validation, and argument checks.

A partition of a graph with N nodes into K clients is stored as one int32 vector
`assignment [N]` (client id of every node). Storing the assignment rather than K node lists makes
"disjoint" hold by construction; `validate` checks the rest (length N, ids in [0, K), no empty client).

Shapes: N nodes, K clients.
"""
from __future__ import annotations

import dataclasses
import math
import numbers
from typing import Callable

import numpy as np

from fgl_jax import registry
from fgl_jax.graph import Graph, GraphError


def partitioner(name: str) -> Callable[[Callable[..., "Partition"]], Callable[..., "Partition"]]:
    """Register a partitioner `(graph, num_clients, ..., seed) -> Partition` in the one registry
    (kind "partition", help = its docstring's first line): `make_partition` and the CLI read it."""
    def deco(fn: Callable[..., "Partition"]) -> Callable[..., "Partition"]:
        registry.add("partition", name, fn, help=(fn.__doc__ or name).strip().splitlines()[0])
        return fn
    return deco


class PartitionError(GraphError):
    """A partitioner argument or a partition is invalid. A ValueError (through GraphError)."""


@dataclasses.dataclass(frozen=True, eq=False)  # eq=False: dataclass __eq__ on arrays is ambiguous
class Partition:
    """An assignment of every node of a graph to exactly one of `num_clients` clients.

    Attributes:
        assignment: int32 `[N]`, client id in [0, num_clients) of each node (read-only copy).
        num_clients: K.
        method: name of the partitioner that produced it ("random", "louvain", "dirichlet", ...).
        seed: the seed it was produced with (provenance; same graph + method + seed = same assignment).
    """

    assignment: np.ndarray
    num_clients: int
    method: str
    seed: int

    def __post_init__(self):
        a = np.asarray(self.assignment)
        if a.ndim != 1:
            raise PartitionError(f"Partition: assignment must be 1-D [N], got shape {a.shape}")
        if a.size and not np.issubdtype(a.dtype, np.integer):
            raise PartitionError(f"Partition: assignment must hold integer client ids, got dtype {a.dtype}")
        check_int("num_clients", self.num_clients, minimum=1)
        a = a.astype(np.int32, copy=True)
        a.flags.writeable = False  # the dataclass is frozen; keep its array from being mutated in place
        object.__setattr__(self, "assignment", a)

    # ---- views -----------------------------------------------------------------------
    @property
    def num_nodes(self) -> int:
        return int(self.assignment.shape[0])

    @property
    def sizes(self) -> np.ndarray:
        """int64 [K]: number of nodes per client."""
        return np.bincount(self.assignment, minlength=self.num_clients)

    @property
    def client_nodes(self) -> list[np.ndarray]:
        """K arrays of sorted global node ids (int64), one per client."""
        # A stable argsort groups node ids by client while keeping them ascending within a client.
        order = np.argsort(self.assignment, kind="stable").astype(np.int64)
        return np.split(order, np.cumsum(self.sizes)[:-1])

    def _check_graph(self, graph: Graph) -> None:
        if graph.num_nodes != self.num_nodes:
            raise PartitionError(
                f"Partition ({self.method}) covers {self.num_nodes} nodes but graph {graph.name!r} "
                f"has {graph.num_nodes}")

    def cross_edge_mask(self, graph: Graph) -> np.ndarray:
        """bool [E]: directed edges of `graph` whose two endpoints belong to different clients."""
        self._check_graph(graph)
        return self.assignment[graph.senders] != self.assignment[graph.receivers]

    def intra_edge_mask(self, graph: Graph) -> np.ndarray:
        """bool [E]: directed edges of `graph` whose endpoints belong to the same client."""
        return ~self.cross_edge_mask(graph)

    def cross_edges(self, graph: Graph) -> tuple[np.ndarray, np.ndarray]:
        """(senders, receivers), int32 [E_cross] each: the cross-client directed edges (global ids)."""
        m = self.cross_edge_mask(graph)
        return graph.senders[m].astype(np.int32), graph.receivers[m].astype(np.int32)

    def client_graphs(self, graph: Graph) -> list[Graph]:
        """K induced subgraphs (cross-client edges dropped), nodes in ascending global-id order."""
        self._check_graph(graph)
        return graph.subgraphs(self.assignment, self.num_clients)[0]


def validate(partition: Partition, graph: Graph) -> Partition:
    """Check that `partition` puts every node of `graph` in exactly one non-empty client.

    Returns the partition unchanged so partitioners can `return validate(Partition(...), graph)`.
    Raises PartitionError naming the problem (wrong length, out-of-range ids, empty clients).
    """
    a, k = partition.assignment, partition.num_clients
    if a.shape != (graph.num_nodes,):
        raise PartitionError(
            f"Partition ({partition.method}): assignment has shape {a.shape}, graph {graph.name!r} "
            f"has {graph.num_nodes} nodes (every node must be assigned exactly once)")
    bad = np.flatnonzero((a < 0) | (a >= k))
    if bad.size:
        raise PartitionError(
            f"Partition ({partition.method}): node {int(bad[0])} has client id {int(a[bad[0]])}, "
            f"outside [0, {k}) ({bad.size} node(s) unassigned or out of range)")
    empty = np.flatnonzero(partition.sizes == 0)
    if empty.size:
        raise PartitionError(
            f"Partition ({partition.method}, seed {partition.seed}): client(s) {empty.tolist()} of {k} "
            f"received no node")
    return partition


# ---- argument checks (shared by all partitioners; messages name parameter and value) -----
def check_int(name: str, value, minimum: int | None = None, maximum: int | None = None) -> int:
    """`value` as an int; rejects bools, floats (even 2.0), strings and out-of-range values."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise PartitionError(f"{name} must be an integer, got {value!r} ({type(value).__name__})")
    v = int(value)
    if minimum is not None and v < minimum:
        raise PartitionError(f"{name} must be >= {minimum}, got {v}")
    if maximum is not None and v > maximum:
        raise PartitionError(f"{name} must be <= {maximum}, got {v}")
    return v


def check_positive(name: str, value, allow_zero: bool = False) -> float:
    """`value` as a finite float > 0 (or >= 0 with allow_zero)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise PartitionError(f"{name} must be a real number, got {value!r} ({type(value).__name__})")
    v = float(value)
    if not math.isfinite(v) or v < 0 or (v == 0 and not allow_zero):
        raise PartitionError(f"{name} must be a finite number {'>=' if allow_zero else '>'} 0, got {value!r}")
    return v


def check_num_clients(num_clients, graph: Graph) -> int:
    """1 <= num_clients <= number of nodes (a client needs at least one node)."""
    if not isinstance(graph, Graph):
        raise PartitionError(f"graph must be a fgl_jax.graph.Graph, got {type(graph).__name__}")
    k = check_int("num_clients", num_clients, minimum=1)
    if k > graph.num_nodes:
        raise PartitionError(
            f"num_clients={k} exceeds the number of nodes ({graph.num_nodes}) of graph {graph.name!r}: "
            "some client would be empty")
    return k


def check_seed(seed) -> int:
    """A non-negative integer seed (what numpy.random.default_rng and networkx accept)."""
    return check_int("seed", seed, minimum=0)
