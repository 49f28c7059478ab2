"""Which devices a run uses, from the command line: all local ones by default, `--devices N` to
limit, and several processes (hosts) joined with `jax.distributed`.

    fgl-jax run ... --devices 4                                   # the first 4 local devices
    fgl-jax run ... --coordinator 10.0.0.1:12355 --num-processes 2 --process-id 0   # on host 0
    fgl-jax run ... --coordinator 10.0.0.1:12355 --num-processes 2 --process-id 1   # on host 1

With more than one device the client axis of the run's `FedData` is sharded over a 1-D mesh
(`fgl_jax.federated.sharding`): same numbers as one device up to float summation order. A
system whose data is not a `FedData` (FedHGN's relation blocks, Lumos's device trees, ...) runs
on one device, with a notice. With several processes every process computes the same partition
and builds only the clients its devices hold (`fgl_jax.federated.local_data`), and all run the
same program over the mesh of all processes' devices. Every process gives the same `--out`, a
directory all of them see: each saves its own shards of the checkpoints there and `--resume`
restores them in each (refused, in every process, when the checkpoint was written by another
process or device count); process 0 alone writes config.yaml, metrics.jsonl and summary.json.
`agree_with_main` lets the other processes stop with process 0 when it refuses the directory.
"""
from __future__ import annotations

import sys
from typing import Any, Optional

import jax

from fgl_jax.federated.algorithm import FedData, FederatedAlgorithm


def initialize(coordinator: Optional[str], num_processes: Optional[int], process_id: Optional[int]) -> None:
    """`jax.distributed.initialize` from the CLI flags (before anything touches a device).

    All three or none: without a coordinator nothing happens (one process)."""
    given = {"--coordinator": coordinator, "--num-processes": num_processes, "--process-id": process_id}
    if coordinator is None and num_processes is None and process_id is None:
        return
    missing = [k for k, v in given.items() if v is None]
    if missing:
        raise ValueError(f"a multi-process run needs --coordinator, --num-processes and --process-id; "
                         f"missing {', '.join(missing)}")
    if ":" not in coordinator:
        raise ValueError(f"--coordinator must be HOST:PORT (process 0's address), got {coordinator!r}")
    if num_processes < 1 or not 0 <= process_id < num_processes:
        raise ValueError(f"--process-id must be in [0, {num_processes}) for --num-processes {num_processes}, "
                         f"got {process_id}")
    # CPU processes exchange their shards through gloo (XLA's default CPU client has no collectives
    # across processes); accelerators use their own (NCCL, ICI) whatever this says.
    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    jax.distributed.initialize(coordinator_address=coordinator, num_processes=num_processes,
                               process_id=process_id)
    DISTRIBUTED[0] = True


DISTRIBUTED = [False]  # jax.distributed was initialised by `initialize` (its shutdown runs at exit)


def is_main_process() -> bool:
    """True in process 0 (or without jax.distributed): the process that writes the run's files."""
    return jax.process_index() == 0


def agree_with_main(ok: bool, text: Optional[str]) -> tuple[bool, bool]:
    """Whether process 0 accepted (its `ok`) and whether this process's `text` equals process 0's.

    Every process must call it (a collective). Process 0's verdict on the run directory (a refused
    resume, a non-empty --out) reaches the others, which then stop with one line instead of waiting
    for it forever in the first collective of the run.

    Args:
        ok: this process's verdict (only process 0's counts).
        text: what must be the same in every process (the resolved --out), or None.

    Returns:
        (process 0's ok, this process's text equals process 0's).
    """
    import hashlib
    import numpy as np
    from jax.experimental import multihost_utils
    digest = hashlib.sha256(repr(text).encode()).digest()[:8]
    mine = np.concatenate([[np.int32(bool(ok))], np.frombuffer(digest, np.int32)])
    main = np.asarray(multihost_utils.broadcast_one_to_all(mine))
    return bool(main[0]), bool((main[1:] == mine[1:]).all())


def choose_mesh(devices: Optional[int] = None):
    """The mesh a run shards its client axis over, or None for a plain one-device run.

    devices: None or 0 = every local device (on a CPU that is one device, so no mesh); N = the
    first N local devices. Several processes: the mesh of every process's devices (`devices`
    must then be left at all)."""
    from fgl_jax.federated.sharding import client_mesh
    if jax.process_count() > 1:
        if devices:
            raise ValueError("--devices limits the devices of one process; a multi-process run uses every "
                             "device of every process (leave --devices out)")
        return client_mesh()
    local = jax.local_devices()
    if devices is None or devices == 0:
        n = len(local)
    elif devices < 0:
        raise ValueError(f"--devices must be >= 1 (or 0 = all), got {devices}")
    elif devices > len(local):
        raise ValueError(f"--devices {devices}: this process has {len(local)} {local[0].platform} device(s)")
    else:
        n = devices
    return None if n == 1 else client_mesh(local[:n])


def client_fields(algorithm: FederatedAlgorithm, state: Any) -> tuple:
    """The state fields sharded on the client axis: the per-client parts the engine knows about
    (`train_axis`, personal models); any other field is replicated (correct, only less memory-lean)."""
    import dataclasses
    from fgl_jax.federated.sharding import DEFAULT_CLIENT_FIELDS
    names = {f.name for f in dataclasses.fields(state)} if dataclasses.is_dataclass(state) else set()
    return tuple(f for f in dict.fromkeys(DEFAULT_CLIENT_FIELDS + tuple(algorithm.train_axis)) if f in names)


def run_on_devices(algorithm: FederatedAlgorithm, data: Any, key: jax.Array, num_rounds: int,
                   options: Any = None, *, mesh=None, system: str = "this system"):
    """`fgl_jax.federated.run` with `options` (a `RunOptions`), or `run_sharded` over `mesh` when
    there is one and `data` is a FedData."""
    from fgl_jax.federated.run import run
    if mesh is None or mesh.size == 1:
        return run(algorithm, data, key, num_rounds, options)
    if not isinstance(data, FedData):
        print(f"fgl-jax: notice: {system} keeps its data in a {type(data).__name__}, not a client-axis FedData: "
              f"it runs on one device, not the {mesh.size} available", file=sys.stderr)
        if jax.process_count() > 1 and options is not None and options.checkpoints:
            # each process would run (and save) the whole state on its own device: no shards to split
            import dataclasses
            print(f"fgl-jax: notice: {system} runs whole in every process: no checkpoints across processes",
                  file=sys.stderr)
            options = dataclasses.replace(options, checkpoints=False)
        return run(algorithm, data, key, num_rounds, options)
    from fgl_jax.federated.sharding import run_sharded
    from fgl_jax.federated.algorithm import x64_scope
    with x64_scope(algorithm):  # the fields to shard, from the state's structure (nothing is computed)
        shape = jax.eval_shape(algorithm.init, key, data)
    return run_sharded(algorithm, data, key, num_rounds, options, mesh=mesh,
                       client_fields=client_fields(algorithm, shape))
