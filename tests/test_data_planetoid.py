"""Planetoid loader: manifest statistics on the real files, hand-built files for the semantics."""
import collections
import pickle

import numpy as np
import pytest
import scipy.sparse as sp

from fgl_jax.data import DataFormatError, UnsafePickleError, load_planetoid, read_planetoid, safe_load

# ---- numbers from /work/shared/data/README.md (manifest, §1 and §2.1) -----------------------------
CORA = dict(nodes=2708, undirected=5278, features=1433, classes=7, adjacency_entries=10858, self_loops=0,
            train=140, test=1000)
CITESEER = dict(nodes=3327, undirected=4552, features=3703, classes=6, self_loops=124, with_features=3312,
                isolated=48, train=120, test=1000)
# Non-zeros of the same bag-of-words matrices as published with HyperGCN (manifest §2.2).
CORA_NNZ, CITESEER_NNZ = 49216, 105165
# Cora class sizes (PyG's Planetoid Cora; the HiFGL spec §4 quotes the 217 and 180).
CORA_CLASS_SIZES = [351, 217, 418, 818, 426, 298, 180]


def _edge_set(g):
    return set(zip(g.senders.tolist(), g.receivers.tolist()))


@pytest.mark.data
def test_cora_matches_manifest(data_dir):
    g = load_planetoid("cora", data_dir)
    raw = read_planetoid("cora", data_dir)
    assert (g.num_nodes, g.num_features, g.num_classes) == (CORA["nodes"], CORA["features"], CORA["classes"])
    assert g.num_undirected_edges() == CORA["undirected"]
    assert g.num_edges == 2 * CORA["undirected"]
    assert raw.num_adjacency_entries == CORA["adjacency_entries"]
    assert raw.num_self_loops == CORA["self_loops"] and len(raw.missing_test_ids) == 0
    assert np.all(g.senders != g.receivers)
    assert np.all(g.degrees() > 0)  # "no isolated nodes"
    assert sp.isspmatrix_csr(g.x) and g.x.dtype == np.float32 and g.x.nnz == CORA_NNZ
    assert set(np.unique(g.x.data)) == {1.0}
    assert np.bincount(g.y).tolist() == CORA_CLASS_SIZES
    assert g.y.dtype == np.int32 and g.senders.dtype == np.int32
    # standard split
    assert np.flatnonzero(g.train_mask).tolist() == list(range(140))
    assert np.flatnonzero(g.val_mask).tolist() == list(range(140, 640))
    assert g.test_mask.sum() == CORA["test"] and np.flatnonzero(g.test_mask).min() == 1708
    assert not (g.train_mask & g.val_mask).any() and not (g.val_mask & g.test_mask).any()


@pytest.mark.data
def test_citeseer_matches_manifest(data_dir):
    g = load_planetoid("CiteSeer", data_dir)
    raw = read_planetoid("citeseer", data_dir)
    assert (g.num_nodes, g.num_features, g.num_classes) == (CITESEER["nodes"], CITESEER["features"],
                                                             CITESEER["classes"])
    assert g.num_undirected_edges() == CITESEER["undirected"]
    assert np.all(g.senders != g.receivers)  # self-loops kept out by default ...
    assert raw.num_self_loops == CITESEER["self_loops"]  # ... but reported
    assert (g.degrees() == 0).sum() == CITESEER["isolated"]
    # 15 test ids without a test row: zero features, no label, in no mask
    assert len(raw.missing_test_ids) == CITESEER["nodes"] - CITESEER["with_features"] == 15
    no_label = np.flatnonzero(g.y < 0)
    assert no_label.tolist() == raw.missing_test_ids.tolist()
    assert g.x[no_label].nnz == 0
    assert (np.diff(g.x.indptr) > 0).sum() == CITESEER["with_features"]
    assert g.x.nnz == CITESEER_NNZ
    for m in (g.train_mask, g.val_mask, g.test_mask):
        assert not m[no_label].any()
    assert (g.train_mask.sum(), g.val_mask.sum(), g.test_mask.sum()) == (120, 500, 1000)
    # PyG labels the 15 padded nodes 0; the HiFGL spec's "CiteSeer class of 264" is 249 + those 15.
    assert (g.y == 0).sum() + len(no_label) == 264


@pytest.mark.data
def test_citeseer_keep_self_loops(data_dir):
    g = load_planetoid("citeseer", data_dir, keep_self_loops=True)
    loops = g.senders == g.receivers
    assert loops.sum() == CITESEER["self_loops"]
    assert g.num_edges == 2 * CITESEER["undirected"] + CITESEER["self_loops"]
    assert g.num_undirected_edges(count_self_loops=True) == 4676  # manifest: "4,676 with self-loops"


@pytest.mark.data
@pytest.mark.parametrize("name", ["cora", "citeseer"])
def test_test_rows_are_reordered_by_test_index(data_dir, name):
    """Row i of tx / ty belongs to node test.index[i] (read independently of the loader)."""
    g = load_planetoid(name, data_dir)
    tx = safe_load(data_dir / "planetoid" / f"ind.{name}.tx")
    ty = safe_load(data_dir / "planetoid" / f"ind.{name}.ty")
    idx = [int(line) for line in (data_dir / "planetoid" / f"ind.{name}.test.index").read_text().split()]
    assert idx != sorted(idx)  # the file really is unsorted, so the test can fail
    for i in (0, 1, 2, 500, 999):
        np.testing.assert_array_equal(g.x[idx[i]].toarray(), tx[i].toarray())
        assert g.y[idx[i]] == int(np.argmax(ty[i]))
    allx = safe_load(data_dir / "planetoid" / f"ind.{name}.allx")
    assert (g.x[: allx.shape[0]] != allx).nnz == 0


@pytest.mark.data
def test_edges_symmetric_and_cover_adjacency_lists(data_dir):
    g = load_planetoid("cora", data_dir)
    edges = _edge_set(g)
    assert edges == {(r, s) for s, r in edges}
    adj = safe_load(data_dir / "planetoid" / "ind.cora.graph")
    for u, nbrs in list(adj.items())[:200]:
        for v in nbrs:
            assert (u, v) in edges and (v, u) in edges


# ---- hand-built Planetoid files -------------------------------------------------------------------

def _write_tiny(root, test_index=(4, 3), graph=None, y_rows=None, index_text=None, extra=None):
    """7 nodes: allx = nodes 0..2, tx rows = nodes `test_index` (in file order), x/y = node 0..1."""
    d = root / "planetoid"
    d.mkdir(parents=True, exist_ok=True)
    f = 4
    allx = sp.csr_matrix(np.array([[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0]], np.float32))
    ally = np.array([[1, 0, 0], [0, 1, 0], [0, 0, 1]], np.int32) if y_rows is None else y_rows
    tx = sp.csr_matrix(np.array([[0, 0, 0, 1], [1, 1, 0, 0]][: len(test_index)], np.float32).reshape(-1, f))
    ty = np.array([[0, 1, 0], [1, 0, 0]][: len(test_index)], np.int32)
    if graph is None:
        graph = collections.defaultdict(list, {0: [1], 1: [0, 2, 0], 2: [1, 2], 3: [4], 4: [3], 5: [], 6: [4]})
    objs = {"x": allx[:2], "y": ally[:2], "allx": allx, "ally": ally, "tx": tx, "ty": ty, "graph": graph}
    objs.update(extra or {})
    for k, v in objs.items():
        (d / f"ind.cora.{k}").write_bytes(pickle.dumps(v, protocol=2))
    text = "\n".join(str(i) for i in test_index) + "\n" if index_text is None else index_text
    (d / "ind.cora.test.index").write_text(text)
    return root


def test_tiny_planetoid_by_hand(tmp_path):
    root = _write_tiny(tmp_path, test_index=(6, 4))
    raw = read_planetoid("cora", root, verify=False)
    # N = max(len(allx), max(test)+1) = 7; tx row 0 -> node 6, row 1 -> node 4; node 3 and 5 have no row
    expected_x = np.array([[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 0],
                           [1, 1, 0, 0], [0, 0, 0, 0], [0, 0, 0, 1]], np.float32)
    np.testing.assert_array_equal(raw.x.toarray(), expected_x)
    assert raw.y.tolist() == [0, 1, 2, -1, 0, -1, 1]
    assert raw.num_classes == 3
    assert raw.missing_test_ids.tolist() == [5]
    # undirected pairs: (0,1) (1,2) (2,2) (3,4) (4,6); entries: 1+3+2+1+1+0+1 = 9
    assert raw.edges.tolist() == [[0, 1], [1, 2], [2, 2], [3, 4], [4, 6]]
    assert raw.num_adjacency_entries == 9 and raw.num_self_loops == 1 and raw.num_train == 2
    # the standard split needs 500 validation nodes, which 7 nodes cannot give
    with pytest.raises(DataFormatError, match="500"):
        load_planetoid("cora", root, verify=False)


def test_bad_index_line_names_file_and_line(tmp_path):
    _write_tiny(tmp_path, index_text="4\nthree\n")
    with pytest.raises(DataFormatError, match=r"ind\.cora\.test\.index, line 2: .*'three'"):
        read_planetoid("cora", tmp_path, verify=False)


def test_index_rows_mismatch(tmp_path):
    _write_tiny(tmp_path, index_text="4\n")
    with pytest.raises(DataFormatError, match="1 ids but .*ind.cora.tx has 2 rows"):
        read_planetoid("cora", tmp_path, verify=False)


def test_test_id_colliding_with_allx(tmp_path):
    _write_tiny(tmp_path, test_index=(4, 1))
    with pytest.raises(DataFormatError, match="test id 1 collides"):
        read_planetoid("cora", tmp_path, verify=False)


def test_graph_id_out_of_range(tmp_path):
    _write_tiny(tmp_path, graph={0: [1], 1: [0, 99]})
    with pytest.raises(DataFormatError, match="ind.cora.graph: node id 99"):
        read_planetoid("cora", tmp_path, verify=False)


def test_graph_bad_neighbour(tmp_path):
    _write_tiny(tmp_path, graph={0: [1, "x"], 1: [0]})
    with pytest.raises(DataFormatError, match=r"neighbour 'x' of node 0"):
        read_planetoid("cora", tmp_path, verify=False)


def test_not_one_hot_labels(tmp_path):
    _write_tiny(tmp_path, y_rows=np.array([[1, 0, 0], [0, 1, 0], [1, 0, 1]], np.int32))
    with pytest.raises(DataFormatError, match=r"ind\.cora\.ally: row 2 is not one-hot: \[1, 0, 1\]"):
        read_planetoid("cora", tmp_path, verify=False)


def test_wrong_object_type(tmp_path):
    _write_tiny(tmp_path, extra={"allx": np.zeros((3, 4))})
    with pytest.raises(DataFormatError, match="ind.cora.allx: expected a scipy sparse matrix"):
        read_planetoid("cora", tmp_path, verify=False)


def test_malicious_planetoid_file_refused(tmp_path):
    class Evil:
        def __reduce__(self):
            return (print, ("should never run",))

    _write_tiny(tmp_path, extra={"graph": Evil()})
    pattern = r"ind.cora.graph: refusing .*'__builtin__.print' \(Python 3: 'builtins.print'\)"
    with pytest.raises(UnsafePickleError, match=pattern):
        read_planetoid("cora", tmp_path, verify=False)


def test_unknown_planetoid_name(tmp_path):
    with pytest.raises(ValueError, match="pubmedx"):
        load_planetoid("pubmedx")
    # PubMed is accepted as a name, and its absence is reported file by file with where we looked
    from fgl_jax.data import DatasetNotFoundError
    with pytest.raises(DatasetNotFoundError, match="ind.pubmed.allx"):
        load_planetoid("pubmed", data_dir=tmp_path)


@pytest.mark.filterwarnings("ignore::fgl_jax.data.DataNotice")
@pytest.mark.parametrize("name", ["cora", "citeseer"])
def test_the_raw_files_given_as_a_path_are_the_registered_dataset(data_dir, name):
    """`--dataset .../ind.<name>.test.index` (the Planetoid layout as a path) gives exactly the graph
    the registered name gives: edges, features, labels and the standard split."""
    from fgl_jax.data import load
    path = data_dir / "planetoid" / f"ind.{name}.test.index"
    if not path.exists():
        pytest.skip(f"{path} is not on this machine")
    got, want = load(str(path)), load_planetoid(name, data_dir)
    assert got.meta["format"] == "planetoid"
    assert _edge_set(got) == _edge_set(want)
    assert (got.x != want.x).nnz == 0 and np.array_equal(got.y, want.y) and got.num_classes == want.num_classes
    for m in ("train_mask", "val_mask", "test_mask"):
        assert np.array_equal(getattr(got, m), getattr(want, m))


def test_a_folder_with_two_planetoid_sets_names_both(data_dir):
    from fgl_jax.data import load
    if not (data_dir / "planetoid" / "ind.cora.test.index").exists():
        pytest.skip("no planetoid data here")
    with pytest.raises(DataFormatError, match=r"holds 2 datasets in the planetoid layout \(ind.citeseer.test.index, "
                                              r"ind.cora.test.index\); pass one of these files"):
        load(str(data_dir / "planetoid"))
