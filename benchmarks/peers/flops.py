"""How fast a round could possibly be: the matrix products a graph-FL round must compute and the
core's peak multiply-add rate, for the speed records' "largest possible speed-up".

A round's time is at least its matrix-product FLOPs over the core's float32 FMA peak (`fma_peak.c`):
no code issues multiply-adds faster, whatever else it skips. So a peer's measured round time over
that floor is the largest speed-up any implementation of the round could show against the peer on
this core. What is counted (`round_product_flops`): every `dot_general` of one local training step
(forward and gradient) on each real training mini-batch of every client, times the local epochs and
the algorithm's own passes (`training_passes`), and of one forward pass over each client's
evaluation mini-batches, padding stripped. The products are read from the lowered StableHLO of
exactly those computations (private functions counted once per call), so nothing the program does
not ask for is counted; aggregation, readout and element-wise work are left out, which only makes
the floor lower (the bound weaker). `matmul_gflops` records the libraries' best product rates beside
the peak.
"""
from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Optional

import numpy as np

_NAME = r'@("[^"]+"|[\w.$-]+)'                     # a symbol: bare, or quoted ("<lambda>")
_FUNC = re.compile(r"func\.func\s+(?:public\s+|private\s+)?" + _NAME)
_CALL = re.compile(r"(?:func\.)?call\s+" + _NAME)
_DOT = re.compile(r"stablehlo\.dot_general.*?contracting_dims = \[([\d, ]*)\] x \[[\d, ]*\].*?:\s*"
                  r"\(tensor<([^>]*)>, tensor<[^>]*>\) -> tensor<([^>]*)>")


def _dims(tensor_type: str) -> list[int]:
    """[5, 4] from "5x4xf32" (a scalar "f32" gives [])."""
    return [int(d) for d in tensor_type.split("x")[:-1]]


def product_flops(stablehlo: str) -> int:
    """FLOPs (2 per multiply-add) of the `dot_general`s a lowered module runs from `main`.

    Args:
        stablehlo: `jax.jit(f).lower(...).as_text()`.

    Returns:
        Sum over the dot_generals reachable from main of 2 x prod(result dims) x prod(contracted lhs
        dims), a private function's products counted once per call site. Loop bodies count once (no
        trip counts): call it on straight-line computations.
    """
    funcs: dict[str, list[str]] = {}
    name = None
    for line in stablehlo.splitlines():
        m = _FUNC.search(line)
        if m:
            name = m.group(1)
            funcs[name] = []
        elif name is not None:
            funcs[name].append(line)
    memo: dict[str, int] = {}

    def total(fn: str, depth: int = 0) -> int:
        if fn in memo:
            return memo[fn]
        if depth > 100:
            raise ValueError(f"call depth over 100 at @{fn}")
        flops = 0
        for line in funcs.get(fn, ()):
            d = _DOT.search(line)
            if d:
                lhs, out = _dims(d.group(2)), _dims(d.group(3))
                contracted = [int(i) for i in d.group(1).replace(" ", "").split(",") if i]
                depth_k = int(np.prod([lhs[i] for i in contracted], dtype=np.int64))   # contracted size
                flops += 2 * int(np.prod(out, dtype=np.int64)) * depth_k
            for c in _CALL.findall(line):
                flops += total(c, depth + 1)
        memo[fn] = flops
        return flops

    if "main" not in funcs:
        raise ValueError("no @main in the lowered module")
    return total("main")


def strip_padding(b):
    """One packed mini-batch (no leading axes, numpy leaves) with its padding rows cut: real nodes,
    edges and graph slots sit at the front of a packed mini-batch (checked), so XLA and torch get the
    exact shapes. Shared by `round_product_flops` and `benchmarks.peers.graph_step`."""
    n, e, g = int(b.node_mask.sum()), int(b.edge_mask.sum()), int(b.graph_mask.sum())
    if not (b.node_mask[:n].all() and b.edge_mask[:e].all() and b.graph_mask[:g].all()):
        raise RuntimeError("the packed mini-batch's real rows are not at the front")
    cut = {f: getattr(b, f)[:k] for f, k in (("x", n), ("node_graph", n), ("node_mask", n),
                                             ("senders", e), ("receivers", e), ("edge_mask", e))}
    cut.update({f: getattr(b, f)[:g] for f in ("y", "graph_mask", "train_mask", "val_mask", "test_mask", "graph_ids")})
    return b.replace(**cut)


def _real_minibatches(batch):
    """Each mini-batch of a packed `GraphBatch` [C, M, ...] that holds a graph, padding stripped, as
    (client, mini-batch, GraphBatch) with numpy leaves."""
    import jax
    a = jax.tree.map(np.asarray, batch.replace(classes=None, step_class=None, step_slot=None))
    C, M = a.graph_mask.shape[:2]
    for c in range(C):
        if not a.client_mask[c]:
            continue
        for j in range(M):
            if a.graph_mask[c, j].any():
                one = jax.tree.map(lambda v: v[c, j], a.replace(client_mask=None))
                yield c, j, strip_padding(one.replace(client_mask=a.client_mask[c]))


def run_model(cfg, gs):
    """The flax model a graph-level run of `cfg` trains (FedStar: its dual-channel model)."""
    from fgl_jax import dual_channel_model
    from fgl_jax.systems.baseline import graph_model
    model = graph_model(cfg, gs)
    return dual_channel_model(model, cfg.hparams()) if cfg.algorithm == "fedstar" else model


def round_product_flops(cfg, prep=None) -> dict:
    """Matrix-product FLOPs of one round of a graph-level run: `cfg.local_steps` epochs of training
    steps (forward + gradient of the softmax cross-entropy on the mini-batch's training graphs) on
    every real training mini-batch of every client, plus one forward pass over every client's
    evaluation mini-batches; times `training_passes` (pFedMe's K inner steps, Ditto's two models). Other
    extra terms (MOON's second and third forward, FedProx's proximal term) are not counted: a lower
    bound for every algorithm.

    Args:
        cfg: a graph_cls RunConfig.
        prep: its `prepare(cfg)` (made here when None).

    Returns:
        {"train": FLOPs, "eval": FLOPs, "total": FLOPs, "train_steps": forward-and-gradient passes per
        round}.
    """
    import jax
    import jax.numpy as jnp
    import optax
    from fgl_jax.systems.baseline import prepare
    prep = prepare(cfg) if prep is None else prep
    model = run_model(cfg, prep.graph)
    first = next(_real_minibatches(prep.data.eval))[2]
    params = model.init({"params": jax.random.key(0), "dropout": jax.random.key(1)},
                        jax.tree.map(jnp.asarray, first), train=False)["params"]

    def loss(p, b, key):
        logits = model.apply({"params": p}, b, train=True, rngs={"dropout": key})
        ce = optax.softmax_cross_entropy_with_integer_labels(logits, b.y)
        return (ce * b.train_mask).sum() / jnp.maximum(b.train_mask.sum(), 1)

    grad = jax.jit(jax.grad(loss))
    forward = jax.jit(lambda p, b: model.apply({"params": p}, b, train=False))
    cache: dict = {}

    def flops_of(fn, b, *extra) -> int:
        shape = (fn is grad, b.x.shape, b.senders.shape, b.y.shape)   # products depend on shapes only
        if shape not in cache:
            cache[shape] = product_flops(fn.lower(params, jax.tree.map(jnp.asarray, b), *extra).as_text())
        return cache[shape]

    train, steps = 0, 0
    for _, _, b in _real_minibatches(prep.data.train):
        if b.train_mask.any():
            train += flops_of(grad, b, jax.random.key(0))
            steps += 1
    ev = sum(flops_of(forward, b) for _, _, b in _real_minibatches(prep.data.eval))
    passes = training_passes(cfg)
    train *= cfg.local_steps * passes
    return {"train": int(train), "eval": int(ev), "total": int(train + ev),
            "train_steps": steps * cfg.local_steps * passes}


def training_passes(cfg) -> int:
    """Forward-and-gradient passes over a mini-batch per local step that the algorithm itself
    prescribes: pFedMe's K inner gradient steps (`pfedme_inner_steps`), Ditto's two models (the global
    copy and the personal model, each `local_steps` steps); 1 for every other algorithm (whatever else
    it computes per step is left out of the bound)."""
    if cfg.algorithm == "pfedme":
        return int(cfg.hparams().pfedme_inner_steps)
    if cfg.algorithm == "ditto":
        return 2
    return 1


PEAK_SNIPPET = {
    "jax": ("import time, numpy as np, jax, jax.numpy as jnp\n"
            "a = jnp.asarray(np.random.default_rng(0).standard_normal(({n}, {n}), np.float32))\n"
            "f = jax.jit(lambda a: a @ a); f(a).block_until_ready()\n"
            "t = []\n"
            "for _ in range({reps}):\n"
            "    c = time.process_time(); f(a).block_until_ready(); t.append(time.process_time() - c)\n"
            "print(2 * {n} ** 3 / float(np.median(t)) / 1e9)\n"),
    "torch": ("import time, numpy as np, torch\n"
              "torch.set_num_threads(1)\n"
              "a = torch.from_numpy(np.random.default_rng(0).standard_normal(({n}, {n}), np.float32)); a @ a\n"
              "t = []\n"
              "for _ in range({reps}):\n"
              "    c = time.process_time(); a @ a; t.append(time.process_time() - c)\n"
              "print(2 * {n} ** 3 / float(np.median(t)) / 1e9)\n"),
}
ONE_THREAD = {"XLA_FLAGS": "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1",
              "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def matmul_gflops(python: str, library: str, cpu: Optional[int], n: int = 2048, reps: int = 7,
                  probes: int = 3) -> float:
    """The best of `probes` fresh processes of `python`, each timing `reps` n x n float32 products in
    `library` ("jax" or "torch") on one thread pinned to `cpu` (None: not pinned) and reporting the
    median's GFLOP/s (process CPU time). The best, not the median: a probe slowed by a neighbour on the
    shared machine would raise the bound's floor."""
    import os
    cmd = [python, "-c", PEAK_SNIPPET[library].format(n=n, reps=reps)]
    if cpu is not None:
        cmd = ["taskset", "-c", str(cpu), *cmd]
    best = 0.0
    for _ in range(probes):
        out = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, **ONE_THREAD})
        if out.returncode != 0:
            raise RuntimeError(f"{library} matmul probe failed: {out.stderr[-2000:]}")
        best = max(best, float(out.stdout.split()[-1]))
    return best


def fma_gflops(cpu: Optional[int], probes: int = 3) -> Optional[float]:
    """The core's peak float32 FMA rate, GFLOP/s: `fma_peak.c` (independent 256-bit FMA chains) built
    with the system's C compiler and run `probes` times pinned to `cpu` (None: not pinned); the best.
    No kernel can multiply matrices faster than this. None when no C compiler or no AVX2/FMA."""
    cc = shutil.which("gcc") or shutil.which("cc")
    if cc is None:
        return None
    with tempfile.TemporaryDirectory() as tmp:
        exe = Path(tmp) / "fma_peak"
        source = str(Path(__file__).with_name("fma_peak.c"))
        built = subprocess.run([cc, "-O2", "-mavx2", "-mfma", "-o", str(exe), source], capture_output=True, text=True)
        if built.returncode != 0:
            return None
        cmd = [str(exe)] if cpu is None else ["taskset", "-c", str(cpu), str(exe)]
        best = 0.0
        for _ in range(probes):
            out = subprocess.run(cmd, capture_output=True, text=True)
            if out.returncode != 0:
                return None
            best = max(best, float(out.stdout.split()[-1]))
    return best


def peak_rates(jax_python: str, torch_python: str, cpu: Optional[int]) -> dict:
    """{"jax", "torch": best 2048 x 2048 product rate of each library (`matmul_gflops`), "fma": the
    core's FMA peak (`fma_gflops`, None without a C compiler)}, GFLOP/s, each on one thread on `cpu`."""
    return {"jax": matmul_gflops(jax_python, "jax", cpu), "torch": matmul_gflops(torch_python, "torch", cpu),
            "fma": fma_gflops(cpu)}


def floor_rate(rates: dict) -> float:
    """The rate a round's products are divided by for its floor: the FMA peak when measured (no code
    runs faster), else the fastest library kernel measured."""
    return rates["fma"] if rates.get("fma") else max(v for k, v in rates.items() if k != "fma" and v)
