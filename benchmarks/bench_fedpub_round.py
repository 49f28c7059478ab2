"""FedPub's round, old vs new side by side in one process (issue 29) -> benchmarks/results/fedpub_round.json (+ .md)

The harness's setting (compare.py: 10 Louvain clients, OpenFGL's split, masked GCN 2 x 64, 3 local
Adam steps, OpenFGL's FedPub options), per dataset, as compiled scans of `--rounds` rounds:

  before        : the round as it was (client rows gathered with train_index and scattered back
                  with .at[].set even when every client trains; the similarity-weighted sums taken
                  over every leaf, masks included, though the personalised weights' masks are unused)
  after         : the library as it is (those gathers/scatters skipped when C_t == C: identities;
                  the weighted sums over the weight leaves only)
  after_chunk2  : the same with client_chunk=2 (clients trained two at a time, lax.map; the same
                  arithmetic, see fgl_jax/federated/chunking.py)

Timed alternately (before, after, after_chunk2, before, ...): medians of wall and process-CPU time
per round; the largest absolute difference of the final personal models and of the metrics
between each variant and "before" (0 = the same floats).

    FGL_JAX_DATA=/work/shared/data python benchmarks/bench_fedpub_round.py [--datasets cora citeseer]
"""
from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import RESULTS, ROOT, command, loadavg, machine, write_json  # noqa: E402

sys.path.insert(0, str(ROOT))
from fgl_jax import RunConfig, Tracker, make_scan  # noqa: E402


@contextlib.contextmanager
def previous_round():
    """Trace FedPub with the previous client gathers/scatters (always indexed)."""
    import fgl_jax.algorithms.fedpub as fp
    saved = fp.take_clients, fp.scatter_clients, fp.personalise
    fp.take_clients = lambda full, index: jax.tree.map(lambda a: a[index], full)
    fp.scatter_clients = lambda full, index, part: jax.tree.map(lambda f, p: f.at[index].set(p), full, part)
    fp.personalise = lambda alpha, models: jax.tree.map(lambda x: jnp.tensordot(alpha, x, axes=1), models)
    try:
        yield
    finally:
        fp.take_clients, fp.scatter_clients, fp.personalise = saved


def max_diff(a, b) -> float:
    return max(float(np.max(np.abs(np.asarray(x, np.float64) - np.asarray(y, np.float64))))
               for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b)))


def bench(ds: str, args) -> dict:
    from fgl_jax.systems.baseline import algorithm_from_config, prepare
    sys.path.insert(0, str(ROOT))
    from benchmarks.peers.openfgl.compare import FGL_OPTIONS
    base = RunConfig(dataset=ds, algorithm="fedpub", clients=10, partition="louvain", split="openfgl", model="gcn",
                     hidden=64, num_layers=2, dropout=0.5, local_steps=3, optimizer="adam", lr=0.01,
                     weight_decay=5e-4, rounds=args.rounds, eval_mode="local_model_on_local_data",
                     eval_average="client_nodes", seed=0, split_seed=0, **FGL_OPTIONS["fedpub"])
    variants, outs = {}, {}
    runs = (("before", None, previous_round), ("after", None, contextlib.nullcontext),
            ("after_chunk2", 2, contextlib.nullcontext))
    for name, chunk, ctx in (r for r in runs if r[0] in args.variants):
        cfg = base.replace(client_chunk=chunk)
        prep = prepare(cfg)
        alg = algorithm_from_config(cfg, prep.graph)
        data = prep.data
        jax.clear_caches()
        with ctx():
            state = jax.jit(alg.init)(jax.random.key(0), data)
            prog = make_scan(alg, cfg.rounds).lower(state, Tracker.empty(), data, jax.random.key(1),
                                                    jnp.int32(0)).compile()
        call = (lambda p, s, d: lambda: p(s, Tracker.empty(), d, jax.random.key(1), jnp.int32(0)))(prog, state, data)
        variants[name] = call
        outs[name] = jax.block_until_ready(call())
    wall = {k: [] for k in variants}
    cpu = {k: [] for k in variants}
    for _ in range(args.repeats):
        for k, call in variants.items():
            t0, c0 = time.perf_counter(), time.process_time()
            jax.block_until_ready(call())
            wall[k].append(1000 * (time.perf_counter() - t0) / args.rounds)
            cpu[k].append(1000 * (time.process_time() - c0) / args.rounds)
    res = {k: {"wall_ms_median": statistics.median(wall[k]), "cpu_ms_median": statistics.median(cpu[k]),
               "wall_ms_all": wall[k], "cpu_ms_all": cpu[k]} for k in variants}
    b = res["before"]["cpu_ms_median"]
    return {"dataset": ds, "unit": "ms/round", "variants": res,
            "cpu_speedup_vs_before": {k: b / v["cpu_ms_median"] for k, v in res.items()},
            "max_abs_diff_personal_vs_before": {k: max_diff(outs["before"][0].personal, o[0].personal)
                                                for k, o in outs.items()},
            "max_abs_diff_metrics_vs_before": {k: max_diff(outs["before"][2], o[2]) for k, o in outs.items()}}


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--datasets", nargs="+", default=["cora", "citeseer"])
    p.add_argument("--rounds", type=int, default=10)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--out", default=str(RESULTS / "fedpub_round"))
    p.add_argument("--variants", nargs="+", default=["before", "after", "after_chunk2"])
    a = p.parse_args(argv)
    t0, load0 = time.perf_counter(), loadavg()
    out = {"machine": machine(), "loadavg_start": load0, "results": [bench(ds, a) for ds in a.datasets]}
    out["loadavg_end"] = loadavg()
    out["command"] = command(__file__, argv if argv is not None else sys.argv[1:])
    out["seconds"] = time.perf_counter() - t0
    lines = ["| dataset | variant | cpu ms/round | wall ms/round | cpu speed-up vs before | max |diff| personal | max |diff| metrics |",
             "|---|---|---|---|---|---|---|"]
    for r in out["results"]:
        for k, v in r["variants"].items():
            lines.append(f"| {r['dataset']} | {k} | {v['cpu_ms_median']:.1f} | {v['wall_ms_median']:.1f} | "
                         f"{r['cpu_speedup_vs_before'][k]:.2f}x | {r['max_abs_diff_personal_vs_before'][k]:.3g} | "
                         f"{r['max_abs_diff_metrics_vs_before'][k]:.3g} |")
    lines += ["", f"Load average {load0} at start / {out['loadavg_end']} at end. `{out['command']}`"]
    write_json(Path(a.out).with_suffix(".json"), out)
    Path(a.out).with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
