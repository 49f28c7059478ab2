"""Checks every user graph passes: the one way arrays from a file or another library become a Graph.

`build_graph` is what every converter (`fgl_jax.data.convert`) and every path loader
(`fgl_jax.data.files`) calls. Only the edges and the features are required.

What it does, in order (each problem named by `source`, field and an example value):

* features: a sparse matrix may have empty trailing columns, but at most MAX_FEATURES columns (the
  first layer's weight is [F, hidden] and the sparse kernels index columns with int32): a declared
  shape beyond that is refused before anything is allocated.
* edge weights (`check_edge_weights`, for the loaders whose files carry them): NaN or inf is
  refused; negative (and zero) weights get one notice counting them. The models here use the
  unweighted structure, so every stored entry is an edge whatever its weight.
* edges: integer node ids in [0, N) (else DataFormatError). Self-loops are dropped
  (``keep_self_loops=False``, the default, as the Planetoid loader) and duplicate edges merged;
  both are counted in a notice. A *directed* input (some edge u -> v without v -> u) is
  symmetrised with a notice counting the one-directional edges (``on_directed="symmetrize"``,
  the default: the models here aggregate over both directions of an undirected graph), or
  refused with ``on_directed="error"``.
* labels: optional. No labels -> y = -1 everywhere (num_classes as given, else 1). Labels must be
  integers (integral floats such as 2.0 are accepted, -1 or NaN mean "unlabelled"); any other
  value, or a label outside [0, num_classes), is refused with the count and the first example.
  num_classes defaults to max label + 1 (a class with no node is reported).
* masks: optional bool [N] arrays (or integer index arrays). Overlapping masks are refused, and
  so is a mask holding an unlabelled node. When no mask is given the graph gets the default
  split: `stratified_split` with 60/20/20 of each class's labelled nodes, seed ``split_seed``
  (0); it is recorded in ``graph.meta["split"]`` so a caller can put it into a run's config.
  When some but not all masks are given, the missing ones are empty (with a notice).
* reported, not refused: isolated nodes, classes without training nodes.

Notices are one line each on the ``fgl_jax.data`` logger (level WARNING: shown on standard error
without any logging set up, by Python's last-resort handler; the CLI prints them as
``fgl-jax: notice: ...`` and `-q` silences them). Each is also a Python warning of category
`DataNotice` (a UserWarning), not displayed by default (the log line is the display), so
``warnings.simplefilter("error", DataNotice)`` turns them into errors and tests can expect them.
They are also kept, in order, in ``graph.meta["notices"]``.

Shapes: N nodes, E edges, F features.
"""
from __future__ import annotations

import logging
import warnings
from typing import Any, Optional, Sequence, Union

import numpy as np
import scipy.sparse as sp

from ..graph import Graph
from .paths import DataFormatError
from .splits import stratified_split

__all__ = ["DataNotice", "notify", "build_graph", "check_labels", "check_masks", "check_edge_weights", "DEFAULT_SPLIT",
           "ON_DIRECTED", "MAX_FEATURES"]

ArrayLike = Any
DEFAULT_SPLIT = (0.6, 0.2, 0.2)
ON_DIRECTED = ("symmetrize", "error", "keep")
# Most feature columns a graph may declare: 2**24 (16.8 M) keeps the first layer's [F, hidden]
# weight and the int32 column indices of the sparse kernels (`fgl_jax.ops.ell_features`) in range;
# real bag-of-words features have thousands.
MAX_FEATURES = 2 ** 24


class DataNotice(UserWarning):
    """Something about a user's graph was changed or looks suspicious (never silently)."""


# the log line is a notice's display; the warning is for code that filters or expects it (a user's
# filter, `pytest.warns`, "error" placed before this one still applies)
warnings.filterwarnings("ignore", category=DataNotice, append=True)
log = logging.getLogger("fgl_jax.data")


def notify(line: str, stacklevel: int = 2) -> None:
    """Report a data notice: one line on the ``fgl_jax.data`` logger (WARNING), and a `DataNotice`
    warning (not displayed by default) for code that filters or expects it.

    Args:
        line: the notice, one line naming the file or field and what was done.
        stacklevel: the warning's stack level, counted from the caller of `notify` (1 = that caller).

    Returns:
        None.
    """
    log.warning(line)
    warnings.warn(line, DataNotice, stacklevel=stacklevel + 1)


def _notify(notes: list[str], source: str, text: str) -> None:
    line = f"{source}: {text}"
    notes.append(line)
    notify(line, stacklevel=3)


def _as_int_ids(values: ArrayLike, source: str, field: str) -> np.ndarray:
    """Integer node ids (integral floats accepted), refusing anything else with an example."""
    a = np.asarray(values)
    if a.dtype == bool or a.dtype.kind not in "iuf":
        raise DataFormatError(f"{source}: field {field} must hold integer node ids, got dtype {a.dtype}")
    if a.dtype.kind == "f":
        bad = ~np.isfinite(a) | (np.mod(a, 1) != 0)
        if bad.any():
            i = int(np.flatnonzero(bad.ravel())[0])
            raise DataFormatError(f"{source}: field {field} has {int(bad.sum())} non-integer node id(s), "
                                  f"e.g. {a.ravel()[i].item()!r} at position {i}")
    return a.astype(np.int64)


def _features(x: ArrayLike, source: str) -> Union[np.ndarray, sp.csr_matrix]:
    if x is None:
        raise DataFormatError(f"{source}: node features x are required (use an identity or degree matrix "
                              "if the graph has none)")
    if sp.issparse(x):
        if x.shape[1] > MAX_FEATURES:
            used = int(x.tocsr().indices.max()) + 1 if x.nnz else 0
            raise DataFormatError(f"{source}: the sparse features declare shape {tuple(x.shape)}: {x.shape[1]} "
                                  f"columns, of which the stored entries use {used}; at most {MAX_FEATURES} "
                                  "columns are supported (check the declared shape)")
        x = sp.csr_matrix(x, dtype=np.float32)
        x.sum_duplicates()
        return x
    a = np.asarray(x)
    if a.dtype.kind not in "biuf":
        raise DataFormatError(f"{source}: field x must be numeric, got dtype {a.dtype}")
    if a.ndim == 1:
        a = a[:, None]
    if a.ndim != 2:
        raise DataFormatError(f"{source}: field x must be [N, F], got shape {a.shape}")
    return np.ascontiguousarray(a, np.float32)


def class_name_labels(y: Optional[ArrayLike], source: str, meta: dict) -> Optional[ArrayLike]:
    """Labels given as class names (strings) -> class ids numbered in sorted name order, the names
    kept in ``meta["class_names"]`` (the CSV loader's convention, for every converter and file).

    Args:
      y: [N] labels: numbers (returned unchanged), or strings where "" / None mark unlabelled nodes.
      source: how an error is prefixed (a path or a converter's name).
      meta: the graph's meta dict; "class_names" is set when y holds names.

    Returns:
      y unchanged when it is numeric or None, else an int64 [N] array (-1 = unlabelled).

    Raises:
      DataFormatError: names and numbers mixed in one label array (naming the first of each).
    """
    if y is None:
        return None
    a = np.asarray(y, dtype=object) if not isinstance(y, np.ndarray) else y
    if a.dtype.kind not in "USO" or a.ndim != 1:
        return y
    vals = list(a.tolist())
    is_name = [isinstance(v, (str, bytes)) and v not in ("", b"") for v in vals]
    blank = [v is None or v in ("", b"") or (isinstance(v, float) and v != v) for v in vals]
    if not any(is_name):
        if a.dtype.kind == "O" and all(b or isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool)
                                       for v, b in zip(vals, blank)):
            return np.array([np.nan if b else float(v) for v, b in zip(vals, blank)])
        return y
    mixed = [i for i, (nm, b) in enumerate(zip(is_name, blank)) if not nm and not b]
    if mixed:
        i, j = mixed[0], is_name.index(True)
        raise DataFormatError(f"{source}: field y mixes class names and other values (node {j}: {vals[j]!r}, "
                              f"node {i}: {vals[i]!r}); labels are either class ids 0..C-1 or class names")
    text = [v.decode() if isinstance(v, bytes) else v for v in vals]
    names = sorted({v for v, nm in zip(text, is_name) if nm})
    given = meta.get("class_names")
    if given is not None:
        unknown = sorted(set(names) - set(map(str, given)))
        if unknown:
            raise DataFormatError(f"{source}: field y names class {unknown[0]!r}, which is not among the given "
                                  f"class names ({len(given)})")
        names = [str(c) for c in given]
    meta["class_names"] = names
    pos = {v: i for i, v in enumerate(names)}
    return np.array([pos[v] if nm else -1 for v, nm in zip(text, is_name)], np.int64)


def check_labels(y: Optional[ArrayLike], n: int, num_classes: Optional[int], source: str,
                 notes: list[str]) -> tuple[np.ndarray, int]:
    """y int32 [N] (-1 = unlabelled) and num_classes, refusing non-integer or out-of-range labels."""
    if y is None:
        k = int(num_classes) if num_classes is not None else 1
        _notify(notes, source, f"no labels: every node has y = -1 (num_classes = {k}); training needs labels")
        return np.full(n, -1, np.int32), k
    a = np.asarray(y)
    if a.ndim == 2 and a.shape[1] == 1:
        a = a[:, 0]
    if a.shape != (n,):
        raise DataFormatError(f"{source}: field y has shape {a.shape}, expected ({n},) (one label per node)")
    if a.dtype == bool or a.dtype.kind not in "iuf":
        raise DataFormatError(f"{source}: field y must hold integer class ids, got dtype {a.dtype}")
    if a.dtype.kind == "f":
        unl = np.isnan(a)
        bad = ~unl & (~np.isfinite(a) | (np.mod(a, 1) != 0))
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise DataFormatError(f"{source}: field y has {int(bad.sum())} non-integer label(s), e.g. node {i} "
                                  f"has label {a[i].item()!r} (labels are class ids 0..C-1; -1 or NaN = unlabelled)")
        a = np.where(unl, -1, a)
    a = a.astype(np.int64)
    neg = a < -1
    if neg.any():
        i = int(np.flatnonzero(neg)[0])
        raise DataFormatError(f"{source}: field y has {int(neg.sum())} negative label(s) other than -1 "
                              f"(unlabelled), e.g. node {i} has label {int(a[i])}")
    labelled = a >= 0
    top = int(a.max()) if labelled.any() else -1
    if num_classes is None:
        k = max(top + 1, 1)
    else:
        if isinstance(num_classes, bool) or int(num_classes) != num_classes or int(num_classes) <= 0:
            raise DataFormatError(f"{source}: num_classes must be a positive integer, got {num_classes!r}")
        k = int(num_classes)
        over = a >= k
        if over.any():
            i = int(np.flatnonzero(over)[0])
            raise DataFormatError(
                f"{source}: field y has {int(over.sum())} label(s) outside [0, {k}), e.g. node {i} has label "
                f"{int(a[i])} (num_classes = {k}; labels must be 0..{k - 1}, -1 = unlabelled)")
    if not labelled.any():
        _notify(notes, source, "no node has a label (all y = -1); training needs labels")
    else:
        empty = np.flatnonzero(np.bincount(a[labelled], minlength=k) == 0)
        if empty.size:
            hint = " (labels look 1-based: class 0 is empty)" if empty[0] == 0 and num_classes is None else ""
            _notify(notes, source, f"{empty.size} of {k} classes have no labelled node, e.g. class "
                                   f"{int(empty[0])}{hint}")
    return a.astype(np.int32), k


def check_edge_weights(w: ArrayLike, source: str, field: str, notes: list[str],
                       edge: Optional[tuple[np.ndarray, np.ndarray]] = None) -> None:
    """Refuse NaN/inf edge weights and count negative or zero ones in one notice.

    The weights are not used (every stored entry is an unweighted edge), but a non-finite one means
    the file is broken and a negative one that the author meant something the models do not do.
    `edge` (senders, receivers) names an example edge; else the entry's position is given.
    """
    a = np.asarray(w)
    if a.dtype == bool or a.dtype.kind not in "iuf":
        raise DataFormatError(f"{source}: field {field} must hold numeric edge weights, got dtype {a.dtype}")
    a = a.ravel()
    where = (lambda i: f"entry {i} (edge {int(edge[0][i])} -> {int(edge[1][i])})") if edge is not None \
        else (lambda i: f"entry {i}")
    bad = ~np.isfinite(a) if a.dtype.kind == "f" else np.zeros(a.shape, bool)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise DataFormatError(f"{source}: field {field} has {int(bad.sum())} NaN or infinite edge weight(s), e.g. "
                              f"{where(i)} = {a[i].item()!r}; fix or drop those entries")
    neg, zero = a < 0, a == 0
    if neg.any() or zero.any():
        i = int(np.flatnonzero(neg | zero)[0])
        _notify(notes, source, f"field {field} has {int(neg.sum())} negative and {int(zero.sum())} zero edge "
                               f"weight(s), e.g. {where(i)} = {a[i].item()!r}; weights are not used: every stored "
                               "entry is an unweighted edge")


def _mask(m: ArrayLike, n: int, source: str, field: str) -> np.ndarray:
    a = np.asarray(m)
    if a.dtype == bool:
        if a.shape != (n,):
            raise DataFormatError(f"{source}: field {field} has shape {a.shape}, expected ({n},)")
        return a
    if a.ndim == 1 and a.shape == (n,) and a.dtype.kind in "iuf" and np.isin(a, (0, 1)).all() and n > 2:
        return a.astype(bool)  # a 0/1 indicator vector
    idx = _as_int_ids(a.ravel(), source, field)
    if idx.size and (idx.min() < 0 or idx.max() >= n):
        bad = int(idx.min() if idx.min() < 0 else idx.max())
        raise DataFormatError(f"{source}: field {field} names node {bad}, outside [0, {n})")
    out = np.zeros(n, bool)
    out[idx] = True
    return out


def check_masks(masks: Sequence[Optional[ArrayLike]], y: np.ndarray, source: str,
                notes: list[str]) -> Optional[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Bool [N] train/val/test masks (None when none is given): disjoint, labelled nodes only."""
    if all(m is None for m in masks):
        return None
    n = y.shape[0]
    names = ("train_mask", "val_mask", "test_mask")
    out = []
    for nm, m in zip(names, masks):
        if m is None:
            _notify(notes, source, f"no {nm}: it is empty")
            out.append(np.zeros(n, bool))
        else:
            out.append(_mask(m, n, source, nm))
    for i in range(3):
        for j in range(i + 1, 3):
            both = out[i] & out[j]
            if both.any():
                raise DataFormatError(f"{source}: {names[i]} and {names[j]} overlap in {int(both.sum())} node(s), "
                                      f"e.g. node {int(np.flatnonzero(both)[0])}; a node belongs to one split")
    for nm, m in zip(names, out):
        unl = m & (y < 0)
        if unl.any():
            raise DataFormatError(f"{source}: {nm} holds {int(unl.sum())} unlabelled node(s) (y = -1), e.g. node "
                                  f"{int(np.flatnonzero(unl)[0])}")
    if not out[0].any():
        _notify(notes, source, "train_mask has no True entries: no node is for training (mark some train_mask "
                               "entries True, or leave the masks out for the default stratified split)")
    return out[0], out[1], out[2]


def node_label(i: int, ids: Optional[Sequence] = None) -> str:
    """How a message names node i: its row, and the user's own id when the source had ids
    (``graph.meta["nodes"]``: a CSV id column, networkx node keys)."""
    i = int(i)
    if ids is not None and 0 <= i < len(ids) and str(ids[i]) != str(i):
        return f"node {ids[i]!r} (row {i})"
    return f"node {i}"


def _edges(senders: ArrayLike, receivers: ArrayLike, n: int, source: str, on_directed: str,
           keep_self_loops: bool, notes: list[str], ids: Optional[Sequence] = None) -> tuple[np.ndarray, np.ndarray]:
    s = _as_int_ids(senders, source, "edge sources").ravel()
    r = _as_int_ids(receivers, source, "edge targets").ravel()
    if s.shape != r.shape:
        raise DataFormatError(f"{source}: {s.size} edge sources but {r.size} edge targets")
    if s.size:
        lo, hi = min(s.min(), r.min()), max(s.max(), r.max())
        if lo < 0 or hi >= n:
            bad = int(lo if lo < 0 else hi)
            pos = int(np.flatnonzero((s == bad) | (r == bad))[0])
            raise DataFormatError(f"{source}: edge {pos} ({int(s[pos])} -> {int(r[pos])}) names node {bad}, "
                                  f"outside [0, {n}) (the features have {n} rows)")
    loops = s == r
    if loops.any() and not keep_self_loops:
        _notify(notes, source, f"{int(loops.sum())} self-loop(s) removed (e.g. {node_label(s[loops][0], ids)})")
        s, r = s[~loops], r[~loops]
    key = s * n + r
    uniq = np.unique(key)
    if uniq.size < key.size:
        _notify(notes, source, f"{key.size - uniq.size} duplicate edge(s) merged")
    s, r = uniq // n, uniq % n
    rev = np.unique(r * n + s)
    one_way = ~np.isin(uniq, rev)
    if one_way.any():
        i = int(np.flatnonzero(one_way)[0])
        msg = (f"graph is directed: {int(one_way.sum())} of {uniq.size} edges have no reverse edge, e.g. "
               f"{int(s[i])} -> {int(r[i])}")
        if on_directed == "error":
            raise DataFormatError(f"{source}: {msg} (on_directed='error'; pass on_directed='symmetrize' to add "
                                  "the reverse edges)")
        if on_directed == "keep":  # asked for: models aggregate along u -> v only (docs/your_own_graph.md)
            _notify(notes, source, f"{msg}; kept one-way (on_directed='keep')")
            order = np.lexsort((s, r))
            return s[order].astype(np.int32), r[order].astype(np.int32)
        _notify(notes, source, f"{msg}; added the reverse edges (symmetrised)")
        key = np.unique(np.concatenate([uniq, rev]))
        s, r = key // n, key % n
    # sorted by (receiver, sender), as `fgl_jax.graph.symmetrize` orders edges
    order = np.lexsort((s, r))
    return s[order].astype(np.int32), r[order].astype(np.int32)


def build_graph(senders: ArrayLike, receivers: ArrayLike, x: ArrayLike, y: Optional[ArrayLike] = None, *,
                num_classes: Optional[int] = None, train_mask: Optional[ArrayLike] = None,
                val_mask: Optional[ArrayLike] = None, test_mask: Optional[ArrayLike] = None,
                name: str = "graph", source: Optional[str] = None, on_directed: str = "symmetrize",
                keep_self_loops: bool = False, split: Sequence[float] = DEFAULT_SPLIT, split_seed: int = 0,
                meta: Optional[dict] = None) -> Graph:
    """A checked, undirected `Graph` from edge arrays and features (see the module docstring).

    Args:
      senders, receivers: int [E] edge endpoints (u -> v); either direction or both.
      x: [N, F] dense array or scipy sparse matrix (N defines the number of nodes).
      y: optional [N] integer labels (-1 / NaN = unlabelled).
      num_classes: optional; default max label + 1.
      train_mask, val_mask, test_mask: optional bool [N] or index arrays; none -> default split.
      name: the graph's name; source: how problems are prefixed (a file path; default `name`).
      on_directed: "symmetrize" (default, with a notice), "error", or "keep" (one-way edges stay one-way,
        with a notice; ``meta["directed"]`` is then True).
      keep_self_loops: keep u -> u edges instead of removing them.
      split, split_seed: fractions and seed of the default stratified split (used only without masks).
      meta: extra entries for ``graph.meta`` (e.g. the path and format a loader read).

    Returns:
      A Graph whose ``meta`` holds "notices" (list of str) and "split" (a dict: either
      {"kind": "given"} or {"kind": "stratified", "train": .., "val": .., "test": .., "seed": ..}).

    Raises:
      DataFormatError: one line naming `source`, the field and the value: no nodes, missing or
        non-numeric features, edges naming nodes outside [0, N), bad labels or masks, a directed
        graph with on_directed="error".
      ValueError: `on_directed` is not one of "symmetrize", "error", "keep".

    Example:
      >>> g = build_graph([0, 1], [1, 2], np.eye(3), [0, 1, 1])   # doctest: +SKIP
      >>> g.num_edges   # both directions of 0-1 and 1-2
      4
    """
    source = source or name
    if on_directed not in ON_DIRECTED:
        raise ValueError(f"on_directed must be one of {ON_DIRECTED}, got {on_directed!r}")
    notes: list[str] = []
    feats = _features(x, source)
    n = feats.shape[0]
    if n == 0:
        raise DataFormatError(f"{source}: the graph has no nodes (x has 0 rows)")
    ids = (meta or {}).get("nodes")
    s, r = _edges(senders, receivers, n, source, on_directed, keep_self_loops, notes, ids)
    meta = dict(meta or {})
    y = class_name_labels(y, source, meta)
    labels, k = check_labels(y, n, num_classes, source, notes)
    masks = check_masks((train_mask, val_mask, test_mask), labels, source, notes)
    if masks is None:
        tr, va, te = (float(f) for f in split)
        if (labels >= 0).any():
            masks = stratified_split(labels, k, tr, va, te, split_seed)
            _notify(notes, source, f"no split given: default stratified split {tr:g}/{va:g}/{te:g} per class, "
                                   f"seed {split_seed}")
        else:
            masks = tuple(np.zeros(n, bool) for _ in range(3))
        split_info: dict = {"kind": "stratified", "train": tr, "val": va, "test": te, "seed": int(split_seed)}
    else:
        split_info = {"kind": "given"}
    deg = np.bincount(r, minlength=n)
    iso = np.flatnonzero(deg == 0)
    if iso.size:
        _notify(notes, source, f"{iso.size} isolated node(s) (no edge), e.g. {node_label(iso[0], ids)}")
    if (labels >= 0).any() and masks[0].any():
        present = np.bincount(labels[labels >= 0], minlength=k) > 0
        in_train = np.bincount(labels[masks[0]], minlength=k) > 0
        missing = np.flatnonzero(present & ~in_train)
        if missing.size:
            _notify(notes, source, f"{missing.size} class(es) have labelled nodes but no training node, e.g. "
                                   f"class {int(missing[0])}")
    info = meta
    info.update(notices=notes, split=split_info)
    if on_directed == "keep":
        info["directed"] = bool(np.isin(s.astype(np.int64) * n + r, r.astype(np.int64) * n + s, invert=True).any())
    return Graph(name, s, r, feats, labels, k, masks[0], masks[1], masks[2], meta=info)


def pick_fixed_split(fixed: dict, split_index: Optional[int], source: str) -> dict:
    """The masks of split `split_index` (default 0) of a file's k fixed splits, for `build_graph`.

    Args:
      fixed: {"train", "val", "test"}: bool [k, N] each (the same k).
      split_index: which split; None = 0.
      source: the file, for the message.

    Returns:
      {"train_mask", "val_mask", "test_mask"}: bool [N] each.

    Raises:
      DataFormatError: `split_index` outside 0..k-1 (naming k).
    """
    k = int(fixed["train"].shape[0])
    i = 0 if split_index is None else int(split_index)
    if not 0 <= i < k:
        raise DataFormatError(f"{source}: split_index {i} is out of range: the file has {k} fixed splits (0..{k - 1})")
    return {f"{s}_mask": fixed[s][i] for s in ("train", "val", "test")}


def attach_fixed_splits(graph: Graph, fixed: dict, split_index: Optional[int], source: str) -> Graph:
    """Keep a file's k fixed splits in ``graph.meta["fixed_splits"]`` (for ``--split-index i|all``).

    `build_graph` checked the split the graph carries; the others are checked the same way here, so
    that ``--split-index all`` never trains on a mask `build_graph` would refuse.

    Args:
      graph: the graph built with split `split_index`'s masks.
      fixed: {"train", "val", "test"}: bool [k, N] each.
      split_index: the split the graph carries (None = 0).
      source: the file, for messages.

    Returns:
      `graph`, its meta holding "fixed_splits" and "split" = {"kind": "fixed", "index": i, "of": k}.

    Raises:
      DataFormatError: another split's masks overlap or hold unlabelled nodes (naming the split).
    """
    i = 0 if split_index is None else int(split_index)
    for j in range(fixed["train"].shape[0]):
        if j != i:
            check_masks((fixed["train"][j], fixed["val"][j], fixed["test"][j]), graph.y, f"{source} (split {j})", [])
    graph.meta["fixed_splits"] = fixed
    graph.meta["split"] = {"kind": "fixed", "index": i, "of": int(fixed["train"].shape[0])}
    return graph
