"""Error types with enough context for a user to fix their input without reading our code."""

from __future__ import annotations

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

    def render(self) -> str:
        where = self.file if self.line is None else f"{self.file}:{self.line}"
        at = f" at {self.path}" if self.path else ""
        return f"{where}:{at} {self.message}"


class UsageError(LimboError):
    """A command-line or configuration value is not one Limbo knows."""


class EpisodeOver(LimboError):
    """Raised by an agent session's ``call`` once the episode has ended (finish or budget)."""
