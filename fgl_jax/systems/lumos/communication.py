"""Lumos's communication (spec A12): bytes per epoch and before training, from the simulation's arrays.

The simulation runs every device's tree as one union graph with one full-batch step; the
messages a deployment exchanges are derived here from that program's shapes and dtypes (the
tree GNN's output width and dtype by tracing the model, the parameter tree by tracing `init`,
the (tree owner, leaf vertex) pairs of `trees.TreeMeta`), nothing is run.

Per epoch, device to device (`comm_p2p_bytes`, paper §VI-B/C):
  * POOL forward: for every neighbour leaf (pair p: device pair_dst[p] holds a leaf of vertex
    pair_src[p]) the tree's owner sends that leaf's layer-l embedding [H] to device pair_src[p];
  * POOL backward: the loss gradient of that embedding [H] goes back (the paper does not describe
    the backward pass; the exact full-batch gradient the simulation takes needs it);
  * link task: for every training pair (u, v) (the positives v in N_u and as many negatives) u
    fetches h_v [H] from device v and returns dL/dh_v [H].
Per epoch, device and server (`comm_up/down_bytes*`, through `FederatedAlgorithm.messages`): every
device uploads its share of the gradient of the shared parameters and its loss value and downloads
the summed gradient, so that all devices take the same Adam step (the paper: losses are aggregated
and all devices update the same shared weights; how is not said). The evaluation pass the
simulation adds for its metrics is not counted.

Before training (`describe.pre_training_communication`):
  * the one-bit LDP features (Module B1): for every pair p, device pair_src[p] sends its recovered
    x'' [d] to device pair_dst[p], a dense row of the feature table's dtype as the simulation
    holds it (only the recipient's bin carries information: a deployment could send |bin| bits);
  * the secure comparisons of the tree construction (greedy Alg. 1, and Alg. 3 / Eq. 18 of the
    MCMC when `mcmc_argmax="alg3"`): their number and input bits only; CrypTFlow2's traffic per
    comparison, Alg. 3's candidate bits to the server and the MCMC's moved branches are not
    modelled.
"""
from __future__ import annotations

import jax
import numpy as np

from fgl_jax.federated.algorithm import FederatedAlgorithm
from fgl_jax.federated.communication import per_round_columns
from fgl_jax.systems.lumos.trees import TreeMeta


def traced_specs(algorithm: FederatedAlgorithm, model, data) -> tuple[jax.ShapeDtypeStruct, jax.ShapeDtypeStruct]:
    """(embedding [N, H], feature table [N + P + 1, d]) shapes and dtypes of the program, by tracing
    `init` and `model.apply(params, table, trees) -> (h, logits)` (the pooled h has a leaf's
    layer-l width and dtype: POOL is a mean)."""
    state = jax.eval_shape(algorithm.init, jax.eval_shape(jax.random.key, 0), data)
    table = state.table if data.table is None else data.table
    h, _ = jax.eval_shape(lambda p, t: model.apply(p, t, data.trees), state.params, table)
    return h, jax.ShapeDtypeStruct(table.shape, table.dtype)


def p2p_bytes(meta: TreeMeta, emb: jax.ShapeDtypeStruct, pos=None) -> dict:
    """Device-to-device bytes of one epoch.

    meta: the trees' (owner, leaf vertex) pairs; emb: the [N, H] embedding spec; pos: int [Q, 2]
    the link task's positive pairs (u, v) (as many negatives (u, v') are drawn), None in the node
    task. Returns {"total", "sent" int64 [N], "received" int64 [N]}. Per device: the POOL
    messages and the positives both ways, the negatives on u's side; a negative's v' is drawn
    every epoch, so its side (h_v' sent, dL/dh_v' received) is in "total" only.
    """
    n = meta.num_vertices
    row = int(emb.shape[-1]) * np.dtype(emb.dtype).itemsize
    held = np.bincount(meta.pair_dst, minlength=n).astype(np.int64)    # leaves a device holds of others
    copies = np.bincount(meta.pair_src, minlength=n).astype(np.int64)  # its copies in other trees
    # forward: owner -> vertex (held sent, copies received); backward: vertex -> owner
    sent = received = (held + copies) * row
    total = 2 * int(meta.pair_dst.size) * row
    if pos is not None:
        pos = np.asarray(pos)
        u = np.bincount(pos[:, 0], minlength=n).astype(np.int64)
        v = np.bincount(pos[:, 1], minlength=n).astype(np.int64)
        # positive (u, v): v sends h_v, u returns dL/dh_v; negative (u, v'): u gets h_v', returns dL/dh_v'
        sent = sent + (v + 2 * u) * row
        received = received + (2 * u + v) * row
        total += 2 * 2 * int(pos.shape[0]) * row
    return {"total": int(total), "sent": sent, "received": received}


def epoch_columns(algorithm: FederatedAlgorithm, data, devices: int, rounds: int, meta: TreeMeta,
                  emb: jax.ShapeDtypeStruct, task: str) -> tuple[dict, dict]:
    """(metrics.jsonl columns, per-device summary for describe).

    Columns [rounds]: the server columns of `per_round_columns` (every device takes part) and
    `comm_p2p_bytes`, the epoch's device-to-device total. Summary: the p2p bytes one device sends
    and receives per epoch, mean and max over devices."""
    p2p = p2p_bytes(meta, emb, np.asarray(data.pos) if task == "link" else None)
    sent, received = p2p["sent"], p2p["received"]
    cols = per_round_columns(algorithm, data, devices, rounds)
    cols["comm_p2p_bytes"] = np.full(rounds, p2p["total"], np.int64)
    per_device = {"p2p_bytes_per_epoch": p2p["total"],
                  "p2p_sent_bytes_mean": float(sent.mean()), "p2p_sent_bytes_max": int(sent.max(initial=0)),
                  "p2p_received_bytes_mean": float(received.mean()),
                  "p2p_received_bytes_max": int(received.max(initial=0)),
                  "embedding_width": int(emb.shape[-1]), "embedding_dtype": str(np.dtype(emb.dtype))}
    return cols, per_device


def pre_training_bytes(meta: TreeMeta, table: jax.ShapeDtypeStruct, info: dict, mcmc_counted: bool) -> dict:
    """The one-off exchanges. LDP features: a row [d] of the table per pair, device to device, so
    up_bytes (what devices send) = down_bytes (what they receive). Secure comparisons of the tree
    construction: counts and input bits (`data.select_neighbours`' info); the MCMC's are counted
    only when it simulates Alg. 3 (`mcmc_counted`, mcmc_argmax="alg3")."""
    row = int(np.prod(table.shape[1:])) * np.dtype(table.dtype).itemsize
    b = int(meta.pair_src.size) * row
    per = np.bincount(meta.pair_src, minlength=meta.num_vertices).astype(np.int64) * row
    keys = ("greedy",) + (("mcmc",) if mcmc_counted else ())
    return {"up_bytes": b, "down_bytes": b, "ldp_feature_bytes_per_device_max": int(per.max(initial=0)),
            "secure_comparisons": sum(int(info.get(f"{k}_comparisons", 0)) for k in keys),
            "secure_comparison_input_bits": sum(int(info.get(f"{k}_comparison_bits", 0)) for k in keys),
            "mcmc_comparisons_counted": bool(mcmc_counted)}
