"""Packed client execution of graph tasks (`--client-exec packed`) against the vmapped one: the same
clients, mini-batches and keys give the same models and metrics up to float round-off; the size
classes' budgets against a brute-force search; a re-padded mini-batch holds the same graphs."""
import itertools

import jax
import numpy as np
import pytest

from fgl_jax.graph_batch import pack_clients, size_class_budgets, with_size_classes
from fgl_jax.systems.baseline.program import build

from tests.test_graph_batch import toy_set
from tests.test_graph_fl import make_cfg


def _round_up8(n: int) -> int:
    return max(8, -(-n // 8) * 8)


def brute_force_slots(nodes: list, k: int) -> int:
    """The fewest padded node slots over every choice of at most k budgets among the rounded sizes."""
    cands = sorted({_round_up8(n) for n in nodes})
    best = None
    for r in range(1, k + 1):
        for chosen in itertools.combinations(cands, r):
            if chosen[-1] < max(_round_up8(n) for n in nodes):
                continue
            slots = sum(min(b for b in chosen if b >= _round_up8(n)) for n in nodes)
            best = slots if best is None else min(best, slots)
    return best


@pytest.mark.parametrize("k", [1, 2, 3])
def test_size_class_budgets_are_the_fewest_slots(k):
    rng = np.random.default_rng(k)
    nodes = rng.integers(1, 90, size=11).tolist()
    budgets = size_class_budgets(nodes, k)
    assert len(budgets) <= k and budgets == sorted(budgets) and budgets[-1] >= max(nodes)
    used = sum(min(b for b in budgets if b >= n) for n in nodes)
    assert used == brute_force_slots(nodes, k)


def plain(batch):
    """The [C, M, ...] fields of a GraphBatch (no client mask, no size-class view)."""
    return batch.replace(classes=None, step_class=None, step_slot=None, client_mask=None)


def test_size_class_view_holds_the_same_graphs():
    gs = toy_set(num_graphs=23, seed=4)
    groups = [np.arange(0, 15), np.arange(15, 19), np.arange(19, 23)]
    train = np.ones(gs.num_graphs, bool)
    train[[3, 16]] = False
    masks = {"train": train, "val": ~train, "test": np.zeros(gs.num_graphs, bool)}
    batch = with_size_classes(pack_clients(gs, groups, masks, batch_size=4), 2)
    cls, slot = np.asarray(batch.step_class), np.asarray(batch.step_slot)
    for c in range(3):
        for j in range(batch.num_minibatches):
            mb = jax.tree.map(lambda a: np.asarray(a)[c, j], plain(batch))
            if not mb.train_mask.any():
                assert cls[c, j] == -1
                continue
            view = jax.tree.map(lambda a: np.asarray(a)[c, slot[c, j]], plain(batch.classes[cls[c, j]]))
            n, e = int(mb.node_mask.sum()), int(mb.edge_mask.sum())
            assert view.x.shape[0] <= mb.x.shape[0] and int(view.node_mask.sum()) == n
            np.testing.assert_array_equal(view.x[:n], mb.x[:n])
            np.testing.assert_array_equal(view.node_graph[:n], mb.node_graph[:n])
            np.testing.assert_array_equal(view.senders[:e], mb.senders[:e])
            np.testing.assert_array_equal(view.receivers[:e], mb.receivers[:e])
            assert not view.edge_mask[e:].any() and (view.senders[e:] == view.x.shape[0] - 1).all()
            for f in ("y", "graph_mask", "train_mask", "val_mask", "graph_ids"):
                np.testing.assert_array_equal(getattr(view, f), getattr(mb, f))


def run_rounds(cfg, gs, rounds: int = 2):
    prog = build(cfg, graph=gs)
    state = prog.algorithm.init(jax.random.key(0), prog.data)
    step = jax.jit(prog.algorithm.round)
    history = []
    for r in range(rounds):
        state, m = step(state, prog.data, jax.random.key(r + 1))
        history.append({k: float(v) for k, v in m.items() if np.ndim(v) == 0})
    return prog, state, history


def assert_same_runs(algorithm: str, ignore: tuple = (), **kw):
    """Packed and vmapped runs of `algorithm` agree (state leaves whose path contains a string in
    `ignore` are not compared); returns the packed program."""
    gs = toy_set(num_graphs=40, seed=7)
    # label skew with a small beta: unequal clients (one of them several mini-batches, one a single short one)
    base = dict(algorithm=algorithm, clients=3, partition="dirichlet", dirichlet_beta=0.3, partition_seed=1,
                graph_batch_size=4, local_steps=2, dropout=0.5, graph_size_classes=2, num_layers=1, **kw)
    prog_p, packed, hist_p = run_rounds(make_cfg(client_exec="packed", **base), gs)
    prog_v, vmapped, hist_v = run_rounds(make_cfg(client_exec="vmap", **base), gs)
    sizes = np.asarray(prog_v.data.train.train_mask).sum(axis=(1, 2))
    assert len(set(sizes.tolist())) == len(sizes), sizes                      # unequal clients
    assert prog_p.data.train.packed and not prog_v.data.train.packed
    assert len(prog_p.data.train.classes) == 2
    for (path, a), b in zip(jax.tree_util.tree_leaves_with_path(packed), jax.tree.leaves(vmapped)):
        if any(name in jax.tree_util.keystr(path) for name in ignore):
            continue
        np.testing.assert_allclose(np.asarray(a, np.float64), np.asarray(b, np.float64), rtol=2e-5, atol=2e-6)
    for mp, mv in zip(hist_p, hist_v):
        assert mp.keys() == mv.keys()
        for key in mp:
            assert mp[key] == pytest.approx(mv[key], rel=1e-5, abs=1e-6), key
    return prog_p


@pytest.mark.parametrize("algorithm", ["fedavg", "scaffold"])
def test_packed_equals_vmapped(algorithm):
    assert_same_runs(algorithm)


def test_packed_batch_norm_evaluates_each_client_as_one_minibatch():
    """FedBN under batch norm: packed evaluation puts each client's graphs in one mini-batch (its
    statistics are the client's whole set), and the run equals the vmapped stacked evaluation."""
    # the bias of the conv layer before a batch norm: the norm subtracts its mean, so its exact
    # gradient is 0 and Adam turns either side's round-off gradient into steps of lr (its value never
    # reaches an output)
    prog = assert_same_runs("fedbn", ignore=("'conv_0_1']['bias']",), norm="batch")
    assert prog.data.eval.packed and prog.data.eval.num_minibatches == 1


@pytest.mark.slow
@pytest.mark.parametrize("algorithm", ["fedprox", "moon", "fedproto", "fedtgp", "gcfl_plus", "fedstar", "local",
                                       "ditto", "fedem"])
def test_packed_equals_vmapped_more_algorithms(algorithm):
    assert_same_runs(algorithm)
