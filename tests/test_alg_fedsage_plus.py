"""FedSage+: mending with a perfect generator (the true hidden neighbours) equals training on the full
subgraph; the host targets against a by-hand count; the greedy loss against a NumPy transcription of
OpenFGL's loop; runs through build (partial participation) and the CLI with --resume."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from fgl_jax.algorithms.fedsage_plus import (FedSagePlusHParams, dense_features, fedsage_prepare, greedy_loss,
                                             impaired_batch, mend_batch)
from fgl_jax.batch import build_client_batch, unstack
from fgl_jax.federated.algorithm import HostInput
from fgl_jax.federated.metrics import masked_cross_entropy
from fgl_jax.nn.models import SAGE
from fgl_jax.partition import random_partition
from tests.helpers import toy_graph

P = 6


def _client(seed=3):
    g = toy_graph(n=60, seed=seed)
    assign = random_partition(g, 2, seed=0).assignment
    batch = build_client_batch(g, assign, 2)
    hp = FedSagePlusHParams(fedsage_num_pred=P, fedsage_hidden_portion=0.6)
    _, extra = fedsage_prepare(HostInput(g, np.asarray(assign), batch, 0), hp)
    return g, assign, batch, extra


def test_host_targets_are_the_hidden_neighbours_counted_by_hand():
    g, assign, batch, ex = _client()
    for c in range(2):
        b = unstack(batch, c)
        n = int(np.asarray(b.node_mask).sum())
        s, r = np.asarray(b.senders)[np.asarray(b.edge_mask)], np.asarray(b.receivers)[np.asarray(b.edge_mask)]
        a = np.zeros((n, n), bool)
        a[r, s] = a[s, r] = True
        np.fill_diagonal(a, False)
        keep = ex["keep"][c][:n]
        val = np.asarray(b.val_mask)[:n]
        assert (~keep <= val).all()   # only validation nodes are hidden
        assert (~keep).sum() == int(0.6 * val.sum())
        for i in range(n):
            hidden = np.flatnonzero(a[i] & ~keep)
            want = len(hidden) if keep[i] else 0
            assert ex["missing"][c][i] == want
            if keep[i]:
                m = min(P, want)
                assert sorted(ex["targets"][c][i][:m]) == sorted(hidden[:m])
            assert ex["deg"][c][i] == a[i].sum()
            assert sorted(ex["nbr"][c][i][:a[i].sum()]) == sorted(np.flatnonzero(a[i]))
        rows = ex["rows"][c][ex["row_mask"][c]]
        np.testing.assert_array_equal(rows, np.flatnonzero(np.asarray(b.train_mask)[:n] & keep))
        frows = ex["frows"][c][ex["frow_mask"][c]]
        np.testing.assert_array_equal(frows, np.flatnonzero(np.asarray(b.train_mask)[:n] & keep
                                                            & (ex["missing"][c][:n] > 0)))


def test_mending_with_the_true_hidden_neighbours_equals_the_full_subgraph():
    """Impaired graph + generated neighbours = (features, counts) of the hidden ones: a 1-layer SAGE
    (mean aggregator) gives the full local graph's outputs on every kept node, hence the same
    training loss and gradient; checked also against a dense NumPy SAGE on the full graph."""
    g, assign, batch, ex = _client()
    assert ex["missing"].max() <= P   # a perfect generator fits in P slots
    c = 0
    b = unstack(batch, c)
    n, f = b.num_nodes, g.num_features
    keep, missing, targets = (jnp.asarray(ex[k][c]) for k in ("keep", "missing", "targets"))
    net = SAGE(in_dim=f, hidden=8, num_classes=g.num_classes, num_layers=1)
    loss = lambda prm, bb: masked_cross_entropy(net.apply(prm, bb)[:n], b.y, b.train_mask)

    @jax.jit   # everything below in one compile (op-by-op dispatch cost most of this test's time)
    def outputs(b, keep, missing, targets):
        x = dense_features(b.features, n, f)
        perfect = jnp.where((jnp.arange(P)[None, :] < missing[:, None])[..., None], x[targets], 0.0)   # [N, P, F]
        mended = mend_batch(impaired_batch(b, keep), x, perfect, missing.astype(jnp.int32))
        bare = mend_batch(impaired_batch(b, keep), x, perfect, 0 * missing.astype(jnp.int32))
        params = net.init(jax.random.key(0), b)
        return (x, params, net.apply(params, b), net.apply(params, mended)[:n], jax.value_and_grad(loss)(params, b),
                jax.value_and_grad(loss)(params, mended), net.apply(params, bare)[:n])

    x, params, full_out, mended_out, (l1, g1), (l2, g2), bare = jax.device_get(outputs(b, keep, missing, targets))
    k = np.asarray(keep)
    np.testing.assert_allclose(mended_out[k], full_out[k], rtol=1e-5, atol=1e-5)
    # the same on a dense NumPy SAGE of the full local graph (independent of the segment sums)
    nn_ = int(np.asarray(b.node_mask).sum())
    s, r = np.asarray(b.senders)[np.asarray(b.edge_mask)], np.asarray(b.receivers)[np.asarray(b.edge_mask)]
    a = np.zeros((nn_, nn_))
    a[r, s] = 1.0
    xn = np.asarray(x)[:nn_]
    w = np.asarray(params["params"]["layer_0"]["kernel"], np.float64)
    wr, wn = w[:, :g.num_classes], w[:, g.num_classes:]
    mean = (a @ xn) / np.maximum(a.sum(1, keepdims=True), 1)
    want = xn @ wr + mean @ wn + np.asarray(params["params"]["bias_0"])
    np.testing.assert_allclose(mended_out[:nn_][k[:nn_]], want[k[:nn_]], rtol=1e-4, atol=1e-4)
    # training on the mended graph == training on the full subgraph (the train nodes are all kept)
    assert (np.asarray(b.train_mask) <= k).all()
    assert float(l1) == pytest.approx(float(l2), rel=1e-6)
    for u, v in zip(jax.tree.leaves(g1), jax.tree.leaves(g2)):
        np.testing.assert_allclose(np.asarray(u), np.asarray(v), rtol=1e-4, atol=1e-6)
    # and with nothing generated the kept nodes lose exactly their hidden neighbours
    lost = k & (np.asarray(missing) > 0)
    assert lost.any() and not np.allclose(bare[lost], full_out[lost])


def _openfgl_greedy(pred, true, pred_n, true_n, max_pred):
    """OpenFGL 1.1.0's greedy_loss loop, transcribed to NumPy (mse = mean over features)."""
    loss = np.zeros(pred.shape[:2])
    true_n, pred_n = np.clip(true_n, 0, max_pred), np.clip(pred_n, 0, max_pred)
    for i in range(pred.shape[0]):
        for j in range(min(max_pred, int(pred_n[i]))):
            if true_n[i] > 0:
                loss[i, j] = np.mean((pred[i, j] - true[i, true_n[i] - 1]) ** 2)
                for k in range(min(max_pred, true_n[i])):
                    loss[i, j] = min(loss[i, j], np.mean((pred[i, j] - true[i, k]) ** 2))
    return loss.mean()


def test_greedy_loss_matches_openfgls_loop():
    rng = np.random.default_rng(0)
    t, f = 7, 5
    pred, true = rng.normal(size=(t, P, f)), rng.normal(size=(t, P, f))
    pred_n = np.array([0, 1, 3, 6, 9, 2, 4])
    true_n = np.array([2, 0, 1, 6, 3, 7, 5])
    want = _openfgl_greedy(pred, true, pred_n, true_n, P)
    got = jax.jit(greedy_loss)(jnp.asarray(pred, jnp.float32), jnp.asarray(np.clip(pred_n, 0, P)), jnp.asarray(true, jnp.float32),
                      jnp.asarray(np.clip(true_n, 0, P)), jnp.ones(t, bool), jnp.asarray(t))
    assert float(got) == pytest.approx(want, rel=1e-5)


@pytest.mark.slow
@pytest.mark.parametrize("variant", ["openfgl", pytest.param("paper", marks=pytest.mark.slow)])
def test_runs_through_build_with_partial_participation(variant):
    from fgl_jax import run
    from fgl_jax.systems.baseline import RunConfig, build
    cfg = RunConfig(dataset="csbm", algorithm="fedsage_plus", clients=4, rounds=3, hidden=8, split="keep",
                    client_fraction=0.5, fedsage_variant=variant, fedsage_gen_rounds=2, fedsage_gen_width=16,
                    fedsage_latent=8, fedsage_num_pred=2, fedsage_schedule="round")
    prog = build(cfg)
    res = run(prog.algorithm, prog.data, jax.random.key(0), 3)
    assert np.isfinite(res.history["train_loss"]).all() and len(res.history["test_acc"]) == 3
    # the client schedule cannot follow a per-round sample: one clear error, not a wrong run
    prog = build(cfg.replace(fedsage_schedule="client"))
    with pytest.raises(ValueError, match="fedsage_schedule=round"):
        run(prog.algorithm, prog.data, jax.random.key(0), 3)


@pytest.mark.slow
@pytest.mark.parametrize("variant", ["openfgl", pytest.param("paper", marks=pytest.mark.slow)])
def test_client_schedule_equals_the_round_by_round_run(variant):
    """schedule=client (each client's whole phase 1 at round 0, NeighGens never stored) against
    schedule=round (the round-by-round program, every NeighGen and Adam state carried in the
    state): the same steps with the same keys, so the same history, round for round."""
    from fgl_jax import run
    from fgl_jax.systems.baseline import RunConfig, build
    cfg = RunConfig(dataset="csbm", algorithm="fedsage_plus", clients=3, rounds=4, hidden=8, split="keep",
                    local_steps=2, fedsage_variant=variant, fedsage_gen_rounds=3, fedsage_gen_width=16,
                    fedsage_latent=8, fedsage_num_pred=2)
    hist = {}
    for schedule in ("client", "round"):
        prog = build(cfg.replace(fedsage_schedule=schedule))
        hist[schedule] = run(prog.algorithm, prog.data, jax.random.key(0), 4).history
    for k in ("train_loss", "val_acc", "test_acc", "val_loss"):
        np.testing.assert_allclose(hist["client"][k], hist["round"][k], rtol=2e-5, atol=1e-6, err_msg=k)
    assert np.ptp(hist["round"]["train_loss"][:3]) > 0   # phase 1 actually trained (the losses move)


@pytest.mark.slow  # three compiles of both phases
def test_cli_run_and_resume(tmp_path):
    from fgl_jax.cli import main
    args = ["run", "--dataset", "csbm", "--split", "keep", "--clients", "3", "--hidden", "8", "--algorithm",
            "fedsage_plus", "--fedsage-gen-rounds", "1", "--fedsage-gen-width", "16", "--fedsage-latent", "8",
            "--fedsage-num-pred", "2", "--chunk", "1", "--checkpoint-every", "chunk", "--no-progress"]
    whole, part = tmp_path / "whole", tmp_path / "part"
    assert main([*args, "--rounds", "3", "--out", str(whole)]) == 0
    assert main([*args, "--rounds", "2", "--out", str(part)]) == 0
    assert main([*args, "--rounds", "3", "--out", str(part), "--resume", "--resume-with-changes", "rounds"]) == 0
    read = lambda d: [l for l in (d / "metrics.jsonl").read_text().splitlines()]
    import json
    acc = lambda d: [json.loads(l)["test_acc"] for l in read(d)]
    assert acc(whole) == acc(part)


def test_generator_phase_exchange_bytes_equal_a_hand_count():
    """Each training client hands out its features [n, F] float32, degrees [n] int32 and neighbour
    ids (one int32 per directed neighbour entry) once; down = the other clients' shares."""
    from fgl_jax.algorithms.fedsage_plus import fedsage_pre_bytes
    g = toy_graph(n=45, seed=5)
    assign = random_partition(g, 3, seed=1).assignment
    batch = build_client_batch(g, assign, 3)
    share = []
    for c in range(3):
        b = unstack(batch, c)
        n = int(np.asarray(b.node_mask).sum())
        em = np.asarray(b.edge_mask)
        a = np.zeros((n, n), bool)
        a[np.asarray(b.receivers)[em], np.asarray(b.senders)[em]] = True
        a |= a.T
        np.fill_diagonal(a, False)
        share.append(4 * n * g.num_features + 4 * n + 4 * int(a.sum()))
    assert all(np.asarray(batch.train_mask).any(axis=1))
    hp = FedSagePlusHParams()
    up, down = fedsage_pre_bytes(HostInput(g, np.asarray(assign), batch, 0), hp)
    assert up == sum(share)
    assert down == sum(share[j] for i in range(3) for j in range(3) if j != i)
    assert fedsage_pre_bytes(HostInput(g, np.asarray(assign), batch, 0),
                             FedSagePlusHParams(fedsage_cross=False)) == (0, 0)
