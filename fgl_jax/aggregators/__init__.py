"""Server aggregation as composable pure functions (optax style): `Aggregator(init, aggregate)`.

    agg = chain(clip(1.0), mean("uniform"), gaussian_noise(0.5, 1.0), server_optimizer(optax.adam(0.01)))
    state = agg.init(params)
    new_params, state = agg.aggregate(state, client_models, weights, key, params=params)

One module per mechanism: `base` (the interface, `chain`), `mean` (weighted / uniform mean),
`dp` (DP-FedAvg's clipping and noise), `server_opt` (FedAvgM / FedAdam / FedYogi's server step),
`secure` (the mean through pairwise-mask secure aggregation), `robust` (median, trimmed mean, Krum,
multi-Krum, Bulyan, norm bounding, geometric median), `attacks` (model-poisoning uploads as a
per-client stage), `knobs` (traced values in a stage's state).
"""
from fgl_jax.aggregators.base import KINDS, Aggregator, chain, stateless
from fgl_jax.aggregators.dp import clip, dp_fedavg, gaussian_noise, private_mean
from fgl_jax.aggregators.knobs import Knobs
from fgl_jax.aggregators.mean import mean, weighted_mean
from fgl_jax.aggregators.secure import secure_mean
from fgl_jax.aggregators.attacks import ATTACKS, attack, attacker_mask
from fgl_jax.aggregators.robust import (ROBUST, bulyan, geometric_median, krum, median, multi_krum, norm_bound,
                                        trimmed_mean, weak_noise)
from fgl_jax.aggregators.server_opt import (SERVER_OPTS, FedAdamHParams, FedAvgMHParams, FedYogiHParams, adam,
                                            momentum, server_optimizer, transformation, yogi)

__all__ = ["KINDS", "Aggregator", "chain", "stateless", "clip", "dp_fedavg", "gaussian_noise", "private_mean", "mean",
           "weighted_mean", "secure_mean", "SERVER_OPTS", "FedAdamHParams", "FedAvgMHParams", "FedYogiHParams", "adam", "momentum",
           "server_optimizer", "transformation", "yogi", "Knobs", "ATTACKS", "attack", "attacker_mask", "ROBUST",
           "bulyan", "geometric_median", "krum", "median", "multi_krum", "norm_bound", "trimmed_mean", "weak_noise"]
