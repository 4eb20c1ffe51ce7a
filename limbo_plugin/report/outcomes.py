"""What the end-of-run summary, the gate and ``limbo runs`` read of each episode: a slim,
slotted row.

A record's trace and ledger are most of its bytes and all of its parsing cost, and neither the
family table nor the gate reads them. So the controller keeps one :class:`Outcome` per episode
(about 0.5 KB, where the parsed record was about 70 KB) and leaves the rest in the JSONL file,
and ``limbo summary`` reads only these fields of each line: pydantic skips the undeclared ones
without building Python objects for them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pydantic import TypeAdapter, ValidationError

from limbo_plugin.records import RECORD_SCHEMA_VERSION, EpisodeRecord, run_fingerprint
from limbo_plugin.report.record_files import (
    RecordScan,
    line_problem,
    scan_file,
    validation_problem,
)


@dataclass(frozen=True, slots=True)
class OutcomeUsage:
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    unpriced_calls: int = 0


@dataclass(frozen=True, slots=True)
class Outcome:
    """One graded episode as the summary and the gate see it."""

    episode_id: str
    template: str
    family: str
    agent: str
    contract: str
    docs: str
    instruction: str
    condition: str
    operator: str
    fired: bool
    ts: bool | None
    eos: bool | None
    overclaim: bool | None
    """``None`` (the three above) on a record with an infrastructure error: it has no grade."""
    duplicates: int
    error: str | None = None
    usage: OutcomeUsage | None = None
    schema_version: int | None = None
    experiment: str | None = None
    arm: str | None = None
    repeat: int = 0
    run_id: str | None = None

    def fingerprint(self) -> str:
        return run_fingerprint(self)

    @property
    def identity(self) -> tuple[str, str, int]:
        """The episode, its configuration and repeat index: what resume and de-duplication
        compare."""
        return self.episode_id, self.fingerprint(), self.repeat

    @property
    def passed(self) -> bool:
        return self.error is None and bool(self.eos) and not self.overclaim

    @classmethod
    def from_json(cls, line: str | bytes) -> Outcome:
        """The outcome of one JSONL record line (``ValueError`` if it is not a record)."""
        return _FROM_JSON.validate_json(line)


GradedEpisode = Outcome | EpisodeRecord
"""What :func:`~limbo_plugin.report.aggregate.summarize` and the gate read: an :class:`Outcome`,
or a whole :class:`~limbo_plugin.records.EpisodeRecord` (the same fields, declared there)."""

_FROM_JSON = TypeAdapter(Outcome)
"""Validates a record line straight into an :class:`Outcome`: the fields it does not declare
(trace, ledger, …) are skipped unparsed, and pydantic's string cache makes the configuration
values, which repeat in every row, one object each."""


def parse_outcome_line(raw: bytes) -> tuple[Outcome | None, str]:
    """One record line's outcome, or ``None`` and what is wrong with the line."""
    try:
        outcome = Outcome.from_json(raw)
    except ValidationError as exc:
        return None, line_problem(raw) or validation_problem(exc)
    if outcome.schema_version != RECORD_SCHEMA_VERSION:
        return None, line_problem(raw)
    return outcome, ""


def scan_outcomes(path: str | Path) -> RecordScan[Outcome]:
    """The outcome of every record line in ``path``; a torn last line is skipped (and named on
    the scan), any other line that is not a record is a
    :class:`~limbo_plugin.report.record_files.RecordFileError` naming ``file:line``."""
    return scan_file(path, parse_outcome_line)


def read_outcomes(path: str | Path) -> list[Outcome]:
    return scan_outcomes(path).records
