"""FedHGL fast pre-propagation (fgl_jax.systems.fedhgl.propagation): equals the dense centralised L^N X without noise (any K),
equals the explicit message-passing protocol with the same noise, keeps sparse inputs sparse."""
import dataclasses

import jax
import numpy as np
import pytest
import scipy.sparse as sp

from fgl_jax.systems.fedhgl import propagation as fp
from fgl_jax.systems.fedhgl import FedHGLConfig, propagate, split_hypergraph
from tests.test_fedhgl_hc import dense_L, random_hypergraph


def _assign(hg, k, seed):
    rng = np.random.default_rng(seed)
    a = rng.integers(0, k, hg.num_nodes)
    a[:k] = np.arange(k)
    return a


@pytest.mark.parametrize("k", [1, 2, 3, 9])
def test_fast_hc_without_noise_equals_dense_centralised(k):
    """T2 on the fast path, in float64: HC(X) == L^N X for N = 1, 2, 3 and any K."""
    hg = random_hypergraph(40 + k)
    split = split_hypergraph(hg, _assign(hg, k, k), k)
    L = dense_L(hg)
    for hops in (1, 2, 3):
        got = fp.hc_propagate(split, hops, dtype=np.float64)
        np.testing.assert_allclose(got, np.linalg.matrix_power(L, hops) @ hg.x, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("mech,binary,sens", [("rr", True, "paper"), ("laplace", False, "paper"),
                                              ("laplace", False, "public")])
def test_fast_hc_equals_protocol_with_noise(mech, binary, sens):
    """Same key -> the same per-node noise -> the fast global computation equals Algorithm 2's
    per-client uploads / id-only server sums, for N = 1 and 2."""
    hg = random_hypergraph(7, binary=binary)
    k = 3
    split = split_hypergraph(hg, _assign(hg, k, 1), k)
    assert split.unsafe_pairs().any()
    for hops in (1, 2):
        cfg = FedHGLConfig(clients=k, hops=hops, mechanism=mech, eps=0.7, sensitivity=sens, public_range=2.0)
        key = jax.random.PRNGKey(11)
        fast, _ = propagate(split, cfg, key, impl="fast")
        slow, _ = propagate(split, cfg, key, impl="protocol")
        clean, _ = propagate(split, dataclasses.replace(cfg, mechanism="none"), key, impl="fast")
        assert np.abs(fast - clean).max() > 1e-3                 # the noise is there
        np.testing.assert_allclose(fast, slow, rtol=1e-4, atol=1e-5)


def test_fast_basic_equals_protocol_trimmed():
    """Basic FedHGL (trimmed local hypergraphs, local degrees) on the block-diagonal operator."""
    hg = random_hypergraph(8)
    k = 3
    split = split_hypergraph(hg, _assign(hg, k, 2), k)
    cfg = FedHGLConfig(clients=k, method="fedhgl")
    fast, _ = propagate(split, cfg, jax.random.PRNGKey(0), impl="fast")
    slow, _ = propagate(split, cfg, jax.random.PRNGKey(0), impl="protocol")
    np.testing.assert_allclose(fast, slow, rtol=1e-5, atol=1e-6)


def test_sparse_features_stay_sparse_until_dense():
    """A sparse X is gathered as CSR (no dense [N, F] copy of the input); the output is dense."""
    hg = random_hypergraph(9, n=200, m=60, f=300, binary=True)
    x = sp.csr_matrix((np.random.default_rng(0).random((200, 300)) < 0.01).astype(np.float32))
    hg = dataclasses.replace(hg, x=x)
    op = fp.global_operator(hg)
    e0 = op.gather(x)
    assert sp.issparse(e0)
    out = fp.propagate_sparse(op, x, 2)
    L = dense_L(hg)
    np.testing.assert_allclose(out, L @ L @ x.toarray(), rtol=1e-4, atol=1e-6)
