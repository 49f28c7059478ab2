"""Shared fixtures. `data_dir`: the real public datasets (FGL_JAX_DATA, else <repo>/../shared/data)."""
import os
from pathlib import Path

import pytest

# The caches of compiled programs and preparation (fgl_jax.cache) stay off in tests, so every test
# computes what it checks; tests/test_cache.py turns them on in directories of its own.
os.environ["FGL_JAX_CACHE_DIR"] = "off"

# The suite's time is mostly XLA compiling small programs that then run for milliseconds: LLVM at
# optimisation level 0 cut the CPU time of tests/test_round_body.py by 23 % (42.2 -> 32.7 CPU-s, same
# results). Set before jax is imported (here and in CLI subprocesses, through the environment); a level
# the caller put in XLA_FLAGS wins.
if "xla_backend_optimization_level" not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " --xla_backend_optimization_level=0").strip()


@pytest.fixture(scope="session")
def data_dir() -> Path:
    env = os.environ.get("FGL_JAX_DATA")
    path = Path(env) if env else Path(__file__).resolve().parents[2] / "shared" / "data"
    if not path.is_dir():
        pytest.skip(f"real datasets not found at {path} (set FGL_JAX_DATA)")
    return path


_XLA_SETTINGS = ("jax_compilation_cache_dir", "jax_persistent_cache_min_compile_time_secs",
                 "jax_persistent_cache_min_entry_size_bytes", "jax_enable_compilation_cache")


def pytest_configure(config):
    config.addinivalue_line("markers", "no_xla_cache: JAX's persistent compilation cache is off for this "
                                       "module (it counts compilations or cache hits)")


def _apply_xla(settings: dict) -> None:
    """jax.config and the environment (for CLI subprocesses) set to `settings`; the cache re-initialised."""
    import jax
    from jax._src import compilation_cache
    for k, v in settings.items():
        jax.config.update(k, v)
        os.environ[k.upper()] = str(v).lower() if isinstance(v, bool) else str(v)
    compilation_cache.reset_cache()


@pytest.fixture(scope="session", autouse=True)
def _session_xla_cache(tmp_path_factory):
    """JAX's persistent compilation cache in one directory per test process (one xdist worker), on
    before the first test compiles: a program identical to one compiled earlier in the session (a
    run and its resumed run, a sweep member and its single run, the same toy problem in two files,
    in this process or in a CLI subprocess) loads XLA's executable instead of compiling it. Only
    XLA's backend step is skipped: tracing, lowering and every computation run as in any test, an
    executable is reused only for the identical program (the key covers the HLO, the devices, the
    flags and jax's config), and fgl_jax's own caches stay off (above). Modules that count
    compilations or cache hits opt out (`pytestmark = pytest.mark.no_xla_cache`)."""
    import jax
    before = {k: getattr(jax.config, k) for k in _XLA_SETTINGS}
    env_before = {k.upper(): os.environ.get(k.upper()) for k in _XLA_SETTINGS}
    on = {"jax_compilation_cache_dir": str(tmp_path_factory.mktemp("xla_cache")),
          "jax_persistent_cache_min_compile_time_secs": 0.0,
          "jax_persistent_cache_min_entry_size_bytes": -1, "jax_enable_compilation_cache": True}
    _apply_xla(on)
    yield on
    _apply_xla(before)
    for k, v in env_before.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


@pytest.fixture(scope="module", autouse=True)
def _module_xla_cache(request, _session_xla_cache):
    """The session's cache for every module (restored if a test moved or switched it, e.g. through
    `fgl_jax.cache.enable`/`disable`), off for a module that counts compilations."""
    import jax
    off = request.node.get_closest_marker("no_xla_cache") is not None
    want = {**_session_xla_cache, "jax_enable_compilation_cache": not off}
    if off or any(getattr(jax.config, k) != v for k, v in want.items()):
        _apply_xla(want)
    yield
    if off:
        _apply_xla(_session_xla_cache)
