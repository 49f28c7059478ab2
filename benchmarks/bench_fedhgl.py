"""FedHGL speed: HC pre-propagation and one training round (issue 4 targets: Facebook, K = 9).

    python benchmarks/bench_fedhgl.py [--data-dir ../shared/data] [--datasets facebook,coraca] [--repeats 3]

For each dataset: label-Dirichlet partition (β = 1e4, seed 0), then
  * hc:     HC pre-propagation X^{(2)} = `propagate(split, cfg)` (fast sparse path of
            fgl_jax/systems/fedhgl_prop.py, equal to the protocol; no noise) — first call
            separately from the median of `repeats` timed calls;
  * hc_ldp: the same with the dataset's LDP mechanism (ε = 1; noise drawn by the jitted mechanisms);
  * basic:  trimmed local propagation (Basic FedHGL);
  * round:  one FedAvg round (3 local Adam steps on every client, validation after every step as
            the authors' code), median of `round_repeats` calls of the jitted round after warm-up;
  * round_eval_once: the same with validation once per round (eval_every_step=False).
Peak RSS (resource.getrusage) is recorded after each stage. Writes benchmarks/results/fedhgl.json.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import platform
import resource
import statistics
import sys
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from fgl_jax.data.hypergraph import load_hypergraph  # noqa: E402
from fgl_jax.systems.fedhgl import (TRAIN_RATIO, FedHGLConfig, client_splits, init_state, make_data,  # noqa: E402
                                    make_model, make_round, partition_hypergraph, propagate, resolve_mechanism)

OUT = Path(__file__).resolve().parent / "results" / "fedhgl.json"


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def timed(fn, repeats):
    t = time.perf_counter()
    jax.block_until_ready(fn())
    first = time.perf_counter() - t
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        jax.block_until_ready(fn())
        times.append(time.perf_counter() - t)
    return first, statistics.median(times), times


def bench(name, k, data_dir, repeats, round_repeats):
    out = {"dataset": name, "num_clients": k}
    t = time.perf_counter()
    hg = load_hypergraph(name, data_dir)
    out["load_seconds"] = time.perf_counter() - t
    out.update(nodes=hg.num_nodes, hyperedges=hg.num_edges, features=hg.num_features, incidences=hg.nnz,
               feature_nnz=int(hg.x.nnz) if hasattr(hg.x, "nnz") else None)
    cfg = FedHGLConfig(num_clients=k, train_ratio=TRAIN_RATIO[name])
    t = time.perf_counter()
    split = partition_hypergraph(hg, k, cfg.beta, seed=0)
    out["host_prep_seconds"] = time.perf_counter() - t
    out["split_stats"] = split.stats()
    key = jax.random.PRNGKey(0)
    f0, med, ts = timed(lambda: propagate(split, cfg, key)[0], repeats)
    out["hc"] = {"first_call_seconds": f0, "median_seconds": med, "all": ts, "peak_rss_mb": peak_rss_mb()}
    mech = resolve_mechanism(dataclasses.replace(cfg, mechanism="auto"), hg)
    ldp = dataclasses.replace(cfg, mechanism=mech, eps=1.0)
    f0, med, ts = timed(lambda: propagate(split, ldp, key)[0], repeats)
    out["hc_ldp"] = {"mechanism": mech, "first_call_seconds": f0, "median_seconds": med, "all": ts,
                     "peak_rss_mb": peak_rss_mb()}
    basic = dataclasses.replace(cfg, propagation="basic")
    f0, med, ts = timed(lambda: propagate(split, basic, key)[0], repeats)
    out["basic"] = {"first_call_seconds": f0, "median_seconds": med, "all": ts, "peak_rss_mb": peak_rss_mb()}
    xn, _ = propagate(split, cfg, key)
    data = make_data(xn, split, client_splits(split, cfg, 0))
    del xn
    out["train_rows_per_client"] = {s: int(getattr(data, f"x_{s}").shape[1]) for s in ("train", "val", "test")}
    for tag, c in (("round", cfg), ("round_eval_once", dataclasses.replace(cfg, eval_every_step=False))):
        model = make_model(hg.num_classes, c)
        state = init_state(model, c, data, jax.random.PRNGKey(1))
        rnd = jax.jit(make_round(model, c), donate_argnums=(0,))
        t = time.perf_counter()
        s, m = rnd(state, data, key)
        jax.block_until_ready(m)
        compile_s = time.perf_counter() - t
        times = []
        for i in range(round_repeats):
            t = time.perf_counter()
            s, m = rnd(s, data, jax.random.fold_in(key, i))
            jax.block_until_ready(m)
            times.append(time.perf_counter() - t)
        out[tag] = {"eval_every_step": c.eval_every_step, "compile_seconds": compile_s,
                    "median_ms": 1000 * statistics.median(times), "min_ms": 1000 * min(times),
                    "peak_rss_mb": peak_rss_mb()}
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data-dir", default=None)
    ap.add_argument("--datasets", default="facebook:9,coraca:3")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--round-repeats", type=int, default=30)
    args = ap.parse_args(argv)
    results = []
    for spec in args.datasets.split(","):
        name, k = spec.split(":") if ":" in spec else (spec, "9")
        r = bench(name, int(k), args.data_dir, args.repeats, args.round_repeats)
        print(json.dumps({kk: v for kk, v in r.items() if kk != "split_stats"}, default=float), flush=True)
        results.append(r)
    payload = {"benchmark": "fedhgl", "targets": {"hc_seconds": 1.0, "round_ms": 20.0},
               "results": results,
               "environment": {"python": platform.python_version(), "jax": jax.__version__,
                               "machine": platform.machine(), "processor": platform.processor(),
                               "cpu_count": __import__("os").cpu_count(),
                               "loadavg": __import__("os").getloadavg()},
               "command": " ".join(sys.argv)}
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(payload, indent=2, default=float))
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
