"""Server side of federated gradient matching: aggregation and the alternating X'/Φ updates.

The server function's arguments are the aggregated per-class gradients, the round's θ and its
own state (X', Φ, two Adam states): never client data (privacy boundary visible in the signature).
"""
from __future__ import annotations

import dataclasses
import functools
from typing import Callable, NamedTuple, Optional

import flax
import jax
import jax.numpy as jnp
import numpy as np
import optax

from fgl_jax.systems.fedgc.condense.aggregation import AGGREGATIONS, aggregate, aggregation_weights  # noqa: F401 (re-export)
from fgl_jax.systems.fedgc.condense.labels import synthetic_labels
from fgl_jax.systems.fedgc.condense.ldp import check_ldp
from fgl_jax.systems.fedgc.condense.match import DISTANCES, class_coefficients, matching_loss
from fgl_jax.systems.fedgc.condense.pge import init_pge, pge_adjacency
from fgl_jax.systems.fedgc.condense.relay import Params, check_relay, init_relay, normalize_dense
from fgl_jax import validate as V

Array = jax.Array


@dataclasses.dataclass(frozen=True)
class CondenseConfig:
    """Gradient-matching hyper-parameters (FedGC code defaults, spec §4.4).

    relay: "gcn" (2-layer GCN d→hidden→C) or "sgc" (MLP then Â², the arxiv relay).
    dist: "mse" (sum of squares, biases included) or "gcond" (Eq. 15 column cosine).
    agg: "weighted" = n_j(c)/n(c) (paper, Eq. 3) or "uniform" = mean over clients holding c (code).
    adj_period/adj_steps: round r updates Φ iff r % adj_period < adj_steps, else X'.
    outer: matching steps per fresh θ (1; arxiv 5), each with the next client sample pool.
    """

    relay: str = "gcn"
    hidden: int = 256
    dist: str = "mse"
    agg: str = "weighted"
    pge_hidden: int = 128
    pge_layers: int = 3
    lr_feat: float = 1e-3
    lr_adj: float = 1e-3
    adj_period: int = 50
    adj_steps: int = 10
    outer: int = 1
    x_init_std: float = 0.01
    # Initial bias of Φ's last layer (None = torch default U(±1/sqrt(h))). A negative value starts A'
    # sparse (A'_ij ≈ σ(b)): with the default every pair starts near 0.5, so on a large N' the relay's
    # normalised A' averages all synthetic nodes and each x'_i gets ~1/N' of the gradient.
    pge_init_bias: Optional[float] = None
    client_axis: str = "fused"  # "fused" (vmapped clients, one backward of the weighted sum), "scan" or "vmap"
    # LDP defence baseline (Table 2): each client clips its upload per coordinate to [-ldp_clip, ldp_clip]
    # and adds Laplace(0, ldp_noise) (None = clip only) before aggregation; None/None = off (default).
    # When on, clients run one after another (`blocks.private_aggregated_client_grads`), not `client_axis`.
    ldp_clip: Optional[float] = None
    ldp_noise: Optional[float] = None
    # Reg defence baseline (Table 2; `condense.reg`): each client adds λ·(adversarial membership term)
    # to its local loss before taking the gradient it uploads; None = off (default). Needs
    # ClientData.reference. reg_steps/reg_lr/reg_hidden: the per-round inference model h (Adam).
    reg_lambda: Optional[float] = None
    reg_steps: int = 50
    reg_lr: float = 1e-2
    reg_hidden: int = 64

    def __post_init__(self):
        check_relay(self.relay)
        own = "CondenseConfig"
        V.one_of(own, "dist", self.dist, DISTANCES)
        V.one_of(own, "agg", self.agg, AGGREGATIONS)
        for name in ("hidden", "pge_hidden", "adj_period", "outer"):
            V.at_least(own, name, getattr(self, name), 1)
        for name in ("lr_feat", "lr_adj", "x_init_std"):
            V.positive(own, name, getattr(self, name))
        V.one_of(own, "client_axis", self.client_axis, ("fused", "scan", "vmap"))
        V.in_interval(own, "adj_steps", self.adj_steps, 0, self.adj_period, closed="both")
        if self.ldp_clip is not None or self.ldp_noise is not None:
            if self.ldp_clip is None:
                raise ValueError(f"CondenseConfig.ldp_noise={self.ldp_noise!r} needs ldp_clip (bounded sensitivity)")
            check_ldp(self.ldp_clip, self.ldp_noise)
        V.optional_positive(own, "reg_lambda", self.reg_lambda)
        if self.pge_init_bias is not None:
            V.in_interval(own, "pge_init_bias", self.pge_init_bias, -30.0, 30.0, closed="both")
        V.at_least(own, "reg_steps", self.reg_steps, 1)
        V.at_least(own, "reg_hidden", self.reg_hidden, 1)
        V.positive(own, "reg_lr", self.reg_lr)
        if self.ldp and self.reg:
            raise ValueError("CondenseConfig: the LDP (ldp_clip) and Reg (reg_lambda) defences are exclusive")

    @property
    def ldp(self) -> bool:
        return self.ldp_clip is not None

    @property
    def reg(self) -> bool:
        return self.reg_lambda is not None


@flax.struct.dataclass
class CondenseState:
    """Server state. x_syn [N', d]; pge: Φ; opt_x/opt_pge: Adam states (kept across rounds);
    y_syn int32 [N'] (fixed); coeff [C]; round int32."""

    x_syn: Array
    pge: Params
    opt_x: optax.OptState
    opt_pge: optax.OptState
    y_syn: Array
    coeff: Array
    round: Array


class Condenser(NamedTuple):
    """optax-style pair of pure functions (plus the relay sampler)."""

    init: Callable      # (key, class_counts [C] np, in_dim) -> CondenseState
    step: Callable      # (state, g_real, theta[, lr_feat, lr_adj]) -> (state, loss)   [server: aggregated grads only]
    sample_theta: Callable  # key -> θ ~ P_θ
    config: CondenseConfig


@functools.lru_cache(maxsize=64)  # the same functions for the same config: jit caches hit across runs
def make_condenser(cfg: CondenseConfig, in_dim: int, num_classes: int) -> Condenser:
    opt_x = optax.adam(cfg.lr_feat)
    opt_pge = optax.adam(cfg.lr_adj)

    def init(key: Array, syn_counts: np.ndarray) -> CondenseState:
        syn_counts = np.asarray(syn_counts)
        if syn_counts.shape != (num_classes,) or syn_counts.min() < 1:
            raise ValueError(f"synthetic class counts must be [C={num_classes}] with every entry >= 1, "
                             f"got {syn_counts.tolist()}")
        kx, kp = jax.random.split(key)
        n_syn = int(syn_counts.sum())
        x = cfg.x_init_std * jax.random.normal(kx, (n_syn, in_dim), jnp.float32)  # X' ~ N(0, 0.01²)
        pge = init_pge(kp, in_dim, cfg.pge_hidden, cfg.pge_layers)
        if cfg.pge_init_bias is not None:
            last = f"b{cfg.pge_layers - 1}"
            pge = {**pge, last: jnp.full_like(pge[last], cfg.pge_init_bias)}
        return CondenseState(x_syn=x, pge=pge, opt_x=opt_x.init(x), opt_pge=opt_pge.init(pge),
                             y_syn=jnp.asarray(synthetic_labels(syn_counts)),
                             coeff=class_coefficients(syn_counts), round=jnp.int32(0))

    def sample_theta(key: Array) -> Params:
        return init_relay(key, in_dim, cfg.hidden, num_classes)

    def step(state: CondenseState, g_real: Params, theta: Params, lr_feat=None, lr_adj=None):
        """One matching step on the aggregated gradients g_real (leaves [C, ...]) at θ.

        lr_feat / lr_adj: optional traced learning rates (sweeps through `state.hp`); Adam's update
        is linear in the learning rate, so the configured step is rescaled by lr / cfg.lr.
        """
        def loss_fn(x, pge):
            return matching_loss(x, pge, theta, g_real, state.y_syn, state.coeff, cfg.relay, cfg.dist)

        # Alternation (code, spec §2.2): Φ in the first adj_steps rounds of every adj_period, else X'.
        # Only the variable the round updates is differentiated (lax.cond runs one branch): the
        # other's gradient and Adam step were discarded anyway.
        update_adj = (state.round % cfg.adj_period) < cfg.adj_steps

        def step_adj(state):
            loss, gp = jax.value_and_grad(loss_fn, argnums=1)(state.x_syn, state.pge)
            up, new_op = opt_pge.update(gp, state.opt_pge, state.pge)
            if lr_adj is not None:
                up = jax.tree.map(lambda u: u * (lr_adj / cfg.lr_adj), up)
            return state.replace(pge=optax.apply_updates(state.pge, up), opt_pge=new_op), loss

        def step_feat(state):
            loss, gx = jax.value_and_grad(loss_fn, argnums=0)(state.x_syn, state.pge)
            ux, new_ox = opt_x.update(gx, state.opt_x, state.x_syn)
            if lr_feat is not None:
                ux = jax.tree.map(lambda u: u * (lr_feat / cfg.lr_feat), ux)
            return state.replace(x_syn=optax.apply_updates(state.x_syn, ux), opt_x=new_ox), loss

        return jax.lax.cond(update_adj, step_adj, step_feat, state)

    return Condenser(init=init, step=step, sample_theta=sample_theta, config=cfg)


def condensed_graph(state: CondenseState) -> tuple[Array, Array, Array]:
    """The output G' = (A' = PGE_Φ(X') dense in (0,1) with zero diagonal, X', Y')."""
    return pge_adjacency(state.pge, state.x_syn), state.x_syn, state.y_syn


def normalized_condensed_adjacency(state: CondenseState) -> Array:
    return normalize_dense(pge_adjacency(state.pge, state.x_syn))
