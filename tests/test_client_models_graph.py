"""Heterogeneous client models on graph classification (`--task graph_cls --client-models gin:1x4,gcn:2x4`):
groups of graph classifiers, one vmapped group per architecture, the prototype or logit exchange unchanged.

- one architecture for every client through the grouped path equals the homogeneous graph_cls run
  bit for bit (metrics, prototypes, personal models; FedProto in the default suite, FedDistill and
  FedTGP behind slow);
- two architectures with client sampling (by mask): finite per-client metrics and the per-client
  spread at the best round; through `fgl-jax run` on a toy TU directory (slow): the spread in
  summary.json, the run stopped and resumed equals the uninterrupted one, the seed sweep runs;
- one-line refusals: a parameter-averaging algorithm, a node model name, graph_reg, prototype widths
  that differ.
"""
import json

import jax
import numpy as np
import pytest

from fgl_jax import schema
from fgl_jax.systems.baseline.config import RunConfig
from fgl_jax.systems.baseline.program import build

from tests.test_graph_batch import toy_set

ROUNDS = 2


def make_cfg(**kw) -> RunConfig:
    base = dict(task="graph_cls", dataset="unused", clients=3, rounds=ROUNDS, hidden=4, num_layers=1,
                graph_batch_size=4, lr=0.05)
    return schema.make(RunConfig, {**base, **kw})


@pytest.fixture(scope="module")
def graphs():
    """30 toy graphs, two classes, a class signal in the features (so the models learn something)."""
    gs = toy_set(num_graphs=30, seed=6)
    owner = np.repeat(np.arange(gs.num_graphs), gs.nodes_per_graph)
    gs.x[:, 0] += gs.y[owner].astype(np.float32)
    return gs


def _run(prog, rounds=ROUNDS):
    """The program's rounds one jitted step at a time (one compilation): (final state, per-round metrics)."""
    state = prog.algorithm.init(jax.random.key(0), prog.data)
    step = jax.jit(prog.algorithm.round)
    hist = []
    for r in range(rounds):
        state, m = step(state, prog.data, jax.random.key(10 + r))
        hist.append(jax.device_get(m))
    return jax.device_get(state), hist


def _assert_equal_runs(homo, het):
    (s_homo, h_homo), (s_het, h_het) = homo, het
    for a, b in zip(h_homo, h_het):
        assert set(a) == set(b)
        for k in a:   # exact: the grouped path runs the same operations on the same rows
            np.testing.assert_array_equal(np.asarray(a[k]), np.asarray(b[k]), err_msg=k)
    np.testing.assert_array_equal(s_homo.protos, s_het.protos)
    assert isinstance(s_het.personal, tuple) and len(s_het.personal) == 1
    for x, y in zip(jax.tree.leaves(s_homo.personal), jax.tree.leaves(s_het.personal[0])):
        np.testing.assert_array_equal(x, y)
    assert s_homo.present.any() and np.abs(s_homo.protos).max() > 0   # something was exchanged


@pytest.mark.parametrize("name", ["fedproto", pytest.param("feddistill", marks=pytest.mark.slow),
                                  pytest.param("fedtgp", marks=pytest.mark.slow)])
def test_one_architecture_equals_the_homogeneous_graph_run(graphs, name):
    # the run's own classifier (GIN, 1 layer, width 4) named as the one architecture of every client
    homo = _run(build(make_cfg(algorithm=name), graph=graphs))
    het = _run(build(make_cfg(algorithm=name, client_models="gin:1x4"), graph=graphs))
    _assert_equal_runs(homo, het)
    assert "test_acc_clients_sd" in het[1][-1]   # the per-client spread of the graph task


def write_tu_set(folder, gs):
    """`gs` as a TU directory (A, graph_indicator, graph_labels, node_attributes; 1-based ids)."""
    folder.mkdir(parents=True)
    name = folder.name
    edges = np.stack([gs.senders, gs.receivers], 1) + 1
    (folder / f"{name}_A.txt").write_text("".join(f"{a}, {b}\n" for a, b in edges))
    owner = np.repeat(np.arange(gs.num_graphs), gs.nodes_per_graph) + 1
    (folder / f"{name}_graph_indicator.txt").write_text("".join(f"{g}\n" for g in owner))
    (folder / f"{name}_graph_labels.txt").write_text("".join(f"{y}\n" for y in gs.y))
    (folder / f"{name}_node_attributes.txt").write_text("".join(", ".join(f"{v:.6f}" for v in row) + "\n"
                                                                for row in gs.x))
    return folder


def _cli_base(folder, *flags):
    return ["run", "--task", "graph_cls", "--dataset", str(folder), "--algorithm", "fedproto", "--clients", "3",
            "--client-models", "gin:1x4,gcn:2x4", "--clients-per-round", "2", "--hidden", "4", "--num-layers", "1",
            "--graph-batch-size", "4", "--lr", "0.05", "--no-progress", *flags]


@pytest.mark.slow  # ~17 s CPU (two traced groups); the slow CLI test covers the same path end to end
def test_two_architectures_with_sampling_report_the_spread(graphs):
    """gin:1x4 and gcn:2x4 (2 + 1 clients), two of three clients a round (by mask): one program, finite
    per-client metrics, and the run's best round (summary.json's `best`) carries the per-client spread."""
    from fgl_jax import run
    prog = build(make_cfg(algorithm="fedproto", client_models="gin:1x4,gcn:2x4", clients_per_round=2), graph=graphs)
    assert prog.describe["client_models"] == {"spec": "gin:1x4,gcn:2x4"}
    res = run(prog.algorithm, prog.data, jax.random.key(0), ROUNDS, progress=False)
    state = jax.device_get(res.state)
    # the groups keep their own shapes: GCN's 2 conv layers vs GIN's 1 (two Dense each)
    assert [len(jax.tree.leaves(p)) for p in state.personal] == [8, 8]
    assert state.personal[0]["params"].keys() != state.personal[1]["params"].keys()
    for k in ("train_loss", "test_acc", "test_acc_clients_mean", "test_acc_clients_worst10", "test_acc_clients_sd"):
        assert np.isfinite(res.history[k]).all(), k
    for k in ("best_test_acc_clients_mean", "best_test_acc_clients_worst10", "best_test_acc_clients_sd"):
        assert np.isfinite(res.best[k]), k


@pytest.mark.slow
def test_two_architectures_cli_summary_resume_and_sweep(tmp_path, graphs):
    """`fgl-jax run` with two architectures and client sampling writes the per-client spread to
    summary.json; stopped after one round and resumed, it gives the uninterrupted run's metrics; the
    seed sweep runs."""
    from fgl_jax.cli import main
    folder = write_tu_set(tmp_path / "TOYHET", graphs)
    full, part = tmp_path / "full", tmp_path / "part"
    assert main([*_cli_base(folder), "--rounds", "2", "--out", str(full)]) == 0
    summary = json.loads((full / "summary.json").read_text())
    assert summary["describe"]["client_models"] == {"spec": "gin:1x4,gcn:2x4"}
    for k in ("best_test_acc_clients_mean", "best_test_acc_clients_worst10", "best_test_acc_clients_sd"):
        assert np.isfinite(summary["best"][k]), k
    assert main([*_cli_base(folder), "--rounds", "1", "--out", str(part)]) == 0
    assert main([*_cli_base(folder), "--rounds", "2", "--out", str(part), "--resume",
                 "--resume-with-changes", "rounds"]) == 0
    rows = lambda d: [json.loads(line) for line in (d / "metrics.jsonl").read_text().splitlines()]
    a, b = rows(full), rows(part)
    assert len(a) == len(b) == 2
    for key in ("train_loss", "val_acc", "test_acc", "test_acc_clients_sd"):
        np.testing.assert_allclose([r[key] for r in a], [r[key] for r in b], rtol=1e-5, atol=1e-6, err_msg=key)
    sweep = ["sweep", *_cli_base(folder)[1:], "--rounds", "2", "--seeds", "0,1", "--out", str(tmp_path / "sweep")]
    assert main(sweep) == 0


# --- refusals (no compilation) ----------------------------------------------------------------------------------

@pytest.mark.parametrize("kw, match", [
    (dict(algorithm="fedavg", client_models="gin:1x4,gcn:2x4"),
     "algorithm 'fedavg' averages model parameters, which needs one architecture"),
    (dict(algorithm="fedproto", client_models="gin:1x4,sage:2x4"),
     "unknown graph model layer 'sage' in 'sage:2x4'; choose one of \\['gcn', 'gin'\\]"),
    (dict(algorithm="fedproto", client_models="gin:1x4", task="graph_reg"),
     "heterogeneous client models are for tasks node_cls and graph_cls, not graph_reg"),
])
def test_config_refusals_are_one_line(kw, match):
    with pytest.raises(ValueError, match=match) as err:
        make_cfg(**kw)
    assert "\n" not in str(err.value)


def test_prototype_widths_must_agree(graphs):
    # the prototype is the readout, HIDDEN wide: refused while the run is built (before any compilation)
    with pytest.raises(ValueError, match="one width across architectures, got gin:1x4 -> 4, gcn:2x8 -> 8"):
        build(make_cfg(algorithm="fedproto", client_models="gin:1x4,gcn:2x8"), graph=graphs)


def test_client_models_file_on_a_graph_task(tmp_path):
    from fgl_jax.federated.client_models import ArchSpec, read_client_models_file
    f = tmp_path / "models.txt"
    f.write_text("gin:2x8\ngcn:3x8  # deeper\n")
    assert read_client_models_file(str(f), "graph_cls") == (ArchSpec("gin", 2, 8), ArchSpec("gcn", 3, 8))
    with pytest.raises(ValueError, match=r"models.txt:1: unknown model 'gin'"):
        read_client_models_file(str(f), "node_cls")
