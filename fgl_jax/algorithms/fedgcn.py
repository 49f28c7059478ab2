"""FedGCN (Yao, Jin, Ravi, Joe-Wong, NeurIPS 2023, arXiv:2201.12433): one pre-training exchange of
neighbour aggregates, then FedAvg of a GCN.

The first GCN layer of node i needs only  a_i = sum_j S_ij x_j  (S the GCN-normalised adjacency
D^-1/2 (A + I) D^-1/2 of the WHOLE graph, cross-client edges included). Before training, every
client k sends the server its share  sum_{j owned by k} S_ij x_j  for the nodes i it touches; the
server adds the shares (a_i = (S X)_i exactly) and returns to each client the rows it needs. The
rounds are then FedAvg of a GCN whose layer 0 is a linear map of a (no propagation; `GCN(
pre_aggregated=True)`) and whose later layers propagate over the client's graph. `fedgcn_hops`:

    0: no exchange: FedAvg of the run's model on the local subgraphs (cross-client edges lost);
    1: a_i for the client's own nodes; later layers propagate over the local subgraph;
    2: a_i for its own nodes and their 1-hop neighbours in other clients, and the edges among all
       of them; later layers propagate over that extended graph. With a 2-layer GCN this is the
       centralised GCN's first layer exactly and its second layer up to the degrees of the
       borrowed neighbours (their degree inside the extended graph, not the global one).

All of it is host preparation (`prepare`, run once); the jitted rounds are the baseline FedAvg
round with the pre-aggregated model. Labels and the train/val/test masks stay on the owned nodes
only; the borrowed neighbours are inputs, never trained on or evaluated.

Per round a client sends and receives the GCN (as FedAvg). The one-off exchange is counted apart
(`fedgcn_pre_bytes`, summary.json's `describe.pre_training_communication`): F floats per
touched node each way.

Differences from FedGraph (`fedgraph` 0.2.5, github FedGraph/fedgraph; `fedgcn_variant=fedgraph`
reproduces its arithmetic):
  - aggregate: FedGraph sends the raw neighbour sum (A X)_i (no self term, no normalisation:
    `get_1hop_feature_sum`); the paper's GCN layer uses the normalised S (we follow the paper).
  - node sets: FedGraph's `get_in_comm_indexes` gives every client its nodes plus their 1-hop
    neighbours for num_hops 1 AND 2 (both are our hops=2 structure); with the fedgraph variant
    hops 1 and 2 therefore both build the extended graph.
  - server average: FedGraph averages the trainers' models uniformly; we weight by training
    nodes (all algorithms here); the fedgraph variant averages uniformly.
  - model: FedGraph's AggreGCN is Linear -> ReLU -> dropout -> GCNConv (what GCN(pre_aggregated)
    is); its defaults (SGD lr 0.5, weight decay 5e-4, hidden 16, 3 local steps, final-round test
    accuracy) are FedGraph's, not fgl_jax's; the comparison harness sets them on both sides.
"""
from __future__ import annotations

import dataclasses

import jax.numpy as jnp
import numpy as np
import scipy.sparse as sp

from fgl_jax.batch import build_client_batch, stack_graphs
from fgl_jax.federated.algorithm import FedData, FederatedAlgorithm, HostInput
from fgl_jax.federated.config import FedConfig
from fgl_jax.federated.fedavg_family import baseline
from fgl_jax.graph import Graph
from fgl_jax.nn.models import GCN
from fgl_jax.registry import register
from fgl_jax.schema import option


@dataclasses.dataclass(frozen=True)
class FedGCNHParams:
    fedgcn_hops: int = option(2, "neighbour aggregates exchanged before training: 0 = none (FedAvg), "
                              "1 = of the client's own nodes, 2 = also of their 1-hop neighbours (with "
                              "the edges among them)", choices=(0, 1, 2))
    fedgcn_variant: str = option("paper", "paper = GCN-normalised aggregates D^-1/2(A+I)D^-1/2 X, training-"
                                 "node weights; fedgraph = FedGraph 0.2.5's raw neighbour sum A X, "
                                 "own + 1-hop nodes for hops 1 and 2, uniform server average",
                                 choices=("paper", "fedgraph"))


def neighbour_aggregate(graph: Graph, variant: str = "paper") -> sp.csr_matrix:
    """The first layer's neighbour aggregate of every node of the whole graph, [N, F] (CSR).

    paper: S X with S = D^-1/2 (A + I) D^-1/2, d_i = in-degree + 1 (what GCN's propagation does);
    fedgraph: A X (sum over in-neighbours, no self term). A_ij = number of edges j -> i."""
    n = graph.num_nodes
    a = sp.csr_matrix((np.ones(graph.num_edges, np.float64), (graph.receivers, graph.senders)), shape=(n, n))
    x = sp.csr_matrix(graph.x, dtype=np.float64) if sp.issparse(graph.x) else sp.csr_matrix(np.asarray(graph.x, np.float64))
    if variant == "fedgraph":
        return sp.csr_matrix(a @ x, dtype=np.float32)
    inv = 1.0 / np.sqrt(np.asarray(a.sum(axis=1)).ravel() + 1.0)
    s = sp.diags(inv) @ (a + sp.identity(n, format="csr")) @ sp.diags(inv)
    return sp.csr_matrix(s @ x, dtype=np.float32)


def fedgcn_server_view(graph: Graph, variant: str = "paper") -> np.ndarray:
    """What FedGCN's server learns per node in the pre-training exchange: the sum of the clients'
    shares of row i, i.e. the whole graph's first-layer aggregate (S X)_i (A X for the fedgraph
    variant), whatever the partition. The target of the attribute-inference probe
    (`fgl_jax.inference.linear_probe`, experiments/robustness/attribute_inference.py).

    Args:
        graph: the whole graph (N nodes, F features).
        variant: "paper" or "fedgraph" (`FedGCNHParams.fedgcn_variant`).

    Returns:
        float32 `[N, F]`, dense.
    """
    return np.asarray(neighbour_aggregate(graph, variant).toarray(), np.float32)


def client_node_sets(graph: Graph, assignment: np.ndarray, num_clients: int, extended: bool) -> list[np.ndarray]:
    """Each client's node ids (ascending); extended: plus every in-neighbour of them (1 hop)."""
    out = []
    for k in range(num_clients):
        own = np.flatnonzero(assignment == k)
        if extended:
            touched = np.isin(graph.receivers, own)
            own = np.union1d(own, graph.senders[touched])
        out.append(own)
    return out


def fedgcn_prepare(inp: HostInput, hp: FedGCNHParams):
    """Host step: the clients' batch with the pre-communicated aggregates as features."""
    if hp.fedgcn_hops == 0:
        return inp.batch, None
    g, assign, c = inp.graph, np.asarray(inp.assignment), inp.batch.num_clients
    agg = neighbour_aggregate(g, hp.fedgcn_variant)
    agg_graph = dataclasses.replace(g, x=agg if sp.issparse(g.x) else agg.toarray())
    extended = hp.fedgcn_hops == 2 or hp.fedgcn_variant == "fedgraph"
    if not extended:
        return build_client_batch(agg_graph, assign, c), None
    subs = []
    for k, nodes in enumerate(client_node_sets(g, assign, c, extended=True)):
        sub = agg_graph.subgraph(nodes, name=f"{g.name}[fedgcn client {k}]")
        own = assign[nodes] == k   # borrowed neighbours: inputs only, in no mask
        subs.append(dataclasses.replace(sub, train_mask=sub.train_mask & own, val_mask=sub.val_mask & own,
                                        test_mask=sub.test_mask & own))
    node_ids = client_node_sets(g, assign, c, extended=True)
    return stack_graphs(subs, node_ids, sparse=sp.issparse(g.x)), None


def fedgcn_pre_bytes(inp: HostInput, hp: FedGCNHParams) -> tuple[int, int]:
    """Bytes of the one-off exchange, summed over the clients: (up, down).

    Up: client k's share of row i of S X (or A X) for every node i one of its nodes j feeds
    (S_ij != 0: j itself, paper variant, and j's out-neighbours); down: the rows it gets back (its
    own nodes, plus their in-neighbours for the extended node set). F float32 entries per row, as
    dense rows (a sparse encoding would send less on bag-of-words features)."""
    if hp.fedgcn_hops == 0:
        return 0, 0
    g, assign, c = inp.graph, np.asarray(inp.assignment), inp.batch.num_clients
    row = 4 * g.num_features
    extended = hp.fedgcn_hops == 2 or hp.fedgcn_variant == "fedgraph"
    up = 0
    for k in range(c):
        own = np.flatnonzero(assign == k)
        fed = np.unique(g.receivers[np.isin(g.senders, own)])
        if hp.fedgcn_variant == "paper":  # S has the self term
            fed = np.union1d(fed, own)
        up += fed.size * row
    down = sum(nodes.size for nodes in client_node_sets(g, assign, c, extended)) * row
    return int(up), int(down)


@register("algorithm", "fedgcn", hparams=FedGCNHParams, prepare=fedgcn_prepare, pre_communication=fedgcn_pre_bytes,
          paper="Yao, Jin, Ravi, Joe-Wong, NeurIPS 2023, arXiv:2201.12433",
          help="FedGCN: neighbour aggregates exchanged once before training (0/1/2 hops), then FedAvg of a GCN")
def fedgcn(model, common: FedConfig, hp: FedGCNHParams) -> FederatedAlgorithm:
    if hp.fedgcn_hops > 0:
        if not isinstance(model, GCN):
            raise ValueError(f"fedgcn with fedgcn_hops={hp.fedgcn_hops} trains a GCN on pre-aggregated features; "
                             f"got model {type(model).__name__} (use --model gcn, or fedgcn_hops=0)")
        if common.eval_mode.endswith("global_data"):
            raise ValueError(f"fedgcn: eval_mode={common.eval_mode!r} would feed the global graph's raw features "
                             "to a model that expects pre-aggregated ones; use a *_on_local_data mode")
        model = model.clone(pre_aggregated=True)
    base = baseline(model, dataclasses.replace(common, algorithm="fedavg"))
    if hp.fedgcn_variant != "fedgraph":
        return base

    def round_fn(state, data: FedData, key):   # FedGraph: the server averages its trainers uniformly
        return base.round(state, data.replace(train_weight=jnp.ones_like(data.train_weight)), key)

    return base._replace(round=round_fn)
