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


@pytest.fixture(scope="module")
def xla_cache(tmp_path_factory):
    """For a module whose tests compile the same programs again and again (a run, then the run resumed,
    a sweep member against its single run; in this process and in CLI subprocesses): JAX's persistent
    compilation cache in a directory of the module's own, so the repeats load XLA's executable instead
    of compiling it. Only XLA's backend step is skipped: tracing, lowering and every computation run as
    in any test, an executable is reused only for the identical program, and fgl_jax's own caches stay
    off (above). Not for modules that count compilations (test_cache.py, test_fedgc_rows.py, ...).
    Opt in with `pytestmark = pytest.mark.usefixtures("xla_cache")`; restored after the module."""
    import jax
    from jax._src import compilation_cache
    settings = {"jax_compilation_cache_dir": str(tmp_path_factory.mktemp("xla_cache")),
                "jax_persistent_cache_min_compile_time_secs": 0.0,
                "jax_persistent_cache_min_entry_size_bytes": -1, "jax_enable_compilation_cache": True}
    before = {k: getattr(jax.config, k) for k in settings}
    with pytest.MonkeyPatch.context() as mp:
        for k, v in settings.items():
            jax.config.update(k, v)
            mp.setenv(k.upper(), str(v).lower() if isinstance(v, bool) else str(v))   # for subprocesses
        compilation_cache.reset_cache()
        yield
    for k, v in before.items():
        jax.config.update(k, v)
    compilation_cache.reset_cache()
