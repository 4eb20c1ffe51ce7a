"""``limbo init [DIR]``: copy the specs installed with Limbo into a project, to edit them.

An installed Limbo runs its packaged specs from any directory (``pytest --experiment smoke``).
A project that wants its own templates, fault modes, gates or experiments starts from a copy in
``DIR/specs``, which then takes precedence over the packaged ones for pytest run in DIR. An
existing ``specs/`` is never overwritten.
"""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path

from limbo_plugin.cli.common import Subcommands
from limbo_plugin.errors import UsageError

SPEC_SUFFIXES = (".yaml", ".yml")


def register(sub: Subcommands) -> None:
    """Add ``init`` to ``limbo``'s subparsers."""
    parser = sub.add_parser("init", help="copy the default specs into a project (DIR/specs) "
                            "to edit them; pytest run in DIR then uses that copy")
    parser.add_argument("directory", metavar="DIR", nargs="?", default=".",
                        help="the project directory (default: the current one)")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from limbo_plugin.spec.registry import packaged_specs_dir

    project = Path(args.directory)
    if project.exists() and not project.is_dir():
        raise UsageError(f"limbo init {args.directory}: not a directory")
    target = project / "specs"
    if target.exists():
        raise UsageError(f"{target} already exists: limbo init never overwrites specs; edit "
                         "them there, or give another directory (limbo init DIR)")
    source = packaged_specs_dir()
    shutil.copytree(source, target, ignore=_not_specs)
    copied = sum(1 for p in target.rglob("*") if p.suffix in SPEC_SUFFIXES)
    print(f"limbo: copied {copied} spec files from {source} to {target}")
    print(f"Run `pytest --experiment smoke` in {project} to use them "
          "(`limbo list experiments` lists the experiments).")
    return 0


def _not_specs(directory: str, names: list[str]) -> list[str]:
    """What ``copytree`` leaves out: anything but spec files and folders (caches, bytecode)."""
    return [n for n in names
            if not (n.endswith(SPEC_SUFFIXES) or (Path(directory) / n).is_dir())
            or n == "__pycache__"]
