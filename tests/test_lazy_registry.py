"""A command that names one system imports that system alone, with the same flags and help as the
whole parser gives it; the registry's command aliases agree with the registrations."""
import subprocess
import sys

import pytest

from fgl_jax import cli, registry


def _subparser(parser, command: str):
    return next(a for a in parser._subparsers._group_actions).choices[command]


def test_each_system_command_alone_has_the_whole_parsers_flags_and_help():
    whole = cli.build_parser()
    for e in registry.entries("system"):
        command = e.info.get("command", e.name)
        alone = cli.build_parser(command=command)
        assert list(next(a for a in alone._subparsers._group_actions).choices) == [command]
        assert _subparser(alone, command).format_help() == _subparser(whole, command).format_help()


def test_command_aliases_name_their_systems():
    from fgl_jax.systems import COMMANDS
    for e in registry.entries("system"):
        command = e.info.get("command", e.name)
        if command != e.name:
            assert COMMANDS.get(command) == e.name, f"fgl_jax.systems.COMMANDS lacks {command!r}: {e.name!r}"
    for command, name in COMMANDS.items():
        assert registry.entry("system", name).info.get("command") == command


@pytest.mark.parametrize("command, system", [("run", "baseline"), ("hifgl", "hifgl")])
def test_parsing_a_system_command_imports_no_other_system(command, system):
    code = (f"import sys; from fgl_jax import cli, experiment; cli.build_parser(command={command!r})"
            f".parse_args([{command!r}, '--rounds', '3']); "
            f"assert experiment.system_of(experiment.default_config({system!r})).name == {system!r}; "
            "print(sorted({m.split('.')[2] for m in sys.modules if m.startswith('fgl_jax.systems.')}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == str([system]), out


def test_an_unknown_command_still_lists_every_command(capsys):
    with pytest.raises(SystemExit):
        cli.main(["rnu"])
    err = capsys.readouterr().err
    for e in registry.entries("system"):
        assert repr(e.info.get("command", e.name)) in err
    assert "'sweep'" in err and "'reproduce'" in err
