"""FED-PUB: the masked GCN against a dense NumPy forward (masks pruned at evaluation only); the proxy
graph's block structure; and one round's server step, re-derived in NumPy from the clients'
trained models (functional embeddings on the proxy graph -> exp(tau cos) weights -> personalised
weights); plus the run path: the CLI with partial participation, --out and --resume."""
import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from fgl_jax import registry
from fgl_jax.algorithms.fedpub import proxy_graph, similarity_weights
from fgl_jax.nn.masked import MaskedGCN, PlainGraph
from fgl_jax.systems.baseline import RunConfig, build


def _dense_gcn_norm(s, r, n):
    a = np.zeros((n, n))
    np.add.at(a, (r, s), 1.0)
    a += np.eye(n)
    d = a.sum(1)
    return a / np.sqrt(d)[:, None] / np.sqrt(d)[None, :]


def _np_forward(p, x, s, r, layers, prune, train, embed=False):
    """MaskedGCN in NumPy (no dropout): per conv S (H (W*M)) + b, ReLU; then the masked classifier."""
    a = _dense_gcn_norm(s, r, x.shape[0])
    h = x
    for i in range(layers + 1):
        w, m = np.asarray(p[f"kernel_{i}"], np.float64), np.asarray(p[f"mask_{i}"], np.float64)
        if not train:
            m = np.where(np.abs(m) < prune, 0.0, m)
        if i == layers:
            return h @ (w * m) + np.asarray(p[f"bias_{i}"])
        h = a @ (h @ (w * m)) + np.asarray(p[f"bias_{i}"])
        if embed and i == layers - 1:
            return h
        h = np.maximum(h, 0.0)


@pytest.mark.slow
def test_masked_gcn_matches_numpy_and_prunes_only_in_evaluation():
    rng = np.random.default_rng(0)
    n, f, hdim, k = 9, 5, 4, 3
    s = np.array([0, 1, 1, 2, 3, 4, 5, 6, 7, 8], np.int32)
    r = np.array([1, 0, 2, 1, 4, 3, 6, 5, 8, 7], np.int32)
    g = PlainGraph(jnp.asarray(rng.normal(size=(n, f)), jnp.float32), jnp.asarray(s), jnp.asarray(r),
                   jnp.ones(len(s), bool), jnp.ones(n, bool))
    net = MaskedGCN(in_dim=f, hidden=hdim, num_classes=k, num_layers=2, dropout=0.0, prune=0.3)
    params = net.init(jax.random.key(0), g)
    # masks with entries on both sides of the threshold (init is all ones)
    params = jax.tree_util.tree_map_with_path(
        lambda path, x: jnp.asarray(rng.uniform(-1, 1, x.shape), jnp.float32) if "mask" in str(path[-1]) else x, params)
    p = params["params"]
    x = np.asarray(g.features, np.float64)
    for train in (False, True):
        got = np.asarray(net.apply(params, g, train=train))
        np.testing.assert_allclose(got, _np_forward(p, x, s, r, 2, 0.3, train), rtol=1e-4, atol=1e-5)
    emb = np.asarray(net.apply(params, g, train=False, embed=True))
    np.testing.assert_allclose(emb, _np_forward(p, x, s, r, 2, 0.3, False, embed=True), rtol=1e-4, atol=1e-5)
    # pruning changes the output (the test can tell the two modes apart)
    assert not np.allclose(net.apply(params, g, train=False), net.apply(params, g, train=True))


def test_proxy_graph_is_disconnected_blocks_of_the_given_density():
    ex = proxy_graph(4, 50, 0.2, 7, seed=3)
    s, r = ex["proxy_senders"], ex["proxy_receivers"]
    assert ex["proxy_x"].shape == (200, 7)
    assert np.array_equal(s // 50, r // 50)                       # no edge between blocks
    assert not np.any(s == r)
    key = set(zip(s.tolist(), r.tolist()))
    assert all((b, a) in key for a, b in key) and len(key) == len(s)   # symmetric, no duplicates
    pairs = 4 * 50 * 49 / 2
    p_hat = len(s) / 2 / pairs                                    # 4900 Bernoulli(0.2) pairs: sd 0.0057
    assert abs(p_hat - 0.2) < 0.025
    assert abs(ex["proxy_x"].mean()) < 0.1 and abs(ex["proxy_x"].std() - 1) < 0.1
    np.testing.assert_array_equal(proxy_graph(4, 50, 0.2, 7, seed=3)["proxy_senders"], s)   # deterministic


def test_similarity_weights_match_numpy():
    rng = np.random.default_rng(1)
    e = rng.normal(size=(4, 6))
    cos = (e @ e.T) / np.outer(np.linalg.norm(e, axis=1), np.linalg.norm(e, axis=1))
    want = np.exp(10 * cos)
    want /= want.sum(1, keepdims=True)
    np.testing.assert_allclose(similarity_weights(jnp.asarray(e, jnp.float32), 10.0, "exp"), want, rtol=1e-4)
    np.testing.assert_allclose(similarity_weights(jnp.asarray(e, jnp.float32), 10.0, "sum"),
                               cos / cos.sum(1, keepdims=True), rtol=1e-4, atol=1e-6)


def _toy(**kw):
    cfg = RunConfig(dataset="csbm", algorithm="fedpub", clients=3, rounds=2, hidden=8, split="keep", **kw)
    return build(cfg)


@pytest.mark.slow
def test_one_round_server_step_against_numpy():
    prog = _toy()
    alg, data = prog.algorithm, prog.data
    st0 = alg.init(jax.random.key(0), data)
    st1, _ = jax.jit(alg.round)(st0, data, jax.random.key(1))
    idx = np.asarray(data.train_index)
    ex = jax.device_get(data.extra)
    x, s, r = np.asarray(ex["proxy_x"], np.float64), ex["proxy_senders"], ex["proxy_receivers"]
    layers = 2
    trained = [jax.tree.map(lambda a: np.asarray(a[c], np.float64), st1.personal)["params"] for c in idx]
    emb = np.stack([_np_forward(p, x, s, r, layers, 1e-3, False, embed=True).mean(0) for p in trained])
    u = emb / np.linalg.norm(emb, axis=1, keepdims=True)
    alpha = np.exp(10 * u @ u.T)
    alpha /= alpha.sum(1, keepdims=True)
    for name in trained[0]:
        if name.startswith("mask"):
            continue
        stackd = np.stack([p[name] for p in trained])
        want = np.tensordot(alpha, stackd, axes=1)
        got = np.asarray(st1.base["params"][name])[idx]
        np.testing.assert_allclose(got, want, rtol=2e-4, atol=1e-5)
    assert bool(np.all(np.asarray(st1.has_base)[idx]))
    # round 2 starts each client from its personalised weights and its own masks: the masks moved
    # (they are trained) and differ between clients
    m0 = np.asarray(st1.personal["params"]["mask_0"])[idx]
    assert not np.allclose(m0, 1.0) and not np.allclose(m0[0], m0[1])


@pytest.mark.slow   # whole-run integration (compiles and runs a full program); the default suite stays short
def test_fedpub_cli_out_and_resume_with_partial_participation(tmp_path):
    # the code variant (the paper's is the one test_one_round_server_step_against_numpy compiles)
    from fgl_jax.cli import main
    out = tmp_path / "run"
    args = ["run", "--dataset", "csbm", "--algorithm", "fedpub", "--clients", "3", "--hidden", "8", "--split", "keep",
            "--client-fraction", "0.5", "--fedpub-reg", "code", "--no-progress"]
    assert main(args + ["--rounds", "2", "--out", str(out)]) == 0
    assert main(args + ["--rounds", "3", "--out", str(out), "--resume", "--resume-with-changes", "rounds"]) == 0
    rows = [json.loads(l) for l in (out / "metrics.jsonl").read_text().splitlines()]
    assert [row["round"] for row in rows] == [1, 2, 3]
    assert all(np.isfinite(row["train_loss"]) for row in rows)


def test_fedpub_is_registered_with_its_paper():
    info = registry.entry("algorithm", "fedpub").info
    assert "2206.10206" in info["paper"] and info["prepare"] is not None


def test_traced_options_are_in_state_hp():
    from fgl_jax import schema
    from tests.alg_helpers import toy_setup
    data, model, common = toy_setup()
    cls = registry.entry("algorithm", "fedpub").info["hparams"]
    state = jax.eval_shape(registry.get("algorithm", "fedpub")(model, common, cls()).init, jax.random.key(0), data)
    assert set(schema.traced_names(cls)) <= set(state.hp)


def test_client_row_gather_and_scatter_match_numpy_with_and_without_all_clients():
    """take_clients / scatter_clients (FedPub's per-client state) against NumPy indexing, for a
    sampled subset and for every client (where they return their argument instead of copying)."""
    from fgl_jax.algorithms._common import scatter_clients, take_clients
    full = {"w": jnp.arange(15.0).reshape(5, 3)}
    for index in (np.array([1, 3], np.int32), np.arange(5, dtype=np.int32)):
        part = {"w": -jnp.ones((len(index), 3)) * (1 + jnp.arange(len(index)))[:, None]}
        want = np.asarray(full["w"]).copy()
        want[index] = np.asarray(part["w"])
        np.testing.assert_array_equal(np.asarray(take_clients(full, jnp.asarray(index))["w"]),
                                      np.asarray(full["w"])[index])
        np.testing.assert_array_equal(np.asarray(scatter_clients(full, jnp.asarray(index), part)["w"]), want)


@pytest.mark.slow   # two compiles of each algorithm's whole program
@pytest.mark.parametrize("algorithm", ["fedpub", "feddep"])
def test_rounds_are_the_same_with_ell_and_sparse_features(monkeypatch, algorithm):
    """The EllFeatures layout (`prepare`, as both are registered with features="ell") only
    regroups the first layer's sums: rounds with it equal rounds on the SparseFeatures batch."""
    from fgl_jax import ops, run
    from fgl_jax.systems.baseline import algorithm_from_config, prepare
    from fgl_jax.systems.baseline import program
    from tests.helpers import toy_graph
    g = toy_graph(n=50, num_features=10, sparse=True, seed=2)
    opts = ({"fedpub_reg": "code", "fedpub_proxy_nodes": 10} if algorithm == "fedpub" else
            {"feddep_variant": "openfgl", "feddep_gen_width": 16, "feddep_latent": 8, "feddep_emb_dim": 8,
             "feddep_encoder_epochs": 2, "feddep_pretrain_epochs": 1, "feddep_epochs": 1})
    cfg = RunConfig(dataset="toy", algorithm=algorithm, clients=3, rounds=3, hidden=8, split="keep", **opts)
    hist = {}
    for layout in ("ell", "sparse"):
        if layout == "sparse":
            monkeypatch.setattr(program, "first_layer_layout", lambda b, cfg, graph: b)
        prep = prepare(cfg, g)
        want = ops.EllFeatures if layout == "ell" else ops.SparseFeatures
        assert isinstance(prep.data.train.features, want)
        hist[layout] = run(algorithm_from_config(cfg, prep.graph), prep.data, jax.random.key(0), 3).history
    for k in ("train_loss", "val_acc", "test_acc"):
        np.testing.assert_allclose(np.asarray(hist["ell"][k]), np.asarray(hist["sparse"][k]), rtol=1e-5, atol=1e-6)


@pytest.mark.slow
@pytest.mark.parametrize("layers", [1, 2, 3])
def test_functional_embedding_equals_the_mean_of_a_numpy_forward_on_the_proxy_graph(layers):
    """FedPub's embedding from the host's S X and colmean(S) equals the NumPy masked GCN's last
    convolution output averaged over the proxy graph's nodes, masks pruned."""
    from fgl_jax.algorithms.fedpub import functional_embedding, propagated_proxy
    f, hdim = 7, 5
    ex = proxy_graph(3, 12, 0.3, f, seed=4)
    ex.update(propagated_proxy(ex["proxy_x"], ex["proxy_senders"], ex["proxy_receivers"]))
    s, r = ex["proxy_senders"], ex["proxy_receivers"]
    g = PlainGraph(jnp.asarray(ex["proxy_x"]), jnp.asarray(s), jnp.asarray(r), jnp.ones(len(s), bool),
                   jnp.ones(36, bool))
    net = MaskedGCN(in_dim=f, hidden=hdim, num_classes=3, num_layers=layers, dropout=0.0, prune=0.3)
    rng = np.random.default_rng(1)
    params = jax.tree_util.tree_map_with_path(
        lambda path, x: jnp.asarray(rng.uniform(-1, 1, x.shape), jnp.float32), net.init(jax.random.key(0), g))
    got = np.asarray(functional_embedding(net, params, jax.tree.map(jnp.asarray, ex)))
    p = jax.tree.map(lambda a: np.asarray(a, np.float64), params["params"])
    want = _np_forward(p, np.asarray(ex["proxy_x"], np.float64), s, r, layers, 0.3, False, embed=True).mean(0)
    assert got.shape == (hdim,)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
