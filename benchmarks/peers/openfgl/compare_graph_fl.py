"""fgl_jax vs OpenFGL 1.1.0 on graph-level FL (graph classification), same clients and same split
(outside CI; never imported by tests). The harness pattern of compare.py:

    FGL_JAX_DATA=/work/shared/data nice python -m benchmarks.peers.openfgl.compare_graph_fl \
        --venv /work/peers/openfgl-venv --datasets PROTEINS IMDB-BINARY NCI1 --algorithms fedavg fedprox \
        --seeds 0 1 2 --rounds 20

What is shared, by construction: fgl_jax loads the TU files, deals the graphs to clients by label
skew (Dirichlet beta, the first partition seed from 0 whose every client holds a validation and a
test graph) and splits each client's graphs with OpenFGL's per-client
80/10/10 split (split seed = the run's seed); the client of every graph and the masks are written
into OpenFGL's graph_fl cache (`run_openfgl_graph_fl.py`), where OpenFGL's own TUDataset (from the
same TU files) is cut into exactly those clients and splits. Both sides: a 2-layer GIN of width
`hidden`, dropout, Adam with lr and L2 weight decay, `local_epochs` epochs over mini-batches of
`batch_size` training graphs in a fixed order, the same rounds, each client's model on its own data,
per-client accuracy weighted by the client's graph count, the round of best validation accuracy
(first maximum) reported. What differs is in DIFFERENCES and in the record's notes.

`--openfgl-model fgl_jax` takes the model out of the comparison: OpenFGL's algorithms then train
fgl_jax's GraphClassifier written in torch (run_openfgl_graph_fl.FglJaxGIN), every client and the
server loaded with fgl_jax's initial parameters of the run (its seed's draw, exported from fgl_jax's
initial state); those runs are cells of their own ("same model" in the table). `--check-model`
compares the two forward passes on one set (logits of every graph, the initial parameters) and
prints the largest difference:

    FGL_JAX_DATA=/work/shared/data nice python -m benchmarks.peers.openfgl.compare_graph_fl \
        --venv /work/peers/openfgl-venv --datasets PROTEINS --seeds 0 --check-model
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks.peers.openfgl.compare import DEFAULT_VENV, FGL_OPTIONS, HERE, OPENFGL_CONFIG, machine_info, mean_sd

# fgl_jax algorithm -> OpenFGL fl_algorithm
ALGORITHMS = {"fedavg": "fedavg", "fedprox": "fedprox", "scaffold": "scaffold", "moon": "moon",
              "fedproto": "fedproto", "fedtgp": "fedtgp", "local": "isolate", "fedstar": "fedstar",
              "gcfl_plus": "gcfl_plus"}
# fgl_jax options and OpenFGL config values per algorithm: the node-level harness's (compare.py: OpenFGL
# 1.1.0's defaults and the fgl_jax variant that reproduces OpenFGL's) and GCFL+'s mapping:
#   gcfl_plus_config eps1 0.05 / eps2 0.1 / seq_length 5 / standardize False -> gcfl_eps1 / gcfl_eps2 /
#   gcfl_seq_length / gcfl_standardize; the gradient-norm sequence over the conv layers (its
#   convGradsNorm) -> gcfl_seq_params conv; its split test `round > 20` on 0-based rounds -> gcfl_warmup 21
#   (fgl_jax's test is 1-based round > gcfl_warmup), so the first possible split is round 22 on both sides.
GRAPH_FGL_OPTIONS = {
    **{k: FGL_OPTIONS[k] for k in ("scaffold", "moon", "fedproto", "fedtgp")},
    "gcfl_plus": {"gcfl_eps1": 0.05, "gcfl_eps2": 0.1, "gcfl_seq_length": 5, "gcfl_standardize": False,
                  "gcfl_seq_params": "conv", "gcfl_warmup": 21},
}
GRAPH_OPENFGL_CONFIG = {
    **{k: OPENFGL_CONFIG[k] for k in ("moon", "fedproto", "fedtgp")},
    "gcfl_plus": {"eps1": 0.05, "eps2": 0.1, "seq_length": 5, "standardize": False},
}
# Algorithms whose OpenFGL model is not its GIN (openfgl/model/gin.py) but a sum-readout model without
# batch norm (gcfl_plus/models.py GIN; fedstar's DecoupledGIN): fgl_jax runs them with sum readout.
SUM_READOUT = ("fedstar", "gcfl_plus")
# OpenFGL's model per run: its own (openfgl/model/gin.py for the GIN rows) or fgl_jax's GraphClassifier
# in torch with fgl_jax's initial parameters (run_openfgl_graph_fl.FglJaxGIN). FedStar and GCFL+ build
# their own OpenFGL models (DecoupledGIN; gcfl_plus/models.py GIN, whose sharing is of its GIN layers
# only), so they keep them.
OPENFGL_MODELS = ("openfgl", "fgl_jax")
OWN_OPENFGL_MODEL = ("fedstar", "gcfl_plus")
SAME_MODEL_TAG = "same model"
FIRST_SPLIT_ROUND = 22   # GCFL+'s first possible split on both sides (1-based; GRAPH_FGL_OPTIONS above)
DATASETS = ("PROTEINS", "NCI1", "IMDB-BINARY", "IMDB-MULTI", "ENZYMES", "BZR", "COX2", "PTC_MR", "AIDS", "chem")
# Cross-domain cells: a GCFL group (fgl_jax.data.graph_domains.GROUPS, `--partition cross_domain`), one
# dataset per client; OpenFGL runs them as graph_fl_cross_domain with these (its own) dataset names.
CROSS_DOMAIN = {"chem": ("MUTAG", "BZR", "COX2", "PTC_MR", "AIDS", "NCI1")}
# Algorithms whose OpenFGL 1.1.0 server runs with several datasets. FGLDataset.load_data sets
# `global_data = None` when `len(args.dataset) > 1`, so the server's GraphClsTask has no data, no model
# (task/base.py builds `self.model` only `if data is not None`) and no num_global_classes; FedStar and
# GCFL+ load their own server model (load_custom_model), isolate's server touches no task.
OPENFGL_CROSS_DOMAIN = ("fedstar", "gcfl_plus", "local")
CROSS_DOMAIN_NOT_RUN = {
    "fedavg": "AttributeError: 'GraphClsTask' object has no attribute 'model' at flcore/fedavg/server.py:53 "
              "(send_message: `list(self.task.model.parameters())`, before round 0 trains)",
    "fedprox": "AttributeError: 'GraphClsTask' object has no attribute 'model' at flcore/fedprox/server.py:62 "
               "(send_message: `list(self.task.model.parameters())`)",
    "scaffold": "AttributeError: 'GraphClsTask' object has no attribute 'model' at flcore/scaffold/server.py:29 "
                "(__init__: the control variates from `self.task.model.parameters()`)",
    "moon": "AttributeError: 'GraphClsTask' object has no attribute 'model' at flcore/moon/server.py:57 "
            "(send_message: `list(self.task.model.parameters())`)",
    "fedproto": "AttributeError: 'GraphClsTask' object has no attribute 'data' at task/graph_cls.py:236 "
                "(`self.data.num_global_classes`, read by FedProtoServer.execute's loop over the classes, "
                "flcore/fedproto/server.py:40, after the clients' first round)",
    "fedtgp": "AttributeError: 'GraphClsTask' object has no attribute 'data' at task/graph_cls.py:236 "
              "(`self.data.num_global_classes`, read by FedTGPServer.__init__ to size its prototype generator, "
              "flcore/fedtgp/server.py:78)",
}

DIFFERENCES = [
    "Model: OpenFGL's GIN (openfgl/model/gin.py) has learnable eps (train_eps), an MLP Linear(in, 2h) - "
    "BatchNorm - ReLU - Linear(2h, h) per layer, BatchNorm + ReLU + dropout after each layer, sum "
    "readout, then Linear(h, h) - BatchNorm - ReLU - dropout - Linear(h, classes). fgl_jax's "
    "GraphClassifier is GIN-0 (eps = 0), MLP Linear(in, h) - ReLU - Linear(h, h), ReLU, dropout "
    "between layers, no batch norm, a mean readout (its default: sum without batch norm diverges at "
    "lr 0.01, docs/graph_fl.md), then Linear(h, h) - ReLU - dropout - Linear(h, classes). fgl_jax has "
    "no batch norm in its graph model; the accuracies compare two architectures on one split.",
    "Features: PyG's TUDataset puts node attributes before the one-hot node labels, fgl_jax after (same "
    "columns, another order); IMDB: both one-hot degrees up to the set's largest degree.",
    "FedAvg weights: OpenFGL a client's number of graphs (all splits), fgl_jax its training graphs.",
    "Initialisation and dropout masks come from different RNGs (torch vs JAX); OpenFGL evaluates after "
    "the clients' local training (local_model_on_local_data) as fgl_jax does.",
    "Mini-batch order: OpenFGL cuts a client's training graphs into mini-batches in ascending graph ids "
    "(its simulations sort each client's ids, its loaders do not shuffle); NCI1 and PROTEINS are stored "
    "sorted by label, so there a mini-batch holds mostly one class. fgl_jax cuts them in one random order "
    "per client (graph_order shuffled, its default); rows tagged \"OpenFGL in fgl_jax's mini-batch order\" "
    "(--openfgl-order fgl_jax) give OpenFGL fgl_jax's order, so both sides cut the same mini-batches (on "
    "chem, each client's dataset reordered: its NCI1 client holds 3,287 training graphs in label order "
    "otherwise); a client with at most batch-size training graphs trains on one mini-batch, whose order "
    "does not matter.",
]

# What differs per algorithm beyond DIFFERENCES (the record lists those of the algorithms it holds).
REGULARISER_GATE = (
    "OpenFGL 1.1.0's MOON, FedProto and FedTGP clients add their term only when the loss sees all of a "
    "client's graphs (`self.task.num_samples != label.shape[0]` returns the plain loss, meant to skip "
    "evaluation on the global set): on graph_cls that is the evaluation, never a training mini-batch "
    "(it holds only training graphs), so on OpenFGL's side")
ALGORITHM_DIFFERENCES = {
    "fedstar":
        "FedStar: both sides run the same dual-channel model (OpenFGL's DecoupledGIN, fgl_jax's "
        "DualChannelClassifier: feature GIN on [features | structure], structure GCN with tanh, fusion layer, "
        "sum readout, no batch norm; RWSE 16 + DSE 16). OpenFGL 1.1.0's clients never load the server's "
        "structure channel (its client assigns `v.data = ...` to `model.state_dict()` entries, detached "
        "aliases: the parameter is left as it was), so on its side every client trains alone; fgl_jax shares "
        "the structure channel (the paper, the authors' code; fgl_jax's --fedstar-share none runs OpenFGL's "
        "behaviour, docs/graph_fl.md). fgl_jax runs it "
        "with sum readout (the --pooling flag is for the other rows) and fedstar_client_init=own (each "
        "client's feature channel its own draw, as OpenFGL); the average is weighted by training graphs "
        "(fgl_jax, as the authors' code) vs all of a client's graphs (OpenFGL's num_samples).",
    "gcfl_plus":
        "GCFL+: both sides take OpenFGL's gcfl_plus_config (eps1 0.05, eps2 0.1, seq_length 5, standardize "
        "off = fgl_jax's gcfl_eps1, gcfl_eps2, gcfl_seq_length, gcfl_standardize; the gradient norm over the "
        "GIN layers, gcfl_seq_params conv) and the same first possible split, round 22 (OpenFGL: round > 20 "
        "counted from 0; fgl_jax: gcfl_warmup 21 counted from 1), so runs of up to 21 rounds never split and "
        "compare GCFL+'s federation before its first split. OpenFGL's GCFL+ model is its own "
        "(gcfl_plus/models.py: Linear(in, h), GIN-0 layers with MLP Linear(h, h) - ReLU - Linear(h, h), "
        "ReLU and dropout after each, sum readout, Linear(h, h) - ReLU - dropout - Linear(h, classes), no "
        "batch norm): fgl_jax runs its GraphClassifier with sum readout, the same but for that input Linear "
        "(fgl_jax's first GIN layer reads the features). OpenFGL shares only the GIN layers (input Linear "
        "and head stay each client's own, from each client's own draw); fgl_jax's cluster model is the whole "
        "model from one draw; cluster means weighted by all of a client's graphs (OpenFGL) vs training "
        "graphs (fgl_jax).",
    "scaffold":
        "SCAFFOLD (option II, Adam on both sides, server step 1): the variate update divides by K lr with "
        "K = the local steps taken in fgl_jax (epochs x the client's training mini-batches) and K = the "
        "epochs in OpenFGL (its 1/(num_epochs * lr)), so a client with m training mini-batches has m times "
        "OpenFGL's variate; model average weighted by training graphs (fgl_jax) vs all graphs (OpenFGL).",
    "moon":
        REGULARISER_GATE + " MOON trains as FedAvg; fgl_jax adds mu x the contrastive loss (mu 1, "
        "temperature 0.5) on the graph embeddings (readout) of every training mini-batch.",
    "fedproto":
        REGULARISER_GATE + " FedProto trains each client alone (its model weights are never shared), i.e. as "
        "isolate; fgl_jax adds lambda x the per-class prototype MSE (lambda 1, proto_loss per_class, "
        "proto_weights openfgl) on each mini-batch's training-graph embeddings. fgl_jax's clients also start "
        "from one initial draw (OpenFGL: each its own).",
    "fedtgp":
        REGULARISER_GATE + " FedTGP trains each client alone, i.e. as isolate (its server still trains the "
        "prototype generator on what the clients upload); fgl_jax adds lambda x the per-class MSE to the "
        "trained global prototypes (lambda 1, tgp_variant openfgl, 10 server epochs, server lr 0.01). fgl_jax's "
        "clients start from one initial draw (OpenFGL: each its own).",
    "local":
        "local = OpenFGL's isolate: every client trains alone; fgl_jax's clients start from one initial "
        "draw, OpenFGL's each from its own.",
}


def run_rounds(run: dict) -> int:
    """The rounds a recorded run trained (a cell is dataset, algorithm, rounds and OpenFGL's model: a
    longer run of a cell's algorithm is a cell of its own)."""
    return int(run["fgl_jax"]["rounds"])


def run_model(run: dict) -> str:
    """OpenFGL's model of a recorded run: "openfgl" (its own; runs recorded before the option) or
    "fgl_jax" (fgl_jax's GraphClassifier in torch, fgl_jax's initial parameters)."""
    return run.get("openfgl_model", "openfgl")


BASE_BETA = 0.5   # the record's label-skew cells; a run at another --beta is a cell of its own


def run_beta(run: dict) -> float:
    """The Dirichlet concentration of a recorded label-skew run (runs recorded before the key: BASE_BETA)."""
    return float(run.get("beta", BASE_BETA))


def run_options(run: dict) -> str:
    """What a recorded run changed: its label skew when not BASE_BETA ("Dirichlet 5"), fgl_jax's options
    (--fgl-option) as "k=v k=v", then OpenFGL's SCAFFOLD variate with K = steps (--openfgl-scaffold-k
    steps) as "OpenFGL scaffold K=steps"; "" for none."""
    return options_text(run.get("fgl_options", {}), run.get("openfgl_scaffold_k", "epochs"),
                        BASE_BETA if run.get("partition") == "cross_domain" else run_beta(run),
                        run.get("openfgl_order", "ids"))


def options_text(fgl_options: dict, scaffold_k: str = "epochs", beta: float = BASE_BETA, order: str = "ids") -> str:
    """`run_options`'s text of a run's label skew, fgl_jax's changed options, OpenFGL's SCAFFOLD K and
    OpenFGL's mini-batch order."""
    parts = [f"Dirichlet {beta:g}"] if beta != BASE_BETA else []
    parts += [" ".join(f"{k}={v}" for k, v in sorted(fgl_options.items()))] if fgl_options else []
    parts += [f"OpenFGL scaffold K={scaffold_k}"] if scaffold_k != "epochs" else []
    parts += [ORDER_TAG] if order == "fgl_jax" else []
    return ", ".join(parts)


ORDER_TAG = "OpenFGL in fgl_jax's mini-batch order"


def run_variant(run: dict) -> tuple:
    """What besides dataset, algorithm and rounds makes a run's cell: OpenFGL's model, fgl_jax's changed options."""
    return run_model(run), run_options(run)


def variant_tag(model: str, options: str = "") -> str:
    """", same model" when OpenFGL ran fgl_jax's model, then the run's changed options (`run_options`)."""
    parts = [p if p.startswith(("OpenFGL", "Dirichlet")) else "fgl_jax " + p for p in options.split(", ") if p]
    options = ", ".join(parts)
    return (f", {SAME_MODEL_TAG}" if model == "fgl_jax" else "") + (f", {options}" if options else "")


def algorithm_label(algo: str, model: str, options: str = "") -> str:
    """The table's algorithm column: fgl_jax's name / OpenFGL's and the run's `variant_tag`."""
    return f"{algo} / {ALGORITHMS[algo]}" + variant_tag(model, options)


def parse_fgl_options(pairs: list) -> dict:
    """{field: value} of --fgl-option KEY=VALUE pairs (int, float, true / false, else the text).

    Args:
        pairs: the KEY=VALUE strings.

    Returns:
        The RunConfig changes.

    Raises:
        ValueError: a pair without "=" or a key RunConfig has no field for (one line).
    """
    import dataclasses
    from fgl_jax import RunConfig
    fields = {f.name for f in dataclasses.fields(RunConfig)}
    out = {}
    for pair in pairs:
        key, eq, text = pair.partition("=")
        if not eq or key not in fields:
            raise ValueError(f"--fgl-option {pair!r}: expected KEY=VALUE with KEY a RunConfig field")
        for cast in (int, float):
            try:
                out[key] = cast(text)
                break
            except ValueError:
                continue
        else:
            out[key] = {"true": True, "false": False}.get(text.lower(), text)
    return out


SAME_MODEL = (
    f"Rows tagged \"{SAME_MODEL_TAG}\": OpenFGL's algorithm trains fgl_jax's GraphClassifier instead of its GIN: "
    "run_openfgl_graph_fl.FglJaxGIN (GIN-0 layers Linear(in, h) - ReLU - Linear(h, h), ReLU, dropout on the "
    "second layer's input, the run's readout, Linear(h, h) - ReLU - dropout - Linear(h, classes), no batch "
    "norm), in OpenFGL's server and every client loaded with fgl_jax's initial parameters of the run (the "
    "seed's one draw, read from fgl_jax's initial state), node features permuted into fgl_jax's column "
    "order (checked equal on every node). What still differs in these rows: the dropout masks (torch vs "
    "JAX RNG), the order of a client's training mini-batches (below), FedAvg weights (all graphs vs training "
    "graphs) and each algorithm's own differences below; local / isolate and FedProto / FedTGP clients "
    "now start from one draw on both sides.")


def differences(algorithms, models=()) -> list:
    """DIFFERENCES, the same-model paragraph when a run used it, then the per-algorithm ones of
    `algorithms` (in ALGORITHMS order).

    Args:
        algorithms: fgl_jax algorithm names the record holds runs of.
        models: OpenFGL's model of each run ("openfgl" or "fgl_jax").

    Returns:
        The list of difference paragraphs for the record.
    """
    held = set(algorithms)
    same = [SAME_MODEL] if "fgl_jax" in set(models) else []
    return DIFFERENCES + same + [ALGORITHM_DIFFERENCES[k] for k in ALGORITHMS if k in held and k in ALGORITHM_DIFFERENCES]


def record_differences(runs: list) -> list:
    """`differences` of a record's runs."""
    return differences([r["algorithm"] for r in runs], [run_model(r) for r in runs])


def initial_params(algorithm, data, seed: int, template) -> dict:
    """fgl_jax's initial model parameters of a run with `jax.random.key(seed)`: the state `run` starts
    from (`algorithm.init(split(key)[0], data)`, as fgl_jax.engine.make_init), the field holding the
    model (`server`, or a per-client stack `personal` whose rows are one draw).

    Args:
        algorithm: the run's FederatedAlgorithm.
        data: its FedData.
        seed: the run's seed.
        template: parameters of the run's model (any draw: the tree structure and shapes).

    Returns:
        {"conv_0_0/kernel": array, ...}: the model's parameters by layer and name.

    Raises:
        ValueError: no field of the state holds one model of the template's shapes.
    """
    import dataclasses
    import jax
    state = jax.jit(lambda k, d: algorithm.init(jax.random.split(k)[0], d))(jax.random.key(seed), data)
    fields = ({f.name: getattr(state, f.name) for f in dataclasses.fields(state)} if dataclasses.is_dataclass(state)
              else state._asdict())
    want = jax.tree.structure(template)
    shapes = [np.shape(v) for v in jax.tree.leaves(template)]
    for name in ("server", "personal", *fields):
        tree = fields.get(name)
        if tree is None or jax.tree.structure(tree) != want:
            continue
        leaves = [np.asarray(v) for v in jax.tree.leaves(tree)]
        if [v.shape for v in leaves] == shapes:
            return flat_params(tree)
        if [v.shape[1:] for v in leaves] == shapes and all((v == v[:1]).all() for v in leaves):
            return flat_params(jax.tree.map(lambda v: np.asarray(v)[0], tree))
    raise ValueError(f"no field of the initial state ({', '.join(fields)}) holds one model of the run's shapes")


def flat_params(params) -> dict:
    """{"layer/name": array} of a flax parameter tree {"params": {layer: {name: array}}}."""
    return {f"{layer}/{k}": np.asarray(v, np.float32) for layer, d in params["params"].items() for k, v in d.items()}


def fgl_jax_logits(cfg, prep, params) -> np.ndarray:
    """fgl_jax's evaluation logits [G, K] of every graph of the run's set (graph order) under
    `params`: its GraphClassifier applied to each client's evaluation stack, as its evaluation does."""
    import jax
    from fgl_jax.systems.baseline import graph_model
    model = graph_model(cfg, prep.graph)
    out = np.zeros((prep.graph.num_graphs, prep.graph.num_classes), np.float32)
    ev = prep.data.eval
    for c in range(ev.num_clients):
        b = jax.tree.map(lambda v: v[c], ev.replace(classes=None, step_class=None, step_slot=None))
        logits, ids = np.asarray(model.apply(params, b, train=False)), np.asarray(b.graph_ids)
        out[ids[ids >= 0]] = logits[ids >= 0]
    return out


def export_init(cfg, prep, algorithm, seed: int, path: Path, with_logits: bool = False) -> None:
    """The NPZ run_openfgl_graph_fl.py loads FglJaxGIN from: fgl_jax's initial parameters of the run
    (`initial_params`), its node features x [N, F] (OpenFGL's columns are matched to them), and with
    `with_logits` fgl_jax's evaluation logits [G, K] of those parameters (`--check-model`)."""
    import jax
    from fgl_jax.systems.baseline import graph_model
    model = graph_model(cfg, prep.graph)
    one = jax.tree.map(lambda v: v[0], prep.data.eval.replace(classes=None, step_class=None, step_slot=None))
    template = model.init({"params": jax.random.key(0), "dropout": jax.random.key(0)}, one, train=False)
    flat = initial_params(algorithm, prep.data, seed, template)
    extra = {}
    if with_logits:
        tree = {"params": {}}
        for key, v in flat.items():
            layer, name = key.split("/")
            tree["params"].setdefault(layer, {})[name] = v
        extra["logits"] = fgl_jax_logits(cfg, prep, tree)
    np.savez(path, x=np.asarray(prep.graph.x, np.float32), **flat, **extra)


def openfgl_tu_path(data_dir: Path, name: str) -> str:
    """The TU directory or zip of `name` in the shared data (what PyG's TUDataset gets as raw files)."""
    d = data_dir / "tu" / name
    return str(d if d.is_dir() else data_dir / "tu" / f"{name}.zip")


def split_masks(cfg, gs):
    """(assignment, masks) of fgl_jax's run of `cfg`: the same functions `prepare` calls."""
    from fgl_jax.systems.baseline import graph_split
    return graph_split(cfg, gs)


def usable_partition_seed(cfg, gs, tries: int = 50) -> int:
    """The first partition seed from 0 whose clients all hold a validation and a test graph: OpenFGL's
    evaluation raises on a client with an empty split (sklearn's accuracy of no samples), which the
    label skew gives small clients (OpenFGL's own simulation redraws below `least_samples` graphs)."""
    for seed in range(tries):
        c = cfg.replace(partition_seed=seed)
        assignment, masks = split_masks(c, gs)
        if all(masks[s][assignment == k].any() for s in ("val", "test") for k in range(cfg.clients)):
            return seed
    raise RuntimeError(f"no partition seed in 0..{tries - 1} gives every client a validation and a test graph")


def export(cfg, gs, path: Path) -> dict:
    """The client of every graph, the per-client split of fgl_jax's run of `cfg` (the same
    functions `prepare` calls) and each training graph's place in its client's mini-batch order
    (`train_rank`, -1 for the others: `--openfgl-order fgl_jax` hands OpenFGL that order), for
    run_openfgl_graph_fl.py; returns the clients' sizes."""
    from fgl_jax.systems.baseline import graph_train_order
    assignment, masks = split_masks(cfg, gs)
    rank = np.full(len(assignment), -1, np.int64)
    for rows in graph_train_order(cfg, gs):
        rank[rows] = np.arange(len(rows))
    y = np.asarray(gs.y, np.int64)
    if "class_blocks" in gs.meta:   # cross-domain: each dataset's own labels 0..K_d-1 (OpenFGL's per-dataset y)
        y = y - np.asarray([lo for lo, _ in gs.meta["class_blocks"]], np.int64)[np.asarray(gs.meta["domain"])]
    np.savez(path, assignment=assignment.astype(np.int64), y=y, train_rank=rank,
             **{f"{k}_mask": v for k, v in masks.items()})
    return {"partition_seed": cfg.partition_seed, "graphs_per_client": np.bincount(assignment, minlength=cfg.clients).tolist(),
            "test_graphs": int(masks["test"].sum()),
            "client_majority_test": client_majority_accuracy(np.asarray(gs.y), assignment, masks, cfg.clients)}


def client_majority_accuracy(y: np.ndarray, assignment: np.ndarray, masks: dict, clients: int) -> float:
    """Test accuracy of the predictor that answers each client's most frequent training class, averaged
    over clients weighted by their graph counts (the harness's averaging): what per-client label
    priors alone score under label skew, the floor a local model on local data reaches without
    learning anything about the graphs.

    Args:
        y: graph labels [G].
        assignment: client of every graph [G].
        masks: {"train", "test"}: bool [G].
        clients: number of clients.

    Returns:
        The accuracy in [0, 1].
    """
    n = np.bincount(assignment, minlength=clients).astype(float)
    acc = np.zeros(clients)
    for k in range(clients):
        train, test = masks["train"] & (assignment == k), masks["test"] & (assignment == k)
        if test.any():
            guess = np.bincount(y[train], minlength=int(y.max()) + 1).argmax() if train.any() else 0
            acc[k] = float((y[test] == guess).mean())
    return float((acc * n).sum() / n.sum())


def backfill_majority(runs: list, config: dict) -> None:
    """Adds `client_majority_test` to runs recorded before it existed (the same clients and split,
    re-derived from the record's dataset, seed and partition seed)."""
    from fgl_jax import RunConfig
    from fgl_jax.systems.baseline import prepare
    for r in runs:
        if "client_majority_test" in r:
            continue
        c = RunConfig(dataset="MUTAG_TU" if r["dataset"] == "MUTAG" else r["dataset"], algorithm="fedavg",
                      task="graph_cls", clients=config["clients"], partition="dirichlet",
                      dirichlet_beta=run_beta(r), partition_seed=r.get("partition_seed", 0),
                      split_seed=r["seed"], seed=r["seed"])
        gs = prepare(c).graph
        assignment, masks = split_masks(c, gs)
        r["client_majority_test"] = client_majority_accuracy(np.asarray(gs.y), assignment, masks, c.clients)


def run_fgl(algorithm, prep, seed: int, rounds: int) -> dict:
    import jax
    from fgl_jax import run
    c0 = time.process_time()
    res = run(algorithm, prep.data, jax.random.key(seed), rounds)
    cpu = time.process_time() - c0
    extra = {"num_clusters": [int(v) for v in res.history["num_clusters"]]} if "num_clusters" in res.history else {}
    return {**extra, "best_val": float(res.best["best_val"]), "best_test": float(res.best["best_test"]),
            "best_round": int(res.best["best_round"]), "final_test": float(res.history["test_acc"][-1]),
            "test_history": [float(v) for v in res.history["test_acc"]], "rounds": res.rounds_run,
            "compile_seconds": float(res.compile_seconds), "ms_per_round": 1000.0 * res.run_seconds / res.rounds_run,
            "cpu_ms_per_round": 1000.0 * cpu / res.rounds_run}


def run_openfgl(work: Path, job: dict, venv_python: Path, check: bool = False) -> dict:
    (work / "job.json").write_text(json.dumps(job))
    env = dict(os.environ, TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD="1")
    proc = subprocess.run([str(venv_python), str(HERE / "run_openfgl_graph_fl.py"), *(["--check"] if check else []),
                           str(work / "job.json"), str(work / "result.json")], capture_output=True, text=True, env=env)
    if proc.returncode:
        raise RuntimeError(f"OpenFGL failed ({job['openfgl_algorithm']}, {job['openfgl_dataset']}, seed "
                           f"{job['seed']}):\n{proc.stderr[-3000:]}")
    return json.loads((work / "result.json").read_text())


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--datasets", nargs="+", default=["PROTEINS", "NCI1", "IMDB-BINARY"], choices=DATASETS,
                    help="TU sets of the shared data (OpenFGL's names)")
    ap.add_argument("--algorithms", nargs="+", default=["fedavg", "fedprox"], choices=sorted(ALGORITHMS),
                    help="fgl_jax names (OpenFGL's the same but local = isolate)")
    ap.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2], help="run seeds (= fgl_jax split seeds)")
    ap.add_argument("--rounds", type=int, default=20, help="communication rounds on both sides")
    ap.add_argument("--clients", type=int, default=10, help="number of clients")
    ap.add_argument("--beta", type=float, default=0.5, help="label-skew Dirichlet concentration")
    ap.add_argument("--local-epochs", type=int, default=3, help="local epochs per round (OpenFGL's default 3)")
    ap.add_argument("--batch-size", type=int, default=128, help="graphs per mini-batch (OpenFGL's default 128)")
    ap.add_argument("--hidden", type=int, default=64, help="hidden width (OpenFGL's default 64)")
    ap.add_argument("--dropout", type=float, default=0.5, help="dropout rate (OpenFGL's default 0.5)")
    ap.add_argument("--lr", type=float, default=0.01, help="Adam learning rate (OpenFGL's default 0.01)")
    ap.add_argument("--weight-decay", type=float, default=5e-4, help="L2 weight decay (OpenFGL's default 5e-4)")
    ap.add_argument("--prox-mu", type=float, default=1e-3, help="FedProx mu (OpenFGL's fedprox_config default)")
    ap.add_argument("--graph-batching", default="count", choices=("count", "budget"),
                    help="fgl_jax's cut of a client's graphs into mini-batches (RunConfig.graph_batching; OpenFGL "
                         "always cuts batch-size graphs)")
    ap.add_argument("--pooling", default="mean", choices=("mean", "sum", "max"), help="fgl_jax's readout (fedstar, "
                    "gcfl_plus: always sum, as OpenFGL's models for them)")
    ap.add_argument("--openfgl-model", default="openfgl", choices=OPENFGL_MODELS,
                    help="OpenFGL's model: openfgl = its own GIN (openfgl/model/gin.py); fgl_jax = fgl_jax's "
                         "GraphClassifier in torch with fgl_jax's initial parameters on every client and the server "
                         "(not for fedstar, gcfl_plus, which build their own models; label skew only)")
    ap.add_argument("--fgl-option", action="append", default=[], metavar="KEY=VALUE",
                    help="a RunConfig field of fgl_jax's side changed for this invocation's runs (e.g. moon_mu=0: "
                         "MOON without its term, as OpenFGL 1.1.0 trains it on graph_cls); such runs are cells of "
                         "their own, tagged with the change (repeatable)")
    ap.add_argument("--openfgl-scaffold-k", default="epochs", choices=("epochs", "steps"),
                    help="K of OpenFGL's SCAFFOLD variate update (x - y_i) / (K lr): epochs = OpenFGL 1.1.0's code; "
                         "steps = epochs x the client's training mini-batches, fgl_jax's (a tagged cell of its own)")
    ap.add_argument("--check-model", action="store_true",
                    help="run no training: compare fgl_jax's and the torch GraphClassifier's logits on every graph of "
                         "each dataset (seed's initial parameters) and print the largest difference")
    ap.add_argument("--threads", type=int, default=1, help="CPU threads per side")
    ap.add_argument("--venv", default=os.environ.get("OPENFGL_VENV", str(DEFAULT_VENV)), help="OpenFGL's venv")
    ap.add_argument("--out", default=str(HERE / "results_graph_fl"), help="stem of the record <out>.json / .md")
    ap.add_argument("--openfgl-order", choices=("ids", "fgl_jax"), default="ids",
                    help="the order OpenFGL's loaders walk a client's training graphs in: ids (OpenFGL's own, "
                         "ascending graph ids) or fgl_jax (fgl_jax's order of the run, graph_train_order: both "
                         "sides cut the same mini-batches; a cross-domain client's dataset is reordered the same "
                         "way; a tagged cell of its own)")
    ap.add_argument("--render-only", action="store_true", help="rewrite <out>.md from <out>.json, running nothing")
    ap.add_argument("--note", action="append", default=[], help="with --render-only: append this line to the "
                    "record's written notes (a measured explanation of a cell; repeatable)")
    ap.add_argument("--merge", action="store_true", help="keep the record's runs of other (dataset, algorithm, seed) "
                    "cells (same settings) and add this invocation's")
    a = ap.parse_args(argv)
    if a.openfgl_model == "fgl_jax" or a.check_model:
        refused = [k for k in a.algorithms if k in OWN_OPENFGL_MODEL] if a.openfgl_model == "fgl_jax" else []
        refused += [d for d in a.datasets if d in CROSS_DOMAIN]
        if refused:
            ap.error(f"--openfgl-model fgl_jax / --check-model: not for {', '.join(refused)} (fedstar and gcfl_plus "
                     "build their own OpenFGL models; a cross-domain client has its own input width)")
    try:
        fgl_options = parse_fgl_options(a.fgl_option)
    except ValueError as e:
        ap.error(str(e))
    variant = (a.openfgl_model, options_text(fgl_options, a.openfgl_scaffold_k, a.beta, a.openfgl_order))
    if a.render_only:
        from fgl_jax import records
        rec = records.read(Path(a.out).with_suffix(".json"))
        payload = {k: v for k, v in rec["metrics"].items() if k != "rows"}
        payload["differences"] = record_differences(payload["runs"])   # this file's text
        payload["notes"] = payload.get("notes", []) + [f"- {n}" for n in a.note]
        backfill_majority(payload["runs"], rec["config"])
        render(payload, rec["config"], Path(a.out), rec["provenance"])
        return
    venv_python = Path(a.venv) / "bin" / "python"
    if not venv_python.exists():
        sys.exit(f"OpenFGL venv missing at {a.venv}: run benchmarks/peers/openfgl/setup.sh {a.venv} first")
    if a.threads == 1 and "jax" not in sys.modules:
        os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " --xla_cpu_multi_thread_eigen=false").strip()
    from fgl_jax import RunConfig, records, resolve_data_dir
    from fgl_jax.systems.baseline import algorithm_from_config, prepare

    started = time.time()
    info = machine_info()
    data_dir = Path(resolve_data_dir(None))
    runs, i, sizes, notes = [], 0, {}, []
    settings = vars(a)
    if a.merge and Path(a.out).with_suffix(".json").exists():
        old = records.read(Path(a.out).with_suffix(".json"))
        notes = old["metrics"].get("notes", [])   # the record's written notes on kept runs stay with them
        mine = {(d, al, s, a.rounds, variant) for d in a.datasets for al in a.algorithms for s in a.seeds}
        runs = [r for r in old["metrics"]["runs"]
                if (r["dataset"], r["algorithm"], r["seed"], run_rounds(r), run_variant(r)) not in mine]
        for key in ("datasets", "algorithms", "seeds"):
            settings = {**settings, key: list(dict.fromkeys(old["config"][key] + settings[key]))}
        # the record's base setting (its label-skew cells); a run of other rounds is its own cell
        settings.update({k: old["config"][k] for k in ("rounds", "clients", "beta") if k in old["config"]})
        info["loadavg_start"] = old["metrics"]["machine"]["loadavg_start"]
        notes = old["metrics"].get("notes", [])   # the record's hand-written notes on the cells it keeps
    with tempfile.TemporaryDirectory(prefix="openfgl_gfl_") as tmp:
        for ds in a.datasets:
            fgl_name = "MUTAG_TU" if ds == "MUTAG" else ds
            group = CROSS_DOMAIN.get(ds)
            for algo in a.algorithms:
                if group and algo not in OPENFGL_CROSS_DOMAIN:
                    print(f"{ds} {algo}: not run, OpenFGL 1.1.0 has no cross-domain {algo}: {CROSS_DOMAIN_NOT_RUN[algo]}")
                    continue
                extra = {"prox_mu": a.prox_mu} if algo == "fedprox" else dict(GRAPH_FGL_OPTIONS.get(algo, {}))
                pooling = "sum" if algo in SUM_READOUT else a.pooling
                if algo == "fedstar":   # OpenFGL's DecoupledGIN: each client its own initial draw
                    extra = {"fedstar_client_init": "own"}
                # cross-domain: one dataset per client (fgl_jax's joined set with per-dataset heads)
                where = ({"clients": len(group), "partition": "cross_domain"} if group else
                         {"clients": a.clients, "partition": "dirichlet", "dirichlet_beta": a.beta})
                cfg = RunConfig(dataset=fgl_name, algorithm=algo, task="graph_cls", **where, graph_model="gin",
                                graph_pooling=pooling, graph_batch_size=a.batch_size,
                                graph_batching=a.graph_batching, hidden=a.hidden, num_layers=2,
                                dropout=a.dropout, local_steps=a.local_epochs, lr=a.lr, weight_decay=a.weight_decay,
                                rounds=a.rounds, eval_mode="local_model_on_local_data", eval_average="client_nodes",
                                **{**extra, **fgl_options})
                for seed in a.seeds:
                    c = cfg.replace(split_seed=seed, seed=seed)
                    c = c.replace(partition_seed=usable_partition_seed(c, prepare(c).graph))
                    prep = prepare(c)
                    algorithm = algorithm_from_config(c, prep.graph)
                    work = Path(tmp) / f"{ds}_{algo}_{seed}"
                    work.mkdir(parents=True)
                    sizes[(ds, seed)] = export(c, prep.graph, work / "arrays.npz")
                    names = list(group or (ds,))
                    job = {"root": str(work / "root"), "tu_paths": [openfgl_tu_path(data_dir, n) for n in names],
                           "arrays": str(work / "arrays.npz"), "openfgl_datasets": names,
                           "cross_domain": bool(group), "openfgl_dataset": ds,
                           "openfgl_algorithm": ALGORITHMS[algo], "clients": c.clients, "beta": a.beta,
                           "rounds": a.rounds, "hidden": a.hidden, "num_layers": 2, "dropout": a.dropout,
                           "lr": a.lr, "weight_decay": a.weight_decay, "local_epochs": a.local_epochs,
                           "batch_size": a.batch_size, "seed": seed, "prox_mu": a.prox_mu, "threads": a.threads,
                           "openfgl_config": GRAPH_OPENFGL_CONFIG.get(algo, {}),
                           "openfgl_model": a.openfgl_model, "pooling": pooling,
                           "openfgl_scaffold_k": a.openfgl_scaffold_k, "openfgl_order": a.openfgl_order}
                    if a.openfgl_model == "fgl_jax" or a.check_model:
                        job["init_params"] = str(work / "init.npz")
                        export_init(c, prep, algorithm, seed, work / "init.npz", with_logits=a.check_model)
                    if a.check_model:   # the two forward passes, no training
                        out = run_openfgl(work, job, venv_python, check=True)
                        print(f"{ds} seed {seed} ({algo}'s initial parameters, readout {pooling}): torch GraphClassifier "
                              f"vs fgl_jax on {out['graphs']} graphs: max |logit diff| {out['max_abs_diff']:.3g} (largest "
                              f"|logit| {out['max_abs_logit']:.3g}, max relative {out['max_rel_diff']:.3g}), same argmax "
                              f"{100 * out['same_argmax']:.2f} %, feature columns (PyG's for fgl_jax's) {out['feature_perm']}",
                              flush=True)
                        continue
                    sides = [("fgl_jax", lambda: run_fgl(algorithm, prep, seed, a.rounds)),
                             ("openfgl", lambda: run_openfgl(work, job, venv_python))]
                    if i % 2:   # alternate which side runs first
                        sides.reverse()
                    rec = {"dataset": ds, "algorithm": algo, "seed": seed, "first": sides[0][0], "clients": c.clients,
                           "partition": c.partition, "openfgl_model": a.openfgl_model,
                           **({"beta": a.beta} if not group else {}),
                           **({"fgl_options": fgl_options} if fgl_options else {}),
                           **({"openfgl_scaffold_k": a.openfgl_scaffold_k} if a.openfgl_scaffold_k != "epochs" else {}),
                           **({"openfgl_order": a.openfgl_order} if a.openfgl_order != "ids" else {}),
                           "loadavg": list(os.getloadavg()), **sizes[(ds, seed)]}
                    for name, fn in sides:
                        rec[name] = fn()
                    runs.append(rec)
                    i += 1
                    print(f"{ds} {algo} seed {seed}: fgl_jax test acc {rec['fgl_jax']['best_test']:.4f} "
                          f"({rec['fgl_jax']['ms_per_round']:.0f} ms/round), OpenFGL {rec['openfgl']['best_test']:.4f} "
                          f"({rec['openfgl']['ms_per_round']:.0f} ms/round)", flush=True)
                    # the record after every run: a run cut short still leaves what it measured
                    info["loadavg_end"] = list(os.getloadavg())
                    render({"runs": runs, "machine": info, "differences": record_differences(runs), "notes": notes}, settings, Path(a.out),
                           records.provenance(started=started))


CURVE_FROM = 4   # first round of the per-run mean test accuracy (rounds 1-3 are the start-up)


def run_rows(runs: list, start: int) -> list:
    """One row per run: partition seed, reported (best-validation) round and test accuracy of each side,
    and each side's mean test accuracy over rounds `start`.. of its `test_history`.

    Args:
        runs: the record's runs.
        start: first round (1-based) of the mean.

    Returns:
        Table rows (dicts).
    """
    rows = []
    for r in sorted(runs, key=lambda r: (DATASETS.index(r["dataset"]), list(ALGORITHMS).index(r["algorithm"]),
                                         run_rounds(r), OPENFGL_MODELS.index(run_model(r)), run_options(r), r["seed"])):
        fj, of = r["fgl_jax"], r["openfgl"]
        mf, mo = (100 * float(np.mean(x["test_history"][start - 1:])) for x in (fj, of))
        rows.append({"dataset": r["dataset"], "algorithm": r["algorithm"] + variant_tag(*run_variant(r)), "rounds": run_rounds(r), "seed": r["seed"],
                     "partition seed": r.get("partition_seed", 0),
                     "reported round fgl_jax / OpenFGL": f"{fj['best_round']} / {of['best_round']}",
                     "reported test fgl_jax / OpenFGL": f"{100 * fj['best_test']:.2f} / {100 * of['best_test']:.2f}",
                     f"mean rounds {start}+ fgl_jax / OpenFGL": f"{mf:.2f} / {mo:.2f}", "mean diff (pts)": f"{mf - mo:+.2f}",
                     "client-majority test": f"{100 * r['client_majority_test']:.2f}" if "client_majority_test" in r else "-"})
    return rows


def cross_domain_notes(runs: list, a: dict) -> list:
    """The record's paragraph on its cross-domain cells (empty without any): the setting, and each
    algorithm of `a["algorithms"]` that OpenFGL 1.1.0 cannot run across domains, with the code line why.

    Args:
        runs: the record's runs.
        a: the record's settings.

    Returns:
        Markdown lines.
    """
    groups = sorted({r["dataset"] for r in runs if r["dataset"] in CROSS_DOMAIN})
    if not groups:
        return []
    lines = [""]
    for g in groups:
        lines.append(
            f"Cross-domain `{g}` (GCFL's group without DHFR, absent from the shared data): {len(CROSS_DOMAIN[g])} clients, "
            f"client d holds all of {', '.join(CROSS_DOMAIN[g])} [d] (fgl_jax `--partition cross_domain --dataset {g}`: one "
            "joined set, each dataset's features in their own input columns and its classes in their own logit block, "
            "i.e. a per-dataset input projection and head; OpenFGL `graph_fl_cross_domain` with these datasets: each "
            "client's model has its own input width and classes), each client's 80/10/10 split drawn by fgl_jax and "
            "exported as for label skew; the other settings as above; accuracy weighted by the client's graph count "
            "(NCI1 4,110 and AIDS 2,000 of the 7,514 graphs weigh most).")
    missing = [k for k in a["algorithms"] if k in CROSS_DOMAIN_NOT_RUN]
    if missing:
        lines.append("")
        lines.append("Not run cross-domain (OpenFGL 1.1.0's `FGLDataset.load_data` sets `global_data = None` when "
                     "`len(args.dataset) > 1`, so its server's task builds no model and holds no data; fgl_jax runs "
                     "these on the group):")
        lines += [f"- {k}: {CROSS_DOMAIN_NOT_RUN[k]}." for k in missing]
    return lines


def cluster_splits(history: list) -> list:
    """1-based rounds after which the number of clusters grew (GCFL's splits), from a per-round count."""
    out, before = [], 1
    for i, n in enumerate(history):   # history[i]: clusters after round i + 1
        if n > before:
            out.append(i + 1)
        before = n
    return out


def split_notes(runs: list) -> list:
    """One line per clustered run whose sides both recorded their clusters per round: the rounds at
    which each side split and its clusters at the end.

    Args:
        runs: the record's runs.

    Returns:
        Markdown lines (empty when no run holds cluster counts).
    """
    lines = []
    for r in runs:
        fj, of = r["fgl_jax"].get("num_clusters"), r["openfgl"].get("num_clusters")
        if not fj or not of:
            continue
        said = lambda h: (f"split in rounds {', '.join(map(str, cluster_splits(h)))}" if cluster_splits(h)
                          else "never split") + f", {h[-1]} cluster{'s' if h[-1] > 1 else ''} at the end"
        line = f"- {r['dataset']} {r['algorithm']}, {run_rounds(r)} rounds, seed {r['seed']}: fgl_jax {said(fj)}; OpenFGL {said(of)}"
        mean, top = r["openfgl"].get("mean_update_norm"), r["openfgl"].get("max_update_norm")
        if mean and len(mean) > FIRST_SPLIT_ROUND - 1:
            late = slice(FIRST_SPLIT_ROUND - 1, None)   # the rounds a split is allowed in
            line += (f" (OpenFGL's split test on its first cluster in rounds {FIRST_SPLIT_ROUND}-{len(mean)}: norm of the "
                     f"mean update {min(mean[late]):.3g}-{max(mean[late]):.3g} against eps1 "
                     f"{GRAPH_OPENFGL_CONFIG['gcfl_plus']['eps1']}, largest update norm {min(top[late]):.3g}-"
                     f"{max(top[late]):.3g} against eps2 {GRAPH_OPENFGL_CONFIG['gcfl_plus']['eps2']})")
        lines.append(line + ".")
    return ["", "Clusters (GCFL+ runs, from each side's per-round cluster count):", ""] + lines if lines else []


def render(payload: dict, a: dict, out: Path, provenance: dict) -> None:
    """The record <out>.json and its table <out>.md from the runs (`--render-only` redoes them)."""
    from fgl_jax import records, table
    runs, info = payload["runs"], payload["machine"]
    rows = []
    cells = sorted({(r["dataset"], r["algorithm"], run_rounds(r), run_variant(r)) for r in runs},
                   key=lambda k: (a["datasets"].index(k[0]) if k[0] in a["datasets"] else len(DATASETS),
                                  a["algorithms"].index(k[1]) if k[1] in a["algorithms"] else len(ALGORITHMS), k[2],
                                  OPENFGL_MODELS.index(k[3][0]), k[3][1]))
    for ds, algo, rounds, variant in cells:
            mine = [r for r in runs if (r["dataset"], r["algorithm"], run_rounds(r), run_variant(r)) == (ds, algo, rounds, variant)]
            label = algorithm_label(algo, *variant) + ("" if rounds == a["rounds"] else f", {rounds} rounds")
            fa, fs = mean_sd([100 * r["fgl_jax"]["best_test"] for r in mine])
            oa, os_ = mean_sd([100 * r["openfgl"]["best_test"] for r in mine])
            ff, _ = mean_sd([100 * r["fgl_jax"]["final_test"] for r in mine])
            of, _ = mean_sd([100 * r["openfgl"]["final_test"] for r in mine])
            ft, _ = mean_sd([r["fgl_jax"]["ms_per_round"] for r in mine])
            ot, _ = mean_sd([r["openfgl"]["ms_per_round"] for r in mine])
            rows.append({"dataset": ds, "algorithm": label, "seeds": len(mine),
                         "fgl_jax test acc %": f"{fa:.2f} ± {fs:.2f}", "OpenFGL test acc %": f"{oa:.2f} ± {os_:.2f}",
                         "diff (pts)": f"{fa - oa:+.2f}",
                         "last-round test acc % fgl_jax / OpenFGL": f"{ff:.2f} / {of:.2f}",
                         "best rounds fgl_jax / OpenFGL": " ".join(str(r["fgl_jax"]["best_round"]) for r in mine)
                         + " / " + " ".join(str(r["openfgl"]["best_round"]) for r in mine),
                         "fgl_jax ms/round": f"{ft:.1f}", "OpenFGL ms/round": f"{ot:.1f}", "speed-up": f"{ot / ft:.1f}x",
                         "load avg": f"{np.mean([r['loadavg'][0] for r in mine]):.1f}"})
    md = table(rows, disable_numparse=True)
    notes = ["", f"Setting: {a['clients']} clients, label skew Dirichlet {a['beta']} (fgl_jax's draw, the first partition seed from 0 that leaves every client a validation and a test graph, as OpenFGL's evaluation needs: `partition_seed` in each run), "
             "OpenFGL's per-client 80/10/10 split drawn by fgl_jax (split seed = run seed), both exported to OpenFGL; "
             f"GIN 2 layers x {a['hidden']}, dropout {a['dropout']}, Adam lr {a['lr']}, weight decay {a['weight_decay']}, "
             f"{a['local_epochs']} local epochs over mini-batches of {a['batch_size']} graphs, {a['rounds']} rounds, "
             f"seeds {a['seeds']}, fgl_jax readout {a['pooling']} ({' and '.join(SUM_READOUT)}: sum); each client's model on its own data, accuracy "
             "weighted by the client's graph count, test accuracy at the round of best validation accuracy.",
             f"Machine: {info.get('cpu_model', '?')}, {info['cpu_count']} cores, load average "
             f"{info['loadavg_start'][0]:.1f} at start / {info.get('loadavg_end', [float('nan')])[0]:.1f} at end "
             "(shared with other jobs: both sides' times are far above an idle machine's; the sides alternate who "
             "runs first). ms/round = wall time of the training rounds (evaluation included) / rounds. No CPU-time "
             "ratio here: fgl_jax's process CPU time in these runs includes its XLA compilation and its worker "
             "threads; the CPU comparison, compilation excluded and both sides pinned to one CPU, is "
             "`results_graph_fl_speed.md` (graph_fl_speed.py).",
             "", "Differences that remain:", ""] + [f"- {d}" for d in payload["differences"]]
    notes += cross_domain_notes(runs, a) + split_notes(runs)
    notes += ["", "Per run (test accuracy %: at the best-validation round, and the mean over rounds "
              f"{CURVE_FROM} to the run's last of `test_history`, steadier than one round picked by ~110 validation graphs; client-majority test: the "
              "accuracy of answering each client's most frequent training class, what label priors alone score "
              "under label skew with local models on local data):",
              "", table(run_rows(runs, CURVE_FROM), disable_numparse=True)]
    notes += payload.get("notes", [])
    rec = records.make(out.name, {"rows": rows, **payload}, config=a, seeds=a["seeds"], provenance=provenance,
                       title="fgl_jax vs OpenFGL 1.1.0, graph-level FL (graph classification)")
    records.write(out.with_suffix(".json"), rec, markdown=md + "\n" + "\n".join(notes))
    print(md)
    print(f"wrote {out}.md and {out}.json")


if __name__ == "__main__":
    main()
