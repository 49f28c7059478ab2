"""Issue 48 item 6: --partition-file PATH (one client id per node, .npy / .txt / .csv), with one-line
errors for a wrong length, negative ids and non-integers."""
from __future__ import annotations

import json

import numpy as np
import pytest

from fgl_jax.cli import main
from fgl_jax.partition import PartitionError
from fgl_jax.partition.from_file import read_assignment

IDS = np.array([2, 0, 1, 1, 0, 2, 2, 1])


@pytest.mark.parametrize("kind", ["npy", "txt", "csv1", "csv2"])
def test_each_format_reads_the_ids_in_node_order(tmp_path, kind):
    if kind == "npy":
        p = tmp_path / "part.npy"
        np.save(p, IDS)
    elif kind == "txt":
        p = tmp_path / "part.txt"
        p.write_text("# client of each node\n" + "\n".join(map(str, IDS[:4])) + "\n" + " ".join(map(str, IDS[4:])))
    elif kind == "csv1":
        p = tmp_path / "part.csv"
        p.write_text("client\n" + "\n".join(map(str, IDS)) + "\n")
    else:  # node,client rows in another order
        p = tmp_path / "part.csv"
        order = np.random.default_rng(0).permutation(IDS.size)
        p.write_text("node,client\n" + "".join(f"{i},{IDS[i]}\n" for i in order))
    np.testing.assert_array_equal(read_assignment(p, IDS.size), IDS)


def test_wrong_length_is_one_line(tmp_path):
    p = tmp_path / "part.npy"
    np.save(p, IDS[:-1])
    with pytest.raises(PartitionError, match=r"part\.npy: 7 client ids but the graph has 8 nodes"):
        read_assignment(p, 8)


def test_negative_id_is_one_line(tmp_path):
    p = tmp_path / "part.txt"
    p.write_text("0 1 -1 2\n")
    with pytest.raises(PartitionError, match=r"part\.txt: node 2 has client id -1; ids are 0, 1, \.\.\."):
        read_assignment(p, 4)


@pytest.mark.parametrize("kind", ["txt", "csv", "npy"])
def test_non_integer_is_one_line(tmp_path, kind):
    p = tmp_path / f"part.{kind}"
    if kind == "npy":
        np.save(p, np.array([0.0, 1.5, 1.0]))
        pattern = r"part\.npy: entry 1 is 1\.5, not an integer client id"
    elif kind == "txt":
        p.write_text("0\n1.5\n1\n")
        pattern = r"part\.txt: line 2: '1\.5' is not an integer client id"
    else:
        p.write_text("0\nx\n1\n")
        pattern = r"part\.csv: line 2: 'x' is not an integer client id"
    with pytest.raises(PartitionError, match=pattern):
        read_assignment(p, 3)


@pytest.mark.slow
def test_a_run_uses_the_file_partition(tmp_path, capsys):
    # csbm (built in) with a hand-made partition: client sizes and the edge cut are the file's
    g_ids = None
    out = tmp_path / "run"
    from fgl_jax.data import load_graph
    g = load_graph("csbm")
    rng = np.random.default_rng(3)
    g_ids = rng.permutation(np.arange(g.num_nodes) % 3)
    g_ids[:10] = 0  # uneven sizes, unlike the random partitioner's
    p = tmp_path / "part.npy"
    np.save(p, g_ids)
    assert main(["run", "--dataset", "csbm", "--clients", "3", "--rounds", "2", "--hidden", "8", "--no-progress",
                 "--partition-file", str(p), "--out", str(out)]) == 0
    rep = json.loads((out / "summary.json").read_text())["describe"]["partition_report"]
    assert rep["method"] == "file"
    assert rep["client_nodes"]["sizes"] == np.bincount(g_ids, minlength=3).tolist()
    s, r = np.asarray(g.senders), np.asarray(g.receivers)
    assert rep["edge_cut"] == int((g_ids[s] != g_ids[r]).sum() // 2)
    # the client count must match the file's
    assert main(["run", "--dataset", "csbm", "--clients", "4", "--rounds", "2", "--no-progress",
                 "--partition-file", str(p)]) == 2
    assert "(3 clients) but clients=4; pass --clients 3" in capsys.readouterr().err
