"""FedDC (Gao et al., CVPR 2022, "FedDC: Federated Learning with Non-IID Data via Local Drift
Decoupling and Correction").

Each client keeps a local drift h_i (on the client axis, zeros at the start) that decouples its
model theta_i from the global w, and a SCAFFOLD-style gradient-correction state c_i (with the server's
c). Client i starts from w and minimises

    CE(theta) + (alpha/2) ||h_i + theta - w||^2 + <theta, c - c_i>

(the linear term enters as a constant shift of the gradient, `local_train(grad_shift=)`, the
quadratic one as local_train's proximal term with offset h_i, its gradient in closed form). After K
steps, with Delta_i = theta_i - w and eta the client lr (times its schedule):

    h_i  <- h_i + Delta_i,                 c_i <- c_i - c - Delta_i / (K eta),
    c    <- c + sum_i q_i (c_i_new - c_i),   w <- sum_i q_i (theta_i + h_i),

q_i = 1/N over the N clients with training nodes (the paper's 1/N; `feddc_weights=nodes`: their
training-node shares). The global model w is evaluated (eval_mode=auto; see eval_mode).

Stability (measured): theta_i + h_i = w + h_i(old) + 2 Delta_i, so unless the penalty pulls theta_i
towards w - h_i during local training, w moves every round by the accumulated past updates. On Cora
(10 Louvain clients, 100 rounds) plain SGD (momentum 0, lr 0.5, 1 local step) is stable (best test
0.781, FedAvg 0.791), but the library's default SGD momentum 0.9 diverges (lr 0.5 or 0.1, 1 or 10
local steps, alpha 0.01 or 0.1) and Adam peaks near FedAvg then degrades; `feddc_variant=openfgl`
was stable with Adam. The official code uses plain SGD.

Differences from the official code (gaoliang13/FedDC): it divides alpha and c by the client's
relative data size n_i N / sum n (a scaling the paper does not state; not applied here) and adds the
mean drift of all clients to the mean of the selected clients' models (the same when all take part,
as here).

Differences from OpenFGL (openfgl/flcore/feddc), `feddc_variant=openfgl`: its correction is the
gradient of sum(theta * u_i - ubar) / (eta K) with u_i = the client's previous update theta_i - w, so the
gradient shift is u_i / (eta K) (ubar is a constant and drops out): no server state c; it adds to
h_i the update of the round before (h_i lags one round), skips both terms in the first round, and
weights theta_i + h_i by training nodes. alpha: paper/official 0.01, OpenFGL 0.1.

Server step (`fgl_jax.aggregators`): the uploads theta_i + h_i go through the run's aggregator
(weights per `feddc_weights`); the correction variate's mean stays FedDC's own, in the clear.
"""
from __future__ import annotations

import dataclasses
from typing import Any

import flax
import jax
import jax.numpy as jnp

from fgl_jax.algorithms._common import aggregate, evaluate_round, init_params, round_start, scatter_clients, stack, weighted_loss
from fgl_jax.federated.algorithm import FedData, FederatedAlgorithm
from fgl_jax.federated.config import FedConfig, server_aggregator
from fgl_jax.aggregators import weighted_mean
from fgl_jax.federated.chunking import map_clients
from fgl_jax.federated.client import local_train, make_optimizer, node_loss_fn
from fgl_jax.registry import register
from fgl_jax.schema import option

PyTree = Any


@dataclasses.dataclass(frozen=True)
class FedDCHParams:
    feddc_alpha: float = option(0.01, "FedDC drift penalty alpha (paper 0.01, OpenFGL 0.1)", low=0, traced=True)
    feddc_weights: str = option("uniform", "client weights of the server averages: uniform (paper) or "
                                "nodes (training-node shares, OpenFGL)", choices=("uniform", "nodes"))
    feddc_variant: str = option("paper", "paper, or openfgl (OpenFGL's correction and lagged drift, see the "
                                "module docstring)", choices=("paper", "openfgl"))


@flax.struct.dataclass
class FedDCState:
    round: jax.Array     # int32 scalar: rounds done
    server: PyTree       # w, the global model
    drift: PyTree        # h_i [C, ...]
    ctrl: PyTree         # c_i [C, ...] (variant openfgl: the previous update theta_i - w)
    c: PyTree            # server correction state (unused by variant openfgl)
    opt: PyTree          # client optimiser states [C_t, ...]
    hp: dict             # traced: lr, feddc_alpha
    aggregator: PyTree = None  # the server aggregator's state (`fgl_jax.aggregators`)


@register("algorithm", "feddc",
          dp_uncovered="the changes of its correction variates (paper variant), averaged in the clear",
          tasks=("node_cls", "link_pred"), hparams=FedDCHParams,
          paper="Gao, Xu, Wang, Wang, Zhang, Xu, CVPR 2022, arXiv:2203.11751",
          help="FedDC: local drift variables h_i decouple and correct the local models (+ gradient correction)")
def feddc(model, common: FedConfig, hp: FedDCHParams) -> FederatedAlgorithm:
    optimizer = make_optimizer(common.optim, lr=1.0)
    ce = node_loss_fn(model)
    steps = common.local_steps
    openfgl = hp.feddc_variant == "openfgl"
    aggregator = server_aggregator(common)

    def init(key: jax.Array, data: FedData) -> FedDCState:
        params = init_params(model, key, data)
        zeros = jax.tree.map(jnp.zeros_like, params)
        c = data.eval.num_clients
        return FedDCState(round=jnp.zeros((), jnp.int32), aggregator=aggregator.init(params), server=params, drift=stack(zeros, c), ctrl=stack(zeros, c),
                          c=zeros, opt=stack(optimizer.init(params), data.train.num_clients),
                          hp={"lr": jnp.float32(common.optim.lr), "feddc_alpha": jnp.float32(hp.feddc_alpha)})

    def round_fn(state: FedDCState, data: FedData, key: jax.Array):
        ct = data.train.num_clients
        w = state.server
        start, opt, scale = round_start(optimizer, common, state, data)
        h = jax.tree.map(lambda a: a[data.train_index], state.drift)
        ci = jax.tree.map(lambda a: a[data.train_index], state.ctrl)
        # OpenFGL skips both terms in the first round
        on = (state.round > 0).astype(jnp.float32) if openfgl else jnp.float32(1.0)
        alpha = state.hp["feddc_alpha"] * on

        def client(p, o, b, k, h_i, c_i):
            if openfgl:
                shift = jax.tree.map(lambda u: on * u / (steps * scale), c_i)
            else:
                shift = jax.tree.map(lambda cg, cl: cg - cl, state.c, c_i)

            # the drift penalty (alpha/2)||theta + h_i - w||^2 as local_train's proximal term (its
            # gradient in closed form: no autodiff pass and reduction over the model per step)
            theta, o, first = local_train(ce, optimizer, steps, p, o, b, k, scale, prox_mu=alpha, anchor=w,
                                          grad_shift=shift, prox_offset=h_i)
            delta = jax.tree.map(lambda t, ww: t - ww, theta, w)
            if openfgl:   # h_i takes the previous round's update; c_i stores this round's
                return theta, o, first, jax.tree.map(jnp.add, h_i, c_i), delta
            c_new = jax.tree.map(lambda cl, cg, d: cl - cg - d / (steps * scale), c_i, state.c, delta)
            return theta, o, first, jax.tree.map(jnp.add, h_i, delta), c_new

        theta, opt, losses, h_new, c_new = map_clients(client, common.client_chunk)(
            start, opt, data.train, jax.random.split(key, ct), h, ci)
        q = jnp.ones_like(data.train_weight) if hp.feddc_weights == "uniform" else data.train_weight
        # the uploads theta_i + h_i are models; the variates' mean below is FedDC's own step
        server, agg = aggregate(aggregator, state.aggregator, jax.tree.map(jnp.add, theta, h_new), q, key,
                                params=w)
        c = state.c if openfgl else jax.tree.map(lambda cg, d: cg + d, state.c,
                                                 weighted_mean(jax.tree.map(jnp.subtract, c_new, ci), q))
        metrics = evaluate_round(model, common, data, server=server, trained=theta)
        metrics["train_loss"] = weighted_loss(losses, data.train_weight)
        metrics["lr"] = scale
        return FedDCState(round=state.round + 1, aggregator=agg, server=server,
                          drift=scatter_clients(state.drift, data.train_index, h_new),
                          ctrl=scatter_clients(state.ctrl, data.train_index, c_new), c=c, opt=opt,
                          hp=state.hp), metrics

    # up: theta_i + h_i (and, paper variant, the change of c_i); down: w (and c)
    msg = (lambda s: ((s.server,), (s.server,))) if openfgl else (lambda s: ((s.server, s.c), (s.server, s.c)))
    return FederatedAlgorithm(init=init, round=round_fn, messages=msg)
