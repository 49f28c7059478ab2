"""APFL (Deng, Kamani & Mahdavi, 2020, "Adaptive Personalized Federated Learning").

Each client k keeps a local model v_k and a mixing weight alpha_k in [0, 1] beside the global
model w; its personalised model is  alpha_k v_k + (1 - alpha_k) w. In a round every training
client, starting from the round's global model, takes `local_steps` steps, each from the current
(w, v_k, alpha_k) at once:

    w       <- w - step(grad F_k(w))                                      (FedAvg's local training)
    v_k     <- v_k - step(grad_v F_k(mix)),        mix = alpha_k v_k + (1 - alpha_k) w
    alpha_k <- clip(alpha_k - apfl_alpha_lr * <grad F_k(mix), v_k - w>, 0, 1)

(grad_v F_k(mix) = alpha_k grad F_k(mix); <grad F_k(mix), v_k - w> = dF_k(mix)/dalpha_k, summed
over every parameter.) `step` is the run's optimiser (its own state for w and for v_k); alpha_k
takes plain gradient steps. The trained w are aggregated through the run's aggregator (DP-FedAvg,
--server-opt and client sampling apply); v_k and alpha_k never leave the client.

Reported metrics (eval_mode auto): each client's personalised model alpha_k v_k + (1 - alpha_k) w
with the new global w, on its own subgraph (the global model with a global_model_* mode);
`train_loss` is the personalised models' first-step loss, `global_train_loss` that of w's local
training, `alpha_mean` the training clients' mean alpha. With alpha fixed at 0 (apfl_alpha 0,
apfl_alpha_lr 0) w trains exactly as FedAvg's model and is what is evaluated.
Differences from the paper: its Algorithm 1 uses SGD for w and v (`--optimizer sgd` here) and
updates w and v one after the other within a step, both from the step's starting point as here.

`apfl_variant pfllib` (opt-in; the paper's update stays the default) is PFLlib's clientAPFL (commit
d832e76), for measuring the gap to it (benchmarks/peers/pfllib): each step trains v_k on its own
loss F_k(v_k) instead of the mix's, and moves alpha_k along
<v_k' - w', alpha_k grad F_k(v_k) + (1 - alpha_k) grad F_k(w)> + 0.02 alpha_k (the models after the
step, the gradients at its start); after the round's steps v_k <- alpha_k v_k + (1 - alpha_k) w with
the client's trained (not yet aggregated) w, and that v_k is the personalised model evaluated and
carried into the next round.
"""
from __future__ import annotations

import dataclasses
from typing import Any

import flax
import jax
import jax.numpy as jnp
import optax

from fgl_jax.algorithms._common import (aggregate, init_params, round_start, scatter_clients, stack, take_clients,
                                        weighted_loss)
from fgl_jax.federated.algorithm import FedData, FederatedAlgorithm
from fgl_jax.federated.chunking import map_clients
from fgl_jax.federated.client import local_step_count, local_train, make_optimizer, node_loss_fn
from fgl_jax.federated.config import FedConfig, server_aggregator
from fgl_jax.federated.evaluation import evaluate_models
from fgl_jax.registry import register
from fgl_jax.schema import option

PyTree = Any
PFLLIB_ALPHA_DECAY = 0.02   # apfl_variant pfllib: the alpha * 0.02 term PFLlib's alpha_update adds to alpha's gradient
MIX_KEY = 1  # fold_in of a step's key for the personalised model's dropout (w's step uses the key itself, as FedAvg)


@dataclasses.dataclass(frozen=True)
class APFLHParams:
    apfl_alpha: float = option(0.25, "APFL: every client's initial mixing weight alpha of its personalised model "
                                     "alpha v + (1 - alpha) w", low=0, high=1)
    apfl_alpha_lr: float = option(0.1, "APFL: step size of each client's gradient step on alpha, every local step "
                                       "(0 = alpha stays at apfl_alpha)", low=0, traced=True)
    apfl_variant: str = option("paper", "APFL local update: paper (v trained on the mixed model's loss, the mix "
                                        "with the new global model evaluated) or pfllib (PFLlib's: v trained on its "
                                        "own loss, mixed with the client's trained w at the round's end, "
                                        "alpha's gradient + 0.02 alpha)", choices=("paper", "pfllib"))


@flax.struct.dataclass
class APFLState:
    round: jax.Array   # int32 scalar: rounds done
    server: PyTree     # the global model w
    personal: PyTree   # every client's local model v_k [C, ...]
    alpha: jax.Array   # float32 [C]: every client's mixing weight
    opt: PyTree        # optimiser states of w's local training [C_t, ...]
    popt: PyTree       # optimiser states of the local models v_k [C_t, ...]
    hp: dict           # traced: lr, apfl_alpha_lr
    aggregator: PyTree = None  # the server aggregator's state (`fgl_jax.aggregators`)


def mix(alpha: jax.Array, v: PyTree, w: PyTree) -> PyTree:
    """alpha v + (1 - alpha) w, leaf by leaf (alpha a scalar)."""
    return jax.tree.map(lambda a, b: alpha * a + (1.0 - alpha) * b, v, w)


@register("algorithm", "apfl", tasks=("node_cls", "link_pred", "graph_cls", "graph_reg"), features="ell", hparams=APFLHParams,
          paper="Deng, Kamani, Mahdavi, 2020, arXiv:2003.13461",
          help="APFL: FedAvg's global model w + local models v mixed as alpha v + (1-alpha) w, alpha learnt per client")
def apfl(model, common: FedConfig, hp: APFLHParams) -> FederatedAlgorithm:
    optimizer = make_optimizer(common.optim, lr=1.0)
    aggregator = server_aggregator(common)
    loss_fn = node_loss_fn(model)
    mode = "local_model_on_local_data" if common.eval_mode == "auto" else common.eval_mode

    def init(key: jax.Array, data: FedData) -> APFLState:
        params = init_params(model, key, data)
        c, ct = data.eval.num_clients, data.train.num_clients
        return APFLState(round=jnp.zeros((), jnp.int32), server=params, personal=stack(params, c),
                         alpha=jnp.full((c,), hp.apfl_alpha, jnp.float32),
                         opt=stack(optimizer.init(params), ct), popt=stack(optimizer.init(params), ct),
                         hp={"lr": jnp.float32(common.optim.lr), "apfl_alpha_lr": jnp.float32(hp.apfl_alpha_lr)},
                         aggregator=aggregator.init(params))

    pfllib = hp.apfl_variant == "pfllib"

    def client(w, v, alpha, ow, ov, batch, key, scale, alpha_lr):
        """`local_steps` APFL steps on one client -> (w, v, alpha, ow, ov, w's loss, mix's loss), losses at step 1.

        The steps run through `local_train` on the joint parameters {w, v, a, probe}, so a graph client
        takes them mini-batch by mini-batch in its size-class shapes (packed execution) as FedAvg's
        local training does, instead of on its whole padded stack. `joint_loss` has APFL's gradients
        (w: grad F(w); v, a: those of F(mix) with w held fixed) and the value of the mix's loss;
        `joint_step` updates w and v with the run's optimiser and alpha by its own rule."""
        def joint_loss(p, b, k):
            lw = loss_fn(p["w"], b, k)
            km = jax.random.fold_in(k, MIX_KEY)
            lm = (loss_fn(p["v"], b, km) if pfllib
                  else loss_fn(mix(p["a"], p["v"], jax.lax.stop_gradient(p["w"])), b, km))
            # value lm; w's gradient grad F(w) (lw - sg(lw) is 0 but differentiates as lw); the probe's
            # gradient is lw's value, which joint_step keeps for the reported global_train_loss
            sg = jax.lax.stop_gradient(lw)
            return lm + (lw - sg) + p["probe"] * sg

        per_epoch = local_step_count(1, batch)   # optimiser steps in the first epoch (their mean loss is reported)

        def init(p):
            return optimizer.init(p["w"]), optimizer.init(p["v"]), jnp.zeros((), jnp.int32), jnp.zeros((), jnp.float32)

        def update(g, s, p):
            ow, ov, n, lw_sum = s
            uw, ow = optimizer.update(g["w"], ow, p["w"])
            uv, ov = optimizer.update(g["v"], ov, p["v"])
            a = p["a"]
            if pfllib:   # PFLlib's alpha gradient: the models after the step, the gradients from its start
                w1 = optax.apply_updates(p["w"], jax.tree.map(lambda u: u * scale, uw))
                v1 = optax.apply_updates(p["v"], jax.tree.map(lambda u: u * scale, uv))
                ga = sum(jnp.vdot(vi - wi, a * gvi + (1.0 - a) * gwi)
                         for vi, wi, gvi, gwi in zip(*map(jax.tree.leaves, (v1, w1, g["v"], g["w"]))))
                ga = ga + PFLLIB_ALPHA_DECAY * a
            else:
                ga = g["a"]
            # alpha takes a plain step alpha_lr * ga; local_train multiplies every update by scale
            ua = jnp.where(scale > 0, -alpha_lr * ga / jnp.where(scale > 0, scale, 1.0), 0.0)
            lw_sum = lw_sum + jnp.where(n < per_epoch, g["probe"], 0.0)
            return ({"w": uw, "v": uv, "a": ua, "probe": jnp.zeros_like(g["probe"])},
                    (ow, ov, n + 1, lw_sum))

        joint_step = optax.GradientTransformation(init, update)
        clip = lambda p, k: {**p, "a": jnp.clip(p["a"], 0.0, 1.0)}
        p = {"w": w, "v": v, "a": alpha, "probe": jnp.zeros((), jnp.float32)}
        s0 = (ow, ov, jnp.zeros((), jnp.int32), jnp.zeros((), jnp.float32))
        p, (ow, ov, _, lw_sum), lm = local_train(joint_loss, joint_step, common.local_steps, p, s0, batch, key, scale,
                                                 post_step=clip)
        w, v, alpha = p["w"], p["v"], p["a"]
        if pfllib:   # the round's end: v becomes the personalised model
            v = mix(alpha, v, w)
        return w, v, alpha, ow, ov, lw_sum / jnp.maximum(per_epoch, 1), lm

    def round_fn(state: APFLState, data: FedData, key: jax.Array):
        ct = data.train.num_clients
        start, opt, scale = round_start(optimizer, common, state, data)   # start: w^t on every client
        mine = take_clients(state.personal, data.train_index)
        alpha = take_clients(state.alpha, data.train_index)
        popt = jax.vmap(optimizer.init)(mine) if common.reset_optimizer else state.popt
        keys = jax.random.split(key, ct)
        run = lambda w, v, a, ow, ov, b, k: client(w, v, a, ow, ov, b, k, scale, state.hp["apfl_alpha_lr"])
        new, mine, alpha, opt, popt, glosses, losses = map_clients(run, common.client_chunk)(
            start, mine, alpha, opt, popt, data.train, keys)
        server, agg = aggregate(aggregator, state.aggregator, new, data.train_weight, key, params=state.server)
        everyone = scatter_clients(state.personal, data.train_index, mine)
        alphas = scatter_clients(state.alpha, data.train_index, alpha)
        if hp.apfl_variant == "pfllib":   # v was mixed at the round's end (with the client's own w)
            personalised = everyone
        else:
            personalised = jax.vmap(mix, in_axes=(0, 0, None))(alphas, everyone, server)
        metrics = evaluate_models(model, data, mode, server=server, local=personalised, chunk=common.client_chunk,
                                  average=common.eval_average)
        metrics["train_loss"] = weighted_loss(losses, data.train_weight)
        metrics["global_train_loss"] = weighted_loss(glosses, data.train_weight)
        metrics["alpha_mean"] = alpha.mean()
        metrics["lr"] = scale
        return APFLState(round=state.round + 1, server=server, personal=everyone, alpha=alphas, opt=opt, popt=popt,
                         hp=state.hp, aggregator=agg), metrics

    # a client downloads the global model and uploads its trained copy; v_k and alpha_k stay on the client
    return FederatedAlgorithm(init=init, round=round_fn, train_axis=("opt", "popt"),
                              messages=lambda s: (s.server, s.server))
