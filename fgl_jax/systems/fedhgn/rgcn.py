"""Relational GCN with basis decomposition on segment sums, and FedHGN's "RGCN-like" backbone.

Basis decomposition (Schlichtkrull et al. 2018; FedHGN Eq. 2):

    W_r = sum_{i=1..B} beta_{r,i} V_i          beta: [R, B], V: [B, D_in, D_out]

A relational layer sums, over canonical edge types c = (s, r, t), the mean of the incoming
messages of type c (normalisation per canonical type, DGL GraphConv(norm='right')), with one
weight matrix per relation *name* r:

    out_v = sum_c (1 / max(1, |N_c(v)|)) sum_{u in N_c(v)} h_u W_{r(c)}

Implemented as one segment sum keyed by (dst, relation) followed by a single contraction with
the stacked weights: agg[v, r] = sum_{e: dst=v, rel=r} norm_e h[src_e];  out = einsum(agg, W).

FedHGN's backbone (spec §2.3, the official HGNModel for L = 2): private node embeddings, a
weight-free mean layer (+ bias, ReLU), one relation-weighted layer (+ bias), ReLU, Linear.
The host builds per client the exact two-hop computation block of the labelled target nodes
(as DGL blocks do): only edges into targets feed layer 2, only edges into those edges' sources
feed layer 1, and only the embeddings of layer-1 sources are kept. This is exactly equivalent
to running the layers on the whole client graph and reading the targets' logits. Layer 2 only
involves the relations that have an edge into a target (17 of 46 slots on MUTAG-RE K=10, 12 of
78 on AIFB-RE K=3), so the blocks also carry that compact relation list (rel2_*/slots2_*) and
Eq. (2) is evaluated for those relations only.
"""
from __future__ import annotations

import math
from typing import Optional, Sequence

import flax
import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

from fgl_jax.data.hetero import HeteroGraph

__all__ = ["basis_weights", "relational_aggregate", "rgcn_conv", "canonical_norm", "RGCNLayer",
           "HeteroBlocks", "build_hetero_blocks", "init_backbone", "backbone_logits", "relation_weights",
           "basis_init_bound", "coeff_init_bound", "full_init_bound"]


# ---------------------------------------------------------------------------------------------
# Layer primitives
# ---------------------------------------------------------------------------------------------
def basis_weights(beta: jax.Array, bases: jax.Array) -> jax.Array:
    """Eq. (2): W[r] = sum_i beta[r, i] V[i].  beta [R, B], bases [B, Din, Dout] -> [R, Din, Dout]."""
    return jnp.einsum("rb,bio->rio", beta, bases)


def relational_aggregate(h: jax.Array, src: jax.Array, dst: jax.Array, rel: jax.Array, norm: jax.Array,
                         num_nodes: int, num_relations: int) -> jax.Array:
    """agg[v, r, :] = sum_{e: dst_e = v, rel_e = r} norm_e h[src_e]  -> [num_nodes, R, D].

    h [N_src, D]; src/dst/rel int [E]; norm float [E] (0 on padded edges, which makes them inert).
    """
    msg = h[src] * norm[:, None]
    agg = jax.ops.segment_sum(msg, dst * num_relations + rel, num_segments=num_nodes * num_relations)
    return agg.reshape(num_nodes, num_relations, h.shape[-1])


def rgcn_conv(h: jax.Array, src: jax.Array, dst: jax.Array, rel: jax.Array, norm: jax.Array,
              weights: jax.Array, num_nodes: int) -> jax.Array:
    """out[v] = sum_e norm_e h[src_e] W[rel_e] over edges into v.  weights [R, Din, Dout] -> [N, Dout]."""
    agg = relational_aggregate(h, src, dst, rel, norm, num_nodes, weights.shape[0])
    # One GEMM over the (relation, feature) pairs: [N, R*Din] @ [R*Din, Dout].
    return agg.reshape(num_nodes, -1) @ weights.reshape(-1, weights.shape[-1])


def canonical_norm(dst: np.ndarray, cetype: np.ndarray) -> np.ndarray:
    """Host: norm_e = 1 / in-degree of dst_e within its canonical edge type (>= 1 by construction)."""
    dst, cetype = np.asarray(dst, np.int64), np.asarray(cetype, np.int64)
    if dst.size == 0:
        return np.zeros(0, np.float32)
    key = cetype * (int(dst.max()) + 1) + dst
    _, inv, cnt = np.unique(key, return_inverse=True, return_counts=True)
    return (1.0 / cnt[inv]).astype(np.float32)


def basis_init_bound(num_bases: int, d_in: int, d_out: int) -> float:
    """torch xavier_uniform(gain=sqrt 2) on a (B, Din, Dout) tensor: fan_in = Din*Dout, fan_out = B*Dout."""
    return math.sqrt(2.0) * math.sqrt(6.0 / (d_in * d_out + num_bases * d_out))


def coeff_init_bound(num_bases: int) -> float:
    """torch xavier_uniform(gain=sqrt 2) on a (1, B) row: fan_in = B, fan_out = 1."""
    return math.sqrt(2.0) * math.sqrt(6.0 / (num_bases + 1))


def full_init_bound(num_relations: int, d_in: int, d_out: int) -> float:
    """Full per-relation weights (R, Din, Dout) with torch fans: fan_in = Din*Dout, fan_out = R*Dout."""
    return math.sqrt(2.0) * math.sqrt(6.0 / (d_in * d_out + num_relations * d_out))


class RGCNLayer(nn.Module):
    """A relational graph convolution (flax) with optional basis decomposition.

    num_bases > 0: parameters `bases` [B, Din, Dout] and `coeffs` [R, B]; else `weight` [R, Din, Dout].
    Called on (h [N_src, Din], src, dst, rel, norm [E], num_nodes) -> [num_nodes, Dout].
    """

    features: int
    num_relations: int
    num_bases: int = 0
    use_bias: bool = True
    self_loop: bool = False

    @nn.compact
    def __call__(self, h, src, dst, rel, norm, num_nodes: int):
        d_in = h.shape[-1]
        uni = lambda b: (lambda k, s, d=jnp.float32: jax.random.uniform(k, s, d, -b, b))
        if self.num_bases > 0:
            bases = self.param("bases", uni(basis_init_bound(self.num_bases, d_in, self.features)),
                               (self.num_bases, d_in, self.features))
            coeffs = self.param("coeffs", uni(coeff_init_bound(self.num_bases)),
                                (self.num_relations, self.num_bases))
            w = basis_weights(coeffs, bases)
        else:
            w = self.param("weight", uni(full_init_bound(self.num_relations, d_in, self.features)),
                           (self.num_relations, d_in, self.features))
        out = rgcn_conv(h, src, dst, rel, norm, w, num_nodes)
        if self.self_loop:
            out = out + nn.Dense(self.features, use_bias=False, name="loop")(h[:num_nodes])
        if self.use_bias:
            out = out + self.param("bias", nn.initializers.zeros, (self.features,))
        return out


# ---------------------------------------------------------------------------------------------
# Per-client two-hop blocks (host) for the FedHGN backbone
# ---------------------------------------------------------------------------------------------
def _static():
    return flax.struct.field(pytree_node=False)


@flax.struct.dataclass
class HeteroBlocks:
    """Padded two-hop computation blocks of C client graphs (leading axis C on every array).

    Layer 1 (weight-free mean): src1 [C, E1] -> rows of the embedding table [C, U, D];
    dst1 [C, E1] -> hidden rows 0..S-1; norm1 [C, E1] (0 = padding).
    Layer 2 (relation-weighted): src2 [C, E2] -> hidden rows; dst2 [C, E2] -> target rows
    0..T-1; rel_local [C, E2] = client-private relation slot (0..R_local-1, FedHGN);
    rel_global [C, E2] = slot in the union of relation names (schema-matched baselines);
    norm2 [C, E2].
    Targets: y [C, T]; train/val/test [C, T] bool. num_emb [C]: embedding rows in use.
    rel_mask [C, R_local] slots in use; owns [C, R_global] relation names the client holds.
    client_mask [C]: False for padding clients.
    Compact layer-2 relations (only relations with an edge into a target matter for the logits):
    slots2_local [C, R2] = local slots of those relations (padded with slot 0, which no padded
    index is used by), rel2_local [C, E2] = each layer-2 edge's index into slots2_local; same
    for the union vocabulary (slots2_global [C, R2g], rel2_global).
    """

    src1: jax.Array
    dst1: jax.Array
    norm1: jax.Array
    src2: jax.Array
    dst2: jax.Array
    rel_local: jax.Array
    rel_global: jax.Array
    norm2: jax.Array
    y: jax.Array
    train: jax.Array
    val: jax.Array
    test: jax.Array
    num_emb: jax.Array
    rel_mask: jax.Array
    owns: jax.Array
    client_mask: jax.Array
    rel2_local: jax.Array
    slots2_local: jax.Array
    rel2_global: jax.Array
    slots2_global: jax.Array
    num_emb_rows: int = _static()
    num_hidden: int = _static()
    num_targets: int = _static()
    num_rel_local: int = _static()
    num_rel_global: int = _static()
    num_classes: int = _static()

    @property
    def num_clients(self) -> int:
        return int(self.y.shape[0])

    def take(self, idx) -> "HeteroBlocks":
        """Clients at `idx` (a jax or numpy int array), static sizes unchanged."""
        return jax.tree.map(lambda a: a[idx], self)


def _pad_to(n: int, multiple: int) -> int:
    return max(multiple, int(math.ceil(max(n, 1) / multiple) * multiple))


TARGET_SETS = ("labelled", "train", "eval")


def _client_block(g: HeteroGraph, vocab: dict[str, int], targets: str = "labelled") -> dict:
    """Host: the two-hop block of one client's `targets` ("labelled" = train|val|test, "train",
    "eval" = val|test). The embedding rows are always those of the labelled block, so the blocks
    of different target sets index one shared private embedding table."""
    hom = g.homogeneous()
    src, dst, cet = hom["src"], hom["dst"], hom["cetype"]
    local_names = g.relations
    rel_of_cet_local = np.array([local_names.index(r) for _, r, _ in g.canonical_etypes], np.int64)
    rel_of_cet_global = np.array([vocab[r] for _, r, _ in g.canonical_etypes], np.int64)
    norm = canonical_norm(dst, cet)
    labelled = (g.train_mask | g.val_mask | g.test_mask) & (g.y >= 0)
    n_flat = g.total_nodes

    def two_hop(mask):
        t_local = np.flatnonzero(mask)
        tmap = np.full(n_flat, -1, np.int64)
        tmap[t_local + hom["offsets"][g.target]] = np.arange(t_local.size)
        e2 = np.flatnonzero(tmap[dst] >= 0) if dst.size else np.zeros(0, np.int64)
        s1 = np.unique(src[e2])
        smap = np.full(n_flat, -1, np.int64)
        smap[s1] = np.arange(s1.size)
        e1 = np.flatnonzero(smap[dst] >= 0) if dst.size else np.zeros(0, np.int64)
        return t_local, tmap, e2, s1, smap, e1

    if targets not in TARGET_SETS:
        raise ValueError(f"targets must be one of {TARGET_SETS}, got {targets!r}")
    u = np.unique(src[two_hop(labelled)[5]])            # embedding rows: the labelled block's
    umap = np.full(n_flat, -1, np.int64)
    umap[u] = np.arange(u.size)
    sel = {"labelled": labelled, "train": labelled & g.train_mask, "eval": labelled & (g.val_mask | g.test_mask)}
    t_local, tmap, e2, s1, smap, e1 = two_hop(sel[targets])
    rl, rg = rel_of_cet_local[cet[e2]], rel_of_cet_global[cet[e2]]
    s2l, r2l = np.unique(rl, return_inverse=True) if rl.size else (np.zeros(0, np.int64), rl)
    s2g, r2g = np.unique(rg, return_inverse=True) if rg.size else (np.zeros(0, np.int64), rg)
    return {
        "slots2_local": s2l, "rel2_local": r2l.reshape(-1), "slots2_global": s2g, "rel2_global": r2g.reshape(-1),
        "src1": umap[src[e1]], "dst1": smap[dst[e1]], "norm1": norm[e1],
        "src2": smap[src[e2]], "dst2": tmap[dst[e2]], "norm2": norm[e2],
        "rel_local": rel_of_cet_local[cet[e2]], "rel_global": rel_of_cet_global[cet[e2]],
        "y": g.y[t_local], "train": g.train_mask[t_local], "val": g.val_mask[t_local], "test": g.test_mask[t_local],
        "num_emb": u.size, "num_hidden": s1.size, "num_rel": len(local_names),
        "owns": np.isin(np.arange(len(vocab)), [vocab[r] for r in local_names]),
    }


def build_hetero_blocks(graphs: Sequence[HeteroGraph], vocab: Optional[Sequence[str]] = None,
                        num_clients: Optional[int] = None, targets: str = "labelled") -> tuple[HeteroBlocks, tuple[str, ...]]:
    """Host: pad and stack the two-hop blocks of client graphs -> (HeteroBlocks [C, ...], vocab).

    vocab: the union of relation names (default: in order of first appearance over clients);
    only schema-matched baselines (FedAvg/FedProx, ablation "C") ever index it. num_clients >=
    len(graphs) pads with empty clients (client_mask False). targets: which labelled nodes are
    the block's targets ("labelled", "train" or "eval" = val|test); every choice indexes the same
    embedding table (rows of the labelled block, same padded size), so a "train" block for the
    local steps and an "eval" block for evaluation together equal one "labelled" block at less
    cost (training never computes validation/test logits).
    """
    if not graphs:
        raise ValueError("build_hetero_blocks needs at least one client graph")
    classes = {g.num_classes for g in graphs}
    if len(classes) != 1:
        raise ValueError(f"client graphs disagree on num_classes: {sorted(classes)}")
    if vocab is None:
        vocab = tuple(dict.fromkeys(r for g in graphs for r in g.relations))
    vocab = tuple(vocab)
    vmap_ = {r: i for i, r in enumerate(vocab)}
    missing = {r for g in graphs for r in g.relations} - set(vocab)
    if missing:
        raise ValueError(f"vocab lacks relation names {sorted(missing)[:5]}")
    blocks = [_client_block(g, vmap_, targets) for g in graphs]
    C = num_clients or len(graphs)
    if C < len(graphs):
        raise ValueError(f"num_clients={C} < number of client graphs {len(graphs)}")
    E1 = _pad_to(max(b["src1"].size for b in blocks), 64)
    E2 = _pad_to(max(b["src2"].size for b in blocks), 64)
    U = _pad_to(max(b["num_emb"] for b in blocks), 8)
    S = _pad_to(max(b["num_hidden"] for b in blocks), 8)
    T = _pad_to(max(b["y"].size for b in blocks), 8)
    R = max(b["num_rel"] for b in blocks)
    R2l = max(1, max(b["slots2_local"].size for b in blocks))
    R2g = max(1, max(b["slots2_global"].size for b in blocks))

    def stack(key, length, dtype, fill=0):
        out = np.full((C, length), fill, dtype)
        for i, b in enumerate(blocks):
            out[i, :b[key].size] = b[key]
        return out

    rel_mask = np.zeros((C, R), bool)
    owns = np.zeros((C, len(vocab)), bool)
    for i, b in enumerate(blocks):
        rel_mask[i, :b["num_rel"]] = True
        owns[i] = b["owns"]
    cm = np.zeros(C, bool)
    cm[:len(graphs)] = True
    hb = HeteroBlocks(
        src1=stack("src1", E1, np.int32), dst1=stack("dst1", E1, np.int32), norm1=stack("norm1", E1, np.float32),
        src2=stack("src2", E2, np.int32), dst2=stack("dst2", E2, np.int32),
        rel_local=stack("rel_local", E2, np.int32), rel_global=stack("rel_global", E2, np.int32),
        norm2=stack("norm2", E2, np.float32), y=stack("y", T, np.int32, -1),
        train=stack("train", T, bool, False), val=stack("val", T, bool, False), test=stack("test", T, bool, False),
        num_emb=np.array([b["num_emb"] for b in blocks] + [0] * (C - len(blocks)), np.int32),
        rel_mask=rel_mask, owns=owns, client_mask=cm,
        rel2_local=stack("rel2_local", E2, np.int32), slots2_local=stack("slots2_local", R2l, np.int32),
        rel2_global=stack("rel2_global", E2, np.int32), slots2_global=stack("slots2_global", R2g, np.int32),
        num_emb_rows=U, num_hidden=S, num_targets=T, num_rel_local=R, num_rel_global=len(vocab),
        num_classes=graphs[0].num_classes)
    return jax.tree.map(jnp.asarray, hb), vocab


# ---------------------------------------------------------------------------------------------
# The backbone (one client, unbatched; vmap over the client axis outside)
# ---------------------------------------------------------------------------------------------
def init_backbone(key: jax.Array, num_relations: int, num_classes: int, num_emb: int, hidden: int = 64,
                  num_bases: int = 20) -> dict:
    """Parameters in three groups (spec §2.3):

    shared : b1 [D], b2 [D], W_out [D, C], b_out [C], and V [B, D, D] (num_bases > 0) or
             W [R, D, D] (full per-relation weights, num_bases <= 0)
    coeffs : beta [R, B] (only with bases)
    private: emb [num_emb, D] ~ N(0, 1)
    Inits follow the official PyTorch code's conventions (xavier with torch fans, gain sqrt 2;
    Linear default U(+-1/sqrt(D)); zero biases).
    """
    kv, kb, ko, kob, ke = jax.random.split(key, 5)
    D = hidden
    lin = 1.0 / math.sqrt(D)
    shared = {"b1": jnp.zeros(D), "b2": jnp.zeros(D),
              "W_out": jax.random.uniform(ko, (D, num_classes), minval=-lin, maxval=lin),
              "b_out": jax.random.uniform(kob, (num_classes,), minval=-lin, maxval=lin)}
    coeffs = {}
    if num_bases > 0:
        bv = basis_init_bound(num_bases, D, D)
        shared["V"] = jax.random.uniform(kv, (num_bases, D, D), minval=-bv, maxval=bv)
        bc = coeff_init_bound(num_bases)
        coeffs["beta"] = jax.random.uniform(kb, (num_relations, num_bases), minval=-bc, maxval=bc)
    else:
        bw = full_init_bound(num_relations, D, D)
        shared["W"] = jax.random.uniform(kv, (num_relations, D, D), minval=-bw, maxval=bw)
    private = {"emb": jax.random.normal(ke, (num_emb, D))}
    return {"shared": shared, "coeffs": coeffs, "private": private}


def relation_weights(shared: dict, coeffs: dict) -> jax.Array:
    """[R, D, D]: Eq. (2) from bases and coefficients, or the full weights of the baselines."""
    return basis_weights(coeffs["beta"], shared["V"]) if "V" in shared else shared["W"]


def backbone_logits(params: dict, blk: HeteroBlocks, rel: jax.Array, slots: Optional[jax.Array] = None) -> jax.Array:
    """Logits [T, classes] of one client's target rows. blk: one client's slice (no C axis).

    rel [E2]: per layer-2 edge, an index into `slots`; slots [R2]: the relation slot (row of
    beta / W) of each compact index. slots=None: rel indexes the slots directly (R2 = all).
    Passing only the relations that have an edge into a target (blk.rel2_local /
    blk.slots2_local, built on the host) gives the same logits and gradients -- other
    relations never reach a target in two hops -- at a fraction of the cost.
    """
    shared, coeffs, private = params["shared"], params["coeffs"], params["private"]
    x = private["emb"]
    # Layer 1 (i2h): weight-free per-canonical-type mean, summed over types, + b1, ReLU.
    h1 = jax.ops.segment_sum(x[blk.src1] * blk.norm1[:, None], blk.dst1, num_segments=blk.num_hidden)
    h1 = jax.nn.relu(h1 + shared["b1"])
    # Layer 2 (h2o): relation-weighted mean with W_r = sum_i beta_ri V_i (Eq. 2), + b2.
    full = coeffs["beta"] if "V" in shared else shared["W"]
    if slots is None:
        slots = jnp.arange(full.shape[0])
    R2, T, D = slots.shape[0], blk.num_targets, h1.shape[-1]
    # agg[t, r] = sum_{e: dst=t, rel=r} norm_e h1[src_e]                       [T, R2, D]
    agg = jax.ops.segment_sum(h1[blk.src2] * blk.norm2[:, None], blk.dst2 * R2 + rel, num_segments=T * R2)
    agg = agg.reshape(T, R2, D)
    if "V" in shared:
        beta, V = full[slots], shared["V"]                                      # [R2, B], [B, D, D]
        B = beta.shape[1]
        # Two exact contraction orders; pick the cheaper one for these (static) sizes:
        #   materialise W_r for the R2 relations (R2*B*D*D + T*R2*D*D flops), or
        #   Z_i = sum_r beta_ri agg_r, h2 = sum_i Z_i V_i    (T*R2*B*D + T*B*D*D flops).
        if R2 * B * D * D + T * R2 * D * D <= T * R2 * B * D + T * B * D * D:
            W = (beta @ V.reshape(B, D * D)).reshape(R2 * D, D)                # Eq. (2)
            h2 = agg.reshape(T, R2 * D) @ W
        else:
            z = jnp.einsum("trd,rb->btd", agg, beta)
            h2 = jnp.einsum("btd,bdo->to", z, V)
    else:
        h2 = agg.reshape(T, R2 * D) @ full[slots].reshape(R2 * D, -1)
    h2 = h2 + shared["b2"]
    # NodeClassifier: ReLU then Linear.
    return jax.nn.relu(h2) @ shared["W_out"] + shared["b_out"]
