"""OpenFGL side of the link-prediction comparison; runs in OpenFGL's venv (never imports fgl_jax).
`compare_linkpred.py` writes a job (JSON) and the clients, their message-passing edges and their
node pairs (NPZ); this script lays them out where OpenFGL's LinkPredTask looks, so OpenFGL trains
and evaluates on exactly fgl_jax's per-client edge split, then runs FGLTrainer (task link_pred).

    python run_openfgl_linkpred.py JOB.json RESULT.json

Where OpenFGL 1.1.0 reads the split from (openfgl/task/link_pred.py, load_train_val_test_split):
  <processed dir>/link_pred/default_split/forward_data_<i>.pt          the encoder's graph
      merged_edge_index_<i>.pt, merged_edge_label_<i>.pt,
      merged_edge_{train,val,test}_<i>.pt, glb_merged_edge_index_<i>.pkl  pairs, labels, masks
The client subgraphs themselves go where run_openfgl.lay_out puts them (data_<i>.pt).
"""
from __future__ import annotations

import contextlib
import io
import json
import os
import sys
import time

import numpy as np

os.environ.setdefault("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "1")

import torch  # noqa: E402
from torch_geometric.data import Data  # noqa: E402

from run_openfgl import lay_out, make_args  # noqa: E402  (this directory is sys.path[0])


def lay_out_links(job: dict, arrays: dict) -> None:
    proc = os.path.join(job["root"], "distrib", f"subgraph_fl_louvain_1_{job['openfgl_dataset']}_client_{job['clients']}")
    d = os.path.join(proc, "link_pred", "default_split")
    os.makedirs(d, exist_ok=True)
    x, assign = arrays["x"], arrays["assignment"]
    for k in range(job["clients"]):
        nodes = np.flatnonzero(assign == k)
        em = arrays["edge_mask"][k]
        ei = torch.as_tensor(np.stack([arrays["mp_senders"][k][em], arrays["mp_receivers"][k][em]]), dtype=torch.int64)
        torch.save(Data(x=torch.as_tensor(x[nodes]), edge_index=ei, y=torch.zeros(len(nodes), dtype=torch.int64)),
                   os.path.join(d, f"forward_data_{k}.pt"))
        real = arrays["pair_train"][k] | arrays["pair_val"][k] | arrays["pair_test"][k]
        pairs = np.stack([arrays["pair_src"][k][real], arrays["pair_dst"][k][real]]).astype(np.int64)
        torch.save(torch.as_tensor(pairs), os.path.join(d, f"merged_edge_index_{k}.pt"))
        torch.save(torch.as_tensor(arrays["pair_label"][k][real].astype(np.float32)),
                   os.path.join(d, f"merged_edge_label_{k}.pt"))
        for split in ("train", "val", "test"):
            torch.save(torch.as_tensor(arrays[f"pair_{split}"][k][real]), os.path.join(d, f"merged_edge_{split}_{k}.pt"))
        torch.save(torch.as_tensor(nodes[pairs]), os.path.join(d, f"glb_merged_edge_index_{k}.pkl"))


def main(job_path: str, result_path: str) -> None:
    with open(job_path) as f:
        job = json.load(f)
    arrays = dict(np.load(job["arrays"]))
    torch.set_num_threads(job.get("threads") or torch.get_num_threads())
    n = len(arrays["assignment"])
    lay_out(job, {**arrays, **{f"{s}_mask": np.zeros(n, bool) for s in ("train", "val", "test")},
                  "y": np.zeros(n, np.int64)})
    lay_out_links(job, arrays)
    from openfgl.flcore.trainer import FGLTrainer
    from openfgl.utils.basic_utils import seed_everything
    if job["openfgl_algorithm"] == "fedprox":
        from openfgl.flcore.fedprox.fedprox_config import config
        config["fedprox_mu"] = job["prox_mu"]
    args = make_args(job)
    args.task = "link_pred"
    args.metrics = ["auc", "ap"]     # the first one selects the reported round
    seed_everything(args.seed)
    quiet = io.StringIO()
    with contextlib.redirect_stdout(quiet):
        trainer = FGLTrainer(args)
    rows = []
    add_log = trainer.logger.add_log
    trainer.logger.add_log = lambda r: (rows.append(dict(r)), add_log(r))[-1]
    with contextlib.redirect_stdout(quiet):
        t0, c0 = time.perf_counter(), time.process_time()
        trainer.train()
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    best = trainer.evaluation_result
    out = {"best_val": float(best["best_val_auc"]), "best_test": float(best["best_test_auc"]),
           "best_test_ap": float(best["best_test_ap"]), "best_round": int(best["best_round"]) + 1,
           "final_test": float(rows[-1]["current_test_auc"]) if rows else None,
           "rounds": len(rows), "ms_per_round": 1000.0 * wall / max(len(rows), 1),
           "cpu_ms_per_round": 1000.0 * cpu / max(len(rows), 1), "torch": torch.__version__}
    with open(result_path, "w") as f:
        json.dump(out, f)


if __name__ == "__main__":
    main(*sys.argv[1:3])
