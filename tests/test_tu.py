"""The TU loader (`fgl_jax.data.tu`): every set of the shared data loads with its published counts,
checked against a plain NumPy reading of the files written here (not the loader); features,
labels, zips and one-line errors on toy sets written in the test."""
import io
import zipfile

import numpy as np
import pytest

from fgl_jax.data import DataFormatError, load
from fgl_jax.data.tu import GraphSet, read_tu

# manifest (/work/shared/data/README.md, section 2.9): graphs, nodes, _A.txt lines; IMDB: graphs from
# the manifest, node and undirected-edge means from the TU statistics page (19.77 / 96.53, 13.00 / 65.94)
PUBLISHED = {"AIDS": (2000, 31385, 64780), "ENZYMES": (600, 19580, 74564), "MUTAG": (188, 3371, 7442),
             "PROTEINS": (1113, 43471, 162088), "BZR": (405, 14479, 31070), "COX2": (467, 19252, 40578),
             "NCI1": (4110, 122747, 265506), "PTC_MR": (344, 4915, 10108)}
IMDB = {"IMDB-BINARY": (1000, 19.77, 96.53), "IMDB-MULTI": (1500, 13.00, 65.94)}


def numpy_reading(lines_of):
    """(graphs, nodes, unique directed edges, edge lines, labels) from the raw text of the files."""
    ind = np.array(lines_of("graph_indicator").split(), dtype=np.int64)
    a = np.array(lines_of("A").replace(",", " ").split(), dtype=np.int64).reshape(-1, 2)
    labels = np.array(lines_of("graph_labels").split(), dtype=np.int64)
    unique = len({(int(s), int(r)) for s, r in a})
    return int(ind.max()), ind.size, unique, a.shape[0], labels


def dir_reader(folder, name):
    return lambda part: (folder / f"{name}_{part}.txt").read_text()


def zip_reader(path, name):
    z = zipfile.ZipFile(path)
    return lambda part: z.read(f"{name}/{name}_{part}.txt").decode()


@pytest.mark.data
@pytest.mark.parametrize("name", sorted(PUBLISHED) + sorted(IMDB))
def test_every_tu_set_loads_with_published_counts(data_dir, name):
    reader = (zip_reader(data_dir / "tu" / f"{name}.zip", name) if name in IMDB
              else dir_reader(data_dir / "tu" / name, name))
    g, n, e_unique, e_lines, labels = numpy_reading(reader)
    if name in PUBLISHED:
        assert (g, n, e_lines) == PUBLISHED[name]
        assert e_unique == e_lines          # no repeated lines outside the IMDB zips
    else:
        graphs, node_mean, edge_mean = IMDB[name]
        assert g == graphs and round(n / g, 2) == node_mean and round(e_unique / 2 / g, 2) == edge_mean
    gs = load("MUTAG_TU" if name == "MUTAG" else name, data_dir=data_dir)
    assert isinstance(gs, GraphSet)
    assert (gs.num_graphs, gs.num_nodes, gs.num_edges) == (g, n, e_unique)
    values = np.unique(labels)
    assert gs.num_classes == values.size
    np.testing.assert_array_equal(values[gs.y], labels)   # classes are the sorted file values
    # edges stay inside their graph, and every graph's rows are where the offsets say
    owner = np.repeat(np.arange(g), gs.edges_per_graph)
    assert np.all((gs.senders >= gs.node_offsets[owner]) & (gs.senders < gs.node_offsets[owner + 1]))
    assert np.all((gs.receivers >= gs.node_offsets[owner]) & (gs.receivers < gs.node_offsets[owner + 1]))


def write_tu(folder, name="TOY", *, node_labels=True, attributes=True, a_lines=None, labels=None):
    """Two graphs: graph 1 = path 1-2-3 (nodes 1..3), graph 2 = edge 4-5 (nodes 4, 5)."""
    folder.mkdir(parents=True, exist_ok=True)
    a = a_lines or ["1, 2", "2, 1", "2, 3", "3, 2", "4, 5", "5, 4"]
    (folder / f"{name}_A.txt").write_text("\n".join(a) + "\n")
    (folder / f"{name}_graph_indicator.txt").write_text("1\n1\n1\n2\n2\n")
    (folder / f"{name}_graph_labels.txt").write_text("\n".join(labels or ["-1", "1"]) + "\n")
    if node_labels:
        (folder / f"{name}_node_labels.txt").write_text("2\n4\n2\n3\n2\n")
    if attributes:
        (folder / f"{name}_node_attributes.txt").write_text("0.5, 1\n1.5, 2\n2.5, 3\n3.5, 4\n4.5, 5\n")
    return folder


def test_toy_features_labels_and_zip(tmp_path):
    folder = write_tu(tmp_path / "TOY")
    gs = load(str(folder))
    assert (gs.num_graphs, gs.num_nodes, gs.num_edges) == (2, 5, 6)
    # node labels 2, 4, 2, 3, 2 -> one-hot of value - 2 (width 3), then the two attributes
    expect = np.array([[1, 0, 0, .5, 1], [0, 0, 1, 1.5, 2], [1, 0, 0, 2.5, 3], [0, 1, 0, 3.5, 4], [1, 0, 0, 4.5, 5]],
                      np.float32)
    np.testing.assert_array_equal(gs.x, expect)
    np.testing.assert_array_equal(gs.y, [0, 1])
    np.testing.assert_array_equal(gs.node_offsets, [0, 3, 5])
    x1, s1, r1 = gs.graph(1)
    np.testing.assert_array_equal(x1, expect[3:])
    assert sorted(zip(s1.tolist(), r1.tolist())) == [(0, 1), (1, 0)]
    # the same set as a zip (folder inside, as the TU archives)
    buf = tmp_path / "TOY.zip"
    with zipfile.ZipFile(buf, "w") as z:
        for f in folder.iterdir():
            z.write(f, f"TOY/{f.name}")
    gz = load(str(buf))
    np.testing.assert_array_equal(gz.x, gs.x)
    np.testing.assert_array_equal(gz.senders, gs.senders)
    # subset: graph 1 alone, rows renumbered
    sub = gs.subset([1])
    assert sub.num_nodes == 2 and sorted(sub.senders.tolist()) == [0, 1]


def test_degree_features_without_node_data(tmp_path):
    folder = write_tu(tmp_path / "D", node_labels=False, attributes=False,
                      a_lines=["1, 2", "2, 1", "2, 3", "3, 2", "4, 5", "5, 4", "4, 5"])   # one repeated line
    gs = read_tu(folder)
    deg = np.array([1, 2, 1, 1, 1])                # the repeated line counts once
    np.testing.assert_array_equal(gs.x, np.eye(3, dtype=np.float32)[deg])
    assert gs.num_edges == 6 and gs.meta["duplicate_edge_lines"] == 1
    capped = read_tu(folder, degree_cap=1)
    np.testing.assert_array_equal(capped.x, np.eye(2, dtype=np.float32)[np.minimum(deg, 1)])


@pytest.mark.parametrize("change, match", [
    (dict(a_lines=["1, 2", "2, x"]), r"TOY_A.txt, line 2: 'x' is not an integer"),
    (dict(a_lines=["1, 2", "2, 9"]), r"TOY_A.txt, line 2: node id in \(2, 9\) outside 1..5"),
    (dict(a_lines=["1, 2", "3, 4"]), r"TOY_A.txt, line 2: edge \(3, 4\) joins graphs 1 and 2"),
    (dict(a_lines=["1, 2", "2"]), r"TOY_A.txt, line 2: expected 2 integer\(s\), got '2'"),
    (dict(labels=["0"]), r"TOY_graph_labels.txt: 1 lines, expected one per graph \(2\)"),
])
def test_malformed_files_one_line(tmp_path, change, match):
    folder = write_tu(tmp_path / "TOY", **change)
    with pytest.raises(DataFormatError, match=match) as e:
        read_tu(folder)
    assert "\n" not in str(e.value)


def test_bad_indicator_and_attributes(tmp_path):
    folder = write_tu(tmp_path / "TOY")
    (folder / "TOY_graph_indicator.txt").write_text("1\n1\n2\n1\n2\n")
    with pytest.raises(DataFormatError, match=r"graph_indicator.txt, line 4: graph id 1 breaks the order"):
        read_tu(folder)
    folder = write_tu(tmp_path / "T2", name="TOY")
    (folder / "TOY_node_attributes.txt").write_text("0.5, 1\n1.5, nan\n2.5, 3\n3.5, 4\n4.5, 5\n")
    with pytest.raises(DataFormatError, match=r"node_attributes.txt, line 2: 'nan' is not a finite number"):
        read_tu(folder)


def test_inspect_and_datasets_list_tu_sets(tmp_path, data_dir):
    from fgl_jax.data import list_datasets
    from fgl_jax.inspection import inspect_dataset
    lines = inspect_dataset(str(write_tu(tmp_path / "TOY")))
    assert lines[0].endswith("(graphs: a graph-classification set)")
    assert "graphs:     2" in lines and any(line.startswith("classes:    2 (graphs per class [1, 1]") for line in lines)
    rows = {r["name"]: r for r in list_datasets(data_dir)}
    for name in ("aids", "bzr", "cox2", "enzymes", "mutag_tu", "nci1", "proteins", "ptc_mr", "imdb_binary",
                 "imdb_multi"):
        assert rows[name]["kind"] == "graphs" and rows[name]["found"], rows[name]
    assert rows["mutag"]["kind"] == "hetero"        # the RDF MUTAG keeps its name
