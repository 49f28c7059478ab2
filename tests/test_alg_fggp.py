"""FGGP: the view adjacency, the confidence-weighted prototypes and OpenFGL's alignment loss against
NumPy; the augmented view through gcn_sum against a dense product; with both extra terms off a round
is FedAvg's; a model without a neighbour sum is refused; runs through the CLI (--out, --resume,
client_fraction 0.5)."""
import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from fgl_jax import registry
from fgl_jax.algorithms.fggp import dense_aggregate, prototype_alignment, view_adjacency, weighted_prototypes
from fgl_jax.batch import build_client_batch
from fgl_jax.cli import main
from fgl_jax.nn import make_model
from tests.alg_helpers import assert_trees_close, toy_setup
from tests.helpers import toy_graph


def test_view_adjacency_is_a_gumbel_softmax_over_real_nodes():
    rng = np.random.default_rng(0)
    n, tau = 6, 0.5
    h = rng.normal(size=(n, 3))
    mask = np.array([1, 1, 1, 1, 0, 0], bool)
    key = jax.random.key(3)
    s = np.asarray(view_adjacency(jnp.asarray(h, jnp.float32), jnp.asarray(mask), tau, key), np.float64)
    # the same uniform draws (the noise is the function's; the arithmetic is checked here)
    u = np.asarray(jax.random.uniform(key, (n, n), jnp.float32, minval=1e-12, maxval=1.0), np.float64)
    z = (h @ h.T - np.log(-np.log(u))) / tau
    z[:, ~mask] = -np.inf
    want = np.exp(z - z.max(1, keepdims=True))
    want /= want.sum(1, keepdims=True)
    want[~mask] = 0.0
    np.testing.assert_allclose(s, want, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(s[mask].sum(1), 1.0, rtol=1e-5)


@pytest.mark.slow
def test_weighted_prototypes_and_alignment_match_numpy():
    rng = np.random.default_rng(1)
    n, d, k, t = 9, 4, 4, 0.5
    h, hv = rng.normal(size=(n, d)), rng.normal(size=(n, d))
    labels = np.array([0, 1, 1, 3, 0, 3, 3, 1, 2])
    w = rng.uniform(0.2, 1.0, size=n)
    w[-1] = 0.0                                   # a node that does not count: class 2 is absent
    p, present = weighted_prototypes(jnp.asarray(h, jnp.float32), jnp.asarray(labels), jnp.asarray(w, jnp.float32), k)
    pv, _ = weighted_prototypes(jnp.asarray(hv, jnp.float32), jnp.asarray(labels), jnp.asarray(w, jnp.float32), k)
    want_p, want_pv = np.zeros((k, d)), np.zeros((k, d))
    for c in range(k):
        sel = (labels == c) * w
        want_p[c] = (sel[:, None] * h).sum(0) / (sel.sum() + 1e-6)
        want_pv[c] = (sel[:, None] * hv).sum(0) / (sel.sum() + 1e-6)
    np.testing.assert_allclose(np.asarray(p), want_p, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(np.asarray(present), [True, True, False, True])
    # OpenFGL's proto_align_loss on the present classes only, written as it is there
    idx = [0, 1, 3]
    a, b = want_pv[idx], want_p[idx]
    pos = (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1)) / t
    neg = a @ b.T / t
    np.fill_diagonal(neg, -np.inf)
    want = np.mean(-np.log(np.exp(pos) / (np.exp(pos) + np.exp(neg).sum(1))))
    got = prototype_alignment(pv, p, present, t)
    assert float(got) == pytest.approx(want, rel=1e-5)
    # an absent class (zero prototype) gives finite gradients
    g = jax.grad(lambda x: prototype_alignment(x, p, present, t))(pv)
    assert np.isfinite(np.asarray(g)).all()


def test_the_view_through_gcn_sum_is_the_dense_product():
    g = toy_graph(n=20, seed=2)
    b = jax.tree.map(lambda a: a[0], build_client_batch(g, np.zeros(g.num_nodes, np.int64), 1))
    net = make_model("gcn_sum", g.num_features, g.num_classes, hidden=5)
    params = net.init({"params": jax.random.key(0)}, b)
    n = b.y.shape[0]
    s = np.random.default_rng(0).dirichlet(np.ones(n), size=n)
    view = net.clone(aggregate=dense_aggregate(jnp.asarray(s, jnp.float32)))
    p = jax.tree.map(lambda a: np.asarray(a, np.float64), params["params"])
    x = np.asarray(b.features, np.float64)
    hid = np.maximum(s @ (x @ p["layer_0"]["kernel"]) + p["bias_0"], 0)
    want = s @ (hid @ p["layer_1"]["kernel"]) + p["bias_1"]
    np.testing.assert_allclose(np.asarray(view.apply(params, b)), want, rtol=1e-4, atol=1e-4)


@pytest.mark.slow
def test_without_its_terms_a_round_is_fedavgs():
    data, model, common = toy_setup(local_steps=2, model="gcn")
    entry = registry.entry("algorithm", "fggp")
    alg = entry.obj(model, common, entry.info["hparams"](fggp_view_weight=0.0, fggp_align_weight=0.0))
    fedavg = registry.get("algorithm", "fedavg")(model, common, None)
    st = alg.init(jax.random.key(0), data)
    ref = fedavg.init(jax.random.key(0), data)
    assert_trees_close(st.server, ref.server, rtol=0, atol=0)
    new, m = jax.jit(alg.round)(st, data, jax.random.key(1))
    # fedavg's round splits the same key per client, but its clients draw dropout keys directly;
    # the toy model has no dropout, so only the arithmetic of the objective and the average differ
    want, mw = jax.jit(fedavg.round)(ref, data, jax.random.key(1))
    assert_trees_close(new.server, want.server, rtol=1e-5, atol=1e-6)
    assert float(m["train_loss"]) == pytest.approx(float(mw["train_loss"]), rel=1e-5)


def test_a_model_without_a_neighbour_sum_is_refused():
    _, _, common = toy_setup()
    entry = registry.entry("algorithm", "fggp")
    for name in ("gat", "sage"):
        with pytest.raises(ValueError, match="neighbour sum of a GCN layer"):
            entry.obj(make_model(name, 12, 3, hidden=8), common, entry.info["hparams"]())


@pytest.mark.slow   # whole-run integration (compiles and runs a full program); the default suite stays short
def test_fggp_cli_out_and_resume_with_partial_participation(tmp_path):
    small = ["--dataset", "csbm", "--split", "keep", "--clients", "4", "--hidden", "8", "--no-progress",
             "--algorithm", "fggp", "--fggp-model", "openfgl", "--client-fraction", "0.5",
             "--chunk", "2", "--checkpoint-every", "chunk"]
    d = str(tmp_path / "run")
    assert main(["run", *small, "--rounds", "2", "--out", d]) == 0
    first = [json.loads(x) for x in open(f"{d}/metrics.jsonl")]
    assert main(["run", *small, "--rounds", "4", "--out", d, "--resume", "--resume-with-changes", "rounds"]) == 0
    rows = [json.loads(x) for x in open(f"{d}/metrics.jsonl")]
    assert len(first) == 2 and len(rows) == 4 and rows[:2] == first
    assert all(r["participants"] == 2 and np.isfinite(r["train_loss"]) for r in rows)
