"""The dataset registry: names, options, list_datasets, unknown names, extension by others."""
import numpy as np
import pytest

from fgl_jax.data import (DatasetNotFoundError, UnknownDatasetError, csbm, list_datasets, load, load_planetoid,
                          register)
from fgl_jax.data import registry as reg

BUILTIN = ["citeseer", "cora", "csbm", "facebook", "lastfm_asia"]


@pytest.fixture
def clean_env(monkeypatch, tmp_path):
    monkeypatch.delenv("FGL_JAX_DATA", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))


@pytest.fixture
def scratch_registry():
    from fgl_jax import registry
    registry.load_kind("dataset")
    saved = dict(registry._ENTRIES["dataset"])
    yield
    registry._ENTRIES["dataset"].clear()
    registry._ENTRIES["dataset"].update(saved)


def test_builtin_names():
    assert all(name in reg.dataset_names() for name in BUILTIN)


def test_load_csbm_case_insensitive_with_options(clean_env):
    g = load("CSBM", num_nodes=60, num_classes=3, seed=4)
    ref = csbm(num_nodes=60, num_classes=3, seed=4)
    assert g.num_nodes == 60 and np.array_equal(g.senders, ref.senders) and np.array_equal(g.x, ref.x)


def test_unknown_name(clean_env):
    with pytest.raises(UnknownDatasetError) as exc:
        load("corra")
    err = exc.value
    assert isinstance(err, KeyError)
    msg = str(err)
    assert "'corra'" in msg and "Did you mean 'cora'?" in msg
    for name in BUILTIN:
        assert name in msg
    with pytest.raises(UnknownDatasetError, match="Known datasets") as exc2:
        load("zzzzzz")
    assert "Did you mean" not in str(exc2.value)


def test_bad_option_names_accepted_ones():
    with pytest.raises(ValueError, match="dataset 'csbm': .*'num_node'.*Accepted options: num_nodes"):
        load("csbm", num_node=10)
    with pytest.raises(ValueError, match="homophily"):
        load("csbm", homophily=2.0)


def test_missing_files_error_through_load(clean_env, tmp_path):
    (tmp_path / "empty").mkdir()  # an existing --data-dir without the files (a missing one is refused)
    with pytest.raises(DatasetNotFoundError, match="facebook/edges.csv"):
        load("Facebook", data_dir=tmp_path / "empty")


@pytest.mark.data
def test_load_cora_equals_loader(data_dir):
    a, b = load("Cora", data_dir=data_dir), load_planetoid("cora", data_dir)
    assert np.array_equal(a.senders, b.senders) and (a.x != b.x).nnz == 0 and np.array_equal(a.y, b.y)


@pytest.mark.data
def test_list_datasets_found(clean_env, data_dir):
    rows = {r["name"]: r for r in list_datasets(data_dir)}
    for name in BUILTIN:
        assert rows[name]["found"] and rows[name]["missing"] == [], name
        assert set(rows[name]) == {"name", "kind", "description", "found", "missing", "where", "source"}
    assert rows["cora"]["where"] == str(data_dir)
    assert "built-in" in rows["csbm"]["where"]


def test_list_datasets_missing(clean_env, tmp_path):
    d = tmp_path / "partial"
    (d / "planetoid").mkdir(parents=True)
    (d / "planetoid" / "ind.cora.x").write_bytes(b"")
    rows = {r["name"]: r for r in list_datasets(d)}
    assert not rows["cora"]["found"]
    assert len(rows["cora"]["missing"]) == 7 and "planetoid/ind.cora.x" not in rows["cora"]["missing"]
    assert str(d) in rows["cora"]["where"] and str(tmp_path / "xdg") in rows["cora"]["where"]
    assert rows["csbm"]["found"]


def test_register_new_dataset(scratch_registry, clean_env, tmp_path):
    calls = []

    def loader(data_dir=None, size=10):
        calls.append((data_dir, size))
        return csbm(num_nodes=size, num_classes=2, avg_degree=2.0, seed=0)

    register("My-Data", loader, files=("mine/a.txt",), description="test dataset")
    g = load("my_data", data_dir=tmp_path, size=12)
    assert g.num_nodes == 12 and calls == [(tmp_path, 12)]
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "a.txt").write_text("x")
    row = next(r for r in list_datasets(tmp_path) if r["name"] == "my_data")
    assert row == {"name": "my_data", "kind": "graph", "description": "test dataset", "found": True, "missing": [],
                   "where": str(tmp_path), "source": ""}
    with pytest.raises(ValueError, match="already registered"):
        register("my_data", loader)
    register("my_data", loader, overwrite=True)


@pytest.mark.parametrize("args,match", [
    (("", lambda data_dir=None: None), "letters, digits"),
    (("bad name!", lambda data_dir=None: None), "letters, digits"),
    (("ok", "not callable"), "loader must be callable"),
    (("ok", lambda data_dir=None: None, "a/single/string"), "files must be a tuple"),
])
def test_register_bad_input(scratch_registry, args, match):
    with pytest.raises(ValueError, match=match):
        register(*args)


def test_every_kind_of_dataset_is_in_the_one_registry(clean_env, data_dir):
    """Graph, hypergraph and heterogeneous datasets are listed together, each with its kind, and
    each kind's loader returns that kind of object."""
    from fgl_jax import registry
    from fgl_jax.data.hetero import HeteroGraph
    from fgl_jax.data.hypergraph import Hypergraph
    rows = {r["name"]: r for r in list_datasets(data_dir)}
    assert {rows[n]["kind"] for n in ("cora", "citeseer", "facebook", "csbm")} == {"graph"}
    assert {rows[n]["kind"] for n in ("coraca", "dblp4k", "imdb4k")} == {"hypergraph"}
    assert {rows[n]["kind"] for n in ("aifb", "mutag", "dblp", "imdb", "acm3025")} == {"hetero"}
    assert set(rows) == set(registry.names("dataset"))
    assert isinstance(registry.get("dataset", "aifb")(data_dir=data_dir), HeteroGraph)
    assert isinstance(registry.get("dataset", "coraca")(data_dir=data_dir), Hypergraph)


def test_load_graph_refuses_other_kinds_with_the_system_that_takes_them():
    from fgl_jax.data import load_graph
    with pytest.raises(ValueError, match="hetero dataset.*fedhgn"):
        load_graph("aifb")
    with pytest.raises(ValueError, match="hypergraph dataset.*fedhgl"):
        load_graph("coraca")
