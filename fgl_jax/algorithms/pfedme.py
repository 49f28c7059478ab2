"""pFedMe (T. Dinh, Tran & Nguyen, NeurIPS 2020, "Personalized Federated Learning with Moreau Envelopes").

Each client i solves its bi-level problem through the Moreau envelope of its loss f_i:

    F_i(w) = min_theta  f_i(theta) + (lambda / 2) ||theta - w||^2,    grad F_i(w) = lambda (w - theta*(w)).

In a round every training client starts from the global model, w_i = w^t, theta_i = w^t, and takes
`local_steps` outer steps, each

  * the inner problem solved approximately: `pfedme_inner_steps` (K) gradient-descent steps on
    f_i(theta) + (lambda/2)||theta - w_i||^2 at the personal LR, warm-started from the previous theta;
  * the local copy moved along the envelope's gradient, g = lambda (w_i - theta), by the run's
    optimiser (with `--optimizer sgd --momentum 0` this is the paper's w_i <- w_i - eta lambda (w_i - theta)).

The clients upload w_i; the server takes the run's aggregate (`fgl_jax.aggregators`, so DP-FedAvg,
`--server-opt` and client sampling apply) and moves by beta:  w^{t+1} = (1 - beta) w^t + beta * agg.
theta_i is the client's personalised model: reported metrics are the personal models' (eval_mode
auto = local_model_on_local_data; the global model with a global_model_* mode). `train_loss` is
f_i at the round's start (the first inner step's loss, where theta = w^t).

Defaults are the paper's and its authors' code's: lambda 15, K 5, personal LR 0.09, beta 1 (the
paper reports beta = 1 and beta = 2 as a faster variant; beta = 1 is the plain average). For a
large lambda with personal LR 1/lambda, theta = w - grad f(w)/lambda + O(1/lambda^2) and the outer
step is a gradient step on f_i: pFedMe with beta 1 approaches FedAvg (tests/test_alg_pfedme.py).
`pfedme_inner_weight_decay` mu (opt-in, default 0 = the paper) adds (mu/2)||theta||^2 to the inner
problem, so each inner step is theta <- theta - plr (grad f + lambda (theta - w) + mu theta): PFLlib's
pFedMeOptimizer (commit d832e76) does that with mu = 0.001 (benchmarks/peers/pfllib).
Differences from the paper: whole-subgraph batches instead of sampled minibatches, and the outer
step uses the run's optimiser (adam by default; the paper's update is `--optimizer sgd`).
"""
from __future__ import annotations

import dataclasses
from typing import Any

import flax
import jax
import jax.numpy as jnp
import optax

from fgl_jax.algorithms._common import aggregate, init_params, round_start, scatter_clients, stack, weighted_loss
from fgl_jax.federated.algorithm import FedData, FederatedAlgorithm
from fgl_jax.federated.chunking import map_clients
from fgl_jax.federated.client import local_train, make_optimizer, node_loss_fn
from fgl_jax.federated.config import FedConfig, server_aggregator
from fgl_jax.federated.evaluation import evaluate_models
from fgl_jax.registry import register
from fgl_jax.schema import option

PyTree = Any


@dataclasses.dataclass(frozen=True)
class PFedMeHParams:
    pfedme_lambda: float = option(15.0, "pFedMe regularisation lambda of the Moreau envelope "
                                        "f(theta) + (lambda/2)||theta - w||^2 (large = FedAvg-like)",
                                  low=0, low_open=True, traced=True)
    pfedme_inner_steps: int = option(5, "pFedMe K: gradient steps solving the inner (personal model) "
                                        "problem per local step", low=1)
    pfedme_personal_lr: float = option(0.09, "pFedMe learning rate of the inner gradient steps on the "
                                             "personal model theta", low=0, low_open=True, traced=True)
    pfedme_beta: float = option(1.0, "pFedMe server step beta: w <- (1 - beta) w + beta * mean of the "
                                     "clients' local models (1 = plain average)", low=0, low_open=True, traced=True)
    pfedme_inner_weight_decay: float = option(0.0, "pFedMe weight decay mu of the inner problem: adds mu * theta to "
                                                   "every inner gradient (PFLlib's pFedMeOptimizer: 0.001; 0 = the "
                                                   "paper)", low=0)


@flax.struct.dataclass
class PFedMeState:
    round: jax.Array   # int32 scalar: rounds done
    server: PyTree     # the global model w
    personal: PyTree   # every client's personalised model theta_i [C, ...]
    opt: PyTree        # optimiser states of the local models' outer steps [C_t, ...]
    hp: dict           # traced: lr, pfedme_lambda, pfedme_personal_lr, pfedme_beta
    aggregator: PyTree = None  # the server aggregator's state (`fgl_jax.aggregators`)


def envelope_step(loss_fn, inner_steps: int, w: PyTree, theta: PyTree, batch, key: jax.Array, lam: jax.Array,
                  personal_lr: jax.Array, weight_decay: float = 0.0) -> tuple[PyTree, PyTree, jax.Array]:
    """One pFedMe local step's inner solve on one client: `inner_steps` gradient-descent steps on
    f(theta) + (lambda/2)||theta - w||^2 [+ (weight_decay/2)||theta||^2] from `theta` (pytrees like one model).

    Returns (theta', g = lambda (w - theta'), the first inner step's loss), g being the gradient of
    the Moreau envelope at w the outer step follows (the first loss includes the decay term)."""
    if weight_decay:   # static: the paper's problem (0) compiles without the term
        f = loss_fn
        loss_fn = lambda p, b, k: f(p, b, k) + 0.5 * weight_decay * sum(jnp.vdot(x, x) for x in jax.tree.leaves(p))
    gd = optax.sgd(1.0)   # plain GD: the LR enters as local_train's scale
    theta, _, first = local_train(loss_fn, gd, inner_steps, theta, gd.init(theta), batch, key, personal_lr,
                                  prox_mu=lam, anchor=w)
    return theta, jax.tree.map(lambda a, b: lam * (a - b), w, theta), first


@register("algorithm", "pfedme", tasks=("node_cls", "link_pred", "graph_cls", "graph_reg"), features="ell", hparams=PFedMeHParams,
          paper="T. Dinh, Tran, Nguyen, NeurIPS 2020, arXiv:2006.08848",
          help="pFedMe: personal models from Moreau envelopes (lambda), local models follow the envelope's gradient")
def pfedme(model, common: FedConfig, hp: PFedMeHParams) -> FederatedAlgorithm:
    optimizer = make_optimizer(common.optim, lr=1.0)
    aggregator = server_aggregator(common)
    loss_fn = node_loss_fn(model)
    k_inner = hp.pfedme_inner_steps
    mode = "local_model_on_local_data" if common.eval_mode == "auto" else common.eval_mode

    def init(key: jax.Array, data: FedData) -> PFedMeState:
        params = init_params(model, key, data)
        return PFedMeState(round=jnp.zeros((), jnp.int32), server=params, personal=stack(params, data.eval.num_clients),
                           opt=stack(optimizer.init(params), data.train.num_clients),
                           hp={"lr": jnp.float32(common.optim.lr), "pfedme_lambda": jnp.float32(hp.pfedme_lambda),
                               "pfedme_personal_lr": jnp.float32(hp.pfedme_personal_lr),
                               "pfedme_beta": jnp.float32(hp.pfedme_beta)},
                           aggregator=aggregator.init(params))

    def round_fn(state: PFedMeState, data: FedData, key: jax.Array):
        ct = data.train.num_clients
        start, opt, scale = round_start(optimizer, common, state, data)   # w_i = theta_i = w^t
        lam, plr = state.hp["pfedme_lambda"], state.hp["pfedme_personal_lr"]

        def client(w, o, b, k):
            def step(carry, kk):
                w, theta, o = carry
                theta, g, first = envelope_step(loss_fn, k_inner, w, theta, b, kk, lam, plr,
                                                hp.pfedme_inner_weight_decay)
                upd, o = optimizer.update(g, o, w)
                w = optax.apply_updates(w, jax.tree.map(lambda u: u * scale, upd))
                return (w, theta, o), first

            (w, theta, o), firsts = jax.lax.scan(step, (w, w, o), jax.random.split(k, common.local_steps))
            return w, theta, o, firsts[0]

        new, theta, opt, losses = map_clients(client, common.client_chunk)(start, opt, data.train,
                                                                            jax.random.split(key, ct))
        agg, agg_state = aggregate(aggregator, state.aggregator, new, data.train_weight, key, params=state.server)
        beta = state.hp["pfedme_beta"]
        server = jax.tree.map(lambda w, a: (1.0 - beta) * w + beta * a, state.server, agg)
        personal = scatter_clients(state.personal, data.train_index, theta)
        metrics = evaluate_models(model, data, mode, server=server, local=personal, chunk=common.client_chunk,
                                  average=common.eval_average)
        metrics["train_loss"] = weighted_loss(losses, data.train_weight)
        metrics["lr"] = scale
        return PFedMeState(round=state.round + 1, server=server, personal=personal, opt=opt, hp=state.hp,
                           aggregator=agg_state), metrics

    # a client downloads the global model and uploads its local model w_i; theta_i stays on the client
    return FederatedAlgorithm(init=init, round=round_fn, messages=lambda s: (s.server, s.server))
