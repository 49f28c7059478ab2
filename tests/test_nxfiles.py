"""Issue 50 item 3: networkx's GraphML / GML / edge-list files load through --dataset PATH, with
class names as labels; checked against networkx's own reading of the same file."""
from __future__ import annotations

import networkx as nx
import numpy as np
import pytest

import fgl_jax as fj
from fgl_jax.cli import main
from fgl_jax.data import DataFormatError, DataNotice


def _labelled_graph() -> nx.Graph:
    G = nx.karate_club_graph()
    G = nx.relabel_nodes(G, {v: f"n{v}" for v in G})  # the user's node ids are strings
    for i, v in enumerate(G):
        d = G.nodes[v]
        d["y"] = d.pop("club")  # "Mr. Hi" / "Officer": class names
        d["deg"] = float(G.degree(v))
        d["rank"] = float(i % 5)
    return G


@pytest.mark.parametrize("suffix, write", [(".graphml", nx.write_graphml), (".gml", nx.write_gml)])
def test_attribute_files_load_like_networkx_reads_them(tmp_path, suffix, write):
    G = _labelled_graph()
    path = tmp_path / f"karate{suffix}"
    write(G, path)
    ref = nx.read_graphml(path) if suffix == ".graphml" else nx.read_gml(path)
    g = fj.load(str(path))
    nodes = list(ref.nodes)
    assert g.meta["nodes"] == nodes and g.num_nodes == ref.number_of_nodes()
    assert g.num_edges == 2 * ref.number_of_edges()
    names = sorted({ref.nodes[v]["y"] for v in nodes})
    assert g.meta["class_names"] == names
    assert [names[k] for k in g.y] == [ref.nodes[v]["y"] for v in nodes]
    x = np.asarray([[ref.nodes[v]["deg"], ref.nodes[v]["rank"]] for v in nodes], np.float32)  # sorted attrs
    assert np.array_equal(g.dense_x(), x)


def test_an_edge_list_loads_with_identity_features(tmp_path):
    path = tmp_path / "g.edgelist"
    path.write_text("# a comment\na b 1.5\nb c\nc a\nd c\n")
    with pytest.warns(DataNotice, match="one-hot node ids"):
        g = fj.load(str(path))
    assert g.meta["nodes"] == ["a", "b", "c", "d"] and g.num_edges == 8 and g.num_features == 4


def test_a_malformed_file_is_one_line(tmp_path):
    path = tmp_path / "bad.graphml"
    path.write_text("<graphml><graph><node id='a'></graph>")
    with pytest.raises(DataFormatError, match="bad.graphml: not a valid GraphML file"):
        fj.load(str(path))


@pytest.mark.slow
def test_a_graphml_file_runs_from_the_cli(tmp_path):
    path = tmp_path / "karate.graphml"
    nx.write_graphml(_labelled_graph(), path)
    assert main(["run", "--dataset", str(path), "--clients", "2", "--rounds", "2", "--hidden", "8",
                 "--no-progress", "--out", str(tmp_path / "run")]) == 0
    assert (tmp_path / "run" / "summary.json").is_file()


def test_notices_name_the_users_node_ids(tmp_path):
    """Issue 50 item 3: a notice about a node names the user's id, not only a row number."""
    d = tmp_path / "g"
    d.mkdir()
    (d / "nodes.csv").write_text("id,label,f0\nalice,cat,1\nbob,dog,0\ncarol,cat,1\ndave,dog,0\n")
    (d / "edges.csv").write_text("src,dst\nalice,bob\nbob,carol\nalice,alice\n")
    with pytest.warns(DataNotice) as caught:
        g = fj.load(str(d))
    text = " | ".join(str(w.message) for w in caught)
    assert "isolated node(s) (no edge), e.g. node 'dave' (row 3)" in text
    assert "self-loop(s) removed (e.g. node 'alice' (row 0))" in text
    assert g.meta["nodes"] == ["alice", "bob", "carol", "dave"]
    path = tmp_path / "k.edgelist"
    path.write_text("x y\nz z\ny w\n")
    with pytest.warns(DataNotice) as caught:
        fj.load(str(path))
    assert "self-loop(s) removed (e.g. node 'z'" in " | ".join(str(w.message) for w in caught)
