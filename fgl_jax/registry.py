"""One registry for everything a name can select: datasets, file formats, models, FL algorithms,
partitioners, systems.

    from fgl_jax.registry import register, get, names

    @register("algorithm", "fedavgm", hparams=FedAvgMHParams, help="FedAvg with server momentum")
    def fedavgm(model, common, hp): ...

    names("algorithm")           # ['fedavg', 'fedavgm', ...]  (CLI choices and docs read this)
    get("algorithm", "fedavgm")  # the registered object
    entry("system", "hifgl").info["config"]

A kind is filled the first time it is asked for, by importing the modules that register into it
(`PROVIDERS`): for `algorithm` and `system` every module/subpackage of the provider package, so a
new algorithm is one new file under `fgl_jax/algorithms/` and no edit anywhere else.
"""
from __future__ import annotations

import dataclasses
import difflib
import importlib
import pkgutil
from typing import Any, Callable

KINDS = ("dataset", "format", "model", "algorithm", "partition", "system")

# kind -> (package, scan): scan=True imports every module of the package (auto-discovery)
PROVIDERS: dict[str, tuple[str, bool]] = {
    "dataset": ("fgl_jax.data", True),
    "format": ("fgl_jax.data", False),  # a user's graph on disk: npz, csv tables, OGB, ... (fgl_jax.data.files)
    "model": ("fgl_jax.nn", False),
    "algorithm": ("fgl_jax.algorithms", True),
    "partition": ("fgl_jax.partition", False),
    "system": ("fgl_jax.systems", True),
}


@dataclasses.dataclass(frozen=True)
class Entry:
    kind: str
    name: str
    obj: Any
    info: dict  # free-form: help, config / hparams dataclass, files, ...

    @property
    def help(self) -> str:
        return str(self.info.get("help", ""))


class UnknownNameError(KeyError):
    """A name that nothing registered under its kind; the message lists the known names."""

    def __init__(self, kind: str, name: str, known: list[str]):
        close = difflib.get_close_matches(str(name), known, n=1, cutoff=0.6)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        self.message = f"unknown {kind} {name!r}.{hint} Known: {', '.join(known) or 'none'}."
        super().__init__(self.message)

    def __str__(self) -> str:  # KeyError would print the repr
        return self.message


_ENTRIES: dict[str, dict[str, Entry]] = {k: {} for k in KINDS}
_LOADED: set[str] = set()


def key(name: str) -> str:
    """Registered names are lower case with '_' (a user may type '-' or capitals)."""
    return str(name).strip().lower().replace("-", "_")


def _check_kind(kind: str) -> None:
    if kind not in KINDS:
        raise ValueError(f"registry kind must be one of {KINDS}, got {kind!r}")


def add(kind: str, name: str, obj: Any, *, overwrite: bool = False, **info: Any) -> Entry:
    """Register `obj` under (kind, name); the function form of `register`."""
    _check_kind(kind)
    k = key(name)
    if not k or not k.replace("_", "").isalnum():
        raise ValueError(f"register: a {kind} name must be letters, digits, '_' or '-', got {name!r}")
    if k in _ENTRIES[kind] and not overwrite:
        raise ValueError(f"register: {kind} {k!r} is already registered (pass overwrite=True to replace it)")
    e = Entry(kind, k, obj, dict(info))
    _ENTRIES[kind][k] = e
    return e


def register(kind: str, name: str, *, overwrite: bool = False, **info: Any) -> Callable[[Any], Any]:
    """Decorator: `@register("algorithm", "fedavg", help=...)` above a factory, class or loader."""

    def deco(obj):
        add(kind, name, obj, overwrite=overwrite, **info)
        return obj

    return deco


def load_kind(kind: str) -> None:
    """Import the modules that register into `kind` (once)."""
    _check_kind(kind)
    if kind in _LOADED:
        return
    _LOADED.add(kind)
    package, scan = PROVIDERS[kind]
    pkg = importlib.import_module(package)
    if scan and hasattr(pkg, "__path__"):
        for mod in sorted(pkgutil.iter_modules(pkg.__path__), key=lambda m: m.name):
            if not mod.name.startswith("_"):
                importlib.import_module(f"{package}.{mod.name}")


def _load_module(kind: str, k: str) -> None:
    """Import only the provider module named `k` (e.g. the package `fgl_jax.systems.hifgl`), if
    there is one: a command that names one system need not import the others (their modules are
    a tenth of a second of every command's start-up)."""
    package, scan = PROVIDERS[kind]
    if not scan or kind in _LOADED or not k.isidentifier():
        return
    import importlib.util
    try:
        found = importlib.util.find_spec(f"{package}.{k}") is not None
    except (ImportError, ValueError):
        found = False
    if found:
        importlib.import_module(f"{package}.{k}")


def entries(kind: str) -> list[Entry]:
    load_kind(kind)
    return [_ENTRIES[kind][k] for k in sorted(_ENTRIES[kind])]


def loaded_entries(kind: str) -> list[Entry]:
    """The entries of `kind` registered so far, without importing the modules of the others."""
    _check_kind(kind)
    return [_ENTRIES[kind][k] for k in sorted(_ENTRIES[kind])]


def names(kind: str) -> list[str]:
    """Registered names of a kind, sorted."""
    return [e.name for e in entries(kind)]


def entry(kind: str, name: str) -> Entry:
    _check_kind(kind)
    k = key(name)
    if k not in _ENTRIES[kind]:
        _load_module(kind, k)  # the module of that name first: often the only one needed
    if k not in _ENTRIES[kind]:
        load_kind(kind)
    if k not in _ENTRIES[kind]:
        raise UnknownNameError(kind, name, names(kind))
    return _ENTRIES[kind][k]


def get(kind: str, name: str) -> Any:
    """The object registered under (kind, name); UnknownNameError lists the known names."""
    return entry(kind, name).obj


def foreign(kinds: tuple = ("model", "algorithm", "partition", "system")) -> list[Entry]:
    """The entries of `kinds` registered so far whose object comes from outside the fgl_jax package
    (a user's own algorithm or model): the compiled-program cache, keyed by fgl_jax's source, is
    not used while there are any (`fgl_jax.experiment.program_context`)."""
    return [e for kind in kinds for e in _ENTRIES[kind].values()
            if str(getattr(e.obj, "__module__", None) or "").split(".")[0] != "fgl_jax"]


def has(kind: str, name: str) -> bool:
    load_kind(kind)
    return key(name) in _ENTRIES[kind]
