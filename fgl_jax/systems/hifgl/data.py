"""Host-side preparation (once per run): the split, the silos and the federated graph as devices hold it."""
from __future__ import annotations

from typing import Any, NamedTuple

import flax
import jax
import jax.numpy as jnp
import numpy as np

from fgl_jax import ops
from fgl_jax.graph import Graph
from fgl_jax.systems.hifgl.config import HiFGLConfig, split_sizes


@flax.struct.dataclass
class HiFGLData:
    """The federated graph as the devices hold it, plus silo membership (host-built, once).

    senders/receivers/edge_mask [E]: every directed edge, cross-silo ones included (devices keep them).
    features: [N, F] dense or SparseFeatures; y, train/val/test_mask [N]; silo [N] int32 (each device's silo).
    silo_train [S, N] bool: each silo's training devices (whose gradients it averages).
    """

    senders: jax.Array
    receivers: jax.Array
    edge_mask: jax.Array
    features: Any
    y: jax.Array
    train_mask: jax.Array
    val_mask: jax.Array
    test_mask: jax.Array
    node_mask: jax.Array
    silo: jax.Array
    silo_train: jax.Array

    @property
    def num_nodes(self) -> int:
        return int(self.y.shape[0])

    @property
    def clients(self) -> int:
        """Number of silos."""
        return int(self.silo_train.shape[0])

    def batch(self):
        """The whole federated graph as one `ClientBatch` (what `fgl_jax.nn`'s models take)."""
        import jraph
        from fgl_jax.batch import ClientBatch
        n = self.num_nodes
        gt = jraph.GraphsTuple(nodes=None, edges=None, globals=None, senders=self.senders, receivers=self.receivers,
                               n_node=jnp.array([n]), n_edge=jnp.array([self.senders.shape[0]]))
        return ClientBatch(graph=gt, features=self.features, y=self.y, node_mask=self.node_mask,
                           edge_mask=self.edge_mask, train_mask=self.train_mask, val_mask=self.val_mask,
                           test_mask=self.test_mask, node_ids=jnp.arange(n), client_mask=jnp.ones((1,), bool))


def make_hifgl_data(graph: Graph, assignment: np.ndarray, clients: int, edges: str = "all") -> HiFGLData:
    """The full graph's arrays and each device's silo.

    Args:
        graph: the split graph.
        assignment: int [N], each device's silo in 0..clients-1.
        clients: the number of silos.
        edges: "all" (every edge carries messages) or "same_split": only edges whose two ends are in
            the same split (train/val/test), as the authors' code passes messages, so a node's output
            never sees another split's nodes (HiFGLConfig.edges).

    Returns:
        The HiFGLData of the run.
    """
    import scipy.sparse as sp
    assignment = np.asarray(assignment, np.int32)
    if assignment.shape != (graph.num_nodes,):
        raise ValueError(f"assignment has shape {assignment.shape}, expected ({graph.num_nodes},)")
    counts = np.bincount(assignment, minlength=clients)
    if (counts == 0).any():
        raise ValueError(f"silo(s) {np.flatnonzero(counts == 0).tolist()} have no device")
    if sp.issparse(graph.x):
        coo = sp.coo_matrix(graph.x)
        feats = ops.SparseFeatures(jnp.asarray(coo.row, jnp.int32), jnp.asarray(coo.col, jnp.int32),
                                   jnp.asarray(coo.data, jnp.float32), jnp.asarray(ops.column_order(coo.col)))
    else:
        feats = jnp.asarray(graph.dense_x())
    labelled = graph.y >= 0
    train = graph.train_mask & labelled
    silo_train = np.stack([train & (assignment == i) for i in range(clients)])
    if edges not in ("all", "same_split"):
        raise ValueError(f"edges must be 'all' or 'same_split', got {edges!r}")
    edge_mask = np.ones(graph.num_edges, bool)
    if edges == "same_split":
        # 0 train, 1 val, 2 test, 3 in no split: an edge carries messages only inside one split
        part = np.select([graph.train_mask, graph.val_mask, graph.test_mask], [0, 1, 2], 3)
        edge_mask = part[graph.senders] == part[graph.receivers]
    return HiFGLData(
        senders=jnp.asarray(graph.senders, jnp.int32), receivers=jnp.asarray(graph.receivers, jnp.int32),
        edge_mask=jnp.asarray(edge_mask), features=feats, y=jnp.asarray(np.where(labelled, graph.y, 0)),
        train_mask=jnp.asarray(train), val_mask=jnp.asarray(graph.val_mask & labelled),
        test_mask=jnp.asarray(graph.test_mask & labelled), node_mask=jnp.ones(graph.num_nodes, bool),
        silo=jnp.asarray(assignment), silo_train=jnp.asarray(silo_train))


def split_graph(graph: Graph, cfg: HiFGLConfig) -> Graph:
    """FederatedScope's random Planetoid split (spec §4) with the run's sizes (`config.split_sizes`),
    or the graph's own masks when `cfg.split` resolves to keep (`fgl_jax.schema.split_mode`)."""
    from fgl_jax.data import per_class_split
    from fgl_jax.schema import split_mode
    if split_mode(cfg.split, cfg.dataset, bool(graph.train_mask.any())) == "keep":
        return graph
    per_class, num_val = split_sizes(cfg, graph.num_nodes, graph.num_classes)
    return per_class_split(graph, per_class, num_val, seed=cfg.split_seed)


class Prepared(NamedTuple):
    graph: Graph      # split
    partition: Any    # fgl_jax.partition.Partition: the silos
    data: HiFGLData


def prepare(cfg: HiFGLConfig, graph: Graph | None = None) -> Prepared:
    """Load (unless given), split, partition into `cfg.clients` random silos, build HiFGLData."""
    from fgl_jax.data import load_graph
    from fgl_jax.partition import random_partition
    if graph is None:
        graph = load_graph(cfg.dataset, data_dir=cfg.data_dir)
    graph = split_graph(graph, cfg)
    if cfg.clients > graph.num_nodes:
        raise ValueError(f"clients={cfg.clients} is more than the {graph.num_nodes} nodes of {graph.name!r}")
    part = random_partition(graph, cfg.clients, seed=cfg.partition_seed)
    return Prepared(graph, part, make_hifgl_data(graph, part.assignment, cfg.clients, edges=cfg.edges))
