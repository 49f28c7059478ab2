"""The PFLlib comparison (benchmarks/peers/pfllib) trains PFLlib on the clients fgl_jax exports: the
exported arrays, read back per client (`exchange.node_clients`, what run_pfllib.py builds its model
inputs from), are the clients of fgl_jax's own prepared run: the same nodes, subgraph edges, labels
and train/test nodes as its client batch; the GCN adjacency equals a dense NumPy
D^-1/2 (A + I) D^-1/2; graph clients re-assemble each graph's edges. The comparison itself runs
outside CI."""
from __future__ import annotations

import numpy as np
import pytest

from benchmarks.peers import exchange
from benchmarks.peers.pfllib.compare import export_nodes
from fgl_jax.systems.baseline import RunConfig, prepare
from tests.helpers import toy_graph

C = 3


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    g = toy_graph(n=40, num_features=6, seed=3)
    prep = prepare(RunConfig(dataset="toy", algorithm="ditto", clients=C, partition="louvain", split="per_client"), g)
    path = tmp_path_factory.mktemp("pfllib") / "arrays.npz"
    export_nodes(prep, path)
    return prep, exchange.node_clients(np.load(path, allow_pickle=False), C)


def test_exported_clients_are_fgl_jax_clients(exported):
    prep, parts = exported
    b = prep.data.eval
    ids, nmask, emask = (np.asarray(a) for a in (b.node_ids, b.node_mask, b.edge_mask))
    s, r = np.asarray(b.graph.senders), np.asarray(b.graph.receivers)
    for c, p in enumerate(parts):
        real = ids[c][nmask[c]]
        np.testing.assert_array_equal(np.sort(real), p["nodes"])
        # the subgraph's edges as (sender id, receiver id) pairs: cross-client edges dropped on both sides
        mine = {(int(p["nodes"][u]), int(p["nodes"][v])) for u, v in zip(p["senders"], p["receivers"])}
        theirs = {(int(ids[c][u]), int(ids[c][v])) for u, v in zip(s[c][emask[c]], r[c][emask[c]])}
        assert mine == theirs and len(p["senders"]) == int(emask[c].sum())
        for split in ("train", "test"):
            want = np.sort(ids[c][np.asarray(getattr(b, f"{split}_mask"))[c] & nmask[c]])
            np.testing.assert_array_equal(p["nodes"][p[split]], want)
        np.testing.assert_array_equal(p["y"], np.asarray(prep.graph.y)[p["nodes"]])


def test_gcn_adjacency_is_the_symmetric_normalisation(exported):
    _, parts = exported
    p = max(parts, key=lambda q: len(q["senders"]))
    n = len(p["nodes"])
    rows, cols, vals = exchange.gcn_adjacency(p["senders"], p["receivers"], n)
    got = np.zeros((n, n))
    np.add.at(got, (rows, cols), vals)
    a = np.zeros((n, n))
    np.add.at(a, (p["receivers"], p["senders"]), 1.0)
    a += np.eye(n)
    d = a.sum(1) ** -0.5
    np.testing.assert_allclose(got, d[:, None] * a * d[None, :], rtol=1e-6)


def test_graph_clients_reassemble_each_graph(tmp_path):
    # three graphs (2, 3, 1 nodes) with edges 0-1 | 2-3, 3-4 | none; graphs 0 and 2 on client 1
    x = np.arange(6, dtype=np.float32)[:, None]
    s, r = np.array([0, 1, 2, 3, 3, 4]), np.array([1, 0, 3, 2, 4, 3])
    exchange.write_graphs(tmp_path / "g.npz", x, [0, 2, 5, 6], s, r, [0, 2, 6, 6], [1, 0, 1], [1, 0, 1],
                          [True, True, False], [False, False, True])
    c0, c1 = exchange.graph_clients(np.load(tmp_path / "g.npz", allow_pickle=False), 2)
    np.testing.assert_array_equal(c0["graphs"], [1])
    np.testing.assert_array_equal(c0["x"][:, 0], [2, 3, 4])
    np.testing.assert_array_equal(np.stack([c0["senders"], c0["receivers"]]), [[0, 1, 1, 2], [1, 0, 2, 1]])
    np.testing.assert_array_equal(c1["graphs"], [0, 2])
    np.testing.assert_array_equal(c1["x"][:, 0], [0, 1, 5])
    np.testing.assert_array_equal(c1["node_graph"], [0, 0, 1])
    np.testing.assert_array_equal(np.stack([c1["senders"], c1["receivers"]]), [[0, 1], [1, 0]])
    np.testing.assert_array_equal(c1["train"], [0])
    np.testing.assert_array_equal(c1["test"], [1])
    np.testing.assert_array_equal(c0["train"], [0])
    assert len(c0["test"]) == 0
    assert "val" not in c0    # no val_mask written: no val key

    exchange.write_graphs(tmp_path / "v.npz", x, [0, 2, 5, 6], s, r, [0, 2, 6, 6], [1, 0, 1], [1, 0, 1],
                          [True, False, False], [False, False, True], val_mask=[False, True, False])
    v0, v1 = exchange.graph_clients(np.load(tmp_path / "v.npz", allow_pickle=False), 2)
    np.testing.assert_array_equal(v0["val"], [0])     # graph 1, client 0's first graph
    assert len(v1["val"]) == 0 and len(v0["train"]) == 0


def _run(seed, fgl, pfl, **extra):
    side = lambda acc: {"test_acc": acc, "curve": [acc] * 4, "ms_per_round": 1.0, "cpu_ms_per_round": 1.0}
    return {"seed": seed, "fgl_jax": side(fgl), "pfllib": {**side(pfl), **extra}, "loadavg": [1.0]}


def test_runs_merge_by_seed_keeping_each_runs_provenance():
    # seeds 1-2 added to a record that holds seeds 0-1: seed 0 kept with its old provenance and command,
    # seed 1 replaced by the new run, sorted by seed
    from benchmarks.peers.pfllib.compare import merge_runs
    old = {"command": "old cmd", "provenance": {"started": "then"}, "runs": [_run(0, 0.5, 0.4), _run(1, 0.1, 0.1)]}
    new = {"command": "new cmd", "runs": [_run(1, 0.9, 0.8), _run(2, 0.7, 0.6)]}
    runs = merge_runs(old, new)["runs"]
    assert [r["seed"] for r in runs] == [0, 1, 2]
    assert runs[0]["provenance"] == {"started": "then"} and runs[0]["command"] == "old cmd"
    assert runs[1]["fgl_jax"]["test_acc"] == 0.9 and runs[1]["command"] == "new cmd"
    assert "provenance" not in runs[1] and merge_runs(None, new) is new


def test_over_seeds_row_is_the_mean_and_sd_of_the_per_seed_differences():
    from benchmarks.peers.pfllib.compare import over_seeds
    cell = {"dataset": "PROTEINS", "algorithm": "fedavg", "variant": "", "rounds": 3, "compile_seconds": 1.0,
            "runs": [_run(0, 0.80, 0.75), _run(1, 0.70, 0.72), _run(2, 0.90, 0.90)]}
    r = over_seeds(cell)
    d = np.array([5.0, -2.0, 0.0])
    assert r["diff (pts) mean ± sd"] == f"{d.mean():+.2f} ± {d.std(ddof=1):.2f}"
    assert r["diff min / max"] == "-2.00 / +5.00" and r["seeds"] == "0,1,2"
    assert r["fgl_jax acc %"] == f"{np.mean([80, 70, 90]):.2f} ± {np.std([80, 70, 90], ddof=1):.2f}"


def test_a_second_reading_of_one_pfllib_run_fills_its_own_cell():
    # --fedala-eval-trained: the default cell keeps PFLlib's number, the toggled one reads the extra curve
    from types import SimpleNamespace
    from benchmarks.peers.pfllib.compare import reading, readings
    a = SimpleNamespace(pfedme_eval_theta=False, fedala_eval_trained=True)
    reads = readings("fedala", a)
    result = _run(0, 0.5, 0.6, extra_evaluations={"trained": {"test_acc": 0.55, "curve": [0.55] * 4}})["pfllib"]
    own, trained = (reading(result, reads[k]) for k in ("", "PFLlib evaluates trained theta_i"))
    assert own["test_acc"] == 0.6 and trained["test_acc"] == 0.55 and trained["curve"] == [0.55] * 4
    assert "extra_evaluations" not in own and "extra_evaluations" not in trained
    assert readings("fedala", SimpleNamespace(pfedme_eval_theta=False, fedala_eval_trained=False)) == {"": None}
