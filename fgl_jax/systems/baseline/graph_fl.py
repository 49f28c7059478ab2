"""Host preparation of the graph-level tasks (graph_cls, graph_reg) of `fgl-jax run`: load a set of
graphs, deal them to clients, split each client's graphs, pack train and evaluation mini-batches.

The same partition and split serve every algorithm; `global` (data="full_graph") trains one client
holding the union of the clients' splits (centralised training on the same graphs).
"""
from __future__ import annotations

import dataclasses
from typing import Optional

import jax
import numpy as np

from fgl_jax import registry
from fgl_jax.data import load, source
from fgl_jax.data.graph_domains import combine_graph_sets, domain_group
from fgl_jax.data.tu import GraphSet, check_graph_set
from fgl_jax.federated.algorithm import FedData
from fgl_jax.federated.backdoor import (TEST_KEY, TRAIN_KEY, check_backdoor_target, plant_graph_triggers,
                                        poison_choice, trigger_edges, triggered_test_rows)
from fgl_jax.graph_batch import GraphBatch, budgets, pack_clients, select_graph_clients, with_size_classes
from fgl_jax.nn.graph import GraphClassifier
from fgl_jax.partition.graphs import (client_groups, dirichlet_graph_partition, domain_partition, mean_degree,
                                      mean_feature, ordered_chunk_partition, per_client_graph_split,
                                      sorted_segment_partition, uniform_graph_partition)

OPENFGL_GRAPH_FRACTIONS = (0.8, 0.1, 0.1)   # openfgl/task/graph_cls.py default_train_val_test_split


def load_graph_set(cfg) -> GraphSet:
    """The run's set of graphs; any other kind of dataset is refused in one line. With partition
    cross_domain, `cfg.dataset` is a group or a comma list and the sets are joined
    (`fgl_jax.data.graph_domains`; meta["domain"] holds each graph's dataset)."""
    if cfg.partition == "cross_domain":
        gs, domain = combine_graph_sets([_load_one(name, cfg) for name in domain_group(cfg.dataset)])
        gs.meta["domain"] = domain
        return gs
    return _load_one(cfg.dataset, cfg)


def _load_one(name: str, cfg) -> GraphSet:
    src = source(name, cfg.data_dir)
    if src.kind != "graphs":
        raise ValueError(f"task {cfg.task}: dataset {src.label} is a {src.kind} dataset, not a set of graphs (the TU "
                         "sets, kind 'graphs' in `fgl-jax datasets`, or a TU directory / zip)")
    return load(name, data_dir=cfg.data_dir)


def graph_assignment(gs: GraphSet, cfg) -> np.ndarray:
    """int32 [G]: the configured simulation's client of every graph (`fgl_jax.partition.graphs`)."""
    if cfg.partition == "dirichlet":
        return dirichlet_graph_partition(gs.y, cfg.clients, cfg.dirichlet_beta, cfg.partition_seed)
    if cfg.partition == "topology_skew":
        return sorted_segment_partition(mean_degree(gs), cfg.clients)
    if cfg.partition == "feature_skew":
        return sorted_segment_partition(mean_feature(gs), cfg.clients)
    if cfg.partition == "ordered_chunks":
        return ordered_chunk_partition(gs.num_graphs, cfg.clients, cfg.partition_seed)
    if cfg.partition == "cross_domain":
        if "domain" not in gs.meta:
            raise ValueError(f"partition cross_domain: graph set {gs.name!r} was not joined from several datasets "
                             "(give --dataset a group such as chem or a comma list)")
        return domain_partition(gs.meta["domain"], cfg.clients, cfg.partition_seed)
    return uniform_graph_partition(gs.num_graphs, cfg.clients, cfg.partition_seed)


def task_targets(gs: GraphSet, task: str) -> GraphSet:
    """gs with the targets the task reads: classes for graph_cls; float targets for graph_reg (a
    classification set's file label values as numbers).

    Args:
      gs: a loaded GraphSet.
      task: graph_cls or graph_reg.

    Returns:
      The GraphSet whose `y` the task trains on (a one-line ValueError when it has none).
    """
    if task == "graph_cls":
        if gs.num_classes == 0:
            raise ValueError(f"task graph_cls: dataset {gs.name!r} has regression targets, not classes (use graph_reg)")
        return gs
    if gs.num_classes == 0:
        return gs
    values = np.asarray(gs.meta.get("label_values", np.arange(gs.num_classes)), np.float32)
    return dataclasses.replace(gs, y=values[gs.y], num_classes=0)


def graph_split(cfg, gs: GraphSet) -> tuple[np.ndarray, dict]:
    """The configured run's client of every graph and per-client split (what `prepare` packs; the
    OpenFGL harness exports the same arrays).

    Args:
        cfg: the run's RunConfig (partition, clients, seeds, split fractions, task).
        gs: its graph set (`load_graph_set(cfg)`, after `task_targets`).

    Returns:
        (assignment int32 [G], {"train", "val", "test"}: bool [G] masks).
    """
    assignment = graph_assignment(gs, cfg)
    fracs = (cfg.train_frac, cfg.val_frac, cfg.test_frac) if cfg.split == "per_client" else OPENFGL_GRAPH_FRACTIONS
    return assignment, per_client_graph_split(gs.y, assignment, cfg.clients, fracs, cfg.split_seed,
                                              by_class=cfg.task == "graph_cls")


def graph_train_order(cfg, gs: GraphSet) -> list[np.ndarray]:
    """Each client's training graphs in the order its local training cuts them into mini-batches
    and walks them every epoch (`--graph-order`; what `prepare_graph_task` packs), for a peer
    harness that hands another library the same mini-batches.

    Args:
        cfg: the run's RunConfig (graph_cls / graph_reg).
        gs: its graph set.

    Returns:
        cfg.clients int arrays of GraphSet rows.
    """
    assignment, masks = graph_split(cfg, gs)
    return client_groups(assignment, cfg.clients, masks["train"], cfg.split_seed, cfg.graph_order)


def prepare_graph_task(cfg, gs: Optional[GraphSet] = None):
    """(GraphSet, FedData, report) of the configured graph-level run."""
    gs = task_targets(check_graph_set(gs if gs is not None else load_graph_set(cfg)), cfg.task)
    spec = registry.algorithm(cfg.algorithm)
    if spec.prepare_graphs is not None:  # the algorithm's own host step on the graphs (FedStar's encodings)
        gs = spec.prepare_graphs(gs, cfg.hparams())
    if cfg.clients > gs.num_graphs:
        raise ValueError(f"clients={cfg.clients} is more than the {gs.num_graphs} graphs of {gs.name!r}")
    assignment, masks = graph_split(cfg, gs)
    clients = cfg.clients
    if spec.data == "full_graph":  # centralised: one client, the same split
        assignment, clients = np.zeros_like(assignment), 1
    for name, m in masks.items():
        if not m.any():
            raise ValueError(f"the split leaves no {name} graphs on {gs.name!r} ({gs.num_graphs} graphs, {cfg.clients} "
                             "clients; check the fractions)")
    size, how = cfg.graph_batch_size, cfg.graph_batching
    eval_groups = client_groups(assignment, clients, None, cfg.split_seed, cfg.graph_order)
    if cfg.client_exec == "packed" and cfg.norm == "batch":
        # batch norm's evaluation statistics are a client's whole set of graphs: one mini-batch per
        # client holds them all, so the size classes re-pad clients, not parts of one
        whole = max(1, max(len(g) for g in eval_groups))
        eval_batch = pack_clients(gs, eval_groups, masks, batch_size=whole, batching="count")
    else:
        eval_batch = pack_clients(gs, eval_groups, masks, batch_size=size, batching=how)
    if cfg.client_exec == "packed":   # evaluation mini-batch by mini-batch in size-class shapes
        eval_batch = with_size_classes(eval_batch, cfg.graph_size_classes, steps="graphs")
    train_groups = client_groups(assignment, clients, masks["train"], cfg.split_seed, cfg.graph_order)
    if cfg.attack == "backdoor":
        data, bd_report = backdoor_graph_data(cfg, gs, assignment, clients, masks, eval_batch, train_groups)
    else:
        train = pack_clients(gs, train_groups, masks, batch_size=size, batching=how)
        if cfg.client_exec == "packed":   # local steps in size-class shapes, clients in sequence
            train = with_size_classes(train, cfg.graph_size_classes)
        data = make_graph_fed_data(eval_batch, train)
    shape = lambda b: {"minibatches": b.num_minibatches, "nodes": int(b.x.shape[-2]), "edges": int(b.senders.shape[-1]),
                       "graph_slots": b.num_graph_slots}
    report = {"graphs_per_client": np.bincount(assignment, minlength=clients).tolist(),
              "train_graphs_per_client": [int((masks["train"] & (assignment == c)).sum()) for c in range(clients)],
              "train_batch": shape(data.train), "eval_batch": shape(eval_batch)}
    if data.train.packed:   # packed client execution: the size classes' [S, N, E] (slots per client)
        report["size_classes"] = [{"slots": v.num_minibatches, "nodes": int(v.x.shape[-2]),
                                   "edges": int(v.senders.shape[-1])} for v in data.train.classes]
    if cfg.attack == "backdoor":
        report["backdoor"] = bd_report
    if "domains" in gs.meta:
        report["datasets"] = list(gs.meta["domains"])
        report["class_blocks"] = [list(b) for b in gs.meta["class_blocks"]]
    if gs.num_classes:
        report["labels_per_client"] = [np.bincount(gs.y[assignment == c], minlength=gs.num_classes).tolist()
                                       for c in range(clients)]
    return gs, data, report


def backdoor_graph_data(cfg, gs: GraphSet, assignment: np.ndarray, clients: int, masks: dict, eval_batch: GraphBatch,
                        train_groups: list) -> tuple:
    """(FedData, report) of a backdoor run (`fgl_jax.federated.backdoor`): the clean training batch and
    every client's poisoned one (its poison_rate of training graphs with the trigger, label attack_target)
    packed with the same budgets, the poisoned one [C, ...] in extra["backdoor_train"]; the triggered
    copies of every client's test graphs not of the target class in extra["backdoor_test"] (test_mask)."""
    check_backdoor_target(cfg.attack_target, gs.num_classes, f"dataset {gs.name!r}")
    if cfg.graph_batching != "count":
        # the clean and poisoned training sets share one shape: count batching keeps their runs aligned
        raise ValueError(f"--attack backdoor packs graphs with --graph-batching count, got {cfg.graph_batching!r}")
    size, seed = cfg.graph_batch_size, cfg.attack_seed
    poison = poison_choice(assignment, masks["train"], clients, cfg.attack_poison_rate, seed)
    bad = plant_graph_triggers(gs, np.flatnonzero(poison), cfg.attack_trigger_size, cfg.attack_density,
                               cfg.attack_target, seed)
    m, n, e = budgets(bad, train_groups, size)
    pack = lambda g: pack_clients(g, train_groups, masks, batch_size=size, num_minibatches=m, num_nodes=n, num_edges=e)
    data = make_graph_fed_data(eval_batch, pack(gs))
    asr_rows = triggered_test_rows(gs.y, masks["test"], cfg.attack_target)
    trig = plant_graph_triggers(gs, np.flatnonzero(asr_rows), cfg.attack_trigger_size, cfg.attack_density,
                                cfg.attack_target, seed)
    none = np.zeros(gs.num_graphs, bool)
    test = pack_clients(trig, client_groups(assignment, clients, asr_rows, cfg.split_seed, cfg.graph_order),
                        {"train": none, "val": none, "test": asr_rows}, batch_size=size)
    report = {"poisoned_train_graphs_per_client": np.bincount(assignment[poison], minlength=clients).tolist(),
              "triggered_test_graphs": int(asr_rows.sum()),
              "trigger_edges": int(trigger_edges(cfg.attack_trigger_size, cfg.attack_density, seed)[0].size // 2)}
    return data.replace(extra={TRAIN_KEY: pack(bad), TEST_KEY: test}), report


def make_graph_fed_data(eval_batch: GraphBatch, train_batch: GraphBatch):
    """FedData of a graph-level task: `eval` holds every client's graphs with the split masks,
    `train` the clients holding a training graph, their training graphs only (so local epochs walk
    training graphs only); train_weight = training graphs per client (FedAvg's weights)."""
    counts = (np.asarray(train_batch.train_mask).sum(axis=(1, 2)) * np.asarray(eval_batch.client_mask))
    index = np.flatnonzero(counts > 0).astype(np.int32)
    if index.size == 0:
        raise ValueError("no client holds a training graph: check the split fractions")
    train = train_batch if index.size == train_batch.num_clients else select_graph_clients(train_batch, index)
    return FedData(eval=eval_batch, train=train, train_index=jax.device_put(index),
                   train_weight=jax.device_put(counts[index].astype(np.float32)), train_is_eval=False)


def graph_model(cfg, gs: GraphSet) -> GraphClassifier:
    """The configured graph classifier (one output for graph_reg).

    Args:
      cfg: the run's RunConfig (hidden, num_layers, dropout, graph_model, graph_pooling, task, norm).
      gs: the GraphSet it classifies (feature width, classes, cross-domain class blocks in its meta).

    Returns:
      An unbound `fgl_jax.nn.GraphClassifier`.
    """
    domains = tuple(gs.meta.get("class_blocks", ()))
    return GraphClassifier(in_dim=gs.num_features - len(domains), hidden=cfg.hidden, num_classes=gs.num_classes or 1,
                           num_layers=cfg.num_layers, dropout=cfg.dropout, conv=cfg.graph_model,
                           pooling=cfg.graph_pooling, task=cfg.task, norm=cfg.norm, domains=domains)
