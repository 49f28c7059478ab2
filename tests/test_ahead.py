"""fgl_jax.federated.ahead: a compilation in a daemon thread, keyed by the arguments' signature."""
import threading
import traceback

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from fgl_jax.cache import CompileCounter
from fgl_jax.federated.ahead import NotCompiled, compile_ahead, program, signature, start


@jax.jit
def _affine(x, y):
    return jnp.tanh(x @ y) + 1.0


def _args(n: int = 5, dtype=jnp.float32):
    rng = np.random.default_rng(n)
    return jnp.asarray(rng.normal(size=(n, 3)), dtype), jnp.asarray(rng.normal(size=(3, 2)), dtype)


def _sds(a):
    return jax.ShapeDtypeStruct(a.shape, a.dtype)


def test_compiled_ahead_from_shapes_is_the_program_called_and_equals_jit():
    """Compiled from ShapeDtypeStructs in the thread; the call with arrays of those shapes runs that
    executable (nothing compiles at the call) and returns jax.jit's bits (and NumPy's numbers)."""
    x, y = _args()
    handle = compile_ahead(_affine, _sds(x), _sds(y))
    compiled = handle.get()
    counter = CompileCounter()
    fn = program(handle, _affine, x, y)
    assert fn is compiled and fn is not _affine
    got = np.asarray(fn(x, y))
    assert counter.read()["programs"] == 0
    np.testing.assert_array_equal(got, np.asarray(_affine(x, y)))
    np.testing.assert_allclose(got, np.tanh(np.asarray(x, np.float64) @ np.asarray(y, np.float64)) + 1.0,
                               rtol=1e-5, atol=1e-6)


def test_a_different_signature_takes_the_jit_path_without_waiting():
    """Arguments of another shape, dtype or structure, or another static value, get the plain jit
    function back at once (the thread, still blocked here, is not waited for)."""
    x, y = _args()
    release = threading.Event()

    def work():
        release.wait(10)
        return "compiled"
    handle = start(work, signature((x, y), (_affine,)))
    x4, y4 = _args(4)
    assert program(handle, _affine, x4, y4) is _affine                       # shape
    assert program(handle, _affine, x.astype(jnp.int32), y) is _affine       # dtype
    assert program(handle, _affine, x, y, static=("other",)) is _affine      # static argument
    assert program(handle, _affine, [x, y]) is _affine                       # tree structure
    assert program(None, _affine, x, y) is _affine
    assert not handle.done()
    release.set()
    assert program(handle, _affine, x, y) == "compiled"                      # the same signature waits
    np.testing.assert_array_equal(np.asarray(program(handle, _affine, x4, y4)(x4, y4)),
                                  np.asarray(_affine.lower(x4, y4).compile()(x4, y4)))


def test_signature_is_the_same_for_arrays_host_values_and_shapes_and_names_the_sharding():
    x, y = _args()
    assert signature((x, y)) == signature((_sds(x), _sds(y))) == signature((np.asarray(x), np.asarray(y)))
    assert signature((x, y)) != signature((y, x))
    assert signature((x, y), ("a",)) != signature((x, y)) and signature((x, y), ("a",)) != signature((x, y), ("b",))
    mesh = jax.sharding.Mesh(np.array(jax.devices()[:1]), ("c",))
    spread = jax.device_put(x, jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec("c")))
    assert signature((spread, y)) != signature((x, y))


def test_the_threads_exception_is_raised_by_get_in_the_caller():
    """A failing compilation raises its own exception in the caller's get() (and program()), with the
    thread's frames and the caller's in its traceback; the thread is a daemon with the given name."""
    seen = {}

    def broken_compilation():
        seen["thread"] = threading.current_thread()
        raise ValueError("no such program")
    x, y = _args()
    handle = start(broken_compilation, signature((x, y), (_affine,)), name="test-ahead-thread")
    with pytest.raises(ValueError, match="no such program") as info:
        handle.get()
    frames = [f.name for f in traceback.extract_tb(info.value.__traceback__)]
    assert "broken_compilation" in frames and "test_the_threads_exception_is_raised_by_get_in_the_caller" in frames
    assert seen["thread"].name == "test-ahead-thread" and seen["thread"].daemon
    assert seen["thread"] is not threading.current_thread()
    with pytest.raises(ValueError, match="no such program"):
        program(handle, _affine, x, y)
    # one after a failed one compiles nothing; the caller's own path then runs (and raises the real error)
    follower = start(lambda: "compiled", handle.signature, after=handle)
    with pytest.raises(NotCompiled):
        follower.get()
    assert follower.program(handle.signature) is None


def test_after_orders_the_compilations():
    order = []
    first_may_end = threading.Event()

    def first():
        first_may_end.wait(10)
        order.append(1)
        return 1
    a = start(first, ("a",))
    b = start(lambda: order.append(2) or 2, ("b",), after=a)
    assert not b.done()
    first_may_end.set()
    assert (a.get(), b.get(), order) == (1, 2, [1, 2])


def test_a_thread_without_the_callers_jax_settings_compiles_nothing():
    """Under `jax.enable_x64(True)` (thread-local) the thread would trace another program: without a
    scope it declines (the call takes the jit path); with the scope it compiles the caller's program."""
    x, y = _args(dtype=jnp.float32)
    with jax.enable_x64(True):
        plain = compile_ahead(_affine, x, y)
        with pytest.raises(NotCompiled):
            plain.get()
        assert program(plain, _affine, x, y) is _affine
        scoped = compile_ahead(_affine, x, y, scope=lambda: jax.enable_x64(True))
        fn = program(scoped, _affine, x, y)
        assert fn is scoped.get() and fn is not _affine
        np.testing.assert_array_equal(np.asarray(fn(x, y)), np.asarray(_affine(x, y)))


@pytest.mark.slow
def test_a_process_that_exits_while_a_compilation_runs_exits_cleanly(tmp_path):
    """Without `ahead._join_at_exit` the interpreter's finalisation unwinds the thread inside XLA
    and the process aborts (signal 6, "FATAL: exception not rethrown") after its work is done."""
    import subprocess
    import sys
    script = tmp_path / "exit_early.py"
    script.write_text(
        "import time\nimport jax, jax.numpy as jnp\nfrom fgl_jax.federated import ahead\n"
        "def f(x):\n    for k in range(150):\n        x = jnp.tanh(x @ x.T + k) * jnp.sin(x)\n    return x\n"
        "ahead.compile_ahead(jax.jit(f), jax.ShapeDtypeStruct((32, 32), jnp.float32))\ntime.sleep(0.2)\n")
    p = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-500:]
