"""The baseline frameworks as a system: load -> split -> partition -> client batch -> algorithm.

The host-side steps (`prepare`) run once; the algorithm comes from the registry. `fgl-jax run`,
the sweep, the experiments and the benchmarks all build through here.
"""
from __future__ import annotations

import dataclasses
import logging
import sys
from typing import Optional

from fgl_jax import progress, registry
from fgl_jax.batch import build_client_batch, full_graph_batch, link_client_batch, stack_partition, with_ell_features
import jax
import numpy as np

from fgl_jax.data.splits import fixed_split
from fgl_jax.data import load_graph, openfgl_fractions, source, per_class_split, per_client_split, processing, random_split
from fgl_jax.federated import FedConfig, OptimConfig, Program, make_fed_data
from fgl_jax.federated.config import SecureAgg
from fgl_jax.federated.sampling import parse_fanout, with_sampler
from fgl_jax.federated.algorithm import Hooks, HostInput
from fgl_jax.federated.fedavg_family import BaselineState
from fgl_jax.federated import communication
from fgl_jax.federated.link import SELECT as LINK_SELECT
from fgl_jax.aggregators import robust
from fgl_jax.aggregators.attacks import UPLOAD_ATTACKS, attack
from fgl_jax.aggregators.knobs import names as knob_names
from fgl_jax.federated.adversary import attacker_ids, with_adversaries
from fgl_jax.federated.backdoor import (TEST_KEY, TRAIN_KEY, asr_summary, check_backdoor_target,
                                        node_backdoor_batches, with_attack_success)
from fgl_jax.federated.participation import participants, with_participation
from fgl_jax.privacy.dp import LocalDP, epsilons
from fgl_jax.privacy import dp as dp_privacy
from fgl_jax.privacy import node_dp
from fgl_jax.privacy.secure_sum import check_threshold, dropped_count, majority, protocol_bytes
from fgl_jax.graph import Graph, symmetrize
from fgl_jax.nn import ModelSpec
from fgl_jax.nn.link import LinkModel
from fgl_jax.partition import Partition, make_partition, partition_report
from fgl_jax.federated.graph_task import SELECT_REG
from fgl_jax.partition.from_file import partition_from_file
from fgl_jax.partition.openfgl_cache import is_openfgl_cache, read_openfgl_cache
from fgl_jax.systems.baseline.config import GRAPH_TASKS, RunConfig
from fgl_jax.systems.baseline.graph_fl import graph_model, prepare_graph_task


@dataclasses.dataclass(frozen=True)
class Prepared:
    graph: Graph
    partition: Optional[Partition]
    data: object  # FedData
    # bytes of an algorithm's one-off exchange before training, summed over clients (registry info
    # `pre_communication`, e.g. FedGCN's neighbour aggregates): {"up_bytes", "down_bytes"} or None
    pre_communication: Optional[dict] = None
    # graph-level tasks: graphs per client, label counts, the mini-batch budgets (summary.json)
    report: Optional[dict] = None
    # per-process data (`fgl_jax.federated.local_data`): the unpadded FedData's shapes, which the
    # host-side bookkeeping (participants, bytes) counts clients on; None: `data` itself
    shapes: object = None


PER_CLIENT = ("per_client", "openfgl")


def split_graph(graph: Graph, cfg: RunConfig) -> Graph:
    """The split done before partitioning (per-client splits are done after it: `split_clients`)."""
    if cfg.split in PER_CLIENT:
        return graph
    if cfg.split_index not in ("", "all"):  # "all" is run by fgl_jax.systems.baseline.fixed_splits, one split per member
        graph = fixed_split(graph, int(cfg.split_index))
    if cfg.split == "random":
        out = random_split(graph, cfg.train_frac, cfg.val_frac, cfg.test_frac, seed=cfg.split_seed)
    elif cfg.split == "per_class":
        out = per_class_split(graph, cfg.num_train_per_class, cfg.num_val, seed=cfg.split_seed)
    elif cfg.split == "standard" and not graph.train_mask.any():
        if graph.meta.get("split", {}).get("kind") == "given":  # the file's masks, not a missing split
            raise ValueError(f"dataset {graph.name!r}: its train_mask has no True entries, so its split has no "
                             "training node; mark some train_mask entries True, leave the masks out (the loader "
                             "then draws a stratified 60/20/20 split), or use split random or per_class")
        raise ValueError(f"dataset {graph.name!r} has no standard split; use split random or per_class")
    else:
        out = graph
    # an empty mask would report accuracy 0 (or the loss of nothing) as if it were a result
    for name in ("train", "val", "test"):
        if not getattr(out, f"{name}_mask").any():
            raise ValueError(f"split {cfg.split!r} leaves no {name} nodes on {graph.name!r} "
                             f"({graph.num_nodes} nodes; check num_val / the fractions)")
    return out


def split_clients(graph: Graph, assignment, cfg: RunConfig) -> Graph:
    """OpenFGL's per-client split of the partitioned graph (split per_client / openfgl). With split
    openfgl and a --partition-file of OpenFGL's cache that holds its split files, the cached masks
    (OpenFGL's own draw) are the split."""
    if cfg.split == "openfgl" and cfg.partition_file and is_openfgl_cache(cfg.partition_file):
        cached = read_openfgl_cache(cfg.partition_file, graph).masks
        if cached is not None:
            return graph.with_masks(*cached)
    fracs = openfgl_fractions(cfg.dataset) if cfg.split == "openfgl" else (cfg.train_frac, cfg.val_frac,
                                                                           cfg.test_frac)
    return per_client_split(graph, assignment, cfg.clients, *fracs, seed=cfg.split_seed)


def perturb_structure(graph: Graph, cfg: RunConfig) -> Graph:
    """The robustness perturbations of features and edges (before the split and the partition)."""
    return processing.perturb(graph, seed=cfg.processing_seed, feature_noise_std=cfg.feature_noise_std,
                              feature_sparsity=cfg.feature_sparsity, feature_noise=cfg.feature_noise,
                              topology_sparsity=cfg.topology_sparsity, topology_noise=cfg.topology_noise)


def bound_degrees(graph: Graph, cfg: RunConfig) -> Graph:
    """Node-level DP's edge sampling (`fgl_jax.privacy.node_dp.bounded_degree_edges`, seed
    processing_seed): every node keeps at most node_dp_degree in- and out-edges. Unchanged when off."""
    if cfg.node_dp_degree <= 0:
        return graph
    keep = node_dp.bounded_degree_edges(graph.senders, graph.receivers, cfg.node_dp_degree, cfg.processing_seed)
    return dataclasses.replace(graph, senders=np.asarray(graph.senders)[keep], receivers=np.asarray(graph.receivers)[keep],
                               meta={**graph.meta, "node_dp_edges": {"before": int(keep.size), "after": int(keep.sum())}})


def perturb_labels(graph: Graph, cfg: RunConfig) -> Graph:
    """The label perturbations, on the training nodes (right after the split that defines them)."""
    return processing.perturb(graph, seed=cfg.processing_seed, label_sparsity=cfg.label_sparsity,
                              label_noise=cfg.label_noise)


def needs_global_graph(cfg: RunConfig) -> bool:
    return cfg.eval_mode.endswith("global_data")


def first_layer_layout(batch, cfg: RunConfig, graph: Graph):
    """The batch as the algorithm's jitted code reads it: EllFeatures (the faster first layer,
    `fgl_jax.batch.with_ell_features`) for algorithms registered with `features="ell"` (their
    features only go through `ops.feature_matmul`), else unchanged (SparseFeatures or dense)."""
    if registry.algorithm(cfg.algorithm).features != "ell":
        return batch
    return with_ell_features(batch, graph.num_features)


def training_layout(batch, cfg: RunConfig, graph: Graph):
    """`first_layer_layout`, or with --batch-size the batch with a neighbour sampler attached
    (`fgl_jax.federated.sampling.with_sampler`: dense features, per-client CSR) so local training
    runs on sampled mini-batches."""
    if not cfg.batch_size:
        return first_layer_layout(batch, cfg, graph)
    return with_sampler(batch, parse_fanout(cfg.fanout), cfg.batch_size, num_features=graph.num_features)


def partition_clients(graph: Graph, cfg: RunConfig) -> Partition:
    """The configured partition of `graph`'s nodes over `cfg.clients` clients: the one place both
    tasks (node_cls and link_pred) turn the config into partitioner options (`cfg.partition_kwargs`),
    so every option the config accepts reaches the partitioner whatever the task."""
    if cfg.clients > graph.num_nodes:
        raise ValueError(f"clients={cfg.clients} is more than the {graph.num_nodes} nodes of {graph.name!r}")
    if cfg.partition_file:  # a partition made elsewhere, node by node
        if cfg.split != "openfgl" and is_openfgl_cache(cfg.partition_file):
            # the cache also holds OpenFGL's own split: say that this run draws its own instead
            logging.getLogger("fgl_jax.data").warning(
                "%s: OpenFGL's cached split is used only with --split openfgl; this run's split is %r",
                cfg.partition_file, cfg.split)
        return partition_from_file(graph, cfg.partition_file, cfg.clients)
    if graph.meta.get("directed"):  # --directed keep: the partitioners (Louvain, METIS) read undirected structure
        s, r = symmetrize(graph.senders, graph.receivers, graph.num_nodes)
        graph = dataclasses.replace(graph, senders=s, receivers=r)
    return make_partition(graph, cfg.partition, cfg.clients, seed=cfg.partition_seed, **cfg.partition_kwargs())


def load_dataset_graph(cfg: RunConfig) -> Graph:
    """The configured dataset as a Graph; `cfg.directed == "keep"` keeps a file's one-way edges."""
    if cfg.directed == "keep":
        if source(cfg.dataset, cfg.data_dir).path is None:
            raise ValueError(f"directed=keep: dataset {cfg.dataset!r} is a registered name, built undirected; "
                             "keep applies to a graph file or directory given as a path")
        return load_graph(cfg.dataset, data_dir=cfg.data_dir, on_directed="keep")
    return load_graph(cfg.dataset, data_dir=cfg.data_dir)


def prepare(cfg: RunConfig, graph: Optional[Graph] = None) -> Prepared:
    """Host-side preparation (once): the padded client batch of the configured partition."""
    if cfg.task in GRAPH_TASKS:  # a set of graphs dealt to clients (graph_fl.py)
        gs, data, report = prepare_graph_task(cfg, graph)
        return Prepared(gs, None, data, report=report)
    if graph is None:
        graph = load_dataset_graph(cfg)
    progress.phase("preparing", f"{cfg.split} split, {cfg.partition} partition into {cfg.clients} clients")
    if cfg.task == "link_pred":
        return prepare_links(perturb_structure(graph, cfg), cfg)
    graph = bound_degrees(split_graph(perturb_structure(graph, cfg), cfg), cfg)
    if cfg.split not in PER_CLIENT:
        graph = perturb_labels(graph, cfg)
    full = registry.algorithm(cfg.algorithm).data == "full_graph"
    if full and cfg.split not in PER_CLIENT:
        batch = full_graph_batch(graph)
        return Prepared(graph, None, make_fed_data(training_layout(batch, cfg, graph),
                                                   glob=batch if needs_global_graph(cfg) else None))
    part = partition_clients(graph, cfg)
    if cfg.split in PER_CLIENT:
        graph = perturb_labels(split_clients(graph, part.assignment, cfg), cfg)
        if full:  # centralised training on the union of the clients' splits
            batch = full_graph_batch(graph)
            return Prepared(graph, part, make_fed_data(training_layout(batch, cfg, graph),
                                                       glob=batch if needs_global_graph(cfg) else None))
    if per_process(cfg):  # several processes: each builds only the clients its devices hold
        from fgl_jax.federated.local_data import local_fed_data
        from fgl_jax.federated.sharding import client_mesh
        data, shapes = local_fed_data(graph, part.assignment, cfg.clients, client_mesh(),
                                      glob=full_graph_batch(graph) if needs_global_graph(cfg) else None)
        return Prepared(graph, part, data, shapes=shapes)
    # stack_partition builds build_client_batch's arrays in O(N + E) instead of one pass over the
    # graph per client: what a sampled run at ogbn-products scale needs (tests/test_sharding.py: equal)
    spec = registry.algorithm(cfg.algorithm)
    backdoor = None
    if cfg.attack == "backdoor":  # clean and poisoned batches of one shape, the triggered test nodes
        batch, backdoor = backdoor_node_data(graph, part, cfg, spec)
    else:
        build = stack_partition if cfg.batch_size else build_client_batch
        batch = build(graph, part.assignment, cfg.clients)
    glob = full_graph_batch(graph) if needs_global_graph(cfg) else None
    extra, pre = None, None
    inp = HostInput(graph, np.asarray(part.assignment), batch, cfg.partition_seed)
    if spec.pre_communication is not None:  # bytes of a one-off exchange before training
        up, down = spec.pre_communication(inp, cfg.hparams())
        pre = {"up_bytes": int(up), "down_bytes": int(down)}
    if spec.prepare is not None:  # the algorithm's own host-side step (FedGCN's pre-communication, ...), once
        batch, extra = spec.prepare(inp, cfg.hparams())
    batch = training_layout(batch, cfg, graph)
    report = None
    if backdoor is not None:
        extra, report = {**(extra or {}), **backdoor[0]}, {"backdoor": backdoor[1]}
    return Prepared(graph, part, make_fed_data(batch, glob=glob, extra=extra), pre_communication=pre, report=report)


def backdoor_node_data(graph: Graph, part: Partition, cfg: RunConfig, spec) -> tuple:
    """(clean batch, ({backdoor_train, backdoor_test}, report)) of a node_cls backdoor run
    (`fgl_jax.federated.backdoor.node_backdoor_batches`); refused in one line where the poisoned data
    could not stand in for the clean one (an algorithm's own host preparation, neighbour sampling,
    centralised training)."""
    if spec.prepare is not None or cfg.batch_size:
        why = "prepares its own host data" if spec.prepare is not None else "trains on sampled mini-batches"
        raise ValueError(f"attack backdoor: algorithm {cfg.algorithm!r} {why} from the clean graph; the node-level "
                         "backdoor serves algorithms that train on the client subgraph (fedavg, fedprox, scaffold, ...)")
    check_backdoor_target(cfg.attack_target, graph.num_classes, f"dataset {graph.name!r}")
    clean, poisoned, test, report = node_backdoor_batches(
        graph, part.assignment, cfg.clients, cfg.attack_trigger_size, cfg.attack_density, cfg.attack_poison_rate,
        cfg.attack_target, cfg.attack_seed)
    return clean, ({TRAIN_KEY: poisoned, TEST_KEY: test}, report)


def per_process(cfg: RunConfig) -> bool:
    """Whether this run builds its client rows per process (`fgl_jax.federated.local_data`): under
    jax.distributed with several processes, for node classification over partitioned clients,
    unless the algorithm has its own host step over the whole batch (`prepare`), training samples
    neighbour mini-batches (its CSR is cut to the whole batch) or --eval-mia reads every client's
    rows on the host; and not inside `local_data.whole_data` (a sweep). Those build everything in
    every process, as before."""
    from fgl_jax.federated.local_data import wanted
    if not wanted() or cfg.task != "node_cls" or cfg.batch_size or cfg.eval_mia:
        return False
    return registry.algorithm(cfg.algorithm).prepare is None


def prepare_links(graph: Graph, cfg: RunConfig) -> Prepared:
    """Link prediction's host preparation: partition the nodes, then split each client's edges
    (`fgl_jax.batch.link_client_batch`); Global holds the whole graph as one client, so with one
    client every algorithm sees the centralised split pair for pair."""
    full = registry.algorithm(cfg.algorithm).data == "full_graph"
    # training negatives are drawn on the host either way: "fixed" trains on them, "resample" only
    # reports the train_* metrics on them (its loss draws new ones every step)
    link = dict(train=cfg.lp_train_frac, val=cfg.lp_val_frac, test=cfg.lp_test_frac, seed=cfg.split_seed,
                train_negatives=True)
    if full:
        return Prepared(graph, None, make_fed_data(link_client_batch(graph, np.zeros(graph.num_nodes, np.int64), 1,
                                                                     **link)))
    part = partition_clients(graph, cfg)
    batch = link_client_batch(graph, np.asarray(part.assignment), cfg.clients, **link)
    return Prepared(graph, part, make_fed_data(batch))


# --select-metric -> FederatedAlgorithm.select: (validation metric, test metric reported beside it[, "min"])
SELECT_KEYS = {"acc": ("val_acc", "test_acc"), "auc": ("val_auc", "test_auc"), "ap": ("val_ap", "test_ap"),
               "loss": ("val_loss", "test_acc", "min")}


def select_keys(cfg: RunConfig, graph: Graph) -> tuple:
    """The selection keys of `cfg.select_metric`; auc / ap of node classification need two classes
    (the metrics exist only for binary labels: `fgl_jax.federated.metrics.client_counts`)."""
    if cfg.task == "link_pred":
        return {"auto": LINK_SELECT, "auc": LINK_SELECT, "ap": ("val_ap", "test_ap")}[cfg.select_metric]
    if cfg.select_metric in ("auc", "ap") and graph.num_classes != 2:
        raise ValueError(f"select_metric {cfg.select_metric}: ROC-AUC and AP are computed for binary node labels; "
                         f"dataset {graph.name!r} has {graph.num_classes} classes (select by acc or loss)")
    return SELECT_KEYS["acc" if cfg.select_metric == "auto" else cfg.select_metric]


def model_from_config(cfg: RunConfig, graph: Graph) -> tuple:
    """(model, ModelSpec or None) of the configured task: the graph classifier for graph tasks
    (graph_fl.py, no node-level ModelSpec), else the node model (link prediction: `hidden` outputs)."""
    if cfg.task in GRAPH_TASKS:
        return graph_model(cfg, graph), None
    spec = ModelSpec(cfg.model, graph.num_features, cfg.hidden if cfg.task == "link_pred" else graph.num_classes,
                     hidden=cfg.hidden, num_layers=cfg.num_layers, dropout=cfg.dropout, norm=cfg.norm)
    return spec.build(), spec


def membership_attack(cfg: RunConfig, graph: Graph, data):
    """The loss- and confidence-threshold membership attacks (`fgl_jax.privacy.inference`) on a
    final state's logits of every client's nodes, training nodes (members) vs test nodes
    (non-members); what --eval-mia runs after training and `fgl-jax attack mia RUN_DIR` on a
    finished run's final checkpoint (one implementation). The model is the global one
    (`state.server`) or, for a personalised evaluation (eval_mode resolving to
    local_model_on_local_data), each client's own (the FedAvg family's personal layers over the
    global ones).

    Args:
        cfg: the run's config (task node_cls).
        graph: the graph after the run's preparation (`Prepared.graph`).
        data: the run's `FedData` (its `eval` batch holds every client's nodes, `[C, N, ...]`).

    Returns:
        attack(state) -> {"model": "global" | "personal", "members", "nonmembers",
        "auc_loss", "auc_confidence"}.
    """
    from fgl_jax.federated.evaluation import resolve_eval_mode
    from fgl_jax.federated.fedavg_family import personal_mask
    from fgl_jax.privacy import inference
    model, _ = model_from_config(cfg, graph)
    batch = data.eval
    personal = resolve_eval_mode(cfg.eval_mode, cfg.algorithm).startswith("local_model")

    def attack(state) -> dict:
        server = getattr(state, "server", None)
        if server is None:
            raise ValueError(f"eval_mia: algorithm {cfg.algorithm!r} keeps no global model (state.server) to attack")
        c = int(batch.num_clients)
        if personal and getattr(state, "personal", None) is not None:
            mask = personal_mask(server, cfg.algorithm, cfg.num_layers, getattr(cfg.hparams(), "personal_layers", 1))
            params = jax.tree.map(lambda m, s, p: p if m else jax.numpy.broadcast_to(s, p.shape), mask, server,
                                  state.personal)
            logits = jax.jit(jax.vmap(lambda p, b: model.apply(p, b, train=False)))(params, batch)
            which = "personal"
        else:
            logits = jax.jit(jax.vmap(lambda b: model.apply(server, b, train=False)))(batch)
            which = "global"
        real = np.asarray(batch.client_mask, bool)[:, None] if hasattr(batch, "client_mask") else np.ones((c, 1), bool)
        node = np.asarray(batch.node_mask, bool) if hasattr(batch, "node_mask") else True
        members = np.asarray(batch.train_mask, bool) & node & real
        nonmembers = np.asarray(batch.test_mask, bool) & node & real
        y = np.asarray(batch.y)
        out = {"model": which, "members": int(members.sum()), "nonmembers": int(nonmembers.sum())}
        for kind in inference.SCORES:
            out[f"auc_{kind}"] = inference.membership_auc(np.asarray(logits), y, members, nonmembers, kind)
        return out
    return attack


def membership_hook(cfg: RunConfig, graph: Graph, data):
    """`Hooks.finalize` of --eval-mia: `membership_attack` on the run's final state, as
    summary.json's `extras.mia`."""
    attack = membership_attack(cfg, graph, data)
    return lambda result: {"mia": attack(result.state)}


def algorithm_from_config(cfg: RunConfig, graph: Graph, data=None):
    """The registered algorithm with the configured model and common hyperparameters (for task
    link_pred: the model is a `LinkModel` whose encoder outputs `hidden`-wide embeddings, and the
    reported round is selected by val_auc). data: the run's `FedData`, needed with heterogeneous
    client models (their groups are fixed by which clients hold training nodes)."""
    link = cfg.task == "link_pred"
    model, spec = model_from_config(cfg, graph)
    if link:
        model = LinkModel(model, decoder=cfg.lp_decoder, hidden=cfg.hidden, dropout=cfg.dropout,
                          train_negatives=cfg.lp_negatives, hits_k=cfg.lp_hits_k)
    optim = OptimConfig(name=cfg.optimizer, lr=cfg.lr, weight_decay=cfg.weight_decay, gamma=cfg.lr_gamma,
                        decay_every=cfg.lr_decay_every, momentum=cfg.momentum)
    ldp = None
    if cfg.ldp != "none":
        # OpenFGL's query count: rounds x the fraction of clients taking part
        fraction = cfg.clients_per_round / cfg.clients if cfg.clients_per_round else cfg.client_fraction
        ldp = LocalDP(cfg.ldp, cfg.ldp_clip, cfg.ldp_epsilon, cfg.ldp_delta, queries=cfg.rounds * fraction)
    if cfg.node_dp_degree > 0:
        ldp = node_dp.NodeDP(cfg.node_dp_clip, cfg.node_dp_noise, cfg.node_dp_degree, cfg.num_layers)
    reduction, upload_stages, knobs = robust_aggregation(cfg)
    common = FedConfig(local_steps=cfg.local_steps, optim=optim, client_chunk=cfg.client_chunk,
                       eval_mode=cfg.eval_mode, eval_average=cfg.eval_average, dp_clip=cfg.dp_clip,
                       dp_noise=cfg.dp_noise, ldp=ldp, server_opt=cfg.server_hparams(), aggregator=reduction,
                       upload_stages=upload_stages, model=spec, secure_agg=secure_agg_options(cfg),
                       client_models=client_models_of(cfg, model if spec is None else spec, data))
    algorithm = registry.get("algorithm", cfg.algorithm)(model, common, cfg.hparams())
    if link:
        algorithm = algorithm._replace(select=LINK_SELECT)
    if cfg.task in GRAPH_TASKS and cfg.select_metric not in ("auto", "acc" if cfg.task == "graph_cls" else "auto"):
        raise ValueError(f"select_metric={cfg.select_metric!r} is for node and link tasks; task {cfg.task} selects "
                         f"its round by {'validation accuracy' if cfg.task == 'graph_cls' else 'validation MSE'} "
                         "(select_metric auto)")
    if cfg.task == "graph_reg":
        algorithm = algorithm._replace(select=SELECT_REG)
    elif cfg.task not in GRAPH_TASKS and cfg.select_metric not in ("auto", "acc"):
        algorithm = algorithm._replace(select=select_keys(cfg, graph))
    algorithm = with_adversaries(algorithm, knobs, cfg.attack, cfg.attackers, cfg.attack_seed,
                                 num_classes=None if link else graph.num_classes)
    if cfg.attack == "backdoor":  # test_asr of the global model, every round
        algorithm = with_attack_success(algorithm, model)
    return with_participation(algorithm, cfg.client_fraction, cfg.clients_per_round)


def client_models_of(cfg: RunConfig, base, data):
    """FedConfig's heterogeneous client models from --client-models / --client-models-file (None when off).

    Args:
        cfg: the run's config.
        base: the run's node `ModelSpec`, or on a graph task its `GraphClassifier` (each architecture is
            a copy with its own conv, depth and width).
        data: the run's `FedData` (the groups follow which clients hold training nodes or graphs).

    Returns:
        A `fgl_jax.federated.client_models.ClientModels`, or None.
    """
    if not (cfg.client_models or cfg.client_models_file):
        return None
    from fgl_jax.federated import client_models as cm
    if data is None:
        raise ValueError("client_models: algorithm_from_config needs the run's data (the groups follow which clients "
                         "hold training nodes): pass data=prepared.data, or build the run with fgl_jax.build")
    specs = cm.read_client_models_file(cfg.client_models_file, cfg.task) if cfg.client_models_file \
        else cm.parse_client_models(cfg.client_models, cfg.task)
    return cm.make_client_models(specs, base, int(data.eval.num_clients), np.asarray(data.train_index),
                                 per_client=bool(cfg.client_models_file))


def client_models_describe(cfg: RunConfig) -> dict:
    """summary.json's record of the heterogeneous client models: the spec or file as given."""
    return {"spec": cfg.client_models} if cfg.client_models else {"file": cfg.client_models_file}


def secure_agg_options(cfg: RunConfig) -> Optional[SecureAgg]:
    """FedConfig's secure aggregation from the run's secure_agg_* options (None when off)."""
    if not cfg.secure_agg:
        return None
    return SecureAgg(threshold=cfg.secure_agg_threshold, dropout=cfg.secure_agg_dropout,
                     frac_bits=cfg.secure_agg_frac_bits)


def robust_aggregation(cfg: RunConfig) -> tuple:
    """(reduction or None, upload stages, knobs) of the config's `aggregator` and `attack`
    (docs/robustness.md): the reduce aggregator replacing the mean, the attack stage before it, and
    the traced values (name -> configured value) `with_adversaries` puts in `state.hp`."""
    reduction = robust.by_name(cfg.aggregator, trim=cfg.aggregator_trim, f=cfg.aggregator_f, m=cfg.aggregator_m,
                               clip=cfg.aggregator_clip, noise=cfg.aggregator_noise, iters=cfg.aggregator_iters,
                               nu=cfg.aggregator_nu)
    stages = (attack(cfg.attack, cfg.attack_boost, cfg.attack_std),) if cfg.attack in UPLOAD_ATTACKS else ()
    names = knob_names(reduction.init(None)) if reduction is not None else set()
    if cfg.dp_clip > 0:  # DP-FedAvg's clip and noise stages (FedConfig's dp_fedavg) read these Knobs
        names |= {"dp_clip", "dp_noise"}
    return reduction, stages, {n: getattr(cfg, n) for n in sorted(names)}


def check_privacy(cfg: RunConfig, algorithm, data) -> None:
    """DP-FedAvg and the server optimiser are aggregators (`fgl_jax.aggregators`): refuse them for an
    algorithm that has no server aggregate (its state has no `aggregator` field: local, fedgta,
    fedproto, fedtgp). The local DP lives in the FedAvg family's round: refuse it elsewhere."""
    if cfg.dp_clip <= 0 and cfg.ldp == "none" and cfg.node_dp_degree == 0 and cfg.server_opt == "none" \
            and not cfg.secure_agg \
            and cfg.aggregator == "mean" and cfg.attack in ("none", "label_flip"):
        return
    if cfg.secure_agg:  # the round's clients must be able to unmask it (one line, before any tracing)
        m = participants(int(data.train.num_clients), cfg.client_fraction, cfg.clients_per_round)
        check_threshold(m, cfg.secure_agg_threshold or majority(m), dropped_count(m, cfg.secure_agg_dropout))
    state = jax.eval_shape(algorithm.init, jax.eval_shape(jax.random.key, 0), data)  # traced, never compiled
    for name, on in (("dp_clip", cfg.dp_clip > 0), ("server_opt", cfg.server_opt != "none"),
                     ("secure_agg", cfg.secure_agg), ("aggregator", cfg.aggregator != "mean"),
                     ("attack", cfg.attack in UPLOAD_ATTACKS)):
        if on and not hasattr(state, "aggregator"):
            raise ValueError(f"{name}: algorithm {cfg.algorithm!r} has no server aggregate to apply it to "
                             "(it keeps personal models or prototypes only; docs/aggregators.md)")
    if cfg.attack == "backdoor" and not hasattr(state, "server"):
        raise ValueError(f"attack backdoor: algorithm {cfg.algorithm!r} keeps no global model (state.server) whose "
                         "attack success rate could be measured")
    if cfg.node_dp_degree > 0 and not isinstance(state, BaselineState):
        raise ValueError(f"node_dp_degree: node-level DP is implemented in the FedAvg family's round (fedavg, fedprox, "
                         f"fedper, fedbn, fedavgm, fedadam, fedyogi, global), not for algorithm {cfg.algorithm!r}")
    if cfg.ldp != "none" and not isinstance(state, BaselineState):
        raise ValueError(f"ldp is implemented in the FedAvg family's round (fedavg, fedprox, fedper, fedbn, "
                         f"fedavgm, fedadam, fedyogi, global), not for algorithm {cfg.algorithm!r} (docs/simulation.md)")


def per_round_columns(cfg: RunConfig, algorithm, data) -> dict:
    """The host-computed metrics.jsonl columns: communication bytes and the DP accountant's epsilon."""
    num_train = int(data.train.num_clients)
    m = participants(num_train, cfg.client_fraction, cfg.clients_per_round)
    cols = communication.per_round_columns(algorithm, data, m, cfg.rounds)
    if cfg.dp_clip > 0:
        cols["dp_epsilon"] = epsilons(cfg.dp_noise, m, num_train, cfg.rounds, cfg.dp_delta, cfg.dp_sampling)
    if cfg.secure_agg:
        cols.update(secure_agg_columns(cfg, algorithm, data, m))
    return cols


def secure_agg_columns(cfg: RunConfig, algorithm, data, m: int) -> dict:
    """Secure aggregation's bytes per round (`fgl_jax.privacy.secure_sum.protocol_bytes`) for the
    server model's D parameters and the round's m clients: secagg_client_up_bytes (one surviving
    client's upload), comm_secagg_up_bytes (what the server receives) and comm_secagg_down_bytes
    (the shares it relays), int64 [rounds]."""
    state = jax.eval_shape(algorithm.init, jax.eval_shape(jax.random.key, 0), data)
    dim = sum(int(np.prod(x.shape, dtype=np.int64)) for x in jax.tree.leaves(state.server))
    b = protocol_bytes(m, dim, dropped_count(m, cfg.secure_agg_dropout))
    col = lambda v: np.full(cfg.rounds, v, np.int64)
    return {"secagg_client_up_bytes": col(b["client_up"]), "comm_secagg_up_bytes": col(b["server_in"]),
            "comm_secagg_down_bytes": col(b["server_out"])}


@registry.register("system", "baseline", config=RunConfig, command="run",
                   help="a baseline FL algorithm on a graph (fedavg, fedprox, local, global, ...)")
def build(cfg: RunConfig, graph: Optional[Graph] = None) -> Program:
    if cfg.split_index == "all":  # k programs' data as one member axis: not one Program
        raise ValueError("split_index all runs every fixed split as members of one program: use `fgl-jax run "
                         "--split-index all` or fgl_jax.systems.baseline.fixed_splits.run_all_splits (one Program is one split)")
    prepared = prepare(cfg, graph)
    algorithm = algorithm_from_config(cfg, prepared.graph, prepared.data)
    counted = prepared.shapes if prepared.shapes is not None else prepared.data  # real clients, unpadded
    check_privacy(cfg, algorithm, counted)
    describe = {"dataset": cfg.dataset, "algorithm": cfg.algorithm,
                "model": cfg.graph_model if cfg.task in GRAPH_TASKS else cfg.model,
                "clients": cfg.clients, "partition": "file" if cfg.partition_file else cfg.partition,
                **({"client_models": client_models_describe(cfg)} if cfg.client_models or cfg.client_models_file
                   else {}),
                **({"task": cfg.task} if cfg.task != "node_cls" else {})}
    if prepared.partition is not None:  # the edge cut and label skew of the split (summary.json)
        describe["partition_report"] = partition_report(prepared.graph, prepared.partition)
    report = dict(prepared.report or {})
    poisoning = report.pop("backdoor", None)   # the backdoor's counts go beside the attacker set
    if report:
        describe["graph_report"] = report
    if cfg.attack != "none":  # the attacker set of the configured fraction (a sweep's members draw theirs alike)
        describe["attack"] = {"kind": cfg.attack, "fraction": cfg.attackers, "seed": cfg.attack_seed,
                              "attackers": attacker_ids(cfg.attack_seed, int(counted.eval.num_clients),
                                                        cfg.attackers)}
        if poisoning is not None:
            describe["attack"]["backdoor"] = {"trigger_size": cfg.attack_trigger_size, "density": cfg.attack_density,
                                              "poison_rate": cfg.attack_poison_rate, "target": cfg.attack_target,
                                              **poisoning}
    if prepared.pre_communication is not None:
        describe["pre_training_communication"] = prepared.pre_communication
    if cfg.dp_clip > 0 or cfg.secure_agg:
        num_train = int(counted.train.num_clients)
        m = participants(num_train, cfg.client_fraction, cfg.clients_per_round)
        if cfg.dp_clip > 0:  # epsilon after cfg.rounds (metrics.jsonl's dp_epsilon has it after every round)
            describe["privacy"] = {**dp_privacy.describe(cfg.dp_noise, m, num_train, cfg.rounds, cfg.dp_delta,
                                                         cfg.dp_sampling), "clip": cfg.dp_clip}
        if cfg.secure_agg:
            describe["secure_aggregation"] = {"clients_per_round": m,
                                              "threshold": cfg.secure_agg_threshold or majority(m),
                                              "dropped_per_round": dropped_count(m, cfg.secure_agg_dropout),
                                              "frac_bits": cfg.secure_agg_frac_bits, "field": "GF(2^31 - 1)"}
    if cfg.node_dp_degree > 0:  # every round x local step of a client is one noised full-batch step
        describe["node_privacy"] = node_dp.describe(
            node_dp.NodeDP(cfg.node_dp_clip, cfg.node_dp_noise, cfg.node_dp_degree, cfg.num_layers),
            cfg.rounds * cfg.local_steps, cfg.node_dp_delta, prepared.graph.meta.get("node_dp_edges"))
    uncovered = registry.algorithm(cfg.algorithm).dp_uncovered
    if cfg.dp_clip > 0 and uncovered:  # DP-FedAvg clips and noises what the aggregator sees, nothing else
        describe["dp_uncovered"] = uncovered
        print(f"fgl-jax: warning: dp_epsilon covers {cfg.algorithm}'s aggregated model, not {uncovered} "
              "(docs/aggregators.md)", file=sys.stderr)
    finals = ([membership_hook(cfg, prepared.graph, prepared.data)] if cfg.eval_mia else []) + \
        ([asr_summary] if cfg.attack == "backdoor" else [])
    hooks = Hooks(finalize=(lambda res: {k: v for f in finals for k, v in f(res).items()})) if finals else Hooks()
    return Program(algorithm, prepared.data, cfg.rounds, describe, hooks=hooks,
                   per_round=per_round_columns(cfg, algorithm, counted),
                   account=dp_account(cfg, counted) if cfg.dp_clip > 0 else None)


def dp_account(cfg: RunConfig, data):
    """A sweep member's DP-FedAvg accounting: (traced values, rounds) -> {"dp_epsilon": epsilon after
    `rounds` rounds of the member's own noise multiplier} (the clipping norm does not change it)."""
    num_train = int(data.train.num_clients)
    m = participants(num_train, cfg.client_fraction, cfg.clients_per_round)

    def account(values, rounds: int) -> dict:
        if rounds <= 0:
            return {}
        z = float(values.get("dp_noise", cfg.dp_noise))
        return {"dp_epsilon": float(epsilons(z, m, num_train, rounds, cfg.dp_delta, cfg.dp_sampling)[-1])}
    return account
