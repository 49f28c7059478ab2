"""Bad data files, config values and messages (issue 45, part two): each input gets one clear line
naming the file / option and the value, never a traceback from numpy or jax and never a silent
wrong answer. Every case below fed the input to the code before the fix and got a traceback
(EOFError, MemoryError, LookupError, OverflowError), a misleading message, or no complaint."""
import hashlib
import io
import math
import os
import warnings
import zipfile

import numpy as np
import pytest
import scipy.sparse as sp

from fgl_jax import schema
from fgl_jax.cli import main
from fgl_jax.data import (DataDirNotFoundError, DataFormatError, DataNotice, load, load_npz, safe_load)
from fgl_jax.data.paths import find_dataset_dir
from fgl_jax.systems.baseline import RunConfig


def _npy(shape, descr: str, body: bytes) -> bytes:
    """A .npy stream with a hand-written header (np.save cannot write a lying one)."""
    b = io.BytesIO()
    np.lib.format.write_array_header_1_0(b, {"descr": descr, "fortran_order": False, "shape": shape})
    return b.getvalue() + body


def _saved(a: np.ndarray) -> bytes:
    b = io.BytesIO()
    np.save(b, a)
    return b.getvalue()


def _zip(path, members: dict) -> None:
    with zipfile.ZipFile(path, "w") as z:
        for k, v in members.items():
            z.writestr(k + ".npy", v)


def _one_error_line(err: str) -> str:
    """The CLI's error line (data notices may come before it); exactly one, and no traceback."""
    assert "Traceback" not in err, err
    lines = [ln for ln in err.strip().splitlines() if not ln.startswith("fgl-jax: notice:")]
    assert len(lines) == 1 and lines[0].startswith("fgl-jax: error:"), err
    return lines[0]


EI = np.array([[0, 1, 2], [1, 2, 0]])


# ---- item 4: tracebacks instead of one line ------------------------------------------------------

def test_empty_npz_is_one_line(tmp_path):
    p = tmp_path / "g.npz"
    p.write_bytes(b"")
    with pytest.raises(DataFormatError, match=r"g\.npz: empty file \(0 bytes\)"):
        load(p)


def test_a_header_declaring_40_tb_is_refused_before_allocating(tmp_path):
    p = tmp_path / "g.npz"
    _zip(p, {"edge_index": _saved(EI), "x": _npy((10 ** 13,), "<f4", b"\0" * 64)})  # 40 TB of float32
    with pytest.raises(DataFormatError, match=r"g\.npz: field x declares shape \(10000000000000,\) of float32 "
                                              r"\(40,000,000,000,000 bytes\) but its member holds 64 bytes"):
        load(p)


def test_csr_features_declaring_1e11_columns_are_refused(tmp_path):
    p = tmp_path / "g.npz"
    np.savez(p, edge_index=EI, x_data=np.ones(3, np.float32), x_indices=np.array([0, 1, 2]),
             x_indptr=np.r_[0, 1, 2, np.full(58, 3)], x_shape=np.array([60, 1e11]))
    with pytest.raises(DataFormatError, match=r"g\.npz: field x_shape declares 100000000000 feature columns \(the "
                                              r"stored entries use 3\); at most 16777216"):
        load(p)


def test_sparse_features_over_the_limit_are_refused_for_every_loader():
    from fgl_jax.data import from_scipy
    adj = sp.coo_matrix((np.ones(2), ([0, 1], [1, 0])), shape=(2, 2))
    x = sp.csr_matrix((np.ones(1), ([0], [5])), shape=(2, 2 ** 24 + 1))
    with pytest.raises(DataFormatError, match="16777217 columns, of which the stored entries use 6"):
        from_scipy(adj, x)


# a protocol-2 pickle calling _codecs.encode('abc', 'no_such_codec_x'): a codec that does not exist
UNKNOWN_CODEC = b"\x80\x02c_codecs\nencode\n(X\x03\x00\x00\x00abcX\x0f\x00\x00\x00no_such_codec_xtR."


def test_a_pickle_naming_an_unknown_codec_is_a_format_error(tmp_path):
    p = tmp_path / "ind.x"
    p.write_bytes(UNKNOWN_CODEC)
    with pytest.raises(DataFormatError, match=r"ind\.x: cannot unpickle .*unknown codec 'no_such_codec_x'"):
        safe_load(p)


def test_an_npz_name_array_naming_an_unknown_codec_is_skipped_with_a_notice(tmp_path):
    p = tmp_path / "g.npz"
    a = sp.csr_matrix(np.array([[0, 1, 0], [1, 0, 1], [0, 1, 0]], np.float32))
    _zip(p, {"adj_data": _saved(a.data), "adj_indices": _saved(a.indices), "adj_indptr": _saved(a.indptr),
             "adj_shape": _saved(np.array(a.shape)), "attr_matrix": _saved(np.eye(3, dtype=np.float32)),
             "labels": _saved(np.array([0, 1, 0])), "class_names": _npy((1,), "|O", UNKNOWN_CODEC)})
    with pytest.warns(DataNotice, match="optional field class_names skipped .*unknown codec"):
        g = load_npz(p)
    assert "class_names" not in g.meta and g.num_nodes == 3


@pytest.mark.parametrize("field", ["seed", "split_seed", "partition_seed"])
@pytest.mark.parametrize("value", ["99999999999999999999", "4294967296", "-1"])
def test_seeds_outside_32_bits_are_refused(field, value):
    with pytest.raises(ValueError, match=rf"command line: {field} must be an integer in 0\.\.4294967295 "
                                         rf"\(2\*\*32 - 1: the run key keeps 32 bits"):
        schema.resolve(RunConfig, flags={field: value})
    assert schema.resolve(RunConfig, flags={field: "4294967295"}) is not None


def test_a_huge_seed_on_the_command_line_is_one_line(capsys):
    assert main(["run", "--dataset", "csbm", "--seed", "99999999999999999999", "--print-config"]) == 2
    assert "seed must be an integer in 0..4294967295" in _one_error_line(capsys.readouterr().err)


def test_sweep_seeds_outside_32_bits_are_refused(capsys):
    assert main(["sweep", "--dataset", "csbm", "--seeds", "0,4294967296"]) == 2
    assert "seed 4294967296 is outside 0..4294967295" in _one_error_line(capsys.readouterr().err)


# ---- item 5: misleading messages -----------------------------------------------------------------

def test_a_truncated_member_is_called_truncated_not_pickled(tmp_path):
    p = tmp_path / "g.npz"
    _zip(p, {"edge_index": _saved(EI)[:-8], "x": _saved(np.eye(3, dtype=np.float32))})
    with pytest.raises(DataFormatError, match=r"field edge_index declares shape \(2, 3\) of int64 \(48 bytes\) but "
                                              r"its member holds 40 bytes: the file is truncated") as exc:
        load(p)
    assert "pickled" not in str(exc.value)


def test_a_non_zip_npz_gets_no_allow_pickle_advice(tmp_path):
    p = tmp_path / "g.npz"
    p.write_bytes(pickle_bytes := b"\x80\x04\x95\x05\x00\x00\x00\x00\x00\x00\x00K\x01.")  # a pickle, not a zip
    assert pickle_bytes
    with pytest.raises(DataFormatError, match=r"g\.npz: not a zip archive") as exc:
        load(p)
    assert "allow_pickle" not in str(exc.value) and "pickle.load" not in str(exc.value)


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="no /dev/zero")
def test_a_device_is_not_a_regular_file_rather_than_missing():
    with pytest.raises(DataFormatError, match="/dev/zero: exists but is not a regular file or a directory"):
        load("/dev/zero")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_is_refused_without_reading_it(tmp_path):
    p = tmp_path / "g.npz"
    os.mkfifo(p)
    with pytest.raises(DataFormatError, match="exists but is not a regular file"):
        load(p)


def test_a_non_utf8_config_names_the_file(tmp_path, capsys):
    p = tmp_path / "c.yaml"
    p.write_bytes(b"rounds: 2\n# caf\xe9 in latin-1\n")
    assert main(["run", "--config", str(p), "--print-config"]) == 2
    line = _one_error_line(capsys.readouterr().err)
    assert f"config file {p} is not UTF-8 text (byte 0xe9 at offset 15)" in line


def test_an_empty_given_train_mask_says_so(tmp_path):
    from fgl_jax.systems.baseline.program import split_graph
    p = tmp_path / "g.npz"
    z = np.zeros(6, bool)
    np.savez(p, edge_index=np.array([[0, 1, 2, 3, 4], [1, 2, 3, 4, 5]]), x=np.eye(6), y=np.array([0, 1] * 3),
             train_mask=z, val_mask=np.r_[z[:3], True, True, True], test_mask=np.r_[True, True, True, z[:3]])
    with pytest.warns(DataNotice, match="train_mask has no True entries"):
        g = load(p)
    with pytest.raises(ValueError, match="its train_mask has no True entries") as exc:
        split_graph(g, RunConfig(dataset=str(p), split="standard"))
    assert "split='random'" not in str(exc.value)


@pytest.mark.slow
def test_a_first_round_divergence_does_not_report_rounds_1_to_0(tmp_path, capsys):
    # item 7 with SGD: --lr 1e6 blows up in the first round; the run stops with one line naming it
    out = tmp_path / "run"
    args = ["run", "--dataset", "csbm", "--clients", "2", "--hidden", "8", "--rounds", "2", "--no-progress",
            "--optimizer", "sgd", "--lr", "1e6", "--local-steps", "20", "--out", str(out)]
    assert main(args) == 2
    line = _one_error_line(capsys.readouterr().err)
    assert "rounds 1..0" not in line and "training diverged" in line, line
    assert line.startswith("fgl-jax: error: round 1: ") and "no round finished" in line, line


def test_lr_1e6_with_adam_stops_with_one_line_naming_the_round(capsys):
    # item 7 with Adam: the loss stays finite but explodes; the run's loss guard (1e6 x the first
    # round's loss, the default of `run`) stops it the way a non-finite loss does
    args = ["run", "--dataset", "csbm", "--clients", "2", "--hidden", "8", "--rounds", "2", "--no-progress",
            "--optimizer", "adam", "--lr", "1e6"]
    assert main(args) == 2
    line = _one_error_line(capsys.readouterr().err)
    assert line.startswith("fgl-jax: error: round 2: train_loss ") and "training diverged" in line, line


# ---- item 6: silently accepted -------------------------------------------------------------------

def _benchmark_npz(p, weights):
    rows, cols = np.array([0, 1, 1, 2]), np.array([1, 0, 2, 1])
    a = sp.csr_matrix((np.asarray(weights, np.float64), (rows, cols)), shape=(3, 3))
    np.savez(p, adj_data=a.data, adj_indices=a.indices, adj_indptr=a.indptr, adj_shape=np.array(a.shape),
             attr_matrix=np.eye(3), labels=np.array([0, 1, 0]))


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_non_finite_adjacency_weights_are_refused(tmp_path, bad):
    p = tmp_path / "g.npz"
    _benchmark_npz(p, [1.0, 1.0, bad, 1.0])
    with pytest.raises(DataFormatError, match=r"g\.npz: field adj_data has 1 NaN or infinite edge weight\(s\), "
                                              r"e\.g\. entry 2 \(edge 1 -> 2\)"):
        load(p)


def test_negative_adjacency_weights_get_one_notice_with_the_count(tmp_path):
    p = tmp_path / "g.npz"
    _benchmark_npz(p, [-1.0, 1.0, -0.5, 2.0])
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        g = load(p)
    lines = [str(w.message) for w in seen if "edge weight" in str(w.message)]
    assert lines == [f"{p}: field adj_data has 2 negative and 0 zero edge weight(s), e.g. entry 0 (edge 0 -> 1) = "
                     "-1.0; weights are not used: every stored entry is an unweighted edge"]
    assert lines[0] in g.meta["notices"] and g.num_edges == 4


def test_plain_layout_edge_weights_are_checked(tmp_path):
    p = tmp_path / "g.npz"
    np.savez(p, edge_index=EI, x=np.eye(3), edge_weight=np.array([1.0, np.nan, 1.0]))
    with pytest.raises(DataFormatError, match=r"field edge_weight has 1 NaN .* entry 1 \(edge 1 -> 2\)"):
        load(p)


def _csv_graph(d, labels, weights=None):
    d.mkdir()
    head = "src,dst" + (",weight" if weights else "")
    rows = [f"{i},{(i + 1) % len(labels)}" + (f",{weights[i]}" if weights else "") for i in range(len(labels))]
    (d / "edges.csv").write_text("\n".join([head] + rows) + "\n")
    (d / "nodes.csv").write_text("id,label,f0\n" + "".join(f"{i},{v},{i}\n" for i, v in enumerate(labels)))
    return d


def test_csv_weights_nan_refused_and_negative_counted(tmp_path):
    with pytest.raises(DataFormatError, match=r"edges\.csv: 1 NaN or infinite edge weight\(s\), e\.g\. line 3, "
                                              r"column 'weight': 'nan'"):
        load(_csv_graph(tmp_path / "a", ["0", "1", "0"], ["1", "nan", "1"]))
    with pytest.warns(DataNotice, match=r"field weight has 1 negative and 0 zero edge weight\(s\), e\.g\. entry 2"):
        load(_csv_graph(tmp_path / "b", ["0", "1", "0"], ["1", "2", "-3"]))


def test_a_mixed_numeric_and_name_label_column_is_refused(tmp_path):
    d = _csv_graph(tmp_path / "g", ["0", "2", "10", "1", "x", "2"])
    with pytest.raises(DataFormatError, match=r"nodes\.csv: line 6, column 'label': 'x' is not a number, but other "
                                              r"labels are \(e\.g\. '0' on line 2\)"):
        load(d)


def test_numeric_and_name_label_columns_keep_their_meaning(tmp_path):
    g = load(_csv_graph(tmp_path / "num", ["0", "2", "10", "1", "", "2"]))
    assert g.y.tolist() == [0, 2, 10, 1, -1, 2]  # class ids as written, "10" is class 10
    g = load(_csv_graph(tmp_path / "names", ["cat", "dog", "ant", "", "dog", "cat"]))
    assert g.meta["class_names"] == ["ant", "cat", "dog"] and g.y.tolist() == [1, 2, 0, -1, 2, 1]


@pytest.mark.parametrize("name, value, message", [
    ("lr", "inf", "lr must be a finite number, got 'inf'"),
    ("lr", "-inf", "lr must be a finite number"),
    ("lr", "1e308", "lr must be at most 3.4e+38 in size (the largest float32: the programs compute in float32, "
                    "where it would be inf), got '1e308'"),
    ("weight_decay", "1e308", "weight_decay must be at most 3.4e+38"),
    ("prox_mu", "-1e39", "prox_mu must be at most 3.4e+38"),
    ("prox_mu", "inf", "prox_mu must be a finite number"),
    ("loss_guard", "inf", "loss_guard must be a finite number"),
])
def test_rates_and_coefficients_must_be_finite_and_sane(name, value, message):
    with pytest.raises(ValueError) as exc:
        schema.resolve(RunConfig, flags={name: value})
    assert f"command line: {message}" in str(exc.value)


def test_every_float_option_of_every_system_refuses_inf_and_1e308():
    from fgl_jax import registry
    import fgl_jax.systems  # noqa: F401 (registers the systems)
    checked = 0
    for e in registry.entries("system"):
        for spec in schema.fields(e.info["config"]).values():
            if spec.type is not float:
                continue
            checked += 1
            for value in ("1e308", "-1e308") + (() if spec.allow_inf else ("inf", "-inf")):
                with pytest.raises(ValueError, match=spec.name):
                    schema.check_value(spec, value, e.name)
    assert checked > 50


def test_lumos_epsilon_still_takes_inf():
    from fgl_jax.systems.lumos.config import LumosConfig
    assert math.isinf(schema.resolve(LumosConfig, flags={"epsilon": "inf"}).epsilon)


def test_duplicate_yaml_keys_are_refused_naming_key_and_lines(tmp_path, capsys):
    p = tmp_path / "c.yaml"
    p.write_text("rounds: 2\nlr: 0.1\nrounds: 3\n")
    assert main(["run", "--config", str(p), "--print-config"]) == 2
    line = _one_error_line(capsys.readouterr().err)
    assert f"config file {p} is not valid YAML: key 'rounds' given twice (lines 1 and 3)" in line


def test_yaml_merge_keys_still_work():
    assert schema.read_yaml_text("base: &b {lr: 0.1}\nother:\n  <<: *b\n  lr: 0.2\n", "x")["other"] == {"lr": 0.2}


def test_a_nonexistent_data_dir_is_refused(tmp_path, monkeypatch):
    full = tmp_path / "full"
    (full / "d").mkdir(parents=True)
    (full / "d" / "a.txt").write_text("x")
    monkeypatch.setenv("FGL_JAX_DATA", str(full))
    missing = tmp_path / "typo"
    with pytest.raises(DataDirNotFoundError, match=f"data directory '{missing}' .* does not exist"):
        find_dataset_dir("d", ["d/a.txt"], missing)  # before: silently the copy under $FGL_JAX_DATA
    with pytest.raises(DataDirNotFoundError, match="does not exist"):
        load("csbm", data_dir=missing)  # a generated dataset used to ignore it
    with pytest.raises(DataDirNotFoundError, match="is not a directory"):
        load("csbm", data_dir=full / "d" / "a.txt")


def test_a_nonexistent_data_dir_on_the_command_line_is_one_line(tmp_path, capsys):
    assert main(["run", "--dataset", "csbm", "--data-dir", str(tmp_path / "typo"), "--rounds", "1",
                 "--no-progress"]) == 2
    assert "typo' (--data-dir / data_dir) does not exist" in _one_error_line(capsys.readouterr().err)


def test_dataset_sha256_is_refused_for_a_generated_dataset():
    from fgl_jax.experiment import resolve_dataset
    cfg = RunConfig(dataset="csbm", dataset_sha256="ab" * 32)
    with pytest.raises(ValueError, match="dataset 'csbm' is generated .* leave dataset_sha256 out"):
        resolve_dataset(cfg)


@pytest.mark.data
def test_dataset_sha256_is_checked_against_a_builtin_s_files(data_dir):
    from fgl_jax.data.planetoid import planetoid_files
    from fgl_jax.experiment import resolve_dataset
    h = hashlib.sha256()  # the digest recipe of a directory, recomputed here from the files themselves
    for rel in sorted(planetoid_files("cora")):
        h.update(f"{rel}\0{hashlib.sha256((data_dir / rel).read_bytes()).hexdigest()}\n".encode())
    right = h.hexdigest()
    cfg = RunConfig(dataset="cora", data_dir=str(data_dir), dataset_sha256=right.upper())
    assert resolve_dataset(cfg).dataset_sha256 == right.upper()  # kept (it used to be dropped)
    with pytest.raises(ValueError, match=f"dataset_sha256 '0+' does not match the files of dataset 'cora' "
                                         f"\\(sha256 {right}\\)"):
        resolve_dataset(RunConfig(dataset="cora", data_dir=str(data_dir), dataset_sha256="0" * 64))


def test_from_scipy_refuses_a_nan_adjacency_entry_instead_of_making_it_an_edge():
    from fgl_jax.data import from_scipy
    adj = sp.csr_matrix(np.array([[0, 1, np.nan], [1, 0, 1], [0, 1, 0]]))
    with pytest.raises(DataFormatError, match=r"from_scipy: field adjacency has 1 NaN or infinite edge weight\(s\), "
                                              r"e\.g\. entry 1 \(edge 0 -> 2\)"):
        from_scipy(adj, np.eye(3))
    with pytest.warns(DataNotice, match=r"from_scipy: field adjacency has 1 negative and 0 zero"):
        g = from_scipy(sp.csr_matrix(np.array([[0, -1, 0], [1, 0, 1], [0, 1, 0]])), np.eye(3))
    assert g.num_edges == 4 and any("negative" in n for n in g.meta["notices"])
