"""Module B of Lumos as a FederatedAlgorithm: one round of the engine = one Lumos epoch.

Training semantics (paper §VI-C, spec §4.3 / A7): all devices share one parameter set; every
epoch each device runs the tree GNN on its own tree, leaf embeddings are POOLed to their
vertices' devices, each device computes its local loss, losses are aggregated into the global
mean over training nodes (supervised) or training pairs (link), and one Adam step is taken on
that exact full-batch gradient. This is not FedAvg (no local epochs, no averaging). In the
simulation all devices' trees are one padded union graph (trees.py), so an epoch is one
forward/backward of one program; `fgl_jax.federated.run` scans epochs and keeps the
best-validation epoch.

Losses: supervised CE on LINEAR(h_u) (Eq. 32); unsupervised Eq. 33 corrected
(-log s(h_u.h_v) for v in N_u, -log s(-h_u.h_v') for |N_u| uniformly drawn v', redrawn each
epoch; mean BCE). Negatives are uniform vertices != u and are not filtered against the
(few, <= max_deg/N) true neighbours inside the jitted step.

state.hp = {"lr", "epsilon"} (traced, so `run_sweep` runs seeds x lr x epsilon as one program); the
one-bit LDP table is drawn inside the program from the state's key and hp["epsilon"].
"""
from __future__ import annotations

from typing import Optional

import flax
import jax
import jax.numpy as jnp
import optax

from fgl_jax.federated import FederatedAlgorithm
from fgl_jax.privacy import onebit
from fgl_jax.systems.lumos.config import LumosConfig
from fgl_jax.systems.lumos.data import LdpInputs
from fgl_jax.systems.lumos.model import lumos_model


def ldp_table(ldp: LdpInputs, key: jax.Array, eps: jax.Array) -> jax.Array:
    """Feature table [N + P + 1, d] = [raw x | recovered x'' per (sender, recipient) pair | 0]
    (trees.py, Eq. 25) for a traced budget eps (eps = inf: neighbours get raw features).

    Pure and deterministic in (key, eps): called every epoch with the same key, it yields the same
    draws, i.e. the noise is drawn once per run (spec §4.1) although nothing is cached."""
    d = ldp.x.shape[1]
    eps = jnp.asarray(eps, jnp.float32)
    safe = jnp.where(jnp.isfinite(eps), eps, 1.0)    # keep the unused branch finite
    if ldp.encoder == "authors-code":
        rec = onebit.authors_code_encode(key, ldp.x, ldp.pair_src, safe, d)
    else:
        rec, _ = onebit._onebit(key, ldp.x, ldp.num_bins, ldp.pair_src, ldp.recipient_bin, safe, d=d,
                                budget=ldp.budget, rescale=ldp.rescale, a=0.0, b=1.0, prior_var=ldp.prior_var)
    nbr = jnp.where(jnp.isfinite(eps), rec, ldp.x[ldp.pair_src])
    return jnp.concatenate([ldp.x, nbr, jnp.zeros((1, d), ldp.x.dtype)])


@flax.struct.dataclass
class TrainState:
    """params / opt: flax params and Adam state; hp: traced, sweepable scalars (lr, and eps when the
    table is encoded in the program); ldp_key: uint32 [2] key of the one-off LDP draw."""

    params: dict
    opt: optax.OptState
    hp: dict
    ldp_key: jax.Array
    # the LDP feature table drawn in the program, cached with the eps it was drawn for (None when
    # the table was encoded on the host). Re-drawing it every epoch costs ~3x an epoch on Facebook
    # (XLA does not hoist the draw out of the scan); the cache is refreshed only when hp["epsilon"]
    # differs from table_eps, i.e. once, in the first round of a sweep member whose eps was set
    # after init. The draw is deterministic in (ldp_key, eps), so caching changes no number.
    table: Optional[jax.Array] = None
    table_eps: Optional[jax.Array] = None

    def __getitem__(self, name):        # state["params"] as with the former dict state
        return getattr(self, name)


# ---------------------------------------------------------------------------------------------
# losses and metrics


def link_logits(h: jax.Array, pairs: jax.Array) -> jax.Array:
    """Dot-product decoder logits h_u . h_v for pairs [K, 2] -> [K]."""
    return jnp.sum(h[pairs[:, 0]] * h[pairs[:, 1]], axis=-1)


def roc_auc(scores: jax.Array, labels: jax.Array) -> jax.Array:
    """ROC-AUC = P(score_pos > score_neg) + 0.5 P(equal) (Mann-Whitney; exact with ties)."""
    pos = labels > 0.5
    neg_sorted = jnp.sort(jnp.where(pos, jnp.inf, scores))
    n_neg = jnp.sum(~pos)
    below = jnp.searchsorted(neg_sorted, scores, side="left")
    upto = jnp.searchsorted(neg_sorted, scores, side="right")
    wins = jnp.where(pos, below + 0.5 * (upto - below), 0.0)
    # float counts: n_pos * n_neg overflows int32 beyond ~46k pairs of each kind
    return jnp.sum(wins) / jnp.maximum(jnp.sum(pos).astype(jnp.float32) * n_neg.astype(jnp.float32), 1.0)


def node_loss(logits, y, mask) -> jax.Array:
    """Mean CE over masked nodes (Eq. 32)."""
    ce = optax.softmax_cross_entropy_with_integer_labels(logits, y)
    m = mask.astype(jnp.float32)
    return jnp.sum(ce * m) / jnp.maximum(m.sum(), 1.0)


def link_loss(h, pos, key) -> jax.Array:
    """Eq. 33 (corrected) as mean BCE over positives and as many uniform negatives (v' != u)."""
    n = h.shape[0]
    off = jax.random.randint(key, (pos.shape[0],), 1, max(n, 2))
    neg = jnp.stack([pos[:, 0], (pos[:, 0] + off) % n], 1)
    lp, ln = link_logits(h, pos), link_logits(h, neg)
    return 0.5 * (jnp.mean(optax.sigmoid_binary_cross_entropy(lp, jnp.ones_like(lp)))
                  + jnp.mean(optax.sigmoid_binary_cross_entropy(ln, jnp.zeros_like(ln))))


def accuracy(logits, y, mask) -> jax.Array:
    m = mask.astype(jnp.float32)
    return jnp.sum((jnp.argmax(logits, -1) == y) * m) / jnp.maximum(m.sum(), 1.0)


# ---------------------------------------------------------------------------------------------
# the algorithm: one epoch = one "round" of fgl_jax.federated.run


def make_algorithm(forward, init_params, task: str, lr: float, inputs=None, hp_extra=None,
                   messages=None) -> FederatedAlgorithm:
    """Generic full-batch trainer. forward(params, data, train, key) -> (h [N,H], logits or None).

    State: TrainState(params, opt, hp={"lr", **hp_extra}, ldp_key). Adam is optax.scale_by_adam
    followed by a step of -hp["lr"], i.e. optax.adam(lr) with a traced (sweepable) lr.
    hp_extra(data) -> {name: value}: further traced hyperparameters.
    messages(state) -> (upload, download) of one device per epoch (`FederatedAlgorithm.messages`).
    inputs(state, data) -> (state, data): per-round view of the data, with any cache it keeps in the
    state (Lumos: the LDP table drawn from state.ldp_key and the traced hp["epsilon"]); identity by default.
    Metrics: train_loss, val_acc/test_acc (accuracy; in the link task these hold ROC-AUC so that
    run()'s best-validation tracker works), plus val_auc/test_auc in the link task.
    """
    opt = optax.scale_by_adam()
    inputs = inputs or (lambda state, data: (state, data))
    hp_extra = hp_extra or (lambda data: {})

    def loss_fn(params, data, key):
        k_drop, k_neg = jax.random.split(key)
        h, logits = forward(params, data, True, k_drop)
        if task == "node":
            return node_loss(logits, data.y, data.train_mask)
        return link_loss(h, data.pos, k_neg)

    def init(key, data):
        k_param, k_ldp = jax.random.split(key)
        if jnp.issubdtype(k_ldp.dtype, jax.dtypes.prng_key):
            k_ldp = jax.random.key_data(k_ldp)
        hp = {"lr": jnp.float32(lr), **{k: jnp.float32(v) for k, v in hp_extra(data).items()}}
        st = TrainState(params=None, opt=None, hp=hp, ldp_key=k_ldp)
        st, view = inputs(st, data)
        params = init_params(k_param, view)
        return st.replace(params=params, opt=opt.init(params))

    def round_(state, data, key):
        state, data = inputs(state, data)
        loss, grads = jax.value_and_grad(loss_fn)(state.params, data, key)
        updates, opt_state = opt.update(grads, state.opt, state.params)
        updates = jax.tree.map(lambda u: -state.hp["lr"] * u, updates)
        params = optax.apply_updates(state.params, updates)
        h, logits = forward(params, data, False, key)
        if task == "node":
            m = {"val_acc": accuracy(logits, data.y, data.val_mask),
                 "test_acc": accuracy(logits, data.y_test, data.test_mask)}
        else:
            va = roc_auc(link_logits(h, data.val_pairs), data.val_label)
            te = roc_auc(link_logits(h, data.test_pairs), data.test_label)
            m = {"val_acc": va, "test_acc": te, "val_auc": va, "test_auc": te}
        m["train_loss"] = loss
        return state.replace(params=params, opt=opt_state), m

    return FederatedAlgorithm(init, round_, messages=messages)


def server_messages(state: TrainState):
    """One device's epoch with the server (communication.py): up = its share of the gradient of the
    shared parameters (the params' shapes and dtypes) and its loss value; down = the summed gradient."""
    return {"grads": state.params, "loss": jnp.zeros((), jnp.float32)}, {"grads": state.params}


def _with_table(state, data):
    """Lumos' per-round inputs: the LDP table drawn in the program when data.ldp is set, cached in
    the state and re-drawn only when hp["epsilon"] changed since the cached draw (see TrainState)."""
    if data.ldp is None:
        return state, data
    eps = jnp.asarray(state.hp["epsilon"], jnp.float32)
    if state.table is None:                                  # init: draw for the configured eps
        table = ldp_table(data.ldp, state.ldp_key, eps)
    else:
        # NaN-safe equality: eps = inf compares equal to inf
        same = (state.table_eps == eps) | (jnp.isinf(state.table_eps) & jnp.isinf(eps))
        table = jax.lax.cond(same, lambda: state.table,
                             lambda: ldp_table(data.ldp, state.ldp_key, eps))
    return state.replace(table=table, table_eps=eps), data.replace(table=table)


def lumos_algorithm(cfg: LumosConfig, num_classes: int) -> FederatedAlgorithm:
    """state.hp = {"lr"} (+ "epsilon" -- used when the data was prepared with encode="program")."""
    model = lumos_model(cfg, num_classes)

    def forward(params, data, train, key):
        return model.apply(params, data.table, data.trees, train=train, rngs={"dropout": key} if train else None)

    def init_params(key, data):
        return model.init(key, data.table, data.trees, False)

    # eps is a traced hyperparameter only when the table is drawn in the program (else sweeping it
    # would silently change nothing)
    return make_algorithm(forward, init_params, cfg.task, cfg.lr, inputs=_with_table,
                          hp_extra=lambda data: {"epsilon": cfg.epsilon} if data.ldp is not None else {},
                          messages=server_messages)
