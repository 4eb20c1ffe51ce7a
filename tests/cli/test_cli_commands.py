"""The ``limbo`` command's layout: one module per group of subcommands, each registered once in
``COMMANDS``, and every subcommand (nested ones too) with a help page and one-line usage errors."""

from __future__ import annotations

import argparse
import importlib
import pkgutil
from collections.abc import Iterator

import pytest

import limbo_plugin.cli as cli
from limbo_plugin.cli import COMMANDS, build_parser, main

NOT_COMMANDS = {"__main__", "common"}


def _subcommands(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()
                 ) -> Iterator[tuple[str, ...]]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield (*path, name)
                yield from _subcommands(sub, (*path, name))


SUBCOMMANDS = list(_subcommands(build_parser()))


def test_every_command_module_is_registered_once() -> None:
    modules = {m.name for m in pkgutil.iter_modules(cli.__path__)} - NOT_COMMANDS
    registered = [f.__module__.rpartition(".")[2] for f in COMMANDS
                  if f.__module__.startswith("limbo_plugin.cli.")]
    assert sorted(registered) == sorted(modules)
    for name in modules:
        assert importlib.import_module(f"limbo_plugin.cli.{name}").register in COMMANDS


def test_the_top_level_help_lists_the_commands_in_registration_order(
        capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["--help"])
    assert exit_.value.code == 0
    listed = capsys.readouterr().out.split("{", 1)[1].split("}", 1)[0].split(",")
    assert listed == [path[0] for path in SUBCOMMANDS if len(path) == 1]


@pytest.mark.parametrize("path", SUBCOMMANDS, ids=" ".join)
def test_every_subcommand_has_help_and_one_line_usage_errors(
        path: tuple[str, ...], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main([*path, "--help"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out.startswith(f"usage: limbo {' '.join(path)}")
    with pytest.raises(SystemExit) as exit_:
        main([*path, "--no-such-flag"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err  # the parser that objects names itself and its --help
    prog = err.split(": ", 1)[0]
    assert f"limbo {' '.join(path)}".startswith(prog) and err.endswith(f"(see {prog} --help)\n")
