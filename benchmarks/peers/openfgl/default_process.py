"""OpenFGL's default process on Cora, as a user runs it (run by whole_process.py inside OpenFGL's
venv; never imports fgl_jax):

    python default_process.py ROOT PLANETOID_DIR RESULT.json

OpenFGL 1.1.0's defaults (openfgl/config.py): 10 clients, subgraph_fl_louvain, 100 rounds, 3 local
epochs, 2-layer GCN with 64 hidden units, dropout 0.5, Adam lr 1e-2, weight decay 5e-4, its default
split, evaluation every round (local_model_on_local_data); only root, dataset, model (gcn),
use_cuda=False and the metric are set, as in OpenFGL's README. The Planetoid raw files are symlinked into ROOT (no download); whatever else ROOT
holds (PyG's processed Cora, OpenFGL's partition and split under distrib/) is OpenFGL's own cache:
an empty ROOT is a cold start. Times (import, set-up = data + partition + split, training) go to
RESULT.json; the caller times the whole process.
"""
from __future__ import annotations

import time

T0 = time.perf_counter()

import contextlib  # noqa: E402
import io  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import sys  # noqa: E402


def main(root: str, planetoid: str, result: str) -> None:
    raw = os.path.join(root, "global", "subgraph_fl", "Cora", "raw")
    os.makedirs(raw, exist_ok=True)
    for part in ("x", "tx", "allx", "y", "ty", "ally", "graph", "test.index"):
        dst = os.path.join(raw, f"ind.cora.{part}")
        if not os.path.exists(dst):
            os.symlink(os.path.join(planetoid, f"ind.cora.{part}"), dst)
    import torch
    from openfgl.config import parser
    from openfgl.flcore.trainer import FGLTrainer
    t_import = time.perf_counter()
    args = parser.parse_args([])
    # the settings OpenFGL's README sets too (model and metrics default to empty lists)
    args.root, args.dataset, args.model, args.use_cuda, args.metrics = root, ["Cora"], ["gcn"], False, ["accuracy"]
    args.fl_algorithm = "fedavg"  # the default, named for the reader
    rounds = []
    quiet = io.StringIO()
    with contextlib.redirect_stdout(quiet):   # OpenFGL prints every client every round
        trainer = FGLTrainer(args)
        t_setup = time.perf_counter()
        add_log = trainer.logger.add_log
        trainer.logger.add_log = lambda r: (rounds.append(dict(r)), add_log(r))[-1]
        trainer.train()
    t_train = time.perf_counter()
    best = trainer.evaluation_result
    with open(result, "w") as f:
        json.dump({"import_seconds": t_import - T0, "setup_seconds": t_setup - t_import,
                   "train_seconds": t_train - t_setup, "rounds": len(rounds),
                   "ms_per_round": 1000 * (t_train - t_setup) / max(len(rounds), 1),
                   "best_test": float(best["best_test_accuracy"]), "torch": torch.__version__,
                   "torch_threads": torch.get_num_threads(), "in_process_seconds": t_train - T0}, f)


if __name__ == "__main__":
    main(*sys.argv[1:4])
