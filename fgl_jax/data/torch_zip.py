"""Read a ``torch.save`` file without torch and without plain ``pickle.load``.

A ``.pt`` file written by torch >= 1.6 is a zip archive (uncompressed members) with one top-level
folder ``<archive>/`` (any name; torch uses the file's stem or ``archive``):

    <archive>/data.pkl            the object, pickled with protocol 2; each tensor is the call
                                  torch._utils._rebuild_tensor_v2(storage, storage_offset, size,
                                  stride, requires_grad, backward_hooks[, metadata]) where
                                  `storage` is a persistent id
                                  ("storage", torch.<Type>Storage, key, location, numel)
    <archive>/data/<key>          that storage's raw bytes: numel elements of the storage type,
                                  in the byte order of <archive>/byteorder ("little" when absent)
    <archive>/version, .format_version, .storage_alignment, .data/serialization_id
                                  bookkeeping, not read

`read_torch` unpickles ``data.pkl`` with the restricted unpickler of `fgl_jax.data.safe_pickle`,
allowing only the globals that rebuild tensors (``torch._utils._rebuild_tensor_v2``, the typed
storage classes ``torch.FloatStorage`` ... mapped to NumPy dtypes, ``collections.OrderedDict``)
and PyTorch Geometric's ``Data`` (``torch_geometric.data.data.Data``, ``DataEdgeAttr``,
``DataTensorAttr``, ``torch_geometric.data.storage.GlobalStorage``), which becomes a plain dict of
its attributes. Every other global is refused in one line naming the file and the global, before
anything is imported or called; nothing of torch or PyG is imported. A tensor comes back as a
`TensorRef` (shape and dtype known, bytes read by ``.numpy()``), so reading a client's node map
does not load its feature matrix.
"""
from __future__ import annotations

import collections
import io
import os
import pickle
import zipfile
from pathlib import Path
from typing import Any, Union

import numpy as np

from .paths import DataFormatError
from .safe_pickle import RestrictedUnpickler, UnsafePickleError

__all__ = ["read_torch", "tensor", "TensorRef", "TORCH_ALLOWED"]

PathLike = Union[str, os.PathLike]

# torch's typed storage classes (the first field of a storage's persistent id) -> element type
_STORAGE_DTYPES = {"DoubleStorage": "f8", "FloatStorage": "f4", "HalfStorage": "f2", "LongStorage": "i8",
                   "IntStorage": "i4", "ShortStorage": "i2", "CharStorage": "i1", "ByteStorage": "u1",
                   "BoolStorage": "?", "ComplexFloatStorage": "c8", "ComplexDoubleStorage": "c16"}


class _StorageType:
    """Stand-in for ``torch.<Type>Storage``: only names an element type (never called)."""

    def __init__(self, name: str):
        self.name, self.code = name, _STORAGE_DTYPES[name]

    def __setstate__(self, state: Any) -> None:  # a pickle's BUILD must not rewrite what it names
        raise pickle.UnpicklingError("BUILD on a storage type")


class _PygRecord:
    """Stand-in for a PyG class: keeps the state pickle's BUILD hands it (nothing else runs)."""

    def __setstate__(self, state: Any) -> None:
        self.state = state


class _Data(_PygRecord):
    pass


class _GlobalStorage(_PygRecord):
    pass


class _AttrMarker:
    """Stand-in for PyG's DataEdgeAttr / DataTensorAttr classes (stored as class references)."""


_PYG = {("torch_geometric.data.data", "Data"): _Data,
        ("torch_geometric.data.data", "DataEdgeAttr"): _AttrMarker,
        ("torch_geometric.data.data", "DataTensorAttr"): _AttrMarker,
        ("torch_geometric.data.storage", "GlobalStorage"): _GlobalStorage}


class TensorRef:
    """A tensor of a torch file: shape and dtype now, the values on `numpy()`.

    Attributes:
      shape: the tensor's shape (a tuple of ints).
      dtype: its NumPy dtype.
    """

    def __init__(self, path: Path, member: str, dtype: np.dtype, numel: int, offset: int,
                 shape: tuple[int, ...], stride: tuple[int, ...]):
        self._path, self._member, self._numel = path, member, numel
        self._offset, self.shape, self._stride, self.dtype = offset, shape, stride, dtype

    def __setstate__(self, state: Any) -> None:  # a pickle's BUILD must not point it at another file
        raise pickle.UnpicklingError("BUILD on a tensor")

    def __repr__(self) -> str:
        return f"TensorRef(shape={self.shape}, dtype={self.dtype}, member={self._member!r})"

    def numpy(self) -> np.ndarray:
        """The tensor's values.

        Returns:
          A new NumPy array of `shape` and `dtype`.

        Raises:
          DataFormatError: the storage member is missing or shorter than the view needs.
        """
        with zipfile.ZipFile(self._path) as z:
            try:
                raw = z.read(self._member)
            except KeyError:
                raise DataFormatError(f"{self._path}: storage member {self._member} is missing") from None
        if len(raw) < self._numel * self.dtype.itemsize:
            raise DataFormatError(f"{self._path}: storage {self._member} holds {len(raw)} bytes, fewer than its "
                                  f"{self._numel} elements of {self.dtype}")
        flat = np.frombuffer(raw, self.dtype, count=self._numel)
        if any(s == 0 for s in self.shape):
            return np.zeros(self.shape, self.dtype.newbyteorder("="))
        view = np.lib.stride_tricks.as_strided(flat[self._offset:], self.shape,
                                               tuple(s * self.dtype.itemsize for s in self._stride), writeable=False)
        return np.array(view, dtype=self.dtype.newbyteorder("="))


TORCH_ALLOWED: frozenset[tuple[str, str]] = frozenset(
    {("torch._utils", "_rebuild_tensor_v2"), ("collections", "OrderedDict")}
    | {("torch", name) for name in _STORAGE_DTYPES} | set(_PYG))


def _archive(z: zipfile.ZipFile, path: Path) -> str:
    pkls = [n for n in z.namelist() if n.endswith("/data.pkl") and n.count("/") == 1]
    if len(pkls) != 1:
        raise DataFormatError(f"{path}: not a torch.save zip archive (expected one <archive>/data.pkl, found "
                              f"{len(pkls)})")
    return pkls[0][: -len("/data.pkl")]


def read_torch(path: PathLike) -> Any:
    """The object a ``torch.save`` zip file holds, as plain Python (module docstring).

    Args:
      path: the ``.pt`` file.

    Returns:
      The object with every tensor a `TensorRef`, every PyG ``Data`` a dict of its attributes
      (``{"x": TensorRef, "edge_index": ..., "global_map": {...}, ...}``) and OrderedDicts as dicts.

    Raises:
      UnsafePickleError: the pickle names a global outside `TORCH_ALLOWED` (one line naming the file
        and the global; nothing imported or run).
      DataFormatError: not a zip archive (torch's legacy format, or another file), a malformed
        pickle, a persistent id or tensor view that does not fit its storage.
    """
    path = Path(path)
    if not path.is_file():
        raise DataFormatError(f"{path}: no such file")
    if not zipfile.is_zipfile(path):
        with open(path, "rb") as fh:
            head = fh.read(8)
        raise DataFormatError(f"{path}: not a torch zip archive (starts {head!r}); only files written by "
                              "torch.save of torch >= 1.6 (its default zip format) are read")
    with zipfile.ZipFile(path) as z:
        prefix = _archive(z, path)
        names = set(z.namelist())
        order = z.read(f"{prefix}/byteorder").decode().strip() if f"{prefix}/byteorder" in names else "little"
        if order not in ("little", "big"):
            raise DataFormatError(f"{path}: {prefix}/byteorder is {order!r}, expected little or big")
        sizes = {n: z.getinfo(n).file_size for n in names}
        pickled = z.read(f"{prefix}/data.pkl")
    endian = "<" if order == "little" else ">"
    storages: dict[str, tuple[str, np.dtype, int]] = {}

    def persistent(pid: Any) -> Any:
        if not (isinstance(pid, tuple) and len(pid) == 5 and pid[0] == "storage"
                and isinstance(pid[1], _StorageType) and isinstance(pid[2], str) and isinstance(pid[4], int)):
            raise pickle.UnpicklingError(f"unexpected persistent id {pid!r} (expected a typed storage)")
        _, kind, key, _location, numel = pid
        member = f"{prefix}/data/{key}"
        dtype = np.dtype(endian + kind.code) if kind.code not in ("?", "i1", "u1") else np.dtype(kind.code)
        if member not in sizes:
            raise pickle.UnpicklingError(f"storage {key!r} names member {member}, which the archive lacks")
        if numel < 0 or numel * dtype.itemsize > sizes[member]:
            raise pickle.UnpicklingError(f"storage {key!r} declares {numel} elements of {dtype} but {member} "
                                         f"holds {sizes[member]} bytes")
        storages[key] = (member, dtype, numel)
        return ("storage", key)

    def rebuild(storage: Any, offset: Any, size: Any, stride: Any, *_rest: Any) -> TensorRef:
        if not (isinstance(storage, tuple) and storage[:1] == ("storage",) and storage[1] in storages):
            raise pickle.UnpicklingError("_rebuild_tensor_v2 without a storage")
        member, dtype, numel = storages[storage[1]]
        shape, strides = tuple(int(v) for v in size), tuple(int(v) for v in stride)
        if len(shape) != len(strides) or int(offset) < 0 or any(s < 0 for s in shape + strides):
            raise pickle.UnpicklingError(f"tensor view offset {offset}, size {shape}, stride {strides} is malformed")
        last = int(offset) + sum((n - 1) * s for n, s in zip(shape, strides)) if all(shape) else -1
        if last >= numel:
            raise pickle.UnpicklingError(f"tensor view offset {offset}, size {shape}, stride {strides} reaches "
                                         f"element {last} of a storage of {numel}")
        return TensorRef(path, member, dtype, numel, int(offset), shape, strides)

    known: dict[tuple[str, str], Any] = {("torch._utils", "_rebuild_tensor_v2"): rebuild,
                                         ("collections", "OrderedDict"): collections.OrderedDict,
                                         **{("torch", n): _StorageType(n) for n in _STORAGE_DTYPES}, **_PYG}
    unpickler = RestrictedUnpickler(io.BytesIO(pickled), path, TORCH_ALLOWED, known=known, persistent=persistent,
                                    expected="torch tensor / storage / PyG Data")
    try:
        obj = unpickler.load()
    except UnsafePickleError:
        raise
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError, IndexError, KeyError,
            LookupError, OverflowError, MemoryError, UnicodeError) as e:
        raise DataFormatError(f"{path}: cannot unpickle {prefix}/data.pkl ({type(e).__name__}: {e})") from e
    return _plain(obj, path)


def _plain(obj: Any, path: Path, depth: int = 0) -> Any:
    """PyG stand-ins -> dicts of their attributes; OrderedDicts -> dicts; containers recursively."""
    if depth > 50:
        raise DataFormatError(f"{path}: objects nested deeper than 50 levels")
    if isinstance(obj, _Data):
        state = obj.state if isinstance(getattr(obj, "state", None), dict) else {}
        return _plain(state.get("_store"), path, depth + 1) if "_store" in state else {}
    if isinstance(obj, _GlobalStorage):
        state = obj.state if isinstance(getattr(obj, "state", None), dict) else {}
        mapping = state.get("_mapping", {})
        return {k: _plain(v, path, depth + 1) for k, v in mapping.items()} if isinstance(mapping, dict) else {}
    if isinstance(obj, dict):
        return {k: _plain(v, path, depth + 1) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(_plain(v, path, depth + 1) for v in obj)
    if isinstance(obj, (_PygRecord, _AttrMarker, _StorageType)) or obj is _AttrMarker:
        return None
    return obj


def tensor(value: Any, path: PathLike, what: str) -> np.ndarray:
    """The NumPy values of a `TensorRef` read from `path` (a clear error when `value` is none).

    Args:
      value: what `read_torch` returned for the field.
      path: the file, for the message.
      what: the field's name, for the message.

    Returns:
      The array.

    Raises:
      DataFormatError: `value` is not a tensor.
    """
    if not isinstance(value, TensorRef):
        raise DataFormatError(f"{path}: {what} is a {type(value).__name__}, expected a tensor")
    return value.numpy()


