"""Graph-level FL through the engine: graph regression learns a planted target, one client equals
centralised training on the same mini-batches (an optax loop written here), the partition and split,
the CLI with resume and client sampling on MUTAG, and one-line refusals."""
import dataclasses
import json

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from fgl_jax import schema
from fgl_jax.federated.graph_task import graph_loss
from fgl_jax.partition.graphs import dirichlet_graph_partition, per_client_graph_split, uniform_graph_partition
from fgl_jax.systems.baseline.config import RunConfig
from fgl_jax.systems.baseline.program import build

from tests.test_graph_batch import toy_set


def make_cfg(**kw) -> RunConfig:
    base = dict(task="graph_cls", dataset="unused", clients=3, rounds=2, hidden=8, graph_batch_size=4, lr=0.01)
    return schema.make(RunConfig, {**base, **kw})


@pytest.mark.slow
def test_graph_regression_learns_a_planted_target():
    gs = toy_set(num_graphs=120, features=2, seed=5)
    # target: mean of feature 0 over the graph's nodes, times 3, plus the node count / 3 (readable by mean pooling
    # only through the features: feature 1 carries the node count)
    n = gs.nodes_per_graph
    x = gs.x.copy()
    x[:, 1] = np.repeat(n / 3.0, n)
    y = np.array([3 * x[a:b, 0].mean() for a, b in zip(gs.node_offsets[:-1], gs.node_offsets[1:])]) + n / 3.0
    gs = dataclasses.replace(gs, x=x, y=y.astype(np.float32), num_classes=0)
    cfg = make_cfg(task="graph_reg", clients=4, rounds=40, local_steps=2, hidden=16, lr=0.01, graph_batch_size=8,
                   split="per_client", train_frac=0.6, val_frac=0.2, test_frac=0.2)
    prog = build(cfg, graph=gs)
    from fgl_jax import run
    res = run(prog.algorithm, prog.data, jax.random.key(0), cfg.rounds, progress=False)
    var = float(np.var(y))
    assert res.final["train_mse"] < 0.1 * var, (res.final, var)
    assert res.final["test_mse"] < 0.2 * var, (res.final, var)
    assert res.best["best_val"] == pytest.approx(max(res.history["val_score"]))   # selected by val_score


@pytest.mark.slow
@pytest.mark.parametrize("algorithm", ["fedavg", "gcfl_plus"])
def test_one_client_equals_centralised_training(algorithm):
    gs = toy_set(num_graphs=30, seed=2)
    cfg = make_cfg(algorithm=algorithm, clients=1, rounds=3, local_steps=2, graph_batch_size=4)
    prog = build(cfg, graph=gs)
    alg, data = prog.algorithm, prog.data
    # GCFL+ keeps every client's cluster model on the client axis: one client, one cluster
    model_of = (lambda s: s.server) if algorithm == "fedavg" else (lambda s: jax.tree.map(lambda a: a[0], s.models))
    state = alg.init(jax.random.key(0), data)
    params0 = model_of(state)
    round_fn = jax.jit(alg.round)
    for r in range(cfg.rounds):
        state, _ = round_fn(state, data, jax.random.key(r + 1))
    final = model_of(state)
    # the reference: plain Adam over the client's training mini-batches, in order, epoch after epoch
    from fgl_jax.systems.baseline.graph_fl import graph_model
    model = graph_model(cfg, gs)
    batch = jax.tree.map(lambda a: a[0], data.train)
    opt = optax.adam(cfg.lr)
    p, o = params0, opt.init(params0)
    loss = lambda q, b: graph_loss(model, model.apply(q, b), b)

    @jax.jit
    def adam_step(p, o, b):
        u, o = opt.update(jax.grad(loss)(p, b), o, p)
        return optax.apply_updates(p, u), o

    real = [j for j in range(batch.num_minibatches) if np.asarray(batch.train_mask[j]).any()]
    assert len(real) >= 2
    for _ in range(cfg.rounds * cfg.local_steps):
        for j in real:
            p, o = adam_step(p, o, batch.minibatch(j))
    for a, b in zip(jax.tree.leaves(final), jax.tree.leaves(p)):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=2e-4, atol=2e-6)
    # and the global model moved (the comparison is not of two untouched initialisations)
    assert max(float(jnp.abs(a - b).max()) for a, b in zip(jax.tree.leaves(final),
                                                           jax.tree.leaves(params0))) > 1e-3


def test_partitions_and_openfgl_split():
    y = np.repeat([0, 1, 2], [50, 30, 20])
    a = uniform_graph_partition(100, 7, seed=1)
    assert sorted(np.bincount(a).tolist()) == [14, 14, 14, 14, 14, 15, 15]
    d = dirichlet_graph_partition(y, 5, beta=0.3, seed=0)
    assert d.shape == (100,) and np.bincount(d, minlength=5).min() >= 1
    m = per_client_graph_split(y, a, 7, (0.8, 0.1, 0.1), seed=0)
    assert not (m["train"] & m["val"]).any() and not (m["val"] & m["test"]).any()
    for c in range(7):                                       # OpenFGL: floor(0.8 n) train per class per client
        for k in range(3):
            n = int(((a == c) & (y == k)).sum())
            assert int((m["train"] & (a == c) & (y == k)).sum()) == int(0.8 * n)
            assert int((m["val"] & (a == c) & (y == k)).sum()) == int(0.9 * n) - int(0.8 * n)


@pytest.mark.parametrize("flags, match", [
    (["--algorithm", "fedgcn"], "task graph_cls: algorithm 'fedgcn' needs node-level structure"),
    (["--partition", "louvain"], "partition='louvain' splits nodes"),
    (["--model", "sage"], "model='sage' is a node-level model"),
    (["--eval-mode", "global_model_on_global_data"], "not available for task graph_cls"),
    (["--dataset", "cora"], "dataset 'cora' is a graph dataset, not a set of graphs"),
])
def test_refusals_are_one_line(capsys, flags, match):
    from fgl_jax.cli import main
    args = ["run", "--task", "graph_cls", "--dataset", "MUTAG_TU", "--rounds", "1", "--no-progress", *flags]
    assert main(args) != 0
    err = capsys.readouterr().err.strip()
    assert match in err and len(err.splitlines()) == 1, err


@pytest.mark.slow
@pytest.mark.data
def test_cli_fedavg_mutag_resume_and_sampling(tmp_path, data_dir):
    from fgl_jax.cli import main
    base = ["run", "--task", "graph_cls", "--dataset", "MUTAG_TU", "--data-dir", str(data_dir), "--algorithm", "fedavg",
            "--clients", "5", "--clients-per-round", "3", "--partition", "dirichlet", "--dirichlet-beta", "1.0",
            "--hidden", "16", "--graph-batch-size", "8", "--no-progress"]
    full, part = tmp_path / "full", tmp_path / "part"
    assert main([*base, "--rounds", "4", "--out", str(full)]) == 0
    assert main([*base, "--rounds", "2", "--out", str(part)]) == 0
    assert main([*base, "--rounds", "4", "--out", str(part), "--resume", "--resume-with-changes", "rounds"]) == 0
    rows = lambda d: [json.loads(line) for line in (d / "metrics.jsonl").read_text().splitlines()]
    a, b = rows(full), rows(part)
    assert len(a) == len(b) == 4
    for key in ("train_loss", "val_acc", "test_acc"):
        np.testing.assert_allclose([r[key] for r in a], [r[key] for r in b], rtol=1e-5, atol=1e-6)
    assert all(r["participants"] == 3 for r in a)
    summary = json.loads((full / "summary.json").read_text())
    report = summary["describe"]["graph_report"]
    assert sum(report["graphs_per_client"]) == 188


GRAPH_ALGORITHMS = ("fedavg", "fedprox", "scaffold", "moon", "local", "global", "fedavgm", "fedadam", "fedyogi",
                    "fedproto", "fedtgp", "gcfl", "gcfl_plus", "gcfl_plus_dws", "fedstar")


def test_graph_algorithms_are_the_registered_ones():
    """The registry's tasks field is what admits an algorithm to graph_cls (a node-only one is refused
    by the config): the list the smoke below runs is exactly the registered one."""
    from fgl_jax import registry
    able = {e.name for e in registry.entries("algorithm") if "graph_cls" in e.spec.tasks}
    personalised = {"ditto", "fedbn", "fedrep", "apfl", "pfedme", "fedala", "fedem", "feddistill"}  # test_pfl_graph.py
    assert set(GRAPH_ALGORITHMS) | personalised == able


@pytest.mark.slow
def test_every_graph_algorithm_runs_two_rounds():
    """Each algorithm registered for graph_cls runs through build + run on a toy set: finite metrics
    (one compile per algorithm: behind `slow`)."""
    from fgl_jax import run
    gs = toy_set(num_graphs=24, seed=6)
    for name in GRAPH_ALGORITHMS:
        cfg = make_cfg(algorithm=name, clients=3, rounds=2, hidden=4, num_layers=1)
        prog = build(cfg, graph=gs)
        res = run(prog.algorithm, prog.data, jax.random.key(0), cfg.rounds, progress=False)
        for key in ("train_loss", "val_acc", "test_acc"):
            assert np.isfinite(res.history[key]).all(), (name, key)


def test_graph_order_index_walks_each_clients_graphs_in_ascending_ids():
    # OpenFGL's loaders (shuffle=False over ascending ids) against fgl_jax's default shuffled order:
    # the same graphs per client, in sorted order under "index"
    from fgl_jax.partition.graphs import client_groups
    from fgl_jax.systems.baseline import graph_train_order
    from fgl_jax.systems.baseline.graph_fl import prepare_graph_task
    a = np.random.default_rng(0).integers(0, 3, 40)
    keep = np.arange(40) % 4 != 0
    shuffled = client_groups(a, 3, keep, seed=5)
    index = client_groups(a, 3, keep, seed=5, order="index")
    for c in range(3):
        rows = np.flatnonzero((a == c) & keep)
        assert np.array_equal(index[c], rows) and np.array_equal(np.sort(shuffled[c]), rows)
    assert any(not np.array_equal(s, i) for s, i in zip(shuffled, index))
    gs = toy_set(num_graphs=60, seed=4)
    for order in ("shuffled", "index"):
        cfg = make_cfg(graph_order=order, client_exec="vmap", graph_batch_size=8)
        _, data, _ = prepare_graph_task(cfg, gs)
        per_client = [np.asarray(data.train.graph_ids)[c][np.asarray(data.train.graph_mask)[c]] for c in range(3)]
        assert all((np.diff(p) > 0).all() for p in per_client) == (order == "index")
        # the order a peer harness hands the other library is the one the packed mini-batches hold
        for p, rows in zip(per_client, graph_train_order(cfg, gs)):
            assert p.size and np.array_equal(p, rows)
