"""FedHGN host-side preparation: client graphs -> the arrays a round needs (done once per build)."""
from __future__ import annotations

import functools
from typing import Optional, Sequence

import flax
import jax
import jax.numpy as jnp
import numpy as np

from fgl_jax.data.hetero import HeteroGraph, load_hetero
from fgl_jax.partition.hetero import SPLIT_SEED, split_hetero
from fgl_jax.systems.fedhgn.model import FlatBlocks, flatten_blocks
from fgl_jax.systems.fedhgn.rgcn import HeteroBlocks, build_hetero_blocks

__all__ = ["HeteroFedData", "make_fed_data", "hetero_fed_data", "prepare_clients", "majority_accuracy",
           "client_data"]


@flax.struct.dataclass
class HeteroFedData:
    """blocks [C, ...]: evaluated every round (val/test targets); train_blocks [C, ...]: the local
    steps' blocks (train targets; may be `blocks` itself); train_weight [C] = N_k (#labelled
    training nodes); n_val/n_test [C]."""

    blocks: HeteroBlocks
    train_weight: jax.Array
    n_val: jax.Array
    n_test: jax.Array
    train_blocks: HeteroBlocks
    flat_train: "FlatBlocks"     # train_blocks, all clients flattened (the fast path, see flatten_blocks)
    flat_eval: "FlatBlocks"      # blocks, flattened


def make_fed_data(blocks: HeteroBlocks, train_blocks: Optional[HeteroBlocks] = None) -> HeteroFedData:
    """From one block set (all labelled targets), or an evaluation set plus a training set built
    with build_hetero_blocks(..., targets="eval" / "train") (same numbers, less work)."""
    train_blocks = blocks if train_blocks is None else train_blocks
    if (train_blocks.num_emb_rows, train_blocks.num_rel_local, train_blocks.num_rel_global) != \
            (blocks.num_emb_rows, blocks.num_rel_local, blocks.num_rel_global):
        raise ValueError("train and evaluation blocks must come from the same client graphs")
    cnt = lambda m: jnp.asarray(np.asarray(m).sum(1), jnp.float32) * jnp.asarray(blocks.client_mask, jnp.float32)
    return HeteroFedData(blocks, cnt(train_blocks.train), cnt(blocks.val), cnt(blocks.test), train_blocks,
                         flatten_blocks(train_blocks), flatten_blocks(blocks))


def hetero_fed_data(graphs: Sequence[HeteroGraph]) -> HeteroFedData:
    """Client graphs -> HeteroFedData with separate training (train targets) and evaluation
    (val/test targets) blocks: each local step computes only the logits it trains on."""
    ev, vocab = build_hetero_blocks(graphs, targets="eval")
    tr, _ = build_hetero_blocks(graphs, vocab=vocab, targets="train")
    return make_fed_data(ev, tr)


def load_input(dataset: str, data_dir=None) -> HeteroGraph:
    """The heterogeneous graph of `dataset` (a built-in name or a path); anything else is refused
    in one line (FedHGN's schema-weight sharing needs node and relation types)."""
    from fgl_jax.data import UnknownDatasetError, dataset_names, source
    try:
        src = source(dataset, data_dir)
    except UnknownDatasetError:
        raise ValueError(f"fedhgn: unknown dataset {str(dataset)!r}; heterogeneous datasets: "
                         f"{', '.join(dataset_names('hetero'))}, or a path to your own") from None
    if src.kind != "hetero":
        raise ValueError(f"fedhgn: dataset {str(dataset)!r} is a {src.kind} dataset, but FedHGN needs a heterogeneous "
                         "graph (node types + one edge file per relation; see docs/your_own_graph.md)")
    if src.builtin and src.name in ("aifb", "mutag"):  # the paper keeps the RDF relations one-way
        return load_hetero(src.name, data_dir=data_dir, reverse=False)
    return load_hetero(dataset, data_dir=data_dir)


def prepare_clients(dataset: str, strategy: str, num_clients: int, data_dir=None,
                    split_seed: int = SPLIT_SEED) -> tuple[list[HeteroGraph], HeteroGraph]:
    """(client graphs with reverse edges, the central graph with reverse edges).

    strategy "central" returns the whole graph as the single client."""
    g = load_input(dataset, data_dir)
    central = g.add_reverse()
    if strategy.lower() == "central":
        return [central], central
    return list(split_hetero(g, strategy, num_clients, split_seed).clients), central


def majority_accuracy(graphs: Sequence[HeteroGraph]) -> float:
    """Test-count-weighted accuracy of predicting each client's majority training class (a floor)."""
    correct = total = 0
    for g in graphs:
        tr = g.y[g.train_mask]
        if g.test_mask.sum() == 0:
            continue
        maj = np.bincount(tr, minlength=g.num_classes).argmax() if tr.size else 0
        correct += int((g.y[g.test_mask] == maj).sum())
        total += int(g.test_mask.sum())
    return correct / max(total, 1)



@functools.lru_cache(maxsize=8)
def client_data(dataset: str, strategy: str, clients: int, data_dir: Optional[str] = None
                ) -> tuple[HeteroFedData, float, int]:
    """(HeteroFedData, majority-class floor, number of clients) of one (dataset, split, K): what
    `build` prepares; cached, since every method of a table cell shares it."""
    graphs, _ = prepare_clients(dataset, strategy, clients, data_dir)
    return hetero_fed_data(graphs), majority_accuracy(graphs), len(graphs)
