"""Server optimisers (Reddi et al., ICLR 2021, "Adaptive Federated Optimization"): the server treats
the negated aggregate, g = params - mean (the pseudo-gradient), as a gradient and takes one step of
an optax transformation on it:

    FedAvgM  momentum(hp)   v <- beta v + g,                          w <- w - eta v        (Hsu et al.)
    FedAdam  adam(hp)       optax.adam(eta, b1, b2, eps=tau)
    FedYogi  yogi(hp)       optax's Yogi with m, v started at tau^2, scaled by -eta

Their hyperparameters are the fedavgm / fedadam / fedyogi algorithms' options (those algorithms are
FedAvg with this stage); `fgl-jax run --server-opt momentum|adam|yogi` adds the same stage to any
algorithm that aggregates through `fgl_jax.aggregators`.

Differences from the paper: optax's Adam and Yogi divide m and v by their bias corrections
(1 - b^t), the paper's Algorithm 2 does not; the two agree after a few dozen rounds (b2 = 0.99).
"""
from __future__ import annotations

import dataclasses
from typing import Any, Optional

import jax
import optax

from fgl_jax.aggregators.base import Aggregator
from fgl_jax.schema import option

PyTree = Any


def server_optimizer(tx: optax.GradientTransformation) -> Aggregator:
    """Server stage [...] -> [...]: params + tx(params - mean), or, when the uploads are changes
    (params None), tx(-mean) itself (the change to apply to the server model).

    Args:
        tx: the optax transformation of the server step (e.g. `adam(FedAdamHParams())`).

    Returns:
        An `Aggregator` of kind "server" whose state is `tx`'s state.
    """

    def aggregate(state, agg: PyTree, weights, key, *, params: Optional[PyTree] = None, mask=None):
        if params is None:
            upd, state = tx.update(jax.tree.map(lambda a: -a, agg), state)
            return upd, state
        pseudo_grad = jax.tree.map(lambda s, a: s - a, params, agg)
        upd, state = tx.update(pseudo_grad, state, params)
        return optax.apply_updates(params, upd), state

    return Aggregator(init=tx.init, aggregate=aggregate, kind="server")


@dataclasses.dataclass(frozen=True)
class FedAvgMHParams:
    """FedAvgM's server hyperparameters (the fedavgm algorithm's options).

    Attributes:
        server_lr: the server learning rate eta, > 0.
        server_momentum: the server momentum beta in [0, 1); 0 is plain SGD with a server learning rate.
    """

    server_lr: float = option(1.0, "server learning rate applied to the averaged update", low=0, low_open=True)
    server_momentum: float = option(0.9, "server momentum beta (0 = FedAvg with a server lr)", low=0, high=1,
                                    high_open=True)


@dataclasses.dataclass(frozen=True)
class FedAdamHParams:
    """FedAdam's server hyperparameters (the fedadam algorithm's options).

    Attributes:
        adam_server_lr: the server learning rate eta, > 0.
        adam_beta1: the first-moment decay in [0, 1).
        adam_beta2: the second-moment decay in [0, 1).
        adam_tau: the adaptivity tau (Adam's epsilon), > 0.
    """

    # Reddi et al. tune eta in 10^[-3, 1] and tau in 10^[-7, -1]; 0.01 / 1e-3 sit in their best range
    # for a 2-layer GNN trained with client Adam.
    adam_server_lr: float = option(0.01, "FedAdam server learning rate eta", low=0, low_open=True)
    adam_beta1: float = option(0.9, "FedAdam server first-moment decay beta1", low=0, high=1, high_open=True)
    adam_beta2: float = option(0.99, "FedAdam server second-moment decay beta2", low=0, high=1, high_open=True)
    adam_tau: float = option(1e-3, "FedAdam adaptivity tau (epsilon added to sqrt(v))", low=0, low_open=True)


@dataclasses.dataclass(frozen=True)
class FedYogiHParams:
    """FedYogi's server hyperparameters (the fedyogi algorithm's options).

    Attributes:
        yogi_server_lr: the server learning rate eta, > 0.
        yogi_beta1: the first-moment decay in [0, 1).
        yogi_beta2: the second-moment decay in [0, 1).
        yogi_tau: the adaptivity tau, > 0; both accumulators start at tau^2.
    """

    yogi_server_lr: float = option(0.01, "FedYogi server learning rate eta", low=0, low_open=True)
    yogi_beta1: float = option(0.9, "FedYogi server first-moment decay beta1", low=0, high=1, high_open=True)
    yogi_beta2: float = option(0.99, "FedYogi server second-moment decay beta2", low=0, high=1, high_open=True)
    yogi_tau: float = option(1e-3, "FedYogi adaptivity tau (epsilon added to sqrt(v); v starts at tau^2)",
                             low=0, low_open=True)


def momentum(hp: FedAvgMHParams) -> optax.GradientTransformation:
    """FedAvgM's server step as an optax transformation.

    Args:
        hp: the server learning rate and momentum.

    Returns:
        `optax.sgd(server_lr, momentum=server_momentum)` (no momentum when it is 0).
    """
    return optax.sgd(hp.server_lr, momentum=hp.server_momentum or None)


def adam(hp: FedAdamHParams) -> optax.GradientTransformation:
    """FedAdam's server step as an optax transformation.

    Args:
        hp: eta, beta1, beta2 and tau.

    Returns:
        `optax.adam(eta, b1=beta1, b2=beta2, eps=tau)`.
    """
    return optax.adam(hp.adam_server_lr, b1=hp.adam_beta1, b2=hp.adam_beta2, eps=hp.adam_tau)


def yogi(hp: FedYogiHParams) -> optax.GradientTransformation:
    """FedYogi's server step as an optax transformation.

    Args:
        hp: eta, beta1, beta2 and tau.

    Returns:
        optax's Yogi scaling with both accumulators started at tau^2, then the learning rate eta.
    """
    # optax.yogi with the accumulators started at tau^2 (optax starts both m and v there)
    return optax.chain(optax.scale_by_yogi(hp.yogi_beta1, hp.yogi_beta2, hp.yogi_tau,
                                           initial_accumulator_value=hp.yogi_tau ** 2),
                       optax.scale_by_learning_rate(hp.yogi_server_lr))


# `--server-opt` choice -> (its hyperparameters, the algorithm whose options they are, the transformation)
SERVER_OPTS = {"momentum": (FedAvgMHParams, "fedavgm", momentum),
               "adam": (FedAdamHParams, "fedadam", adam),
               "yogi": (FedYogiHParams, "fedyogi", yogi)}


def transformation(hp) -> optax.GradientTransformation:
    """The optax transformation of a server optimiser's hyperparameters (an instance of one of
    SERVER_OPTS' classes).

    Args:
        hp: a `FedAvgMHParams`, `FedAdamHParams` or `FedYogiHParams`.

    Returns:
        The transformation `momentum`, `adam` or `yogi` builds from it.

    Raises:
        TypeError: `hp` is none of those classes.
    """
    for cls, _, build in SERVER_OPTS.values():
        if isinstance(hp, cls):
            return build(hp)
    raise TypeError(f"not server-optimiser hyperparameters: {type(hp).__name__}")
