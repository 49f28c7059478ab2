"""Every public function documents its parameters and result; every public class has a docstring.

The public API is `fgl_jax.__all__` (issue 46 item 7): its functions and classes, and the members of
its public namespaces (`aggregators`, `schema`, `field`, `lcc`, `onebit`, `records`, `secure_sum`, `rdp`, `inference`, `node_dp`:
their `__all__`, or the names without a leading underscore that the module itself defines). `engine`
is left out: it is the documented internal namespace, importable but not API. A function with
parameters needs an `Args:` section and every function a `Returns:` (or `Yields:`) section, in the
Google style the docs site's mkdocstrings renders. Modules themselves are not checked.
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


# the public namespaces whose members are API (fgl_jax._MODULES without the internal `engine`)
NAMESPACES = ("aggregators", "schema", "field", "lcc", "onebit", "records", "secure_sum", "rdp", "inference",
              "node_dp")


def _members(module) -> list[str]:
    """A namespace's public names: its `__all__`, else what it defines without a leading underscore."""
    if hasattr(module, "__all__"):
        return list(module.__all__)
    return [n for n in vars(module) if not n.startswith("_")
            and getattr(getattr(module, n), "__module__", None) == module.__name__]


def _public_objects() -> list[tuple[str, object]]:
    """(qualified name, object) for each name of `fgl_jax.__all__` and of its public namespaces."""
    objects = [(f"fgl_jax.{n}", getattr(fj, n)) for n in fj.__all__]
    for ns in NAMESPACES:
        module = getattr(fj, ns)
        objects += [(f"fgl_jax.{ns}.{n}", getattr(module, n)) for n in _members(module)]
    return [(n, obj) for n, obj in objects if not inspect.ismodule(obj)]


def test_public_api_is_nonempty():
    # the check below must have something to check (a broken import would otherwise pass vacuously)
    names = [n for n, _ in _public_objects()]
    assert len(names) > 100 and "fgl_jax.run" in names and "fgl_jax.aggregators.chain" in names
    assert {"fgl_jax.schema.make", "fgl_jax.onebit.onebit_ldp", "fgl_jax.field.mul",
            "fgl_jax.secure_sum.secure_sum", "fgl_jax.rdp.epsilons"} <= set(names)
    assert set(NAMESPACES) < set(fj._MODULES)  # a renamed namespace must not drop out of the check


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
