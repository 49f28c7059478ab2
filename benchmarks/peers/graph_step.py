"""The arithmetic under a graph-FL round's speed-up: one GIN training step, fgl_jax (XLA) against torch,
each on one CPU thread, on the same disjoint union of TU graphs with the same model and the same work.

A federated round is local steps plus evaluation, so its speed-up over a torch peer (OpenFGL, PFLlib)
is bounded by what one step costs on each side when both do the same arithmetic. This measures that
step: the harness's graph classifier (GIN-0, 2 layers x 64, ReLU, dropout 0.5 between layers and in
the head, mean readout, Dense(64) - ReLU - dropout - Dense(classes)), softmax cross-entropy, the
gradient and a plain SGD update, on the first mini-batch of `--graphs` graphs that fgl_jax packs for
one client holding the whole set (its padding stripped: XLA gets the exact shapes, torch the same arrays). torch's side is the model of PFLlib's runner (`run_pfllib.GraphBody`:
neighbour sum and mean readout as `torch.sparse.mm`), written here again without PFLlib.

    FGL_JAX_DATA=/work/shared/data python -m benchmarks.peers.graph_step --venv /work/peers/pfllib-venv \
        --datasets PROTEINS NCI1 --graphs 128 1113 --repeats 5

Each repeat runs the two sides one after the other (alternating which goes first), each a fresh
process pinned to one CPU that times `--steps` steps after a warm-up (fgl_jax: the compiling call);
the cell's number is the median over repeats of each process's median step, wall and CPU. Writes the
record `results_graph_step.json` (+ .md) next to this file.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
PREFIX = "STEP "
ONE_THREAD = {"XLA_FLAGS": "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1",
              "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def batch_config(name: str, graphs: int, hidden: int):
    """The RunConfig whose one client's first evaluation mini-batch holds `graphs` graphs of `name`."""
    from fgl_jax import RunConfig
    return RunConfig(dataset=name, task="graph_cls", clients=1, graph_batch_size=graphs, hidden=hidden, num_layers=2,
                     dropout=0.5, graph_model="gin", graph_pooling="mean", client_exec="vmap")


def first_batch(cfg):
    """(GraphSet, GraphBatch) of fgl_jax's own packing: client 0's first evaluation mini-batch with its
    padding stripped (real nodes, edges and graph slots sit at the front of a packed mini-batch)."""
    import jax
    from fgl_jax.systems.baseline import prepare
    prep = prepare(cfg)
    ev = prep.data.eval
    b = jax.tree.map(lambda v: np.asarray(v)[0, 0], ev.replace(classes=None, step_class=None, step_slot=None,
                                                               client_mask=ev.client_mask[:1, None]))
    from benchmarks.peers.flops import strip_padding
    return prep.graph, strip_padding(b)


def export(name: str, graphs: int, hidden: int, path: Path) -> dict:
    """Write the graphs of `first_batch` to `path` (.npz) for both sides; their sizes."""
    gs, b = first_batch(batch_config(name, graphs, hidden))
    np.savez(path, x=b.x, senders=b.senders, receivers=b.receivers, node_graph=b.node_graph, y=b.y,
             num_classes=np.int32(gs.num_classes))
    return {"graphs": int(b.y.shape[0]), "nodes": int(b.x.shape[0]), "edges": int(b.senders.shape[0]),
            "features": int(b.x.shape[1])}


def timed_steps(step, steps: int) -> dict:
    """Median wall and process-CPU ms of `steps` calls of step() (each returns once its work is done)."""
    wall, cpu = [], []
    for _ in range(steps):
        t, c = time.perf_counter(), time.process_time()
        step()
        wall.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)
    return {"wall_ms": 1e3 * float(np.median(wall)), "cpu_ms": 1e3 * float(np.median(cpu))}


def jax_side(arrays: Path, steps: int, hidden: int, lr: float) -> dict:
    import jax
    import jax.numpy as jnp
    import optax
    from fgl_jax.systems.baseline import graph_model
    name, graphs = arrays.stem.rsplit("_", 1)
    cfg = batch_config(name, int(graphs), hidden)
    gs, b = first_batch(cfg)
    a = np.load(arrays)
    if not (np.array_equal(a["x"], b.x) and np.array_equal(a["senders"], b.senders)):
        raise RuntimeError(f"{arrays}: not the graphs fgl_jax packs for {name}")
    batch = jax.tree.map(jnp.asarray, b)
    model = graph_model(cfg, gs)
    params = model.init(jax.random.key(0), batch)["params"]
    opt = optax.sgd(lr)

    @jax.jit
    def step(params, opt_state, key):
        def loss(p):
            logits = model.apply({"params": p}, batch, train=True, rngs={"dropout": key})
            return optax.softmax_cross_entropy_with_integer_labels(logits, batch.y).mean()
        grads = jax.grad(loss)(params)
        updates, opt_state = opt.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state

    state = [params, opt.init(params), 0]

    def one():
        p, s = step(state[0], state[1], jax.random.key(state[2]))
        jax.block_until_ready(p)
        state[0], state[1], state[2] = p, s, state[2] + 1
    one()   # compiles
    return timed_steps(one, steps)


def torch_side(arrays: Path, steps: int, hidden: int, lr: float) -> dict:
    import torch
    from torch import nn
    torch.set_num_threads(1)
    torch.manual_seed(0)
    a = np.load(arrays)
    x = torch.from_numpy(a["x"])
    n, g = x.shape[0], a["y"].shape[0]
    s, r = torch.from_numpy(a["senders"]).long(), torch.from_numpy(a["receivers"]).long()
    adj = torch.sparse_coo_tensor(torch.stack([r, s]), torch.ones(len(s)), (n, n)).coalesce()
    ng = torch.from_numpy(a["node_graph"]).long()
    counts = torch.bincount(ng, minlength=g).clamp(min=1).float()
    pool = torch.sparse_coo_tensor(torch.stack([ng, torch.arange(n)]), 1.0 / counts[ng], (g, n)).coalesce()
    y = torch.from_numpy(a["y"]).long()
    convs = nn.ModuleList([nn.Sequential(nn.Linear(x.shape[1] if i == 0 else hidden, hidden), nn.ReLU(),
                                         nn.Linear(hidden, hidden)) for i in range(2)])
    head = nn.Sequential(nn.Linear(hidden, hidden), nn.ReLU(), nn.Dropout(0.5), nn.Linear(hidden, int(a["num_classes"])))
    drop = nn.Dropout(0.5)
    params = list(convs.parameters()) + list(head.parameters())
    opt = torch.optim.SGD(params, lr=lr)

    def one():
        h = x
        for i, conv in enumerate(convs):
            h = drop(h) if i > 0 else h
            h = torch.relu(conv(h + torch.sparse.mm(adj, h)))
        loss = nn.functional.cross_entropy(head(torch.sparse.mm(pool, h)), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    one()
    return timed_steps(one, steps)


def run_side(side: str, python: str, arrays: Path, a) -> dict:
    """One side in a fresh process pinned to one CPU; its timings."""
    cmd = [python, "-m", "benchmarks.peers.graph_step", "--side", side, "--arrays", str(arrays),
           "--steps", str(a.steps), "--hidden", str(a.hidden), "--lr", str(a.lr)]
    env = {**os.environ, **ONE_THREAD, "PYTHONPATH": str(ROOT)}
    # pinned by taskset, not a preexec_fn: forking this (JAX-threaded) process for a preexec_fn can deadlock
    proc = subprocess.run(["taskset", "-c", str(a.cpu), *cmd], capture_output=True, text=True, cwd=ROOT, env=env)
    if proc.returncode != 0:
        raise RuntimeError(f"{side} side failed: {' '.join(cmd)}\n{proc.stderr[-3000:]}")
    line = [ln for ln in proc.stdout.splitlines() if ln.startswith(PREFIX)][-1]
    return json.loads(line[len(PREFIX):])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--venv", default="/work/peers/pfllib-venv", help="virtual environment with torch (PFLlib's)")
    ap.add_argument("--datasets", nargs="+", default=["PROTEINS"], help="TU sets (from $FGL_JAX_DATA/tu)")
    ap.add_argument("--graphs", nargs="+", type=int, default=[128], help="first G graphs of the set, one cell per value")
    ap.add_argument("--repeats", type=int, default=5, help="process pairs per cell (alternating which side runs first)")
    ap.add_argument("--steps", type=int, default=20, help="timed steps per process")
    ap.add_argument("--hidden", type=int, default=64, help="hidden width")
    ap.add_argument("--lr", type=float, default=0.05, help="SGD learning rate")
    ap.add_argument("--cpu", type=int, default=0, help="the CPU both sides are pinned to")
    ap.add_argument("--side", choices=("jax", "torch"), default=None, help="worker: time one side (internal)")
    ap.add_argument("--arrays", type=Path, default=None, help="worker: the exported graphs (internal)")
    ap.add_argument("--out", type=Path, default=HERE / "results_graph_step.json", help="the record to write")
    a = ap.parse_args(argv)
    if a.side is not None:
        fn = jax_side if a.side == "jax" else torch_side
        print(PREFIX + json.dumps(fn(a.arrays, a.steps, a.hidden, a.lr)), flush=True)
        return 0
    torch_python = str(Path(a.venv) / "bin" / "python")
    if not Path(torch_python).is_file():
        ap.error(f"--venv {a.venv}: no bin/python there (make it with benchmarks/peers/pfllib/setup.sh)")
    sys.path.insert(0, str(ROOT))
    from benchmarks import harness
    from fgl_jax import table
    cells, rows, started = [], [], time.time()
    with tempfile.TemporaryDirectory() as tmp:
        for name in a.datasets:
            for graphs in a.graphs:
                arrays = Path(tmp) / f"{name}_{graphs}.npz"
                sizes = export(name, graphs, a.hidden, arrays)
                runs = {"jax": [], "torch": []}
                for rep in range(a.repeats):
                    order = ("jax", "torch") if rep % 2 == 0 else ("torch", "jax")
                    for side in order:
                        runs[side].append(run_side(side, sys.executable if side == "jax" else torch_python, arrays, a))
                    print(f"{name} {sizes['graphs']} graphs, repeat {rep}: "
                          + ", ".join(f"{s} {runs[s][-1]['cpu_ms']:.2f} cpu ms" for s in order), flush=True)
                med = {s: {k: float(np.median([r[k] for r in runs[s]])) for k in ("wall_ms", "cpu_ms")} for s in runs}
                cells.append({"dataset": name, **sizes, "runs": runs, "median": med,
                              "loadavg": list(os.getloadavg())})
                rows.append({"dataset": name, "graphs / nodes / edges": f"{sizes['graphs']} / {sizes['nodes']} / {sizes['edges']}",
                             "fgl_jax step ms wall / CPU": f"{med['jax']['wall_ms']:.2f} / {med['jax']['cpu_ms']:.2f}",
                             "torch step ms wall / CPU": f"{med['torch']['wall_ms']:.2f} / {med['torch']['cpu_ms']:.2f}",
                             "torch / fgl_jax CPU": f"{med['torch']['cpu_ms'] / med['jax']['cpu_ms']:.2f}x"})
    md = table(rows, disable_numparse=True) + (
        f"\n\nOne training step (GIN-0 2 x {a.hidden}, dropout 0.5, mean readout, cross-entropy, gradient, SGD lr {a.lr}) "
        f"on the first mini-batch of G graphs fgl_jax packs for one client holding the set, as one disjoint union, padding stripped; each side a fresh process pinned to "
        f"CPU {a.cpu} with one thread; per process the median of {a.steps} timed steps after a warm-up, then the median "
        f"over {a.repeats} processes per side, the sides alternating which runs first. torch from `{a.venv}`. The machine is shared: the record holds "
        f"the 1-minute load average at the end of each cell.")
    from fgl_jax import records
    config = {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(a).items() if k not in ("side", "arrays")}
    rec = records.make(a.out.stem, {"cells": cells, "machine": harness.machine()}, config=config,
                       provenance=records.provenance(harness.command(__file__), started=started, cwd=ROOT),
                       title="One GIN training step: fgl_jax (XLA) vs torch, one CPU thread each")
    records.write(a.out, rec, markdown=md)
    print(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
