"""EllFeatures as the client batches' first-layer layout: the unrolled, merged-group products
against dense NumPy, and a FedAvg run on EllFeatures against the same run on SparseFeatures."""
from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from fgl_jax import ops, registry
from fgl_jax.federated.run import Tracker, make_scan
from fgl_jax.batch import build_client_batch, with_ell_features
from fgl_jax.federated import FedConfig, OptimConfig, make_fed_data
from fgl_jax.nn import make_model
from fgl_jax.partition import random_partition
from fgl_jax.systems.baseline import RunConfig, prepare
from tests.helpers import toy_graph


def _coo(x: np.ndarray, rng) -> tuple:
    """[C, nnz] COO entries of the clients' matrices x [C, N, F], shuffled, padded with zeros."""
    nz = [np.nonzero(xc) for xc in x]
    size = max(len(r) for r, _ in nz) + 3
    pad = lambda a: np.pad(a, (0, size - len(a)))
    perm = [rng.permutation(len(r)) for r, _ in nz]
    return (np.stack([pad(r[o]) for (r, _), o in zip(nz, perm)]), np.stack([pad(c[o]) for (_, c), o in zip(nz, perm)]),
            np.stack([pad(xc[r, c][o]) for xc, (r, c), o in zip(x, nz, perm)]))


@pytest.mark.slow
@pytest.mark.parametrize("unroll,max_groups", [(4, None), (4, 2), (3, 1)])
def test_unrolled_ell_matmul_and_weight_gradient_match_dense_numpy(unroll, max_groups):
    rng = np.random.default_rng(1)
    n, f, h = 80, 30, 6
    x = (rng.random((2, n, f)) < 0.1) * rng.normal(size=(2, n, f))
    x[0, :, 2] = rng.normal(size=n)      # a column of 80 entries: a group wider than ELL_PIECE, cut in pieces
    x[1, :40, 7] = 1.5                   # 40 entries: padded to 64, two pieces
    x[1, 5] = rng.normal(size=f)         # a dense row; and an empty one
    x[0, 9] = 0.0
    ell = ops.ell_features(*_coo(x, rng), n, f, max_groups=max_groups, unroll=unroll)
    if max_groups is not None:
        assert len(ell.rows) <= max_groups and len(ell.cols) <= max_groups
    assert max(g[0].shape[-1] for g in ell.cols) > ops.ELL_PIECE
    w = rng.normal(size=(2, f, h)).astype(np.float32)
    dz = rng.normal(size=(2, n, h)).astype(np.float32)
    out, grad = jax.vmap(lambda w, e, d: (lambda o, g: (o, g(d)[0]))(*jax.vjp(lambda v: ops.feature_matmul(e, v, n), w)))(
        jnp.asarray(w), ell, jnp.asarray(dz))
    np.testing.assert_allclose(out, x @ w, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(grad, np.swapaxes(x, 1, 2) @ dz, rtol=1e-5, atol=1e-5)


@pytest.mark.slow
def test_fedavg_on_ell_features_matches_sparse_features():
    """Same run, two layouts: only the float summation order differs, so after 4 rounds of 2 Adam
    steps the parameters agree to ~1e-6 and every metric to 1e-5 (accuracies exactly)."""
    g = toy_graph(n=90, num_features=40, sparse=True, seed=4)
    batch = build_client_batch(g, random_partition(g, 3, seed=0).assignment, 3)
    ell = with_ell_features(batch, g.num_features)
    assert isinstance(batch.features, ops.SparseFeatures) and isinstance(ell.features, ops.EllFeatures)
    model = make_model("gcn", g.num_features, g.num_classes, hidden=8)
    alg = registry.get("algorithm", "fedavg")(model, FedConfig(local_steps=2, optim=OptimConfig(name="adam", lr=0.05)), None)
    scan = make_scan(alg, 4)
    runs = []
    for b in (batch, ell):
        data = make_fed_data(b)
        state = alg.init(jax.random.key(0), data)
        runs.append(scan(state, Tracker.empty(), data, jax.random.key(1), jnp.int32(0)))
    (s_sp, _, m_sp), (s_ell, _, m_ell) = runs
    for a, b in zip(jax.tree.leaves(s_sp.server), jax.tree.leaves(s_ell.server)):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
    assert m_sp.keys() == m_ell.keys()
    for k in m_sp:
        if k.endswith("acc"):
            np.testing.assert_array_equal(m_sp[k], m_ell[k], err_msg=k)
        np.testing.assert_allclose(m_sp[k], m_ell[k], rtol=1e-5, atol=1e-5, err_msg=k)


def test_prepare_gives_ell_features_only_to_algorithms_registered_for_them():
    g = toy_graph(n=60, num_features=20, sparse=True, seed=2)
    for algorithm, layout in (("fedavg", ops.EllFeatures), ("global", ops.EllFeatures),
                              ("fgssl", ops.SparseFeatures), ("fedtad", ops.SparseFeatures)):
        prep = prepare(dataclasses.replace(RunConfig(clients=3, partition="random"), algorithm=algorithm), g)
        assert isinstance(prep.data.eval.features, layout), algorithm
        assert isinstance(prep.data.train.features, layout), algorithm
