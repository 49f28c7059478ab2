"""Benchmark: what batch norm costs in a graph classifier's training step (issue 52: FedBN's round cost
fgl_jax +41 % over FedAvg's, PFLlib's nothing measurable). Results -> benchmarks/results/norm.json.

Three measurements, each timed round-robin in one process on one thread (process CPU time, medians of
`--repeats` rounds of `--calls` calls after a compiling call):

- step: one jitted SGD step (forward, gradient, update) of the harness's GIN graph classifier
  (`--norm none` against `--norm batch`, 2 layers x 64, dropout 0.5, mean readout) on the first
  mini-batch of `--graphs` PROTEINS graphs that fgl_jax packs for one client;
- formula: the masked batch norm alone, forward and gradient, on h [N, 64] of that mini-batch's N
  nodes: the form fgl_jax used before (masked column sums, `(h - mean) * rsqrt(var + eps) * scale +
  shift`) against the one `fgl_jax.nn.layers.normalise` uses now (`mask @ h` sums, `h * a + (shift -
  mean * a)`), written out here as the two formulas they are, with their largest output difference;
- round: whole federated rounds (`fgl_jax.run`, compilation excluded) of the PFLlib comparison's
  PROTEINS setting (10 clients, Dirichlet 0.5, one mini-batch of all a client's training graphs, GIN
  2 x 64, 5 local SGD epochs at lr 0.05, pooled evaluation) for FedAvg without normalisation, FedAvg
  with `--norm batch` and FedBN with `--norm batch`: what batch norm costs a round, and what FedBN
  costs beyond it.

    FGL_JAX_DATA=/path/to/shared/data python benchmarks/bench_norm.py [--graphs 128] [--repeats 7] [--rounds 10]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " --xla_cpu_multi_thread_eigen=false "
                           "intra_op_parallelism_threads=1").strip()   # one thread, before jax loads

sys.path.insert(0, str(Path(__file__).resolve().parent))  # harness.py
sys.path.insert(1, str(Path(__file__).resolve().parents[1]))  # benchmarks.peers
from harness import RESULTS, command, loadavg, machine, write_record  # noqa: E402

EPS = 1e-5


def previous_form(h, m, scale, shift):
    """Masked batch norm as fgl_jax wrote it before: column sums of h * mask."""
    import jax
    import jax.numpy as jnp
    mm = m[:, None]
    count = jnp.maximum(m.sum(), 1.0)
    mean = (h * mm).sum(0) / count
    var = (((h - mean) ** 2) * mm).sum(0) / count
    return (h - mean) * jax.lax.rsqrt(var + EPS) * scale + shift


def current_form(h, m, scale, shift):
    """Masked batch norm as `fgl_jax.nn.layers.normalise` writes it now: mask @ h sums, one multiply-add."""
    import jax
    import jax.numpy as jnp
    count = jnp.maximum(m.sum(), 1.0)
    mean = (m @ h) / count
    var = (m @ ((h - mean) ** 2)) / count
    a = jax.lax.rsqrt(var + EPS) * scale
    return h * a + (shift - mean * a)


def step_fn(norm: str, graphs: int):
    """(jitted step, params) of the GIN classifier with normalisation `norm` on PROTEINS' first mini-batch."""
    import jax
    import jax.numpy as jnp
    import numpy as np
    import optax
    from fgl_jax import RunConfig
    from fgl_jax.systems.baseline import graph_model, prepare
    cfg = RunConfig(dataset="PROTEINS", task="graph_cls", clients=1, graph_batch_size=graphs, hidden=64,
                    num_layers=2, dropout=0.5, graph_model="gin", graph_pooling="mean", client_exec="vmap", norm=norm)
    prep = prepare(cfg)
    ev = prep.data.eval
    b = jax.tree.map(lambda v: jnp.asarray(np.asarray(v)[0, 0]),
                     ev.replace(classes=None, step_class=None, step_slot=None, client_mask=ev.client_mask[:1, None]))
    model = graph_model(cfg, prep.graph)
    params = model.init(jax.random.key(0), b)["params"]

    @jax.jit
    def step(p, key, b):   # the batch an argument: XLA would constant-fold a closed-over one
        def loss(p):
            logits = model.apply({"params": p}, b, train=True, rngs={"dropout": key})
            per = optax.softmax_cross_entropy_with_integer_labels(logits, b.y)
            return (per * b.graph_mask).sum() / b.graph_mask.sum()
        return jax.tree.map(lambda w, g: w - 0.01 * g, p, jax.grad(loss)(p))
    return step, params, b


ROUND_VARIANTS = (("fedavg", "none"), ("fedavg", "batch"), ("fedbn", "batch"))


def round_fn(algorithm: str, norm: str, rounds: int):
    """A call that runs `rounds` federated rounds of the PROTEINS PFLlib setting (compiled on the first call)."""
    import jax
    import numpy as np
    from fgl_jax import RunConfig, run
    from fgl_jax.systems.baseline import algorithm_from_config, graph_split, prepare
    cfg = RunConfig(dataset="PROTEINS", task="graph_cls", algorithm=algorithm, norm=norm, clients=10,
                    partition="dirichlet", dirichlet_beta=0.5, graph_model="gin", graph_pooling="mean", hidden=64,
                    num_layers=2, dropout=0.0, local_steps=5, optimizer="sgd", lr=0.05, momentum=0.0,
                    weight_decay=0.0, rounds=rounds, eval_average="pooled")
    from benchmarks.peers.pfllib.compare import standardise   # the comparison's z-scored features
    gs = standardise(prepare(cfg).graph)
    assignment, masks = graph_split(cfg, gs)
    cfg = cfg.replace(graph_batch_size=int(np.bincount(assignment[masks["train"]]).max()))
    prep = prepare(cfg, gs)
    alg = algorithm_from_config(cfg, prep.graph)
    return lambda: run(alg, prep.data, jax.random.key(0), rounds)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--graphs", type=int, default=128, help="graphs in the mini-batch (OpenFGL's batch size)")
    ap.add_argument("--repeats", type=int, default=7, help="timed repeats per variant, alternating (medians reported)")
    ap.add_argument("--calls", type=int, default=5, help="calls per timed round")
    ap.add_argument("--rounds", type=int, default=10, help="rounds per timed call of the round section (0: skip it)")
    ap.add_argument("--out", default=str(RESULTS / "norm.json"), help="where to write the results")
    args = ap.parse_args(argv)
    import jax
    import jax.numpy as jnp
    import numpy as np

    variants, b = {}, None
    for norm in ("none", "batch"):
        step, params, b = step_fn(norm, args.graphs)
        variants[f"step norm={norm}"] = (lambda s=step, p=params, k=jax.random.key(0), b=b: s(p, k, b))
    rng = np.random.default_rng(0)
    h = jnp.asarray(rng.normal(1.0, 2.0, size=(b.x.shape[0], 64)).astype(np.float32))
    m = jnp.asarray(b.node_mask, jnp.float32)
    scale, shift = jnp.ones(64), jnp.zeros(64)
    for name, form in (("previous", previous_form), ("current", current_form)):
        fwd_bwd = jax.jit(jax.value_and_grad(lambda h, m, f=form: (f(h, m, scale, shift) ** 2).sum()))
        variants[f"formula {name}"] = (lambda g=fwd_bwd: g(h, m))
    gap = float(jnp.max(jnp.abs(previous_form(h, m, scale, shift) - current_form(h, m, scale, shift))))
    calls = {k: args.calls for k in variants}
    if args.rounds:
        for algorithm, norm in ROUND_VARIANTS:   # per call: `rounds` rounds; reported per round
            variants[f"round {algorithm} norm={norm}"] = round_fn(algorithm, norm, args.rounds)
            calls[f"round {algorithm} norm={norm}"] = 1
    for fn in variants.values():
        jax.block_until_ready(fn())   # compiles
    load_before, cpu = loadavg(), {k: [] for k in variants}
    for _ in range(args.repeats):
        for k, fn in variants.items():
            c = time.process_time()
            for _ in range(calls[k]):
                jax.block_until_ready(fn())
            per = args.rounds if k.startswith("round") else calls[k]
            cpu[k].append(1e3 * (time.process_time() - c) / per)
    med = {k: statistics.median(v) for k, v in cpu.items()}
    rows = [{"variant": k, "cpu_ms_median": round(v, 3), "cpu_ms_all": [round(x, 3) for x in cpu[k]],
             "per": "round" if k.startswith("round") else "call"} for k, v in med.items()]
    ratios = {"step batch / none": med["step norm=batch"] / med["step norm=none"],
              "formula previous / current": med["formula previous"] / med["formula current"]}
    if args.rounds:
        ratios["round fedavg batch / none"] = med["round fedavg norm=batch"] / med["round fedavg norm=none"]
        ratios["round fedbn batch / fedavg none"] = med["round fedbn norm=batch"] / med["round fedavg norm=none"]
        ratios["round fedbn / fedavg, both batch"] = med["round fedbn norm=batch"] / med["round fedavg norm=batch"]
    for r in rows:
        print(f"{r['variant']}: {r['cpu_ms_median']:.2f} cpu ms")
    for k, v in ratios.items():
        print(f"{k}: {v:.3f}")
    print(f"largest |previous - current| output: {gap:.3g}")
    write_record(args.out, {"graphs": args.graphs, "rounds": args.rounds, "nodes": int(b.x.shape[0]), "real_nodes": int(b.node_mask.sum()),
                            "rows": rows, "ratios": {k: round(v, 3) for k, v in ratios.items()},
                            "max_abs_output_diff": gap, "repeats": args.repeats, "calls": args.calls,
                            "load_before": load_before, "load_after": loadavg(), "machine": machine(),
                            "command": command(__file__, argv)},
                 title="batch norm in a GIN step and a federated round: process CPU ms, one thread")
    return 0


if __name__ == "__main__":
    sys.exit(main())
