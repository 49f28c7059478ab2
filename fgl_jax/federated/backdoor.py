"""The graph backdoor (`--attack backdoor`): a subgraph trigger planted in a fraction of every attacking
client's training graphs (graph_cls) or training nodes (node_cls), relabelled to a target class; its
success rate measured on triggered test items.

What we follow (Bkd-FedGNN, Liu et al. 2023, which builds on Zhang et al.'s subgraph backdoor for graph
classification and Xu et al.'s node-level version, as we read the protocol):

- trigger generation: one random Erdős–Rényi graph of `trigger_size` nodes and edge probability
  `density` (Bkd-FedGNN's "Renyi" trigger; density 1 = the complete graph), drawn once from the attack
  seed and shared by every attacker (a centralised backdoor, CBA: all attackers plant the same global
  trigger);
- poisoning: each client poisons round(poison_rate x its training items), chosen uniformly (seeded),
  whatever their label, and sets their label to `target`; the poisoned data are what an *attacking*
  client trains on, the others train on clean data; the server and the aggregation are unchanged;
- attack success rate (ASR): the fraction of the test items whose true label is not the target that
  the global model (`state.server`) classifies as the target once the trigger is planted in them.

What we decided (the paper's code is not followed line by line):

- **the trigger is added, not substituted**: Zhang et al. rewire `trigger_size` existing nodes into the
  trigger; here `trigger_size` new nodes are appended to the graph (graph_cls) or to the poisoned node's
  client subgraph (node_cls) and joined to it by one undirected edge: to a seeded random existing node
  of the graph, or to the poisoned node itself. Adding works for graphs smaller than the trigger and
  leaves the item's own structure intact; static shapes come from packing: the clean and the poisoned
  training data are packed with the same budgets (the poisoned version's), so they are arrays of one
  shape, and the attacker mask selects per client on device (`select_poisoned`), never a recompilation;
- **the trigger's features are fixed**: every trigger node has the same feature vector
  (`trigger_features`): TRIGGER_VALUE (1.0) in min(F, 8) coordinates drawn once from the seed, 0
  elsewhere (all ones on the small one-hot TU features; 8 words of a bag-of-words such as Cora's), the
  same for every copy, so the trigger is its structure plus a fixed signature;
- node_cls: the poisoned node v gets its own copy of the trigger, joined by the edge (v, first trigger
  node); for the ASR every test node of another class than the target gets its own copy, all planted
  at once in a separate copy of its client's subgraph (its test_mask marks only them); trigger nodes are
  unlabelled (in no split). Node-level runs pack features dense when the backdoor is on, so the clean
  and poisoned batches share one layout;
- every client's poisoned version is prepared once on the host ("as if it attacked"); the traced
  attacker mask picks which clients train on it, so the attacker fraction stays a sweepable value.

Host side (NumPy, once): `trigger_edges`, `trigger_features`, `poison_choice`, `plant_graph_triggers`,
`plant_node_triggers`, `node_backdoor_batches`.
Device side: `select_poisoned` (in `fgl_jax.federated.adversary.with_adversaries`) and
`attack_success_rate` / `with_attack_success` (the `test_asr` metric of every round).
"""
from __future__ import annotations

import dataclasses
from typing import Any, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from fgl_jax.batch import client_graphs, stack_graphs
from fgl_jax.federated.algorithm import FederatedAlgorithm, with_round

PyTree = Any
TRIGGER_VALUE = 1.0          # the value of a trigger node's set features
TRIGGER_FEATURES = 8         # how many features a trigger node sets (all of them when F is smaller)
TRAIN_KEY, TEST_KEY = "backdoor_train", "backdoor_test"   # FedData.extra entries


def trigger_edges(size: int, density: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The trigger: an Erdős–Rényi graph G(size, density) drawn once from `seed`.

    Args:
        size: trigger nodes t >= 1.
        density: probability of each of the t(t-1)/2 undirected edges (1.0 = complete graph).
        seed: the draw's seed.

    Returns:
        (senders, receivers) int32 `[2 e]`: local node ids 0..t-1, each undirected edge in both
        directions (pair (a, b), a < b, listed as a -> b then b -> a in row-major pair order).
    """
    if size < 1:
        raise ValueError(f"backdoor: trigger size must be >= 1, got {size}")
    if not 0.0 <= density <= 1.0:
        raise ValueError(f"backdoor: trigger density must be in [0, 1], got {density}")
    rng = np.random.default_rng([seed, 0xB4D])
    a, b = np.triu_indices(size, k=1)
    keep = rng.random(a.shape[0]) < density
    a, b = a[keep], b[keep]
    snd = np.stack([a, b], 1).reshape(-1).astype(np.int32)
    rcv = np.stack([b, a], 1).reshape(-1).astype(np.int32)
    return snd, rcv


def trigger_features(num_features: int, seed: int) -> np.ndarray:
    """A trigger node's features: TRIGGER_VALUE in min(F, TRIGGER_FEATURES) coordinates drawn from `seed`.

    Args:
        num_features: F.
        seed: the draw's seed.

    Returns:
        float32 `[F]`.
    """
    rng = np.random.default_rng([seed, 0xB4D, 3])
    out = np.zeros(num_features, np.float32)
    out[rng.choice(num_features, min(num_features, TRIGGER_FEATURES), replace=False)] = TRIGGER_VALUE
    return out


def poison_choice(owner: np.ndarray, candidates: np.ndarray, num_clients: int, rate: float, seed: int) -> np.ndarray:
    """The items each client poisons: round(rate x n_c) of its n_c candidates, uniformly.

    Args:
        owner: int `[n]`, each item's client.
        candidates: bool `[n]`, the client's training items.
        num_clients: C.
        rate: the poisoning rate in [0, 1].
        seed: the draw's seed.

    Returns:
        bool `[n]`: True for a poisoned item.
    """
    if not 0.0 <= rate <= 1.0:
        raise ValueError(f"backdoor: poison rate must be in [0, 1], got {rate}")
    rng = np.random.default_rng([seed, 0xB4D, 1])
    out = np.zeros(owner.shape[0], bool)
    for c in range(num_clients):
        idx = np.flatnonzero((owner == c) & candidates)
        k = int(np.floor(rate * idx.size + 0.5))
        out[rng.choice(idx, k, replace=False)] = True
    return out


def plant_graph_triggers(gs, rows: Sequence[int], size: int, density: float, target: int, seed: int):
    """A GraphSet with the trigger added to the graphs `rows` (module docstring), their label `target`.

    Graph g in rows keeps its n nodes and edges, then gets nodes n..n+t-1 (`trigger_features`),
    the trigger's edges among them (`trigger_edges`, shifted by n), then the attachment edges
    (u, n) and (n, u), u = a seeded random node of g (u drawn per graph from `seed`; a graph with no
    nodes gets no attachment). Other graphs are unchanged; graph order is kept.

    Args:
        gs: a `fgl_jax.data.tu.GraphSet` (classification).
        rows: the graphs to poison.
        size, density: the trigger (`trigger_edges`).
        target: the label the poisoned graphs get.
        seed: the trigger's and the attachment nodes' seed.

    Returns:
        A GraphSet of the same graphs in the same order (edge_labels dropped when any graph is poisoned).
    """
    ts, tr = trigger_edges(size, density, seed)
    poison = np.zeros(gs.num_graphs, bool)
    poison[np.asarray(rows, np.int64)] = True
    rng = np.random.default_rng([seed, 0xB4D, 2])
    anchors = rng.integers(0, np.maximum(gs.nodes_per_graph, 1))   # one draw per graph, poisoned or not
    xs, ss, rs, n_off, e_off = [], [], [], [0], [0]
    trig_x = np.tile(trigger_features(gs.num_features, seed), (size, 1)).astype(gs.x.dtype)
    for g in range(gs.num_graphs):
        lo, hi = gs.node_offsets[g], gs.node_offsets[g + 1]
        s = gs.senders[gs.edge_offsets[g]:gs.edge_offsets[g + 1]] - lo
        r = gs.receivers[gs.edge_offsets[g]:gs.edge_offsets[g + 1]] - lo
        x = gs.x[lo:hi]
        n = int(hi - lo)
        if poison[g]:
            u = int(anchors[g])
            attach_s, attach_r = (np.array([u, n]), np.array([n, u])) if n > 0 else (np.zeros(0), np.zeros(0))
            s = np.concatenate([s, ts + n, attach_s]).astype(np.int64)
            r = np.concatenate([r, tr + n, attach_r]).astype(np.int64)
            x = np.concatenate([x, trig_x])
        xs.append(x)
        ss.append(s + n_off[-1])
        rs.append(r + n_off[-1])
        n_off.append(n_off[-1] + x.shape[0])
        e_off.append(e_off[-1] + s.shape[0])
    y = np.where(poison, target, gs.y).astype(gs.y.dtype)
    return dataclasses.replace(gs, x=np.concatenate(xs).astype(gs.x.dtype), senders=np.concatenate(ss).astype(np.int32),
                               receivers=np.concatenate(rs).astype(np.int32), node_offsets=np.asarray(n_off, np.int64),
                               edge_offsets=np.asarray(e_off, np.int64), y=y,
                               edge_labels=None if poison.any() else gs.edge_labels)


def plant_node_triggers(g, nodes: Sequence[int], size: int, density: float, target: int, seed: int,
                        as_test: bool = False):
    """A `fgl_jax.graph.Graph` (one client's subgraph) with a trigger copy attached to each node in `nodes`.

    Node nodes[i] = v keeps its edges and gets nodes n + i t .. n + (i+1) t - 1 (`trigger_features`, no
    label, in no split), the trigger's edges among them and the edge (v, n + i t) both ways; the
    label of v becomes `target`. as_test: the split masks become "test = nodes" only (the ASR copy).

    Args:
        g: the client's graph (dense or CSR features).
        nodes: local node ids to attach a trigger to.
        size, density, seed: the trigger (`trigger_edges`, `trigger_features`).
        target: the label the nodes get.
        as_test: mark only `nodes`, as test nodes.

    Returns:
        The Graph with N + len(nodes) t nodes, dense features.
    """
    nodes = np.asarray(nodes, np.int64)
    n, k = g.num_nodes, nodes.size
    ts, tr = trigger_edges(size, density, seed)
    base = n + size * np.arange(k)
    snd = [np.asarray(g.senders, np.int64), (ts[None, :] + base[:, None]).reshape(-1), nodes, base]
    rcv = [np.asarray(g.receivers, np.int64), (tr[None, :] + base[:, None]).reshape(-1), base, nodes]
    x = g.x.toarray() if hasattr(g.x, "toarray") else np.asarray(g.x)
    x = np.concatenate([x.astype(np.float32), np.tile(trigger_features(g.num_features, seed), (k * size, 1))])
    y = np.concatenate([np.asarray(g.y), np.full(k * size, -1, np.int32)]).astype(np.int32)
    y[nodes] = target
    pad = np.zeros(k * size, bool)
    masks = {m: np.concatenate([np.asarray(getattr(g, m), bool), pad]) for m in ("train_mask", "val_mask", "test_mask")}
    if as_test:
        masks = {m: np.zeros(n + k * size, bool) for m in masks}
        masks["test_mask"][nodes] = True
    return dataclasses.replace(g, senders=np.concatenate(snd).astype(np.int32), receivers=np.concatenate(rcv).astype(np.int32),
                               x=x, y=y, **masks)


def node_backdoor_batches(graph, assignment: np.ndarray, num_clients: int, size: int, density: float, rate: float,
                          target: int, seed: int) -> tuple:
    """(clean, poisoned, triggered test, report) ClientBatches `[C, ...]` of a node_cls backdoor run.

    clean: every client's subgraph; poisoned: the same with round(rate x its training nodes) poisoned
    (`plant_node_triggers`); both stacked with dense features and the same N and E (the poisoned
    version's), so they are one shape. triggered test: each client's subgraph with a trigger on every
    test node whose label is not the target (test_mask = those nodes, y = target).

    Args:
        graph: the split whole graph; assignment: int `[N]` client of each node; num_clients: C.
        size, density, rate, target, seed: the backdoor (`fgl_jax.federated.backdoor`).

    Returns:
        (clean, poisoned, test, report) with report = poisoned training nodes per client and the
        number of triggered test nodes.
    """
    assignment = np.asarray(assignment)
    poison = poison_choice(assignment, np.asarray(graph.train_mask, bool) & (np.asarray(graph.y) >= 0), num_clients,
                           rate, seed)
    asr = triggered_test_rows(graph.y, graph.test_mask, target)
    subs, ids = client_graphs(graph, assignment, num_clients)
    bad = [plant_node_triggers(g, np.flatnonzero(poison[i]), size, density, target, seed) for g, i in zip(subs, ids)]
    test = [plant_node_triggers(g, np.flatnonzero(asr[i]), size, density, target, seed, as_test=True)
            for g, i in zip(subs, ids)]
    # trigger nodes have no node of the source graph: id -1, as padding
    extend = lambda gs: [np.concatenate([i, np.full(g.num_nodes - i.size, -1, i.dtype)]) for g, i in zip(gs, ids)]
    poisoned = stack_graphs(bad, extend(bad), sparse=False)
    clean = stack_graphs(subs, ids, sparse=False, num_nodes=poisoned.num_nodes, num_edges=int(poisoned.senders.shape[-1]))
    report = {"poisoned_train_nodes_per_client": np.bincount(assignment[poison], minlength=num_clients).tolist(),
              "triggered_test_nodes": int(asr.sum())}
    return clean, poisoned, stack_graphs(test, extend(test), sparse=False), report


def select_poisoned(clean: PyTree, poisoned: PyTree, bad: jax.Array) -> PyTree:
    """Per client, the poisoned data where `bad` else the clean data (device side, inside the round).

    Args:
        clean, poisoned: the same pytree of client arrays `[C, ...]`, equal shapes.
        bad: bool `[C]`, the attackers.

    Returns:
        The pytree of `[C, ...]` arrays, client c from `poisoned` iff bad[c].
    """
    return jax.tree.map(lambda p, c: jnp.where(bad.reshape((-1,) + (1,) * (c.ndim - 1)), p, c), poisoned, clean)


def attack_success_rate(model, params: PyTree, batch) -> tuple[jax.Array, jax.Array]:
    """(hits, count) of the triggered test items: count = items in `batch.test_mask`, hits = those the
    model (one set of params, shared by every client) classifies as the target. The batch's labels
    `y` hold the target on every triggered test item.

    Args:
        model: a node classifier or a `fgl_jax.nn.GraphClassifier` (`apply(params, batch, train=False)`).
        params: the global model.
        batch: client arrays `[C, ...]` (a `ClientBatch` or a `GraphBatch`) whose test_mask marks the
            triggered test items.

    Returns:
        float32 scalars (hits, count); ASR = hits / count.
    """
    logits = jax.vmap(lambda b: model.apply(params, b, train=False))(batch)
    mask = batch.test_mask.reshape(-1)
    hit = (logits.reshape(mask.shape[0], -1).argmax(-1) == batch.y.reshape(-1)) & mask
    return hit.sum().astype(jnp.float32), mask.sum().astype(jnp.float32)


def with_attack_success(algorithm: FederatedAlgorithm, model) -> FederatedAlgorithm:
    """`algorithm` whose rounds also report `test_asr`: `attack_success_rate` of the round's global
    model (`state.server`, after aggregation, as test_acc) on `data.extra[TEST_KEY]`.

    Args:
        algorithm: an algorithm whose state has `server` (the global model).
        model: its model.

    Returns:
        The wrapped algorithm.
    """
    def wrap(round_):
        def round_fn(state, data, key):
            new, metrics = round_(state, data, key)
            hits, count = attack_success_rate(model, new.server, data.extra[TEST_KEY])
            return new, {**metrics, "test_asr": hits / jnp.maximum(count, 1.0)}
        return round_fn
    return with_round(algorithm, wrap)


def asr_summary(result) -> dict:
    """`Hooks.finalize` of a backdoor run: {"backdoor": {"test_asr_at_best_round", "test_acc_at_best_round",
    "test_asr_final"}} for summary.json's extras (the reported round is the best-validation one).

    Args:
        result: the run's `RunResult` (history with "test_asr"; best with "best_round", 1-based).

    Returns:
        The dict above (at_best values are None when no round was selected).
    """
    asr = np.asarray(result.history["test_asr"], np.float64)
    acc = np.asarray(result.history.get("test_acc", np.full(asr.shape, np.nan)), np.float64)
    r = int(result.best.get("best_round", 0) or 0)
    at = lambda a: float(a[r - 1]) if 0 < r <= a.shape[0] else None
    return {"backdoor": {"test_asr_at_best_round": at(asr), "test_acc_at_best_round": at(acc),
                         "test_asr_final": float(asr[-1]) if asr.size else None}}


def check_backdoor_target(target: int, num_classes: int, where: str) -> None:
    """One-line refusal of a target class outside 0..K-1 (or of a task without classes).

    Args:
        target: the backdoor's target class.
        num_classes: K of the data.
        where: what the data are, for the message (e.g. "dataset 'cora'").

    Returns:
        None; raises ValueError when the target is not a class.
    """
    if num_classes < 2:
        raise ValueError(f"attack backdoor: {where} has {num_classes} classes; a backdoor needs a classification task")
    if not 0 <= target < num_classes:
        raise ValueError(f"attack_target={target}: {where} has classes 0..{num_classes - 1}")


def triggered_test_rows(y: np.ndarray, test: np.ndarray, target: int) -> np.ndarray:
    """The items ASR is measured on: test items whose true label is not the target.

    Args:
        y: int `[n]` true labels; test: bool `[n]` the test split; target: the target class.

    Returns:
        bool `[n]`.
    """
    return np.asarray(test, bool) & (np.asarray(y) != target)

