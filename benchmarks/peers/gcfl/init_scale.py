"""One measurement behind the GCFL record's gap (outside CI): fgl_jax's side of compare.py's run with
every kernel of the initial model scaled by `--kernel-scale` (1/sqrt(3) gives torch's Linear init
variance, 1/(3 fan_in), instead of flax's LeCun normal 1/fan_in), printing the mean test accuracy over
clients at a few rounds and at the last:

    FGL_JAX_DATA=/work/shared/data nice -n 10 python -m benchmarks.peers.gcfl.init_scale --kernel-scale 0.577
"""
from __future__ import annotations

import argparse
import os

import numpy as np

from benchmarks.peers.gcfl.compare import ALGORITHMS, config


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kernel-scale", type=float, default=3 ** -0.5, help="factor on every initial kernel")
    ap.add_argument("--algorithm", default="gcfl", choices=ALGORITHMS, help="fgl_jax algorithm")
    ap.add_argument("--seed", type=int, default=0, help="model seed")
    ap.add_argument("--rounds", type=int, default=200, help="rounds")
    a = ap.parse_args(argv)
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " --xla_cpu_multi_thread_eigen=false").strip()
    import jax
    from fgl_jax import run
    from fgl_jax.systems.baseline import algorithm_from_config, prepare
    defaults = dict(dataset="PROTEINS", clients=10, eps1=0.03, eps2=0.06, seq_length=10, batch_size=128, hidden=64,
                    layers=3, dropout=0.5, local_epochs=1, lr=0.001, weight_decay=5e-4, rounds=a.rounds)
    cfg = config(argparse.Namespace(**defaults), a.algorithm, a.seed)
    prep = prepare(cfg)
    alg = algorithm_from_config(cfg, prep.graph)

    def scaled_init(key, data):
        state = alg.init(key, data)
        scale = lambda path, x: x * a.kernel_scale if any(getattr(k, "key", "") == "kernel" for k in path) else x
        return state.replace(models=jax.tree_util.tree_map_with_path(scale, state.models))

    res = run(alg._replace(init=scaled_init), prep.data, jax.random.key(a.seed), a.rounds)
    curve = np.asarray(res.history["test_acc_clients_mean"])
    marks = [r for r in (1, 10, 20, 50, 100, 150, a.rounds) if r <= a.rounds]
    print(f"kernel scale {a.kernel_scale:.3f}: test acc (mean over clients) " +
          ", ".join(f"round {r} {100 * curve[r - 1]:.2f}" for r in marks) +
          f"; mean rounds 101-{a.rounds} {100 * curve[100:].mean():.2f}; clusters {int(res.history['num_clusters'][-1])}")


if __name__ == "__main__":
    main()
