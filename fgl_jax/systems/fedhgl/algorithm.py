"""FedHGL training as a FederatedAlgorithm (init, round) for the engine (Algorithm 1, lines 4–11).

Every client runs I local full-batch Adam steps from the server model (FedAvg) or from its own
model ("local": the HGNN rows), keeps a persistent Adam state and its best-validation local model
(validated after every local step, as the authors' code; spec §10.11); the server averages with
training-node weights (paper Eq. 4) or uniformly (the authors' code). The paper's accuracy is the
test accuracy of the per-client best-validation models, test-size weighted: the `test_acc` metric
after the last round.
"""
from __future__ import annotations

from functools import partial
from typing import Any

import flax
import jax
import jax.numpy as jnp
import optax

from fgl_jax.federated.algorithm import FederatedAlgorithm
from fgl_jax.federated.client import OptimConfig, make_optimizer
from fgl_jax.federated.metrics import masked_cross_entropy
from fgl_jax.systems.fedhgl.config import FedHGLConfig
from fgl_jax.systems.fedhgl.data import FedHGLData
from fgl_jax.systems.fedhgl.model import _eval_counts, _features, make_model

Array = jax.Array
PyTree = Any


@flax.struct.dataclass
class FedHGLState:
    round: Array
    server: PyTree            # global parameters (FedAvg) — also the start of local mode
    clients: PyTree           # per-client parameters [C, ...] (local mode keeps training them)
    opt: PyTree               # per-client Adam state [C, ...], persistent (never reset/averaged)
    best_params: PyTree       # per-client best-validation local model [C, ...] (spec §10.11)
    best_val: Array           # float32 [C] its validation accuracy
    best_test: Array          # float32 [C] its test accuracy (the paper's reported quantity)
    hp: dict                  # traced hyperparameters: lr (and eps for traced-ε Laplace programs)


def init_state(model, cfg: FedHGLConfig, data: FedHGLData, key: Array) -> FedHGLState:
    params = model.init({"params": key}, data.x_train[0][:1], train=False)
    opt = make_optimizer(OptimConfig(lr=1.0, weight_decay=cfg.weight_decay)).init(params)
    c = data.x_train.shape[0]
    stack = lambda t: jax.tree.map(lambda a: jnp.broadcast_to(a, (c,) + a.shape), t)
    hp = {"lr": jnp.float32(cfg.lr)}
    if data.g_train is not None:
        hp["eps"] = jnp.float32(cfg.eps)
    return FedHGLState(jnp.zeros((), jnp.int32), params, stack(params), stack(opt), stack(params),
                       jnp.full((c,), -1.0, jnp.float32), jnp.zeros((c,), jnp.float32), hp)


def make_round(model, cfg: FedHGLConfig):
    """round(state, data, key) -> (state, metrics): Algorithm 1 lines 5–11 for all clients (vmapped).

    metrics: train_loss (first local step); val_acc of the clients' local models after the last
    step (pooled); best_val_acc: pooled validation accuracy of the per-client best models;
    test_acc = test accuracy of the per-client best-validation checkpoints so far,
    test-size weighted (spec §10.11: the paper's number is its value after the last round).
    """
    # lr = 1 and the LR applied as a traced multiplier (hp["lr"]): Adam's step is linear in it
    optimizer = make_optimizer(OptimConfig(lr=1.0, weight_decay=cfg.weight_decay))
    fed = cfg.mode != "local"

    def loss_fn(params, batch, key):
        x, g, y, m, hp = batch
        logits = model.apply(params, _features(x, g, hp), train=True, rngs={"dropout": key})
        return masked_cross_entropy(logits, y, m)

    def client_round(p, o, bp, bv, x, g, y, m, xv, gv, yv, mv, key, hp):
        """One client's I local Adam steps (Algorithm 1 line 9), validating after every step when
        eval_every_step (the authors' code; spec §7.2 "Evaluation") or once after the last."""
        def objective(q, k):
            return loss_fn(q, (x, g, y, m, hp), k)

        def evaluate_val(q):
            vc, vt = _eval_counts(q, xv, gv, hp, yv, mv, cfg.final_relu)
            return vc / jnp.maximum(vt, 1.0), vc, vt

        def keep_better(q, bp, bv):
            acc, vc, vt = evaluate_val(q)
            better = acc > bv
            bp = jax.tree.map(lambda b, n: jnp.where(better, n, b), bp, q)
            return bp, jnp.maximum(acc, bv), better, vc, vt

        def step(carry, k):
            q, o, bp, bv, imp, vc, vt = carry
            loss, grad = jax.value_and_grad(objective)(q, k)
            upd, o = optimizer.update(grad, o, q)
            q = optax.apply_updates(q, jax.tree.map(lambda u: u * hp["lr"], upd))
            if cfg.eval_every_step:
                bp, bv, better, vc, vt = keep_better(q, bp, bv)
                imp = imp | better
            return (q, o, bp, bv, imp, vc, vt), loss

        zero = jnp.float32(0.0)
        carry = (p, o, bp, bv, jnp.bool_(False), zero, zero)
        (q, o, bp, bv, imp, vc, vt), losses = jax.lax.scan(step, carry, jax.random.split(key, cfg.local_steps))
        if not cfg.eval_every_step:
            bp, bv, imp, vc, vt = keep_better(q, bp, bv)
        return q, o, bp, bv, imp, losses[0], vc, vt

    def round_fn(state: FedHGLState, data: FedHGLData, key: Array):
        c = data.x_train.shape[0]
        hp = state.hp
        start = (jax.tree.map(lambda a: jnp.broadcast_to(a, (c,) + a.shape), state.server) if fed else state.clients)
        keys = jax.random.split(key, c)
        ax = lambda a: None if a is None else 0
        new, opt, best, best_val, improved, losses, vc, vt = jax.vmap(
            lambda *a: client_round(*a, hp),
            in_axes=(0, 0, 0, 0, 0, ax(data.g_train), 0, 0, 0, ax(data.g_val), 0, 0, 0))(
            start, state.opt, state.best_params, state.best_val, data.x_train, data.g_train, data.y_train,
            data.m_train, data.x_val, data.g_val, data.y_val, data.m_val, keys)
        # the test rows are read only in rounds where some client's best model changed (rare after the
        # first rounds): on wide features the eval rows dominate a round's memory traffic
        tt = data.m_test.sum(axis=1).astype(jnp.float32)
        test_counts = lambda: jax.vmap(lambda p, x, g, y, m: _eval_counts(p, x, g, hp, y, m, cfg.final_relu)[0],
                                       in_axes=(0, 0, ax(data.g_test), 0, 0))(
            best, data.x_test, data.g_test, data.y_test, data.m_test)
        tc = jax.lax.cond(improved.any(), test_counts, lambda: jnp.zeros_like(tt))
        best_test = jnp.where(improved, tc / jnp.maximum(tt, 1.0), state.best_test)
        n_train = data.m_train.sum(axis=1).astype(jnp.float32)
        nv = data.m_val.sum(axis=1).astype(jnp.float32)
        w = n_train if cfg.weighting == "train" else jnp.ones_like(n_train)
        w = w / jnp.maximum(w.sum(), 1e-12)
        server = jax.tree.map(lambda a: jnp.tensordot(w, a, axes=1), new) if fed else state.server
        metrics = {"train_loss": (losses * w).sum(), "val_acc": vc.sum() / jnp.maximum(vt.sum(), 1.0),
                   "test_acc": (best_test * tt).sum() / jnp.maximum(tt.sum(), 1.0),
                   "best_val_acc": (best_val * nv).sum() / jnp.maximum(nv.sum(), 1.0)}
        return FedHGLState(state.round + 1, server, new, opt, best, best_val, best_test, hp), metrics

    return round_fn


def make_algorithm(num_classes: int, cfg: FedHGLConfig) -> FederatedAlgorithm:
    """FedHGL training as a FederatedAlgorithm: `fgl_jax.federated.run` gives checkpoints (orbax,
    including the per-client best-validation models) and resume; `run_sweep` vectorises seeds and
    the traced hp (lr; eps for traced-ε Laplace programs)."""
    model = make_model(num_classes, cfg)
    # FedAvg: each client uploads its model and downloads the average; local mode exchanges nothing
    # (the one-time pre-propagation of Algorithm 1, lines 1-3, is counted apart: data.pre_communication)
    messages = (lambda s: ((), ())) if cfg.mode == "local" else (lambda s: (s.server, s.server))
    return FederatedAlgorithm(init=lambda key, data: init_state(model, cfg, data, key), round=make_round(model, cfg),
                              messages=messages)


@partial(jax.jit, static_argnames=("final_relu",))
def evaluate(state: FedHGLState, data: FedHGLData, final_relu: bool = True) -> dict:
    """Test accuracy of the per-client best-validation checkpoints (test-size weighted, spec §10.11)
    and of the final global model."""
    ev = lambda p, g: jax.vmap(lambda x, gg, y, m: _eval_counts(p, x, gg, state.hp, y, m, final_relu),
                               in_axes=(0, None if g is None else 0, 0, 0))
    corr, tot = jax.vmap(lambda p, x, g, y, m: _eval_counts(p, x, g, state.hp, y, m, final_relu),
                         in_axes=(0, 0, None if data.g_test is None else 0, 0, 0))(
        state.best_params, data.x_test, data.g_test, data.y_test, data.m_test)
    gc, gt = ev(state.server, data.g_test)(data.x_test, data.g_test, data.y_test, data.m_test)
    return {"test_acc": corr.sum() / jnp.maximum(tot.sum(), 1.0),
            "global_test_acc": gc.sum() / jnp.maximum(gt.sum(), 1.0),
            "best_val_acc": (state.best_val * data.m_val.sum(1)).sum() / jnp.maximum(data.m_val.sum(), 1)}
