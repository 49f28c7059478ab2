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


def test_a_graphml_file_runs_from_the_cli(tmp_path):
    path = tmp_path / "karate.graphml"
    nx.write_graphml(_labelled_graph(), path)
    assert main(["run", "--dataset", str(path), "--clients", "2", "--rounds", "2", "--hidden", "8",
                 "--no-progress", "--out", str(tmp_path / "run")]) == 0
    assert (tmp_path / "run" / "summary.json").is_file()
