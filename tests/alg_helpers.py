"""Shared pieces of the tests of fgl_jax/algorithms/* (toy federation, client models of one round)."""
from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

from fgl_jax import registry
from fgl_jax.batch import build_client_batch
from fgl_jax.federated import FedConfig, OptimConfig, make_fed_data
from fgl_jax.nn import make_model
from fgl_jax.partition import random_partition
from tests.helpers import toy_graph


def toy_setup(n: int = 90, clients: int = 3, hidden: int = 8, local_steps: int = 2, lr: float = 0.05,
              optimizer: str = "adam", model: str = "gcn"):
    g = toy_graph(n=n, seed=3)
    data = make_fed_data(build_client_batch(g, random_partition(g, clients, seed=0).assignment, clients))
    net = make_model(model, g.num_features, g.num_classes, hidden=hidden)
    common = FedConfig(local_steps=local_steps, optim=OptimConfig(name=optimizer, lr=lr))
    return data, net, common


def client_models(model, common, server, opt, data, key):
    """The clients' models [C_t, ...] after one FedAvg round's local training from `server` (the
    Local algorithm's round, started from the server model and the given optimiser states)."""
    local = registry.get("algorithm", "local")(model, common, None)
    st = local.init(jax.random.key(0), data)
    personal = jax.tree.map(lambda a: jnp.broadcast_to(a, (data.eval.num_clients,) + a.shape), server)
    st = dataclasses.replace(st, personal=personal, opt=opt)
    new, _ = jax.jit(local.round)(st, data, key)
    return jax.tree.map(lambda a: np.asarray(a, np.float64)[np.asarray(data.train_index)], new.personal)


def np_weighted_mean(tree, weight):
    w = np.asarray(weight, np.float64) / np.asarray(weight, np.float64).sum()
    return jax.tree.map(lambda a: np.tensordot(w, a, axes=1), tree)


def assert_trees_close(a, b, rtol=1e-5, atol=1e-6):
    la, lb = jax.tree.leaves(jax.device_get(a)), jax.tree.leaves(jax.device_get(b))
    assert len(la) == len(lb)
    for x, y in zip(la, lb):
        np.testing.assert_allclose(np.asarray(x, np.float64), np.asarray(y, np.float64), rtol=rtol, atol=atol)


def softmax_regression_grad(w, b, x, y, mask, k):
    """Gradient of the mean masked softmax cross-entropy of x w + b."""
    z = x @ w + b
    p = np.exp(z - z.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    d = (p - np.eye(k)[y]) * mask[:, None] / max(mask.sum(), 1.0)
    return x.T @ d, d.sum(0)


def cli_run_and_resume(tmp_path, algorithm: str, *flags: str, rounds: int = 4) -> None:
    """`fgl-jax run --algorithm <name> --out` for `rounds`, and the same run stopped at rounds/2 then
    resumed with `--resume`: the resumed run's metrics equal the uninterrupted one's."""
    import json

    from fgl_jax.cli import main
    base = ["run", "--algorithm", algorithm, "--dataset", "csbm", "--split", "keep", "--clients", "3",
            "--hidden", "8", "--no-progress", *flags]
    full, part = tmp_path / "full", tmp_path / "part"
    assert main([*base, "--rounds", str(rounds), "--out", str(full)]) == 0
    assert main([*base, "--rounds", str(rounds // 2), "--out", str(part)]) == 0
    assert main([*base, "--rounds", str(rounds), "--out", str(part), "--resume",
                 "--resume-with-changes", "rounds"]) == 0
    rows = lambda d: [json.loads(line) for line in (d / "metrics.jsonl").read_text().splitlines()]
    a, b = rows(full), rows(part)
    assert len(a) == len(b) == rounds
    np.testing.assert_allclose([r["test_acc"] for r in a], [r["test_acc"] for r in b], rtol=1e-5, atol=1e-6)


def linear_start(state, data, model):
    """The NumPy side of a one-layer (softmax-regression) algorithm test, from the algorithm's initial state.

    Args:
        state: the algorithm's initial state (its `server` holds {"params": {"layer_0": {"kernel"}, "bias_0"}}).
        data: the FedData the algorithm runs on.
        model: the one-layer model (for its class count).

    Returns:
        (w [F, K], b [K], xs [C, N, F], ys [C, N] int, ms [C, N], k, ct, share [C]) in float64: the global
        weights, the training clients' features/labels/train masks, the class and client counts and the
        clients' aggregation shares (training weight / total).
    """
    p = jax.device_get(state.server)["params"]
    w, b = np.asarray(p["layer_0"]["kernel"], np.float64), np.asarray(p["bias_0"], np.float64)
    tr = data.train
    xs, ys, ms = (np.asarray(a, np.float64) for a in (tr.features, tr.y, tr.train_mask))
    share = np.asarray(data.train_weight, np.float64) / np.asarray(data.train_weight).sum()
    return w, b, xs, ys.astype(int), ms, int(model.num_classes), xs.shape[0], share
