"""FedGL: the server's fusion of thresholded predictions against NumPy (overlapping nodes, weights),
the host's node slots, the round wiring (pseudo labels from the trained client models; the next
round's loss recomputed with them), the raw-adjacency GCN against a dense product, and runs through
build (partial participation) and the CLI (--out, then --resume with more rounds)."""
import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from fgl_jax import registry
from fgl_jax.algorithms.fedgl import fuse_predictions, node_slots, prepare
from fgl_jax.batch import build_client_batch
from fgl_jax.cli import main
from fgl_jax.federated import make_fed_data
from fgl_jax.federated.algorithm import HostInput
from fgl_jax.federated.communication import message_bytes
from fgl_jax.federated.metrics import masked_cross_entropy
from fgl_jax.nn import make_model
from fgl_jax.partition import random_partition
from tests.alg_helpers import client_models, toy_setup
from tests.helpers import toy_graph


def test_node_slots_share_a_slot_per_source_node_and_park_padding():
    ids = np.array([[4, 9, 2, -1], [9, 7, -1, -1]])
    mask = ids >= 0
    slot = node_slots(ids, mask)
    assert slot[0, 1] == slot[1, 0]                       # node 9 is on both clients
    real = slot[mask]
    assert len(set(real.tolist())) == 4 and real.max() == 3   # 4 distinct nodes: slots 0..3
    assert (slot[~mask] == ids.size).all()


def test_fusion_matches_numpy_with_overlapping_nodes():
    rng = np.random.default_rng(0)
    c, n, k, t = 3, 5, 4, 0.4
    logits = rng.normal(size=(c, n, k)) * 2
    probs = np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)
    ids = np.array([[0, 1, 2, 3, -1], [2, 3, 4, 5, 6], [6, 7, 0, -1, -1]])
    mask = ids >= 0
    rate = np.array([0.5, 0.3, 0.2])
    slot = node_slots(ids, mask)
    labels, has = fuse_predictions(jnp.asarray(probs, jnp.float32), jnp.asarray(mask), jnp.asarray(slot),
                                   jnp.asarray(rate, jnp.float32), t, num_slots=slot.size + 1)
    labels, has = np.asarray(labels), np.asarray(has)
    for node in range(8):                                  # by hand: the holders' weighted, thresholded votes
        num, den = np.zeros(k), 0.0
        for i in range(c):
            for j in np.flatnonzero(ids[i] == node):
                num += rate[i] * np.where(probs[i, j] >= t, probs[i, j], 0.0)
                den += rate[i]
        s = slot[ids == node][0]
        assert has[s] == (num.sum() > 0)
        if num.sum() > 0:
            assert labels[s] == np.argmax(num / den)
    assert not has[slot.size]                              # the padding slot never has a label


def _toy_data(clients=3):
    g = toy_graph(n=90, seed=3)
    batch = build_client_batch(g, random_partition(g, clients, seed=0).assignment, clients)
    _, extra = prepare(HostInput(g, np.asarray(random_partition(g, clients, seed=0).assignment), batch, 0), None)
    return make_fed_data(batch, extra=extra)


@pytest.mark.slow
def test_fedgl_round_wiring():
    _, model, common = toy_setup(local_steps=2)
    data = _toy_data()
    entry = registry.entry("algorithm", "fedgl")
    w, t = 0.7, 0.45
    alg = entry.obj(model, common, entry.info["hparams"](fedgl_ssl_weight=w, fedgl_threshold=t))
    st0 = alg.init(jax.random.key(0), data)
    round_fn = jax.jit(alg.round)
    st1, m1 = round_fn(st0, data, jax.random.key(1))
    # round 1 has no pseudo labels yet: the clients train exactly as Local from the server model
    trained = client_models(model, common, st0.server, st0.opt, data, jax.random.key(1))
    idx = np.asarray(data.train_index)
    assert float(m1["pseudo_labelled"]) > 0
    for i, c in enumerate(idx):        # disjoint clients: a node's pseudo label is its own client's vote
        b = jax.tree.map(lambda a: a[c], data.eval)
        logits = np.asarray(model.apply(jax.tree.map(lambda a: a[i], trained), b), np.float64)
        p = np.exp(logits - logits.max(1, keepdims=True))
        p /= p.sum(1, keepdims=True)
        kept = np.where(p >= t, p, 0.0)
        want_has = (kept.sum(1) > 0) & np.asarray(b.node_mask)
        np.testing.assert_array_equal(np.asarray(st1.pseudo_mask[c]), want_has)
        np.testing.assert_array_equal(np.asarray(st1.pseudo[c])[want_has], kept.argmax(1)[want_has])
    # round 2's first-step loss: CE on training nodes + w * CE towards the pseudo labels elsewhere
    _, m2 = round_fn(st1, data, jax.random.key(2))
    losses = []
    for i, c in enumerate(idx):
        b = jax.tree.map(lambda a: a[i], data.train)
        logits = model.apply(st1.server, b, train=True, rngs={"dropout": jax.random.key(0)})
        other = st1.pseudo_mask[c] & ~b.train_mask
        assert bool(other.any())
        losses.append(float(masked_cross_entropy(logits, b.y, b.train_mask))
                      + w * float(masked_cross_entropy(logits, st1.pseudo[c], other)))
    wt = np.asarray(data.train_weight, np.float64)
    # messages by hand: up the model and [N, K] float32 probabilities, down the model, [N] int32 labels, [N] bools
    n, f, h, k = data.eval.num_nodes, 12, 8, 3
    gcn = (f * h + h + h * k + k) * 4
    assert message_bytes(alg, data) == (gcn + n * k * 4, gcn + n * 4 + n)
    assert float(m2["train_loss"]) == pytest.approx(float((np.array(losses) * wt).sum() / wt.sum()), rel=1e-4)


@pytest.mark.slow
def test_openfgl_keeps_the_first_rounds_pseudo_labels():
    _, model, common = toy_setup(local_steps=2)
    data = _toy_data()
    entry = registry.entry("algorithm", "fedgl")
    runs = {}
    for mode in ("every_round", "first_round"):
        alg = entry.obj(model, common, entry.info["hparams"](fedgl_pseudo_labels=mode))
        st = alg.init(jax.random.key(0), data)
        seen = []
        for r in range(4):
            st, _ = jax.jit(alg.round)(st, data, jax.random.key(r + 1))
            seen.append((np.asarray(st.pseudo), np.asarray(st.pseudo_mask)))
        runs[mode] = seen
    first = runs["first_round"]
    assert all((p == first[0][0]).all() and (m == first[0][1]).all() for p, m in first)
    every = runs["every_round"]
    assert any((m != every[0][1]).any() or (p[m] != every[0][0][m]).any() for p, m in every[1:])


def test_gcn_sum_is_the_raw_adjacency_product():
    g = toy_graph(n=30, seed=1)
    batch = build_client_batch(g, np.zeros(g.num_nodes, np.int64), 1)
    b = jax.tree.map(lambda a: a[0], batch)
    net = make_model("gcn_sum", g.num_features, g.num_classes, hidden=6, num_layers=2)
    params = net.init({"params": jax.random.key(0)}, b)
    p = jax.tree.map(lambda a: np.asarray(a, np.float64), params["params"])
    n = b.y.shape[0]
    a = np.zeros((n, n))
    s, r, m = (np.asarray(x) for x in (b.senders, b.receivers, b.edge_mask))
    np.add.at(a, (r[m], s[m]), 1.0)
    x = np.asarray(b.features, np.float64)
    h = np.maximum(a @ (x @ p["layer_0"]["kernel"]) + p["bias_0"], 0)
    want = a @ (h @ p["layer_1"]["kernel"]) + p["bias_1"]
    np.testing.assert_allclose(np.asarray(net.apply(params, b)), want, rtol=1e-4, atol=1e-4)
    # OpenFGL's initialisation: W ~ U(-1/sqrt(fan_out), 1/sqrt(fan_out)) (the variance 1/(3 fan_out) within
    # 5 standard errors: 4 fan_out^-2 / 45 per sample variance of u^2), zero biases
    for name, fan_out in (("layer_0", 6), ("layer_1", g.num_classes)):
        w0 = p[name]["kernel"].ravel()
        bound = 1 / np.sqrt(fan_out)
        assert np.abs(w0).max() <= bound
        se = np.sqrt(4 * bound ** 4 / 45 / w0.size)
        assert abs((w0 ** 2).mean() - bound ** 2 / 3) < 5 * se
    assert not p["bias_0"].any() and not p["bias_1"].any()


@pytest.mark.slow   # whole-run integration (compiles and runs a full program); the default suite stays short
def test_fedgl_cli_out_and_resume_with_partial_participation(tmp_path):
    """`fgl-jax run --algorithm fedgl --out DIR`, then --resume with more rounds, half the clients per
    round and OpenFGL's network."""
    small = ["--dataset", "csbm", "--split", "keep", "--clients", "4", "--hidden", "8", "--no-progress",
             "--algorithm", "fedgl", "--fedgl-model", "openfgl", "--client-fraction", "0.5",
             "--chunk", "2", "--checkpoint-every", "chunk"]
    d = str(tmp_path / "run")
    assert main(["run", *small, "--rounds", "2", "--out", d]) == 0
    first = [json.loads(x) for x in open(f"{d}/metrics.jsonl")]
    assert main(["run", *small, "--rounds", "4", "--out", d, "--resume", "--resume-with-changes", "rounds"]) == 0
    rows = [json.loads(x) for x in open(f"{d}/metrics.jsonl")]
    assert len(first) == 2 and len(rows) == 4 and rows[:2] == first
    assert all(r["participants"] == 2 and np.isfinite(r["train_loss"]) for r in rows)
