"""Checks OpenFGL 1.1.0's own link-prediction split (runs in OpenFGL's venv, never imports fgl_jax):
which edges its encoder's message-passing graph (`forward_data`) holds, against the validation and
test positives it evaluates on. Prints one JSON line.

    python openfgl_linkpred_split.py [NUM_NODES] [SEED]

A random undirected graph (NUM_NODES nodes, 4 x NUM_NODES draws, self-loops removed) goes through
LinkPredTask.local_subgraph_train_val_test_split with its default 0.8/0.1/0.1 fractions.
"""
import json
import sys
import types

import numpy as np
import torch
from torch_geometric.data import Data
from torch_geometric.utils import to_undirected

from openfgl.task.link_pred import LinkPredTask


def main(n: int = 200, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    s, r = rng.integers(0, n, 4 * n), rng.integers(0, n, 4 * n)
    keep = s != r
    ei = to_undirected(torch.tensor(np.stack([s[keep], r[keep]])))
    data = Data(x=torch.randn(n, 4), edge_index=ei, y=torch.zeros(n, dtype=torch.long))
    np.random.seed(seed)   # OpenFGL samples with numpy's global RNG
    task = types.SimpleNamespace(default_train_val_test_split=(0.8, 0.1, 0.1))
    fwd, idx, lab, tr, va, te = LinkPredTask.local_subgraph_train_val_test_split(task, data, "default_split")
    und = lambda pairs: {(min(a, b), max(a, b)) for a, b in pairs}
    forward = und(fwd.edge_index.T.tolist())
    pos = lambda m: und(p for p, l, k in zip(idx.T.tolist(), lab.tolist(), m.tolist()) if k and l == 1)
    held = pos(va) | pos(te)
    return {"nodes": n, "seed": seed, "undirected_edges": ei.shape[1] // 2, "forward_graph_edges": len(forward),
            "val_test_positives": len(held), "val_test_positives_in_forward_graph": len(held & forward),
            "train_positives": len(pos(tr)), "train_positives_missing_from_forward_graph": len(pos(tr) - forward)}


if __name__ == "__main__":
    print(json.dumps(main(*(int(a) for a in sys.argv[1:3]))))
