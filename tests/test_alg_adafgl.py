"""AdaFGL: the normalised operator, the reliability label propagation and the phase-2 models
(homophilous / heterophilous forward, the mixture) against a dense NumPy re-derivation with the
smoothed features [X, ÂX, ..., Â^P X] built explicitly; the schedule (phase-1 rounds equal FedAvg's,
the switch builds the corrected graph from the global model's soft labels); the run under partial
participation and through the CLI with --resume across the phase switch."""
import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import scipy.sparse as sp

from fgl_jax import ops, registry
from fgl_jax.algorithms import adafgl as A
from fgl_jax.batch import build_client_batch
from fgl_jax.federated import FedConfig, OptimConfig, make_fed_data, run
from fgl_jax.federated.algorithm import HostInput
from fgl_jax.nn import make_model
from fgl_jax.partition import random_partition
from fgl_jax.systems.baseline import RunConfig, build
from tests.alg_helpers import assert_trees_close, cli_run_and_resume, toy_setup
from tests.helpers import toy_graph


def _np_norm(m, r):
    m = m + np.eye(len(m))
    d = m.sum(1)
    return np.diag(d ** (r - 1)) @ m.T @ np.diag(d ** -r)


def _softmax(z):
    e = np.exp(z - z.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def _np_getre(emb):
    s = _softmax(emb)
    re = s @ s.T
    d = np.diag(re)
    re = re / np.maximum(np.sqrt(np.outer(d, d)), 1e-9)
    return re - np.diag(np.diag(re))


def _prelu(x, a):
    return np.where(x >= 0, x, a * x)


def _np_forward(p, x, adj, steps, feat=None):
    """OpenFGL's AdaFGLModel forward in eval mode (no dropout), on unpadded dense inputs; feat: the
    client's kept feature rows when p is compacted."""
    p = dict(p)
    for name in ("homo", "smooth", "prop", "local"):   # the torch layers' first weights [(P + 1) F, h]
        p[name] = dict(p[name], w0=A.first_block(p, name, steps, feat, x.shape[1]))
    p = jax.tree.map(lambda a: np.asarray(a, np.float64), p)
    feats = [x]
    for _ in range(steps):
        feats.append(adj @ feats[-1])
    sm = np.concatenate(feats, 1)                     # the smoothed features [N, (P+1) F]
    flat = lambda w: w

    def mlp3(inp, q, a):
        h = _prelu(inp @ flat(q["w0"]) + q["b0"], a)
        h = _prelu(h @ q["w1"] + q["b1"], a)
        return h @ q["w2"] + q["b2"]

    homo = _prelu(sm @ flat(p["homo"]["w0"]) + p["homo"]["b0"], p["homo"]["a"]) @ p["homo"]["w1"] + p["homo"]["b1"]
    local = mlp3(x, p["local"], p["a_hete"])
    smooth = mlp3(sm, p["smooth"], p["a_hete"])
    emb = mlp3(sm, p["prop"], p["a_prop"])
    re = _np_getre(emb)
    mean, top = re.mean(), re.max()
    t = re - mean
    lrn = np.where(t > 0, t / (top - mean), -(t + mean) / mean) + np.eye(len(re))
    prop = ((_softmax(_prelu(lrn, p["a_prop"]) @ emb) - _softmax(_prelu(-lrn, p["a_prop"]) @ emb)) + emb) / 2
    return homo, local, smooth, prop


def _client(data, c):
    b = jax.tree.map(lambda a: a[c], data.eval)
    nodes = np.asarray(b.node_mask)
    em = np.asarray(b.edge_mask)
    s, r = np.asarray(b.senders)[em], np.asarray(b.receivers)[em]
    n = int(nodes.sum())
    m = np.zeros((n, n))
    np.add.at(m, (s, r), 1.0)
    return b, nodes, m


def test_normalise_and_reliability_match_numpy():
    data, _, _ = toy_setup()
    b, nodes, m = _client(data, 0)
    npad = b.y.shape[0]
    mp = np.zeros((npad, npad))
    mp[: len(m), : len(m)] = m
    for r in (0.5, 0.3):
        got = np.asarray(A.normalise(jnp.asarray(mp, jnp.float32), r))[: len(m), : len(m)]
        np.testing.assert_allclose(got, _np_norm(m, r), rtol=1e-5, atol=1e-7)
    y = np.asarray(b.y)
    train = np.asarray(b.train_mask)
    rng = np.random.default_rng(0)
    seed = train & (rng.random(npad) < 0.5)
    held = train & ~seed
    unl = held | np.asarray(b.val_mask) | np.asarray(b.test_mask)
    k = int(y.max()) + 1
    got = float(A.reliability(jnp.asarray(mp, jnp.float32), jnp.asarray(y), jnp.asarray(seed), jnp.asarray(held),
                              jnp.asarray(unl), k, 0.5))
    a = _np_norm(mp, 0.5)
    lab = np.eye(k)[y]
    lab[unl] = 1.0 / k
    out = lab.copy()
    for _ in range(10):                               # OpenFGL's init_lp_propagate
        nxt = 0.5 * a @ out + 0.5 * lab
        nxt[seed] += lab[seed]
        out = nxt
    want = (out.argmax(1) == y)[held].mean()
    assert got == pytest.approx(want)


def _prepared_setup(sparse: bool, hidden: int = 8, clients: int = 3, raw: bool = False):
    """Toy clients after AdaFGL's host preparation; sparse: CSR features of 40 columns, a third of
    which occur nowhere and the rest at 10 % density (each client keeps fewer rows than F);
    raw: also return the client batch as it was before the preparation (SparseFeatures)."""
    g = toy_graph(n=90, seed=3, num_features=40 if sparse else 12)
    if sparse:
        rng = np.random.default_rng(5)
        x = g.dense_x() * (rng.random((90, 40)) < 0.1) * (np.arange(40) % 3 != 0)
        g = dataclasses.replace(g, x=sp.csr_matrix(x.astype(np.float32)))
    assignment = np.asarray(random_partition(g, clients, seed=0).assignment)
    before = build_client_batch(g, assignment, clients)
    batch, extra = A.prepare(HostInput(g, assignment, before, 0), A.AdaFGLHParams())
    model = make_model("gcn", g.num_features, g.num_classes, hidden=hidden)
    out = make_fed_data(batch, extra=extra), model, FedConfig(local_steps=2, optim=OptimConfig(name="adam", lr=0.05))
    return out + (before,) if raw else out


@pytest.mark.slow
def test_ell_matmul_and_its_weight_gradient_match_dense_products():
    rng = np.random.default_rng(0)
    x = (rng.random((2, 13, 40)) < 0.15) * rng.normal(size=(2, 13, 40))
    x[0, :, 3] = rng.normal(size=13)                        # a dense column and an empty row
    x[1, 4] = 0.0
    nz = [np.nonzero(xc) for xc in x]
    size = max(len(r) for r, _ in nz)
    pad = lambda a: np.pad(a, (0, size - len(a)))
    perm = [rng.permutation(len(r)) for r, _ in nz]        # entries in no particular order
    ell = ops.ell_features(np.stack([pad(r[o]) for (r, _), o in zip(nz, perm)]),
                           np.stack([pad(c[o]) for (_, c), o in zip(nz, perm)]),
                           np.stack([pad(xc[r, c][o]) for xc, (r, c), o in zip(x, nz, perm)]), 13, 40)
    w = rng.normal(size=(2, 40, 5)).astype(np.float32)
    dz = rng.normal(size=(2, 13, 5)).astype(np.float32)
    out, grad = jax.vmap(lambda w, e, d: (lambda o, f: (o, f(d)[0]))(*jax.vjp(lambda ww: ops.feature_matmul(e, ww, 13), w)))(
        jnp.asarray(w), ell, jnp.asarray(dz))
    np.testing.assert_allclose(out, x @ w, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(grad, np.swapaxes(x, 1, 2) @ dz, rtol=1e-5, atol=1e-5)


@pytest.mark.slow
def test_phase2_models_match_a_dense_numpy_forward():
    data, model, _, before = _prepared_setup(sparse=True, raw=True)
    steps, k = 2, int(model.num_classes)
    b, nodes, m = _client(data, 1)
    npad, n = b.y.shape[0], len(m)
    feat = np.asarray(data.extra["adafgl_feat"][1])
    assert (feat < model.in_dim).sum() < model.in_dim        # the client keeps fewer rows than F
    p = A.init_phase2(jax.random.key(2), int(model.in_dim), 8, k, steps)
    p = jax.tree.map(lambda a: a + 0.05 * jax.random.normal(jax.random.key(9), jnp.shape(a)), p)  # nonzero biases
    p = A.compact_first(p, jnp.asarray(feat))
    x_ell = jax.tree.map(lambda a: a[1], data.extra["adafgl_x"])
    mp = np.zeros((npad, npad))
    mp[:n, :n] = m + (np.random.default_rng(1).random((n, n)) > 0.97) * 0.5
    adj = A.normalise(jnp.asarray(mp, jnp.float32), 0.5)
    got, first = jax.jit(lambda p, b, x, a: A.phase2_forward(p, x, a, b.node_mask, jax.random.key(0), False))(
        p, b, x_ell, adj)
    x = np.zeros((npad, model.in_dim))                      # the client's features, dense
    f = jax.tree.map(lambda a: np.asarray(a[1]), before.features)
    np.add.at(x, (f.row, f.col), f.val)
    want = _np_forward(p, x[:n], np.asarray(adj, np.float64)[:n, :n], steps, feat)
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g)[:n], w, rtol=2e-4, atol=2e-5)
    soft = jax.nn.softmax(jax.random.normal(jax.random.key(4), (npad, k)), -1)
    rho = 0.3
    logp = np.asarray(jax.jit(A.phase2_predict)(p, b, x_ell, adj, soft, rho)[0])[:n]
    s = lambda z: _softmax(np.asarray(z, np.float64))
    mix = rho * (s(want[0]) + s(np.asarray(soft)[:n])) / 2 + (1 - rho) * (s(want[1]) + s(want[2]) + s(want[3])) / 3
    np.testing.assert_allclose(np.exp(logp), mix, rtol=2e-4, atol=1e-6)


@pytest.mark.slow
def test_schedule_phase1_is_fedavg_then_the_switch_builds_the_corrected_graph():
    data, model, common = _prepared_setup(sparse=False)
    hp = A.AdaFGLHParams(adafgl_rounds_vanilla=2)
    alg = registry.get("algorithm", "adafgl")(model, common, hp)
    avg = registry.get("algorithm", "fedavg")(model, common, None)
    st, ref = jax.jit(alg.init)(jax.random.key(0), data), jax.jit(avg.init)(jax.random.key(0), data)
    ref = dataclasses.replace(ref, server=st.server)
    step, ref_step = jax.jit(alg.round), jax.jit(avg.round)
    for r in range(2):
        st, m = step(st, data, jax.random.key(10 + r))
        ref, _ = ref_step(ref, data, jax.random.key(10 + r))
        assert_trees_close(st.server, ref.server, rtol=1e-6, atol=1e-7)
    server = st.server
    st, m3 = step(st, data, jax.random.key(20))
    assert_trees_close(st.server, server, rtol=0, atol=0)           # phase 2 leaves the global model
    apply = jax.jit(model.apply)   # jitted: op-by-op dispatch cost most of this test's time
    for c in range(data.eval.num_clients):
        b, nodes, mm = _client(data, c)
        n = len(mm)
        soft = _softmax(np.asarray(apply(server, b), np.float64))[:n]
        sim = (_np_getre(soft) > 0.999).astype(float)
        want = _np_norm(0.5 * mm + 0.5 * sim, 0.5)
        np.testing.assert_allclose(np.asarray(st.graph["adj"][c])[:n, :n], want, rtol=1e-4, atol=1e-6)
        np.testing.assert_allclose(np.asarray(st.graph["soft"][c])[:n], soft, rtol=1e-4, atol=1e-6)
        assert 0.0 <= float(st.graph["rho"][c]) <= 1.0
    assert np.isfinite(float(m3["test_acc"])) and np.isfinite(float(m3["train_loss"]))


@pytest.mark.slow   # integration: builds and compiles whole runs (covered fast by the tests above)
def test_adafgl_runs_with_partial_participation():
    prog = build(RunConfig(dataset="csbm", algorithm="adafgl", clients=4, rounds=3, hidden=8, split="keep",
                           client_fraction=0.5, adafgl_rounds_vanilla=1))
    res = run(prog.algorithm, prog.data, jax.random.key(0), 3)
    assert np.isfinite(res.history["test_acc"]).all()


@pytest.mark.slow   # integration: builds and compiles whole runs (covered fast by the tests above)
def test_adafgl_cli_run_and_resume_across_the_switch(tmp_path):
    cli_run_and_resume(tmp_path, "adafgl", "--adafgl-rounds-vanilla", "1")


@pytest.mark.slow
def test_training_step_reusing_the_evaluations_first_maps_has_the_same_loss_and_gradient():
    data, model, _ = _prepared_setup(sparse=True)
    b, _, m = _client(data, 0)
    npad, k = b.y.shape[0], int(model.num_classes)
    p = A.compact_first(A.init_phase2(jax.random.key(2), int(model.in_dim), 8, k, 2), data.extra["adafgl_feat"][0])
    x = jax.tree.map(lambda a: a[0], data.extra["adafgl_x"])
    mp = np.zeros((npad, npad))
    mp[: len(m), : len(m)] = m
    adj = A.normalise(jnp.asarray(mp, jnp.float32), 0.5)
    soft = jax.nn.softmax(jax.random.normal(jax.random.key(4), (npad, k)), -1)
    known = jax.jit(A.phase2_predict)(p, b, x, adj, soft, 0.5)[1]
    grad = jax.jit(jax.value_and_grad(A.phase2_loss), static_argnums=())
    direct = grad(p, b, x, adj, soft, jax.random.key(7))
    reused = grad(p, b, x, adj, soft, jax.random.key(7), known)
    assert_trees_close(reused, direct, rtol=1e-5, atol=1e-6)
    assert float(jnp.abs(direct[1]["first"]).max()) > 0


def _plain_heterophilous(emb, mask, a):
    """The heterophilous propagation written directly in jnp (differentiated by jax.grad)."""
    n = emb.shape[0]
    s = jax.nn.softmax(emb, -1)
    g = s @ s.T
    d = jnp.diag(g)
    re = g / jnp.maximum(jnp.sqrt(d[:, None] * d[None, :]), 1e-9)
    pair = mask[:, None] & mask[None, :]
    re = jnp.where(pair & ~jnp.eye(n, dtype=bool), re, 0.0)
    mean = re.sum() / pair.sum()
    top = jnp.where(pair, re, -jnp.inf).max()
    t = re - mean
    lrn = jnp.where(t > 0, t / (top - mean), -re / mean) + jnp.eye(n)
    pr = lambda v: jnp.where(v >= 0, v, a * v) * mask[None, :]
    return (jax.nn.softmax(pr(lrn) @ emb, -1) - jax.nn.softmax(pr(-lrn) @ emb, -1) + emb) / 2


@pytest.mark.slow
def test_heterophilous_block_hand_written_gradient_matches_autodiff_of_the_plain_formula():
    rng = np.random.default_rng(0)
    n, k = 11, 4
    mask = jnp.asarray(np.arange(n) < 8)                       # 3 padded nodes
    # each side jitted once for the three trials (op-by-op dispatch cost most of this test's time)
    forward = jax.jit(lambda e, a: A.heterophilous_propagation(e, mask, a))
    plain = jax.jit(lambda e, a: _plain_heterophilous(e, mask, a))
    grads = jax.jit(lambda e, a, w: jax.grad(lambda e, a: (A.heterophilous_propagation(e, mask, a) * w).sum(), (0, 1))(e, a))
    plain_grads = jax.jit(lambda e, a, w: jax.grad(lambda e, a: (_plain_heterophilous(e, mask, a) * w).sum(), (0, 1))(e, a))
    for trial in range(3):
        emb = jnp.asarray(rng.normal(size=(n, k)) * 2.0, jnp.float32)
        w = jnp.asarray(rng.normal(size=(n, k)), jnp.float32)   # a random cotangent
        a = jnp.float32(0.1 + 0.3 * trial)
        got, want = forward(emb, a), plain(emb, a)
        np.testing.assert_allclose(np.asarray(got)[:8], np.asarray(want)[:8], rtol=1e-5, atol=1e-6)
        g_got, g_want = grads(emb, a, w), plain_grads(emb, a, w)
        assert float(jnp.abs(g_want[0][:8]).max()) > 0.1
        np.testing.assert_allclose(np.asarray(g_got[0]), np.asarray(g_want[0]), rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(float(g_got[1]), float(g_want[1]), rtol=1e-4, atol=1e-6)


@pytest.mark.slow   # compiles five AdaFGL programs (~30 s CPU); the engine's phases are tested fast in test_phases.py
def test_the_two_phase_programs_equal_the_one_program_round():
    """`run` executes phase 1 and phase 2 (with the hand-over) as two programs; `round` is the
    one-program form (sweeps): the same metrics up to float reassociation."""
    data, model, common = _prepared_setup(sparse=True)
    alg = registry.get("algorithm", "adafgl")(model, common, A.AdaFGLHParams(adafgl_rounds_vanilla=2))
    assert [p.start for p in alg.phases] == [0, 2] and alg.phases[1].enter is not None
    phased = run(alg, data, jax.random.key(3), 4, chunk=3)
    single = run(alg._replace(phases=()), data, jax.random.key(3), 4, chunk=3)
    for k in ("train_loss", "val_loss", "val_acc", "test_acc"):
        np.testing.assert_allclose(phased.history[k], single.history[k], rtol=1e-5, atol=1e-6)
    assert_trees_close(phased.state.ada, single.state.ada)
