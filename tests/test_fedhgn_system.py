"""FedHGN mechanism: alignment loss, server functions, K=1 == central, partial participation."""
import inspect

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from fgl_jax.federated.metrics import masked_cross_entropy
from fgl_jax.systems.fedhgn.rgcn import backbone_logits, build_hetero_blocks
from fgl_jax.partition.hetero import random_edge_type_split
from fgl_jax.federated import run
from fgl_jax.federated.run import NonFiniteError
from fgl_jax.systems.fedhgn import (FedHGNConfig, alignment_loss, early_stop, fedhgn, make_fed_data,
                                    program, server_aggregate, server_pool)
from tests.fedhgn_toy import toy_hetero


# ----------------------------------------------------------------------------------- Eq. (3)
@pytest.mark.slow
def test_alignment_loss_hand_computation():
    beta = jnp.array([[0.0, 0.0], [1.0, 1.0], [9.0, 9.0]])
    slot = jnp.array([True, True, False])                       # third slot is padding
    pool = jnp.array([[1.0, 0.0], [0.0, 3.0], [1.0, 2.0], [0.0, 0.0]])
    pmask = jnp.array([True, True, True, False])                # last pool row is padding
    # slot 0: min(1, 9, 5) = 1; slot 1: min(1, 5, 1) = 1 -> 2
    assert float(alignment_loss(beta, slot, pool, pmask)) == pytest.approx(2.0)
    perm = jnp.array([2, 0, 3, 1])
    assert float(alignment_loss(beta, slot, pool[perm], pmask[perm])) == pytest.approx(2.0)
    # zero when the local vector is in the pool; 0 for an empty pool
    assert float(alignment_loss(pool[:1], jnp.array([True]), pool, pmask)) == 0.0
    assert float(alignment_loss(beta, slot, pool, jnp.zeros(4, bool))) == 0.0


def test_alignment_gradient_only_to_local_coefficients():
    beta = jnp.array([[0.0, 0.0], [2.0, 1.0]])
    pool = jnp.array([[1.0, 0.0], [2.0, 2.0]])
    gb, gp = jax.grad(lambda b, p: alignment_loss(b, jnp.array([True, True]), p, jnp.array([True, True])),
                      argnums=(0, 1))(beta, pool)
    np.testing.assert_allclose(gb, 2 * (beta - pool[jnp.array([0, 1])]))   # nearest: row 0 -> 0, row 1 -> 1
    assert np.all(np.asarray(gp) == 0)
    g_empty = jax.grad(lambda b: alignment_loss(b, jnp.array([True, True]), pool, jnp.zeros(2, bool)))(beta)
    assert np.all(np.isfinite(g_empty)) and np.all(np.asarray(g_empty) == 0)


# ----------------------------------------------------------------------------------- server
def test_server_functions_see_no_schema_or_embeddings():
    """Information flow by signature: the server-side functions take weights, coefficients,
    slot counts and sampling info only (no relation names, no graph, no embeddings)."""
    assert list(inspect.signature(server_pool).parameters) == ["beta_store", "slot_mask", "seen", "receivers",
                                                               "key", "round1", "shuffle"]
    assert list(inspect.signature(server_aggregate).parameters) == ["uploads", "weights", "previous"]
    # FedHGN's averaged set: schema-free weights and bases only
    assert set(FedHGNConfig().averaged_keys()) == {"b1", "b2", "W_out", "b_out", "V"}


def test_server_aggregate_weighted_mean():
    up = {"V": jnp.array([[1.0, 2.0], [3.0, 6.0]])}
    out = server_aggregate(up, jnp.array([1.0, 3.0]), {"V": jnp.zeros(2)})
    np.testing.assert_allclose(out["V"], [2.5, 5.0])
    kept = server_aggregate(up, jnp.zeros(2), {"V": jnp.array([7.0, 7.0])})
    np.testing.assert_allclose(kept["V"], [7.0, 7.0])


@pytest.mark.slow
def test_server_pool_excludes_receiver_and_handles_unseen():
    C, R, B = 3, 2, 2
    store = jnp.arange(C * R * B, dtype=jnp.float32).reshape(C, R, B) + 1
    slot = jnp.array([[True, True], [True, False], [True, True]])
    seen = jnp.array([True, True, False])
    pool, mask = server_pool(store, slot, seen, jnp.array([0, 2]), jax.random.PRNGKey(0))
    for i, k in enumerate([0, 2]):
        rows = {tuple(np.asarray(r)) for r, m in zip(pool[i], mask[i]) if m}
        expect = set()
        for k2 in range(C):
            if k2 == k:
                continue
            if bool(seen[k2]):
                expect |= {tuple(np.asarray(store[k2, r])) for r in range(R) if slot[k2, r]}
            else:
                expect.add((0.0, 0.0))        # one zero vector for a client never heard from
        assert rows == expect
    _, mask_skip = server_pool(store, slot, seen, jnp.array([0]), jax.random.PRNGKey(0), round1="skip")
    assert int(mask.sum(1)[0]) == 2           # receiver 0: client 1's one slot + one zero vector for client 2
    assert int(mask.sum(1)[1]) == 3           # receiver 2: client 0's two slots + client 1's one
    assert int(mask_skip.sum()) == 1          # "skip": the unseen client contributes nothing


# ----------------------------------------------------------------------------------- training
def _toy_data(K=1, seed=0):
    g = toy_hetero(seed, n=(24, 15, 12), edges_per_type=30)
    graphs = [g.add_reverse()] if K == 1 else list(random_edge_type_split(g, K, seed=3).clients)
    blocks, _ = build_hetero_blocks(graphs)
    return make_fed_data(blocks)


@pytest.mark.slow
def test_one_client_fedhgn_equals_centralised_training():
    """K = 1: no pool (nobody else), averaging is the identity, so R rounds of E steps are
    exactly R*E plain SGD steps of the same basis-decomposed model."""
    data = _toy_data(1)
    cfg = FedHGNConfig(method="fedhgn", num_bases=3, hidden=8, local_steps=2, lr=0.1)
    alg = fedhgn(cfg)
    state = jax.jit(alg.init)(jax.random.PRNGKey(0), data)
    params = {"shared": dict(state.server), "coeffs": {"beta": state.coeffs["beta"][0]},
              "private": {"emb": state.private["emb"][0]}}
    blk = data.blocks.take(0)

    @jax.jit
    def central_step(p):
        loss = lambda q: masked_cross_entropy(backbone_logits(q, blk, blk.rel_local), jnp.maximum(blk.y, 0), blk.train)
        return jax.tree.map(lambda a, g: a - cfg.lr * g, p, jax.grad(loss)(p))

    rnd = jax.jit(alg.round)
    for r in range(3):
        state, _ = rnd(state, data, jax.random.PRNGKey(r))
        for _ in range(cfg.local_steps):
            params = central_step(params)
    np.testing.assert_allclose(state.server["V"], params["shared"]["V"], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(state.coeffs["beta"][0], params["coeffs"]["beta"], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(state.private["emb"][0], params["private"]["emb"], rtol=1e-5, atol=1e-6)


@pytest.mark.slow
def test_partial_participation_and_private_coefficients():
    data = _toy_data(3)
    cfg = FedHGNConfig(method="fedhgn", num_bases=3, hidden=8, local_steps=1, client_fraction=0.34)
    alg = fedhgn(cfg)
    s0 = jax.jit(alg.init)(jax.random.PRNGKey(0), data)
    s1, m = jax.jit(alg.round)(s0, data, jax.random.PRNGKey(1))
    changed = [not np.allclose(s1.coeffs["beta"][k], s0.coeffs["beta"][k]) for k in range(3)]
    assert sum(changed) == 1                                       # one sampled client trained
    k = changed.index(True)
    assert bool(s1.seen[k]) and int(s1.seen.sum()) == 1
    np.testing.assert_allclose(s1.beta_store[k], s1.coeffs["beta"][k])
    for j in range(3):                                             # the others' private parts untouched
        if j != k:
            np.testing.assert_array_equal(s1.private["emb"][j], s0.private["emb"][j])
    assert np.isfinite(float(m["train_loss"])) and 0 <= float(m["val_acc"]) <= 1


@pytest.mark.slow
def test_fedprox_mu_zero_equals_fedavg():
    data = _toy_data(3)
    outs = []
    for method, mu in (("fedavg", 1.0), ("fedprox", 0.0)):
        cfg = FedHGNConfig(method=method, hidden=8, local_steps=2, prox_mu=mu)
        alg = fedhgn(cfg)
        s = jax.jit(alg.init)(jax.random.PRNGKey(0), data)
        s, _ = jax.jit(alg.round)(s, data, jax.random.PRNGKey(1))
        outs.append(s.server["W"])
    np.testing.assert_allclose(outs[0], outs[1], rtol=1e-6, atol=1e-7)


def test_early_stop_rule():
    val = [0.1, 0.5, 0.5, 0.4] + [0.5] * 12
    best, ran = early_stop(val, patience=10)
    assert best == 1 and ran == 12
    assert early_stop([0.1, 0.2, 0.3], patience=10) == (2, 3)


def _early_stopping_reference(cfg, alg, data, key, max_rounds):
    """The paper's loop written out: one round at a time, stop after `patience` rounds without a
    validation gain (Local: every client with validation nodes stopped), report the test accuracy at
    the best round (Local: each client's own best round, weighted by test counts)."""
    init_key, run_key = jax.random.split(key)
    state, rnd = jax.jit(alg.init)(init_key, data), jax.jit(alg.round)
    n_val, n_test = np.asarray(data.n_val), np.asarray(data.n_test)
    vals, tests, vcs, tcs = [], [], [], []
    best, wait, done = np.full(len(n_val) + 1, -np.inf), np.zeros(len(n_val) + 1, int), np.zeros(len(n_val) + 1, bool)
    best_i = np.zeros(len(n_val) + 1, int)
    for r in range(max_rounds):
        state, m = rnd(state, data, jax.random.fold_in(run_key, r))
        vals.append(float(m["val_acc"])); tests.append(float(m["test_acc"]))
        vcs.append(np.asarray(m["val_correct"])); tcs.append(np.asarray(m["test_correct"]))
        accs = list(vcs[-1] / np.maximum(n_val, 1)) + [vals[-1]]        # per client, then pooled
        for k, a in enumerate(accs):
            if done[k]:
                continue
            if a >= best[k] + 1e-5:
                best[k], best_i[k], wait[k] = a, r, 0
            else:
                wait[k] += 1
                done[k] = wait[k] >= cfg.patience
        if cfg.method == "local" and all(done[k] for k in range(len(n_val)) if n_val[k] > 0):
            break
        if cfg.method != "local" and done[-1]:
            break
    if cfg.method == "local":
        return sum(tcs[best_i[k]][k] for k in range(len(n_val))) / n_test.sum()
    return tests[best_i[-1]]


@pytest.mark.slow
@pytest.mark.parametrize("method", ["fedhgn", "local"])
def test_early_stopping_hooks_equal_the_paper_loop(method):
    """Hooks.stop / Hooks.select through the engine (10-round chunks) give the test accuracy of a
    plain round-by-round early-stopping loop, and stop before the maximum."""
    data = _toy_data(3)
    cfg = FedHGNConfig(method=method, num_bases=3, hidden=8, lr=0.5, patience=3, rounds=60)
    p = program(cfg, data)
    res = run(p.algorithm, p.data, jax.random.key(5), p.num_rounds, hooks=p.hooks)
    ref = _early_stopping_reference(cfg, p.algorithm, data, jax.random.key(5), cfg.max_rounds)
    assert res.best["best_test"] == pytest.approx(ref, abs=1e-6)
    assert res.rounds_run == res.best["stop_round"] < 60
    assert (res.best["best_round"] == -1) == (method == "local")


@pytest.mark.slow
def test_nonfinite_stop_scores_the_finite_rounds():
    """A NaN training loss: the engine raises by default; with on_nonfinite="stop" the run ends on
    its finite rounds, which early stopping scores (the λ = 50 point of Fig. 4 diverges at lr 0.1)."""
    data = _toy_data(3)
    cfg = FedHGNConfig(method="fedhgn", num_bases=3, hidden=8, local_steps=1, align_lambda=1e30, rounds=6)
    p = program(cfg, data)
    for seed in (0, 1):
        res = run(p.algorithm, p.data, jax.random.key(seed), p.num_rounds, hooks=p.hooks, on_nonfinite="stop")
        assert res.diverged and 1 <= res.rounds_run < 6 and np.all(np.isfinite(res.history["train_loss"]))
        assert 0 <= res.best["best_test"] <= 1 and res.best["stop_round"] <= res.rounds_run
    with pytest.raises(NonFiniteError, match="train_loss"):
        run(p.algorithm, p.data, jax.random.key(1), p.num_rounds, hooks=p.hooks)


@pytest.mark.slow
def test_round1_pool_modes():
    """Round 1 (nobody has uploaded): "skip" trains exactly like lambda = 0; "zeros" pulls every
    coefficient towards 0 and, at lr*2*lambda = 1, puts it exactly on 0 after one step (the trap
    that makes lambda >= 5 collapse; why "skip" is the default)."""
    data = _toy_data(3)
    base = dict(method="fedhgn", num_bases=3, hidden=8, local_steps=1, lr=0.1)

    alg = {mode: fedhgn(FedHGNConfig(**base, round1_align=mode)) for mode in ("skip", "zeros")}
    with_lam = lambda st, lam: st.replace(hp={**st.hp, "align_lambda": jnp.float32(lam)})  # traced: no recompile
    s0 = jax.jit(alg["skip"].init)(jax.random.PRNGKey(0), data)   # init does not depend on round1_align
    rnd = jax.jit(alg["skip"].round)
    skip = rnd(with_lam(s0, 5.0), data, jax.random.PRNGKey(1))[0]
    free = rnd(with_lam(s0, 0.0), data, jax.random.PRNGKey(1))[0]
    np.testing.assert_allclose(skip.coeffs["beta"], free.coeffs["beta"], rtol=1e-6, atol=1e-7)
    zero = jax.jit(alg["zeros"].round)(with_lam(s0, 5.0), data, jax.random.PRNGKey(1))[0]
    used = np.asarray(data.blocks.rel_mask)
    b0, bz, bf = (np.asarray(x)[used] for x in (s0.coeffs["beta"], zero.coeffs["beta"], free.coeffs["beta"]))
    # beta - lr*(task grad + 2*lambda*beta) = -lr*task grad when 2*lr*lambda = 1
    np.testing.assert_allclose(bz, bf - b0, rtol=1e-4, atol=1e-6)
    assert np.abs(bz).max() < 0.1 * np.abs(b0).max()


@pytest.mark.slow
def test_split_train_and_eval_blocks_equal_one_labelled_block():
    """Training on train-target blocks and evaluating on val/test-target blocks (the fast path)
    gives the same states and metrics as one block over all labelled targets."""
    from fgl_jax.systems.fedhgn import hetero_fed_data
    g = toy_hetero(0, n=(24, 15, 12), edges_per_type=30)
    graphs = list(random_edge_type_split(g, 3, seed=3).clients)
    one, split = make_fed_data(build_hetero_blocks(graphs)[0]), hetero_fed_data(graphs)
    assert split.train_blocks.num_targets < one.blocks.num_targets or split.blocks.num_targets < one.blocks.num_targets
    np.testing.assert_array_equal(split.train_weight, one.train_weight)
    np.testing.assert_array_equal(split.n_test, one.n_test)
    alg = fedhgn(FedHGNConfig(method="fedhgn", num_bases=3, hidden=8, local_steps=2))
    rnd = jax.jit(alg.round)
    sa = sb = jax.jit(alg.init)(jax.random.PRNGKey(0), one)
    for r in range(3):
        sa, ma = rnd(sa, one, jax.random.PRNGKey(r))
        sb, mb = rnd(sb, split, jax.random.PRNGKey(r))
        for k in ("train_loss", "val_acc", "test_acc"):
            np.testing.assert_allclose(ma[k], mb[k], rtol=1e-5, atol=1e-6)
    for a, b in zip(jax.tree.leaves(sa), jax.tree.leaves(sb)):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-4, atol=1e-5)




@pytest.mark.slow
def test_flat_all_clients_path_equals_per_client_path():
    """The fast path (all clients in one flat graph, layer 2 on (target, relation) pairs) gives the
    per-client backbone's logits (local and union relation slots) and the same FedHGN client
    update (CE + alignment), with a padding client."""
    from fgl_jax.systems.fedhgn.rgcn import init_backbone
    from fgl_jax.systems.fedhgn.algorithm import _client_update, _clients_update_flat
    from fgl_jax.systems.fedhgn.model import flat_logits, flatten_blocks
    g = toy_hetero(1, n=(24, 15, 12), edges_per_type=30)
    blocks, _ = build_hetero_blocks(list(random_edge_type_split(g, 3, seed=3).clients), num_clients=4)
    fb = flatten_blocks(blocks)
    cfg = FedHGNConfig(method="fedhgn", num_bases=3, hidden=8, local_steps=1, lr=0.5)
    R, U = blocks.num_rel_local, blocks.num_emb_rows
    store = jax.random.normal(jax.random.PRNGKey(6), (4, R, 3))

    @jax.jit
    def everything(keys):
        pool, pmask = server_pool(store, blocks.rel_mask, jnp.ones(4, bool), jnp.arange(4), jax.random.PRNGKey(7))
        p = jax.vmap(lambda k: init_backbone(k, max(R, blocks.num_rel_global), 3, U, 8, 3))(keys)
        p["coeffs"]["beta"] = p["coeffs"]["beta"] * 2.0
        logits = (jax.vmap(backbone_logits)(p, blocks, blocks.rel2_local, blocks.slots2_local), flat_logits(p, fb, False),
                  jax.vmap(backbone_logits)(p, blocks, blocks.rel2_global, blocks.slots2_global), flat_logits(p, fb, True))
        p["coeffs"]["beta"] = p["coeffs"]["beta"][:, :R]
        a = _clients_update_flat(cfg, cfg.hparams(), p, fb, blocks.rel_mask, pool, pmask, p["shared"], jnp.ones(4))
        b = jax.vmap(lambda p, blk, pl, pm: _client_update(cfg, cfg.hparams(), p, blk, pl, pm, p["shared"], 1.0))(
            p, blocks, pool, pmask)
        return logits, a, b
    (ref_l, out_l, ref_g, out_g), (a, la), (b, lb) = everything(jax.random.split(jax.random.PRNGKey(0), 4))
    np.testing.assert_allclose(out_l, ref_l, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(out_g, ref_g, rtol=1e-5, atol=1e-5)
    assert not np.allclose(ref_l, ref_g)           # the two slot vocabularies differ
    np.testing.assert_allclose(la, lb, rtol=1e-5, atol=1e-6)
    for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b)):
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=1e-4, atol=1e-5)
