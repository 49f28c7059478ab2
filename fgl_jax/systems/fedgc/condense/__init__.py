"""Gradient-matching graph condensation (GCond / DosCond one-step mode, FedGC's federated form).

Modules (pure jitted functions unless noted):
  relay    – relay GNN θ (GCN / SGC), dense form (synthetic side) and block form (client side)
  pge      – structure generator A' = σ((MLP_Φ([x_i‖x_j]) + MLP_Φ([x_j‖x_i]))/2), zero diagonal
  match    – distances (MSE sum, GCond column cosine), per-class synthetic gradients, matching loss
  labels   – Y' by class proportions (GCond count rule; host)
  aggregation – the server's weights n_j(c)/n(c) (or the code's mean over holders)
  blocks   – client per-class computation blocks (host) and per-class gradients (device, vmapped)
  ldp      – the LDP defence baseline: clipped, Laplace-noised client uploads
  reg      – the Reg defence baseline: Nasr et al.'s adversarial membership term in the clients' loss
  server   – alternating Adam updates of X' and Φ on the aggregate
  round    – one round (fresh θ, clients, aggregate, server step); rounds run in fgl_jax.federated.run
"""
from fgl_jax.systems.fedgc.condense.blocks import (ClassBlock, ClientData, aggregated_client_grads, all_client_grads, build_client_data,
                                     client_class_grads, normalized_adjacency)
from fgl_jax.systems.fedgc.condense.round import fed_round
from fgl_jax.systems.fedgc.condense.labels import check_rate, synthetic_class_counts, synthetic_labels
from fgl_jax.systems.fedgc.condense.match import (class_coefficients, class_nll, dist_gcond, dist_mse, matching_loss,
                                    synthetic_class_grads)
from fgl_jax.systems.fedgc.condense.pge import init_pge, pair_logits, pge_adjacency
from fgl_jax.systems.fedgc.condense.relay import init_relay, normalize_dense, relay_block, relay_dense
from fgl_jax.systems.fedgc.condense.server import (CondenseConfig, CondenseState, Condenser, aggregate, aggregation_weights, condensed_graph,
                                     make_condenser)

__all__ = [
    "ClassBlock", "ClientData", "aggregated_client_grads", "aggregation_weights", "CondenseConfig", "CondenseState", "Condenser", "aggregate",
    "all_client_grads", "build_client_data", "check_rate", "class_coefficients", "class_nll",
    "client_class_grads", "condensed_graph", "dist_gcond", "dist_mse", "fed_round",
    "init_pge", "init_relay", "make_condenser", "matching_loss", "normalize_dense", "normalized_adjacency",
    "pair_logits", "pge_adjacency", "relay_block", "relay_dense", "synthetic_class_counts",
    "synthetic_class_grads", "synthetic_labels",
]
