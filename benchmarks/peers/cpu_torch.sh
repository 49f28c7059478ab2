#!/usr/bin/env bash
# Shared by the peers' setup.sh: create the venv (if missing) and install torch into it first and
# alone, so the rest resolves against it and never pulls a second torch. A CPU wheel
# (torch-*+cpu-*.whl) in one of pip's find-links folders is preferred: PyPI's Linux torch is the
# CUDA build and drags in several GB of nvidia-* packages.
# Usage: bash cpu_torch.sh VENV_DIR   (PYTHON picks the interpreter, default python3)
set -euo pipefail
venv="$1"
python="${PYTHON:-python3}"
if [ ! -x "$venv/bin/python" ]; then
    mkdir -p "$(dirname "$venv")"
    "$python" -m venv "$venv"
fi
pip="$venv/bin/python -m pip"
$pip install --quiet --upgrade pip
cpu_wheel=""
for dir in ${PIP_FIND_LINKS:-} /opt/wheels; do
    for whl in "$dir"/torch-*+cpu-*.whl; do
        [ -f "$whl" ] && cpu_wheel="$whl"
    done
done
if [ -n "$cpu_wheel" ]; then
    $pip install --quiet "$cpu_wheel"
else
    $pip install --quiet torch
fi
