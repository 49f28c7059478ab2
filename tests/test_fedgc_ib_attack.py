"""FedGC's information-bottleneck estimator and the membership inference attack."""
import dataclasses

import numpy as np
import jax
import jax.numpy as jnp
import pytest

from fgl_jax.systems.fedgc.attack import (MIAConfig, attack_auc, auc, posteriors, train_attack,
                                        train_gcn)
from fgl_jax.batch import full_graph_batch
from fgl_jax.data.synthetic import csbm
from fgl_jax.systems.fedgc import FedGCConfig, IBConfig, kl_analytic, kl_mc

# identical programs recur (the IB's grouped program compiled ahead and again by a later test; the attack's
# trainers under a second MIAConfig): JAX's persistent cache loads them. Nothing here counts compilations.


def test_one_sample_kl_averages_to_analytic():
    k1, k2 = jax.random.split(jax.random.PRNGKey(0))
    mu = jax.random.normal(k1, (5, 3))
    sigma = jax.nn.softplus(jax.random.normal(k2, (5, 3))) + 0.1
    mask = jnp.asarray([True, True, True, True, False])
    exact = float(kl_analytic(mu, sigma, mask))
    # manual analytic KL of independent Gaussians vs N(0, 1)
    m, s = np.asarray(mu)[:4], np.asarray(sigma)[:4]
    np.testing.assert_allclose(exact, np.mean(np.sum(0.5 * (s ** 2 + m ** 2 - 1) - np.log(s), -1)), rtol=1e-5)

    @jax.jit
    def draws(key):
        def one(k):
            z = mu + sigma * jax.random.normal(k, mu.shape)
            return kl_mc(z, mu, sigma, mask)
        return jax.vmap(one)(jax.random.split(key, 20000))

    est = np.asarray(draws(jax.random.PRNGKey(1)))
    se = est.std() / np.sqrt(est.size)
    assert abs(est.mean() - exact) < 4 * se, (est.mean(), exact, se)


def test_bad_gamma():
    with pytest.raises(ValueError, match="gamma"):
        IBConfig(gamma=-1e-4)
    with pytest.raises(ValueError, match="rate"):
        FedGCConfig(rate=0.0)
    with pytest.raises(ValueError, match="protocol"):
        FedGCConfig(protocol="test")


def test_auc_matches_pairwise_definition():
    rng = np.random.default_rng(0)
    s = np.round(rng.random(60), 1)  # many ties
    y = rng.random(60) < 0.4
    pos, neg = s[y], s[~y]
    ref = ((pos[:, None] > neg[None]).sum() + 0.5 * (pos[:, None] == neg[None]).sum()) / (pos.size * neg.size)
    assert abs(auc(s, y) - ref) < 1e-12
    assert auc([0.1, 0.2, 0.9, 0.8], [0, 0, 1, 1]) == 1.0
    with pytest.raises(ValueError, match="both classes"):
        auc([0.1, 0.2], [1, 1])


@pytest.mark.slow
def test_attack_auc_is_half_on_random_posteriors():
    cfg = MIAConfig(attack_epochs=200)
    k = jax.random.split(jax.random.PRNGKey(0), 4)
    n, c = 2000, 6
    train = jax.random.dirichlet(k[0], jnp.ones(c), (2 * n,))
    labels = jnp.concatenate([jnp.ones(n), jnp.zeros(n)])
    predict = train_attack(k[1], train, labels, cfg)
    members = jax.random.dirichlet(k[2], jnp.ones(c), (n,))
    nonmembers = jax.random.dirichlet(k[3], jnp.ones(c), (n,))
    assert abs(attack_auc(predict, members, nonmembers) - 0.5) < 0.05


@pytest.mark.slow
def test_attack_detects_overfit_model():
    """Shadow and target GCNs over-fit (no dropout, no weight decay) on small member sets of a noisy
    graph; the shadow-trained attack must separate the target's members from non-members."""
    cfg = MIAConfig(dropout=0.0, weight_decay=0.0, iters=200, hidden=64, attack_epochs=200)
    g = csbm(num_nodes=800, num_classes=4, num_features=32, avg_degree=4.0, homophily=0.5,
             feature_signal=0.6, seed=3)
    rng = np.random.default_rng(0)
    perm = rng.permutation(g.num_nodes)
    shadow_in, shadow_out, target_in, target_out = perm[:100], perm[100:200], perm[200:300], perm[300:400]
    batch = jax.tree.map(lambda a: a[0], full_graph_batch(g))

    def fit(idx, key):
        mask = np.zeros(g.num_nodes, bool)
        mask[idx] = True
        model, params = train_gcn(key, batch, jnp.asarray(mask), g.num_features, g.num_classes, cfg)
        return posteriors(model, params, batch)

    ps = fit(shadow_in, jax.random.PRNGKey(1))
    from fgl_jax.systems.fedgc.attack import attack_features
    feats = attack_features(jnp.concatenate([ps[shadow_in], ps[shadow_out]]))
    predict = train_attack(jax.random.PRNGKey(2), feats, jnp.concatenate([jnp.ones(100), jnp.zeros(100)]), cfg)
    pt = fit(target_in, jax.random.PRNGKey(3))
    assert attack_auc(predict, pt[target_in], pt[target_out]) > 0.6


def test_query_accuracy_counts_argmax_hits():
    """The target-accuracy diagnostic beside the AUC: argmax hits over hand-made posteriors."""
    from fgl_jax.systems.fedgc.attack import query_accuracy
    post_mem = np.array([[0.7, 0.2, 0.1], [0.1, 0.8, 0.1], [0.3, 0.3, 0.4], [0.5, 0.1, 0.4]])
    post_non = np.array([[0.2, 0.2, 0.6], [0.9, 0.05, 0.05]])
    out = query_accuracy(post_mem, [0, 1, 0, 0], post_non, [1, 1], "_z")
    assert out == {"mia_target_acc_members_z": 0.75, "mia_target_acc_nonmembers_z": 0.0}


def test_owner_feature_graph_takes_each_nodes_owner_features():
    """Client j's features are j·1000 + global id, so each row names where it came from: an owned
    node (in a split) must carry its owner's row, any other node a holder's row."""
    import dataclasses
    from fgl_jax.systems.fedgc.attack import owner_feature_graph
    from fgl_jax.batch import stack_graphs
    from fgl_jax.systems.fedgc import expand_clients
    g = csbm(num_nodes=90, num_classes=3, num_features=4, avg_degree=3.0, seed=2)
    assignment = np.random.default_rng(1).integers(0, 3, g.num_nodes)
    graphs, ids = expand_clients(g, assignment, 3, 1)
    graphs = [dataclasses.replace(gj, x=np.repeat((1000.0 * j + i)[:, None], g.num_features, 1).astype(np.float32))
              for j, (gj, i) in enumerate(zip(graphs, ids))]
    out = owner_feature_graph(g, stack_graphs(graphs, ids))
    in_split = g.train_mask | g.val_mask | g.test_mask
    owner, gid = np.divmod(np.asarray(out.x[:, 0]).round().astype(int), 1000)
    assert np.array_equal(gid, np.arange(g.num_nodes)) and out.x.shape == (g.num_nodes, g.num_features)
    assert np.array_equal(owner[in_split], assignment[in_split])
    held = [set(i.tolist()) for i in ids]
    assert all(v in held[owner[v]] for v in range(g.num_nodes))
    # sparse client features (raw bag-of-words under FedGC†) give the same graph
    sparse = owner_feature_graph(g, stack_graphs(graphs, ids, sparse=True))
    np.testing.assert_array_equal(np.asarray(sparse.x), np.asarray(out.x))


def _ib_inputs():
    from fgl_jax.batch import stack_graphs
    from fgl_jax.nn import make_model
    from fgl_jax.systems.fedgc import expand_clients
    g = csbm(num_nodes=120, num_classes=3, num_features=10, avg_degree=4.0, feature_signal=2.0, seed=6)
    assignment = np.random.default_rng(2).integers(0, 2, g.num_nodes)
    graphs, ids = expand_clients(g, assignment, 2, 1)
    clients = stack_graphs(graphs, ids)
    dec = make_model("gcn", 4, 3, hidden=8, num_layers=2, dropout=0.5)
    one = jax.tree.map(lambda a: a[0], clients)
    phi = dec.init(jax.random.PRNGKey(1), one.replace(features=jnp.zeros((one.y.shape[0], 4))), train=False)
    return graphs, clients, phi


_IB_POSTERIOR_CFG = IBConfig(gamma=0.0, epochs=60, lr=1e-2, hidden=8, dim=4, decoder_hidden=8)


@pytest.mark.slow
def test_ib_transform_kl_falls_with_gamma_and_z_is_standardised():
    """Spec §6 test 8: z [M, N, dim(z)], standardised per client over its real nodes, zero on padding;
    the decoder φ is never changed; a large γ ends with a smaller KL to N(0, I) than γ = 0."""
    from fgl_jax.systems.fedgc import ib_transform
    graphs, clients, phi = _ib_inputs()
    phi_before = jax.tree.map(np.array, phi)
    lab, lmask = clients.y, clients.train_mask | clients.val_mask | clients.test_mask
    kls = {}
    for gamma in (0.0, 1.0):
        cfg = IBConfig(gamma=gamma, epochs=60, lr=1e-2, hidden=8, dim=4, decoder_hidden=8)
        z, kl = ib_transform(jax.random.PRNGKey(3), clients, lab, lmask, phi, 3, cfg, "val", in_dim=10)
        z, kls[gamma] = np.asarray(z), np.asarray(kl)
        assert z.shape == (2, clients.y.shape[1], 4) and np.all(np.isfinite(z))
        for j, gr in enumerate(graphs):
            real = z[j, :gr.num_nodes]
            np.testing.assert_allclose(real.mean(0), 0.0, atol=1e-4)
            np.testing.assert_allclose(real.std(0), 1.0, atol=1e-3)
            assert np.all(z[j, gr.num_nodes:] == 0.0)
    assert np.all(kls[1.0] < kls[0.0]), kls
    jax.tree.map(np.testing.assert_array_equal, phi_before, jax.tree.map(np.array, phi))


@pytest.mark.slow
def test_ib_client_groups_and_precompiled_program_give_the_same_z(monkeypatch):
    """The IB's clients run as two groups in two threads, from a program compiled ahead
    (`ib_precompile`, from shapes only): Z, the KL and the posterior equal those of one program
    over all clients (each client's computation and key are its own; only the grouping differs)."""
    from fgl_jax.systems.fedgc import ib
    graphs, clients, phi = _ib_inputs()
    lab, lmask = clients.y, clients.train_mask | clients.val_mask | clients.test_mask
    cfg = _IB_POSTERIOR_CFG     # the posterior test's setting: its grouped program compiles once in this file
    key = jax.random.PRNGKey(3)
    monkeypatch.setattr(ib, "_split_clients", lambda m: False)
    want = ib.ib_transform(key, clients, lab, lmask, phi, 3, cfg, "val", in_dim=10, posterior=True)
    monkeypatch.setattr(ib, "_split_clients", lambda m: m % 2 == 0)
    sds = lambda a: jax.ShapeDtypeStruct(a.shape, a.dtype)
    handle = ib.ib_precompile(sds(key), clients, sds(lab), sds(lmask), jax.tree.map(sds, phi), 3, cfg, "val",
                              in_dim=10, posterior=True)
    chosen, real = [], ib.program

    def spy(ahead, fn, *args, **kw):                              # what ib_transform picks to call
        out = real(ahead, fn, *args, **kw)
        chosen.append(out is not fn)
        return out
    monkeypatch.setattr(ib, "program", spy)
    got = ib.ib_transform(key, clients, lab, lmask, phi, 3, cfg, "val", in_dim=10, posterior=True, ahead=handle)
    assert chosen == [True]                                       # the precompiled program was the one run
    jax.tree.map(lambda a, b: np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-6, atol=1e-6),
                 got, want)


@pytest.mark.slow
def test_self_training_one_client_equals_centralised_sgd():
    """Spec §6 test 9: FedSGD with one client = centralised full-batch SGD (same init), keeping the
    best-validation parameters; pseudo-labels never overwrite the ground truth on training nodes."""
    from fgl_jax.batch import stack_graphs
    from fgl_jax.federated.metrics import masked_cross_entropy
    from fgl_jax.nn import make_model
    from fgl_jax.systems.fedgc import self_train
    g = csbm(num_nodes=90, num_classes=3, num_features=8, avg_degree=4.0, feature_signal=1.0, seed=7)
    clients = stack_graphs([g], [np.arange(g.num_nodes)])
    key, rounds, lr = jax.random.PRNGKey(4), 12, 0.5
    best_p, labels, best_acc = self_train(key, clients, 8, 3, rounds=rounds, lr=lr, hidden=16)
    model = make_model("gcn", 8, 3, hidden=16, num_layers=2, dropout=0.0)
    b = jax.tree.map(lambda a: a[0], clients)
    p = model.init(key, b, train=False)
    grad = jax.jit(jax.grad(lambda q: masked_cross_entropy(model.apply(q, b, train=True), b.y, b.train_mask)))
    acc = jax.jit(lambda q: ((jnp.argmax(model.apply(q, b, train=False), -1) == b.y) & b.val_mask).sum()
                  / b.val_mask.sum())
    want_p, want_acc = p, -1.0
    for _ in range(rounds + 1):            # the accuracy of p is measured before its update
        a = float(acc(p))
        if a > want_acc:
            want_p, want_acc = p, a
        p = jax.tree.map(lambda w, d: w - lr * d, p, grad(p))
    assert best_acc == pytest.approx(want_acc, abs=1e-6)
    jax.tree.map(lambda x, y: np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=1e-4, atol=1e-6),
                 best_p, want_p)
    labels, y, tr = np.asarray(labels[0]), np.asarray(b.y), np.asarray(b.train_mask)
    np.testing.assert_array_equal(labels[tr], y[tr])


@pytest.mark.slow
def test_ib_posterior_belongs_to_the_kept_draw_and_resample_has_its_moments():
    """posterior=True returns the same Z, and (μ, σ) of the epoch whose draw became Z: the noise
    implied by Z, ε = (Z·std + mean − μ)/σ, is N(0, 1) (4 standard errors). `ib_resample` draws
    Z' with mean (μ − mean)/std and std σ/std per coordinate (200 draws, 5 standard errors), zero
    on padding."""
    from fgl_jax.systems.fedgc import ib_resample, ib_transform
    graphs, clients, phi = _ib_inputs()
    lab, lmask = clients.y, clients.train_mask | clients.val_mask | clients.test_mask
    cfg = _IB_POSTERIOR_CFG
    z0, _ = ib_transform(jax.random.PRNGKey(3), clients, lab, lmask, phi, 3, cfg, "val", in_dim=10)
    z, _, post = ib_transform(jax.random.PRNGKey(3), clients, lab, lmask, phi, 3, cfg, "val", in_dim=10,
                              posterior=True)
    np.testing.assert_array_equal(np.asarray(z0), np.asarray(z))
    z, mu, sigma, mean, std = (np.asarray(v, np.float64) for v in (z, *post))
    real = np.asarray(clients.node_mask)
    eps = ((z * std[:, None] + mean[:, None] - mu) / sigma)[real].ravel()
    se = 1.0 / np.sqrt(eps.size)
    assert abs(eps.mean()) < 4 * se and abs(eps.std() - 1.0) < 4 * se / np.sqrt(2), (eps.mean(), eps.std())
    draws = np.stack([np.asarray(ib_resample(jax.random.PRNGKey(k), post, clients.node_mask)) for k in range(200)])
    assert np.all(draws[:, ~real] == 0.0)
    want_mean = ((mu - mean[:, None]) / std[:, None])[real]
    want_std = (sigma / std[:, None])[real]
    got = draws[:, real]
    assert np.all(np.abs(got.mean(0) - want_mean) < 5 * want_std / np.sqrt(200))
    np.testing.assert_allclose(got.std(0), want_std, rtol=5 / np.sqrt(2 * 200))


@pytest.fixture(scope="module")
def tiny_ib_run():
    """A small FedGC run with IB and self-training on a CSBM -> (FedGCResult, RunResult, what the
    attack was called with, config). The run asks for the attack (`mia`, Hooks.finalize) with a spy in
    its place (`test_mia_queries_the_features_fedgc_condensed`): one FedGC program for the module."""
    import fgl_jax.systems.fedgc.program as P
    from tests.fedgc_small import run_small, small_config
    seen = {}

    def spy(key, graph, result, cfg=MIAConfig(), **kw):
        seen.update(graph=graph, cfg=cfg)
        return {"mia_auc": 0.5}
    # finetune_steps=0: the attack reads G' and Z, not the fine-tuned evaluator (fine-tuning is checked in
    # test_fedgc_system.py::test_end_to_end_smoke); skipping it saves its compilation
    cfg = small_config(rounds=6, eval_rounds=(6,), ib_dim=6, eval_iters=20, eval_decay_at=10, eval_check_every=10,
                       finetune_steps=0, mia=True, mia_target="selected")
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(P, "fedgc_attack", spy)
        mp.setattr(P, "prepare_shadow", lambda *a, **k: None)   # the spy trains no attack: nor its shadow
        _, run_res, res = run_small(cfg)
    return res, run_res, seen, cfg


@pytest.fixture(scope="module")
def tiny_ib_attack(tiny_ib_run):
    """The small IB run's result, the attack's graph and its config."""
    from fgl_jax.systems.fedgc import normalize_features
    from tests.fedgc_small import small_graph
    res, _, _, cfg = tiny_ib_run
    return res, normalize_features(small_graph(), cfg.feature_norm), MIAConfig(hidden=16, iters=30, attack_epochs=30)


@pytest.mark.slow
def test_fresh_query_with_a_point_posterior_equals_the_same_sample_query(tiny_ib_attack):
    """Exact identity: with μ = Z, σ = 0 and the identity scaler the fresh draw IS Z, so the fresh
    query's AUC, its null and its target accuracies equal the same-sample ones."""
    import dataclasses
    from fgl_jax.systems.fedgc.attack import fedgc_attack
    from fgl_jax.systems.fedgc import IBPosterior
    res, gn, mia = tiny_ib_attack
    assert res.ib_posterior is not None and res.ib_posterior.mu.shape == res.clients.features.shape
    out = fedgc_attack(jax.random.PRNGKey(0), gn, res, mia)
    assert 0.0 <= out["mia_auc_z_fresh"] <= 1.0 and "mia_auc_z_fresh_null" in out
    p = res.ib_posterior
    point = IBPosterior(np.asarray(res.clients.features), np.zeros_like(p.sigma), np.zeros_like(p.mean),
                        np.ones_like(p.std))
    same = fedgc_attack(jax.random.PRNGKey(0), gn, dataclasses.replace(res, ib_posterior=point), mia)
    np.testing.assert_allclose(same["mia_auc_z_fresh"], same["mia_auc_z"], atol=1e-6)
    np.testing.assert_allclose(same["mia_auc_z_fresh_null"], same["mia_auc_z_null"], atol=1e-6)
    for who in ("members", "nonmembers"):
        assert same[f"mia_target_acc_{who}_z_fresh"] == same[f"mia_target_acc_{who}_z"]
    # the other outputs do not depend on the posterior
    assert same["mia_auc_z"] == out["mia_auc_z"] and same["mia_auc_z_null"] == out["mia_auc_z_null"]


@pytest.mark.slow
def test_pseudo_label_split_of_nonmembers(tiny_ib_attack):
    """The non-member split by pseudo-label correctness: the result's labels are ground truth on
    training nodes and -1 off the labelled set; the wrong fraction is counted against the true labels
    at each non-member's owner; (exact identity of the Mann-Whitney sum over pairs) the AUC over all
    non-members is the size-weighted mean of the AUCs against the two groups; and with labels on the
    training nodes only (no self-training) nothing is split."""
    import dataclasses
    from fgl_jax.systems.fedgc.attack import fedgc_attack, pools
    res, gn, mia = tiny_ib_attack
    pl, c = res.pseudo_labels, res.clients
    assert pl is not None and pl.shape == c.y.shape
    tr = np.asarray(c.train_mask)
    np.testing.assert_array_equal(pl[tr], np.asarray(c.y)[tr])
    assert np.all(pl[~np.asarray(c.node_mask)] == -1)
    # force a known mix: flip the pseudo-label of every other non-member at its owner
    non = pools(gn, mia, 0)["nonmembers"]
    ids, own = np.asarray(c.node_ids), np.asarray(c.train_mask | c.val_mask | c.test_mask)
    y = np.asarray(gn.y)
    forced = pl.copy()
    for i, v in enumerate(non):
        j, r = next((j, r) for j in range(ids.shape[0]) for r in np.flatnonzero(own[j] & (ids[j] == v)))
        forced[j, r] = y[v] if i % 2 == 0 else (y[v] + 1) % gn.num_classes
    out = fedgc_attack(jax.random.PRNGKey(0), gn, dataclasses.replace(res, pseudo_labels=forced), mia)
    wrong = out["mia_nonmember_pl_wrong"]
    np.testing.assert_allclose(wrong, (len(non) // 2) / len(non))
    for sfx in ("_z", "_z_null"):
        mix = (1 - wrong) * out[f"mia_auc{sfx}_plright"] + wrong * out[f"mia_auc{sfx}_plwrong"]
        np.testing.assert_allclose(mix, out[f"mia_auc{sfx}"], atol=1e-9)
    # no self-training (-st): only the training nodes carry a label, so there is nothing to split
    only_train = np.where(tr, pl, -1)
    plain = fedgc_attack(jax.random.PRNGKey(0), gn, dataclasses.replace(res, pseudo_labels=only_train), mia)
    assert not any("_pl" in k for k in plain)
    assert plain["mia_auc_z"] == out["mia_auc_z"]


@pytest.mark.slow
def test_attack_target_graph_last_or_selected(tiny_ib_attack):
    """MIAConfig.target_graph picks the G' the target GCN trains on: with `selected` equal to the last
    round's G' both choices give identical outputs (bar the reported round); a different selected G'
    changes the target model; a result without a selected checkpoint and an unknown choice are errors."""
    import dataclasses
    from fgl_jax.systems.fedgc.attack import MIAConfig, fedgc_attack
    res, gn, mia = tiny_ib_attack
    sel = dataclasses.replace(mia, target_graph="selected")
    last = fedgc_attack(jax.random.PRNGKey(0), gn, dataclasses.replace(res, selected=res.condensed), mia)
    same = fedgc_attack(jax.random.PRNGKey(0), gn, dataclasses.replace(res, selected=res.condensed), sel)
    assert last["mia_target_round"] == len(res.losses) and same["mia_target_round"] == res.final["round"]
    assert {k: v for k, v in last.items() if k != "mia_target_round"} == \
        {k: v for k, v in same.items() if k != "mia_target_round"}
    a, x, y = res.condensed
    other = fedgc_attack(jax.random.PRNGKey(0), gn, dataclasses.replace(res, selected=(a, -x, y)), sel)
    assert any(other[k] != last[k] for k in ("mia_auc_z", "mia_target_acc_members_z", "mia_target_acc_nonmembers_z"))
    with pytest.raises(ValueError, match="selected"):
        fedgc_attack(jax.random.PRNGKey(0), gn, dataclasses.replace(res, selected=None), sel)
    with pytest.raises(ValueError, match="target_graph"):
        MIAConfig(target_graph="best")


@pytest.mark.slow
def test_mia_queries_the_features_fedgc_condensed(tiny_ib_run):
    """`mia` (Hooks.finalize): the attack's raw-X query sees the features as FedGC normalised them
    (row-normalised by default: every non-zero row has unit L1 norm), not the file's raw features (nor
    the IB run's Z), and `mia_target` reaches the attack's config; the result is in RunResult.extras."""
    _, res, seen, _ = tiny_ib_run
    assert res.extras["mia_auc"] == 0.5 and seen["cfg"].target_graph == "selected"
    rows = np.abs(seen["graph"].dense_x()).sum(1)
    assert rows.max() > 0
    np.testing.assert_allclose(rows[rows > 0], 1.0, rtol=1e-4)


def _toy_clients(sparse: bool):
    """Three overlapping 1-hop-expanded clients of a small CSBM (ids name the shared nodes)."""
    import scipy.sparse as sp
    from fgl_jax.batch import stack_graphs
    from fgl_jax.systems.fedgc import expand_clients
    g = csbm(num_nodes=60, num_classes=3, num_features=12, avg_degree=4.0, feature_signal=1.0, seed=3)
    x = np.asarray(g.dense_x(), np.float32)
    x[np.abs(x) < 0.8] = 0.0                                  # sparse-ish rows, some empty
    g = dataclasses.replace(g, x=sp.csr_matrix(x) if sparse else x)
    graphs, ids = expand_clients(g, np.arange(g.num_nodes) % 3, 3, 1)
    return g, graphs, ids, stack_graphs(graphs, ids)


@pytest.mark.parametrize("sparse", [False, True])
def test_shared_rows_give_every_client_its_own_rows(sparse):
    """rows[index[j]] is client j's feature matrix (padding: an empty row), with every node once."""
    from fgl_jax import ops
    from fgl_jax.systems.fedgc.selftrain import shared_rows
    g, graphs, ids, clients = _toy_clients(sparse)
    rows, index = shared_rows(clients)
    w = np.random.default_rng(0).normal(size=(12, 5)).astype(np.float32)
    n = int(index.max()) + 1
    xw = np.asarray(ops.feature_matmul(rows, jnp.asarray(w), n))
    assert n == len(np.unique(np.concatenate(ids))) + 1      # distinct nodes + the padding row
    for j, gr in enumerate(graphs):
        want = np.asarray(gr.dense_x()) @ w
        np.testing.assert_allclose(xw[index[j, :gr.num_nodes]], want, rtol=1e-5, atol=1e-5)
        assert np.all(xw[index[j, gr.num_nodes:]] == 0.0)
    # ids that do not name one feature row are not shared
    bad = clients.replace(node_ids=jnp.zeros_like(clients.node_ids))
    rows2, index2 = shared_rows(bad)
    xw2 = np.asarray(ops.feature_matmul(rows2, jnp.asarray(w), int(index2.max()) + 1))
    for j, gr in enumerate(graphs):
        np.testing.assert_allclose(xw2[index2[j, :gr.num_nodes]], np.asarray(gr.dense_x()) @ w, rtol=1e-5, atol=1e-5)


@pytest.mark.slow
def test_self_training_three_clients_equals_mean_of_client_gradients():
    """FedSGD with overlapping clients: the server's plain mean of each client's own full-batch
    gradient (computed here client by client with the library's GCN, averaged in NumPy)."""
    from fgl_jax.federated.metrics import masked_cross_entropy
    from fgl_jax.nn import make_model
    from fgl_jax.systems.fedgc import self_train
    from fgl_jax.systems.fedgc.selftrain import gcn_from_projection
    g, graphs, ids, clients = _toy_clients(True)
    key, rounds, lr = jax.random.PRNGKey(2), 6, 0.5
    best_p, _, _ = self_train(key, clients, 12, 3, rounds=rounds, lr=lr, hidden=8, select="test")
    model = make_model("gcn", 12, 3, hidden=8, num_layers=2, dropout=0.0)
    bs = [jax.tree.map(lambda a: a[j], clients) for j in range(3)]
    p = model.init(key, bs[0], train=False)
    # the explicit forward equals the model's
    b0 = bs[0]
    q = p["params"]
    xw = jnp.asarray(graphs[0].dense_x()) @ q["layer_0"]["kernel"]
    xw = jnp.zeros((b0.y.shape[0], 8)).at[:graphs[0].num_nodes].set(xw)
    np.testing.assert_allclose(np.asarray(gcn_from_projection(q, xw, b0)), np.asarray(model.apply(p, b0)),
                               rtol=1e-5, atol=1e-6)
    grad = jax.jit(jax.grad(lambda q, b: masked_cross_entropy(model.apply(q, b, train=True), b.y, b.train_mask)))
    acc = jax.jit(lambda q, b: (((jnp.argmax(model.apply(q, b), -1) == b.y) & b.test_mask).sum(), b.test_mask.sum()))
    want_p, want_acc = p, -1.0
    for _ in range(rounds + 1):
        counts = np.asarray([acc(p, b) for b in bs], np.float64)
        a = counts[:, 0].sum() / counts[:, 1].sum()
        if a > want_acc:
            want_p, want_acc = p, a
        gs = [grad(p, b) for b in bs]
        mean = jax.tree.map(lambda *v: np.mean(np.stack([np.asarray(x, np.float64) for x in v]), 0), *gs)
        p = jax.tree.map(lambda w, d: np.asarray(w, np.float64) - lr * d, p, mean)
        p = jax.tree.map(lambda w: jnp.asarray(w, jnp.float32), p)
    jax.tree.map(lambda x, y: np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=1e-4, atol=1e-5),
                 best_p, want_p)


def test_gcn_on_pre_aggregated_equals_gcn():
    """GCN(pre_aggregated=True) on S X equals the plain GCN on X (same parameters)."""
    from fgl_jax import ops
    from fgl_jax.nn import make_model
    g, graphs, ids, clients = _toy_clients(False)
    b = jax.tree.map(lambda a: a[1], clients)
    plain = make_model("gcn", 12, 3, hidden=16, num_layers=2, dropout=0.0)
    pre = make_model("gcn", 12, 3, hidden=16, num_layers=2, dropout=0.0, pre_aggregated=True)
    p = plain.init(jax.random.PRNGKey(0), b)
    sx = ops.gcn_propagate(b.features, b.graph.senders, b.graph.receivers, b.edge_mask, b.y.shape[-1])
    np.testing.assert_allclose(np.asarray(pre.apply(p, b.replace(features=sx))), np.asarray(plain.apply(p, b)),
                               rtol=1e-5, atol=1e-6)


@pytest.mark.slow
def test_encoder_equals_dense_numpy():
    """ẑ = Â (relu(x W1 + b1) W2 + b2) against a dense NumPy Â = D̃^-1/2 (A+I) D̃^-1/2 (encode applies Â
    on the narrower side of W2)."""
    from fgl_jax.systems.fedgc.ib import encode, init_encoder
    g, graphs, ids, clients = _toy_clients(True)
    b = jax.tree.map(lambda a: a[0], clients)
    gr = graphs[0]
    n = gr.num_nodes
    for hidden, zdim in ((4, 6), (16, 3)):                    # 2·dim(z) wider and narrower than hidden
        enc = init_encoder(jax.random.PRNGKey(1), 12, hidden, zdim)
        z, mu, sigma = encode(enc, b, jax.random.PRNGKey(2))
        a = np.zeros((n, n))
        a[gr.receivers, gr.senders] = 1.0
        a += np.eye(n)
        dinv = 1.0 / np.sqrt(a.sum(1))
        a_hat = a * dinv[:, None] * dinv[None, :]
        e = {k: np.asarray(v, np.float64) for k, v in enc.items()}
        h = np.maximum(np.asarray(gr.dense_x(), np.float64) @ e["w1"] + e["b1"], 0) @ e["w2"] + e["b2"]
        zh = a_hat @ h
        np.testing.assert_allclose(np.asarray(mu)[:n], zh[:, :zdim], rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(np.asarray(sigma)[:n], np.log1p(np.exp(zh[:, zdim:])) + 1e-10, rtol=1e-4, atol=1e-5)
