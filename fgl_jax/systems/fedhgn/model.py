"""FedHGN's model on all clients at once: the flat fast path of the RGCN-like backbone (rgcn.py).

Every client's two-hop block flattened into one graph (`flatten_blocks`, host side) and the
backbone's logits for every client's targets from it (`flat_logits`): the same function as
rgcn.backbone_logits vmapped over clients (tests compare them), different summation order.
"""
from __future__ import annotations

import flax
import jax
import jax.numpy as jnp
import numpy as np

from fgl_jax.systems.fedhgn.rgcn import HeteroBlocks

__all__ = ["FlatBlocks", "flatten_blocks", "flat_logits"]

# ---------------------------------------------------------------------------------------------
# Fast path: every client's block in one flat graph, layer 2 on (target, relation) pairs only
# ---------------------------------------------------------------------------------------------
# Measured on the 2-core CPU (MUTAG-RE K=10, benchmarks/bench_fedhgn.py): vmapping the per-client
# backbone turns each gather/segment_sum into a batched scatter that costs ~2x ten unbatched ones,
# and the dense layer-2 product [T, R2*D] @ [R2*D, D] spends ~77 % of its flops on (target,
# relation) pairs without an edge (873 of 224*17 = 3,808 pairs are used). The flat form offsets
# every client's node ids into one graph (one sorted segment_sum per layer for all clients; the
# clients' parameters stay separate [C, ...] arrays, so the gradient of the summed per-client
# losses is exactly each client's own gradient) and multiplies each used (target, relation) pair
# by its W_r once: pairs are grouped by relation, relations ranked by how many targets they
# reach, and ranks of similar size padded to a common capacity and multiplied as one batched
# einsum. Same function as rgcn.backbone_logits (tests compare them), different summation order.
@flax.struct.dataclass
class FlatBlocks:
    """All C clients' two-hop blocks as one graph (built on the host by `flatten_blocks`).

    src1/dst1/norm1 [E1f]: layer-1 edges, src into the flat embedding table [C*U], dst into the
    flat hidden rows [C*S], sorted by dst (padding: norm 0 at the last row).
    src2/pair2/norm2 [E2f]: layer-2 edges, src into flat hidden rows, pair2 = flat (target,
    relation) pair [C*P], sorted by pair. pair_tgt [C*P]: each pair's flat target row [C*T].
    slot_local/slot_global [C, Q]: the relation slot (row of beta / W) of each rank group.
    y/train/val/test [C, T]: targets (as in HeteroBlocks). groups: static (first rank, number of
    ranks, capacity, pair offset) per batched einsum.
    """

    src1: jax.Array
    dst1: jax.Array
    norm1: jax.Array
    src2: jax.Array
    pair2: jax.Array
    norm2: jax.Array
    pair_tgt: jax.Array
    slot_local: jax.Array
    slot_global: jax.Array
    y: jax.Array
    train: jax.Array
    val: jax.Array
    test: jax.Array
    groups: tuple = flax.struct.field(pytree_node=False)
    num_clients: int = flax.struct.field(pytree_node=False)
    num_emb_rows: int = flax.struct.field(pytree_node=False)
    num_hidden: int = flax.struct.field(pytree_node=False)
    num_targets: int = flax.struct.field(pytree_node=False)
    num_pairs: int = flax.struct.field(pytree_node=False)


def _rank_groups(caps: np.ndarray) -> list[tuple[int, int, int]]:
    """Host: (first rank, number of ranks, capacity) buckets over capacities sorted descending;
    a bucket takes ranks while they need at least half its capacity (<= 2x padding per rank)."""
    out, i = [], 0
    while i < len(caps):
        c0 = max(int(caps[i]), 1)
        j = i + 1
        while j < len(caps) and 2 * int(caps[j]) >= c0:
            j += 1
        out.append((i, j - i, c0))
        i = j
    return out


def _pad_edges(arrays: list, fill: list, multiple: int = 64) -> list:
    n = arrays[0].size
    pad = (-n) % multiple if n else multiple
    return [np.concatenate([a, np.full(pad, f, a.dtype)]) for a, f in zip(arrays, fill)]


def flatten_blocks(blocks: HeteroBlocks) -> FlatBlocks:
    """Host: HeteroBlocks [C, ...] -> FlatBlocks (padding edges dropped, clients offset into one
    graph, layer-2 edges keyed by their (target, relation) pair)."""
    b = jax.tree.map(np.asarray, blocks)
    C, U, S, T = b.num_clients, b.num_emb_rows, b.num_hidden, b.num_targets
    s1, d1, n1, pairs = [], [], [], []
    for c in range(C):
        m = b.norm1[c] > 0
        s1.append(b.src1[c][m].astype(np.int64) + c * U)
        d1.append(b.dst1[c][m].astype(np.int64) + c * S)
        n1.append(b.norm1[c][m])
        m2 = b.norm2[c] > 0
        t = b.dst2[c][m2].astype(np.int64)
        ls = b.slots2_local[c][b.rel2_local[c][m2]].astype(np.int64)
        gs = b.slots2_global[c][b.rel2_global[c][m2]].astype(np.int64)
        uk, inv = np.unique(ls * T + t, return_inverse=True)
        pslot, ptgt = uk // T, uk % T
        slots, cnt = np.unique(pslot, return_counts=True)
        order = np.lexsort((slots, -cnt))                       # ranks: most-used relation first
        g_of_l = dict(zip(ls.tolist(), gs.tolist()))
        pairs.append(dict(src=b.src2[c][m2].astype(np.int64), norm=b.norm2[c][m2], inv=inv.reshape(-1),
                          pslot=pslot, ptgt=ptgt, slots=slots[order], cnt=cnt[order],
                          gslots=np.array([g_of_l[int(x)] for x in slots[order]], np.int64)))
    Q = max(1, max(p["slots"].size for p in pairs))
    caps = np.zeros(Q, np.int64)
    for p in pairs:
        caps[:p["cnt"].size] = np.maximum(caps[:p["cnt"].size], p["cnt"])
    groups, off_of_rank, cap_of_rank, P = [], np.zeros(Q, np.int64), np.zeros(Q, np.int64), 0
    for q0, n, cap in _rank_groups(caps):
        groups.append((q0, n, cap, P))
        off_of_rank[q0:q0 + n] = P + cap * np.arange(n)
        cap_of_rank[q0:q0 + n] = cap
        P += n * cap
    s2, p2, n2 = [], [], []
    pair_tgt = np.zeros((C, P), np.int64) + (np.arange(C) * T)[:, None]
    slot_local, slot_global = np.zeros((C, Q), np.int32), np.zeros((C, Q), np.int32)
    for c, p in enumerate(pairs):
        rank = np.zeros(int(p["slots"].max()) + 1 if p["slots"].size else 1, np.int64)
        rank[p["slots"]] = np.arange(p["slots"].size)
        r = rank[p["pslot"]]
        # position of each pair inside its relation's group: pairs are sorted by (slot, target)
        first = np.searchsorted(p["pslot"], p["pslot"], side="left")
        pos = off_of_rank[r] + (np.arange(p["pslot"].size) - first)
        pair_tgt[c, pos] = c * T + p["ptgt"]
        s2.append(p["src"] + c * S)
        p2.append(pos[p["inv"]] + c * P)
        n2.append(p["norm"])
        slot_local[c, :p["slots"].size] = p["slots"]
        slot_global[c, :p["slots"].size] = p["gslots"]
    cat = lambda xs, dt: np.concatenate(xs).astype(dt) if xs else np.zeros(0, dt)
    s1, d1, n1 = cat(s1, np.int64), cat(d1, np.int64), cat(n1, np.float32)
    o = np.argsort(d1, kind="stable")
    s1, d1, n1 = _pad_edges([s1[o], d1[o], n1[o]], [0, C * S - 1, 0.0])
    s2, p2, n2 = cat(s2, np.int64), cat(p2, np.int64), cat(n2, np.float32)
    o = np.argsort(p2, kind="stable")
    s2, p2, n2 = _pad_edges([s2[o], p2[o], n2[o]], [0, C * P - 1, 0.0])
    i32 = lambda a: jnp.asarray(a.astype(np.int32))
    return FlatBlocks(src1=i32(s1), dst1=i32(d1), norm1=jnp.asarray(n1), src2=i32(s2), pair2=i32(p2),
                      norm2=jnp.asarray(n2), pair_tgt=i32(pair_tgt.reshape(-1)), slot_local=jnp.asarray(slot_local),
                      slot_global=jnp.asarray(slot_global), y=jnp.asarray(b.y), train=jnp.asarray(b.train),
                      val=jnp.asarray(b.val), test=jnp.asarray(b.test), groups=tuple(groups), num_clients=C,
                      num_emb_rows=U, num_hidden=S, num_targets=T, num_pairs=P)


def flat_logits(params: dict, fb: FlatBlocks, schema_matched: bool = False) -> jax.Array:
    """Logits [C, T, classes] of every client's targets; params with a leading client axis [C, ...]
    (as rgcn.backbone_logits vmapped over clients, spec §2.3)."""
    shared, emb = params["shared"], params["private"]["emb"]
    C, U, D = emb.shape
    S, T, P = fb.num_hidden, fb.num_targets, fb.num_pairs
    # Layer 1 (i2h): weight-free per-canonical-type mean (norm1), summed over types, + b1, ReLU.
    h1 = jax.ops.segment_sum(emb.reshape(C * U, D)[fb.src1] * fb.norm1[:, None], fb.dst1, num_segments=C * S,
                             indices_are_sorted=True)
    h1 = jax.nn.relu(h1.reshape(C, S, D) + shared["b1"][:, None, :]).reshape(C * S, D)
    # Layer 2 (h2o): agg[pair] = sum of normalised h1 messages of one relation into one target.
    agg = jax.ops.segment_sum(h1[fb.src2] * fb.norm2[:, None], fb.pair2, num_segments=C * P,
                              indices_are_sorted=True).reshape(C, P, D)
    slot = fb.slot_global if schema_matched else fb.slot_local                   # [C, Q]
    if "V" in shared:
        beta = jnp.take_along_axis(params["coeffs"]["beta"], slot[:, :, None], axis=1)       # [C, Q, B]
        B = beta.shape[-1]
        W = jnp.einsum("cqb,cbk->cqk", beta, shared["V"].reshape(C, B, D * D)).reshape(C, -1, D, D)  # Eq. (2)
    else:
        W = jnp.take_along_axis(shared["W"], slot[:, :, None, None], axis=1)                 # [C, Q, D, D]
    msg = [jnp.einsum("cgpd,cgde->cgpe", agg[:, off:off + n * cap].reshape(C, n, cap, D), W[:, q0:q0 + n])
           .reshape(C, n * cap, D) for q0, n, cap, off in fb.groups]
    msg = jnp.concatenate(msg, axis=1).reshape(C * P, D)
    h2 = jax.ops.segment_sum(msg, fb.pair_tgt, num_segments=C * T).reshape(C, T, D) + shared["b2"][:, None, :]
    # NodeClassifier: ReLU then Linear.
    return jnp.einsum("ctd,cdk->ctk", jax.nn.relu(h2), shared["W_out"]) + shared["b_out"][:, None, :]
