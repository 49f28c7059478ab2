"""One round of federated gradient matching (FedGC Eq. 3, Algorithm 1 lines 7-14); the rounds run in
`fgl_jax.federated.run` (`systems.fedgc.algorithm`).

Per round: the server draws a fresh θ ~ P_θ; every client computes its per-class gradients at θ
(vmapped over clients, `blocks.all_client_grads`); the server aggregates them with n_j(c)/n(c)
and takes one matching step (`server.Condenser.step`), which sees only the aggregate.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp

from fgl_jax.systems.fedgc.condense.blocks import ClientData, aggregated_client_grads
from fgl_jax.systems.fedgc.condense.ldp import private_aggregated_client_grads
from fgl_jax.systems.fedgc.condense.reg import reg_aggregated_client_grads
from fgl_jax.systems.fedgc.condense.server import CondenseState, Condenser

Array = jax.Array


def fed_round(condenser: Condenser, state: CondenseState, data: ClientData, key: Array, lr_feat=None, lr_adj=None):
    """One federated condensation round -> (state, mean matching loss over the outer steps).
    lr_feat/lr_adj: optional traced learning rates (see `Condenser.step`)."""
    cfg = condenser.config
    theta = condenser.sample_theta(key)  # server: θ_t ~ P_θ, broadcast
    losses = []
    for o in range(cfg.outer):
        # the outer steps reuse θ with the clients' next sample pool (spec §2.1, arxiv outer=5)
        pool = (state.round * cfg.outer + o) % data.num_pools
        # clients compute per-class gradients at θ; only their weighted sum reaches the server
        if cfg.ldp:  # LDP baseline: each client privatises its own upload (key independent of θ's)
            k_ldp = jax.random.fold_in(jax.random.fold_in(key, 0x1D9), o)
            g_real = private_aggregated_client_grads(theta, data, pool, k_ldp, cfg.ldp_clip, cfg.ldp_noise,
                                                     cfg.relay, cfg.agg)
        elif cfg.reg:  # Reg baseline: each client's local loss carries the adversarial membership term
            k_reg = jax.random.fold_in(jax.random.fold_in(key, 0x2E6), o)
            g_real = reg_aggregated_client_grads(theta, data, pool, k_reg, cfg.reg_lambda, cfg.reg_steps, cfg.reg_lr,
                                                 cfg.reg_hidden, cfg.relay, cfg.agg)
        else:
            g_real = aggregated_client_grads(theta, data, pool, cfg.relay, cfg.agg, cfg.client_axis)
        state, loss = condenser.step(state, g_real, theta, lr_feat, lr_adj)         # server: aggregate only
        losses.append(loss)
    return state.replace(round=state.round + 1), jnp.mean(jnp.stack(losses))
