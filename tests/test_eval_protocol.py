"""OpenFGL's evaluation protocol in the baseline system: the per-client split (counts against the
exact floor rule, disjointness, seeding) and the four evaluation modes (against NumPy accuracies of
the returned models on the subgraphs / the whole graph, and exact identities between modes)."""
import dataclasses

import jax
import numpy as np
import pytest

from fgl_jax.batch import full_graph_batch, unstack
from fgl_jax.data import csbm, openfgl_fractions, per_client_split
from fgl_jax.federated import run
from fgl_jax.federated.config import FedConfig
from fgl_jax.federated.evaluation import evaluate_models
from fgl_jax.systems.baseline.config import RunConfig
from fgl_jax.systems.baseline.program import build, prepare
from tests.test_metrics import ref_macro


def small_graph(num_classes: int = 3) -> "Graph":
    return csbm(num_nodes=160, num_classes=num_classes, num_features=8, avg_degree=6.0, seed=1)


def labelled_graph_with_holes():
    g = csbm(num_nodes=400, num_classes=4, num_features=4, seed=2)
    y = g.y.copy()
    y[::37] = -1                                  # unlabelled nodes: never in a mask
    return dataclasses.replace(g, y=y)


# ------------------------------------------------------------------------------------- the split

def test_per_client_split_counts_follow_openfgl_floor_rule():
    g = labelled_graph_with_holes()
    assign = np.random.default_rng(0).integers(0, 5, g.num_nodes)
    out = per_client_split(g, assign, 5, 0.2, 0.4, 0.4, seed=3)
    tr, va, te = out.train_mask, out.val_mask, out.test_mask
    assert not (tr & va).any() and not (tr & te).any() and not (va & te).any()
    assert not ((tr | va | te) & (g.y < 0)).any()
    for k in range(5):
        for c in range(g.num_classes):
            sel = (assign == k) & (g.y == c)
            n = int(sel.sum())
            # exact rationals: int(0.2 n) = n // 5, int(0.6 n) = 3n // 5, test = the rest
            assert (tr & sel).sum() == n // 5
            assert (va & sel).sum() == 3 * n // 5 - n // 5
            assert (te & sel).sum() == n - 3 * n // 5


def test_per_client_split_fractions_below_one_leave_nodes_out_and_seed_matters():
    g = labelled_graph_with_holes()
    assign = np.arange(g.num_nodes) % 3
    a = per_client_split(g, assign, 3, 0.5, 0.25, 0.2, seed=0)
    for k in range(3):
        for c in range(g.num_classes):
            sel = (assign == k) & (g.y == c)
            n = int(sel.sum())
            assert (a.test_mask & sel).sum() == min(n, int(np.float32(0.95) * np.float32(n))) - \
                int(np.float32(0.75) * np.float32(n))
    again = per_client_split(g, assign, 3, 0.5, 0.25, 0.2, seed=0)
    other = per_client_split(g, assign, 3, 0.5, 0.25, 0.2, seed=1)
    assert (again.train_mask == a.train_mask).all() and (again.test_mask == a.test_mask).all()
    assert (other.train_mask != a.train_mask).any()
    assert other.train_mask.sum() == a.train_mask.sum()


@pytest.mark.parametrize("kwargs, message", [
    (dict(train=0.6, val=0.3, test=0.2), "sum to at most 1"),
    (dict(assignment=np.zeros(7, int)), "assignment has shape"),
    (dict(assignment=np.full(400, 9)), "outside 0..4"),
])
def test_per_client_split_bad_input(kwargs, message):
    g = labelled_graph_with_holes()
    args = dict(assignment=np.zeros(g.num_nodes, int), num_clients=5, train=0.2, val=0.4, test=0.4)
    args.update(kwargs)
    with pytest.raises(ValueError, match=message):
        per_client_split(g, **args)


def test_openfgl_fractions():
    assert openfgl_fractions("Cora") == (0.2, 0.4, 0.4) == openfgl_fractions("citeseer")
    with pytest.raises(ValueError, match="no default split for dataset 'csbm'"):
        openfgl_fractions("csbm")


def test_prepare_splits_each_client_after_partitioning():
    g = small_graph()
    cfg = RunConfig(clients=4, partition="louvain", split="per_client", train_frac=0.2, val_frac=0.4,
                    test_frac=0.4, split_seed=5)
    prep = prepare(cfg, g)
    expect = per_client_split(g, prep.partition.assignment, 4, 0.2, 0.4, 0.4, seed=5)
    ids = np.asarray(prep.data.eval.node_ids)
    for name in ("train_mask", "val_mask", "test_mask"):
        got = np.asarray(getattr(prep.data.eval, name))
        want = getattr(expect, name)
        for k in range(4):
            real = ids[k] >= 0
            assert (got[k][real] == want[ids[k][real]]).all()
    assert prep.data.glob is None
    assert prepare(cfg.replace(eval_mode="global_model_on_global_data"), g).data.glob.num_clients == 1


# ------------------------------------------------------------------------------------ eval modes
# Fast: `evaluate_models` on given models (random inits) against NumPy accuracies / macro-F1 of the
# same models' logits. Slow (end to end through the engine): auto == today's modes, one client.

@pytest.fixture(scope="module")
def setup():
    """A two-class graph (so AUC/AP are reported), 4 Louvain clients, the whole graph in data.glob,
    a global model and 4 different client models (random inits)."""
    from fgl_jax.nn import make_model
    g = small_graph(num_classes=2)
    clients = 4
    cfg = RunConfig(clients=clients, partition="louvain", split="per_client", train_frac=0.2, val_frac=0.4,
                    test_frac=0.4, hidden=8, eval_mode="global_model_on_global_data")
    prep = prepare(cfg, g)
    model = make_model("gcn", g.num_features, g.num_classes, hidden=8)
    one = unstack(prep.data.eval, 0)
    keys = jax.random.split(jax.random.PRNGKey(0), clients + 1)
    # jitted: an eager init dispatches op by op, which takes many seconds on the shared CPUs
    server, local = jax.jit(lambda k: (model.init(k[0], one, train=False),
                                       jax.vmap(lambda kk: model.init(kk, one, train=False))(k[1:])))(keys)
    return g, prep, model, server, local


_APPLY = {}


def _apply(model):
    """One jitted forward pass per model (eager dispatch is slow on the shared CPUs)."""
    if id(model) not in _APPLY:
        _APPLY[id(model)] = jax.jit(lambda p, b: model.apply(p, b, train=False))
    return _APPLY[id(model)]


def np_scores(model, params, batch, split):
    """(accuracy, macro-F1, predictions, labels) of one model on one client's batch, in NumPy."""
    logits = np.asarray(_apply(model)(params, batch))
    m = np.asarray(getattr(batch, f"{split}_mask"))
    pred, y = logits.argmax(-1)[m], np.asarray(batch.y)[m]
    return (pred == y).mean(), ref_macro(pred, y)[2], pred, y


def evaluate_jit(model, data, mode, average, **params):
    """evaluate_models compiled; average "both" returns (pooled, client_nodes) from one program."""
    averages = ("pooled", "client_nodes") if average == "both" else (average,)
    out = jax.jit(lambda d, p: [evaluate_models(model, d, mode, average=a, **p) for a in averages])(data, params)
    return out if average == "both" else out[0]


@pytest.mark.slow
def test_global_model_on_global_data_is_the_whole_graph_accuracy(setup):
    g, prep, model, server, _ = setup
    got = evaluate_jit(model, prep.data, "global_model_on_global_data", "pooled", server=server)
    whole = unstack(full_graph_batch(prep.graph), 0)
    for s in ("val", "test"):
        acc, f1, _, _ = np_scores(model, server, whole, s)
        assert float(got[f"{s}_acc"]) == pytest.approx(acc, abs=1e-6)
        assert float(got[f"{s}_f1_macro"]) == pytest.approx(f1, abs=1e-5)
        assert np.isfinite(float(got[f"{s}_auc"])) and np.isfinite(float(got[f"{s}_ap"]))
    # the whole graph keeps the cross-client edges: not the same as pooling the clients' subgraphs
    sub = evaluate_jit(model, prep.data, "global_model_on_local_data", "pooled", server=server)
    assert any(float(sub[f"{s}_acc"]) != float(got[f"{s}_acc"]) for s in ("train", "val", "test"))


@pytest.mark.slow
def test_local_data_modes_pooled_and_node_weighted(setup):
    g, prep, model, server, local = setup
    batch = prep.data.eval
    clients = [unstack(batch, k) for k in range(batch.num_clients)]
    nodes = [int(np.asarray(b.node_mask).sum()) for b in clients]
    for mode, params in (("global_model_on_local_data", dict(server=server)),
                         ("local_model_on_local_data", dict(local=local))):
        pick = (lambda k: server) if "server" in params else (lambda k: jax.tree.map(lambda a: a[k], local))
        scores = [np_scores(model, pick(k), b, "test") for k, b in enumerate(clients)]
        pooled, weighted = evaluate_jit(model, prep.data, mode, "both", **params)
        pred = np.concatenate([sc[2] for sc in scores])
        y = np.concatenate([sc[3] for sc in scores])
        assert float(pooled["test_acc"]) == pytest.approx((pred == y).mean(), abs=1e-6)
        assert float(pooled["test_f1_macro"]) == pytest.approx(ref_macro(pred, y)[2], abs=1e-5)
        assert float(weighted["test_acc"]) == pytest.approx(np.average([sc[0] for sc in scores], weights=nodes),
                                                             abs=1e-6)
        assert float(weighted["test_f1_macro"]) == pytest.approx(
            np.average([sc[1] for sc in scores], weights=nodes), abs=1e-5)


def test_local_models_on_global_data_average_each_clients_model(setup):
    g, prep, model, _, local = setup
    whole = unstack(full_graph_batch(prep.graph), 0)
    scores = [np_scores(model, jax.tree.map(lambda a: a[k], local), whole, "test") for k in range(4)]
    got = evaluate_jit(model, prep.data, "local_model_on_global_data", "client_nodes", local=local)
    assert float(got["test_acc"]) == pytest.approx(np.mean([sc[0] for sc in scores]), abs=1e-6)
    assert float(got["test_f1_macro"]) == pytest.approx(np.mean([sc[1] for sc in scores]), abs=1e-5)


def test_bad_mode_combinations_fail_clearly(setup):
    with pytest.raises(ValueError, match="needs a global model"):
        FedConfig(algorithm="local", eval_mode="global_model_on_global_data")
    g, prep, model, server, local = setup
    with pytest.raises(ValueError, match="FedData.glob"):
        evaluate_models(model, dataclasses.replace(prep.data, glob=None), "global_model_on_global_data",
                        server=server)
    with pytest.raises(ValueError, match="mode must be one of"):
        evaluate_models(model, prep.data, "auto", server=server)
    with pytest.raises(ValueError, match="needs the clients' models"):
        evaluate_models(model, prep.data, "local_model_on_local_data", server=server)


BASE = dict(clients=4, partition="louvain", split="per_client", train_frac=0.2, val_frac=0.4, test_frac=0.4,
            hidden=8, rounds=2, local_steps=2)


def run_cfg(g, **kw):
    cfg = RunConfig(**{**BASE, **kw})
    prog = build(cfg, g)
    return run(prog.algorithm, prog.data, jax.random.PRNGKey(0), cfg.rounds)


@pytest.mark.slow
def test_auto_is_todays_mode():
    g = small_graph()
    for algo, mode in (("fedavg", "global_model_on_local_data"), ("local", "local_model_on_local_data")):
        a, b = run_cfg(g, algorithm=algo), run_cfg(g, algorithm=algo, eval_mode=mode)
        for k in a.history:
            np.testing.assert_array_equal(a.history[k], b.history[k])


@pytest.mark.slow
def test_one_client_local_and_global_models_coincide():
    g = small_graph()
    a, b = (run_cfg(g, clients=1, eval_mode=mode) for mode in ("global_model_on_global_data",
                                                               "local_model_on_global_data"))
    for k in ("val_acc", "test_acc", "test_f1_macro"):
        np.testing.assert_allclose(a.history[k], b.history[k], rtol=0, atol=1e-6)
