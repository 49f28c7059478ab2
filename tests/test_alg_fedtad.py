"""FedTAD: the class-wise knowledge reliability against the authors' per-node loops (NumPy), the
walk sampler's stay probability (binomial test), the pseudo graph, class weights and diversity loss
against NumPy, a round with one distillation step against FedAvg's average moved by a per-class
loop re-derivation of L_D with Adam by hand (so the FedAvg part is checked too); the run under
partial participation and through the CLI with --resume."""
import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from fgl_jax import registry
from fgl_jax.algorithms import fedtad as T
from fgl_jax.federated import make_fed_data, run
from fgl_jax.federated.algorithm import HostInput
from fgl_jax.batch import build_client_batch, dense_graph_batch
from fgl_jax.partition import random_partition
from fgl_jax.systems.baseline import RunConfig, build
from tests.alg_helpers import assert_trees_close, cli_run_and_resume, toy_setup
from tests.helpers import toy_graph


def _host(clients=3, n=60):
    g = toy_graph(n=n, seed=4)
    a = random_partition(g, clients, seed=0).assignment
    return g, a, build_client_batch(g, a, clients)


def test_ckr_matches_the_authors_loops():
    g, a, b = _host()
    hp = T.FedTADHParams(fedtad_walk_length=3)
    got = T.class_reliability(HostInput(g, np.asarray(a), b, 7), hp)
    rng = np.random.default_rng(7)           # the same walks, drawn in the same order
    x = g.dense_x()
    for c in range(b.num_clients):
        nodes = np.flatnonzero(a == c)       # client c's nodes in the batch's (ascending) order
        n = len(nodes)
        loc = {int(v): i for i, v in enumerate(nodes)}
        edges = [(loc[int(s)], loc[int(r)]) for s, r in zip(g.senders, g.receivers) if a[s] == c and a[r] == c]
        adj = np.eye(n)
        for s, r in edges:
            adj[s, r] += 1
        walks = T.code_random_walks(np.diag(adj), adj.sum(1), 3, rng)
        emb = np.concatenate([x[nodes], walks], 1)
        want = np.zeros(g.num_classes)
        for v in np.flatnonzero(g.train_mask[nodes]):
            nb = [r for s, r in edges if s == v]
            cos = [emb[v] @ emb[u] / (np.linalg.norm(emb[v]) * np.linalg.norm(emb[u])) for u in nb]
            want[g.y[nodes[v]]] += (1 + sum(cos)) / (len(nb) + 1)
        np.testing.assert_allclose(got[c], want, rtol=1e-10)
    per_class = T.normalise_ckr(got, "clients")
    np.testing.assert_allclose(per_class.sum(0), 1.0)
    np.testing.assert_allclose(T.normalise_ckr(got, "classes").sum(1), 1.0)


def test_walks_stay_with_the_codes_probability():
    n, trials = 6, 4000
    deg = np.array([1.0, 2, 3, 4, 5, 6])
    w = T.code_random_walks(np.ones(n), deg, 2, np.random.default_rng(0))
    assert w.shape == (n, 3)
    np.testing.assert_array_equal(w[:, 0], np.arange(n))   # a walk starts at its node
    np.testing.assert_array_equal(w[:, 1], np.arange(n))
    rng = np.random.default_rng(1)
    stays = np.zeros(n)
    for _ in range(trials):
        stays += T.code_random_walks(np.ones(n), deg, 2, rng)[:, 2] == np.arange(n)
    p = np.exp(1 / deg) / (np.exp(1 / deg) + n - 1)          # softmax of the diagonal T row
    sd = np.sqrt(p * (1 - p) / trials)
    assert (np.abs(stays / trials - p) < 5 * sd).all()


@pytest.mark.slow
def test_pseudo_graph_weights_and_diversity_match_numpy():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(9, 5))
    got = np.asarray(T.knn_adjacency(jnp.asarray(x, jnp.float32), 3))
    xn = x / np.linalg.norm(x, axis=1, keepdims=True)
    want = np.zeros((9, 9))
    for i in range(9):
        want[i, np.argsort(-(xn @ xn.T)[i])[:3]] = 1
    want = np.maximum(want, want.T)
    np.fill_diagonal(want, 0)
    np.testing.assert_array_equal(got, want)
    z = rng.normal(size=(9, 4))
    div = np.exp(-np.mean([[np.mean((z[i] - z[j]) ** 2) * np.mean(np.abs(x[i] - x[j])) for j in range(9)]
                           for i in range(9)]))
    assert float(T.diversity_loss(jnp.asarray(z), jnp.asarray(x))) == pytest.approx(div, rel=1e-5)
    c = T.pseudo_classes(10, 3)
    np.testing.assert_array_equal(c, [0, 0, 0, 1, 1, 1, 2, 2, 2, 2])
    ckr = rng.random((2, 3))
    vals = rng.random((2, 10))
    w = np.asarray(T.class_weights(jnp.asarray(ckr), jnp.asarray(c)))
    want = [[ckr[i, k] * vals[i, c == k].mean() for k in range(3)] for i in range(2)]
    np.testing.assert_allclose((w * vals).sum(1), np.sum(want, 1), rtol=1e-6)


def _toy(hp, local_steps=2):
    g, a, b = _host()
    ckr = T.normalise_ckr(T.class_reliability(HostInput(g, np.asarray(a), b, 0), hp), hp.fedtad_ckr_norm)
    data = make_fed_data(b, extra={"ckr": ckr.astype(np.float32)})
    _, model, common = toy_setup(local_steps=local_steps)
    from fgl_jax.nn import make_model
    model = make_model("gcn", g.num_features, g.num_classes, hidden=8)
    return data, model, common


@pytest.mark.slow
def test_one_distillation_step_against_a_per_class_loop():
    hp = T.FedTADHParams(fedtad_it_g=0, fedtad_it_d=1, fedtad_glb_epochs=1, fedtad_num_gen=12, fedtad_topk=3)
    data, model, common = _toy(hp)                     # dropout 0: L_D is deterministic
    alg = registry.get("algorithm", "fedtad")(model, common, hp)
    st = alg.init(jax.random.key(0), data)
    k = jax.random.key(5)
    got, _ = jax.jit(alg.round)(st, data, k)
    # rebuild: the clients' models (FedAvg's round with the same key), their average, the pseudo graph
    avg = registry.get("algorithm", "local")(model, common, None)
    k_train, k_dist = jax.random.split(k)
    loc_state = avg.init(jax.random.key(0), data)
    loc_state = dataclasses.replace(loc_state, personal=jax.tree.map(
        lambda a: jnp.broadcast_to(a, (data.eval.num_clients,) + a.shape), st.server))
    trained, _ = jax.jit(avg.round)(loc_state, data, k_train)
    idx = np.asarray(data.train_index)
    local = jax.tree.map(lambda a: a[idx], trained.personal)
    w = np.asarray(data.train_weight, np.float64)
    theta = jax.tree.map(lambda a: jnp.asarray(np.tensordot(w / w.sum(), np.asarray(a, np.float64), 1), jnp.float32), local)
    kz = jax.random.split(jax.random.split(k_dist, 1)[0])[0]
    c = T.pseudo_classes(12, int(model.num_classes))
    z = jax.random.normal(kz, (12, hp.fedtad_noise_dim), jnp.float32)
    x = T.generate(st.gen, z, jnp.asarray(c))
    graph = dense_graph_batch(x, T.knn_adjacency(x, 3))
    ckr = np.asarray(data.extra["ckr"])[idx]

    def loss_d(p):   # the authors' loop: clients x classes
        total = 0.0
        glo = model.apply(p, graph)
        for i in range(len(idx)):
            li = model.apply(jax.tree.map(lambda a: a[i], local), graph)
            for cls in range(int(model.num_classes)):
                sel = c == cls
                total += ckr[i, cls] * jnp.mean(jnp.mean(jnp.abs(glo[sel] - li[sel]), axis=1))
        return total

    opt = optax.chain(optax.add_decayed_weights(common.optim.weight_decay), optax.adam(hp.fedtad_lr_d)) \
        if common.optim.weight_decay else optax.adam(hp.fedtad_lr_d)
    upd, _ = opt.update(jax.grad(loss_d)(theta), opt.init(theta), theta)
    assert_trees_close(got.server, optax.apply_updates(theta, upd), rtol=1e-4, atol=1e-6)
    assert not np.allclose(np.asarray(jax.tree.leaves(got.server)[0]), np.asarray(jax.tree.leaves(theta)[0]))


@pytest.mark.slow   # integration: builds and compiles whole runs (covered fast by the tests above)
def test_fedtad_runs_with_partial_participation():
    prog = build(RunConfig(dataset="csbm", algorithm="fedtad", clients=4, rounds=2, hidden=8, split="keep",
                           client_fraction=0.5, fedtad_glb_epochs=1, fedtad_num_gen=20))
    res = run(prog.algorithm, prog.data, jax.random.key(0), 2)
    assert np.isfinite(res.history["test_acc"]).all()
    assert prog.data.extra["ckr"].shape[0] == 4     # [C, K] on the evaluation axis


@pytest.mark.slow   # integration: builds and compiles whole runs (covered fast by the tests above)
def test_fedtad_cli_run_and_resume(tmp_path):
    cli_run_and_resume(tmp_path, "fedtad", "--fedtad-glb-epochs", "1", "--fedtad-num-gen", "20")
