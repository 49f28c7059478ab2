"""Heterogeneous client models (fgl_jax.federated.client_models) and FedDistill.

- one architecture for every client through the grouped path equals the homogeneous run bit for bit
  (metrics, prototypes, personal models) for FedProto, FedTGP and FedDistill;
- two architectures train in one program (one XLA compilation for all rounds) and really differ;
- FedDistill's three rounds against a NumPy re-derivation (softmax regression: a 1-layer MLP, plain
  SGD, 3 clients, hand gradients of CE + the soft-label distillation term);
- the specs and the one-line refusals.
"""
import dataclasses

import jax
import numpy as np
import pytest

from fgl_jax import registry
from fgl_jax.cache import CompileCounter
from fgl_jax.federated import OptimConfig
from fgl_jax.federated.client_models import ArchSpec, assign_architectures, make_client_models, parse_client_models
from fgl_jax.nn import ModelSpec
from tests.alg_helpers import toy_setup

ROUNDS = 2


@pytest.fixture(scope="module")
def toy():
    data, model, common = toy_setup(n=60, hidden=8)
    spec = ModelSpec("gcn", int(model.in_dim), int(model.num_classes), hidden=8, num_layers=2)
    return data, spec, common


def _alg(name, model, common, **hp):
    return registry.get("algorithm", name)(model, common, registry.algorithm(name).hparams(**hp))


def _run(alg, data, rounds=ROUNDS):
    keys = [jax.random.key(10 + r) for r in range(rounds)]
    state = alg.init(jax.random.key(0), data)
    step = jax.jit(alg.round)
    hist = []
    for k in keys:
        state, m = step(state, data, k)
        hist.append(jax.device_get(m))
    return jax.device_get(state), hist


HP = {"fedproto": {}, "fedtgp": {"tgp_server_epochs": 3}, "feddistill": {}}


# fedtgp shares fedproto's grouped path (only its server step differs): behind slow, to keep the suite short
@pytest.mark.parametrize("name", ["feddistill", "fedproto", pytest.param("fedtgp", marks=pytest.mark.slow)])
def test_one_architecture_equals_the_homogeneous_run(toy, name):
    data, spec, common = toy
    one = make_client_models([ArchSpec("gcn", 2, 8)], spec, data.eval.num_clients, np.asarray(data.train_index))
    homo, hist_homo = _run(_alg(name, spec.build(), common, **HP[name]), data)
    het, hist_het = _run(_alg(name, spec.build(), dataclasses.replace(common, client_models=one), **HP[name]), data)
    for a, b in zip(hist_homo, hist_het):
        assert set(a) == set(b)
        for k in a:
            np.testing.assert_array_equal(np.asarray(a[k]), np.asarray(b[k]), err_msg=k)
    np.testing.assert_array_equal(homo.protos, het.protos)
    np.testing.assert_array_equal(homo.present, het.present)
    assert isinstance(het.personal, tuple) and len(het.personal) == 1
    for x, y in zip(jax.tree.leaves(homo.personal), jax.tree.leaves(het.personal[0])):
        np.testing.assert_array_equal(x, y)
    assert homo.present.any() and np.abs(homo.protos).max() > 0   # prototypes were exchanged


@pytest.mark.slow
def test_sampled_one_architecture_equals_the_homogeneous_sampled_run(toy):
    """Client sampling with grouped clients (by mask, `FedData.sample`) against the homogeneous run
    that gathers the same sample: same models, prototypes and metrics; the round's clients really vary."""
    from fgl_jax.federated.participation import with_participation
    data, spec, common = toy
    one = make_client_models([ArchSpec("gcn", 2, 8)], spec, data.eval.num_clients, np.asarray(data.train_index))
    homo = with_participation(_alg("feddistill", spec.build(), common), fraction=0.5)
    het = with_participation(_alg("feddistill", spec.build(), dataclasses.replace(common, client_models=one)),
                             fraction=0.5)
    assert het.masked_sampling and not homo.masked_sampling
    s_homo, hist_homo = _run(homo, data, rounds=3)
    s_het, hist_het = _run(het, data, rounds=3)
    for a, b in zip(hist_homo, hist_het):
        for k in a:
            np.testing.assert_allclose(np.asarray(a[k]), np.asarray(b[k]), rtol=1e-6, atol=1e-7, err_msg=k)
    np.testing.assert_allclose(s_homo.protos, s_het.protos, rtol=1e-6, atol=1e-7)
    for x, y in zip(jax.tree.leaves(s_homo.personal), jax.tree.leaves(s_het.personal[0])):
        np.testing.assert_allclose(x, y, rtol=1e-6, atol=1e-7)
    for x, y in zip(jax.tree.leaves(s_homo.opt), jax.tree.leaves(s_het.opt[0])):
        np.testing.assert_allclose(x, y, rtol=1e-6, atol=1e-7)
    # 2 of 3 clients a round: after 3 rounds some client missed a round (Adam's step count is short)
    steps = [np.asarray(x) for x in jax.tree.leaves(s_het.opt[0]) if np.asarray(x).dtype == np.int32][0]
    assert data.train.num_clients == 3 and steps.min() < 3 * common.local_steps


def test_two_architectures_run_in_one_program(toy):
    data, spec, common = toy
    two = make_client_models(parse_client_models("gcn:2x8,sage:3x8"), spec, data.eval.num_clients,
                             np.asarray(data.train_index))
    groups = two.groups()
    assert [str(g.arch) for g in groups] == ["gcn:2x8", "sage:3x8"]
    assert [list(g.eval_index) for g in groups] == [[0, 2], [1]]          # round-robin over 3 clients
    alg = _alg("fedproto", spec.build(), dataclasses.replace(common, client_models=two))
    state = alg.init(jax.random.key(0), data)
    keys = [jax.random.key(r) for r in range(3)]
    step = jax.jit(alg.round)
    counter = CompileCounter()
    for k in keys:
        state, metrics = step(state, data, k)
    jax.block_until_ready(metrics)
    assert counter.read()["programs"] == 1
    # the groups keep their own parameter shapes (sage has 3 layers) and the metrics are finite
    assert len(jax.tree.leaves(state.personal[1])) > len(jax.tree.leaves(state.personal[0]))
    assert all(np.isfinite(float(v)) for v in jax.device_get(metrics).values())


# --- FedDistill vs NumPy -------------------------------------------------------------------------------------

LR, STEPS, LAM = 0.3, 2, 0.8


def _softmax(z):
    p = np.exp(z - z.max(-1, keepdims=True))
    return p / p.sum(-1, keepdims=True)


def test_feddistill_three_rounds_match_a_numpy_rederivation():
    data, model, _ = toy_setup(n=60, model="mlp")
    model = model.clone(num_layers=1)   # softmax regression: the logits are x W + b
    common = toy_setup()[2].__class__(local_steps=STEPS, optim=OptimConfig(name="sgd", lr=LR, momentum=0.0))
    alg = _alg("feddistill", model, common, feddistill_lambda=LAM)
    state = alg.init(jax.random.key(0), data)
    p = jax.device_get(state.personal)["params"]
    tr = data.train
    xs, ys, ms = (np.asarray(a, np.float64) for a in (tr.features, tr.y, tr.train_mask))
    ys, ms = ys.astype(int), ms.astype(bool)
    k, ct = int(model.num_classes), xs.shape[0]
    idx = np.asarray(data.train_index)
    w = [np.asarray(p["layer_0"]["kernel"][c], np.float64) for c in idx]
    b = [np.asarray(p["bias_0"][c], np.float64) for c in idx]
    glob, present = np.zeros((k, k)), np.zeros(k, bool)
    for r in range(3):
        local, held = np.zeros((ct, k, k)), np.zeros((ct, k), bool)
        for i in range(ct):
            x, y, m = xs[i], ys[i], ms[i]
            n = max(m.sum(), 1)
            use = m & present[y]
            for _ in range(STEPS):
                pr = _softmax(x @ w[i] + b[i])
                d = (pr - np.eye(k)[y]) * m[:, None] / n + LAM * (pr - _softmax(glob[y])) * use[:, None] / n
                w[i], b[i] = w[i] - LR * x.T @ d, b[i] - LR * d.sum(0)
            z = x @ w[i] + b[i]
            for c in range(k):   # the class-wise mean logits over the client's training nodes
                sel = m & (y == c)
                if sel.any():
                    local[i, c], held[i, c] = z[sel].mean(0), True
        present = held.any(0)
        glob = np.where(present[:, None], (local * held[:, :, None]).sum(0) / np.maximum(held.sum(0), 1)[:, None], 0)
        state, metrics = jax.jit(alg.round)(state, data, jax.random.key(r))
        got = jax.device_get(state)
        np.testing.assert_allclose(got.personal["params"]["layer_0"]["kernel"][idx], np.stack(w), rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(got.personal["params"]["bias_0"][idx], np.stack(b), rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(got.protos, glob, rtol=1e-4, atol=1e-5)
        np.testing.assert_array_equal(got.present, present)
    ev = data.eval
    correct = total = 0
    for i, c in enumerate(idx):
        pred = (np.asarray(ev.features[c], np.float64) @ w[i] + b[i]).argmax(1)
        mask = np.asarray(ev.test_mask[c], bool)
        correct += int((pred[mask] == np.asarray(ev.y[c])[mask]).sum())
        total += int(mask.sum())
    assert total > 0
    np.testing.assert_allclose(float(metrics["test_acc"]), correct / total, atol=1e-6)


# --- specs and refusals (no compilation) -----------------------------------------------------------------------

def test_specs_and_assignment():
    specs = parse_client_models("gcn:2x64, gat:3x8")
    assert specs == (ArchSpec("gcn", 2, 64), ArchSpec("gat", 3, 8))
    archs, group = assign_architectures(specs, 5)
    assert archs == specs and group.tolist() == [0, 1, 0, 1, 0]
    with pytest.raises(ValueError, match="client_models_file: 2 architectures for 3 clients"):
        assign_architectures(specs, 3, per_client=True)
    for bad, msg in (("gcn", "not an architecture"), ("nope:2x8", "unknown model 'nope'"),
                     ("gcn:0x8", "at least 1 layer"), ("", "lists no architecture")):
        with pytest.raises(ValueError, match=msg):
            parse_client_models(bad)


def test_config_refusals():
    from fgl_jax.systems.baseline import RunConfig
    with pytest.raises(ValueError, match="algorithm 'fedavg' averages model parameters.*feddistill, fedproto, fedtgp"):
        RunConfig(algorithm="fedavg", client_models="gcn:2x8")
    RunConfig(algorithm="fedproto", client_models="gcn:2x8", client_fraction=0.5)   # sampled by mask
    with pytest.raises(ValueError, match="not both"):
        RunConfig(algorithm="fedproto", client_models="gcn:2x8", client_models_file="x.txt")
    RunConfig(algorithm="feddistill", client_models="gcn:2x8,gat:2x4")   # accepted


def test_client_models_file(tmp_path):
    from fgl_jax.federated.client_models import read_client_models_file
    f = tmp_path / "models.txt"
    f.write_text("# one per client\ngcn:2x8\n\nsage:3x8  # deeper\n")
    assert read_client_models_file(str(f)) == (ArchSpec("gcn", 2, 8), ArchSpec("sage", 3, 8))
    f.write_text("gcn:2x8\ngcn-2\n")
    with pytest.raises(ValueError, match=r"models.txt:2: 'gcn-2' is not an architecture"):
        read_client_models_file(str(f))
