"""FedHGL through the shared engine: build_program -> fgl_jax.federated.run (orbax checkpoints, resume)
and run_sweep (seeds x lr, traced Laplace ε); per-client best-validation selection lives in the state."""
import dataclasses

import jax
import numpy as np
import pytest

from fgl_jax.federated import run
from fgl_jax.federated.sweep import run_sweep
from fgl_jax.systems.fedhgl import FedHGLConfig, build_program, evaluate, prepare, train
from tests.test_fedhgl_train import planted_hypergraph

OPTS = {"clients": 3, "rounds": 6, "local_steps": 2, "train_ratio": 0.3, "seed": 0}


def _hist_close(a, b, names=("train_loss", "val_acc", "test_acc")):
    for n in names:
        np.testing.assert_allclose(np.asarray(a[n]), np.asarray(b[n]), rtol=1e-5, atol=1e-6, err_msg=n)


def test_resume_equals_uninterrupted(tmp_path):
    hg = planted_hypergraph()
    prog = build_program(OPTS, hypergraph=hg)
    key = jax.random.key(3)
    full = run(prog.algorithm, prog.data, key, 6, chunk=2, out_dir=tmp_path / "a")
    run(prog.algorithm, prog.data, key, 4, chunk=2, out_dir=tmp_path / "b")          # "interrupted" after 4
    assert (tmp_path / "b" / "checkpoints" / "round_000004").exists()
    resumed = run(prog.algorithm, prog.data, key, 6, chunk=2, out_dir=tmp_path / "b", resume=True)
    _hist_close(full.history, resumed.history)
    for u, v in zip(jax.tree.leaves(full.state), jax.tree.leaves(resumed.state)):
        np.testing.assert_allclose(np.asarray(u), np.asarray(v), rtol=1e-5, atol=1e-6)
    # the per-client best-validation checkpoints are part of the restored state
    e1, e2 = evaluate(full.state, prog.data), evaluate(resumed.state, prog.data)
    assert float(e1["test_acc"]) == pytest.approx(float(e2["test_acc"]))
    assert float(e1["test_acc"]) == pytest.approx(full.history["test_acc"][-1], abs=1e-6)
    # `train` (cached scan, no out_dir) uses the same keys as `run`: identical histories
    cfg = FedHGLConfig(num_clients=3, rounds=6, local_steps=2, train_ratio=0.3)
    data, _ = prepare(hg, cfg, seed=0)
    _hist_close(train(data, hg.num_classes, cfg, key)["history"], full.history)


def test_sweep_member_equals_single_run():
    """seeds x lr vectorised (run_sweep) == separate single runs with that lr in the options."""
    hg = planted_hypergraph()
    prog = build_program(OPTS, hypergraph=hg)
    seeds, lrs = [0, 1], [0.01, 0.05]
    sw = run_sweep(prog.algorithm, prog.data, seeds, 6, {"lr": lrs}, mode="vmap")
    for i, (seed, lr) in enumerate(zip(seeds, lrs)):
        single = build_program({**OPTS, "lr": lr}, hypergraph=hg)
        r = run(single.algorithm, single.data, jax.random.key(seed), 6)
        for n in ("train_loss", "test_acc", "val_acc"):
            np.testing.assert_allclose(sw.history[n][i], r.history[n], rtol=1e-4, atol=1e-5, err_msg=n)
    assert not np.allclose(sw.history["train_loss"][0], sw.history["train_loss"][1])


def test_traced_laplace_eps_equals_direct_noise_and_sweeps():
    """HC is linear and the Laplace scale is s/ε: X^{(N)}(ε) = X_clean + G/ε exactly (up to rounding),
    so ε can be a traced hyperparameter; RR is refused with the reason."""
    hg = planted_hypergraph()
    hg = dataclasses.replace(hg, x=hg.x * 0.5, feature_kind="numeric")
    opts = {**OPTS, "mechanism": "laplace", "eps": 0.8}
    cfg = FedHGLConfig(num_clients=3, mechanism="laplace", eps=0.8, train_ratio=0.3)
    traced, _ = prepare(hg, cfg, seed=0, traced_eps=True)
    direct, _ = prepare(hg, cfg, seed=0)
    for s in ("train", "val", "test"):
        x = np.asarray(getattr(traced, f"x_{s}")) + np.asarray(getattr(traced, f"g_{s}")) / 0.8
        np.testing.assert_allclose(x, np.asarray(getattr(direct, f"x_{s}")), rtol=1e-4, atol=1e-5)
    assert np.abs(np.asarray(traced.g_val)).max() > 1e-3
    prog = build_program({**opts, "traced_eps": True}, hypergraph=hg)
    sw = run_sweep(prog.algorithm, prog.data, [0, 0], 4, {"eps": [0.8, 1e6]}, mode="sequential")
    clean = build_program({**opts, "mechanism": "none"}, hypergraph=hg)
    r = run(clean.algorithm, clean.data, jax.random.key(0), 4)
    np.testing.assert_allclose(sw.history["train_loss"][1], r.history["train_loss"], rtol=1e-3, atol=1e-4)
    with pytest.raises(ValueError, match="not linear"):
        build_program({**OPTS, "mechanism": "rr", "eps": 1.0, "traced_eps": True}, hypergraph=planted_hypergraph())


def test_unknown_option_rejected():
    with pytest.raises(ValueError, match="unknown key"):
        build_program({**OPTS, "epsilon": 1.0}, hypergraph=planted_hypergraph())


@pytest.mark.parametrize("eps", [0.0, -1.0])
def test_program_rejects_nonpositive_eps(eps):
    from fgl_jax.privacy.ldp import LDPError
    with pytest.raises(LDPError, match="eps"):
        build_program({**OPTS, "mechanism": "laplace", "eps": eps}, hypergraph=planted_hypergraph())
