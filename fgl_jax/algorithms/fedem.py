"""FedEM (Marfoq, Neglia, Bellet, Kameni & Vidal, NeurIPS 2021, "Federated Multi-Task Learning under a
Mixture of Distributions").

Every client's data is modelled as a mixture of k shared components: the federation learns k models
Theta_1..Theta_k (`fedem_components`), and client i only its mixture weights pi_i [k]. In a round
every training client, from the round's components,

  * E-step: the responsibility of component m for training node j,
        q_j(m) = pi_i(m) exp(-l(Theta_m; x_j, y_j)) / sum_m' pi_i(m') exp(-l(Theta_m'; x_j, y_j)),
    l being the cross-entropy of the component's prediction (evaluation mode, no dropout);
  * M-step: pi_i(m) = mean_j q_j(m) over its training nodes, and every component trained on the
    q-weighted loss sum_j q_j(m) l(Theta_m; x_j, y_j) / n_i (`local_steps` steps of the run's
    optimiser, one optimiser state per component);

and uploads its k trained components; the server averages each through the run's aggregator (one
pytree with a leading [k] axis, so DP-FedAvg, `--server-opt` and client sampling apply). A client
predicts with its mixture, p(y | x) = sum_m pi_i(m) softmax(Theta_m(x)): reported metrics are these
personalised predictions on each client's own nodes (eval_mode auto = local_model_on_local_data, the
one mode available; `val_loss` is the mixture's negative log-likelihood), `train_loss` the
q-weighted loss summed over components at the first step (the EM objective's loss term).

Graph classification (`--task graph_cls`): the unit is the graph. The E-step gives every training
graph of the client (all its mini-batches at once) a responsibility from the graph's cross-entropy
under each component, pi_i is their mean over the client's training graphs, and each component's
local epochs walk the mini-batches in order with the loss sum_g q_g(m) l_g / n_b over the
mini-batch's n_b training graphs (FedAvg's graph loss with weights q). The mixture's prediction is
per graph; the reported metrics are `fgl_jax.federated.graph_task.graph_metrics` of it (with the
per-client spread).

Graph regression (`--task graph_reg`): the likelihood of a graph's target under component m is
Gaussian around the component's prediction with a fixed variance sigma^2 (`fedem_sigma2`),

    q_g(m) = pi_i(m) exp(-(y_g - yhat_m(g))^2 / (2 sigma^2)) / sum_m' (same for m'),

(the normalising 1 / sqrt(2 pi sigma^2) is common to all components and cancels). Each component's
M-step loss is the q-weighted squared error sum_g q_g(m) (y_g - yhat_m(g))^2 / n_b (FedAvg's graph_reg
loss with weights q; sigma^2 would only rescale its gradient, i.e. the learning rate), and a client
predicts the mixture's mean sum_m pi_i(m) yhat_m(g), whose squared error is the reported MSE.

Why a fixed sigma^2 and not one estimated from the M-step's residuals: (1) the paper defines the
component likelihood as exp(-loss) of the task's loss, so the default sigma^2 = 1/2 is exactly the
paper's E-step with the squared error as the loss; (2) an estimated variance per client and component
would come from the few training graphs a client holds, and the mixture likelihood grows without bound
as a component's variance shrinks onto the graphs it already fits (the Gaussian mixture singularity),
so it needs a floor, itself a hyperparameter; (3) a variance shared by all clients would need its own
upload and aggregation. A fixed sigma^2 is a temperature of the E-step in the target's squared units:
large values make the responsibilities uniform (every component trains on every graph), small ones
give hard assignments; it is traced (`state.hp`), so `fgl-jax sweep --grid fedem_sigma2=...` runs the
values in one program. It is unused on classification tasks.

k = 1 is FedAvg. Components are initialised independently (component 0 from the run's key, as
FedAvg's model); pi starts uniform. The authors' code's defaults: k = 3. Differences from the
paper: whole-subgraph batches instead of minibatches.
"""
from __future__ import annotations

import dataclasses
from typing import Any

import flax
import jax
import jax.numpy as jnp
import optax

from fgl_jax.algorithms._common import aggregate, init_params, lr_scale, scatter_clients, stack, take_clients
from fgl_jax.federated.algorithm import FedData, FederatedAlgorithm
from fgl_jax.federated.chunking import map_clients
from fgl_jax.federated.client import local_train, make_optimizer
from fgl_jax.federated.config import FedConfig, server_aggregator
from fgl_jax.federated.metrics import client_counts, summarise
from fgl_jax.federated.evaluation import client_spread
from fgl_jax.federated.graph_task import client_sums, graph_metrics
from fgl_jax.nn.graph import is_graph
from fgl_jax.registry import register
from fgl_jax.schema import option

PyTree = Any


@dataclasses.dataclass(frozen=True)
class FedEMHParams:
    fedem_components: int = option(3, "FedEM k: number of shared component models mixed by each client's "
                                      "own weights (1 = FedAvg)", low=1)
    fedem_sigma2: float = option(0.5, "FedEM on graph_reg: variance sigma^2 of the Gaussian likelihood of a "
                                      "graph's target under each component in the E-step (in the target's squared "
                                      "units; 0.5 = the paper's exp(-squared error)); unused on classification",
                                 low=0, low_open=True, traced=True)


@flax.struct.dataclass
class FedEMState:
    round: jax.Array   # int32 scalar: rounds done
    server: PyTree     # the k shared components, every leaf [k, ...]
    pi: jax.Array      # float32 [C, k]: every client's mixture weights
    opt: PyTree        # optimiser states [C_t, k, ...]: one per training client and component
    hp: dict           # traced: lr, fedem_sigma2
    aggregator: PyTree = None  # the server aggregator's state (`fgl_jax.aggregators`)


@flax.struct.dataclass
class WeightedGraphs:
    """A graph-level client's training stack with one component's responsibilities, walked by
    `local_train` mini-batch by mini-batch as a `GraphBatch` is (`num_minibatches`, `minibatch(i)`,
    `train_mask`).

    Attributes:
        batch: the client's `GraphBatch` stack [M, ...] (or one mini-batch).
        q: float32 [M, G] (or [G]): the responsibility of every graph slot.
    """

    batch: Any
    q: jax.Array

    @property
    def num_minibatches(self) -> int:
        """M (static)."""
        return self.batch.num_minibatches

    @property
    def train_mask(self) -> jax.Array:
        """The training graphs of the held batch."""
        return self.batch.train_mask

    def minibatch(self, i) -> "WeightedGraphs":
        """Mini-batch i with its responsibilities.

        Args:
            i: an int or traced index below M.

        Returns:
            `WeightedGraphs` of one mini-batch ([G]).
        """
        return WeightedGraphs(self.batch.minibatch(i), jax.lax.dynamic_index_in_dim(self.q, i, 0, keepdims=False))


def responsibilities(losses: jax.Array, pi: jax.Array) -> jax.Array:
    """E-step: q [k, N] = softmax over components of log pi [k] - losses [k, N] (per-node losses)."""
    return jax.nn.softmax(jnp.log(pi)[:, None] - losses, axis=0)


def mixture_mean(model, components: PyTree, pi: jax.Array, batch) -> jax.Array:
    """sum_m pi(m) Theta_m(x): a regression mixture's predictive mean [..., G] (one value per graph slot).

    Args:
        model: the graph regressor (`task` graph_reg).
        components: the k components' parameters, every leaf [k, ...].
        pi: float [k], the client's mixture weights.
        batch: the client's `GraphBatch` (one mini-batch [G] or a stack [M, G]).

    Returns:
        float [..., G], the prediction the reported MSE and MAE are of.
    """
    preds = jax.vmap(lambda p: model.apply(p, batch, train=False))(components)          # [k, ..., G]
    return jnp.tensordot(pi, preds, axes=1)


def mixture_log_probs(model, components: PyTree, pi: jax.Array, batch) -> jax.Array:
    """log sum_m pi(m) softmax(Theta_m(x)) [N, classes] of one client's mixture (components [k, ...]);
    for a graph model [..., G, classes], one row per graph slot of the batch."""
    logp = jax.vmap(lambda p: jax.nn.log_softmax(model.apply(p, batch, train=False), -1))(components)
    return jax.nn.logsumexp(logp + jnp.log(pi).reshape((-1,) + (1,) * (logp.ndim - 1)), axis=0)


@register("algorithm", "fedem", tasks=("node_cls", "graph_cls", "graph_reg"), features="ell", hparams=FedEMHParams,
          paper="Marfoq, Neglia, Bellet, Kameni, Vidal, NeurIPS 2021, arXiv:2108.10252",
          help="FedEM: k shared component models, each client's data a mixture of them with its own weights")
def fedem(model, common: FedConfig, hp: FedEMHParams) -> FederatedAlgorithm:
    if common.eval_mode not in ("auto", "local_model_on_local_data"):
        raise ValueError(f"FedEM: eval_mode={common.eval_mode!r} is not available: each client predicts with its "
                         "own mixture of the components; use local_model_on_local_data or auto")
    optimizer = make_optimizer(common.optim, lr=1.0)
    aggregator = server_aggregator(common)
    k = hp.fedem_components
    graphs = is_graph(model)
    regression = getattr(model, "task", None) == "graph_reg"

    def unit_loss(params, batch, key=None):
        """Per-unit loss [N] (nodes; graph slots of the batch flattened for a graph model): the
        cross-entropy, or graph_reg's squared error; with dropout when a key is given (training)."""
        if key is None:
            out = model.apply(params, batch, train=False)
        else:
            out = model.apply(params, batch, train=True, rngs={"dropout": key})
        if regression:
            return (out.reshape(-1) - batch.y.reshape(-1)) ** 2
        return optax.softmax_cross_entropy_with_integer_labels(out.reshape(-1, out.shape[-1]), batch.y.reshape(-1))

    def q_loss(params, bq, key):
        b, q = (bq.batch, bq.q) if graphs else bq   # q [N] / [G]: this component's responsibilities
        m = b.train_mask.reshape(-1).astype(jnp.float32)
        return (unit_loss(params, b, key) * q.reshape(-1) * m).sum() / jnp.maximum(m.sum(), 1.0)

    def init(key: jax.Array, data: FedData) -> FedEMState:
        comps = [init_params(model, key if m == 0 else jax.random.fold_in(key, m), data) for m in range(k)]
        comps = jax.tree.map(lambda *a: jnp.stack(a), *comps)
        return FedEMState(round=jnp.zeros((), jnp.int32), server=comps,
                          pi=jnp.full((data.eval.num_clients, k), 1.0 / k, jnp.float32),
                          opt=stack(jax.vmap(optimizer.init)(comps), data.train.num_clients),
                          hp={"lr": jnp.float32(common.optim.lr), "fedem_sigma2": jnp.float32(hp.fedem_sigma2)},
                          aggregator=aggregator.init(comps))

    def round_fn(state: FedEMState, data: FedData, key: jax.Array):
        ct = data.train.num_clients
        start = stack(state.server, ct)
        opt = jax.vmap(jax.vmap(optimizer.init))(start) if common.reset_optimizer else state.opt
        scale = state.hp["lr"] * lr_scale(common.optim, state.round)
        pi = take_clients(state.pi, data.train_index)

        # the E-step's negative log-likelihood per unit: CE, or the Gaussian's (y - yhat)^2 / (2 sigma^2)
        nll_scale = 0.5 / state.hp["fedem_sigma2"] if regression else 1.0

        def client(comps, o, b, key_i, pi_i):
            q = responsibilities(jax.vmap(lambda p: unit_loss(p, b))(comps) * nll_scale, pi_i)   # E-step [k, N]
            m = b.train_mask.reshape(-1).astype(jnp.float32)
            new_pi = (q * m).sum(1) / jnp.maximum(m.sum(), 1.0)                        # M-step: pi
            keys = key_i[None] if k == 1 else jax.random.split(key_i, k)               # (k = 1: FedAvg's key)
            # graph_cls: q [k, M*G] back on the stack's [M, G] so each mini-batch carries its graphs' q
            wrap = (lambda qm: WeightedGraphs(b, qm.reshape(b.train_mask.shape))) if graphs else (lambda qm: (b, qm))
            train = lambda p, oo, qm, kk: local_train(q_loss, optimizer, common.local_steps, p, oo, wrap(qm),
                                                      kk, scale)
            comps, o, first = jax.vmap(train)(comps, o, q, keys)                      # M-step: components
            return comps, o, new_pi, first.sum()

        new, opt, new_pi, losses = map_clients(client, common.client_chunk)(start, opt, data.train,
                                                                             jax.random.split(key, ct), pi)
        server, agg = aggregate(aggregator, state.aggregator, new, data.train_weight, key, params=state.server)
        pi_all = scatter_clients(state.pi, data.train_index, new_pi)
        if regression:   # the mixture's mean prediction
            one = lambda p, b: client_sums(model, mixture_mean(model, server, p, b), b)
            metrics = graph_metrics(model, map_clients(one, common.client_chunk)(pi_all, data.eval), data.eval,
                                    per_client=True, average=common.eval_average)
        elif graphs:   # the mixture's log-probabilities as the logits of the graph metrics
            one = lambda p, b: client_sums(model, mixture_log_probs(model, server, p, b), b)
            metrics = graph_metrics(model, map_clients(one, common.client_chunk)(pi_all, data.eval), data.eval,
                                    per_client=True, average=common.eval_average)
        else:
            one = lambda p, b: client_counts(mixture_log_probs(model, server, p, b), b.y, b)
            counts = map_clients(one, common.client_chunk)(pi_all, data.eval)
            metrics = summarise(counts, data.eval.client_mask, common.eval_average,
                                data.eval.node_mask.sum(-1).astype(jnp.float32))
            metrics.update(client_spread(counts, data.eval.client_mask))   # each client's own mixture
        metrics["train_loss"] = (losses * data.train_weight).sum() / jnp.maximum(data.train_weight.sum(), 1e-12)
        metrics["lr"] = scale
        return FedEMState(round=state.round + 1, server=server, pi=pi_all, opt=opt, hp=state.hp,
                          aggregator=agg), metrics

    # a client downloads the k components and uploads its k trained ones; pi_i stays on the client
    return FederatedAlgorithm(init=init, round=round_fn, messages=lambda s: (s.server, s.server))
