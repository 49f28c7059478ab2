"""Small random heterographs for the FedHGN tests (independent of the real data)."""
from __future__ import annotations

import numpy as np

from fgl_jax.data.hetero import HeteroGraph


def toy_hetero(seed: int = 0, n=(12, 9, 7), edges_per_type: int = 14, num_classes: int = 3) -> HeteroGraph:
    """3 node types (target "a"), 6 canonical types; relation "link" appears on two canonical
    types (a->b and c->a), so one relation name spans several canonical types."""
    rng = np.random.default_rng(seed)
    types = ("a", "b", "c")
    sizes = dict(zip(types, n))
    cets = (("a", "link", "b"), ("b", "cites", "a"), ("c", "link", "a"), ("a", "self", "a"),
            ("b", "has", "c"), ("c", "about", "b"))
    edges = []
    for s, _, d in cets:
        m = edges_per_type
        pairs = {(int(rng.integers(sizes[s])), int(rng.integers(sizes[d]))) for _ in range(m)}
        arr = np.array(sorted(pairs), np.int32)
        edges.append((arr[:, 0], arr[:, 1]))
    na = sizes["a"]
    y = rng.integers(0, num_classes, na).astype(np.int32)
    perm = rng.permutation(na)
    tr, va, te = (np.zeros(na, bool) for _ in range(3))
    tr[perm[: na // 2]] = True
    va[perm[na // 2: 3 * na // 4]] = True
    te[perm[3 * na // 4:]] = True
    return HeteroGraph("toy", types, tuple(n), cets, tuple(edges), "a", y, num_classes, tr, va, te)


def dense_backbone(g: HeteroGraph, emb: dict, W: dict, b1, b2, W_out, b_out) -> np.ndarray:
    """NumPy reference of the spec §2.3 model on the whole graph: logits [n_target, C].

    emb: {type: [n_t, D]}; W: {relation name: [D, D]}. Per canonical type mean over in-neighbours
    (zero in-degree -> 0), summed over canonical types; no self-loop.
    """
    def layer(h, weights):
        out = {t: np.zeros((g.n(t), next(iter(h.values())).shape[1])) for t in g.node_types}
        for (s, r, d), (src, dst) in zip(g.canonical_etypes, g.edges):
            A = np.zeros((g.n(d), g.n(s)))
            np.add.at(A, (dst, src), 1.0)
            deg = A.sum(1, keepdims=True)
            mean = np.divide(A @ h[s], np.maximum(deg, 1))
            out[d] += mean @ weights[r] if weights is not None else mean
        return out

    h1 = {t: np.maximum(v + b1, 0) for t, v in layer(emb, None).items()}
    h2 = layer(h1, W)[g.target] + b2
    return np.maximum(h2, 0) @ W_out + b_out
