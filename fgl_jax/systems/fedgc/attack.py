"""Membership inference against a condensed graph (spec §1 threat model, §5.16 protocol).

Honest-but-curious server, shadow-model attack (Olatunji et al. 2021; He et al. 2021):
  1. shadow GCN S trained on S_in ⊂ V_rest of a shadow graph (induced on V_rest, raw X);
  2. attack MLP 𝒜 (C→64→32→2) on S's posteriors sorted in descending order, S_in = 1, S_out = 0;
  3. target GCN 𝒯 trained on G' = (A', X', Y') (same recipe, final weights, no fine-tuning);
  4. query 𝒯 on m members (V_tr) and m non-members (V_te) with their 2-hop neighbourhoods;
  AUC = Mann–Whitney statistic of 𝒜's P(member). 0.5 = no leakage.
"""
from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np
import optax

from fgl_jax.batch import ClientBatch, full_graph_batch, unstack
from fgl_jax.federated.metrics import masked_cross_entropy
from fgl_jax.graph import Graph
from fgl_jax.ops import SparseFeatures
# the AUC and the posterior features are every inference attack's: fgl_jax.privacy.inference
from fgl_jax.privacy.inference import attack_features, auc  # noqa: F401  (re-exported)
from fgl_jax.nn import make_model
from fgl_jax.systems.fedgc.evaluate import dense_graph_batch
from fgl_jax.systems.fedgc.ib import ib_resample
from fgl_jax import validate as V

Array = jax.Array


TARGET_GRAPHS = ("last", "selected")


@dataclasses.dataclass(frozen=True)
class MIAConfig:
    hidden: int = 256
    dropout: float = 0.5
    lr: float = 1e-2
    weight_decay: float = 5e-4
    iters: int = 600
    attack_hidden: tuple = (64, 32)
    attack_lr: float = 1e-2
    attack_epochs: int = 300
    max_pool: int = 2000
    # which G' of a FedGC run the target GCN trains on: "last" (the last round's) or "selected" (the
    # checkpoint the run reports); see `fedgc_attack`
    target_graph: str = "last"

    def __post_init__(self):
        for name in ("iters", "attack_epochs", "max_pool"):
            V.at_least("MIAConfig", name, getattr(self, name), 1)
        V.one_of("MIAConfig", "target_graph", self.target_graph, TARGET_GRAPHS)
        V.in_interval("MIAConfig", "dropout", self.dropout, 0.0, 1.0, closed="left")


def train_gcn(key: Array, batch: ClientBatch, train_mask: Array, in_dim: int, num_classes: int,
              cfg: MIAConfig, arch: str = "gcn"):
    """Full-batch GCN training (Adam, coupled L2, dropout) for `cfg.iters` steps; final weights.
    batch: one graph, no client axis. Returns (model, params)."""
    model, run = _gcn_trainer(arch, in_dim, num_classes, cfg)
    return model, run(key, batch, train_mask)


@functools.lru_cache(maxsize=64)  # one jitted trainer per (architecture, sizes, recipe): compiled once per shape
def _gcn_trainer(arch: str, in_dim: int, num_classes: int, cfg: MIAConfig):
    model = make_model(arch, in_dim, num_classes, hidden=cfg.hidden, num_layers=2, dropout=cfg.dropout)
    opt = optax.chain(optax.add_decayed_weights(cfg.weight_decay), optax.adam(cfg.lr)) if cfg.weight_decay \
        else optax.adam(cfg.lr)

    @jax.jit
    def run(key, batch, train_mask):
        k0, k1 = jax.random.split(key)
        p = model.init(k0, batch, train=False)

        def step(carry, k):
            p, o = carry
            g = jax.grad(lambda q: masked_cross_entropy(
                model.apply(q, batch, train=True, rngs={"dropout": k}), batch.y, train_mask))(p)
            u, o = opt.update(g, o, p)
            return (optax.apply_updates(p, u), o), None

        (p, _), _ = jax.lax.scan(step, (p, opt.init(p)), jax.random.split(k1, cfg.iters))
        return p

    return model, run


def posteriors(model, params, batch: ClientBatch) -> Array:
    return jax.nn.softmax(model.apply(params, batch, train=False), -1)


def train_attack(key: Array, feats: Array, labels: Array, cfg: MIAConfig):
    """Attack MLP C→64→32→2 (ReLU), full-batch Adam. Returns predict(feats) -> P(member) [n]."""
    dims = (feats.shape[-1],) + tuple(cfg.attack_hidden) + (2,)
    keys = jax.random.split(key, len(dims) - 1)
    params = []
    for k, a, b in zip(keys, dims[:-1], dims[1:]):
        s = 1.0 / np.sqrt(a)
        k1, k2 = jax.random.split(k)
        params.append((jax.random.uniform(k1, (a, b), jnp.float32, -s, s), jax.random.uniform(k2, (b,), jnp.float32, -s, s)))
    apply, fit = _attack_fitter(cfg.attack_lr, cfg.attack_epochs)
    params = fit(params, feats, labels.astype(jnp.int32))
    return lambda x: jax.nn.softmax(apply(params, x), -1)[:, 1]


@functools.lru_cache(maxsize=16)  # one jitted fit per (lr, epochs): compiled once per shape
def _attack_fitter(lr: float, epochs: int):
    def apply(ps, x):
        for i, (w, b) in enumerate(ps):
            x = x @ w + b
            if i < len(ps) - 1:
                x = jax.nn.relu(x)
        return x

    opt = optax.adam(lr)

    @jax.jit
    def fit(ps, x, y):
        def step(carry, _):
            ps, o = carry
            g = jax.grad(lambda q: optax.softmax_cross_entropy_with_integer_labels(apply(q, x), y).mean())(ps)
            u, o = opt.update(g, o, ps)
            return (optax.apply_updates(ps, u), o), None
        (ps, _), _ = jax.lax.scan(step, (ps, opt.init(ps)), None, length=epochs)
        return ps

    return apply, fit


def pools(graph: Graph, cfg: MIAConfig, seed: int = 0):
    """V_tr, V_te, V_rest and m = min(|V_tr|, |V_te|, |V_rest|//2, max_pool); random S_in, S_out ⊂ V_rest,
    members ⊂ V_tr and non-members ⊂ V_te of size m (labelled nodes only)."""
    rng = np.random.default_rng(seed)
    lab = graph.y >= 0
    v_tr = np.flatnonzero(graph.train_mask & lab)
    v_te = np.flatnonzero(graph.test_mask & lab)
    v_rest = np.flatnonzero(~graph.train_mask & ~graph.test_mask & lab)
    m = min(v_tr.size, v_te.size, v_rest.size // 2, cfg.max_pool)
    if m < 2:
        raise ValueError(f"MIA: too few nodes for the shadow/target pools (m={m})")
    rest = rng.permutation(v_rest)
    return {"m": m, "s_in": rest[:m], "s_out": rest[m:2 * m], "members": rng.choice(v_tr, m, replace=False),
            "nonmembers": rng.choice(v_te, m, replace=False), "v_rest": v_rest}


def shadow_attack(key: Array, graph: Graph, pool: dict, cfg: MIAConfig):
    """Steps 1-2: shadow GCN on the V_rest-induced subgraph (raw X), attack MLP on its posteriors.
    Returns (predict, shadow train-set AUC)."""
    k_s, k_a = jax.random.split(key)
    v_rest = pool["v_rest"]
    sub = graph.subgraph(v_rest, name=f"{graph.name}[shadow]")
    local = -np.ones(graph.num_nodes, np.int64)
    local[v_rest] = np.arange(v_rest.size)
    batch = unstack(full_graph_batch(sub), 0)
    train = np.zeros(batch.y.shape[0], bool)  # the batch may pad nodes past sub.num_nodes
    train[local[pool["s_in"]]] = True
    model, params = train_gcn(k_s, batch, jnp.asarray(train), graph.num_features, graph.num_classes, cfg)
    post = posteriors(model, params, batch)
    idx = np.concatenate([local[pool["s_in"]], local[pool["s_out"]]])
    lab = np.concatenate([np.ones(pool["m"]), np.zeros(pool["m"])])
    feats = attack_features(post[idx])
    predict = train_attack(k_a, feats, jnp.asarray(lab), cfg)
    return predict, auc(np.asarray(predict(feats)), lab)


def attack_auc(predict, member_post: Array, nonmember_post: Array) -> float:
    """Step 4: AUC of the attack's P(member) on target posteriors of members vs non-members."""
    feats = attack_features(jnp.concatenate([member_post, nonmember_post]))
    lab = np.concatenate([np.ones(member_post.shape[0]), np.zeros(nonmember_post.shape[0])])
    return auc(np.asarray(predict(feats)), lab)


def prepare_shadow(key: Array, graph: Graph, cfg: MIAConfig = MIAConfig(), seed: int = 0):
    """Steps 1-2 (independent of G'; reuse across the attacked condensed graphs)."""
    pool = pools(graph, cfg, seed)
    predict, shadow_auc = shadow_attack(key, graph, pool, cfg)
    return pool, predict, shadow_auc


def fedgc_attack(key: Array, graph: Graph, result, cfg: MIAConfig = MIAConfig(), seed: int = 0,
                 shadow=None) -> dict:
    """Full attack on a FedGC result (`fgl_jax.systems.fedgc.program.FedGCResult`).

    graph: the global graph with the SAME feature preprocessing as FedGC's raw features.
    Reports mia_auc (query with raw X, the server's view: it never sees Z), mia_auc_z (stress test:
    each member/non-member queried inside its owning client's local graph with that client's
    features, Z under IB), mia_auc_z_null (a GCN that never saw G' or a member, same queries), the
    shadow attack's own training AUC, the target's accuracy on each query set, when the result
    carries an IB posterior, mia_auc_z_fresh / mia_auc_z_fresh_null (queries with a fresh draw of Z)
    and, when it carries self-training labels, mia_nonmember_pl_wrong (the fraction of non-members
    whose pseudo-label is wrong) and mia_auc{_z,_z_null}_pl{right,wrong} (the same query against the
    non-members whose pseudo-label is right / wrong).

    The target GCN trains by default on the LAST round's G' (`result.condensed`), the end of the
    condensation, where the paper's Fig. 3 (no IB) has the AUC at its highest. `cfg.target_graph=
    "selected"` attacks the checkpoint `result.final` reports (`result.selected`), the G' a deployment
    would publish; which of the two leaks more varies by run (experiments/results/fedgc, `attacksel`).
    `mia_target_round` says which was used.
    """
    k_sh, k_t = jax.random.split(key)
    pool, predict, shadow_auc = shadow if shadow is not None else prepare_shadow(k_sh, graph, cfg, seed)
    if cfg.target_graph == "selected" and getattr(result, "selected", None) is None:
        raise ValueError("MIAConfig.target_graph='selected' but the FedGC result kept no selected checkpoint "
                         "(FedGCResult.selected is None)")
    selected = cfg.target_graph == "selected"
    a, x, y = (jnp.asarray(v) for v in (result.selected if selected else result.condensed))
    syn = dense_graph_batch(a, x, y)
    model, params = train_gcn(k_t, syn, syn.train_mask, x.shape[1], graph.num_classes, cfg)
    out = {"mia_shadow_auc": shadow_auc, "mia_m": int(pool["m"]),
           "mia_target_round": result.final.get("round") if selected else int(len(result.losses))}
    # raw-X query (true 2-hop neighbourhoods in the global graph); only if feature spaces agree
    mem, non = pool["members"], pool["nonmembers"]
    y_mem, y_non = np.asarray(graph.y)[mem], np.asarray(graph.y)[non]

    def report(p_mem, p_non, sfx):  # one query: mia_auc<sfx> and the target's accuracy on it
        out["mia_auc" + sfx] = attack_auc(predict, p_mem, p_non)
        out.update(query_accuracy(p_mem, y_mem, p_non, y_non, sfx))

    def client_posteriors(clients):  # [M, N, C], every client's local graph through the target
        return np.asarray(jax.vmap(lambda b: posteriors(model, params, b))(clients))

    if graph.num_features == x.shape[1]:
        post = posteriors(model, params, unstack(full_graph_batch(graph), 0))
        report(post[mem], post[non], "")
    # owner-client query (Z under IB)
    post_c = client_posteriors(result.clients)
    ids = np.asarray(result.clients.node_ids)
    own = np.asarray(result.clients.train_mask | result.clients.val_mask | result.clients.test_mask)
    lookup = {}
    for j in range(ids.shape[0]):
        for r in np.flatnonzero(own[j]):
            lookup[int(ids[j, r])] = (j, r)
    def gather(pc, nodes):  # [M, N, C] client posteriors -> [len(nodes), C] at each node's owner
        return jnp.asarray(np.stack([pc[lookup[int(v)]] for v in nodes]))
    report(gather(post_c, mem), gather(post_c, non), "_z")
    # Null control in the owner feature space: the same GCN recipe trained on the validation nodes of
    # the global graph that carries each node's owner features. It has never seen a member or G', so
    # its AUC is the membership signal of the query features themselves (under IB a member's z was
    # fitted to its true label, a non-member's to a pseudo-label); mia_auc_z minus this is what G' adds.
    zg = owner_feature_graph(graph, result.clients)
    gb = unstack(full_graph_batch(zg), 0)
    val = np.zeros(gb.y.shape[0], bool)  # the batch may pad nodes past graph.num_nodes
    val[:graph.num_nodes] = np.asarray(graph.val_mask) & (np.asarray(graph.y) >= 0)
    model0, params0 = train_gcn(jax.random.fold_in(key, 2), gb, jnp.asarray(val), zg.num_features,
                                graph.num_classes, cfg)
    post0 = posteriors(model0, params0, gb)
    report(post0[mem], post0[non], "_z_null")
    pl = getattr(result, "pseudo_labels", None)
    if pl is not None:
        # Non-members split by whether the label their z was fitted to (the self-training pseudo-label)
        # is their true one; members were fitted to their true labels. If the Z query's membership
        # signal comes from that difference, the AUC against the right-labelled non-members is near
        # 0.5 and the one against the wrong-labelled ones is high. (AUC over all non-members is the
        # mean of the two weighted by group size: Mann-Whitney is a sum over member/non-member pairs.)
        pl_non = np.array([pl[lookup[int(v)]] for v in non])
        right = pl_non == y_non
        if (pl_non >= 0).all():  # without self-training (-st) non-members carry no label: nothing to split
            out["mia_nonmember_pl_wrong"] = float((~right).mean())
        if (pl_non >= 0).all() and right.any() and (~right).any():
            for sfx, (p_mem, p_non) in (("_z", (gather(post_c, mem), gather(post_c, non))),
                                        ("_z_null", (post0[mem], post0[non]))):
                out[f"mia_auc{sfx}_plright"] = attack_auc(predict, p_mem, p_non[right])
                out[f"mia_auc{sfx}_plwrong"] = attack_auc(predict, p_mem, p_non[~right])
    post = getattr(result, "ib_posterior", None)
    if post is not None:
        # Fresh-sample query: Z is ONE draw z = μ + σε of each client's encoder posterior, and G' was
        # matched to that draw. Querying with a new draw ε' (same posterior, same scaler) separates
        # what G' memorised of the noise (lost here) from what it learnt of q(z|x) (kept); the null
        # model, queried with the same fresh draw, is its control.
        fresh = result.clients.replace(features=ib_resample(jax.random.fold_in(key, 3), post,
                                                            result.clients.node_mask))
        post_f = client_posteriors(fresh)
        report(gather(post_f, mem), gather(post_f, non), "_z_fresh")
        post0 = posteriors(model0, params0, unstack(full_graph_batch(owner_feature_graph(graph, fresh)), 0))
        report(post0[mem], post0[non], "_z_fresh_null")
    return out


def owner_feature_graph(graph: Graph, clients: ClientBatch) -> Graph:
    """The global graph with every node's features taken from the client that owns it.

    clients: [M, N, ...] stacked local graphs (node_ids = global ids; train/val/test masks mark the
    client's own nodes; dense features [M, N, F] or SparseFeatures with row/col/val [M, nnz], whose
    width is then graph.num_features). A node in no split takes the features of the first client
    that holds it. Returns graph with dense x [num_nodes, F].
    """
    ids = np.asarray(clients.node_ids)
    own = np.asarray(clients.train_mask | clients.val_mask | clients.test_mask)
    held = np.asarray(clients.node_mask)
    chosen = np.zeros(held.shape, bool)   # [M, N]: row r of client j supplies node ids[j, r]
    done = np.zeros(graph.num_nodes, bool)
    for pick in (own, held):  # owners first, then any holder for the rest
        for j in range(ids.shape[0]):
            rows = np.flatnonzero(pick[j] & held[j])
            rows = rows[~done[ids[j, rows]]]
            chosen[j, rows] = True
            done[ids[j, rows]] = True
    if not done.all():
        raise ValueError(f"owner_feature_graph: {int((~done).sum())} nodes of {graph.name!r} are held by no client")
    feats = clients.features
    if isinstance(feats, SparseFeatures):
        row, col, val = (np.asarray(a) for a in (feats.row, feats.col, feats.val))
        x = np.zeros((graph.num_nodes, graph.num_features), np.float32)
        for j in range(ids.shape[0]):
            keep = chosen[j, row[j]] & (val[j] != 0)  # padded entries have val 0
            np.add.at(x, (ids[j, row[j][keep]], col[j][keep]), val[j][keep])
    else:
        feats = np.asarray(feats)
        x = np.zeros((graph.num_nodes, feats.shape[-1]), np.float32)
        for j in range(ids.shape[0]):
            x[ids[j, chosen[j]]] = feats[j, chosen[j]]
    return dataclasses.replace(graph, x=x)


def query_accuracy(post_mem: Array, y_mem, post_non: Array, y_non, suffix: str) -> dict:
    """The target model's accuracy on the queried members and non-members ([m, C] posteriors, [m]
    labels). An AUC near 0.5 only means privacy if the target still classifies the queries: a
    target that fails on a query's feature space (raw X against a G' condensed in Z) gives 0.5 too."""
    acc = lambda p, y: float((np.asarray(p).argmax(-1) == np.asarray(y)).mean())
    return {f"mia_target_acc_members{suffix}": acc(post_mem, y_mem),
            f"mia_target_acc_nonmembers{suffix}": acc(post_non, y_non)}


def central_gcn_accuracy(graph, iters: int, key: Array) -> float:
    """Test accuracy of a 2-layer GCN trained centrally on a whole graph's training nodes (`attack.train_gcn`'s
    recipe, `iters` Adam steps) on standardised features: the graph's learnability ceiling beside a condensed run."""
    from fgl_jax.data.processing import normalize_features
    mcfg = dataclasses.replace(MIAConfig(), iters=iters)
    gs = normalize_features(graph, "standard")
    batch = unstack(full_graph_batch(gs), 0)  # one graph, no client axis
    model, params = train_gcn(key, batch, batch.train_mask, gs.x.shape[1], graph.num_classes, mcfg)
    pred = np.asarray(posteriors(model, params, batch)).argmax(-1)[:graph.num_nodes]  # drop node padding
    te = np.asarray(graph.test_mask)
    return float((pred[te] == graph.y[te]).mean())
