"""Heterogeneous client models: clients that do not share one architecture, grouped by architecture.

`--client-models gcn:2x64,sage:3x64,gat:2x8` lists architectures as `name:LAYERSxHIDDEN` (a registered
node model, its number of layers and its hidden width); they are dealt to the clients round-robin
(client c gets architecture c mod A), or `--client-models-file` gives one such spec per client (one
per line, `#` comments). The run's other model options (dropout, norm, input width, classes) are
common. On graph-level tasks (`--task graph_cls`) the name is the graph classifier's node layers,
gin or gcn (`fgl_jax.nn.graph.CONVS`: `--client-models gin:2x32,gcn:3x32`), LAYERS its conv layers
and HIDDEN their width (and the head's); pooling, dropout, norm and the cross-domain heads stay the
run's (`fgl_jax.nn.graph.GraphClassifier`).

Inside one jitted round, the clients of one architecture are one group: their parameters are stacked
`[C_g, ...]` and trained by one vmapped local update, so A architectures cost A traced client updates
in a single program (as `fgl_jax.federated.bucketed` does for size buckets). The groups are static:
which clients hold training nodes (graphs) is fixed when the run is built (`ClientModels.train_index`),
so partial participation cannot gather the round's sample; it trains it by mask instead
(`FederatedAlgorithm.masked_sampling`, `FedData.sample`): a client's architecture never changes,
every group's update runs for all its training clients, and the clients not sampled keep their
state and send nothing (the full run's cost, the sampled run's result).

Only algorithms that never average parameters can take such clients (FedProto and FedTGP exchange
class prototypes, FedDistill per-class logits): the registry's `hetero` flag says which.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any, NamedTuple, Optional, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from fgl_jax.nn.graph import CONVS, GRAPH_TASKS, is_graph

PyTree = Any
_SPEC = re.compile(r"^([A-Za-z][A-Za-z0-9_]*):([0-9]+)x([0-9]+)$")


class ArchSpec(NamedTuple):
    """One client architecture: a registered node model `name` with `num_layers` layers of width `hidden`."""

    name: str
    num_layers: int
    hidden: int

    def __str__(self) -> str:
        return f"{self.name}:{self.num_layers}x{self.hidden}"


def model_names(task: str = "node_cls") -> list[str]:
    """The architecture names a task's client models may use.

    Args:
        task: node_cls (the registered node models) or graph_cls / graph_reg (the graph
            classifier's node layers, `fgl_jax.nn.graph.CONVS`).

    Returns:
        The names, sorted.
    """
    if task in GRAPH_TASKS:
        return sorted(CONVS)
    from fgl_jax import registry
    return list(registry.names("model"))


def parse_arch(text: str, where: str = "client_models", task: str = "node_cls") -> ArchSpec:
    """One `name:LAYERSxHIDDEN` spec (e.g. "gcn:2x64"; "gin:3x32" on a graph task).

    Args:
        text: the spec.
        where: what the spec came from, for the error message (an option or a file:line).
        task: the run's task, which says what a name may be (`model_names`).

    Returns:
        The `ArchSpec`.

    Raises:
        ValueError: one line naming `where` and the spec, when it is malformed, names a model the
            task has not, or has 0 layers or width 0.
    """
    m = _SPEC.match(text.strip())
    if not m:
        raise ValueError(f"{where}: {text.strip()!r} is not an architecture name:LAYERSxHIDDEN (e.g. gcn:2x64)")
    name, layers, hidden = m.group(1).lower(), int(m.group(2)), int(m.group(3))
    names = model_names(task)
    if name not in names:
        kind = "graph model layer" if task in GRAPH_TASKS else "model"
        raise ValueError(f"{where}: unknown {kind} {name!r} in {text.strip()!r}; choose one of {names}")
    if layers < 1 or hidden < 1:
        raise ValueError(f"{where}: {text.strip()!r} needs at least 1 layer and width >= 1")
    return ArchSpec(name, layers, hidden)


def parse_client_models(text: str, task: str = "node_cls") -> tuple[ArchSpec, ...]:
    """The comma-separated list of `--client-models` (architectures dealt round-robin).

    Args:
        text: e.g. "gcn:2x64,gcn:3x64,gat:2x8" (graph tasks: "gin:2x32,gcn:3x32").
        task: the run's task (`parse_arch`).

    Returns:
        The architectures in the order given.

    Raises:
        ValueError: an empty list or a malformed spec (one line).
    """
    parts = [p for p in text.split(",") if p.strip()]
    if not parts:
        raise ValueError(f"client_models: {text!r} lists no architecture (e.g. gcn:2x64,gcn:3x64)")
    return tuple(parse_arch(p, "client_models", task) for p in parts)


def read_client_models_file(path: str, task: str = "node_cls") -> tuple[ArchSpec, ...]:
    """`--client-models-file`: one architecture per client, one per line (blank lines and `#` comments skipped).

    Args:
        path: the text file.
        task: the run's task (`parse_arch`).

    Returns:
        The clients' architectures, client 0 first.

    Raises:
        ValueError: a missing file, no spec in it, or a malformed line (one line naming file:line).
    """
    p = Path(path)
    if not p.is_file():
        raise ValueError(f"client_models_file: no such file {path!r}")
    specs = []
    for i, line in enumerate(p.read_text().splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if line:
            specs.append(parse_arch(line, f"client_models_file {path}:{i}", task))
    if not specs:
        raise ValueError(f"client_models_file {path}: no architecture in the file")
    return tuple(specs)


def assign_architectures(specs: Sequence[ArchSpec], num_clients: int, per_client: bool = False
                         ) -> tuple[tuple[ArchSpec, ...], np.ndarray]:
    """The distinct architectures and each client's group.

    Args:
        specs: round-robin list (`per_client` False: client c gets specs[c mod len]) or one per
            client (`per_client` True: exactly `num_clients` of them).
        num_clients: C.
        per_client: how to read `specs`.

    Returns:
        (archs, group): the distinct architectures in order of first use, and int32 `[C]` the
        index into `archs` of every client's architecture.

    Raises:
        ValueError: a per-client list whose length is not C.
    """
    if per_client and len(specs) != num_clients:
        raise ValueError(f"client_models_file: {len(specs)} architectures for {num_clients} clients "
                         "(give one line per client)")
    mine = [specs[c % len(specs)] for c in range(num_clients)]
    archs = tuple(dict.fromkeys(mine))
    return archs, np.asarray([archs.index(a) for a in mine], np.int32)


class Group(NamedTuple):
    """One architecture's clients (host index arrays, static in the traced round).

    Attributes:
        model: the group's flax module (a node model, or a graph classifier on graph tasks).
        arch: its `ArchSpec`.
        eval_index: int `[C_g]` the group's clients on the evaluation axis (ascending).
        train_pos: int `[C_t_g]` the positions of its training clients on `FedData.train`'s axis.
        train_local: int `[C_t_g]` the same clients' positions within `eval_index`.
    """

    model: Any
    arch: ArchSpec
    eval_index: np.ndarray
    train_pos: np.ndarray
    train_local: np.ndarray


class ClientModels(NamedTuple):
    """The run's heterogeneous client models (FedConfig.client_models).

    Attributes:
        archs: the distinct architectures.
        models: one flax module per architecture (same input width, classes, dropout, norm; graph
            tasks: also pooling and cross-domain heads).
        group: int `[C]` each client's index into `archs`.
        train_index: int `[C_t]` the clients holding training nodes (`FedData.train_index`).
    """

    archs: tuple
    models: tuple
    group: np.ndarray
    train_index: np.ndarray

    def groups(self) -> tuple[Group, ...]:
        """The groups, one per architecture (an architecture no client got is left out).

        Returns:
            A tuple of `Group`.
        """
        out = []
        tr = np.asarray(self.train_index)
        for g, (arch, model) in enumerate(zip(self.archs, self.models)):
            ev = np.flatnonzero(self.group == g).astype(np.int32)
            if ev.size == 0:
                continue
            pos = np.flatnonzero(self.group[tr] == g).astype(np.int32)
            local = np.searchsorted(ev, tr[pos]).astype(np.int32)
            out.append(Group(model, arch, ev, pos, local))
        return tuple(out)


def make_client_models(specs: Sequence[ArchSpec], base, num_clients: int, train_index: np.ndarray,
                       per_client: bool = False) -> ClientModels:
    """The run's `ClientModels` from its architectures and its base model.

    Args:
        specs: the architectures (round-robin, or one per client with `per_client`).
        base: the run's `fgl_jax.nn.ModelSpec` (input width, classes, dropout, norm), or on a graph
            task its `fgl_jax.nn.graph.GraphClassifier` (an architecture replaces its conv,
            num_layers and hidden; every other field stays).
        num_clients: C.
        train_index: `FedData.train_index` of the run's data (host array).
        per_client: `specs` is one per client.

    Returns:
        The `ClientModels`.
    """
    archs, group = assign_architectures(specs, num_clients, per_client)
    if is_graph(base):
        models = tuple(base.clone(conv=a.name, num_layers=a.num_layers, hidden=a.hidden) for a in archs)
    else:
        models = tuple(base.build(name=a.name, num_layers=a.num_layers, hidden=a.hidden) for a in archs)
    return ClientModels(archs, models, group, np.asarray(train_index, np.int32))


def take(tree: PyTree, index: Optional[np.ndarray], size: int) -> PyTree:
    """Rows `index` of every leaf `[size, ...]`; the tree itself when index is None or all of 0..size-1 in order."""
    if index is None or (len(index) == size and np.array_equal(index, np.arange(size))):
        return tree
    return jax.tree.map(lambda a: a[jnp.asarray(index)], tree)


def ungroup(parts: Sequence[PyTree], positions: Sequence[np.ndarray]) -> PyTree:
    """Per-group results `[n_g, ...]` back on one axis in the order `positions` give (their
    concatenation is a permutation of 0..n-1): row positions[g][i] of the result is parts[g][i]."""
    order = np.concatenate(positions)
    joined = jax.tree.map(lambda *xs: jnp.concatenate(xs), *parts) if len(parts) > 1 else parts[0]
    if np.array_equal(order, np.arange(order.size)):
        return joined
    inverse = jnp.asarray(np.argsort(order))
    return jax.tree.map(lambda a: a[inverse], joined)
