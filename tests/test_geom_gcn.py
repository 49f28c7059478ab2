"""Issue 48: Geom-GCN raw directories (out1_node_feature_label.txt, out1_graph_edges.txt, ten
<name>_split_0.6_0.2_<i>.npz). The counts against PyG's readers are in tests/test_layout_counts.py
(the committed PyG record); here the values are re-derived with NumPy from the toy files' text, and
the paths a user takes (detection, --split-index, inspect, the run's preparation, the system
commands, malformed files) are checked."""
from __future__ import annotations

import dataclasses
import importlib.util
import warnings
from pathlib import Path

import numpy as np
import pytest

import fgl_jax as fj
from fgl_jax.cli import main
from fgl_jax.data import DataFormatError, detect_format

ROOT = Path(__file__).resolve().parents[1]


def _toy():
    spec = importlib.util.spec_from_file_location("geom_gcn_toy", ROOT / "benchmarks" / "peers" / "pyg" / "geom_gcn_toy.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def dirs(tmp_path_factory):
    return _toy().write_all(tmp_path_factory.mktemp("geom"))


def _quiet_load(path, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fj.load(str(path), **kw)


def _reference(folder: Path):
    """x [N, F], y [N] and the undirected loop-free edge set, parsed here from the text directly."""
    rows = [ln.split("\t") for ln in (folder / "out1_node_feature_label.txt").read_text().splitlines()[1:]]
    cells = [[int(v) for v in r[1].split(",")] for r in rows]
    if len({len(c) for c in cells}) > 1:     # Actor: column ids of the ones
        x = np.zeros((len(rows), max(max(c) for c in cells) + 1), np.float32)
        for i, c in enumerate(cells):
            x[i, c] = 1
    else:
        x = np.asarray(cells, np.float32)
    y = np.asarray([int(r[2]) for r in rows])
    pairs = [tuple(map(int, ln.split("\t"))) for ln in (folder / "out1_graph_edges.txt").read_text().splitlines()[1:]]
    und = {(min(u, v), max(u, v)) for u, v in pairs if u != v}
    return x, y, und


@pytest.mark.parametrize("variant", ["webkb", "actor", "wikipedia"])
def test_loader_equals_a_numpy_reading_of_the_text(dirs, variant):
    folder = dirs[variant]
    g = _quiet_load(folder)
    x, y, und = _reference(folder)
    got_x = g.x.toarray() if hasattr(g.x, "toarray") else np.asarray(g.x)
    np.testing.assert_array_equal(got_x, x)
    np.testing.assert_array_equal(np.asarray(g.y), y)
    s, r = np.asarray(g.senders), np.asarray(g.receivers)
    assert {(int(a), int(b)) for a, b in zip(s, r) if a < b} == und and g.num_edges == 2 * len(und)
    assert g.meta["format"] == f"geom_gcn:{'index' if variant == 'actor' else 'dense'}"
    assert g.name == folder.name
    for i in (0, 7):
        z = np.load(folder / f"{folder.name}_split_0.6_0.2_{i}.npz")
        for key in ("train", "val", "test"):
            np.testing.assert_array_equal(g.meta["fixed_splits"][key][i], z[f"{key}_mask"].astype(bool))
    np.testing.assert_array_equal(g.train_mask, np.load(folder / f"{folder.name}_split_0.6_0.2_0.npz")["train_mask"] > 0)


def test_either_out1_file_and_split_index(dirs):
    folder = dirs["webkb"]
    assert detect_format(folder)[0] == "geom_gcn"
    assert detect_format(folder / "out1_graph_edges.txt") == ("geom_gcn", folder)
    g = _quiet_load(folder / "out1_node_feature_label.txt", split_index=4)
    assert g.meta["split"] == {"kind": "fixed", "index": 4, "of": 10}
    np.testing.assert_array_equal(g.test_mask, np.load(folder / "cornell_split_0.6_0.2_4.npz")["test_mask"] > 0)
    with pytest.raises(DataFormatError, match=r"split_index 10 is out of range: the file has 10 fixed splits"):
        _quiet_load(folder, split_index=10)


def test_the_feature_spelling_can_be_forced(dirs):
    with pytest.raises(DataFormatError, match=r"dense feature rows of different lengths \(data line 1: \d+ values"):
        _quiet_load(dirs["actor"], features="dense")
    with pytest.raises(DataFormatError, match=r"index-list features must be distinct non-negative integer column ids"):
        _quiet_load(dirs["webkb"], features="index")  # dense 0/1 rows read as column ids repeat 0 and 1


def test_no_layout_message_lists_geom_gcn(tmp_path):
    (tmp_path / "stray.txt").write_text("1\n")
    with pytest.raises(DataFormatError) as e:
        detect_format(tmp_path)
    assert "Geom-GCN raw directory out1_node_feature_label.txt + out1_graph_edges.txt" in str(e.value)
    assert "\n" not in str(e.value)


def _copy(src: Path, dst: Path) -> Path:
    dst.mkdir()
    for f in src.iterdir():
        (dst / f.name).write_bytes(f.read_bytes())
    return dst


@pytest.mark.parametrize("edit, message", [
    (("out1_node_feature_label.txt", "3\t0,1\tx"), r"out1_node_feature_label.txt, line \d+: label 'x' is not an integer"),
    (("out1_node_feature_label.txt", "3\t0,1"), r"line \d+: expected 3 tab-separated fields"),
    (("out1_graph_edges.txt", "1\tb"), r"out1_graph_edges.txt, line \d+: expected two integer node ids"),
    (("out1_node_feature_label.txt", "99\t0,1,0,0,0,0,0,0,0,0,0,0,0,0\t1"), r"node ids must be 0..35, each once"),
])
def test_malformed_lines_are_one_line_errors(dirs, tmp_path, edit, message):
    d = _copy(dirs["webkb"], tmp_path / "bad")
    name, line = edit
    lines = (d / name).read_text().splitlines()
    lines[4] = line
    (d / name).write_text("\n".join(lines) + "\n")
    with pytest.raises(DataFormatError, match=message) as e:
        _quiet_load(d)
    assert "\n" not in str(e.value)


def test_split_files_are_checked(dirs, tmp_path):
    d = _copy(dirs["wikipedia"], tmp_path / "gap")
    (d / "chameleon_split_0.6_0.2_3.npz").unlink()
    with pytest.raises(DataFormatError, match=r"chameleon_split_0.6_0.2_3.npz is missing"):
        _quiet_load(d)
    d = _copy(dirs["wikipedia"], tmp_path / "short")
    np.savez(d / "chameleon_split_0.6_0.2_2.npz", train_mask=np.ones(5), val_mask=np.zeros(5), test_mask=np.zeros(5))
    with pytest.raises(DataFormatError, match=r"_2.npz: train_mask has shape \(5,\), expected \(36,\)"):
        _quiet_load(d)


def test_inspect_and_the_run_preparation_take_the_directory(dirs, capsys):
    folder = dirs["actor"]
    assert main(["inspect", str(folder)]) == 0
    out = capsys.readouterr().out
    assert "split 0 of 10 fixed splits (--split-index i | all)" in out
    from fgl_jax.systems.baseline.program import prepare
    cfg = fj.RunConfig(dataset=str(folder), clients=2, split_index="6")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prep = prepare(cfg)
    z = np.load(folder / "film_split_0.6_0.2_6.npz")
    np.testing.assert_array_equal(prep.graph.val_mask, z["val_mask"] > 0)
    kept = dataclasses.replace(cfg, directed="keep", split_index="")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert prepare(kept).graph.meta.get("directed")


def test_system_commands_load_the_directory(dirs):
    """HiFGL's and Lumos's host-side preparation read the directory through the same loader as `run`
    (FedGC's too: `fgl_jax.systems.fedgc.program` calls the same load_graph; not built here, its
    preparation trains)."""
    from fgl_jax.systems.hifgl.data import prepare as hifgl_prepare
    from fgl_jax.systems.lumos.data import load_features
    folder = dirs["wikipedia"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prep = hifgl_prepare(fj.HiFGLConfig(dataset=str(folder), clients=2))
        g, x = load_features(str(folder), None)
    assert prep.graph.num_nodes == g.num_nodes == 36 and x.shape == (36, 14)
    assert prep.graph.name == "chameleon"
