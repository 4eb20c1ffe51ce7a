"""argparse with Limbo's usage errors: one line naming the program and pointing at ``--help``.

Every parser a user meets is one (``limbo`` and its subcommands, the ``python -m`` tools), so
it lives below all of them: a tool outside ``cli/`` uses it without importing the command.
"""

from __future__ import annotations

import argparse
from typing import NoReturn


class OneLineParser(argparse.ArgumentParser):
    """argparse, but a usage error is one line (and exit 2) pointing at ``--help``, not the
    usage block followed by the error."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {message} (see {self.prog} --help)\n")
