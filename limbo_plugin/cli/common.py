"""What the ``limbo`` subcommands share: their subparsers, where the specs are, and reading a
record file."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, TypeAlias, TypeVar

from limbo_plugin.errors import UsageError
from limbo_plugin.records import GIVE_RECORDS
from limbo_plugin.usage import OneLineParser

if TYPE_CHECKING:
    from limbo_plugin.spec.registry import SpecRegistry
    from limbo_plugin.store.read import RecordScan

R = TypeVar("R")


Subcommands: TypeAlias = "argparse._SubParsersAction[OneLineParser]"
"""``limbo``'s subparsers, which each command module's ``register`` adds its parser to."""


def registry_of(args: argparse.Namespace) -> SpecRegistry:
    """The one place the command finds its specs: ``--specs``, else the default directory."""
    from limbo_plugin.spec.registry import SpecRegistry, default_specs_dir

    return SpecRegistry.load(Path(args.specs).resolve() if args.specs else default_specs_dir())


def records_file(path: str, scan: Callable[[str], RecordScan[R]]) -> list[R]:
    """The records ``scan`` reads of ``path`` (whole ones, or views), each episode once; what
    the scan dropped (a torn last line, duplicate lines) is said on stderr, and a missing or
    empty file is an error naming it."""
    found = scan(path)
    for notice in found.notices:
        print(f"limbo: {notice}", file=sys.stderr)
    if not found.records:
        state = "holds no records" if Path(path).exists() else "does not exist"
        raise UsageError(f"{path} {state}; {GIVE_RECORDS}")
    return found.records
