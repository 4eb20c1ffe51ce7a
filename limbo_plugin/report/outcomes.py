"""What the end-of-run summary and the gate read of each episode: a slim, slotted row.

A record's trace and ledger are most of its bytes and all of its parsing cost, and neither the
family table nor the gate reads them. So the controller keeps one :class:`Outcome` per episode
(about 0.5 KB, where the parsed record was about 70 KB) and leaves the rest in the JSONL file,
and ``limbo summary`` reads only these fields of each line: pydantic skips the undeclared ones
without building Python objects for them.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from pydantic import BaseModel, ConfigDict, ValidationError

from limbo_plugin.records import RECORD_SCHEMA_VERSION, run_fingerprint
from limbo_plugin.report.records import (
    RecordScan,
    line_problem,
    scan_file,
    validation_problem,
)

if TYPE_CHECKING:
    from limbo_plugin.records import EpisodeRecord


class UsageLike(Protocol):
    @property
    def prompt_tokens(self) -> int: ...
    @property
    def completion_tokens(self) -> int: ...
    @property
    def cost_usd(self) -> float: ...
    @property
    def unpriced_calls(self) -> int: ...


class GradedEpisode(Protocol):
    """What :func:`~limbo_plugin.report.aggregate.summarize` and the gate read: an
    :class:`Outcome`, or a whole :class:`~limbo_plugin.records.EpisodeRecord`."""

    @property
    def episode_id(self) -> str: ...
    @property
    def template(self) -> str: ...
    @property
    def family(self) -> str: ...
    @property
    def agent(self) -> str: ...
    @property
    def contract(self) -> str: ...
    @property
    def docs(self) -> str: ...
    @property
    def instruction(self) -> str: ...
    @property
    def condition(self) -> str: ...
    @property
    def operator(self) -> str: ...
    @property
    def fired(self) -> bool: ...
    @property
    def ts(self) -> bool: ...
    @property
    def eos(self) -> bool: ...
    @property
    def overclaim(self) -> bool: ...
    @property
    def duplicates(self) -> int: ...
    @property
    def error(self) -> str | None: ...
    @property
    def usage(self) -> UsageLike | None: ...
    @property
    def passed(self) -> bool: ...
    def fingerprint(self) -> str: ...


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
    ts: bool
    eos: bool
    overclaim: bool
    duplicates: int
    error: str | None = None
    usage: OutcomeUsage | None = None

    def fingerprint(self) -> str:
        return run_fingerprint(self)

    @property
    def identity(self) -> tuple[str, str]:
        """The episode and its configuration: what resume and de-duplication compare."""
        return self.episode_id, self.fingerprint()

    @property
    def passed(self) -> bool:
        return self.error is None and self.eos and not self.overclaim

    @classmethod
    def of(cls, record: EpisodeRecord | _OutcomeFields) -> Outcome:
        usage = record.usage
        # Configuration values repeat in every row: one string object each.
        return cls(
            episode_id=record.episode_id, template=sys.intern(record.template),
            family=sys.intern(record.family), agent=sys.intern(record.agent),
            contract=sys.intern(record.contract), docs=sys.intern(record.docs),
            instruction=sys.intern(record.instruction),
            condition=sys.intern(record.condition), operator=sys.intern(record.operator),
            fired=record.fired, ts=record.ts, eos=record.eos, overclaim=record.overclaim,
            duplicates=record.duplicates, error=record.error,
            usage=None if usage is None else OutcomeUsage(
                usage.prompt_tokens, usage.completion_tokens, usage.cost_usd,
                usage.unpriced_calls))

    @classmethod
    def from_json(cls, line: str | bytes) -> Outcome:
        """The outcome of one JSONL record line (``ValueError`` if it is not a record)."""
        return cls.of(_OutcomeFields.model_validate_json(line))


class _OutcomeUsageFields(BaseModel):
    model_config = ConfigDict(extra="ignore")

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    unpriced_calls: int = 0


class _OutcomeFields(BaseModel):
    """The fields of an :class:`~limbo_plugin.records.EpisodeRecord` an :class:`Outcome` has."""

    model_config = ConfigDict(extra="ignore")

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
    ts: bool
    eos: bool
    overclaim: bool
    duplicates: int
    error: str | None = None
    usage: _OutcomeUsageFields | None = None
    schema_version: int | None = None


def parse_outcome_line(raw: bytes) -> tuple[Outcome | None, str]:
    """One record line's outcome, or ``None`` and what is wrong with the line."""
    try:
        fields = _OutcomeFields.model_validate_json(raw)
    except ValidationError as exc:
        return None, line_problem(raw) or validation_problem(exc)
    if fields.schema_version != RECORD_SCHEMA_VERSION:
        return None, line_problem(raw)
    return Outcome.of(fields), ""


def scan_outcomes(path: str | Path) -> RecordScan[Outcome]:
    """The outcome of every record line in ``path``; a torn last line is skipped (and named on
    the scan), any other line that is not a record is a
    :class:`~limbo_plugin.report.records.RecordFileError` naming ``file:line``."""
    return scan_file(path, parse_outcome_line)


def read_outcomes(path: str | Path) -> list[Outcome]:
    return scan_outcomes(path).records
