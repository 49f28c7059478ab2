"""FedTGP: the adaptive margin and the margin-contrastive loss against NumPy; the server step of a
round reproduced from the clients' prototypes (recomputed here in NumPy) with optax by hand."""
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from fgl_jax import registry, schema
from fgl_jax.algorithms.fedtgp import adaptive_margin, generate, margin_loss
from fgl_jax.nn.models import apply_with_embedding
from fgl_jax.systems.baseline import RunConfig
from tests.alg_helpers import toy_setup


def _np_margin(avg, present, tau):
    k = len(avg)
    gap = np.full(k, 1e9)
    for a in range(k):
        for b in range(k):
            if a > b and present[a] and present[b]:
                dis = np.linalg.norm(avg[a] - avg[b])
                gap[a], gap[b] = min(gap[a], dis), min(gap[b], dis)
    gap[gap > 1e8] = gap.min()
    return min(gap.max(), tau)


def test_adaptive_margin_matches_numpy():
    rng = np.random.default_rng(0)
    avg = rng.normal(size=(5, 4)) * 3
    for present in ([1, 1, 1, 1, 1], [1, 0, 1, 1, 0], [1, 0, 0, 0, 0]):
        present = np.array(present, bool)
        for tau in (100.0, 1.0):
            got = float(adaptive_margin(jnp.asarray(avg, jnp.float32), jnp.asarray(present), tau))
            assert got == pytest.approx(_np_margin(avg, present, tau), rel=1e-5)


def _np_generate(gen):
    g = {k: np.asarray(v, np.float64) for k, v in gen.items()}
    return np.maximum(g["emb"] @ g["w1"] + g["b1"], 0) @ g["w2"] + g["b2"]


def test_margin_loss_matches_numpy():
    from fgl_jax.algorithms.fedtgp import init_generator
    gen = init_generator(jax.random.key(0), 3, 4, 6)
    rng = np.random.default_rng(1)
    x = rng.normal(size=(7, 4))
    y = np.array([0, 1, 2, 0, 1, 2, 2])
    valid = np.array([1, 1, 1, 0, 1, 1, 0], bool)
    p = _np_generate(gen)
    dist = np.sqrt(((x[:, None, :] - p[None]) ** 2).sum(-1)) + 2.5 * np.eye(3)[y]
    logits = -dist
    ce = -(logits[np.arange(7), y] - np.log(np.exp(logits).sum(1)))
    want = ce[valid].mean()
    got = float(margin_loss(gen, jnp.asarray(x, jnp.float32), jnp.asarray(y), jnp.asarray(valid), 2.5))
    assert got == pytest.approx(want, rel=1e-5)
    np.testing.assert_allclose(np.asarray(generate(gen)), p, rtol=1e-5, atol=1e-6)


@pytest.mark.slow
def test_fedtgp_server_step_from_the_clients_prototypes():
    data, model, common = toy_setup(local_steps=2)
    epochs, lr, tau = 4, 0.05, 100.0
    hp = registry.entry("algorithm", "fedtgp").info["hparams"](fedtgp_lambda=1.0, tgp_margin=tau,
                                                              tgp_server_epochs=epochs, tgp_server_lr=lr)
    alg = registry.get("algorithm", "fedtgp")(model, common, hp)
    st0 = alg.init(jax.random.key(0), data)
    st1, m1 = jax.jit(alg.round)(st0, data, jax.random.key(1))
    k = int(model.num_classes)
    xs, ys, avg_sum, avg_n = [], [], 0.0, 0.0
    for i, c in enumerate(np.asarray(data.train_index)):
        b = jax.tree.map(lambda a: a[i], data.train)
        z, _ = apply_with_embedding(model, jax.tree.map(lambda a: a[c], st1.personal), b)
        z, y, m = np.asarray(z, np.float64), np.asarray(b.y), np.asarray(b.train_mask)
        for cls in range(k):
            sel = m & (y == cls)
            if sel.any():
                xs.append(z[sel].mean(0))
                ys.append(cls)
    xs, ys = np.array(xs), np.array(ys)
    avg = np.array([xs[ys == cls].mean(0) for cls in range(k)])
    margin = _np_margin(avg, np.ones(k, bool), tau)
    gen, opt = st0.server["gen"], optax.adam(lr).init(st0.server["gen"])
    losses = []
    for _ in range(epochs):
        loss, g = jax.value_and_grad(margin_loss)(gen, jnp.asarray(xs, jnp.float32), jnp.asarray(ys),
                                                  jnp.ones(len(ys), bool), margin)
        losses.append(float(loss))
        upd, opt = optax.adam(lr).update(g, opt, gen)
        gen = optax.apply_updates(gen, upd)
    for a, b in zip(jax.tree.leaves(st1.server["gen"]), jax.tree.leaves(gen)):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=2e-4, atol=2e-5)
    np.testing.assert_allclose(np.asarray(st1.protos), np.asarray(generate(gen)), rtol=2e-4, atol=2e-5)
    assert np.asarray(st1.present).all() and losses[-1] < losses[0]
    st2, m2 = jax.jit(alg.round)(st1, data, jax.random.key(2))   # the regulariser is on from round 2
    assert np.isfinite(float(m2["train_loss"])) and float(m2["train_loss"]) > 0


def test_fedtgp_options():
    cfg = schema.make(RunConfig, {"algorithm": "fedtgp", "tgp_server_epochs": 10, "tgp_variant": "openfgl"})
    assert cfg.hparams().tgp_server_epochs == 10
    with pytest.raises(ValueError, match="tgp_server_epochs"):
        schema.make(RunConfig, {"algorithm": "fedtgp", "tgp_server_epochs": 0})
