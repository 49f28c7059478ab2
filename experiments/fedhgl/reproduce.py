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
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="CoraCA + Cora, K=3, 1 run, 3-point sweep (a few minutes)")
    ap.add_argument("--data-dir", default=None)
    ap.add_argument("--out", default=str(OUT))
    ap.add_argument("--runs", type=int, default=paper.RUNS)
    ap.add_argument("--runs-facebook", type=int, default=None, help="default: --runs")
    ap.add_argument("--datasets", default=",".join(paper.HYPER + paper.SIMPLE))
    ap.add_argument("--ks", default=",".join(map(str, paper.KS)))
    ap.add_argument("--parts", default="main,sweep")
    ap.add_argument("--rounds", type=int, default=200)
    ap.add_argument("--sweep-datasets", default="coraca,dblp4k,cora,facebook")
    ap.add_argument("--swap-val-test", action="store_true",
                    help="authors' code compat: select on 40 %% and test on 20 %% (writes results_swapvaltest.*)")
    ap.add_argument("--noise-first-hop", action="store_true",
                    help="ablation: LDP noise reaches only the first hop, as in the authors' code (spec §9)")
    ap.add_argument("--stem", default=None, help="output file stem (default results / results_quick)")
    ap.add_argument("--combine", default=None,
                    help="comma-separated stems of earlier runs (e.g. a main and a sweep run) to merge into --stem "
                         "(default results); runs nothing else")
    a = ap.parse_args(argv)
    ks = [int(k) for k in a.ks.split(",")]
    if a.combine:
        print(f"wrote {paper.combine(Path(a.out), a.combine.split(','), a.stem or 'results', ks)}")
        return 0
    paper.reproduce(Path(a.out), a.quick, a.data_dir, runs=a.runs, runs_facebook=a.runs_facebook,
                    datasets=a.datasets.split(","), ks=ks, parts=a.parts.split(","), rounds=a.rounds,
                    sweep_datasets=[s for s in a.sweep_datasets.split(",") if s], swap_val_test=a.swap_val_test,
                    noise_first_hop=a.noise_first_hop, stem=a.stem)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
