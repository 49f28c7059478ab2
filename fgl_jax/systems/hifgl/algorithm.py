"""HiFGL as a FederatedAlgorithm (init, round) over HiFGLData. One round (spec §5.2 decision 8) =

  1. SecMP forward over the WHOLE federated graph, layer by layer (`model.forward`);
  2. per-silo losses (mean CE over each silo's training devices), per-silo gradients by a
     vmapped VJP; the backward pass is straight-through (forward = SecMP, VJP = plain GNN), spec 5.2.7;
  3. each silo takes one optax (Adam) step with its own optimiser state       (Alg. 1 line 20);
  4. the server averages the silo models, unweighted                          (Alg. 1 line 23).
"""
from __future__ import annotations

from typing import Any

import flax
import jax
import jax.numpy as jnp
import optax

from fgl_jax.federated.algorithm import FederatedAlgorithm
from fgl_jax.federated.client import lr_scale, make_optimizer
from fgl_jax.systems.hifgl.config import HiFGLConfig
from fgl_jax.systems.hifgl.data import HiFGLData
from fgl_jax.systems.hifgl.model import forward, network
from fgl_jax.systems.hifgl.secmp import SiloCodes, sample_codes, server_average

PyTree = Any


@flax.struct.dataclass
class HiFGLState:
    round: jax.Array
    params: PyTree          # the global model theta broadcast to every silo
    opt: PyTree             # per-silo optimiser states [S, ...]
    codes: SiloCodes        # per-silo mu (U, lam, fixed z)
    hp: dict                # traced hyperparameters: lr


def accuracies(logits: jax.Array, data: HiFGLData) -> dict:
    """Pooled train/val/test accuracy and validation loss."""
    correct = jnp.argmax(logits, -1) == data.y
    out = {}
    for split in ("train", "val", "test"):
        mask = getattr(data, f"{split}_mask")
        out[f"{split}_acc"] = ((correct & mask).sum() / jnp.maximum(mask.sum(), 1)).astype(jnp.float32)
    ce = optax.softmax_cross_entropy_with_integer_labels(logits, data.y)
    out["val_loss"] = ((ce * data.val_mask).sum() / jnp.maximum(data.val_mask.sum(), 1)).astype(jnp.float32)
    return out


def hifgl(cfg: HiFGLConfig, in_dim: int, num_classes: int) -> FederatedAlgorithm:
    """HiFGL as a FederatedAlgorithm over HiFGLData."""
    model = network(cfg, in_dim, num_classes)
    optim = cfg.optim
    optimizer = make_optimizer(optim, lr=1.0)  # LR applied as a traced multiplier (sweepable)

    def init(key, data: HiFGLData) -> HiFGLState:
        # the model key is used exactly as the baselines use theirs, so equal seeds give equal θ^(0)
        k_model, k_codes = key, jax.random.fold_in(key, 1)
        # the parameter layout of fgl_jax.nn's GCN/SAGE, so Global and HiFGL share initialisations
        params = model.init({"params": k_model, "dropout": k_model}, data.batch())
        # float32 even when traced under x64 (the field arithmetic alone needs int64)
        params = jax.tree.map(lambda a: a.astype(jnp.float32), params)
        codes = sample_codes(k_codes, cfg, data.clients, max(cfg.hidden, num_classes) * 2)
        opt = jax.tree.map(lambda a: jnp.broadcast_to(a, (data.clients,) + a.shape), optimizer.init(params))
        return HiFGLState(jnp.zeros((), jnp.int32), params, opt, codes, {"lr": jnp.float32(cfg.lr)})

    def round_fn(state: HiFGLState, data: HiFGLData, key: jax.Array):
        k_train, k_eval = jax.random.split(key)

        def silo_losses(params):
            logits, overflow = forward(params, data, state.codes, cfg, k_train)
            ce = optax.softmax_cross_entropy_with_integer_labels(logits, data.y)     # per device loss l_j
            st = data.silo_train.astype(jnp.float32)
            return (st @ ce) / jnp.maximum(st.sum(1), 1.0), overflow             # mean over silo's devices

        losses, vjp, overflow = jax.vjp(silo_losses, state.params, has_aux=True)
        # one forward, S backward passes vmapped: row i of the identity selects silo i's loss
        grads = jax.vmap(lambda ct: vjp(ct)[0])(jnp.eye(data.clients, dtype=losses.dtype))
        scale = state.hp["lr"] * lr_scale(optim, state.round)

        def silo_step(g, o):  # each silo: one optimiser step from the shared theta (Alg. 1 line 20)
            upd, o = optimizer.update(g, o, state.params)
            return optax.apply_updates(state.params, jax.tree.map(lambda u: u * scale, upd)), o

        silo_params, opt = jax.vmap(silo_step)(grads, state.opt)
        params = server_average(silo_params)
        logits, overflow_eval = forward(params, data, state.codes, cfg, k_eval, differentiable=False)
        metrics = accuracies(logits, data)
        metrics["train_loss"] = losses.mean()
        metrics["field_overflow"] = (overflow | overflow_eval).astype(jnp.float32)
        if cfg.track_silo_acc:
            metrics["silo_train_acc"] = silo_train_acc(silo_params, data, state.codes, cfg, k_eval)
        metrics["lr"] = scale
        return HiFGLState(state.round + 1, params, opt, state.codes, state.hp), metrics

    # each silo uploads its model and downloads the average (SecMP's device traffic: model.secmp_bytes)
    return FederatedAlgorithm(init=init, round=round_fn, needs_x64=cfg.mode != "plain",
                              messages=lambda s: (s.params, s.params))


def silo_train_acc(silo_params, data: HiFGLData, codes: SiloCodes, cfg: HiFGLConfig, key) -> jax.Array:
    """Training accuracy of each silo's model on its own devices (Fig. 4a), plain forward. [S]."""
    def one(params, mask):
        logits, _ = forward(params, data, codes, cfg, key, secure=False)
        return (((jnp.argmax(logits, -1) == data.y) & mask).sum() / jnp.maximum(mask.sum(), 1)).astype(jnp.float32)
    return jax.vmap(one)(silo_params, data.silo_train)
