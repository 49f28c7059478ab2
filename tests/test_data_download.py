"""`fgl-jax datasets --download NAME [--to DIR]` against a local HTTP server (127.0.0.1, a thread):
a good download, a corrupted one (refused by sha256, deleted), an interrupted one (resumed with
Range), an unknown name and a 404, each failure one line naming the URL; and the sources named
by the built-in registrations, checked against the offline data's manifest."""
from __future__ import annotations

import hashlib
import http.server
import re
import threading
from pathlib import Path

import pytest

from fgl_jax import cli, registry
from fgl_jax.data import register
from fgl_jax.data.registry import dataset_names, get_info

ROOT = Path(__file__).resolve().parents[1]
A = bytes(range(256)) * 40  # 10,240 bytes: several reads of the downloader
B = b"node,label\n" + b"".join(b"%d,%d\n" % (i, i % 3) for i in range(300))


class _Files(http.server.BaseHTTPRequestHandler):
    """Serves `files` (path -> bytes) with Range support; `corrupt` paths get one byte flipped,
    `cut` paths (path -> n) close the connection after n body bytes of their first response."""

    files: dict = {}
    corrupt: set = set()
    cut: dict = {}
    ranges: list = []  # (path, Range header) of every request

    def do_GET(self):  # noqa: N802 (the http.server name)
        body = self.files.get(self.path)
        self.ranges.append((self.path, self.headers.get("Range")))
        if body is None:
            self.send_error(404, "Not Found")
            return
        if self.path in self.corrupt:
            body = bytes([body[0] ^ 1]) + body[1:]
        start = 0
        rng = self.headers.get("Range")
        if rng:
            start = int(re.fullmatch(r"bytes=(\d+)-", rng).group(1))
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {start}-{len(body) - 1}/{len(body)}")
        else:
            self.send_response(200)
        self.send_header("Content-Length", str(len(body) - start))
        self.end_headers()
        n = self.cut.pop(self.path, None)
        self.wfile.write(body[start:] if n is None else body[start:start + n])
        if n is not None:
            self.close_connection = True

    def log_message(self, *args):  # quiet
        pass


@pytest.fixture(scope="module")
def server():
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Files)
    t = threading.Thread(target=httpd.serve_forever, daemon=True)
    t.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture
def fake(server):
    """A registered dataset `dltest` of two files served by `server`, with their true sha256."""
    _Files.files = {"/repo/a.bin": A, "/repo/sub/b.csv": B}
    _Files.corrupt, _Files.cut, _Files.ranges = set(), {}, []
    files = ("dltest/a.bin", "dltest/b.csv")
    register("dltest", lambda data_dir=None: None, files, "download test", overwrite=True,
             sha256={files[0]: hashlib.sha256(A).hexdigest(), files[1]: hashlib.sha256(B).hexdigest()},
             urls={files[0]: f"{server}/repo/a.bin", files[1]: f"{server}/repo/sub/b.csv"})
    yield server
    registry._ENTRIES["dataset"].pop("dltest", None)


def _cli(argv, capsys):
    code = cli.main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_good_download_writes_every_file_with_its_bytes(fake, tmp_path, capsys):
    code, out, err = _cli(["datasets", "--download", "dltest", "--to", str(tmp_path), "--no-progress"], capsys)
    assert code == 0, err
    assert (tmp_path / "dltest/a.bin").read_bytes() == A
    assert (tmp_path / "dltest/b.csv").read_bytes() == B
    assert not list(tmp_path.rglob("*.part"))
    assert out.count("downloaded") == 2 and "sha256 ok" in out
    # again: nothing is fetched, both are reported present
    _Files.ranges = []
    code, out, _ = _cli(["datasets", "--download", "dltest", "--to", str(tmp_path)], capsys)
    assert code == 0 and out.count("already present") == 2 and _Files.ranges == []


def test_corrupted_download_is_refused_and_deleted(fake, tmp_path, capsys):
    _Files.corrupt = {"/repo/sub/b.csv"}
    code, out, err = _cli(["datasets", "--download", "dltest", "--to", str(tmp_path)], capsys)
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("fgl-jax: error: ")
    assert f"{fake}/repo/sub/b.csv" in lines[0] and "sha256" in lines[0]
    assert hashlib.sha256(B).hexdigest() in lines[0]  # the published digest is named
    assert not (tmp_path / "dltest/b.csv").exists() and not (tmp_path / "dltest/b.csv.part").exists()
    assert (tmp_path / "dltest/a.bin").read_bytes() == A  # the intact file before it is kept


def test_interrupted_download_resumes_with_range(fake, tmp_path, capsys):
    _Files.cut = {"/repo/a.bin": 3000}
    code, _, err = _cli(["datasets", "--download", "dltest", "--to", str(tmp_path)], capsys)
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and f"{fake}/repo/a.bin" in lines[0] and "resume" in lines[0]
    part = tmp_path / "dltest/a.bin.part"
    assert part.read_bytes() == A[:3000] and not (tmp_path / "dltest/a.bin").exists()
    _Files.ranges = []
    code, _, err = _cli(["datasets", "--download", "dltest", "--to", str(tmp_path)], capsys)
    assert code == 0, err
    assert ("/repo/a.bin", "bytes=3000-") in _Files.ranges  # only the rest was asked for
    assert (tmp_path / "dltest/a.bin").read_bytes() == A and not part.exists()


def test_unknown_name_is_one_line_listing_the_names(capsys, tmp_path):
    code, _, err = _cli(["datasets", "--download", "no_such_set", "--to", str(tmp_path)], capsys)
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1
    assert "no_such_set" in lines[0] and all(n in lines[0] for n in ("cora", "citeseer", "facebook", "nci1"))


def test_404_is_one_line_naming_the_url(fake, tmp_path, capsys):
    del _Files.files["/repo/sub/b.csv"]
    code, _, err = _cli(["datasets", "--download", "dltest", "--to", str(tmp_path)], capsys)
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1
    assert f"{fake}/repo/sub/b.csv" in lines[0] and "404" in lines[0]


# ---- the built-in sources --------------------------------------------------------------------

def _builtin_with_files():
    return [n for n in dataset_names() if get_info(n).files]


def test_every_builtin_dataset_names_a_url_and_the_sha256_its_loader_checks():
    from fgl_jax.data.hetero import ACM_SHA256, RDF_SHA256
    from fgl_jax.data.hypergraph import HYPERGCN_SHA256
    from fgl_jax.data.magnn import MAGNN_SHA256
    from fgl_jax.data.musae import FACEBOOK_SHA256, LASTFM_ASIA_SHA256
    from fgl_jax.data.planetoid import PLANETOID_SHA256
    from fgl_jax.data.tu import TU_SHA256
    checked = {**PLANETOID_SHA256, **FACEBOOK_SHA256, **LASTFM_ASIA_SHA256, **ACM_SHA256, **TU_SHA256,
               **{k: v for t in (RDF_SHA256, MAGNN_SHA256, HYPERGCN_SHA256) for d in t.values() for k, v in d.items()}}
    for name in _builtin_with_files():
        info = get_info(name)
        assert set(info.urls) == set(info.files), name
        assert all(u.startswith("https://raw.githubusercontent.com/") for u in info.urls.values()), name
        want = {f: checked[f] for f in info.files if f in checked}
        assert dict(info.sha256) == want, name
        assert want or name == "pubmed", f"{name}: no sha256 for its files"


def test_builtin_urls_match_the_offline_datas_manifest():
    """Each URL's repository, commit and path are those the manifest of the offline copies cites."""
    manifest = ROOT.parent / "shared" / "data" / "README.md"
    if not manifest.is_file():
        pytest.skip("the offline data's manifest is not next to this checkout")
    text = manifest.read_text(encoding="utf-8")
    for name in _builtin_with_files():
        for rel, url in get_info(name).urls.items():
            owner, repo, commit, path = re.fullmatch(r"https://raw\.githubusercontent\.com/([^/]+)/([^/]+)/"
                                                     r"([0-9a-f]{40})/(.+)", url).groups()
            assert f"github.com/{owner}/{repo}" in text and commit in text, url
            folder = path.rsplit("/", 1)[0] + "/"
            assert f"`{path}`" in text or f"`{folder}`" in text or f"{folder.rstrip('/')}" in text, url


def test_datasets_lists_and_the_docs_name_every_source(capsys):
    code, out, _ = _cli(["datasets"], capsys)
    assert code == 0
    page = (ROOT / "docs" / "datasets.md").read_text(encoding="utf-8")
    from fgl_jax.data.registry import source_of
    for name in _builtin_with_files():
        src = source_of(get_info(name))
        assert src and src in out, name
        assert src in page, f"docs/datasets.md does not name the source of {name}: {src}"
