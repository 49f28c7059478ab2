"""FedGraph side of the FedGCN comparison; runs in FedGraph's venv (never imports fgl_jax).

    python run_fedgraph.py JOB.json RESULT.json

Runs FedGraph 0.2.5's own FedGCN pieces on the clients and masks fgl_jax exported (NPZ):
`utils_nc.get_in_comm_indexes` (each trainer's communicate nodes and edges), `Trainer_General`
(its pre-training feature sum, `load_feature_aggregation`, `relabel_adj`, AggreGCN, SGD local
steps, `local_test`) and `Server` (its model, `zero_params`), in the order `federated_methods.run_NC`
calls them, but in-process: run_NC starts a ray cluster with one actor per trainer
(`@ray.remote(num_cpus=...)`), which on this 2-core machine cannot schedule 10 one-CPU actors, and
downloads Planetoid itself. What run_NC does between those calls (sum the trainers' feature sums,
send each its rows; average the trainers' parameters uniformly, broadcast; test-count weighted mean
of the trainers' test accuracies) is restated here in a few lines.

torch_sparse (imported at module level by fedgraph.data_process, a C++ extension without a wheel for
this torch) is replaced by an empty module: none of the functions used here touch it.
"""
from __future__ import annotations

import json
import sys
import time
import types

import numpy as np

sys.modules.setdefault("torch_sparse", types.ModuleType("torch_sparse"))

import attridict  # noqa: E402
import torch  # noqa: E402
from fedgraph.server_class import Server  # noqa: E402
from fedgraph.trainer_class import Trainer_General  # noqa: E402
from fedgraph.utils_nc import get_in_comm_indexes  # noqa: E402


def copies(params) -> tuple:
    """What a ray call hands over: a copy of the tensors (in-process, `update_params`' `mp.data = p`
    would make every trainer share the server's tensors, which `zero_params` then zeroes)."""
    return tuple(p.detach().clone() for p in params)


def main(job_path: str, result_path: str) -> None:
    job = json.load(open(job_path))
    torch.set_num_threads(job.get("threads") or torch.get_num_threads())
    arr = dict(np.load(job["arrays"]))
    c = job["clients"]
    features = torch.as_tensor(arr["x"], dtype=torch.float32)
    labels = torch.as_tensor(np.maximum(arr["y"], 0), dtype=torch.int64)
    edge_index = torch.as_tensor(np.stack([arr["senders"], arr["receivers"]]), dtype=torch.int64)
    idx_train = torch.as_tensor(np.flatnonzero(arr["train_mask"]), dtype=torch.int64)
    idx_test = torch.as_tensor(np.flatnonzero(arr["test_mask"]), dtype=torch.int64)
    split = [torch.as_tensor(np.flatnonzero(arr["assignment"] == k), dtype=torch.int64) for k in range(c)]
    args = attridict({"num_hops": job["num_hops"], "method": "FedGCN" if job["num_hops"] else "FedAvg",
                      "dataset": job["dataset"], "local_step": job["local_steps"], "learning_rate": job["lr"],
                      "num_layers": job["num_layers"], "use_encryption": False, "batch_size": -1,
                      "global_rounds": job["rounds"], "n_trainer": c, "gpu": False})
    torch.manual_seed(42)   # run_NC's
    comm, in_train, in_test, edges = get_in_comm_indexes(edge_index, split, c, job["num_hops"], idx_train, idx_test)
    device = torch.device("cpu")
    trainers = [Trainer_General(rank=i, args_hidden=job["hidden"], device=device, args=args,
                                local_node_index=split[i], communicate_node_index=comm[i], adj=edges[i],
                                train_labels=labels[comm[i]][in_train[i]], test_labels=labels[comm[i]][in_test[i]],
                                features=features[split[i]], idx_train=in_train[i], idx_test=in_test[i])
                for i in range(c)]
    info = [t.get_info() for t in trainers]
    global_node_num = sum(i["features_num"] for i in info)
    class_num = max(i["label_num"] for i in info)
    for t in trainers:
        t.init_model(global_node_num, class_num)
    server = Server(features.shape[1], job["hidden"], class_num, device, trainers, args)
    for t in trainers:
        t.update_params(copies(server.model.parameters()), -1)
    t0 = time.perf_counter()
    if args.method != "FedAvg":   # the pre-training communication
        total = torch.zeros_like(features)
        for t in trainers:
            total += t.get_local_feature_sum()
        for i, t in enumerate(trainers):
            t.load_feature_aggregation(total[comm[i]])
        for t in trainers:
            t.relabel_adj()
    pretrain = time.perf_counter() - t0
    weights = [i["len_in_com_test_node_local_indexes"] for i in info]
    accs = []
    t0, c0 = time.perf_counter(), time.process_time()
    for r in range(job["rounds"]):
        for t in trainers:
            t.train(r)
        params = [copies(t.get_params()) for t in trainers]
        server.zero_params()
        for ps in params:
            for p, mp in zip(ps, server.model.parameters()):
                mp.data = mp.data + p.cpu()
        with torch.no_grad():
            for p in server.model.parameters():
                p.data = p.data / len(trainers)
        for t in trainers:
            t.update_params(copies(server.model.parameters()), r)
        res = np.array([t.local_test() for t in trainers])
        accs.append(float(np.average(res[:, 1], weights=weights)))
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    out = {"final_test": accs[-1], "test_acc": accs, "rounds": job["rounds"], "pretrain_seconds": pretrain,
           "train_seconds": wall, "ms_per_round": 1000 * wall / job["rounds"],
           "cpu_ms_per_round": 1000 * cpu / job["rounds"], "torch": torch.__version__,
           "torch_threads": torch.get_num_threads()}
    json.dump(out, open(result_path, "w"))


if __name__ == "__main__":
    main(*sys.argv[1:3])
