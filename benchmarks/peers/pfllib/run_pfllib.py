"""PFLlib's side of compare.py: one run of PFLlib's own server and client classes (outside CI).

    /work/peers/pfllib-venv/bin/python run_pfllib.py JOB.json OUT.json

Runs in the PFLlib venv (setup.sh), never in fgl_jax's. JOB.json names the arrays compare.py
exported from fgl_jax (plain .npz arrays: the clients' nodes or graphs, their train/test split),
PFLlib's source folder, the algorithm and the hyperparameters in PFLlib's names. This file only
adapts the data and the model to PFLlib's interfaces; training, aggregation and evaluation are
PFLlib's code, unchanged:

- Data: every client's train and test "samples" are written in PFLlib's own dataset layout
  (`<work>/dataset/<name>/{train,test}/<client>.npz`, read by its `utils.data_utils.read_client_data`)
  with x = the sample's index (a node of the client's subgraph, or one of its graphs) and y = its label,
  so PFLlib's DataLoader, shuffling and batching work as for images. Each client's batch size is its
  number of training samples (set on the client objects after PFLlib builds them): one full batch
  per local epoch, fgl_jax's full-batch local step.
- Model: the client's graph data live in this module (`GRAPHS`), not in the model: PFLlib deep-copies
  the model per client (and ALA per round), and what it copies, averages and sends must be the
  parameters only. A batch of indices tells the model whose data it is (indices of client c lie in
  [offset_c, offset_c + size_c)).

Accuracy is PFLlib's: its server's evaluate (or evaluate_personalized for Ditto and pFedMe) at the start
of every round (eval_gap 1), test samples pooled over clients (sum of correct / sum of test samples).
PFLlib trains global_rounds + 1 rounds and evaluates before each; the entry after `rounds` rounds of
training is the reported one, the whole list the per-round curve.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import random
import sys
import time
from pathlib import Path

import numpy as np

GRAPHS: list = []          # per client: its data as tensors (see NodeBody / GraphBody)
OFFSETS: list = []         # first sample index of each client (samples of client c: OFFSETS[c] ...)


def owner(idx) -> int:
    """The client whose samples the index batch holds (all indices of one batch are one client's)."""
    first = int(idx[0])
    return int(np.searchsorted(np.asarray(OFFSETS), first, side="right") - 1)


def build_models(job: dict, torch):
    """(body, head) torch modules equal in architecture to fgl_jax's model of the job."""
    nn = torch.nn

    def glorot(lin):
        nn.init.xavier_uniform_(lin.weight)   # fgl_jax's InputDense / GCN kernels: glorot uniform, zero bias
        return lin

    if job["task"] == "node_cls":
        class NodeBody(nn.Module):
            """GCN layer 0: relu(norm(A_hat (X W0) + b0)) over the client's subgraph; passes on
            (hidden states of all the client's nodes, the batch's local node indices, client)."""

            def __init__(self, in_dim, hidden, norm):
                super().__init__()
                self.lin0 = glorot(nn.Linear(in_dim, hidden, bias=False))
                self.bias0 = nn.Parameter(torch.zeros(hidden))
                # FedBN keeps parameters whose name holds "bn"; batch statistics always (fgl_jax's
                # normalise uses the client's nodes' statistics in training and in evaluation alike)
                self.bn = nn.BatchNorm1d(hidden, track_running_stats=False) if norm == "batch" else None

            def forward(self, x):
                idx = x.long()
                c = owner(idx)
                adj, feats = GRAPHS[c]
                h = torch.sparse.mm(adj, self.lin0(feats)) + self.bias0
                if self.bn is not None:
                    h = self.bn(h)
                return torch.relu(h), idx - OFFSETS[c], c

        class NodeHead(nn.Module):
            """GCN layer 1: A_hat (H W1) + b1, the batch's rows."""

            def __init__(self, hidden, classes):
                super().__init__()
                self.lin1 = glorot(nn.Linear(hidden, classes, bias=False))
                self.bias1 = nn.Parameter(torch.zeros(classes))

            def forward(self, inp):
                h, local, c = inp
                adj, _ = GRAPHS[c]
                return (torch.sparse.mm(adj, self.lin1(h)) + self.bias1)[local]

        return NodeBody(job["in_dim"], job["hidden"], job["norm"]), NodeHead(job["hidden"], job["num_classes"])

    class GraphBody(nn.Module):
        """fgl_jax's GraphClassifier without its last Dense: num_layers GIN-0 layers (neighbour sum +
        self, Linear - ReLU - Linear), [norm,] ReLU, dropout between layers, a mean/sum readout, then
        head_0 = Linear(hidden) - ReLU - dropout. Client c's graphs are one disjoint union
        (features [N, F], adjacency A [N, N] sparse, graph-of-node one-hot P [G, N])."""

        def __init__(self, in_dim, hidden, layers, dropout, pooling, norm):
            super().__init__()
            self.convs = nn.ModuleList()
            for i in range(layers):
                self.convs.append(nn.Sequential(nn.Linear(in_dim if i == 0 else hidden, hidden), nn.ReLU(),
                                                nn.Linear(hidden, hidden)))
            self.bns = nn.ModuleList([nn.BatchNorm1d(hidden, track_running_stats=False) for _ in range(layers)]) \
                if norm == "batch" else None
            self.head_0 = nn.Linear(hidden, hidden)
            self.drop = nn.Dropout(dropout)
            self.pooling = pooling

        def forward(self, x):
            idx = x.long()
            c = owner(idx)
            adj, feats, pool = GRAPHS[c]
            h = feats
            for i, conv in enumerate(self.convs):
                h = self.drop(h) if i > 0 else h
                h = conv(h + torch.sparse.mm(adj, h))
                if self.bns is not None:
                    h = self.bns[i](h)
                h = torch.relu(h)
            # readout of the batch's graphs only (fgl_jax: of the mini-batch's graphs)
            rows = pool.index_select(0, idx - OFFSETS[c])
            g = torch.sparse.mm(rows, h) if rows.is_sparse else rows @ h
            if self.pooling == "mean":
                g = g / rows.sum(1, keepdim=True).to_dense().clamp(min=1.0) if rows.is_sparse else \
                    g / rows.sum(1, keepdim=True).clamp(min=1.0)
            return self.drop(torch.relu(self.head_0(g)))

    return (GraphBody(job["in_dim"], job["hidden"], job["num_layers"], job["dropout"], job["pooling"], job["norm"]),
            nn.Linear(job["hidden"], job["num_classes"]))


def load_clients(job: dict, torch) -> tuple[list, list]:
    """Fill GRAPHS / OFFSETS from the exported arrays; returns per client (train x, y), (test x, y)."""
    arr = np.load(job["arrays"], allow_pickle=False)
    clients = job["clients"]
    train, test, offset = [], [], 0
    for c in range(clients):
        if job["task"] == "node_cls":
            nodes = np.flatnonzero(arr["assignment"] == c)
            pos = -np.ones(len(arr["assignment"]), np.int64)
            pos[nodes] = np.arange(len(nodes))
            s, r = arr["senders"], arr["receivers"]
            keep = (pos[s] >= 0) & (pos[r] >= 0)          # the client's subgraph: cross-client edges dropped
            s, r = pos[s[keep]], pos[r[keep]]
            n = len(nodes)
            # A_hat = D^-1/2 (A + I) D^-1/2, degrees with the self-loop (fgl_jax's gcn propagation)
            rows = np.concatenate([r, np.arange(n)])
            cols = np.concatenate([s, np.arange(n)])
            deg = np.bincount(rows, minlength=n).astype(np.float32)
            val = (deg[rows] ** -0.5) * (deg[cols] ** -0.5)
            adj = torch.sparse_coo_tensor(np.stack([rows, cols]), val.astype(np.float32), (n, n)).coalesce()
            GRAPHS.append((adj, torch.tensor(arr["x"][nodes], dtype=torch.float32)))
            y = arr["y"][nodes]
            masks = arr["train_mask"][nodes], arr["test_mask"][nodes]
        else:
            graphs = np.flatnonzero(arr["assignment"] == c)
            node_ptr = arr["node_ptr"]
            edge_ptr = arr["edge_ptr"]
            xs, ss, rs, gid, base = [], [], [], [], 0
            for j, g in enumerate(graphs):
                a, b = node_ptr[g], node_ptr[g + 1]
                xs.append(arr["node_x"][a:b])
                e0, e1 = edge_ptr[g], edge_ptr[g + 1]
                ss.append(arr["edge_s"][e0:e1] - a + base)     # rows of the whole set -> of the union
                rs.append(arr["edge_r"][e0:e1] - a + base)
                gid.append(np.full(b - a, j))
                base += b - a
            n = base
            s, r, gid = np.concatenate(ss), np.concatenate(rs), np.concatenate(gid)
            adj = torch.sparse_coo_tensor(np.stack([r, s]), np.ones(len(s), np.float32), (n, n)).coalesce()
            pool = torch.zeros(len(graphs), n)
            pool[torch.tensor(gid), torch.arange(n)] = 1.0
            GRAPHS.append((adj, torch.tensor(np.concatenate(xs), dtype=torch.float32), pool))
            nodes = graphs
            y = arr["y"][graphs]
            masks = arr["train_mask"][graphs], arr["test_mask"][graphs]
        OFFSETS.append(offset)
        local = np.arange(len(nodes))
        train.append((offset + local[masks[0]], y[masks[0]]))
        test.append((offset + local[masks[1]], y[masks[1]]))
        offset += len(nodes)
    return train, test


def write_pfllib_dataset(root: Path, name: str, train: list, test: list) -> None:
    """PFLlib's layout: <root>/<name>/train/<c>.npz and test/<c>.npz, each {"data": {"x", "y"}}
    (what its read_data loads)."""
    for split, parts in (("train", train), ("test", test)):
        d = root / name / split
        d.mkdir(parents=True, exist_ok=True)
        for c, (x, y) in enumerate(parts):
            with open(d / f"{c}.npz", "wb") as f:
                np.savez_compressed(f, data={"x": x.astype(np.float32), "y": y.astype(np.int64)})


# PFLlib's main.py argument defaults for every field its Server/Client base classes and the six
# algorithms read; the job's values override them
ARG_DEFAULTS = dict(goal="compare", device="cpu", device_id="0", num_classes=10, batch_size=10,
                    local_learning_rate=0.005, learning_rate_decay=False, learning_rate_decay_gamma=0.99,
                    global_rounds=2000, top_cnt=100, local_epochs=1, join_ratio=1.0, random_join_ratio=False,
                    num_clients=20, prev=0, times=1, eval_gap=1, save_folder_name="items", auto_break=False,
                    dlg_eval=False, dlg_gap=100, batch_num_per_client=2, num_new_clients=0,
                    fine_tuning_epoch_new=0, few_shot=0, client_drop_rate=0.0, train_slow_rate=0.0,
                    send_slow_rate=0.0, time_select=False, time_threthold=10000, beta=0.0, lamda=1.0, mu=0.0,
                    p_learning_rate=0.01, K=5, alpha=1.0, plocal_epochs=1, eta=1.0, rand_percent=80, layer_idx=2)

SERVERS = {"Ditto": ("serverditto", "Ditto"), "FedRep": ("serverrep", "FedRep"), "APFL": ("serverapfl", "APFL"),
           "pFedMe": ("serverpFedMe", "pFedMe"), "FedALA": ("serverala", "FedALA"), "FedBN": ("serverbn", "FedBN")}


def main() -> None:
    p = argparse.ArgumentParser(description="one PFLlib run of a compare.py job")
    p.add_argument("job")
    p.add_argument("out")
    a = p.parse_args()
    job = json.loads(Path(a.job).read_text())
    import torch
    torch.set_num_threads(job.get("threads", 1) or torch.get_num_threads())
    src = Path(job["pfllib_src"]) / "system"
    sys.path.insert(0, str(src))
    import importlib
    from flcore.trainmodel.models import BaseHeadSplit

    work = Path(job["work"])
    train, test = load_clients(job, torch)
    write_pfllib_dataset(work / "dataset", job["name"], train, test)
    run_dir = work / "system"          # PFLlib reads ../dataset and writes ../results from its cwd
    run_dir.mkdir(parents=True, exist_ok=True)
    os.chdir(run_dir)

    seed = job["seed"]
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    body, head = build_models(job, torch)
    args = argparse.Namespace(**{**ARG_DEFAULTS, **job["pfllib_args"]})
    args.model = BaseHeadSplit(body, head)
    args.head = head
    mod, cls = SERVERS[args.algorithm]
    server_cls = getattr(importlib.import_module(f"flcore.servers.{mod}"), cls)
    log = io.StringIO()
    with contextlib.redirect_stdout(log):
        server = server_cls(args, 0)
        for client in server.clients:   # one full batch of the client's training samples per epoch
            client.batch_size = client.train_samples
            if hasattr(client, "ALA"):
                client.ALA.batch_size = client.train_samples
        c0, t0 = time.process_time(), time.perf_counter()
        server.train()
        cpu, wall = time.process_time() - c0, time.perf_counter() - t0
    if args.algorithm == "pFedMe":
        curve = list(server.rs_test_acc_per)
    elif args.algorithm == "Ditto":       # evaluate() then evaluate_personalized() append in turn
        curve = list(server.rs_test_acc[1::2])
    else:
        curve = list(server.rs_test_acc)
    iterations = args.global_rounds + 1
    rounds = job["rounds"]
    out = {"test_acc": float(curve[rounds]), "curve": [float(v) for v in curve],
           "rounds_trained": iterations, "ms_per_round": 1000.0 * float(np.mean(server.Budget[1:])),
           "wall_ms_per_round_all": 1000.0 * wall / iterations, "cpu_ms_per_round": 1000.0 * cpu / iterations,
           "torch": torch.__version__, "torch_threads": torch.get_num_threads(),
           "pfllib_commit": (Path(job["pfllib_src"]) / "COMMIT").read_text().strip(),
           "train_samples": [int(len(t[0])) for t in train], "test_samples": [int(len(t[0])) for t in test]}
    if args.algorithm == "Ditto":
        out["global_curve"] = [float(v) for v in server.rs_test_acc[0::2]]
    (work / "pfllib_stdout.log").write_text(log.getvalue())
    Path(a.out).write_text(json.dumps(out))


if __name__ == "__main__":
    main()
