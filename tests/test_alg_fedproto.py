"""FedProto: prototypes against NumPy class means on a padded client batch, the server average and the
regulariser against NumPy, and the round wiring (global prototypes from the trained personal models;
the next round's first-step loss recomputed)."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from fgl_jax import registry, schema
from fgl_jax.algorithms.fedproto import aggregate_prototypes, class_prototypes, proto_regulariser
from fgl_jax.federated.metrics import masked_cross_entropy
from fgl_jax.nn.models import apply_with_embedding
from fgl_jax.systems.baseline import RunConfig
from tests.alg_helpers import toy_setup


def _np_means(z, y, mask, k):
    protos, counts = np.zeros((k, z.shape[1])), np.zeros(k)
    for c in range(k):
        sel = mask & (y == c)
        counts[c] = sel.sum()
        if sel.any():
            protos[c] = z[sel].mean(0)
    return protos, counts


def test_prototypes_are_class_means_over_real_training_nodes():
    data, _, _ = toy_setup()
    b = jax.tree.map(lambda a: a[1], data.train)
    mask, node = np.asarray(b.train_mask), np.asarray(b.node_mask)
    assert (~node).any(), "the toy batch should have padded nodes"
    rng = np.random.default_rng(0)
    z = rng.normal(size=(mask.shape[0], 6))
    z[~node] = 1e6   # padded nodes must not count
    y = np.asarray(b.y)
    got_p, got_c = class_prototypes(jnp.asarray(z, jnp.float32), b.y, b.train_mask, 3)
    want_p, want_c = _np_means(z, y, mask, 3)
    np.testing.assert_allclose(np.asarray(got_p), want_p, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(np.asarray(got_c), want_c)
    # a class absent from the mask: zero prototype, count 0
    p, c = class_prototypes(jnp.asarray(z, jnp.float32), b.y, b.train_mask & (b.y != 2), 3)
    assert float(c[2]) == 0 and np.all(np.asarray(p[2]) == 0)


def test_server_average_and_regulariser_match_numpy():
    rng = np.random.default_rng(1)
    local = rng.normal(size=(3, 4, 5))
    counts = np.array([[3, 0, 1, 0], [1, 2, 0, 0], [0, 4, 2, 0]], np.float64)
    local[counts == 0] = 0.0
    sizes = np.array([5.0, 7.0, 6.0])
    for weighting, w in (("class_counts", counts), ("uniform", (counts > 0) * 1.0),
                         ("openfgl", np.broadcast_to(sizes[:, None], counts.shape))):
        p, present = aggregate_prototypes(jnp.asarray(local, jnp.float32), jnp.asarray(counts, jnp.float32),
                                          jnp.asarray(sizes, jnp.float32), weighting)
        want = np.einsum("ck,ckd->kd", w, local) / np.maximum(w.sum(0), 1e-12)[:, None]
        np.testing.assert_allclose(np.asarray(p), want, rtol=1e-5, atol=1e-6)
        np.testing.assert_array_equal(np.asarray(present), [True, True, True, False])
    # class 0 under class_counts: (3 C_00 + 1 C_10) / 4
    p, _ = aggregate_prototypes(jnp.asarray(local, jnp.float32), jnp.asarray(counts, jnp.float32),
                                jnp.asarray(sizes, jnp.float32), "class_counts")
    np.testing.assert_allclose(np.asarray(p[0]), (3 * local[0, 0] + local[1, 0]) / 4, rtol=1e-5, atol=1e-6)

    z = rng.normal(size=(8, 5))
    y = np.array([0, 1, 2, 3, 0, 1, 3, 2])
    mask = np.array([1, 1, 1, 1, 1, 0, 1, 0], bool)
    protos = rng.normal(size=(4, 5))
    present = np.array([True, True, False, True])
    use = mask & present[y]
    sq = ((z - protos[y]) ** 2).sum(1)
    mse = (sq * use).sum() / (mask.sum() * 5)
    per_class = sum((sq[use & (y == k)]).sum() / (max((use & (y == k)).sum(), 1) * 5) for k in range(4))
    args = (jnp.asarray(z, jnp.float32), jnp.asarray(y), jnp.asarray(mask), jnp.asarray(protos, jnp.float32),
            jnp.asarray(present))
    assert float(proto_regulariser(*args, "mse")) == pytest.approx(mse, rel=1e-5)
    assert float(proto_regulariser(*args, "per_class")) == pytest.approx(per_class, rel=1e-5)


def test_fedproto_round_wiring():
    data, model, common = toy_setup(local_steps=2)
    lam = 3.0
    hp = registry.entry("algorithm", "fedproto").info["hparams"](fedproto_lambda=lam)
    alg = registry.get("algorithm", "fedproto")(model, common, hp)
    round_fn = jax.jit(alg.round)
    st1, _ = round_fn(alg.init(jax.random.key(0), data), data, jax.random.key(1))
    idx = np.asarray(data.train_index)
    locals_, counts = [], []
    for i, c in enumerate(idx):
        b = jax.tree.map(lambda a: a[i], data.train)
        z, _ = apply_with_embedding(model, jax.tree.map(lambda a: a[c], st1.personal), b)
        p, n = _np_means(np.asarray(z, np.float64), np.asarray(b.y), np.asarray(b.train_mask), 3)
        locals_.append(p)
        counts.append(n)
    locals_, counts = np.array(locals_), np.array(counts)
    want = np.einsum("ck,ckd->kd", counts, locals_) / counts.sum(0)[:, None]
    np.testing.assert_allclose(np.asarray(st1.protos), want, rtol=1e-4, atol=1e-5)
    assert np.asarray(st1.present).all()
    # models are personal: two clients' models differ after training
    leaf = np.asarray(jax.tree.leaves(st1.personal)[0])
    assert not np.allclose(leaf[idx[0]], leaf[idx[1]])
    st2, m2 = round_fn(st1, data, jax.random.key(2))
    losses = []
    for i, c in enumerate(idx):
        b = jax.tree.map(lambda a: a[i], data.train)
        z, logits = apply_with_embedding(model, jax.tree.map(lambda a: a[c], st1.personal), b)
        z, y, m = np.asarray(z, np.float64), np.asarray(b.y), np.asarray(b.train_mask)
        reg = (((z - want[y]) ** 2).sum(1) * m).sum() / (m.sum() * z.shape[1])
        losses.append(float(masked_cross_entropy(logits, b.y, b.train_mask)) + lam * reg)
    w = np.asarray(data.train_weight, np.float64)
    assert float(m2["train_loss"]) == pytest.approx(float((np.array(losses) * w).sum() / w.sum()), rel=1e-4)


def test_fedproto_options():
    cfg = schema.make(RunConfig, {"algorithm": "fedproto", "proto_weights": "openfgl", "proto_loss": "per_class"})
    assert cfg.hparams().proto_weights == "openfgl"
    with pytest.raises(ValueError, match="proto_weights"):
        schema.make(RunConfig, {"algorithm": "fedproto", "proto_weights": "nope"})
