"""Shared fixtures. `data_dir`: the real public datasets (FGL_JAX_DATA, else <repo>/../shared/data)."""
import os
from pathlib import Path

import pytest

# The caches of compiled programs and preparation (fgl_jax.cache) stay off in tests, so every test
# computes what it checks; tests/test_cache.py turns them on in directories of its own.
os.environ["FGL_JAX_CACHE_DIR"] = "off"


@pytest.fixture(scope="session")
def data_dir() -> Path:
    env = os.environ.get("FGL_JAX_DATA")
    path = Path(env) if env else Path(__file__).resolve().parents[2] / "shared" / "data"
    if not path.is_dir():
        pytest.skip(f"real datasets not found at {path} (set FGL_JAX_DATA)")
    return path
