"""The PyTorch Geometric side of `byog_check.py` (runs in benchmarks/peers/pyg/.venv, imports no fgl_jax).

Reads the GNN-benchmark .npz itself (CSR adjacency and attributes, labels) and takes from fgl_jax only
the split masks and the Louvain assignment (split.npz), so both sides train on the same nodes:

  fedavg:      10 clients = the Louvain assignment; each client holds its induced subgraph (cross-client
               edges dropped); 2-layer GCNConv (A + I, symmetric normalisation), hidden 64, ReLU, no
               dropout; every round each client starts from the global model and takes `local_steps`
               Adam steps (lr 0.01, its own Adam state kept across rounds) on the mean cross-entropy of its
               training nodes; the server averages weighted by training nodes; after each round the global
               model is evaluated on every client's subgraph, pooled over clients.
  centralised: the same GCN on the whole graph (no edge lost: what HiFGL's secure message passing
               computes), Adam lr 0.01 x0.9 every 4 epochs, one full-batch step per epoch.

Both report the test accuracy at the first round/epoch of best validation accuracy, and the last one.

    python pyg_side.py GRAPH.npz SPLIT.npz --seeds 0,1,2 --rounds 50
prints one JSON line.
"""
from __future__ import annotations

import argparse
import copy
import json

import numpy as np
import scipy.sparse as sp
import torch
import torch.nn.functional as F
from torch_geometric.nn import GCNConv
from torch_geometric.utils import subgraph, to_undirected


class GCN(torch.nn.Module):
    def __init__(self, f: int, hidden: int, c: int):
        super().__init__()
        self.c1, self.c2 = GCNConv(f, hidden), GCNConv(hidden, c)

    def forward(self, x, ei):
        return self.c2(F.relu(self.c1(x, ei)), ei)


def read_benchmark_npz(path: str):
    z = np.load(path, allow_pickle=False)
    adj = sp.csr_matrix((z["adj_data"], z["adj_indices"], z["adj_indptr"]), shape=tuple(z["adj_shape"]))
    if "attr_matrix" in z:
        x = np.asarray(z["attr_matrix"], np.float32)
    else:
        x = sp.csr_matrix((z["attr_data"], z["attr_indices"], z["attr_indptr"]),
                          shape=tuple(z["attr_shape"])).toarray().astype(np.float32)
    coo = adj.tocoo()
    keep = coo.row != coo.col
    ei = to_undirected(torch.tensor(np.stack([coo.row[keep], coo.col[keep]]), dtype=torch.long))
    return ei, torch.tensor(x), torch.tensor(np.asarray(z["labels"]), dtype=torch.long)


def accuracy(logits, y, mask):
    return float((logits[mask].argmax(1) == y[mask]).float().mean()) if mask.any() else float("nan")


def fedavg(ei, x, y, masks, assign, seed, rounds, local_steps, lr, hidden):
    torch.manual_seed(seed)
    k = int(assign.max()) + 1
    tr, va, te = masks
    clients = []
    for c in range(k):
        nodes = torch.tensor(np.flatnonzero(assign == c), dtype=torch.long)
        sub, _ = subgraph(nodes, ei, relabel_nodes=True, num_nodes=x.shape[0])
        clients.append((nodes, sub))
    glob = GCN(x.shape[1], hidden, int(y.max()) + 1)
    models = [copy.deepcopy(glob) for _ in range(k)]
    opts = [torch.optim.Adam(m.parameters(), lr=lr) for m in models]
    weights = torch.tensor([float(tr[n].sum()) for n, _ in clients])
    hist = []
    for _ in range(rounds):
        states = []
        for (nodes, sub), m, opt in zip(clients, models, opts):
            m.load_state_dict(glob.state_dict())
            m.train()
            for _ in range(local_steps):
                opt.zero_grad()
                out = m(x[nodes], sub)
                t = tr[nodes]
                loss = F.cross_entropy(out[t], y[nodes][t]) if t.any() else out.sum() * 0
                loss.backward()
                opt.step()
            states.append(m.state_dict())
        w = weights / weights.sum()
        glob.load_state_dict({key: sum(wi * s[key] for wi, s in zip(w, states)) for key in states[0]})
        glob.eval()
        with torch.no_grad():
            correct = {"val": 0, "test": 0}
            total = {"val": 0, "test": 0}
            for nodes, sub in clients:
                pred = glob(x[nodes], sub).argmax(1)
                for name, mask in (("val", va), ("test", te)):
                    mk = mask[nodes]
                    correct[name] += int((pred[mk] == y[nodes][mk]).sum())
                    total[name] += int(mk.sum())
        hist.append((correct["val"] / total["val"], correct["test"] / total["test"]))
    return hist


def centralised(ei, x, y, masks, seed, rounds, lr, hidden, gamma=0.9, every=4):
    torch.manual_seed(seed)
    tr, va, te = masks
    m = GCN(x.shape[1], hidden, int(y.max()) + 1)
    opt = torch.optim.Adam(m.parameters(), lr=lr)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=every, gamma=gamma)
    hist = []
    for _ in range(rounds):
        m.train()
        opt.zero_grad()
        F.cross_entropy(m(x, ei)[tr], y[tr]).backward()
        opt.step()
        sched.step()
        m.eval()
        with torch.no_grad():
            out = m(x, ei)
        hist.append((accuracy(out, y, va), accuracy(out, y, te)))
    return hist


def reported(hist):
    v = np.array([h[0] for h in hist])
    i = int(np.argmax(v))
    return {"best_round": i + 1, "best_val": float(v[i]), "test_at_best_val": float(hist[i][1]),
            "final_test": float(hist[-1][1])}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("graph")
    ap.add_argument("split")
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--rounds", type=int, default=50)
    ap.add_argument("--hifgl-rounds", type=int, default=50)
    ap.add_argument("--local-steps", type=int, default=1)
    ap.add_argument("--lr", type=float, default=0.01)
    ap.add_argument("--hidden", type=int, default=64)
    args = ap.parse_args()
    torch.set_num_threads(1)
    ei, x, y = read_benchmark_npz(args.graph)
    s = np.load(args.split)
    masks = tuple(torch.tensor(s[k]) for k in ("train_mask", "val_mask", "test_mask"))
    # the same graph on both sides: fgl_jax's loaded edge count and labels against this reading
    assert int(s["num_directed_edges"]) == ei.shape[1], (int(s["num_directed_edges"]), ei.shape[1])
    assert (torch.tensor(s["y"]) == y).all()
    seeds = [int(v) for v in args.seeds.split(",")]
    out = {"torch": torch.__version__, "edges_directed": int(ei.shape[1]), "fedavg": [], "centralised": []}
    for seed in seeds:
        out["fedavg"].append(reported(fedavg(ei, x, y, masks, s["louvain"], seed, args.rounds, args.local_steps,
                                             args.lr, args.hidden)))
        out["centralised"].append(reported(centralised(ei, x, y, masks, seed, args.hifgl_rounds, args.lr,
                                                       args.hidden)))
    import torch_geometric
    out["torch_geometric"] = torch_geometric.__version__
    print(json.dumps(out))


if __name__ == "__main__":
    main()
