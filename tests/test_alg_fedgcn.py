"""FedGCN: the pre-communicated aggregates against dense adjacency products (NumPy), the first layer
exact across clients, the extended (2-hop) client graphs; runs through build and the CLI (--resume)."""
import json

import jax
import numpy as np
import pytest
import scipy.sparse as sp

from fgl_jax.algorithms.fedgcn import FedGCNHParams, fedgcn_prepare, neighbour_aggregate
from fgl_jax.batch import build_client_batch, full_graph_batch, unstack
from fgl_jax.federated.algorithm import HostInput
from fgl_jax.nn.models import GCN
from fgl_jax.ops import SparseFeatures
from fgl_jax.partition import random_partition
from tests.helpers import dense_adj, toy_graph

C = 3


def _dense(f, n, width):
    if isinstance(f, SparseFeatures):
        out = np.zeros((n, width))
        np.add.at(out, (np.asarray(f.row), np.asarray(f.col)), np.asarray(f.val))
        return out
    return np.asarray(f, np.float64)


def _want(g, variant):
    a, x = dense_adj(g), g.dense_x().astype(np.float64)
    if variant == "fedgraph":
        return a @ x
    d = 1.0 / np.sqrt(a.sum(1) + 1.0)
    return (d[:, None] * (a + np.eye(g.num_nodes)) * d[None, :]) @ x


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("variant", ["paper", "fedgraph"])
def test_aggregate_is_the_dense_adjacency_product(sparse, variant):
    g = toy_graph(n=50, sparse=sparse, seed=1)
    got = neighbour_aggregate(g, variant).toarray()
    np.testing.assert_allclose(got, _want(g, variant), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("hops,variant", [(1, "paper"), (2, "paper"), (1, "fedgraph")])
def test_clients_receive_their_rows_and_keep_their_own_masks(hops, variant):
    g = toy_graph(n=60, sparse=True, seed=2)
    assign = np.asarray(random_partition(g, C, seed=0).assignment)
    plain = build_client_batch(g, assign, C)
    batch, extra = fedgcn_prepare(HostInput(g, assign, plain, 0), FedGCNHParams(hops, variant))
    assert extra is None
    want = _want(g, variant)
    a = dense_adj(g) > 0
    for c in range(C):
        b = unstack(batch, c)
        ids = np.asarray(b.node_ids)
        real = ids >= 0
        ids = ids[real]
        own = assign[ids] == c
        if hops == 1 and variant == "paper":   # the client's own nodes only
            np.testing.assert_array_equal(ids, np.flatnonzero(assign == c))
        else:                                  # own nodes + every neighbour of them
            touched = np.flatnonzero(assign == c)
            np.testing.assert_array_equal(ids, np.union1d(touched, np.flatnonzero(a[touched].any(0))))
            n_edges = int(np.asarray(b.edge_mask).sum())
            assert n_edges == int(a[np.ix_(ids, ids)].sum())   # every edge among them, cross-client ones too
        x = _dense(b.features, b.num_nodes, g.num_features)[real]
        np.testing.assert_allclose(x, want[ids], rtol=1e-5, atol=1e-5)
        for m in ("train", "val", "test"):
            got = np.asarray(getattr(b, f"{m}_mask"))[real]
            np.testing.assert_array_equal(got, getattr(g, f"{m}_mask")[ids] & own)


def test_first_layer_on_the_aggregates_equals_the_centralised_gcn_layer():
    """The point of FedGCN: with the exchanged S X, a client's first GCN layer on its own nodes is the
    whole graph's (cross-client edges included), which the plain local subgraph's is not."""
    g = toy_graph(n=60, seed=4)
    assign = np.asarray(random_partition(g, C, seed=0).assignment)
    plain = build_client_batch(g, assign, C)
    batch, _ = fedgcn_prepare(HostInput(g, assign, plain, 0), FedGCNHParams(1, "paper"))
    net = GCN(in_dim=g.num_features, hidden=8, num_classes=g.num_classes, num_layers=1)
    whole = unstack(full_graph_batch(g), 0)
    params = net.init(jax.random.key(0), whole)
    central = np.asarray(net.apply(params, whole))
    pre = net.clone(pre_aggregated=True)
    differs = False
    for c in range(C):
        ids = np.asarray(batch.node_ids[c])
        real = ids >= 0
        got = np.asarray(pre.apply(params, unstack(batch, c)))[real]
        np.testing.assert_allclose(got, central[ids[real]], rtol=1e-4, atol=1e-5)
        local = np.asarray(net.apply(params, unstack(plain, c)))[real]
        differs |= not np.allclose(local, central[ids[real]], atol=1e-4)
    assert differs


def test_fedgcn_needs_a_gcn_and_local_evaluation():
    from fgl_jax.systems.baseline import RunConfig, build
    with pytest.raises(ValueError, match="model SAGE"):
        build(RunConfig(dataset="csbm", algorithm="fedgcn", clients=3, rounds=1, hidden=8, split="keep", model="sage"))
    build(RunConfig(dataset="csbm", algorithm="fedgcn", clients=3, rounds=1, hidden=8, split="keep", model="sage",
                    fedgcn_hops=0))


@pytest.mark.slow
@pytest.mark.parametrize("hops", [0, 2])
def test_runs_through_build_with_partial_participation(hops):
    from fgl_jax import run
    from fgl_jax.systems.baseline import RunConfig, build
    prog = build(RunConfig(dataset="csbm", algorithm="fedgcn", clients=4, rounds=3, hidden=8, split="keep",
                           client_fraction=0.5, fedgcn_hops=hops, fedgcn_variant="fedgraph" if hops else "paper"))
    res = run(prog.algorithm, prog.data, jax.random.key(0), 3)
    assert np.isfinite(res.history["train_loss"]).all()


@pytest.mark.slow   # whole-run integration (compiles and runs a full program); the default suite stays short
def test_cli_run_and_resume(tmp_path):
    from fgl_jax.cli import main
    args = ["run", "--dataset", "csbm", "--split", "keep", "--clients", "3", "--hidden", "8", "--algorithm", "fedgcn",
            "--chunk", "1", "--checkpoint-every", "chunk", "--no-progress"]
    whole, part = tmp_path / "whole", tmp_path / "part"
    assert main([*args, "--rounds", "3", "--out", str(whole)]) == 0
    assert main([*args, "--rounds", "2", "--out", str(part)]) == 0
    assert main([*args, "--rounds", "3", "--out", str(part), "--resume", "--resume-with-changes", "rounds"]) == 0
    acc = lambda d: [json.loads(l)["test_acc"] for l in (d / "metrics.jsonl").read_text().splitlines()]
    assert acc(whole) == acc(part)


@pytest.mark.parametrize("hops, variant, rows_up, rows_down", [
    (1, "paper", 6, 4), (2, "paper", 6, 6), (1, "fedgraph", 6, 6), (2, "fedgraph", 6, 6)])
def test_pre_training_bytes_equal_a_hand_count(hops, variant, rows_up, rows_down):
    """Path 0-1-2-3 (both directions), clients {0, 1} and {2, 3}, F = 5 float32 features.
    Up: client 0's nodes feed rows {0, 1, 2} (paper: self terms 0, 1 and out-neighbours 1, 0, 2;
    fedgraph's A X: the out-neighbours alone, the same set here), client 1's rows {1, 2, 3}: 6 rows.
    Down: its own nodes (2 + 2) for hops 1 (paper); own + in-neighbours ({0, 1, 2}, {1, 2, 3}: 6 rows)
    for hops 2 and for the fedgraph variant, which always uses the extended set."""
    from fgl_jax.algorithms.fedgcn import FedGCNHParams, fedgcn_pre_bytes
    from fgl_jax.batch import build_client_batch
    from fgl_jax.data import from_edge_index
    from fgl_jax.federated.algorithm import HostInput
    x = np.ones((4, 5), np.float32)
    g = from_edge_index(np.array([[0, 1, 2], [1, 2, 3]]), x, np.array([0, 1, 0, 1]))
    assign = np.array([0, 0, 1, 1])
    inp = HostInput(g, assign, build_client_batch(g, assign, 2), 0)
    up, down = fedgcn_pre_bytes(inp, FedGCNHParams(fedgcn_hops=hops, fedgcn_variant=variant))
    assert (up, down) == (rows_up * 5 * 4, rows_down * 5 * 4)
