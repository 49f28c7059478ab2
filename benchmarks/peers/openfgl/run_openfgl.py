"""OpenFGL side of the side-by-side harness; runs in benchmarks/peers/.venv-openfgl (never imports
fgl_jax). `compare.py` writes a job (JSON) and the graph, partition and split it used (NPZ); this
script lays them out where OpenFGL's loaders look, so OpenFGL trains on exactly the same clients
and masks, runs FGLTrainer and writes the result (JSON).

    python run_openfgl.py JOB.json RESULT.json

Where OpenFGL reads from (openfgl 1.1.0):
  <root>/global/subgraph_fl/<Name>/raw/ind.<name>.*   Planetoid raw files (symlinks; no download)
  <root>/distrib/subgraph_fl_louvain_1_<Name>_client_<C>/data_<i>.pt
                                                     client subgraphs: FGLDataset skips its own
                                                     partitioning when these exist
  .../node_cls/default_split/{train,val,test}_<i>.pt, glb_{train,val,test}_<i>.pkl
                                                     per-client masks: NodeClsTask skips its own
                                                     split when these exist
"""
from __future__ import annotations

import contextlib
import io
import json
import os
import pickle
import resource
import sys
import time
from typing import NamedTuple

import numpy as np

os.environ.setdefault("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "1")  # OpenFGL torch.load()s whole Data objects

import torch  # noqa: E402
from torch_geometric.data import Data  # noqa: E402

PLANETOID_PARTS = ("x", "tx", "allx", "y", "ty", "ally", "graph", "test.index")
# OpenFGL algorithms whose modules import torch_scatter / torch_sparse at module level (compiled
# extensions with no wheel for this torch); the names they use are served by `install_scatter_shims`.
NEEDS_SCATTER_SHIMS = {"fedpub", "fgssl"}


def install_scatter_shims() -> None:
    """Stand-in modules `torch_scatter` and `torch_sparse` for OpenFGL's FedPub (maskedgcn.py: scatter_add,
    and SparseTensor & co. only in its never-taken SparseTensor branch) and FGSSL (samplers.py: scatter,
    only in its unused G2L mode). The sums go through torch_geometric.utils.scatter, the same
    arithmetic. Installed after torch_geometric.typing has been imported, so PyG itself still sees
    neither package and keeps its own code paths (WITH_TORCH_SCATTER/SPARSE stay False)."""
    import types
    import torch_geometric.typing  # noqa: F401  (decides WITH_TORCH_* before the stand-ins exist)
    from torch_geometric.utils import scatter as pyg_scatter

    def scatter(src, index, dim=-1, out=None, dim_size=None, reduce="sum"):
        if out is not None:
            raise NotImplementedError("scatter shim: out= is not supported")
        return pyg_scatter(src, index, dim=dim, dim_size=dim_size, reduce=reduce)

    def scatter_add(src, index, dim=-1, out=None, dim_size=None):
        return scatter(src, index, dim=dim, out=out, dim_size=dim_size, reduce="sum")

    def unavailable(*_a, **_k):
        raise NotImplementedError("torch_sparse shim: SparseTensor inputs are not supported")

    ts = types.ModuleType("torch_scatter")
    ts.scatter, ts.scatter_add = scatter, scatter_add
    sp = types.ModuleType("torch_sparse")
    sp.SparseTensor = type("SparseTensor", (), {})   # isinstance(edge_index, SparseTensor) is False
    sp.fill_diag = sp.matmul = sp.mul = sp.sum = unavailable
    sys.modules.setdefault("torch_scatter", ts)
    sys.modules.setdefault("torch_sparse", sp)


def lay_out(job: dict, arrays: dict) -> str:
    """Write the clients and splits of `arrays` into OpenFGL's cache layout; returns the split dir."""
    root, name, c = job["root"], job["openfgl_dataset"], job["clients"]
    raw = os.path.join(root, "global", "subgraph_fl", name, "raw")
    os.makedirs(raw, exist_ok=True)
    for part in PLANETOID_PARTS:
        dst = os.path.join(raw, f"ind.{name.lower()}.{part}")
        if not os.path.exists(dst):
            os.symlink(os.path.join(job["planetoid_dir"], f"ind.{name.lower()}.{part}"), dst)
    proc = os.path.join(root, "distrib", f"subgraph_fl_louvain_1_{name}_client_{c}")
    split_dir = os.path.join(proc, "node_cls", "default_split")
    os.makedirs(split_dir, exist_ok=True)
    x, y, assign = arrays["x"], arrays["y"], arrays["assignment"]
    s, r = arrays["senders"], arrays["receivers"]
    masks = {k: arrays[f"{k}_mask"] for k in ("train", "val", "test")}
    for k in range(c):
        nodes = np.flatnonzero(assign == k)          # ascending global ids, as fgl_jax's client_graphs
        local = -np.ones(len(assign), np.int64)
        local[nodes] = np.arange(len(nodes))
        keep = (assign[s] == k) & (assign[r] == k)
        edge_index = torch.as_tensor(np.stack([local[s[keep]], local[r[keep]]]), dtype=torch.int64)
        data = Data(x=torch.as_tensor(x[nodes]), edge_index=edge_index,
                    y=torch.as_tensor(np.maximum(y[nodes], 0), dtype=torch.int64))  # unlabelled: in no mask
        data.global_map = {i: int(g) for i, g in enumerate(nodes)}
        data.num_global_classes = int(job["num_classes"])
        torch.save(data, os.path.join(proc, f"data_{k}.pt"))
        for split, m in masks.items():
            torch.save(torch.as_tensor(m[nodes]), os.path.join(split_dir, f"{split}_{k}.pt"))
            with open(os.path.join(split_dir, f"glb_{split}_{k}.pkl"), "wb") as f:
                pickle.dump([int(g) for g in nodes[m[nodes]]], f)
    return split_dir


def _adafgl_scipy_matmul() -> None:
    """openfgl 1.1.0's AdaFGL calls a compiled CSR kernel from a hard-coded path that does not exist
    on Linux (`/home/ai2/work/OPENFGL/.../libmatmul.so`); scipy's CSR product is the same arithmetic."""
    from openfgl.flcore.adafgl import op
    op.csr_sparse_dense_matmul = lambda adj, feature: adj.dot(feature).astype(np.float32)


class _Adj(NamedTuple):
    """One hop of a sampled computation graph, as PyG's NeighborSampler yields it."""
    edge_index: torch.Tensor   # [2, E]: (position in the hop's source nodes, position in its targets)
    e_id: torch.Tensor         # [E] ids of the sampled edges in the original edge_index
    size: tuple                # (number of source nodes, number of target nodes)

    def to(self, device):
        return _Adj(self.edge_index.to(device), self.e_id.to(device), self.size)


class _NeighborSampler:
    """Stand-in for torch_geometric.loader.NeighborSampler (which needs torch_sparse, no wheel here),
    with its interface and sampling rule: each target keeps up to `size` of its in-neighbours
    (edge_index[0] -> edge_index[1]) drawn without replacement (all if size < 0 or fewer exist); the
    targets come first in the returned node ids, then the new sources; hops listed outermost first;
    one (batch_size, n_id, adjs) per batch (adjs a single _Adj for one hop). Vectorised torch, so its
    cost is close to the compiled original's (only OpenFGL's FedDEP uses it)."""

    def __init__(self, edge_index, num_nodes=None, node_idx=None, sizes=(-1,), batch_size=1, shuffle=False, **_):
        ei = edge_index.cpu().long()
        n = int(num_nodes) if num_nodes is not None else int(ei.max()) + 1
        order = torch.argsort(ei[1], stable=True)
        self.src, self.e_id = ei[0][order], order
        self.ptr = torch.zeros(n + 1, dtype=torch.long)
        self.ptr[1:] = torch.cumsum(torch.bincount(ei[1], minlength=n), 0)
        if node_idx is None:
            node_idx = torch.arange(n)
        elif node_idx.dtype == torch.bool:
            node_idx = node_idx.nonzero().view(-1)
        self.node_idx, self.sizes, self.batch_size, self.shuffle = node_idx.cpu().long(), list(sizes), batch_size, shuffle
        self.loc = torch.full((n,), -1, dtype=torch.long)

    def __len__(self):
        return (len(self.node_idx) + self.batch_size - 1) // self.batch_size

    def _hop(self, n_id, size):
        deg = self.ptr[n_id + 1] - self.ptr[n_id]
        tgt = torch.repeat_interleave(torch.arange(len(n_id)), deg)
        first = torch.repeat_interleave(self.ptr[n_id], deg)
        within = torch.arange(int(deg.sum())) - torch.repeat_interleave(torch.cumsum(deg, 0) - deg, deg)
        e = first + within
        if size >= 0:   # a random rank within each target's edges; keep the first `size`
            o = torch.argsort(torch.rand(len(e)))
            o = o[torch.argsort(tgt[o], stable=True)]
            rank = torch.empty_like(o)
            rank[o] = torch.arange(len(o)) - torch.repeat_interleave(torch.cumsum(deg, 0) - deg, deg)
            keep = rank < size
            e, tgt = e[keep], tgt[keep]
        u = self.src[e]
        self.loc[n_id] = torch.arange(len(n_id))
        new = torch.unique(u[self.loc[u] < 0])
        self.loc[new] = len(n_id) + torch.arange(len(new))
        col = self.loc[u]
        all_id = torch.cat([n_id, new])
        self.loc[all_id] = -1
        return _Adj(torch.stack([col, tgt]), self.e_id[e], (len(all_id), len(n_id))), all_id

    def __iter__(self):
        idx = self.node_idx[torch.randperm(len(self.node_idx))] if self.shuffle else self.node_idx
        for start in range(0, len(idx), self.batch_size):
            batch = idx[start:start + self.batch_size]
            n_id, adjs = batch, []
            for size in self.sizes:
                adj, n_id = self._hop(n_id, size)
                adjs.append(adj)
            adjs = adjs[::-1]
            yield len(batch), n_id, adjs[0] if len(adjs) == 1 else adjs


def _feddep_transform() -> None:
    """openfgl 1.1.0's FedDEP `HideGraph` subclasses PyG's BaseTransform but overrides `__call__`
    instead of the abstract `forward` newer PyG declares, so it cannot be instantiated; its
    `__call__` is what OpenFGL calls, so clearing the abstract-method set changes no arithmetic."""
    from openfgl.flcore.feddep import _utils, client
    _utils.HideGraph.__abstractmethods__ = frozenset()
    # its NeighborSampler needs torch_sparse (no wheel for this torch): the stand-in above
    _utils.NeighborSampler = client.NeighborSampler = _NeighborSampler


# per-algorithm fixes needed for OpenFGL to run here (applied before FGLTrainer is built)
PATCHES = {"adafgl": _adafgl_scipy_matmul, "feddep": _feddep_transform}


def make_args(job: dict):
    from openfgl.config import parser
    args = parser.parse_args([])
    args.root = job["root"]
    args.dataset = [job["openfgl_dataset"]]
    args.scenario, args.task = "subgraph_fl", "node_cls"
    args.simulation_mode, args.louvain_resolution = "subgraph_fl_louvain", 1
    args.num_clients, args.num_rounds = job["clients"], job["rounds"]
    args.fl_algorithm = job["openfgl_algorithm"]
    args.model = ["gcn"]
    args.hid_dim, args.num_layers, args.dropout = job["hidden"], job["num_layers"], job["dropout"]
    args.lr, args.weight_decay, args.num_epochs, args.optim = job["lr"], job["weight_decay"], job["local_epochs"], "adam"
    args.metrics = ["accuracy"]
    args.evaluation_mode = job["eval_mode"]
    args.use_cuda = False
    args.seed = job["seed"]
    args.train_val_test = "default_split"
    return args


def train_and_measure(trainer_class, args, quiet: io.StringIO | None = None) -> dict:
    """Build and train OpenFGL's FGLTrainer (its per-round printing swallowed) and measure it: best and
    last test accuracy, the per-round test accuracy, wall and CPU time per round, this process's peak
    RSS (Linux ru_maxrss, data loading included). Shared by run_openfgl_graph_fl.py."""
    quiet = quiet or io.StringIO()
    with contextlib.redirect_stdout(quiet):
        trainer = trainer_class(args)
    rows, stamps = [], []
    add_log = trainer.logger.add_log
    # each round ends with one log row: its (wall, CPU) stamp gives per-round times
    trainer.logger.add_log = lambda r: (rows.append(dict(r)), stamps.append((time.perf_counter(), time.process_time())),
                                        add_log(r))[-1]
    with contextlib.redirect_stdout(quiet):   # OpenFGL prints every client every round
        t0, c0 = time.perf_counter(), time.process_time()
        trainer.train()
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    ends = [(t0, c0)] + stamps
    best = trainer.evaluation_result
    return {"best_val": float(best["best_val_accuracy"]), "best_test": float(best["best_test_accuracy"]),
            "best_round": int(best["best_round"]) + 1,
            "final_test": float(rows[-1]["current_test_accuracy"]) if rows else None,
            "test_history": [float(r["current_test_accuracy"]) for r in rows],
            "rounds": len(rows), "train_seconds": wall, "ms_per_round": 1000.0 * wall / max(len(rows), 1),
            "cpu_ms_per_round": 1000.0 * cpu / max(len(rows), 1),
            "round_ms": [1000.0 * (b[0] - a[0]) for a, b in zip(ends, ends[1:])],
            "round_cpu_ms": [1000.0 * (b[1] - a[1]) for a, b in zip(ends, ends[1:])],
            "torch": torch.__version__, "torch_threads": torch.get_num_threads(),
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def set_openfgl_config(job: dict) -> None:
    """Write the job's `openfgl_config` (if any) into the algorithm's module-level config dict
    (openfgl/flcore/<name>/<name>_config.py), refusing keys that dict does not have."""
    if not job.get("openfgl_config"):
        return
    import importlib
    name = job["openfgl_algorithm"]
    config = importlib.import_module(f"openfgl.flcore.{name}.{name}_config").config
    unknown = set(job["openfgl_config"]) - set(config)
    if unknown:
        raise KeyError(f"{name}_config has no keys {sorted(unknown)} (has {sorted(config)})")
    config.update(job["openfgl_config"])


def main(job_path: str, result_path: str) -> None:
    with open(job_path) as f:
        job = json.load(f)
    arrays = dict(np.load(job["arrays"]))
    torch.set_num_threads(job.get("threads") or torch.get_num_threads())
    lay_out(job, arrays)
    if job["openfgl_algorithm"] in NEEDS_SCATTER_SHIMS:
        install_scatter_shims()
    from openfgl.flcore.trainer import FGLTrainer
    from openfgl.utils.basic_utils import seed_everything
    if job["openfgl_algorithm"] == "fedprox":
        from openfgl.flcore.fedprox.fedprox_config import config
        config["fedprox_mu"] = job["prox_mu"]
    set_openfgl_config(job)
    if job["openfgl_algorithm"] in PATCHES:
        PATCHES[job["openfgl_algorithm"]]()
    args = make_args(job)
    seed_everything(args.seed)
    out = train_and_measure(FGLTrainer, args)
    with open(result_path, "w") as f:
        json.dump(out, f)


if __name__ == "__main__":
    main(*sys.argv[1:3])
