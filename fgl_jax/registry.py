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
import typing
from typing import Any, Callable, Optional

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


ALGORITHM_TASKS = ("node_cls", "link_pred", "graph_cls", "graph_reg")


@dataclasses.dataclass(frozen=True)
class AlgorithmSpec:
    """What an FL algorithm's registration declares (`@register("algorithm", name, **fields)`),
    typed and checked when the module is imported: an unknown field, a wrong type or a value
    outside its choices is one line naming the algorithm and the field.

    help: one line for `--help` and docs/algorithms.md; paper: the citation.
    hparams: the algorithm's own options, a frozen dataclass of `fgl_jax.schema.option` fields
        (flags, the config's `algorithm:` block and its docs row come from it), or None.
    tasks: the tasks it serves; ("node_cls", "link_pred") when it trains and evaluates only through
        the model (docs in `fgl_jax.algorithms`), plus "graph_cls", "graph_reg" when it also runs on
        graph-level clients (`fgl_jax.graph_batch`: its local training goes through `local_train`).
    features: "ell" when its code passes the client features only to the model's first layer
        (`fgl-jax run` then hands it `ops.EllFeatures`), else None.
    data: "full_graph" for centralised training on the whole graph (one client), else None.
    prepare(inp: HostInput, hp) -> (batch, extra): host-side preparation run once before the
        compiled rounds (`fgl_jax.federated.algorithm.HostInput`): numpy work on the partition,
        or a jitted stage whose result the rounds only read (FedSage+'s NeighGen, FedDEP's
        generator: see docs/architecture.md, "Phases and preparation").
    pre_communication(inp, hp) -> (up_bytes, down_bytes): bytes of a one-off exchange before
        training (summary.json's pre_training_communication).
    prepare_graphs(gs, hp) -> GraphSet: host-side change to a graph-level run's graphs
        (`fgl_jax.data.tu.GraphSet`) before they are dealt and packed, once (FedStar appends the
        structure encodings to the node features); the run's model is built on the result.
    dp_uncovered: what DP-FedAvg's epsilon does not cover (warned about with --dp-clip).
    local_steps: the local optimiser steps per round a run takes when its config leaves `local_steps`
        at 0 (FedProx: 3, so its proximal term acts), 1 unless an algorithm needs more.
    hetero: True when it takes heterogeneous client models (`--client-models`,
        `fgl_jax.federated.client_models`): it never averages parameters (prototypes or logits only).

    Phases (a round schedule that changes kind part-way) are not declared here: they are the
    `phases` of the `FederatedAlgorithm` the factory returns (`fgl_jax.federated.algorithm.Phase`).
    """

    help: str
    paper: str = ""
    hparams: Optional[type] = None
    tasks: tuple = ("node_cls",)
    features: Optional[str] = None
    data: Optional[str] = None
    prepare: Optional[Callable] = None
    pre_communication: Optional[Callable] = None
    prepare_graphs: Optional[Callable] = None
    dp_uncovered: Optional[str] = None
    local_steps: int = 1
    hetero: bool = False

    _CHOICES = {"features": (None, "ell"), "data": (None, "full_graph")}

    @classmethod
    def build(cls, name: str, info: dict) -> "AlgorithmSpec":
        """The checked spec of algorithm `name` from its registration's keywords."""
        where = f"register: algorithm {name!r}"
        known = [f.name for f in dataclasses.fields(cls)]
        for k in info:
            if k not in known:
                close = difflib.get_close_matches(k, known, n=1, cutoff=0.6)
                hint = f" (did you mean {close[0]!r}?)" if close else ""
                raise TypeError(f"{where}: unknown field {k!r}{hint}; an AlgorithmSpec has {', '.join(known)}")
        if "help" not in info:
            raise TypeError(f"{where}: field 'help' is required (one line for --help and the docs)")
        info = dict(info)
        if isinstance(info.get("tasks"), list):
            info["tasks"] = tuple(info["tasks"])
        hints = typing.get_type_hints(cls)
        for k, v in info.items():
            tp = hints[k]
            optional = typing.get_origin(tp) is typing.Union
            base = [a for a in typing.get_args(tp) if a is not type(None)][0] if optional else tp
            base = typing.get_origin(base) or base
            if v is None and optional:
                continue
            ok = callable(v) if base is Callable or base is typing.get_origin(Callable) else isinstance(v, base)
            if not ok:
                want = getattr(base, "__name__", str(base)) + (" or None" if optional else "")
                raise TypeError(f"{where}: field {k!r} must be {want}, got {type(v).__name__} {v!r}")
        spec = cls(**info)
        for k, choices in cls._CHOICES.items():
            if getattr(spec, k) not in choices:
                raise ValueError(f"{where}: field {k!r} must be one of {', '.join(map(str, choices))}, "
                                 f"got {getattr(spec, k)!r}")
        bad = [t for t in spec.tasks if t not in ALGORITHM_TASKS]
        if not spec.tasks or bad:
            raise ValueError(f"{where}: field 'tasks' must name some of {', '.join(ALGORITHM_TASKS)}, got {spec.tasks!r}")
        if spec.hparams is not None and not (dataclasses.is_dataclass(spec.hparams)
                                             and spec.hparams.__dataclass_params__.frozen):
            raise TypeError(f"{where}: field 'hparams' must be a frozen dataclass, got {spec.hparams!r}")
        if spec.local_steps < 1:
            raise ValueError(f"{where}: field 'local_steps' must be >= 1, got {spec.local_steps}")
        if not spec.help.strip():
            raise ValueError(f"{where}: field 'help' is empty")
        return spec

    def as_info(self) -> dict:
        """The fields as the registry entry's `info` dict (every field, defaults included)."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}


# kind -> the typed spec its registrations are checked against (kinds without one stay free-form)
SPECS: dict[str, type] = {"algorithm": AlgorithmSpec}


@dataclasses.dataclass(frozen=True)
class Entry:
    kind: str
    name: str
    obj: Any
    info: dict  # the registration's keywords: help, config / hparams dataclass, files, ...
    spec: Any = None  # the typed spec for kinds that have one (`SPECS`: an AlgorithmSpec)

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
    spec = SPECS[kind].build(k, info) if kind in SPECS else None
    e = Entry(kind, k, obj, spec.as_info() if spec is not None else dict(info), spec)
    _ENTRIES[kind][k] = e
    return e


def register(kind: str, name: str, *, overwrite: bool = False, **info: Any) -> Callable[[Any], Any]:
    """Decorator: `@register("algorithm", "fedavg", help=...)` above a factory, class or loader.

    Args:
        kind: a registry kind ("algorithm", "model", "partition", ...).
        name: the name to register (letters, digits, '_' or '-').
        overwrite: replace an existing registration instead of refusing it.
        **info: the kind's entry fields (e.g. help=..., and for an algorithm its spec fields).

    Returns:
        The decorator; it registers the object and returns it unchanged.

    Raises:
        ValueError: when the decorator runs: an unknown kind, an invalid name, or one already
            registered without `overwrite`.
    """

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
    """Registered names of a kind, sorted.

    Args:
        kind: a registry kind ("algorithm", "model", "partition", ...).

    Returns:
        The names, sorted.

    Raises:
        ValueError: an unknown kind.
    """
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
    """The object registered under (kind, name).

    Args:
        kind: a registry kind ("algorithm", "model", "partition", "dataset", "format", "system", ...).
        name: the registered name (case-insensitive; '-' read as '_').

    Returns:
        The registered object (a factory, class or loader).

    Raises:
        UnknownNameError: nothing is registered under that name (the message lists the known names).
        ValueError: an unknown kind.
    """
    return entry(kind, name).obj


def foreign(kinds: tuple = ("model", "algorithm", "partition", "system")) -> list[Entry]:
    """The entries of `kinds` registered so far whose object comes from outside the fgl_jax package
    (a user's own algorithm or model): the compiled-program cache, keyed by fgl_jax's source, is
    not used while there are any (`fgl_jax.experiment.program_context`)."""
    return [e for kind in kinds for e in _ENTRIES[kind].values()
            if str(getattr(e.obj, "__module__", None) or "").split(".")[0] != "fgl_jax"]


def algorithm(name: str) -> AlgorithmSpec:
    """The typed spec of a registered algorithm (UnknownNameError lists the known ones)."""
    return entry("algorithm", name).spec


def has(kind: str, name: str) -> bool:
    load_kind(kind)
    return key(name) in _ENTRIES[kind]
