"""The systems: one subpackage per paper (config, data, model, algorithm, program, paper), each
registered as a system (`fgl_jax.registry`) by its `program` module."""
from __future__ import annotations

import importlib
from typing import Callable, Sequence

# the commands whose name is not their system's (package's) name: `fgl-jax run` imports only this one
COMMANDS = {"run": "baseline"}


def lazy_submodules(package: str, names: Sequence[str]) -> Callable[[str], object]:
    """A module `__getattr__` that imports `package.<name>` on first use, for the `names` only
    a reproduction of a paper needs (so importing a system stays cheap)."""
    def __getattr__(name: str):
        if name in names:
            return importlib.import_module(f"{package}.{name}")
        raise AttributeError(f"module {package!r} has no attribute {name!r}")
    return __getattr__
