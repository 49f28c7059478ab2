"""One round body (issue 46, item 5): the plain scan, the chunked run and a sweep member run the
same rounds, and the run options are one checked object.

The reference for each path is another path: `make_scan` over all rounds at once (one `lax.scan`),
`run` in chunks of 4 (a `fori_loop` per chunk, 12 rounds = 3 chunks) and a one-member `sweep` (the
member's own scan, called once, and vmapped). They share `round_step` only; the keys, the chunking
and the tracker are each path's own, so a key or tracker slip in any path shows as a difference.
Bit for bit, except the vmapped sweep (float32 rounding of a batched sum).
"""
import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from fgl_jax.batch import build_client_batch
from fgl_jax.federated import FedConfig, baseline, make_fed_data, run
from fgl_jax.federated.options import RunOptions
from fgl_jax.federated.run import Tracker, make_scan
from fgl_jax.federated.sweep import sweep
from fgl_jax.nn import make_model
from tests.helpers import toy_graph

ROUNDS, SEED = 12, 5


@pytest.fixture(scope="module")
def setup():
    g = toy_graph(n=60, seed=4)
    data = make_fed_data(build_client_batch(g, np.arange(g.num_nodes) % 3, 3))
    # dropout and two local steps: every round key is used, so a wrong key changes the numbers
    alg = baseline(make_model("gcn", g.num_features, g.num_classes, hidden=8, dropout=0.3),
                   FedConfig("fedavg", local_steps=2))
    return alg, data


def _plain_scan(alg, data):
    """Init and rounds by hand: init key = split(key)[0], round r key = fold_in(split(key)[1], r)."""
    init_key, run_key = jax.random.split(jax.random.key(SEED))
    state = jax.jit(alg.init)(init_key, data)
    _, tracker, metrics = make_scan(alg, ROUNDS)(state, Tracker.empty(alg.select), data, run_key, jnp.int32(0))
    return {k: np.asarray(v) for k, v in metrics.items()}, tracker


@pytest.mark.slow
def test_plain_scan_chunked_run_and_sweep_member_give_identical_metrics(setup):
    alg, data = setup
    plain, tracker = _plain_scan(alg, data)
    chunked = run(alg, data, jax.random.key(SEED), ROUNDS, RunOptions(chunk=4))
    seq = sweep(alg, data, [SEED], ROUNDS, mode="sequential")
    vec = sweep(alg, data, [SEED], ROUNDS, mode="vmap")
    assert set(plain) == set(chunked.history) == set(seq.history) == set(vec.history)
    for k in plain:
        np.testing.assert_array_equal(chunked.history[k], plain[k], err_msg=f"chunked run vs plain scan: {k}")
        np.testing.assert_array_equal(seq.history[k][0], plain[k], err_msg=f"sweep (sequential) vs plain scan: {k}")
        # vmap batches the member axis: XLA may then sum in another order (1 ulp on a loss), so this
        # path is equal up to float32 rounding, not bit for bit
        np.testing.assert_allclose(vec.history[k][0], plain[k], rtol=1e-6, atol=1e-7,
                                   err_msg=f"sweep (vmap) vs plain scan: {k}")
    # the in-scan tracker of each path against a host re-derivation: first round with the highest val_acc
    def best(history):
        val = np.asarray(history["val_acc"], np.float32)
        i = int(np.argmax(val))
        return float(val[i]), float(np.asarray(history["test_acc"], np.float32)[i]), i + 1

    want = best(plain)
    assert (float(tracker.best_val), float(tracker.best_test), int(tracker.best_round) + 1) == want
    assert (chunked.best["best_val"], chunked.best["best_test"], chunked.best["best_round"]) == want
    for sw in (seq, vec):
        got = (float(sw.best["best_val"][0]), float(sw.best["best_test"][0]), int(sw.best["best_round"][0]))
        assert got == best({k: v[0] for k, v in sw.history.items()})
    assert (float(seq.best["best_val"][0]), float(seq.best["best_test"][0]), int(seq.best["best_round"][0])) == want


@pytest.mark.slow
def test_keyword_options_equal_the_options_object(setup):
    alg, data = setup
    a = run(alg, data, jax.random.key(1), 3, chunk=2, loss_guard=1e9)
    b = run(alg, data, jax.random.key(1), 3, RunOptions(chunk=2, loss_guard=1e9))
    c = run(alg, data, jax.random.key(1), 3, RunOptions(chunk=3), chunk=2)  # keywords override the object
    for k in a.history:
        np.testing.assert_array_equal(a.history[k], b.history[k])
        np.testing.assert_array_equal(a.history[k], c.history[k])


@pytest.mark.parametrize("changes, match", [
    (dict(chunk=0), r"run option chunk must be a positive integer \(or None\), got 0"),
    (dict(chunk=2.5), r"run option chunk must be a positive integer"),
    (dict(on_nonfinite="ignore"), r"on_nonfinite must be 'raise' or 'stop', got 'ignore'"),
    (dict(loss_guard=-1.0), r"loss_guard must be a finite number >= 0"),
    (dict(loss_guard=float("nan")), r"loss_guard must be a finite number >= 0"),
    (dict(devices=-2), r"devices must be an integer >= 0"),
    (dict(checkpoint_every="sometimes"), r"checkpoint_every must be seconds"),
])
def test_bad_options_are_one_line(changes, match):
    with pytest.raises(ValueError, match=match) as e:
        RunOptions(**changes)
    assert "\n" not in str(e.value)


def test_unknown_or_misplaced_option_is_named(setup):
    alg, data = setup
    with pytest.raises(TypeError, match=r"run: unknown run option\(s\) 'chunks'"):
        run(alg, data, jax.random.key(0), 2, chunks=2)
    with pytest.raises(TypeError, match="options must be a RunOptions, got dict"):
        run(alg, data, jax.random.key(0), 2, {"chunk": 2})
    with pytest.raises(ValueError, match="run: option.s. devices, tensorboard need a config.*run_config"):
        run(alg, data, jax.random.key(0), 2, devices=2, tensorboard="tb")
    # the earlier keyword names still work
    assert RunOptions().checkpoints and not dataclasses.replace(RunOptions(), checkpoints=False).checkpoints
    from fgl_jax.federated.options import resolve
    assert resolve(None, {"checkpoint_every_chunk": False, "out": "x"}, "run") == RunOptions(checkpoints=False,
                                                                                            out_dir="x")
