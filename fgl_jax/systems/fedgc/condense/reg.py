"""Adversarial-regularisation defence baseline ("Reg", FedGC Table 2, App. D; Nasr et al., CCS 2018).

Nasr et al. train a classifier f against an inference model h that tells members from non-members
from (f(x), y): min_f max_h  L(f) + λ · G(f, h), with the gain
G = E_members[log h(f(x), y)] + E_reference[log(1 − h(f(x'), y'))]. The classifier's step minimises
L(f) + λ · E_members[log h(f(x), y)]: it pushes its members to look like non-members to h.

In FedGC the "local model" whose gradients a client uploads is the round's relay θ, so Reg changes
every client's per-class upload to

    g_jc = ∇_θ [ NLL_c(θ; client j's class-c targets) + λ · mean_{class-c targets} log σ(h_j(p_θ(v), e_c)) ]

where h_j is client j's inference model, trained on that client only (its members = own training
nodes, its reference = own labelled validation nodes, never trained on) for `steps` full-batch Adam
steps at the round's θ, from a fresh initialisation every round (θ is fresh every round, so the
inner maximisation restarts with it). h: MLP [p ‖ onehot(y)] (2C) → hidden → 1, ReLU.

Everything is per client and vmapped over the client axis; the server still receives only the
weighted sum Σ_j w_jc g_jc (formed as one backward pass of the weighted loss, as the fused path).
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
import optax

from fgl_jax.systems.fedgc.condense.aggregation import aggregation_weights
from fgl_jax.systems.fedgc.condense.blocks import ClientData, fused_client_grads
from fgl_jax.systems.fedgc.condense.relay import Params, relay_block

Array = jax.Array


def init_attack(key: Array, num_classes: int, hidden: int) -> Params:
    """h's parameters: w1 [2C, hidden], b1 [hidden], w2 [hidden], b2 [] (U(±1/sqrt(fan_in)))."""
    k1, k2, k3, k4 = jax.random.split(key, 4)
    s1, s2 = 1.0 / jnp.sqrt(2.0 * num_classes), 1.0 / jnp.sqrt(float(hidden))
    u = lambda k, shape, s: jax.random.uniform(k, shape, jnp.float32, -s, s)
    return {"w1": u(k1, (2 * num_classes, hidden), s1), "b1": u(k2, (hidden,), s1),
            "w2": u(k3, (hidden,), s2), "b2": u(k4, (), s2)}


def attack_logit(h: Params, probs: Array, labels: Array) -> Array:
    """Membership logit of h for posteriors probs [S, C] with labels int [S] -> [S]."""
    onehot = jax.nn.one_hot(labels, probs.shape[-1], dtype=probs.dtype)
    z = jax.nn.relu(jnp.concatenate([probs, onehot], -1) @ h["w1"] + h["b1"])
    return z @ h["w2"] + h["b2"]


def attack_loss(h: Params, mem: tuple, ref: tuple) -> Array:
    """Balanced binary cross-entropy of h: members (label 1) and reference nodes (label 0) weigh
    equally whatever their counts. mem/ref: (probs [S, C], labels [S], mask [S])."""
    def mean_nll(batch, member):
        p, y, m = batch
        s = attack_logit(h, p, y)
        nll = -jax.nn.log_sigmoid(s if member else -s)
        m = m.astype(nll.dtype)
        return (nll * m).sum() / jnp.maximum(m.sum(), 1.0)
    return mean_nll(mem, True) + mean_nll(ref, False)


def train_attack(key: Array, mem: tuple, ref: tuple, steps: int, lr: float, hidden: int) -> Params:
    """h trained from a fresh init for `steps` full-batch Adam steps on (mem, ref) (inputs constant)."""
    opt = optax.adam(lr)
    h = init_attack(key, mem[0].shape[-1], hidden)
    mem, ref = jax.lax.stop_gradient((mem, ref))

    def step(carry, _):
        h, o = carry
        g = jax.grad(attack_loss)(h, mem, ref)
        u, o = opt.update(g, o, h)
        return (optax.apply_updates(h, u), o), None

    return jax.lax.scan(step, (h, opt.init(h)), None, length=steps)[0][0]


def block_posteriors(theta: Params, inputs: Array, blocks: tuple, pool: Array, relay: str = "gcn") -> tuple:
    """One client's relay posteriors on every target of its per-class blocks, classes concatenated:
    (probs [ΣS_c, C], labels int32 [ΣS_c], mask bool [ΣS_c]). inputs [N, d]; blocks: C ClassBlock
    slices with leading [P]."""
    probs, labels, masks = [], [], []
    for c, b in enumerate(blocks):
        rows, nbr, weight, tmask = (jnp.take(a, pool, axis=0) for a in (b.rows, b.nbr, b.weight, b.tmask))
        probs.append(jax.nn.softmax(relay_block(theta, inputs[rows], nbr, weight, relay), axis=-1))
        labels.append(jnp.full(tmask.shape, c, jnp.int32))
        masks.append(tmask)
    return jnp.concatenate(probs), jnp.concatenate(labels), jnp.concatenate(masks)


def attack_models(theta: Params, data: ClientData, pool: Array, key: Array, steps: int, lr: float,
                  hidden: int, relay: str = "gcn") -> Params:
    """Every client's inference model h_j at θ (leaves [M, ...]); client j uses split(key, M)[j].
    Members: the targets of data.blocks (own training nodes); reference: data.reference."""
    if not data.reference:
        raise ValueError("Reg defence: ClientData.reference is empty (build it with condense.reg.with_reference)")
    keys = jax.random.split(key, data.counts.shape[0])

    def one(k, x, blocks, ref_blocks):
        mem = block_posteriors(theta, x, blocks, pool, relay)
        ref = block_posteriors(theta, x, ref_blocks, pool % ref_blocks[0].rows.shape[0], relay)
        return train_attack(k, mem, ref, steps, lr, hidden)

    return jax.vmap(one)(keys, data.inputs, data.blocks, data.reference)


def reg_penalty(lam: float):
    """The classifier-side term λ · mean_{targets} log σ(h(p_θ, e_c)) as a `fused_client_grads` penalty."""
    def penalty(h, logp, mask, c):
        s = attack_logit(h, jnp.exp(logp), jnp.full(mask.shape, c, jnp.int32))
        m = mask.astype(s.dtype)
        return lam * (jax.nn.log_sigmoid(s) * m).sum() / jnp.maximum(m.sum(), 1.0)
    return penalty


def reg_aggregated_client_grads(theta: Params, data: ClientData, pool: Array, key: Array, lam: float,
                                steps: int, lr: float, hidden: int, relay: str = "gcn",
                                agg: str = "weighted") -> Params:
    """Σ_j w_jc ∇_θ [NLL_jc + λ · mean log σ(h_j(p_θ, e_c))] (leaves [C, ...]): what the server
    receives under the Reg defence. λ = 0 gives exactly the undefended fused aggregate."""
    h = attack_models(theta, data, pool, key, steps, lr, hidden, relay)
    h = jax.lax.stop_gradient(h)  # h is fixed during the classifier's step
    return fused_client_grads(theta, data, pool, aggregation_weights(data.counts, agg), relay,
                              penalty=reg_penalty(lam), penalty_args=h)


def with_reference(data: ClientData, reference: ClientData) -> ClientData:
    """`data` with the reference (non-member) blocks of `reference` (e.g. `build_client_data` on the
    same clients with train_mask := own validation nodes)."""
    if reference.counts.shape[0] != data.counts.shape[0]:
        raise ValueError(f"reference blocks have {reference.counts.shape[0]} clients, data has {data.counts.shape[0]}")
    if len(reference.blocks) != len(data.blocks):
        raise ValueError(f"reference blocks have {len(reference.blocks)} classes, data has {len(data.blocks)}")
    return data.replace(reference=reference.blocks)
