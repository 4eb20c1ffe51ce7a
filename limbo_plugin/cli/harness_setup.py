"""``limbo harness list|install``: the production harness CLIs, pinned and installed."""

from __future__ import annotations

import argparse
import sys

from limbo_plugin.cli.common import Subcommands
from limbo_plugin.errors import LimboError


def register(sub: Subcommands) -> None:
    harness = sub.add_parser("harness", help="install and list the production harness CLIs")
    harness_sub = harness.add_subparsers(dest="harness_command", required=True)
    harness_list = harness_sub.add_parser("list", help="harness adapters, pinned and installed "
                                          "versions")
    harness_list.set_defaults(handler=cmd_harness_list)
    harness_install = harness_sub.add_parser(
        "install", help="install pinned harness CLIs into the cache (a no-op when present)")
    harness_install.add_argument("names", nargs="*", metavar="NAME",
                                 help="harnesses to install (default: codex copilot hermes)")
    harness_install.set_defaults(handler=cmd_harness_install)


def cmd_harness_list(args: argparse.Namespace) -> int:
    from limbo_plugin.agents.harness_install import (
        available_harnesses,
        find_harness,
        installed_executable,
        version_of,
    )

    for name in available_harnesses():
        spec = find_harness(name)
        pinned = spec.install.package if spec.install else "(your own: no install step)"
        executable = installed_executable(spec)
        if executable is None:
            state = "not installed"
        else:
            state = f"installed: {version_of(spec, str(executable)) or '?'} ({executable})"
        print(f"{name:10} {pinned:34} {state}")
    return 0


def cmd_harness_install(args: argparse.Namespace) -> int:
    from limbo_plugin.agents.harness_install import BUILT_IN, find_harness, install

    failed = 0
    for name in args.names or BUILT_IN:  # one failure does not keep the others out
        try:
            install(find_harness(name), log=lambda line: print(line, flush=True))
        except LimboError as exc:
            print(f"limbo: {exc}", file=sys.stderr)
            failed += 1
    return 2 if failed else 0
