"""From a RunConfig to results: load -> split -> partition -> batch -> algorithm -> run.

The host-side steps (`prepare`) run once; `train` is the jitted federated program. The
same functions back the CLI, the experiments and the benchmarks, so they all run the same code.
"""
from __future__ import annotations

import dataclasses
import json
import platform
import time
from pathlib import Path
from typing import Optional

import jax
import numpy as np

from fgl_jax.batch import build_client_batch, full_graph_batch
from fgl_jax.config import RunConfig, save_config
from fgl_jax.data import load, per_class_split, random_split
from fgl_jax.federated import FedConfig, OptimConfig, RunResult, baseline, make_fed_data, run
from fgl_jax.graph import Graph
from fgl_jax.nn import make_model
from fgl_jax.partition import Partition, make_partition


@dataclasses.dataclass(frozen=True)
class Prepared:
    graph: Graph
    partition: Optional[Partition]
    data: object  # FedData


def split_graph(graph: Graph, cfg: RunConfig) -> Graph:
    if cfg.split == "random":
        return random_split(graph, cfg.train_frac, cfg.val_frac, cfg.test_frac, seed=cfg.split_seed)
    if cfg.split == "per_class":
        return per_class_split(graph, cfg.num_train_per_class, cfg.num_val, seed=cfg.split_seed)
    if cfg.split == "standard" and not graph.train_mask.any():
        raise ValueError(f"dataset {graph.name!r} has no standard split; use split='random' or 'per_class'")
    return graph


def prepare(cfg: RunConfig, graph: Optional[Graph] = None) -> Prepared:
    """Host-side preparation (once): the padded client batch of the configured partition."""
    if graph is None:
        graph = load(cfg.dataset, data_dir=cfg.data_dir)
    graph = split_graph(graph, cfg)
    if cfg.algorithm == "global":
        return Prepared(graph, None, make_fed_data(full_graph_batch(graph)))
    if cfg.clients > graph.num_nodes:
        raise ValueError(f"clients={cfg.clients} is more than the {graph.num_nodes} nodes of {graph.name!r}")
    kwargs = {"beta": cfg.dirichlet_beta} if cfg.partition == "dirichlet" else {}
    part = make_partition(graph, cfg.partition, cfg.clients, seed=cfg.partition_seed, **kwargs)
    batch = build_client_batch(graph, part.assignment, cfg.clients)
    return Prepared(graph, part, make_fed_data(batch))


def algorithm_from_config(cfg: RunConfig, graph: Graph):
    model = make_model(cfg.model, graph.num_features, graph.num_classes, hidden=cfg.hidden,
                       num_layers=cfg.num_layers, dropout=cfg.dropout)
    optim = OptimConfig(name=cfg.optimizer, lr=cfg.lr, weight_decay=cfg.weight_decay, gamma=cfg.lr_gamma,
                        decay_every=cfg.lr_decay_every)
    algo = "fedavg" if cfg.algorithm == "global" else cfg.algorithm
    fed = FedConfig(algorithm=algo, local_steps=cfg.local_steps, prox_mu=cfg.prox_mu,
                    personal_layers=cfg.personal_layers, optim=optim, client_chunk=cfg.client_chunk)
    return baseline(model, fed)


def train(cfg: RunConfig, prepared: Optional[Prepared] = None, out_dir: Optional[str] = None,
          resume: bool = False, progress: bool = False) -> RunResult:
    """Run the configured experiment; with out_dir, write config.yaml, metrics.jsonl, checkpoints, summary.json."""
    prepared = prepared or prepare(cfg)
    alg = algorithm_from_config(cfg, prepared.graph)
    if out_dir is not None:
        Path(out_dir).mkdir(parents=True, exist_ok=True)
        save_config(cfg, Path(out_dir) / "config.yaml")
    t0 = time.perf_counter()
    if len(jax.devices()) > 1 and cfg.algorithm != "global":
        # clients sharded over every device; same numbers as one device (tests/test_sharding.py)
        from fgl_jax.federated.sharding import run_sharded
        res = run_sharded(alg, prepared.data, jax.random.key(cfg.seed), cfg.rounds, chunk=cfg.chunk,
                          progress=progress, out_dir=out_dir, resume=resume)
    else:
        res = run(alg, prepared.data, jax.random.key(cfg.seed), cfg.rounds, chunk=cfg.chunk, progress=progress,
                  out_dir=out_dir, resume=resume)
    if out_dir is not None:
        summary = {"best": res.best, "final": res.final, "rounds": cfg.rounds,
                   "compile_seconds": res.compile_seconds, "run_seconds": res.run_seconds,
                   "wall_seconds": time.perf_counter() - t0, "environment": environment()}
        (Path(out_dir) / "summary.json").write_text(json.dumps(summary, indent=2))
    return res


def environment() -> dict:
    """Versions and machine, recorded beside every result."""
    import flax, optax
    return {"python": platform.python_version(), "jax": jax.__version__, "flax": flax.__version__,
            "optax": optax.__version__, "numpy": np.__version__, "platform": platform.platform(),
            "processor": platform.processor() or platform.machine(), "devices": [str(d) for d in jax.devices()]}


def build_program(options: dict, data_dir: Optional[str] = None):
    """The baselines' `build_program` (same interface as every system): options = RunConfig fields.

    Returns a `fgl_jax.federated.Program`, so `fgl-jax sweep --system baseline` and the systems share
    one code path (run_sweep over `state.hp`: lr, prox_mu).
    """
    from fgl_jax.config import from_dict
    from fgl_jax.federated import Program
    values = {k: v for k, v in options.items() if k != "system"}
    if data_dir is not None:
        values["data_dir"] = data_dir
    cfg = from_dict(values, source="baseline options")
    prepared = prepare(cfg)
    return Program(algorithm_from_config(cfg, prepared.graph), prepared.data, cfg.rounds,
                   {"system": "baseline", "dataset": cfg.dataset, "algorithm": cfg.algorithm, "model": cfg.model,
                    "clients": cfg.clients, "partition": cfg.partition})
