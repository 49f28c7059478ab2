"""Subprocess worker for tests/test_sharding.py (XLA_FLAGS must be set before jax is imported).

    python -m tests.sharding_worker devices N         # one process, N host devices
    python -m tests.sharding_worker process I PORT N  # process I of N (jax.distributed, gloo)
Prints one line "RESULT <json>".
"""
import json
import os
import sys


def _problem(algo: str, k: int):
    import numpy as np
    from fgl_jax.batch import build_client_batch
    from fgl_jax.federated import FedConfig, OptimConfig, baseline, make_fed_data
    from fgl_jax.nn import make_model
    from tests.helpers import toy_graph
    g = toy_graph(n=60, seed=2)
    batch = build_client_batch(g, np.random.default_rng(0).integers(0, k, g.num_nodes), k)
    model = make_model("gcn", g.num_features, g.num_classes, hidden=8, dropout=0.5)
    return baseline(model, FedConfig(algo, local_steps=2, optim=OptimConfig(lr=0.05))), make_fed_data(batch)


PROBLEMS = {"fedavg6": ("fedavg", 6), "fedper3": ("fedper", 3)}
ROUNDS = 4


def _summary(res) -> dict:
    import jax
    import numpy as np
    server = [np.asarray(x).tolist() for x in jax.tree.leaves(res.state.server)]
    return {"history": {k: np.asarray(v).tolist() for k, v in res.history.items()}, "server": server}


def main(argv):
    mode = argv[0]
    if mode == "devices":
        os.environ["XLA_FLAGS"] = f"--xla_force_host_platform_device_count={int(argv[1])}"
    else:
        os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=1"
    import warnings
    import jax
    if mode == "process":
        pid, port, nproc = int(argv[1]), argv[2], int(argv[3])
        jax.config.update("jax_cpu_collectives_implementation", "gloo")
        jax.distributed.initialize(coordinator_address=f"127.0.0.1:{port}", num_processes=nproc, process_id=pid)
    from fgl_jax.federated.sharding import client_mesh, run_sharded
    out = {"devices": len(jax.devices()), "processes": jax.process_count(), "runs": {}, "warnings": []}
    names = ["fedavg6", "fedper3"] if mode == "devices" else ["fedavg6"]
    for name in names:
        alg, data = _problem(*PROBLEMS[name])
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            # chunk=2: two calls of the compiled scan, so the state layout must survive a round trip
            res = run_sharded(alg, data, jax.random.key(0), ROUNDS, mesh=client_mesh(), chunk=2)
        out["warnings"] += [str(w.message) for w in caught]
        out["runs"][name] = _summary(res)
    print("RESULT " + json.dumps(out), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
