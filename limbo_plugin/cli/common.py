"""What the ``limbo`` subcommands share: the parser class, where the specs are, and reading a
record file."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn, TypeAlias, TypeVar

from limbo_plugin.errors import UsageError
from limbo_plugin.records import GIVE_RECORDS

if TYPE_CHECKING:
    from limbo_plugin.spec.registry import SpecRegistry

R = TypeVar("R")


class OneLineParser(argparse.ArgumentParser):
    """argparse, but a usage error is one line (and exit 2) pointing at ``--help``, not the
    usage block followed by the error."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {message} (see {self.prog} --help)\n")


Subcommands: TypeAlias = "argparse._SubParsersAction[OneLineParser]"
"""``limbo``'s subparsers, which each command module's ``register`` adds its parser to."""


def registry_of(args: argparse.Namespace) -> SpecRegistry:
    """The one place the command finds its specs: ``--specs``, else the default directory."""
    from limbo_plugin.spec.registry import SpecRegistry, default_specs_dir

    return SpecRegistry.load(Path(args.specs).resolve() if args.specs else default_specs_dir())


def records_file(path: str, read: Callable[[str], list[R]]) -> list[R]:
    """The records ``read`` gives of ``path`` (full ones, or slim outcomes); a missing or empty
    file is an error naming it."""
    records = read(path)
    if not records:
        state = "holds no records" if Path(path).exists() else "does not exist"
        raise UsageError(f"{path} {state}; {GIVE_RECORDS}")
    return records
