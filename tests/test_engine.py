"""The federated engine against independent references (plain optax loops, hand-written FedAvg)."""
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from fgl_jax.batch import build_client_batch, full_graph_batch, unstack
from fgl_jax.federated import (FedConfig, NonFiniteError, OptimConfig, baseline, make_fed_data,
                               masked_cross_entropy, run)
from fgl_jax.nn import make_model
from tests.helpers import toy_graph


@pytest.mark.slow
@pytest.mark.parametrize("local_steps", [1, 3])
def test_fedavg_one_client_equals_centralised(local_steps):
    g = toy_graph(n=80, seed=2)
    batch = full_graph_batch(g)
    data = make_fed_data(batch)
    model = make_model("gcn", g.num_features, g.num_classes, hidden=16)
    cfg = FedConfig("fedavg", local_steps=local_steps, optim=OptimConfig(lr=0.05, gamma=0.9, decay_every=2))
    alg = baseline(model, cfg)
    key = jax.random.key(0)
    res = run(alg, data, key, 6)
    init_params = jax.jit(alg.init)(jax.random.split(key)[0], data)
    # reference: 6 rounds x local_steps Adam steps, schedule in rounds
    opt = optax.adam(0.05)
    p = init_params.server
    o = opt.init(p)
    one = unstack(batch, 0)

    @jax.jit   # one compile instead of op-by-op dispatch of every reference step
    def ref_step(p, o, scale):
        gr = jax.grad(lambda q: masked_cross_entropy(model.apply(q, one), one.y, one.train_mask))(p)
        u, o = opt.update(gr, o, p)
        return optax.apply_updates(p, jax.tree.map(lambda x: x * scale, u)), o

    for r in range(6):
        for _ in range(local_steps):
            p, o = ref_step(p, o, jnp.float32(0.9 ** (r // 2)))
    for a, b in zip(jax.tree.leaves(res.state.server), jax.tree.leaves(p)):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


@pytest.mark.slow
def test_fedavg_round_is_weighted_mean_of_local_updates():
    g = toy_graph(n=90, seed=4)
    parts = np.random.default_rng(1).integers(0, 3, g.num_nodes)
    batch = build_client_batch(g, parts, 3)
    data = make_fed_data(batch)
    model = make_model("sage", g.num_features, g.num_classes, hidden=8)
    alg = baseline(model, FedConfig("fedavg", local_steps=2, optim=OptimConfig(lr=0.02)))
    # jitted (as `run` calls them): op-by-op dispatch of a vmapped round cost most of this test's time
    state = jax.jit(alg.init)(jax.random.key(0), data)
    new, _ = jax.jit(alg.round)(state, data, jax.random.key(1))
    # reference: each client trains alone from the global model (SGD-free check via optax loop)
    opt = optax.adam(0.02)

    @jax.jit
    def ref_step(p, o, b):
        gr = jax.grad(lambda q: masked_cross_entropy(model.apply(q, b), b.y, b.train_mask))(p)
        u, o = opt.update(gr, o, p)
        return optax.apply_updates(p, u), o

    outs, weights = [], []
    for c in range(3):
        b = unstack(batch, c)
        p = state.server
        o = opt.init(p)
        for _ in range(2):
            p, o = ref_step(p, o, b)
        outs.append(p)
        weights.append(float(b.train_mask.sum()))
    w = np.array(weights) / sum(weights)
    ref = jax.tree.map(lambda *xs: sum(wi * x for wi, x in zip(w, xs)), *outs)
    for a, b in zip(jax.tree.leaves(new.server), jax.tree.leaves(ref)):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


@pytest.mark.slow
def test_local_train_proximal_term_equals_autodiff_of_the_penalty():
    """local_train's closed-form proximal gradient (with and without an offset, as FedProx and FedDC
    use it) against autodiff of (mu/2)||w + offset - anchor||^2 written into the loss, 3 Adam steps."""
    from fgl_jax.federated.client import local_train, node_loss_fn, tree_sq
    g = toy_graph(n=40, seed=2)
    b = unstack(build_client_batch(g, np.zeros(g.num_nodes, int), 1), 0)
    model = make_model("gcn", g.num_features, g.num_classes, hidden=8, dropout=0.5)
    p0 = jax.jit(lambda k: model.init({"params": k, "dropout": k}, b, train=False))(jax.random.key(0))
    anchor = jax.tree.map(lambda a: a + 0.1, p0)
    offset = jax.tree.map(lambda a: 0.05 * np.cos(np.asarray(a)), p0)
    opt = optax.chain(optax.add_decayed_weights(5e-4), optax.adam(1.0))
    ce, mu, key = node_loss_fn(model), jnp.float32(0.7), jax.random.key(5)
    def both(p0, anchor, b, key, off):
        def with_penalty(p, batch, k):
            shifted = p if off is None else jax.tree.map(jnp.add, p, off)
            return ce(p, batch, k) + 0.5 * mu * tree_sq(shifted, anchor)
        got = local_train(ce, opt, 3, p0, opt.init(p0), b, key, 0.01, prox_mu=mu, anchor=anchor, prox_offset=off)
        return got, local_train(with_penalty, opt, 3, p0, opt.init(p0), b, key, 0.01)

    results, ce0 = jax.jit(lambda *a: ([both(*a, None), both(*a, offset)], ce(a[0], a[2], a[3])))(p0, anchor, b, key)
    for got, ref in results:
        for x, y in zip(jax.tree.leaves(got[:2]), jax.tree.leaves(ref[:2])):
            np.testing.assert_allclose(x, y, rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(got[2], ref[2], rtol=1e-6)
        assert float(got[2]) > float(ce0)  # the penalty is in the reported first-step loss


@pytest.mark.slow
def test_fedprox_zero_mu_equals_fedavg_and_positive_mu_differs():
    g = toy_graph(n=60, seed=6)
    batch = build_client_batch(g, np.arange(g.num_nodes) % 2, 2)
    data = make_fed_data(batch)
    model = make_model("gcn", g.num_features, g.num_classes, hidden=8)
    key = jax.random.key(3)
    avg = run(baseline(model, FedConfig("fedavg", local_steps=3)), data, key, 4)
    prox0 = run(baseline(model, FedConfig("fedprox", local_steps=3, prox_mu=0.0)), data, key, 4)
    prox = run(baseline(model, FedConfig("fedprox", local_steps=3, prox_mu=10.0)), data, key, 4)
    for a, b in zip(jax.tree.leaves(avg.state.server), jax.tree.leaves(prox0.state.server)):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-7)
    diff = max(float(jnp.abs(a - b).max()) for a, b in
               zip(jax.tree.leaves(avg.state.server), jax.tree.leaves(prox.state.server)))
    assert diff > 1e-4


@pytest.mark.slow
def test_local_and_fedper_keep_personal_layers():
    g = toy_graph(n=60, seed=7)
    batch = build_client_batch(g, np.arange(g.num_nodes) % 3, 3)
    data = make_fed_data(batch)
    model = make_model("gcn", g.num_features, g.num_classes, hidden=8)
    per = run(baseline(model, FedConfig("fedper", local_steps=2)), data, jax.random.key(0), 3).state
    p = per.personal["params"]
    # last layer differs across clients, the first layer is shared (identical to the server's)
    assert float(jnp.abs(p["layer_1"]["kernel"][0] - p["layer_1"]["kernel"][1]).max()) > 0
    loc = run(baseline(model, FedConfig("local", local_steps=2)), data, jax.random.key(0), 3).state
    q = loc.personal["params"]["layer_0"]["kernel"]
    assert float(jnp.abs(q[0] - q[1]).max()) > 0


@pytest.mark.slow
def test_resume_reaches_the_same_numbers(tmp_path):
    g = toy_graph(n=60, seed=8)
    data = make_fed_data(build_client_batch(g, np.arange(g.num_nodes) % 2, 2))
    model = make_model("gcn", g.num_features, g.num_classes, hidden=8)
    alg = baseline(model, FedConfig("fedavg", local_steps=2))
    key = jax.random.key(5)
    full = run(alg, data, key, 10, chunk=5)
    run(alg, data, key, 5, chunk=5, out_dir=tmp_path)  # "interrupted" after 5 rounds
    assert (tmp_path / "checkpoints" / "round_000005").exists()
    resumed = run(alg, data, key, 10, chunk=5, out_dir=tmp_path, resume=True)
    np.testing.assert_array_equal(resumed.history["test_acc"], full.history["test_acc"])
    np.testing.assert_array_equal(resumed.history["train_loss"], full.history["train_loss"])
    assert resumed.best == full.best
    for a, b in zip(jax.tree.leaves(resumed.state.server), jax.tree.leaves(full.state.server)):
        np.testing.assert_array_equal(a, b)
    assert len((tmp_path / "metrics.jsonl").read_text().splitlines()) == 10


@pytest.mark.slow
def test_same_seed_same_numbers_and_chunking_invariant():
    g = toy_graph(n=60, seed=9)
    data = make_fed_data(build_client_batch(g, np.arange(g.num_nodes) % 2, 2))
    # a GCN with dropout (the keys matter): the engine's seeding and chunking do not depend on the model,
    # and a GAT's programs took several times longer to compile
    model = make_model("gcn", g.num_features, g.num_classes, hidden=8, dropout=0.3)
    alg = baseline(model, FedConfig("fedavg", local_steps=2))
    a = run(alg, data, jax.random.key(1), 6)
    b = run(alg, data, jax.random.key(1), 6, chunk=4)
    c = run(alg, data, jax.random.key(2), 6)
    np.testing.assert_array_equal(a.history["train_loss"], b.history["train_loss"])
    assert not np.array_equal(a.history["train_loss"], c.history["train_loss"])


def test_best_validation_selection():
    g = toy_graph(n=60, seed=10)
    data = make_fed_data(build_client_batch(g, np.arange(g.num_nodes) % 2, 2))
    model = make_model("mlp", g.num_features, g.num_classes, hidden=8)
    res = run(baseline(model, FedConfig("fedavg")), data, jax.random.key(0), 12)
    i = int(np.argmax(res.history["val_acc"]))  # argmax picks the first maximum, as the tracker does
    assert res.best["best_round"] == i + 1
    assert res.best["best_test"] == pytest.approx(res.history["test_acc"][i])


def test_nan_stops_with_round_number():
    g = toy_graph(n=40, seed=11)
    data = make_fed_data(build_client_batch(g, np.arange(g.num_nodes) % 2, 2))
    model = make_model("gcn", g.num_features, g.num_classes, hidden=8)
    alg = baseline(model, FedConfig("fedavg", optim=OptimConfig(lr=1e30, name="sgd", momentum=0.0)))
    with pytest.raises(NonFiniteError, match="round"):
        run(alg, data, jax.random.key(0), 5)


def test_bad_config_is_rejected():
    with pytest.raises(ValueError, match="algorithm: unknown value 'fedsgd'"):
        FedConfig("fedsgd")
    with pytest.raises(ValueError, match="local_steps"):
        FedConfig(local_steps=0)
    with pytest.raises(ValueError, match="lr"):
        OptimConfig(lr=-1.0)
    with pytest.raises(ValueError, match="num_rounds"):
        g = toy_graph(n=20)
        data = make_fed_data(build_client_batch(g, np.arange(20) % 2, 2))
        run(baseline(make_model("mlp", g.num_features, 3), FedConfig()), data, jax.random.key(0), 0)


@pytest.mark.slow
def test_sweep_members_equal_single_runs():
    from fgl_jax.federated.sweep import run_sweep
    g = toy_graph(n=60, seed=12)
    data = make_fed_data(build_client_batch(g, np.arange(g.num_nodes) % 3, 3))
    model = make_model("gcn", g.num_features, g.num_classes, hidden=8)
    lrs = [0.01, 0.05]
    sw = run_sweep(baseline(model, FedConfig("fedprox", local_steps=2)), data, [3, 4], 5,
                   hparams={"lr": lrs, "prox_mu": [0.0, 1.0]}, mode="vmap")
    seq = run_sweep(baseline(model, FedConfig("fedprox", local_steps=2)), data, [3, 4], 5,
                    hparams={"lr": lrs, "prox_mu": [0.0, 1.0]}, mode="sequential")
    np.testing.assert_allclose(sw.history["train_loss"], seq.history["train_loss"], rtol=1e-5)
    for i, (seed, lr, mu) in enumerate([(3, 0.01, 0.0), (4, 0.05, 1.0)]):
        single = run(baseline(model, FedConfig("fedprox", local_steps=2, prox_mu=mu, optim=OptimConfig(lr=lr))),
                     data, jax.random.key(seed), 5)
        np.testing.assert_allclose(sw.history["train_loss"][i], single.history["train_loss"], rtol=1e-5)
        np.testing.assert_allclose(sw.history["test_acc"][i], single.history["test_acc"], atol=1e-6)
    with pytest.raises(ValueError, match="hidden"):
        run_sweep(baseline(model, FedConfig()), data, [0, 1], 2, hparams={"hidden": [8, 16]})


# ---- whole runs through the system (fgl_jax.experiment): identities the engine must keep exactly -----

def _run_files(tmp_path, name: str, chunk=None, **changes) -> dict:
    """A small CSBM baseline run written to tmp_path/name: its three result files as bytes."""
    from fgl_jax import experiment
    base = dict(dataset="csbm", split="keep", clients=3, rounds=17, hidden=8, dropout=0.3, local_steps=2)
    d = tmp_path / name
    experiment.run_config(experiment.default_config("baseline", **{**base, **changes}), out=str(d), chunk=chunk)
    return {f: (d / f).read_bytes() for f in ("metrics.jsonl", "summary.json", "config.yaml")}


@pytest.mark.slow
def test_chunk_sizes_1_7_15_write_the_same_files_as_the_default_chunking(tmp_path):
    """17 rounds (a prime: chunks of 7 end 7, 14, 17; of 15 end 15, 17) with dropout and two local
    steps, so every round key matters. The chunk is passed to run_config, not written into the
    config, so config.yaml must match too: metrics.jsonl, summary.json and config.yaml byte for byte.
    Extends test_same_seed_same_numbers_and_chunking_invariant (engine histories, one chunk size)
    to the files of a fresh run and to chunks that leave a short last chunk."""
    default = _run_files(tmp_path, "default")
    assert len(default["metrics.jsonl"].splitlines()) == 17
    for chunk in (1, 7, 15):
        got = _run_files(tmp_path, f"chunk{chunk}", chunk=chunk)
        for name in default:
            assert got[name] == default[name], f"chunk={chunk}: {name} differs from the default chunking"


@pytest.mark.slow
def test_one_client_fedavg_equals_global_exactly(tmp_path):
    """FedAvg with one client against Global (centralised training, `algorithms/centralised.py`) on
    the same CSBM graph and split. The engine makes this an identity, so the test is exact: with one
    client every partition puts all nodes on client 0 and `Graph.subgraph` keeps node and edge order,
    so the client batch is `full_graph_batch` array for array (checked below); Global is the FedAvg
    round itself; and the weighted mean of one client is x * (w / w) = x * 1.0, exact in floats. The
    only difference is by design: Global sends nothing, so its communication columns are 0."""
    from fgl_jax.batch import full_graph_batch
    from fgl_jax.systems.baseline.program import prepare
    from fgl_jax import experiment
    fed_cfg = experiment.default_config("baseline", dataset="csbm", split="keep", clients=1, algorithm="fedavg")
    glob_cfg = experiment.default_config("baseline", dataset="csbm", split="keep", clients=1, algorithm="global")
    fed, glob = prepare(fed_cfg), prepare(glob_cfg)
    for a, b in zip(jax.tree.leaves(fed.data.train), jax.tree.leaves(glob.data.train)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert jax.tree.structure(fed.data.train) == jax.tree.structure(glob.data.train)
    # and both are the whole graph as one client, the independent construction
    whole = full_graph_batch(fed.graph)
    np.testing.assert_array_equal(np.asarray(fed.data.train.node_ids), np.asarray(whole.node_ids))
    np.testing.assert_array_equal(np.asarray(fed.data.train.graph.senders), np.asarray(whole.graph.senders))

    import json
    rows = {}
    for alg in ("fedavg", "global"):
        files = _run_files(tmp_path, alg, clients=1, algorithm=alg, rounds=6)
        rows[alg] = [json.loads(line) for line in files["metrics.jsonl"].splitlines()]
        rows[alg + "_summary"] = json.loads(files["summary.json"])
    comm = {"comm_up_bytes", "comm_down_bytes", "comm_up_bytes_per_client", "comm_down_bytes_per_client"}
    assert len(rows["fedavg"]) == len(rows["global"]) == 6
    for r, (a, b) in enumerate(zip(rows["fedavg"], rows["global"]), start=1):
        assert a.keys() == b.keys()
        assert {k: a[k] for k in a.keys() - comm} == {k: b[k] for k in b.keys() - comm}, f"round {r}"
        assert all(b[k] == 0 for k in comm) and all(a[k] > 0 for k in comm)
    assert rows["fedavg_summary"]["best"] == rows["global_summary"]["best"]
    fa, gl = rows["fedavg_summary"]["final"], rows["global_summary"]["final"]
    assert {k: fa[k] for k in fa.keys() - comm} == {k: gl[k] for k in gl.keys() - comm}
