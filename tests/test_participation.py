"""Partial participation (fgl_jax/federated/participation.py) and communication accounting."""
from __future__ import annotations

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from fgl_jax import experiment, registry
from fgl_jax.federated.communication import message_bytes
from fgl_jax.federated.participation import participants, sample_clients, with_participation
from fgl_jax.systems.baseline import RunConfig, build
from tests.alg_helpers import client_models, np_weighted_mean, toy_setup
from tests.helpers import toy_graph


def test_participants_count():
    assert participants(10, 0.3) == 3          # 0.3 * 10 = 3.0000000000000004 in floats
    assert participants(1000, 0.1) == 100
    assert participants(10, 0.25) == 3        # ceil
    assert participants(10, 0.01) == 1        # at least one
    assert participants(4, count=7) == 4      # at most everyone
    with pytest.raises(ValueError, match="client_fraction"):
        participants(10, 0.0)


def test_sample_is_uniform_without_replacement():
    n, m, draws = 10, 3, 2000
    idx = np.asarray(jax.vmap(lambda k: sample_clients(k, n, m))(jax.random.split(jax.random.key(1), draws)))
    assert all(len(set(row)) == m for row in idx)
    assert (np.diff(idx, axis=1) > 0).all()
    freq = np.bincount(idx.ravel(), minlength=n) / draws
    # each client is in a sample with probability m/n = 0.3; binomial std sqrt(.3*.7/2000) = 0.010
    np.testing.assert_allclose(freq, m / n, atol=4 * np.sqrt(0.3 * 0.7 / draws))


F, H, K = 12, 8, 3                           # toy_setup's features, hidden width, classes
GCN = (F * H + H + H * K + K) * 4            # two float32 layers with biases, by hand: 524 bytes
FIRST = (F * H + H) * 4                      # FedPer shares the first layer only


def _cfg(**kw):
    return RunConfig(dataset="toy", clients=4, rounds=3, hidden=8, split="keep", **kw)


@pytest.mark.slow
@pytest.mark.parametrize("algorithm,everyone", [
    ("fedavg", dict(clients_per_round=4)),
    ("fedavg", dict(client_fraction=1.0)),   # the wrapper is not applied at all
    ("fedavg", dict(client_fraction=0.9)),   # ceil(0.9 * 4) = 4: the wrapper's m == n branch
    pytest.param("scaffold", dict(clients_per_round=4), marks=pytest.mark.slow)])
def test_everyone_sampled_equals_full_run_bit_for_bit(algorithm, everyone, tmp_path):
    """Sampling every client (clients_per_round = clients, client_fraction 1.0 given explicitly, or a
    fraction that rounds up to every client) must leave the run untouched: the same metrics.jsonl
    rows, byte for byte, and the same final state as the full run without a participation option.
    Dropout is on, so a round key drawn differently would show. The full run's files also carry the
    communication columns: per round and summed."""
    g = toy_graph(n=60, seed=3)
    full = experiment.execute(build(_cfg(algorithm=algorithm, dropout=0.3), graph=g), 0, system="baseline",
                              out=str(tmp_path / "run"))
    same = experiment.execute(build(_cfg(algorithm=algorithm, dropout=0.3, **everyone), graph=g), 0, system="baseline",
                              out=str(tmp_path / "same"))
    assert (tmp_path / "same" / "metrics.jsonl").read_bytes() == (tmp_path / "run" / "metrics.jsonl").read_bytes()
    for k, v in full.history.items():
        np.testing.assert_array_equal(np.asarray(v), np.asarray(same.history[k]), err_msg=k)
    for a, b in zip(jax.tree.leaves(full.state), jax.tree.leaves(same.state)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    per_client = {"fedavg": GCN, "scaffold": 2 * GCN}[algorithm]
    rows = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert [r["comm_up_bytes"] for r in rows] == [4 * per_client] * 3
    assert [r["comm_down_bytes_per_client"] for r in rows] == [per_client] * 3
    assert [r["participants"] for r in rows] == [4] * 3
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["communication"] == {"up_bytes": 3 * 4 * per_client, "down_bytes": 3 * 4 * per_client}


def test_bytes_count_only_the_participants():
    cols = build(_cfg(clients_per_round=2), graph=toy_graph(n=60, seed=3)).per_round
    assert cols["comm_up_bytes"].tolist() == [2 * GCN] * 3 and cols["participants"].tolist() == [2] * 3


def _changed_rows(before, after):
    """Client positions whose rows differ in any leaf of two [C, ...] pytrees."""
    diff = None
    for a, b in zip(jax.tree.leaves(before), jax.tree.leaves(after)):
        d = np.any(np.asarray(a).reshape(a.shape[0], -1) != np.asarray(b).reshape(b.shape[0], -1), axis=1)
        diff = d if diff is None else diff | d
    return np.flatnonzero(diff)


@pytest.mark.slow
def test_fedavg_partial_round_averages_the_sampled_clients_only():
    data, net, common = toy_setup(n=150, clients=5)
    alg = registry.get("algorithm", "fedavg")(net, common, None)
    part = with_participation(alg, count=2)
    state = alg.init(jax.random.key(0), data)
    key = jax.random.key(7)
    new, metrics = jax.jit(part.round)(state, data, key)
    sampled = _changed_rows(state.opt, new.opt)          # only the sampled clients' optimisers moved
    assert len(sampled) == 2
    # reference: every client trained from the server model (no dropout: keys do not matter),
    # then the training-node weighted mean of the two sampled ones
    trained = client_models(net, common, state.server, state.opt, data, key)
    ref = np_weighted_mean(jax.tree.map(lambda a: a[sampled], trained), np.asarray(data.train_weight)[sampled])
    for a, b in zip(jax.tree.leaves(new.server), jax.tree.leaves(ref)):
        np.testing.assert_allclose(np.asarray(a, np.float64), b, rtol=1e-5, atol=1e-6)


SLOW = pytest.mark.slow


@pytest.mark.parametrize("algorithm,field", [pytest.param("scaffold", "c_client", marks=SLOW), pytest.param("moon", "prev", marks=SLOW),
                                             pytest.param("fedproto", "personal", marks=SLOW),
                                             pytest.param("fedper", "personal", marks=SLOW),
                                             pytest.param("feddc", "drift", marks=SLOW),
                                             pytest.param("fedrep", "personal", marks=SLOW),
                                             pytest.param("apfl", "alpha", marks=SLOW)])
def test_unsampled_clients_keep_their_state(algorithm, field):
    data, net, common = toy_setup(n=150, clients=5)
    hp = registry.entry("algorithm", algorithm).info.get("hparams")
    alg = registry.get("algorithm", algorithm)(net, common, hp() if hp else None)
    part = with_participation(alg, fraction=0.4)          # ceil(0.4 * 5) = 2
    state = alg.init(jax.random.key(0), data)
    state, _ = jax.jit(alg.round)(state, data, jax.random.key(3))   # a full round: nonzero per-client state
    new, _ = jax.jit(part.round)(state, data, jax.random.key(4))
    sampled = _changed_rows(state.opt, new.opt)
    assert len(sampled) == 2
    index = np.asarray(data.train_index)
    moved = _changed_rows(getattr(state, field), getattr(new, field))
    assert set(moved) <= set(index[sampled].tolist())
    if algorithm == "scaffold":  # c <- c + (1/N) sum over the sample of (c_i+ - c_i), N = all clients
        delta = jax.tree.map(lambda a, b: (np.asarray(b) - np.asarray(a)).sum(0) / 5, state.c_client, new.c_client)
        for c0, c1, d in zip(jax.tree.leaves(state.c), jax.tree.leaves(new.c), jax.tree.leaves(delta)):
            np.testing.assert_allclose(np.asarray(c1), np.asarray(c0) + d, rtol=1e-5, atol=1e-6)


# ----------------------------------------------------------------------------------- communication



@pytest.mark.parametrize("algorithm,up,down", [
    ("fedavg", GCN, GCN), ("fedprox", GCN, GCN), ("fedper", FIRST, FIRST), ("local", 0, 0), ("global", 0, 0),
    ("fedbn", GCN, GCN), ("fedrep", FIRST, FIRST), ("apfl", GCN, GCN),
    ("scaffold", 2 * GCN, 2 * GCN), ("moon", GCN, GCN), ("feddc", 2 * GCN, 2 * GCN),
    ("fedproto", K * H * 4 + K * 4, K * H * 4 + K * 1), ("fedtgp", K * H * 4 + K * 4, K * H * 4 + K * 1)])
def test_message_bytes_equal_a_hand_count(algorithm, up, down):
    data, net, common = toy_setup()
    hp = registry.entry("algorithm", algorithm).info.get("hparams")
    alg = registry.get("algorithm", algorithm)(net, common, hp() if hp else None)
    assert message_bytes(alg, data) == (up, down)


def test_every_registered_algorithm_describes_its_messages():
    data, net, common = toy_setup()
    for name in registry.names("algorithm"):
        if "node_cls" not in registry.entry("algorithm", name).info.get("tasks", ("node_cls",)):
            continue  # graph-level only (FedStar): this toy is a node task, which such an algorithm refuses
        hp = registry.entry("algorithm", name).info.get("hparams")
        assert message_bytes(registry.get("algorithm", name)(net, common, hp() if hp else None), data) is not None, name
