"""FedGC Table 2 defence baselines (App. D, spec §5.17): LDP on the clients' uploads and PL
(self-training pseudo-labels as condensation targets, no IB); the default path stays FedGC."""
import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

from fgl_jax.batch import stack_graphs
from fgl_jax.systems.fedgc.condense import (CondenseConfig, aggregate, aggregated_client_grads, all_client_grads,
                              build_client_data, init_relay)
from fgl_jax.systems.fedgc.condense.ldp import ldp_upload, private_aggregated_client_grads, private_client_uploads
from fgl_jax.data.synthetic import csbm
from tests.helpers import check_defended_round
from fgl_jax.systems.fedgc import (FedGCConfig, FedGCRun, expand_clients, normalize_features, prepare,
                                   prepare_clients, self_train)

CLIP, B = 0.1, 0.2


@pytest.fixture(scope="module")
def client_data():
    # strong features: many gradient coordinates exceed the clip, so clipping is exercised
    g = csbm(num_nodes=150, num_classes=3, num_features=8, avg_degree=4.0, feature_signal=3.0, seed=4)
    g = dataclasses.replace(g, x=g.x * 4.0)
    assignment = np.random.default_rng(0).integers(0, 3, g.num_nodes)
    graphs, _ = expand_clients(g, assignment, 3, 2)
    data = build_client_data(graphs, [h.dense_x() for h in graphs])
    theta = init_relay(jax.random.PRNGKey(1), 8, 16, 3)
    return data, theta


def _flat(tree):
    return np.concatenate([np.asarray(v).ravel() for v in jax.tree.leaves(tree)])


@pytest.mark.slow
def test_ldp_upload_is_clipped_gradient_plus_laplace(client_data):
    data, theta = client_data
    key = jax.random.PRNGKey(7)
    pool = jnp.int32(0)

    @jax.jit
    def everything(theta, data, key):  # one compile for all the variants below
        return dict(clean=all_client_grads(theta, data, pool),               # [M, C, ...] uploads without LDP
                    up=private_client_uploads(theta, data, pool, key, CLIP, B),
                    up_clip=private_client_uploads(theta, data, pool, key, CLIP, None),
                    agg=private_aggregated_client_grads(theta, data, pool, key, CLIP, B),
                    agg_tiny=private_aggregated_client_grads(theta, data, pool, key, CLIP, 1e-7),
                    agg_wide=private_aggregated_client_grads(theta, data, pool, key, 1e9, None),
                    fused=aggregated_client_grads(theta, data, pool))

    r = everything(theta, data, key)
    clean, up = r["clean"], r["up"]
    clipped = np.clip(_flat(clean), -CLIP, CLIP)
    assert np.mean(np.abs(_flat(clean)) > CLIP) > 0.05                       # clipping is active
    noise = _flat(up) - clipped
    n = noise.size
    assert n > 1500
    # |Lap(0, b)| ~ Exp(b): mean b, sd b -> tolerance 4 standard errors (b/sqrt(n) each)
    assert abs(np.abs(noise).mean() - B) < 4 * B / np.sqrt(n), np.abs(noise).mean()
    assert stats.kstest(noise, stats.laplace(scale=B).cdf).pvalue > 1e-3
    # clip-only (no noise) = the per-coordinate clip of the clean upload: the bound holds exactly
    c_only = _flat(r["up_clip"])
    np.testing.assert_allclose(c_only, clipped, rtol=1e-6, atol=1e-8)
    assert np.abs(c_only).max() <= CLIP + 1e-7
    # clients draw independent noise
    per = [_flat(jax.tree.map(lambda v: v[j], up)) - _flat(jax.tree.map(lambda v: np.clip(v[j], -CLIP, CLIP), clean))
           for j in range(3)]
    assert abs(np.corrcoef(per[0], per[1])[0, 1]) < 0.1
    # the sequential (scan) aggregate = the server's weighted sum of exactly these uploads
    np.testing.assert_allclose(_flat(r["agg"]), _flat(aggregate(up, data.counts)), rtol=1e-5, atol=1e-6)
    # b -> 0 tends to clip-only matching input; an inactive clip without noise = the default fused aggregate
    agg_clip = _flat(aggregate(r["up_clip"], data.counts))
    np.testing.assert_allclose(_flat(r["agg_tiny"]), agg_clip, atol=1e-6)
    assert not np.allclose(_flat(r["agg"]), agg_clip, atol=1e-2)
    np.testing.assert_allclose(_flat(r["agg_wide"]), _flat(r["fused"]), rtol=1e-4, atol=1e-7)


@pytest.mark.slow
def test_ldp_round_privatises_each_upload(client_data):
    """fed_round under LDP = θ from the round key, the clients' privatised aggregate, one server step."""
    data, _ = client_data
    cfg = CondenseConfig(hidden=16, pge_hidden=8, lr_feat=1e-2, adj_period=4, adj_steps=0, ldp_clip=CLIP,
                         ldp_noise=B)  # adj_steps=0: round 0 updates X'
    check_defended_round(cfg, data, 8, 3, salt=0x1D9,  # fed_round's LDP key salt
                         defended_aggregate=lambda t, d, k: private_aggregated_client_grads(t, d, jnp.int32(0), k, CLIP, B))


def test_bad_ldp_parameters(client_data):
    data, theta = client_data
    for kw, match in (({"ldp_clip": 0.0}, "ldp_clip"), ({"ldp_scale": -0.2}, "ldp_scale"),
                      ({"ldp_scale": float("nan")}, "ldp_scale"), ({"defence": "dp"}, "defence")):
        with pytest.raises(ValueError, match=match):
            FedGCConfig(**kw)
    with pytest.raises(ValueError, match="needs ldp_clip"):
        CondenseConfig(ldp_noise=0.2)
    with pytest.raises(ValueError, match="clip"):
        CondenseConfig(ldp_clip=-1.0)
    with pytest.raises(ValueError, match="noise scale"):
        ldp_upload(jax.random.PRNGKey(0), {"w": jnp.ones(3)}, 0.1, 0.0)


@pytest.mark.slow
def test_defence_selection_and_defaults():
    assert FedGCConfig().method == "ib" and not FedGCConfig().condense_config.ldp
    assert FedGCConfig(defence="none").method == "none" and not FedGCConfig(defence="none").condense_config.reg
    assert FedGCConfig(defence="pl").condense_config.ldp_clip is None
    c = FedGCConfig(defence="ldp").condense_config
    assert (c.ldp_clip, c.ldp_noise) == (0.1, 0.2)                     # ε = 2·0.1/0.2 = 1
    assert FedGCConfig(defence="ldp", ldp_scale=0.3).condense_config.ldp_noise == 0.3
    # the program reports its defence
    g = csbm(num_nodes=60, num_classes=2, num_features=4, seed=0)
    prog = FedGCRun(FedGCConfig(clients=2, rate=0.2, rounds=2, defence="ldp", ldp_scale=0.3), graph=g).program
    assert prog.describe["method"] == "FedGC-LDP" and prog.describe["defence"] == "ldp"


def _pl_graph():
    g = csbm(num_nodes=200, num_classes=3, num_features=10, avg_degree=5.0, feature_signal=2.0, seed=5)
    rng = np.random.default_rng(0)
    perm = rng.permutation(g.num_nodes)
    masks = [np.zeros(g.num_nodes, bool) for _ in range(3)]
    for m, (a, b) in zip(masks, ((0, 50), (50, 90), (90, 130))):       # 70 own nodes in no split
        m[perm[a:b]] = True
    return g.with_masks(*masks)


@pytest.mark.slow
def test_pl_condenses_pseudo_labels_on_raw_features():
    g = _pl_graph()
    cfg = FedGCConfig(clients=3, defence="pl", st_rounds=15, st_hidden=16, feature_norm="row", st_optimizer="sgd",
                      st_lr=1.0, st_weight_decay=0.0, ib_hidden=8, ib_epochs=2, ib_decoder_hidden=16)
    p = prepare(g, cfg, seed=0, log=lambda m: None)
    # independent self-training with prepare's key (split(PRNGKey(seed), 4)[0])
    raw = stack_graphs(p.eval_graphs, p.ids)
    _, labels, _ = self_train(jax.random.split(jax.random.PRNGKey(0), 4)[0], raw, 10, 3, 15, 1.0, 16, "val")
    labels = np.asarray(labels)
    gn = normalize_features(g, "row")
    part, _, _ = prepare_clients(gn, cfg, seed=0)  # the partition, recomputed independently
    own_total = 0
    for j, (e, c) in enumerate(zip(p.eval_graphs, p.cond_graphs)):
        n = e.num_nodes
        own = part.assignment[p.ids[j]] == j
        # targets = every labelled own node (train, val, test and the rest), labels = self-training's
        np.testing.assert_array_equal(c.train_mask, own)
        np.testing.assert_array_equal(c.y[own], labels[j, :n][own])
        assert np.all(c.y[~own] == -1)
        np.testing.assert_array_equal(c.y[e.train_mask], e.y[e.train_mask])  # ground truth kept on train nodes
        # no IB: the condensation and the evaluation use the raw (normalised) features; true labels for eval
        np.testing.assert_array_equal(c.x, gn.x[p.ids[j]])
        np.testing.assert_array_equal(e.x, gn.x[p.ids[j]])
        np.testing.assert_array_equal(e.y, g.y[p.ids[j]])
        own_total += own.sum()
    assert own_total == g.num_nodes and p.info["pl_targets"] == g.num_nodes
    data = build_client_data(p.cond_graphs, [c.x for c in p.cond_graphs])
    for j, c in enumerate(p.cond_graphs):
        np.testing.assert_array_equal(np.asarray(data.counts[j]), np.bincount(c.y[c.train_mask], minlength=3))
    # without PL (FedGC†) the targets are the training nodes only
    q = prepare(g, dataclasses.replace(cfg, defence="none"), seed=0, log=lambda m: None)
    assert q.cond_graphs is q.eval_graphs and sum(h.train_mask.sum() for h in q.cond_graphs) == 50



def test_self_train_weight_decay_is_l2_on_the_server_update():
    """SGD: φ' = φ − lr·(g + wd·φ); Adam's first step on g + wd·φ moves by −lr·sign(g + wd·φ)."""
    import optax
    from fgl_jax.systems.fedgc import self_train_optimizer
    rng = np.random.default_rng(0)
    p = {"w": jnp.asarray(rng.normal(size=(4, 3)), jnp.float32)}
    g = {"w": jnp.asarray(rng.normal(size=(4, 3)), jnp.float32)}
    opt = self_train_optimizer("sgd", 0.5, 0.1)
    u, _ = opt.update(g, opt.init(p), p)
    np.testing.assert_allclose(optax.apply_updates(p, u)["w"], p["w"] - 0.5 * (g["w"] + 0.1 * p["w"]), rtol=1e-6)
    opt = self_train_optimizer("adam", 0.01, 0.1)
    u, _ = opt.update(g, opt.init(p), p)
    np.testing.assert_allclose(u["w"], -0.01 * np.sign(g["w"] + 0.1 * p["w"]), rtol=1e-3)
    u0, _ = self_train_optimizer("sgd", 0.5).update(g, optax.sgd(0.5).init(p), p)
    np.testing.assert_allclose(u0["w"], -0.5 * g["w"], rtol=1e-6)
    with pytest.raises(ValueError, match="weight_decay"):
        self_train_optimizer("sgd", 0.5, -1.0)
    with pytest.raises(ValueError, match="st_weight_decay"):
        FedGCConfig(st_weight_decay=-1e-4)
