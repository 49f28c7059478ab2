"""Benchmark: secure aggregation's bytes and its cost per round against the plain mean (issue 51, item 3).
Results -> benchmarks/results/secagg.json.

Bytes: `fgl_jax.privacy.secure_sum.protocol_bytes` for the parameters of a 2-layer GCN (hidden 64)
on Cora (1,433 features, 7 classes: D = 1433*64 + 64 + 64*7 + 7 = 92,231), C clients per round and
floor(dropout C) drop-outs, next to the plain upload of D float32 values (the same 4 bytes per value).

Time: the aggregation alone (no training), `aggregators.secure_mean()` against `aggregators.mean()`
on C random updates of D values, each jitted and compiled first; median of `--repeats` calls.

    python benchmarks/bench_secagg.py [--repeats 5] [--clients 10] [--time-dim 92231]
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # harness.py
from harness import RESULTS as OUT, machine, write_record  # noqa: E402

CORA_GCN_DIM = 1433 * 64 + 64 + 64 * 7 + 7


def byte_table(dim: int) -> list[dict]:
    from fgl_jax import secure_sum
    rows = []
    for c in (5, 10, 50, 100):
        for dropout in (0.0, 0.1, 0.3):
            n_d = secure_sum.dropped_count(c, dropout)
            b = secure_sum.protocol_bytes(c, dim, n_d)
            plain = dim * secure_sum.FIELD_BYTES
            rows.append({"clients": c, "dropout": dropout, "dropped": n_d, "client_up_bytes": b["client_up"],
                         "plain_client_up_bytes": plain, "client_overhead": b["client_up"] / plain,
                         "server_in_bytes": b["server_in"], "server_out_bytes": b["server_out"]})
    return rows


def time_aggregation(clients: int, dim: int, repeats: int) -> dict:
    import jax
    import jax.numpy as jnp
    from fgl_jax import aggregators
    ups = {"w": jax.random.normal(jax.random.key(0), (clients, dim)) * 0.1}
    params = {"w": jnp.zeros((dim,))}
    weights = jnp.ones((clients,))
    out = {}
    for name, agg in (("mean", aggregators.mean()), ("secure_mean", aggregators.secure_mean())):
        f = jax.jit(lambda u, k, agg=agg: agg.aggregate((), u, weights, k, params=params)[0])
        t0 = time.perf_counter()
        jax.block_until_ready(f(ups, jax.random.key(1)))
        compile_s = time.perf_counter() - t0
        times, cpu = [], []
        for r in range(repeats):
            t0, c0 = time.perf_counter(), time.process_time()
            jax.block_until_ready(f(ups, jax.random.key(2 + r)))
            times.append(time.perf_counter() - t0)
            cpu.append(time.process_time() - c0)
        # CPU time next to wall time: on a shared, loaded machine the wall time mostly measures the queue
        out[name] = {"first_call_s": compile_s, "median_ms": 1000 * statistics.median(times),
                     "median_cpu_ms": 1000 * statistics.median(cpu)}
    out["ratio"] = out["secure_mean"]["median_ms"] / out["mean"]["median_ms"]
    return out


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--clients", type=int, default=10)
    ap.add_argument("--time-dim", type=int, default=CORA_GCN_DIM)
    args = ap.parse_args(argv)
    table = byte_table(CORA_GCN_DIM)
    print(f"{'C':>4} {'drop':>5} {'client up':>12} {'x plain':>8} {'server in':>13} {'server out':>12}")
    for r in table:
        print(f"{r['clients']:>4} {r['dropped']:>5} {r['client_up_bytes']:>12,} {r['client_overhead']:>8.3f} "
              f"{r['server_in_bytes']:>13,} {r['server_out_bytes']:>12,}")
    timing = time_aggregation(args.clients, args.time_dim, args.repeats)
    print(f"aggregation of {args.clients} x {args.time_dim}: mean {timing['mean']['median_ms']:.2f} ms "
          f"(cpu {timing['mean']['median_cpu_ms']:.2f}), secure_mean {timing['secure_mean']['median_ms']:.1f} ms "
          f"(cpu {timing['secure_mean']['median_cpu_ms']:.1f}; {timing['ratio']:.0f}x wall), secure first call "
          f"{timing['secure_mean']['first_call_s']:.1f} s")
    write_record(OUT / "secagg.json", {"benchmark": "secure aggregation bytes and aggregation time",
                                       "machine": machine(), "dim": CORA_GCN_DIM, "bytes": table,
                                       "timing": {"clients": args.clients, "dim": args.time_dim, **timing}})


if __name__ == "__main__":
    main()
