"""A user's graph files: path dispatch in `load`, `data_kind`, and each on-disk format.

Every file is written here from arrays the test builds; the loaded graph is compared with those
arrays (the independent reference), after the documented cleaning (undirected, no self-loops).
"""
import warnings
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from fgl_jax.data import (DataFormatError, DataNotice, DataPathNotFoundError, UnknownDatasetError, data_kind,
                          detect_format, is_path, load, load_graph, path_sha256)


def undirected_pairs(s, r):
    """Set of (min, max) pairs without self-loops: what the loader must keep of any edge list."""
    return {(min(int(a), int(b)), max(int(a), int(b))) for a, b in zip(s, r) if a != b}


def assert_undirected(g, pairs):
    got = {(int(a), int(b)) for a, b in zip(g.senders, g.receivers)}
    want = pairs | {(b, a) for a, b in pairs}
    assert got == want and g.num_edges == len(want)


def quiet(fn, *a, **k):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataNotice)
        return fn(*a, **k)


@pytest.fixture
def toy():
    rng = np.random.default_rng(0)
    n, f = 30, 6
    s = rng.integers(0, n, 80)
    r = rng.integers(0, n, 80)
    x = rng.random((n, f)).astype(np.float32)
    y = np.arange(n) % 3
    return n, s, r, x, y


# ---- dispatch ---------------------------------------------------------------------------------

def test_is_path_rules(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "cora").mkdir()          # a folder named like a registered dataset
    (tmp_path / "mygraph").mkdir()
    assert not is_path("cora")           # the registered name wins
    assert is_path("mygraph") and is_path("a/b") and is_path("x.npz") and is_path(tmp_path)
    assert not is_path("not_a_dataset")
    with pytest.raises(UnknownDatasetError):
        load("not_a_dataset")
    with pytest.raises(DataPathNotFoundError, match="missing.npz"):
        load("missing.npz")


def test_plain_npz_roundtrip_and_kind(tmp_path, toy):
    n, s, r, x, y = toy
    p = tmp_path / "g.npz"
    np.savez(p, edge_index=np.stack([s, r]), x=x, y=y)
    assert data_kind(str(p)) == "graph" and data_kind("cora") == "graph" and data_kind("aifb") == "hetero"
    assert detect_format(p)[0] == "npz"
    with pytest.warns(DataNotice, match="no split given"):
        g = load(str(p))
    assert g.name == "g" and g.num_nodes == n and g.num_classes == 3
    np.testing.assert_array_equal(g.x, x)
    np.testing.assert_array_equal(g.y, y)
    assert_undirected(g, undirected_pairs(s, r))
    assert g.meta["format"] == "npz:plain" and g.meta["split"]["kind"] == "stratified"
    # the default split: disjoint, covers every labelled node, stratified 60/20/20 of each class
    tr, va, te = g.train_mask, g.val_mask, g.test_mask
    assert not (tr & va).any() and not (tr & te).any() and not (va & te).any() and (tr | va | te).all()
    for c in range(3):
        assert (tr & (y == c)).sum() == 6 and (va & (y == c)).sum() == 2 and (te & (y == c)).sum() == 2
    # same seed -> same split; another seed -> another
    g2 = quiet(load, p)
    assert (g2.train_mask == tr).all()
    g3 = quiet(load, p, split_seed=1)
    assert g3.meta["split"]["seed"] == 1 and not (g3.train_mask == tr).all()
    # sha256 of the file, and of a directory (changes when a file changes)
    assert len(path_sha256(p)) == 64
    d1 = path_sha256(tmp_path)
    (tmp_path / "extra.txt").write_text("x")
    assert path_sha256(tmp_path) != d1


def test_plain_npz_sparse_x_masks_num_classes(tmp_path, toy):
    n, s, r, x, y = toy
    xs = sp.random(n, 40, density=0.1, format="csr", random_state=1, dtype=np.float32)
    tr = np.zeros(n, bool); tr[:10] = True
    te = np.zeros(n, bool); te[20:] = True
    p = tmp_path / "sparse.npz"
    np.savez(p, edge_index=np.stack([s, r]), x_data=xs.data, x_indices=xs.indices, x_indptr=xs.indptr,
             x_shape=np.array(xs.shape), y=y, train_mask=tr, test_mask=te, num_classes=np.int64(5))
    with pytest.warns(DataNotice, match="no val_mask"):
        g = load(p)
    assert sp.issparse(g.x) and (g.x != xs).nnz == 0
    assert g.num_classes == 5 and g.meta["split"] == {"kind": "given"}
    np.testing.assert_array_equal(g.train_mask, tr)
    np.testing.assert_array_equal(g.test_mask, te)
    assert not g.val_mask.any()


def _gnn_benchmark(path, adj, attr, labels, dense_attr=False, **extra):
    a = sp.csr_matrix(adj)
    arrays = dict(adj_data=a.data, adj_indices=a.indices, adj_indptr=a.indptr, adj_shape=np.array(a.shape))
    if dense_attr:
        arrays["attr_matrix"] = np.asarray(attr)
    else:
        m = sp.csr_matrix(attr)
        arrays.update(attr_data=m.data, attr_indices=m.indices, attr_indptr=m.indptr, attr_shape=np.array(m.shape))
    arrays["labels"] = labels
    arrays.update(extra)
    np.savez(path, **arrays)


class Evil:
    """An object a pickle would have to import from this test module: must never be unpickled."""

    def __reduce__(self):
        return (print, ("executed",))


def test_gnn_benchmark_layout(tmp_path, toy):
    n, s, r, x, y = toy
    adj = sp.coo_matrix((np.ones(len(s)), (s, r)), shape=(n, n))
    attr = sp.csr_matrix((x > 0.5).astype(np.float32))
    p = tmp_path / "cora_ml.npz"
    names = np.array(["a", "b", "c"], dtype=object)
    _gnn_benchmark(p, adj, attr, y, class_names=names, idx_to_node=np.array({0: "n0"}, dtype=object),
                   node_names=np.array([Evil()] * n, dtype=object))
    with pytest.warns(DataNotice) as rec:
        g = load(str(p))
    msgs = [str(w.message) for w in rec]
    assert any("node_names skipped" in m and "refusing to unpickle" in m for m in msgs)
    assert g.meta["format"] == "npz:gnn_benchmark" and g.meta["class_names"] == ["a", "b", "c"]
    assert "node_names" not in g.meta
    assert (g.x != attr).nnz == 0
    np.testing.assert_array_equal(g.y, y)
    assert_undirected(g, undirected_pairs(s, r))
    # dense attr_matrix and one-hot CSR labels
    onehot = sp.csr_matrix(np.eye(3)[y])
    p2 = tmp_path / "dense.npz"
    _gnn_benchmark(p2, adj, x, y, dense_attr=True)
    arrs = dict(np.load(p2))
    del arrs["labels"]
    arrs.update(labels_data=onehot.data, labels_indices=onehot.indices, labels_indptr=onehot.indptr,
                labels_shape=np.array(onehot.shape))
    np.savez(p2, **arrs)
    g2 = quiet(load, p2)
    np.testing.assert_array_equal(g2.x, x)
    np.testing.assert_array_equal(g2.y, y)


def test_npz_bad_files(tmp_path, toy):
    n, s, r, x, y = toy
    p = tmp_path / "bad.npz"
    np.savez(p, foo=np.zeros(3))
    with pytest.raises(DataFormatError, match="unrecognised .npz layout.*foo"):
        load(p)
    np.savez(p, edge_index=np.stack([s, r])[:, :, None], x=x)
    with pytest.raises(DataFormatError, match="edge_index has shape"):
        load(p)
    np.savez(p, edge_index=np.stack([s, r]))
    with pytest.raises(DataFormatError, match="no node features"):
        load(p)
    adj = sp.coo_matrix((np.ones(len(s)), (s, r)), shape=(n, n))
    _gnn_benchmark(p, adj, x[:-1], y, dense_attr=True)
    with pytest.raises(DataFormatError, match="rows but the adjacency has"):
        load(p)
    (tmp_path / "junk.npz").write_bytes(b"not a zip")
    with pytest.raises(DataFormatError, match="cannot read"):
        load(tmp_path / "junk.npz")


def test_load_graph_refuses_other_kinds_by_path(tmp_path):
    d = tmp_path / "het"
    d.mkdir()
    (d / "node_types.csv").write_text("node,type\n")
    assert data_kind(d) == "hetero"
    with pytest.raises(ValueError, match="hetero dataset, not a graph: FedHGN"):
        load_graph(d)
    with pytest.raises(DataFormatError, match="no known layout"):
        load(tmp_path)  # holds only the sub-folder


def test_unknown_option_lists_accepted(tmp_path, toy):
    n, s, r, x, y = toy
    p = tmp_path / "g.npz"
    np.savez(p, edge_index=np.stack([s, r]), x=x, y=y)
    with pytest.raises(ValueError, match="unknown option.*bogus.*Accepted options: .*on_directed"):
        load(p, bogus=1)
