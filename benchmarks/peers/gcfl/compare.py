"""fgl_jax's GCFL, GCFL+ and GCFL+dWs vs the authors' own code (github.com/Oxfordblue7/GCFL, Xie et
al., NeurIPS 2021) on the same clients and split (outside CI; never imported by tests):

    git --git-dir "$(fetched GCFL mirror)" archive HEAD | tar -x -C /work/peers/gcfl-src
    FGL_JAX_DATA=/work/shared/data nice -n 10 python -m benchmarks.peers.gcfl.compare \
        --gcfl-src /work/peers/gcfl-src --venv /work/peers/openfgl-venv --seeds 0 1 2

The setting is the authors' one-dataset run on PROTEINS (runnerfile: main_oneDS.py --data_group
PROTEINS --num_clients 10 --epsilon1 0.03 --epsilon2 0.06 --seq_length 10, its defaults otherwise:
200 rounds, 1 local epoch, batch 128, Adam lr 0.001, weight decay 5e-4, GIN 3 layers x 64, dropout
0.5). fgl_jax deals the graphs with `partition ordered_chunks` (GCFL's _randChunk: runs of 50 graphs
in file order, the rest by RandomState(123) draws, the authors' seed_dataSplit = 123) and splits
each client 80/10/10 by class (split seed 123); those arrays go to the authors' side
(benchmarks/peers/exchange.py, run_gcfl.py), which builds its own clients from them and runs its
training.run_gcfl / run_gcflplus / run_gcflplus_dWs. The run seed (0, 1, 2) seeds the models on
both sides; partition and split stay the authors' fixed 123.

Hyperparameter names, theirs -> fgl_jax (RunConfig): num_rounds -> rounds; local_epoch ->
local_steps (epochs on graph tasks); batch_size -> graph_batch_size; lr -> lr; weight_decay ->
weight_decay (both L2 added to the gradient before Adam); nlayer -> num_layers; hidden -> hidden;
dropout -> dropout; epsilon1 / epsilon2 -> gcfl_eps1 / gcfl_eps2; their `c_round > 20` (1-based) ->
gcfl_warmup 20 (1-based `round > gcfl_warmup`); seq_length -> gcfl_seq_length; standardize ->
gcfl_standardize; the server holding only the GIN convolutions -> gcfl_shared conv; the norm
sequence over the convolutions (convGradsNorm, convDWsNorm) -> gcfl_seq_params conv; their
global_add_pool -> graph_pooling sum.

Evaluation, as theirs: each client's model after the round's cluster update (theirs: W reset to
W_old plus the cluster's mean dW; fgl_jax: eval_mode auto, `test_acc_clients_mean`), on the
client's test graphs, the unweighted mean over clients. Recorded: the last round's mean on both
sides (the compared number), and the authors' reported number (training.py: each client's maximum
over the accuracies cached at every split of a cluster it was in and the final one).
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
ALGORITHMS = ("gcfl", "gcfl_plus", "gcfl_plus_dws")   # fgl_jax registry names (theirs: run_gcfl, run_gcflplus, run_gcflplus_dWs)
DIFFERENCES = [
    "Model: theirs is pre Linear(F, 64), 3 GINConv (eps 0, MLP Linear-ReLU-Linear) each followed by ReLU and "
    "dropout, sum pooling, post Linear-ReLU, dropout, Linear, log-softmax; fgl_jax's GraphClassifier has no pre "
    "Linear (the first GIN MLP reads the features: GIN's sum commutes with a linear map, so the functions are the "
    "same, the parametrisation is not) and no dropout after the last convolution; the rest is the same.",
    "Initialisation: torch's Linear default (uniform, fan-in) vs flax's (LeCun normal, zero bias); the authors' "
    "clients each draw their own non-shared layers, fgl_jax's start from one draw.",
    "Output size: theirs has as many outputs as the client's training set has classes (utils.get_numGraphLabels), "
    "fgl_jax the set's classes (equal here: every client holds both PROTEINS classes).",
    "Features: both sides read fgl_jax's export (node attribute + one-hot node label, 4 columns); the authors' "
    "PyG TUDataset would give PROTEINS without its node attribute (use_node_attr False, 3 columns).",
    "Mini-batches: theirs are reshuffled every epoch; each client here has fewer than 128 training graphs, so one "
    "mini-batch per epoch on both sides and the order does not matter.",
    "Min cut: theirs networkx Stoer-Wagner, fgl_jax's own (`min_cut_side`); among equal-weight cuts each may pick "
    "another.",
]


def machine() -> dict:
    import platform
    import jax
    cpu = next((ln.split(":", 1)[1].strip() for ln in Path("/proc/cpuinfo").read_text().splitlines()
                if ln.startswith("model name")), "?") if Path("/proc/cpuinfo").exists() else "?"
    return {"platform": platform.platform(), "cpu_model": cpu, "cpu_count": os.cpu_count(), "jax": jax.__version__,
            "loadavg_start": list(os.getloadavg())}


def config(a, algorithm: str, seed: int):
    """The fgl_jax RunConfig of one run (the module docstring's mapping)."""
    from fgl_jax import RunConfig
    extra = {"gcfl_eps1": a.eps1, "gcfl_eps2": a.eps2, "gcfl_warmup": 20, "gcfl_shared": "conv"}
    if algorithm != "gcfl":
        extra.update(gcfl_seq_length=a.seq_length, gcfl_standardize=False, gcfl_seq_params="conv")
    return RunConfig(dataset=a.dataset, algorithm=algorithm, task="graph_cls", clients=a.clients,
                     partition="ordered_chunks", partition_seed=123, split_seed=123, seed=seed, graph_model="gin",
                     graph_pooling="sum", graph_batch_size=a.batch_size, hidden=a.hidden, num_layers=a.layers,
                     dropout=a.dropout, local_steps=a.local_epochs, lr=a.lr, weight_decay=a.weight_decay,
                     rounds=a.rounds, eval_mode="auto", **extra)


def export(cfg, gs, path: Path) -> dict:
    """The graphs, the client of every graph and the per-client split of fgl_jax's run, for run_gcfl.py."""
    from benchmarks.peers import exchange
    from fgl_jax.systems.baseline import graph_split
    assignment, masks = graph_split(cfg, gs)
    exchange.write_graphs(path, gs.x, gs.node_offsets, gs.senders, gs.receivers, gs.edge_offsets, gs.y, assignment,
                          masks["train"], masks["test"], val_mask=masks["val"])
    per = lambda m: np.bincount(assignment[m], minlength=cfg.clients).tolist()
    return {"train_per_client": per(masks["train"]), "test_per_client": per(masks["test"]),
            "class1_share_per_client": [float(np.mean(gs.y[assignment == k] == 1)) for k in range(cfg.clients)]}


def run_fgl(cfg, seed: int) -> dict:
    import jax
    from fgl_jax import run
    from fgl_jax.systems.baseline import algorithm_from_config, prepare
    prep = prepare(cfg)
    algorithm = algorithm_from_config(cfg, prep.graph)
    res = run(algorithm, prep.data, jax.random.key(seed), cfg.rounds)
    h = res.history
    counts = [int(v) for v in np.asarray(h["num_clusters"])]
    curve = [float(v) for v in np.asarray(h["test_acc_clients_mean"])]
    return {"final_test": curve[-1], "test_history": curve, "num_clusters": counts[-1],
            "split_rounds": [r + 1 for r in range(len(counts)) if r and counts[r] > counts[r - 1]],
            "compile_seconds": float(res.compile_seconds), "ms_per_round": 1000.0 * res.run_seconds / res.rounds_run}


def run_authors(work: Path, job: dict, venv_python: Path) -> dict:
    (work / "job.json").write_text(json.dumps(job))
    proc = subprocess.run([str(venv_python), str(HERE / "run_gcfl.py"), str(work / "job.json"), str(work / "result.json")],
                          capture_output=True, text=True)
    if proc.returncode:
        raise RuntimeError(f"the authors' GCFL failed ({job['algorithm']}, seed {job['seed']}):\n{proc.stderr[-3000:]}")
    return json.loads((work / "result.json").read_text())


def mean_sd(values) -> str:
    v = 100 * np.asarray(values, float)
    return f"{v.mean():.2f} ± {v.std(ddof=1) if len(v) > 1 else 0.0:.2f}"


def render(runs: list, a: dict, info: dict, out: Path, started: float) -> None:
    """The record <out>.json and its table <out>.md."""
    from fgl_jax import records, table
    rows = []
    for algo in a["algorithms"]:
        mine = [r for r in runs if r["algorithm"] == algo]
        if not mine:
            continue
        f = [r["fgl_jax"]["final_test"] for r in mine]
        t = [r["authors"]["final_test"] for r in mine]
        rows.append({"algorithm": algo, "seeds": len(mine), "fgl_jax test acc %": mean_sd(f),
                     "authors' test acc %": mean_sd(t), "diff (pts)": f"{100 * (np.mean(f) - np.mean(t)):+.2f}",
                     "authors' reported % (max over cache)": mean_sd([r["authors"]["reported_test"] for r in mine]),
                     "clusters fgl_jax / authors": " ".join(str(r["fgl_jax"]["num_clusters"]) for r in mine) + " / "
                     + " ".join(str(r["authors"]["num_clusters"]) for r in mine),
                     "fgl_jax ms/round": f"{np.mean([r['fgl_jax']['ms_per_round'] for r in mine]):.1f}",
                     "authors' ms/round": f"{np.mean([r['authors']['ms_per_round'] for r in mine]):.1f}",
                     "speed-up": f"{np.mean([r['authors']['ms_per_round'] for r in mine]) / np.mean([r['fgl_jax']['ms_per_round'] for r in mine]):.1f}x"})
    per_run = [{"algorithm": r["algorithm"], "seed": r["seed"], "first": r["first"],
                "final test % fgl_jax / authors": f"{100 * r['fgl_jax']['final_test']:.2f} / {100 * r['authors']['final_test']:.2f}",
                "mean test % rounds 101-200 fgl_jax / authors": f"{100 * np.mean(r['fgl_jax']['test_history'][100:]):.2f} / "
                f"{100 * np.mean(r['authors']['test_history'][100:]):.2f}",
                "split rounds fgl_jax": " ".join(map(str, r["fgl_jax"]["split_rounds"])) or "-",
                "split rounds authors": " ".join(map(str, r["authors"]["split_rounds"])) or "-",
                "authors' final cluster sizes": " ".join(map(str, r["authors"]["cluster_sizes"])),
                "load avg": f"{r['loadavg'][0]:.1f}"} for r in runs]
    md = table(rows, disable_numparse=True)
    notes = ["", f"Setting: the authors' main_oneDS.py on {a['dataset']} (runnerfile), {a['clients']} clients, "
             f"eps1 {a['eps1']}, eps2 {a['eps2']}, seq_length {a['seq_length']}, {a['rounds']} rounds, {a['local_epochs']} "
             f"local epoch, batch {a['batch_size']}, Adam lr {a['lr']}, weight decay {a['weight_decay']}, GIN {a['layers']} x "
             f"{a['hidden']}, dropout {a['dropout']}, seeds {a['seeds']}; partition and split fixed (seed 123, theirs). "
             "Test accuracy: the last round's unweighted mean over clients of each client's model on its test graphs "
             "(both sides). The authors' reported number takes, per client, the maximum over the models cached at "
             "splits and the final one (training.py), an optimistic pick.",
             f"Machine: {info['cpu_model']}, {info['cpu_count']} cores, load average {info['loadavg_start'][0]:.1f} at start / "
             f"{info.get('loadavg_end', [float('nan')])[0]:.1f} at end (shared with other jobs; the sides alternate who runs "
             f"first; {a['threads']} thread(s) per side). ms/round = wall time of the rounds (the per-round evaluation "
             "included, fgl_jax's compilation not) / rounds.",
             "", "Differences that remain:", ""] + [f"- {d}" for d in DIFFERENCES]
    notes += ["", "Per run:", "", table(per_run, disable_numparse=True)]
    rec = records.make(out.name, {"rows": rows, "runs": runs, "machine": info, "differences": DIFFERENCES},
                       config=a, seeds=a["seeds"], provenance=records.provenance(started=started),
                       title="fgl_jax vs the authors' GCFL code (GCFL, GCFL+, GCFL+dWs)")
    records.write(out.with_suffix(".json"), rec, markdown=md + "\n" + "\n".join(notes))
    print(md)
    print(f"wrote {out}.md and {out}.json")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gcfl-src", default="/work/peers/gcfl-src", help="scratch checkout of github.com/Oxfordblue7/GCFL "
                    "(outside the repo)")
    ap.add_argument("--venv", default="/work/peers/openfgl-venv", help="venv with torch, PyG 2.x, dtaidistance, networkx")
    ap.add_argument("--pandas-site", default="/work/peers/pyg-venv/lib/python3.11/site-packages",
                    help="site-packages to take pandas from when --venv has none (training.py imports it)")
    ap.add_argument("--dataset", default="PROTEINS", help="TU set of the shared data (the authors' --data_group)")
    ap.add_argument("--algorithms", nargs="+", default=list(ALGORITHMS), choices=ALGORITHMS, help="fgl_jax names")
    ap.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2], help="model seeds (both sides)")
    ap.add_argument("--rounds", type=int, default=200, help="communication rounds (their num_rounds, default 200)")
    ap.add_argument("--clients", type=int, default=10, help="number of clients (their num_clients)")
    ap.add_argument("--eps1", type=float, default=0.03, help="their epsilon1 (runnerfile's PROTEINS value)")
    ap.add_argument("--eps2", type=float, default=0.06, help="their epsilon2 (runnerfile's PROTEINS value)")
    ap.add_argument("--seq-length", type=int, default=10, help="their seq_length (runnerfile's PROTEINS value)")
    ap.add_argument("--local-epochs", type=int, default=1, help="their local_epoch")
    ap.add_argument("--batch-size", type=int, default=128, help="their batch_size")
    ap.add_argument("--hidden", type=int, default=64, help="their hidden")
    ap.add_argument("--layers", type=int, default=3, help="their nlayer (GIN convolutions)")
    ap.add_argument("--dropout", type=float, default=0.5, help="their dropout")
    ap.add_argument("--lr", type=float, default=0.001, help="their lr (Adam)")
    ap.add_argument("--weight-decay", type=float, default=5e-4, help="their weight_decay")
    ap.add_argument("--threads", type=int, default=1, help="CPU threads per side")
    ap.add_argument("--out", default=str(HERE / "results"), help="stem of the record <out>.json / .md")
    a = ap.parse_args(argv)
    venv_python = Path(a.venv) / "bin" / "python"
    if not venv_python.exists():
        sys.exit(f"no python in --venv {a.venv}")
    if not (Path(a.gcfl_src) / "training.py").exists():
        sys.exit(f"--gcfl-src {a.gcfl_src}: no training.py (extract github.com/Oxfordblue7/GCFL there)")
    if a.threads == 1 and "jax" not in sys.modules:
        os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " --xla_cpu_multi_thread_eigen=false").strip()
    from fgl_jax.systems.baseline import prepare
    started = time.time()
    info = machine()
    runs, i = [], 0
    with tempfile.TemporaryDirectory(prefix="gcfl_ref_") as tmp:
        for seed in a.seeds:
            for algo in a.algorithms:
                cfg = config(a, algo, seed)
                work = Path(tmp) / f"{algo}_{seed}"
                work.mkdir(parents=True)
                sizes = export(cfg, prepare(cfg).graph, work / "arrays.npz")
                job = {"gcfl_src": a.gcfl_src, "pandas_site": a.pandas_site, "arrays": str(work / "arrays.npz"),
                       "dataset": a.dataset, "algorithm": algo, "clients": a.clients, "rounds": a.rounds,
                       "local_epochs": a.local_epochs, "batch_size": a.batch_size, "hidden": a.hidden,
                       "num_layers": a.layers, "dropout": a.dropout, "lr": a.lr, "weight_decay": a.weight_decay,
                       "eps1": a.eps1, "eps2": a.eps2, "seq_length": a.seq_length, "standardize": False,
                       "seed": seed, "threads": a.threads}
                sides = [("fgl_jax", lambda: run_fgl(cfg, seed)), ("authors", lambda: run_authors(work, job, venv_python))]
                if i % 2:   # alternate which side runs first
                    sides.reverse()
                rec = {"algorithm": algo, "seed": seed, "first": sides[0][0], "loadavg": list(os.getloadavg()), **sizes}
                for name, fn in sides:
                    rec[name] = fn()
                runs.append(rec)
                i += 1
                print(f"{algo} seed {seed}: fgl_jax {rec['fgl_jax']['final_test']:.4f} ({rec['fgl_jax']['num_clusters']} "
                      f"clusters, splits {rec['fgl_jax']['split_rounds']}, {rec['fgl_jax']['ms_per_round']:.0f} ms/round); "
                      f"authors {rec['authors']['final_test']:.4f} ({rec['authors']['num_clusters']} clusters, splits "
                      f"{rec['authors']['split_rounds']}, {rec['authors']['ms_per_round']:.0f} ms/round)", flush=True)
                info["loadavg_end"] = list(os.getloadavg())
                render(runs, vars(a), info, Path(a.out), started)   # after every run: a cut run keeps what it measured


if __name__ == "__main__":
    main()
