"""One view of a graded episode, for every reader of records: the end-of-run summary, the gate,
``limbo runs``, ``limbo compare`` and every ``limbo report`` table.

A record's trace and ledger are most of its bytes and all of its parsing cost, and none of
these readers needs them whole. :class:`EpisodeView` is the record's scalar fields — named and
typed as :class:`~limbo_plugin.records.EpisodeRecord` declares them
(``tests/report/test_episode_view.py`` holds the two in step) — in a slotted row, plus what the
specs say about the episode, written once when the report loads it (:meth:`labelled`): the
family's class and rank, the fault mode's hidden outcome, group, execution and delay, the focal
write's native contract class, the agent's tier. Tables select on those labels, never on mode
names. A line is validated straight into the view (:meth:`from_json`): pydantic skips the
fields it does not declare without building Python objects for them, and its string cache makes
the configuration values, which repeat in every row, one object each. The summary and the gate
use the record's fields only; the labels keep their neutral defaults there.
"""

from __future__ import annotations

import functools
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Protocol

from pydantic import TypeAdapter

from limbo_plugin.records import EpisodeRecord, run_fingerprint


class Recorded(Protocol):
    """What identifies a recorded episode, on a whole record and on its view alike."""

    @property
    def experiment(self) -> str | None: ...
    @property
    def arm(self) -> str | None: ...
    @property
    def repeat(self) -> int: ...
    @property
    def episode_id(self) -> str: ...


def record_identity(record: Recorded) -> Hashable:
    """Experiment, arm, repeat, world and configuration: one recorded episode. Two lines with
    the same identity record one episode twice (a resumed run's re-run, a line copied)."""
    return (record.experiment, record.arm, record.repeat, record.episode_id,
            run_fingerprint(record))


@dataclass(frozen=True, slots=True)
class ViewUsage:
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    unpriced_calls: int = 0


@dataclass(frozen=True, slots=True)
class EpisodeView:
    """One graded episode as the summary, the gate, ``limbo runs`` and the report see it."""

    # -- the record's own fields (EpisodeRecord's names and types) ------------------------------
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
    usage: ViewUsage | None = None
    schema_version: int | None = None
    experiment: str | None = None
    arm: str | None = None
    repeat: int = 0
    run_id: str | None = None
    instance: int = 0
    focal_write: str = ""
    fault_mode: str = ""
    fault_class: str | None = None
    """The family's class as the record states it; :meth:`labelled` takes the fault spec's."""
    focal_tool: str | None = None
    focal_idempotency: str | None = None
    focal_verification: str | None = None
    focal_accepts_key: bool | None = None
    focal_irreversible: bool | None = None
    residual_duplicates: int = 0
    final_status: str | None = None
    behaviour: str | None = None
    tool_calls: int = 0
    harness_calls: int = 0
    sim_seconds: float = 0.0
    escalations: int = 0
    # -- what the specs say about it (set by the report's loader) --------------------------------
    family_rank: int = 0
    """The family's place in the fault spec's order."""
    hidden_outcome: str | None = None
    """The mode's hidden outcome (``absent``, ``committed``, ``late``, ``partial``,
    ``duplicated``, ``none``) as the fault spec states it: what tables select on."""
    group: str | None = None
    """The mode's observation-equivalence group (``T``, ``E``, ``S``, ``-``)."""
    execute: str | None = None
    """How the mode executes the request (``never``, ``now``, ``late``, …)."""
    late_delay: str | None = None
    """For a late commit, how its delay is drawn (``fixed``, ``log_uniform``)."""
    contract_class: str | None = None
    """The focal write's contract class under the native contract."""
    tier: str | None = None
    """The agent's tier (``frontier``, ``weaker``) as its experiment spec labels it."""
    pooled: bool = True
    """Whether pooled statistics include the agent (its experiment spec's ``pooled``)."""
    # -- what its trace says (set by the report's loader) ---------------------------------------
    delay_s: float | None = None
    """A late commit's delay, from the record's fault report."""
    uncertain_count: int = 0
    """How many operations the agent's final report listed as uncertain."""
    first_action: str | None = None
    """The agent's first call after the focal fault: its tool, or ``reissue``."""
    focal_keyed: bool | None = None
    """Whether the agent's faulted call carried an idempotency key (``None``: not fired)."""
    reissue_key: str | None = None
    """The agent's first re-issue of the focal write (same tool, same intent fields):
    ``reused`` (the first attempt's key), ``new_key`` (another key or none after a keyed
    first attempt), ``no_key`` (the first attempt carried none); ``None``: no re-issue."""
    reissue_after_s: float | None = None
    """Simulated seconds from the faulted call's answer to that re-issue."""
    # -- where the full record lies (the report's explorer re-reads it) ---------------------------
    source: int = 0
    offset: int = 0
    length: int = 0

    def fingerprint(self) -> str:
        return run_fingerprint(self)

    @property
    def identity(self) -> tuple[str, str, int]:
        """The episode, its configuration and repeat index: what resume and de-duplication
        during a run compare."""
        return self.episode_id, self.fingerprint(), self.repeat

    @property
    def record_identity(self) -> tuple[str | None, str | None, int, str, str]:
        """Experiment, arm, repeat, world and configuration: one recorded episode (what the
        report's merge of several files compares; :func:`record_identity`)."""
        return self.experiment, self.arm, self.repeat, self.episode_id, self.fingerprint()

    @property
    def run_key(self) -> tuple[str | None, str | None, str, str]:
        """The record identity without the repeat number: what declared repeat runs share."""
        return self.experiment, self.arm, self.episode_id, self.fingerprint()

    @property
    def duplicated(self) -> bool:
        return self.duplicates > 0

    @property
    def faulted(self) -> bool:
        """A fired fault: the denominator of every fault-conditional rate."""
        return self.family != "none" and self.fired

    @property
    def passed(self) -> bool:
        return self.error is None and bool(self.eos) and not self.overclaim

    @property
    def tokens(self) -> int | None:
        usage = self.usage
        return None if usage is None else usage.prompt_tokens + usage.completion_tokens

    @classmethod
    def from_json(cls, line: str | bytes) -> EpisodeView:
        """The view of one JSONL record line, unlabelled (``ValueError`` if it is not a
        record)."""
        return _from_json().validate_json(line)

    @classmethod
    def from_record(cls, record: EpisodeRecord) -> EpisodeView:
        """The view of a record this process holds, equal to :meth:`from_json` of its line
        without parsing the line again (the controller's view of an episode it ran itself)."""
        values = {name: getattr(record, name) for name in _RECORD_FIELDS}
        usage = record.usage
        if usage is not None:
            values["usage"] = ViewUsage(usage.prompt_tokens, usage.completion_tokens,
                                        usage.cost_usd, usage.unpriced_calls)
        return cls(**values)


@functools.cache
def _from_json() -> TypeAdapter[EpisodeView]:
    """The view's validator, built when a line is first read (not at import: a run that only
    collects never reads one)."""
    return TypeAdapter(EpisodeView)


_RECORD_FIELDS = tuple(name for name in EpisodeView.__dataclass_fields__
                       if name != "usage" and name in EpisodeRecord.model_fields)
"""The view's fields that are the record's own (the rest are labels a report adds)."""
