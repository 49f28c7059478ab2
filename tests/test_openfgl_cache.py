"""Issue 48 item 6: --partition-file takes OpenFGL's cache directory (data_<i>.pt client subgraphs,
node_cls/default_split/{train,val,test}_<i>.pt masks), read without torch and without plain pickle.

No torch in CI, so the files are written here byte by byte in torch's zip layout (the one
`fgl_jax.data.torch_zip` documents, as torch 2.x writes it for OpenFGL 1.1.0):

    <archive>/data.pkl      pickle protocol 2: PyG Data = NEWOBJ(torch_geometric.data.data.Data) + BUILD
                            {"_store": NEWOBJ(GlobalStorage) + BUILD {"_mapping": {...}, "_parent": Data}};
                            a tensor = REDUCE(torch._utils._rebuild_tensor_v2, (BINPERSID("storage",
                            torch.<T>Storage, key, "cpu", numel), offset, size, stride, False,
                            collections.OrderedDict()))
    <archive>/data/<key>    the storage's little-endian bytes
    <archive>/byteorder, version, .format_version

The opcodes below are the ones the real files hold (checked against OpenFGL's Cora cache by
benchmarks/peers/openfgl/cached_partition.py, which also checks client sizes, cut edges and masks
against OpenFGL's own reading). The expected partition and masks are the ones the test chose when
writing the files."""
from __future__ import annotations

import dataclasses
import struct
import warnings
import zipfile
from pathlib import Path

import numpy as np
import pytest

import fgl_jax as fj
from fgl_jax.data import DataFormatError, UnsafePickleError
from fgl_jax.partition.base import PartitionError
from fgl_jax.partition.from_file import partition_from_file

STORAGE = {np.dtype("float32"): "FloatStorage", np.dtype("int64"): "LongStorage", np.dtype("bool"): "BoolStorage"}


# --------------------------------------------------------------------------- a tiny torch.save writer

def _glob(module: str, name: str) -> bytes:
    return b"c" + f"{module}\n{name}\n".encode()


def _str(s: str) -> bytes:
    b = s.encode()
    return b"X" + struct.pack("<I", len(b)) + b


def _int(v: int) -> bytes:
    return b"J" + struct.pack("<i", v)


def _tuple(items: list[bytes]) -> bytes:
    return b"(" + b"".join(items) + b"t"


class _Writer:
    """Pickles dicts / ints / strings / numpy arrays (as torch tensors) into torch's zip layout."""

    def __init__(self):
        self.storages: list[np.ndarray] = []

    def tensor(self, a: np.ndarray, transpose: bool = False) -> bytes:
        key = str(len(self.storages))
        base = np.ascontiguousarray(a.T if transpose else a)
        self.storages.append(base)
        pid = _tuple([_str("storage"), _glob("torch", STORAGE[a.dtype]), _str(key), _str("cpu"), _int(base.size)]) + b"Q"
        shape = list(a.shape)
        stride = [int(s) // a.dtype.itemsize for s in base.strides]
        if transpose:
            stride = stride[::-1]
        args = [pid, _int(0), _tuple([_int(v) for v in shape]), _tuple([_int(v) for v in stride]), b"\x89",
                _glob("collections", "OrderedDict") + b")R"]
        return _glob("torch._utils", "_rebuild_tensor_v2") + _tuple(args) + b"R"

    def value(self, v) -> bytes:
        if isinstance(v, np.ndarray):
            return self.tensor(v)
        if isinstance(v, bool):
            return b"\x88" if v else b"\x89"
        if isinstance(v, int):
            return _int(v)
        if isinstance(v, str):
            return _str(v)
        if isinstance(v, dict):
            return b"}(" + b"".join(self.value(k) + self.value(x) for k, x in v.items()) + b"u"
        raise TypeError(type(v))

    def data(self, fields: dict) -> bytes:
        """A PyG Data with these attributes, as torch_geometric 2.x pickles it."""
        store = (_glob("torch_geometric.data.storage", "GlobalStorage") + b")\x81" + b"}("
                 + _str("_mapping") + self.value(fields) + _str("_parent") + b"h\x01" + b"ub")
        return (_glob("torch_geometric.data.data", "Data") + b")\x81q\x01" + b"}("
                + _str("_edge_attr_cls") + _glob("torch_geometric.data.data", "DataEdgeAttr")
                + _str("_tensor_attr_cls") + _glob("torch_geometric.data.data", "DataTensorAttr")
                + _str("_store") + store + b"ub")


def write_pt(path: Path, body: bytes, storages: list[np.ndarray]) -> Path:
    """torch's zip layout around one pickled object (`body`, without PROTO / STOP)."""
    arch = path.stem
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as z:
        z.writestr(f"{arch}/data.pkl", b"\x80\x02" + body + b".")
        z.writestr(f"{arch}/byteorder", "little")
        for key, a in enumerate(storages):
            z.writestr(f"{arch}/data/{key}", a.astype(a.dtype.newbyteorder("<")).tobytes())
        z.writestr(f"{arch}/version", "3\n")
        z.writestr(f"{arch}/.format_version", "1")
    return path


def save_data(path: Path, fields: dict) -> Path:
    w = _Writer()
    body = w.data(fields)
    return write_pt(path, body, w.storages)


def save_tensor(path: Path, a: np.ndarray, transpose: bool = False) -> Path:
    w = _Writer()
    body = w.tensor(a, transpose)
    return write_pt(path, body, w.storages)


# --------------------------------------------------------------------------- the toy graph and cache

N, K = 14, 3


@pytest.fixture(scope="module")
def graph():
    rng = np.random.default_rng(3)
    pairs = rng.integers(0, N, (30, 2))
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fj.build_graph(pairs[:, 0], pairs[:, 1], rng.random((N, 5)).astype(np.float32),
                              np.arange(N) % 3, name="toy")


# client i's nodes in OpenFGL's local order (not sorted: global_map is what places them)
CLIENTS = [[5, 0, 9, 12, 3], [1, 13, 7, 10], [2, 4, 6, 8, 11]]


def write_cache(folder: Path, graph, clients=CLIENTS, labels=None) -> Path:
    folder.mkdir(parents=True)
    y = np.asarray(graph.y) if labels is None else labels
    split = folder / "node_cls" / "default_split"
    split.mkdir(parents=True)
    for i, nodes in enumerate(clients):
        save_data(folder / f"data_{i}.pt", {"x": np.asarray(graph.x)[nodes], "edge_index": np.zeros((2, 0), np.int64),
                                           "y": y[nodes].astype(np.int64),
                                           "global_map": {j: v for j, v in enumerate(nodes)},
                                           "num_global_classes": 3})
        m = len(nodes)
        save_tensor(split / f"train_{i}.pt", np.arange(m) % 3 == 0)
        save_tensor(split / f"val_{i}.pt", np.arange(m) % 3 == 1)
        save_tensor(split / f"test_{i}.pt", np.arange(m) % 3 == 2)
    return folder


def _expected():
    a = np.empty(N, np.int64)
    masks = [np.zeros(N, bool) for _ in range(3)]
    for i, nodes in enumerate(CLIENTS):
        a[nodes] = i
        for j, v in enumerate(nodes):
            masks[j % 3][v] = True
    return a, masks


@pytest.fixture(scope="module")
def cache(graph, tmp_path_factory):
    return write_cache(tmp_path_factory.mktemp("openfgl") / "subgraph_fl_louvain_1_Toy_client_3", graph)


# --------------------------------------------------------------------------- tests

def test_read_torch_rebuilds_tensors_views_and_data(tmp_path):
    a = np.arange(12, dtype=np.int64).reshape(3, 4)
    t = fj.read_torch(save_tensor(tmp_path / "t.pt", a, transpose=True))   # a strided (transposed) view
    assert t.shape == (3, 4) and t.dtype == np.int64
    np.testing.assert_array_equal(t.numpy(), a)
    d = fj.read_torch(save_data(tmp_path / "d.pt", {"y": np.array([2, 0, 1]), "global_map": {0: 7, 1: 3, 2: 5},
                                                    "num_global_classes": 3}))
    assert set(d) == {"y", "global_map", "num_global_classes"}
    np.testing.assert_array_equal(d["y"].numpy(), [2, 0, 1])
    assert d["global_map"] == {0: 7, 1: 3, 2: 5} and d["num_global_classes"] == 3


def test_partition_and_split_equal_the_files(graph, cache):
    got = fj.read_openfgl_cache(cache, graph)
    a, masks = _expected()
    np.testing.assert_array_equal(got.assignment, a)
    for m, want in zip(got.masks, masks):
        np.testing.assert_array_equal(m, want)
    assert got.split_dir == cache / "node_cls" / "default_split"
    # the same partition from the directory, one data_<i>.pt, or the split folder
    for p in (cache, cache / "data_1.pt", cache / "node_cls" / "default_split"):
        part = partition_from_file(graph, p, K)
        np.testing.assert_array_equal(part.assignment, a)
        assert part.method == "openfgl_cache"


def test_the_run_uses_the_cached_clients_and_split(graph, cache, tmp_path):
    from fgl_jax.systems.baseline.program import prepare
    path = graph.save(tmp_path / "toy.npz")
    cfg = fj.RunConfig(dataset=str(path), clients=K, partition_file=str(cache), split="openfgl")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prep = prepare(cfg)
    a, masks = _expected()
    np.testing.assert_array_equal(prep.partition.assignment, a)
    for name, want in zip(("train", "val", "test"), masks):
        np.testing.assert_array_equal(getattr(prep.graph, f"{name}_mask"), want)
    with pytest.raises(PartitionError, match=r"OpenFGL cached 3 clients .* but clients=4; pass --clients 3"):
        prepare(dataclasses.replace(cfg, clients=4))


def test_a_pickle_naming_os_system_is_refused_in_one_line(graph, tmp_path, monkeypatch):
    import os
    called = []
    monkeypatch.setattr(os, "system", lambda *a: called.append(a))
    bad = write_cache(tmp_path / "evil", graph)
    body = _glob("os", "system") + _tuple([_str("echo owned")]) + b"R"
    write_pt(bad / "data_1.pt", body, [])
    with pytest.raises(UnsafePickleError) as e:
        fj.read_torch(bad / "data_1.pt")
    msg = str(e.value)
    assert "\n" not in msg and "data_1.pt" in msg and "refusing to unpickle global 'os.system'" in msg
    with pytest.raises(PartitionError, match=r"data_1.pt: refusing to unpickle global 'os.system'"):
        partition_from_file(graph, bad, K)
    assert called == []


def test_other_globals_of_torch_and_pyg_are_refused(tmp_path):
    write_pt(tmp_path / "p.pt", _glob("torch", "load") + _tuple([_str("x")]) + b"R", [])
    with pytest.raises(UnsafePickleError, match=r"'torch.load'"):
        fj.read_torch(tmp_path / "p.pt")


@pytest.mark.parametrize("case, message", [
    ("labels", r"data_0.pt: node 5 has label 0 here but 2 in the graph"),
    ("missing", r"node 11 is in no client"),
    ("twice", r"data_1.pt: node 5 is also in client 0"),
])
def test_a_cache_of_another_graph_is_refused(graph, tmp_path, case, message):
    clients = [list(c) for c in CLIENTS]
    labels = None
    if case == "labels":
        labels = np.asarray(graph.y).copy()
        labels[5] = (labels[5] + 1) % 3
    elif case == "missing":
        clients[2].remove(11)
    else:
        clients[1].append(5)
    folder = write_cache(tmp_path / case, graph, clients, labels)
    with pytest.raises(PartitionError, match=message) as e:
        fj.read_openfgl_cache(folder, graph)
    assert "\n" not in str(e.value)


def test_malformed_archives_are_one_line(tmp_path):
    legacy = tmp_path / "old.pt"
    legacy.write_bytes(b"\x80\x02\x8a\x0a" + b"\0" * 20)   # torch's pre-1.6 format starts with a pickle
    with pytest.raises(DataFormatError, match=r"not a torch zip archive"):
        fj.read_torch(legacy)
    w = _Writer()
    body = w.tensor(np.arange(6, dtype=np.int64))
    w.storages[0] = w.storages[0][:2]                          # the storage member lies about its size
    with pytest.raises(DataFormatError, match=r"declares 6 elements of int64 but .* holds 16 bytes"):
        fj.read_torch(write_pt(tmp_path / "short.pt", body, w.storages))
    w = _Writer()
    body = w.tensor(np.arange(3, dtype=np.int64)) + b"}" + _str("_path") + _str("/etc/passwd") + b"sb"
    with pytest.raises(DataFormatError, match=r"BUILD on a tensor"):   # state may not re-point a tensor
        fj.read_torch(write_pt(tmp_path / "build.pt", body, w.storages))


def test_another_split_than_openfgl_says_the_cached_split_is_not_used(graph, cache, tmp_path, caplog):
    """The cache's own split is used only with --split openfgl; any other split says so (no silent choice)."""
    from fgl_jax.systems.baseline.program import prepare
    path = graph.save(tmp_path / "toy.npz")
    cfg = fj.RunConfig(dataset=str(path), clients=K, partition_file=str(cache), split="per_client")
    with warnings.catch_warnings(), caplog.at_level("WARNING", logger="fgl_jax.data"):
        warnings.simplefilter("ignore")
        prepare(cfg)
    assert any("cached split is used only with --split openfgl" in r.getMessage() for r in caplog.records)
