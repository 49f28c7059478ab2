"""Benchmark: Lagrange coded secure aggregation (HiFGL SecMP's coding path). Results -> benchmarks/results/lcc.json.

Workload (Cora-sized, synthetic): N = 2,708 nodes with d = 64 quantised features (p = 2^31 - 1, f = 16) and
E = 10,556 random directed edges. One "pipeline" call does what one SecMP layer does to the messages:

    gather the source rows -> sample fresh masks per edge -> encode into T+1 shares -> exact segment-sum of
    the shares per target in F_p -> decode every target's aggregate

for T = 1 and T = 3, with the Mersenne fold and with the integer-remainder ("%") reduction. For context it also
times the components (mask sampling, encoding, aggregation + decoding), the same pipeline in float64 real-LCC
mode and the plain float32 gather + segment_sum that SecMP replaces.

All variants run in one process (the notes warn that absolute numbers vary by up to 2x between processes) and
are timed round-robin, so that load from other processes on the shared 2-core machine hits all of them alike.
Each time is the median of ``--repeats`` executions after ``--warmup`` executions of the compiled function.

    python benchmarks/bench_lcc.py [--repeats 9] [--warmup 2]
"""
from __future__ import annotations

import argparse
import datetime
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))  # harness.py, also when imported from elsewhere
from harness import RESULTS, loadavg, machine, write_record  # noqa: E402

OUT = RESULTS / "lcc.json"

from fgl_jax import field as F  # noqa: E402
from fgl_jax import lcc as L  # noqa: E402

P = F.MERSENNE_31
N, D, E = 2708, 64, 10556
FRAC_BITS = 16


def make_data(seed: int = 0) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    src = rng.integers(0, N, size=E).astype(np.int32)
    dst = rng.integers(0, N, size=E).astype(np.int32)
    h = (rng.normal(0.0, 0.5, size=(N, D))).astype(np.float32)
    max_in = int(np.bincount(dst, minlength=N).max())
    F.check_range(h, FRAC_BITS, P, n_terms=max_in)  # the overflow guard SecMP runs before encoding
    h_q = np.asarray(F.quantize(h, FRAC_BITS, P))
    return {"src": src, "dst": dst, "h": h, "h_q": h_q, "max_in_degree": max_in}


def build_variants(data: dict[str, Any]) -> dict[str, tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]]]:
    src, dst = jnp.asarray(data["src"]), jnp.asarray(data["dst"])
    variants: dict[str, tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]]] = {}
    for T in (1, 3):
        mu = L.sample_mu(jax.random.key(100 + T), T, P)
        for red in ("mersenne", "mod"):
            U = L.encode_matrix(mu, red)
            lam = L.decode_coeffs(mu, red)

            def pipeline(key, h_q, src, dst, U, lam, T=T, red=red):
                msg = h_q[src]  # [E, d]; field elements < 2^31 also fit the int32 this jit may carry them in
                z = L.sample_masks(key, T, msg.shape, P, red)  # [T, E, d], fresh per edge
                shares = L.encode(msg, z, U, P, red)  # [T+1, E, d]
                agg = L.field_segment_sum(shares, dst, N, P, axis=1, reduction=red)  # [T+1, N, d]
                return L.decode(agg, lam, P, red)  # [N, d]

            def masks(key, T=T, red=red):
                return L.sample_masks(key, T, (E, D), P, red)

            def encode_only(h_q, z, src, U, red=red):
                return L.encode(h_q[src], z, U, P, red)

            def agg_decode(shares, dst, lam, red=red):
                return L.decode(L.field_segment_sum(shares, dst, N, P, axis=1, reduction=red), lam, P, red)

            key = jax.random.key(7)
            z = masks(key)
            shares = L.encode(data["h_q"][data["src"]], z, U, P, red)
            meta = {"T": T, "reduction": red, "mode": "field", "prng": "threefry"}
            variants[f"pipeline T={T} {red}"] = (jax.jit(pipeline), (key, data["h_q"], src, dst, U, lam),
                                                 {**meta, "part": "pipeline"})
            variants[f"masks T={T} {red}"] = (jax.jit(masks), (key,), {**meta, "part": "masks"})
            if red == "mersenne":
                # Same code with an "rbg" PRNG key (XLA's RngBitGenerator instead of threefry): the caller's
                # choice of key, shown because mask generation dominates the pipeline.
                rkey = jax.random.key(7, impl="rbg")
                variants[f"pipeline T={T} {red} rbg-key"] = (jax.jit(pipeline), (rkey, data["h_q"], src, dst, U, lam),
                                                             {**meta, "part": "pipeline", "prng": "rbg"})
                variants[f"masks T={T} {red} rbg-key"] = (jax.jit(masks), (rkey,),
                                                          {**meta, "part": "masks", "prng": "rbg"})
            variants[f"encode T={T} {red}"] = (jax.jit(encode_only), (data["h_q"], z, src, U),
                                               {**meta, "part": "encode"})
            variants[f"segsum+decode T={T} {red}"] = (jax.jit(agg_decode), (shares, dst, lam),
                                                      {**meta, "part": "segsum+decode"})

        mu_r = L.sample_mu_real(jax.random.key(200 + T), T)
        U_r, lam_r = L.encode_matrix(mu_r), L.decode_coeffs(mu_r)

        def pipeline_real(key, h, src, dst, U, lam, T=T):
            msg = h[src]
            z = L.sample_masks_real(key, T, msg.shape)
            shares = L.encode_real(msg, z, U)
            return L.decode_real(L.segment_sum_real(shares, dst, N, axis=1), lam)

        variants[f"pipeline T={T} real-f64"] = (jax.jit(pipeline_real),
                                                (jax.random.key(7), data["h"], src, dst, U_r, lam_r),
                                                {"T": T, "reduction": None, "mode": "real-f64", "part": "pipeline", "prng": "threefry"})

    def plain(h, src, dst):
        return jax.ops.segment_sum(h[src], dst, num_segments=N)

    variants["plain f32 gather+segment_sum"] = (jax.jit(plain), (data["h"], src, dst),
                                                {"T": 0, "reduction": None, "mode": "plain-f32", "part": "pipeline", "prng": None})
    return variants


def verify(data: dict[str, Any], variants) -> dict[str, Any]:
    """Check the coded pipelines against an exact NumPy reference before timing them."""
    ref = np.zeros((N, D), np.int64)
    np.add.at(ref, data["dst"], data["h_q"][data["src"]].astype(np.int64))  # < 2^31 * 10556: fits int64
    ref %= P
    plain = np.zeros((N, D), np.float64)
    np.add.at(plain, data["dst"], data["h"][data["src"]].astype(np.float64))
    out: dict[str, Any] = {}
    for name, (fn, args, meta) in variants.items():
        if meta["part"] != "pipeline" or meta["mode"] == "plain-f32":
            continue
        res = np.asarray(fn(*args))
        if meta["mode"] == "field":
            assert np.array_equal(res, ref), name
            deq = np.asarray(F.dequantize(res, FRAC_BITS, P, dtype=jnp.float64))
            out[name] = {"bit_exact": True, "max_abs_err_vs_float": float(np.abs(deq - plain).max())}
        else:
            out[name] = {"max_abs_err_vs_float": float(np.abs(res - plain).max())}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=9)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args()

    info = machine()  # its loadavg is the load at the start
    data = make_data()
    variants = build_variants(data)

    # Not harness.timed: the variants are timed round-robin (one call of each per pass), so that load from
    # other processes hits all of them alike, rather than one variant's repeats back to back.
    compile_s: dict[str, float] = {}
    for name, (fn, a, _) in variants.items():
        t0 = time.perf_counter()
        for _ in range(max(args.warmup, 1)):  # the first call compiles
            jax.block_until_ready(fn(*a))
        compile_s[name] = time.perf_counter() - t0
    checks = verify(data, variants)

    times: dict[str, list[float]] = {name: [] for name in variants}
    for _ in range(args.repeats):  # round-robin over variants
        for name, (fn, a, _) in variants.items():
            t0 = time.perf_counter()
            jax.block_until_ready(fn(*a))
            times[name].append(time.perf_counter() - t0)

    rows = []
    for name, (_, _, meta) in variants.items():
        med = statistics.median(times[name])
        rows.append({
            "name": name, **meta,
            "median_ms": 1e3 * med,
            "min_ms": 1e3 * min(times[name]),
            "all_ms": [1e3 * t for t in times[name]],
            # throughput in message elements (E * d) per second; the shares are (T+1) times as many
            "M_msg_elements_per_s": E * D / med / 1e6,
            "warmup_incl_compile_s": compile_s[name],
        })
    by = {r["name"]: r for r in rows}
    speedup = {
        f"T={T} {part}": by[f"{part} T={T} mod"]["median_ms"] / by[f"{part} T={T} mersenne"]["median_ms"]
        for T in (1, 3) for part in ("pipeline", "masks", "encode", "segsum+decode")
    }
    info["loadavg_end"] = loadavg()
    result = {
        "benchmark": "lcc secure aggregation (encode + field segment-sum + decode)",
        "timestamp": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "machine": info,
        "workload": {"nodes": N, "dim": D, "edges": E, "p": P, "frac_bits": FRAC_BITS,
                     "graph": "synthetic uniform random directed edges (seed 0), Cora-sized",
                     "max_in_degree": data["max_in_degree"], "repeats": args.repeats, "warmup": args.warmup},
        "checks": checks,
        "results": rows,
        "speedup_mersenne_over_mod": speedup,
    }
    write_record(args.out, result)

    print(f"{'variant':42s} {'median ms':>10s} {'min ms':>8s} {'M elem/s':>9s}")
    for r in rows:
        print(f"{r['name']:42s} {r['median_ms']:10.2f} {r['min_ms']:8.2f} {r['M_msg_elements_per_s']:9.1f}")
    print("Mersenne speed-up over %: " + ", ".join(f"{k} {v:.2f}x" for k, v in speedup.items()))
    print(f"load average start {info['loadavg']}, end {info['loadavg_end']}; wrote {args.out}")


if __name__ == "__main__":
    main()
