"""Small synthetic graphs for tests (independent of fgl_jax.data)."""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from fgl_jax.graph import Graph, symmetrize


def toy_graph(n: int = 60, num_classes: int = 3, num_features: int = 12, avg_degree: float = 4.0,
              sparse: bool = False, seed: int = 0, isolated: int = 2) -> Graph:
    """A random homophilous graph with a few isolated nodes and 60/20/20 masks."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, num_classes, n).astype(np.int32)
    m = int(n * avg_degree / 2)
    s, r = rng.integers(0, n - isolated, m), rng.integers(0, n - isolated, m)
    keep = (y[s] == y[r]) | (rng.random(m) < 0.3)
    s, r = symmetrize(s[keep], r[keep], n)
    x = rng.normal(size=(n, num_features)).astype(np.float32) + np.eye(num_classes, num_features)[y] * 2
    if sparse:
        x = sp.csr_matrix(np.where(rng.random((n, num_features)) < 0.3, np.abs(x), 0).astype(np.float32))
    perm = rng.permutation(n)
    masks = [np.zeros(n, bool) for _ in range(3)]
    masks[0][perm[: int(0.6 * n)]] = True
    masks[1][perm[int(0.6 * n): int(0.8 * n)]] = True
    masks[2][perm[int(0.8 * n):]] = True
    return Graph("toy", s, r, x, y, num_classes, *masks)


def dense_adj(g: Graph) -> np.ndarray:
    """A[v, u] = 1 for each directed edge u -> v (row = receiver)."""
    a = np.zeros((g.num_nodes, g.num_nodes))
    a[g.receivers, g.senders] = 1.0
    return a


def check_defended_round(cfg, data, in_dim: int, num_classes: int, defended_aggregate, salt: int) -> None:
    """A defended FedGC round (`condense.fed_round` under `cfg`) must equal: θ from the round key, the
    clients' defended aggregate `defended_aggregate(theta, data, key)` with the key fed_round derives
    (fold_in(fold_in(round key, salt), outer step 0)), then one server step; and the step must move X'."""
    import jax
    import pytest

    from fgl_jax.systems.fedgc.condense import fed_round, make_condenser
    cond = make_condenser(cfg, in_dim, num_classes)
    st0 = cond.init(jax.random.PRNGKey(0), np.full(num_classes, 3))
    k0 = jax.random.PRNGKey(3)

    @jax.jit
    def both(st0, data, k0):  # one compile for the reference and fed_round
        theta = cond.sample_theta(k0)
        g = defended_aggregate(theta, data, jax.random.fold_in(jax.random.fold_in(k0, salt), 0))
        return cond.step(st0, g, theta), fed_round(cond, st0, data, k0)

    (ref, ref_loss), (got, got_loss) = both(st0, data, k0)
    np.testing.assert_allclose(np.asarray(got.x_syn), np.asarray(ref.x_syn), rtol=1e-5, atol=1e-7)
    assert float(got_loss) == pytest.approx(float(ref_loss), rel=1e-5)
    assert not np.allclose(np.asarray(got.x_syn), np.asarray(st0.x_syn))   # a step was taken
