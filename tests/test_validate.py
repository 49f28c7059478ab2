"""fgl_jax.validate: every check refuses exactly the values outside its rule and names owner.field."""
import math

import pytest

from fgl_jax import validate as V


@pytest.mark.parametrize("check, args, good, bad", [
    (V.positive, (), [1e-9, 3], [0, -1, math.nan, True, "x"]),
    (V.non_negative, (), [0, 2.5], [-1e-9, math.nan]),
    (V.at_least, (1,), [1, 7], [0, 0.5]),
    (V.in_interval, (0.0, 1.0), [0.5], [0.0, 1.0, 2.0]),
    (V.in_interval, (0.0, 1.0, "left"), [0.0, 0.99], [1.0, -0.1]),
    (V.in_interval, (0.0, 1.0, "right"), [1.0], [0.0]),
    (V.in_interval, (0.0, 1.0, "both"), [0.0, 1.0], [1.01]),
])
def test_numeric_checks(check, args, good, bad):
    for v in good:
        check("Cfg", "field", v, *args)
    for v in bad:
        with pytest.raises(ValueError, match=r"^Cfg\.field must be"):
            check("Cfg", "field", v, *args)


def test_one_of_and_optional():
    V.one_of("Cfg", "mode", "a", ("a", "b"))
    with pytest.raises(ValueError, match=r"Cfg\.mode: unknown value 'c'; expected one of \('a', 'b'\)"):
        V.one_of("Cfg", "mode", "c", ("a", "b"))
    V.optional_positive("Cfg", "chunk", None)
    with pytest.raises(ValueError, match=r"Cfg\.chunk must be > 0"):
        V.optional_positive("Cfg", "chunk", 0)
    with pytest.raises(ValueError, match="closed"):
        V.in_interval("Cfg", "x", 0.5, 0, 1, closed="open")
