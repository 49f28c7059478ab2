"""Issue 50 item 6: the `fgl-jax` program exits the normal way, so `atexit` handlers run."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

_PROGRAM = """
import atexit, sys
atexit.register(lambda: print("atexit handler ran", flush=True))
sys.argv = ["fgl-jax"] + sys.argv[1:]
from fgl_jax.cli import entry
entry()
"""


@pytest.mark.parametrize("argv, code", [(["datasets"], 0), (["run", "--no-such-flag"], 2)])
def test_exit_runs_atexit_handlers(argv, code, tmp_path):
    env = {**os.environ, "FGL_JAX_DATA": str(tmp_path)}
    proc = subprocess.run([sys.executable, "-c", _PROGRAM, *argv], capture_output=True, text=True,
                          env=env, cwd=tmp_path, timeout=600)
    assert proc.returncode == code, proc.stderr[-2000:]
    assert "atexit handler ran" in proc.stdout
