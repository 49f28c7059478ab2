"""FedDEP: the prototype step (K-means fixed point, each node's prototype, the hidden neighbours'
prototype targets and the cross-client pools) against by-hand NumPy on a toy graph; the losses and
the mending against NumPy transcriptions of OpenFGL's loops; the classifier with the generated
embeddings against a dense NumPy forward; runs through build (partial participation) and the CLI."""
import functools
import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from fgl_jax.algorithms._neighbour_generation import greedy_loss
from fgl_jax.algorithms.feddep import (DEPClassifier, FedDEPHParams, feddep_prepare, kmeans, mend_embedding,
                                      openfgl_cross_weights, sample_in_edges)
from fgl_jax.batch import build_client_batch, unstack
from fgl_jax.federated.algorithm import HostInput
from fgl_jax.partition import random_partition
from tests.helpers import toy_graph

P, K, H = 4, 3, 6


@functools.lru_cache(maxsize=None)   # each preparation trains the encoders (one compile): shared by the tests
def _prepared(variant="paper"):
    g = toy_graph(n=60, seed=3)
    assign = random_partition(g, 2, seed=0).assignment
    batch = build_client_batch(g, assign, 2)
    hp = FedDEPHParams(feddep_num_pred=P, feddep_num_protos=K, feddep_emb_dim=H, feddep_hidden_portion=0.6,
                       feddep_encoder_epochs=3, feddep_variant=variant)
    _, extra = feddep_prepare(HostInput(g, np.asarray(assign), batch, 0), hp)
    return g, batch, extra


def test_kmeans_ends_at_a_lloyd_fixed_point():
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.normal(c, 0.3, size=(20, 2)) for c in (-3.0, 0.0, 3.0)])
    centres, assign = kmeans(x, 3, np.random.default_rng(1))
    for c in range(3):   # every centre is the mean of its members ...
        np.testing.assert_allclose(centres[c], x[assign == c].mean(0), atol=1e-12)
    d = ((x[:, None] - centres[None]) ** 2).sum(-1)   # ... and every point sits with its nearest centre
    np.testing.assert_array_equal(assign, d.argmin(1))
    assert sorted(np.bincount(assign)) == [20, 20, 20]   # the three blobs are found


@pytest.mark.slow
def test_prototypes_targets_and_pools_counted_by_hand():
    g, batch, ex = _prepared()
    for c in range(2):
        b = unstack(batch, c)
        n = int(np.asarray(b.node_mask).sum())
        em = np.asarray(b.edge_mask)
        s, r = np.asarray(b.senders)[em], np.asarray(b.receivers)[em]
        a = np.zeros((n, n), bool)
        a[r, s] = a[s, r] = True
        np.fill_diagonal(a, False)
        keep, cl, protos = ex["keep"][c][:n], ex["cluster"][c][:n], ex["protos"][c]
        val = np.asarray(b.val_mask)[:n]
        assert (~keep <= val).all() and (~keep).sum() == int(0.6 * val.sum())   # hidden: validation nodes
        assert np.isfinite(protos).all() and set(np.unique(cl)) <= set(range(K))
        for i in range(n):
            own = protos[cl[i]]
            hidden = np.flatnonzero(a[i] & ~keep)      # increasing ids, as the host keeps them
            assert ex["missing"][c][i] == (len(hidden) if keep[i] else 0)
            want_t = np.zeros((P, H))
            if keep[i]:
                for slot, j in enumerate(hidden[:P]):
                    want_t[slot] = protos[cl[j]]
            np.testing.assert_allclose(ex["targets"][c][i], want_t, atol=1e-6)
            want_pool = np.repeat(own[None], P, 0)
            for slot, j in enumerate(hidden[:P]):     # every node (hidden ones too) fills its pool
                want_pool[slot] = protos[cl[j]]
            np.testing.assert_allclose(ex["pool"][c][i], want_pool, atol=1e-6)
        rows = ex["rows"][c][ex["row_mask"][c]]
        np.testing.assert_array_equal(rows, np.flatnonzero(np.asarray(b.train_mask)[:n] & keep))


def test_openfgl_variant_treats_a_prototype_summing_below_zero_as_an_empty_slot():
    _, batch, paper = _prepared("paper")
    _, _, code = _prepared("openfgl")
    np.testing.assert_array_equal(paper["cluster"], code["cluster"])
    protos, cl = code["protos"], code["cluster"]
    for c in range(2):
        own = protos[c][cl[c]][:, None, :]                               # [N, 1, H]
        low = paper["pool"][c].sum(-1, keepdims=True) < 1e-15             # OpenFGL's empty-slot test
        np.testing.assert_allclose(code["pool"][c], np.where(low, own, paper["pool"][c]), atol=1e-6)
    assert not np.allclose(code["pool"], paper["pool"])   # the toy graph has such slots


def _openfgl_local_rec(pred, true, pred_missing, true_missing, p):
    """OpenFGL 1.1.0's LocalRecLoss loop in NumPy (pred_missing rounded, both clipped to [0, P])."""
    loss = np.zeros(pred.shape[:2])
    pm = np.clip(np.round(pred_missing).astype(int), 0, p)
    tm = np.clip(true_missing.astype(int), 0, p)
    for i in range(len(pred)):
        if tm[i] > 0:
            for j in range(min(p, pm[i])):
                loss[i, j] = np.mean((pred[i, j] - true[i, tm[i] - 1]) ** 2)
                for k in range(min(p, tm[i] - 1)):
                    loss[i, j] = min(loss[i, j], np.mean((pred[i, j] - true[i, k]) ** 2))
    return loss.mean()


def _openfgl_fed_rec(pred, true, pred_missing, p):
    """OpenFGL 1.1.0's FedRecLoss loop in NumPy (pred_missing truncated, every target slot a candidate)."""
    loss = np.zeros(pred.shape[:2])
    pm = np.clip(pred_missing.astype(np.int32), 0, p)
    for i in range(len(pred)):
        for j in range(min(p, pm[i])):
            loss[i, j] = np.mean((pred[i, j] - true[i, 0]) ** 2)
            for t in true[i, 1:]:
                loss[i, j] = min(loss[i, j], np.mean((pred[i, j] - t) ** 2))
    return loss.mean()


@pytest.mark.slow
def test_embedding_losses_match_openfgls_loops():
    rng = np.random.default_rng(0)
    t = 9
    pred, true = rng.normal(size=(t, P, H)), rng.normal(size=(t, P, H))
    d = np.array([0.2, 0.6, 1.5, 2.49, 3.7, 9.0, 0.0, 2.5, 1.2])
    m = np.array([2, 0, 1, 4, 3, 7, 5, 2, 1])
    want = _openfgl_local_rec(pred, true, d, m, P)
    got = greedy_loss(jnp.asarray(pred, jnp.float32), jnp.clip(jnp.round(jnp.asarray(d)), 0, P).astype(jnp.int32),
                      jnp.asarray(true, jnp.float32), jnp.asarray(np.clip(m, 0, P)), jnp.ones(t, bool), jnp.asarray(t))
    assert float(got) == pytest.approx(want, rel=1e-5)
    want = _openfgl_fed_rec(pred, true, d, P)
    got = greedy_loss(jnp.asarray(pred, jnp.float32), jnp.clip(jnp.floor(jnp.asarray(d)), 0, P).astype(jnp.int32),
                      jnp.asarray(true, jnp.float32), jnp.full((t,), P), jnp.ones(t, bool), jnp.asarray(t))
    assert float(got) == pytest.approx(want, rel=1e-5)


def test_mend_embedding_is_openfgls_masked_slot_mean():
    rng = np.random.default_rng(1)
    g = rng.normal(size=(6, P, H))
    d = np.array([0.0, 0.4, 1.5, 2.5, 3.2, 11.0])
    want = np.zeros((6, H))
    for i in range(6):   # MendGraph: slots < min(P, round(d)) kept; the classifier takes the mean over all P
        live = min(P, max(0, int(np.round(d[i]))))
        want[i] = g[i, :live].sum(0) / P
    np.testing.assert_allclose(np.asarray(mend_embedding(jnp.asarray(g, jnp.float32), jnp.asarray(d, jnp.float32))),
                               want, rtol=1e-5, atol=1e-6)


@pytest.mark.slow
def test_generating_for_listed_nodes_only_scatters_into_zeros():
    from fgl_jax.algorithms.feddep import DGen
    g = toy_graph(n=30, seed=5)
    b = unstack(build_client_batch(g, np.zeros(g.num_nodes, np.int64), 1), 0)
    n = b.num_nodes
    net = DGen(g.num_features, 5, g.num_classes, 4, H, P, 8, 0.0)
    key = jax.random.key(1)
    # jitted: op-by-op dispatch of the generator cost most of this test's time
    params = jax.jit(net.init)(jax.random.key(0), b, key)
    d, gen, logits = jax.jit(lambda p, b, k: net.apply(p, b, k))(params, b, key)
    listed = jax.jit(lambda p, b, k, nodes, mask: net.apply(p, b, k, False, nodes, mask))
    # every node listed once (padded with repeats of node 0 that are masked out): the same outputs
    nodes = jnp.concatenate([jnp.arange(n), jnp.zeros(3, jnp.int32)])
    mask = jnp.arange(n + 3) < n
    d2, gen2, logits2 = listed(params, b, key, nodes, mask)
    for u, v in ((d, d2), (gen, gen2), (logits, logits2)):
        np.testing.assert_allclose(np.asarray(u), np.asarray(v), rtol=1e-5, atol=1e-6)
    # a subset: zero generation elsewhere
    sub = jnp.asarray([2, 5, 7, 0]); smask = jnp.asarray([True, True, True, False])
    _, gen3, _ = listed(params, b, key, sub, smask)
    off = np.ones(n, bool); off[[2, 5, 7]] = False
    assert not np.asarray(gen3)[off].any() and np.asarray(gen3)[[2, 5, 7]].any()


@pytest.mark.slow
@pytest.mark.parametrize("init", ["glorot", "torch"])
def test_classifier_equals_a_dense_numpy_forward(init):
    """h1 = relu(X Wr0 + mean_A(X) Wn0 + b0 + e1), e1 = E A0 + a0; out = h1 Wr1 + mean_A(h1) Wn1 + b1 + e1 A1 + a1."""
    g = toy_graph(n=30, seed=5)
    b = unstack(build_client_batch(g, np.zeros(g.num_nodes, np.int64), 1), 0)
    n, f, hid, cls = b.num_nodes, g.num_features, 5, g.num_classes
    net = DEPClassifier(f, hid, cls, H, num_layers=2, init_scheme=init)
    emb = jax.random.normal(jax.random.key(2), (n, H))
    params = net.init(jax.random.key(0), b)["params"]
    got = np.asarray(net.apply({"params": params, "mend": {"emb": emb}}, b))
    also = np.asarray(net.apply({"params": params}, b, emb=emb))   # DGen's way of passing it
    np.testing.assert_allclose(got, also, rtol=1e-6)
    pr = jax.tree.map(lambda x: np.asarray(x, np.float64), params)
    em = np.asarray(b.edge_mask)
    a = np.zeros((n, n))
    np.add.at(a, (np.asarray(b.receivers)[em], np.asarray(b.senders)[em]), 1.0)
    mean = lambda h: (a @ h) / np.maximum(a.sum(1, keepdims=True), 1)
    x = np.asarray(b.features, np.float64) if not hasattr(b.features, "row") else None
    w0, w1 = pr["layer_0"]["kernel"], pr["layer_1"]["kernel"]
    e1 = np.asarray(emb, np.float64) @ pr["emb_0"]["kernel"] + pr["emb_0"]["bias"]
    h1 = np.maximum(x @ w0[:, :hid] + mean(x) @ w0[:, hid:] + pr["bias_0"] + e1, 0)
    e2 = e1 @ pr["emb_1"]["kernel"] + pr["emb_1"]["bias"]
    want = h1 @ w1[:, :cls] + mean(h1) @ w1[:, cls:] + pr["bias_1"] + e2
    real = np.asarray(b.node_mask)
    np.testing.assert_allclose(got[real], want[real], rtol=1e-4, atol=1e-5)
    if init == "torch":   # PyTorch's Linear bounds: |w| <= 1/sqrt(fan_in), nonzero biases
        assert np.abs(w0).max() <= 1 / np.sqrt(f) + 1e-7 and np.abs(pr["bias_0"]).max() > 0


@pytest.mark.slow
@pytest.mark.parametrize("variant", ["openfgl", pytest.param("paper", marks=pytest.mark.slow)])
def test_runs_through_build_with_partial_participation(variant):
    from fgl_jax import run
    from fgl_jax.systems.baseline import RunConfig, build
    cfg = RunConfig(dataset="csbm", algorithm="feddep", clients=4, rounds=3, hidden=8, split="keep",
                    client_fraction=0.5, feddep_variant=variant, feddep_gen_width=16, feddep_latent=8,
                    feddep_emb_dim=8, feddep_encoder_epochs=2, feddep_pretrain_epochs=1, feddep_epochs=1)
    prog = build(cfg)
    res = run(prog.algorithm, prog.data, jax.random.key(0), 3)
    assert np.isfinite(res.history["train_loss"]).all() and len(res.history["test_acc"]) == 3
    assert prog.describe["pre_training_communication"]["up_bytes"] > 0   # the prototype exchange is accounted


@pytest.mark.parametrize("ct", [2, 3, 10])
def test_openfgl_cross_weights_equal_a_replay_of_its_gradient_buffers(ct):
    """Replays OpenFGL 1.1.0's feddep client step in NumPy: `.grad` still holds the previous step's
    gradient, each other client's backward adds into it, the running sum is an alias of it for the
    first client and is then added to itself (`dep_grad[k] += v.grad`)."""
    rng = np.random.default_rng(ct)
    for me in range(ct):
        g_prev, gs = rng.normal(size=4), rng.normal(size=(ct, 4))
        buf, dep = g_prev.copy(), None
        for j in range(ct):
            if j == me:
                continue
            buf += gs[j]
            if dep is None:
                dep = buf          # the alias
            else:
                dep += buf         # dep is buf: doubles in place
        w, amp = openfgl_cross_weights(jnp.int32(me), ct)
        np.testing.assert_allclose(amp * g_prev + np.asarray(w, np.float64) @ gs, dep, rtol=1e-6)


def test_sampled_in_edges_keep_min_degree_fanout_per_node_uniformly():
    """Per receiver exactly min(in-degree, fanout) real edges, never a padded one, and each of a
    node's 8 in-edges kept with probability 5/8 (binomial, 4000 draws, 5 sigma)."""
    r = np.array([0] * 8 + [1] * 3 + [2] * 5 + [0, 1], np.int32)       # the last two: padding
    real = np.array([True] * 16 + [False] * 2)
    draw = jax.jit(jax.vmap(lambda k: sample_in_edges(jnp.asarray(r), jnp.asarray(real), 5, k)))
    kept = np.asarray(draw(jax.random.split(jax.random.key(0), 4000)))
    assert not kept[:, ~real].any()
    for node, want in ((0, 5), (1, 3), (2, 5)):
        assert (kept[:, real & (r == node)].sum(1) == want).all()
    freq = kept[:, :8].mean(0)
    sd = np.sqrt(5 / 8 * 3 / 8 / 4000)
    assert np.abs(freq - 5 / 8).max() < 5 * sd


@pytest.mark.slow  # one more program compiled
def test_openfgl_cross_gradient_fanout_and_no_dropout_options_run():
    from fgl_jax import run
    from fgl_jax.systems.baseline import RunConfig, build
    cfg = RunConfig(dataset="csbm", algorithm="feddep", clients=3, rounds=2, hidden=8, split="keep",
                    feddep_variant="openfgl", feddep_cross_grad="openfgl", feddep_fanout=2,
                    feddep_local_dropout=False, feddep_gen_width=16, feddep_latent=8,
                    feddep_emb_dim=8, feddep_encoder_epochs=2, feddep_pretrain_epochs=1, feddep_epochs=2)
    prog = build(cfg)
    res = run(prog.algorithm, prog.data, jax.random.key(0), 2)
    assert np.isfinite(res.history["train_loss"]).all() and np.isfinite(res.history["test_acc"]).all()


def test_global_data_evaluation_is_refused_in_one_line():
    import dataclasses
    from fgl_jax import registry
    from tests.alg_helpers import toy_setup
    _, net, common = toy_setup()
    with pytest.raises(ValueError, match="feddep: eval_mode"):
        registry.get("algorithm", "feddep")(net, dataclasses.replace(common, eval_mode="global_model_on_global_data"),
                                            FedDEPHParams())
    with pytest.raises(ValueError, match="feddep: feddep_fanout=5 .* openfgl variant"):
        registry.get("algorithm", "feddep")(net, common, FedDEPHParams(feddep_fanout=5))


@pytest.mark.slow  # two programs compiled (both phases each)
def test_cli_run_and_resume(tmp_path):
    from fgl_jax.cli import main
    args = ["run", "--dataset", "csbm", "--split", "keep", "--clients", "3", "--hidden", "8", "--algorithm",
            "feddep", "--feddep-gen-width", "16", "--feddep-latent", "8", "--feddep-emb-dim", "8",
            "--feddep-encoder-epochs", "2", "--client-fraction", "0.5", "--chunk", "1",
            "--checkpoint-every", "chunk", "--no-progress"]
    whole, part = tmp_path / "whole", tmp_path / "part"
    assert main([*args, "--rounds", "3", "--out", str(whole)]) == 0
    assert main([*args, "--rounds", "2", "--out", str(part)]) == 0
    assert main([*args, "--rounds", "3", "--out", str(part), "--resume", "--resume-with-changes", "rounds"]) == 0
    acc = lambda d: [json.loads(l)["test_acc"] for l in (d / "metrics.jsonl").read_text().splitlines()]
    assert acc(whole) == acc(part)
