"""Graph-level batches and models: GIN/GCN layers and the readouts vs a dense NumPy re-derivation on a
toy batch, and padding that never changes a graph's output (the same graphs packed with other budgets)."""
import dataclasses

import jax
import numpy as np
import pytest

from fgl_jax.data.tu import GraphSet
from fgl_jax.federated.graph_task import graph_loss
from fgl_jax.graph_batch import budgets, cut_by_budget, pack_clients, size_budget
from fgl_jax.nn.graph import GraphClassifier


def toy_set(num_graphs=7, features=3, seed=0, classes=2) -> GraphSet:
    """Random small undirected graphs (2..6 nodes), both directions listed, one isolated node at times."""
    rng = np.random.default_rng(seed)
    xs, snd, rcv, n_off, e_off = [], [], [], [0], [0]
    for g in range(num_graphs):
        n = int(rng.integers(2, 7))
        pairs = [(a, b) for a in range(n) for b in range(a + 1, n) if rng.random() < 0.5]
        s = [a for a, b in pairs] + [b for a, b in pairs]
        r = [b for a, b in pairs] + [a for a, b in pairs]
        xs.append(rng.normal(size=(n, features)).astype(np.float32))
        snd += [v + n_off[-1] for v in s]
        rcv += [v + n_off[-1] for v in r]
        n_off.append(n_off[-1] + n)
        e_off.append(e_off[-1] + len(s))
    return GraphSet("toy", np.concatenate(xs), np.array(snd, np.int32), np.array(rcv, np.int32),
                    np.array(n_off, np.int64), np.array(e_off, np.int64),
                    rng.integers(0, classes, num_graphs).astype(np.int32), classes)


def dense_reference(params, gs: GraphSet, conv: str, pooling: str, num_layers: int) -> np.ndarray:
    """logits [G, K] of every graph, one graph at a time with a dense adjacency (NumPy)."""
    p = jax.tree.map(np.asarray, params)["params"]
    out = []
    for g in range(gs.num_graphs):
        x, s, r = gs.graph(g)
        n = x.shape[0]
        a = np.zeros((n, n))
        np.add.at(a, (r, s), 1.0)                       # a[v, u] = edges u -> v
        h = x.astype(np.float64)
        for i in range(num_layers):
            if conv == "gin":
                z = (np.eye(n) + a) @ h
                z = np.maximum(z @ p[f"conv_{i}_0"]["kernel"] + p[f"conv_{i}_0"]["bias"], 0)
                h = z @ p[f"conv_{i}_1"]["kernel"] + p[f"conv_{i}_1"]["bias"]
            else:
                deg = a.sum(1) + 1.0
                norm = (np.eye(n) + a) / np.sqrt(deg[:, None] * deg[None, :])
                h = norm @ (h @ p[f"conv_{i}"]["kernel"]) + p[f"conv_{i}_bias"]
            h = np.maximum(h, 0)
        pooled = {"sum": h.sum(0), "mean": h.mean(0), "max": h.max(0)}[pooling]
        z = np.maximum(pooled @ p["head_0"]["kernel"] + p["head_0"]["bias"], 0)
        out.append(z @ p["head_1"]["kernel"] + p["head_1"]["bias"])
    return np.array(out)


def per_graph(out, batch, num_graphs) -> np.ndarray:
    """Rows of out [C, M, G, K] by the GraphSet row of each real slot."""
    ids = np.asarray(batch.graph_ids).reshape(-1)
    flat = np.asarray(out).reshape((ids.size,) + np.asarray(out).shape[3:])
    res = np.full((num_graphs,) + flat.shape[1:], np.nan)
    res[ids[ids >= 0]] = flat[ids >= 0]
    return res


@pytest.mark.slow
@pytest.mark.parametrize("conv,pooling", [("gin", "sum"), ("gin", "mean"), ("gin", "max"), ("gcn", "mean")])
def test_layers_and_readout_vs_dense_numpy(conv, pooling):
    gs = toy_set()
    batch = pack_clients(gs, [np.arange(4), np.arange(4, 7)], batch_size=2)   # 2 clients x 2 mini-batches
    model = GraphClassifier(in_dim=3, hidden=5, num_classes=2, num_layers=2, conv=conv, pooling=pooling)
    one = jax.tree.map(lambda a: a[0], batch)
    params = model.init(jax.random.key(1), one)
    out = jax.vmap(lambda b: model.apply(params, b))(batch)               # [C, M, G, K]: stacks at once
    ref = dense_reference(params, gs, conv, pooling, 2)
    np.testing.assert_allclose(per_graph(out, batch, gs.num_graphs), ref, rtol=1e-4, atol=1e-5)
    # one mini-batch alone gives the same rows as the stack
    mb = one.minibatch(1)
    single = np.asarray(model.apply(params, mb))
    ids = np.asarray(mb.graph_ids)
    np.testing.assert_allclose(single[ids >= 0], ref[ids[ids >= 0]], rtol=1e-4, atol=1e-5)


@pytest.mark.slow
def test_padding_never_changes_a_graphs_output():
    gs = toy_set(num_graphs=9, seed=3)
    groups = [np.array([0, 3, 5, 8]), np.array([1, 2, 4, 6, 7])]
    model = GraphClassifier(in_dim=3, hidden=4, num_classes=3, num_layers=3, conv="gin", pooling="max")
    tight = pack_clients(gs, groups, batch_size=2)
    m, n, e = budgets(gs, groups, 2)
    loose = pack_clients(gs, groups, batch_size=3, num_minibatches=m + 2, num_nodes=n + 40, num_edges=e + 64,
                         num_graph_slots=9)
    params = model.init(jax.random.key(0), jax.tree.map(lambda a: a[0], tight))
    a = per_graph(jax.vmap(lambda b: model.apply(params, b))(tight), tight, gs.num_graphs)
    b = per_graph(jax.vmap(lambda b: model.apply(params, b))(loose), loose, gs.num_graphs)
    assert not np.isnan(a).any()
    np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    assert tight.x.shape[1:3] != loose.x.shape[1:3]          # the budgets did differ
    budget = pack_clients(gs, groups, batch_size=2, batching="budget")   # other runs, other slots
    c = per_graph(jax.vmap(lambda b: model.apply(params, b))(budget), budget, gs.num_graphs)
    np.testing.assert_allclose(a, c, rtol=1e-5, atol=1e-6)


def test_pack_budgets_and_masks():
    gs = toy_set(num_graphs=5)
    masks = {"train": np.array([1, 1, 0, 1, 0], bool), "val": np.array([0, 0, 1, 0, 0], bool),
             "test": np.array([0, 0, 0, 0, 1], bool)}
    batch = pack_clients(gs, [np.array([4, 0, 2]), np.array([1, 3])], masks, batch_size=2)
    assert batch.y.shape == (2, 2, 3)                        # C, M, G = batch_size + 1
    assert batch.x.shape[2] % 8 == 0 and batch.x.shape[2] > int(gs.nodes_per_graph[[4, 0]].sum())
    np.testing.assert_array_equal(np.asarray(batch.graph_ids)[0, :, :2], [[4, 0], [2, -1]])
    np.testing.assert_array_equal(np.asarray(batch.train_mask)[0, 0, :2], [False, True])
    assert not np.asarray(batch.graph_mask)[..., -1].any()   # the last slot is always a padding graph
    # padding nodes sit in the padding slot, padding edges are masked
    ng, nm = np.asarray(batch.node_graph), np.asarray(batch.node_mask)
    assert np.all(ng[~nm] == batch.y.shape[-1] - 1)
    with pytest.raises(ValueError, match="budgets"):
        pack_clients(gs, [np.arange(5)], batch_size=2, num_nodes=4)


def test_budget_batching_cuts_every_graph_once_within_budget():
    gs = toy_set(num_graphs=23, seed=5)
    rng = np.random.default_rng(0)
    groups = [rng.permutation(np.arange(0, 23, 2)), rng.permutation(np.arange(1, 23, 2)), np.array([], np.int64)]
    batch = pack_clients(gs, groups, batch_size=3, batching="budget")
    ids = np.asarray(batch.graph_ids)
    npg, epg = gs.nodes_per_graph, gs.edges_per_graph
    # NumPy re-derivation of the budgets: 3 mean-sized graphs, never below the largest graph
    n_cap = max(npg.max(), int(np.ceil(3 * npg.mean())))
    e_cap = max(epg.max(), int(np.ceil(3 * epg.mean())))
    assert size_budget(gs, 3) == (n_cap, e_cap)
    for c, idx in enumerate(groups):
        seen = ids[c][ids[c] >= 0]
        np.testing.assert_array_equal(seen, idx)               # each graph once per epoch, in the given order
        for run in ids[c]:
            run = run[run >= 0]
            assert npg[run].sum() <= n_cap and epg[run].sum() <= e_cap and len(run) <= 6
    assert not np.asarray(batch.graph_mask)[2].any()          # a client without graphs: all padding
    # next-fit: a run closes only when the next graph would break a budget
    runs = cut_by_budget(np.arange(6), np.array([3, 3, 3, 5, 1, 1]), np.zeros(6, int), 9, 7, 0)
    assert [r.tolist() for r in runs] == [[0, 1], [2], [3, 4, 5]]
    runs = cut_by_budget(np.arange(4), np.array([9, 1, 1, 1]), np.array([0, 2, 2, 2]), 2, 5, 10)
    assert [r.tolist() for r in runs] == [[0], [1, 2], [3]]


def test_minibatch_loss_is_the_mean_over_its_real_training_graphs():
    gs = toy_set(num_graphs=11, seed=2, classes=3)
    train = np.array([1, 1, 0, 1, 1, 1, 0, 1, 1, 1, 1], bool)
    masks = {"train": train, "val": ~train, "test": np.zeros(11, bool)}
    batch = pack_clients(gs, [np.arange(11)], masks, batch_size=4, batching="budget")
    model = type("M", (), {"task": "graph_cls"})()
    loss = jax.jit(lambda logits, mb: graph_loss(model, logits, mb))      # one compile for every mini-batch
    host = {f: np.asarray(getattr(batch, f)) for f in batch.__dataclass_fields__ if getattr(batch, f) is not None}
    rng = np.random.default_rng(1)
    assert batch.num_minibatches > 1
    for j in range(batch.num_minibatches):
        mb = type(batch)(**{f: a if f == "client_mask" else a[0, j] for f, a in host.items()})
        logits = rng.normal(size=(mb.num_graph_slots, 3)).astype(np.float32)
        ids = np.asarray(mb.graph_ids)
        keep = np.flatnonzero(ids >= 0)[train[ids[ids >= 0]]]
        z = logits[keep].astype(np.float64)
        ce = np.log(np.exp(z).sum(1)) - z[np.arange(len(keep)), gs.y[ids[keep]]]
        np.testing.assert_allclose(float(loss(logits, mb)), ce.mean(), rtol=1e-5)


def test_graph_batching_refusals_are_one_line():
    from fgl_jax import schema
    from fgl_jax.systems.baseline.config import RunConfig
    with pytest.raises(ValueError, match="graph batching must be one of") as err:
        pack_clients(toy_set(num_graphs=3), [np.arange(3)], batching="sorted")
    assert "\n" not in str(err.value)
    with pytest.raises(ValueError, match="graph_batching='budget' is an option of task graph_cls") as err:
        schema.make(RunConfig, {"dataset": "cora", "graph_batching": "budget"})
    assert "\n" not in str(err.value)
    with pytest.raises(ValueError, match="graph_batching") as err:
        schema.make(RunConfig, {"task": "graph_cls", "dataset": "x", "graph_batching": "sorted"})
    assert "\n" not in str(err.value)
