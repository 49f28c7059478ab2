"""Link prediction for the baselines (issue 30, item 6): the edge split, the metrics against a
pure-Python reference, the loss against NumPy, and one client == centralised training."""
from __future__ import annotations

import functools
import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from fgl_jax.batch import link_client_batch
from fgl_jax.federated.link import link_loss_fn, link_metrics, sample_negatives
from fgl_jax.federated.metrics import binary_scores, hits_at_k
from fgl_jax.nn.link import LinkModel
from fgl_jax.nn.models import make_model
from tests.helpers import toy_graph


# ---------------------------------------------------------------------------------------------
# Pure-Python references (no NumPy, no sklearn): the definitions, pair by pair

def ref_auc(scores, labels):
    """P(score_pos > score_neg) + P(=)/2 over every (positive, negative) pair."""
    pos = [s for s, l in zip(scores, labels) if l]
    neg = [s for s, l in zip(scores, labels) if not l]
    wins = sum(1.0 if p > n else 0.5 if p == n else 0.0 for p in pos for n in neg)
    return wins / (len(pos) * len(neg))


def ref_ap(scores, labels):
    """sum over distinct thresholds t (descending) of (recall(t) - recall(prev)) * precision(t)."""
    npos = sum(labels)
    ap, prev_recall = 0.0, 0.0
    for t in sorted(set(scores), reverse=True):
        chosen = [l for s, l in zip(scores, labels) if s >= t]
        tp = sum(chosen)
        recall = tp / npos
        ap += (recall - prev_recall) * tp / len(chosen)
        prev_recall = recall
    return ap


def ref_hits(scores, labels, k):
    """OGB: share of positives strictly above the k-th highest negative (1 if fewer than k negatives)."""
    neg = sorted((s for s, l in zip(scores, labels) if not l), reverse=True)
    pos = [s for s, l in zip(scores, labels) if l]
    if len(neg) < k:
        return 1.0
    return sum(1 for p in pos if p > neg[k - 1]) / len(pos)


def test_reference_on_a_hand_example():
    # scores 0.9(+) 0.8(-) 0.8(+) 0.3(-) 0.1(+): pairs won 3 (0.9) + 0.5 + 1 (0.8 vs 0.3) + 0 ... by hand:
    # pos 0.9 beats both (2), pos 0.8 ties 0.8 and beats 0.3 (1.5), pos 0.1 beats none: 3.5 / 6
    s, l = [0.9, 0.8, 0.8, 0.3, 0.1], [1, 0, 1, 0, 1]
    assert ref_auc(s, l) == pytest.approx(3.5 / 6)
    # thresholds 0.9: P=1, R=1/3; 0.8: P=2/3, R=2/3; 0.3: no new positive; 0.1: P=3/5, R=1
    assert ref_ap(s, l) == pytest.approx(1 / 3 * 1 + 1 / 3 * 2 / 3 + 1 / 3 * 3 / 5)
    assert ref_hits(s, l, 1) == pytest.approx(1 / 3)      # only 0.9 > 0.8
    assert ref_hits(s, l, 2) == pytest.approx(2 / 3)      # 0.9, 0.8 > 0.3
    assert ref_hits(s, l, 3) == 1.0                        # fewer than 3 negatives


@pytest.mark.parametrize("seed", [0, 1])
def test_metrics_match_the_reference(seed):
    rng = np.random.default_rng(seed)
    m = 40
    scores = np.round(rng.normal(size=m), 1).astype(np.float32)    # rounding makes ties
    labels = rng.random(m) < 0.4
    mask = rng.random(m) < 0.8
    s = [float(x) for x, k in zip(scores, mask) if k]
    l = [int(x) for x, k in zip(labels, mask) if k]
    auc, ap = binary_scores(jnp.asarray(scores), jnp.asarray(labels), jnp.asarray(mask))
    assert float(auc) == pytest.approx(ref_auc(s, l), abs=1e-6)
    assert float(ap) == pytest.approx(ref_ap(s, l), abs=1e-6)
    for k in (1, 3, 10, 100):
        got = hits_at_k(jnp.asarray(scores), jnp.asarray(labels), jnp.asarray(mask), k)
        assert float(got) == pytest.approx(ref_hits(s, l, k), abs=1e-6), k


def test_pooled_metrics_rank_every_clients_pairs_together():
    """link_metrics on 2 padded clients == the reference on the concatenated real pairs."""
    g = toy_graph(n=40, seed=3)
    batch = link_client_batch(g, np.arange(40) % 2, 2, seed=1, train_negatives=True)
    p = batch.pairs
    score = jax.random.normal(jax.random.key(0), p.src.shape)
    res = link_metrics(score, p, batch.client_mask, k=5)
    for split in ("train", "val", "test"):
        mask = np.asarray(getattr(p, f"{split}_mask"))
        s = [float(x) for x in np.asarray(score)[mask]]
        l = [int(x) for x in np.asarray(p.label)[mask]]
        assert float(res[f"{split}_auc"]) == pytest.approx(ref_auc(s, l), abs=1e-6)
        assert float(res[f"{split}_ap"]) == pytest.approx(ref_ap(s, l), abs=1e-6)
        assert float(res[f"{split}_hits@5"]) == pytest.approx(ref_hits(s, l, 5), abs=1e-6)


# ---------------------------------------------------------------------------------------------
# The edge split

def undirected(s, r):
    return {(min(a, b), max(a, b)) for a, b in zip(s.tolist(), r.tolist()) if a != b}


def test_edge_split_covers_each_edge_once_and_hides_val_test_edges():
    g = toy_graph(n=60, avg_degree=6, seed=1)
    assignment = np.arange(60) % 3
    batch = link_client_batch(g, assignment, 3, train=0.7, val=0.15, test=0.15, seed=4, train_negatives=True)
    p = jax.tree.map(np.asarray, batch.pairs)
    for c in range(3):
        nodes = np.flatnonzero(assignment == c)          # client c's rows, in order
        local = {int(v): i for i, v in enumerate(nodes)}
        edges = {(min(local[a], local[b]), max(local[a], local[b]))
                 for a, b in zip(g.senders.tolist(), g.receivers.tolist())
                 if a in local and b in local and a != b}
        pairs = {}
        for split in ("train", "val", "test"):
            m = getattr(p, f"{split}_mask")[c]
            pos = [(int(a), int(b)) for a, b, lab in zip(p.src[c][m], p.dst[c][m], p.label[c][m]) if lab]
            neg = [(int(a), int(b)) for a, b, lab in zip(p.src[c][m], p.dst[c][m], p.label[c][m]) if not lab]
            pairs[split] = (pos, neg)
            assert len(set(pos)) == len(pos) and all(e in edges for e in pos)
            assert all(e not in edges and e[0] != e[1] for e in neg), "a negative is an edge or a self-pair"
            assert len(neg) == len(pos)
        # the positives partition the client's edges: each exactly once
        all_pos = list(itertools.chain(*(pairs[s][0] for s in pairs)))
        assert sorted(all_pos) == sorted(edges)
        all_neg = list(itertools.chain(*(pairs[s][1] for s in pairs)))
        assert len(set(all_neg)) == len(all_neg), "negatives repeat across splits"
        # message passing: the client's edges minus val/test positives, both directions kept
        em = np.asarray(batch.edge_mask[c])
        mp = undirected(np.asarray(batch.senders[c])[em], np.asarray(batch.receivers[c])[em])
        held = set(pairs["val"][0]) | set(pairs["test"][0])
        assert held and not (mp & held), "a val/test edge is in the message-passing graph"
        assert mp == edges - held
        s, r = np.asarray(batch.senders[c])[em], np.asarray(batch.receivers[c])[em]
        assert sorted(zip(s.tolist(), r.tolist())) == sorted(zip(r.tolist(), s.tolist()))
    # padding pairs count nowhere
    real = p.train_mask | p.val_mask | p.test_mask
    assert not (p.train_mask & p.val_mask).any() and not (p.val_mask & p.test_mask).any()
    assert (~real).sum() > 0 and not p.label[~real].any()


def test_edge_split_is_seeded():
    g = toy_graph(n=40, seed=2)
    a = link_client_batch(g, np.arange(40) % 2, 2, seed=7, train_negatives=True).pairs
    b = link_client_batch(g, np.arange(40) % 2, 2, seed=7, train_negatives=True).pairs
    c = link_client_batch(g, np.arange(40) % 2, 2, seed=8, train_negatives=True).pairs
    assert all(np.array_equal(x, y) for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b)))
    assert not np.array_equal(a.src, c.src)


# ---------------------------------------------------------------------------------------------
# The loss

@pytest.mark.slow
def test_fixed_negative_loss_is_bce_over_the_training_pairs():
    g = toy_graph(n=30, seed=5)
    batch = link_client_batch(g, np.zeros(30, np.int64), 1, seed=0, train_negatives=True)
    one = jax.tree.map(lambda a: a[0], batch)
    for decoder in ("dot", "mlp"):
        model = LinkModel(make_model("gcn", g.num_features, 8, hidden=8), decoder=decoder, hidden=8,
                          train_negatives="fixed")
        params = model.init({"params": jax.random.key(1), "dropout": jax.random.key(1)}, one)
        z = np.asarray(model.apply(params, one), np.float64)
        p = jax.tree.map(np.asarray, one.pairs)
        if decoder == "dot":
            s = (z[p.src] * z[p.dst]).sum(-1)
        else:   # the MLP decoder by hand: w2 . relu(W1 (z_u * z_v) + b1) + b2
            d = params["params"]
            h = np.maximum((z[p.src] * z[p.dst]) @ np.asarray(d["dec_hidden"]["kernel"], np.float64)
                           + np.asarray(d["dec_hidden"]["bias"]), 0)
            s = (h @ np.asarray(d["dec_out"]["kernel"], np.float64))[:, 0] + float(d["dec_out"]["bias"][0])
        y = p.label.astype(np.float64)
        bce = np.logaddexp(0, s) - y * s          # -y log sig(s) - (1-y) log(1 - sig(s))
        want = bce[p.train_mask].mean()
        got = float(link_loss_fn(model)(params, one, jax.random.key(2)))
        assert got == pytest.approx(want, rel=1e-5), decoder


def test_resampled_negatives_are_distinct_real_nodes():
    u, v = sample_negatives(jax.random.key(0), jnp.int32(7), (5000,))
    u, v = np.asarray(u), np.asarray(v)
    assert (u != v).all() and u.min() == 0 and u.max() == 6 and v.min() == 0 and v.max() == 6
    # uniform over the 42 ordered pairs (chi-square, 41 dof: the 0.999 quantile is 74.7)
    counts = np.bincount(u * 7 + v, minlength=49)[[a * 7 + b for a in range(7) for b in range(7) if a != b]]
    chi2 = ((counts - 5000 / 42) ** 2 / (5000 / 42)).sum()
    assert chi2 < 74.7


# ---------------------------------------------------------------------------------------------
# Through the system: one client == centralised; the algorithms that take part; refusals

def _run(**changes):
    from fgl_jax import experiment
    from fgl_jax.systems.baseline import RunConfig, build
    cfg = RunConfig(**{"dataset": "toy", "task": "link_pred", "rounds": 3, "hidden": 8, "clients": 1, **changes})
    program = build(cfg, graph=toy_graph(n=48, avg_degree=5, seed=6))
    return experiment.execute(program, cfg.seed)


@functools.lru_cache(maxsize=None)
def _fedavg_one_client():
    """FedAvg on one client (shared by the two identity tests: one compilation)."""
    return _run(algorithm="fedavg", local_steps=2)


@pytest.mark.slow
def test_one_client_equals_centralised_bit_for_bit():
    fed = _fedavg_one_client()
    cen = _run(algorithm="global", local_steps=2)
    assert fed.history.keys() == cen.history.keys()
    for k in ("train_loss", "val_auc", "test_auc", "test_ap", "test_hits@50", "val_loss"):
        assert np.array_equal(fed.history[k], cen.history[k]), k
    assert fed.best == cen.best and fed.best["select"] == "val_auc"
    assert np.isfinite(fed.history["test_auc"]).all()


@pytest.mark.slow
def test_one_client_equals_a_plain_centralised_loop():
    """FedAvg with one client (partition, vmap, aggregation, the engine) against centralised link
    prediction written out here: Adam steps on the whole graph's split, metrics by the pure-Python
    reference. Same keys as the engine derives (init: split(key)[0]; round r: fold_in(split(key)[1], r),
    the one client's key split(., 1)[0], one key per local step); jit/vmap may reassociate floats."""
    import optax
    from fgl_jax.systems.baseline import RunConfig
    g = toy_graph(n=48, avg_degree=5, seed=6)
    cfg = RunConfig(dataset="toy", task="link_pred", rounds=3, hidden=8, clients=1, local_steps=2)
    fed = _fedavg_one_client()
    one = jax.tree.map(lambda a: a[0], link_client_batch(g, np.zeros(48, np.int64), 1, seed=cfg.split_seed,
                                                          train_negatives=True))
    model = LinkModel(make_model("gcn", g.num_features, 8, hidden=8), decoder="dot", hidden=8)
    k_init, k_run = jax.random.split(jax.random.key(cfg.seed))
    params = model.init({"params": k_init, "dropout": k_init}, one)
    opt = optax.adam(cfg.lr)
    state = opt.init(params)
    loss = jax.jit(link_loss_fn(model))
    grad = jax.jit(jax.grad(link_loss_fn(model)))
    p = jax.tree.map(np.asarray, one.pairs)
    for r in range(3):
        client_key = jax.random.split(jax.random.fold_in(k_run, r), 1)[0]
        steps = jax.random.split(client_key, 2)
        # the round's reported train_loss: the loss at its first local step
        assert float(fed.history["train_loss"][r]) == pytest.approx(float(loss(params, one, steps[0])), rel=1e-5)
        for k in steps:
            upd, state = opt.update(grad(params, one, k), state, params)
            params = optax.apply_updates(params, upd)
        z = model.apply(params, one)
        scores = np.asarray((z[p.src] * z[p.dst]).sum(-1))
        for split in ("val", "test"):
            m = getattr(p, f"{split}_mask")
            want = ref_auc([float(x) for x in scores[m]], [int(x) for x in p.label[m]])
            assert float(fed.history[f"{split}_auc"][r]) == pytest.approx(want, abs=1e-4), (r, split)


def test_one_client_batch_is_the_centralised_split():
    """The one-client partition path gives the pairs of a split of the whole graph itself."""
    from fgl_jax.partition.edges import random_edge_split
    g = toy_graph(n=48, avg_degree=5, seed=6)
    batch = link_client_batch(g, np.zeros(48, np.int64), 1, seed=3, train_negatives=True)
    es = random_edge_split(g.senders, g.receivers, 48, 0.8, 0.1, 0.1, seed=(3, 0), train_negatives=True)
    p = jax.tree.map(lambda a: np.asarray(a[0]), batch.pairs)
    want = np.concatenate([es.train, es.train_neg, es.val_pos, es.val_neg, es.test_pos, es.test_neg])
    n = len(want)
    assert np.array_equal(p.src[:n], want[:, 0]) and np.array_equal(p.dst[:n], want[:, 1])


@pytest.mark.slow
@pytest.mark.parametrize("algorithm,extra", [("fedprox", {}), ("local", {}), ("scaffold", {}),
                                             ("fedavg", {"lp_decoder": "mlp", "lp_negatives": "fixed"})])
def test_algorithms_run_link_prediction(algorithm, extra):
    res = _run(algorithm=algorithm, clients=3, **extra)
    assert np.isfinite(res.history["train_loss"]).all()
    assert np.isfinite(res.history["val_auc"]).all() and res.best["select"] == "val_auc"


def test_refusals_name_the_problem():
    from fgl_jax.systems.baseline import RunConfig
    with pytest.raises(ValueError, match="moon.*node classification only"):
        RunConfig(task="link_pred", algorithm="moon")
    with pytest.raises(ValueError, match="ldp"):
        RunConfig(task="link_pred", ldp="gaussian")
    with pytest.raises(ValueError, match="global_data"):
        RunConfig(task="link_pred", eval_mode="global_model_on_global_data")
    with pytest.raises(ValueError, match="label_noise"):
        RunConfig(task="link_pred", label_noise=0.1)
    with pytest.raises(ValueError, match="must be 1"):
        RunConfig(task="link_pred", lp_train_frac=0.5)


@pytest.mark.parametrize("changes, reference", [
    # Louvain options reach the partitioner (a resolution; few large communities packed whole)
    ({"partition": "louvain", "louvain_resolution": 3.0}, ("louvain_partition", {"resolution": 3.0})),
    ({"partition": "louvain", "louvain_resolution": 0.2, "louvain_packing": "whole"},
     ("louvain_partition", {"resolution": 0.2, "packing": "whole"})),
    # community_dirichlet's beta, detector and community count
    ({"partition": "community_dirichlet", "communities": "metis", "num_communities": 6, "dirichlet_beta": 5.0},
     ("community_dirichlet_partition", {"beta": 5.0, "communities": "metis", "num_communities": 6})),
])
def test_link_pred_partition_reads_every_partition_option(changes, reference):
    """Issue 46: link prediction once rebuilt the partitioner's options by hand and kept only the
    Dirichlet beta, so Louvain and community_dirichlet options were accepted and dropped. Both
    tasks' client assignment must be the partitioner called directly with those options, and must
    differ from the assignment with the defaults (so the option was not a no-op here)."""
    from fgl_jax.systems.baseline import RunConfig, prepare
    import fgl_jax.partition as partition
    graph = toy_graph(n=120, avg_degree=4, seed=3)
    fn, kwargs = reference
    want = np.asarray(getattr(partition, fn)(graph, 4, seed=0, **kwargs).assignment)
    got = {}
    for task in ("node_cls", "link_pred"):
        cfg = RunConfig(dataset="toy", task=task, clients=4, split="keep", **changes)
        got[task] = np.asarray(prepare(cfg, graph).partition.assignment)
        np.testing.assert_array_equal(got[task], want, err_msg=f"task {task}")
    default = RunConfig(dataset="toy", task="link_pred", clients=4, split="keep", partition=changes["partition"])
    assert not np.array_equal(np.asarray(prepare(default, graph).partition.assignment), want)
