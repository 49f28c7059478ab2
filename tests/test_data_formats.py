"""File formats are a registry kind, and "name or path?" is decided in one place (`fgl_jax.data.source`).

References are hand-written: the layouts each built-in format must recognise, the registry's
names, and the modules allowed to ask `is_path`.
"""
from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest

from fgl_jax import registry
from fgl_jax.data import (DataFormatError, DataPathNotFoundError, UnknownDatasetError, data_kind, detect_format, is_path,
                          load, register, register_format, source)

ROOT = Path(__file__).resolve().parents[1]


def _touch(root: Path, *rels: str) -> Path:
    for rel in rels:
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text("")
    return root


# (files to create, the path to pass relative to the root, expected format, expected target)
LAYOUTS = [
    (("g.npz",), "g.npz", "npz", "g.npz"),
    (("d/only.npz", "d/readme.md"), "d", "npz", "d/only.npz"),
    (("d/edges.csv", "d/nodes.csv"), "d", "csv", "d"),
    (("d/edges.csv.gz", "d/nodes.csv"), "d", "csv", "d"),
    (("d/edges.csv", "d/nodes.csv"), "d/edges.csv", "csv", "d"),
    (("d/edges.csv", "d/nodes.csv"), "d/nodes.csv", "csv", "d"),
    (("d/raw/edge.csv.gz", "d/split/time/train.csv.gz"), "d", "ogb", "d"),
    (("d/raw/edge.csv", "d/edges.csv"), "d", "ogb", "d"),                      # OGB wins over csv
    (("d/hyperedges.txt", "d/nodes.csv"), "d", "hypergraph", "d"),             # nodes.csv too: hypergraph
    (("d/hyperedges.txt", "d/nodes.csv"), "d/hyperedges.txt", "hypergraph", "d"),
    (("d/node_types.csv", "d/edges/r.csv"), "d", "hetero", "d"),
    (("d/node_types.csv", "d/edges/r.csv"), "d/node_types.csv", "hetero", "d"),
]


@pytest.mark.parametrize("files, arg, fmt, target", LAYOUTS)
def test_each_builtin_format_recognises_its_layout(tmp_path, files, arg, fmt, target):
    _touch(tmp_path, *files)
    assert detect_format(tmp_path / arg) == (fmt, tmp_path / target)


def test_the_builtin_formats_are_registry_entries_with_their_kind():
    files = {e.name: e.info["data"] for e in registry.entries("format") if e.info["sniff"] is None}
    assert files == {"npz": "graph", "csv": "graph", "ogb": "graph", "hypergraph": "hypergraph", "hetero": "hetero",
                     "graphml": "graph", "gml": "graph", "edgelist": "graph", "tu": "graphs",
                     "planetoid": "graph", "geom_gcn": "graph"}
    objects = {e.name for e in registry.entries("format") if e.info["sniff"] is not None}
    assert objects == {"scipy", "networkx", "jraph", "pyg", "dgl"}


def test_a_graph_object_of_another_library_loads_through_its_format():
    """Zachary's karate club: 34 nodes, 78 undirected edges (156 directed), from networkx or as a
    scipy adjacency; the options are the converter's; a foreign object is one line."""
    nx = pytest.importorskip("networkx")
    G = nx.karate_club_graph()
    x = np.eye(34, dtype=np.float32)
    y = np.arange(34) % 2
    src = source(G)
    assert (src.entry.name, src.kind, src.path) == ("networkx", "graph", None)
    g = load(G, x=x, y=y, split_seed=3)
    assert (g.num_nodes, g.num_edges) == (34, 156)
    a = load(nx.to_scipy_sparse_array(G), x=x, y=y)
    assert (a.num_nodes, a.num_edges) == (34, 156) and source(nx.to_scipy_sparse_array(G)).entry.name == "scipy"
    with pytest.raises(ValueError, match="scipy graph: missing a required argument: 'x'"):
        load(nx.to_scipy_sparse_array(G))
    with pytest.raises(DataFormatError, match="is no dataset name, path or graph object of a registered format"):
        load(object())


@pytest.mark.parametrize("files, message", [
    (("d/notes.md",), "directory in no known layout (it holds notes.md)"),
    (("graph.dot",), "unrecognised graph file"),
])
def test_an_unknown_layout_is_one_line_listing_the_registered_formats(tmp_path, files, message):
    _touch(tmp_path, *files)
    arg = tmp_path / Path(files[0]).parts[0]
    with pytest.raises(DataFormatError) as e:
        detect_format(arg)
    text = str(e.value)
    assert message in text and "\n" not in text
    assert "node_types.csv + edges/<relation>.csv (hetero)" in text and "one .npz file (npz)" in text


def test_a_directory_with_several_files_of_one_layout_asks_for_one(tmp_path):
    _touch(tmp_path, "d/a.npz", "d/b.npz")
    with pytest.raises(DataFormatError) as e:
        detect_format(tmp_path / "d")
    text = str(e.value)
    assert "holds 2 datasets in the npz layout (a.npz, b.npz); pass one of these files" in text and "\n" not in text


def test_a_new_format_is_one_registration(tmp_path):
    """Register a format in the test: its suffix makes an argument a path, load / data_kind / source
    dispatch to its loader with the path and the options, and a directory holding one such file is it."""
    seen = []

    @register_format("zz_edgelist", kind="hypergraph", layout="one 'u v' pair per line", suffixes=(".zzedges",))
    def load_zz(path, name=None, scale=1):
        seen.append((Path(path), name, scale))
        return ("zz", scale)

    try:
        (tmp_path / "g.zzedges").write_text("0 1\n")
        assert is_path("g.zzedges") and not is_path("cora")
        assert data_kind(tmp_path / "g.zzedges") == "hypergraph"
        assert load(str(tmp_path / "g.zzedges"), scale=3) == ("zz", 3)
        assert seen[-1] == (tmp_path / "g.zzedges", None, 3)
        sub = tmp_path / "folder"
        sub.mkdir()
        (sub / "h.zzedges").write_text("")
        src = source(sub)
        assert (src.kind, src.entry.name, src.target, src.builtin) == ("hypergraph", "zz_edgelist", sub / "h.zzedges",
                                                                        False)
        with pytest.raises(ValueError, match=r"unknown option\(s\) colour"):
            load(str(tmp_path / "g.zzedges"), colour="red")
    finally:
        registry._ENTRIES["format"].pop("zz_edgelist", None)
    assert not is_path("g.zzedges")


def test_source_decides_name_or_path_once(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    cora = source("CORA")                                  # a name, case-insensitive
    assert (cora.name, cora.kind, cora.path, cora.builtin) == ("cora", "graph", None, True)
    assert source("aifb").kind == "hetero" and source("coraca").kind == "hypergraph"
    _touch(tmp_path, "cora/edges.csv", "cora/nodes.csv")   # a folder named like a registered dataset:
    assert source("cora").path is None                     # the registered name wins
    mine = source("./cora")                                # unless it is written as a path
    assert (mine.path, mine.entry.name, mine.kind, mine.builtin) == (Path("cora"), "csv", "graph", False)
    with pytest.raises(DataPathNotFoundError, match="does not exist"):
        source("missing.npz")
    with pytest.raises(UnknownDatasetError, match="unknown dataset 'citesser'. Did you mean 'citeseer'"):
        source("citesser")
    assert issubclass(UnknownDatasetError, ValueError)     # a bad value, one line, for every caller
    register("zz_mine", lambda data_dir=None: None, description="a test's own dataset")
    try:
        assert source("zz_mine").builtin is False
    finally:
        registry._ENTRIES["dataset"].pop("zz_mine", None)


def test_the_hypergraph_view_of_a_users_graph_is_its_one_hop_hypergraph():
    """A registered plain graph without a registered view becomes 1-hop hyperedges {v} ∪ N(v)
    (rebuilt here from the edge list), its masks kept."""
    from fgl_jax.data.hypergraph import load_hypergraph
    from tests.helpers import toy_graph
    g = toy_graph(n=30, seed=1)
    register("zz_toy", lambda data_dir=None: g, description="a test's own graph")
    try:
        hg = load_hypergraph("zz_toy")
    finally:
        registry._ENTRIES["dataset"].pop("zz_toy", None)
    hop = {v: {v} for v in range(g.num_nodes)}
    for a, b in zip(np.asarray(g.senders).tolist(), np.asarray(g.receivers).tolist()):
        hop[a].add(b)
        hop[b].add(a)
    assert sorted({tuple(sorted(e)) for e in hop.values()}) == sorted(tuple(e.tolist()) for e in hg.edge_lists())
    np.testing.assert_array_equal(hg.train_mask, g.train_mask)
    np.testing.assert_array_equal(hg.y, g.y)


def test_the_side_tables_are_gone():
    import fgl_jax.data.files as files
    import fgl_jax.data.hetero as hetero
    import fgl_jax.data.hypergraph as hypergraph
    import fgl_jax.nn as nn
    import fgl_jax.nn.models as models
    import fgl_jax.partition as partition
    import fgl_jax.systems.baseline as baseline
    for module, name in ((nn, "MODELS"), (models, "MODELS"), (partition, "PARTITIONERS"), (baseline, "PARTITIONS"),
                         (hetero, "HETERO_DATASETS"), (hypergraph, "HYPERGRAPH_DATASETS"),
                         (files, "PATH_FORMATS"), (files, "KNOWN_SUFFIXES")):
        assert not hasattr(module, name), f"{module.__name__}.{name}"
    # what they held is in the registry
    assert registry.names("partition") == sorted(["random", "louvain", "dirichlet", "metis", "louvain_plus",
                                                  "metis_plus", "community_dirichlet"])
    assert {"gcn", "sage", "graphsage", "gat", "sgc", "mlp", "appnp", "cheb", "chebnet", "cheby", "cheb_gcond",
            "gcn_sum"} == set(registry.names("model"))
    assert registry.get("model", "graphsage") is registry.get("model", "sage")


def test_name_or_path_is_asked_only_by_the_data_dispatcher():
    """Only fgl_jax/data/files.py (which defines them) and fgl_jax/data/registry.py (`source`) call
    `is_path` or `path_kind`; everything else asks `source` (or `load`, which does)."""
    allowed = {"fgl_jax/data/files.py", "fgl_jax/data/registry.py"}
    found = []
    for f in sorted((ROOT / "fgl_jax").rglob("*.py")):
        rel = f.relative_to(ROOT).as_posix()
        if rel in allowed:
            continue
        for node in ast.walk(ast.parse(f.read_text())):
            if isinstance(node, ast.Call):
                fn = node.func
                name = fn.id if isinstance(fn, ast.Name) else getattr(fn, "attr", None)
                if name in ("is_path", "path_kind"):
                    found.append(f"{rel}:{node.lineno} calls {name}")
    assert not found, "\n".join(found)
