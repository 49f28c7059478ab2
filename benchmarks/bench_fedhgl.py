"""FedHGL speed: HC pre-propagation and one training round (issue 4 targets: Facebook, K = 9).

    python benchmarks/bench_fedhgl.py [--data-dir ../shared/data] [--datasets facebook,coraca] [--repeats 3]

For each dataset: label-Dirichlet partition (β = 1e4, seed 0), then
  * hc:     HC pre-propagation X^{(2)} = `propagate(split, cfg)` (fast sparse path of
            fgl_jax/systems/fedhgl/propagation.py, equal to the protocol; no noise) — first call
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
import sys
import time
from pathlib import Path

import jax

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))  # harness.py, also when imported from elsewhere
from harness import RESULTS, command, machine, peak_rss_mb, timed, write_record  # noqa: E402
from fgl_jax import load_hypergraph  # noqa: E402
from fgl_jax.systems.fedhgl import (FedHGLConfig, client_splits, init_state, make_data, make_model,  # noqa: E402
                                    make_round, partition_hypergraph, preparation_key, propagate, resolve_mechanism)

OUT = RESULTS / "fedhgl.json"


def stage(fn, repeats: int, **extra) -> dict:
    """First call (incl. compile) apart from the median of `repeats` timed calls; peak RSS after the stage."""
    t = timed(fn, repeats)
    return {**extra, "first_call_seconds": t.first_s, "median_seconds": t.median, "all": list(t.wall_s),
            "peak_rss_mb": peak_rss_mb()}


def bench(name, k, data_dir, repeats, round_repeats):
    out = {"dataset": name, "clients": k}
    t = time.perf_counter()
    hg = load_hypergraph(name, data_dir)
    out["load_seconds"] = time.perf_counter() - t
    out.update(nodes=hg.num_nodes, hyperedges=hg.num_edges, features=hg.num_features, incidences=hg.nnz,
               feature_nnz=int(hg.x.nnz) if hasattr(hg.x, "nnz") else None)
    cfg = FedHGLConfig(dataset=name, clients=k)
    t = time.perf_counter()
    split = partition_hypergraph(hg, k, cfg.beta, seed=0)
    out["host_prep_seconds"] = time.perf_counter() - t
    out["split_stats"] = split.stats()
    key = preparation_key(cfg.seed)
    out["hc"] = stage(lambda: propagate(split, cfg, key)[0], repeats)
    mech = resolve_mechanism(dataclasses.replace(cfg, mechanism="auto"), hg)
    ldp = dataclasses.replace(cfg, mechanism=mech, eps=1.0)
    out["hc_ldp"] = stage(lambda: propagate(split, ldp, key)[0], repeats, mechanism=mech)
    basic = dataclasses.replace(cfg, method="fedhgl")
    out["basic"] = stage(lambda: propagate(split, basic, key)[0], repeats)
    xn, _ = propagate(split, cfg, key)
    data = make_data(xn, split, client_splits(split, cfg.ratio_for(name), cfg.val_ratio, cfg.test_ratio, 0))
    del xn
    out["train_rows_per_client"] = {s: int(getattr(data, f"x_{s}").shape[1]) for s in ("train", "val", "test")}
    for tag, c in (("round", cfg), ("round_eval_once", dataclasses.replace(cfg, eval_every_step=False))):
        model = make_model(hg.num_classes, c)
        state = init_state(model, c, data, jax.random.split(jax.random.key(cfg.seed))[0])
        rnd = jax.jit(make_round(model, c), donate_argnums=(0,))
        # the warm-up round (which compiles) uses `key`, timed round i uses fold_in(key, i)
        keys = iter([key, *(jax.random.fold_in(key, i) for i in range(round_repeats))])
        box = {"state": state}

        def one_round():  # the state is donated to, and replaced by, each round
            box["state"], metrics = rnd(box["state"], data, next(keys))
            return metrics

        t = timed(one_round, round_repeats)
        out[tag] = {"eval_every_step": c.eval_every_step, "compile_seconds": t.first_s,
                    "median_ms": 1000 * t.median, "min_ms": 1000 * min(t.wall_s),
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
               "results": results, "environment": machine(), "command": command(__file__, argv)}
    print(f"wrote {write_record(OUT, payload)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
