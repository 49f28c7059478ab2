"""The restricted unpickler: refuses anything but numpy/scipy/builtin containers, never runs it."""
import collections
import os
import pickle
import subprocess
import sys

import numpy as np
import pytest
import scipy.sparse as sp

from fgl_jax.data import DataFormatError, UnsafePickleError, safe_load
from fgl_jax.data.safe_pickle import DEFAULT_ALLOWED


class _Evil:
    """Unpickling this runs `touch <marker>` through os.system."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def test_malicious_reduce_is_refused_and_not_executed(tmp_path):
    marker = tmp_path / "pwned"
    path = tmp_path / "evil.pkl"
    path.write_bytes(pickle.dumps(_Evil(marker), protocol=2))

    with pytest.raises(UnsafePickleError) as exc:
        safe_load(path)
    msg = str(exc.value)
    assert str(path) in msg
    assert f"{os.system.__module__}.system" in msg  # 'posix.system' on Linux
    assert not marker.exists()

    # The payload is live: an unrestricted pickle.load in a child process does run it.
    subprocess.run([sys.executable, "-c", f"import pickle; pickle.load(open({str(path)!r}, 'rb'))"],
                   check=True, capture_output=True)
    assert marker.exists()


@pytest.mark.parametrize("module,name", [
    ("__builtin__", "eval"),            # Python-2 spelling, renamed to builtins.eval
    ("builtins", "exec"),
    ("builtins", "getattr"),
    ("builtins", "open"),
    ("subprocess", "Popen"),
    ("numpy", "load"),                  # could unpickle again with allow_pickle
    ("numpy.testing._private.utils", "runstring"),
    ("scipy.sparse", "load_npz"),
    ("collections", "namedtuple"),      # builds classes from strings
    ("copyreg", "__newobj__"),
])
def test_global_outside_allow_list_refused(tmp_path, module, name):
    # protocol-0 GLOBAL opcode followed by STOP: find_class is the only thing that happens
    path = tmp_path / "g.pkl"
    path.write_bytes(b"c" + module.encode() + b"\n" + name.encode() + b"\n.")
    with pytest.raises(UnsafePickleError, match=rf"'{module}\.{name}'"):
        safe_load(path)


def test_stack_global_protocol4_refused(tmp_path):
    path = tmp_path / "p4.pkl"
    path.write_bytes(pickle.dumps(subprocess.Popen, protocol=4))  # pickled by reference (STACK_GLOBAL)
    with pytest.raises(UnsafePickleError, match="subprocess.Popen"):
        safe_load(path)


def test_compression_codec_refused(tmp_path):
    # _codecs.encode is allowed only for the text codecs pickle itself emits
    path = tmp_path / "zip.pkl"
    path.write_bytes(b"c_codecs\nencode\n(Vabc\nVzlib_codec\ntR.")
    with pytest.raises(DataFormatError, match="zlib_codec"):
        safe_load(path)


@pytest.mark.parametrize("protocol", [2, 4, 5])
def test_round_trip_of_allowed_objects(tmp_path, protocol):
    obj = {
        "arr": np.arange(12, dtype=np.float32).reshape(3, 4),
        "ints": np.array([1, -2, 3], np.int64),
        "csr": sp.csr_matrix(np.array([[0, 1.5], [2, 0]])),
        "csc": sp.csc_matrix(np.eye(3, dtype=np.float32)),
        "scalar_keys": {np.int32(7): [1, 2], np.int64(9): (3,)},
        "dd": collections.defaultdict(list, {0: [1, 2]}),
        "misc": [1.5, "text", b"bytes", True, None, {1, 2}, frozenset({3}), complex(1, 2)],
    }
    path = tmp_path / "ok.pkl"
    path.write_bytes(pickle.dumps(obj, protocol=protocol))
    back = safe_load(path)
    np.testing.assert_array_equal(back["arr"], obj["arr"])
    assert back["arr"].dtype == np.float32
    np.testing.assert_array_equal(back["ints"], obj["ints"])
    assert (back["csr"] != obj["csr"]).nnz == 0 and back["csr"].format == "csr"
    assert (back["csc"] != obj["csc"]).nnz == 0 and back["csc"].format == "csc"
    assert back["scalar_keys"] == obj["scalar_keys"]
    assert isinstance(back["dd"], collections.defaultdict) and back["dd"][0] == [1, 2] and back["dd"][5] == []
    assert back["misc"] == obj["misc"]


def test_narrower_allow_list_refuses_numpy(tmp_path):
    path = tmp_path / "arr.pkl"
    path.write_bytes(pickle.dumps(np.zeros(3), protocol=2))
    only_builtins = frozenset(p for p in DEFAULT_ALLOWED if p[0] == "builtins")
    with pytest.raises(UnsafePickleError, match="numpy"):
        safe_load(path, allowed=only_builtins)


@pytest.mark.parametrize("content", [b"", b"\x80\x02]q\x00(K\x01", b"not a pickle at all", b"\x80\x02\xff\xfe"])
def test_corrupt_bytes_raise_data_format_error(tmp_path, content):
    path = tmp_path / "bad.pkl"
    path.write_bytes(content)
    with pytest.raises(DataFormatError, match="bad.pkl") as exc:
        safe_load(path)
    assert not isinstance(exc.value, UnsafePickleError)


@pytest.mark.data
@pytest.mark.parametrize("fname", ["ind.cora.allx", "ind.citeseer.graph", "ind.cora.ty"])
def test_truncated_real_file(tmp_path, data_dir, fname):
    raw = (data_dir / "planetoid" / fname).read_bytes()
    cut = tmp_path / fname
    cut.write_bytes(raw[: len(raw) // 2])
    with pytest.raises(DataFormatError, match=fname) as exc:
        safe_load(cut)
    assert "truncated" in str(exc.value)


@pytest.mark.data
def test_real_python2_pickles_load(data_dir):
    # Python-2 era: numpy.core.multiarray._reconstruct, scipy.sparse.csr.csr_matrix, __builtin__.list
    x = safe_load(data_dir / "planetoid" / "ind.cora.x")
    assert sp.isspmatrix_csr(x) and x.shape == (140, 1433)
    g = safe_load(data_dir / "planetoid" / "ind.cora.graph")
    assert isinstance(g, collections.defaultdict) and len(g) == 2708
