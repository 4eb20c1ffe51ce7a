"""The ``limbo`` command: inspect specs, run one episode, and report on record files offline.

    limbo list templates|modes|conditions|policies|experiments|tools
    limbo run TEMPLATE INSTANCE FOCAL_WRITE MODE [--agent …] [--contract …] [--condition …]
    limbo show TEST_ID [--records reports/episodes.jsonl] [--json]
    limbo summary [RECORDS] [--markdown]
    limbo runs [RECORDS]
    limbo gate GATE [--records RECORDS] [--baseline previous|RECORDS]
    limbo compare A B [--json] [--all] [--outcome passed|eos|no_duplicate]
    limbo report [RECORDS…] [--out reports/report]
    limbo merge OUT IN…
    limbo reproduce [--agents A,…] [--small] [--yes] [--print]
    limbo view [--reports reports] [--gate GATE] | RECORDS… [--out reports/report] [--port N]
    limbo allure [RESULTS] [--out reports/allure-report] [--no-serve]
    limbo mcp --url URL [--token TOKEN] [--transport stdio|streamable-http]
    limbo harness list | install [codex|copilot|hermes …]

Evaluating an experiment is pytest's job (``pytest -k late_commit -n 16``); this command is for
looking at what a run produced, or at a single world, without pytest.

Each subcommand lives in its own module with a ``register(sub)`` that adds its parser and
handler; :data:`COMMANDS` lists them in the order ``limbo --help`` shows them, so a new
subcommand is one module and one line here.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Callable, Sequence

from pydantic import ValidationError

from limbo_plugin.cli import (
    harness_setup,
    init_project,
    judging,
    listing,
    one_episode,
    real_mcp,
    reporting,
    reproduce,
    serve_mcp,
)
from limbo_plugin.cli.common import Subcommands
from limbo_plugin.errors import LimboError
from limbo_plugin.usage import OneLineParser

COMMANDS: tuple[Callable[[Subcommands], None], ...] = (
    listing.register,            # list
    one_episode.register,        # run, show
    judging.register,            # runs, summary, gate
    reporting.register,          # compare, plan, report, view, merge, schema, allure
    reproduce.register,          # reproduce
    serve_mcp.register,          # mcp
    real_mcp.register,           # audit, proxy, guard
    init_project.register,       # init
    harness_setup.register,      # harness list|install
)
"""Every subcommand's registration, in the order of ``limbo --help``."""


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; every error a user can cause is one line on stderr and exit 2.

    The process's signal dispositions are left alone (``main`` also runs inside other programs,
    a test process among them, where a default SIGPIPE would kill the host on its next write to
    a closed pipe); a reader that goes away (``limbo list tools | head``) ends the command
    quietly instead.
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.handler(args) or 0)
    except BrokenPipeError:
        _silence_stdout()
        return 1
    except LimboError as exc:
        print(f"limbo: {exc}", file=sys.stderr)
    except ValidationError as exc:
        from limbo_plugin.runconfig import first_problem

        print(f"limbo: {first_problem(exc)}", file=sys.stderr)
    except OSError as exc:  # a directory for a file, a permission, a full disk
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"limbo: {where}{exc.strerror or exc}", file=sys.stderr)
    return 2


def console_main() -> int:
    """The ``limbo`` script and ``python -m limbo_plugin.cli``: :func:`main`, and Ctrl-C ends
    the command with one line and the shell's status for an interrupt (130), not a traceback.
    (When the interrupt passed through code Python ran with ``exec``, as some imports do,
    Python 3.11 then ends the process by SIGINT instead, which a shell reads as 130 too.)
    ``main`` itself lets ``KeyboardInterrupt`` through, so a program that calls it keeps its
    own Ctrl-C."""
    try:
        return main()
    except KeyboardInterrupt:
        print("limbo: interrupted", file=sys.stderr)
        return 130


def _silence_stdout() -> None:
    """The reader of stdout is gone: send what is still buffered nowhere, so the interpreter's
    final flush does not print a traceback."""
    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("limbo-bench")
    except PackageNotFoundError:  # run from a source tree without installing
        return "unknown (not installed)"


def build_parser() -> argparse.ArgumentParser:
    assert __doc__ is not None
    parser = OneLineParser(prog="limbo", description=__doc__.split("\n\n")[0].replace("``", ""))
    parser.add_argument("--version", action="version", version=f"limbo {_version()}")
    parser.add_argument("--specs", default=None, help="specs directory (default ./specs, else "
                        "the specs installed with Limbo)")
    sub = parser.add_subparsers(dest="command", required=True)
    for register in COMMANDS:
        register(sub)
    return parser
