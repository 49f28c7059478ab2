"""MUSAE loaders (Facebook, LastFM Asia): manifest statistics and malformed-row errors."""
import json

import numpy as np
import pytest
import scipy.sparse as sp

from fgl_jax.data import DataFormatError, load_facebook, load_lastfm_asia

# ---- manifest §2.6 / §2.7 ----------------------------------------------------------------------
FB_NODES, FB_EDGE_ROWS, FB_LOOPS, FB_FEATURES, FB_NNZ = 22470, 171002, 179, 4714, 314583
FB_CLASS_COUNTS = {0: 6495, 1: 3327, 2: 5768, 3: 6880}  # company, tvshow, politician, government
LFM_NODES, LFM_EDGES, LFM_CLASSES = 7624, 27806, 18


@pytest.mark.slow
@pytest.mark.data
def test_facebook_matches_manifest(data_dir):
    g = load_facebook(data_dir)
    assert g.num_nodes == FB_NODES and g.num_classes == 4
    assert sp.isspmatrix_csr(g.x) and g.x.shape == (FB_NODES, FB_FEATURES) and g.x.nnz == FB_NNZ
    assert g.x.dtype == np.float32 and set(np.unique(g.x.data)) == {1.0}
    assert dict(enumerate(np.bincount(g.y).tolist())) == FB_CLASS_COUNTS
    assert np.all(g.senders != g.receivers)
    assert g.num_undirected_edges() == FB_EDGE_ROWS - FB_LOOPS
    assert g.num_edges == 2 * (FB_EDGE_ROWS - FB_LOOPS)
    assert not (g.train_mask.any() or g.val_mask.any() or g.test_mask.any())
    g2 = load_facebook(data_dir, keep_self_loops=True)
    assert (g2.senders == g2.receivers).sum() == FB_LOOPS
    assert g2.num_undirected_edges(count_self_loops=True) == FB_EDGE_ROWS


@pytest.mark.data
def test_lastfm_matches_manifest(data_dir):
    g = load_lastfm_asia(data_dir)
    assert g.num_nodes == LFM_NODES and g.num_classes == LFM_CLASSES
    assert len(np.unique(g.y)) == LFM_CLASSES
    assert g.num_undirected_edges() == LFM_EDGES and g.num_edges == 2 * LFM_EDGES
    assert not g.train_mask.any()
    # degree one-hot: one 1 per row, in the bucket min(degree, 32)
    assert g.x.shape == (LFM_NODES, 33) and np.all(g.x.sum(1) == 1)
    assert np.array_equal(g.x.argmax(1), np.minimum(g.degrees(), 32))
    g1 = load_lastfm_asia(data_dir, features="constant")
    assert g1.x.shape == (LFM_NODES, 1) and np.all(g1.x == 1)
    g2 = load_lastfm_asia(data_dir, max_degree=4)
    assert g2.x.shape == (LFM_NODES, 5)


@pytest.mark.parametrize("kwargs,match", [
    (dict(features="identity"), "features must be one of"),
    (dict(features="real"), "not available offline"),
    (dict(max_degree=0), "max_degree must be a positive integer"),
    (dict(max_degree=2.5), "max_degree"),
])
def test_lastfm_bad_options(kwargs, match):
    with pytest.raises(ValueError, match=match):
        load_lastfm_asia("/nonexistent", **kwargs)


# ---- hand-built Facebook folder ------------------------------------------------------------------

def _write_fb(root, edges="id_1,id_2\n0,1\n1,2\n2,2\n1,0\n", features=None, target="id,target\n0,1\n2,0\n1,3\n"):
    d = root / "facebook"
    d.mkdir(parents=True, exist_ok=True)
    (d / "edges.csv").write_text(edges, encoding="utf-8")
    feats = {"0": [0, 2], "1": [1, 1], "2": []} if features is None else features
    (d / "features.json").write_text(feats if isinstance(feats, str) else json.dumps(feats), encoding="utf-8")
    (d / "new_target.csv").write_text(target, encoding="utf-8")
    return root


def test_tiny_facebook_by_hand(tmp_path):
    g = load_facebook(_write_fb(tmp_path), verify=False)
    np.testing.assert_array_equal(g.x.toarray(), [[1, 0, 1], [0, 1, 0], [0, 0, 0]])  # duplicate id stays 1
    assert g.y.tolist() == [1, 3, 0]  # target rows are out of order in the file
    assert g.num_classes == 4
    assert sorted(zip(g.senders.tolist(), g.receivers.tolist())) == [(0, 1), (1, 0), (1, 2), (2, 1)]
    g2 = load_facebook(tmp_path, verify=False, keep_self_loops=True)
    assert (2, 2) in set(zip(g2.senders.tolist(), g2.receivers.tolist()))


@pytest.mark.parametrize("edges,match", [
    ("src,dst\n0,1\n", r"edges.csv, line 1: header 'src,dst' does not match expected 'id_1,id_2'"),
    ("id_1,id_2\n0,1\n1,two\n", r"edges.csv, line 3: non-integer field in '1,two'"),
    ("id_1,id_2\n0,1\n0,1,2\n", r"edges.csv, line 3: expected 2 comma-separated columns, got 3: '0,1,2'"),
    ("id_1,id_2\n0,1\n\n1,2\n", r"edges.csv, line 3: expected 2 comma-separated columns, got 1: ''"),
    ("id_1,id_2\n0,1\n1,-2\n", r"edges.csv, line 3: negative id in '1,-2'"),
    ("id_1,id_2\n0,1\n1,7\n", r"edges.csv, line 3: node id 7 has no label row"),
    ("", r"edges.csv: empty file"),
])
def test_malformed_edges(tmp_path, edges, match):
    _write_fb(tmp_path, edges=edges)
    with pytest.raises(DataFormatError, match=match):
        load_facebook(tmp_path, verify=False)


@pytest.mark.parametrize("target,match", [
    ("id,label\n0,1\n", r"new_target.csv, line 1: header"),
    ("id,target\n0,1\n0,2\n2,0\n", r"new_target.csv, line 3: id 0 listed again \(first on line 2\)"),
    ("id,target\n0,1\n1,2\n5,0\n", r"new_target.csv, line 4: id 5 out of range.*ids must be 0..2"),
    ("id,target\n0,1\n1,x\n2,0\n", r"new_target.csv, line 3: non-integer field in '1,x'"),
])
def test_malformed_targets(tmp_path, target, match):
    _write_fb(tmp_path, target=target)
    with pytest.raises(DataFormatError, match=match):
        load_facebook(tmp_path, verify=False)


@pytest.mark.parametrize("features,match", [
    ('{"0": [1], "1": [2]', r"features.json, line 1 column \d+: invalid JSON"),
    ({"zero": [1]}, r"features.json: key 'zero' is not an integer node id"),
    ({"0": [1, "a"]}, r"features.json: node 0: expected a list of non-negative integer feature ids"),
    ({"0": [-1]}, r"features.json: node 0"),
    ({"9": [1]}, r"features.json: node id 9 outside"),
    ([[0, 1]], r"features.json: expected a JSON object"),
])
def test_malformed_features(tmp_path, features, match):
    _write_fb(tmp_path, features=features)
    with pytest.raises(DataFormatError, match=match):
        load_facebook(tmp_path, verify=False)


def test_crlf_and_bom_accepted(tmp_path):
    _write_fb(tmp_path, edges="\ufeffid_1,id_2\r\n0,1\r\n1,2\r\n")
    g = load_facebook(tmp_path, verify=False)
    assert g.num_undirected_edges() == 2
