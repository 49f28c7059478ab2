"""FedHGL data: hypergraph container/builders (synthetic), MAGNN reader and dataset statistics (real data)."""
import shutil

import numpy as np
import pytest
import scipy.sparse as sp

from fgl_jax.data.hypergraph import (Hypergraph, HypergraphError, binarize, clean_hyperedges, from_edge_lists,
                                     graph_to_hypergraph, l1_normalize, load_hypergraph)
from fgl_jax.data.magnn import read_magnn
from fgl_jax.data.paths import DataChecksumError, DataFormatError, DatasetNotFoundError
from fgl_jax.graph import Graph, symmetrize


def test_clean_hyperedges_dedup_and_singletons():
    hn, hi, m = clean_hyperedges([[0, 1, 1], [1, 0], [2], [3, 2, 4], [4, 3, 2]], 5)
    assert m == 2
    assert [sorted(hn[hi == e].tolist()) for e in range(m)] == [[0, 1], [2, 3, 4]]


@pytest.mark.parametrize("edges,msg", [([[0, 1], []], "empty"), ([[0, 7]], "unknown node 7"), ([[-1, 0]], "unknown node -1")])
def test_bad_hyperedges(edges, msg):
    with pytest.raises(HypergraphError, match=msg):
        clean_hyperedges(edges, 5)


def test_hypergraph_validation():
    x = np.eye(4, dtype=np.float32)
    z = np.zeros(4, bool)
    y = np.zeros(4, np.int32)
    with pytest.raises(HypergraphError, match="unknown node 9"):
        Hypergraph("h", x, y, 2, np.array([0, 9]), np.array([0, 0]), 1, np.ones(1), "binary", z, z, z)
    with pytest.raises(HypergraphError, match="hyperedge 1 is empty"):
        Hypergraph("h", x, y, 2, np.array([0, 1]), np.array([0, 0]), 2, np.ones(2), "binary", z, z, z)
    with pytest.raises(HypergraphError, match="binary"):
        Hypergraph("h", x * 0.5, y, 2, np.array([0, 1]), np.array([0, 0]), 1, np.ones(1), "binary", z, z, z)
    with pytest.raises(HypergraphError, match="feature_kind"):
        Hypergraph("h", x, y, 2, np.array([0, 1]), np.array([0, 0]), 1, np.ones(1), "text", z, z, z)
    bad = x.copy()
    bad[1, 2] = np.nan
    with pytest.raises(HypergraphError, match="non-finite"):
        Hypergraph("h", bad, y, 2, np.array([0, 1]), np.array([0, 0]), 1, np.ones(1), "numeric", z, z, z)
    h = from_edge_lists("h", [[0, 1, 2], [2, 3]], x, y, 2, "binary")
    assert h.num_edges == 2 and h.nnz == 5
    np.testing.assert_array_equal(h.node_degrees(), [1, 1, 2, 1])
    np.testing.assert_array_equal(h.incidence().toarray(), [[1, 0], [1, 0], [1, 1], [0, 1]])


def test_graph_to_one_hop_hypergraph():
    s, r = symmetrize(np.array([0, 1, 3]), np.array([1, 2, 4]), 6)   # path 0-1-2, edge 3-4, node 5 isolated
    z = np.zeros(6, bool)
    g = Graph("g", s, r, np.eye(6, dtype=np.float32), np.zeros(6, np.int32), 1, z, z, z)
    h = graph_to_hypergraph(g, "binary")
    got = sorted(tuple(e.tolist()) for e in h.edge_lists())
    # {0,1}, {0,1,2}, {1,2}, {3,4} (from 3 and from 4, merged); isolated 5 keeps {5} (DHG from_graph_kHop)
    assert got == [(0, 1), (0, 1, 2), (1, 2), (3, 4), (5,)]
    h2 = graph_to_hypergraph(g, "binary", keep_isolated=False)
    assert sorted(tuple(e.tolist()) for e in h2.edge_lists()) == [(0, 1), (0, 1, 2), (1, 2), (3, 4)]


def test_feature_preprocessing():
    x = sp.csr_matrix(np.array([[2.0, 0, 2], [0, 0, 0]]))
    np.testing.assert_allclose(l1_normalize(x).toarray(), [[0.5, 0, 0.5], [0, 0, 0]])
    np.testing.assert_allclose(binarize(l1_normalize(x)).toarray(), [[1, 0, 1], [0, 0, 0]])


def test_read_magnn_real(data_dir):
    d = read_magnn("dblp", data_dir)
    assert d.adj.shape == (26128, 26128) and d.adj.nnz == 239566
    np.testing.assert_array_equal(d.type_offsets(), [0, 4057, 18385, 26108, 26128])
    assert [None if f is None else f.shape for f in d.features] == [(4057, 334), (14328, 4233), (7723, 50), None]
    assert d.block(0, 1).nnz == 19645 and d.block(1, 2).nnz == 85810 and d.split is None
    assert np.bincount(d.labels).tolist() == [1197, 745, 1109, 1006]
    m = read_magnn("IMDB", data_dir)
    assert m.type_names == ("movie", "director", "actor") and m.num_classes == 3
    assert {k: v.size for k, v in m.split.items()} == {"train": 400, "val": 400, "test": 3478}
    assert m.block(0, 1).nnz == 4278 and m.block(0, 2).nnz == 12828


def test_read_magnn_errors(tmp_path, data_dir, monkeypatch):
    with pytest.raises(ValueError, match="unknown name"):
        read_magnn("acm", data_dir)
    # no fallback to $FGL_JAX_DATA or the cache dir, so the missing-file error is what we see
    monkeypatch.delenv("FGL_JAX_DATA", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / "nothing").mkdir()  # a data directory without the files (a missing one is refused earlier)
    with pytest.raises(DatasetNotFoundError, match="adjM.npz"):
        read_magnn("imdb", tmp_path / "nothing")
    dst = tmp_path / "hetero" / "imdb_magnn"
    shutil.copytree(data_dir / "hetero" / "imdb_magnn", dst)
    (dst / "labels.npy").write_bytes((dst / "labels.npy").read_bytes()[:100])
    with pytest.raises(DataChecksumError, match="labels.npy"):
        read_magnn("imdb", tmp_path)
    with pytest.raises(DataFormatError, match="labels.npy"):
        read_magnn("imdb", tmp_path, verify=False)


@pytest.mark.parametrize("name,nodes,feats,classes,kind", [
    ("coraca", 2708, 1433, 7, "binary"), ("dblp4k", 4057, 334, 4, "numeric"), ("imdb4k", 4278, 3066, 3, "numeric"),
    ("cora", 2708, 1433, 7, "binary"), ("citeseer", 3327, 3703, 6, "binary")])
def test_real_hypergraph_statistics(data_dir, name, nodes, feats, classes, kind):
    h = load_hypergraph(name, data_dir)
    assert (h.num_nodes, h.num_features, h.num_classes, h.feature_kind) == (nodes, feats, classes, kind)
    if name == "cora":
        assert h.num_edges == 2590            # paper Table IV: 2590 1-hop hyperedges
    if name == "citeseer":
        assert h.num_edges == 2996            # paper Table IV, incl. the 48 isolated nodes' singletons
        assert (h.edge_sizes() == 1).sum() == 48
    if name == "coraca":
        assert h.num_edges == 970             # 1072 raw; duplicates and singletons removed (spec §7.1)
    if name == "dblp4k":
        # Table II's 22,051 = 14,328 paper + 7,723 term hyperedges *before* the authors' clean_edge_list
        # (singletons and duplicates dropped) -> 6,242; its |E*| / |v*| match on the cleaned set
        assert h.num_edges == 6242
    if name == "imdb4k":
        assert h.num_edges == 2810            # 2,081 + 5,257 = 7,338 raw
    sizes = h.edge_sizes()
    assert sizes.min() >= (1 if name in ("cora", "citeseer") else 2)
    assert len({tuple(e.tolist()) for e in h.edge_lists()}) == h.num_edges


def test_unknown_dataset():
    with pytest.raises(ValueError, match="unknown dataset"):
        load_hypergraph("news20")


def _write_hypergcn(folder, hyperedges, n=4):
    import pickle
    folder.mkdir(parents=True)
    with open(folder / "features.pickle", "wb") as fh:
        pickle.dump(sp.csr_matrix(np.eye(n, dtype=np.float32)), fh)
    with open(folder / "labels.pickle", "wb") as fh:
        pickle.dump([0, 1] * (n // 2), fh)
    with open(folder / "hypergraph.pickle", "wb") as fh:
        pickle.dump(hyperedges, fh)


@pytest.mark.parametrize("edges,msg", [({"a": [0, 1], "b": [2, 9]}, "unknown node 9"), ({"a": [0, 1], "b": []}, "empty")])
def test_hypergcn_file_with_bad_hyperedges(tmp_path, edges, msg):
    from fgl_jax.data.hypergraph import load_hypergcn
    _write_hypergcn(tmp_path / "hypergraph" / "coauthorship_cora", edges)
    with pytest.raises(DataFormatError, match=f"hypergraph.pickle.*{msg}"):
        load_hypergcn("coauthorship_cora", tmp_path, verify=False)
    with pytest.raises(DataChecksumError):
        load_hypergcn("coauthorship_cora", tmp_path, verify=True)


def test_hypergcn_loader_synthetic_ok(tmp_path):
    from fgl_jax.data.hypergraph import load_hypergcn
    _write_hypergcn(tmp_path / "hypergraph" / "coauthorship_cora", {"a": [0, 1], "b": [1, 2, 3], "c": [3]})
    h = load_hypergcn("coauthorship_cora", tmp_path, verify=False)
    assert h.num_edges == 2 and h.feature_kind == "binary" and h.num_classes == 2
