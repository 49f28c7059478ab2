"""FedStar: two rounds on a toy set vs a reference written here (each client's Adam loop over its
training mini-batches, the structure channel averaged in NumPy, the feature channel and head kept),
one client vs centralised training of the same dual-channel model, the dual-channel model vs a
dense NumPy forward pass, padding that never changes a graph's output, the encodings in the node
features, one-line refusals; the CLI with --resume, client sampling and the sweep (slow)."""
import json

import jax
import numpy as np
import optax
import pytest

from fgl_jax import schema
from fgl_jax.data.structure import structure_encoding, with_structure_encoding
from fgl_jax.federated.graph_task import graph_loss
from fgl_jax.graph_batch import budgets, pack_clients
from fgl_jax.nn.graph import STRUCT_PREFIX, DualChannelClassifier
from fgl_jax.systems.baseline.config import RunConfig
from fgl_jax.systems.baseline.program import build

from tests.test_graph_batch import per_graph, toy_set

RW, DG = 3, 4     # small encodings: 7 columns


def make_cfg(**kw) -> RunConfig:
    base = dict(task="graph_cls", dataset="unused", algorithm="fedstar", clients=3, rounds=2, hidden=4, num_layers=2,
                graph_batch_size=4, lr=0.01, graph_pooling="sum", fedstar_rw_steps=RW, fedstar_dg_dims=DG)
    return schema.make(RunConfig, {**base, **kw})


def is_struct(path) -> bool:
    return str(getattr(path[1], "key", path[1])).startswith(STRUCT_PREFIX)    # path[0] is "params"


def reference_rounds(model, data, params0, rounds: int, lr: float, local_epochs: int, share: bool = True):
    """FedStar written out: every client starts each round from the server's structure channel and its
    own other parameters, runs Adam (its state kept across rounds) over its training mini-batches in
    order; the server's structure channel becomes the NumPy mean of the clients', weighted by their
    training graphs (counted from the masks). share=False (OpenFGL 1.1.0's client, which never loads the
    server's copy): each client starts each round from its own parameters, all of them.
    Returns (server structure leaves, each client's params)."""
    opt = optax.adam(lr)
    loss = lambda q, b: graph_loss(model, model.apply(q, b), b)

    @jax.jit
    def step(p, o, b):
        u, o = opt.update(jax.grad(loss)(p, b), o, p)
        return optax.apply_updates(p, u), o

    c = data.train.num_clients
    batches = [jax.tree.map(lambda a, i=i: a[i], data.train) for i in range(c)]
    weights = np.array([np.asarray(b.train_mask).sum() for b in batches], np.float64)
    clients = [params0] * c
    states = [opt.init(params0) for _ in range(c)]
    server = params0
    for _ in range(rounds):
        for i, b in enumerate(batches):
            p = jax.tree_util.tree_map_with_path(
                lambda path, s, q: s if is_struct(path) and share else q, server, clients[i])
            o = states[i]
            for _ in range(local_epochs):
                for j in range(b.num_minibatches):
                    if np.asarray(b.train_mask[j]).any():
                        p, o = step(p, o, b.minibatch(j))
            clients[i], states[i] = p, o
        server = jax.tree_util.tree_map_with_path(
            lambda path, s, *qs: np.tensordot(weights / weights.sum(), np.stack([np.asarray(q, np.float64) for q in qs]),
                                              axes=1) if is_struct(path) else s, server, *clients)
    return server, clients


def run_rounds(cfg, gs):
    """Build the run on `gs` and train cfg.rounds rounds; returns (program, initial server, final state)."""
    prog = build(cfg, graph=gs)
    state = prog.algorithm.init(jax.random.key(0), prog.data)
    params0 = state.server
    round_fn = jax.jit(prog.algorithm.round)
    for r in range(cfg.rounds):
        state, _ = round_fn(state, prog.data, jax.random.key(r + 1))
    return prog, params0, state


@pytest.fixture(scope="module")
def three_clients():
    gs = toy_set(num_graphs=24, seed=6)
    cfg = make_cfg()
    prog, params0, state = run_rounds(cfg, gs)
    return gs, cfg, prog, params0, state


def leaves(tree, struct: bool) -> list:
    flat = jax.tree_util.tree_flatten_with_path(tree)[0]
    return [(jax.tree_util.keystr(p), np.asarray(x)) for p, x in flat if is_struct(p) == struct]


def test_structure_channel_is_fedavg_and_feature_channel_stays_local(three_clients):
    gs, cfg, prog, params0, state = three_clients
    model = DualChannelClassifier(in_dim=gs.num_features, se_dim=RW + DG, hidden=cfg.hidden, num_classes=2,
                                  num_layers=cfg.num_layers, pooling="sum")
    server, clients = reference_rounds(model, prog.data, params0, cfg.rounds, cfg.lr, cfg.local_steps)
    # the server's structure channel: the weighted mean of the clients' (NumPy), after two rounds
    for (name, got), (_, want) in zip(leaves(state.server, True), leaves(server, True)):
        np.testing.assert_allclose(got, want, rtol=2e-4, atol=2e-6, err_msg=name)
    # the feature channel and head: each client's own training, never averaged (and they differ)
    assert int(prog.data.train.num_clients) == 3
    for i, ref in enumerate(clients):
        mine = jax.tree.map(lambda a: a[i], state.personal)
        for (name, got), (_, want) in zip(leaves(mine, False), leaves(ref, False)):
            np.testing.assert_allclose(got, want, rtol=2e-4, atol=2e-6, err_msg=f"client {i} {name}")
    a, b = leaves(jax.tree.map(lambda x: x[0], state.personal), False), leaves(jax.tree.map(lambda x: x[1],
                                                                                               state.personal), False)
    assert max(float(np.abs(x - y).max()) for (_, x), (_, y) in zip(a, b)) > 1e-3
    # the server's copy of the local parameters is the initial one: aggregation never touches them
    for (name, got), (_, want) in zip(leaves(state.server, False), leaves(params0, False)):
        np.testing.assert_array_equal(got, want, err_msg=name)
    # and the structure channel moved
    assert max(float(np.abs(x - y).max()) for (_, x), (_, y) in zip(leaves(state.server, True),
                                                                      leaves(params0, True))) > 1e-3


def test_share_none_trains_every_client_alone():
    # fedstar_share=none (OpenFGL 1.1.0's client code): each client's whole model, structure channel
    # included, is its own Adam training from the common initial draw, as the reference without loading
    gs = toy_set(num_graphs=24, seed=6)
    cfg = make_cfg(fedstar_share="none")
    prog, params0, state = run_rounds(cfg, gs)
    model = DualChannelClassifier(in_dim=gs.num_features, se_dim=RW + DG, hidden=cfg.hidden, num_classes=2,
                                  num_layers=cfg.num_layers, pooling="sum")
    _, clients = reference_rounds(model, prog.data, params0, cfg.rounds, cfg.lr, cfg.local_steps, share=False)
    for i, ref in enumerate(clients):
        mine = jax.tree.map(lambda a: a[i], state.personal)
        for struct in (True, False):
            for (name, got), (_, want) in zip(leaves(mine, struct), leaves(ref, struct)):
                np.testing.assert_allclose(got, want, rtol=2e-4, atol=2e-6, err_msg=f"client {i} {name}")
    # the clients' structure channels differ (nothing averaged them)
    a, b = (leaves(jax.tree.map(lambda x, i=i: x[i], state.personal), True) for i in (0, 1))
    assert max(float(np.abs(x - y).max()) for (_, x), (_, y) in zip(a, b)) > 1e-3


def test_one_client_equals_centralised_training():
    gs = toy_set(num_graphs=16, seed=2)
    cfg = make_cfg(clients=1, rounds=3, local_steps=2)
    prog, params0, state = run_rounds(cfg, gs)
    final = jax.tree_util.tree_map_with_path(lambda p, s, q: s if is_struct(p) else q[0], state.server, state.personal)
    # centralised: plain Adam over the one client's training mini-batches, epoch after epoch
    model = DualChannelClassifier(in_dim=gs.num_features, se_dim=RW + DG, hidden=cfg.hidden, num_classes=2,
                                  num_layers=cfg.num_layers, pooling="sum")
    opt = optax.adam(cfg.lr)
    loss = lambda q, b: graph_loss(model, model.apply(q, b), b)
    step = jax.jit(lambda p, o, b: (lambda u_o: (optax.apply_updates(p, u_o[0]), u_o[1]))(
        opt.update(jax.grad(loss)(p, b), o, p)))
    batch = jax.tree.map(lambda a: a[0], prog.data.train)
    real = [j for j in range(batch.num_minibatches) if np.asarray(batch.train_mask[j]).any()]
    assert len(real) >= 2
    p, o = params0, opt.init(params0)
    for _ in range(cfg.rounds * cfg.local_steps):
        for j in real:
            p, o = step(p, o, batch.minibatch(j))
    for a, b in zip(jax.tree.leaves(final), jax.tree.leaves(p)):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=2e-4, atol=2e-6)
    assert max(float(np.abs(np.asarray(a) - np.asarray(b)).max())
               for a, b in zip(jax.tree.leaves(final), jax.tree.leaves(params0))) > 1e-3


def dense_dual(params, gs, enc, num_layers: int) -> np.ndarray:
    """DualChannelClassifier's logits [G, K], one graph at a time with dense matrices (NumPy, GIN, sum)."""
    p = jax.tree.map(lambda a: np.asarray(a, np.float64), params)["params"]
    lin = lambda h, name: h @ p[name]["kernel"] + p[name]["bias"]
    out = []
    for g in range(gs.num_graphs):
        x, s, r = gs.graph(g)
        lo = int(gs.node_offsets[g])
        n = x.shape[0]
        a = np.zeros((n, n))
        np.add.at(a, (r, s), 1.0)
        deg = a.sum(1) + 1.0
        norm = (np.eye(n) + a) / np.sqrt(deg[:, None] * deg[None, :])
        f, st = lin(x[:, :gs.num_features - enc.shape[1]], "feat_embed"), lin(enc[lo:lo + n], "struct_embed")
        for i in range(num_layers):
            z = (np.eye(n) + a) @ np.concatenate([f, st], 1)
            f = np.maximum(lin(np.maximum(lin(z, f"conv_{i}_0"), 0), f"conv_{i}_1"), 0)
            st = np.tanh(norm @ (st @ p[f"struct_conv_{i}"]["kernel"]) + p[f"struct_conv_{i}_bias"])
        pooled = lin(np.concatenate([f, st], 1), "fuse").sum(0)
        out.append(lin(np.maximum(lin(pooled, "head_0"), 0), "head_1"))
    return np.array(out)


def test_dual_channel_model_vs_numpy_and_padding():
    raw = toy_set(num_graphs=9, seed=3)
    gs = with_structure_encoding(raw, RW, DG)
    enc = structure_encoding(raw, RW, DG)
    np.testing.assert_array_equal(gs.x, np.concatenate([raw.x, enc], 1))     # features, then the encoding
    groups = [np.array([0, 3, 5, 8]), np.array([1, 2, 4, 6, 7])]
    model = DualChannelClassifier(in_dim=raw.num_features, se_dim=RW + DG, hidden=4, num_classes=3, num_layers=2)
    tight = pack_clients(gs, groups, batch_size=2)
    m, n, e = budgets(gs, groups, 2)
    loose = pack_clients(gs, groups, batch_size=3, num_minibatches=m + 2, num_nodes=n + 40, num_edges=e + 64,
                         num_graph_slots=9)
    params = model.init(jax.random.key(0), jax.tree.map(lambda a: a[0], tight))
    apply = jax.jit(jax.vmap(lambda b: model.apply(params, b)))     # one program per budget, not op by op
    a = per_graph(apply(tight), tight, gs.num_graphs)
    b = per_graph(apply(loose), loose, gs.num_graphs)
    assert not np.isnan(a).any()
    np.testing.assert_allclose(a, dense_dual(params, gs, enc, 2), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    assert tight.x.shape[1:3] != loose.x.shape[1:3]


def test_encoding_goes_before_the_dataset_columns():
    raw = toy_set(num_graphs=4, seed=1)
    raw.meta["class_blocks"] = [(0, 2)]            # one trailing dataset column (as a cross-domain join)
    out = with_structure_encoding(raw, RW, DG, "dg")
    np.testing.assert_array_equal(out.x[:, :2], raw.x[:, :2])
    np.testing.assert_array_equal(out.x[:, 2:2 + DG], structure_encoding(raw, RW, DG, "dg"))
    np.testing.assert_array_equal(out.x[:, -1], raw.x[:, -1])


@pytest.mark.parametrize("flags, match", [
    (["--task", "node_cls", "--dataset", "csbm", "--split", "keep"], "fedstar: runs on graph-level tasks"),
    (["--task", "graph_cls", "--dataset", "MUTAG_TU", "--eval-mode", "global_model_on_local_data"],
     "FedStar keeps each client's feature channel"),
])
def test_refusals_are_one_line(capsys, flags, match):
    from fgl_jax.cli import main
    assert main(["run", "--algorithm", "fedstar", "--rounds", "1", "--no-progress", *flags]) != 0
    err = capsys.readouterr().err.strip()
    assert match in err and len(err.splitlines()) == 1, err


@pytest.mark.slow
@pytest.mark.data
def test_cli_resume_sampling_and_sweep(tmp_path, data_dir):
    from fgl_jax.cli import main
    base = ["--task", "graph_cls", "--dataset", "MUTAG_TU", "--data-dir", str(data_dir), "--algorithm", "fedstar",
            "--clients", "5", "--clients-per-round", "3", "--partition", "dirichlet", "--dirichlet-beta", "1.0",
            "--hidden", "8", "--graph-batch-size", "16", "--fedstar-rw-steps", "4", "--fedstar-dg-dims", "4"]
    full, part = tmp_path / "full", tmp_path / "part"
    assert main(["run", *base, "--rounds", "3", "--no-progress", "--out", str(full)]) == 0
    assert main(["run", *base, "--rounds", "1", "--no-progress", "--out", str(part)]) == 0
    assert main(["run", *base, "--rounds", "3", "--no-progress", "--out", str(part), "--resume",
                 "--resume-with-changes", "rounds"]) == 0
    rows = lambda d: [json.loads(line) for line in (d / "metrics.jsonl").read_text().splitlines()]
    a, b = rows(full), rows(part)
    assert len(a) == len(b) == 3
    for key in ("train_loss", "val_acc", "test_acc"):
        np.testing.assert_allclose([r[key] for r in a], [r[key] for r in b], rtol=1e-5, atol=1e-6)
    assert all(r["participants"] == 3 for r in a)
    # a sweep over the learning rate (traced: one program) matches the single run at lr 0.01
    out = tmp_path / "sweep"
    assert main(["sweep", *base, "--rounds", "3", "--grid", "lr=0.01,0.05", "--out", str(out)]) == 0
    payload = json.loads((out / "sweep.json").read_text())
    row = next(r for r in payload["rows"] if r["lr"] == 0.01)
    best = json.loads((full / "summary.json").read_text())["best"]
    assert row["best_test"] == pytest.approx(best["best_test"], abs=1e-6)


@pytest.mark.slow
def test_own_client_init_draws_each_feature_channel():
    gs = toy_set(num_graphs=24, seed=6)
    shared = build(make_cfg(), graph=gs)
    own = build(make_cfg(fedstar_client_init="own"), graph=gs)
    a = shared.algorithm.init(jax.random.key(0), shared.data)
    b = own.algorithm.init(jax.random.key(0), own.data)
    for (name, x), (_, y) in zip(leaves(a.server, True), leaves(b.server, True)):
        np.testing.assert_array_equal(x, y, err_msg=name)        # one structure channel, the server's
    for name, x in leaves(b.personal, False):
        assert x.shape[0] == 3 and not np.array_equal(x[0], x[1]) or not x.any(), name   # (zero biases stay zero)
    for name, x in leaves(a.personal, False):
        np.testing.assert_array_equal(x[0], x[1], err_msg=name)
