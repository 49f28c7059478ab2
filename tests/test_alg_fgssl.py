"""FGSSL: its three loss terms against direct NumPy loops on fixed embeddings of a toy graph; the
augmentations (whole feature columns masked, dense and sparse alike; edge removal rate); the
round's wiring (zero weights = FedAvg exactly; without augmentation the first-step loss is CE +
FNSC of the global embeddings with themselves, recomputed here); and the run paths."""
import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from fgl_jax import registry
from fgl_jax.algorithms.fgssl import edge_distillation, semantic_contrast, structure_distillation
from fgl_jax.augment import drop_edges, mask_feature_columns
from fgl_jax.federated.metrics import masked_cross_entropy
from fgl_jax.nn.models import apply_with_embedding
from fgl_jax.ops import SparseFeatures
from tests.alg_helpers import assert_trees_close, toy_setup

S = np.array([0, 1, 1, 2, 2, 3, 4, 5, 0, 3], np.int32)
R = np.array([1, 0, 2, 1, 3, 2, 5, 4, 3, 0], np.int32)
EM = np.array([1, 1, 1, 1, 1, 1, 1, 1, 0, 0], bool)      # the last two edges are padding


def _unit(a):
    return a / np.maximum(np.linalg.norm(a, axis=1, keepdims=True), 1e-12)


def _np_fnsc(z, g, y, mask, tau):
    idx = np.flatnonzero(mask)
    zu, gu = _unit(z), _unit(g)
    out = []
    for i in idx:
        sims = np.array([zu[i] @ gu[j] / tau for j in idx])
        lse = np.log(np.exp(sims).sum())
        pos = [k for k, j in enumerate(idx) if y[j] == y[i]]
        out.append(np.mean([sims[k] - lse for k in pos]))
    return -np.mean(out)


def _np_fgsd(z, g, n, node_mask, omega):
    tot = []
    for i in range(n):
        if not node_mask[i]:
            continue
        nb = [s for s, r, m in zip(S, R, EM) if m and r == i] + [i]
        def dist(h):
            u = _unit(h)
            e = np.exp(np.array([u[i] @ u[j] / omega for j in nb]))
            return e / e.sum()
        pg, pz = dist(g), dist(z)
        tot.append((pg * np.log(pg / pz)).sum())
    return np.mean(tot)


def _np_edge(z, g, tau=0.1):
    out = []
    for s, r, m in zip(S, R, EM):
        if not m:
            continue
        def dist(h):
            e = np.exp(np.abs(h[s] - h[r]) / tau - (np.abs(h[s] - h[r]) / tau).max())
            return e / e.sum()
        pg, pz = dist(g), dist(z)
        out.append((pg * np.log(pg / pz)).sum())
    return np.mean(out)


@pytest.mark.slow
def test_loss_terms_match_numpy():
    rng = np.random.default_rng(0)
    n = 7
    z, g = rng.normal(size=(n, 4)), rng.normal(size=(n, 4))
    y = np.array([0, 1, 0, 2, 1, 0, 2])
    mask = np.array([1, 1, 1, 0, 1, 1, 0], bool)
    node_mask = np.array([1, 1, 1, 1, 1, 1, 0], bool)
    f = lambda a: jnp.asarray(a, jnp.float32)
    for tau in (0.1, 0.5):
        got = float(semantic_contrast(f(z), f(g), jnp.asarray(y), jnp.asarray(mask), tau))
        assert got == pytest.approx(_np_fnsc(z, g, y, mask, tau), rel=1e-4)
    for omega in (1.0, 4.0):
        got = float(structure_distillation(f(z), f(g), jnp.asarray(S), jnp.asarray(R), jnp.asarray(EM),
                                           jnp.asarray(node_mask), omega))
        assert got == pytest.approx(_np_fgsd(z, g, n, node_mask, omega), rel=1e-4, abs=1e-7)
    got = float(edge_distillation(f(z), f(g), jnp.asarray(S), jnp.asarray(R), jnp.asarray(EM)))
    assert got == pytest.approx(_np_edge(z, g), rel=1e-4)
    # the distillations vanish when the local embeddings equal the global ones
    assert float(structure_distillation(f(g), f(g), jnp.asarray(S), jnp.asarray(R), jnp.asarray(EM),
                                        jnp.asarray(node_mask), 4.0)) == pytest.approx(0.0, abs=1e-6)
    assert float(edge_distillation(f(g), f(g), jnp.asarray(S), jnp.asarray(R), jnp.asarray(EM))) == pytest.approx(0.0, abs=1e-6)


def test_augmentations_mask_whole_columns_and_drop_edges_at_the_rate():
    rng = np.random.default_rng(1)
    x = rng.uniform(0.5, 1.0, size=(6, 40)).astype(np.float32)
    key = jax.random.key(3)
    dense = np.asarray(mask_feature_columns(jnp.asarray(x), key, 0.5, 40))
    zero_cols = np.all(dense == 0, axis=0)
    assert np.array_equal(dense[:, ~zero_cols], x[:, ~zero_cols]) and 5 < zero_cols.sum() < 35
    r, c = np.nonzero(x)
    sp = SparseFeatures(row=jnp.asarray(r, jnp.int32), col=jnp.asarray(c, jnp.int32), val=jnp.asarray(x[r, c]))
    out = mask_feature_columns(sp, key, 0.5, 40)
    back = np.zeros_like(x)
    np.add.at(back, (r, c), np.asarray(out.val))
    np.testing.assert_array_equal(back, dense)                   # same key, same columns
    kept = np.asarray(drop_edges(jnp.ones(20000, bool), jax.random.key(0), 0.3))
    assert abs(kept.mean() - 0.7) < 0.01                          # sd 0.0032
    assert not np.asarray(drop_edges(jnp.zeros(10, bool), jax.random.key(0), 0.0)).any()


def _alg(common, model, **kw):
    hp = registry.entry("algorithm", "fgssl").info["hparams"](**kw)
    return registry.get("algorithm", "fgssl")(model, common, hp)


@pytest.mark.slow
def test_zero_weights_give_fedavg_and_the_first_step_loss_is_recomputed():
    data, model, common = toy_setup(local_steps=2)
    avg = registry.get("algorithm", "fedavg")(model, common, None)
    ref, _ = jax.jit(avg.round)(avg.init(jax.random.key(0), data), data, jax.random.key(1))
    alg = _alg(common, model, fgssl_nsc=0.0, fgssl_gsd=0.0)
    got, _ = jax.jit(alg.round)(alg.init(jax.random.key(0), data), data, jax.random.key(1))
    assert_trees_close(got.server, ref.server, rtol=1e-6, atol=1e-7)
    # no augmentation: at the first step the local model is the global one, so z = g, FGSD = 0 and
    # the reported loss is CE + nsc * FNSC(g, g)
    nsc = 0.7
    alg = _alg(common, model, fgssl_nsc=nsc, fgssl_gsd=3.0, fgssl_weak=(0.0, 0.0), fgssl_strong=(0.0, 0.0))
    st = alg.init(jax.random.key(0), data)
    _, m = jax.jit(alg.round)(st, data, jax.random.key(1))
    losses = []
    for i in range(data.train.num_clients):
        b = jax.tree.map(lambda a: a[i], data.train)
        g, logits = apply_with_embedding(model, st.server, b)
        ce = float(masked_cross_entropy(logits, b.y, b.train_mask))
        g = np.asarray(g, np.float64)
        losses.append(ce + nsc * _np_fnsc(g, g, np.asarray(b.y), np.asarray(b.train_mask), 0.1))
    w = np.asarray(data.train_weight)
    assert float(m["train_loss"]) == pytest.approx((np.array(losses) * w).sum() / w.sum(), rel=1e-4)


def test_bad_augmentation_is_one_clear_line():
    data, model, common = toy_setup()
    with pytest.raises(ValueError, match="fgssl_strong must be two probabilities"):
        _alg(common, model, fgssl_strong=(0.8,))


@pytest.mark.slow   # whole-run integration (compiles and runs a full program); the default suite stays short
def test_fgssl_cli_out_and_resume_with_partial_participation(tmp_path):
    # the code variant with dropout on the local embedding (the wiring test compiles the paper's)
    from fgl_jax.cli import main
    out = tmp_path / "run"
    args = ["run", "--dataset", "csbm", "--algorithm", "fgssl", "--clients", "3", "--hidden", "8", "--split", "keep",
            "--client-fraction", "0.5", "--fgssl-variant", "code", "--dropout", "0.5", "--no-progress"]
    assert main(args + ["--rounds", "2", "--out", str(out)]) == 0
    assert main(args + ["--rounds", "3", "--out", str(out), "--resume", "--resume-with-changes", "rounds"]) == 0
    rows = [json.loads(l) for l in (out / "metrics.jsonl").read_text().splitlines()]
    assert [row["round"] for row in rows] == [1, 2, 3]
    assert all(np.isfinite(row["train_loss"]) for row in rows)


def test_traced_options_are_in_state_hp():
    from fgl_jax import schema
    data, model, common = toy_setup()
    cls = registry.entry("algorithm", "fgssl").info["hparams"]
    state = jax.eval_shape(_alg(common, model).init, jax.random.key(0), data)
    assert set(schema.traced_names(cls)) <= set(state.hp)
