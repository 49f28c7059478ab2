#!/usr/bin/env bash
# The PFLlib side of compare.py (outside CI): a venv with CPU PyTorch and what PFLlib's system/
# imports on the code paths compare.py uses (sklearn for its AUC, h5py for save_results,
# matplotlib for utils/dlg.py, which serverbase imports), and PFLlib's source at a recorded commit
# extracted outside the repo. PFLlib is not packaged; nothing of it is copied into this repository.
#
#   bash setup.sh [VENV] [SRC]   # defaults /work/peers/pfllib-venv and /work/peers/pfllib-src
#
# The source comes from a local git mirror of github.com/TsingZ0/PFLlib ($PFLLIB_GIT, a bare repo
# or a clone's .git) at PFLLIB_COMMIT; SRC/COMMIT records the commit extracted.
set -euo pipefail
PFLLIB_COMMIT="${PFLLIB_COMMIT:-d832e76f6a23b833038949ec1e4fdefe63a4d350}"   # master, 2025-11-29
venv="${1:-${PFLLIB_VENV:-/work/peers/pfllib-venv}}"
src="${2:-${PFLLIB_SRC:-/work/peers/pfllib-src}}"
git_dir="${PFLLIB_GIT:-/work/.mirror/TsingZ0+PFLlib/repo}"

bash "$(dirname "$0")/../cpu_torch.sh" "$venv"     # the venv and CPU torch, first and alone
pip="$venv/bin/python -m pip"
"$venv/bin/python" -c 'import torch; print("torch==" + torch.__version__)' > "$venv/torch-pin.txt"
$pip install --quiet -c "$venv/torch-pin.txt" numpy scikit-learn h5py matplotlib

if [ ! -d "$git_dir" ]; then
    echo "PFLlib git mirror missing at $git_dir (set PFLLIB_GIT to a clone's .git of github.com/TsingZ0/PFLlib)" >&2
    exit 1
fi
rm -rf "$src"
mkdir -p "$src"
# the tree of system/ only (a partial mirror may lack the large dataset blobs elsewhere in the commit)
git --git-dir "$git_dir" archive --prefix=system/ "$PFLLIB_COMMIT:system" | tar -x -C "$src"
echo "$PFLLIB_COMMIT" > "$src/COMMIT"
"$venv/bin/python" - "$src" <<'PY'
import sys, torch
sys.path.insert(0, sys.argv[1] + "/system")
from flcore.servers.serverditto import Ditto  # noqa: F401  (imports resolve)
print(f"PFLlib venv ready: torch {torch.__version__}; source at {sys.argv[1]} (commit {open(sys.argv[1] + '/COMMIT').read().strip()})")
PY
