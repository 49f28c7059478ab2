"""Lumos speed (issue 6 targets): one training epoch over all 22,470 Facebook devices in one jitted
program (<= 1 s, <= 4 GB), tree construction (greedy + MCMC + trees + LDP encoding) <= 30 s, and
epoch time vs number of devices (induced subgraphs on random vertex subsets).

Each configuration runs in its own process (honest compile and peak RSS): the worker prepares
(timing every stage), compiles the epoch step, then reports the median of `repeats` timed calls
after one warm-up for (a) the training step (loss, gradient through every tree and POOL, Adam
update) and (b) a full epoch as `fgl_jax.federated.run` executes it (training step + evaluation
forward pass for best-val selection). Writes benchmarks/results/lumos.json.

    python benchmarks/bench_lumos.py [--data-dir ../shared/data] [--repeats 5] [--quick]
    python benchmarks/bench_lumos.py --summarise   # re-derive the scaling table from lumos.json, no timing

Trimming = greedy + MCMC with T = 30000 (direct arg-max; the chain length that reaches the paper's
max workload 39, see experiments/results/lumos/results.md). encode=program: the LDP table is
drawn inside the jitted epoch from the traced eps (what build_program / run_sweep use) instead of
once on the host; the row shows what that costs per epoch.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # harness.py, also when imported from elsewhere
from harness import (RESULTS as OUT, ROOT, LaunchError, command, emit_result, launch, loadavg,  # noqa: E402
                     machine, peak_rss_mb, read_result, timed, write_record)


def worker(args) -> None:
    t_start = time.perf_counter()
    import jax
    import numpy as np
    sys.path.insert(0, str(ROOT))
    from fgl_jax import load_facebook, random_split
    from fgl_jax.systems.lumos import LumosConfig, lumos_algorithm, minmax_scale, prepare, top_frequent_features

    g = load_facebook(args.data_dir)
    x = minmax_scale(top_frequent_features(g.x, 128))
    if args.devices < g.num_nodes:
        nodes = np.sort(np.random.default_rng(0).choice(g.num_nodes, args.devices, replace=False))
        g = g.subgraph(nodes)
        x = x[nodes]
    g = random_split(g, 0.5, 0.25, 0.25, seed=0)
    cfg = LumosConfig(model=args.backbone, trim=args.trim, mcmc_iters=args.mcmc_iters,
                      mcmc_argmax="direct" if args.mcmc_iters > 2000 else "alg3")
    t0 = time.perf_counter()
    prep = prepare(g, cfg, x_scaled=x, encode=args.encode)
    prep_s = time.perf_counter() - t0
    alg = lumos_algorithm(cfg, g.num_classes)
    data = prep.data
    state = jax.jit(alg.init)(jax.random.PRNGKey(0), data)
    import optax
    from fgl_jax.systems.lumos import lumos_model, node_loss, with_ldp_table
    model = lumos_model(cfg, g.num_classes)
    opt = optax.scale_by_adam()

    def step(state, data, key):
        state, data = with_ldp_table(state, data)   # identity unless encode=program (then the cached table)

        def loss_fn(p):
            _, lg = model.apply(p, data.table, data.trees, train=True, rngs={"dropout": key})
            return node_loss(lg, data.y, data.train_mask)
        loss, grads = jax.value_and_grad(loss_fn)(state.params)
        upd, o = opt.update(grads, state.opt, state.params)
        upd = jax.tree.map(lambda u: -state.hp["lr"] * u, upd)
        return state.replace(params=optax.apply_updates(state.params, upd), opt=o), loss

    out = {}
    for name, fn in (("train_step", step), ("epoch", alg.round)):
        t0 = time.perf_counter()
        compiled = jax.jit(fn).lower(state, data, jax.random.PRNGKey(1)).compile()
        out[f"{name}_compile_s"] = time.perf_counter() - t0
        # one warm-up call with PRNGKey(1), then timed call r with PRNGKey(2 + r)
        keys = iter([jax.random.PRNGKey(k) for k in range(1, 2 + args.repeats)])
        t = timed(lambda: compiled(state, data, next(keys)), args.repeats)
        out[f"{name}_median_s"] = t.median
        out[f"{name}_all_s"] = list(t.wall_s)
        # CPU seconds per call: the work done, robust to other processes competing for the 2 cores
        out[f"{name}_cpu_median_s"] = t.cpu_median
    info = prep.info
    out.update(devices=g.num_nodes, backbone=args.backbone, trim=args.trim, encode=args.encode,
               mcmc_iters=args.mcmc_iters, edges=info["workload"]["edges"],
               tree_nodes=info["tree_nodes"], tree_nodes_padded=info["tree_nodes_padded"],
               max_workload=info["workload"]["max"], prepare_s=prep_s,
               trim_s=info["trim_seconds"], tree_s=info["tree_seconds"], ldp_s=info["ldp_seconds"],
               construction_s=info["trim_seconds"] + info["tree_seconds"] + info["ldp_seconds"],
               # ru_maxrss KiB / 1e6, as every committed row was computed (not GiB), so rows stay comparable
               peak_rss_gb=peak_rss_mb() * 1024 / 1e6,
               process_s=time.perf_counter() - t_start, load_average=loadavg())
    emit_result(out)


def scaling_table(results: list[dict]) -> list[dict]:
    """Epoch time vs number of devices: the GCN + MCMC + host-encoded rows, sorted by devices.

    Derived from the measured rows (no new timing), so the growth with |V| reads off one list.
    """
    rows = [r for r in results if "error" not in r and r.get("backbone") == "gcn" and r.get("trim") == "mcmc"
            and r.get("encode") == "host"]
    out = []
    for r in sorted(rows, key=lambda r: r["devices"]):
        out.append({"devices": r["devices"], "edges": r["edges"], "tree_nodes": r["tree_nodes"],
                    "max_workload": r["max_workload"], "epoch_median_s": round(r["epoch_median_s"], 4),
                    "train_step_median_s": round(r["train_step_median_s"], 4),
                    "us_per_tree_node": round(1e6 * r["epoch_median_s"] / max(1, r["tree_nodes"]), 3),
                    "peak_rss_gb": round(r["peak_rss_gb"], 3), "construction_s": round(r["construction_s"], 2)})
    return out


def print_scaling(table: list[dict]) -> None:
    print("devices | edges | tree nodes | max wl | epoch s | train step s | us/tree node | RSS GB | construction s")
    for t in table:
        print(f"{t['devices']} | {t['edges']} | {t['tree_nodes']} | {t['max_workload']} | {t['epoch_median_s']:.4f} | "
              f"{t['train_step_median_s']:.4f} | {t['us_per_tree_node']:.3f} | {t['peak_rss_gb']:.2f} | "
              f"{t['construction_s']:.1f}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data-dir", default=None)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="only the full-Facebook GCN configuration")
    ap.add_argument("--worker", action="store_true")
    ap.add_argument("--devices", type=int, default=22470)
    ap.add_argument("--backbone", default="gcn")
    ap.add_argument("--trim", default="mcmc")
    ap.add_argument("--encode", default="host", choices=["host", "program"])
    ap.add_argument("--mcmc-iters", type=int, default=30000)
    ap.add_argument("--summarise", action="store_true",
                    help="add/refresh the epoch-vs-devices table in the existing lumos.json (no timing)")
    args = ap.parse_args()
    if args.worker:
        return worker(args)
    if args.summarise:
        payload = json.loads((OUT / "lumos.json").read_text())
        payload["epoch_vs_devices"] = scaling_table(payload["results"])
        write_record(OUT / "lumos.json", payload)
        print_scaling(payload["epoch_vs_devices"])
        return
    configs = [dict(devices=22470, backbone="gcn", trim="mcmc", encode="host")]
    if not args.quick:
        configs += [dict(devices=22470, backbone="gcn", trim="mcmc", encode="program")]
        configs += [dict(devices=d, backbone="gcn", trim="mcmc", encode="host") for d in (1000, 2500, 5000, 10000)]
        configs += [dict(devices=22470, backbone="gcn", trim="none", encode="host"),
                    dict(devices=22470, backbone="gat", trim="mcmc", encode="host")]
    results = []
    for c in configs:
        cmd = [sys.executable, __file__, "--worker", "--repeats", str(args.repeats if c["backbone"] == "gcn" else 2),
               "--devices", str(c["devices"]), "--backbone", c["backbone"], "--trim", c["trim"],
               "--encode", c["encode"]]
        if args.data_dir:
            cmd += ["--data-dir", args.data_dir]
        try:
            wall, stdout = launch(cmd)
        except LaunchError as e:  # a failed configuration is recorded and the others still run
            print(e.stderr[-2000:], file=sys.stderr)
            results.append({**c, "error": e.stderr[-500:]})
            continue
        r = read_result(stdout)
        r["wall_s"] = wall
        results.append(r)
        print(f"{c}: train step {r['train_step_median_s']:.3f} s (cpu {r['train_step_cpu_median_s']:.3f} s), "
              f"epoch {r['epoch_median_s']:.3f} s (cpu {r['epoch_cpu_median_s']:.3f} s), load {r['load_average']}, "
              f"compile {r['train_step_compile_s']:.1f} s, construction {r['construction_s']:.1f} s, "
              f"RSS {r['peak_rss_gb']:.2f} GB", flush=True)
    payload = {"targets": {"epoch_s": 1.0, "peak_rss_gb": 4.0, "construction_s": 30.0},
               "results": results, "epoch_vs_devices": scaling_table(results),
               "machine": machine(),  # its loadavg is the load at the end
               "command": command(__file__), "finished": time.strftime("%Y-%m-%d %H:%M:%S %Z")}
    path = write_record(OUT / "lumos.json", payload)
    print_scaling(payload["epoch_vs_devices"])
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
