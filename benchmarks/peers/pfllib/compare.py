"""fgl_jax vs PFLlib (the FedALA authors' library), personalised FL side by side (outside CI; never
imported by tests).

    bash benchmarks/peers/pfllib/setup.sh            # once: /work/peers/pfllib-venv + pfllib-src
    FGL_JAX_DATA=/work/shared/data nice -n 10 python -m benchmarks.peers.pfllib.compare \
        --datasets cora --algorithms ditto fedrep apfl pfedme fedala fedbn --seeds 0 --rounds 50

What is shared, by construction: fgl_jax prepares the run (Cora: 10 Louvain clients, OpenFGL's
per-client 20/40/40 split; PROTEINS: 10 clients by label skew, per-client 80/10/10 split, as
benchmarks/peers/openfgl/compare_graph_fl.py) and exports the client of every node (graph), the
features, edges, labels and masks; `run_pfllib.py` runs PFLlib's own Server/Client classes of the
algorithm on exactly those clients and samples, with a torch model of fgl_jax's architecture (Cora:
2-layer GCN on the client's subgraph, cross-client edges dropped; PROTEINS: the GIN GraphClassifier),
plain SGD, the same lr, local epochs (= full-batch steps), rounds and hyperparameters (HPARAMS maps the
names). Accuracy: PFLlib's own evaluation after `rounds` rounds (test samples pooled over clients) vs
fgl_jax's test accuracy after the same round (`eval_mode auto`, `eval_average pooled`). Time: wall and
process CPU per round of each side's training loop (fgl_jax: the compiled program, compile reported
apart; PFLlib: Server.train()'s own per-round `Budget`, which holds its per-round evaluation as
fgl_jax's round holds its). The sides alternate who goes first. What still differs: DIFFERENCES.
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
DEFAULT_VENV = Path(os.environ.get("PFLLIB_VENV", "/work/peers/pfllib-venv"))
DEFAULT_SRC = Path(os.environ.get("PFLLIB_SRC", "/work/peers/pfllib-src"))
TITLE = "fgl_jax vs PFLlib: personalised FL on the same clients, split and model"

# fgl_jax algorithm -> PFLlib algorithm (system/flcore/servers/server<x>.py)
ALGORITHMS = {"ditto": "Ditto", "fedrep": "FedRep", "apfl": "APFL", "pfedme": "pFedMe", "fedala": "FedALA",
              "fedbn": "FedBN", "fedavg": "FedAvg"}
PERSONALISED = ["ditto", "fedrep", "apfl", "pfedme", "fedala", "fedbn"]   # the default; fedavg calibrates the lr

# Per algorithm: (fgl_jax options, PFLlib arguments) set equal; the comment names the pairs.
HPARAMS = {
    # ditto_lambda = mu (PerturbedGradientDescent's proximal weight); personal epochs = local epochs
    "ditto": lambda a: ({"ditto_lambda": a.ditto_lambda}, {"mu": a.ditto_lambda, "plocal_epochs": a.local_epochs}),
    # last layer is the head (PFLlib: BaseHeadSplit(body, head)); head epochs = plocal_epochs
    "fedrep": lambda a: ({"fedrep_head_layers": 1, "fedrep_head_epochs": a.head_epochs},
                         {"plocal_epochs": a.head_epochs}),
    # initial alpha = alpha; alpha's step size = PFLlib's learning_rate (alpha_update uses it)
    "apfl": lambda a: ({"apfl_alpha": a.apfl_alpha, "apfl_alpha_lr": a.lr,
                        **({"apfl_variant": a.apfl_variant} if a.apfl_variant != "paper" else {})},
                       {"alpha": a.apfl_alpha}),
    # lambda = lamda, K = K, personal lr = p_learning_rate, beta = beta; outer lr = local_learning_rate
    "pfedme": lambda a: ({"pfedme_lambda": a.pfedme_lambda, "pfedme_inner_steps": a.pfedme_k,
                          "pfedme_personal_lr": a.pfedme_personal_lr, "pfedme_beta": 1.0,
                          **({"pfedme_inner_weight_decay": a.pfedme_weight_decay} if a.pfedme_weight_decay else {})},
                         {"lamda": a.pfedme_lambda, "K": a.pfedme_k, "p_learning_rate": a.pfedme_personal_lr,
                          "beta": 1.0}),
    # eta = eta, s = rand_percent / 100, top layers p = 1 = the last 2 parameter tensors (layer_idx 2)
    # first W training: fgl_jax a fixed fedala_init_steps, PFLlib until its loss rule (the record holds its passes)
    "fedala": lambda a: ({"fedala_eta": 1.0, "fedala_sample": 0.8, "fedala_layers": 1,
                          **({"fedala_init_steps": a.fedala_init_steps} if a.fedala_init_steps != 20 else {})},
                         {"eta": 1.0, "rand_percent": 80, "layer_idx": 2}),
    # batch norm after the hidden layer on both sides, its scale and shift kept per client
    "fedbn": lambda a: ({"norm": "batch"}, {}),
    # the shared baseline: both sides train at this lr (how PROTEINS' lr was chosen)
    "fedavg": lambda a: ({}, {}),
}

DIFFERENCES = {
    "all": [
        "Initialisation and dropout from different RNGs (torch vs JAX), same distributions (glorot-uniform "
        "kernels, zero biases); every PFLlib client starts from one deep copy of one model, as fgl_jax's.",
        "PFLlib evaluates at the start of each round, after the server's send_models; fgl_jax after the "
        "round's training with its eval_mode auto (each client's own model). Per method below.",
        "PFLlib's DataLoader shuffles the samples; with one full batch per epoch the order does not change "
        "the loss (a mean over the batch).",
    ],
    "ditto": ["Same updates (PFLlib: personal steps first, then the global copy; both from the round's "
              "global model). Evaluated: the personal models on both sides (PFLlib evaluate_personalized)."],
    "fedrep": ["Same updates. Evaluated: PFLlib the new global body + own head (after send_models), fgl_jax "
               "the same."],
    "apfl": ["PFLlib trains the local model v on its own loss F(v) and mixes only at the end of the round "
             "(v <- alpha v + (1 - alpha) w_local), alpha's gradient from the two models' separate gradients "
             "plus 0.02 alpha; fgl_jax (the paper) trains v on F(alpha v + (1 - alpha) w) and evaluates "
             "alpha v + (1 - alpha) w with the new global w. Evaluated: PFLlib model_per, fgl_jax the mix.",
             "The cell [fgl_jax apfl_variant pfllib] runs fgl_jax with PFLlib's update and evaluation (apfl.py): "
             "the difference measured, not read."],
    "pfedme": ["PFLlib's inner optimiser adds mu = 0.001 weight decay (pFedMeOptimizer's default); fgl_jax none. "
               "PFLlib's personalized_params alias the model's own parameter objects (the optimiser returns "
               "its param group), so after send_models its evaluate_personalized evaluates the received "
               "global model; fgl_jax evaluates the personal theta.",
               "Toggled cells: [PFLlib evaluates theta] copies the step's result so PFLlib evaluates theta (runs "
               "with --pfedme-eval-theta also read, before each evaluate_personalized, what unmodified PFLlib "
               "reads, for the default cell: training is unchanged, torch's RNG put back); "
               "[fgl_jax pfedme_inner_weight_decay 0.001, fgl_jax eval_mode global_model_on_local_data] gives "
               "fgl_jax PFLlib's weight decay and evaluates what PFLlib's alias evaluates."],
    "fedala": ["First adaptive aggregation: PFLlib trains W until the std of the last 10 losses < 0.1 "
               "(at least 11 passes; the record's ala_first_passes: what each client took), fgl_jax a fixed "
               "20 steps (fedala_init_steps; --fedala-init-steps sets it, the cell keyed apart); PFLlib's ALA "
               "sample is a contiguous 80% slice at a random start, fgl_jax a random 80%. Evaluated: PFLlib the "
               "next round's ALA-initialised model theta_hat, fgl_jax the trained theta_i.",
               "The cell [PFLlib evaluates trained theta_i] (--fedala-eval-trained) is read from the same PFLlib "
               "run as the default one: each client's trained theta_i, read before send_models' ALA (torch's RNG "
               "put back, the reading's time taken out), i.e. the model fgl_jax evaluates."],
    "fedavg": ["Same updates. Evaluated: PFLlib the received global model, fgl_jax the new global model (the same "
               "model: evaluated one step later in PFLlib's loop)."],
    "fedbn": ["Batch norm with batch statistics on both sides (torch track_running_stats=False, as fgl_jax's "
              "normalise); eps 1e-5 both."],
}


def machine_info() -> dict:
    import platform
    import jax
    info = {"platform": platform.platform(), "python": platform.python_version(), "cpu_count": os.cpu_count(),
            "jax": jax.__version__, "loadavg_start": list(os.getloadavg()),
            "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "XLA_FLAGS": os.environ.get("XLA_FLAGS", "")}
    try:
        info["cpu_model"] = next(l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return info


def export_nodes(prep, path: Path) -> dict:
    """Cora's run: features, labels, edges, the client of every node and the masks (`exchange`)."""
    from benchmarks.peers import exchange
    g = prep.graph
    assignment = np.asarray(prep.partition.assignment, np.int64)
    x = np.asarray(g.dense_x(), np.float32)
    exchange.write_nodes(path, x, g.y, assignment, g.senders, g.receivers, g.train_mask, g.test_mask)
    return {"in_dim": int(x.shape[1]), "num_classes": int(g.num_classes),
            "nodes_per_client": np.bincount(assignment, minlength=int(assignment.max()) + 1).tolist()}


def export_graphs(cfg, gs, path: Path) -> dict:
    """PROTEINS' run: every graph's nodes and edges, its client and its split (`exchange`)."""
    from benchmarks.peers import exchange
    from fgl_jax.systems.baseline import graph_split
    assignment, masks = graph_split(cfg, gs)
    exchange.write_graphs(path, gs.x, gs.node_offsets, gs.senders, gs.receivers, gs.edge_offsets, gs.y, assignment,
                          masks["train"], masks["test"])
    return {"in_dim": int(gs.x.shape[1]), "num_classes": int(gs.num_classes),
            "graphs_per_client": np.bincount(assignment, minlength=cfg.clients).tolist()}


def standardise(gs):
    """The graph set with every node feature column z-scored over all its nodes (mean 0, sd 1; a constant
    column only centred): PROTEINS' node attribute spans -538..798 (sd 12.5) beside three one-hot
    columns, which makes SGD at lr >= 0.01 diverge. Label-free and split-free; both sides get these
    features (the export is of the same set)."""
    import dataclasses
    x = np.asarray(gs.x, np.float64)
    sd = x.std(0)
    return dataclasses.replace(gs, x=((x - x.mean(0)) / np.where(sd > 0, sd, 1.0)).astype(np.float32))


def run_fgl(algorithm, prep, seed: int, rounds: int) -> dict:
    """One fgl_jax run of the already compiled program: test accuracy after `rounds` rounds, time."""
    import jax
    from fgl_jax import run
    c0 = time.process_time()
    res = run(algorithm, prep.data, jax.random.key(seed), rounds)
    cpu = time.process_time() - c0
    return {"test_acc": float(res.history["test_acc"][-1]), "curve": [float(v) for v in res.history["test_acc"]],
            "ms_per_round": 1000.0 * res.run_seconds / res.rounds_run,
            "cpu_ms_per_round": 1000.0 * cpu / res.rounds_run}


def run_pfllib(job: dict, work: Path, venv_python: Path) -> dict:
    (work / "job.json").write_text(json.dumps(job))
    proc = subprocess.run([str(venv_python), str(HERE / "run_pfllib.py"), str(work / "job.json"),
                           str(work / "result.json")], capture_output=True, text=True)
    if proc.returncode:
        raise RuntimeError(f"PFLlib run failed ({job['pfllib_args']['algorithm']}, seed {job['seed']}):\n"
                           f"{proc.stderr[-3000:]}")
    return json.loads((work / "result.json").read_text())


def readings(algorithm: str, a) -> dict:
    """PFLlib's readings of one run, label (the cell's variant; "" = the default cell) -> the key of
    run_pfllib's `extra_evaluations` it is read from (None: PFLlib's own reported accuracy).

    --pfedme-eval-theta: PFLlib's own number is the toggled one (theta), unmodified PFLlib's (the
    aliased parameters) the extra reading; --fedala-eval-trained: PFLlib's own number is the default,
    the trained theta_i the extra reading. Training is the same run either way."""
    if algorithm == "pfedme" and a.pfedme_eval_theta:
        return {"": "pfllib_aliased", "PFLlib evaluates theta": None}
    if algorithm == "fedala" and a.fedala_eval_trained:
        return {"": None, "PFLlib evaluates trained theta_i": "trained"}
    return {"": None}


def reading(result: dict, extra) -> dict:
    """One cell's PFLlib side of a run: its result with test_acc and curve from the reading `extra`
    (None: as reported), the other readings left out (each has its own cell)."""
    out = {k: v for k, v in result.items() if k != "extra_evaluations"}
    if extra is not None:
        out.update(result["extra_evaluations"][extra], reading=extra)
    elif result.get("extra_evaluations"):
        out["reading"] = "reported"
    return out


def merge_runs(old, cell: dict) -> dict:
    """`cell` with the runs of the record's cell `old` (same key) whose seeds it did not run, each
    keeping the provenance of the invocation that ran it (a run without its own `provenance` has its
    cell's), sorted by seed."""
    if not old:
        return cell
    seeds = {r["seed"] for r in cell["runs"]}
    kept = [{**r, "provenance": r.get("provenance", old.get("provenance")), "command": r.get("command", old["command"])}
            for r in old["runs"] if r["seed"] not in seeds]
    mine = [{**r, "command": cell["command"]} for r in cell["runs"]]
    return {**cell, "runs": sorted(kept + mine, key=lambda r: r["seed"])}


def mean_sd(values) -> tuple[float, float]:
    v = np.asarray(values, float)
    return float(v.mean()), float(v.std(ddof=1)) if len(v) > 1 else 0.0


def row(cell: dict) -> dict:
    """One table row of a cell: accuracies as mean ± sd over its runs (seeds), the difference of the
    means, the last-10-round means, times averaged over its runs."""
    runs = cell["runs"]
    fa, fs = mean_sd([100 * r["fgl_jax"]["test_acc"] for r in runs])
    pa, ps = mean_sd([100 * r["pfllib"]["test_acc"] for r in runs])
    # the mean over the last (up to) 10 evaluated rounds: less noisy than one round's accuracy
    tail = lambda r, side: np.mean(r[side]["curve"][max(0, cell["rounds"] - 10):cell["rounds"]] if side == "fgl_jax"
                                   else r[side]["curve"][max(1, cell["rounds"] - 9):cell["rounds"] + 1])
    ft, pt = (100 * np.mean([tail(r, s) for r in runs]) for s in ("fgl_jax", "pfllib"))
    fw, pw = (np.mean([r[s]["ms_per_round"] for r in runs]) for s in ("fgl_jax", "pfllib"))
    fc, pc = (np.mean([r[s]["cpu_ms_per_round"] for r in runs]) for s in ("fgl_jax", "pfllib"))
    variant = f" [{cell['variant']}]" if cell.get("variant") else ""
    seeds = [r["seed"] for r in runs]
    return {"dataset": cell["dataset"], "algorithm": f"{cell['algorithm']} / {ALGORITHMS[cell['algorithm']]}{variant}",
            "seed": str(seeds[0]) if len(seeds) == 1 else ",".join(map(str, seeds)),
            "rounds": cell["rounds"], "fgl_jax acc %": f"{fa:.2f} ± {fs:.2f}" if len(runs) > 1 else f"{fa:.2f}",
            "PFLlib acc %": f"{pa:.2f} ± {ps:.2f}" if len(runs) > 1 else f"{pa:.2f}", "diff (pts)": f"{fa - pa:+.2f}",
            "last-10-round mean % fgl_jax / PFLlib": f"{ft:.2f} / {pt:.2f}",
            "fgl_jax ms/round": f"{fw:.1f}", "PFLlib ms/round": f"{pw:.1f}", "speed-up": f"{pw / fw:.1f}x",
            "fgl_jax cpu ms/round": f"{fc:.1f}", "PFLlib cpu ms/round": f"{pc:.1f}", "cpu speed-up": f"{pc / fc:.1f}x",
            **bound_columns(cell, pc),
            # records before warm_up_seconds existed stored the warm-up run's total as compile_seconds
            "fgl_jax warm-up s (compile + 1 run)": f"{cell.get('warm_up_seconds', cell['compile_seconds']):.1f}"}


def bound_columns(cell: dict, pfllib_cpu_ms: float) -> dict:
    """The round's floor and the largest possible CPU speed-up of a cell whose runs carry a product
    FLOP count (`benchmarks.peers.flops`) and whose invocation measured the core's best product rate;
    "-" otherwise (Cora: node-level, not counted; runs before the count existed)."""
    from benchmarks.peers import flops
    runs, rates = cell["runs"], cell.get("machine", {}).get("peak_gflops")
    if not rates or not all("bound" in r for r in runs):
        return {"products at peak ms": "-", "largest possible cpu speed-up": "-"}
    rate = flops.floor_rate(rates)
    floor_ms = 1e3 * float(np.mean([r["bound"]["total"] for r in runs])) / 1e9 / rate
    return {"products at peak ms": f"{floor_ms:.0f}",
            "largest possible cpu speed-up": f"{pfllib_cpu_ms / floor_ms:.1f}x"}


def over_seeds(cell: dict) -> dict:
    """The "over seeds" row of a cell with more than one run: accuracies mean ± sd over the seeds,
    the per-seed differences' mean ± sd and range, and the last-10-round means' difference."""
    r = row(cell)
    d = [100 * (x["fgl_jax"]["test_acc"] - x["pfllib"]["test_acc"]) for x in cell["runs"]]
    dm, ds = mean_sd(d)
    ft, pt = (float(v) for v in r["last-10-round mean % fgl_jax / PFLlib"].split(" / "))
    return {"dataset": r["dataset"], "algorithm": r["algorithm"], "seeds": r["seed"], "rounds": r["rounds"],
            "fgl_jax acc %": r["fgl_jax acc %"], "PFLlib acc %": r["PFLlib acc %"],
            "diff (pts) mean ± sd": f"{dm:+.2f} ± {ds:.2f}", "diff min / max": f"{min(d):+.2f} / {max(d):+.2f}",
            "last-10 diff (pts)": f"{ft - pt:+.2f}"}


def table_rows(cells: dict) -> tuple[list[dict], list[dict]]:
    """The record's rows, as both renderings show them.

    Args:
        cells: the record's cells (key -> cell with its runs).

    Returns:
        (one `row` per cell and seed, one `over_seeds` row per cell with more than one seed), in key order.
    """
    per_seed = [row({**c, "runs": [r]}) for _, c in sorted(cells.items()) for r in c["runs"]]
    return per_seed, [over_seeds(c) for _, c in sorted(cells.items()) if len(c["runs"]) > 1]


def write_markdown(path: Path, cells: dict) -> None:
    from fgl_jax import table
    per_seed, multi = table_rows(cells)
    lines = [f"# {TITLE}", "", "Written by `benchmarks/peers/pfllib/compare.py` (the record beside it holds every run, "
             "its per-round curves, the settings and the machine). One row per cell and seed; the warm-up is the "
             "cell's last invocation's.", "", table(per_seed, disable_numparse=True), ""]
    if multi:
        lines += ["## Over seeds", "", "Cells with more than one seed: accuracy mean ± sd over the seeds, the "
                  "per-seed differences (fgl_jax minus PFLlib) as mean ± sd and min / max.", "",
                  table(multi, disable_numparse=True), ""]
    for key, c in sorted(cells.items()):
        m = c["machine"]
        loads = ", ".join(f"seed {r['seed']} {r['loadavg'][0]:.1f}" for r in c["runs"])
        lines.append(f"- {key}: {c['setting']}; load average at start {loads}; {m.get('cpu_model', '?')}, "
                     f"{m['cpu_count']} cores; " + "; ".join(
                         f"seed {r['seed']}: `{r.get('command', c['command'])}`" for r in c["runs"]) + ".")
    rates = [c["machine"]["peak_gflops"] for c in cells.values() if c["machine"].get("peak_gflops")]
    if rates:
        r = rates[-1]
        lines += ["", "Bound columns (graph tasks): the matrix products one round must compute "
                  "(`benchmarks/peers/flops.py`: the dot_generals of one training step, forward and gradient, on "
                  "every client's training graphs, times the local epochs and the algorithm's own passes: "
                  "pFedMe's K inner steps, Ditto's two models; plus one forward pass over every client's graphs, "
                  "read from the lowered StableHLO; aggregation, element-wise work and other extra terms not "
                  "counted) at the core's peak "
                  "float32 FMA rate (`benchmarks/peers/fma_peak.c`, best of three, measured by each cell's invocation; "
                  f"the last: {r.get('fma') or 0:.1f} GFLOP/s; "
                  f"the fastest library kernels, a 2048 x 2048 product on one thread: jax {r['jax']:.1f}, torch "
                  f"{r['torch']:.1f}; without a C compiler the fastest kernel's rate is used). No implementation of "
                  "fgl_jax's round runs faster on this core, so PFLlib's CPU ms per round over that floor is the "
                  "largest CPU speed-up any implementation could show against PFLlib's measured round (both sides "
                  "train the same model here)."]
    lines += ["", "Differences that remain (besides the shared setting):", ""]
    for k in ["all"] + sorted({c["algorithm"] for c in cells.values()}):
        lines += [f"- {k}: {d}" for d in DIFFERENCES.get(k, [])]
    path.write_text("\n".join(lines) + "\n")


COMPACT = ("dataset", "algorithm", "seed", "rounds", "fgl_jax acc %", "PFLlib acc %", "diff (pts)",
           "last-10-round mean % fgl_jax / PFLlib", "fgl_jax cpu ms/round", "PFLlib cpu ms/round", "cpu speed-up",
           "largest possible cpu speed-up", "fgl_jax warm-up s (compile + 1 run)")


def pipe_table(rows: list[dict], columns) -> list[str]:
    """A GitHub pipe table (header, rule, rows) of `columns` of `rows`."""
    return (["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
            + ["| " + " | ".join(str(r[c]) for c in columns) + " |" for r in rows])


def compact(cells: dict) -> str:
    """docs/personalised.md's tables of the record: one row per cell and seed (COMPACT's columns), then
    the cells with more than one seed over their seeds (`over_seeds`)."""
    per_seed, multi = table_rows(cells)
    lines = pipe_table(per_seed, COMPACT)
    if multi:
        lines += ["", "Over seeds:", ""] + pipe_table(multi, list(multi[0]))
    return "\n".join(lines)


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--datasets", nargs="+", default=["cora"], choices=["cora", "PROTEINS"], help="Cora (node "
                   "classification) and/or PROTEINS (graph classification)")
    p.add_argument("--algorithms", nargs="+", default=PERSONALISED, choices=list(ALGORITHMS),
                   help="fgl_jax names; PFLlib's are ALGORITHMS' values (fedavg: the baseline both sides must train, "
                        "to choose an lr)")
    p.add_argument("--seeds", nargs="+", type=int, default=[0], help="run seeds (fgl_jax split seed and both "
                   "sides' initialisation seed)")
    p.add_argument("--rounds", type=int, default=50, help="communication rounds on both sides")
    p.add_argument("--clients", type=int, default=10, help="number of clients")
    p.add_argument("--local-epochs", type=int, default=5, help="local epochs per round = full-batch SGD steps")
    p.add_argument("--lr", type=float, default=0.2, help="SGD learning rate of every client model (both sides)")
    p.add_argument("--graph-lr", type=float, default=0.05, help="PROTEINS: SGD learning rate of every method "
                   "(both sides; pFedMe too). 0.05 with standardised features: FedAvg's curve rises on both sides "
                   "(raw features: 0.001 oscillates between one-class predictions, 0.01 diverges in fgl_jax)")
    p.add_argument("--graph-features", default="standardised", choices=["raw", "standardised"], help="PROTEINS: the node "
                   "features both sides get: raw (the TU file's; one attribute spans -538..798, and fgl_jax's "
                   "FedAvg diverges at lr 0.01) or standardised (every column z-scored over all nodes)")
    p.add_argument("--pfedme-lr", type=float, default=0.05, help="pFedMe's outer learning rate (its local "
                   "model moves by lr * lambda * (w - theta): lr * lambda must stay below 1)")
    p.add_argument("--hidden", type=int, default=64, help="hidden width")
    p.add_argument("--dropout", type=float, default=0.0, help="dropout rate between layers")
    p.add_argument("--ditto-lambda", type=float, default=0.1, help="Ditto lambda (PFLlib mu)")
    p.add_argument("--head-epochs", type=int, default=5, help="FedRep head epochs (PFLlib plocal_epochs)")
    p.add_argument("--apfl-alpha", type=float, default=0.25, help="APFL initial alpha (PFLlib alpha)")
    p.add_argument("--pfedme-lambda", type=float, default=15.0, help="pFedMe lambda (PFLlib lamda)")
    p.add_argument("--pfedme-k", type=int, default=5, help="pFedMe inner steps K (PFLlib K)")
    p.add_argument("--pfedme-personal-lr", type=float, default=0.09, help="pFedMe personal lr (PFLlib p_learning_rate)")
    p.add_argument("--pfedme-eval-theta", action="store_true",
                   help="a toggled PFLlib pFedMe: evaluate_personalized reads each client's personal theta (a copy "
                        "of the last inner solution) instead of the parameter objects it aliases; training unchanged; "
                        "the cell is keyed apart")
    p.add_argument("--fedala-eval-trained", action="store_true",
                   help="FedALA: also read each PFLlib client's trained local model theta_i (what fgl_jax "
                        "evaluates) before the next round's ALA replaces it, in the same run (its time taken "
                        "out); writes the cell [PFLlib evaluates trained theta_i] beside the default one")
    p.add_argument("--fedala-init-steps", type=int, default=20, help="fgl_jax's fedala_init_steps, the gradient "
                   "steps on W at a client's first adaptive aggregation (PFLlib trains until the std of its last "
                   "10 losses < 0.1: the passes it took are in the record); not 20 keys the cell apart")
    p.add_argument("--apfl-variant", default="paper", choices=["paper", "pfllib"], help="fgl_jax's apfl_variant "
                   "(pfllib: PFLlib's local update, to measure the APFL gap); the cell is keyed apart")
    p.add_argument("--pfedme-weight-decay", type=float, default=0.0, help="fgl_jax's pfedme_inner_weight_decay "
                   "(PFLlib's pFedMeOptimizer uses 0.001 always); non-zero keys the cell apart")
    p.add_argument("--fgl-momentum", type=float, default=0.0, help="fgl_jax's client SGD momentum (PFLlib's "
                   "clients use plain torch SGD: 0; the cells before this option ran fgl_jax at its default 0.9); "
                   "non-zero keys the cell apart")
    p.add_argument("--fgl-eval-mode", default="auto", help="fgl_jax's eval_mode (e.g. global_model_on_local_data: "
                   "what PFLlib's pFedMe evaluate_personalized reads through its aliased parameters); non-auto keys "
                   "the cell apart")
    p.add_argument("--beta", type=float, default=0.5, help="PROTEINS: label-skew Dirichlet concentration")
    p.add_argument("--threads", type=int, default=1, help="CPU threads per side (torch and XLA); 1 on this shared box")
    p.add_argument("--venv", default=str(DEFAULT_VENV), help="the PFLlib venv of setup.sh")
    p.add_argument("--src", default=str(DEFAULT_SRC), help="PFLlib's extracted source (setup.sh)")
    p.add_argument("--out", default=str(HERE / "results"), help="record stem: <out>.json (cells replaced per "
                   "(dataset, algorithm), the others kept) and <out>.md")
    p.add_argument("--render", action="store_true", help="only re-write <out>.md from the record <out>.json")
    p.add_argument("--compact", action="store_true", help="only print docs/personalised.md's tables (per seed, "
                   "over seeds) from the record <out>.json")
    a = p.parse_args(argv)
    if a.compact:
        from fgl_jax import records
        print(compact(records.read(Path(f"{a.out}.json"))["metrics"]["cells"]))
        return
    if a.render:
        from fgl_jax import records
        out = Path(a.out)
        write_markdown(Path(f"{out}.md"), records.read(Path(f"{out}.json"))["metrics"]["cells"])
        return
    venv_python = Path(a.venv) / "bin" / "python"
    if not venv_python.exists():
        sys.exit(f"PFLlib venv missing at {a.venv}: run benchmarks/peers/pfllib/setup.sh first")
    if not (Path(a.src) / "system" / "flcore").is_dir():
        sys.exit(f"PFLlib source missing at {a.src}: run benchmarks/peers/pfllib/setup.sh first")
    if a.threads == 1 and "jax" not in sys.modules:
        os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " --xla_cpu_multi_thread_eigen=false").strip()
    from benchmarks.harness import write_record
    from benchmarks.peers.openfgl.compare_graph_fl import usable_partition_seed
    from fgl_jax import RunConfig, records
    from fgl_jax.systems.baseline import algorithm_from_config, graph_split, prepare

    info = machine_info()
    if any(ds != "cora" for ds in a.datasets):   # the rate of the bound columns (graph tasks)
        from benchmarks.peers import flops
        cpu = sorted(os.sched_getaffinity(0))[0] if len(os.sched_getaffinity(0)) == 1 else None
        info["peak_gflops"] = flops.peak_rates(sys.executable, str(venv_python), cpu)
        print(f"peak rates, GFLOP/s: {info['peak_gflops']}", flush=True)
    cells, i = {}, 0
    with tempfile.TemporaryDirectory(prefix="pfllib_cmp_") as tmp:
        for ds in a.datasets:
            for algo in a.algorithms:
                fgl_opts, pfl_args = HPARAMS[algo](a)
                lr = a.graph_lr if ds != "cora" else a.pfedme_lr if algo == "pfedme" else a.lr
                common = dict(dataset=ds, algorithm=algo, clients=a.clients, hidden=a.hidden, num_layers=2,
                              dropout=a.dropout, local_steps=a.local_epochs, optimizer="sgd", lr=lr,
                              momentum=a.fgl_momentum,
                              weight_decay=0.0, rounds=a.rounds, eval_mode=a.fgl_eval_mode, eval_average="pooled",
                              **fgl_opts)
                if ds == "cora":
                    cfg = RunConfig(partition="louvain", split="openfgl", model="gcn", **common)
                else:
                    cfg = RunConfig(task="graph_cls", partition="dirichlet", dirichlet_beta=a.beta, graph_model="gin",
                                    graph_pooling="mean", **common)
                # a toggled run (the gap measured, not read) gets its own cell beside the default one
                fgl_variant = [t for t, on in (
                    ("fgl_jax apfl_variant pfllib", algo == "apfl" and a.apfl_variant != "paper"),
                    (f"fgl_jax pfedme_inner_weight_decay {a.pfedme_weight_decay:g}",
                     algo == "pfedme" and a.pfedme_weight_decay != 0),
                    (f"fgl_jax fedala_init_steps {a.fedala_init_steps}", algo == "fedala" and a.fedala_init_steps != 20),
                    (f"fgl_jax eval_mode {a.fgl_eval_mode}", a.fgl_eval_mode != "auto"),
                    (f"fgl_jax momentum {a.fgl_momentum:g}", a.fgl_momentum != 0)) if on]
                # PFLlib's readings of one run: label -> where its accuracy comes from (readings.__doc__)
                reads = readings(algo, a)
                base = {"dataset": ds, "algorithm": algo, "rounds": a.rounds, "fgl_jax_options": fgl_opts,
                        "pfllib_args": pfl_args, "lr": lr, "machine": info, "command": " ".join(sys.argv),
                        "differences": DIFFERENCES["all"] + DIFFERENCES[algo]}
                cells_of = {}
                for label in reads:
                    variant = ", ".join(fgl_variant + ([label] if label else []))
                    cells_of[label] = (f"{ds}/{algo}" + (f" [{variant}]" if variant else ""),
                                       {**base, "variant": variant, "runs": []})
                algorithm = None
                for seed in a.seeds:
                    c = cfg.replace(split_seed=seed, seed=seed)
                    gs = None
                    if ds != "cora":   # every client with a validation and a test graph (else its val loss is 0/0)
                        gs = prepare(c).graph
                        if a.graph_features == "standardised":
                            gs = standardise(gs)
                        c = c.replace(partition_seed=usable_partition_seed(c, gs))
                        # one mini-batch of all a client's training graphs (PFLlib: batch size = its train samples)
                        assignment, masks = graph_split(c, gs)
                        c = c.replace(graph_batch_size=int(np.bincount(assignment[masks["train"]]).max()))
                    prep = prepare(c, gs)
                    work = Path(tmp) / f"{ds}_{algo}_{seed}"
                    work.mkdir(parents=True)
                    if ds == "cora":
                        shape = export_nodes(prep, work / "arrays.npz")
                    else:
                        shape = export_graphs(c, prep.graph, work / "arrays.npz")
                    if algorithm is None:   # one compiled program per cell, reused by its seeds
                        algorithm = algorithm_from_config(c, prep.graph)
                        t = time.perf_counter()
                        import jax
                        from fgl_jax import run
                        warm = run(algorithm, prep.data, jax.random.key(seed), a.rounds)
                        warm_up = time.perf_counter() - t       # compile + one untimed run
                        compile_s = float(warm.compile_seconds)
                    job = {"task": "node_cls" if ds == "cora" else "graph_cls", "arrays": str(work / "arrays.npz"),
                           "work": str(work), "name": f"{ds}_{seed}", "pfllib_src": str(a.src), "seed": seed,
                           "rounds": a.rounds, "clients": a.clients, "hidden": a.hidden, "num_layers": 2,
                           "dropout": a.dropout, "pooling": "mean", "threads": a.threads,
                           "norm": fgl_opts.get("norm", "none"), **shape,
                           "pfedme_eval_theta": a.pfedme_eval_theta, "fedala_eval_trained": a.fedala_eval_trained,
                           "pfllib_args": {"algorithm": ALGORITHMS[algo], "dataset": f"{ds}_{seed}",
                                           "num_classes": shape["num_classes"], "num_clients": a.clients,
                                           "global_rounds": a.rounds, "local_epochs": a.local_epochs,
                                           "local_learning_rate": lr, "eval_gap": 1, "times": seed,
                                           "save_folder_name": str(work / "items"), **pfl_args}}
                    sides = [("fgl_jax", lambda: run_fgl(algorithm, prep, seed, a.rounds)),
                             ("pfllib", lambda: run_pfllib(job, work, venv_python))]
                    if i % 2:
                        sides.reverse()
                    rec = {"seed": seed, "first": sides[0][0], "loadavg": list(os.getloadavg())}
                    if ds != "cora":   # the matrix products one round must compute (benchmarks/peers/flops.py)
                        from benchmarks.peers import flops
                        rec["bound"] = flops.round_product_flops(c, prep)
                    for name, fn in sides:
                        rec[name] = fn()
                    rec["loadavg_end"] = list(os.getloadavg())
                    i += 1
                    info["loadavg_end"] = rec["loadavg_end"]
                    setting = (f"{a.clients} clients ({'Louvain, 20/40/40 per client' if ds == 'cora' else f'label skew beta {a.beta}, 80/10/10 per client'}), "
                               f"{'GCN' if ds == 'cora' else 'GIN-0 mean readout'} 2 x {a.hidden}{'' if ds == 'cora' or a.graph_features == 'raw' else ', standardised node features'}, dropout {a.dropout}, SGD lr {lr} (fgl_jax momentum {a.fgl_momentum:g}), "
                               f"{a.local_epochs} full-batch local epochs, {a.rounds} rounds; "
                               f"fgl_jax {json.dumps(fgl_opts)}, PFLlib {json.dumps(pfl_args)}")
                    new = {}
                    for label, (key, cell) in cells_of.items():
                        cell["runs"].append({**rec, "pfllib": reading(rec["pfllib"], reads[label])})
                        cell["setting"] = setting
                        cell.update({k: v for k, v in (("warm_up_seconds", warm_up), ("compile_seconds", compile_s))})
                        new[key] = cell
                        r = cell["runs"][-1]
                        print(f"{key} seed {seed}: fgl_jax {r['fgl_jax']['test_acc']:.4f} "
                              f"({r['fgl_jax']['cpu_ms_per_round']:.1f} cpu ms/round), PFLlib {r['pfllib']['test_acc']:.4f} "
                              f"({r['pfllib']['cpu_ms_per_round']:.1f} cpu ms/round)", flush=True)
                    # written as every seed finishes: the record's runs of other seeds are kept
                    out = Path(a.out)
                    old = records.read(Path(f"{out}.json"))["metrics"]["cells"] if Path(f"{out}.json").exists() else {}
                    merged = {k: merge_runs(old.get(k), c) for k, c in new.items()}
                    seeds = sorted({r["seed"] for c in {**old, **merged}.values() for r in c["runs"]})
                    write_record(Path(f"{out}.json"), {"cells": merged}, title=TITLE,
                                 seeds=seeds, parts="cells", config={"settings": vars(a)})
                    write_markdown(Path(f"{out}.md"), records.read(Path(f"{out}.json"))["metrics"]["cells"])

if __name__ == "__main__":
    main()
