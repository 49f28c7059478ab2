"""Where dataset files live, how they are found, and how they are checked.

Search order for a data directory (first match wins):

1. the ``data_dir`` argument (the CLI's ``--data-dir``; it must be an existing directory, else
   `DataDirNotFoundError`; an existing one that holds none of a dataset's files falls through),
2. the environment variable ``FGL_JAX_DATA``,
3. the user cache directory ``$XDG_CACHE_HOME/fgl_jax/data`` (default ``~/.cache/fgl_jax/data``).

A data directory holds one sub-folder per dataset in the layout of the public releases
(``planetoid/ind.cora.x``, ``facebook/edges.csv``, ...). Nothing is downloaded while loading;
``fgl-jax datasets --download NAME`` (`fgl_jax.data.download`) fetches a built-in dataset's files
from the public location its registration names (`github_files` builds those URLs).

Every file a loader reads is checked against the sha256 of the public file it expects (the
constants live next to each loader), so a truncated or substituted file is caught before it is
parsed, and the error says which file, which hash was expected and which was found.
"""
from __future__ import annotations

import hashlib
import os
import warnings
from pathlib import Path
from typing import Mapping, Optional, Sequence, Union

PathLike = Union[str, os.PathLike]

ENV_VAR = "FGL_JAX_DATA"
HOW_TO_SUPPLY = (f"Supply the files with `--data-dir DIR` (or `data_dir=DIR`), or set the environment "
                 f"variable {ENV_VAR}=DIR, where DIR contains the dataset's sub-folder "
                 "(e.g. DIR/planetoid/ind.cora.x).")


class DataError(Exception):
    """Base class of every data-layer error (missing, corrupt, malformed or unexpected files)."""


class DatasetNotFoundError(DataError, FileNotFoundError):
    """A dataset file is missing from every place that was searched."""

    def __init__(self, dataset: str, missing: Sequence[str], searched: Sequence[tuple[Path, str]]):
        self.dataset = dataset
        self.missing = list(missing)
        self.searched = list(searched)
        lines = [f"dataset {dataset!r}: missing file(s) {', '.join(self.missing)}.", "Looked in:"]
        lines += [f"  - {path}  ({origin})" for path, origin in self.searched]
        lines.append(HOW_TO_SUPPLY)
        self.message = "\n".join(lines)
        # FileNotFoundError(errno, strerror) would prefix "[Errno ...]"; keep the plain message.
        Exception.__init__(self, self.message)

    def __str__(self) -> str:
        return self.message


class DataChecksumError(DataError, ValueError):
    """A file's sha256 differs from the published file it should be a copy of."""

    def __init__(self, dataset: str, path: Path, expected: str, actual: str):
        self.dataset, self.path, self.expected, self.actual = dataset, Path(path), expected, actual
        super().__init__(
            f"dataset {dataset!r}: file {path} has sha256 {actual}, expected {expected}. The file is "
            "truncated, corrupt or a different release; replace it with a byte-for-byte copy of the "
            "public file (or pass verify=False to skip the check at your own risk).")


class DataFormatError(DataError, ValueError):
    """A file exists but cannot be parsed as the expected format (names file, line/field, content)."""


class DataDirNotFoundError(DataError, FileNotFoundError):
    """An explicit data directory (`data_dir` / --data-dir) is not an existing directory."""

    def __init__(self, data_dir: PathLike):
        self.path = Path(data_dir)
        p = self.path.expanduser()
        what = "is not a directory" if p.exists() else "does not exist"
        self.message = (f"data directory {str(data_dir)!r} (--data-dir / data_dir) {what}; pass the directory that "
                        "holds the dataset sub-folders, or leave it out to use $" + ENV_VAR)
        Exception.__init__(self, self.message)

    def __str__(self) -> str:
        return self.message


def check_data_dir(data_dir: Optional[PathLike]) -> Optional[Path]:
    """The explicit data directory, expanded; DataDirNotFoundError when it is given but is no directory
    (a typo there must not fall through silently to $FGL_JAX_DATA or the cache)."""
    if data_dir is None or str(data_dir) == "":
        return None
    p = Path(data_dir).expanduser()
    if not p.is_dir():
        raise DataDirNotFoundError(data_dir)
    return p


def default_cache_dir() -> Path:
    """``$XDG_CACHE_HOME/fgl_jax/data``, or ``~/.cache/fgl_jax/data`` when XDG_CACHE_HOME is unset/empty."""
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "fgl_jax" / "data"


def candidate_dirs(data_dir: Optional[PathLike] = None) -> list[tuple[Path, str]]:
    """Every data directory to search, in priority order, each with where it came from."""
    out: list[tuple[Path, str]] = []
    if data_dir is not None and str(data_dir) != "":
        out.append((Path(data_dir).expanduser(), "data_dir argument / --data-dir"))
    env = os.environ.get(ENV_VAR)
    if env:
        out.append((Path(env).expanduser(), f"environment variable {ENV_VAR}"))
    out.append((default_cache_dir(), "user cache directory"))
    return out


def resolve_data_dir(data_dir: Optional[PathLike] = None) -> Path:
    """The highest-priority data directory: the argument, else $FGL_JAX_DATA, else the cache dir.

    This does not check that anything exists there; use `find_dataset_dir` to locate the files
    of a particular dataset (it falls through to lower-priority directories).

    Args:
        data_dir: an explicit directory, or None.

    Returns:
        The directory's `Path` (possibly not existing).
    """
    return candidate_dirs(data_dir)[0][0]


GITHUB_RAW = "https://raw.githubusercontent.com"


def github_files(repo: str, commit: str, remote: str, local: str, files: Sequence[str]) -> dict[str, str]:
    """Where each of a dataset's files is published on GitHub: relative path -> raw-file URL.

    Each path in `files` starts with the data-directory folder `local` (e.g. ``"planetoid/"``);
    the rest of it is found under the repository folder `remote` (e.g. ``"data/"``) at `commit`,
    so the URL names the exact bytes whose sha256 the loader checks.

    Args:
        repo: "owner/name" of the GitHub repository.
        commit: the full commit id the files were copied from.
        remote: folder in the repository ("" for its root, else ending in "/").
        local: folder prefix of the relative paths ("" or ending in "/").
        files: relative paths under a data directory, each starting with `local`.

    Returns:
        {relative path: "https://raw.githubusercontent.com/<repo>/<commit>/<remote><rest>"}.

    Raises:
        ValueError: a path in `files` that does not start with `local`.
    """
    out = {}
    for rel in files:
        if not rel.startswith(local):
            raise ValueError(f"github_files({repo!r}): {rel!r} does not start with {local!r}")
        out[rel] = f"{GITHUB_RAW}/{repo}/{commit}/{remote}{rel[len(local):]}"
    return out


def missing_files(folder: Path, relpaths: Sequence[str]) -> list[str]:
    """The relative paths in `relpaths` that are not regular files under `folder`."""
    return [rel for rel in relpaths if not (Path(folder) / rel).is_file()]


def find_dataset_dir(dataset: str, relpaths: Sequence[str], data_dir: Optional[PathLike] = None) -> Path:
    """The first candidate directory that holds every file in `relpaths`.

    Raises DatasetNotFoundError listing the missing files (relative to the highest-priority
    directory that has the most of them) and every place searched. An explicit `data_dir` that
    holds some of the files but not all is an error naming the missing ones, never a silent switch
    to another copy of the dataset (it falls through only when it holds none of them).
    """
    check_data_dir(data_dir)
    searched = candidate_dirs(data_dir)
    if data_dir is not None and str(data_dir) != "":
        miss = missing_files(searched[0][0], relpaths)
        if miss and len(miss) < len(relpaths):
            raise DatasetNotFoundError(dataset, miss, searched[:1])
    best_missing: Optional[list[str]] = None
    for folder, _origin in searched:
        miss = missing_files(folder, relpaths)
        if not miss:
            return folder
        if best_missing is None or len(miss) < len(best_missing):
            best_missing = miss
    raise DatasetNotFoundError(dataset, best_missing or list(relpaths), searched)


# In-process cache of verified hashes keyed by (path, size, mtime_ns): loading the same dataset
# twice in one process (tests, sweeps) should not re-hash megabytes of unchanged files.
_HASH_CACHE: dict[tuple[str, int, int], str] = {}


def sha256_file(path: PathLike, chunk_size: int = 1 << 20) -> str:
    """Hex sha256 of a file's bytes."""
    path = Path(path)
    st = path.stat()
    key = (str(path.resolve()), st.st_size, st.st_mtime_ns)
    if key in _HASH_CACHE:
        return _HASH_CACHE[key]
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(chunk_size), b""):
            h.update(chunk)
    digest = h.hexdigest()
    _HASH_CACHE[key] = digest
    return digest


def verify_files(dataset: str, folder: PathLike, expected: Mapping[str, str], strict: bool = True) -> None:
    """Check each ``folder/relpath`` against its expected sha256.

    strict=True raises DataChecksumError on the first mismatch; strict=False only warns
    (for locally modified copies). A missing file raises DatasetNotFoundError either way.
    """
    folder = Path(folder)
    miss = missing_files(folder, list(expected))
    if miss:
        raise DatasetNotFoundError(dataset, miss, [(folder, "verify_files folder")])
    for rel, want in expected.items():
        path = folder / rel
        got = sha256_file(path)
        if got != want.lower():
            err = DataChecksumError(dataset, path, want.lower(), got)
            if strict:
                raise err
            warnings.warn(str(err), stacklevel=2)
