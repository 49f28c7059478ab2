"""Reproduce Lumos (Pan et al.) §VIII: a thin main over `fgl_jax.systems.lumos.paper` (= `fgl-jax reproduce lumos`).

    python experiments/lumos/reproduce.py [--quick] [--data-dir D] [--out D] [--resume] [--render-only]
        [--datasets lastfm_asia facebook] [--rounds 300] [--seeds 3] [--aux-seeds 1] [--facebook-rounds 100] ...

The cells, the runs (through the engine) and the tables are library code (`paper.cells`,
`paper.reproduce`); the time-budget flags are generated from `paper.Options`.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from fgl_jax import schema  # noqa: E402
from fgl_jax.systems.lumos import paper  # noqa: E402

OUT = Path(__file__).resolve().parents[1] / "results" / "lumos"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="LastFM only, 40 epochs, GCN, 2 seeds (a few minutes)")
    ap.add_argument("--data-dir", default=None, help="directory holding the datasets (else $FGL_JAX_DATA)")
    ap.add_argument("--out", default=str(OUT), help="directory of results.{md,json} (quick: results_quick.*)")
    ap.add_argument("--resume", action="store_true", help="keep finished runs from the results file")
    ap.add_argument("--render-only", action="store_true", help="rewrite the .md from the .json and exit")
    schema.add_flags(ap, paper.Options, title="what the full reproduction runs")
    args = ap.parse_args(argv)
    if args.render_only:
        paper.render_only(Path(args.out), args.quick)
        return
    opts = schema.make(paper.Options, schema.given_flags(args, paper.Options), source="command line")
    paper.reproduce(Path(args.out), quick=args.quick, data_dir=args.data_dir, options=opts, resume=args.resume)


if __name__ == "__main__":
    main()
