"""Reproduce HiFGL's tables and figures (Tables 2, 3, 5, 6, Figures 4, 5) on Cora and CiteSeer.

A thin main over the library: the cells and tables live in `fgl_jax.systems.hifgl.paper` (the same
code `fgl-jax reproduce hifgl` runs). Run experiments/hifgl/baselines.py first for Table 3's gains.

    python experiments/hifgl/reproduce.py [--quick] [--data-dir ../shared/data] [--out D]
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from fgl_jax.systems.hifgl import paper  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="Cora, 1 seed, 10 rounds, few silo counts")
    ap.add_argument("--data-dir", default=None, help="directory holding the datasets (else $FGL_JAX_DATA)")
    ap.add_argument("--out", default=str(Path(__file__).resolve().parents[1] / "results" / "hifgl"),
                    help="folder of the result files")
    args = ap.parse_args(argv)
    paper.reproduce(Path(args.out), quick=args.quick, data_dir=args.data_dir)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
