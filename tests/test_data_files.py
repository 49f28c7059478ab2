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
    with pytest.raises(DataFormatError, match="junk.npz: not a zip archive") as exc:
        load(tmp_path / "junk.npz")
    assert "allow_pickle" not in str(exc.value)  # no advice to unpickle a file from elsewhere


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


# ---- CSV graph -----------------------------------------------------------------------------

def _write_csv_graph(folder, n, s, r, x, y, split=None, ids=None, gz=False):
    folder.mkdir(exist_ok=True)
    ids = ids or [f"v{i}" for i in range(n)]
    head = ["id", "label"] + (["split"] if split is not None else []) + [f"f{j}" for j in range(x.shape[1])]
    lines = [",".join(head)]
    for i in range(n):
        row = [ids[i], "" if y[i] < 0 else str(y[i])] + ([split[i]] if split is not None else [])
        lines.append(",".join(row + [repr(float(v)) for v in x[i]]))
    (folder / "nodes.csv").write_text("\n".join(lines) + "\n")
    edges = "src,dst,weight\n" + "".join(f"{ids[a]},{ids[b]},1\n" for a, b in zip(s, r))
    if gz:
        import gzip
        with gzip.open(folder / "edges.csv.gz", "wt") as fh:
            fh.write(edges)
    else:
        (folder / "edges.csv").write_text(edges)


def test_csv_graph(tmp_path, toy):
    n, s, r, x, y = toy
    y = y.copy()
    y[5] = -1
    split = ["train" if i < 15 else "val" if i < 20 else "" if i == 5 else "test" for i in range(n)]
    split[5] = ""
    d = tmp_path / "mycsv"
    _write_csv_graph(d, n, s, r, x, y, split, gz=True)
    assert detect_format(d) == ("csv", d) and data_kind(d) == "graph"
    g = quiet(load, d)
    assert g.name == "mycsv" and g.meta["format"] == "csv" and g.meta["split"] == {"kind": "given"}
    np.testing.assert_allclose(g.x, x, rtol=1e-6)
    np.testing.assert_array_equal(g.y, y)
    assert_undirected(g, undirected_pairs(s, r))
    sp_arr = np.array(split)
    np.testing.assert_array_equal(g.train_mask, sp_arr == "train")
    np.testing.assert_array_equal(g.val_mask, sp_arr == "val")
    np.testing.assert_array_equal(g.test_mask, sp_arr == "test")
    # the edges file itself may be passed
    assert quiet(load, d / "edges.csv.gz").num_nodes == n


def test_csv_graph_class_names_and_errors(tmp_path, toy):
    n, s, r, x, y = toy
    d = tmp_path / "named"
    _write_csv_graph(d, n, s, r, x, y)
    text = (d / "nodes.csv").read_text().splitlines()
    names = ["cat", "dog", "emu"]
    text = [text[0]] + [",".join([ln.split(",")[0], names[y[i]]] + ln.split(",")[2:]) for i, ln in enumerate(text[1:])]
    (d / "nodes.csv").write_text("\n".join(text) + "\n")
    g = quiet(load, d)
    assert g.meta["class_names"] == names
    np.testing.assert_array_equal(g.y, y)
    # bad inputs: one line naming file, line and value
    bad = text[:]
    bad[3] = bad[3].replace(bad[3].split(",")[2], "abc", 1)
    (d / "nodes.csv").write_text("\n".join(bad) + "\n")
    with pytest.raises(DataFormatError, match=r"nodes.csv: line 4, column 'f0': feature value 'abc'"):
        load(d)
    (d / "nodes.csv").write_text("\n".join(text) + "\n")
    with open(d / "edges.csv", "a") as fh:
        fh.write("v1,nobody,1\n")
    with pytest.raises(DataFormatError, match=r"edges.csv: line \d+: node id 'nobody' is not in the node table"):
        load(d)
    d2 = tmp_path / "badsplit"
    _write_csv_graph(d2, n, s, r, x, y, split=["train"] * (n - 1) + ["holdout"])
    with pytest.raises(DataFormatError, match=r"line 31, column 'split': 'holdout' is not one of"):
        load(d2)
    d3 = tmp_path / "badlabel"
    _write_csv_graph(d3, n, s, r, x, np.where(np.arange(n) == 2, 3, y))
    with pytest.raises(DataFormatError, match=r"field y has 1 label\(s\) outside \[0, 3\), e.g. node 2 has label 3"):
        quiet(load, d3, num_classes=3)


# ---- OGB node-property directory -----------------------------------------------------------

def _write_ogb(d, n, s, r, x, y, schemes={"time": True}):
    (d / "raw").mkdir(parents=True)
    np.savetxt(d / "raw" / "edge.csv.gz", np.stack([s, r], 1), fmt="%d", delimiter=",")
    np.savetxt(d / "raw" / "node-feat.csv.gz", x, fmt="%.8g", delimiter=",")
    np.savetxt(d / "raw" / "node-label.csv.gz", y[:, None], fmt="%d", delimiter=",")
    np.savetxt(d / "raw" / "num-node-list.csv.gz", [n], fmt="%d")
    np.savetxt(d / "raw" / "num-edge-list.csv.gz", [len(s)], fmt="%d")
    perm = np.random.default_rng(0).permutation(n)
    parts = {"train": perm[:18], "valid": perm[18:24], "test": perm[24:]}
    for scheme in schemes:
        (d / "split" / scheme).mkdir(parents=True)
        for k, idx in parts.items():
            np.savetxt(d / "split" / scheme / f"{k}.csv.gz", idx, fmt="%d")
    return parts


def test_ogb_directory(tmp_path, toy):
    n, s, r, x, y = toy
    d = tmp_path / "ogbn_toy"
    parts = _write_ogb(d, n, s, r, x, y)
    assert data_kind(d) == "graph" and detect_format(d)[0] == "ogb"
    g = quiet(load_graph, str(d))
    assert g.meta["format"] == "ogb" and g.meta["split_scheme"] == "time" and g.meta["split"] == {"kind": "given"}
    np.testing.assert_allclose(g.x, x, rtol=1e-6)
    np.testing.assert_array_equal(g.y, y)
    assert_undirected(g, undirected_pairs(s, r))
    for key, part in (("train_mask", "train"), ("val_mask", "valid"), ("test_mask", "test")):
        assert set(np.flatnonzero(getattr(g, key))) == set(parts[part].tolist())
    np.savetxt(d / "raw" / "num-node-list.csv.gz", [n + 1], fmt="%d")
    with pytest.raises(DataFormatError, match=f"num-node-list.csv.gz: says {n + 1} but there are {n} nodes"):
        quiet(load, d)


def test_ogb_split_schemes(tmp_path, toy):
    n, s, r, x, y = toy
    d = tmp_path / "two"
    _write_ogb(d, n, s, r, x, y, schemes={"a": 1, "b": 1})
    with pytest.raises(DataFormatError, match=r"several split schemes \['a', 'b'\]; choose one with split_scheme="):
        load(d)
    assert quiet(load, d, split_scheme="b").meta["split_scheme"] == "b"
    with pytest.raises(DataFormatError, match="no split scheme 'c'"):
        load(d, split_scheme="c")


# ---- hypergraph incidence list ---------------------------------------------------------------

def test_hypergraph_incidence(tmp_path, toy):
    from fgl_jax.data.hypergraph import Hypergraph
    n, s, r, x, y = toy
    xb = (x > 0.5).astype(np.float32)
    d = tmp_path / "hyper"
    _write_csv_graph(d, n, [], [], xb, y)
    (d / "edges.csv").unlink()
    hyper = [[0, 1, 2], [3, 4], [2, 1, 0, 0], [5], [6, 7, 8, 9]]  # a duplicate and a singleton
    (d / "hyperedges.txt").write_text("# comment\n" + "\n".join(" ".join(f"v{i}" for i in e) for e in hyper)
                                      + "\n\nv10,v11\n")
    assert data_kind(d) == "hypergraph" and data_kind(d / "hyperedges.txt") == "hypergraph"
    with pytest.warns(DataNotice, match=r"2 of 6 hyperedge\(s\) dropped or merged"):
        hg = load(d)
    assert isinstance(hg, Hypergraph) and hg.feature_kind == "binary" and hg.meta["format"] == "hypergraph"
    got = sorted(tuple(e.tolist()) for e in hg.edge_lists())
    assert got == [(0, 1, 2), (3, 4), (6, 7, 8, 9), (10, 11)]
    np.testing.assert_array_equal(hg.x, xb)
    np.testing.assert_array_equal(hg.y, y)
    assert not hg.train_mask.any()
    with pytest.raises(ValueError, match="hypergraph dataset, not a graph: FedHGL"):
        load_graph(d)
    (d / "hyperedges.txt").write_text("v0 v99\n")
    with pytest.raises(DataFormatError, match=r"hyperedges.txt: line 1: node id 'v99' is not in nodes.csv"):
        load(d)


# ---- heterogeneous: node-type table + one edge file per relation --------------------------------

def test_hetero_tables(tmp_path):
    from fgl_jax.data.hetero import HeteroGraph
    d = tmp_path / "het"
    (d / "edges").mkdir(parents=True)
    authors = [f"a{i}" for i in range(10)]
    papers = [f"p{i}" for i in range(6)]
    rows = ["id,type,label"] + [f"{a},author,{i % 2}" for i, a in enumerate(authors)] + [f"{p},paper," for p in papers]
    rows.insert(3, "v0,venue,")                       # types interleaved: local ids follow row order per type
    (d / "node_types.csv").write_text("\n".join(rows) + "\n")
    writes = [(f"a{i}", f"p{i % 6}") for i in range(10)]
    cites = [("p0", "p1"), ("p2", "p3")]
    (d / "edges" / "writes.csv").write_text("src,dst\n" + "".join(f"{a},{b}\n" for a, b in writes))
    (d / "edges" / "cites.csv").write_text("src,dst\n" + "".join(f"{a},{b}\n" for a, b in cites + [("p4", "v0")]))
    assert data_kind(d) == "hetero"
    with pytest.warns(DataNotice, match="no split given"):
        g = load(d)
    assert isinstance(g, HeteroGraph) and g.target == "author" and g.node_types == ("author", "venue", "paper")
    assert g.num_nodes == (10, 1, 6) and g.num_classes == 2
    et = dict(zip(g.canonical_etypes, g.edges))
    assert set(et) == {("author", "writes", "paper"), ("paper", "cites", "paper"), ("paper", "cites", "venue")}
    s, t = et[("author", "writes", "paper")]
    assert sorted(zip(s.tolist(), t.tolist())) == sorted((int(a[1:]), int(p[1:])) for a, p in writes)
    np.testing.assert_array_equal(g.y, np.arange(10) % 2)
    assert (g.train_mask | g.val_mask | g.test_mask).all() and g.meta["split"]["kind"] == "stratified"
    (d / "node_types.csv").write_text("\n".join(rows + ["p9,paper,1"]) + "\n")
    with pytest.raises(DataFormatError, match="labelled nodes must all have one type"):
        load(d)


def test_system_loaders_take_paths(tmp_path, toy):
    """FedHGL's load_hypergraph takes a graph path (1-hop hyperedges, masks kept) and FedHGN's
    load_hetero a heterogeneous directory; each refuses the kind it cannot use."""
    from fgl_jax.data.hetero import load_hetero
    from fgl_jax.data.hypergraph import load_hypergraph
    n, s, r, x, y = toy
    p = tmp_path / "g.npz"
    tr = np.arange(n) < 10
    np.savez(p, edge_index=np.stack([s, r]), x=(x > 0.5).astype(np.float32), y=y, train_mask=tr,
             test_mask=~tr)
    hg = quiet(load_hypergraph, str(p))
    g = quiet(load, p)
    # 1-hop hyperedges {v} ∪ N(v), rebuilt here from the edge pairs
    nbrs = {v: {v} for v in range(n)}
    for a, b in undirected_pairs(s, r):
        nbrs[a].add(b)
        nbrs[b].add(a)
    assert sorted(set(tuple(sorted(e)) for e in nbrs.values())) == sorted(tuple(e.tolist()) for e in hg.edge_lists())
    assert hg.feature_kind == "binary" and hg.meta["split"] == {"kind": "given"}
    np.testing.assert_array_equal(hg.train_mask, tr)
    np.testing.assert_array_equal(hg.y, g.y)
    with pytest.raises(ValueError, match="is a graph, not a heterogeneous graph: FedHGN"):
        load_hetero(str(p))
    d = tmp_path / "het"
    (d / "edges").mkdir(parents=True)
    (d / "node_types.csv").write_text("id,type,label\na,u,0\nb,u,1\nc,v,\n")
    (d / "edges" / "r.csv").write_text("src,dst\na,c\nb,c\n")
    assert quiet(load_hetero, str(d), reverse=False).canonical_etypes == (("u", "r", "v"),)
    with pytest.raises(ValueError, match="heterogeneous graph; FedHGL takes"):
        load_hypergraph(str(d))


def test_csv_table_shape_errors(tmp_path):
    d = tmp_path / "t"
    d.mkdir()
    (d / "edges.csv").write_text("src,dst\na,b\n")
    for text, pattern in [
        ("id,f0\na,1\nb\n", r"nodes.csv: line 3 has 1 fields, the header has 2"),
        ("id,f0\na,1\n\nb,2\n", r"nodes.csv: line 3 is empty"),
        ("id,f0\na,1\na,2\n", r"node id 'a' appears twice \(data rows 1 and 2\)"),
        ("id,f0\na,1\nb,\n", r"1 missing or non-finite feature value\(s\), e.g. line 3, column 'f0'"),
        ("id,label\na,0\nb,1\n", r"no feature columns"),
    ]:
        (d / "nodes.csv").write_text(text)
        with pytest.raises(DataFormatError, match=pattern):
            quiet(load, d)
    (d / "nodes.csv").write_text("id,f0\na,1\nb,2\n\n\n")  # trailing blank lines are fine
    assert quiet(load, d).num_nodes == 2
    (d / "edges.csv").write_text("from,to\na,b\n")
    with pytest.raises(DataFormatError, match=r"edges.csv: header \['from', 'to'\] must name the columns src and dst"):
        load(d)
