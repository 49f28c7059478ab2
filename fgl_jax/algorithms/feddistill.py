"""FedDistill: federated distillation by class-wise mean logits (Jeong, Oh, Kim, Park, Bennis, Kim,
"Communication-Efficient On-Device Machine Learning: Federated Distillation and Augmentation under
Non-IID Private Data", NeurIPS 2018 workshop, arXiv:1811.11479; as PFLlib's FedDistill).

Clients keep their own models (nothing is averaged, so the clients may run different architectures:
`--client-models`) and exchange only per-class mean logits: after its local training client i sends
L_i^k [K, K], the mean logits of its training nodes of class k, with counts n_ik. The server averages
them per class over the clients holding the class (`distill_weights=uniform`, PFLlib's
`logit_aggregation`; `class_counts` weights by n_ik), and each client's next local objective adds a
distillation term towards the global soft label of each node's class:

    loss = CE(logits, y) + lambda * L_KD,
    L_KD = sum_{v train, G^{y_v} exists} CE(softmax(G^{y_v}), logits_v) / n_train,

CE(q, z) = -sum_k q_k log softmax(z)_k, a node whose class has no global logits yet contributing 0
(in the first round there are none: the first round is Local's). Each client is evaluated with its
own model's logits.

This is FedProto's machinery (`fedproto.prototype_algorithm`) with the logits as the representation
and the distillation term as the regulariser. Differences from PFLlib's clientdistill: it collects
the class-wise logits during its local epoch (the logits of the model as it trains); here they are
the trained model's logits on the client's training nodes (as FedProto's prototypes here). The
paper's temperature is 1 (no temperature option).

Graph classification (`--task graph_cls`): the unit is the graph: L_i^k is the mean logits of the
client's training graphs of class k (over all its mini-batches), and L_KD runs over the training
graphs of each local step's mini-batch. graph_reg has no classes: refused.

Server step: logit aggregation (no global model), so it does not go through `fgl_jax.aggregators`;
DP-FedAvg and `--server-opt` are refused.
"""
from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp

from fgl_jax.algorithms.fedproto import PROTO_WEIGHTS, aggregate_prototypes, logits_as_representation, \
    prototype_algorithm
from fgl_jax.federated.config import FedConfig
from fgl_jax.registry import register
from fgl_jax.schema import option


@dataclasses.dataclass(frozen=True)
class FedDistillHParams:
    feddistill_lambda: float = option(1.0, "FedDistill weight lambda of the distillation term", low=0, traced=True)
    distill_weights: str = option("uniform", "how the server averages the clients' class-wise logits: uniform over "
                                  "the clients holding the class (PFLlib), class_counts (by their node counts), "
                                  "openfgl (client sizes, zeros for missing classes)", choices=PROTO_WEIGHTS)


def distillation_loss(logits: jax.Array, y: jax.Array, mask: jax.Array, global_logits: jax.Array,
                      present: jax.Array) -> jax.Array:
    """L_KD of the module docstring.

    Args:
        logits: the client model's logits [N, K] (nodes, or the graphs of one mini-batch).
        y: labels [N].
        mask: training nodes (graphs) [N] (bool).
        global_logits: the server's class-wise logits [K, K] (row k: class k's).
        present: bool [K], class k has global logits.

    Returns:
        The scalar soft-label cross-entropy, summed over the training nodes whose class is present,
        divided by the number of training nodes.
    """
    use = (mask & present[y]).astype(logits.dtype)
    target = jax.nn.softmax(global_logits[y], axis=-1)                       # [N, K]
    ce = -(target * jax.nn.log_softmax(logits, axis=-1)).sum(-1)             # [N]
    return (ce * use).sum() / jnp.maximum(mask.sum(), 1)


@register("algorithm", "feddistill", hparams=FedDistillHParams, tasks=("node_cls", "graph_cls"), hetero=True,
          paper="Jeong, Oh, Kim, Park, Bennis, Kim, NeurIPS 2018 workshop, arXiv:1811.11479 (PFLlib's FedDistill)",
          help="FedDistill: personal models distilled towards the averaged class-wise logits (any architectures)")
def feddistill(model, common: FedConfig, hp: FedDistillHParams):
    def server_update(server, local, counts, data, _hp):
        protos, present = aggregate_prototypes(local, counts, data.train_weight, hp.distill_weights)
        return server, protos, present

    def regulariser(z, logits, y, mask, protos, present, _hp):
        return distillation_loss(logits, y, mask, protos, present)

    return prototype_algorithm(model, common, lam_name="feddistill_lambda", lam=hp.feddistill_lambda,
                               loss_kind="mse", server_update=server_update, represent=logits_as_representation,
                               regulariser=regulariser)
