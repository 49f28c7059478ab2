"""Reproduce FedHGL's Tables II–V and Figure 3 (Luo et al., ICDE 2025); the cells and the tables live
in `fgl_jax.systems.fedhgl.paper` (this is a thin command line over `paper.reproduce`, which
`fgl-jax reproduce fedhgl [--quick]` calls too).

    python experiments/fedhgl/reproduce.py [--quick] [--data-dir ../shared/data] [--runs 5]
        [--datasets coraca,dblp4k,imdb4k,cora,citeseer,facebook] [--ks 3,6,9] [--parts main,sweep]
        [--swap-val-test] [--noise-first-hop] [--stem NAME] [--combine STEM,STEM]
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from experiments.common import RESULTS  # noqa: E402
from fgl_jax.systems.fedhgl import paper  # noqa: E402

OUT = RESULTS / "fedhgl"


def main(argv=None) -> int:
    """Flags map 1:1 to `paper.reproduce`'s keyword arguments; a flag not given keeps its default there."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="CoraCA + Cora, K=3, 1 run, 3-point sweep (a few minutes)")
    ap.add_argument("--data-dir", default=None)
    ap.add_argument("--out", default=str(OUT))
    ap.add_argument("--runs", type=int, help="runs per cell (seed = run index)")
    ap.add_argument("--runs-facebook", type=int, help="runs per Facebook cell (default: --runs)")
    ap.add_argument("--datasets", help="comma-separated datasets of Tables III / V")
    ap.add_argument("--ks", help="comma-separated client counts K")
    ap.add_argument("--parts", help="comma-separated parts: main (tables), sweep (Figure 3)")
    ap.add_argument("--rounds", type=int, help="federated rounds T (Global: 3 T)")
    ap.add_argument("--sweep-datasets", help="comma-separated datasets of Figure 3")
    ap.add_argument("--swap-val-test", action="store_true",
                    help="authors' code compat: select on 40 %% and test on 20 %% (writes results_swapvaltest.*)")
    ap.add_argument("--noise-first-hop", action="store_true",
                    help="ablation: LDP noise reaches only the first hop, as in the authors' code (spec §9)")
    ap.add_argument("--stem", help="output file stem (default results / results_quick)")
    ap.add_argument("--combine", help="comma-separated stems of earlier runs (e.g. a main and a sweep run) to merge "
                                      "into --stem (default results); runs nothing else")
    a = ap.parse_args(argv)
    lists = {"datasets": str, "ks": int, "parts": str, "sweep_datasets": str}
    kw = {k: ([t(x) for x in getattr(a, k).split(",") if x] if k in lists and (t := lists[k]) else getattr(a, k))
          for k in ("runs", "runs_facebook", "datasets", "ks", "parts", "rounds", "sweep_datasets", "stem")
          if getattr(a, k) is not None}
    if a.combine:
        print(f"wrote {paper.combine(Path(a.out), a.combine.split(','), a.stem or 'results', kw.get('ks', paper.KS))}")
        return 0
    paper.reproduce(Path(a.out), a.quick, a.data_dir, swap_val_test=a.swap_val_test, noise_first_hop=a.noise_first_hop,
                    **kw)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
