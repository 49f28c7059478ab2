"""Data-directory resolution, missing-file errors and sha256 verification."""
import hashlib
import re
import shutil
from pathlib import Path

import pytest

from fgl_jax.data import (DataChecksumError, DataFormatError, DatasetNotFoundError, load_facebook, load_planetoid,
                          resolve_data_dir, sha256_file, verify_files)
from fgl_jax.data.musae import FACEBOOK_SHA256, LASTFM_ASIA_SHA256
from fgl_jax.data.paths import candidate_dirs, find_dataset_dir
from fgl_jax.data.planetoid import PLANETOID_SHA256, planetoid_files


@pytest.fixture
def clean_env(monkeypatch, tmp_path):
    """No FGL_JAX_DATA, and a cache dir inside tmp_path."""
    monkeypatch.delenv("FGL_JAX_DATA", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    return tmp_path


def test_resolution_order(clean_env, monkeypatch, tmp_path):
    assert resolve_data_dir() == tmp_path / "xdg" / "fgl_jax" / "data"
    monkeypatch.setenv("FGL_JAX_DATA", str(tmp_path / "env"))
    assert resolve_data_dir() == tmp_path / "env"
    assert resolve_data_dir(tmp_path / "arg") == tmp_path / "arg"
    assert resolve_data_dir(str(tmp_path / "arg")) == tmp_path / "arg"
    assert [p for p, _ in candidate_dirs(tmp_path / "arg")] == [
        tmp_path / "arg", tmp_path / "env", tmp_path / "xdg" / "fgl_jax" / "data"]


def test_cache_dir_without_xdg(monkeypatch, tmp_path):
    monkeypatch.delenv("FGL_JAX_DATA", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert resolve_data_dir() == tmp_path / ".cache" / "fgl_jax" / "data"


def test_search_falls_through_to_a_directory_with_all_files(clean_env, monkeypatch, tmp_path):
    full, partial = tmp_path / "full", tmp_path / "partial"
    for root, rels in ((full, ["d/a.txt", "d/b.txt"]), (partial, ["d/a.txt"])):
        for rel in rels:
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_text("x")
    monkeypatch.setenv("FGL_JAX_DATA", str(full))
    (tmp_path / "empty").mkdir()  # an existing --data-dir without the dataset (a missing one is refused)
    assert find_dataset_dir("d", ["d/a.txt", "d/b.txt"], tmp_path / "empty") == full
    # a --data-dir holding part of the dataset is an error, not a silent switch to the other copy
    with pytest.raises(DatasetNotFoundError, match="d/b.txt") as exc:
        find_dataset_dir("d", ["d/a.txt", "d/b.txt"], partial)
    assert str(full) not in str(exc.value)


def test_not_found_error_names_file_places_and_remedy(clean_env, monkeypatch, tmp_path):
    monkeypatch.setenv("FGL_JAX_DATA", str(tmp_path / "env"))
    (tmp_path / "arg").mkdir()  # an existing --data-dir without the files (a missing one is refused)
    with pytest.raises(DatasetNotFoundError) as exc:
        load_planetoid("cora", data_dir=tmp_path / "arg")
    err = exc.value
    assert isinstance(err, FileNotFoundError)
    msg = str(err)
    assert "planetoid/ind.cora.x" in msg and "planetoid/ind.cora.test.index" in msg
    for place in (tmp_path / "arg", tmp_path / "env", tmp_path / "xdg" / "fgl_jax" / "data"):
        assert str(place) in msg
    assert "--data-dir" in msg and "FGL_JAX_DATA" in msg
    assert err.missing == list(planetoid_files("cora"))


def test_sha256_known_vector(tmp_path):
    p = tmp_path / "abc"
    p.write_bytes(b"abc")  # FIPS 180-2 test vector
    assert sha256_file(p) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"


def test_verify_files_mismatch(tmp_path):
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "f.bin").write_bytes(b"abc")
    good = {"d/f.bin": "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"}
    verify_files("toy", tmp_path, good)
    bad = {"d/f.bin": "0" * 64}
    with pytest.raises(DataChecksumError) as exc:
        verify_files("toy", tmp_path, bad)
    msg = str(exc.value)
    assert "f.bin" in msg and "0" * 64 in msg and good["d/f.bin"] in msg
    with pytest.warns(UserWarning, match="f.bin"):
        verify_files("toy", tmp_path, bad, strict=False)
    with pytest.raises(DatasetNotFoundError, match="missing.bin"):
        verify_files("toy", tmp_path, {"d/missing.bin": "0" * 64})


def test_embedded_hashes_match_manifest_table():
    """The constants in the loaders equal the sha256 column of the data manifest (when present)."""
    readme = Path(__file__).resolve().parents[2] / "shared" / "data" / "README.md"
    if not readme.is_file():
        pytest.skip("manifest README not available")
    text = readme.read_text(encoding="utf-8")
    for table in (PLANETOID_SHA256, FACEBOOK_SHA256, LASTFM_ASIA_SHA256):
        for rel, digest in table.items():
            fname = rel.split("/")[-1]
            assert re.search(rf"\| `{re.escape(fname)}` \| [\d,]+ \| `{digest}` \|", text), rel


@pytest.mark.data
def test_real_files_match_embedded_hashes(data_dir):
    for table in (PLANETOID_SHA256, FACEBOOK_SHA256, LASTFM_ASIA_SHA256):
        verify_files("all", data_dir, table)
        for rel, digest in table.items():  # independent of sha256_file's cache
            assert hashlib.sha256((data_dir / rel).read_bytes()).hexdigest() == digest


@pytest.mark.data
def test_truncated_dataset_file_is_caught(data_dir, tmp_path):
    dst = tmp_path / "planetoid"
    shutil.copytree(data_dir / "planetoid", dst)
    raw = (dst / "ind.cora.graph").read_bytes()
    (dst / "ind.cora.graph").write_bytes(raw[:-100])
    with pytest.raises(DataChecksumError, match="ind.cora.graph"):
        load_planetoid("cora", data_dir=tmp_path)
    with pytest.raises(DataFormatError, match="ind.cora.graph"):  # the parser also catches it
        load_planetoid("cora", data_dir=tmp_path, verify=False)


@pytest.mark.data
def test_corrupt_csv_byte_is_caught(data_dir, tmp_path):
    dst = tmp_path / "facebook"
    shutil.copytree(data_dir / "facebook", dst)
    with open(dst / "edges.csv", "r+b") as fh:
        fh.seek(100)
        fh.write(b"x")
    with pytest.raises(DataChecksumError, match="edges.csv"):
        load_facebook(tmp_path)
    with pytest.raises(DataFormatError, match=r"edges.csv, line \d+"):
        load_facebook(tmp_path, verify=False)
