"""Reproduce FedGC's tables into experiments/results/fedgc/results{_quick}.{json,md}: a thin main over
`fgl_jax.systems.fedgc.paper.reproduce` (the cells, the runs through the engine and the tables live in
the library; `fgl-jax reproduce fedgc [--quick]` calls the same function).

    python experiments/fedgc/reproduce.py [--quick] [--data-dir D] [--only table1,table2,...]
"""
from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

from fgl_jax.systems.fedgc import BASES, DEFAULT_BASE, GAMMA_GRID, VARIANTS, paper
from fgl_jax.systems.fedgc import PAPER_T1, PAPER_T2  # noqa: F401 (experiments/make_index.py reads them here)

OUT = Path(__file__).resolve().parents[1] / "results" / "fedgc"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="smoke run: 60 rounds, Cora only, table2,table3,synthetic")
    ap.add_argument("--data-dir", default=None, help="directory holding the Planetoid files (else $FGL_JAX_DATA)")
    ap.add_argument("--out", default=str(OUT), help="results folder")
    ap.add_argument("--only", default=None, help="comma-separated parts, of: " + ",".join(paper.PARTS)
                    + f" (default: {paper.FULL_PARTS}; --quick: {paper.QUICK_PARTS})")
    ap.add_argument("--datasets", default="cora,citeseer", help="comma-separated datasets")
    ap.add_argument("--seeds", type=int, default=1, help="number of seeds (partitions) per cell")
    ap.add_argument("--seed-start", type=int, default=0, help="first seed (seeds seed_start .. seed_start+seeds-1)")
    ap.add_argument("--fresh", action="store_true", help="ignore stored runs")
    ap.add_argument("--write-md-only", action="store_true", help="rewrite results*.md from results*.json")
    ap.add_argument("--variants", default="ib,ibfs,noib,pl,reg,ldp", help="Table 2 variants, of: " + ",".join(VARIANTS))
    ap.add_argument("--ib-dim", type=int, default=None, help="override dim(z) of every cell")
    ap.add_argument("--ib-hidden", type=int, default=None, help="override the IB encoder hidden width of every cell")
    ap.add_argument("--suffix", default="", help="write results<suffix>.{json,md} (parallel partial runs)")
    ap.add_argument("--merge", default="", help="comma-separated suffixes of results<suffix>.json to merge in")
    ap.add_argument("--rounds", type=int, default=None, help="override the number of condensation rounds")
    ap.add_argument("--eval-rounds", default=None, help="comma-separated evaluation rounds (override)")
    ap.add_argument("--rates", default=None, help="comma-separated rates for Table 1 (default 0.25,0.5,1.0)")
    ap.add_argument("--base", default=DEFAULT_BASE, choices=BASES,
                    help="configuration Table 1 (rates other than 0.5), Table 3, the ablation and the γ sweep build on")
    ap.add_argument("--gammas", default=None, help="γ values of the sweep (default "
                    + ",".join(f"{g:g}" for g in GAMMA_GRID) + "; --quick: 0,0.01)")
    ap.add_argument("--protocol", default="val", choices=("val", "paper"),
                    help="model selection: val, or paper = the official code's test-based choices")
    args = ap.parse_args(argv)
    argv = sys.argv[1:] if argv is None else argv
    paper.reproduce(Path(args.out), args.quick, args.data_dir, only=args.only, datasets=args.datasets,
                    seeds=args.seeds, seed_start=args.seed_start, fresh=args.fresh, write_md_only=args.write_md_only,
                    variants=args.variants, ib_dim=args.ib_dim, ib_hidden=args.ib_hidden, suffix=args.suffix,
                    merge=args.merge, rounds=args.rounds,
                    eval_rounds=[int(v) for v in args.eval_rounds.split(",")] if args.eval_rounds else None,
                    rates=args.rates, base=args.base, gammas=args.gammas, protocol=args.protocol,
                    command="python experiments/fedgc/reproduce.py " + shlex.join(argv))


if __name__ == "__main__":
    main()
