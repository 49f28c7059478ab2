#!/usr/bin/env bash
# The authors' FedHGN code (github.com/cynricfu/FedHGN) needs DGL + PyTorch; neither belongs in
# fgl_jax's venv. DGL 2.1.0 (the newest on PyPI) ships native parts for torch 2.0.0 .. 2.2.1 only:
# with torch 2.13 (the local CPU wheel) `import dgl` fails (graphbolt needs torchdata.datapipes,
# gone in torchdata 0.11, and has no library for torch 2.13). So: torch 2.2.1 from PyPI (a CUDA
# build, 755 MB, plus its nvidia-* wheels: it will not import without them; runs on CPU here),
# numpy < 2, setuptools < 70 (dgl.utils imports setuptools.extern), torchdata 0.7.1, pandas.
# About 5.2 GB. Usage: bash setup.sh [VENV_DIR]   (default: this folder's .venv, gitignored)
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
VENV="${1:-$HERE/.venv}"
python3.11 -m venv "$VENV"
"$VENV/bin/pip" install -q "torch==2.2.1" "dgl==2.1.0" "numpy<2" "setuptools<70" "torchdata==0.7.1" \
    pandas pyyaml scikit-learn pydantic
OMP_NUM_THREADS=1 "$VENV/bin/python" -c "import torch, dgl, dgl.dataloading; print('torch', torch.__version__, 'dgl', dgl.__version__)"
echo "Now fetch github.com/cynricfu/FedHGN (commit 1a94edc) into a folder outside the repository and pass it as --src."
