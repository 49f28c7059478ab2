"""FedHGL speed: HC pre-propagation and one training round (issue 4 targets: Facebook, K = 9).

    python benchmarks/bench_fedhgl.py [--data-dir ../shared/data] [--datasets facebook,coraca] [--repeats 3]

For each dataset: label-Dirichlet partition (β = 1e4, seed 0), then
  * hc:     `hyperedge_completion` (N = 2, no noise) — compile (first call) separately from the
            median of `repeats` timed calls after warm-up;
  * hc_ldp: the same with the dataset's LDP mechanism (ε = 1);
  * basic:  trimmed local propagation (Basic FedHGL);
  * round:  one FedAvg round (3 local Adam steps on every client + validation), median of
            `round_repeats` calls of the jitted round after warm-up.
Peak RSS (resource.getrusage) is recorded after each stage. Writes benchmarks/results/fedhgl.json.
"""
from __future__ import annotations

import argparse
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
from fgl_jax.systems.fedhgl import (TRAIN_RATIO, FedHGLConfig, auto_chunk, basic_propagation, build_basic_clients,  # noqa: E402
                                    build_hc_clients, client_features, client_splits, hyperedge_completion,
                                    init_state, make_data, make_model, make_round, partition_hypergraph,
                                    resolve_mechanism)

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
    cfg = FedHGLConfig(num_clients=k, train_ratio=TRAIN_RATIO[name], mechanism="auto", eps=1.0)
    t = time.perf_counter()
    split = partition_hypergraph(hg, k, cfg.beta, seed=0)
    hc = build_hc_clients(split)
    x = jnp.asarray(client_features(split, hc.inc.num_nodes))
    out["host_prep_seconds"] = time.perf_counter() - t
    out["split_stats"] = split.stats()
    chunk = auto_chunk(cfg.feature_chunk, hc.inc.he_nodes.size, hg.num_features)
    out["feature_chunk"] = chunk
    key = jax.random.PRNGKey(0)
    f0, med, ts = timed(lambda: hyperedge_completion(x, hc, key, 2, "none", chunk=chunk), repeats)
    out["hc"] = {"first_call_seconds": f0, "compile_seconds_est": f0 - med, "median_seconds": med, "all": ts,
                 "peak_rss_mb": peak_rss_mb()}
    mech = resolve_mechanism(cfg, hg)
    f0, med, ts = timed(lambda: hyperedge_completion(x, hc, key, 2, mech, 1.0, chunk=chunk), repeats)
    out["hc_ldp"] = {"mechanism": mech, "first_call_seconds": f0, "compile_seconds_est": f0 - med, "median_seconds": med,
                     "all": ts, "peak_rss_mb": peak_rss_mb()}
    xn = np.asarray(hyperedge_completion(x, hc, key, 2, "none", chunk=chunk))
    del hc
    inc = build_basic_clients(split)
    xb = jnp.asarray(client_features(split, inc.num_nodes))
    bchunk = auto_chunk(cfg.feature_chunk, inc.he_nodes.size, hg.num_features)
    f0, med, ts = timed(lambda: basic_propagation(xb, inc, 2, bchunk), repeats)
    out["basic"] = {"first_call_seconds": f0, "compile_seconds_est": f0 - med, "median_seconds": med, "all": ts,
                    "peak_rss_mb": peak_rss_mb()}
    del xb, x
    data = make_data(xn, split, client_splits(split, cfg, 0))
    del xn
    out["train_rows_per_client"] = {s: int(getattr(data, f"x_{s}").shape[1]) for s in ("train", "val", "test")}
    model = make_model(hg.num_classes, cfg)
    state = init_state(model, cfg, data, jax.random.PRNGKey(1))
    rnd = jax.jit(make_round(model, cfg))
    t = time.perf_counter()
    jax.block_until_ready(rnd(state, data, key))
    compile_s = time.perf_counter() - t
    times = []
    s = state
    for i in range(round_repeats):
        t = time.perf_counter()
        s, m = rnd(s, data, jax.random.fold_in(key, i))
        jax.block_until_ready(m)
        times.append(time.perf_counter() - t)
    out["round"] = {"compile_seconds": compile_s, "median_ms": 1000 * statistics.median(times),
                    "min_ms": 1000 * min(times), "peak_rss_mb": peak_rss_mb()}
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
