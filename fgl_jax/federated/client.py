"""Client-side pieces shared by every algorithm: the optimiser, the LR schedule, local training.

Local training is a `lax.scan` of optax steps over one client's padded graph; algorithms
vmap it over the client axis.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable, Optional

import jax
import jax.numpy as jnp
import optax

from fgl_jax.federated.graph_task import graph_loss_fn, is_graph
from fgl_jax.federated.link import is_link, link_loss_fn
from fgl_jax.federated.metrics import masked_cross_entropy
from fgl_jax.federated.sampling import epoch_seeds, sample_minibatch, sampled_step_count
from fgl_jax import validate as V

PyTree = Any


@dataclasses.dataclass(frozen=True)
class OptimConfig:
    """Adam (default) with L2 weight decay and a staircase LR decay counted in rounds.

    lr(round) = lr * gamma ** (round // decay_every); decay_every = 0 means constant.
    HiFGL: lr 0.01, gamma 0.9, decay_every 4.

    Attributes:
        name: "adam" or "sgd".
        lr: the learning rate, > 0.
        weight_decay: PyTorch-style L2 weight, >= 0 (added to the gradient).
        gamma: the decay factor in (0, 1].
        decay_every: rounds between decays, >= 0 (0: constant LR).
        momentum: SGD's momentum (unused by Adam; 0: none).

    Raises:
        ValueError: on construction, a field out of range (one line naming it).
    """

    name: str = "adam"
    lr: float = 0.01
    weight_decay: float = 0.0
    gamma: float = 1.0
    decay_every: int = 0
    momentum: float = 0.9  # for sgd

    def __post_init__(self):
        V.positive("OptimConfig", "lr", self.lr)  # the learning rate
        V.non_negative("OptimConfig", "weight_decay", self.weight_decay)
        V.in_interval("OptimConfig", "gamma", self.gamma, 0.0, 1.0, closed="right")
        V.non_negative("OptimConfig", "decay_every", self.decay_every)
        V.one_of("OptimConfig", "name", self.name, ("adam", "sgd"))


def stack(tree: PyTree, n: int) -> PyTree:
    """tree with a leading client axis of size n (broadcast copies)."""
    return jax.tree.map(lambda a: jnp.broadcast_to(a, (n,) + a.shape), tree)


def tree_sq(a: PyTree, b: PyTree) -> jax.Array:
    """sum ||a - b||^2 over every leaf."""
    return sum(jnp.sum((x - y) ** 2) for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b)))


def make_optimizer(cfg: OptimConfig, lr: Optional[jax.Array] = None) -> optax.GradientTransformation:
    """The per-step optimiser; `lr` may be a traced scalar (vectorised LR sweeps).

    Args:
        cfg: the optimiser's name ("adam" or "sgd"), learning rate, weight decay and momentum.
        lr: the learning rate to use instead of `cfg.lr` (a float or traced scalar); None: `cfg.lr`.

    Returns:
        `optax.adam(lr)` or `optax.sgd(lr, momentum)`, after PyTorch-style L2 weight decay when
        `cfg.weight_decay` > 0. The LR decay schedule is not in it (`lr_scale` applies it per round).
    """
    lr = cfg.lr if lr is None else lr
    base = optax.adam(lr) if cfg.name == "adam" else optax.sgd(lr, momentum=cfg.momentum or None)
    # PyTorch-style L2 (added to the gradient before Adam), as the reference implementations use.
    return optax.chain(optax.add_decayed_weights(cfg.weight_decay), base) if cfg.weight_decay else base


def lr_scale(cfg: OptimConfig, round_index: jax.Array) -> jax.Array:
    """Multiplier of the base LR at this round. Adam's step is linear in the LR, so scaling the
    update equals scheduling the LR, and the schedule stays in rounds whatever the local steps."""
    if cfg.decay_every <= 0 or cfg.gamma == 1.0:
        return jnp.float32(1.0)
    return jnp.float32(cfg.gamma) ** (round_index // cfg.decay_every).astype(jnp.float32)


def node_loss_fn(model) -> Callable:
    """loss(params, batch, key) = mean CE over the client's training nodes; for a link-prediction
    model (`fgl_jax.nn.link.LinkModel`) the mean BCE over its training edges and negatives
    (`fgl_jax.federated.link.link_loss_fn`), so an algorithm using this loss serves both tasks."""
    if is_link(model):
        return link_loss_fn(model)
    if is_graph(model):  # graph_cls / graph_reg: over the training graphs of a mini-batch
        return graph_loss_fn(model)

    def loss(params, batch, key):
        logits = model.apply(params, batch, train=True, rngs={"dropout": key})
        return masked_cross_entropy(logits, batch.y, batch.train_mask)

    return loss


def local_train(loss_fn: Callable, optimizer: optax.GradientTransformation, steps: int,
                params: PyTree, opt_state: PyTree, batch, key: jax.Array, scale: jax.Array,
                prox_mu=None, anchor: Optional[PyTree] = None, grad_shift: Optional[PyTree] = None,
                prox_offset: Optional[PyTree] = None, grad_fn: Optional[Callable] = None,
                post_step: Optional[Callable] = None):
    """`steps` optax steps on one client; returns (params, opt_state, loss at the first step).

    scale multiplies every update (the LR when the optimiser was built with lr = 1, times the
    schedule). prox_mu (a float or traced scalar; None = no term) adds the proximal term
    (mu/2)||w + prox_offset - anchor||^2: FedProx's with anchor = the round's global model and no
    offset, FedDC's drift penalty with offset h_i. grad_shift (a pytree like params; None = none)
    is added to every step's gradient before the optimiser sees it (SCAFFOLD's c - c_i); algorithms
    with other loss terms pass them inside `loss_fn`.
    grad_fn(p, key) -> (loss, grads), if given, replaces the gradient of `loss_fn` (OpenFGL's local
    DP: per-node clipped gradients, `fgl_jax.privacy.dp.clipped_node_grad`). post_step(p, key) -> p
    runs after every step (local DP's noise).

    The proximal term's gradient mu (w + offset - anchor) is added in closed form (bit for bit what
    autodiff of the term gives: 0.5 mu * 2 x is mu x exactly), and its value only enters the returned
    first-step loss, computed once at the starting params: differentiating it inside every step
    would cost an extra pass over the parameters plus a full reduction per step.

    Args:
        loss_fn: `loss_fn(params, batch, key) -> scalar`.
        optimizer: the per-step optax transformation (`make_optimizer`).
        steps: the number of local steps (static).
        params: the client's starting parameters (no client axis; vmap this function over clients).
        opt_state: `optimizer`'s state for `params`.
        batch: the client's data (one client's slice of a `ClientBatch`), passed to `loss_fn`.
        key: the PRNG key; one key per step is split from it.
        scale: scalar multiplying every update.
        prox_mu: the proximal weight mu, or None (no proximal term).
        anchor: the proximal term's anchor, a pytree like params (needed with `prox_mu`).
        grad_shift: a pytree like params added to every gradient, or None.
        prox_offset: a pytree like params added to w in the proximal term, or None.
        grad_fn: `grad_fn(params, key) -> (loss, grads)` replacing autodiff of `loss_fn`, or None.
        post_step: `post_step(params, key) -> params` after every step, or None.

    Returns:
        `(params, opt_state, loss)`: the trained parameters, the optimiser state, and the loss at
        the first step (scalar, with the proximal term's value at the starting params).

    A graph-level client (`fgl_jax.graph_batch.GraphBatch` `[M, ...]`) trains `steps` local epochs,
    each one step per mini-batch in order (`_minibatch_epochs`); the returned loss is then the mean
    over the first epoch's mini-batches. A node-level client with a neighbour sampler
    (`ClientBatch.sampler`, `fgl_jax.federated.sampling`) likewise trains `steps` epochs of sampled
    mini-batches (`_sampled_epochs`).
    """

    def shifted(p):   # w + offset
        return p if prox_offset is None else jax.tree.map(jnp.add, p, prox_offset)

    def step_on(carry, batch, k):
        p, o = carry
        if grad_fn is None:
            val, g = jax.value_and_grad(loss_fn)(p, batch, k)
        else:
            val, g = grad_fn(p, k)
        if prox_mu is not None:
            g = jax.tree.map(lambda gi, wi, ai: gi + prox_mu * (wi - ai), g, shifted(p), anchor)
        if grad_shift is not None:
            g = jax.tree.map(jnp.add, g, grad_shift)
        upd, o = optimizer.update(g, o, p)
        upd = jax.tree.map(lambda u: u * scale, upd)
        p = optax.apply_updates(p, upd)
        if post_step is not None:
            p = post_step(p, jax.random.fold_in(k, 1))
        return (p, o), val

    if getattr(batch, "sampler", None) is not None:   # neighbour-sampled mini-batches (sampling.py)
        new, opt_state, first = _sampled_epochs(step_on, steps, params, opt_state, batch, key)
    elif getattr(batch, "num_minibatches", None) is None:
        step = lambda carry, k: step_on(carry, batch, k)
        (new, opt_state), losses = jax.lax.scan(step, (params, opt_state), jax.random.split(key, steps))
        first = losses[0]
    else:
        new, opt_state, first = _minibatch_epochs(step_on, steps, params, opt_state, batch, key)
    if prox_mu is not None:
        first = first + 0.5 * prox_mu * tree_sq(shifted(params), anchor)
    return new, opt_state, first


def _minibatch_epochs(step_on: Callable, epochs: int, params: PyTree, opt_state: PyTree, batch, key: jax.Array):
    """`epochs` passes over a graph-level client's mini-batches [M, ...] in order, one optimiser step
    each, as one scan of epochs * M steps. A mini-batch without a training graph (padding: the
    client holds fewer graphs than the largest client) leaves params and optimiser state unchanged,
    so every client takes as many steps as it has mini-batches (Adam's moments would move on a zero
    gradient). Returns (params, opt_state, mean loss over the first epoch's real mini-batches)."""
    m = batch.num_minibatches
    order = jnp.tile(jnp.arange(m, dtype=jnp.int32), epochs)

    def step(carry, xs):
        k, i = xs
        b = batch.minibatch(i)
        new, val = step_on(carry, b, k)
        real = b.train_mask.any()
        kept = jax.tree.map(lambda a, old: jnp.where(real, a, old), new, carry)
        return kept, (val, real)

    if getattr(batch, "classes", None) is not None:
        step = _packed_step(step_on, batch)

    (p, o), (losses, real) = jax.lax.scan(step, (params, opt_state), (jax.random.split(key, epochs * m), order))
    w = real[:m].astype(jnp.float32)
    return p, o, (losses[:m] * w).sum() / jnp.maximum(w.sum(), 1.0)


def _packed_step(step_on: Callable, batch) -> Callable:
    """`_minibatch_epochs`' scan step for a batch with the size-class view (packed client execution,
    `fgl_jax.graph_batch.with_size_classes`): a `lax.switch` on mini-batch i's class runs the step
    in that class's padded shape, or skips it (class -1: no training graph) without computing it.
    Run sequentially (`fgl_jax.federated.chunking.map_clients` does for such batches) only the
    taken branch is computed; under vmap every branch would be, with the same result."""
    def step(carry, xs):
        k, i = xs
        cls, slot = batch.step_class[i], batch.step_slot[i]

        def skip(carry, k):
            return carry, jnp.zeros((), jnp.float32)

        def run(view):
            return lambda carry, k: step_on(carry, view.minibatch(slot), k)

        new, val = jax.lax.switch(cls + 1, [skip] + [run(v) for v in batch.classes], carry, k)
        return new, (val.astype(jnp.float32), cls >= 0)

    return step


def _sampled_epochs(step_on: Callable, epochs: int, params: PyTree, opt_state: PyTree, batch, key: jax.Array):
    """`epochs` passes over a node-level client's training nodes in neighbour-sampled mini-batches
    (`fgl_jax.federated.sampling`), one optimiser step each, as one scan of epochs * M steps (M =
    the largest client's mini-batch count). A mini-batch without a real seed (this client has fewer
    training nodes than the largest) leaves params and optimiser state unchanged, as in
    `_minibatch_epochs`. Returns (params, opt_state, mean loss over the first epoch's real mini-batches)."""
    m = batch.sampler.num_minibatches
    k_order, k_steps = jax.random.split(key)
    seeds, real = jax.vmap(lambda k: epoch_seeds(batch.sampler, k))(jax.random.split(k_order, epochs))
    seeds, real = seeds.reshape(epochs * m, -1), real.reshape(epochs * m, -1)

    def step(carry, xs):
        k, s, r = xs
        k_sample, k_step = jax.random.split(k)
        new, val = step_on(carry, sample_minibatch(batch, s, r, k_sample), k_step)
        any_real = r.any()
        kept = jax.tree.map(lambda a, old: jnp.where(any_real, a, old), new, carry)
        return kept, (val, any_real)

    (p, o), (losses, used) = jax.lax.scan(step, (params, opt_state), (jax.random.split(k_steps, epochs * m), seeds, real))
    w = used[:m].astype(jnp.float32)
    return p, o, (losses[:m] * w).sum() / jnp.maximum(w.sum(), 1.0)


def local_step_count(steps: int, batch):
    """Optimiser steps of one `local_train` call: `steps`, or for a graph-level client `steps` epochs
    times its mini-batches holding a training graph (traced; SCAFFOLD's K)."""
    if getattr(batch, "sampler", None) is not None:
        return sampled_step_count(steps, batch)
    if getattr(batch, "num_minibatches", None) is None:
        return steps
    return steps * batch.train_mask.any(-1).sum().astype(jnp.float32)
