"""The baseline frameworks' config (`fgl-jax run`): one frozen dataclass, composed from the common
fields below and every registered algorithm's own hyperparameters (`fgl_jax/algorithms/*`), so a
new algorithm's options appear here, on the command line and in YAML without an edit.

In YAML (config.yaml, --config) the algorithm is one block holding its name and only the options
it reads, keyed by field name: `algorithm: {name: fedprox, prox_mu: 0.001}` (`to_yaml_values`);
the flat form written before the block (`algorithm: fedprox`, every algorithm's options beside it)
still loads (`from_yaml_values`). Flags keep their names (`--prox-mu`) and are grouped per
algorithm in --help; sweep --grid keys are the field names.

split: "standard" = the dataset's own split (Planetoid public split), "random" = fractions
train/val/test, "per_class" = FederatedScope's random Planetoid split (num_train_per_class /
num_val), "per_client" = OpenFGL's split: each client's nodes after partitioning, class by class,
into train/val/test fractions, "openfgl" = per_client with OpenFGL's default fractions for the
dataset (20/40/40 on Cora, CiteSeer, PubMed, ...), "keep" = whatever masks the loader set.

eval_mode: OpenFGL's evaluation modes (global or local model, on local subgraphs or the whole
graph); "auto" = the global model on local data, or each client's own model for personalised
algorithms (local, fedper, ditto, fedbn, fedrep, apfl). eval_average: "pooled" counts over clients,
or "client_nodes" = OpenFGL's mean of per-client metrics weighted by the client's node count.

task: "node_cls" (default) or "link_pred": each client's edges split into train/val/test
(lp_*_frac) with sampled non-edges, a GNN encoder and a pair decoder (lp_decoder), reported by
ROC-AUC, AP and Hits@K and selected by val_auc (docs/simulation.md, "Link prediction"); the node
split options are then unused. "graph_cls" / "graph_reg" (docs/graph_fl.md): a set of graphs (a TU
set) dealt to clients whole (partition random or dirichlet over graph labels), split per client
80/10/10 as OpenFGL's graph_fl (split standard / openfgl; per_client: train/val/test_frac), a
graph_model (gin, gcn) with graph_pooling, trained local_steps epochs over mini-batches of
graph_batch_size graphs.
"""
from __future__ import annotations

import dataclasses
import typing
from typing import Optional

from fgl_jax import registry, schema
from fgl_jax.aggregators.attacks import ATTACKS
from fgl_jax.aggregators.robust import ROBUST
from fgl_jax.aggregators.server_opt import SERVER_OPTS
from fgl_jax.federated.config import EVAL_MODES
from fgl_jax.federated.metrics import AVERAGES
from fgl_jax.federated.sampling import parse_fanout
from fgl_jax.nn.link import DECODERS, NEGATIVES
from fgl_jax.partition.graphs import GRAPH_ORDERS
from fgl_jax.schema import RunSpec, option

SPLITS = ("standard", "random", "per_class", "per_client", "openfgl", "keep")
# which partitioner reads which option (the others must keep their defaults: see __post_init__)
PARTITION_OPTIONS = {"dirichlet_beta": ("dirichlet", "community_dirichlet"),
                     "louvain_packing": ("louvain",),
                     "louvain_resolution": ("louvain", "louvain_plus", "community_dirichlet"),
                     "num_communities": ("metis_plus", "community_dirichlet"),
                     "communities": ("community_dirichlet",)}
TASKS = ("node_cls", "link_pred", "graph_cls", "graph_reg")
# algorithms whose local step is the shared `local_train` with the plain node loss on the client's
# batch, so a neighbour-sampled mini-batch can stand in for it (`fgl_jax.federated.sampling`)
SAMPLED_ALGORITHMS = ("local", "fedavg", "fedprox", "fedper", "fedbn", "global", "fedavgm", "fedadam", "fedyogi",
                      "ditto", "scaffold", "gcfl", "fedala", "fedrep")
# models whose outputs at the seeds are exact on the sampled computation trees (see sampling.py)
SAMPLED_MODELS = ("gcn", "sage", "graphsage")
GRAPH_TASKS = ("graph_cls", "graph_reg")
BACKDOOR_TASKS = ("node_cls", "graph_cls")   # the tasks whose items (graphs, nodes) the backdoor can trigger
# graph-level simulations that deal whole graphs only (docs/graph_fl.md); random and dirichlet serve both levels
GRAPH_PARTITIONS = ("topology_skew", "feature_skew", "cross_domain", "ordered_chunks")
# node-level options a graph-level task refuses when changed (they perturb or split nodes)
NODE_ONLY = ("feature_sparsity", "feature_noise", "topology_sparsity", "topology_noise", "label_sparsity",
             "label_noise", "num_train_per_class", "num_val")
# which aggregator / attack reads which option (the others must keep their defaults: see __post_init__)
AGGREGATOR_OPTIONS = {"aggregator_trim": ("trimmed_mean",), "aggregator_f": ("krum", "multi_krum", "bulyan"),
                      "aggregator_m": ("multi_krum",), "aggregator_clip": ("norm_bound",),
                      "aggregator_noise": ("norm_bound",), "aggregator_iters": ("geomed",),
                      "aggregator_nu": ("geomed",)}
ATTACK_OPTIONS = {"attack_boost": ("scale",), "attack_std": ("gaussian",), "attack_trigger_size": ("backdoor",),
                  "attack_density": ("backdoor",), "attack_poison_rate": ("backdoor",), "attack_target": ("backdoor",)}
# algorithms that are FedAvg with a server optimiser: `server_opt` would add a second one
SERVER_OPT_ALGORITHMS = tuple(algo for _, algo, _ in SERVER_OPTS.values())


def _algorithms() -> list[str]:
    return registry.names("algorithm")


@dataclasses.dataclass(frozen=True)
class BaselineFields(RunSpec):
    """Everything that determines a baseline run (dataset -> split -> partition -> train)."""

    dataset: str = option("csbm", "dataset name (see `fgl-jax datasets`) or path to a graph file or directory; csbm is "
                          "built in; with --partition cross_domain a group of TU sets (chem, biochem, social, "
                          "biochem_social) or names joined by commas")
    directed: str = option("symmetrize", "a directed graph file: symmetrize (add every missing reverse edge, with a "
                           "notice) or keep (edges stay one-way: messages flow u -> v; models gcn, sage, gat, sgc, "
                           "appnp, gcn_sum use direction, mlp reads no edges, the Chebyshev models need symmetric "
                           "input and are refused; node_cls only)", choices=("symmetrize", "keep"))
    algorithm: str = option("fedavg", "FL algorithm", choices=_algorithms)
    model: str = option("gcn", "GNN model", choices=lambda: registry.names("model"))
    hidden: int = option(64, "hidden width of the model", low=1)
    num_layers: int = option(2, "number of GNN layers", low=1)
    dropout: float = option(0.0, "dropout rate between layers", low=0, high=1, high_open=True)
    norm: str = option("none", "normalisation after each hidden layer: none, batch (each feature over the "
                       "client's nodes, the batch's statistics in training and evaluation), layer (each node "
                       "over its features); FedBN keeps its parameters local", choices=("none", "batch", "layer"))
    client_models: str = option("", "heterogeneous client models: architectures name:LAYERSxHIDDEN dealt to the "
                                "clients round-robin, e.g. gcn:2x64,gcn:3x64,gat:2x8 (each group of one architecture "
                                "trains as one vmapped update; dropout and norm stay the run's); only algorithms "
                                "that exchange prototypes or logits take them: fedproto, fedtgp (one last hidden "
                                "width for all), feddistill; task graph_cls: gin or gcn graph classifiers, e.g. "
                                "gin:2x32,gcn:3x32 (pooling stays --graph-pooling); empty = every client runs "
                                "--model (--graph-model)")
    client_models_file: str = option("", "heterogeneous client models from a file: one architecture "
                                     "name:LAYERSxHIDDEN per client, one per line (# comments); see --client-models")
    clients: int = option(5, "number of clients", low=1)
    partition: str = option("random", "how nodes are split over clients (graph_cls / graph_reg: how whole graphs "
                            "are dealt: random, dirichlet = label skew, topology_skew = sorted by mean degree, "
                            "feature_skew = sorted by mean feature value, cross_domain = one dataset per client, "
                            "--dataset a group chem / biochem / social / biochem_social or a comma list, "
                            "ordered_chunks = GCFL's one-dataset split: runs of min(50, G/C) graphs in file order, "
                            "the rest at random by partition_seed)",
                            choices=lambda: registry.names("partition") + list(GRAPH_PARTITIONS))
    partition_file: str = option("", "a file holding one client id per node (.npy, .txt or .csv; "
                                 "fgl_jax.partition.from_file), or OpenFGL's cache directory <root>/distrib/"
                                 "<simulation>_<Dataset>_client_<K> (its data_<i>.pt client node sets; with "
                                 "--split openfgl also its cached node_cls split): the run uses exactly that "
                                 "partition instead of --partition (e.g. to reproduce OpenFGL's clients)")
    dirichlet_beta: float = option(0.5, "label-Dirichlet concentration (partition dirichlet, community_dirichlet)",
                                   low=0, low_open=True)
    louvain_packing: str = option("capped", "partition louvain: capped = clients of at most 1.1 N/K nodes (a "
                                  "community that does not fit is cut); whole = communities never cut for size "
                                  "(largest first into the emptiest client)", choices=("capped", "whole"))
    louvain_resolution: float = option(1.0, "Louvain resolution (partition louvain, louvain_plus, "
                                       "community_dirichlet; larger = more, smaller communities)", low=0,
                                       low_open=True)
    num_communities: int = option(100, "METIS parts grouped into clients (partition metis_plus, OpenFGL's "
                                  "metis_num_coms; community_dirichlet with communities metis)", low=1)
    communities: str = option("louvain", "community detector of partition community_dirichlet",
                              choices=("louvain", "metis"))
    split: str = option("standard", "train/val/test split of the nodes", choices=SPLITS)
    train_frac: float = option(0.6, "training fraction (split random / per_client)", low=0, high=1)
    val_frac: float = option(0.2, "validation fraction (split random / per_client)", low=0, high=1)
    test_frac: float = option(0.2, "test fraction (split random / per_client)", low=0, high=1)
    num_train_per_class: int = option(20, "training nodes per class (split per_class)", low=1)
    num_val: int = option(500, "validation nodes (split per_class)", low=0)
    split_seed: int = option(0, "seed of the random split")
    split_index: str = option("", "fixed split of a file that has k (a heterophily .npz: train_masks [k, N]; a "
                              "Geom-GCN directory: <name>_split_0.6_0.2_<i>.npz): "
                              "an index 0..k-1, or all = every split as a member of one compiled program, "
                              "reported as mean +- sd (empty = the file's split 0)")
    select_metric: str = option("auto", "validation metric that picks the reported round: acc (highest), auc / ap "
                                "(highest ROC-AUC / average precision: binary labels), loss (lowest val_loss); "
                                "auto = acc, or auc for task link_pred", choices=("auto", "acc", "auc", "ap", "loss"))
    eval_mode: str = option("auto", "which model is evaluated on which graph (OpenFGL's modes; auto = "
                            "global model on local data, each client's own model for the personalised "
                            "algorithms: local, fedper, ditto, fedbn with --norm, fedrep, apfl)", choices=EVAL_MODES)
    eval_average: str = option("pooled", "pooled: metrics of all clients' nodes together; client_nodes: "
                               "OpenFGL's per-client metrics averaged by client node count", choices=AVERAGES)
    partition_seed: int = option(0, "seed of the partition")
    local_steps: int = option(0, "local optimiser steps per round; 0 = the algorithm's default: 3 for fedprox (OpenFGL's "
                              "3 local epochs, without which the proximal term has no effect), else 1", low=0)
    optimizer: str = option("adam", "client optimiser", choices=("adam", "sgd"))
    lr: float = option(0.01, "client learning rate", low=0, low_open=True, traced=True)
    weight_decay: float = option(0.0, "L2 weight decay added to the gradient", low=0)
    momentum: float = option(0.9, "client SGD momentum (optimizer sgd only; 0 = plain SGD, PyTorch's default "
                             "and PFLlib's)", low=0, high=1, high_open=True)
    lr_gamma: float = option(1.0, "staircase decay factor of the lr", low=0, high=1, low_open=True)
    lr_decay_every: int = option(0, "decay the lr every this many rounds (0 = constant)", low=0)
    loss_guard: float = option(1e6, "stop as diverged when train_loss exceeds this multiple of its first "
                                    "value (0 = off)", low=0, high=1e12)
    chunk: Optional[int] = option(None, "rounds per compiled scan (progress/checkpoint granularity)", low=1)
    client_chunk: Optional[int] = option(None, "train/evaluate clients in blocks of this size (memory bound)",
                                         low=1)
    # --- simulation knobs (docs/simulation.md) ---
    client_fraction: float = option(1.0, "fraction of the clients (with training nodes) sampled uniformly "
                                    "without replacement each round: ceil(fraction * clients)", low=0, high=1,
                                    low_open=True)
    clients_per_round: Optional[int] = option(None, "fixed number of clients sampled each round (instead of "
                                              "client_fraction)", low=1)
    dp_clip: float = option(0.0, "DP-FedAvg: clip each client's update to this L2 norm C (0 = no DP; traced when "
                            "> 0: a sweep over C runs as one program)", low=0, traced=True)
    dp_noise: float = option(0.0, "DP-FedAvg noise multiplier z: the server adds N(0, (z C / m)^2) to the mean "
                             "of the m clipped updates (traced: a sweep over z runs as one program, each member "
                             "accounted with its own z)", low=0, traced=True)
    dp_delta: float = option(1e-5, "delta at which the DP accountant reports epsilon after each round", low=0,
                             high=1, low_open=True, high_open=True)
    dp_sampling: str = option("poisson", "how the accountant models the client sample: poisson (q = m/N, the "
                              "customary approximation) or without_replacement (exact, replace-one)",
                              choices=("poisson", "without_replacement"))
    secure_agg: bool = option(False, "aggregate through pairwise-mask secure aggregation over GF(p) (Bonawitz "
                              "et al.; exact fixed-point sum, drop-outs recovered from Shamir shares)")
    secure_agg_threshold: int = option(0, "secure aggregation: Shamir threshold t, the fewest survivors that can "
                                       "unmask a round (0 = a majority of the round's clients)", low=0)
    secure_agg_dropout: float = option(0.0, "secure aggregation: fraction of each round's clients that drop out "
                                       "after the setup (drawn each round)", low=0, high=1, high_open=True)
    secure_agg_frac_bits: int = option(20, "secure aggregation: fractional bits of the fixed-point encoding",
                                       low=1, high=29)
    server_opt: str = option("none", "server optimiser on the aggregate of any algorithm (Reddi et al.): momentum "
                             "(FedAvgM's server_lr, server_momentum), adam (FedAdam's adam_*), yogi (FedYogi's "
                             "yogi_*); none = the aggregate itself", choices=("none", *SERVER_OPTS))
    # --- robust aggregation and attacks (docs/robustness.md) ---
    aggregator: str = option("mean", "server reduction of the uploads: mean (FedAvg's weighted mean), median, "
                             "trimmed_mean, krum, multi_krum, bulyan, norm_bound (clip + mean + weak noise), "
                             "geomed (geometric median)", choices=ROBUST)
    aggregator_trim: float = option(0.1, "trimmed_mean: fraction beta of the values dropped on each side per "
                                    "coordinate (traced: sweeps run as one program)", low=0, high=0.5,
                                    high_open=True, traced=True)
    aggregator_f: int = option(1, "krum, multi_krum, bulyan: number f of attackers assumed (krum needs "
                               ">= 2f + 3 clients per round, bulyan >= 4f + 3)", low=0)
    aggregator_m: int = option(0, "multi_krum: uploads averaged, those of best Krum score (0 = n - f)", low=0)
    aggregator_clip: float = option(1.0, "norm_bound: clip each client's update to this L2 norm (traced)",
                                    low=0, low_open=True, traced=True)
    aggregator_noise: float = option(0.0, "norm_bound: weak noise multiplier z, N(0, (z clip / m)^2) added to the "
                                     "mean, no privacy accounted (traced)", low=0, traced=True)
    aggregator_iters: int = option(4, "geomed: Weiszfeld iterations from the weighted mean", low=0)
    aggregator_nu: float = option(1e-6, "geomed: smoothing floor nu of the distances in Weiszfeld's weights",
                                  low=0, low_open=True)
    attack: str = option("none", "model poisoning by the attacking clients: sign_flip (upload -update), scale "
                         "(boost x update), gaussian (a noise update), label_flip (training labels shifted by "
                         "one class), backdoor (a subgraph trigger planted in some training items, relabelled to "
                         "attack_target; docs/robustness.md); none = honest clients", choices=("none", *ATTACKS))
    attackers: float = option(0.0, "fraction of the clients that attack, drawn from attack_seed (traced: the "
                              "attacker set is data)", low=0, high=1, traced=True)
    attack_boost: float = option(10.0, "attack scale: factor on the attacker's update (model replacement)",
                                 low=0, low_open=True)
    attack_std: float = option(1.0, "attack gaussian: std of the attacker's noise update", low=0, low_open=True)
    attack_seed: int = option(0, "seed of the attacker set (the round(attackers x clients) of lowest U(0,1) score); "
                              "backdoor: also of its trigger, poisoned items and attachment nodes")
    attack_trigger_size: int = option(4, "attack backdoor: nodes of the subgraph trigger (added to each poisoned "
                                      "graph or attached to each poisoned node; features all 1)", low=1)
    attack_density: float = option(0.8, "attack backdoor: edge probability of the Erdos-Renyi trigger, drawn once "
                                   "(1 = complete graph)", low=0, high=1)
    attack_poison_rate: float = option(0.2, "attack backdoor: fraction of an attacker's training graphs / nodes "
                                       "given the trigger and the target label", low=0, high=1)
    attack_target: int = option(0, "attack backdoor: the target class; the run reports test_asr, the fraction of "
                                "triggered test items of other classes predicted as it", low=0)
    ldp: str = option("none", "OpenFGL's local DP for node classification: per-node gradient clipping and "
                      "noise on the local model after every step (laplace or gaussian)",
                      choices=("none", "laplace", "gaussian"))
    ldp_clip: float = option(1.0, "local DP: per-node gradient clipping norm (L1 laplace, L2 gaussian)", low=0,
                             low_open=True)
    ldp_epsilon: float = option(10.0, "local DP: total epsilon, split evenly over rounds * client_fraction "
                                "queries (OpenFGL's rule)", low=0, low_open=True)
    ldp_delta: float = option(1e-5, "local DP (gaussian): total delta, split like epsilon", low=0, high=1,
                              low_open=True, high_open=True)
    eval_mia: bool = option(False, "after the run, attack the final model (global, or each client's own when "
                            "evaluated personalised) with loss- and confidence-threshold membership inference: "
                            "summary.json extras.mia has the AUC of training vs test nodes (0.5 = no leakage)")
    node_dp_degree: int = option(0, "node-level DP (Daigavane et al.; docs/privacy.md): sample the edges so every node "
                                 "has at most this many in- and out-neighbours, clip per-node gradients, add Gaussian "
                                 "noise to each SGD step (0 = off; needs optimizer sgd)", low=0)
    node_dp_clip: float = option(1.0, "node-level DP: per-node gradient L2 clipping norm C", low=0, low_open=True)
    node_dp_noise: float = option(1.0, "node-level DP: noise multiplier sigma; the step's noise std is sigma x the "
                                  "sensitivity 2 C sum_{i<=layers} K^i over the client's training nodes", low=0)
    node_dp_delta: float = option(1e-5, "node-level DP: delta at which summary.json states epsilon", low=0, high=1,
                                  low_open=True, high_open=True)
    feature_sparsity: float = option(0.0, "robustness: zero this fraction of the nonzero feature entries",
                                     low=0, high=1)
    feature_noise: float = option(0.0, "robustness: add Gaussian noise to this fraction of the feature entries",
                                  low=0, high=1)
    feature_noise_std: float = option(1.0, "robustness: std of the feature noise", low=0)
    topology_sparsity: float = option(0.0, "robustness: remove this fraction of the undirected edges", low=0,
                                      high=1)
    topology_noise: float = option(0.0, "robustness: replace this fraction of the undirected edges by random "
                                   "ones", low=0, high=1)
    label_sparsity: float = option(0.0, "robustness: hide the labels of this fraction of the training nodes",
                                   low=0, high=1)
    label_noise: float = option(0.0, "robustness: give this fraction of the training nodes a wrong label",
                                low=0, high=1)
    processing_seed: int = option(0, "seed of the robustness perturbations (one stream per kind)")
    # --- the learning task (docs/simulation.md, "Link prediction") ---
    task: str = option("node_cls", "learning task: node_cls (node classification), link_pred (link prediction "
                       "on each client's own edges), graph_cls / graph_reg (graph classification / regression: "
                       "clients hold whole graphs, docs/graph_fl.md)", choices=TASKS)
    lp_decoder: str = option("dot", "link prediction: pair decoder, dot product of the embeddings or a 2-layer "
                             "MLP on their elementwise product", choices=DECODERS)
    lp_train_frac: float = option(0.8, "link prediction: fraction of each client's edges used for training "
                                  "(OpenFGL's 0.8)", low=0, high=1)
    lp_val_frac: float = option(0.1, "link prediction: fraction of each client's edges for validation", low=0, high=1)
    lp_test_frac: float = option(0.1, "link prediction: fraction of each client's edges for testing", low=0, high=1)
    lp_negatives: str = option("resample", "link prediction training negatives: resample (new uniform pairs every "
                               "local step) or fixed (drawn once on the host, OpenFGL's)", choices=NEGATIVES)
    lp_hits_k: int = option(50, "link prediction: K of the Hits@K metric (OGB's ogbl-collab K)", low=1)
    graph_model: str = option("gin", "graph_cls / graph_reg: node layers of the graph model (gin: GIN-0 with a "
                              "2-layer MLP per layer; gcn)", choices=("gin", "gcn"))
    graph_pooling: str = option("mean", "graph_cls / graph_reg: readout of the node states (mean: stable without "
                                "batch norm; sum: the GIN paper's)", choices=("sum", "mean", "max"))
    graph_batch_size: int = option(32, "graph_cls / graph_reg: graphs per mini-batch (local_steps = local epochs "
                                   "over a client's mini-batches)", low=1)
    graph_batching: str = option("count", "graph_cls / graph_reg: how a client's graphs are cut into mini-batches: "
                                 "count (graph_batch_size graphs each, OpenFGL's) or budget (filled up to the nodes "
                                 "and edges of graph_batch_size mean-sized graphs, at most 2x graph_batch_size "
                                 "graphs: fewer padding slots, a varying number of graphs per step)",
                                 choices=("count", "budget"))
    graph_order: str = option("shuffled", "graph_cls / graph_reg: the order a client's graphs are cut into "
                              "mini-batches and walked in every epoch: shuffled (one random order per client "
                              "from split_seed: classes mixed within a mini-batch) or index (ascending graph ids, "
                              "OpenFGL's loaders: on a set stored sorted by label, as NCI1 and PROTEINS are, a "
                              "mini-batch holds mostly one class)", choices=GRAPH_ORDERS)
    client_exec: str = option("packed", "graph_cls / graph_reg: how local training runs the clients: packed (one "
                              "client after another, each mini-batch step in the smallest of graph_size_classes "
                              "padded shapes, steps without training graphs skipped: work ~ the real graphs; the "
                              "fastest on CPU) or vmap (every client vectorised on the largest client's padded "
                              "shape: may win on an accelerator)", choices=("packed", "vmap"))
    graph_size_classes: int = option(4, "graph_cls / graph_reg with client_exec packed: the most padded mini-batch "
                                     "shapes (each compiles the local step once; more: less padding, longer "
                                     "compilation)", low=1)
    batch_size: int = option(0, "node_cls: seed nodes per neighbour-sampled mini-batch of local training (0 = "
                             "full-batch local steps); local_steps then counts local epochs over a client's "
                             "training nodes (docs/scaling.md)", low=0)
    fanout: str = option("10,5", "with --batch-size: neighbours sampled per node at each hop, one per GNN layer "
                         "(without replacement; all of a node's neighbours when it has fewer)")

    def _check_client_models(self) -> None:
        """--client-models / --client-models-file: one of them, node_cls or graph_cls, an algorithm that averages no
        parameters (client sampling trains the sample by mask: `FederatedAlgorithm.masked_sampling`)."""
        if self.client_models and self.client_models_file:
            raise ValueError("give client_models or client_models_file, not both")
        if not registry.algorithm(self.algorithm).hetero:
            takers = [a for a in registry.names("algorithm") if registry.algorithm(a).hetero]
            raise ValueError(f"client_models: algorithm {self.algorithm!r} averages model parameters, which needs one "
                             f"architecture for every client; heterogeneous models run with {', '.join(takers)}")
        if self.task not in ("node_cls", "graph_cls"):
            raise ValueError(f"client_models: heterogeneous client models are for tasks node_cls and graph_cls, "
                             f"not {self.task}")
        if self.client_models:   # the spec's syntax now (a file is read when the run is built)
            from fgl_jax.federated.client_models import parse_client_models
            parse_client_models(self.client_models, self.task)

    def _check_directed(self) -> None:
        """--directed keep: a graph file, node classification, a model that reads direction."""
        if self.task != "node_cls":
            raise ValueError(f"directed=keep is for task node_cls; task {self.task} needs an undirected graph")
        if registry.entry("model", self.model).info.get("direction") == "symmetric":
            raise ValueError(f"directed=keep: model {self.model!r} needs a symmetric graph (its Chebyshev filter "
                             "assumes an undirected Laplacian); use gcn, sage, gat, sgc, appnp or gcn_sum, which "
                             "aggregate along u -> v, or directed=symmetrize")

    def __post_init__(self):
        super().__post_init__()
        if self.local_steps == 0:  # the algorithm's default, resolved here so config.yaml records the number
            object.__setattr__(self, "local_steps", registry.algorithm(self.algorithm).local_steps)
        if self.clients_per_round is not None and self.clients_per_round > self.clients:
            raise ValueError(f"clients_per_round={self.clients_per_round} is more than clients={self.clients}")
        if self.clients_per_round is not None and self.client_fraction != 1.0:
            raise ValueError("give client_fraction or clients_per_round, not both")
        if self.dp_noise > 0 and self.dp_clip <= 0:
            raise ValueError(f"dp_noise={self.dp_noise} needs a clipping norm: set dp_clip > 0")
        if self.client_models or self.client_models_file:
            self._check_client_models()
        if not self.secure_agg:
            for name, default in (("secure_agg_threshold", 0), ("secure_agg_dropout", 0.0),
                                  ("secure_agg_frac_bits", 20)):
                if getattr(self, name) != default:
                    raise ValueError(f"{name}={getattr(self, name)!r} is an option of secure_agg, which is off")
        for name, methods in PARTITION_OPTIONS.items():
            default = next(f.default for f in dataclasses.fields(BaselineFields) if f.name == name)
            if self.partition not in methods and getattr(self, name) != default:
                raise ValueError(f"{name}={getattr(self, name)!r} is an option of partition "
                                 f"{' / '.join(methods)}, not of {self.partition!r}")
        if self.split_index not in ("", "all") and not (self.split_index.isdigit()):
            raise ValueError(f"split_index must be a split number 0, 1, ... or 'all', got {self.split_index!r}")
        if self.split_index and self.split not in ("standard", "keep"):
            raise ValueError(f"split_index={self.split_index!r} picks one of the file's fixed splits; it goes with "
                             f"split standard (the file's own masks), not split {self.split!r}")
        if self.task == "link_pred" and self.select_metric not in ("auto", "auc", "ap"):
            raise ValueError(f"select_metric={self.select_metric!r}: link prediction reports auc and ap (and hits@K), "
                             "select it by auc or ap")
        if self.directed == "keep":
            self._check_directed()
        self._check_robustness()
        self._check_node_dp()
        if self.eval_mia and self.task != "node_cls":
            raise ValueError(f"eval_mia attacks node classifiers (training vs test nodes), not task {self.task}")
        if self.task == "link_pred":
            self._check_link_pred()
        elif self.task in GRAPH_TASKS:
            self._check_graph_task()
        else:
            if self.partition in GRAPH_PARTITIONS:
                raise ValueError(f"partition={self.partition!r} deals whole graphs (task graph_cls / graph_reg), not "
                                 f"the nodes of task {self.task!r}")
            for name in ("graph_model", "graph_pooling", "graph_batch_size", "graph_batching", "graph_order", "client_exec",
                         "graph_size_classes"):
                default = next(f.default for f in dataclasses.fields(BaselineFields) if f.name == name)
                if getattr(self, name) != default:
                    raise ValueError(f"{name}={getattr(self, name)!r} is an option of task graph_cls / graph_reg, "
                                     f"not of {self.task!r}")
        self._check_sampling()
        # one pass over the hyperparameter fields (names are unique across algorithms: `_compose`);
        # looking each default up again was a noticeable part of every command's start-up
        if self.server_opt != "none" and self.algorithm in SERVER_OPT_ALGORITHMS:
            raise ValueError(f"server_opt={self.server_opt!r}: algorithm {self.algorithm!r} already applies its own "
                             "server optimiser; use algorithm fedavg with server_opt")
        # the server optimiser's options are those of the algorithm that is FedAvg with it
        server_algo = SERVER_OPTS[self.server_opt][1] if self.server_opt != "none" else None
        # an option several algorithms share (GCFL's thresholds, read by gcfl, gcfl_plus, gcfl_plus_dws)
        # is fine when any of them is the chosen one
        own = {f.name for a in (self.algorithm, server_algo) if a is not None
               for f in dataclasses.fields(registry.algorithm(a).hparams or _NoOptions)}
        for algo, name, f, _tp in _hparam_fields():
            if name not in own and getattr(self, name) != f.default:
                raise ValueError(f"{name}={getattr(self, name)!r} is an option of algorithm {algo!r}, "
                                 f"not of {self.algorithm!r}")

    def partition_kwargs(self) -> dict:
        """The options of the chosen partitioner, as `fgl_jax.partition.make_partition` keywords."""
        names = {"dirichlet_beta": "beta", "louvain_packing": "packing", "louvain_resolution": "resolution",
                 "num_communities": "num_communities", "communities": "communities"}
        return {names[k]: getattr(self, k) for k, methods in PARTITION_OPTIONS.items() if self.partition in methods}

    def _check_robustness(self) -> None:
        defaults = {f.name: f.default for f in dataclasses.fields(BaselineFields)}
        for table, chosen, what in ((AGGREGATOR_OPTIONS, self.aggregator, "aggregator"),
                                    (ATTACK_OPTIONS, self.attack, "attack")):
            for name, owners in table.items():
                if chosen not in owners and getattr(self, name) != defaults[name]:
                    raise ValueError(f"{name}={getattr(self, name)!r} is an option of {what} {' / '.join(owners)}, "
                                     f"not of {chosen!r}")
        if self.attack == "backdoor" and self.task not in BACKDOOR_TASKS:
            raise ValueError(f"attack backdoor plants a trigger in classified graphs or nodes ({', '.join(BACKDOOR_TASKS)}), "
                             f"not in task {self.task}")
        if self.attack == "backdoor" and registry.algorithm(self.algorithm).data == "full_graph":
            raise ValueError(f"attack backdoor: algorithm {self.algorithm!r} trains one centralised model, with no "
                             "clients to attack")
        if self.attackers > 0 and self.attack == "none":
            raise ValueError(f"attackers={self.attackers} needs an attack: set attack to one of {', '.join(ATTACKS)}")
        if self.aggregator != "mean" and self.dp_clip > 0:
            raise ValueError(f"dp_clip (DP-FedAvg) needs aggregator mean: its noise and accounting assume the uniform "
                             f"mean, not {self.aggregator!r} (norm_bound adds weak noise without accounting)")
        if self.algorithm == "local" and (self.aggregator != "mean" or self.attack != "none"):
            raise ValueError(f"aggregator={self.aggregator!r}, attack={self.attack!r}: algorithm 'local' sends "
                             "nothing to aggregate or attack")

    def _check_sampling(self) -> None:
        if not self.batch_size:
            if self.fanout != "10,5":
                raise ValueError(f"fanout={self.fanout!r} is an option of neighbour sampling: set batch_size > 0")
            return
        if self.task != "node_cls":
            raise ValueError(f"batch_size={self.batch_size}: neighbour-sampled mini-batches are for task node_cls, "
                             f"not {self.task!r}")
        if self.algorithm not in SAMPLED_ALGORITHMS:
            raise ValueError(f"batch_size={self.batch_size}: algorithm {self.algorithm!r} trains on whole client "
                             f"graphs; neighbour sampling serves {', '.join(SAMPLED_ALGORITHMS)}")
        if self.model not in SAMPLED_MODELS:
            raise ValueError(f"batch_size={self.batch_size}: model {self.model!r} is not supported with neighbour "
                             f"sampling (use {', '.join(SAMPLED_MODELS)})")
        if self.ldp != "none":
            raise ValueError(f"batch_size={self.batch_size}: ldp={self.ldp!r} clips per-node gradients of the whole "
                             "client graph; it is not available with neighbour sampling")
        fanouts = parse_fanout(self.fanout)
        if len(fanouts) != self.num_layers:
            raise ValueError(f"fanout={self.fanout!r} has {len(fanouts)} hops for num_layers={self.num_layers}: "
                             "give one fan-out per GNN layer")

    def _check_node_dp(self) -> None:
        if self.node_dp_degree == 0:
            for name, default in (("node_dp_clip", 1.0), ("node_dp_noise", 1.0), ("node_dp_delta", 1e-5)):
                if getattr(self, name) != default:
                    raise ValueError(f"{name}={getattr(self, name)!r} is an option of node-level DP, which is off "
                                     "(set node_dp_degree > 0)")
            return
        if self.task != "node_cls":
            raise ValueError(f"node_dp_degree={self.node_dp_degree}: node-level DP is for task node_cls, not {self.task}")
        if self.ldp != "none":
            raise ValueError(f"node_dp_degree and ldp={self.ldp!r} both noise the local steps: choose one")
        if self.optimizer != "sgd":
            raise ValueError(f"node_dp_degree={self.node_dp_degree} needs optimizer sgd (its noise is added to the "
                             f"SGD step; {self.optimizer}'s step is not a noised gradient)")

    def _check_link_pred(self) -> None:
        total = self.lp_train_frac + self.lp_val_frac + self.lp_test_frac
        if abs(total - 1.0) > 1e-6:
            raise ValueError(f"lp_train_frac + lp_val_frac + lp_test_frac must be 1, got {self.lp_train_frac} + "
                             f"{self.lp_val_frac} + {self.lp_test_frac} = {total:g}")
        tasks = registry.algorithm(self.algorithm).tasks
        if "link_pred" not in tasks:
            able = [e.name for e in registry.entries("algorithm") if "link_pred" in e.spec.tasks]
            raise ValueError(f"task link_pred: algorithm {self.algorithm!r} is node classification only "
                             f"(link prediction: {', '.join(able)})")
        if self.ldp != "none":
            raise ValueError(f"ldp={self.ldp!r} is OpenFGL's local DP for node classification, not for task link_pred")
        if self.label_sparsity > 0 or self.label_noise > 0:
            raise ValueError("label_sparsity / label_noise perturb node labels, which task link_pred does not use")
        if self.eval_mode.endswith("global_data"):
            raise ValueError(f"eval_mode={self.eval_mode!r} is not available for task link_pred (each client's "
                             "edge split is its own): use auto, global_model_on_local_data or local_model_on_local_data")

    def _check_graph_task(self) -> None:
        tasks = registry.algorithm(self.algorithm).tasks
        if self.task not in tasks:
            able = [e.name for e in registry.entries("algorithm") if self.task in e.spec.tasks]
            raise ValueError(f"task {self.task}: algorithm {self.algorithm!r} needs node-level structure (it serves "
                             f"{', '.join(tasks)}); graph-level algorithms: {', '.join(able)}")
        if self.partition not in ("random", "dirichlet") + GRAPH_PARTITIONS:
            raise ValueError(f"partition={self.partition!r} splits nodes; task {self.task} deals whole graphs: use "
                             "random (uniform), dirichlet (label skew over graph labels, dirichlet_beta), "
                             "topology_skew, feature_skew, cross_domain or ordered_chunks")
        if self.partition == "cross_domain" and self.task != "graph_cls":
            raise ValueError("partition cross_domain joins classification sets, each with its own classes: use task "
                             "graph_cls")
        if self.task == "graph_reg" and self.partition == "dirichlet":
            raise ValueError("partition dirichlet skews class labels; task graph_reg has none (use random)")
        if self.split not in ("standard", "openfgl", "per_client"):
            raise ValueError(f"split={self.split!r}: task {self.task} splits each client's graphs (standard / openfgl = "
                             "OpenFGL's 80/10/10, per_client = train_frac/val_frac/test_frac)")
        if self.split == "per_client" and abs(self.train_frac + self.val_frac + self.test_frac - 1.0) > 1e-6:
            raise ValueError(f"train_frac + val_frac + test_frac must be 1, got {self.train_frac} + {self.val_frac} + "
                             f"{self.test_frac}")
        if self.model != "gcn":
            raise ValueError(f"model={self.model!r} is a node-level model; task {self.task} uses graph_model "
                             "(gin or gcn, --graph-model)")
        if self.ldp != "none":
            raise ValueError(f"ldp={self.ldp!r} clips per-node gradients of node classification, not task {self.task}")
        if self.partition_file or self.split_index:
            raise ValueError(f"{'partition_file' if self.partition_file else 'split_index'} assigns nodes; task "
                             f"{self.task} deals whole graphs (partition random or dirichlet)")
        if self.eval_mode.endswith("global_data"):
            raise ValueError(f"eval_mode={self.eval_mode!r} is not available for task {self.task} (each client's "
                             "graphs are its own): use auto, global_model_on_local_data or local_model_on_local_data")
        for name in NODE_ONLY:
            default = next(f.default for f in dataclasses.fields(BaselineFields) if f.name == name)
            if getattr(self, name) != default:
                raise ValueError(f"{name}={getattr(self, name)!r} is a node-level option, not of task {self.task}")

    def hparams(self):
        """The chosen algorithm's own hyperparameters (its `hparams` dataclass), or None."""
        cls = registry.algorithm(self.algorithm).hparams
        return None if cls is None else cls(**{f.name: getattr(self, f.name) for f in dataclasses.fields(cls)})

    def server_hparams(self):
        """The server optimiser's hyperparameters (`fgl_jax.aggregators.server_opt`), or None."""
        if self.server_opt == "none":
            return None
        cls = SERVER_OPTS[self.server_opt][0]
        return cls(**{f.name: getattr(self, f.name) for f in dataclasses.fields(cls)})

    # --- YAML: the nested algorithm block (`fgl_jax.schema`'s to/from_yaml_values hooks) ---

    def algorithm_options(self) -> dict:
        """The options this run's algorithm reads, by field name: its own hyperparameters, then
        the server optimiser's (`server_opt`, whose options are those of fedavgm / fedadam / fedyogi)."""
        names = [f.name for a in _block_algorithms(self.algorithm, self.server_opt)
                 for f in dataclasses.fields(registry.algorithm(a).hparams or _NoOptions)]
        return {n: (list(v) if isinstance(v := getattr(self, n), tuple) else v) for n in names}

    def to_yaml_values(self) -> dict:
        """config.yaml's mapping: the common options flat, and one `algorithm:` block holding the
        chosen algorithm's name and only the options it reads (`algorithm_options`), keyed by field
        name (the flag without `--`, '-' as '_': `--prox-mu` is `prox_mu`)."""
        hp = set(_hparam_names())
        out = {}
        for name, value in schema.to_dict(self).items():
            if name == "algorithm":
                out["algorithm"] = {"name": value, **self.algorithm_options()}
            elif name not in hp:
                out[name] = value
        return out

    @classmethod
    def from_yaml_values(cls, values: dict, source: str) -> dict:
        """A YAML mapping as flat field values: the nested block `algorithm: {name: fedprox,
        prox_mu: 0.001}` is unpacked (a key that is not an option of that algorithm, or of the
        server optimiser, is refused in one line); the flat form every config.yaml had before the
        block (`algorithm: fedprox` and every algorithm's options beside it) passes unchanged."""
        block = values.get("algorithm")
        if not isinstance(block, dict):
            return values
        block = {str(k).replace("-", "_"): v for k, v in block.items()}
        if "name" not in block:
            raise ValueError(f"{source}: the algorithm block needs a name (algorithm: {{name: fedavg, ...}})")
        name = block.pop("name")
        if not isinstance(name, str) or not registry.has("algorithm", name):
            known = registry.names("algorithm")
            raise ValueError(f"{source}: algorithm.name must be one of {', '.join(known)}; got {name!r}")
        flat_hp = sorted(set(values) & set(_hparam_names()))
        if flat_hp:
            raise ValueError(f"{source}: {', '.join(flat_hp)} {'belongs' if len(flat_hp) == 1 else 'belong'} inside the algorithm block (algorithm: "
                             f"{{name: {name}, {flat_hp[0]}: ...}}), not beside it")
        server_opt = values.get("server_opt", "none")
        allowed = [f.name for a in _block_algorithms(registry.key(name), server_opt if server_opt in SERVER_OPTS
                                                      else "none")
                   for f in dataclasses.fields(registry.algorithm(a).hparams or _NoOptions)]
        for k in block:
            if k not in allowed:
                other = next((a for a, n, _f, _t in _hparam_fields() if n == k), None)
                why = f"an option of algorithm {other!r}" if other else "no option"
                raise ValueError(f"{source}: algorithm.{k} is {why}, not of {name!r} (its options: "
                                 f"{', '.join(allowed) or 'none'})")
        rest = {k: v for k, v in values.items() if k != "algorithm"}
        return {**rest, "algorithm": name, **block}

    def replace(self, **changes) -> "RunConfig":
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


@dataclasses.dataclass(frozen=True)
class _NoOptions:
    """The hyperparameters of an algorithm without any."""


def _block_algorithms(algorithm: str, server_opt: str) -> tuple[str, ...]:
    """The algorithms whose options a run reads: its own, and the one that is FedAvg with its
    server optimiser (`--server-opt adam` reads fedadam's adam_* options)."""
    server = SERVER_OPTS[server_opt][1] if server_opt != "none" else None
    return (algorithm,) if server in (None, algorithm) else (algorithm, server)


def _hparam_names() -> list[str]:
    return [name for _a, name, _f, _t in _hparam_fields()]


def _hparam_fields() -> list[tuple[str, str, dataclasses.Field, object]]:
    """(algorithm, name, field, type) of every registered algorithm's hyperparameters."""
    out = []
    for e in registry.entries("algorithm"):
        cls = e.spec.hparams
        if cls is None:
            continue
        hints = typing.get_type_hints(cls)
        for f in dataclasses.fields(cls):
            out.append((e.name, f.name, f, hints[f.name]))
    return out


def _compose() -> type:
    base = {f.name for f in dataclasses.fields(BaselineFields)}
    fields, owners = {}, {}
    for algo, name, f, tp in _hparam_fields():
        if name in base:
            raise TypeError(f"algorithm {algo!r}: hyperparameter {name!r} shadows a common baseline option")
        if name in fields:
            # one option read by a family of algorithms (they share one hparams dataclass or subclass
            # it, as gcfl / gcfl_plus / gcfl_plus_dws): it must be the very same field; two different
            # options under one name are refused
            prev = fields[name][1]
            if prev.default != f.default or prev.metadata.get("help") != f.metadata.get("help"):
                raise TypeError(f"algorithms {owners[name][0]!r} and {algo!r} both define hyperparameter {name!r}")
            owners[name].append(algo)
            continue
        fields[name], owners[name] = (tp, f), [algo]
    extra = []
    for name, (tp, f) in fields.items():
        # flags grouped per algorithm (or family reading them) in --help (`schema.add_flags` reads `group`)
        first = owners[name][0]
        algos = ", ".join(owners[name])
        group = f"{first} options (--algorithm {algos}; {registry.algorithm(first).help})"
        extra.append((name, tp, dataclasses.field(default=f.default, metadata={**f.metadata, "group": group})))
    cls = dataclasses.make_dataclass("RunConfig", extra, bases=(BaselineFields,), frozen=True)
    cls.__module__ = __name__
    cls.__doc__ = BaselineFields.__doc__ + "\n\n    Algorithm options: " + ", ".join(
        f"{n} ({', '.join(a)})" for n, a in owners.items()) + "."
    return cls


RunConfig = _compose()
