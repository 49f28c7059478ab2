"""OpenFGL side of the graph_fl comparison; runs in OpenFGL's venv (never imports fgl_jax).
`compare_graph_fl.py` writes a job (JSON) and fgl_jax's client of every graph and per-client split
(NPZ); this script lays them out where OpenFGL's loaders look, so OpenFGL trains on exactly the same
graphs in the same clients and splits, then runs FGLTrainer (scenario graph_fl, task graph_cls).

    python run_openfgl_graph_fl.py JOB.json RESULT.json

Where OpenFGL 1.1.0 reads from:
  <root>/global/graph_fl/<NAME>/raw/<NAME>_*.txt      the TU text files (symlinks into the shared data,
                                                      or the shared zip unpacked; no download); PyG's
                                                      TUDataset builds its own features from them
  <root>/distrib/graph_fl_label_skew_<a>_<NAME>_client_<C>/data_<i>.pt
                                                      client i's graphs: the global set's subset of
                                                      fgl_jax's client i, ascending graph ids, as
                                                      OpenFGL's own simulations build it
  .../graph_cls/default_split/{train,val,test}_<i>.pt, glb_{train,val,test}_<i>.pkl
                                                      fgl_jax's per-client split (GraphClsTask skips
                                                      its own split when these exist)

With `"openfgl_model": "fgl_jax"` in the job, every OpenFGL model of the run (server and clients) is
`FglJaxGIN`: fgl_jax's GraphClassifier written in torch, loaded with fgl_jax's initial parameters
(the job's `init_params` NPZ, written by compare_graph_fl.py from fgl_jax's initial state), in place
of OpenFGL's batch-norm GIN. `python run_openfgl_graph_fl.py --check JOB.json RESULT.json` runs no
training: it compares FglJaxGIN's logits with fgl_jax's on every graph of the set (the NPZ's
`logits`, fgl_jax's evaluation forward pass of the same parameters).
"""
from __future__ import annotations

import contextlib
import io
import json
import os
import pickle
import sys
import zipfile

import numpy as np

os.environ.setdefault("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "1")  # OpenFGL torch.load()s whole dataset objects

import torch  # noqa: E402
from run_openfgl import set_openfgl_config, train_and_measure  # noqa: E402  (this folder is on sys.path: run as a script)


def datasets(job: dict) -> list:
    """OpenFGL's dataset names of the job: one (label skew) or one per client (cross-domain)."""
    return job.get("openfgl_datasets") or [job["openfgl_dataset"]]


def simulation_dir(job: dict) -> str:
    """OpenFGL's processed dir of the simulation (FGLDataset.processed_dir): label skew of one
    dataset, or graph_fl_cross_domain over the job's datasets (sorted names, as OpenFGL joins them)."""
    if job.get("cross_domain"):
        name = "_".join(["graph_fl_cross_domain", "_".join(sorted(datasets(job))), f"client_{job['clients']}"])
    else:
        name = f"graph_fl_label_skew_{job['beta']:.2f}_{job['openfgl_dataset']}_client_{job['clients']}"
    return os.path.join(job["root"], "distrib", name)


def lay_out_raw(job: dict) -> None:
    """The TU files of every dataset of the job where PyG's TUDataset looks (<root>/global/graph_fl/<NAME>/raw/)."""
    paths = job.get("tu_paths") or [job["tu_path"]]
    for name, src in zip(datasets(job), paths):
        lay_out_one_raw(job["root"], name, src)


def lay_out_one_raw(root: str, name: str, src: str) -> None:
    """The TU files of one dataset (a directory: symlinks; a zip: unpacked) under <root>/global/graph_fl/<name>/raw."""
    raw = os.path.join(root, "global", "graph_fl", name, "raw")
    os.makedirs(raw, exist_ok=True)
    if src.endswith(".zip"):
        with zipfile.ZipFile(src) as z:
            for member in z.namelist():
                base = os.path.basename(member)
                if base.startswith(name + "_") and base.endswith(".txt") and not os.path.exists(os.path.join(raw, base)):
                    with z.open(member) as f_in, open(os.path.join(raw, base), "wb") as f_out:
                        f_out.write(f_in.read())
        return
    for base in os.listdir(src):
        if base.startswith(name + "_") and base.endswith(".txt") and not os.path.exists(os.path.join(raw, base)):
            os.symlink(os.path.join(src, base), os.path.join(raw, base))


def training_first(ids: np.ndarray, rank: np.ndarray) -> np.ndarray:
    """`ids` reordered for `--openfgl-order fgl_jax`: the training graphs first, in fgl_jax's mini-batch
    order (`rank` >= 0, aligned with `ids`), then the others in their order; OpenFGL's train loader
    (data[train_mask], shuffle=False) then cuts the mini-batches fgl_jax cuts."""
    past = int(ids.max(initial=0)) + 1
    return ids[np.argsort(np.where(rank >= 0, rank, past + ids), kind="stable")]


def lay_out_cross_domain(job: dict, arrays: dict) -> dict:
    """Cross-domain clients: client k holds all of dataset k (OpenFGL's graph_fl_cross_domain: the
    dataset itself, num_global_classes its own classes) with fgl_jax's split of those graphs."""
    from openfgl.data.global_dataset_loader import load_global_dataset
    assign = arrays["assignment"]
    proc = simulation_dir(job)
    split_dir = os.path.join(proc, "graph_cls", "default_split")
    os.makedirs(split_dir, exist_ok=True)
    feats, offset = [], 0
    for k, name in enumerate(datasets(job)):
        glob = load_global_dataset(os.path.join(job["root"], "global"), scenario="graph_fl", dataset=name)
        mine = np.flatnonzero(assign == k)           # fgl_jax's joined set keeps each dataset's graph order
        if len(glob) != len(mine) or not np.array_equal(glob.y.numpy(), arrays["y"][mine]):
            raise ValueError(f"OpenFGL's {name} has labels that differ from fgl_jax's client {k} "
                             f"({len(glob)} vs {len(mine)} graphs)")
        reorder = job.get("openfgl_order") == "fgl_jax"
        # the dataset's own graph order (OpenFGL's), or fgl_jax's training order first
        order = training_first(np.arange(len(mine)), arrays["train_rank"][mine]) if reorder else np.arange(len(mine))
        local = glob.copy(torch.as_tensor(order)) if reorder else glob.copy()
        local.num_global_classes = glob.num_classes
        torch.save(local, os.path.join(proc, f"data_{k}.pt"))
        for split in ("train", "val", "test"):
            m = arrays[f"{split}_mask"][mine][order]
            torch.save(torch.as_tensor(m), os.path.join(split_dir, f"{split}_{k}.pt"))
            with open(os.path.join(split_dir, f"glb_{split}_{k}.pkl"), "wb") as f:
                pickle.dump([int(g) for g in order[m]], f)
        feats.append(int(glob.num_features))
        offset += len(glob)
    return {"openfgl_num_features": feats, "openfgl_num_graphs": offset}


def lay_out_clients(job: dict, arrays: dict) -> dict:
    """Client datasets and split files; returns facts about the global set OpenFGL built."""
    if job.get("cross_domain"):
        return lay_out_cross_domain(job, arrays)
    from openfgl.data.global_dataset_loader import load_global_dataset
    glob = load_global_dataset(os.path.join(job["root"], "global"), scenario="graph_fl", dataset=job["openfgl_dataset"])
    assign = arrays["assignment"]
    y = glob.y.numpy()
    if len(y) != len(assign) or not np.array_equal(y, arrays["y"]):
        raise ValueError(f"OpenFGL's {job['openfgl_dataset']} has labels that differ from fgl_jax's "
                         f"({len(y)} vs {len(assign)} graphs)")
    proc = simulation_dir(job)
    split_dir = os.path.join(proc, "graph_cls", "default_split")
    os.makedirs(split_dir, exist_ok=True)
    for k in range(job["clients"]):
        mine = np.flatnonzero(assign == k)           # ascending global ids, as OpenFGL's simulations sort them
        if job.get("openfgl_order") == "fgl_jax":
            mine = training_first(mine, arrays["train_rank"][mine])
        local = glob.copy(torch.as_tensor(mine))
        local.num_global_classes = glob.num_classes
        local.global_map = {i: int(g) for i, g in enumerate(mine)}
        torch.save(local, os.path.join(proc, f"data_{k}.pt"))
        for split in ("train", "val", "test"):
            m = arrays[f"{split}_mask"][mine]
            torch.save(torch.as_tensor(m), os.path.join(split_dir, f"{split}_{k}.pt"))
            with open(os.path.join(split_dir, f"glb_{split}_{k}.pkl"), "wb") as f:
                pickle.dump([int(g) for g in mine[m]], f)
    return {"openfgl_num_features": int(glob.num_features), "openfgl_num_graphs": int(len(glob))}


def make_args(job: dict):
    from openfgl.config import parser
    args = parser.parse_args([])
    args.root = job["root"]
    args.dataset = datasets(job)
    args.scenario, args.task = "graph_fl", "graph_cls"
    args.simulation_mode = "graph_fl_cross_domain" if job.get("cross_domain") else "graph_fl_label_skew"
    args.skew_alpha = args.dirichlet_alpha = job["beta"]     # FGLDataset.processed_dir reads skew_alpha
    args.num_clients, args.num_rounds = job["clients"], job["rounds"]
    args.fl_algorithm = job["openfgl_algorithm"]
    args.model = ["gin"]
    args.hid_dim, args.num_layers, args.dropout = job["hidden"], job["num_layers"], job["dropout"]
    args.lr, args.weight_decay, args.num_epochs, args.optim = job["lr"], job["weight_decay"], job["local_epochs"], "adam"
    args.batch_size = job["batch_size"]
    args.metrics = ["accuracy"]
    args.evaluation_mode = "local_model_on_local_data"
    args.use_cuda = False
    args.seed = job["seed"]
    args.train_val_test = "default_split"
    return args


class FglJaxGIN(torch.nn.Module):
    """fgl_jax's GraphClassifier (fgl_jax/nn/graph.py, conv gin, norm none) in torch, on PyG batches:
    for layer i, h = relu(W_i1 relu(W_i0 (h + sum_{u -> v} h_u) + b_i0) + b_i1) (GIN-0, eps 0), with
    dropout on the layer's input for i > 0; g = readout(h) (sum, mean or max over each graph's nodes);
    logits = head_1(dropout(relu(head_0(g)))). forward returns (g [G, hidden], logits [G, K]), what
    OpenFGL's GraphClsTask and its MOON / FedProto / FedTGP clients read from a model.

    The node features are taken in fgl_jax's column order: `perm` [F] gives, for fgl_jax's column j,
    the column of PyG's x holding it (PyG puts node attributes before the one-hot node labels)."""

    def __init__(self, perm, in_dim: int, hidden: int, num_classes: int, num_layers: int, dropout: float,
                 pooling: str):
        super().__init__()
        self.register_buffer("perm", torch.as_tensor(perm, dtype=torch.long))
        lin = torch.nn.Linear
        self.convs = torch.nn.ModuleList(
            torch.nn.ModuleList([lin(in_dim if i == 0 else hidden, hidden), lin(hidden, hidden)])
            for i in range(num_layers))
        self.head_0, self.head_1 = lin(hidden, hidden), lin(hidden, num_classes)
        self.dropout, self.pooling = dropout, pooling

    def forward(self, data):
        from torch_geometric.nn.pool import global_add_pool, global_max_pool, global_mean_pool
        h, (src, dst) = data.x[:, self.perm].float(), data.edge_index
        drop = lambda t: torch.nn.functional.dropout(t, p=self.dropout, training=self.training)
        for i, (l0, l1) in enumerate(self.convs):
            h = drop(h) if i > 0 else h
            h = h.index_add(0, dst, h[src])          # (1 + 0) h_v + sum of the senders' states
            h = torch.relu(l1(torch.relu(l0(h))))
        pool = {"sum": global_add_pool, "mean": global_mean_pool, "max": global_max_pool}[self.pooling]
        g = pool(h, data.batch, size=data.num_graphs)
        return g, self.head_1(drop(torch.relu(self.head_0(g))))

    def load_fgl_jax(self, params: dict) -> "FglJaxGIN":
        """Copies fgl_jax's parameters ({"conv_0_0/kernel": [in, out], ".../bias": [out], ...}; flax's
        Dense kernel is torch's weight transposed) into this module; returns it."""
        named = {f"conv_{i}_{j}": m for i, pair in enumerate(self.convs) for j, m in enumerate(pair)}
        named.update(head_0=self.head_0, head_1=self.head_1)
        with torch.no_grad():
            for name, m in named.items():
                k, b = params[f"{name}/kernel"], params[f"{name}/bias"]
                if tuple(k.shape) != (m.in_features, m.out_features):
                    raise ValueError(f"init_params: {name}/kernel has shape {tuple(k.shape)}, the model's layer is "
                                     f"{m.in_features} -> {m.out_features}")
                m.weight.copy_(torch.as_tensor(np.ascontiguousarray(k.T)))
                m.bias.copy_(torch.as_tensor(b))
        return self


def feature_permutation(pyg_x: np.ndarray, fgl_x: np.ndarray, name: str) -> np.ndarray:
    """perm [F] with pyg_x[:, perm] == fgl_x (every node, float tolerance): the same features in
    fgl_jax's column order. Raises one line naming the dataset when no such permutation exists (other
    nodes, node order or values): then the two sides would not train on the same inputs."""
    if pyg_x.shape != fgl_x.shape:
        raise ValueError(f"{name}: OpenFGL's node features are {pyg_x.shape}, fgl_jax's {fgl_x.shape}")
    perm, free = [], list(range(pyg_x.shape[1]))
    for j in range(fgl_x.shape[1]):
        hit = next((i for i in free if np.allclose(pyg_x[:, i], fgl_x[:, j], atol=1e-6)), None)
        if hit is None:
            raise ValueError(f"{name}: fgl_jax's feature column {j} equals no column of OpenFGL's x (same nodes in "
                             "the same order expected)")
        perm.append(hit)
        free.remove(hit)
    return np.asarray(perm, np.int64)


def all_node_features(glob) -> np.ndarray:
    """x of every graph of an OpenFGL global dataset, concatenated in graph order (through the
    dataset's transform: IMDB's one-hot degrees exist only per graph)."""
    return np.concatenate([glob[i].x.numpy() for i in range(len(glob))]).astype(np.float32)


def same_model_factory(job: dict, params: dict, perm: np.ndarray):
    """OpenFGL's load_graph_cls_default_model replaced: every call (the server and each client) builds
    a FglJaxGIN loaded with the one draw of fgl_jax's initial parameters, as fgl_jax's clients start."""
    def load(args, input_dim, output_dim, client_id=None):
        if input_dim != len(perm):
            raise ValueError(f"openfgl_model fgl_jax: OpenFGL asks for input width {input_dim}, fgl_jax's model reads "
                             f"{len(perm)} features")
        return FglJaxGIN(perm, input_dim, job["hidden"], output_dim, job["num_layers"], job["dropout"],
                         job["pooling"]).load_fgl_jax(params)
    return load


def install_same_model(job: dict) -> None:
    """With job["openfgl_model"] == "fgl_jax": OpenFGL's graph_cls tasks build FglJaxGIN (fgl_jax's
    initial parameters, features in fgl_jax's column order) instead of their GIN."""
    if job.get("openfgl_model", "openfgl") != "fgl_jax":
        return
    if job.get("cross_domain"):
        raise ValueError("openfgl_model fgl_jax: label-skew runs only (a cross-domain client reads its own dataset's "
                         "features)")
    import openfgl.task.graph_cls as graph_cls
    from openfgl.data.global_dataset_loader import load_global_dataset
    init = dict(np.load(job["init_params"]))
    glob = load_global_dataset(os.path.join(job["root"], "global"), scenario="graph_fl", dataset=job["openfgl_dataset"])
    perm = feature_permutation(all_node_features(glob), init["x"], job["openfgl_dataset"])
    graph_cls.load_graph_cls_default_model = same_model_factory(job, init, perm)


def check_same_model(job: dict) -> dict:
    """FglJaxGIN (fgl_jax's parameters) on every graph of the set, in evaluation mode, in OpenFGL's
    mini-batches of batch_size graphs, against fgl_jax's logits of the same parameters (the NPZ's
    `logits` [G, K], graph order): the largest absolute and relative difference."""
    from openfgl.data.global_dataset_loader import load_global_dataset
    from torch_geometric.loader import DataLoader
    init = dict(np.load(job["init_params"]))
    glob = load_global_dataset(os.path.join(job["root"], "global"), scenario="graph_fl", dataset=job["openfgl_dataset"])
    perm = feature_permutation(all_node_features(glob), init["x"], job["openfgl_dataset"])
    model = FglJaxGIN(perm, len(perm), job["hidden"], int(init["logits"].shape[1]), job["num_layers"],
                      job["dropout"], job["pooling"]).load_fgl_jax(init).eval()
    with torch.no_grad():
        out = np.concatenate([model(b)[1].numpy() for b in DataLoader([glob[i] for i in range(len(glob))],
                                                                     batch_size=job["batch_size"], shuffle=False)])
    ref = init["logits"]
    diff = np.abs(out - ref)
    return {"graphs": int(len(ref)), "max_abs_diff": float(diff.max()),
            "max_rel_diff": float((diff / np.maximum(np.abs(ref), 1e-6)).max()),
            "max_abs_logit": float(np.abs(ref).max()), "same_argmax": float((out.argmax(1) == ref.argmax(1)).mean()),
            "feature_perm": perm.tolist()}


def scaffold_steps_variate() -> None:
    """OpenFGL's SCAFFOLD client with fgl_jax's K (job "openfgl_scaffold_k": "steps"): option II's
    c_i+ = c_i - c + (x - y_i) / (K lr) with K = the local steps taken (epochs x the client's training
    mini-batches), where OpenFGL 1.1.0 takes K = the epochs (ScaffoldClient.update_local_control)."""
    from openfgl.flcore.scaffold.client import ScaffoldClient

    def update_local_control(self):
        k = self.args.num_epochs * len(self.task.processed_data["train_dataloader"])
        with torch.no_grad():
            for c_i, x, y, c in zip(self.local_control, self.message_pool["server"]["weight"],
                                    self.task.model.parameters(), self.message_pool["server"]["global_control"]):
                c_i.data = c_i.data - c.data + (x.data - y.data) / (k * self.args.lr)
    ScaffoldClient.update_local_control = update_local_control


def count_clusters() -> dict:
    """Wraps GCFLPlusServer.execute to record, every round, the norm of the mean and the largest norm
    of the clients' updates of the first cluster (its split test: mean < eps1 and max > eps2) before the
    server step, and its number of clusters after it; returns the dict of lists it fills."""
    from openfgl.flcore.gcfl_plus.server import GCFLPlusServer
    log, execute = {"num_clusters": [], "mean_update_norm": [], "max_update_norm": []}, GCFLPlusServer.execute

    def counted(self):
        first = self.cluster_indices[0]
        log["mean_update_norm"].append(float(self.compute_mean_update_norm(first)))
        log["max_update_norm"].append(float(self.compute_max_update_norm(first)))
        execute(self)
        log["num_clusters"].append(len(self.cluster_indices))
    GCFLPlusServer.execute = counted
    return log


def main(job_path: str, result_path: str, check: bool = False) -> None:
    with open(job_path) as f:
        job = json.load(f)
    torch.set_num_threads(job.get("threads") or torch.get_num_threads())
    lay_out_raw(job)
    if check:
        with contextlib.redirect_stdout(io.StringIO()):
            out = check_same_model(job)
        with open(result_path, "w") as f:
            json.dump(out, f)
        return
    arrays = dict(np.load(job["arrays"]))
    quiet = io.StringIO()
    with contextlib.redirect_stdout(quiet):
        facts = lay_out_clients(job, arrays)
    from openfgl.flcore.trainer import FGLTrainer
    from openfgl.utils.basic_utils import seed_everything
    if job["openfgl_algorithm"] == "fedprox":
        from openfgl.flcore.fedprox.fedprox_config import config
        config["fedprox_mu"] = job["prox_mu"]
    set_openfgl_config(job)
    with contextlib.redirect_stdout(quiet):
        install_same_model(job)
    if job.get("openfgl_scaffold_k", "epochs") == "steps":
        scaffold_steps_variate()
    clusters = count_clusters() if job["openfgl_algorithm"] == "gcfl_plus" else None
    args = make_args(job)
    seed_everything(args.seed)
    out = {**train_and_measure(FGLTrainer, args, quiet), **facts}
    if clusters is not None:
        out.update(clusters)
    with open(result_path, "w") as f:
        json.dump(out, f)


if __name__ == "__main__":
    if sys.argv[1] == "--check":
        main(*sys.argv[2:4], check=True)
    else:
        main(*sys.argv[1:3])
