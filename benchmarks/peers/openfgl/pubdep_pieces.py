"""The large pieces of a FedPub / FedDEP CiteSeer round, jitted alone (outside CI; never imported by tests).

    nice python -m benchmarks.peers.openfgl.pubdep_pieces --out benchmarks/peers/openfgl/pubdep_pieces

Shapes are those of the OpenFGL comparison (10 Louvain clients of CiteSeer, F = 3,703, hidden 64):
- Adam with L2 (optax's `add_decayed_weights` + `adam`, as `fgl_jax.federated.client.make_optimizer`)
  over FedPub's first-layer weight and mask [10, 3703, 64], gradients G*M and G*W, 3 local steps, against
  the same update written as one expression per leaf; the count of loop fusions over the
  [10, 3703, 64] arrays XLA:CPU emits for each (one per output: moment 1, moment 2, weight), and the
  largest difference of the results;
- FedPub's proxy product [500, 3703] x [3703, 64] per client (the functional embedding's first layer);
- FedDEP round 0's largest GEMM, DGen's fc_flat [10, 267, 2048] x [10, 2048, 320], its input gradient
  as XLA emits it (contracting the weight's last axis) and against the forward product (same FLOPs).
CPU time per call (median of 7, the variants alternated), single-threaded XLA as in compare.py.
"""
from __future__ import annotations

import argparse
import os
import platform
import time
from pathlib import Path

os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " --xla_cpu_multi_thread_eigen=false").strip()

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import optax  # noqa: E402

C, F, H, STEPS, WD, LR = 10, 3703, 64, 3, 5e-4, 0.01


def adam_pieces():
    w = jax.random.normal(jax.random.key(0), (C, F, H))
    m = jnp.ones((C, F, H))
    g = jax.random.normal(jax.random.key(1), (STEPS, C, F, H)) * 1e-2
    opt = optax.chain(optax.add_decayed_weights(WD), optax.adam(1.0))

    def optax_step(carry, gi):
        p, o = carry
        u, o = jax.vmap(opt.update)({"w": gi * p["m"], "m": gi * p["w"]}, o, p)
        return (optax.apply_updates(p, jax.tree.map(lambda x: x * LR, u)), o), None

    def one_expression_step(carry, gi):
        p, mu, nu, t = carry
        t = t + 1
        bc1, bc2 = 1 - 0.9 ** t, 1 - 0.999 ** t
        grads = {"w": gi * p["m"], "m": gi * p["w"]}
        new = {k: None for k in p}
        mu2, nu2 = {}, {}
        for k in p:
            gk = grads[k] + WD * p[k]
            mu2[k] = 0.9 * mu[k] + 0.1 * gk
            nu2[k] = 0.999 * nu[k] + 0.001 * gk * gk
            new[k] = p[k] - LR * ((mu2[k] / bc1) / (jnp.sqrt(nu2[k] / bc2) + 1e-8))
        return (new, mu2, nu2, t), None

    p = {"w": w, "m": m}
    z = jax.tree.map(jnp.zeros_like, p)
    a = jax.jit(lambda p, o, g: jax.lax.scan(optax_step, (p, o), g)[0][0])
    b = jax.jit(lambda p, z, g: jax.lax.scan(one_expression_step, (p, z, z, jnp.float32(0)), g)[0][0])
    o = jax.vmap(opt.init)(p)
    big = f"f32[{C},{F},{H}]"
    fusions = {name: sum(1 for line in f.lower(*args).compile().as_text().splitlines()
                         if "kind=kLoop" in line and line.split("=")[1].strip().startswith(big))
               for name, f, args in (("optax", a, (p, o, g)), ("one expression", b, (p, z, g)))}
    diff = max(float(jnp.abs(x - y).max()) for x, y in zip(jax.tree.leaves(a(p, o, g)), jax.tree.leaves(b(p, z, g))))
    calls = {"adam optax (3 steps, W and M)": lambda: a(p, o, g),
             "adam one expression (3 steps, W and M)": lambda: b(p, z, g)}
    return calls, {"loop fusions over [10, 3703, 64] per 3-leaf step": fusions, "max |optax - one expression|": diff}


def gemm_pieces():
    x = jax.random.normal(jax.random.key(2), (500, F))
    w = jax.random.normal(jax.random.key(3), (C, F, H))
    proxy = jax.jit(lambda x, w: jax.vmap(lambda wi: x @ wi)(w))
    d = jax.random.normal(jax.random.key(4), (C, 267, 320))
    k = jax.random.normal(jax.random.key(5), (C, 2048, 320))
    h = jax.random.normal(jax.random.key(6), (C, 267, 2048))
    grad_in = jax.jit(lambda d, k: jnp.einsum("cnb,cab->cna", d, k))
    fwd = jax.jit(lambda h, k: jnp.einsum("cna,cab->cnb", h, k))
    return {"proxy product [500,3703]x[3703,64] x 10 clients": lambda: proxy(x, w),
            "DGen fc_flat input gradient [10,267,320]x[10,2048,320]^T": lambda: grad_in(d, k),
            "DGen fc_flat forward [10,267,2048]x[10,2048,320]": lambda: fwd(h, k)}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--out", default=None, help="stem of the .md / .json results (default: print only)")
    args = ap.parse_args(argv)
    t0, load0 = time.time(), os.getloadavg()
    calls, facts = adam_pieces()
    calls.update(gemm_pieces())
    for f in calls.values():
        jax.block_until_ready(f())
    times = {name: [] for name in calls}
    names = list(calls)
    for r in range(args.repeats):
        for name in (names if r % 2 == 0 else names[::-1]):
            c = time.process_time()
            jax.block_until_ready(calls[name]())
            times[name].append(1000 * (time.process_time() - c))
    rows = [{"piece": n, "cpu ms per call (median)": round(float(np.median(t)), 2),
             "all": [round(x, 1) for x in t]} for n, t in times.items()]
    load = [load0, os.getloadavg()]
    lines = ["| piece | CPU ms per call (median) |", "|---|---|"]
    lines += [f"| {r['piece']} | {r['cpu ms per call (median)']} |" for r in rows]
    lines += ["", f"XLA:CPU loop fusions over the [10, 3703, 64] arrays in one Adam step of W and M: "
              f"{facts['loop fusions over [10, 3703, 64] per 3-leaf step']}; "
              f"max |optax - one expression| after 3 steps: {facts['max |optax - one expression|']:.2e}",
              f"Load average at start / end: {[round(v, 2) for v in load[0]]} / {[round(v, 2) for v in load[1]]}; "
              f"jax {jax.__version__}, {platform.platform()}, {time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())}, "
              f"{time.time() - t0:.0f} s."]
    text = "\n".join(lines)
    print(text)
    if args.out:
        from fgl_jax import records
        records.write(args.out + ".json", records.make(
            Path(args.out).name, {"rows": rows, "facts": facts, "loadavg": load}, config=vars(args),
            title="FedPub / FedDEP round pieces, CPU ms per call", provenance=records.provenance(started=t0)),
            markdown="Produced by `python -m benchmarks.peers.openfgl.pubdep_pieces` (see its docstring).\n\n" + text)


if __name__ == "__main__":
    main()
