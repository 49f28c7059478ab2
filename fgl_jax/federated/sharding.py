"""The client axis sharded over devices (and hosts) with `jax.sharding`.

Every array of a `FedData` has the client axis first ([C, ...] for evaluation, [C_t, ...] for
the training clients), and so do the per-client parts of an algorithm's state (optimiser
moments, personal parameters). We lay that axis out over a 1-D `Mesh` of all devices
(`NamedSharding(mesh, P("clients"))`) and replicate everything else (the global model,
hyperparameters, round counter). The round code is unchanged: `jit` partitions the vmapped
local updates along the sharded axis (each device trains its own clients), and the FedAvg
weighted sum over the client axis becomes a cross-device all-reduce that XLA inserts.

The client counts must divide by the device count, so `pad_fed_data` appends dummy clients:
copies of client 0 with every label mask, `client_mask` and FedAvg weight zero. A dummy
contributes exactly 0 to every pooled metric and to the weighted mean, so a sharded run gives
the numbers of the unsharded one up to float summation order (tests/test_sharding.py: 1 vs 4
host devices). More devices than clients is handled the same way (with a warning).

    mesh = client_mesh()                          # all devices of all processes
    result = run_sharded(algorithm, data, key, num_rounds, mesh=mesh)   # = run(...) numbers

Multi-host: call `jax.distributed.initialize(...)` first in every process, build the same
host-side FedData in each (deterministic preparation), then call `run_sharded`: arrays are
created with `jax.make_array_from_callback`, so each process places only its own devices'
shards. Recipe in docs/scaling.md.
"""
from __future__ import annotations

import dataclasses
import math
import warnings
from typing import TYPE_CHECKING, Any, Optional, Sequence

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

from fgl_jax.batch import ClientBatch
from fgl_jax.federated.algorithm import FedData, FederatedAlgorithm, with_round, x64_scope

if TYPE_CHECKING:
    from fgl_jax.federated.options import RunOptions

PyTree = Any
CLIENT_AXIS = "clients"
# State fields that carry a leading client axis in the algorithms of this package
# (BaselineState: personal [C, ...], opt [C_t, ...]). Other systems pass their own names.
DEFAULT_CLIENT_FIELDS = ("personal", "opt")


def client_mesh(devices: Optional[Sequence[jax.Device]] = None) -> Mesh:
    """A 1-D mesh named "clients" over `devices` (default: every device of every process).

    Args:
        devices: the devices, or None for `jax.devices()`.

    Returns:
        The `jax.sharding.Mesh` with one axis, "clients".

    Raises:
        ValueError: an empty device list.
    """
    devices = list(jax.devices() if devices is None else devices)
    if not devices:
        raise ValueError("client_mesh: no devices given")
    return Mesh(np.asarray(devices, dtype=object), (CLIENT_AXIS,))


def client_sharding(mesh: Mesh) -> NamedSharding:
    """Leading axis split over the mesh, the rest whole on each device."""
    return NamedSharding(mesh, P(CLIENT_AXIS))


def replicated(mesh: Mesh) -> NamedSharding:
    return NamedSharding(mesh, P())


def _round_up(n: int, multiple: int) -> int:
    return max(multiple, math.ceil(n / multiple) * multiple)


def pad_clients(batch: ClientBatch, num_clients: int) -> ClientBatch:
    """Append dummy clients up to `num_clients`: copies of client 0 that hold no labelled node.

    Dummies keep client 0's graph (so every op stays finite: no empty-degree corner cases) but
    have train/val/test masks False, node_ids -1 and client_mask False: they add 0 to every
    pooled count and, with weight 0, to every aggregate.
    """
    c = batch.num_clients
    if num_clients < c:
        raise ValueError(f"pad_clients: num_clients={num_clients} is fewer than the batch's {c} clients")
    if num_clients == c:
        return batch
    extra = num_clients - c
    dummy = jax.tree.map(lambda a: jnp.broadcast_to(jnp.asarray(a)[:1], (extra,) + jnp.shape(a)[1:]), batch)
    off = lambda a: jnp.zeros_like(a)
    dummy = dummy.replace(train_mask=off(dummy.train_mask), val_mask=off(dummy.val_mask),
                          test_mask=off(dummy.test_mask), client_mask=off(dummy.client_mask),
                          node_ids=jnp.full_like(dummy.node_ids, -1))
    return jax.tree.map(lambda a, d: jnp.concatenate([jnp.asarray(a), d], axis=0), batch, dummy)


@dataclasses.dataclass(frozen=True)
class PaddingInfo:
    devices: int
    eval_clients: int          # real clients in data.eval
    train_clients: int         # real clients in data.train
    eval_padded: int
    train_padded: int

    @property
    def dummies(self) -> int:
        return self.eval_padded - self.eval_clients + self.train_padded - self.train_clients


def padded_counts(c: int, ct: int, multiple: int) -> tuple[int, int]:
    """(C_pad, C_t_pad): both client axes rounded up to multiples of `multiple` (the device count).

    A padded training client needs a slot in the evaluation axis for its personal parameters, so
    the evaluation axis gets one more block when it had no dummy of its own.

    Args:
        c: C, the evaluation clients.
        ct: C_t, the training clients.
        multiple: the device count.

    Returns:
        The padded counts (C_pad, C_t_pad).
    """
    ct_pad = _round_up(ct, multiple)
    c_pad = _round_up(c, multiple)
    if ct_pad > ct and c_pad == c:
        c_pad += multiple  # room for the dummies' (never used) personal state
    return c_pad, ct_pad


def pad_fed_data(data: FedData, multiple: int, warn: bool = True) -> tuple[FedData, PaddingInfo]:
    """Pad both client axes of `data` to multiples of `multiple` (the device count).

    A padded training client needs a slot in the evaluation axis for its personal parameters
    (`train_index`); it points at the first dummy evaluation client, and the evaluation axis
    gets one extra block of dummies if it had none. Dummy training weights are 0.
    """
    if isinstance(multiple, bool) or not isinstance(multiple, int) or multiple < 1:
        raise ValueError(f"pad_fed_data: multiple must be a positive integer (the device count), got {multiple!r}")
    c, ct = data.eval.num_clients, data.train.num_clients
    c_pad, ct_pad = padded_counts(c, ct, multiple)
    info = PaddingInfo(multiple, c, ct, c_pad, ct_pad)
    if c_pad == c and ct_pad == ct:
        return data, info
    if warn and multiple > ct:
        warnings.warn(f"{multiple} devices but only {ct} training clients ({c} in all): padding with "
                      f"{info.dummies} masked dummy clients (zero weight); some devices only hold dummies",
                      stacklevel=3)
    index = np.concatenate([np.asarray(data.train_index), np.full(ct_pad - ct, c, np.int32)]).astype(np.int32)
    weight = np.concatenate([np.asarray(data.train_weight), np.zeros(ct_pad - ct, np.float32)])
    return FedData(eval=pad_clients(data.eval, c_pad), train=pad_clients(data.train, ct_pad),
                   train_index=jnp.asarray(index), train_weight=jnp.asarray(weight), glob=data.glob,
                   extra=data.extra), info


def is_global(data: Any) -> bool:
    """True when `data` already holds arrays spread over several processes
    (`fgl_jax.federated.local_data.local_fed_data`): nothing to pad or place, and nothing a
    process can read whole.

    Args:
        data: a pytree (a FedData).

    Returns:
        Whether any leaf is a jax.Array that this process cannot address whole.
    """
    return any(isinstance(a, jax.Array) and not a.is_fully_addressable for a in jax.tree.leaves(data))


def put_global(x, sharding: NamedSharding) -> jax.Array:
    """Host value -> global jax.Array with `sharding`; each process fills only its own shards,
    so the same call works on one host and across hosts (every process holds the full value)."""
    if isinstance(x, jax.Array) and jax.dtypes.issubdtype(x.dtype, jax.dtypes.prng_key):
        if sharding.is_fully_addressable:
            return jax.device_put(x, sharding)
        # several processes: the key data [..., 2] placed like any array, wrapped back into keys on
        # the devices (device_put cannot reach another process's devices)
        data = put_global(jax.random.key_data(x), NamedSharding(sharding.mesh, P(*sharding.spec)))
        return jax.jit(lambda d: jax.random.wrap_key_data(d, impl=jax.random.key_impl(x)))(data)
    host = np.asarray(x)
    return jax.make_array_from_callback(host.shape, sharding, lambda idx: host[idx])


def shard_fed_data(data: FedData, mesh: Mesh) -> FedData:
    """Every FedData leaf has the client axis first: split it over the mesh."""
    n = mesh.size
    for name, c in (("eval", data.eval.num_clients), ("train", data.train.num_clients)):
        if c % n:
            raise ValueError(f"shard_fed_data: data.{name} has {c} clients, not a multiple of the {n} devices; "
                             "call pad_fed_data(data, mesh.size) first")
    spec, rep = client_sharding(mesh), replicated(mesh)
    extra, glob = data.extra, data.glob  # not on the client axis: every device holds all of it
    out = jax.tree.map(lambda a: put_global(a, spec), data.replace(extra=None, glob=None))
    return out.replace(extra=jax.tree.map(lambda a: put_global(a, rep), extra),
                       glob=jax.tree.map(lambda a: put_global(a, rep), glob))


def state_shardings(state: PyTree, mesh: Mesh, client_fields: Sequence[str] = DEFAULT_CLIENT_FIELDS) -> PyTree:
    """Sharding pytree for `state`: the named dataclass fields split on their leading (client)
    axis, everything else replicated. `state` must be a flax struct / dataclass."""
    if not dataclasses.is_dataclass(state):
        raise TypeError(f"state_shardings: expected a dataclass state (flax.struct), got {type(state).__name__}")
    names = {f.name for f in dataclasses.fields(state)}
    unknown = [f for f in client_fields if f not in names]
    if unknown:
        raise ValueError(f"state_shardings: client_fields {unknown} are not fields of {type(state).__name__} "
                         f"(fields: {sorted(names)})")
    rep, split = replicated(mesh), client_sharding(mesh)
    return state.replace(**{f.name: jax.tree.map(lambda _: split if f.name in client_fields else rep,
                                                 getattr(state, f.name))
                            for f in dataclasses.fields(state)})


def shard_state(state: PyTree, mesh: Mesh, client_fields: Sequence[str] = DEFAULT_CLIENT_FIELDS) -> PyTree:
    shardings = state_shardings(state, mesh, client_fields)
    return jax.tree.map(put_global, state, shardings)


def shard(data: FedData, state: PyTree, mesh: Optional[Mesh] = None,
          client_fields: Sequence[str] = DEFAULT_CLIENT_FIELDS) -> tuple[FedData, PyTree]:
    """Place (already padded) data and state on `mesh`: client axes split, the rest replicated."""
    mesh = mesh or client_mesh()
    return shard_fed_data(data, mesh), shard_state(state, mesh, client_fields)


def constrain(algorithm: FederatedAlgorithm, shardings: PyTree) -> FederatedAlgorithm:
    """The same algorithm with its state pinned to `shardings` after every round, so a scan
    carry (and the compiled program reused across run chunks) keeps one layout."""
    def wrap(round_):
        def round_fn(state, data, key):
            state, metrics = round_(state, data, key)
            return jax.lax.with_sharding_constraint(state, shardings), metrics
        return round_fn
    return with_round(algorithm, wrap)


def run_sharded(algorithm: FederatedAlgorithm, data: FedData, key: jax.Array, num_rounds: int,
                options: Optional[RunOptions] = None, *, mesh: Optional[Mesh] = None,
                client_fields: Sequence[str] = DEFAULT_CLIENT_FIELDS, **changes):
    """`fgl_jax.federated.run` with the client axis sharded over `mesh` (default: all devices).

    Pads the clients to a multiple of the device count, initialises the state exactly as `run`
    does (key split identically), shards data and state, and runs. Same numbers as
    `run(algorithm, data, key, num_rounds)` up to float summation order. options / changes: the
    run's `RunOptions` (chunk, progress, out_dir, resume, ...), as for `run`.
    """
    from fgl_jax.federated.options import resolve
    from fgl_jax.federated.run import run
    opts = resolve(options, changes, "run_sharded")
    mesh = mesh or client_mesh()
    init_key, _ = jax.random.split(key)
    if is_global(data):  # built per process (`local_data.local_fed_data`): padded and placed already
        with x64_scope(algorithm):
            shardings = state_shardings(jax.eval_shape(algorithm.init, init_key, data), mesh, client_fields)
            # no process can fetch the whole state: it is initialised where its shards live
            state_s = jax.jit(algorithm.init, out_shardings=shardings)(init_key, data)
        return run(constrain(algorithm, shardings), data, key, num_rounds, opts, state=state_s)
    data, _ = pad_fed_data(data, mesh.size)
    with x64_scope(algorithm):
        state = jax.jit(algorithm.init)(init_key, data)
        state = jax.device_get(state)
        data_s, state_s = shard(data, state, mesh, client_fields)
    shardings = state_shardings(state, mesh, client_fields)
    return run(constrain(algorithm, shardings), data_s, key, num_rounds, opts, state=state_s)
