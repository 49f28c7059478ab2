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
import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import exchange  # noqa: E402  (benchmarks/peers/exchange.py, shared by the peers; NumPy only)

GRAPHS: list = []          # per client: its data as tensors (see NodeBody / GraphBody)
OFFSETS: list = []         # first sample index of each client (samples of client c: OFFSETS[c] ...)


def owner(idx) -> int:
    """The client whose samples the index batch holds (all indices of one batch are one client's)."""
    first = int(idx[0])
    return int(np.searchsorted(np.asarray(OFFSETS), first, side="right") - 1)


def glorot(lin):
    """fgl_jax's kernels: glorot uniform (biases zero)."""
    nn.init.xavier_uniform_(lin.weight)
    return lin


def lecun(lin):
    """flax's nn.Dense initialisation (GraphClassifier's layers): truncated-normal lecun kernel, zero bias."""
    std = (1.0 / lin.in_features) ** 0.5 / 0.87962566103423978   # flax: unit variance after the truncation
    nn.init.trunc_normal_(lin.weight, std=std, a=-2 * std, b=2 * std)
    nn.init.zeros_(lin.bias)
    return lin


class NodeBody(nn.Module):
    """GCN layer 0: relu(norm(A_hat (X W0) + b0)) over the client's subgraph; passes on (hidden states
    of all the client's nodes [n_c, hidden], the batch's local node indices [B], client)."""

    def __init__(self, in_dim: int, hidden: int, norm: str):
        super().__init__()
        self.lin0 = glorot(nn.Linear(in_dim, hidden, bias=False))
        self.bias0 = nn.Parameter(torch.zeros(hidden))
        # FedBN keeps parameters whose name holds "bn"; batch statistics always (fgl_jax's normalise
        # uses the client's nodes' statistics in training and in evaluation alike)
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
    """GCN layer 1: A_hat (H W1) + b1, the batch's rows [B, classes]."""

    def __init__(self, hidden: int, classes: int):
        super().__init__()
        self.lin1 = glorot(nn.Linear(hidden, classes, bias=False))
        self.bias1 = nn.Parameter(torch.zeros(classes))

    def forward(self, inp):
        h, local, c = inp
        adj, _ = GRAPHS[c]
        return (torch.sparse.mm(adj, self.lin1(h)) + self.bias1)[local]


class GraphBody(nn.Module):
    """fgl_jax's GraphClassifier without its last Dense: num_layers GIN-0 layers (neighbour sum + self,
    Linear - ReLU - Linear), [norm,] ReLU, dropout between layers, a mean/sum readout of the batch's
    graphs, then head_0 = Linear(hidden) - ReLU - dropout. Client c's graphs are one disjoint union
    (adjacency A [N, N] sparse, features [N, F], graph-of-node one-hot P [G_c, N])."""

    def __init__(self, in_dim: int, hidden: int, layers: int, dropout: float, pooling: str, norm: str):
        super().__init__()
        self.convs = nn.ModuleList([nn.Sequential(lecun(nn.Linear(in_dim if i == 0 else hidden, hidden)), nn.ReLU(),
                                                  lecun(nn.Linear(hidden, hidden))) for i in range(layers)])
        self.bns = nn.ModuleList([nn.BatchNorm1d(hidden, track_running_stats=False) for _ in range(layers)]) \
            if norm == "batch" else None
        self.head_0 = lecun(nn.Linear(hidden, hidden))
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
        rows = pool[idx - OFFSETS[c]]                    # [B, N]: the batch's graphs only
        g = rows @ h
        if self.pooling == "mean":
            g = g / rows.sum(1, keepdim=True).clamp(min=1.0)
        return self.drop(torch.relu(self.head_0(g)))


def build_models(job: dict):
    """(body, head): torch modules equal in architecture to fgl_jax's model of the job."""
    if job["task"] == "node_cls":
        return NodeBody(job["in_dim"], job["hidden"], job["norm"]), NodeHead(job["hidden"], job["num_classes"])
    return (GraphBody(job["in_dim"], job["hidden"], job["num_layers"], job["dropout"], job["pooling"], job["norm"]),
            lecun(nn.Linear(job["hidden"], job["num_classes"])))


def load_clients(job: dict) -> tuple[list, list]:
    """Fill GRAPHS / OFFSETS from the exported arrays (`exchange`); returns per client its train and
    test samples as (x = sample indices offset by the client's OFFSET, y = labels)."""
    arr = np.load(job["arrays"], allow_pickle=False)
    node_task = job["task"] == "node_cls"
    parts = (exchange.node_clients if node_task else exchange.graph_clients)(arr, job["clients"])
    train, test, offset = [], [], 0
    for p in parts:
        n = len(p["x"])
        if node_task:
            rows, cols, vals = exchange.gcn_adjacency(p["senders"], p["receivers"], n)
            adj = torch.sparse_coo_tensor(torch.from_numpy(np.stack([rows, cols])), torch.from_numpy(vals), (n, n)).coalesce()
            GRAPHS.append((adj, torch.tensor(p["x"], dtype=torch.float32)))
            count = n
        else:   # neighbour sum: entry (r, s) = 1 per edge s -> r (duplicates add up, as a segment sum)
            adj = torch.sparse_coo_tensor(torch.from_numpy(np.stack([p["receivers"], p["senders"]])),
                                          torch.ones(len(p["senders"])), (n, n)).coalesce()
            count = len(p["graphs"])
            pool = torch.zeros(count, n)
            pool[torch.tensor(p["node_graph"]), torch.arange(n)] = 1.0
            GRAPHS.append((adj, torch.tensor(p["x"], dtype=torch.float32), pool))
        OFFSETS.append(offset)
        train.append((offset + p["train"], p["y"][p["train"]]))
        test.append((offset + p["test"], p["y"][p["test"]]))
        offset += count
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
           "pFedMe": ("serverpFedMe", "pFedMe"), "FedALA": ("serverala", "FedALA"), "FedBN": ("serverbn", "FedBN"),
           "FedAvg": ("serveravg", "FedAvg")}


def eval_theta(client) -> None:
    """The toggle of compare.py --pfedme-eval-theta on one PFLlib pFedMe client: its optimiser's step
    returns the model's own parameter objects, which the client keeps as `personalized_params`, so they
    are overwritten by the local weights at the end of `train` and by the global model in `send_models`.
    Here the step's result is copied (the in-place update of the model is untouched, so training is
    the same), and the personalised evaluation puts the model's parameters back afterwards, so the next
    round starts from what it would have started from."""
    step = client.optimizer.step

    def copied_step(*args, **kwargs):
        return [q.detach().clone() for q in step(*args, **kwargs)]

    def restoring(metrics):
        def wrapped():
            saved = [q.detach().clone() for q in client.model.parameters()]
            try:
                return metrics()
            finally:
                for q, s in zip(client.model.parameters(), saved):
                    q.data = s
        return wrapped

    client.optimizer.step = copied_step
    client.test_metrics_personalized = restoring(client.test_metrics_personalized)
    client.train_metrics_personalized = restoring(client.train_metrics_personalized)


def extra_evaluation(server, hook: str, evaluate, curve: list, spent: list) -> None:
    """Run `evaluate()` (-> test accuracy) just before every call of `server.<hook>` and append its
    result to `curve`: a second reading of the same run (compare.py's toggles that evaluate what the
    other side evaluates). Its own (wall, cpu) seconds go to `spent`, to be taken out of the round
    times; torch's RNG state is put back afterwards (PFLlib's test loaders shuffle), so the run
    trains and reports exactly what it does without it."""
    original = getattr(server, hook)

    def wrapped(*args, **kwargs):
        state = torch.get_rng_state()
        c0, t0 = time.process_time(), time.perf_counter()
        try:
            curve.append(float(evaluate()))
        finally:
            spent.append((time.perf_counter() - t0, time.process_time() - c0))
            torch.set_rng_state(state)
        return original(*args, **kwargs)

    setattr(server, hook, wrapped)


def pooled_test_accuracy(server) -> float:
    """Test accuracy of every client's current `model`, test samples pooled (PFLlib's `evaluate`'s
    number, without its printing and bookkeeping)."""
    _, counts, correct, _ = server.test_metrics()
    return sum(correct) / sum(counts)


def ala_first_passes(log: str) -> list[int]:
    """PFLlib's ALA prints 'Client: <id> ... ALA epochs: <n>' when a client's first weight training
    stops (the std of its last 10 losses < 0.1): n per client, in print order."""
    return [int(line.rsplit("ALA epochs:", 1)[1]) for line in log.splitlines() if "ALA epochs:" in line]


def main() -> None:
    p = argparse.ArgumentParser(description="one PFLlib run of a compare.py job")
    p.add_argument("job")
    p.add_argument("out")
    a = p.parse_args()
    job = json.loads(Path(a.job).read_text())
    torch.set_num_threads(job.get("threads", 1) or torch.get_num_threads())
    src = Path(job["pfllib_src"]) / "system"
    sys.path.insert(0, str(src))
    import importlib
    from flcore.trainmodel.models import BaseHeadSplit

    work = Path(job["work"])
    train, test = load_clients(job)
    write_pfllib_dataset(work / "dataset", job["name"], train, test)
    run_dir = work / "system"          # PFLlib reads ../dataset and writes ../results from its cwd
    run_dir.mkdir(parents=True, exist_ok=True)
    os.chdir(run_dir)

    seed = job["seed"]
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    body, head = build_models(job)
    # PFLlib's personalised test_metrics (clientditto, ...) binarise 2-class labels to one column but pass
    # both logit columns to roc_auc_score, which raises on PROTEINS; the AUC is not compared, so a failed
    # one is NaN here instead of ending the run (accuracy untouched)
    from sklearn import metrics as sk_metrics
    auc = sk_metrics.roc_auc_score

    def tolerant_auc(*args_, **kwargs):
        try:
            return auc(*args_, **kwargs)
        except ValueError:
            return float("nan")

    sk_metrics.roc_auc_score = tolerant_auc
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
        # second readings of the same run, keyed by the toggle's label in compare.py
        extra, spent = {}, []
        if job.get("pfedme_eval_theta") and args.algorithm == "pFedMe":
            for client in server.clients:
                eval_theta(client)
            # unmodified PFLlib's reading: its evaluate_personalized reads the aliased parameters, i.e.
            # each client's model as send_models left it, which is what the base test_metrics evaluates
            extra["pfllib_aliased"] = []
            extra_evaluation(server, "evaluate_personalized", lambda: pooled_test_accuracy(server),
                             extra["pfllib_aliased"], spent)
        if job.get("fedala_eval_trained") and args.algorithm == "FedALA":
            # each client's trained local model theta_i, read before send_models' ALA replaces it by the
            # next round's theta_hat (at round 0: the initial model, as PFLlib's own reading)
            extra["trained"] = []
            extra_evaluation(server, "send_models", lambda: pooled_test_accuracy(server), extra["trained"], spent)
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
    # the second readings' own time is not PFLlib's: out of every round's Budget and the totals
    extra_wall = [w for w, _ in spent] or [0.0] * iterations
    budget = np.asarray(server.Budget) - np.asarray(extra_wall[:len(server.Budget)])
    wall -= sum(w for w, _ in spent)
    cpu -= sum(c for _, c in spent)
    out = {"test_acc": float(curve[rounds]), "curve": [float(v) for v in curve],
           "rounds_trained": iterations, "ms_per_round": 1000.0 * float(np.mean(budget[1:])),
           "wall_ms_per_round_all": 1000.0 * wall / iterations, "cpu_ms_per_round": 1000.0 * cpu / iterations,
           "extra_evaluations": {k: {"test_acc": float(v[rounds]), "curve": v} for k, v in extra.items()},
           "extra_evaluation_cpu_s": sum(c for _, c in spent),
           "torch": torch.__version__, "torch_threads": torch.get_num_threads(),
           "pfllib_commit": (Path(job["pfllib_src"]) / "COMMIT").read_text().strip(),
           "train_samples": [int(len(t[0])) for t in train], "test_samples": [int(len(t[0])) for t in test]}
    if args.algorithm == "Ditto":
        out["global_curve"] = [float(v) for v in server.rs_test_acc[0::2]]
    if args.algorithm == "FedALA":
        out["ala_first_passes"] = ala_first_passes(log.getvalue())
    (work / "pfllib_stdout.log").write_text(log.getvalue())
    Path(a.out).write_text(json.dumps(out))


if __name__ == "__main__":
    main()
