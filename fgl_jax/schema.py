"""Configs as data: one frozen dataclass per system is the only place a default or a valid range lives.

A field is declared with `option(default, help, choices=..., low=..., high=...)`; from the class
alone this module generates

  * the command-line flags (`add_flags`), with help text, default and valid values,
  * checked construction from a dict, YAML or flags (`make`, `read_yaml`, `resolve`): unknown keys,
    wrong types, values outside `choices` or the range are refused in one line naming the source
    (file or flag), the key and the value,
  * two rules every field gets without declaring them: a float is finite (inf only where the
    option says `allow_inf`) and at most FLOAT_LIMIT (the largest float32) in size unless the option
    declares its own `high` (the programs compute in float32: 1e308 would be inf there); an int
    named ``seed`` or ``*_seed`` is in 0..SEED_MAX (`SEED_MAX`),
  * YAML out (`dump`) that `--config` replays exactly.

In the spirit of fedjax's `structured_flags` (flags from the config's own defaults); no argparse
internals are used.

    @dataclasses.dataclass(frozen=True)
    class HiFGLConfig(RunSpec):
        dataset: str = option("cora", "dataset name or path")
        T: int = option(1, "privacy threshold (colluding silos tolerated)", low=1)
"""
from __future__ import annotations

import argparse
import dataclasses
import difflib
import math
import types
import typing
from pathlib import Path
from typing import Any, Callable, Optional, Sequence, Union

import yaml

_MISSING = dataclasses.MISSING

# The run key is `jax.random.key(seed)`, which keeps the low 32 bits of the seed (JAX without x64):
# seed 2**32 would silently give the key of seed 0, and -1 that of 2**32 - 1. numpy's RandomState
# takes the same range. So a seed (a field named `seed` or `*_seed`) is refused outside 0..SEED_MAX.
SEED_MAX = 2 ** 32 - 1
# The largest magnitude of a float option that declares no `high` of its own (rates, weights,
# temperatures, coefficients): the largest float32. The programs compute in float32 (traced options
# live in the state as float32), where a larger value is inf; 1e308 is a typo. Tests drive training
# to divergence with values up to 1e30 on purpose, so the bound is what the code can represent,
# not a judgement of which learning rate is sensible (the engine stops a diverging run in one line).
FLOAT_LIMIT = 3.4028234663852886e38  # np.finfo(np.float32).max


def option(default: Any, help: str, *, choices: Union[Sequence[Any], Callable[[], Sequence[Any]], None] = None,
           low: Optional[float] = None, high: Optional[float] = None, low_open: bool = False,
           high_open: bool = False, flag: Optional[str] = None, traced: bool = False,
           allow_inf: bool = False) -> Any:
    """A config field with its help text and valid values.

    choices: the allowed values, or a function returning them (e.g. names from the registry).
    low/high: inclusive bounds unless low_open/high_open. flag: the CLI spelling when it is not
    `--field-name`. traced: the value lives in the algorithm state (`state.hp`), so a sweep over it
    runs as one compiled program. allow_inf: a float option for which inf means something (e.g. an
    LDP budget of inf = no noise); every other float must be finite.

    Args:
        default: the field's default (immutable: a tuple, not a list).
        help: the help text, at least two words (CLI --help, docs, error messages).
        choices: as above.
        low: as above.
        high: as above.
        low_open: as above.
        high_open: as above.
        flag: as above.
        traced: as above.
        allow_inf: as above.

    Returns:
        A `dataclasses.field` carrying the metadata; use it as a config dataclass's field default.

    Raises:
        ValueError: a help text shorter than two words.
        TypeError: a mutable default (list, dict, set).
    """
    if not help or len(help.split()) < 2:
        raise ValueError(f"option {default!r}: every option needs a help text of at least two words")
    meta = {"help": help, "choices": choices, "low": low, "high": high, "low_open": low_open,
            "high_open": high_open, "flag": flag, "traced": traced, "allow_inf": allow_inf}
    if isinstance(default, (list, dict, set)):
        raise TypeError("option defaults must be immutable (use a tuple)")
    return dataclasses.field(default=default, metadata=meta)


# ------------------------------------------------------------------------------------------------
# Field introspection
# ------------------------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class FieldSpec:
    name: str
    type: Any            # int, float, str, bool, or tuple for tuple[X, ...]
    item: Any            # element type of a tuple field
    optional: bool
    default: Any
    help: str
    choices: Optional[tuple]
    low: Optional[float]
    high: Optional[float]
    low_open: bool
    high_open: bool
    flag: str
    traced: bool
    allow_inf: bool = False


def _unwrap(tp: Any) -> tuple[Any, Any, bool]:
    """(base type, element type, optional) of an annotation."""
    optional = False
    origin = typing.get_origin(tp)
    if origin in (Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        optional = len(args) < len(typing.get_args(tp))
        tp = args[0] if len(args) == 1 else str
        origin = typing.get_origin(tp)
    if tp in (tuple, list):
        return tuple, str, optional
    if origin in (tuple, list, Sequence):
        args = [a for a in typing.get_args(tp) if a is not Ellipsis]
        return tuple, (args[0] if args else str), optional
    if tp in (int, float, str, bool):
        return tp, None, optional
    return str, None, optional  # anything else travels as text


def fields(cls: type) -> dict[str, FieldSpec]:
    """name -> FieldSpec for every field of a config dataclass, in declaration order.

    Args:
        cls: a config dataclass (fields made with `option`).

    Returns:
        field name -> `FieldSpec` (type, default, help, choices, bounds, flag, traced).
    """
    hints = typing.get_type_hints(cls)
    out = {}
    for f in dataclasses.fields(cls):
        if not f.init:
            continue
        base, item, optional = _unwrap(hints[f.name])
        m = f.metadata or {}
        ch = m.get("choices")
        ch = tuple(ch()) if callable(ch) else (tuple(ch) if ch is not None else None)
        default = f.default if f.default is not _MISSING else (
            f.default_factory() if f.default_factory is not _MISSING else None)
        out[f.name] = FieldSpec(
            f.name, base, item, optional or default is None, default, m.get("help") or "", ch, m.get("low"),
            m.get("high"), bool(m.get("low_open")), bool(m.get("high_open")),
            m.get("flag") or "--" + f.name.replace("_", "-"), bool(m.get("traced")), bool(m.get("allow_inf")))
    return out


def traced_names(cls: type) -> list[str]:
    """Fields held in the algorithm state (vectorisable in one sweep program).

    Args:
        cls: a config dataclass.

    Returns:
        The names of its `traced` fields, in declaration order.
    """
    return [n for n, f in fields(cls).items() if f.traced]


# ------------------------------------------------------------------------------------------------
# Checking values
# ------------------------------------------------------------------------------------------------

def _scalar(spec: FieldSpec, typ: Any, value: Any, where: str) -> Any:
    bad = lambda what: ValueError(f"{where}: {spec.name} must be {what}, got {value!r}")
    if typ is bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.strip().lower() in ("true", "false", "yes", "no", "1", "0"):
            return value.strip().lower() in ("true", "yes", "1")
        raise bad("true or false")
    if typ is int:
        if isinstance(value, bool):
            raise bad("an integer")
        if isinstance(value, int):
            return value
        if isinstance(value, float):
            if value.is_integer():
                return int(value)
            raise bad("an integer")
        if isinstance(value, str):
            try:
                return int(value.strip())
            except ValueError:
                try:
                    f = float(value)
                except ValueError:
                    raise bad("an integer") from None
                if f.is_integer():
                    return int(f)
        raise bad("an integer")
    if typ is float:
        if isinstance(value, bool):
            raise bad("a number")
        try:
            v = float(value)
        except (TypeError, ValueError):
            raise bad("a number") from None
        if math.isnan(v):
            raise bad("a number")
        if math.isinf(v) and not spec.allow_inf:
            raise bad("a finite number")
        return v
    if isinstance(value, (dict, list, tuple)):
        raise bad("a single value")
    if isinstance(value, float) and math.isinf(value):
        return "inf"
    return str(value)


def check_value(spec: FieldSpec, value: Any, where: str) -> Any:
    """`value` converted to the field's type and checked against its choices and range.

    Args:
        spec: the field's `FieldSpec`.
        value: the raw value ("none"/"null" is None for an optional field; a tuple field takes a list
            or comma-separated text).
        where: where it came from, for messages.

    Returns:
        The converted value.

    Raises:
        ValueError: no value for a required field, or a value outside its type, choices or range.
    """
    if value is None or (isinstance(value, str) and value.strip().lower() in ("none", "null") and spec.optional):
        if spec.optional:
            return None
        raise ValueError(f"{where}: {spec.name} needs a value (it has no 'none')")
    if spec.type is tuple:
        items = value if isinstance(value, (list, tuple)) else [v for v in str(value).split(",") if v.strip()]
        return tuple(_check_one(spec, spec.item, v, where) for v in items)
    return _check_one(spec, spec.type, value, where)


def _check_one(spec: FieldSpec, typ: Any, value: Any, where: str) -> Any:
    v = _scalar(spec, typ, value, where)
    if spec.choices is not None and v not in spec.choices:
        close = difflib.get_close_matches(str(v), [str(c) for c in spec.choices], n=1, cutoff=0.6)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise ValueError(f"{where}: {spec.name} must be one of {', '.join(map(str, spec.choices))}; "
                         f"got {value!r}{hint}")
    if isinstance(v, int) and not isinstance(v, bool) and is_seed(spec):
        if not 0 <= v <= SEED_MAX:
            raise ValueError(f"{where}: {spec.name} must be an integer in 0..{SEED_MAX} (2**32 - 1: the run key "
                             f"keeps 32 bits of the seed, so a larger or negative one would repeat another), "
                             f"got {value!r}")
    if isinstance(v, float) and spec.high is None and math.isfinite(v) and abs(v) > FLOAT_LIMIT:
        raise ValueError(f"{where}: {spec.name} must be at most {FLOAT_LIMIT:.3g} in size (the largest float32: "
                         f"the programs compute in float32, where it would be inf), got {value!r}")
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        if spec.low is not None and (v < spec.low or (spec.low_open and v == spec.low)):
            raise ValueError(f"{where}: {spec.name} must be {'>' if spec.low_open else '>='} {spec.low}, "
                             f"got {value!r}")
        if spec.high is not None and (v > spec.high or (spec.high_open and v == spec.high)):
            raise ValueError(f"{where}: {spec.name} must be {'<' if spec.high_open else '<='} {spec.high}, "
                             f"got {value!r}")
    return v


def is_seed(spec: FieldSpec) -> bool:
    """True for a seed field (`seed` or `*_seed`, an int): its values are bounded to 0..SEED_MAX.

    Args:
        spec: the field's `FieldSpec`.

    Returns:
        True for an int field named `seed` or `*_seed`.
    """
    return spec.type is int and (spec.name == "seed" or spec.name.endswith("_seed"))


def check(cls: type, values: dict, source: str = "config") -> dict:
    """Checked, converted copy of `values` (a subset of cls's fields); unknown keys refused.

    Args:
        cls: a config dataclass.
        values: field name (or its '-' spelling) -> raw value (text from flags, YAML values, Python values).
        source: where the values came from, for messages ("config file x.yaml", "command line").

    Returns:
        field name -> checked, converted value.

    Raises:
        ValueError: an unknown key (with the closest valid one) or a value outside its type, choices or range.
    """
    specs = fields(cls)
    out = {}
    for k, v in values.items():
        name = str(k).replace("-", "_")
        if name not in specs:
            close = difflib.get_close_matches(name, list(specs), n=1, cutoff=0.6)
            hint = f" Did you mean {close[0]!r}?" if close else ""
            raise ValueError(f"{source}: unknown key {k!r}.{hint} Valid keys: {', '.join(specs)}")
        out[name] = check_value(specs[name], v, source)
    return out


def make(cls: type, values: Optional[dict] = None, source: str = "config", **more: Any):
    """cls(**defaults overlaid with checked values); cross-field rules run in cls.__post_init__.

    Args:
        cls: a config dataclass.
        values: field -> raw value; None: the defaults.
        source: where the values came from, for messages.
        **more: further field values.

    Returns:
        The config instance.

    Raises:
        ValueError: an unknown key, a value outside its range, or a cross-field rule (prefixed by `source`).
    """
    vals = check(cls, {**(values or {}), **more}, source)
    try:
        return cls(**vals)
    except ValueError as e:
        raise ValueError(f"{source}: {e}") from None


def to_dict(cfg: Any) -> dict:
    """Field values (tuples as lists, so YAML stays plain).

    Args:
        cfg: a config instance.

    Returns:
        field name -> value, tuples as lists.
    """
    return {f.name: (list(v) if isinstance(v := getattr(cfg, f.name), tuple) else v)
            for f in dataclasses.fields(cfg) if f.init}


# ------------------------------------------------------------------------------------------------
# YAML
# ------------------------------------------------------------------------------------------------

# A config class may keep its YAML in another shape than its flat fields (the baseline's nested
# `algorithm: {name: ..., <its options>}` block) by defining two classmethod/method hooks:
#   cfg.to_yaml_values() -> dict               the mapping `dump` writes (plain YAML values)
#   cls.from_yaml_values(values, source) -> dict   that mapping (or an older flat one) back to
#                                                  field values, for `check` / `make`
# Without them the YAML mapping is the fields themselves (`to_dict`).

def yaml_values(cfg: Any) -> dict:
    """The mapping `dump` writes for `cfg` (its class's `to_yaml_values`, else its fields).

    Args:
        cfg: a config instance.

    Returns:
        The mapping of plain YAML values.
    """
    hook = getattr(cfg, "to_yaml_values", None)
    return hook() if callable(hook) else to_dict(cfg)


def from_yaml(cls: type, values: dict, source: str) -> dict:
    """A YAML mapping of `cls` as flat field values (its `from_yaml_values` hook, else unchanged).

    Args:
        cls: a config dataclass.
        values: the YAML mapping.
        source: where it came from, for messages.

    Returns:
        The flat field values, for `check` / `make`.
    """
    hook = getattr(cls, "from_yaml_values", None)
    return hook(values, source) if callable(hook) else values


def normal_form(values: dict, source: str = "config") -> dict:
    """A config mapping read from YAML (with its `system:` key) in the form its system writes today,
    so two configs compare equal when they configure the same run: a baseline config.yaml written
    before the nested algorithm block (every algorithm's options flat) and one written after.
    Returned unchanged when the system is unknown or the mapping is not a valid config of it (the
    comparison then names the differing keys as they are).

    Args:
        values: the YAML mapping, with its `system:` key.
        source: where it came from, for messages.

    Returns:
        The mapping as the system writes it today (`system:` first), or `values` unchanged.
    """
    from fgl_jax import registry
    system = values.get("system")
    if not isinstance(system, str) or not registry.has("system", system):
        return values
    cls = registry.entry("system", system).info.get("config")
    if cls is None or not callable(getattr(cls, "from_yaml_values", None)):
        return values
    rest = {k: v for k, v in values.items() if k != "system"}
    try:
        cfg = make(cls, from_yaml(cls, rest, source), source)
    except (ValueError, TypeError, KeyError):
        return values
    return {"system": system, **yaml_values(cfg)}

def dump(cfg: Any, system: Optional[str] = None, path: Optional[Union[str, Path]] = None,
         extra: Optional[dict] = None) -> str:
    """YAML text of a config (`system:` first when given); written to `path` when given.

    Args:
        cfg: a config instance.
        system: the system's name, written first as `system:`; None: left out.
        path: a file to write the text to (parents created); None: not written.
        extra: further top-level keys to write after the config's.

    Returns:
        The YAML text.
    """
    head = {"system": system} if system else {}
    text = yaml.safe_dump({**head, **yaml_values(cfg), **(extra or {})}, sort_keys=False)
    if path is not None:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(text)
    return text


class _UniqueKeyLoader(yaml.SafeLoader):
    """yaml.SafeLoader that refuses a key given twice in one mapping (PyYAML keeps the last one,
    so `lr: 0.1` ... `lr: 0.01` further down would silently win)."""

    def construct_mapping(self, node, deep=False):
        seen: dict = {}
        for key_node, _value in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue  # `<<: *base` merges are resolved (and may be overridden) by SafeLoader
            key = self.construct_object(key_node, deep=True)
            try:
                hash(key)
            except TypeError:
                continue  # SafeLoader's own error names an unhashable key
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"key {key!r} given twice (lines {seen[key]} and {key_node.start_mark.line + 1}); "
                                "keep one", key_node.start_mark)
            seen[key] = key_node.start_mark.line + 1
        return super().construct_mapping(node, deep)


def read_yaml_text(text: str, source: str) -> dict:
    """The mapping in YAML text, keys with '-' read as '_'.

    Args:
        text: the YAML text.
        source: where it came from, for messages.

    Returns:
        The mapping (empty text gives {}).

    Raises:
        ValueError: not valid YAML (including a duplicate key), or not a mapping.
    """
    try:
        values = yaml.load(text, Loader=_UniqueKeyLoader) or {}
    except yaml.YAMLError as e:
        first = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise ValueError(f"{source} is not valid YAML: {first}") from None
    if not isinstance(values, dict):
        raise ValueError(f"{source} must hold a mapping of options, got {type(values).__name__}")
    return {str(k).replace("-", "_"): v for k, v in values.items()}


def read_yaml(path: Union[str, Path], system: Optional[str] = None) -> dict:
    """The mapping in a YAML config file (its `system:` key checked against `system` and dropped).

    Args:
        path: the YAML file.
        system: the system the file must be for; None: not checked.

    Returns:
        The mapping, keys with '-' read as '_', without `system:`.

    Raises:
        FileNotFoundError: the file does not exist (or is a directory).
        ValueError: not UTF-8, not valid YAML, not a mapping, a duplicate key, or a file for another system.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"config file {path} does not exist" + (" (it is a directory)" if path.is_dir() else ""))
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise ValueError(f"config file {path} is not UTF-8 text (byte {e.object[e.start]:#04x} at offset "
                         f"{e.start}); save it as UTF-8") from None
    values = read_yaml_text(text, f"config file {path}")
    named = values.pop("system", None)
    if system is not None and named is not None and named != system:
        raise ValueError(f"config file {path} is for system {named!r}, not {system!r}")
    return values


# ------------------------------------------------------------------------------------------------
# Command line
# ------------------------------------------------------------------------------------------------

def describe(spec: FieldSpec) -> str:
    """The help line of a flag: text, valid values, default.

    Args:
        spec: the field's `FieldSpec`.

    Returns:
        The help line ('%' escaped for argparse).
    """
    parts = [spec.help.rstrip(".")]
    if spec.choices is not None:
        parts.append("one of: " + ", ".join(map(str, spec.choices)))
    elif is_seed(spec) and spec.low is None and spec.high is None:
        parts.append(f"0..{SEED_MAX}")
    elif spec.low is not None or spec.high is not None:
        lo = "" if spec.low is None else f"{'>' if spec.low_open else '>='} {spec.low}"
        hi = "" if spec.high is None else f"{'<' if spec.high_open else '<='} {spec.high}"
        parts.append(" and ".join(p for p in (lo, hi) if p))
    d = spec.default
    parts.append("default: " + (", ".join(map(str, d)) if isinstance(d, tuple) else str(d)))
    return "; ".join(parts).replace("%", "%%")


def add_flags(parser: argparse.ArgumentParser, cls: type, skip: Sequence[str] = (),
              title: Optional[str] = None) -> list[str]:
    """One flag per field of `cls` (default None = "not given", so YAML < flags precedence works).

    Values arrive as text and are checked by `check`, so flags, YAML and Python share one set of
    rules and one message shape.

    Args:
        parser: the argparse parser to add to.
        cls: a config dataclass.
        skip: fields to leave out.
        title: an argument group's title for the flags; None: the parser itself.

    Returns:
        The destinations added (field names).
    """
    group = parser.add_argument_group(title) if title else parser
    # a field whose metadata names a `group` gets its own section of --help (the baseline's
    # options of each algorithm, `fgl_jax.systems.baseline.config`)
    titled = {f.name: f.metadata["group"] for f in dataclasses.fields(cls) if f.metadata and f.metadata.get("group")}
    sections: dict = {}
    added = []
    for name, spec in fields(cls).items():
        if name in skip:
            continue
        where = group
        if name in titled:
            where = sections.get(titled[name]) or sections.setdefault(titled[name], parser.add_argument_group(titled[name]))
        kw: dict = {"dest": name, "default": None, "help": describe(spec)}
        if spec.type is bool:
            kw["action"] = argparse.BooleanOptionalAction
        else:
            kw["metavar"] = "{" + ",".join(map(str, spec.choices)) + "}" if spec.choices and len(spec.choices) <= 12 \
                else name.upper()
            if spec.type is tuple:
                kw["nargs"] = "+"
        where.add_argument(spec.flag, **kw)
        added.append(name)
    return added


def given_flags(args: argparse.Namespace, cls: type) -> dict:
    """Flags the user actually gave (value not None), as raw values for `check`.

    Args:
        args: the parsed arguments.
        cls: the config dataclass whose flags `add_flags` added.

    Returns:
        field name -> raw value, for the flags given.
    """
    return {n: getattr(args, n) for n in fields(cls) if getattr(args, n, None) is not None}


def resolve(cls: type, config_path: Optional[Union[str, Path]] = None, flags: Optional[dict] = None,
            system: Optional[str] = None):
    """defaults < YAML file < flags, checked; the one way a run's config is assembled.

    Args:
        cls: a system's config dataclass.
        config_path: a YAML config file, or None.
        flags: the flags given (`given_flags`), or None.
        system: the system the YAML file must be for, or None.

    Returns:
        The config instance.

    Raises:
        ValueError: what `read_yaml`, `check` or `make` refuse.
        FileNotFoundError: `config_path` does not exist.
    """
    values: dict = {}
    if config_path:
        where = f"config file {config_path}"
        values.update(check(cls, from_yaml(cls, read_yaml(config_path, system), where), where))
    values.update(check(cls, flags or {}, "command line"))
    return make(cls, values, source=f"config file {config_path}" if config_path else "command line")


@dataclasses.dataclass(frozen=True)
class RunSpec:
    """What every run has: the data, how long, which seed. Systems subclass it (and redeclare a
    field to give it their paper's default); `clients` is declared by the systems that have them.

    `dataset` is a registered name or a path; for a path the run records the absolute path and
    `dataset_sha256` in its config.yaml (`fgl_jax.experiment.resolve_dataset`), so the config
    replays in a fresh process and says when the file changed.

    One seed gives one key: the run key is `jax.random.key(seed)` whether the run starts from the
    CLI, the Python API or an experiment.
    """

    dataset: str = option("cora", "dataset name (see `fgl-jax datasets`) or path to a graph file or directory "
                                  "(docs/your_own_graph.md)")
    data_dir: Optional[str] = option(None, "directory holding the dataset files (else $FGL_JAX_DATA)")
    dataset_sha256: Optional[str] = option(None, "sha256 of the dataset file (directory: of its files), recorded "
                                                 "by the run; a replay warns when the file changed")
    rounds: int = option(50, "number of federated rounds", low=1)
    seed: int = option(0, "seed of the run's PRNG key (initialisation, sampling, noise)")
    loss_guard: float = option(0.0, "stop as diverged when train_loss exceeds this multiple of its first "
                                    "value (0 = off)", low=0, high=1e12)

    def __post_init__(self):
        # a config built in Python is checked by the same rules as YAML and flags
        check(type(self), to_dict(self), type(self).__name__)


# ------------------------------------------------------------------------------------------------
# Whose train/val/test split a system uses
# ------------------------------------------------------------------------------------------------

SPLIT_MODES = ("auto", "paper", "keep")
SPLIT_HELP = ("train/val/test split: paper (the paper's own split), keep (the masks the data carries), auto "
              "(paper on the built-in datasets, keep on your own data when it carries masks, else paper)")


def builtin_dataset(dataset: str) -> bool:
    """True for a dataset the library itself registers (not a path, not a user's `register`).

    Args:
        dataset: a dataset name or path.

    Returns:
        True for a built-in dataset; False for a path, a user's registration or an unknown name.
    """
    from fgl_jax.data import DataError, UnknownDatasetError, source
    try:
        return source(dataset).builtin
    except (UnknownDatasetError, DataError):
        return False


def split_mode(split: str, dataset: str, has_split: bool) -> str:
    """"paper" or "keep": the resolved `split` option of a system with its own paper split.

    auto = paper on a built-in dataset (so the paper's numbers are reproduced), keep on a user's
    dataset (path or registered) whose data carries a train mask, paper when it carries none. A
    user's graph file without masks gets the loader's default stratified split (60/20/20 per class,
    seed 0: `fgl_jax.data.checks`), so auto keeps that one and every system sees the same split.
    keep on data without a train mask is refused (there is nothing to keep).

    Args:
        split: "auto", "paper" or "keep".
        dataset: the dataset name or path.
        has_split: whether the loaded data carries a train mask.

    Returns:
        "paper" or "keep".

    Raises:
        ValueError: "keep" for data without a train mask.
    """
    if split == "auto":
        return "keep" if has_split and not builtin_dataset(dataset) else "paper"
    if split == "keep" and not has_split:
        raise ValueError(f"split keep: dataset {dataset!r} carries no train mask (use split paper or auto)")
    return split
