"""Reproduce FedHGN's tables (Fu & King, IJCAI 2023): a thin main over `fgl_jax.systems.fedhgn.paper`.

    python experiments/fedhgn/reproduce.py [--quick] [--data-dir ../shared/data]
        [--parts main,ablation,sweeps] [--datasets aifb,mutag] [--out experiments/results/fedhgn]

`fgl-jax reproduce fedhgn [--quick]` runs the same (all parts, default knobs); the flags here pick
parts, datasets, K, grids and merge earlier partial runs. The protocol is in paper.py's docstring.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from experiments.common import RESULTS  # noqa: E402
from fgl_jax.systems.fedhgn import paper  # noqa: E402

OUT = RESULTS / "fedhgn"


def _csv(text, conv=str):
    return tuple(conv(v) for v in text.split(",") if v)


def main(argv=None):
    d = paper.Options()
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="AIFB only, K=3, 2 seeds, max 60 rounds")
    ap.add_argument("--data-dir", default=None)
    ap.add_argument("--out", default=str(OUT))
    ap.add_argument("--parts", default=",".join(d.parts), help="of floors,main,ablation,sweeps")
    ap.add_argument("--datasets", default=",".join(d.datasets))
    ap.add_argument("--seeds", type=int, default=d.seeds, help=f"the first N of {paper.SEEDS}")
    ap.add_argument("--max-rounds", type=int, default=d.max_rounds, help="FL rounds (Local/Central: 6x epochs)")
    ap.add_argument("--ks", default=",".join(map(str, d.ks)), help="client counts of the main table")
    ap.add_argument("--abl-ks", default=",".join(map(str, d.abl_ks)), help="client counts of the ablation (MUTAG-RE)")
    ap.add_argument("--b-grid", default=",".join(map(str, d.b_grid)))
    ap.add_argument("--lambda-grid", default=",".join(map(str, d.lambda_grid)))
    ap.add_argument("--sweep-splits", default=",".join(d.sweep_splits))
    ap.add_argument("--methods", default=",".join(d.methods), help="main-table methods to run")
    ap.add_argument("--merge", default="", help="comma-separated stems of earlier results.json files (in --out) "
                    "to merge into this table; with --parts '' only merges")
    ap.add_argument("--merge-baselines", default="", help="like --merge, but only the baselines' and ablation "
                    "variants' entries (not FedHGN's): reuse baseline runs of an earlier code version")
    ap.add_argument("--stem", default=None, help="output file stem (default results / results_quick)")
    a = ap.parse_args(argv)
    if a.quick:
        opts = paper.Options.quick()
    else:
        opts = paper.Options(parts=_csv(a.parts), datasets=_csv(a.datasets), seeds=a.seeds, max_rounds=a.max_rounds,
                             ks=_csv(a.ks, int), abl_ks=_csv(a.abl_ks, int), b_grid=_csv(a.b_grid, int),
                             lambda_grid=_csv(a.lambda_grid, float), sweep_splits=_csv(a.sweep_splits),
                             methods=_csv(a.methods))
    opts.merge, opts.merge_baselines = _csv(a.merge), _csv(a.merge_baselines)
    opts.stem = a.stem or opts.stem
    paper.reproduce(Path(a.out), quick=a.quick, data_dir=a.data_dir, options=opts)


if __name__ == "__main__":
    main()
