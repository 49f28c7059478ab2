"""Personalised methods on graph-level tasks: FedRep's graph head is the MLP head after the readout
(heads differ per client, the body is one shared model), FedBN keeps the graph model's
normalisation per client; every personalised method registered for graph tasks runs (slow)."""
import dataclasses

import jax
import numpy as np
import pytest

from fgl_jax import registry, run, schema
from fgl_jax.systems.baseline.config import RunConfig
from fgl_jax.systems.baseline.program import build

from tests.test_graph_batch import toy_set

PERSONALISED = ("ditto", "fedbn", "fedrep", "apfl", "pfedme", "fedala")


def make_cfg(**kw) -> RunConfig:
    base = dict(task="graph_cls", dataset="unused", clients=3, rounds=2, hidden=4, num_layers=1, graph_batch_size=4,
                lr=0.05)
    return schema.make(RunConfig, {**base, **kw})


def test_registered_for_graph_tasks():
    able = {e.name: e.spec.tasks for e in registry.entries("algorithm")}
    for name in PERSONALISED:
        assert {"graph_cls", "graph_reg"} <= set(able[name]), name
    assert {"graph_cls", "graph_reg"} <= set(able["fedem"])   # FedEM: per-graph E-step (Gaussian on graph_reg)


@pytest.mark.slow
def test_fedrep_graph_head_personal_body_shared():
    cfg = make_cfg(algorithm="fedrep", fedrep_head_layers=1, fedrep_head_epochs=1)
    prog = build(cfg, graph=toy_set(num_graphs=24, seed=6))
    state = prog.algorithm.init(jax.random.key(0), prog.data)
    # the head is head_1 alone: the personal tree holds it and nothing else, the body everything else
    head = state.personal["params"]
    body = state.server["params"]
    assert set(head) == {"head_1"}
    assert "head_1" not in body and {"head_0", "conv_0_0", "conv_0_1"} <= set(body)
    round_fn = jax.jit(prog.algorithm.round)
    for r in range(2):
        state, m = round_fn(state, prog.data, jax.random.key(r + 1))
    w = np.asarray(state.personal["params"]["head_1"]["kernel"])   # [C, hidden, classes]
    assert w.shape[0] == 3
    # each client's head trained on its own graphs: no two equal
    assert min(np.abs(w[i] - w[j]).max() for i in range(3) for j in range(i + 1, 3)) > 1e-6
    assert np.isfinite(float(m["test_acc"]))


@pytest.mark.slow
@pytest.mark.parametrize("task", ["graph_cls", "graph_reg"])
def test_every_personalised_method_runs_on_graphs(task):
    gs = toy_set(num_graphs=24, seed=6)
    if task == "graph_reg":
        gs = dataclasses.replace(gs, y=np.random.default_rng(0).normal(size=gs.num_graphs).astype(np.float32),
                                 num_classes=0)
    metric = "test_acc" if task == "graph_cls" else "test_mse"
    for name in PERSONALISED:
        extra = {"norm": "batch"} if name == "fedbn" else {}
        cfg = make_cfg(task=task, algorithm=name, **extra)
        prog = build(cfg, graph=gs)
        res = run(prog.algorithm, prog.data, jax.random.key(0), cfg.rounds, progress=False)
        for key in ("train_loss", metric):
            assert np.isfinite(res.history[key]).all(), (name, key)


def test_graph_top_mask_counts_layers_from_the_output():
    from fgl_jax.federated.fedavg_family import graph_top_mask
    z = np.zeros(1)
    params = {"params": {"conv_0_0": {"kernel": z}, "conv_0_1": {"kernel": z}, "norm_scale_0": z,
                         "conv_1_0": {"kernel": z}, "conv_1_1": {"kernel": z}, "norm_scale_1": z,
                         "head_0": {"kernel": z}, "head_1": {"kernel": z, "bias": z}}}
    picked = lambda top: sorted({k for k, v in graph_top_mask(params, 2, top)["params"].items()
                                 if any(jax.tree.leaves(v))})
    assert picked(1) == ["head_1"]
    assert picked(2) == ["head_0", "head_1"]
    assert picked(3) == ["conv_1_0", "conv_1_1", "head_0", "head_1", "norm_scale_1"]
    assert len(picked(4)) == 8


def test_graph_task_client_spread_vs_numpy():
    """Local on a toy graph_cls run: each client's own model re-applied graph by graph in NumPy
    (`dense_reference`), its accuracy over its own test graphs, then mean / worst 10 % / sd."""
    import math

    from fgl_jax.federated.evaluation import SPREAD_KEYS
    from fgl_jax.systems.baseline.graph_fl import graph_split, task_targets
    from tests.test_graph_batch import dense_reference
    gs = toy_set(num_graphs=40, seed=3)
    cfg = make_cfg(algorithm="local", clients=5, rounds=1, lr=0.2, split="per_client", train_frac=0.5, val_frac=0.2,
                   test_frac=0.3)
    prog = build(cfg, graph=gs)
    state, m = jax.jit(prog.algorithm.round)(prog.algorithm.init(jax.random.key(0), prog.data), prog.data,
                                             jax.random.key(1))
    assignment, masks = graph_split(cfg, task_targets(gs, "graph_cls"))
    acc = []
    for c in range(cfg.clients):
        mine = masks["test"] & (assignment == c)
        if not mine.any():
            continue
        params = jax.tree.map(lambda a: np.asarray(a[c]), state.personal)
        pred = dense_reference(params, gs, cfg.graph_model, cfg.graph_pooling, cfg.num_layers).argmax(-1)
        acc.append((pred[mine] == gs.y[mine]).mean())
    acc = np.array(acc)
    assert len(acc) >= 4 and acc.std() > 0                    # a spread to measure
    worst = np.sort(acc)[: math.ceil(len(acc) / 10)].mean()
    want = dict(zip(SPREAD_KEYS, (acc.mean(), worst, acc.std())))
    for key in SPREAD_KEYS:
        np.testing.assert_allclose(float(m[key]), want[key], rtol=1e-5, atol=1e-6, err_msg=key)


@pytest.mark.slow
def test_fedem_graph_one_component_is_fedavg():
    """FedEM with k = 1 on graph_cls: same init, keys and graph loss as FedAvg (q = 1 on every graph)."""
    from tests.alg_helpers import assert_trees_close
    gs = toy_set(num_graphs=24, seed=6)
    em = build(make_cfg(algorithm="fedem", fedem_components=1, local_steps=2), graph=gs)
    avg = build(make_cfg(algorithm="fedavg", local_steps=2), graph=gs)
    se, sa = em.algorithm.init(jax.random.key(0), em.data), avg.algorithm.init(jax.random.key(0), avg.data)
    for r in range(2):
        se, me = jax.jit(em.algorithm.round)(se, em.data, jax.random.key(r))
        sa, ma = jax.jit(avg.algorithm.round)(sa, avg.data, jax.random.key(r))
        assert_trees_close(jax.tree.map(lambda a: a[0], se.server), sa.server, rtol=1e-5, atol=1e-6)
        for k in ("val_acc", "test_acc", "train_loss", "val_loss"):
            np.testing.assert_allclose(float(me[k]), float(ma[k]), rtol=1e-5, atol=1e-6, err_msg=k)
    assert np.asarray(se.pi).tolist() == [[1.0]] * 3


def test_fedem_graph_e_step_vs_numpy():
    """k = 2, one round: every training client's new pi is the mean over its training graphs of
    q_g(m) ~ pi(m) exp(-CE_m(g)), the CE from the round's starting components applied graph by
    graph in NumPy (`dense_reference`)."""
    from fgl_jax.systems.baseline.graph_fl import graph_split, task_targets
    from tests.test_graph_batch import dense_reference
    gs = toy_set(num_graphs=24, seed=6)
    cfg = make_cfg(algorithm="fedem", fedem_components=2, rounds=1)
    prog = build(cfg, graph=gs)
    s0 = prog.algorithm.init(jax.random.key(0), prog.data)
    s1, m = jax.jit(prog.algorithm.round)(s0, prog.data, jax.random.key(1))
    assignment, masks = graph_split(cfg, task_targets(gs, "graph_cls"))
    ce = []
    for c in range(2):
        z = dense_reference(jax.tree.map(lambda a: np.asarray(a[c]), s0.server), gs, cfg.graph_model,
                            cfg.graph_pooling, cfg.num_layers)
        z = z - z.max(1, keepdims=True)
        ce.append(-(z[np.arange(gs.num_graphs), gs.y] - np.log(np.exp(z).sum(1))))
    ce = np.stack(ce)                                                       # [k, G]
    q = np.exp(-ce) / np.exp(-ce).sum(0)                                    # pi uniform at the start
    for c in range(cfg.clients):
        mine = masks["train"] & (assignment == c)
        np.testing.assert_allclose(np.asarray(s1.pi)[c], q[:, mine].mean(1), rtol=1e-4, atol=1e-6)
    assert not np.allclose(np.asarray(s1.pi), 0.5)                          # the E-step moved pi
    for key in ("test_acc", "test_acc_clients_mean", "test_acc_clients_worst10", "test_acc_clients_sd"):
        assert np.isfinite(float(m[key])), key


def regression_set(num_graphs=24, seed=6):
    """The toy graphs with float targets: 2 x a graph's mean feature 0 plus noise (learnable, not exact)."""
    gs = toy_set(num_graphs=num_graphs, seed=seed)
    starts, ends = gs.node_offsets[:-1], gs.node_offsets[1:]
    y = np.array([2.0 * gs.x[a:b, 0].mean() for a, b in zip(starts, ends)])
    y += np.random.default_rng(seed).normal(scale=0.3, size=gs.num_graphs)
    return dataclasses.replace(gs, y=y.astype(np.float32), num_classes=0)


@pytest.mark.slow
def test_fedem_graph_reg_one_component_is_fedavg():
    """FedEM with k = 1 on graph_reg: q = 1 on every graph whatever sigma^2, so the q-weighted squared
    error is FedAvg's graph_reg loss: same server model and metrics over two rounds."""
    from tests.alg_helpers import assert_trees_close
    gs = regression_set()
    em = build(make_cfg(task="graph_reg", algorithm="fedem", fedem_components=1, fedem_sigma2=0.1, local_steps=2),
               graph=gs)
    avg = build(make_cfg(task="graph_reg", algorithm="fedavg", local_steps=2), graph=gs)
    se, sa = em.algorithm.init(jax.random.key(0), em.data), avg.algorithm.init(jax.random.key(0), avg.data)
    step_em, step_avg = jax.jit(em.algorithm.round), jax.jit(avg.algorithm.round)
    for r in range(2):
        se, me = step_em(se, em.data, jax.random.key(r))
        sa, ma = step_avg(sa, avg.data, jax.random.key(r))
        assert_trees_close(jax.tree.map(lambda a: a[0], se.server), sa.server, rtol=1e-5, atol=1e-6)
        for k in ("val_mse", "test_mse", "test_mae", "val_score", "train_loss", "val_loss"):
            np.testing.assert_allclose(float(me[k]), float(ma[k]), rtol=1e-5, atol=1e-6, err_msg=k)
    assert np.asarray(se.pi).tolist() == [[1.0]] * 3


def test_fedem_graph_reg_responsibilities_vs_numpy():
    """k = 2, sigma^2 = 0.3, two rounds on graph_reg: after each round every training client's pi is
    the mean over its training graphs of q_g(m) = pi(m) N(y_g; yhat_m(g), sigma^2) / sum_m' (...), with
    yhat from the round's starting components and pi applied graph by graph in NumPy
    (`dense_reference`, Bayes' rule with the full Gaussian density); the reported test MSE is that of
    each client's mixture mean sum_m pi(m) yhat_m over its test graphs."""
    from fgl_jax.systems.baseline.graph_fl import graph_split
    from tests.test_graph_batch import dense_reference
    gs, sigma2 = regression_set(), 0.3
    cfg = make_cfg(task="graph_reg", algorithm="fedem", fedem_components=2, fedem_sigma2=sigma2, rounds=2)
    prog = build(cfg, graph=gs)
    assignment, masks = graph_split(cfg, gs)
    y = gs.y.astype(np.float64)

    def predictions(server):   # [k, G]: every component on every graph, NumPy
        return np.stack([dense_reference(jax.tree.map(lambda a: np.asarray(a[m]), server), gs, cfg.graph_model,
                                         cfg.graph_pooling, cfg.num_layers)[:, 0] for m in range(2)])

    state = prog.algorithm.init(jax.random.key(0), prog.data)
    step = jax.jit(prog.algorithm.round)
    pi = np.full((cfg.clients, 2), 0.5)
    for r in range(2):
        yhat = predictions(state.server)
        density = np.exp(-(y - yhat) ** 2 / (2 * sigma2)) / np.sqrt(2 * np.pi * sigma2)      # [k, G]
        for c in range(cfg.clients):
            mine = masks["train"] & (assignment == c)
            q = pi[c][:, None] * density[:, mine]
            pi[c] = (q / q.sum(0)).mean(1)
        state, m = step(state, prog.data, jax.random.key(r + 1))
        np.testing.assert_allclose(np.asarray(state.pi), pi, rtol=1e-4, atol=1e-6, err_msg=f"round {r + 1}")
    assert np.abs(pi - 0.5).max() > 1e-3                                    # the E-step moved pi
    mixed = np.einsum("ck,kg->cg", pi, predictions(state.server))           # each client's mixture mean
    test = [(mixed[c] - y)[masks["test"] & (assignment == c)] for c in range(cfg.clients)]
    want = np.mean(np.concatenate(test) ** 2)
    np.testing.assert_allclose(float(m["test_mse"]), want, rtol=1e-4, atol=1e-6)


def test_feddistill_graph_class_logits_vs_numpy():
    """One FedDistill round on graph_cls: the server's class-wise logits are, per class, the mean over
    the clients holding it (uniform) of each client's mean logits over its training graphs of that
    class, from its trained model applied graph by graph in NumPy (`dense_reference`)."""
    from fgl_jax.systems.baseline.graph_fl import graph_split, task_targets
    from tests.test_graph_batch import dense_reference
    gs = toy_set(num_graphs=24, seed=6)
    cfg = make_cfg(algorithm="feddistill", rounds=1)
    prog = build(cfg, graph=gs)
    s1, m = jax.jit(prog.algorithm.round)(prog.algorithm.init(jax.random.key(0), prog.data), prog.data,
                                          jax.random.key(1))
    assignment, masks = graph_split(cfg, task_targets(gs, "graph_cls"))
    sums, holders = np.zeros((2, 2)), np.zeros(2)
    for c in range(cfg.clients):
        z = dense_reference(jax.tree.map(lambda a: np.asarray(a[c]), s1.personal), gs, cfg.graph_model,
                            cfg.graph_pooling, cfg.num_layers)
        for k in range(2):
            mine = masks["train"] & (assignment == c) & (gs.y == k)
            if mine.any():
                sums[k] += z[mine].mean(0)
                holders[k] += 1
    assert (holders > 0).all()
    np.testing.assert_allclose(np.asarray(s1.protos), sums / holders[:, None], rtol=1e-4, atol=1e-5)
    assert np.asarray(s1.present).all() and np.isfinite(float(m["test_acc_clients_worst10"]))


@pytest.mark.slow
def test_feddistill_graph_weight_zero_is_local():
    """FedDistill with lambda 0 on graph_cls is Local (each client trains alone on its graphs); with
    lambda > 0 the class-wise mean logits over graphs pull the clients elsewhere."""
    from tests.alg_helpers import assert_trees_close
    gs = toy_set(num_graphs=24, seed=6)
    kd = build(make_cfg(algorithm="feddistill", feddistill_lambda=0.0, local_steps=2), graph=gs)
    loc = build(make_cfg(algorithm="local", local_steps=2), graph=gs)
    sk, sl = kd.algorithm.init(jax.random.key(0), kd.data), loc.algorithm.init(jax.random.key(0), loc.data)
    # the same starting models (the prototype family draws its init from a split of the run's key)
    sl = sl.replace(personal=sk.personal, server=jax.tree.map(lambda a: a[0], sk.personal))
    step_kd, step_loc = jax.jit(kd.algorithm.round), jax.jit(loc.algorithm.round)
    for r in range(2):
        sk, mk = step_kd(sk, kd.data, jax.random.key(r))
        sl, ml = step_loc(sl, loc.data, jax.random.key(r))
        assert_trees_close(sk.personal, sl.personal, rtol=1e-5, atol=1e-6)
        for k in ("val_acc", "test_acc", "train_loss", "val_loss", "test_acc_clients_worst10"):
            np.testing.assert_allclose(float(mk[k]), float(ml[k]), rtol=1e-5, atol=1e-6, err_msg=k)
    # the server's class-wise logits: one row per class present in the training graphs, K wide
    assert np.asarray(sk.protos).shape == (2, 2) and bool(np.asarray(sk.present).all())
    # the distillation term is live: the same run with lambda 1 moves the personal models
    hot = sk.replace(hp={**sk.hp, "feddistill_lambda": np.float32(1.0)})
    moved, _ = step_kd(hot, kd.data, jax.random.key(5))
    same, _ = step_kd(sk, kd.data, jax.random.key(5))
    assert np.abs(np.asarray(moved.personal["params"]["head_1"]["kernel"])
                  - np.asarray(same.personal["params"]["head_1"]["kernel"])).max() > 1e-6
