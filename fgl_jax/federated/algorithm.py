"""The shape of a federated algorithm: a pair of pure functions, as optax's (init, update).

    init(key, data)            -> state
    round(state, data, key)    -> (state, metrics)

`metrics` is a flat dict of scalars; every algorithm reports at least `train_loss`, `val_acc`
and `test_acc` (pooled over clients, evaluated after the round's aggregation), so the
generic `run` can do best-validation model selection and NaN detection for any of them.

Shapes: C clients, C_t the clients holding training nodes, N padded nodes per client.
"""
from __future__ import annotations

from typing import Any, Callable, Mapping, NamedTuple, Optional

import flax
import jax
import jax.numpy as jnp
import numpy as np

from fgl_jax.batch import ClientBatch, select_clients

PyTree = Any


class Phase(NamedTuple):
    """One phase of an algorithm whose rounds change kind part-way (AdaFGL: FedAvg, then
    personalised training): the engine (`fgl_jax.federated.run.run`) runs each phase as its own
    compiled program, so a phase's rounds carry no branch over the others' work.

    Attributes:
        start: first round (0-based) of the phase; the phase lasts until the next phase's start.
        round: `round(state, data, key) -> (state, metrics)`, the phase's round; every phase keeps
            the algorithm's state structure and returns the same metric names.
        enter: `enter(state, data, key) -> state`, or None: the hand-over, applied inside the
            phase's program before its first round (only when a chunk starts at `start`, so a resume
            in the middle of the phase does not repeat it); key = the key of round `start`.
    """

    start: int
    round: Callable[[PyTree, Any, jax.Array], tuple[PyTree, dict]]
    enter: Optional[Callable[[PyTree, Any, jax.Array], PyTree]] = None


class FederatedAlgorithm(NamedTuple):
    """A federated algorithm as pure functions the engine compiles: init, one round, and how to read it.

    Attributes:
        init: `init(key, data) -> state`, the initial state (a pytree; client arrays `[C, ...]`).
        round: `round(state, data, key) -> (state, metrics)`, one federated round (traced once).
        needs_x64: the round does exact int64 arithmetic (HiFGL's finite field): traced with x64 on.
        train_axis: the state fields whose leading axis is the training clients `[C_t, ...]`
            (gathered for the sample under partial participation).
        messages: `messages(state) -> (upload, download)`, one client's messages as pytrees (only
            shapes and dtypes count), or None (no communication accounting).
        select: (validation metric, test metric) of the best-validation selection.
        phases: () or the `Phase`s `run` executes as one compiled program each.
    """

    init: Callable[[jax.Array, Any], PyTree]
    round: Callable[[PyTree, Any, jax.Array], tuple[PyTree, dict]]
    # True when the round does exact int64 arithmetic (HiFGL's finite field): the program is then
    # traced and lowered with jax_enable_x64 on (floats stay float32 where typed), since x64 cannot
    # be switched on for only part of one jitted program.
    needs_x64: bool = False
    # state fields whose leading axis is the training clients [C_t, ...] (gathered for the sampled
    # clients under partial participation, `fgl_jax.federated.participation`)
    train_axis: tuple = ("opt",)
    # messages(state) -> (upload, download): what ONE participating client sends to and receives
    # from the server in a round, as pytrees of arrays; only their shapes and dtypes count
    # (`fgl_jax.federated.communication`). None: not described (no communication accounting).
    messages: Optional[Callable[[PyTree], tuple[PyTree, PyTree]]] = None
    # (validation metric, test metric) of the engine's best-validation selection: the reported
    # round is the first with the highest metrics[select[0]] (`fgl_jax.federated.run.Tracker`);
    # link prediction selects by ("val_auc", "test_auc")
    select: tuple = ("val_acc", "test_acc")
    # () or the phases (`Phase`, the first starting at round 0) `run` executes as one compiled
    # program each; `round` must then equal them (phase by phase, with the hand-overs) in one
    # function, for the engines that run a single program (sweeps, `make_scan`)
    phases: tuple = ()
    # True when the round cannot train a gathered sample of the clients (heterogeneous client models:
    # the architecture groups are static positions on `FedData.train`): partial participation then
    # passes the sample in `FedData.sample` and the round trains the sampled clients by mask
    masked_sampling: bool = False


def with_round(algorithm: FederatedAlgorithm, wrap: Callable[[Callable], Callable]) -> FederatedAlgorithm:
    """`algorithm` with `wrap(round)` as its round and as each phase's round (a wrapper such as
    partial participation or a sharding constraint must reach every program the engine runs).

    Args:
        algorithm: the algorithm to wrap.
        wrap: maps a round function `round(state, data, key) -> (state, metrics)` to another.

    Returns:
        The algorithm with its round and every phase's round wrapped.
    """
    return algorithm._replace(round=wrap(algorithm.round),
                              phases=tuple(p._replace(round=wrap(p.round)) for p in algorithm.phases))


class Hooks(NamedTuple):
    """What a system adds to the engine's loop (all optional, all host side, between chunks).

    Attributes:
        every: chunk boundaries fall on multiples of `every` rounds, so `on_chunk` sees those states.
        on_chunk: `on_chunk(rounds_done, state, history) -> dict | None`, an evaluation at that round
            (called at multiples of `every` and after the last round, or after every chunk without
            `every`; history holds rounds 1..rounds_done; e.g. FedGC trains a GCN on G'); the dict
            is stored in `RunResult.evaluations` and in that round's `metrics.jsonl` row under "eval".
        stop: `stop(history) -> int | None`, stop after this many rounds (early stopping); history
            and metrics.jsonl are cut there. The state is the one at the end of the chunk.
        select: `select(history, evaluations) -> dict`, the reported round (`best_val`,
            `best_test`, `best_round` 1-based, ...), replacing the in-scan best-validation tracker.
        finalize: `finalize(result) -> dict`, extra results after the last round (stored in
            `RunResult.extras`).
        save_state: `save_state() -> dict[str, array]`, host state the hooks keep across chunks
            (e.g. FedGC's G' at the best evaluation round), written beside each checkpoint.
        load_state: `load_state(dict)` gets that state back on resume, so a resumed run's
            select/finalize see what the uninterrupted run's saw.
    """

    every: Optional[int] = None
    on_chunk: Optional[Callable[[int, PyTree, dict], Optional[dict]]] = None
    stop: Optional[Callable[[dict], Optional[int]]] = None
    select: Optional[Callable[[dict, list], dict]] = None
    finalize: Optional[Callable[["RunResult"], dict]] = None
    save_state: Optional[Callable[[], dict]] = None
    load_state: Optional[Callable[[dict], None]] = None


class Program(NamedTuple):
    """A ready-to-run experiment of any system: what `run` (checkpoints, resume, progress, hooks)
    and `sweep` (seeds x traced hyperparameters in `state.hp`) need.

    Every registered system's build function maps its config (one frozen dataclass) to a Program,
    so one YAML file describes a run, a sweep and a replay alike.

    Attributes:
        algorithm: the `FederatedAlgorithm`.
        data: its data (usually a `FedData`, client arrays `[C, ...]`).
        num_rounds: the rounds to run.
        describe: what the run is, for logs and result files (dataset, clients, method, ...).
        hooks: the system's `Hooks`.
        per_round: host-computed per-round values added to every metrics.jsonl row and the history
            (communication bytes, the DP accountant's epsilon): name -> array `[num_rounds]`.
        account: None, or the host-side columns of a sweep member whose traced values (`state.hp`
            entries, name -> float) differ from the configured ones, after `rounds` rounds:
            `account(values, rounds) -> {name: float}` (e.g. the dp_epsilon of its own noise
            multiplier); a sweep row takes them over `per_round`'s.
    """

    algorithm: FederatedAlgorithm
    data: Any
    num_rounds: int
    # what the run is, for logs and result files (dataset, clients, method, ...)
    describe: dict = {}
    hooks: Hooks = Hooks()
    # host-computed per-round values added to every metrics.jsonl row and the history
    # (communication bytes, the DP accountant's epsilon): name -> array [num_rounds]
    per_round: dict = {}
    # a sweep member's host-side columns from its traced values: (values, rounds) -> {name: float}
    account: Optional[Callable[[Mapping[str, float], int], dict]] = None


def x64_scope(algorithm: FederatedAlgorithm):
    """Context in which to trace, compile and run `algorithm`.

    Args:
        algorithm: the algorithm; its `needs_x64` decides.

    Returns:
        `jax.enable_x64(True)` when the algorithm needs 64-bit integers (HiFGL's field arithmetic),
        else a null context.
    """
    import contextlib
    return jax.enable_x64(True) if algorithm.needs_x64 else contextlib.nullcontext()


@flax.struct.dataclass
class FedData:
    """What a round needs: all clients for evaluation, the ones with training nodes for training.

    eval: ClientBatch [C, ...]; train: ClientBatch [C_t, ...] (the subset holding >= 1 training
    node, so clients with nothing to learn cost nothing); train_index: int32 [C_t] positions of
    the training clients in `eval`; train_weight: float32 [C_t] training-node counts (FedAvg weights).
    glob: optional ClientBatch [1, ...]: the whole graph (every edge, masks = union of the clients'),
    for OpenFGL's evaluation on global data; None when no evaluation mode needs it.
    train_total: None, or (partial participation: `train` holds this round's sample) the number of
    clients holding training nodes in the whole federation.
    extra: optional dict of arrays an algorithm's host preparation adds (registry info `prepare`,
    see `HostInput`), e.g. FedGCN's pre-communicated neighbour aggregates or FedSage+'s generator
    targets; arrays on the client axis are on the evaluation axis [C, ...] (index them with
    `train_index`, which partial participation restricts to the sampled clients). Replicated, not
    split, when the client axis is sharded over devices.
    """

    eval: ClientBatch
    train: ClientBatch
    train_index: jax.Array
    train_weight: jax.Array
    glob: Optional[ClientBatch] = None
    train_total: Optional[int] = flax.struct.field(pytree_node=False, default=None)
    extra: Optional[dict] = None
    # True when every client holds a training node and `train` is `eval` itself (train_index =
    # arange(C)): results per training client are then already in evaluation order (static)
    train_is_eval: bool = flax.struct.field(pytree_node=False, default=False)
    # partial participation by mask (`FederatedAlgorithm.masked_sampling`): int32 [m], the ascending
    # positions in `train` of this round's sampled clients, `train` itself left whole; None: every
    # training client trains (or `train` already holds only the sample)
    sample: Optional[jax.Array] = None


class HostInput(NamedTuple):
    """What an algorithm's host-side preparation sees (registry info `prepare`, run once, before
    anything is jitted):

        @register("algorithm", "fedgcn", hparams=..., prepare=prepare_fn)
        def prepare_fn(inp: HostInput, hp) -> tuple[ClientBatch, dict]: ...

    returning the (possibly changed, e.g. features replaced) client batch and `FedData.extra`.

    Attributes:
        graph: the whole graph after the split (rows of `batch.node_ids` index it).
        assignment: int `[N]`, the client of every node (-1: none).
        batch: the padded client batch, host arrays `[C, ...]`.
        seed: the run's partition seed (preparation is deterministic given the config).
    """

    graph: Any
    assignment: np.ndarray
    batch: ClientBatch
    seed: int


def make_fed_data(batch: ClientBatch, glob: Optional[ClientBatch] = None, extra: Optional[dict] = None) -> FedData:
    """Split a ClientBatch into its evaluation view and its trainable clients (host side, once).

    A client is trainable when it holds a training node (a training edge, for link prediction).

    Args:
        batch: the C clients, `[C, N]` arrays.
        glob: the whole graph as a one-client batch `[1, ...]`, kept for evaluation on global data;
            None when no evaluation mode needs it.
        extra: an algorithm's prepared arrays (`FedData.extra`), or None.

    Returns:
        A `FedData`: eval = `batch`; train the C_t trainable clients `[C_t, ...]`; train_index
        int32 `[C_t]`; train_weight float32 `[C_t]` (their training-node or training-edge counts).

    Raises:
        ValueError: no client holds a training node (or edge).
    """
    if batch.pairs is None:
        counts = np.asarray(batch.train_mask).sum(axis=1) * np.asarray(batch.client_mask)
    else:  # link prediction: a client's training examples are its training edges
        counts = (np.asarray(batch.pairs.train_mask) & np.asarray(batch.pairs.label)).sum(axis=1) \
            * np.asarray(batch.client_mask)
    index = np.flatnonzero(counts > 0).astype(np.int32)
    if index.size == 0:
        raise ValueError("no client holds a training " + ("node: check the split masks" if batch.pairs is None
                                                           else "edge: check the edge split fractions"))
    every = index.size == batch.num_clients
    train = batch if every else select_clients(batch, index)
    # device_put, not jnp.asarray: no start-up compilation for a host copy
    return FedData(eval=batch, train=train, train_index=jax.device_put(index),
                   train_weight=jax.device_put(counts[index].astype(np.float32)), glob=glob,
                   extra=None if extra is None else jax.device_put(extra), train_is_eval=every)
