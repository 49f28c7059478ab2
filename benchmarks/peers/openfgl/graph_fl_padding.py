"""How much of fgl_jax's graph-level training batch is padding, in the harness's setting (10 clients,
label skew Dirichlet 0.5, partition and split seed 0, mini-batches of 128 graphs, compare_graph_fl.py's
defaults): node and edge slots of the [C, M] training batch (every client padded to the largest
client's mini-batch count and the largest mini-batch's node / edge budget, and all computed under
vmap) over the real training nodes and edges. Prints JSON.

    FGL_JAX_DATA=/work/shared/data python -m benchmarks.peers.openfgl.graph_fl_padding PROTEINS IMDB-BINARY
"""
from __future__ import annotations

import json
import sys

import numpy as np


def padding(dataset: str) -> dict:
    """Slots, real entries and their ratio for the nodes and edges of the training batch.

    Args:
        dataset: a TU set of the shared data.

    Returns:
        {"train_batch", "graphs_per_client", node and edge slots / real / ratio}.
    """
    from fgl_jax import RunConfig
    from fgl_jax.systems.baseline import prepare
    cfg = RunConfig(dataset=dataset, algorithm="fedavg", task="graph_cls", clients=10, partition="dirichlet",
                    dirichlet_beta=0.5, graph_batch_size=128, hidden=64, dropout=0.5, local_steps=3, rounds=2,
                    eval_mode="local_model_on_local_data", eval_average="client_nodes", split_seed=0, seed=0)
    p = prepare(cfg)
    tb = p.data.train
    out = {"train_batch": p.report["train_batch"], "graphs_per_client": p.report["graphs_per_client"]}
    for what, mask in (("nodes", tb.node_mask), ("edges", tb.edge_mask)):
        real, slots = int(np.asarray(mask).sum()), int(np.prod(mask.shape))
        out[what] = {"slots": slots, "real": real, "slots_per_real": round(slots / real, 2)}
    return out


if __name__ == "__main__":
    print(json.dumps({ds: padding(ds) for ds in sys.argv[1:] or ["PROTEINS"]}))
