"""HiFGL Tables 3-4 baseline rows: a thin main over `fgl_jax.systems.hifgl.baselines.reproduce`.

    python experiments/hifgl/baselines.py [--quick] [--data-dir ../shared/data] [--out DIR] [--render]
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from fgl_jax.systems.hifgl import baselines

RESULTS = Path(__file__).resolve().parents[1] / "results" / "hifgl"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="Cora only, 2 seeds, 20 rounds (a smoke run)")
    ap.add_argument("--data-dir", default=None, help="directory holding the datasets")
    ap.add_argument("--out", default=str(RESULTS), help="where the tables are written")
    ap.add_argument("--render", action="store_true", help="rewrite the .md from the existing .json only")
    ap.add_argument("--write-configs", action="store_true",
                    help="only write one YAML per table cell to experiments/configs/hifgl/ (fgl-jax run --config ...)")
    args = ap.parse_args(argv)
    if args.write_configs:
        paths = baselines.write_configs(Path(__file__).resolve().parents[1] / "configs" / "hifgl")
        print(f"wrote {len(paths)} configs")
        return 0
    baselines.reproduce(Path(args.out), quick=args.quick, data_dir=args.data_dir, render_only=args.render)
    return 0


if __name__ == "__main__":
    sys.exit(main())
