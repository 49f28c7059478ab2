"""Which OpenFGL 1.1.0 algorithms run its graph_fl cross-domain simulation; runs in OpenFGL's venv
(never imports fgl_jax, never imported by tests). For each algorithm: build FGLTrainer on the chem
group (graph_fl_cross_domain, one TU set per client, OpenFGL's own split) and train one round; print
"ran 1 round" or the exception and the line it was raised on (the reasons in compare_graph_fl.py's
CROSS_DOMAIN_NOT_RUN come from this).

    /work/peers/openfgl-venv/bin/python benchmarks/peers/openfgl/cross_domain_probe.py \
        --data /work/shared/data --root /tmp/probe fedavg fedprox scaffold moon fedproto fedtgp isolate
"""
from __future__ import annotations

import argparse
import contextlib
import io
import os
import sys
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
os.environ.setdefault("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "1")   # OpenFGL torch.load()s whole dataset objects

CHEM = ("MUTAG", "BZR", "COX2", "PTC_MR", "AIDS", "NCI1")   # compare_graph_fl.CROSS_DOMAIN["chem"]


def probe(root: str, algorithm: str) -> str:
    """One line: `algorithm` trained a round of chem cross-domain, or the exception and where it was raised."""
    from openfgl.config import parser
    from openfgl.flcore.trainer import FGLTrainer
    from openfgl.utils.basic_utils import seed_everything
    args = parser.parse_args([])
    args.root, args.dataset, args.scenario, args.task = root, list(CHEM), "graph_fl", "graph_cls"
    args.simulation_mode, args.num_clients, args.num_rounds = "graph_fl_cross_domain", len(CHEM), 1
    args.fl_algorithm, args.model, args.use_cuda, args.metrics = algorithm, ["gin"], False, ["accuracy"]
    args.evaluation_mode, args.seed = "local_model_on_local_data", 0
    seed_everything(0)
    try:
        with contextlib.redirect_stdout(io.StringIO()):   # OpenFGL prints every client every round
            FGLTrainer(args).train()
        return f"{algorithm}: ran 1 round"
    except Exception as e:   # the point of the probe: report what OpenFGL raises, whatever it is
        where = traceback.extract_tb(e.__traceback__)[-1]
        return (f"{algorithm}: {type(e).__name__}: {e} at {where.filename.split('site-packages/')[-1]}:{where.lineno} "
                f"`{where.line}`")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("algorithms", nargs="+", help="OpenFGL fl_algorithm names")
    ap.add_argument("--data", default=os.environ.get("FGL_JAX_DATA", "/work/shared/data"), help="the shared data dir (tu/ in it)")
    ap.add_argument("--root", required=True, help="OpenFGL's data root to build (scratch)")
    a = ap.parse_args()
    import torch
    torch.set_num_threads(1)
    from run_openfgl_graph_fl import lay_out_one_raw
    for name in CHEM:
        lay_out_one_raw(a.root, name, os.path.join(a.data, "tu", name))
    for algorithm in a.algorithms:
        print(probe(a.root, algorithm), flush=True)


if __name__ == "__main__":
    main()
