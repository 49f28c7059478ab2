"""The PyTorch Geometric side of `layouts.py` (runs in the PyG venv, imports no fgl_jax): reads each
layout file with PyG's own reader and prints one JSON line of counts per file.

    /work/peers/pyg-venv/bin/python layouts_pyg.py SPEC.json

SPEC.json: a list of {"id", "kind", "path"} (kinds below). PyG's dataset classes want their raw
files under ``<root>/<name>/raw/``; each is given a scratch root whose raw/ folder holds symbolic
links to the user's files, so PyG parses the very bytes fgl_jax parses and downloads nothing.

    gnnbench     torch_geometric.io.read_npz (what CitationFull / Amazon / Coauthor use)
    gnnbench_dotted  the other spelling (adj_matrix.data, ...): read_npz only knows adj_data, so its
                 parser (torch_geometric.io.npz.parse_npz) is given the keys renamed
    heterophily  torch_geometric.datasets.HeterophilousGraphDataset's processing (its raw file is
                 linked in as roman_empire.npz: the class only accepts its own five names)
    planetoid    torch_geometric.datasets.Planetoid (ind.<name>.* linked into raw/)
    geom_gcn_webkb / geom_gcn_actor / geom_gcn_wikipedia   a Geom-GCN raw directory (out1_* files and
                 ten <name>_split_0.6_0.2_<i>.npz) read by torch_geometric.datasets.WebKB,
                 Actor and WikipediaNetwork(geom_gcn_preprocess=True); the directory's name is the
                 dataset's (cornell, film, chameleon)
    ogb_node     an OGB node-property directory in the ogbn-arxiv layout (``ogb_toy.py``), read by the
                 ``ogb`` package's ``PygNodePropPredDataset("ogbn-arxiv")`` (its raw/, split/ and
                 RELEASE_v1.txt linked into <root>/ogbn_arxiv/, so it neither downloads nor writes
                 into the user's directory) and its ``get_idx_split()``
    tu           torch_geometric.datasets.TUDataset(use_node_attr=True) (the directory's files, or the
                 zip's, in raw/); a set without node labels or attributes (IMDB) counts the features
                 of PyG's OneHotDegree transform at the set's maximum degree

Counts: nodes, edges (stored directed edge_index columns, as PyG keeps them), features
(x.size(1)), classes (max label + 1 over labelled nodes); for TU also graphs. For the Geom-GCN
directories, whose readers only coalesce the directed pairs (self-loops and one-way edges stay),
"edges_coalesced" is that count and "edges" the count after PyG's to_undirected and
remove_self_loops (what fgl_jax does by default); "splits" gives k and, per mask, the sha256 of
the [k, N] masks as uint8 bytes (split-major) and the per-split sizes. For the OGB directory,
"edges_stored" is ogb's edge_index as stored (one-way edges and the self-loop kept; ogbn-arxiv adds
no inverse edges), "edges" the count after to_undirected + remove_self_loops, and "splits" the same
digests of the one split (k = 1) made into [1, N] masks from get_idx_split()'s index arrays.
"""
from __future__ import annotations

import json
import os
import sys
import tempfile
import zipfile
from pathlib import Path

import torch
import torch_geometric


def _link_raw(root: Path, name: str, files: list[Path], rename=lambda p: p.name) -> None:
    raw = root / name / "raw"
    raw.mkdir(parents=True, exist_ok=True)
    for f in files:
        os.symlink(f.resolve(), raw / rename(f))


def _counts(data, num_features=None) -> dict:
    y = data.y[data.y >= 0] if data.y is not None else torch.zeros(0, dtype=torch.long)
    return {"nodes": int(data.num_nodes), "edges": int(data.edge_index.size(1)),
            "features": int(data.x.size(1) if num_features is None else num_features),
            "classes": int(y.max()) + 1 if y.numel() else 0}


def read(kind: str, path: Path, scratch: Path) -> dict:
    if kind == "gnnbench":
        from torch_geometric.io import read_npz
        return _counts(read_npz(str(path), to_undirected=True))
    if kind == "gnnbench_dotted":  # read_npz knows only adj_data...; its parser gets the dotted keys renamed
        import numpy as np
        from torch_geometric.io.npz import parse_npz
        keys = {}
        with np.load(path, allow_pickle=False) as f:
            for k in f.files:
                try:
                    keys[k.replace("_matrix.", "_")] = f[k]
                except ValueError:  # a pickled None placeholder (attr_names, ...): not read
                    pass
        return _counts(parse_npz(keys, to_undirected=True))
    if kind == "heterophily":
        from torch_geometric.datasets import HeterophilousGraphDataset
        _link_raw(scratch, "roman_empire", [path], rename=lambda p: "roman_empire.npz")
        return _counts(HeterophilousGraphDataset(str(scratch), "Roman-empire")[0])
    if kind == "planetoid":
        from torch_geometric.datasets import Planetoid
        name = path.name[len("ind."):-len(".test.index")]
        files = sorted(path.parent.glob(f"ind.{name}.*"))
        _link_raw(scratch, name.capitalize() if name != "citeseer" else "CiteSeer", files)
        ds = Planetoid(str(scratch), "CiteSeer" if name == "citeseer" else name.capitalize())
        return _counts(ds[0])
    if kind == "tu":
        from torch_geometric.datasets import TUDataset
        if path.suffix == ".zip":
            with zipfile.ZipFile(path) as z:
                members = [m for m in z.namelist() if m.endswith(".txt")]
                name = Path(next(m for m in members if m.endswith("_A.txt"))).name[: -len("_A.txt")]
                raw = scratch / name / "raw"
                raw.mkdir(parents=True)
                for m in members:
                    (raw / Path(m).name).write_bytes(z.read(m))
        else:
            name = path.name
            _link_raw(scratch, name, [f for f in path.iterdir() if f.name.startswith(name + "_")])
        ds = TUDataset(str(scratch), name, use_node_attr=True)   # node labels one-hot + node attributes
        features = int(ds.num_node_features)
        if features == 0:  # no node labels nor attributes (IMDB): the usual one-hot degree, PyG's transform
            from torch_geometric.transforms import OneHotDegree
            from torch_geometric.utils import degree
            top = max(int(degree(g.edge_index[0], g.num_nodes).max()) for g in ds)
            features = int(OneHotDegree(top)(ds[0]).x.size(1))
        ys = ds.y if ds.y is not None else torch.zeros(0, dtype=torch.long)
        return {"graphs": len(ds), "nodes": sum(int(g.num_nodes) for g in ds),
                "edges": int(ds.edge_index.size(1)), "features": features,
                "classes": int(ys.max()) + 1 if ys.numel() else 0}
    if kind.startswith("geom_gcn_"):
        return _geom_gcn(kind[len("geom_gcn_"):], path, scratch)
    if kind == "ogb_node":
        return _ogb_node(path, scratch)
    raise ValueError(f"unknown kind {kind!r}")


def _geom_gcn(variant: str, path: Path, scratch: Path) -> dict:
    import hashlib
    from torch_geometric.utils import remove_self_loops, to_undirected
    name = path.name
    files = sorted(path.iterdir())
    if variant == "webkb":
        from torch_geometric.datasets import WebKB
        _link_raw(scratch, name, files)
        data = WebKB(str(scratch), name)[0]
    elif variant == "actor":  # Actor's raw_dir is <root>/raw
        from torch_geometric.datasets import Actor
        _link_raw(scratch, "", files)
        data = Actor(str(scratch))[0]
    else:  # WikipediaNetwork(geom_gcn_preprocess=True): <root>/<name>/geom_gcn/raw
        from torch_geometric.datasets import WikipediaNetwork
        _link_raw(scratch / name, "geom_gcn", files)
        data = WikipediaNetwork(str(scratch), name, geom_gcn_preprocess=True)[0]
    out = _counts(data)
    out["edges_coalesced"] = out["edges"]
    out["edges"] = int(remove_self_loops(to_undirected(data.edge_index, num_nodes=data.num_nodes))[0].size(1))
    splits = {"k": int(data.train_mask.size(1))}
    for key in ("train", "val", "test"):
        m = getattr(data, f"{key}_mask").t().contiguous().to(torch.uint8).numpy()   # [k, N]
        splits[f"{key}_sha256"] = hashlib.sha256(m.tobytes()).hexdigest()
        splits[f"{key}_sizes"] = [int(v) for v in m.sum(axis=1)]
    out["splits"] = splits
    return out


def _split_digests(masks: dict) -> dict:
    """{"k", "<part>_sha256", "<part>_sizes"} of {"train", "val", "test"}: bool tensors [k, N]."""
    import hashlib
    out: dict = {"k": int(masks["train"].size(0))}
    for key in ("train", "val", "test"):
        m = masks[key].contiguous().to(torch.uint8).numpy()
        out[f"{key}_sha256"] = hashlib.sha256(m.tobytes()).hexdigest()
        out[f"{key}_sizes"] = [int(v) for v in m.sum(axis=1)]
    return out


def _ogb_node(path: Path, scratch: Path) -> dict:
    import contextlib
    import io
    from ogb.nodeproppred import PygNodePropPredDataset
    from torch_geometric.utils import remove_self_loops, to_undirected
    root = scratch / "ogbn_arxiv"
    root.mkdir(parents=True)
    for item in ("raw", "split", "RELEASE_v1.txt"):
        os.symlink((path / item).resolve(), root / item)
    _load = torch.load   # ogb 1.3.6 calls torch.load on its own processed file, which torch >= 2.6 refuses
    torch.load = lambda *a, **k: _load(*a, **{"weights_only": False, **k})   # by default (weights_only)
    try:
        with contextlib.redirect_stdout(io.StringIO()):   # ogb prints progress; stdout is our JSON line
            ds = PygNodePropPredDataset("ogbn-arxiv", root=str(scratch))
            idx = ds.get_idx_split()
    finally:
        torch.load = _load
    data = ds[0]
    out = _counts(data)
    out["edges_stored"] = out["edges"]
    out["edges"] = int(remove_self_loops(to_undirected(data.edge_index, num_nodes=data.num_nodes))[0].size(1))
    masks = {}
    for key, part in (("train", "train"), ("val", "valid"), ("test", "test")):
        m = torch.zeros(1, data.num_nodes, dtype=torch.bool)
        m[0, idx[part]] = True
        masks[key] = m
    out["splits"] = _split_digests(masks)
    return out


def main() -> None:
    spec = json.loads(Path(sys.argv[1]).read_text())
    from importlib.metadata import PackageNotFoundError, version
    try:
        ogb_version = version("ogb")
    except PackageNotFoundError:
        ogb_version = None
    out = {"torch": torch.__version__, "torch_geometric": torch_geometric.__version__, "ogb": ogb_version,
           "files": {}}
    for item in spec:
        with tempfile.TemporaryDirectory() as tmp:
            try:
                out["files"][item["id"]] = read(item["kind"], Path(item["path"]), Path(tmp))
            except Exception as e:  # recorded, not fatal: the record says which reader failed and why
                out["files"][item["id"]] = {"error": f"{type(e).__name__}: {e}"}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
