"""The graph backdoor (fgl_jax.federated.backdoor) and the attacks on graph tasks.

- the trigger planting against a hand-built toy graph (edges, features, labels), the poisoned-item
  draw's counts;
- one compiled FedAvg-GIN round on a toy graph_cls task, run with the attacker fraction 0 and 0.5 (a
  traced value, so one program): with 0 attackers test_asr equals the clean model's false-trigger rate
  computed independently (a NumPy forward pass of the final global model over the triggered test
  graphs, `tests.test_graph_batch.dense_reference`); with half the clients attacking it rises well
  above it (stated margin below);
- the same two statements for node classification on a CSBM graph (behind `slow`), and the node
  trigger planting against a hand-built toy graph;
- every upload attack, label flipping and the robust aggregators run on graph_cls (one cheap case in
  the default suite, the rest behind `slow`).
"""
import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from fgl_jax import schema
from fgl_jax.aggregators.attacks import flip_labels
from fgl_jax.data.tu import GraphSet
from fgl_jax.federated.backdoor import (TRIGGER_VALUE, plant_graph_triggers, plant_node_triggers, poison_choice,
                                        trigger_edges, trigger_features)
from fgl_jax.systems.baseline.config import RunConfig
from fgl_jax.systems.baseline.graph_fl import graph_split
from fgl_jax.systems.baseline.program import build

from tests.test_graph_batch import dense_reference, toy_set


def _edges(s, r) -> set:
    return set(zip(np.asarray(s).tolist(), np.asarray(r).tolist()))


# ----------------------------------------------------------------------------------- host side

def test_trigger_edges_complete_and_empty_and_er_density():
    s, r = trigger_edges(4, 1.0, seed=3)
    assert _edges(s, r) == {(a, b) for a in range(4) for b in range(4) if a != b}   # K4, both directions
    assert len(s) == 12
    assert trigger_edges(4, 0.0, seed=3)[0].size == 0
    # G(t, p): every one of the t(t-1)/2 pairs kept with probability p; over 200 seeds of t = 6, p = 0.3
    # the kept fraction has sd sqrt(0.21 / 3000) = 0.008: within 0.04 (5 sd)
    kept = np.mean([trigger_edges(6, 0.3, seed)[0].size / 2 / 15 for seed in range(200)])
    assert abs(kept - 0.3) < 0.04
    s, r = trigger_edges(6, 0.5, seed=1)
    assert _edges(s, r) == {(b, a) for a, b in _edges(s, r)}                          # undirected
    with pytest.raises(ValueError, match="density must be in"):
        trigger_edges(3, 1.5, seed=0)


def test_planting_adds_exactly_the_trigger_on_a_toy_graph():
    # graph 0: path 0-1-2 (3 nodes); graph 1: one edge 0-1 (2 nodes); features 2-wide
    x = np.arange(10, dtype=np.float32).reshape(5, 2)
    s = np.array([0, 1, 1, 2, 3, 4], np.int32)
    r = np.array([1, 0, 2, 1, 4, 3], np.int32)
    gs = GraphSet("t", x, s, r, np.array([0, 3, 5]), np.array([0, 4, 6]), np.array([1, 1], np.int32), 2)
    out = plant_graph_triggers(gs, [1], size=3, density=1.0, target=0, seed=7)
    np.testing.assert_array_equal(out.y, [1, 0])                     # only the poisoned graph relabelled
    np.testing.assert_array_equal(out.nodes_per_graph, [3, 5])
    x0, s0, r0 = out.graph(0)
    np.testing.assert_array_equal(x0, x[:3])
    assert _edges(s0, r0) == {(0, 1), (1, 0), (1, 2), (2, 1)}
    x1, s1, r1 = out.graph(1)
    np.testing.assert_array_equal(x1[:2], x[3:5])
    np.testing.assert_array_equal(x1[2:], np.full((3, 2), TRIGGER_VALUE))
    got = _edges(s1, r1)
    cross = {(a, b) for a, b in got if a < 2 <= b}                  # original node -> trigger node
    assert len(cross) == 1
    u, v = next(iter(cross))
    assert v == 2 and u in (0, 1)                                   # joined at trigger node 0 to one node
    triangle = {(a, b) for a in (2, 3, 4) for b in (2, 3, 4) if a != b}
    assert got == {(0, 1), (1, 0)} | triangle | {(u, 2), (2, u)}
    assert len(s1) == len(got)                                       # no duplicate edge
    # nothing poisoned: the same set back
    same = plant_graph_triggers(gs, [], size=3, density=1.0, target=0, seed=7)
    np.testing.assert_array_equal(same.senders, gs.senders)
    np.testing.assert_array_equal(same.x, gs.x)


def test_poison_choice_takes_round_rate_of_each_clients_candidates():
    owner = np.repeat(np.arange(3), 10)
    cand = np.tile(np.arange(10) < 7, 3)                             # 7 candidates per client
    got = poison_choice(owner, cand, 3, 0.5, seed=0)
    assert not (got & ~cand).any()
    np.testing.assert_array_equal(np.bincount(owner[got], minlength=3), [4, 4, 4])   # round(3.5) = 4
    assert not poison_choice(owner, cand, 3, 0.0, seed=0).any()


def test_flip_labels_broadcasts_over_graph_batches():
    y = jnp.asarray(np.arange(24).reshape(2, 3, 4) % 3, jnp.int32)   # [C, M, G]
    got = np.asarray(flip_labels(y, jnp.asarray([True, False]), 3))
    np.testing.assert_array_equal(got[0], (np.asarray(y)[0] + 1) % 3)
    np.testing.assert_array_equal(got[1], np.asarray(y)[1])


# ----------------------------------------------------------------------------------- one program

def learnable_set(num_graphs: int, seed: int) -> GraphSet:
    """toy_set graphs labelled by whether the mean of feature 0 over the graph's nodes is positive."""
    gs = toy_set(num_graphs=num_graphs, seed=seed)
    y = [int(gs.x[gs.node_offsets[g]:gs.node_offsets[g + 1], 0].mean() > 0) for g in range(gs.num_graphs)]
    return dataclasses.replace(gs, y=np.asarray(y, np.int32))


ROUNDS = 6
TARGET = 0


@pytest.fixture(scope="module")
def backdoor_runs():
    """(cfg, gs, {fraction: (final state, last metrics)}) of one compiled round, fractions 0 and 0.5."""
    gs = learnable_set(240, seed=11)
    cfg = schema.make(RunConfig, dict(
        task="graph_cls", dataset="unused", clients=4, rounds=ROUNDS, hidden=8, num_layers=1, graph_batch_size=16,
        split="per_client", train_frac=0.5, val_frac=0.1, test_frac=0.4, local_steps=2, lr=0.03,
        attack="backdoor", attackers=0.5, attack_poison_rate=0.5, attack_target=TARGET, attack_trigger_size=4,
        attack_density=1.0))
    prog = build(cfg, graph=gs)
    step = jax.jit(prog.algorithm.round)
    out = {}
    for frac in (0.0, 0.5):
        state = prog.algorithm.init(jax.random.key(0), prog.data)
        state = state.replace(hp={**state.hp, "attackers": jnp.float32(frac)})
        for r in range(ROUNDS):
            state, metrics = step(state, prog.data, jax.random.key(r))
        out[frac] = (state, jax.tree.map(float, metrics))
    return cfg, gs, prog, out


def false_trigger_rate(cfg, gs, params) -> tuple[float, int]:
    """The clean model's rate of predicting the target on the triggered test graphs of other classes,
    by a NumPy forward pass of each graph alone."""
    _, masks = graph_split(cfg, gs)
    rows = np.flatnonzero(masks["test"] & (gs.y != TARGET))
    trig = plant_graph_triggers(gs, rows, cfg.attack_trigger_size, cfg.attack_density, TARGET, cfg.attack_seed)
    logits = dense_reference(params, trig, cfg.graph_model, cfg.graph_pooling, cfg.num_layers)
    return float((logits[rows].argmax(-1) == TARGET).mean()), int(rows.size)


def test_asr_without_attackers_is_the_clean_false_trigger_rate(backdoor_runs):
    cfg, gs, prog, out = backdoor_runs
    state, metrics = out[0.0]
    rate, n = false_trigger_rate(cfg, gs, state.server)
    assert n == prog.describe["attack"]["backdoor"]["triggered_test_graphs"] and n >= 40
    # the same predictions, counted the same way: equal up to float32 vs float64 ties (none expected)
    assert metrics["test_asr"] == pytest.approx(rate, abs=1.0 / n)
    assert metrics["test_acc"] > 0.7                                 # the clean task was learnt


def test_asr_with_attackers_rises_well_above_the_false_trigger_rate(backdoor_runs):
    cfg, gs, prog, out = backdoor_runs
    clean = out[0.0][1]["test_asr"]
    attacked = out[0.5][1]["test_asr"]
    assert prog.describe["attack"]["attackers"] and out[0.5][1]["test_acc"] > 0.6
    # n >= 40 triggered graphs: a binomial sd of at most 0.08 per rate; a rise of 0.3 is > 2.5 sd of
    # their difference (the deterministic run has no sampling noise beyond the draw of the data)
    assert attacked >= clean + 0.3, (clean, attacked)
    # the clean rate here is 0, so the count is also checked where it is not: the attacked model's
    # test_asr is its own rate on the triggered graphs, by the same NumPy forward pass
    rate, n = false_trigger_rate(cfg, gs, out[0.5][0].server)
    assert attacked == pytest.approx(rate, abs=1.0 / n) and 0.0 < rate < 1.0


def test_asr_summary_reads_the_reported_round():
    from types import SimpleNamespace
    from fgl_jax.federated.backdoor import asr_summary
    res = SimpleNamespace(history={"test_asr": np.array([0.1, 0.5, 0.9]), "test_acc": np.array([0.6, 0.7, 0.65])},
                          best={"best_round": 2})
    assert asr_summary(res) == {"backdoor": {"test_asr_at_best_round": 0.5, "test_acc_at_best_round": 0.7,
                                             "test_asr_final": 0.9}}


def test_backdoor_refusals_are_one_line():
    with pytest.raises(ValueError, match="attack backdoor plants a trigger"):
        schema.make(RunConfig, dict(task="graph_reg", dataset="unused", attack="backdoor"))
    with pytest.raises(ValueError, match="algorithm 'global' trains one centralised model"):
        schema.make(RunConfig, dict(task="graph_cls", dataset="unused", algorithm="global", attack="backdoor"))
    with pytest.raises(ValueError, match="attack_target=3 is an option of attack backdoor"):
        schema.make(RunConfig, dict(task="graph_cls", dataset="unused", attack="sign_flip", attack_target=3))
    with pytest.raises(ValueError, match=r"attack_target=5: dataset 'toy' has classes 0\.\.1"):
        build(schema.make(RunConfig, dict(task="graph_cls", dataset="unused", clients=2, attack="backdoor",
                                          attack_target=5)), graph=toy_set(num_graphs=40, seed=1))


# ----------------------------------------------------------------------------------- node classification

def test_node_planting_attaches_one_trigger_copy_per_node_on_a_toy_graph():
    from fgl_jax.graph import Graph
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    s, r = np.array([0, 1, 1, 2, 2, 3], np.int32), np.array([1, 0, 2, 1, 3, 2], np.int32)
    masks = dict(train_mask=np.array([1, 1, 0, 1], bool), val_mask=np.array([0, 0, 1, 0], bool),
                 test_mask=np.zeros(4, bool))
    g = Graph("t", s, r, x, np.array([1, 2, 0, 1], np.int32), 3, **masks)
    out = plant_node_triggers(g, [1, 3], size=2, density=1.0, target=0, seed=5)
    assert out.num_nodes == 8
    np.testing.assert_array_equal(out.x[:4], x)
    np.testing.assert_array_equal(out.x[4:], np.full((4, 3), TRIGGER_VALUE))   # F = 3 < 8: every feature set
    np.testing.assert_array_equal(out.y, [1, 0, 0, 0, -1, -1, -1, -1])           # poisoned nodes -> target
    np.testing.assert_array_equal(out.train_mask, [1, 1, 0, 1, 0, 0, 0, 0])
    np.testing.assert_array_equal(out.val_mask, [0, 0, 1, 0, 0, 0, 0, 0])
    want = _edges(s, r) | {(4, 5), (5, 4), (6, 7), (7, 6), (1, 4), (4, 1), (3, 6), (6, 3)}
    assert _edges(out.senders, out.receivers) == want and len(out.senders) == len(want)
    test = plant_node_triggers(g, [1, 3], size=2, density=1.0, target=0, seed=5, as_test=True)
    np.testing.assert_array_equal(test.test_mask, [0, 1, 0, 1, 0, 0, 0, 0])
    assert not test.train_mask.any() and not test.val_mask.any()
    # a bag-of-words width: 8 features set, the same ones in every copy
    wide = trigger_features(100, seed=5)
    assert wide.sum() == 8 * TRIGGER_VALUE and np.array_equal(wide, trigger_features(100, seed=5))


@pytest.fixture(scope="module")
def node_runs():
    """(cfg, prog, {fraction: (state, metrics)}) of one compiled FedAvg-GCN round on a CSBM graph."""
    from fgl_jax.data.synthetic import csbm
    graph = csbm(num_nodes=400, num_classes=3, num_features=16, avg_degree=5.0, homophily=0.8, feature_signal=2.0,
                 seed=3)
    cfg = schema.make(RunConfig, dict(dataset="unused", clients=4, split="random", rounds=ROUNDS, hidden=16,
                                      local_steps=3, lr=0.02, attack="backdoor", attackers=0.5,
                                      attack_poison_rate=0.5, attack_target=TARGET, attack_density=1.0))
    prog = build(cfg, graph=graph)
    step = jax.jit(prog.algorithm.round)
    out = {}
    for frac in (0.0, 0.5):
        state = prog.algorithm.init(jax.random.key(0), prog.data)
        state = state.replace(hp={**state.hp, "attackers": jnp.float32(frac)})
        for r in range(2 * ROUNDS):
            state, metrics = step(state, prog.data, jax.random.key(r))
        out[frac] = (state, jax.tree.map(float, metrics))
    return cfg, graph, prog, out


@pytest.mark.slow
def test_node_asr_is_the_false_trigger_rate_without_attackers_and_rises_with_them(node_runs):
    from fgl_jax.batch import client_graphs, stack_graphs
    from fgl_jax.systems.baseline.program import model_from_config, partition_clients, split_graph
    cfg, graph, prog, out = node_runs
    state, metrics = out[0.0]
    # the clean model on each client's subgraph with every non-target test node triggered, one client
    # at a time, counted here (not through attack_success_rate)
    model, _ = model_from_config(cfg, graph)
    g = split_graph(graph, cfg)
    subs, _ = client_graphs(g, partition_clients(g, cfg).assignment, cfg.clients)
    rows = [np.flatnonzero(sub.test_mask & (sub.y != TARGET)) for sub in subs]
    trig = [plant_node_triggers(sub, r, cfg.attack_trigger_size, cfg.attack_density, TARGET, cfg.attack_seed)
            for sub, r in zip(subs, rows)]
    logits = np.asarray(jax.jit(jax.vmap(lambda b: model.apply(state.server, b, train=False)))(
        stack_graphs(trig, sparse=False)))
    hits = sum(int((logits[c][r].argmax(-1) == TARGET).sum()) for c, r in enumerate(rows))
    total = sum(r.size for r in rows)
    assert total == prog.describe["attack"]["backdoor"]["triggered_test_nodes"] and total >= 40
    assert metrics["test_asr"] == pytest.approx(hits / total, abs=1.0 / total)
    assert metrics["test_acc"] > 0.6
    # with half the clients attacking: the same margin as the graph task's (n >= 40 triggered nodes)
    assert out[0.5][1]["test_asr"] >= metrics["test_asr"] + 0.3, (metrics["test_asr"], out[0.5][1]["test_asr"])


# ----------------------------------------------------------------------------------- attacks on graph tasks

GRAPH_ATTACK_CASES = [dict(attack=a, attackers=0.3) for a in ("label_flip", "sign_flip", "scale", "gaussian")] + \
    [dict(aggregator=g, attack="sign_flip", attackers=0.3)
     for g in ("median", "trimmed_mean", "krum", "multi_krum", "bulyan", "norm_bound", "geomed")]


def _graph_attack_run(case: dict, clients: int = 7, rounds: int = 2):
    from fgl_jax import run
    gs = toy_set(num_graphs=160, seed=6)
    cfg = schema.make(RunConfig, {**dict(task="graph_cls", dataset="unused", clients=clients, rounds=rounds, hidden=4,
                                         num_layers=1, graph_batch_size=8), **case})
    prog = build(cfg, graph=gs)
    res = run(prog.algorithm, prog.data, jax.random.key(0), cfg.rounds, progress=False)
    for key in ("train_loss", "val_acc", "test_acc"):
        assert np.isfinite(res.history[key]).all(), (case, key)
    return prog


def test_an_upload_attack_and_a_robust_aggregator_run_on_graph_cls():
    prog = _graph_attack_run(dict(aggregator="median", attack="sign_flip", attackers=0.3), clients=5, rounds=1)
    assert len(prog.describe["attack"]["attackers"]) == 2             # round(0.3 x 5)


@pytest.mark.slow
@pytest.mark.parametrize("case", GRAPH_ATTACK_CASES, ids=lambda c: f"{c.get('aggregator', 'mean')}-{c['attack']}")
def test_every_attack_and_aggregator_runs_on_graph_cls(case):
    _graph_attack_run(case)
