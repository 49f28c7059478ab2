"""Issue 50 item 3: an in-memory graph written with `Graph.save` / `fj.save_graph` reads back through
`--dataset PATH` (the plain .npz layout) as the same graph."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import fgl_jax as fj
from fgl_jax.data import DataNotice
from fgl_jax.graph import GraphError


def _same(a, b):
    assert a.num_classes == b.num_classes
    for f in ("senders", "receivers", "y", "train_mask", "val_mask", "test_mask"):
        assert np.array_equal(getattr(a, f), getattr(b, f)), f
        assert getattr(a, f).dtype == getattr(b, f).dtype, f
    assert sp.issparse(a.x) == sp.issparse(b.x)
    xa, xb = (a.x.toarray(), b.x.toarray()) if sp.issparse(a.x) else (np.asarray(a.x), np.asarray(b.x))
    assert xa.dtype == xb.dtype and np.array_equal(xa, xb)


@pytest.mark.parametrize("sparse", [False, True])
def test_save_then_load_is_the_same_graph(tmp_path, sparse):
    rng = np.random.default_rng(0)
    x = rng.random((30, 5)).astype(np.float32)
    x[x < 0.6] = 0
    s, r = rng.integers(0, 30, 80), rng.integers(0, 30, 80)
    with pytest.warns(DataNotice):
        g = fj.build_graph(s, r, sp.csr_matrix(x) if sparse else x, rng.integers(0, 3, 30), name="toy",
                           meta={"class_names": ["a", "b", "c"]})
    path = g.save(tmp_path / "toy")
    assert path.name == "toy.npz"
    back = fj.load(str(path))  # clean on the way back: no notices (symmetric, split given)
    _same(g, back)
    assert back.meta["class_names"] == ["a", "b", "c"]
    # the flat-API spelling writes the same bytes' worth of graph
    _same(g, fj.load(str(fj.save_graph(g, tmp_path / "again.npz"))))


def test_a_builtin_graph_round_trips(tmp_path):
    g = fj.load("csbm")
    _same(g, fj.load(str(g.save(tmp_path / "csbm.npz"))))


def test_a_directed_graph_is_refused_in_one_line(tmp_path):
    g = fj.load("csbm")
    keep = g.senders < g.receivers
    one_way = fj.Graph(name="d", senders=g.senders[keep], receivers=g.receivers[keep], x=g.x, y=g.y,
                       num_classes=g.num_classes, train_mask=g.train_mask, val_mask=g.val_mask, test_mask=g.test_mask)
    with pytest.raises(GraphError, match="not symmetric"):
        one_way.save(tmp_path / "d.npz")
