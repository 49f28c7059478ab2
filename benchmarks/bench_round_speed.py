"""Per-round speed, old vs new side by side in one process (issue 31, item 4). -> benchmarks/results/round_speed.json

Three workloads, each compiled twice in this process, "before" (an earlier code path, rebuilt here:
FedAvg's first layer on SparseFeatures, HiFGL's autodiff first-layer gradient and jax.random's
Threefry masks; not rebuilt, so "before" shares them:
HiFGL's SecMP-only evaluation forward and the division-free quantize, ~0.4 ms per CiteSeer layer call)
and "after" (the library as it is), then timed alternately (before, after, before, ...), so both see
the same machine load. Reported per variant: median wall and median process-CPU time per round, and
the after/before ratios; the load average before and after; and how far the numbers moved.

  fedavg : FedAvg-GCN on Cora, 10 Louvain clients, 3 local Adam steps, evaluation every round
           (the compiled scan of `make_scan`, as bench_fedavg.py times it)
  hifgl  : HiFGL-GCN on CiteSeer, 5 silos, T = 1: field mode and plain mode (the ratio the issue sets)
  lumos  : one Lumos GCN epoch over all 22,470 Facebook devices (training step + evaluation forward)

    python benchmarks/bench_round_speed.py [--data-dir DIR] [--repeats 7] [--only fedavg,hifgl,lumos,floor]
    (floor_fedavg: the FedAvg floor profile alone)
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

sys.path.insert(0, str(Path(__file__).resolve().parent))  # harness.py, also when imported from elsewhere
from harness import RESULTS, ROOT, command, loadavg, machine, peak_rss_mb, write_record  # noqa: E402

sys.path.insert(0, str(ROOT))
from fgl_jax import engine, x64_scope  # noqa: E402

Tracker, make_scan = engine.Tracker, engine.make_scan  # the compiled round loop (internal namespace)


# ---------------------------------------------------------------------------------------------------------
# "before": the previous code paths, rebuilt in this process

def without_order(batch):
    """A client batch whose sparse features have no column order: the autodiff (scatter-add) weight gradient."""
    f = batch.features
    return batch.replace(features=f.replace(order=None)) if hasattr(f, "order") else batch


def sparse_fed_data(prep, cfg):
    """FedAvg's FedData with the first layer on SparseFeatures (column order): what `prepare` gave
    before the baseline algorithms got EllFeatures (`fgl_jax.batch.with_ell_features`)."""
    from fgl_jax import build_client_batch, make_fed_data
    return make_fed_data(build_client_batch(prep.graph, prep.partition.assignment, cfg.clients))


@contextlib.contextmanager
def previous_hifgl():
    """Trace HiFGL's masks as before: pairs of jax.random uint32 draws (fgl_jax.lcc.MASK_GENERATOR "jax")."""
    import fgl_jax
    saved = fgl_jax.lcc.MASK_GENERATOR
    fgl_jax.lcc.MASK_GENERATOR = "jax"
    try:
        yield
    finally:
        fgl_jax.lcc.MASK_GENERATOR = saved


# ---------------------------------------------------------------------------------------------------------

def alternate(variants: dict, repeats: int, per_call: int) -> dict:
    """Time every variant's `call()` `repeats` times, alternating variants; per-round medians (ms)."""
    for v in variants.values():  # one untimed call each (first-call allocations)
        jax.block_until_ready(v["call"]())
    wall = {k: [] for k in variants}
    cpu = {k: [] for k in variants}
    for _ in range(repeats):
        for k, v in variants.items():
            t0, c0 = time.perf_counter(), time.process_time()
            jax.block_until_ready(v["call"]())
            wall[k].append(1000 * (time.perf_counter() - t0) / per_call)
            cpu[k].append(1000 * (time.process_time() - c0) / per_call)
    return {k: {"wall_ms_median": statistics.median(wall[k]), "cpu_ms_median": statistics.median(cpu[k]),
                "wall_ms_all": wall[k], "cpu_ms_all": cpu[k]} for k in variants}


def max_diff(a, b) -> float:
    return max(float(np.max(np.abs(np.asarray(x, np.float64) - np.asarray(y, np.float64))))
               for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b)))


def bench_fedavg(args) -> dict:
    from fgl_jax.systems.baseline import RunConfig, algorithm_from_config, prepare
    cfg = RunConfig(dataset="cora", data_dir=args.data_dir, algorithm="fedavg", model="gcn", clients=10,
                    partition="louvain", split="standard", rounds=args.rounds, local_steps=3, lr=0.01,
                    weight_decay=5e-4, hidden=64, seed=0)
    prep = prepare(cfg)
    alg = algorithm_from_config(cfg, prep.graph)
    # before: SparseFeatures (gather + segment sum, column-ordered weight gradient); after: prepare's
    # EllFeatures (unrolled gathers and dense adds)
    datas = {"before": sparse_fed_data(prep, cfg), "after": prep.data}
    state = jax.jit(alg.init)(jax.random.key(0), prep.data)
    variants, outs, compile_cpu_s = {}, {}, {}
    for name, data in datas.items():
        c0 = time.process_time()
        prog = make_scan(alg, cfg.rounds).lower(state, Tracker.empty(), data, jax.random.key(1), jnp.int32(0)).compile()
        compile_cpu_s[name] = time.process_time() - c0
        call = (lambda p, d: lambda: p(state, Tracker.empty(), d, jax.random.key(1), jnp.int32(0)))(prog, data)
        variants[name] = {"call": call}
        outs[name] = jax.block_until_ready(call())
    res = alternate(variants, args.repeats, cfg.rounds)
    return {"workload": f"FedAvg-GCN, Cora, 10 Louvain clients, 3 local steps, eval every round, {cfg.rounds}-round scan",
            "variants": res, "unit": "ms/round",
            "compile_cpu_s": compile_cpu_s,
            "max_abs_diff_params": max_diff(outs["before"][0].server, outs["after"][0].server),
            "max_abs_diff_metrics": max_diff(outs["before"][2], outs["after"][2]),
            "final_test_acc": {k: float(o[2]["test_acc"][-1]) for k, o in outs.items()}}


def bench_hifgl(args) -> dict:
    from fgl_jax import load
    from fgl_jax.systems.hifgl import HiFGLConfig, hifgl, prepare
    graph = load("citeseer", data_dir=args.data_dir)
    variants, outs = {}, {}
    for mode in ("plain", "field"):
        cfg = HiFGLConfig(dataset="citeseer", clients=5, mode=mode, T=1)
        _, _, data = prepare(cfg, graph)
        alg = hifgl(cfg, graph.num_features, graph.num_classes)
        old_data = data.replace(features=data.features.replace(order=None))
        for when, d, ctx in (("before", old_data, previous_hifgl), ("after", data, contextlib.nullcontext)):
            jax.clear_caches()   # the field functions' inner jits would otherwise reuse the other variant's trace
            with x64_scope(alg), ctx():
                state = jax.jit(alg.init)(jax.random.key(0), d)
                prog = make_scan(alg, args.hifgl_rounds).lower(state, Tracker.empty(), d, jax.random.key(1),
                                                               jnp.int32(0)).compile()

            def call(p=prog, s=state, d=d, alg=alg):
                with x64_scope(alg):
                    return p(s, Tracker.empty(), d, jax.random.key(1), jnp.int32(0))
            variants[f"{mode}_{when}"] = {"call": call}
            outs[f"{mode}_{when}"] = jax.block_until_ready(call())
    res = alternate(variants, args.repeats, args.hifgl_rounds)
    ratio = {when: res[f"field_{when}"]["cpu_ms_median"] / res[f"plain_{when}"]["cpu_ms_median"]
             for when in ("before", "after")}
    ratio_wall = {when: res[f"field_{when}"]["wall_ms_median"] / res[f"plain_{when}"]["wall_ms_median"]
                  for when in ("before", "after")}
    return {"workload": f"HiFGL-GCN, CiteSeer, 5 silos, T=1, {args.hifgl_rounds}-epoch scan", "unit": "ms/epoch",
            "variants": res, "field_over_plain_cpu": ratio, "field_over_plain_wall": ratio_wall,
            "max_abs_diff_params": {m: max_diff(outs[f"{m}_before"][0].params, outs[f"{m}_after"][0].params)
                                    for m in ("plain", "field")},
            "max_abs_diff_metrics": {m: max_diff(outs[f"{m}_before"][2], outs[f"{m}_after"][2])
                                     for m in ("plain", "field")}}


_PREPARED: dict = {}   # what a later section can reuse (Lumos's trees: a minute of preparation under load)


def bench_lumos(args) -> dict:
    from fgl_jax import load_facebook, random_split
    from fgl_jax.systems.lumos import LumosConfig, lumos_algorithm, minmax_scale, prepare, top_frequent_features
    g = load_facebook(args.data_dir)
    x = minmax_scale(top_frequent_features(g.x, 128))
    g = random_split(g, 0.5, 0.25, 0.25, seed=0)
    cfg = LumosConfig(model="gcn", trim="mcmc", mcmc_iters=30000, mcmc_argmax="direct")
    prep = prepare(g, cfg, x_scaled=x, encode="host")
    _PREPARED["lumos_trees"] = prep.data.trees
    alg = lumos_algorithm(cfg, g.num_classes)
    state = jax.jit(alg.init)(jax.random.PRNGKey(0), prep.data)
    prog = jax.jit(alg.round).lower(state, prep.data, jax.random.PRNGKey(1)).compile()
    res = alternate({"after": {"call": lambda: prog(state, prep.data, jax.random.PRNGKey(1))}}, args.repeats, 1)
    return {"workload": "Lumos GCN epoch (training step + evaluation forward), all 22,470 Facebook devices, "
                        "MCMC trimming", "unit": "ms/epoch", "variants": res,
            "tree_nodes": int(prep.data.trees.num_nodes), "tree_edges": int(prep.data.trees.graph.senders.shape[0])}


# ---------------------------------------------------------------------------------------------------------
# Where the floor is: the indexed primitives each round is made of, timed alone at the workload's sizes

def time_alone(fn, carry, consts, repeats: int, inner: int = 20) -> dict:
    """CPU and wall ms of one call of fn(carry, consts), from a compiled scan of `inner` dependent calls.
    Data goes in as jit arguments, never closed over (XLA would fold constant inputs at compile time)."""
    def run(c, k):
        def body(c, i):
            out = fn(c, k)
            return jax.tree.map(lambda a: a + (1e-30 * jnp.sum(out)).astype(a.dtype), c), None
        return jax.lax.scan(body, c, jnp.arange(inner))[0]
    prog = jax.jit(run).lower(carry, consts).compile()
    jax.block_until_ready(prog(carry, consts))
    wall, cpu = [], []
    for _ in range(repeats):
        t0, c0 = time.perf_counter(), time.process_time()
        jax.block_until_ready(prog(carry, consts))
        wall.append(1000 * (time.perf_counter() - t0) / inner)
        cpu.append(1000 * (time.process_time() - c0) / inner)
    return {"wall_ms": statistics.median(wall), "cpu_ms": statistics.median(cpu)}


def floor_fedavg(args) -> dict:
    """FedAvg round = 3 local steps x 10 clients + one evaluation forward; per-pass costs of its parts."""
    import optax
    from fgl_jax import feature_matmul, gcn_propagate
    from fgl_jax.systems.baseline import RunConfig, prepare
    cfg = RunConfig(dataset="cora", data_dir=args.data_dir, algorithm="fedavg", model="gcn", clients=10,
                    partition="louvain", split="standard", rounds=1, local_steps=3, hidden=64, seed=0)
    prep = prepare(cfg)
    b = sparse_fed_data(prep, cfg).train
    ell = prep.data.train.features
    c, n, f = b.num_clients, b.num_nodes, b.features.row.shape[-1]
    w = jax.random.normal(jax.random.key(0), (c, 1433, 64))
    dz = jax.random.normal(jax.random.key(1), (c, n, 64))
    fm = lambda x, w: feature_matmul(x, w, n)
    vjp_w = lambda x, w, d: jax.vmap(lambda x, w, d: jax.vjp(lambda w: fm(x, w), w)[1](d)[0])(x, w, d)
    prop = lambda h, g: jax.vmap(lambda h, s, r, m: gcn_propagate(h, s, r, m, n))(h, g.senders, g.receivers, g.edge_mask)
    adam = optax.chain(optax.add_decayed_weights(5e-4), optax.adam(1.0))
    o = jax.vmap(adam.init)(w)
    parts = {
        "layer-1 forward X W, EllFeatures, 10 clients":
            (lambda w, x: jax.vmap(fm)(x, w), w, ell, 4),
        "layer-1 weight gradient X^T dZ, EllFeatures":
            (lambda d, k: vjp_w(k[0], k[1], d), dz, (ell, w), 3),
        "layer-1 forward X W, SparseFeatures (gather + segment sum, before)":
            (lambda w, x: jax.vmap(fm)(x, w), w, b.features, 0),
        "layer-1 weight gradient X^T dZ, SparseFeatures column order (before)":
            (lambda d, k: vjp_w(k[0], k[1], d), dz, (b.features, w), 0),
        "GCN propagation of [N, 64] (forward, or its VJP)":
            (lambda h, k: prop(h, k), dz, b, 7),
        "Adam step on the 10 clients' first-layer weights":
            (lambda g, k: jax.vmap(adam.update)(g, k, g)[0], w, o, 3),
    }
    out = {}
    for name, (fn, carry, consts, count) in parts.items():
        out[name] = {**time_alone(fn, carry, consts, args.repeats), "per_round": count}
    out["sum_of_counted_parts_cpu_ms"] = sum(v["cpu_ms"] * v["per_round"] for v in out.values())
    out["sizes"] = {"clients": c, "padded_nodes": n, "padded_nnz": f, "padded_edges": int(b.graph.senders.shape[-1])}
    return out


def floor_lumos(args, trees=None) -> dict:
    """The indexed primitives of a Lumos GCN epoch at its sizes (T tree nodes, E directed tree edges, width 16)."""
    from fgl_jax import load_facebook, random_split
    from fgl_jax.systems.lumos import LumosConfig, minmax_scale, prepare, top_frequent_features
    if trees is None:
        g = load_facebook(args.data_dir)
        x = minmax_scale(top_frequent_features(g.x, 128))
        g = random_split(g, 0.5, 0.25, 0.25, seed=0)
        trees = prepare(g, LumosConfig(model="gcn", trim="mcmc", mcmc_iters=30000, mcmc_argmax="direct"),
                        x_scaled=x, encode="host").data.trees
    t = trees.num_nodes
    s, r = trees.graph.senders, trees.graph.receivers
    h = jax.random.normal(jax.random.key(0), (t, 16))
    e = jax.random.normal(jax.random.key(1), (s.shape[0], 16))
    parts = {
        "gather h[senders], [E, 16]": (lambda h, k: h[k[0]], h),
        "segment sum over receivers (sorted), [E, 16] -> [T, 16]":
            (lambda e, k: jax.ops.segment_sum(e, k[1], t, indices_are_sorted=True), e),
        "segment sum over senders (unsorted), [E, 16] -> [T, 16]": (lambda e, k: jax.ops.segment_sum(e, k[0], t), e),
        "elementwise e * 2 + 1 over [E, 16] (one memory pass)": (lambda e, k: e * 2.0 + 1.0, e),
    }
    out = {name: time_alone(fn, arg, (s, r), args.repeats, inner=5) for name, (fn, arg) in parts.items()}
    out["sizes"] = {"tree_nodes": t, "tree_edges": int(s.shape[0])}
    return out


TARGETS = {"fedavg_ms_per_round": 8.0, "hifgl_field_ms_per_epoch": 45.0, "hifgl_field_over_plain": 1.3,
           "lumos_epoch_ms": 300.0}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data-dir", default=None)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--rounds", type=int, default=50, help="FedAvg rounds per timed call")
    ap.add_argument("--hifgl-rounds", type=int, default=10, help="HiFGL epochs per timed call")
    ap.add_argument("--only", default="fedavg,hifgl,lumos,floor")
    ap.add_argument("--out", default="round_speed", help="record file stem in benchmarks/results (the sections "
                    "this invocation measures replace those in the record; the others are kept)")
    args = ap.parse_args()
    load_start = loadavg()
    sections: dict = {}  # section -> its result; "floor/<workload>" for the floor profiles

    def write() -> Path:
        # every finished section at once (a long invocation may be stopped); the record's other
        # sections (measured by earlier invocations with another --only) are kept
        return write_record(RESULTS / f"{args.out}.json", {"command": command(__file__), "sections": sections,
                                                           "targets": TARGETS, "machine": machine()},
                            config={"repeats": args.repeats, "rounds": args.rounds, "hifgl_rounds": args.hifgl_rounds},
                            title="Per-round speed, before vs after, alternated in one process", parts="sections")

    for name in args.only.split(","):
        if name in ("floor", "floor_fedavg"):
            floor = {"fedavg": floor_fedavg(args)}
            if name == "floor":
                floor["lumos"] = floor_lumos(args, _PREPARED.get("lumos_trees"))
            for w, parts in floor.items():
                sections[f"floor/{w}"] = {"parts": parts, "load_start": load_start, "load_end": loadavg(),
                                          "peak_rss_mb": peak_rss_mb()}
                for k, v in parts.items():
                    print(f"floor {w}: {k}: {v}", flush=True)
            write()
            continue
        r = {"fedavg": bench_fedavg, "hifgl": bench_hifgl, "lumos": bench_lumos}[name](args)
        sections[name] = {**r, "load_start": load_start, "load_end": loadavg(), "peak_rss_mb": peak_rss_mb()}
        write()
        for v, t in r["variants"].items():
            print(f"{name:7s} {v:14s} wall {t['wall_ms_median']:8.1f} ms  cpu {t['cpu_ms_median']:8.1f} ms  ({r['unit']})",
                  flush=True)
    print(f"wrote {write()} (python benchmarks/render.py renders its table)")


if __name__ == "__main__":
    main()
