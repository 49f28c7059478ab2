"""Typed heterogeneous graphs on the host, and loaders for the public heterogeneous datasets.

`HeteroGraph` holds typed nodes (one contiguous id range per node type), canonical edge types
``(src type, relation name, dst type)`` each with its own ``(src, dst)`` arrays of type-local ids,
optional features per node type, and labels / masks for one *target* node type.

Loaders (all host NumPy; every file is sha256-checked before it is parsed):

    load_aifb / load_mutag     RDF entity classification (Ristoski et al. 2016; Schlichtkrull et
                               al. 2018) from the gzipped N-Triples + TSV label files, filtered the
                               way DGL's ``AIFBDataset`` / ``MUTAGDataset`` filter them. ``reverse=True``
                               (default) adds a ``rev_<r>`` edge for every edge, which yields DGL's
                               documented sizes: AIFB 7,262 nodes / 48,810 edges, MUTAG 27,163 /
                               148,100. FedHGN splits the graph *without* reverse edges
                               (`fgl_jax.partition.hetero`), so pass ``reverse=False`` there.
    load_acm3025               HAN's ACM3025 (.mat): papers with metapath relations PAP/PLP/PMP/PTP.
    load_dblp / load_imdb      MAGNN's DBLP / IMDB (via `fgl_jax.data.magnn.read_magnn`).

The N-Triples parser is a small line-based one (W3C N-Triples grammar: IRIs, blank nodes,
literals with language tags or datatypes, string escapes); malformed lines raise
`DataFormatError` naming file and line.
"""
from __future__ import annotations

import dataclasses
import gzip
import re
from pathlib import Path
from typing import Iterable, Iterator, Optional, Sequence

import numpy as np

from .paths import DataFormatError, PathLike, find_dataset_dir, github_files, verify_files

__all__ = ["HeteroGraph", "CanonicalEtype", "parse_ntriples", "load_aifb", "load_mutag", "load_acm3025",
           "load_dblp", "load_imdb", "load_hetero", "RDF_SHA256", "ACM_SHA256",
           "carve_validation"]

CanonicalEtype = tuple[str, str, str]


# ---------------------------------------------------------------------------------------------
# Container
# ---------------------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class HeteroGraph:
    """A typed graph for node classification on one target node type (host NumPy).

    node_types: tuple of T names; num_nodes: tuple of T counts (type-local ids 0..n_t-1).
    canonical_etypes: tuple of R (src type, relation, dst type); edges: tuple of R (src [E_r],
    dst [E_r]) int32 arrays of type-local ids. features: {node type: [n_t, F] array or scipy
    matrix} (empty for featureless graphs). target: the labelled node type; y int32 [n_target]
    (-1 = unlabelled); train/val/test_mask bool [n_target].
    node_ids: {node type: int64 [n_t]} ids of these nodes in the graph this one was cut from
    (identity for a loaded graph), so client graphs can be related to the global one.
    meta: for a user's files, "path", "format", "notices", "split" (as `Graph.meta`).
    """

    name: str
    node_types: tuple[str, ...]
    num_nodes: tuple[int, ...]
    canonical_etypes: tuple[CanonicalEtype, ...]
    edges: tuple[tuple[np.ndarray, np.ndarray], ...]
    target: str
    y: np.ndarray
    num_classes: int
    train_mask: np.ndarray
    val_mask: np.ndarray
    test_mask: np.ndarray
    features: dict = dataclasses.field(default_factory=dict)
    node_ids: Optional[dict] = None
    meta: dict = dataclasses.field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self):
        if len(self.node_types) != len(self.num_nodes):
            raise ValueError(f"node_types ({len(self.node_types)}) and num_nodes ({len(self.num_nodes)}) differ")
        if len(set(self.node_types)) != len(self.node_types):
            raise ValueError(f"duplicate node type names in {self.node_types}")
        if len(self.canonical_etypes) != len(self.edges):
            raise ValueError("canonical_etypes and edges must have the same length")
        if len(set(self.canonical_etypes)) != len(self.canonical_etypes):
            raise ValueError("duplicate canonical edge types")
        if self.target not in self.node_types:
            raise ValueError(f"target node type {self.target!r} is not one of {self.node_types}")
        sizes = dict(zip(self.node_types, self.num_nodes))
        for (s, r, d), (src, dst) in zip(self.canonical_etypes, self.edges):
            if s not in sizes or d not in sizes:
                raise ValueError(f"edge type {(s, r, d)} names an unknown node type")
            if src.shape != dst.shape or src.ndim != 1:
                raise ValueError(f"edge type {(s, r, d)}: src/dst must be 1-D arrays of equal length")
            if src.size and (src.min() < 0 or src.max() >= sizes[s] or dst.min() < 0 or dst.max() >= sizes[d]):
                raise ValueError(f"edge type {(s, r, d)}: node id out of range")
        n_t = sizes[self.target]
        for nm in ("y", "train_mask", "val_mask", "test_mask"):
            if np.shape(getattr(self, nm)) != (n_t,):
                raise ValueError(f"{nm} must have shape ({n_t},), got {np.shape(getattr(self, nm))}")

    # -- sizes ---------------------------------------------------------------------------------
    @property
    def total_nodes(self) -> int:
        return int(sum(self.num_nodes))

    @property
    def num_edges(self) -> int:
        return int(sum(s.size for s, _ in self.edges))

    @property
    def relations(self) -> tuple[str, ...]:
        """Unique relation names, in order of first appearance among canonical types."""
        return tuple(dict.fromkeys(r for _, r, _ in self.canonical_etypes))

    def n(self, ntype: str) -> int:
        return self.num_nodes[self.node_types.index(ntype)]

    def offsets(self) -> dict[str, int]:
        """First flat id of each node type in the homogeneous numbering (types in order)."""
        out, acc = {}, 0
        for t, n in zip(self.node_types, self.num_nodes):
            out[t] = acc
            acc += n
        return out

    def stats(self) -> dict:
        return {"nodes": self.total_nodes, "edges": self.num_edges, "ntypes": len(self.node_types),
                "etypes": len(self.canonical_etypes), "relations": len(self.relations),
                "train": int(self.train_mask.sum()), "val": int(self.val_mask.sum()),
                "test": int(self.test_mask.sum()), "classes": self.num_classes}

    # -- transforms ----------------------------------------------------------------------------
    def add_reverse(self, prefix: str = "rev_") -> "HeteroGraph":
        """Every canonical type (s, r, t) gets (t, prefix+r, s) with the edges reversed.

        As `dgl.AddReverse(sym_new_etype=True)`: self-typed relations (s == t) get a reverse
        type too, so the edge count exactly doubles.
        """
        cets = list(self.canonical_etypes)
        edges = list(self.edges)
        for (s, r, d), (src, dst) in zip(self.canonical_etypes, self.edges):
            rev = (d, prefix + r, s)
            if rev in self.canonical_etypes:
                raise ValueError(f"reverse edge type {rev} already exists; use another prefix")
            cets.append(rev)
            edges.append((dst.copy(), src.copy()))
        return dataclasses.replace(self, canonical_etypes=tuple(cets), edges=tuple(edges))

    def edge_subgraph(self, keep: Sequence[np.ndarray], name: Optional[str] = None,
                      drop_empty_types: bool = True) -> "HeteroGraph":
        """The subgraph induced by the kept edges (bool mask or index array per canonical type).

        Nodes without a kept edge are dropped (DGL `edge_subgraph` / `compact_graphs`), node
        types left empty are dropped, and so are canonical types with no edge left when
        `drop_empty_types`. The target type is always kept (possibly with 0 nodes); labels and
        masks of surviving target nodes are carried; `node_ids` maps back to this graph's ids.
        """
        if len(keep) != len(self.edges):
            raise ValueError(f"keep has {len(keep)} entries, graph has {len(self.edges)} edge types")
        sel_edges = []
        for (src, dst), k in zip(self.edges, keep):
            k = np.asarray(k)
            idx = np.flatnonzero(k) if k.dtype == bool else k.astype(np.int64)
            sel_edges.append((src[idx], dst[idx]))
        used = {t: np.zeros(n, bool) for t, n in zip(self.node_types, self.num_nodes)}
        for (s, _, d), (src, dst) in zip(self.canonical_etypes, sel_edges):
            used[s][src] = True
            used[d][dst] = True
        new_types = tuple(t for t in self.node_types if used[t].any() or t == self.target)
        remap, new_n, new_ids = {}, [], {}
        base = self.node_ids or {t: np.arange(n, dtype=np.int64) for t, n in zip(self.node_types, self.num_nodes)}
        for t in new_types:
            keep_nodes = np.flatnonzero(used[t])
            m = np.full(self.n(t), -1, np.int64)
            m[keep_nodes] = np.arange(keep_nodes.size)
            remap[t] = m
            new_n.append(int(keep_nodes.size))
            new_ids[t] = base[t][keep_nodes]
        cets, edges = [], []
        for cet, (src, dst) in zip(self.canonical_etypes, sel_edges):
            if drop_empty_types and src.size == 0:
                continue
            if cet[0] not in remap or cet[2] not in remap:
                continue
            cets.append(cet)
            edges.append((remap[cet[0]][src].astype(np.int32), remap[cet[2]][dst].astype(np.int32)))
        tk = np.flatnonzero(used[self.target])
        feats = {t: (f[np.flatnonzero(used[t])] if t in new_types else None) for t, f in self.features.items()}
        feats = {t: f for t, f in feats.items() if f is not None}
        return HeteroGraph(name or self.name, new_types, tuple(new_n), tuple(cets), tuple(edges), self.target,
                           self.y[tk], self.num_classes, self.train_mask[tk], self.val_mask[tk],
                           self.test_mask[tk], feats, new_ids)

    def edge_type_subgraph(self, etypes: Iterable[CanonicalEtype], name: Optional[str] = None) -> "HeteroGraph":
        """Keep only the listed canonical types (all their edges), then compact (drop isolated nodes)."""
        wanted = set(etypes)
        unknown = wanted - set(self.canonical_etypes)
        if unknown:
            raise ValueError(f"unknown canonical edge types {sorted(unknown)}")
        keep = [np.full(s.size, c in wanted) for c, (s, _) in zip(self.canonical_etypes, self.edges)]
        return self.edge_subgraph(keep, name=name)

    def homogeneous(self) -> dict:
        """Flat view: src/dst [E] flat node ids, cetype [E] canonical-type index, offsets."""
        off = self.offsets()
        src = [s.astype(np.int64) + off[c[0]] for c, (s, _) in zip(self.canonical_etypes, self.edges)]
        dst = [d.astype(np.int64) + off[c[2]] for c, (_, d) in zip(self.canonical_etypes, self.edges)]
        cet = [np.full(s.size, i, np.int32) for i, (s, _) in enumerate(self.edges)]
        cat = lambda xs, dt: np.concatenate(xs).astype(dt) if xs else np.zeros(0, dt)
        return {"src": cat(src, np.int64), "dst": cat(dst, np.int64), "cetype": cat(cet, np.int32), "offsets": off}


# ---------------------------------------------------------------------------------------------
# N-Triples
# ---------------------------------------------------------------------------------------------
_IRI = r"<([^<>\"{}|^`\\\x00-\x20]*)>"
_BNODE = r"_:([A-Za-z0-9_][A-Za-z0-9_.\-]*)"
_LIT = r"\"((?:[^\"\\\n\r]|\\[tbnrf\"'\\]|\\u[0-9A-Fa-f]{4}|\\U[0-9A-Fa-f]{8})*)\"(?:@([A-Za-z]+(?:-[A-Za-z0-9]+)*)|\^\^" + _IRI + ")?"
_TRIPLE = re.compile(r"^[ \t]*(?:" + _IRI + "|" + _BNODE + r")[ \t]+" + _IRI + r"[ \t]+(?:" + _IRI + "|" + _BNODE
                     + "|" + _LIT + r")[ \t]*\.[ \t]*(?:#.*)?$")
_ESC = re.compile(r"\\(?:u([0-9A-Fa-f]{4})|U([0-9A-Fa-f]{8})|([tbnrf\"'\\]))")
_SIMPLE = {"t": "\t", "b": "\b", "n": "\n", "r": "\r", "f": "\f", '"': '"', "'": "'", "\\": "\\"}


def _unescape(s: str) -> str:
    if "\\" not in s:
        return s
    return _ESC.sub(lambda m: chr(int(m.group(1) or m.group(2), 16)) if (m.group(1) or m.group(2))
                    else _SIMPLE[m.group(3)], s)


# A term is a tuple: ("uri", iri) | ("bnode", label) | ("literal", lexical, lang, datatype).
Term = tuple


def parse_ntriples(lines: Iterable[str], source: str = "<input>") -> Iterator[tuple[Term, Term, Term]]:
    """Yield (subject, predicate, object) terms from N-Triples lines; skip blanks and comments.

    Raises DataFormatError naming `source` and the 1-based line number on a malformed line.
    """
    for no, line in enumerate(lines, 1):
        line = line.rstrip("\r\n")
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        m = _TRIPLE.match(line)
        if m is None:
            raise DataFormatError(f"{source}, line {no}: not a valid N-Triples statement: {line[:200]!r}")
        s_iri, s_b, p_iri, o_iri, o_b, o_lex, o_lang, o_dt = m.groups()
        subj = ("uri", s_iri) if s_iri is not None else ("bnode", s_b)
        if o_iri is not None:
            obj = ("uri", o_iri)
        elif o_b is not None:
            obj = ("bnode", o_b)
        else:
            obj = ("literal", _unescape(o_lex), o_lang, o_dt)
        yield subj, ("uri", p_iri), obj


def _read_nt_gz(path: Path) -> list[tuple[Term, Term, Term]]:
    try:
        with gzip.open(path, "rt", encoding="utf-8") as fh:
            triples = set(parse_ntriples(fh, str(path)))  # a set, as an RDF graph: duplicates merged
    except (OSError, EOFError, UnicodeDecodeError) as e:
        raise DataFormatError(f"{path}: cannot read gzipped N-Triples ({e})") from e
    # Sorted as DGL sorts the rdflib tuples, so ids do not depend on the file's line order.
    return sorted(triples, key=lambda t: tuple(tuple("" if x is None else x for x in term) for term in t))


# ---------------------------------------------------------------------------------------------
# RDF datasets with DGL's entity / relation filtering
# ---------------------------------------------------------------------------------------------
RDF_SHA256: dict[str, dict[str, str]] = {
    "aifb": {
        "rdf/aifb/aifb_stripped.nt.gz": "ba4191235456e09d8f12a2415f24273b8d7641ffee6001ca9340f02c04d77fea",
        "rdf/aifb/trainingSet.tsv": "4960629668c6548215871321e4b6daaee24191f38f41ccfbc4de62016d18c5a7",
        "rdf/aifb/testSet.tsv": "abe4a9e7c393164996d1fe7250d72ec1f1a7b350583f2dff5d880f60ec04b3b6",
    },
    "mutag": {
        "rdf/mutag/mutag_stripped.nt.gz": "871f24a766fd377f0adf995f50aea70fd03e4997c6051b3abff3384c08e56ac7",
        "rdf/mutag/trainingSet.tsv": "d2fe71b68bb25735465128b4aed50d9b165fa5ab92aa2e221fad3d1cd87b7297",
        "rdf/mutag/testSet.tsv": "20e69309a037cbf0fb2b52be3eaa6c43888215cbc0b96e8f8bd9e2af55652a3f",
    },
}


class _AifbRules:
    """DGL AIFBDataset: entities are IRIs under the AIFB prefix (type = 4th path segment) and
    literals (type `_Literal`, identified by their lexical form); blank nodes, other IRIs and the
    `employs` / `affiliation` predicates (they leak the label) are dropped."""

    target = "Personen"
    entity_prefix = "http://www.aifb.uni-karlsruhe.de/"
    relation_prefix = "http://swrc.ontoware.org/"
    banned = {"http://swrc.ontoware.org/ontology#employs", "http://swrc.ontoware.org/ontology#affiliation"}

    def entity(self, term: Term):
        if term[0] == "literal":
            return ["_Literal", term[1]]
        if term[0] == "bnode" or not term[1].startswith(self.entity_prefix):
            return None
        sp = term[1].split("/")
        if len(sp) < 6:
            return None
        return [sp[3], sp[5]]

    def relation(self, iri: str):
        if iri in self.banned:
            return None
        if iri.startswith(self.relation_prefix):
            return iri.split("/")[3]
        return iri.split("/")[-1]

    def tuple(self, pred: str, s, r, o):
        return None if (s is None or r is None or o is None) else (s, r, o)


class _MutagRules:
    """DGL MUTAGDataset: IRIs under the carcinogenesis prefix; `d…` are compounds (type `d`),
    `bond…` bonds; other entities get their type from the relation, or `SCHEMA` when the
    predicate is outside the prefix (rdf:type, rdfs:subClassOf, ...); `isMutagenic` (the label)
    is dropped."""

    target = "d"
    prefix = "http://dl-learner.org/carcinogenesis#"
    banned = {"http://dl-learner.org/carcinogenesis#isMutagenic"}
    _d = re.compile("d[0-9]")
    _bond = re.compile("bond[0-9]")

    def entity(self, term: Term):
        if term[0] == "literal":
            return ["_Literal", term[1]]
        if term[0] == "bnode" or not term[1].startswith(self.prefix):
            return None
        inst = term[1][len(self.prefix):]
        cls = "d" if self._d.match(inst) else ("bond" if self._bond.match(inst) else None)
        return [cls, inst]

    def relation(self, iri: str):
        if iri in self.banned:
            return None
        if iri.startswith(self.prefix):
            return iri[len(self.prefix):]
        return iri.split("/")[-1]

    def tuple(self, pred: str, s, r, o):
        if s is None or r is None or o is None:
            return None
        if not pred.startswith(self.prefix):
            o[0] = "SCHEMA"
            if s[0] is None:
                s[0] = "SCHEMA"
        if o[0] is None:
            o[0] = r
        if s[0] is None:
            raise DataFormatError(f"MUTAG: subject {s[1]!r} of relation {r!r} has no entity type")
        return (s, r, o)


# DGL renames relation names that clash with nn.Module attributes.
_RENAME = {"type": "rdftype"}


def _build_rdf(name: str, folder: Path, rules, reverse: bool, val_fraction: float, split_seed: int) -> HeteroGraph:
    nt = folder / f"rdf/{name}/{name}_stripped.nt.gz"
    triples = _read_nt_gz(nt)
    ent_ids: dict[str, int] = {}
    ent_type: list[str] = []
    ent_key: list[str] = []
    trip_src, trip_dst, trip_rel = [], [], []
    for s, p, o in triples:
        se, rel, oe = rules.entity(s), rules.relation(p[1]), rules.entity(o)
        out = rules.tuple(p[1], se, rel, oe)
        if out is None:
            continue
        se, rel, oe = out
        rel = _RENAME.get(rel, rel)
        ids = []
        for cls, eid in (se, oe):
            key = f"{cls}/{eid}"   # DGL identifies an entity by "type/id"
            i = ent_ids.get(key)
            if i is None:
                i = ent_ids[key] = len(ent_type)
                ent_type.append(cls)
                ent_key.append(key)
            ids.append(i)
        trip_src.append(ids[0]); trip_dst.append(ids[1]); trip_rel.append(rel)
    if not trip_src:
        raise DataFormatError(f"{nt}: no triple survived the {name.upper()} entity/relation filtering")
    ntypes = tuple(dict.fromkeys(ent_type))
    ent_type_arr = np.array([ntypes.index(t) for t in ent_type])
    local = np.zeros(len(ent_type), np.int64)
    counts = []
    for ti in range(len(ntypes)):
        members = np.flatnonzero(ent_type_arr == ti)
        local[members] = np.arange(members.size)
        counts.append(int(members.size))
    src, dst = np.asarray(trip_src), np.asarray(trip_dst)
    cet_keys = [(ntypes[ent_type_arr[a]], r, ntypes[ent_type_arr[b]]) for a, r, b in zip(src, trip_rel, dst)]
    cets = tuple(dict.fromkeys(cet_keys))
    cet_index = {c: i for i, c in enumerate(cets)}
    cid = np.fromiter((cet_index[c] for c in cet_keys), np.int64, len(cet_keys))
    edges = tuple((local[src[cid == i]].astype(np.int32), local[dst[cid == i]].astype(np.int32))
                  for i in range(len(cets)))
    # Labels: DGL parses each TSV row's entity with the same rules and looks it up.
    tgt = rules.target
    if tgt not in ntypes:
        raise DataFormatError(f"{name}: target type {tgt!r} not found among node types {ntypes}")
    n_t = counts[ntypes.index(tgt)]
    y = np.full(n_t, -1, np.int32)
    masks = {}
    label_ids: dict[str, int] = {}
    for split, fname in (("train", "trainingSet.tsv"), ("test", "testSet.tsv")):
        path = folder / f"rdf/{name}/{fname}"
        mask = np.zeros(n_t, bool)
        with open(path, encoding="utf-8") as fh:
            for no, line in enumerate(fh, 1):
                if no == 1 or not line.strip():
                    continue
                parts = line.rstrip("\r\n").split("\t")
                if len(parts) != 3:
                    raise DataFormatError(f"{path}, line {no}: expected 3 tab-separated fields, got {len(parts)}")
                ent = rules.entity(("uri", parts[0]))
                key = None if ent is None else f"{ent[0]}/{ent[1]}"
                gid = ent_ids.get(key) if key is not None else None
                if gid is None or ent_type[gid] != tgt:
                    raise DataFormatError(f"{path}, line {no}: labelled entity {parts[0]!r} is not a "
                                          f"{tgt!r} node of the filtered {name.upper()} graph")
                lid = int(local[gid])
                lab = label_ids.setdefault(parts[2], len(label_ids))
                if y[lid] >= 0 and y[lid] != lab:
                    raise DataFormatError(f"{path}, line {no}: entity {parts[0]!r} has two different labels")
                y[lid] = lab
                mask[lid] = True
        masks[split] = mask
    if (masks["train"] & masks["test"]).any():
        raise DataFormatError(f"{name}: train and test label files overlap")
    train, val = carve_validation(masks["train"], val_fraction, split_seed)
    g = HeteroGraph(name, ntypes, tuple(counts), cets, edges, tgt, y, len(label_ids), train, val,
                    masks["test"])
    return g.add_reverse() if reverse else g


def carve_validation(train_mask: np.ndarray, fraction: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Move round(fraction * |train|) random training nodes to a validation set (FedHGN: 0.2, 12345).

    (The official code draws with Python's `random.seed(12345)` over DGL's node order; the nodes
    chosen here differ, the sizes are the same: AIFB 112/28, MUTAG 218/54.)
    """
    if not 0 <= fraction < 1:
        raise ValueError(f"val_fraction must be in [0, 1), got {fraction}")
    idx = np.flatnonzero(train_mask)
    n_val = int(round(fraction * idx.size))
    rng = np.random.default_rng(seed)
    chosen = rng.choice(idx, n_val, replace=False) if n_val else np.zeros(0, np.int64)
    val = np.zeros_like(train_mask)
    val[chosen] = True
    return train_mask & ~val, val


def _load_rdf(name: str, rules, data_dir, reverse, val_fraction, split_seed, verify) -> HeteroGraph:
    files = RDF_SHA256[name]
    folder = find_dataset_dir(name, list(files), data_dir)
    if verify:
        verify_files(name, folder, files)
    return _build_rdf(name, folder, rules, reverse, val_fraction, split_seed)


def load_aifb(data_dir: Optional[PathLike] = None, reverse: bool = True, val_fraction: float = 0.2,
              split_seed: int = 12345, verify: bool = True) -> HeteroGraph:
    """AIFB: target `Personen`, 4 classes, 176 labelled (140 train -> 112 train + 28 val, 36 test).

    Args:
        data_dir: the data directory to look in first (None: $FGL_JAX_DATA, then the cache dir).
        reverse: add each relation's reverse type; True gives DGL's graph: 7,262 nodes / 48,810
            edges / 7 node types / 104 canonical types.
        val_fraction: the fraction of the training nodes moved to validation.
        split_seed: the seed of that train/val split.
        verify: check the files' sha256 against the published ones.

    Returns:
        The `HeteroGraph`, target node type `Personen`.

    Raises:
        DatasetNotFoundError: the files are in no data directory.
        DataChecksumError: a file's sha256 differs (with `verify`).
    """
    return _load_rdf("aifb", _AifbRules(), data_dir, reverse, val_fraction, split_seed, verify)


def load_mutag(data_dir: Optional[PathLike] = None, reverse: bool = True, val_fraction: float = 0.2,
               split_seed: int = 12345, verify: bool = True) -> HeteroGraph:
    """MUTAG: target `d` (compounds), 2 classes, 340 labelled (272 -> 218 + 54 val, 68 test).

    reverse=True: 27,163 nodes / 148,100 edges (DGL's graph).
    """
    return _load_rdf("mutag", _MutagRules(), data_dir, reverse, val_fraction, split_seed, verify)


# ---------------------------------------------------------------------------------------------
# ACM3025 (HAN), MAGNN DBLP / IMDB
# ---------------------------------------------------------------------------------------------
ACM_SHA256 = {"hetero/acm3025/ACM3025.mat": "b10e486a49892307a56a3d9ad48128a948d2bf2da19db9e6e7f79c6622529fdc"}
# where the files are published (see /work/shared/data/README.md §2.5, §2.8)
ACM_URLS = github_files("googlebaba/WWW2020-O2MAC", "f663628eddd253c23c5c60f5a098c1ad38e92e6d", "data/",
                        "hetero/acm3025/", ACM_SHA256)
RDF_URLS = {name: github_files("alexanderdesouza/latent-GCN", "9a3b70966ae041f41105315ca4fc55e13af89681",
                               f"data/{name}/", f"rdf/{name}/", RDF_SHA256[name]) for name in RDF_SHA256}


def _mask(n: int, idx) -> np.ndarray:
    m = np.zeros(n, bool)
    m[np.asarray(idx, np.int64).ravel()] = True
    return m


def load_acm3025(data_dir: Optional[PathLike] = None, verify: bool = True) -> HeteroGraph:
    """HAN's ACM3025: one node type `paper` (3,025, 1,870 binary features, 3 classes) and four
    metapath relations PAP / PLP / PMP / PTP (the stored adjacencies, diagonal removed).

    The release holds only paper-paper metapath adjacencies, not the author/subject/term nodes.
    Split 600 / 300 / 2,125 as stored.
    """
    import scipy.io
    folder = find_dataset_dir("acm3025", list(ACM_SHA256), data_dir)
    if verify:
        verify_files("acm3025", folder, ACM_SHA256)
    path = folder / "hetero/acm3025/ACM3025.mat"
    try:
        mat = scipy.io.loadmat(path)
    except Exception as e:  # scipy raises several types for corrupt .mat files
        raise DataFormatError(f"{path}: cannot read MATLAB file ({e})") from e
    need = ["PAP", "PLP", "PMP", "PTP", "feature", "label", "train_idx", "val_idx", "test_idx"]
    miss = [k for k in need if k not in mat]
    if miss:
        raise DataFormatError(f"{path}: missing variable(s) {miss}")
    n = mat["feature"].shape[0]
    cets, edges = [], []
    for key in ("PAP", "PLP", "PMP", "PTP"):
        a = np.asarray(mat[key])
        if a.shape != (n, n):
            raise DataFormatError(f"{path}: {key} has shape {a.shape}, expected ({n}, {n})")
        src, dst = np.nonzero(a)
        off = src != dst
        cets.append(("paper", key, "paper"))
        edges.append((src[off].astype(np.int32), dst[off].astype(np.int32)))
    y = np.asarray(mat["label"]).argmax(1).astype(np.int32)
    return HeteroGraph("acm3025", ("paper",), (n,), tuple(cets), tuple(edges), "paper", y, int(mat["label"].shape[1]),
                       _mask(n, mat["train_idx"]), _mask(n, mat["val_idx"]), _mask(n, mat["test_idx"]),
                       {"paper": np.asarray(mat["feature"], np.float32)})


def _from_magnn(name: str, data_dir, verify: bool, split_seed: int) -> HeteroGraph:
    from .magnn import read_magnn
    raw = read_magnn(name, data_dir=data_dir, verify=verify)
    types = tuple(raw.type_names)
    nt = np.asarray(raw.node_types)
    counts = tuple(int((nt == i).sum()) for i in range(len(types)))
    offs = np.concatenate([[0], np.cumsum(counts)])
    if not np.all(nt == np.repeat(np.arange(len(types)), counts)):
        raise DataFormatError(f"{name}: node_types.npy is not sorted by type")
    coo = raw.adj.tocoo()
    r, c = coo.row.astype(np.int64), coo.col.astype(np.int64)
    cets, edges = [], []
    for a in range(len(types)):
        for b in range(len(types)):
            sel = (nt[r] == a) & (nt[c] == b)
            if sel.any():
                # adjM[u, v] = 1 -> an edge u -> v of relation "<a>-<b>" (both directions are stored)
                cets.append((types[a], f"{types[a]}-{types[b]}", types[b]))
                edges.append(((r[sel] - offs[a]).astype(np.int32), (c[sel] - offs[b]).astype(np.int32)))
    n0 = counts[0]
    y = np.asarray(raw.labels, np.int32)
    if y.shape != (n0,):
        raise DataFormatError(f"{name}: labels.npy has shape {y.shape}, expected ({n0},)")
    if raw.split is not None:
        tr, va, te = (_mask(n0, raw.split[k]) for k in ("train", "val", "test"))
    else:
        # MAGNN's DBLP split file is not in the release: regenerate its sizes (400 / 400 / rest).
        perm = np.random.default_rng(split_seed).permutation(n0)
        tr, va, te = _mask(n0, perm[:400]), _mask(n0, perm[400:800]), _mask(n0, perm[800:])
    feats = {t: f for t, f in zip(types, raw.features) if f is not None}
    return HeteroGraph(name, types, counts, tuple(cets), tuple(edges), types[0], y, int(y.max()) + 1,
                       tr, va, te, feats)


def load_dblp(data_dir: Optional[PathLike] = None, verify: bool = True, split_seed: int = 12345) -> HeteroGraph:
    """MAGNN DBLP: author/paper/term/venue; relations author-paper, paper-author, paper-term,
    term-paper, paper-venue, venue-paper; target authors (4 classes); split 400/400/3,257 drawn
    with `split_seed` (MAGNN's split file is not in the release)."""
    return _from_magnn("dblp", data_dir, verify, split_seed)


def load_imdb(data_dir: Optional[PathLike] = None, verify: bool = True) -> HeteroGraph:
    """MAGNN IMDB: movie/director/actor; target movies (3 classes); MAGNN split 400/400/3,478."""
    return _from_magnn("imdb", data_dir, verify, 0)


def load_hetero(name: str, data_dir: Optional[PathLike] = None, **kw) -> HeteroGraph:
    """Load a heterogeneous dataset by name (one registered with kind "hetero": `fgl-jax datasets`),
    or a path to node_types.csv + edges/ (`fgl_jax.data.tables.load_hetero_tables`; `kw` other than
    its options are ignored for a path, e.g. the `reverse=False` FedHGN asks of AIFB: a user's
    relations are kept as given). Any other kind is refused in one line."""
    from .registry import UnknownDatasetError, dataset_names, load, source
    try:
        src = source(name, data_dir)
    except UnknownDatasetError:
        src = None
    if src is None or (src.path is None and src.kind != "hetero"):
        raise ValueError(f"unknown heterogeneous dataset {name!r}; choose one of {dataset_names('hetero')}")
    if src.kind != "hetero":
        raise ValueError(f"dataset {str(name)!r} is a {src.kind}, not a heterogeneous graph: FedHGN needs node "
                         "types and relations (a directory with node_types.csv and edges/<relation>.csv; see "
                         "fgl_jax.data.tables)")
    if src.path is not None:
        own = ("num_classes", "split", "split_seed")
        return load(name, data_dir, **{k: v for k, v in kw.items() if k in own})
    return load(src.name, data_dir, **kw)


def _register_builtin() -> None:
    from .magnn import MAGNN_SHA256, MAGNN_URLS, magnn_files
    from .registry import register
    d = "heterogeneous graph (FedHGN)"
    register("aifb", load_aifb, tuple(RDF_SHA256["aifb"]), kind="hetero",
             description=f"AIFB RDF graph, target persons (4 classes); {d}",
             sha256=RDF_SHA256["aifb"], urls=RDF_URLS["aifb"])
    register("mutag", load_mutag, tuple(RDF_SHA256["mutag"]), kind="hetero",
             description=f"MUTAG RDF graph, target molecules (2 classes); {d}",
             sha256=RDF_SHA256["mutag"], urls=RDF_URLS["mutag"])
    register("acm3025", load_acm3025, tuple(ACM_SHA256), kind="hetero",
             description=f"ACM (HAN's 3,025 papers, 3 classes); {d}", sha256=ACM_SHA256, urls=ACM_URLS)
    register("dblp", load_dblp, magnn_files("dblp"), kind="hetero",
             description=f"MAGNN DBLP, target authors (4 classes); {d}",
             sha256=MAGNN_SHA256["dblp"], urls=MAGNN_URLS["dblp"])
    register("imdb", load_imdb, magnn_files("imdb"), kind="hetero",
             description=f"MAGNN IMDB, target movies (3 classes); {d}",
             sha256=MAGNN_SHA256["imdb"], urls=MAGNN_URLS["imdb"])


_register_builtin()
