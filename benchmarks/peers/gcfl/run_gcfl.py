"""The authors' side of benchmarks/peers/gcfl/compare.py: GCFL's own code (github.com/Oxfordblue7/GCFL,
Xie et al., NeurIPS 2021), imported from a scratch checkout outside the repo, run on the clients
fgl_jax exported (benchmarks/peers/exchange.py). Runs under a torch + PyG + dtaidistance venv:

    python run_gcfl.py job.json result.json

What is theirs: models.GIN / serverGIN, server.Server, client.Client_GC (its Adam, its local
training and evaluation) and training.run_gcfl / run_gcflplus / run_gcflplus_dWs, called as
main_oneDS.py calls them. What is this file's: the data (the exported graphs as PyG Data objects in
their DataLoaders, as setupGC.prepareData_oneDS builds them), the client set-up (setupGC.setup_devices
re-done because setupGC imports PyG 1.x's `torch_geometric.data.DataLoader`), and instruments that
only read: the clusters of every round (Server.aggregate_clusterwise is called once per round with
them) and every client's test accuracy of every round (Client_GC.evaluate). Shims, applied only when
the import is missing: pandas from a second venv's site-packages (job "pandas_site"), an empty
matplotlib.pyplot (training.py imports it and never uses it).
"""
from __future__ import annotations

import json
import random
import sys
import time
import types
from pathlib import Path

import numpy as np


def shim_imports(job: dict) -> None:
    """The runtime shims of the module docstring, before the authors' modules are imported."""
    try:
        import pandas  # noqa: F401
    except ImportError:
        sys.path.append(job["pandas_site"])
        import pandas  # noqa: F401
    try:
        import matplotlib.pyplot  # noqa: F401
    except ImportError:
        mpl = types.ModuleType("matplotlib")
        mpl.pyplot = types.ModuleType("matplotlib.pyplot")
        sys.modules.update({"matplotlib": mpl, "matplotlib.pyplot": mpl.pyplot})


def main(job_path: str, result_path: str) -> None:
    job = json.loads(Path(job_path).read_text())
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))   # benchmarks/peers: exchange.py
    sys.path.insert(0, job["gcfl_src"])
    shim_imports(job)
    import torch
    from torch_geometric.data import Data
    from torch_geometric.loader import DataLoader

    import exchange
    import training
    from client import Client_GC
    from models import GIN, serverGIN
    from server import Server

    torch.set_num_threads(job["threads"])
    seed = job["seed"]
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)

    clients_data = exchange.graph_clients(np.load(job["arrays"], allow_pickle=False), job["clients"])
    args = types.SimpleNamespace(device="cpu", hidden=job["hidden"], nlayer=job["num_layers"],
                                 dropout=job["dropout"], lr=job["lr"], weight_decay=job["weight_decay"])

    def graphs_of(c: dict, which: str) -> list:
        out = []
        for j in c[which]:
            nodes = np.flatnonzero(c["node_graph"] == j)
            lo = nodes[0] if nodes.size else 0
            keep = np.isin(c["senders"], nodes)
            edges = np.stack([c["senders"][keep], c["receivers"][keep]]) - lo
            out.append(Data(x=torch.tensor(c["x"][nodes], dtype=torch.float32),
                            edge_index=torch.tensor(edges, dtype=torch.long), y=torch.tensor([int(c["y"][j])])))
        return out

    clients = []
    for idx, c in enumerate(clients_data):   # setupGC.setup_devices with prepareData_oneDS's loaders
        split = {s: graphs_of(c, s) for s in ("train", "val", "test")}
        loaders = {s: DataLoader(g, batch_size=job["batch_size"], shuffle=True) for s, g in split.items()}
        num_labels = len({int(g.y.item()) for g in split["train"]})   # utils.get_numGraphLabels
        model = GIN(c["x"].shape[1], args.hidden, num_labels, args.nlayer, args.dropout)
        opt = torch.optim.Adam(filter(lambda p: p.requires_grad, model.parameters()), lr=args.lr,
                               weight_decay=args.weight_decay)
        clients.append(Client_GC(model, idx, f"{idx}-{job['dataset']}", len(split["train"]), loaders, opt, args))
    server = Server(serverGIN(nlayer=args.nlayer, nhid=args.hidden), "cpu")

    sizes, accs = [], []
    aggregate = server.aggregate_clusterwise

    def aggregate_recording(client_clusters):
        sizes.append(sorted(len(c) for c in client_clusters))
        return aggregate(client_clusters)

    server.aggregate_clusterwise = aggregate_recording
    evaluate = Client_GC.evaluate

    def evaluate_recording(self):
        out = evaluate(self)
        accs.append((self.id, out[1]))
        return out

    Client_GC.evaluate = evaluate_recording
    rounds, e1, e2 = job["rounds"], job["eps1"], job["eps2"]
    t0 = time.perf_counter()
    if job["algorithm"] == "gcfl":
        frame = training.run_gcfl(clients, server, rounds, job["local_epochs"], e1, e2)
    elif job["algorithm"] == "gcfl_plus":
        frame = training.run_gcflplus(clients, server, rounds, job["local_epochs"], e1, e2, job["seq_length"],
                                      job["standardize"])
    else:
        frame = training.run_gcflplus_dWs(clients, server, rounds, job["local_epochs"], e1, e2, job["seq_length"],
                                          job["standardize"])
    seconds = time.perf_counter() - t0
    n = len(clients)
    per_round = np.zeros((rounds, n))
    for i, (cid, acc) in enumerate(accs):   # run_* evaluates every client once per round, in client order
        per_round[i // n, cid] = acc
    counts = [len(s) for s in sizes]
    result = {"reported_test": float(frame["test_acc"].mean()),   # their frame: per client max over cached models
              "reported_per_client": [float(v) for v in frame["test_acc"]],
              "final_test": float(per_round[-1].mean()), "final_per_client": per_round[-1].tolist(),
              "test_history": per_round.mean(1).tolist(), "num_clusters": counts[-1],
              "cluster_sizes": sizes[-1],
              "split_rounds": [r + 1 for r in range(rounds) if r and counts[r] > counts[r - 1]],
              "ms_per_round": 1000.0 * seconds / rounds}
    Path(result_path).write_text(json.dumps(result))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
