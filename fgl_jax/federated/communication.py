"""Communication accounting: bytes each participating client uploads and downloads per round.

Each algorithm declares what one participating client sends and receives in a round as pytrees
of its state (`FederatedAlgorithm.messages(state) -> (upload, download)`: FedAvg the model both
ways, SCAFFOLD the model and a control variate, FedProto class prototypes and counts, ...). The
sizes come from those arrays' shapes and dtypes (`jax.eval_shape`, nothing is run), so they follow
the model, the hidden width and the dtype without hand constants. A round moves `participants`
times each client's bytes; clients outside the round's sample send and receive nothing.
"""
from __future__ import annotations

from typing import Any, Optional

import jax
import numpy as np

from fgl_jax.federated.algorithm import FederatedAlgorithm

PyTree = Any


def tree_bytes(tree: PyTree) -> int:
    """Bytes of every array leaf of `tree` (arrays or ShapeDtypeStructs): sum prod(shape) * itemsize."""
    return int(sum(int(np.prod(x.shape, dtype=np.int64)) * np.dtype(x.dtype).itemsize
                   for x in jax.tree.leaves(tree)))


def message_bytes(algorithm: FederatedAlgorithm, data: Any) -> Optional[tuple[int, int]]:
    """(upload, download) bytes of one participating client in one round.

    Shapes only: the state is traced with `jax.eval_shape`, nothing is compiled or run.

    Args:
        algorithm: the algorithm; its `messages(state) -> (upload, download)` describes one client's
            messages.
        data: the algorithm's data (`FedData`).

    Returns:
        `(upload_bytes, download_bytes)`, or None when the algorithm does not describe its messages.
    """
    if algorithm.messages is None:
        return None
    state = jax.eval_shape(algorithm.init, jax.eval_shape(jax.random.key, 0), data)  # traced, never compiled
    up, down = jax.eval_shape(algorithm.messages, state)
    return tree_bytes(up), tree_bytes(down)


def per_round_bytes(algorithm: FederatedAlgorithm, data: Any, participants: int, rounds: int) -> dict:
    """The metrics.jsonl columns of the accounting, each an int64 array [rounds]:
    comm_up_bytes_per_client, comm_down_bytes_per_client, comm_up_bytes, comm_down_bytes (round
    totals over the `participants` clients that take part). {} when the algorithm has no description."""
    sizes = message_bytes(algorithm, data)
    if sizes is None:
        return {}
    up, down = sizes
    col = lambda v: np.full(rounds, v, np.int64)
    return {"comm_up_bytes_per_client": col(up), "comm_down_bytes_per_client": col(down),
            "comm_up_bytes": col(up * participants), "comm_down_bytes": col(down * participants)}


def totals(history: dict) -> dict:
    """Sums over the rounds of a history (metric -> values per round) of the accounting's round
    totals: {"communication": {"up_bytes", "down_bytes"}} when it has them, else {} (summary.json,
    the sweep's rows), plus any further round-total column a system adds, comm_<x>_bytes ->
    "<x>_bytes" (HiFGL's secmp_bytes, Lumos's device-to-device p2p_bytes)."""
    if "comm_up_bytes" not in history:
        return {}
    cols = [k for k in history if k.startswith("comm_") and k.endswith("_bytes") and "_per_" not in k]
    return {"communication": {k[len("comm_"):]: int(np.sum(np.asarray(history[k], np.int64))) for k in cols}}


def per_round_columns(algorithm: FederatedAlgorithm, data: Any, participants: int, rounds: int) -> dict:
    """`per_round_bytes` plus the `participants` column [rounds]: what every system's Program puts
    in `per_round` (the baselines add the DP accountant's epsilon)."""
    cols = per_round_bytes(algorithm, data, participants, rounds)
    cols["participants"] = np.full(rounds, participants, np.int64)
    return cols
