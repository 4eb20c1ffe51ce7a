"""Error types with enough context for a user to fix their input without reading our code."""

from __future__ import annotations

import contextlib
from pathlib import Path


class LimboError(Exception):
    """Base class for every error Limbo raises on purpose."""


class SpecError(LimboError):
    """A spec file is broken: names the file, the line, the path inside it and the problem."""

    def __init__(self, file: str | Path, message: str, *, line: int | None = None,
                 path: str = "") -> None:
        self.file = str(file)
        self.line = line
        self.path = path
        self.message = message
        super().__init__(self.render())

    def render(self, relative_to: str | Path | None = None) -> str:
        """``file:line: at path problem``; the file relative to ``relative_to`` when inside it
        (what a user typed, not where pytest resolved it)."""
        file = self.file
        if relative_to is not None:
            with contextlib.suppress(ValueError, RuntimeError, OSError):  # RuntimeError: a loop
                file = str(Path(self.file).absolute().relative_to(
                    Path(relative_to).absolute()))
        where = file if self.line is None else f"{file}:{self.line}"
        at = f" at {self.path}" if self.path else ""
        return f"{where}:{at} {self.message}"


class UsageError(LimboError):
    """A command-line or configuration value is not one Limbo knows."""


class EpisodeOver(LimboError):
    """Raised by an agent session's ``call`` once the episode has ended (finish or budget)."""


def os_error_line(exc: OSError) -> str:
    """An operating-system error as one line a user reads: the path and what went wrong
    (``reports/history: File exists``), not Python's ``[Errno 17] File exists: '…'``."""
    from limbo_plugin.scrubbing import scrub

    reason = exc.strerror or str(exc) or type(exc).__name__
    names = [str(name) for name in (exc.filename, exc.filename2) if name is not None]
    if not names:
        return scrub(reason)
    return scrub(f"{' -> '.join(_shown(name) for name in names)}: {reason}")


def _shown(name: str) -> str:
    import os

    try:
        relative = os.path.relpath(name)
    except ValueError:  # another drive
        return name
    return name if relative.startswith("..") else relative
