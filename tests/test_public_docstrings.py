"""Every public function documents its parameters and result; every public class has a docstring.

The public API is `fgl_jax.__all__` (issue 46 item 7) plus the functions of the public namespace
`fgl_jax.aggregators`. A function with parameters needs an `Args:` section and every function a
`Returns:` (or `Yields:`) section, in the Google style the docs site's mkdocstrings renders.
Modules themselves (the namespaces) are not checked; their members are, here, for `aggregators`.
"""
import inspect

import fgl_jax as fj


def _problem(name: str, obj: object) -> str | None:
    """The missing section of one public object, or None when its docstring is complete."""
    doc = inspect.getdoc(obj) or ""
    if inspect.isclass(obj):
        return None if doc else f"{name}: class without a docstring"
    if not callable(obj):
        return None
    try:
        has_params = bool(inspect.signature(obj).parameters)
    except (TypeError, ValueError):  # a builtin without a signature: nothing to list
        has_params = False
    missing = [section for section, ok in (("docstring", bool(doc)),
                                           ("Args:", "Args:" in doc or not has_params),
                                           ("Returns:", "Returns:" in doc or "Yields:" in doc)) if not ok]
    return f"{name}: lacks {', '.join(missing)}" if missing else None


def _public_objects() -> list[tuple[str, object]]:
    """(qualified name, object) for each name of `fgl_jax.__all__` and of `fgl_jax.aggregators`."""
    objects = [(f"fgl_jax.{n}", getattr(fj, n)) for n in fj.__all__]
    objects += [(f"fgl_jax.aggregators.{n}", getattr(fj.aggregators, n)) for n in fj.aggregators.__all__]
    return [(n, obj) for n, obj in objects if not inspect.ismodule(obj)]


def test_public_api_is_nonempty():
    # the check below must have something to check (a broken import would otherwise pass vacuously)
    names = [n for n, _ in _public_objects()]
    assert len(names) > 100 and "fgl_jax.run" in names and "fgl_jax.aggregators.chain" in names


def test_public_docstrings_have_args_and_returns():
    problems = [p for n, obj in _public_objects() if (p := _problem(n, obj))]
    assert not problems, f"{len(problems)} public names lack docstring sections:\n" + "\n".join(problems)


def test_the_check_catches_a_bare_docstring():
    # the check itself can fail: a function documented in prose only is reported
    def documented_in_prose(x):
        """Doubles x."""
        return 2 * x

    class Bare:
        pass

    assert "Args:" in _problem("f", documented_in_prose) and "Returns:" in _problem("f", documented_in_prose)
    assert _problem("Bare", Bare) == "Bare: class without a docstring"
