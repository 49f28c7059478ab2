"""Client side of federated gradient matching: per-class computation blocks and per-class gradients.

Host (NumPy, once): for every client j and class c, the client's own training nodes of class c
(the targets, at most `cap` of them) and, for every target, its weighted sources in the client's
local graph: {t} ∪ N(t) with the entries of the client's full normalised Â ("gcn"; sources
carry the pre-aggregated rows (Â X)_u, so the 2-hop receptive field is exact), or the
2-hop support with the entries of Â² ("sgc"). `fanout` samples at most that many neighbours
per target (rescaled by deg/fanout so the aggregate stays unbiased); `pools` independent samples
are drawn and round r uses pool r mod pools (so sampling never leaves the jitted scan).
`fanout=None, cap=None, pools=1` is the exact full-neighbourhood mode.

Device (jit): `client_class_grads` maps one client's blocks and a broadcast θ to
∇_θ L(GNN_θ(A_{j,c}, X_{j,c}), Y_{j,c}) for every class c (mean NLL over the class-c targets);
`vmap` over the client axis runs all clients at once.

Padding: per class c, all clients/pools share [R_c] rows, [S_c] targets, [K_c] sources; padded
targets have tmask False, padded sources weight 0, so padding adds exactly nothing.
"""
from __future__ import annotations

from typing import Optional, Sequence

import flax
import jax
import jax.numpy as jnp
import numpy as np
import scipy.sparse as sp

from fgl_jax.systems.fedgc.condense.aggregation import aggregate, aggregation_weights
from fgl_jax.systems.fedgc.condense.relay import Params, check_relay, relay_block
from fgl_jax.graph import Graph

Array = jax.Array


@flax.struct.dataclass
class ClassBlock:
    """One class's blocks for all clients. Leading axes [M, P] (clients, pools).

    rows: int32 [M, P, R] local node ids of the source rows (0 for padding).
    nbr: int32 [M, P, S, K] indices into `rows`; weight: float32 [M, P, S, K] (0 = padding).
    tmask: bool [M, P, S] real (sampled) targets.
    """

    rows: Array
    nbr: Array
    weight: Array
    tmask: Array


@flax.struct.dataclass
class FlatBlock:
    """One class's blocks of ALL clients laid end to end (no padding to the largest client): the
    fused aggregate's form. Leading axis [P] (pools).

    rows: int32 [P, R] rows of the flattened client inputs [M·N, d] (client j's node i = j·N + i).
    nbr, weight: [P, S, K] as in ClassBlock (indices into `rows`); tclient: int32 [P, S] the client
    each target belongs to; tscale: float32 [P, S] 1/S_jc (the client's class-c target count), 0 = padding.
    """

    rows: Array
    nbr: Array
    weight: Array
    tclient: Array
    tscale: Array


@flax.struct.dataclass
class ClientData:
    """Everything the clients hold for condensation (never passed to the server function).

    inputs: float32 [M, N, d] per-client source features: Â_j X_j ("gcn") or X_j ("sgc").
    blocks: tuple of C ClassBlock.
    counts: float32 [M, C] n_j(c), own training nodes of class c (uploaded once, for Y' and weights).
    reference: tuple of C ClassBlock over the same inputs whose targets are non-members (the Reg
        defence's reference set, `condense.reg.with_reference`); () when unused.
    flat: tuple of C FlatBlock, the same blocks laid end to end across clients (what
        client_axis="fused" differentiates); () = use `blocks`.
    """

    inputs: Array
    blocks: tuple
    counts: Array
    reference: tuple = ()
    flat: tuple = ()

    @property
    def num_pools(self) -> int:
        return int(self.blocks[0].rows.shape[1])


def normalized_adjacency(graph: Graph) -> sp.csr_matrix:
    """Sparse Â = D̃^{-1/2}(A+I)D̃^{-1/2} of a host graph, rows = receivers (float64 CSR [N, N])."""
    n = graph.num_nodes
    a = sp.csr_matrix((np.ones(graph.num_edges), (graph.receivers, graph.senders)), shape=(n, n))
    a = a + sp.identity(n, format="csr")
    d = np.asarray(a.sum(1)).ravel()
    inv = sp.diags(1.0 / np.sqrt(d))
    return (inv @ a @ inv).tocsr()


def _check_positive_or_none(name: str, value) -> Optional[int]:
    if value is None:
        return None
    if int(value) != value or value <= 0:
        raise ValueError(f"{name} must be a positive integer or None, got {value!r}")
    return int(value)


def build_client_data(graphs: Sequence[Graph], features: Sequence[np.ndarray], relay: str = "gcn",
                      fanout: Optional[int] = None, cap: Optional[int] = None, pools: int = 1,
                      seed: int = 0) -> ClientData:
    """Per-class blocks of M client graphs.

    graphs: local client graphs (e.g. 2-hop expanded); `train_mask` must mark only the client's
        OWN training nodes (the targets). features: per client [N_j, d] (raw X or IB's Z).
    relay: "gcn" or "sgc" (sgc supports only fanout=None).
    """
    relay = check_relay(relay)
    fanout = _check_positive_or_none("fanout", fanout)
    cap = _check_positive_or_none("cap", cap)
    pools = _check_positive_or_none("pools", pools)
    if relay == "sgc" and fanout is not None:
        raise ValueError("relay='sgc' supports only fanout=None (exact 2-hop support)")
    if len(graphs) != len(features) or not graphs:
        raise ValueError(f"need one feature matrix per client graph, got {len(graphs)} graphs and "
                         f"{len(features)} feature matrices")
    num_classes = graphs[0].num_classes
    d = int(features[0].shape[1])
    rng = np.random.default_rng(seed)
    inputs, per = [], []  # per[j][c][p] = (rows, nbr lists, weight lists)
    counts = np.zeros((len(graphs), num_classes), np.float32)
    for j, (g, f) in enumerate(zip(graphs, features)):
        f = np.asarray(f.todense() if sp.issparse(f) else f, np.float64)
        if f.shape != (g.num_nodes, d):
            raise ValueError(f"client {j}: features have shape {f.shape}, expected ({g.num_nodes}, {d})")
        a_hat = normalized_adjacency(g)
        support = a_hat if relay == "gcn" else (a_hat @ a_hat).tocsr()
        inputs.append((a_hat @ f) if relay == "gcn" else f)
        labelled = g.train_mask & (g.y >= 0)
        cls = []
        for c in range(num_classes):
            targets = np.flatnonzero(labelled & (g.y == c))
            counts[j, c] = targets.size
            pool_list = []
            for _ in range(pools):
                t = targets if cap is None or targets.size <= cap else rng.choice(targets, cap, replace=False)
                srcs, wts = [], []
                for v in t:
                    lo, hi = support.indptr[v], support.indptr[v + 1]
                    cols, vals = support.indices[lo:hi], support.data[lo:hi]
                    if fanout is not None:
                        others = np.flatnonzero(cols != v)
                        if others.size > fanout:
                            pick = rng.choice(others, fanout, replace=False)
                            scale = others.size / fanout  # unbiased estimate of the neighbour sum
                            keep = np.concatenate([np.flatnonzero(cols == v), pick])
                            vals = vals.copy()
                            vals[pick] *= scale
                            cols, vals = cols[keep], vals[keep]
                    srcs.append(cols)
                    wts.append(vals)
                rows = np.unique(np.concatenate(srcs)) if srcs else np.zeros(0, np.int64)
                pool_list.append((rows, [np.searchsorted(rows, s) for s in srcs], wts))
            cls.append(pool_list)
        per.append(cls)
    m = len(graphs)
    n_pad = max(x.shape[0] for x in inputs)
    inp = np.zeros((m, n_pad, d), np.float32)
    for j, x in enumerate(inputs):
        inp[j, :x.shape[0]] = x
    blocks = []
    for c in range(num_classes):
        items = [per[j][c][p] for j in range(m) for p in range(pools)]
        r_pad = max(1, max(len(it[0]) for it in items))
        s_pad = max(1, max(len(it[1]) for it in items))
        k_pad = max(1, max((len(s) for it in items for s in it[1]), default=1))
        rows = np.zeros((m, pools, r_pad), np.int32)
        nbr = np.zeros((m, pools, s_pad, k_pad), np.int32)
        wt = np.zeros((m, pools, s_pad, k_pad), np.float32)
        tm = np.zeros((m, pools, s_pad), bool)
        for j in range(m):
            for p in range(pools):
                r, nb, ws = per[j][c][p]
                rows[j, p, :len(r)] = r
                for s, (idx, w) in enumerate(zip(nb, ws)):
                    nbr[j, p, s, :len(idx)] = idx
                    wt[j, p, s, :len(w)] = w
                    tm[j, p, s] = True
        blocks.append(ClassBlock(jnp.asarray(rows), jnp.asarray(nbr), jnp.asarray(wt), jnp.asarray(tm)))
    flat = tuple(_flat_block([[per[j][c][p] for j in range(m)] for p in range(pools)], n_pad)
                 for c in range(num_classes))
    return ClientData(inputs=jnp.asarray(inp), blocks=tuple(blocks), counts=jnp.asarray(counts), flat=flat)


def _flat_block(pool_items: list, n_pad: int) -> FlatBlock:
    """pool_items[p][j] = client j's (rows, nbr lists, weight lists) for one class and pool p."""
    per_pool = []
    for items in pool_items:
        rows, nbrs, wts, tcl, tsc, off = [], [], [], [], [], 0
        for j, (r, nb, ws) in enumerate(items):
            rows.append(np.asarray(r, np.int64) + j * n_pad)
            nbrs += [np.asarray(i) + off for i in nb]
            wts += list(ws)
            tcl += [j] * len(nb)
            tsc += [1.0 / max(len(nb), 1)] * len(nb)
            off += len(r)
        per_pool.append((np.concatenate(rows) if rows else np.zeros(0, np.int64), nbrs, wts, tcl, tsc))
    p = len(per_pool)
    r_pad = max(1, max(len(it[0]) for it in per_pool))
    s_pad = max(1, max(len(it[1]) for it in per_pool))
    k_pad = max(1, max((len(i) for it in per_pool for i in it[1]), default=1))
    rows = np.zeros((p, r_pad), np.int32)
    nbr = np.zeros((p, s_pad, k_pad), np.int32)
    wt = np.zeros((p, s_pad, k_pad), np.float32)
    tcl = np.zeros((p, s_pad), np.int32)
    tsc = np.zeros((p, s_pad), np.float32)
    for q, (r, nb, ws, tc, ts) in enumerate(per_pool):
        rows[q, :len(r)] = r
        tcl[q, :len(tc)] = tc
        tsc[q, :len(ts)] = ts
        for s, (idx, w) in enumerate(zip(nb, ws)):
            nbr[q, s, :len(idx)] = idx
            wt[q, s, :len(w)] = w
    return FlatBlock(*(jnp.asarray(a) for a in (rows, nbr, wt, tcl, tsc)))


def client_class_grads(theta: Params, inputs: Array, blocks: tuple, pool: Array, relay: str = "gcn") -> Params:
    """One client's per-class gradients ∇_θ L_{j,c} (leaves [C, ...]; zeros for absent classes).

    theta: the round's relay θ (broadcast by the server); inputs [N, d]; blocks: tuple of C
    ClassBlock slices with leading [P]; pool: int scalar, which sample to use this round.
    """
    grads = []
    for c, b in enumerate(blocks):
        rows, nbr, weight, tmask = (jnp.take(a, pool, axis=0) for a in (b.rows, b.nbr, b.weight, b.tmask))
        src = inputs[rows]

        def loss(t, src=src, nbr=nbr, weight=weight, tmask=tmask, c=c):
            logp = jax.nn.log_softmax(relay_block(t, src, nbr, weight, relay), axis=-1)
            m = tmask.astype(logp.dtype)
            return -(logp[:, c] * m).sum() / jnp.maximum(m.sum(), 1.0)

        grads.append(jax.grad(loss)(theta))
    return jax.tree.map(lambda *g: jnp.stack(g), *grads)


def all_client_grads(theta: Params, data: ClientData, pool: Array, relay: str = "gcn") -> Params:
    """Every client's per-class gradients, vmapped over clients: leaves [M, C, ...]."""
    fn = lambda t, x, b, p: client_class_grads(t, x, b, p, relay)
    return jax.vmap(fn, in_axes=(None, 0, 0, None))(theta, data.inputs, data.blocks, pool)


def aggregated_client_grads(theta: Params, data: ClientData, pool: Array, relay: str = "gcn",
                            agg: str = "weighted", client_axis: str = "fused") -> Params:
    """Σ_j w_jc · g_jc (leaves [C, ...]): the clients' per-class gradients combined with the paper's
    weights, as the server receives them.

    client_axis="vmap": all clients at once (`all_client_grads`, [M, C, ...] uploads) then
    `server.aggregate`. client_axis="fused" (default): per class, the clients' weighted losses
    (`flat_client_grads`: every client's targets in one block; `fused_client_grads` without it),
    then ONE backward pass: ∇_θ Σ_j w_jc L_jc = Σ_j w_jc ∇_θ L_jc by linearity, so the
    server still receives exactly the weighted sum, and the weight gradient of the first layer is
    one contraction over all clients' rows (faster than "scan" on Cora). client_axis="scan": clients one after another in a lax.scan with a running
    weighted sum (what secure aggregation would hand the server); identical result, and faster on a CPU because the [M, C, d, hidden] upload tensor is never materialised.
    """
    if client_axis == "vmap":
        return aggregate(all_client_grads(theta, data, pool, relay), data.counts, agg)
    if client_axis not in CLIENT_AXES:
        raise ValueError(f"client_axis must be one of {CLIENT_AXES}, got {client_axis!r}")
    w = aggregation_weights(data.counts, agg)  # [M, C]
    if client_axis == "fused":
        if data.flat:
            return flat_client_grads(theta, data, pool, w, relay)
        return fused_client_grads(theta, data, pool, w, relay)

    def body(acc, xs):
        x, b, wj = xs
        gj = client_class_grads(theta, x, b, pool, relay)  # one client's upload, [C, ...]
        return jax.tree.map(lambda a, g: a + jnp.einsum("c,c...->c...", wj, g), acc, gj), None

    c = data.counts.shape[1]
    acc0 = jax.tree.map(lambda a: jnp.zeros((c,) + a.shape, a.dtype), theta)
    return jax.lax.scan(body, acc0, (data.inputs, data.blocks, w))[0]


CLIENT_AXES = ("fused", "scan", "vmap")


def flat_client_grads(theta: Params, data: ClientData, pool: Array, w: Array, relay: str = "gcn") -> Params:
    """Σ_j w_jc ∇_θ L_{j,c} for every class c (leaves [C, ...]) from `data.flat`: per class ONE block
    holding every client's targets end to end, whose loss Σ_t w_{j(t)c} / S_{j(t)c} · NLL_t is
    Σ_j w_jc L_{j,c} (the same sum, reassociated), differentiated once. Unlike `fused_client_grads`
    no client is padded to the largest one's rows (on Cora ~5x fewer first-layer rows)."""
    x = data.inputs.reshape((-1, data.inputs.shape[-1]))  # [M·N, d]
    out = []
    for c, b in enumerate(data.flat):
        rows, nbr, weight, tclient, tscale = (jnp.take(a, pool, axis=0)
                                              for a in (b.rows, b.nbr, b.weight, b.tclient, b.tscale))
        src, tw = x[rows], w[tclient, c] * tscale  # [R, d]; per-target weight w_{j(t)c} / S_{j(t)c}

        def loss(t, c=c, src=src, nbr=nbr, weight=weight, tw=tw):
            logp = jax.nn.log_softmax(relay_block(t, src, nbr, weight, relay), axis=-1)
            return -(logp[:, c] * tw).sum()

        out.append(jax.grad(loss)(theta))
    return jax.tree.map(lambda *g: jnp.stack(g), *out)


def fused_client_grads(theta: Params, data: ClientData, pool: Array, w: Array, relay: str = "gcn",
                       penalty=None, penalty_args=None) -> Params:
    """Σ_j w_jc ∇_θ L_{j,c} for every class c (leaves [C, ...]) as one gradient of the weighted sum.

    w: [M, C] aggregation weights. Per class, every client's block loss is evaluated under vmap
    (clients stay a leading array axis) and the weighted sum is differentiated once.
    penalty: optional per-client term added to L_{j,c} (a defence acting on the local loss, e.g.
    `condense.reg`): penalty(args_j, logp [S, C], tmask [S], c) -> scalar, with args_j the client-j
    slice of `penalty_args` (leaves [M, ...]).
    """
    out = []
    for c, b in enumerate(data.blocks):
        rows, nbr, weight, tmask = (jnp.take(a, pool, axis=1) for a in (b.rows, b.nbr, b.weight, b.tmask))
        src = jax.vmap(lambda x, r: x[r])(data.inputs, rows)  # [M, R, d]

        def loss(t, c=c, src=src, nbr=nbr, weight=weight, tmask=tmask):
            def client_loss(s, n, wt, tm, wj, pa):  # L_{j,c}: class-c NLL over client j's block
                logp = jax.nn.log_softmax(relay_block(t, s, n, wt, relay), axis=-1)
                m = tm.astype(logp.dtype)
                lj = -(logp[:, c] * m).sum() / jnp.maximum(m.sum(), 1.0)
                if penalty is not None:
                    lj = lj + penalty(pa, logp, tm, c)
                return wj * lj

            return jax.vmap(client_loss)(src, nbr, weight, tmask, w[:, c], penalty_args).sum()

        out.append(jax.grad(loss)(theta))
    return jax.tree.map(lambda *g: jnp.stack(g), *out)
