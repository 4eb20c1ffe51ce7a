"""Reading record files into the one view of an episode (:class:`Outcome`, the summary's name
for :class:`~limbo_plugin.report.episode_view.EpisodeView`) for the end-of-run summary, the gate
and ``limbo runs``.

The controller keeps one view per episode (under 1 KB, where the parsed record was about
70 KB) and leaves the trace and ledger in the JSONL file; ``limbo summary`` reads only the view's
fields of each line.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import ValidationError

from limbo_plugin.records import RECORD_SCHEMA_VERSION, EpisodeRecord
from limbo_plugin.report.episode_view import EpisodeView, ViewUsage
from limbo_plugin.report.record_files import (
    RecordScan,
    line_problem,
    scan_file,
    validation_problem,
)

Outcome = EpisodeView
"""The summary's name for the one view of an episode (:mod:`.episode_view`)."""
OutcomeUsage = ViewUsage

GradedEpisode = Outcome | EpisodeRecord
"""What :func:`~limbo_plugin.report.aggregate.summarize` and the gate read: an :class:`Outcome`,
or a whole :class:`~limbo_plugin.records.EpisodeRecord` (the same fields, declared there)."""


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
