"""Issue 48 item 1: every .npz layout (GNN-benchmark in both spellings, Platonov heterophily), with
counts checked against a plain NumPy reading of the same arrays."""
from __future__ import annotations

import glob
import os
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

from fgl_jax.data import DataFormatError, DataNotice, load, load_npz
from fgl_jax.data.npz import NPZ_LAYOUTS, fixed_split

HETEROPHILY = sorted(glob.glob(os.path.join(os.environ.get("FGL_JAX_DATA", "/work/shared/data"), "heterophily", "*.npz")))

# a 5-node graph: a path 0-1-2-3 (stored one direction) and an isolated node 4 with a self-loop
ADJ = sp.csr_matrix((np.ones(4), ([0, 1, 2, 4], [1, 2, 3, 4])), shape=(5, 5))
ATTR = sp.csr_matrix(np.array([[1, 0, 0], [0, 1, 0], [0, 0, 1], [1, 1, 0], [0, 1, 1]], np.float32))
LABELS = np.array([0, 1, 1, 0, 2])


def _csr_parts(m: sp.csr_matrix, stem: str, sep: str) -> dict:
    return {f"{stem}{sep}data": m.data, f"{stem}{sep}indices": m.indices, f"{stem}{sep}indptr": m.indptr,
            f"{stem}{sep}shape": np.array(m.shape)}


def _undirected_pairs(u: np.ndarray, v: np.ndarray) -> set:
    return {(min(a, b), max(a, b)) for a, b in zip(u.tolist(), v.tolist()) if a != b}


def _dense(x) -> np.ndarray:
    return x.toarray() if sp.issparse(x) else np.asarray(x)


def _check_small(g):
    assert g.num_nodes == 5
    assert g.num_edges == 2 * 3  # 0-1, 1-2, 2-3 both ways; the self-loop dropped
    assert _undirected_pairs(np.asarray(g.senders), np.asarray(g.receivers)) == {(0, 1), (1, 2), (2, 3)}
    np.testing.assert_array_equal(_dense(g.x), ATTR.toarray())
    np.testing.assert_array_equal(np.asarray(g.y), LABELS)
    assert g.num_classes == 3


@pytest.mark.parametrize("stems", [("adj", "attr", "_"), ("adj_matrix", "attr_matrix", ".")],
                         ids=["underscore", "dotted"])
def test_gnn_benchmark_both_spellings(tmp_path, stems):
    adj, attr, sep = stems
    p = tmp_path / "g.npz"
    np.savez(p, **_csr_parts(ADJ, adj, sep), **_csr_parts(ATTR, attr, sep), labels=LABELS)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataNotice)
        g = load_npz(p)
    _check_small(g)
    assert g.meta["format"] == "npz:gnn_benchmark"


def test_gnn_benchmark_dense_attr_and_none_placeholders(tmp_path):
    # files written from Python objects store absent parts as a pickled None
    p = tmp_path / "g.npz"
    none = np.array(None, dtype=object)
    np.savez(p, **_csr_parts(ADJ, "adj_matrix", "."), attr_matrix=ATTR.toarray(), labels=LABELS,
             attr_text=none, edge_attr_matrix=none, node_names=none)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataNotice)
        g = load_npz(p)
    _check_small(g)
    assert "node_names" not in g.meta


def test_none_placeholder_for_features_reads_as_absent(tmp_path):
    # attr_matrix = None and no CSR parts: "no node features", not a pickle error
    p = tmp_path / "g.npz"
    np.savez(p, **_csr_parts(ADJ, "adj_matrix", "."), attr_matrix=np.array(None, dtype=object), labels=LABELS)
    with pytest.raises(DataFormatError, match=r"g\.npz: no node features"):
        load_npz(p)


class _Boom:
    calls = 0

    def __reduce__(self):
        return (_boom, ())


def _boom():  # would run if the file were read with plain pickle
    _Boom.calls += 1
    return None


def test_a_placeholder_naming_code_is_never_run(tmp_path):
    p = tmp_path / "g.npz"
    arr = np.empty((), dtype=object)
    arr[()] = _Boom()
    np.savez(p, **_csr_parts(ADJ, "adj", "_"), **_csr_parts(ATTR, "attr", "_"), labels=LABELS, attr_text=arr)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataNotice)
        g = load_npz(p)
    _check_small(g)
    assert _Boom.calls == 0


def test_no_layout_fits_lists_every_layout(tmp_path):
    p = tmp_path / "g.npz"
    np.savez(p, foo=np.zeros(3), bar=np.ones(2))
    with pytest.raises(DataFormatError) as exc:
        load_npz(p)
    msg = str(exc.value)
    assert "\n" not in msg and "keys: bar, foo" in msg
    for layout in NPZ_LAYOUTS:
        assert layout in msg
    for key in ("edge_index", "adj_data", "adj_matrix.data", "node_features", "train_masks"):
        assert key in msg


def _heterophily_file(p, k=3, n=6):
    rng = np.random.default_rng(0)
    y = np.array([0, 1, 0, 1, 2, 2])
    tr = np.zeros((k, n), bool)
    va = np.zeros((k, n), bool)
    te = np.zeros((k, n), bool)
    for i in range(k):
        perm = rng.permutation(n)
        tr[i, perm[:3]], va[i, perm[3:4]], te[i, perm[4:]] = True, True, True
    np.savez(p, node_features=np.eye(n, dtype=np.float32), node_labels=y,
             edges=np.array([[0, 1], [1, 2], [2, 0], [3, 4], [4, 5]]), train_masks=tr, val_masks=va, test_masks=te)
    return tr, va, te


def test_heterophily_layout_small(tmp_path):
    p = tmp_path / "h.npz"
    tr, va, te = _heterophily_file(p)
    with pytest.warns(DataNotice, match="directed"):
        g = load_npz(p)
    assert g.meta["format"] == "npz:heterophily"
    assert g.num_nodes == 6 and g.num_edges == 10 and g.num_classes == 3
    np.testing.assert_array_equal(g.train_mask, tr[0])
    g2 = load_npz(p, split_index=2)
    np.testing.assert_array_equal(g2.train_mask, tr[2])
    np.testing.assert_array_equal(g2.test_mask, te[2])
    g1 = fixed_split(g, 1)
    np.testing.assert_array_equal(g1.val_mask, va[1])
    assert g1.meta["split"] == {"kind": "fixed", "index": 1, "of": 3}
    with pytest.raises(DataFormatError, match=r"h\.npz: split_index 3 is out of range: the file has 3 fixed splits"):
        load_npz(p, split_index=3)


def test_heterophily_overlapping_split_is_refused_naming_it(tmp_path):
    p = tmp_path / "h.npz"
    tr, va, te = _heterophily_file(p)
    va[1] = tr[1]
    np.savez(p, node_features=np.eye(6, dtype=np.float32), node_labels=np.array([0, 1, 0, 1, 2, 2]),
             edges=np.array([[0, 1]]), train_masks=tr, val_masks=va, test_masks=te)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataNotice)
        with pytest.raises(DataFormatError, match=r"h\.npz \(split 1\): train_mask and val_mask overlap"):
            load_npz(p)


def test_split_index_on_a_file_without_splits(tmp_path):
    p = tmp_path / "g.npz"
    np.savez(p, edge_index=np.array([[0, 1], [1, 0]]), x=np.eye(2), y=np.array([0, 1]))
    with pytest.raises(DataFormatError, match=r"g\.npz: split_index 1 given but the file \(plain layout\) has no fixed"):
        load_npz(p, split_index=1)


@pytest.mark.skipif(not HETEROPHILY, reason="no heterophily data under FGL_JAX_DATA")
@pytest.mark.parametrize("path", HETEROPHILY, ids=[os.path.basename(p) for p in HETEROPHILY])
def test_every_heterophily_file_against_numpy(path):
    z = np.load(path)
    x, y, e = z["node_features"], z["node_labels"], z["edges"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataNotice)
        g = load(path)
    assert g.num_nodes == x.shape[0]
    assert _dense(g.x).shape == x.shape
    assert g.num_classes == int(y.max()) + 1
    np.testing.assert_array_equal(np.asarray(g.y), y)
    pairs = {(min(a, b), max(a, b)) for a, b in e.tolist() if a != b}
    assert g.num_edges == 2 * len(pairs)
    k = z["train_masks"].shape[0]
    assert g.meta["split"] == {"kind": "fixed", "index": 0, "of": k}
    for key, short in (("train_masks", "train"), ("val_masks", "val"), ("test_masks", "test")):
        np.testing.assert_array_equal(g.meta["fixed_splits"][short], z[key])
    np.testing.assert_array_equal(g.train_mask, z["train_masks"][0])


def test_inspect_names_the_fixed_splits(tmp_path, capsys):
    from fgl_jax.cli import main
    p = tmp_path / "h.npz"
    _heterophily_file(p, k=4)
    assert main(["inspect", str(p)]) == 0
    out = capsys.readouterr().out
    assert "nodes:      6" in out
    assert "split 0 of 4 fixed splits (--split-index i | all)" in out
