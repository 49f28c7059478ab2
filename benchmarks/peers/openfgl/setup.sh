#!/usr/bin/env bash
# Creates a venv with OpenFGL 1.1.0 (openfgl-lib on PyPI) with CPU PyTorch, for
# the side-by-side harness compare.py. Outside CI; the venv is gitignored. Only package registries
# are used: CPU torch comes from a local wheel if one is found via pip's find-links, else from PyPI
# (whose Linux wheel is the CUDA build: it works on CPU, only larger).
#
#   bash setup.sh [VENV]      # VENV: $1, else $OPENFGL_VENV, else benchmarks/peers/.venv-openfgl
#
# A venv outside the work tree (e.g. /work/peers/openfgl-venv) survives the work tree's deletion;
# compare.py finds it through --venv or the same OPENFGL_VENV variable.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
venv="${1:-${OPENFGL_VENV:-$here/../.venv-openfgl}}"
bash "$(dirname "$0")/../cpu_torch.sh" "$venv"     # the venv and CPU torch, first and alone
pip="$venv/bin/python -m pip"
torch_version="$("$venv/bin/python" -c 'import torch; print(torch.__version__)' 2>/dev/null)"
echo "torch==$torch_version" > "$venv/torch-pin.txt"
# OpenFGL imports these at module level (data/simulation.py, utils/metrics.py) even for the
# algorithms compared here: scikit-network (Louvain), pymetis, scikit-learn, munkres; pynndescent
# (flcore/fggp/utils.py imports it at module level); cytoolz (FedDEP's dec_cluster/ptsdae/sdae.py);
# dtaidistance (GCFL+'s DTW, flcore/gcfl_plus/server.py).
$pip install --quiet -c "$venv/torch-pin.txt" "openfgl-lib==1.1.0" torch_geometric scikit-learn scikit-network pymetis munkres tqdm \
    pynndescent cytoolz dtaidistance \
    numpy scipy networkx
"$venv/bin/python" - <<'PY'
import torch, torch_geometric, openfgl
print(f"OpenFGL venv ready: torch {torch.__version__}, torch_geometric {torch_geometric.__version__}, "
      f"openfgl at {openfgl.__file__}")
PY
