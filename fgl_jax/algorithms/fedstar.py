"""FedStar (Tan, Liu, Long, Jiang, Lu, Zhang, AAAI 2023, "Federated Learning on Non-IID Graphs via
Structural Knowledge Sharing"): graph-level FL that shares only what the clients' graphs have in
common across domains, their structure.

Every node gets a structure encoding (host side, once: `fgl_jax.data.structure`): its random-walk
return probabilities over 1..K steps (RWSE) beside a one-hot of its degree (DSE). The model
(`fgl_jax.nn.graph.DualChannelClassifier`) has a structure channel, a GCN on the encodings, and a
feature channel, a GIN on the node features whose input at every layer is the feature state
concatenated with the structure state. Each round the clients train the whole model from the
server's structure channel and their own feature channel and head; the server averages the
structure channels only (weighted by training graphs) and sends the average back; the feature
channel and head never leave the client. Evaluation: each client's model on its own graphs.

It is the FedAvg family's round with the structure channel as the only shared part
(`fgl_jax.federated.fedavg_family.personal_mask`): the run's aggregator, DP-FedAvg, --server-opt,
client sampling, resume and sweeps apply as for FedPer, on the structure channel's parameters.

Defaults. Structure encodings: RWSE 16 steps + DSE 16 columns ("rw_dg"), OpenFGL 1.1.0's
`fedstar_config` (n_rw 16, n_dg 16, type_init rw_dg), the same as the authors' code. The model's
size and the optimiser are the run's common options; the authors' main script (github.com/
yuetan031/FedStar) and the paper's setup use 3 layers, hidden 64, batch 128, Adam lr 0.001, weight
decay 5e-4, dropout 0.5, one local epoch: `--num-layers 3 --hidden 64 --graph-batch-size 128
--lr 0.001 --weight-decay 5e-4 --dropout 0.5 --local-steps 1 --graph-pooling sum` (the authors'
exps/main_multiDS.py defaults; fgl_jax's run defaults are 2 layers and lr 0.01, OpenFGL 1.1.0 runs
FedStar with its general arguments, whose defaults are also 2 layers and lr 0.01; docs/graph_fl.md).

Where the paper, the authors' code and OpenFGL (`openfgl/flcore/fedstar`, `gin_dc.py`) differ, and
what fgl_jax does:
- Shared parameters: OpenFGL and the authors' code average every state-dict entry whose name holds
  "_s" (embedding_s and the structure GCN layers), which is the structure channel; here the
  parameters named `struct_*`, the same set. The fusion layer (`Whp`, here `fuse`) and the head stay
  local in both.
- Initialisation: OpenFGL builds each client's model separately (each feature channel its own random
  draw) and overwrites the structure channel with the server's before the first round; here every
  client starts from one draw (one `init`), the structure channel being the server's either way (the authors' code builds its clients the same
  way as OpenFGL). `fedstar_client_init=own` draws each client's feature channel and head from its
  own key, as both codes do.
- Weights of the average: the authors' code weights by a client's training graphs (`train_size`),
  as here (the FedAvg family's weights); OpenFGL by its `num_samples` (its graphs, all splits).
- Readout: OpenFGL's model sums node states (global_add_pool); here the run's `--graph-pooling`
  (mean by default; sum reproduces OpenFGL's model).
- Loading the server's structure channel: OpenFGL 1.1.0's client assigns `v.data = g_w[k].data.clone()`
  to each "_s" entry of `model.state_dict()`; those entries are detached aliases of the parameters, and
  assigning `.data` rebinds the alias to the copy, leaving the parameter as it was (its server's
  in-place `v.data.copy_` does average). So its clients never receive the average and each trains its
  whole model alone. `fedstar_share=none` runs that behaviour (the FedAvg family's local training of
  the dual-channel model; with `fedstar_client_init=own` each client's structure channel is its own draw
  too, as OpenFGL's separately built models); `structure`, the default, the paper's.
- Encoding: the random-walk matrix is D^-1 A here, A D^-1 in OpenFGL (the same diagonals;
  `fgl_jax.data.structure`). The paper concatenates the structure embedding into the feature
  channel's input at each layer, as both codes do.
"""
from __future__ import annotations

import dataclasses

import jax

from fgl_jax.data.structure import ENCODINGS, encoding_width, with_structure_encoding
from fgl_jax.federated.algorithm import FedData, FederatedAlgorithm
from fgl_jax.federated.config import FedConfig
from fgl_jax.federated.fedavg_family import baseline, personal_mask
from fgl_jax.nn.graph import DualChannelClassifier, is_graph
from fgl_jax.registry import register
from fgl_jax.schema import option

CLIENT_INITS = ("shared", "own")
SHARES = ("structure", "none")


@dataclasses.dataclass(frozen=True)
class FedStarHParams:
    fedstar_rw_steps: int = option(16, "FedStar: random-walk encoding length K (return probabilities of 1..K steps; "
                                   "OpenFGL's n_rw)", low=1)
    fedstar_dg_dims: int = option(16, "FedStar: degree encoding width (one-hot of the degree clipped to 1..this; "
                                  "OpenFGL's n_dg)", low=1)
    fedstar_encoding: str = option("rw_dg", "FedStar: structure encoding: rw (random walk), dg (degree) or rw_dg "
                                   "(both, the paper's and OpenFGL's default)", choices=ENCODINGS)
    fedstar_client_init: str = option("shared", "FedStar: initial feature channel and head: shared (one draw for "
                                      "every client) or own (each client its own draw, as OpenFGL)",
                                      choices=CLIENT_INITS)
    fedstar_share: str = option("structure", "FedStar: what a client loads from the server each round: structure "
                                "(the averaged structure channel: the paper, the authors' code) or none (OpenFGL "
                                "1.1.0's client code, which loads nothing: each client trains alone)",
                                choices=SHARES)


def prepare_graphs(gs, hp: FedStarHParams):
    """The run's graphs with FedStar's structure encodings in their node features (host, once).

    Args:
        gs: the run's `fgl_jax.data.tu.GraphSet`.
        hp: FedStar's options.

    Returns:
        gs with x = [features | encoding | dataset columns] (`with_structure_encoding`).
    """
    return with_structure_encoding(gs, hp.fedstar_rw_steps, hp.fedstar_dg_dims, hp.fedstar_encoding)


def dual_channel_model(model, hp: FedStarHParams) -> DualChannelClassifier:
    """FedStar's model with the run's graph model's settings: the run's `GraphClassifier` was built on
    the encoded graphs, so its in_dim counts the encoding's columns, which the dual model splits off.

    Args:
        model: the run's `fgl_jax.nn.graph.GraphClassifier` (task graph_cls or graph_reg).
        hp: FedStar's options (the encoding's width).

    Returns:
        The `DualChannelClassifier` (same hidden, layers, dropout, conv, pooling, norm, task, domains).
    """
    if not is_graph(model):
        raise ValueError(f"fedstar: runs on graph-level tasks (--task graph_cls or graph_reg), got task "
                         f"{getattr(model, 'task', 'node_cls')!r}")
    width = encoding_width(hp.fedstar_rw_steps, hp.fedstar_dg_dims, hp.fedstar_encoding)
    if model.in_dim <= width:
        raise ValueError(f"fedstar: the model's {model.in_dim} input columns do not hold the {width} structure "
                         "encoding columns plus features (build the run through fgl-jax run / fgl_jax.build, "
                         "which appends the encodings)")
    return DualChannelClassifier(in_dim=model.in_dim - width, se_dim=width, hidden=model.hidden,
                                 num_classes=model.num_classes, num_layers=model.num_layers, dropout=model.dropout,
                                 conv=model.conv, pooling=model.pooling, task=model.task, norm=model.norm,
                                 domains=model.domains)


@register("algorithm", "fedstar", hparams=FedStarHParams, tasks=("graph_cls", "graph_reg"),
          prepare_graphs=prepare_graphs,
          paper="Tan, Liu, Long, Jiang, Lu, Zhang, AAAI 2023, arXiv:2211.13009",
          help="FedStar: structure encodings and a structure channel shared across clients; feature channel "
               "and head kept local")
def fedstar(model, common: FedConfig, hp: FedStarHParams) -> FederatedAlgorithm:
    dual = dual_channel_model(model, hp)
    mode = common.eval_mode
    if mode == "auto":
        mode = "local_model_on_local_data"
    elif mode.startswith("global_model"):
        raise ValueError(f"eval_mode={mode!r}: FedStar keeps each client's feature channel and head, so there is "
                         "no global model; use a local_model_* mode or 'auto'")
    # share none: nothing leaves a client, the FedAvg family's local training of the dual-channel model
    shared_part = "fedstar" if hp.fedstar_share == "structure" else "local"
    algorithm = baseline(dual, dataclasses.replace(common, algorithm=shared_part, eval_mode=mode))
    if hp.fedstar_client_init == "shared":
        return algorithm

    def init(key: jax.Array, data: FedData):
        # each client's feature channel and head from its own key; the structure channel is the server's
        # (share none: each client's structure channel from its key too, as nothing is ever loaded)
        state = algorithm.init(key, data)
        one = jax.tree.map(lambda a: a[0], data.eval)
        keys = jax.random.split(jax.random.fold_in(key, 1), data.eval.num_clients)
        own = jax.vmap(lambda k: dual.init({"params": k, "dropout": k}, one, train=False))(keys)
        mask = personal_mask(state.server, shared_part, dual.num_layers, 0)
        personal = jax.tree.map(lambda m, o, p: o if m else p, mask, own, state.personal)
        # the optimiser states are zeros-like of the parameters' shapes (Adam / SGD): unchanged
        return state.replace(personal=personal)

    return algorithm._replace(init=init)
