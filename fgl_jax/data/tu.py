"""TU Dortmund graph-classification sets (Morris et al., TUDataset 2020): a directory or its `.zip`.

Layout (one folder `<NAME>/`, 1-based ids over the whole collection, one record per line):

    <NAME>_A.txt                 "row, col"   one directed edge per line (TU lists both directions); a
                                 repeated line is one edge (PyG's coalesce: the IMDB zips repeat every line)
    <NAME>_graph_indicator.txt   graph id of node i (line i), non-decreasing 1..G
    <NAME>_graph_labels.txt      one label per graph (any integers: remapped to 0..K-1 in sorted order)
    <NAME>_node_labels.txt       optional: integer label(s) per node -> one-hot (value - min, PyG's width)
    <NAME>_edge_labels.txt       optional: integer label per edge line (kept as `GraphSet.edge_labels`)
    <NAME>_node_attributes.txt   optional: comma-separated floats per node, appended after the one-hot labels

A set with neither node labels nor attributes (IMDB-BINARY, IMDB-MULTI) gets one-hot degree features:
the degree (number of `_A` lines leaving the node) clipped to `degree_cap`, one-hot over 0..cap. The
default cap is the set's largest degree (PyG's `OneHotDegree(max_degree)`, as GCFL and OpenFGL use):
135 on IMDB-BINARY, 88 on IMDB-MULTI (counted after the repeated lines are merged). Every malformed
line is one `DataFormatError` naming the file, the 1-based line and the value.

    load("PROTEINS")                       # registered name: files under <data dir>/tu/PROTEINS/
    load("MUTAG_TU")                       # (the name "mutag" is the RDF MUTAG of FedHGN)
    load("path/to/MUTAG")                  # a TU directory (or its _graph_indicator.txt) ...
    load("path/to/IMDB-BINARY.zip")        # ... or the original zip
"""
from __future__ import annotations

import dataclasses
import functools
import io
import zipfile
from pathlib import Path
from typing import Optional

import numpy as np

from .files import register_format
from .paths import DataFormatError, PathLike, find_dataset_dir, github_files, verify_files
from .registry import register

# sha256 of the published files (docs: /work/shared/data/README.md section 2.9; TU collection copies)
TU_SHA256: dict[str, str] = {
    "tu/IMDB-BINARY.zip": "3a0b85c87f7fdfbde624ef943e75fddd22fc3a4e6001bb9a07eaa64a997e520e",
    "tu/IMDB-MULTI.zip": "c2696398f0fb8dda5bc95e11be7fd5ac9d79457b55bd6137bd150fcc826a3ad1",
    "tu/AIDS/AIDS_A.txt": "9da8e3f787d1dbdc80a35f205707bd0bec0778261fb7e54355c061912f8d8380",
    "tu/AIDS/AIDS_edge_labels.txt": "47e3eac0bf8c6196af7d5532fba3d2c9b29014740d471bd4696149a5ef2bf7d7",
    "tu/AIDS/AIDS_graph_indicator.txt": "8a1ede4f84bcba1f5a7f49fe7e89cdc74466645b62175603710b80300fb68be4",
    "tu/AIDS/AIDS_graph_labels.txt": "da9c413b24b0a808b497a4567f57dce975d0eb9dc69c5db82aec6a172c88e28f",
    "tu/AIDS/AIDS_label_readme.txt": "9245ff0e944ff0ecb13cca6dcd274163d7ea529e36ebe49b61529fb85cb1f758",
    "tu/AIDS/AIDS_node_attributes.txt": "e47595d48fa329d84183fd68f8b4a6b327fd05690e3d335ffcdc6b7c110f081c",
    "tu/AIDS/AIDS_node_labels.txt": "d90cda6258c58f4c3facaa2e6a71e1b589da13f0162af59881400a3c8f0c514a",
    "tu/BZR/BZR_A.txt": "ff3fea72cbb9c7791892f1f44a7f04d90c7c5ceab6a72f1208da135d247b543b",
    "tu/BZR/BZR_graph_indicator.txt": "7be0ae28ac3ce0ea0735242dc31ca8e25fba6f61e75af9f49c2c86fa21bf4712",
    "tu/BZR/BZR_graph_labels.txt": "ba3c70e696ca733371e43444551df8402a90711e1f9d964c400461f50a762b03",
    "tu/BZR/BZR_node_attributes.txt": "b63d1ad66f2f89dee341a2212e0311c13d180d25537844636ab01bcb56a844dc",
    "tu/BZR/BZR_node_labels.txt": "3fa5cea6c33294f4a4fb1fe9ce70a9fe42045f7d555763fb40d99456766e4ba5",
    "tu/BZR/README.txt": "a84ed21c2eacae1a38804c3d7780b03ced350dc1fa25ef6f53c286a7e433ebca",
    "tu/COX2/COX2_A.txt": "243231bc10b9ce2576f7f2d3d49c74d403912bd32264c85bcfba2edeb531175f",
    "tu/COX2/COX2_graph_indicator.txt": "92f3610a7d32dadd60ac12292e8f047cfa88b2c15b0c20143171185e2d4329f1",
    "tu/COX2/COX2_graph_labels.txt": "106e76e03040eb4024d6cb3ab08af914f92609b0a85a17ddc6cc48ab0e08d7f5",
    "tu/COX2/COX2_node_attributes.txt": "f2dcba7354e0a6f8bb1c8b8e0c46f90258e05b59fc1600bcf2c307351f2e246a",
    "tu/COX2/COX2_node_labels.txt": "2e7081a445a29387e9ba927724f3fe86b0c17d27033bca5e47949754a29d9759",
    "tu/COX2/README.txt": "05d4c1c4810080a07759007e0585f92046c08d35adbe3aa1894bf06890dc0b70",
    "tu/ENZYMES/ENZYMES_A.txt": "5553c84f8f562f3e199dfd27192174f485e85c44c1357661098668937a739cbf",
    "tu/ENZYMES/ENZYMES_graph_indicator.txt": "95ba0fa47eba6f02e6b754a215dc66d5b49de3f45f57a128514301a8d7ed5f46",
    "tu/ENZYMES/ENZYMES_graph_labels.txt": "04743e08967e61e65cdacbb90f8df6ee53742b3d2e7b84675b85ebac70506856",
    "tu/ENZYMES/ENZYMES_node_attributes.txt": "305a8fc3b12f79fb844ef3374d6a3c8ceeb4887dd4f86bbfe37932c4c5434e7b",
    "tu/ENZYMES/ENZYMES_node_labels.txt": "8263eb9b64efa231a5886343483ccfc0342f2407014763a8f738fd51c32ce770",
    "tu/ENZYMES/README.txt": "32d5fef501200221a2c0e1af3366797fa443ab8f490231c5fb4a8719e1df48cf",
    "tu/MUTAG/MUTAG_A.txt": "d9656ca7493f3445d737c711710bb36fd432dddd1c0ea32e1d4713c86ebd28e2",
    "tu/MUTAG/MUTAG_edge_labels.txt": "4669ce755075ff86c3240709345745886400908fa637a49310459b9c267b3e56",
    "tu/MUTAG/MUTAG_graph_indicator.txt": "7d520a4d6c7961c0cdeabe076d8fe27e795b6d373485c9a2b744987e560a2056",
    "tu/MUTAG/MUTAG_graph_labels.txt": "a1518ea39ba3426bd42f57396b9c4baffe68e9adc718caeeab0119c6591a5f2c",
    "tu/MUTAG/MUTAG_node_labels.txt": "678f429965490e84dd27713017538c995fc05d1621beac910848b600015ee863",
    "tu/MUTAG/README.txt": "66de65e4826e112482ec680bbbdf7c0af56d826ce935c110786d130b79b76b06",
    "tu/NCI1/NCI1_A.txt": "2c028eda59a5fe96e2265a63d9ac236901bd9a7dc658498be13cd704a703076d",
    "tu/NCI1/NCI1_graph_indicator.txt": "ffe5acfa754b057d5ce0dc725c5aadb631628161886cc040d38c719635257dc5",
    "tu/NCI1/NCI1_graph_labels.txt": "fae44681e70113f496256ae87eaac33b7836e3a97fe8e023933b84fde6a5c8a2",
    "tu/NCI1/NCI1_node_labels.txt": "dc0a22b6cbff0c939de00373e823977ba32b358f560e4288d7602f7b51407ee2",
    "tu/NCI1/README.txt": "1866d918409a22531ef00ff7b0f72200c3a06722342c23c5e3299cebb5cd8757",
    "tu/PROTEINS/PROTEINS_A.txt": "4c4b33e272fc95cac6d27ed6d5d12b9a852c8610e91fff59f8f0dbdd5a20df67",
    "tu/PROTEINS/PROTEINS_graph_indicator.txt": "8d4ff1e852a5c28561e9bffb44cf9490bc552b13a3b6156dd12dc7f44e9afc4a",
    "tu/PROTEINS/PROTEINS_graph_labels.txt": "c0ef9810c440775252872318d0c8adc385588e14bc4c47a2c34aa96ee3c7cdcd",
    "tu/PROTEINS/PROTEINS_node_attributes.txt": "54eef829abb37e458a5fbf3a3c581e48e5810e220463c2cd951856b9ceb08f07",
    "tu/PROTEINS/PROTEINS_node_labels.txt": "f758e8ad3d6e3c026b50833d75f6f90735b94eb3345e4243707f495ca8afea8d",
    "tu/PROTEINS/README.txt": "e9c4ed2c9a4059ddfdc2eb7330ebecfc6c8d42dabd5ce2ee67f28aed0db49da7",
    "tu/PTC_MR/PTC_MR_A.txt": "f79523ff94dfbef539e5602a8ac1931a50a2800f33fa1d30e5e31725289b5202",
    "tu/PTC_MR/PTC_MR_edge_labels.txt": "acee2f93b52175a329009dc837bea9db7c2a121c2ef0b1587b38bbe6fc9b8177",
    "tu/PTC_MR/PTC_MR_graph_indicator.txt": "d52754f3cbc54e29324f884b4c17200c16e06db0c499afae300b4fa1bb6d794b",
    "tu/PTC_MR/PTC_MR_graph_labels.txt": "64210accbe4c6c027535b1294e0da652b1f539667f7a2d4bf5121dcd8b00a224",
    "tu/PTC_MR/PTC_MR_node_labels.txt": "cc50d1e1c5f4c98b2100cf50c5ddd88ff28b419a9180d531046b75ce22983235",
    "tu/PTC_MR/README.txt": "f0dcf17d5e115efb4db51d6be6ca629181ca9cdef9f975663dd054a3c779c52a",
}

# the registered sets: name -> (what the loader reads, description)
TU_SETS: dict[str, str] = {
    "AIDS": "AIDS antiviral screen: 2,000 molecules, 2 classes, node labels + 4 attributes",
    "BZR": "BZR ligands: 405 molecules, 2 classes, node labels + 3 attributes",
    "COX2": "COX2 inhibitors: 467 molecules, 2 classes, node labels + 3 attributes",
    "ENZYMES": "ENZYMES: 600 protein graphs, 6 EC classes, node labels + 18 attributes",
    "MUTAG": "MUTAG: 188 nitro compounds, 2 classes (mutagenic), 7 node labels",
    "NCI1": "NCI1: 4,110 molecules, 2 classes (lung cancer screen), 37 node labels",
    "PROTEINS": "PROTEINS: 1,113 protein graphs, 2 classes (enzyme or not), node labels + 1 attribute",
    "PTC_MR": "PTC_MR: 344 molecules, 2 classes (carcinogenic in male rats), 18 node labels",
    "IMDB-BINARY": "IMDB-BINARY (zip): 1,000 ego-networks, 2 genres, no node features (one-hot degree)",
    "IMDB-MULTI": "IMDB-MULTI (zip): 1,500 ego-networks, 3 genres, no node features (one-hot degree)",
}
OPTIONAL = ("node_labels", "edge_labels", "node_attributes")


@dataclasses.dataclass(frozen=True)
class GraphSet:
    """A collection of G graphs as flat concatenations (host NumPy), graph g's rows at offsets.

    x: float32 [N, F] node features of every graph, graph g's nodes at rows node_offsets[g]:node_offsets[g+1].
    senders, receivers: int32 [E] edge endpoints as rows of `x` (both inside one graph), graph g's
        edges at edge_offsets[g]:edge_offsets[g+1].
    node_offsets, edge_offsets: int64 [G+1], non-decreasing, first 0, last N and E.
    y: int32 [G] classes 0..num_classes-1 (graph classification) or float32 [G] targets
        (graph regression, num_classes 0).
    edge_labels: int32 [E] or None. meta: where it came from, label values, the degree cap.
    """

    name: str
    x: np.ndarray
    senders: np.ndarray
    receivers: np.ndarray
    node_offsets: np.ndarray
    edge_offsets: np.ndarray
    y: np.ndarray
    num_classes: int
    edge_labels: Optional[np.ndarray] = None
    meta: dict = dataclasses.field(default_factory=dict)

    @property
    def num_graphs(self) -> int:
        return int(self.node_offsets.shape[0] - 1)

    @property
    def num_nodes(self) -> int:
        return int(self.x.shape[0])

    @property
    def num_edges(self) -> int:
        return int(self.senders.shape[0])

    @property
    def num_features(self) -> int:
        return int(self.x.shape[1])

    @property
    def nodes_per_graph(self) -> np.ndarray:
        """int64 [G]."""
        return np.diff(self.node_offsets)

    @property
    def edges_per_graph(self) -> np.ndarray:
        """int64 [G]."""
        return np.diff(self.edge_offsets)

    def graph(self, g: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(x [n, F], senders [e], receivers [e]) of graph g, endpoints local to it (0..n-1)."""
        a, b = self.node_offsets[g], self.node_offsets[g + 1]
        c, d = self.edge_offsets[g], self.edge_offsets[g + 1]
        return self.x[a:b], self.senders[c:d] - a, self.receivers[c:d] - a

    def subset(self, index) -> "GraphSet":
        """The graphs `index` (int array, in that order) as a GraphSet of their own."""
        index = np.asarray(index, np.int64)
        n, e = self.nodes_per_graph[index], self.edges_per_graph[index]
        node_rows = np.concatenate([np.arange(self.node_offsets[g], self.node_offsets[g + 1]) for g in index]) \
            if index.size else np.zeros(0, np.int64)
        edge_rows = np.concatenate([np.arange(self.edge_offsets[g], self.edge_offsets[g + 1]) for g in index]) \
            if index.size else np.zeros(0, np.int64)
        new_off = np.concatenate([[0], np.cumsum(n)]).astype(np.int64)
        # an edge's new row = its old row - the old start of its graph + the new start
        shift = np.repeat(new_off[:-1] - self.node_offsets[index], e)
        return dataclasses.replace(
            self, x=self.x[node_rows], senders=(self.senders[edge_rows] + shift).astype(np.int32),
            receivers=(self.receivers[edge_rows] + shift).astype(np.int32), node_offsets=new_off,
            edge_offsets=np.concatenate([[0], np.cumsum(e)]).astype(np.int64), y=self.y[index],
            edge_labels=None if self.edge_labels is None else self.edge_labels[edge_rows])


def check_graph_set(gs: GraphSet) -> GraphSet:
    """One-line ValueError for an inconsistent GraphSet (a user's own, built in Python)."""
    where = f"GraphSet {gs.name!r}"
    g = gs.num_graphs
    if gs.x.ndim != 2:
        raise ValueError(f"{where}: x must be [N, F], got shape {gs.x.shape}")
    for name, off, total in (("node_offsets", gs.node_offsets, gs.num_nodes), ("edge_offsets", gs.edge_offsets,
                                                                                 gs.num_edges)):
        if off.shape != (g + 1,) or off[0] != 0 or off[-1] != total or np.any(np.diff(off) < 0):
            raise ValueError(f"{where}: {name} must be non-decreasing [G+1] from 0 to {total}")
    if gs.y.shape != (g,):
        raise ValueError(f"{where}: y must be [G] = [{g}], got shape {gs.y.shape}")
    if gs.num_classes > 0 and (gs.y.min(initial=0) < 0 or gs.y.max(initial=0) >= gs.num_classes):
        raise ValueError(f"{where}: labels must be in 0..{gs.num_classes - 1}, got {gs.y.min()}..{gs.y.max()}")
    if gs.num_classes == 0 and not np.all(np.isfinite(gs.y)):
        raise ValueError(f"{where}: regression targets must be finite")
    owner = np.repeat(np.arange(g), gs.edges_per_graph)
    lo, hi = gs.node_offsets[owner], gs.node_offsets[owner + 1]
    bad = np.flatnonzero((gs.senders < lo) | (gs.senders >= hi) | (gs.receivers < lo) | (gs.receivers >= hi))
    if bad.size:
        raise ValueError(f"{where}: edge {bad[0]} ({gs.senders[bad[0]]} -> {gs.receivers[bad[0]]}) leaves its graph "
                         f"{owner[bad[0]]} (rows {lo[bad[0]]}..{hi[bad[0]] - 1})")
    if not np.all(np.isfinite(gs.x)):
        raise ValueError(f"{where}: x holds NaN or inf")
    return gs


# ---- reading the files -------------------------------------------------------------------------

class _Files:
    """The files of one TU set in a directory or a zip: `text(part)` -> (where, text) or None."""

    def __init__(self, path: Path, name: Optional[str]):
        self.path = path
        self.zip = None
        if path.is_file() and path.suffix.lower() == ".zip":
            try:
                self.zip = zipfile.ZipFile(path)
            except zipfile.BadZipFile as e:
                raise DataFormatError(f"{path}: not a readable zip archive ({e})") from None
            members = [m for m in self.zip.namelist() if m.endswith("_graph_indicator.txt")]
            if len(members) != 1:
                raise DataFormatError(f"{path}: expected one <NAME>_graph_indicator.txt inside the zip, found "
                                      f"{len(members)}")
            self.prefix = members[0][: -len("graph_indicator.txt")]
        else:
            folder = path.parent if path.is_file() else path
            found = sorted(folder.glob("*_graph_indicator.txt"))
            if len(found) != 1:
                raise DataFormatError(f"{folder}: expected one <NAME>_graph_indicator.txt, found "
                                      f"{', '.join(f.name for f in found) or 'none'}")
            self.folder = folder
            self.prefix = found[0].name[: -len("graph_indicator.txt")]
        self.name = name or Path(self.prefix).name.rstrip("_")

    def where(self, part: str) -> str:
        member = f"{self.prefix}{part}.txt"
        return f"{self.path}:{member}" if self.zip is not None else str(self.folder / member)

    def text(self, part: str, required: bool = True) -> Optional[str]:
        member = f"{self.prefix}{part}.txt"
        try:
            if self.zip is not None:
                if member not in self.zip.namelist():
                    raise FileNotFoundError
                raw = self.zip.read(member)
            else:
                raw = (self.folder / member).read_bytes()
        except FileNotFoundError:
            if required:
                raise DataFormatError(f"{self.where(part)}: missing (a TU set needs _A, _graph_indicator and "
                                      "_graph_labels files)") from None
            return None
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as e:
            raise DataFormatError(f"{self.where(part)}: not UTF-8 text ({e})") from None


def _lines(text: str) -> list[str]:
    lines = text.splitlines()
    while lines and not lines[-1].strip():
        lines.pop()
    return lines


def _numbers(text: str, where: str, cols: Optional[int], kind: type) -> np.ndarray:
    """The numbers of a TU file as [rows, cols] (cols None: that of the first line); any malformed
    line -> DataFormatError naming the file, the 1-based line and the value."""
    lines = _lines(text)
    if not lines:
        raise DataFormatError(f"{where}: empty file")
    if cols is None:
        cols = len(lines[0].replace(",", " ").split())
    dtype = np.int64 if kind is int else np.float64
    try:  # fast path: the whole file at once; a count mismatch or a bad token falls to the line scan
        arr = np.array(text.replace(",", " ").split(), dtype=dtype)
        if arr.size == len(lines) * cols and (kind is int or np.all(np.isfinite(arr))):
            return arr.reshape(len(lines), cols)
    except (ValueError, OverflowError):
        pass
    what = "integer" if kind is int else "number"
    for i, line in enumerate(lines, 1):
        parts = line.replace(",", " ").split()
        if len(parts) != cols:
            raise DataFormatError(f"{where}, line {i}: expected {cols} {what}(s), got {line.strip()!r}")
        for p in parts:
            try:
                v = kind(p)
            except ValueError:
                raise DataFormatError(f"{where}, line {i}: {p!r} is not an {what}") from None
            if kind is float and not np.isfinite(v):
                raise DataFormatError(f"{where}, line {i}: {p!r} is not a finite number")
    raise DataFormatError(f"{where}: unreadable")  # pragma: no cover (the scan finds the line)


def _one_hot(values: np.ndarray) -> np.ndarray:
    """float32 [N, max-min+1] one-hot of integer values [N] (shifted by their minimum, as PyG)."""
    v = values - values.min()
    out = np.zeros((v.shape[0], int(v.max()) + 1), np.float32)
    out[np.arange(v.shape[0]), v] = 1.0
    return out


def read_tu(path: PathLike, name: Optional[str] = None, degree_cap: Optional[int] = None) -> GraphSet:
    """Parse a TU directory, its `_graph_indicator.txt`, or its zip into a `GraphSet` (module docstring)."""
    f = _Files(Path(path).expanduser(), name)
    ind = _numbers(f.text("graph_indicator"), f.where("graph_indicator"), 1, int)[:, 0]
    n = ind.shape[0]
    where = f.where("graph_indicator")
    if ind[0] != 1 or np.any(np.diff(ind) < 0) or np.any(np.diff(ind) > 1):
        i = 0 if ind[0] != 1 else int(np.flatnonzero((np.diff(ind) < 0) | (np.diff(ind) > 1))[0]) + 1
        raise DataFormatError(f"{where}, line {i + 1}: graph id {ind[i]} breaks the order 1, 2, ... (graph ids must "
                              "start at 1 and never decrease or skip)")
    g = int(ind[-1])
    node_offsets = np.concatenate([[0], np.cumsum(np.bincount(ind - 1, minlength=g))]).astype(np.int64)
    edges = _numbers(f.text("A"), f.where("A"), 2, int)
    bad = np.flatnonzero((edges < 1).any(1) | (edges > n).any(1))
    if bad.size:
        i = int(bad[0])
        raise DataFormatError(f"{f.where('A')}, line {i + 1}: node id in {tuple(edges[i].tolist())} outside "
                              f"1..{n} (the nodes of _graph_indicator)")
    s, r = edges[:, 0] - 1, edges[:, 1] - 1
    cross = np.flatnonzero(ind[s] != ind[r])
    if cross.size:
        i = int(cross[0])
        raise DataFormatError(f"{f.where('A')}, line {i + 1}: edge {tuple(edges[i].tolist())} joins graphs "
                              f"{ind[s[i]]} and {ind[r[i]]}")
    # a repeated (row, col) line is one edge (PyG's coalesce; IMDB-BINARY/-MULTI list every edge line twice)
    _, first = np.unique(s * n + r, return_index=True)
    keep = np.sort(first)
    # edges grouped by graph, file order kept inside a graph
    order = keep[np.argsort(ind[s[keep]], kind="stable")]
    s, r = s[order], r[order]
    edge_offsets = np.concatenate([[0], np.cumsum(np.bincount(ind[s] - 1, minlength=g))]).astype(np.int64)
    labels = _numbers(f.text("graph_labels"), f.where("graph_labels"), 1, int)[:, 0]
    if labels.shape[0] != g:
        raise DataFormatError(f"{f.where('graph_labels')}: {labels.shape[0]} lines, expected one per graph ({g})")
    values, y = np.unique(labels, return_inverse=True)
    parts, meta = [], {"path": str(f.path), "format": "tu", "label_values": values.tolist(),
                       "duplicate_edge_lines": int(edges.shape[0] - keep.size)}
    text = f.text("node_labels", required=False)
    if text is not None:
        nl = _numbers(text, f.where("node_labels"), None, int)
        if nl.shape[0] != n:
            raise DataFormatError(f"{f.where('node_labels')}: {nl.shape[0]} lines, expected one per node ({n})")
        parts += [_one_hot(nl[:, j]) for j in range(nl.shape[1])]
    text = f.text("node_attributes", required=False)
    if text is not None:
        at = _numbers(text, f.where("node_attributes"), None, float)
        if at.shape[0] != n:
            raise DataFormatError(f"{f.where('node_attributes')}: {at.shape[0]} lines, expected one per node ({n})")
        parts.append(at.astype(np.float32))
    if not parts:
        deg = np.bincount(s, minlength=n)
        cap = int(deg.max()) if degree_cap is None else int(degree_cap)
        if cap < 0:
            raise ValueError(f"degree_cap must be >= 0, got {degree_cap}")
        parts.append(_one_hot(np.concatenate([np.minimum(deg, cap), [0, cap]]))[:n])
        meta["features"] = f"one-hot degree, capped at {cap}"
    elif degree_cap is not None:
        raise ValueError(f"degree_cap: {f.name} has node labels or attributes; degree features are only made for "
                         "sets without them")
    edge_labels = None
    text = f.text("edge_labels", required=False)
    if text is not None:
        el = _numbers(text, f.where("edge_labels"), None, int)
        if el.shape[0] != edges.shape[0]:
            raise DataFormatError(f"{f.where('edge_labels')}: {el.shape[0]} lines, expected one per _A line "
                                  f"({edges.shape[0]})")
        edge_labels = el[order, 0].astype(np.int32)
    x = np.concatenate(parts, axis=1).astype(np.float32)
    return GraphSet(f.name, x, s.astype(np.int32), r.astype(np.int32), node_offsets, edge_offsets,
                    y.astype(np.int32), int(values.size), edge_labels, meta)


@register_format("tu", kind="graphs", suffixes=("_graph_indicator.txt", ".zip"),
                 layout="TU graph-classification set: a directory with <NAME>_A.txt, _graph_indicator.txt, "
                        "_graph_labels.txt (+ node labels / attributes), or its .zip")
def load_tu(path: PathLike, name: Optional[str] = None, degree_cap: Optional[int] = None) -> GraphSet:
    """A user's TU set (directory, `_graph_indicator.txt` inside it, or zip): `read_tu`, unverified."""
    return read_tu(path, name, degree_cap)


def tu_files(name: str) -> tuple[str, ...]:
    """The data files of registered TU set `name`, relative to a data directory."""
    if name.startswith("IMDB"):
        return (f"tu/{name}.zip",)
    return tuple(k for k in TU_SHA256 if k.startswith(f"tu/{name}/{name}_") and not k.endswith("readme.txt"))


# which public repository (@ commit, folder) holds each registered set's files (README.md §2.9 of the data)
_TU_ORIGINS = {
    **{n: ("XuelinHu/Matrix-ResGNN-GraphClassificatio", "f76543d8bd82c7ebe1c16f59d9219d038c62ac8e",
           f"data/TUDataset/{n}/raw/") for n in ("AIDS", "ENZYMES", "MUTAG", "PROTEINS")},
    **{n: ("tvayer/FGW", "3d2128a5e4e2cb8ed8a272295feff13641a36cef", f"data/{n}/") for n in ("BZR", "COX2")},
    **{n: ("sunfanyunn/InfoGraph", "1f286d5cc48c1ea142dd6fa9d9ef5a449a09cf08", f"data/{n}/")
       for n in ("NCI1", "PTC_MR")},
    **{n: ("sunfanyunn/InfoGraph", "1f286d5cc48c1ea142dd6fa9d9ef5a449a09cf08", "data/")
       for n in ("IMDB-BINARY", "IMDB-MULTI")},
}


def tu_urls(name: str) -> dict[str, str]:
    """Where the data files of registered TU set `name` (`tu_files`) are published."""
    repo, commit, remote = _TU_ORIGINS[name]
    return github_files(repo, commit, remote, "tu/" if name.startswith("IMDB") else f"tu/{name}/", tu_files(name))


def load_tu_set(name: str, data_dir: Optional[PathLike] = None, verify: bool = True,
                degree_cap: Optional[int] = None) -> GraphSet:
    """Registered TU set `name` from `<data dir>/tu/`, its files checked against the published sha256."""
    files = tu_files(name)
    folder = find_dataset_dir(name, files, data_dir)
    if verify:
        verify_files(name, folder, {k: TU_SHA256[k] for k in files})
    return read_tu(folder / files[0] if name.startswith("IMDB") else folder / "tu" / name, name, degree_cap)


# registered under their TU names, except MUTAG: "mutag" is the RDF MUTAG (FedHGN), so the TU set is "mutag_tu"
REGISTERED_AS = {name: ("MUTAG_TU" if name == "MUTAG" else name) for name in TU_SETS}
for _name, _text in TU_SETS.items():
    register(REGISTERED_AS[_name], functools.partial(load_tu_set, _name), tu_files(_name), _text, kind="graphs",
             sha256={k: TU_SHA256[k] for k in tu_files(_name)}, urls=tu_urls(_name))
