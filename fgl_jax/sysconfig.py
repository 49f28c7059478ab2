"""YAML configs for the systems' subcommands (`fgl-jax <system> --config file.yaml [flags]`).

A system's options are exactly the argparse destinations of its CLI subcommand (what its
`register_cli` adds), so one YAML file = one run = one `build_program(options)` call. This module
reads such a file against the subcommand's own parser (unknown keys, wrong types and values
outside `choices` are refused, naming the key and the file), and writes the resolved options back
so that `fgl-jax <system> --config DIR/config.yaml` replays a run exactly.

    system: hifgl          # optional; must match the subcommand when present
    dataset: cora
    silos: 5
    lr: 0.01
"""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, Optional

import yaml

# run-control flags: where and how to run, not what to run (never part of a config file)
CONTROL = ("config", "print_config", "out", "resume", "no_progress", "runner", "func", "command", "help")


def option_actions(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    """dest -> argparse action for every option of a subcommand that describes the run."""
    return {a.dest: a for a in parser._actions if a.dest not in CONTROL and a.dest != argparse.SUPPRESS}


def default_options(parser: argparse.ArgumentParser) -> dict[str, Any]:
    """The subcommand's defaults as an options dict (what `fgl-jax <system>` with no flag runs)."""
    return {k: a.default for k, a in option_actions(parser).items()}


def coerce(parser: argparse.ArgumentParser, key: str, value: Any, source: str) -> Any:
    """`value` as the subcommand's option `key` would hold it after argparse; clear errors otherwise."""
    actions = option_actions(parser)
    if key not in actions:
        raise ValueError(f"{source}: unknown key {key!r} for `fgl-jax {parser.prog.split()[-1]}`; "
                         f"valid keys: {sorted(actions)}")
    action = actions[key]
    if value is None:
        return None
    if isinstance(action, (argparse._StoreTrueAction, argparse._StoreFalseAction)):
        if not isinstance(value, bool):
            raise ValueError(f"{source}: key {key!r} must be true or false, got {value!r}")
        return value
    if action.nargs in ("*", "+") or isinstance(action.nargs, int):
        values = value if isinstance(value, list) else [value]
        return [_one(action, key, v, source) for v in values]
    return _one(action, key, value, source)


def _one(action: argparse.Action, key: str, value: Any, source: str) -> Any:
    typ = action.type
    if isinstance(value, (dict, list)):
        raise ValueError(f"{source}: key {key!r} must be a single value, got {value!r}")
    if typ is int and (isinstance(value, bool) or (isinstance(value, float) and not value.is_integer())):
        raise ValueError(f"{source}: key {key!r} must be an integer, got {value!r}")
    try:
        out = typ(value) if typ is not None else (value if isinstance(value, str) else _text(value))
    except (TypeError, ValueError, argparse.ArgumentTypeError) as e:
        raise ValueError(f"{source}: key {key!r} has a bad value {value!r}: {e}") from None
    if action.choices is not None and out not in action.choices:
        raise ValueError(f"{source}: key {key!r} must be one of {list(action.choices)}, got {value!r}")
    return out


def _text(value: Any) -> str:
    # YAML reads `epsilon: 2` as an int and `epsilon: .inf` as a float; untyped flags hold text
    if isinstance(value, float) and value == float("inf"):
        return "inf"
    return str(value)


def read_options(path: str | Path, parser: argparse.ArgumentParser, system: str) -> dict[str, Any]:
    """Options in a YAML file, checked against the subcommand's parser (not yet merged with defaults)."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"config file {path} does not exist")
    return read_options_text(path.read_text(), parser, system, str(path))


def read_options_text(text: str, parser: argparse.ArgumentParser, system: str, path: str = "<text>") -> dict:
    """`read_options` on YAML text (path only names the source in errors)."""
    try:
        values = yaml.safe_load(text) or {}
    except yaml.YAMLError as e:
        raise ValueError(f"config file {path} is not valid YAML: {e}") from None
    if not isinstance(values, dict):
        raise ValueError(f"config file {path} must hold a mapping of options, got {type(values).__name__}")
    values = {str(k).replace("-", "_"): v for k, v in values.items()}
    named = values.pop("system", system)
    if named != system:
        raise ValueError(f"config file {path} is for system {named!r}, not {system!r}")
    return {k: coerce(parser, k, v, f"config file {path}") for k, v in values.items()}


def resolved_options(args: argparse.Namespace, parser: argparse.ArgumentParser) -> dict[str, Any]:
    """The options of a parsed command line (config file + flags), without run-control flags."""
    return {k: getattr(args, k) for k in option_actions(parser) if hasattr(args, k)}


def dump_options(system: str, options: dict[str, Any], path: Optional[str | Path] = None) -> str:
    """YAML text of a run's options (system first); written to `path` when given."""
    text = yaml.safe_dump({"system": system, **options}, sort_keys=False)
    if path is not None:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(text)
    return text


def parse_assignment(text: str, flag: str) -> tuple[str, list[Any]]:
    """`name=v1,v2,...` (as in --grid and --set) -> (name, [values]) with YAML scalars (0.1 -> float)."""
    if "=" not in text:
        raise ValueError(f"{flag} expects name=value[,value...], got {text!r}")
    name, _, rest = text.partition("=")
    name = name.strip().replace("-", "_")
    items = [v.strip() for v in rest.split(",") if v.strip()]
    if not name or not items:
        raise ValueError(f"{flag} expects name=value[,value...], got {text!r}")
    values = []
    for v in items:
        try:
            values.append(yaml.safe_load(v))
        except yaml.YAMLError:
            values.append(v)
    return name, values


def merge_options(system: str, options: dict[str, Any], defaults: dict[str, Any]) -> dict[str, Any]:
    """`defaults` overlaid with `options` for a system's `build_program`: run-control keys (CONTROL,
    "system") are ignored, unknown keys refused with a message listing the valid ones, and a None
    value means "not given" (the default stays)."""
    unknown = sorted(set(options) - set(defaults) - set(CONTROL) - {"system"})
    if unknown:
        raise ValueError(f"{system} options: unknown key(s) {unknown}; valid keys: {sorted(defaults)}")
    return {**defaults, **{k: v for k, v in options.items() if k in defaults and v is not None}}


def require_at_least_one(system: str, options: dict[str, Any], names: tuple[str, ...]) -> None:
    """Refuse counts below 1 (clients, rounds, ...) with a message naming the option."""
    for name in names:
        if int(options[name]) < 1:
            raise ValueError(f"{system} option {name!r} must be >= 1, got {options[name]}")
