#!/usr/bin/env bash
# A venv where the real DGL runs next to fgl_jax's data layer, to run the DGL converter's test
# (tests/test_data_convert.py::test_from_dgl, skipped wherever dgl is not importable, e.g. in CI).
#
#   bash benchmarks/peers/dgl/setup.sh [VENV]          # default: benchmarks/peers/.venv-dgl (gitignored)
#   PYTHONPATH=. VENV/bin/python -m pytest -p no:cacheprovider tests/test_data_convert.py -k dgl
#
# Why a venv of its own: DGL 2.1.0, the newest on PyPI, has native parts for torch 2.0.0 .. 2.2.1 only
# and needs numpy < 2 (and setuptools < 70, torchdata 0.7.1); fgl_jax's CI stack is jax 0.10.2 with
# numpy 2. jax 0.4.30 is the newest jax here that still runs on numpy 1.26, and the data layer
# (fgl_jax.data.convert and what it imports) works on it. torch 2.2.1 from PyPI is a CUDA build (it
# pulls the nvidia-* wheels); it runs on a CPU-only machine.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
VENV="${1:-$HERE/../.venv-dgl}"
python3 -m venv "$VENV"
"$VENV/bin/python" -m pip install -q --upgrade pip
"$VENV/bin/python" -m pip install -q "torch==2.2.1" "dgl==2.1.0" "numpy<2" "setuptools<70" "torchdata==0.7.1" \
    "jax==0.4.30" "jaxlib==0.4.30" jraph scipy pyyaml "flax<0.9" optax chex networkx pytest pydantic requests tqdm psutil
echo "venv ready: $VENV"
