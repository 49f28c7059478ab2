"""The command earlier results files record for OpenFGL's side alone; now `compare.py --openfgl-only`
(the one mechanism: it appends the same JSON lines, which `compare.py --openfgl-from` takes).

    FGL_JAX_DATA=/work/shared/data nice python -m benchmarks.peers.openfgl.openfgl_only \
        --venv /work/peers/openfgl-venv --datasets cora citeseer --algorithms adafgl --seeds 0 1 2 \
        --rounds 100 --out /tmp/ofgl/openfgl_only_adafgl.jsonl

runs `compare.py --openfgl-only` with the same options (compare.py's defaults for the rest).
"""
from __future__ import annotations

import argparse
from pathlib import Path

from benchmarks.peers.openfgl import compare


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--venv", required=True)
    p.add_argument("--datasets", nargs="+", default=["cora", "citeseer"])
    p.add_argument("--algorithms", nargs="+", required=True)
    p.add_argument("--seeds", nargs="+", default=["0", "1", "2"])
    p.add_argument("--rounds", default="100")
    p.add_argument("--out", required=True, help="JSON lines file (appended)")
    a = p.parse_args(argv)
    out = Path(a.out)
    if out.suffix != ".jsonl":
        raise SystemExit(f"--out {a.out}: give a .jsonl file")
    compare.main(["--openfgl-only", "--venv", a.venv, "--datasets", *a.datasets, "--algorithms", *a.algorithms,
                  "--seeds", *a.seeds, "--rounds", a.rounds, "--out", str(out)[:-len(".jsonl")]])


if __name__ == "__main__":
    main()
