"""A restricted unpickler for the public pickled datasets (Planetoid, HyperGCN).

`pickle.load` will import and call anything a file names, so a pickle from the internet is code.
The Planetoid files are Python-2 pickles of numpy arrays, scipy CSR matrices and a
``collections.defaultdict``; the HyperGCN files add plain dicts/lists and numpy scalars. The
unpickler below resolves *only* the (module, name) pairs needed for those objects and refuses
everything else with `UnsafePickleError` before anything is imported or called.

Pickle can only run code through the objects `find_class` hands back (REDUCE / NEWOBJ / BUILD
call or construct them), so restricting `find_class` to constructors of inert containers is
sufficient: nothing a file names outside the allow-list is ever imported or executed. (It does
not bound memory: a crafted file can still ask numpy for a huge array. The loaders check each
file's sha256 before unpickling it, which rules that out for the published files.)

`RestrictedUnpickler` takes stand-ins and a persistent-id hook for another library's pickles:
`fgl_jax.data.torch_zip` reads torch's ``.pt`` files with it (tensors, storages, PyG ``Data``).

Python-2 names (``__builtin__.list``, ``copy_reg._reconstructor``) are translated to their
Python-3 spelling with the standard library's own table (`_compat_pickle`) and the translated
pair is what must be allowed. Old module paths of numpy and scipy (``numpy.core.multiarray``,
``scipy.sparse.csr``) are resolved to today's objects directly, so no deprecated module is
imported.
"""
from __future__ import annotations

import _compat_pickle
import codecs
import collections
import copyreg
import importlib
import os
import pickle
from pathlib import Path
from typing import Any, Callable, Optional, Union

import numpy as np
import scipy.sparse as sp

from .paths import DataFormatError

PathLike = Union[str, os.PathLike]


class UnsafePickleError(DataFormatError):
    """A pickle names a global outside the allow-list; it was refused, not imported or run.

    A subclass of DataFormatError (the file is not in the expected format) so one `except`
    handles every bad file; catch UnsafePickleError first to treat it as a security event.
    """

    def __init__(self, path: PathLike, module: str, name: str, expected: str = "numpy / scipy / builtin container"):
        self.path, self.module, self.name = Path(path), module, name
        py3 = ".".join(_to_py3(module, name))
        alias = f" (Python 3: '{py3}')" if py3 != f"{module}.{name}" else ""
        super().__init__(
            f"{path}: refusing to unpickle global '{module}.{name}'{alias}: it is not one of the {expected} "
            "classes this loader expects. The file was not loaded and nothing "
            "it names was imported or executed. Replace it with the published file.")


def _latin1_encode(obj: str, encoding: str = "utf-8") -> bytes:
    """Stand-in for ``_codecs.encode``, which Python-3 protocol-2 pickles use to carry bytes.

    Only the text encodings pickle itself emits are accepted: an arbitrary codec name could
    select a compression codec (zlib, bz2) and turn a small file into a memory bomb.
    """
    try:
        name = codecs.lookup(encoding).name
    except (LookupError, TypeError):
        raise pickle.UnpicklingError(f"_codecs.encode with unknown codec {encoding!r}") from None
    if name not in ("iso8859-1", "latin-1", "utf-8", "ascii"):
        raise pickle.UnpicklingError(f"_codecs.encode with codec {encoding!r} is not allowed")
    if not isinstance(obj, str):
        raise pickle.UnpicklingError(f"_codecs.encode argument must be str, got {type(obj).__name__}")
    return codecs.encode(obj, encoding)


# numpy's private reconstruction helpers are taken from the objects numpy itself uses in its
# own pickles, so they resolve correctly whatever numpy calls its private modules today.
_NP_RECONSTRUCT = np.ndarray(0).__reduce__()[0]
_NP_SCALAR = np.int32(0).__reduce__()[0]
_NP_FROMBUFFER = np.arange(1).__reduce_ex__(5)[0]

# (module, name) -> the object returned. Keys are the exact pairs a pickle may name after the
# standard Python 2 -> 3 renaming.
_KNOWN: dict[tuple[str, str], Any] = {
    # numpy arrays, dtypes and scalars (old `numpy.core`, current `numpy._core` spellings)
    ("numpy", "ndarray"): np.ndarray,
    ("numpy", "dtype"): np.dtype,
    ("numpy.core.multiarray", "_reconstruct"): _NP_RECONSTRUCT,
    ("numpy._core.multiarray", "_reconstruct"): _NP_RECONSTRUCT,
    ("numpy.core.multiarray", "scalar"): _NP_SCALAR,
    ("numpy._core.multiarray", "scalar"): _NP_SCALAR,
    ("numpy.core.numeric", "_frombuffer"): _NP_FROMBUFFER,
    ("numpy._core.numeric", "_frombuffer"): _NP_FROMBUFFER,
    # scipy CSR / CSC (Python-2-era `scipy.sparse.csr`, current `scipy.sparse._csr`, public path)
    ("scipy.sparse.csr", "csr_matrix"): sp.csr_matrix,
    ("scipy.sparse._csr", "csr_matrix"): sp.csr_matrix,
    ("scipy.sparse", "csr_matrix"): sp.csr_matrix,
    ("scipy.sparse.csc", "csc_matrix"): sp.csc_matrix,
    ("scipy.sparse._csc", "csc_matrix"): sp.csc_matrix,
    ("scipy.sparse", "csc_matrix"): sp.csc_matrix,
    ("scipy.sparse._csr", "csr_array"): sp.csr_array,
    ("scipy.sparse", "csr_array"): sp.csr_array,
    ("scipy.sparse._csc", "csc_array"): sp.csc_array,
    ("scipy.sparse", "csc_array"): sp.csc_array,
    # containers
    ("collections", "defaultdict"): collections.defaultdict,
    ("collections", "OrderedDict"): collections.OrderedDict,
    # object.__new__(cls) for protocol-0/1/2 class instances; cls itself must be allowed
    ("copyreg", "_reconstructor"): copyreg._reconstructor,
    ("_codecs", "encode"): _latin1_encode,
    # plain builtin types: constructors of inert values only (no eval/exec/getattr/open/...)
    **{("builtins", t.__name__): t for t in (list, dict, set, frozenset, tuple, object, int, float,
                                              complex, bool, str, bytes, bytearray)},
}

DEFAULT_ALLOWED: frozenset[tuple[str, str]] = frozenset(_KNOWN)


def _to_py3(module: str, name: str) -> tuple[str, str]:
    """Python 2 -> 3 renaming of a global, as pickle's fix_imports does."""
    if (module, name) in _compat_pickle.NAME_MAPPING:
        return _compat_pickle.NAME_MAPPING[(module, name)]
    return _compat_pickle.IMPORT_MAPPING.get(module, module), name


class RestrictedUnpickler(pickle.Unpickler):
    """`pickle.Unpickler` whose `find_class` hands back only allow-listed objects (module docstring).

    Args:
      file: the binary stream.
      path: names the file in errors.
      allowed: exact (module, name) pairs (Python-3 spelling) the stream may name.
      known: stand-ins for pairs outside `_KNOWN` ((module, name) -> the object returned, never
        imported): how a reader of another library's pickles (`fgl_jax.data.torch_zip`) maps that
        library's classes to inert local ones. A pair must also be in `allowed`.
      persistent: ``persistent_load(pid)`` (torch's zip format names storages by persistent id);
        None refuses every persistent id.
      expected: what the allowed classes are, for the refusal message.
    """

    def __init__(self, file, path: PathLike, allowed: frozenset[tuple[str, str]],
                 known: Optional[dict[tuple[str, str], Any]] = None,
                 persistent: Optional[Callable[[Any], Any]] = None,
                 expected: str = "numpy / scipy / builtin container"):
        super().__init__(file, encoding="latin1")
        self._path = path
        self._allowed = allowed
        self._known = dict(known or {})
        self._persistent = persistent
        self._expected = expected

    def find_class(self, module: str, name: str) -> Any:
        module3, name3 = _to_py3(module, name)
        if (module3, name3) not in self._allowed:
            raise UnsafePickleError(self._path, module, name, self._expected)
        if (module3, name3) in self._known:
            return self._known[(module3, name3)]
        if (module3, name3) in _KNOWN:
            return _KNOWN[(module3, name3)]
        # A caller-extended allow-list: import only the exact module named and take one attribute.
        mod = importlib.import_module(module3)
        obj = mod
        for part in name3.split("."):
            obj = getattr(obj, part)
        return obj

    def persistent_load(self, pid: Any) -> Any:
        if self._persistent is None:
            raise pickle.UnpicklingError(f"persistent id {pid!r} not supported")
        return self._persistent(pid)


def safe_load(path: PathLike, *, allowed: frozenset[tuple[str, str]] = DEFAULT_ALLOWED) -> Any:
    """Unpickle one object from `path`, allowing only the globals in `allowed`.

    Args:
      path: the pickle file.
      allowed: exact (module, name) pairs (Python-3 spelling) the file may name.

    Returns:
      The unpickled object.

    Raises:
      UnsafePickleError: the file names a global outside `allowed` (nothing was executed).
      DataFormatError: the file is truncated or corrupt (names the file and what went wrong).
      FileNotFoundError: the file does not exist.
    """
    path = Path(path)
    with open(path, "rb") as fh:
        try:
            return RestrictedUnpickler(fh, path, frozenset(allowed)).load()
        except UnsafePickleError:
            raise
        except (pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError, IndexError,
                KeyError, LookupError, OverflowError, MemoryError, UnicodeError, ImportError) as e:
            # Truncated files raise EOFError / "pickle data was truncated"; corrupt ones any of the
            # others. The raw traceback names neither the file nor the likely cause.
            size = path.stat().st_size
            raise DataFormatError(
                f"{path}: cannot unpickle ({size} bytes): {type(e).__name__}: {e}. The file is "
                "truncated or corrupt; replace it with the published file.") from e


def safe_load_npy_object(fh, path: PathLike, *, allowed: frozenset[tuple[str, str]] = DEFAULT_ALLOWED) -> Any:
    """An object array stored in a ``.npy`` stream (e.g. a member of an ``.npz``), unpickled with
    the same allow-list as `safe_load` (numpy's own reader would use plain pickle).

    `fh` is positioned at the start of the ``.npy`` data; `path` names it in errors.
    """
    try:
        version = np.lib.format.read_magic(fh)
        shape, _fortran, dtype = (np.lib.format.read_array_header_1_0(fh) if version == (1, 0)
                                  else np.lib.format.read_array_header_2_0(fh))
    except (ValueError, EOFError) as e:
        raise DataFormatError(f"{path}: not a .npy array ({type(e).__name__}: {e})") from e
    if not dtype.hasobject:
        raise DataFormatError(f"{path}: expected an object array, found dtype {dtype}")
    try:
        return RestrictedUnpickler(fh, path, frozenset(allowed)).load()
    except UnsafePickleError:
        raise
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError, IndexError, KeyError,
            LookupError, OverflowError, MemoryError, UnicodeError, ImportError) as e:
        raise DataFormatError(f"{path}: cannot unpickle the object array ({type(e).__name__}: {e})") from e
