"""Fetch a registered dataset's files from where they are published (`fgl-jax datasets --download NAME`).

    download("cora")                    # into the data directory (--data-dir, $FGL_JAX_DATA, ~/.cache/fgl_jax/data)
    download("cora", to="data")         # into data/planetoid/ind.cora.* (the layout the loaders search)

Each file's URL and sha256 are those of its registration (`fgl_jax.data.register(..., sha256=,
urls=)`; the built-in datasets name the exact commit of a public repository, and their sha256 are
the digests the loaders check). A file is written to ``<path>.part`` first and renamed only when
its sha256 matches, so a loader never sees a partial or corrupted file: a corrupted download is
deleted and refused in one line naming the URL. A transfer cut short keeps its ``.part``, and the
next call asks the server for the rest only (HTTP Range). A file already present with the
published sha256 is not fetched again. The standard library only (`urllib.request`).
"""
from __future__ import annotations

import hashlib
import http.client
import os
import urllib.error
import urllib.request
from pathlib import Path
from typing import NamedTuple, Optional

from .. import progress
from .paths import DataError, PathLike, resolve_data_dir
from .registry import get_info

__all__ = ["download", "fetch_file", "Fetched", "DownloadError"]

CHUNK = 1 << 16  # bytes read per call: the progress bar's step
TIMEOUT = 60.0  # seconds a connection may stay silent


class DownloadError(DataError, OSError):
    """A download failed (no connection, an HTTP error, a cut transfer, a sha256 that differs); the
    message is one line naming the URL."""

    def __init__(self, message: str):
        self.message = message
        Exception.__init__(self, message)

    def __str__(self) -> str:
        return self.message


class Fetched(NamedTuple):
    """One file of a download: where it is, "downloaded" or "present" (already there, intact), its
    size in bytes, and whether its sha256 was checked against a published one."""
    path: Path
    status: str
    size: int
    verified: bool


def download(name: str, to: Optional[PathLike] = None, *, timeout: float = TIMEOUT) -> list[Fetched]:
    """Fetch every file of the registered dataset `name` into a data directory, each checked
    against its published sha256.

    Args:
        name: a registered dataset name (`fgl-jax datasets` lists them).
        to: the data directory to write into (its dataset sub-folders are created); None: the
            first of $FGL_JAX_DATA and ~/.cache/fgl_jax/data (`fgl_jax.data.resolve_data_dir`).
        timeout: seconds a connection may stay silent before the download fails.

    Returns:
        One `Fetched` per file, in the registration's order.

    Raises:
        UnknownDatasetError: `name` is not registered (the message lists the names).
        DownloadError: a generated dataset, one whose registration names no URL, or a failed file
            (one line naming its URL; a cut transfer's bytes are kept for the next call).
    """
    info = get_info(name)
    if not info.files:
        raise DownloadError(f"dataset {info.name!r} is generated in memory: there is nothing to download")
    if not info.urls:
        raise DownloadError(f"dataset {info.name!r}: its registration names no URL for its files "
                            "(register(..., urls={path: url})), so it cannot be downloaded")
    root = Path(to).expanduser() if to is not None and str(to) != "" else resolve_data_dir()
    return [fetch_file(info.urls[rel], root / rel, info.sha256.get(rel), timeout=timeout, label=rel)
            for rel in info.files]


def _digest(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def fetch_file(url: str, dest: PathLike, sha256: Optional[str] = None, *, timeout: float = TIMEOUT,
               label: Optional[str] = None) -> Fetched:
    """Download one file to `dest` through ``dest.part``, resuming a ``.part`` left by a cut transfer.

    Args:
        url: where the file is published (http, https or file).
        dest: the file to write (its folder is created).
        sha256: the published digest; the file is kept only when it matches (None: unchecked).
        timeout: seconds a connection may stay silent.
        label: the name on the progress bar (default: the file name).

    Returns:
        `Fetched(dest, "downloaded" | "present", size, verified)`.

    Raises:
        DownloadError: one line naming `url`: the server's refusal, a lost connection (the bytes
            received stay in ``.part`` for the next call), or a sha256 that differs (the file is deleted).
    """
    dest = Path(dest)
    want = sha256.lower() if sha256 else None
    if dest.is_file():
        got = _digest(dest)
        if want is None or got == want:
            return Fetched(dest, "present", dest.stat().st_size, want is not None)
        raise DownloadError(f"{dest} exists with sha256 {got}, not the published {want} of {url}; move it away "
                            "and download again")
    try:
        dest.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise DownloadError(f"cannot create {dest.parent} for {url}: {e.strerror or e}") from None
    part = dest.with_name(dest.name + ".part")
    _transfer(url, part, timeout, label or dest.name)
    got = _digest(part)
    if want is not None and got != want:
        part.unlink()
        raise DownloadError(f"{url}: the downloaded file has sha256 {got}, not the published {want}; deleted it "
                            "(a corrupted transfer, or the file changed upstream)")
    os.replace(part, dest)
    return Fetched(dest, "downloaded", dest.stat().st_size, want is not None)


def _transfer(url: str, part: Path, timeout: float, label: str) -> None:
    """Append the rest of `url` to `part` (all of it when `part` is absent or the server ignores
    the Range header)."""
    have = part.stat().st_size if part.is_file() else 0
    headers = {"User-Agent": "fgl-jax"}
    if have:
        headers["Range"] = f"bytes={have}-"
    try:
        resp = urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=timeout)
    except urllib.error.HTTPError as e:
        if e.code == 416 and have:  # nothing left to send: the .part is whole (its sha256 decides)
            return
        raise DownloadError(f"cannot download {url}: HTTP {e.code} {e.reason}") from None
    except (urllib.error.URLError, OSError, ValueError, http.client.HTTPException) as e:
        reason = getattr(e, "reason", None) or e
        raise DownloadError(f"cannot download {url}: {reason}") from None
    with resp:
        if have and getattr(resp, "status", 200) != 206:  # the server sends the whole file again
            have = 0
        length = resp.headers.get("Content-Length")
        total = have + int(length) if length and length.isdigit() else None
        done = have
        try:
            with open(part, "ab" if have else "wb") as fh:
                while True:
                    chunk = resp.read(CHUNK)
                    if not chunk:
                        break
                    fh.write(chunk)
                    done += len(chunk)
                    progress.transfer(label, done, total)
        except (OSError, http.client.HTTPException) as e:
            progress.transfer(label, done, total, final=True)
            raise DownloadError(f"cannot download {url}: the transfer broke after {done} bytes ({e}); they are "
                                f"kept in {part}: run the command again to resume") from None
        progress.transfer(label, done, total, final=True)
    if total is not None and done < total:
        raise DownloadError(f"cannot download {url}: the server closed the connection after {done} of {total} bytes; "
                            f"they are kept in {part}: run the command again to resume")
