"""fgl_jax vs OpenFGL 1.1.0, side by side on the same setting (outside CI; never imported by tests).

    bash benchmarks/peers/openfgl/setup.sh [VENV]    # once: VENV or benchmarks/peers/.venv-openfgl
    FGL_JAX_DATA=/work/shared/data nice python -m benchmarks.peers.openfgl.compare \
        --datasets cora citeseer --algorithms local fedavg fedprox --seeds 0 1 2 --rounds 100

What is shared, by construction: fgl_jax loads the Planetoid files, partitions them into Louvain
clients (fgl_jax's partitioner, seed 0, one partition per dataset) and draws OpenFGL's per-client
20/40/40 split (`split="openfgl"`, split_seed = the run's seed); the features, labels, client
subgraphs (cross-client edges dropped) and masks are written into OpenFGL's cache layout
(`run_openfgl.py`), so OpenFGL trains on identical clients and nodes. Model (2-layer GCN, hidden,
dropout), Adam with coupled L2 weight decay, lr, local epochs (full-batch steps), rounds, FedProx mu,
evaluation mode (default OpenFGL's: each client's model on its own data) and OpenFGL's
node-weighted averaging of client metrics are set equal on both sides. The reported accuracy is
the test accuracy at the round of best validation accuracy (both sides: first maximum).

Time: ms/round = wall time of the training rounds / rounds, within one run, on both sides
(fgl_jax: the compiled scan, compile time reported apart; OpenFGL: FGLTrainer.train() with its
printing sent to a buffer). Runs alternate sides (fgl_jax first on even runs, OpenFGL first on odd).

A peer so slow that it is run ahead (in the background, while fgl_jax's side is still being worked
on): `--openfgl-only` runs OpenFGL's side alone and appends each run to <out>.jsonl; a later
invocation with `--openfgl-from <out>.jsonl` takes those runs instead of re-running them. Such runs
are marked `reused_from` in the JSON (the two sides were then not alternated in one run; the notes
say so, and the docs table shows only their CPU ratio).

Differences that remain are listed in PROTOCOL_DIFFERENCES and written to the results.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
# setup.sh's default venv; --venv or $OPENFGL_VENV point elsewhere (e.g. a venv outside the work tree)
DEFAULT_VENV = HERE.parent / ".venv-openfgl"

# fgl_jax algorithm -> OpenFGL fl_algorithm; names fgl_jax has not registered are skipped.
ALGORITHMS = {"local": "isolate", "fedavg": "fedavg", "fedprox": "fedprox", "scaffold": "scaffold",
              "moon": "moon", "feddc": "feddc", "fedproto": "fedproto", "fedtgp": "fedtgp",
              "fedpub": "fedpub", "fgssl": "fgssl",
              "fggp": "fggp", "fedgl": "fedgl",
              "fedgta": "fedgta", "fedtad": "fedtad", "adafgl": "adafgl",
              "fedsage_plus": "fedsage_plus", "feddep": "feddep"}
DATASETS = {"cora": "Cora", "citeseer": "CiteSeer", "pubmed": "PubMed"}

# fgl_jax options per algorithm: OpenFGL 1.1.0's defaults (openfgl/flcore/<name>/<name>_config.py
# and the servers' constructor defaults) and, where the fgl_jax module offers one, the option that
# reproduces OpenFGL's variant of the algorithm (see each module's docstring).
FGL_OPTIONS = {
    # OpenFGL: option II with 1/(epochs*lr), no global step size (eta_g = 1): fgl_jax's defaults
    "scaffold": {"scaffold_variate": "II", "scaffold_server_lr": 1.0},
    # moon_config: moon_mu 1, temperature 0.5; contrastive loss averaged over every node
    "moon": {"moon_mu": 1.0, "moon_tau": 0.5, "moon_nodes": "all"},
    # feddc_config: alpha 0.1; its correction/lagged drift; server weights = client sizes
    "feddc": {"feddc_alpha": 0.1, "feddc_variant": "openfgl", "feddc_weights": "nodes"},
    # fedproto_config: lambda 1; client-size weights with zero prototypes; sum of per-class MSEs
    "fedproto": {"fedproto_lambda": 1.0, "proto_weights": "openfgl", "proto_loss": "per_class"},
    # fedtgp_config: lambda 1; FedTGPServer(num_glb_epochs=10, lr_glb=1e-2), margin min(max gap, 100)
    "fedtgp": {"fedtgp_lambda": 1.0, "tgp_variant": "openfgl", "tgp_server_epochs": 10,
               "tgp_server_lr": 0.01, "tgp_margin": 100.0},
    # fedpub_config: l1 1e-3, loc_l2 1e-3, agg_norm exp, norm_scale 10, n_proxy 5; its regularisers
    # never reach the gradient (state_dict tensors are detached): fedpub_reg=code
    "fedpub": {"fedpub_l1": 1e-3, "fedpub_loc_l2": 1e-3, "fedpub_agg_norm": "exp", "fedpub_tau": 10.0,
               "fedpub_proxy_graphs": 5, "fedpub_reg": "code"},
    # OpenFGL's FGSSLClient trains CE + 0.1 x its edge-wise distillation (constants in the module)
    "fgssl": {"fgssl_variant": "code", "fgssl_edge": 0.1},
    # fedgl_config: ssl_loss_weight 0.1, probability_threshold 0.5, pseudo graph off; its server keeps
    # the first round's pseudo labels (see fgl_jax/algorithms/fedgl.py)
    "fedgl": {"fedgl_ssl_weight": 0.1, "fedgl_threshold": 0.5, "fedgl_pseudo_labels": "first_round",
              "fedgl_model": "openfgl"},
    # FGGP: OpenFGL's Gumbel temperature 0.5 and alignment temperature 0.5 (hard-coded there) and its FedGCN
    "fggp": {"fggp_tau": 0.5, "fggp_temperature": 0.5, "fggp_model": "openfgl"},
    # fedgta_config: prop_steps 5, lp_alpha 0.5, temperature 20, num_moments 10, hybrid, accept_alpha 0.5
    "fedgta": {"fedgta_prop_steps": 5, "fedgta_lp_alpha": 0.5, "fedgta_temperature": 20.0,
               "fedgta_num_moments": 10, "fedgta_moment_type": "hybrid", "fedgta_accept_alpha": 0.5},
    # fedtad_config: glb_epochs 5, it_g 1, it_d 5, lr_g = lr_d = 1e-3, num_gen 100, topk 5, lam1 = lam2 = 1,
    # max_walk_length 5; OpenFGL normalises each client's CKR over its classes
    "fedtad": {"fedtad_glb_epochs": 5, "fedtad_it_g": 1, "fedtad_it_d": 5, "fedtad_lr_g": 1e-3, "fedtad_lr_d": 1e-3,
               "fedtad_num_gen": 100, "fedtad_topk": 5, "fedtad_lam1": 1.0, "fedtad_lam2": 1.0,
               "fedtad_walk_length": 5, "fedtad_ckr_norm": "classes"},
    # adafgl_config: 50 FedAvg rounds, prop_steps 3, r 0.5, lr 1e-2, weight decay 5e-4 (needs > 50 rounds)
    "adafgl": {"adafgl_rounds_vanilla": 50, "adafgl_prop_steps": 3, "adafgl_r": 0.5, "adafgl_lr": 1e-2,
               "adafgl_weight_decay": 5e-4},
    # fedsage_plus_config: hidden_portion 0.5, latent_dim 128, max_pred 5, gen_rounds 10, trade-offs 1;
    # node->generated mending edges, loss / sampled clients, uniform average
    "fedsage_plus": {"fedsage_variant": "openfgl", "fedsage_hidden_portion": 0.5, "fedsage_latent": 128,
                     "fedsage_num_pred": 5, "fedsage_gen_rounds": 10, "fedsage_lambda_d": 1.0,
                     "fedsage_lambda_f": 1.0, "fedsage_lambda_c": 1.0},
    # feddep_config: num_preds 5, num_protos 5, hide_portion 0.5, gen_hidden 128, pre_train_epochs 2,
    # feddep_epochs 3, beta_d = beta_n = beta_c = 1, encoder_epochs 50; embeddings of hid_dim (64);
    # one epoch of minibatches of 64 per round, uniform average, its empty-slot test; PyTorch's
    # initialisation of the classifier (with 1 step a round it has not converged by round 30, and
    # fgl_jax's Glorot start was 1.9 points higher on Cora seed 0: 78.93 vs 77.04)
    "feddep": {"feddep_variant": "openfgl", "feddep_init": "torch", "feddep_num_pred": 5, "feddep_num_protos": 5,
               "feddep_hidden_portion": 0.5, "feddep_latent": 128, "feddep_pretrain_epochs": 2,
               "feddep_epochs": 3, "feddep_beta_d": 1.0, "feddep_beta_n": 1.0, "feddep_beta_c": 1.0,
               "feddep_encoder_epochs": 50, "feddep_emb_dim": 64, "feddep_batch_size": 64,
               # OpenFGL's local epoch runs in eval mode (no dropout): results_feddep_acc.md
               "feddep_local_dropout": False},
}
# The same values written into OpenFGL's config dicts (so both sides are set from here; they equal
# OpenFGL's defaults). FedTGP's server epochs/lr are constructor defaults, left as they are.
OPENFGL_CONFIG = {
    "moon": {"moon_mu": 1.0, "temperature": 0.5},
    "feddc": {"feddc_alpha": 0.1},
    "fedproto": {"fedproto_lambda": 1.0},
    "fedtgp": {"fedtgp_lambda": 1.0},
    "fedpub": {"l1": 1e-3, "loc_l2": 1e-3, "agg_norm": "exp", "norm_scale": 10, "n_proxy": 5},
    "fedgl": {"ssl_loss_weight": 0.1, "probability_threshold": 0.5, "pseudo_graph_weight": 0},
    "fedgta": {"prop_steps": 5, "lp_alpha": 0.5, "temperature": 20, "num_moments": 10, "moment_type": "hybrid",
               "accept_alpha": 0.5},
    "fedtad": {"glb_epochs": 5, "it_g": 1, "it_d": 5, "lr_g": 1e-3, "lr_d": 1e-3, "num_gen": 100, "topk": 5,
               "lam1": 1, "lam2": 1, "max_walk_length": 5},
    "adafgl": {"num_rounds_vanilla": 50, "prop_steps": 3, "r": 0.5, "adafgl_lr": 1e-2, "adafgl_weight_decay": 5e-4},
    "fedsage_plus": {"hidden_portion": 0.5, "latent_dim": 128, "max_pred": 5, "gen_rounds": 10,
                     "num_missing_trade_off": 1, "missing_feat_trade_off": 1, "cls_trade_off": 1},
    "feddep": {"num_preds": 5, "num_protos": 5, "hide_portion": 0.5, "gen_hidden": 128, "pre_train_epochs": 2,
               "feddep_epochs": 3, "beta_d": 1.0, "beta_n": 1.0, "beta_c": 1.0, "encoder_epochs": 50},
}

PROTOCOL_DIFFERENCES = [
    "FedAvg/FedProx aggregation weights: OpenFGL weights each client by its node count "
    "(task.num_samples), fgl_jax by its training-node count (with the 20% per-class split these are "
    "nearly proportional, not equal).",
    "Initialisation: both draw Glorot-uniform GCN weights and zero biases, but from different RNGs "
    "(torch vs JAX), so no run is reproduced bit for bit; for 'local' OpenFGL initialises every "
    "client independently, fgl_jax starts all clients from one draw.",
    "Dropout masks come from different RNGs (torch vs JAX).",
    "GCN normalisation: PyG's GCNConv adds remaining self-loops to the (coalesced, loop-free) client "
    "edges; fgl_jax adds a self-loop to each node; identical when the graph has no self-loops or "
    "duplicate edges, which the harness checks (edge_check in the JSON).",
    "Unlabelled nodes (CiteSeer's 15 featureless test-index gaps): fgl_jax gives them label -1 and "
    "puts them in no mask; in the exported data they get label 0 but are also in no mask on the "
    "OpenFGL side, so they only count in node counts (equally on both sides).",
    "Per-client split: OpenFGL's rule (per client, per class, floor of 20%/60%/100%) is reproduced "
    "and the masks are exported, so both sides use the same nodes; OpenFGL would otherwise draw its "
    "own with numpy's global RNG and cache it on disk (the same split for every seed).",
    "Partition: fgl_jax's Louvain merge rule, not OpenFGL's subgraph_fl_louvain (scikit-network "
    "Louvain + its own merging); the same assignment is used on both sides.",
    "Timing: OpenFGL evaluates every client with sklearn on the host each round; fgl_jax's round "
    "includes its evaluation inside the compiled program. Both timings include evaluation.",
]

# Per algorithm, what remains different once FGL_OPTIONS select OpenFGL's variant.
ALGORITHM_DIFFERENCES = {
    "scaffold": "SCAFFOLD: model averaging weights are training-node shares (OpenFGL: node counts), as FedAvg.",
    "moon": "MOON: fgl_jax takes the contrastive embedding before dropout, OpenFGL after dropout "
            "(dropout 0.5 here), so OpenFGL's l_con sees dropped-out hidden units.",
    "feddc": "FedDC: theta_i + h_i averaged with training-node shares (OpenFGL: node counts).",
    "fedproto": "FedProto: prototypes averaged with training-node shares (OpenFGL: node counts); the "
                "prototype MSE uses the embedding before dropout in fgl_jax, after dropout in OpenFGL; "
                "every client starts from one initial draw (OpenFGL: independent draws).",
    "fedtgp": "FedTGP: as FedProto on the client side; server generator initialised from JAX's RNG "
              "(same distributions as torch's nn.Embedding/nn.Linear).",
    "fedpub": "FedPub: both sides use the masked GCN (2 masked GCN layers x hidden + masked linear "
              "classifier), not the plain GCN; the random proxy graph is drawn with NumPy in fgl_jax, with "
              "networkx + torch in OpenFGL (same distribution, different draws); OpenFGL's module imports "
              "torch_scatter/torch_sparse, which have no wheel for this torch: run_openfgl.py serves the "
              "names it uses (scatter_add through torch_geometric.utils.scatter; the SparseTensor branch is "
              "never taken).",
    "fgssl": "FGSSL: augmentations drawn from JAX's RNG vs torch's (same probabilities); the dropout on "
             "the local embedding is a separate draw from the next layer's (OpenFGL: one draw); OpenFGL's "
             "module imports torch_scatter (unused for its L2L contrast), served by run_openfgl.py.",
    "fggp": "FGGP: both sides train OpenFGL's raw-adjacency GCN (fgl_jax: gcn_sum, same init distribution); "
            "OpenFGL's later local steps build the view from the previous step's sampled graph (fgl_jax: from "
            "the client graph) and take embeddings after dropout (fgl_jax: before); OpenFGL's constant "
            "graph-reconstruction term and unused FINCH prototypes are not computed in fgl_jax.",
    "fedgl": "FedGL: both sides train OpenFGL's raw-adjacency GCN (fgl_jax: gcn_sum, same init distribution). "
             "A client without pseudo labels trains one random node towards class 0 in OpenFGL, nothing in "
             "fgl_jax; OpenFGL's model averaging weights are node counts, fgl_jax's training-node counts.",
    "fedgta": "FedGTA: none in the arithmetic (the aggregation weights are the clients' smoothing "
              "confidences, not node counts, on both sides); every client starts from one initial draw.",
    "fedtad": "FedTAD: models averaged with training-node shares (OpenFGL: node counts); the CKR walks, "
              "the noise z and the generator's initialisation come from different RNGs (NumPy/JAX vs torch).",
    "adafgl": "AdaFGL: phase-1 averaging with training-node shares (OpenFGL: node counts); the label-propagation "
              "split and the phase-2 initialisation from different RNGs; OpenFGL's CSR kernel (missing on Linux) "
              "replaced by scipy's product (run_openfgl.PATCHES).",
    "fedsage_plus": "FedSage+: both sides train GraphSAGE whatever --model says (OpenFGL's LocSAGEPlus); "
                    "hidden nodes and the cross-client draws come from different RNGs; fGen runs on the "
                    "training rows with a hidden neighbour only (OpenFGL: on every node; the others have no "
                    "loss, and OpenFGL's node->generated mending edges never reach the classifier); all "
                    "clients start from one initial draw (OpenFGL: independent draws).",
    "feddep": "FedDEP: both sides train the SAGE classifier with the generated-embedding branch whatever "
              "--model says (OpenFGL's Classifier_F), initialised from the same distributions (PyTorch's "
              "U(+-1/sqrt(fan_in))); DGen's layers keep flax's initialisers; prototypes by K-means (OpenFGL: DEC), the encoder "
              "trained full batch on logits (OpenFGL: sampled minibatches, softmax outputs); OpenFGL's "
              "cross-client gradient sums stale, doubled .grad buffers, fgl_jax the written loss "
              "(feddep_cross_grad=openfgl replays it); local epochs use full neighbourhoods (OpenFGL: 5 "
              "sampled per hop, through run_openfgl.py's stand-in NeighborSampler, since PyG's needs "
              "torch_sparse; feddep_fanout=5 draws them); hidden nodes, draws and initialisations from "
              "different RNGs. Each measured in results_feddep_acc.md (< 0.7 points on CiteSeer).",
}


def machine_info() -> dict:
    import jax
    info = {"platform": platform.platform(), "python": platform.python_version(), "cpu_count": os.cpu_count(),
            "jax": jax.__version__, "jax_devices": [str(d) for d in jax.devices()],
            "loadavg_start": list(os.getloadavg()), "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
            "XLA_FLAGS": os.environ.get("XLA_FLAGS", "")}
    try:
        info["cpu_model"] = next(l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return info


def edge_check(graph) -> dict:
    """Self-loops and duplicate directed edges of the graph (both sides' GCNs agree only without them)."""
    s, r = np.asarray(graph.senders, np.int64), np.asarray(graph.receivers, np.int64)
    key = s * graph.num_nodes + r
    back = np.isin(r * graph.num_nodes + s, key)
    return {"edges": int(len(s)), "self_loops": int((s == r).sum()),
            "duplicates": int(len(key) - len(np.unique(key))), "symmetric": bool(back.all())}


def export(prep, path: Path) -> None:
    """The graph, partition and split one run uses, for run_openfgl.py."""
    g = prep.graph
    np.savez(path, x=np.asarray(g.dense_x(), np.float32), y=np.asarray(g.y, np.int64),
             assignment=np.asarray(prep.partition.assignment, np.int64),
             senders=np.asarray(g.senders, np.int64), receivers=np.asarray(g.receivers, np.int64),
             train_mask=np.asarray(g.train_mask, bool), val_mask=np.asarray(g.val_mask, bool),
             test_mask=np.asarray(g.test_mask, bool))


def run_fgl(algorithm, prep, seed: int, rounds: int, compile_seconds: float) -> dict:
    """One fgl_jax run; the program is already compiled (`warm_up`), so the process CPU time of the
    call is the rounds' (plus run()'s small host work), comparable with OpenFGL's train()."""
    import jax
    from fgl_jax import run
    c0 = time.process_time()
    res = run(algorithm, prep.data, jax.random.key(seed), rounds)
    cpu = time.process_time() - c0
    return {"best_val": float(res.best["best_val"]), "best_test": float(res.best["best_test"]),
            "best_round": int(res.best["best_round"]), "final_test": float(res.history["test_acc"][-1]),
            "rounds": res.rounds_run, "compile_seconds": compile_seconds, "train_seconds": res.run_seconds,
            "ms_per_round": 1000.0 * res.run_seconds / res.rounds_run,
            "cpu_ms_per_round": 1000.0 * cpu / res.rounds_run,
            # this process's peak resident memory so far (data, compile and runs; Linux: KiB)
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def warm_up(algorithm, prep, rounds: int) -> float:
    """Compile the cell's program with a throwaway run (fgl_jax caches it per shape), so each timed
    run's CPU time holds no compile; returns the compile seconds."""
    import jax
    from fgl_jax import run
    return float(run(algorithm, prep.data, jax.random.key(0), rounds).compile_seconds)


def run_openfgl(job: dict, workdir: Path, venv_python: Path) -> dict:
    """OpenFGL's run of `job` in a fresh process."""
    job_path, out_path = workdir / "job.json", workdir / "result.json"
    job_path.write_text(json.dumps(job))
    env = dict(os.environ, TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD="1")
    proc = subprocess.run([str(venv_python), str(HERE / "run_openfgl.py"), str(job_path), str(out_path)],
                          capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        raise RuntimeError(f"OpenFGL run failed ({job['openfgl_algorithm']}, {job['openfgl_dataset']}, "
                           f"seed {job['seed']}):\n{proc.stderr[-3000:]}")
    return json.loads(out_path.read_text())


def legacy_marker(run: dict) -> dict:
    """A run from a results file written before `--openfgl-from` was the one reuse mechanism: its
    OpenFGL side marked `reused: True` (the removed --reuse-openfgl) gets the one marker, `reused_from`."""
    side = run.get("openfgl")
    if isinstance(side, dict) and side.get("reused") and not side.get("reused_from"):
        side = {k: v for k, v in side.items() if k != "reused"}
        return {**run, "openfgl": {**side, "reused_from": ["an earlier --openfgl-only workdir (--reuse-openfgl)"]}}
    return run


TITLE = "fgl_jax vs OpenFGL 1.1.0, node classification: the current result of every (dataset, algorithm) cell"


def mean_sd(values) -> tuple[float, float]:
    v = np.asarray(values, float)
    return float(v.mean()), float(v.std(ddof=1)) if len(v) > 1 else 0.0


def summarise(runs: list[dict]) -> list[dict]:
    rows = []
    cells = sorted({(r["dataset"], r["algorithm"]) for r in runs}, key=lambda c: (c[0], list(ALGORITHMS).index(c[1])))
    for ds, algo in cells:
        mine = [r for r in runs if (r["dataset"], r["algorithm"]) == (ds, algo)]
        fa, fs = mean_sd([100 * r["fgl_jax"]["best_test"] for r in mine])
        oa, os_ = mean_sd([100 * r["openfgl"]["best_test"] for r in mine])
        ft, _ = mean_sd([r["fgl_jax"]["ms_per_round"] for r in mine])
        ot, _ = mean_sd([r["openfgl"]["ms_per_round"] for r in mine])
        # process CPU time per round (runs from before this column have none): on a shared machine
        # it moves far less with the load than wall time does
        fc = [r["fgl_jax"].get("cpu_ms_per_round") for r in mine]
        oc = [r["openfgl"].get("cpu_ms_per_round") for r in mine]
        cpu = None not in fc + oc
        rows.append({"dataset": ds, "algorithm": f"{algo} / {ALGORITHMS[algo]}", "seeds": len(mine),
                     "fgl_jax acc %": f"{fa:.2f} ± {fs:.2f}", "OpenFGL acc %": f"{oa:.2f} ± {os_:.2f}",
                     "diff (pts)": f"{fa - oa:+.2f}", "fgl_jax ms/round": f"{ft:.1f}",
                     "OpenFGL ms/round": f"{ot:.1f}", "speed-up": f"{ot / ft:.1f}x",
                     "fgl_jax cpu ms/round": f"{np.mean(fc):.1f}" if cpu else "-",
                     "OpenFGL cpu ms/round": f"{np.mean(oc):.1f}" if cpu else "-",
                     "cpu speed-up": f"{np.mean(oc) / np.mean(fc):.1f}x" if cpu else "-",
                     # compiled once per cell (first seed); later seeds reuse it
                     "fgl_jax compile s": f"{max(r['fgl_jax']['compile_seconds'] for r in mine):.1f}"})
    return rows


def write_cells(path: Path, runs: list[dict], rows: list[dict], extra: dict, checks: dict, started: float,
                **provenance) -> None:
    """Write the cells of `rows` (summarise's, over `runs`) into the record at `path`: one part per
    (dataset, algorithm) with its row, its runs, its dataset's edge check and `extra` (the settings and
    notes of the invocation); each replaces that cell in the record, the other cells stay."""
    from fgl_jax import records
    cells = {}
    for row in rows:
        ds, algo = row["dataset"], row["algorithm"].split(" / ")[0]
        cells[f"{ds}/{algo}"] = {"row": row, "runs": [r for r in runs if (r["dataset"], r["algorithm"]) == (ds, algo)],
                                 "edge_check": checks.get(ds), **extra}
    seeds = sorted({r["seed"] for r in runs})
    rec = records.make(path.stem, {"cells": cells, "protocol_differences": PROTOCOL_DIFFERENCES}, seeds=seeds,
                       title=TITLE, provenance=records.provenance(started=started, **provenance))
    records.write_parts(path, rec, "cells")
    print(f"wrote {len(cells)} cells into {path} (python benchmarks/render.py renders the tables)")


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--datasets", nargs="+", default=["cora", "citeseer"], choices=sorted(DATASETS))
    p.add_argument("--algorithms", nargs="+", default=list(ALGORITHMS))
    p.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    p.add_argument("--rounds", type=int, default=100)
    p.add_argument("--clients", type=int, default=10)
    p.add_argument("--local-epochs", type=int, default=3)
    p.add_argument("--hidden", type=int, default=64)
    p.add_argument("--num-layers", type=int, default=2)
    p.add_argument("--dropout", type=float, default=0.5)
    p.add_argument("--lr", type=float, default=0.01)
    p.add_argument("--weight-decay", type=float, default=5e-4)
    p.add_argument("--prox-mu", type=float, default=1e-3, help="FedProx mu (OpenFGL's fedprox_config default)")
    p.add_argument("--eval-mode", default="local_model_on_local_data",
                   help="OpenFGL evaluation mode, used on both sides (OpenFGL's default)")
    p.add_argument("--threads", type=int, default=1, help="CPU threads per side: torch.set_num_threads and "
                   "XLA's intra-op threads (0 = each library's default). 1 by default: on a loaded shared "
                   "machine torch with 2 threads ran ~10x slower than with 1")
    p.add_argument("--venv", default=os.environ.get("OPENFGL_VENV", str(DEFAULT_VENV)),
                   help="the OpenFGL venv setup.sh made (default $OPENFGL_VENV, else benchmarks/peers/.venv-openfgl)")
    p.add_argument("--workdir", default=None, help="keep OpenFGL's data folders here (default: a temp dir)")
    p.add_argument("--out", default=str(HERE / "results"), help="stem of the record <out>.json: the cells this "
                   "invocation runs replace those in it, the other cells are kept (render the tables with "
                   "python benchmarks/render.py); --openfgl-only and --partial write scratch files beside it")
    p.add_argument("--openfgl-wait", type=float, default=0.0, help="seconds to wait for a run missing from "
                   "--openfgl-from to appear there (an OpenFGL-only run still going) before running it here")
    p.add_argument("--openfgl-from", nargs="+", default=None, help="JSON lines of earlier OpenFGL-only runs "
                   "(--openfgl-only): runs whose (dataset, algorithm, seed, rounds) match are taken from there, "
                   "not re-run (marked `reused_from`: the sides are NOT timed in one run; the results say so)")
    p.add_argument("--openfgl-only", action="store_true", help="run only OpenFGL's side, appending one JSON line "
                   "per run to <out>.jsonl (runs already there are skipped, so a stopped invocation resumes) "
                   "for a later --openfgl-from invocation; no table is written")
    p.add_argument("--merge", action="store_true", help="for the cells this invocation runs, keep the seeds "
                   "already in <out>.json that it does not re-run, and tabulate all of them")
    p.add_argument("--partial", action="store_true", help="after each run, write the runs so far to "
                   "<out>.partial.json (assemble.py reads it), so a stopped invocation keeps its CPU times")
    a = p.parse_args(argv)
    venv_python = Path(a.venv) / "bin" / "python"
    if not venv_python.exists():
        sys.exit(f"OpenFGL venv missing at {a.venv}: run benchmarks/peers/openfgl/setup.sh {a.venv} first")
    if Path(a.out).with_suffix(".json").exists() and not a.openfgl_only:
        # a malformed record fails now, in one line, not after the runs
        from fgl_jax import records
        try:
            records.read(Path(a.out).with_suffix(".json"))
        except records.RecordError as err:
            sys.exit(str(err))
    if a.threads == 1 and "jax" not in sys.modules:  # before jax is imported
        os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " --xla_cpu_multi_thread_eigen=false").strip()

    from fgl_jax import RunConfig, names, records, resolve_data_dir, table
    from fgl_jax.systems.baseline import algorithm_from_config, prepare

    started = time.time()
    algos = [n for n in a.algorithms if n in ALGORITHMS and n in names("algorithm")]
    skipped = [n for n in a.algorithms if n not in algos]
    if skipped:
        print(f"skipping (not registered in fgl_jax or no OpenFGL counterpart): {skipped}", flush=True)
    planetoid = Path(resolve_data_dir(None)) / "planetoid"
    info = machine_info()
    runs, checks, i = [], {}, 0
    reuse = {}

    only_out = Path(f"{a.out}.jsonl")

    def read_lines(paths) -> dict:
        """(dataset, algorithm, seed, rounds) -> the OpenFGL-only run of it in those JSON lines files."""
        found = {}
        for path in map(Path, paths):
            if path.exists():
                for line in path.read_text().splitlines():
                    r = json.loads(line)
                    found[(r["dataset"], r["algorithm"], r["seed"], r["rounds"])] = r
        return found

    def earlier_openfgl(key):
        """The OpenFGL-only run of key from --openfgl-from (re-read; waits up to --openfgl-wait s)."""
        t0 = time.perf_counter()
        while a.openfgl_from:
            reuse.update(read_lines(a.openfgl_from))
            if key in reuse or time.perf_counter() - t0 > a.openfgl_wait:
                break
            time.sleep(20)
        return reuse.get(key)
    with tempfile.TemporaryDirectory(prefix="openfgl_cmp_") as tmp:
        tmp = a.workdir or tmp
        for ds in a.datasets:
            for algo in algos:
                extra = {"prox_mu": a.prox_mu} if algo == "fedprox" else dict(FGL_OPTIONS.get(algo, {}))
                cfg = RunConfig(dataset=ds, algorithm=algo, clients=a.clients, partition="louvain",
                                split="openfgl", model="gcn", hidden=a.hidden, num_layers=a.num_layers,
                                dropout=a.dropout, local_steps=a.local_epochs, optimizer="adam", lr=a.lr,
                                weight_decay=a.weight_decay, rounds=a.rounds, eval_mode=a.eval_mode,
                                eval_average="client_nodes", **extra)
                algorithm = None
                for seed in a.seeds:
                    prep = prepare(cfg.replace(split_seed=seed, seed=seed))
                    checks.setdefault(ds, edge_check(prep.graph))
                    if algorithm is None and not a.openfgl_only:  # one per cell: the compiled scan is reused
                        algorithm = algorithm_from_config(cfg, prep.graph)
                        compile_s = warm_up(algorithm, prep, a.rounds)
                    work = Path(tmp) / f"{ds}_{algo}_{seed}"
                    work.mkdir(parents=True, exist_ok=True)
                    export(prep, work / "arrays.npz")
                    job = {"root": str(work / "root"), "planetoid_dir": str(planetoid), "arrays": str(work / "arrays.npz"),
                           "openfgl_dataset": DATASETS[ds], "openfgl_algorithm": ALGORITHMS[algo],
                           "clients": a.clients, "rounds": a.rounds, "hidden": a.hidden, "num_layers": a.num_layers,
                           "dropout": a.dropout, "lr": a.lr, "weight_decay": a.weight_decay,
                           "local_epochs": a.local_epochs, "eval_mode": a.eval_mode, "seed": seed,
                           "prox_mu": a.prox_mu, "num_classes": prep.graph.num_classes,
                           "threads": a.threads, "openfgl_config": OPENFGL_CONFIG.get(algo, {})}
                    key = (ds, algo, seed, a.rounds)
                    # the job as written to JSON, without this machine's paths
                    portable = json.loads(json.dumps({k: v for k, v in job.items()
                                                      if k not in ("root", "arrays", "planetoid_dir")}))
                    if a.openfgl_only:
                        if key in read_lines([only_out]):   # done by a stopped invocation
                            continue
                        load, t = list(os.getloadavg()), time.perf_counter()
                        r = run_openfgl(job, work, venv_python)
                        with open(only_out, "a") as f:
                            f.write(json.dumps({"dataset": ds, "algorithm": algo, "seed": seed, "rounds": a.rounds,
                                                "job": portable, "loadavg": load, "loadavg_end": list(os.getloadavg()),
                                                "wall_seconds": time.perf_counter() - t, "openfgl": r}) + "\n")
                        print(f"{ds} {algo} seed {seed}: OpenFGL {r['best_test']:.4f} ({r['cpu_ms_per_round']:.1f} "
                              f"cpu ms/round, peak {r['peak_rss_mb']:.0f} MB)", flush=True)
                        continue
                    earlier = earlier_openfgl(key)
                    if earlier is not None and earlier["job"] != portable:
                        sys.exit(f"--openfgl-from: the job of {ds} {algo} seed {seed} differs from this run's")
                    sides = [("fgl_jax", lambda: run_fgl(algorithm, prep, seed, a.rounds, compile_s)),
                             ("openfgl", (lambda: dict(earlier["openfgl"], reused_from=a.openfgl_from,
                                                       reused_loadavg=earlier["loadavg"]))
                              if earlier is not None else (lambda: run_openfgl(job, work, venv_python)))]
                    if i % 2:
                        sides.reverse()
                    rec = {"dataset": ds, "algorithm": algo, "seed": seed, "first": sides[0][0],
                           "loadavg": list(os.getloadavg())}
                    for name, fn in sides:
                        rec[name] = fn()
                    runs.append(rec)
                    i += 1
                    if a.partial:  # every finished run on disk at once (a long invocation may be stopped)
                        Path(a.out).with_suffix(".partial.json").write_text(json.dumps(
                            {"runs": runs, "machine": info, "provenance": {"command": " ".join(sys.argv)}}))
                    print(f"{ds} {algo} seed {seed}: fgl_jax {rec['fgl_jax']['best_test']:.4f} "
                          f"({rec['fgl_jax']['ms_per_round']:.1f} ms/round), OpenFGL {rec['openfgl']['best_test']:.4f} "
                          f"({rec['openfgl']['ms_per_round']:.1f} ms/round)", flush=True)
    if a.openfgl_only:
        print(f"wrote {only_out} (use it with --openfgl-from)")
        return
    info["loadavg_end"] = list(os.getloadavg())
    out = Path(a.out)
    record_path = out.with_suffix(".json")
    earlier = []
    if a.merge and record_path.exists():
        current = records.read(record_path)["metrics"]["cells"]
        done = {(r["dataset"], r["algorithm"], r["seed"]) for r in runs}
        touched = [current[f"{ds}/{algo}"] for ds, algo in sorted({(r["dataset"], r["algorithm"]) for r in runs})
                   if f"{ds}/{algo}" in current]
        earlier = [legacy_marker(r) for cell in touched for r in cell["runs"]
                   if (r["dataset"], r["algorithm"], r["seed"]) not in done]
        info["merged_from"] = {"commands": sorted({str(c["provenance"].get("command")) for c in touched}),
                               "runs_kept": len(earlier)}
    new_runs, runs = runs, earlier + runs
    info["torch"] = new_runs[0]["openfgl"].get("torch") if new_runs else None
    info["torch_threads"] = new_runs[0]["openfgl"].get("torch_threads") if new_runs else None
    rows = summarise(runs)
    md = table(rows, disable_numparse=True)
    notes = ["", f"Setting: {a.clients} Louvain clients, OpenFGL's per-client 20/40/40 split, GCN "
             f"{a.num_layers} layers x {a.hidden}, dropout {a.dropout}, Adam lr {a.lr}, weight decay {a.weight_decay}, "
             f"{a.local_epochs} local epochs, {a.rounds} rounds, seeds {a.seeds}, evaluation {a.eval_mode} "
             "(client metrics weighted by node count), accuracy = test at best validation round.",
             "Timing: ms/round = wall time of the training rounds, cpu ms/round = the process CPU time of "
             "the same calls (fgl_jax: run() of the already compiled program; OpenFGL: FGLTrainer.train()), "
             "each the mean over seeds; the speed-ups are OpenFGL's over fgl_jax's. On a loaded shared "
             "machine wall time depends on what else runs in that minute; CPU time much less so.",
             f"Machine: {info.get('cpu_model', '?')}, {info['cpu_count']} cores, load average "
             f"{info['loadavg_start'][0]:.1f} at start / {info['loadavg_end'][0]:.1f} at end (shared machine); "
             f"jax {info['jax']} (XLA_FLAGS '{info['XLA_FLAGS']}'), torch {info['torch']} ({info['torch_threads']} threads).",
             f"Edge checks: {json.dumps(checks)}.", "", "Protocol differences that remain:", ""]
    notes += [f"- {d}" for d in PROTOCOL_DIFFERENCES]
    tabled = sorted({r["algorithm"] for r in runs}, key=list(ALGORITHMS).index)
    if any(al in FGL_OPTIONS for al in tabled):
        notes += ["", "Options per algorithm (fgl_jax side; OpenFGL runs its defaults, equal to these):", ""]
        notes += [f"- {al}: " + ", ".join(f"{k}={v}" for k, v in FGL_OPTIONS[al].items())
                  for al in tabled if al in FGL_OPTIONS]
        notes += ["", "Algorithm-specific differences that remain:", ""]
        notes += [f"- {ALGORITHM_DIFFERENCES[al]}" for al in tabled if al in ALGORITHM_DIFFERENCES]
    if info.get("merged_from"):
        mf = info["merged_from"]
        notes += ["", f"Merged: {mf['runs_kept']} runs kept from earlier invocations ({'; '.join(mf['commands'])}); "
                  "the machine line above is this invocation's."]
    taken = [r for r in runs if r["openfgl"].get("reused_from")]
    if taken:
        files = sorted({f for r in taken for f in r["openfgl"]["reused_from"]})
        notes += ["", f"OpenFGL side: {len(taken)} runs taken from {'; '.join(files)} (OpenFGL alone, "
                  "same jobs, run earlier in their own processes; marked `reused_from` in the JSON, with the load "
                  "averages there), not alternated with fgl_jax in this run: compare the CPU-time columns, not "
                  "the wall-time ones."]
    if skipped:
        notes += ["", f"Skipped (not in fgl_jax's registry or no OpenFGL counterpart): {', '.join(skipped)}."]
    write_cells(record_path, runs, rows, {"config": vars(a), "notes": notes}, checks, started, environment=info)
    print(md + "\n" + "\n".join(notes))

if __name__ == "__main__":
    main()
