"""FedConfig: the hyperparameters every algorithm shares, and the server aggregator they ask for.

`server_aggregator(cfg)` is the one place where the run's options become the server step of every
algorithm (`fgl_jax.aggregators`): DP-FedAvg's clip + uniform mean + noise when dp_clip > 0, else
the weighted mean (either mean through secure aggregation with secure_agg, or `aggregator`, e.g. a
robust reduction), after `upload_stages` (e.g. an attack), then the server optimiser (`server_opt`,
or an algorithm's own such as FedAdam's).
"""
from __future__ import annotations

import dataclasses
from typing import Any, Optional

import optax

from fgl_jax import aggregators
from fgl_jax.federated.chunking import check_chunk
from fgl_jax.federated.client import OptimConfig
from fgl_jax.federated.metrics import AVERAGES
from fgl_jax.privacy.dp import LocalDP
from fgl_jax import validate as V

# the aggregator's key in a round: fold_in(round key, AGGREGATE_KEY), apart from the clients' keys
AGGREGATE_KEY = 0x5EED

ALGORITHMS = ("local", "fedavg", "fedprox", "fedper", "fedbn", "fedstar", "global")
PERSONALISED = ("local", "fedper", "fedstar")
# OpenFGL's evaluation modes (which model, on which graph); "auto" = fgl_jax's own choice: the
# global model on each client's subgraph, or each client's model for personalised algorithms.
EVAL_MODES = ("auto", "global_model_on_local_data", "global_model_on_global_data",
              "local_model_on_local_data", "local_model_on_global_data")


@dataclasses.dataclass(frozen=True)
class SecureAgg:
    """Secure aggregation's options (`fgl_jax.aggregators.secure_mean`): Shamir threshold (0: a
    majority of the round's clients), the fraction of each round's clients that drop out after the
    setup, the fixed-point fractional bits, and whether clients add a self-mask."""

    threshold: int = 0
    dropout: float = 0.0
    frac_bits: int = 20
    self_mask: bool = True

    def mean(self, weighting: str = "weights") -> aggregators.Aggregator:
        return aggregators.secure_mean(weighting, self.threshold or None, self.dropout, self.frac_bits,
                                       self.self_mask)


@dataclasses.dataclass(frozen=True)
class FedConfig:
    """Hyperparameters every algorithm shares (`algorithm` selects among the FedAvg family's variants).

    Attributes:
        algorithm: the FedAvg family's variant ("local", "fedavg", "fedprox", "fedper", "global", ...).
        local_steps: local optimiser steps per round.
        prox_mu: FedProx's proximal weight mu.
        personal_layers: FedPer: how many of the last layers stay local.
        reset_optimizer: True: a fresh optimiser state every round.
        optim: the client optimiser (`OptimConfig`).
        client_chunk: None: vmap all clients at once; k: local training and evaluation run k clients
            at a time (same numbers, peak memory bounded by k clients' work).
        eval_mode: one of EVAL_MODES (see `evaluate_models`).
        eval_average: "pooled" counts, or "client_nodes" (OpenFGL's node-weighted mean).
        dp_clip: client-level DP-FedAvg's clipping norm (0 = off).
        dp_noise: DP-FedAvg's noise multiplier z.
        ldp: OpenFGL's local DP (per-node clipped gradients and noise every step), or None.
        server_opt: a server optimiser's hyperparameters (FedAvgMHParams / FedAdamHParams /
            FedYogiHParams), or None (the plain aggregate).
        aggregator: a user's `Aggregator` of kind "reduce" in place of the mean, or None.
        model: the run's model as data (`ModelSpec`), for algorithms that build a variant of it.
        client_models: heterogeneous client models (`fgl_jax.federated.client_models.ClientModels`),
            or None (every client runs `model`); only algorithms registered with hetero=True read it.
    """

    algorithm: str = "fedavg"
    local_steps: int = 1
    prox_mu: float = 0.01
    personal_layers: int = 1  # FedPer: how many of the last layers stay local
    reset_optimizer: bool = False  # True: fresh optimiser state every round
    optim: OptimConfig = OptimConfig()
    # None: vmap all clients at once; k: local training and evaluation run k clients at a time
    # (lax.map over client blocks): same numbers, peak memory bounded by k clients' work.
    client_chunk: Optional[int] = None
    eval_mode: str = "auto"         # one of EVAL_MODES (see `evaluate_models`)
    eval_average: str = "pooled"    # "pooled" counts, or "client_nodes": OpenFGL's node-weighted mean
    # client-level DP-FedAvg (`fgl_jax.aggregators.dp`): clip each client's update to L2 norm dp_clip
    # (0 = off) and add N(0, (dp_noise * dp_clip / m)^2) to the uniform mean of the m updates
    dp_clip: float = 0.0
    dp_noise: float = 0.0
    # OpenFGL's local DP (per-node clipped gradients + noise on the local model every step); None = off
    ldp: Optional[LocalDP] = None
    # server optimiser applied to the aggregate of any algorithm (`fgl_jax.aggregators.server_opt`): an
    # instance of FedAvgMHParams / FedAdamHParams / FedYogiHParams, or None (the plain aggregate)
    server_opt: Optional[Any] = None
    # a user's own aggregation in place of the mean (an `fgl_jax.aggregators.Aggregator` of kind
    # "reduce" or a chain ending in one, e.g. a robust mean); None = the mean, or DP-FedAvg's with dp_clip
    aggregator: Optional[Any] = None
    # per_client aggregators applied to the uploads before the reduction, whatever it is (an attack,
    # `fgl_jax.aggregators.attacks.attack`: attackers change what they upload, not how it is reduced)
    upload_stages: tuple = ()
    # the run's model as data (fgl_jax.nn.ModelSpec), for algorithms that build a variant of it
    model: Optional[Any] = None
    # secure aggregation (`fgl_jax.aggregators.secure_mean`): a SecureAgg, or None (the plain mean)
    secure_agg: Optional["SecureAgg"] = None
    # heterogeneous client models (fgl_jax.federated.client_models.ClientModels), or None: one model
    client_models: Optional[Any] = None

    def __post_init__(self):
        V.one_of("FedConfig", "algorithm", self.algorithm, ALGORITHMS)
        V.one_of("FedConfig", "eval_mode", self.eval_mode, EVAL_MODES)
        V.one_of("FedConfig", "eval_average", self.eval_average, AVERAGES)
        if self.algorithm in PERSONALISED and self.eval_mode.startswith("global_model"):
            raise ValueError(f"FedConfig: eval_mode={self.eval_mode!r} needs a global model, but algorithm "
                             f"{self.algorithm!r} keeps personal models; use a local_model_* mode or 'auto'")
        V.at_least("FedConfig", "local_steps", self.local_steps, 1)
        V.non_negative("FedConfig", "prox_mu", self.prox_mu)
        V.non_negative("FedConfig", "personal_layers", self.personal_layers)
        check_chunk(self.client_chunk)
        V.non_negative("FedConfig", "dp_clip", self.dp_clip)
        V.non_negative("FedConfig", "dp_noise", self.dp_noise)
        if self.dp_noise > 0 and self.dp_clip <= 0:
            raise ValueError(f"FedConfig: dp_noise={self.dp_noise} needs a clipping norm dp_clip > 0")
        if self.dp_clip > 0 and self.algorithm == "local":
            raise ValueError("FedConfig: dp_clip (DP-FedAvg) has nothing to protect with algorithm 'local', "
                             "which sends nothing")
        if self.aggregator is not None:
            if not isinstance(self.aggregator, aggregators.Aggregator) or self.aggregator.kind != "reduce":
                raise ValueError(f"FedConfig: aggregator must be an fgl_jax.aggregators.Aggregator of kind 'reduce', "
                                 f"got {getattr(self.aggregator, 'kind', type(self.aggregator).__name__)!r}")
            if self.dp_clip > 0:
                raise ValueError("FedConfig: aggregator and dp_clip both replace the mean; chain the DP stages "
                                 "(aggregators.clip, gaussian_noise) around your own reduction instead")
        if self.secure_agg is not None:
            if not isinstance(self.secure_agg, SecureAgg):
                raise ValueError(f"FedConfig: secure_agg must be a SecureAgg, got {type(self.secure_agg).__name__}")
            if self.aggregator is not None:
                raise ValueError("FedConfig: aggregator and secure_agg both replace the mean; use "
                                 "aggregators.secure_mean inside your own chain instead")
            if self.algorithm == "local":
                raise ValueError("FedConfig: secure_agg has nothing to aggregate with algorithm 'local'")
        for stage in self.upload_stages:
            if not isinstance(stage, aggregators.Aggregator) or stage.kind != "per_client":
                raise ValueError(f"FedConfig: upload_stages must be fgl_jax.aggregators.Aggregator of kind "
                                 f"'per_client', got {getattr(stage, 'kind', type(stage).__name__)!r}")
        if self.server_opt is not None:
            aggregators.transformation(self.server_opt)  # a TypeError names a wrong object now
            if self.algorithm == "local":
                raise ValueError("FedConfig: server_opt has no aggregate to step with algorithm 'local', which "
                                 "sends nothing")


def server_aggregator(cfg: FedConfig, server_optimizer: Optional[optax.GradientTransformation] = None
                      ) -> aggregators.Aggregator:
    """The server step of the run (an `Aggregator` of kind "reduce"): `cfg.aggregator` if set, else
    `dp_fedavg(dp_clip, dp_noise)` when cfg.dp_clip > 0, else the weighted `mean()` (an algorithm
    that averages uniformly passes weights of ones); then `server_optimizer` (an algorithm's own,
    e.g. FedAdam's) or the run's `server_opt`, if any. Both at once are refused: one server optimiser.
    `cfg.upload_stages` (e.g. an attack) come first, before any of these."""
    if server_optimizer is not None and cfg.server_opt is not None:
        raise ValueError(f"FedConfig: server_opt={type(cfg.server_opt).__name__} given to an algorithm that "
                         "applies its own server optimiser (fedavgm, fedadam, fedyogi); use fedavg with server_opt")
    if cfg.aggregator is not None:
        stages = [cfg.aggregator]
    elif cfg.dp_clip > 0:
        reduce = cfg.secure_agg.mean("uniform") if cfg.secure_agg is not None else None
        # the noise stage even at z = 0: z is a traced Knobs value a sweep may set > 0 in this program
        stages = [aggregators.dp_fedavg(cfg.dp_clip, cfg.dp_noise, reduce, traced=True)]
    else:
        stages = [cfg.secure_agg.mean() if cfg.secure_agg is not None else aggregators.mean()]
    stages = [*cfg.upload_stages, *stages]
    if server_optimizer is None and cfg.server_opt is not None:
        server_optimizer = aggregators.transformation(cfg.server_opt)
    if server_optimizer is not None:
        stages.append(aggregators.server_optimizer(server_optimizer))
    return aggregators.chain(*stages)
