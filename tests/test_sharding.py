"""Scale-out (issue 8): client-sharded runs equal single-device runs; chunked client maps equal
vmap; the vectorised batch builder equals the per-client one; size buckets bound the padding."""
import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import jax
import numpy as np
import pytest

from fgl_jax.batch import (build_bucketed_batches, build_client_batch, padding_report, size_buckets, stack_graphs,
                           stack_partition)
from fgl_jax.federated import FedConfig, run
from fgl_jax.federated.chunking import map_clients
from fgl_jax.federated.sharding import pad_fed_data, shard_fed_data, client_mesh
from tests.helpers import toy_graph
from tests.sharding_worker import PROBLEMS, ROUNDS, _problem

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def workers():
    """Start the multi-device and the two multi-process workers at once (they overlap with the
    in-process reference compile below; the CPU is small)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = str(s.getsockname()[1])
    procs = {"devices": _launch(["devices", "4"]),
             "process": [_launch(["process", str(i), port, "2"]) for i in range(2)]}
    yield procs
    for p in [procs["devices"], *procs["process"]]:
        if p.poll() is None:
            p.kill()


@pytest.fixture(scope="module")
def reference(workers):
    """Plain `run` in this (one-device) process: the numbers every sharded run must reproduce."""
    out = {}
    for name, spec in PROBLEMS.items():
        alg, data = _problem(*spec)
        out[name] = run(alg, data, jax.random.key(0), ROUNDS)
    return out


def _launch(args, env_extra=None):
    env = {**os.environ, "PYTHONPATH": str(ROOT), **(env_extra or {})}
    env.pop("XLA_FLAGS", None)
    return subprocess.Popen([sys.executable, "-m", "tests.sharding_worker", *args], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _result(proc, timeout=240):
    out, err = proc.communicate(timeout=timeout)
    assert proc.returncode == 0, err[-3000:]
    return json.loads(out.split("RESULT ", 1)[1])


def _compare(ref, got):
    for k in ("train_loss", "val_acc", "test_acc", "val_loss"):
        np.testing.assert_allclose(got["history"][k], ref.history[k], rtol=2e-5, atol=2e-6, err_msg=k)
    for a, b in zip(got["server"], jax.tree.leaves(ref.state.server)):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-4, atol=1e-5)


@pytest.mark.slow
def test_four_devices_equal_one_device(reference, workers):
    got = _result(workers["devices"])
    assert got["devices"] == 4
    for name in PROBLEMS:
        _compare(reference[name], got["runs"][name])
    # 3 clients on 4 devices: padded with dummies, and the user is told
    assert any("4 devices but only 3 training clients" in w for w in got["warnings"])


@pytest.mark.slow
def test_two_processes_equal_one_device(reference, workers):
    """jax.distributed on one machine: 2 processes x 1 CPU device each, gloo collectives."""
    results = [_result(p) for p in workers["process"]]
    for got in results:
        assert got["devices"] == 2 and got["processes"] == 2
        _compare(reference["fedavg6"], got["runs"]["fedavg6"])


@pytest.mark.slow
def test_client_chunks_equal_vmap(reference):
    alg, data = _problem("fedavg", 6)
    # rebuild the same algorithm with client_chunk=4: blocks of 4 and a remainder of 2 clients
    from fgl_jax.federated import OptimConfig, baseline
    from fgl_jax.nn import make_model
    g = toy_graph(n=60, seed=2)
    model = make_model("gcn", g.num_features, g.num_classes, hidden=8, dropout=0.5)
    chunked = baseline(model, FedConfig("fedavg", local_steps=2, optim=OptimConfig(lr=0.05), client_chunk=4))
    res = run(chunked, data, jax.random.key(0), ROUNDS)
    ref = reference["fedavg6"]
    for k in ("train_loss", "val_acc", "test_acc"):
        np.testing.assert_allclose(res.history[k], ref.history[k], rtol=1e-5, atol=1e-6)


def test_map_clients_matches_vmap_and_checks_input():
    x = np.arange(35.0, dtype=np.float32).reshape(7, 5)
    w = np.linspace(0, 1, 5, dtype=np.float32)
    fn = lambda a, b: (a * b).sum() + a.max()
    want = jax.vmap(fn, in_axes=(0, None))(x, w)
    for chunk in (1, 2, 3, 7, 50):
        np.testing.assert_array_equal(map_clients(fn, chunk, in_axes=(0, None))(x, w), want)
    with pytest.raises(ValueError, match="client_chunk"):
        map_clients(fn, 0)
    with pytest.raises(ValueError, match="client_chunk"):
        FedConfig(client_chunk=-3)


def test_padding_is_inert_and_sharding_needs_multiple():
    alg, data = _problem("fedper", 3)
    padded, info = pad_fed_data(data, 4, warn=False)
    assert padded.train.num_clients == 4 and padded.eval.num_clients % 4 == 0 and info.dummies >= 1
    assert not np.asarray(padded.eval.client_mask)[3:].any()
    assert not np.asarray(padded.train.train_mask)[3:].any()
    np.testing.assert_array_equal(np.asarray(padded.train_weight)[3:], 0.0)
    # dummy training clients keep their personal state in a dummy evaluation slot
    assert (np.asarray(padded.train_index)[3:] >= data.eval.num_clients).all()
    with pytest.raises(ValueError, match="multiple"):
        pad_fed_data(data, 0)
    if len(jax.devices()) == 1:
        shard_fed_data(data, client_mesh())  # 3 clients on 1 device: fine


@pytest.mark.parametrize("sparse", [False, True])
def test_stack_partition_equals_stacked_subgraphs(sparse):
    # build_client_batch is stack_partition; the reference stacks one induced subgraph per client
    g = toy_graph(n=120, seed=3, sparse=sparse)
    a = np.random.default_rng(0).integers(0, 7, g.num_nodes)
    nodes = [np.flatnonzero(a == k) for k in range(7)]
    want, got = stack_graphs([g.subgraph(v) for v in nodes], nodes), stack_partition(g, a, 7)
    same = jax.tree.map(lambda x, y: np.array_equal(np.asarray(x), np.asarray(y)), want, got)
    assert all(jax.tree.leaves(same))
    sub = stack_partition(g, a, 7, clients=[5, 2])
    np.testing.assert_array_equal(np.asarray(sub.node_ids)[0, :10], np.asarray(want.node_ids)[5, :10])
    with pytest.raises(Exception, match="no nodes"):
        stack_partition(g, a, 9)


def test_size_buckets_bound_padding():
    rng = np.random.default_rng(0)
    sizes = np.maximum(1, rng.lognormal(3, 1.2, 500).astype(int))
    bucket, caps = size_buckets(sizes, max_ratio=1.5, multiple=1)
    padded = caps[bucket]
    assert (padded >= sizes).all()
    assert (padded < 1.5 * sizes + 1).all()          # per-client bound
    assert len(caps) <= int(np.ceil(np.log(sizes.max() / sizes.min()) / np.log(1.5))) + 1
    with pytest.raises(ValueError, match="max_ratio"):
        size_buckets(sizes, max_ratio=1.0)
    # skewed client sizes: buckets cut the node padding ratio well below one shared padded size
    g = toy_graph(n=400, seed=3)
    p = np.array([1, 1, 1, 2, 2, 4, 8, 16, 32, 64], float)
    a = rng.choice(10, g.num_nodes, p=p / p.sum())
    one = padding_report([build_client_batch(g, a, 10)])["node_padding_ratio"]
    rep = padding_report([b for _, b in build_bucketed_batches(g, a, 10, max_ratio=1.5)])
    assert rep["real_nodes"] == g.num_nodes
    assert rep["node_padding_ratio"] < 1.6 < one


@pytest.mark.slow
def test_bucketed_fedavg_equals_one_padded_batch():
    """FedAvg over size buckets == FedAvg over one common padded size (no dropout: same keys
    are not needed), with a much lower node padding ratio."""
    from fgl_jax.federated import OptimConfig, baseline, make_fed_data
    from fgl_jax.federated.bucketed import bucketed_baseline, make_bucketed_data
    from fgl_jax.nn import make_model
    g = toy_graph(n=160, seed=5)
    p = np.array([1, 1, 2, 4, 8, 16], float)
    a = np.random.default_rng(1).choice(6, g.num_nodes, p=p / p.sum())
    model = make_model("gcn", g.num_features, g.num_classes, hidden=8, dropout=0.0)
    cfg = FedConfig("fedavg", local_steps=2, optim=OptimConfig(lr=0.05))
    plain_data = make_fed_data(build_client_batch(g, a, 6))
    bdata, rep = make_bucketed_data(g, a, 6, max_ratio=1.5)
    assert len(bdata.buckets) >= 2
    assert rep["node_padding_ratio"] < padding_report([plain_data.eval])["node_padding_ratio"]
    want = run(baseline(model, cfg), plain_data, jax.random.key(3), 3)
    got = run(bucketed_baseline(model, cfg), bdata, jax.random.key(3), 3)
    for k in ("train_loss", "val_acc", "test_acc"):
        np.testing.assert_allclose(got.history[k], want.history[k], rtol=1e-5, atol=1e-6, err_msg=k)
    for x, y in zip(jax.tree.leaves(got.state.server), jax.tree.leaves(want.state.server)):
        np.testing.assert_allclose(x, y, rtol=1e-4, atol=1e-5)
    with pytest.raises(ValueError, match="bucketed_baseline supports"):
        bucketed_baseline(model, FedConfig("fedper"))
