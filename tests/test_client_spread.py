"""The per-client accuracy spread of personalised evaluation (mean, worst 10 %, sd over clients) vs
NumPy, and its place in summary.json: best_test_acc_clients_* at the reported round for a run that
evaluates each client's own model, absent for a global-model run."""
import pytest
import json
import math

import jax.numpy as jnp
import numpy as np

from fgl_jax.federated.evaluation import SPREAD_KEYS, client_spread


def test_client_spread_matches_numpy():
    rng = np.random.default_rng(0)
    c, k = 23, 4
    total = rng.integers(1, 30, (c, 3)).astype(np.float32)
    total[[3, 7], 2] = 0                                          # clients without test nodes
    tp = np.stack([rng.multinomial(int(t), np.ones(k) / k) for t in total[:, 2]]).astype(np.float32)
    tp = tp * rng.random((c, k)) // 1                              # some wrong predictions
    tps = np.zeros((c, 3, k), np.float32)
    tps[:, 2] = tp
    mask = np.ones(c, bool)
    mask[[5, 11, 12]] = False                                     # padded (not real) clients
    got = client_spread({"total": jnp.asarray(total), "tp": jnp.asarray(tps)}, jnp.asarray(mask))
    valid = mask & (total[:, 2] > 0)
    acc = tp.sum(1)[valid] / total[valid, 2]
    n = len(acc)
    assert n == 18
    worst = np.sort(acc)[: math.ceil(n / 10)].mean()
    want = dict(zip(SPREAD_KEYS, (acc.mean(), worst, acc.std())))
    for key in SPREAD_KEYS:
        np.testing.assert_allclose(float(got[key]), want[key], rtol=1e-6, err_msg=key)
    assert want["test_acc_clients_worst10"] < want["test_acc_clients_mean"]


@pytest.mark.slow
def test_summary_reports_the_spread_at_the_reported_round(tmp_path):
    from fgl_jax.cli import main
    base = ["run", "--dataset", "csbm", "--split", "keep", "--clients", "4", "--hidden", "8", "--rounds", "3",
            "--no-progress"]
    assert main([*base, "--algorithm", "fedbn", "--norm", "batch", "--out", str(tmp_path / "bn")]) == 0
    best = json.loads((tmp_path / "bn" / "summary.json").read_text())["best"]
    rows = [json.loads(line) for line in (tmp_path / "bn" / "metrics.jsonl").read_text().splitlines()]
    at = rows[best["best_round"] - 1]
    for key in SPREAD_KEYS:
        assert best[f"best_{key}"] == np.float32(at[key]).item()
    assert best["best_test_acc_clients_worst10"] <= best["best_test_acc_clients_mean"]
    assert main([*base, "--algorithm", "fedavg", "--out", str(tmp_path / "avg")]) == 0
    best = json.loads((tmp_path / "avg" / "summary.json").read_text())["best"]
    assert not any(k.startswith("best_test_acc_clients") for k in best)
