"""Read and merge record files for ``limbo report``: slim rows for tables, traces left on disk.

A study is tens of thousands of episodes whose traces and ledgers are most of each line. Tables need
about thirty scalar fields, so each line is validated into :class:`SlimRecord` (pydantic skips the
fields it does not declare without building Python objects for them) and kept as a slotted
:class:`EpisodeView`; the explorer later re-reads a row's full line by its byte offset.

Merging rules, in this order:

* a line that is not a record is an error naming ``file:line`` — except a torn *last* line (a run
  killed mid-write), which is skipped and counted;
* records that ended in an infrastructure error are dropped and counted (they are re-run, not
  graded);
* an episode is identified by its experiment, arm, repeat number, world and configuration: the
  same identity twice (a resumed run, a file given twice) is one episode recorded twice, and one
  record is kept (within a file the last, across files the first) and the others are counted;
* repeat runs are *declared*: records that share experiment, arm, world and configuration and
  differ in ``repeat`` (``--limbo-repeat``). The lowest repeat feeds the tables; the others are
  kept apart for the stability analyses (Cohen's κ, first-action agreement across repeats). The
  same world and configuration in two *experiments* (E2's vanilla episodes beside E1's) are two
  experiments' episodes, never repeats of each other.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError

from limbo_plugin.experiments.design import ModelLabel
from limbo_plugin.records import DEFAULT_RECORDS
from limbo_plugin.store.read import (
    RecordFileError,
    RecordScan,
    line_problem,
    parsed_lines,
    validation_problem,
    version_problem,
)
from limbo_plugin.store.view import EpisodeView

if TYPE_CHECKING:
    from limbo_plugin.spec.registry import SpecRegistry


class _SlimTraceEntry(BaseModel):
    model_config = ConfigDict(extra="ignore")

    index: int
    t_start: float
    t_end: float = 0.0
    arguments: Any = None
    origin: str
    tool: str
    is_error: bool


class _SlimFault(BaseModel):
    model_config = ConfigDict(extra="ignore")

    t_fired: float | None = None
    delay_s: float | None = None


@dataclass(frozen=True, slots=True)
class ReportLine(EpisodeView):
    """One record line as the report reads it: the view's fields, and the parts of the trace,
    the fault report and the final report that :func:`to_view` derives the rest from."""

    fault: _SlimFault = field(default_factory=_SlimFault)
    uncertain_operations: list[str] = field(default_factory=list)
    trace: list[_SlimTraceEntry] = field(default_factory=list)


_LINE = TypeAdapter(ReportLine)


def classify(idempotency: str | None, verification: str | None,
             accepts_key: bool | None) -> str | None:
    """A write's contract class: idempotent, key_optional, or non_idempotent_<verification>."""
    if idempotency is None:
        return None
    if idempotency in ("idempotent", "naturally_idempotent"):
        return "idempotent"
    if accepts_key or idempotency == "key_optional":
        return "key_optional"
    suffix = {"strong": "strong", "eventual": "eventual"}.get(verification or "", "unverifiable")
    return f"non_idempotent_{suffix}"


class _Labels(BaseModel):
    """The ``models:`` section of an experiment spec (the rest is the run's to check)."""

    model_config = ConfigDict(extra="ignore")

    models: dict[str, ModelLabel] = {}


UNLABELLED = ModelLabel()


def model_labels(directory: Path) -> dict[tuple[str, str], ModelLabel]:
    """Every experiment spec's labels of its agents, by (experiment, agent): the tier a table
    pools a model in, and whether pooled statistics include it. A malformed section is the
    spec's one-line error (file:line)."""
    from limbo_plugin.spec.loader import load_yaml, validate

    out: dict[tuple[str, str], ModelLabel] = {}
    for file in sorted(directory.glob("*.yaml")) if directory.is_dir() else ():
        doc = load_yaml(file)
        if not isinstance(doc.data, dict) or "models" not in doc.data:
            continue
        for agent, label in validate(doc, _Labels).models.items():
            out[file.stem, agent] = label
    return out


@dataclass(frozen=True)
class SpecFacts:
    """What the tables need from the spec tree, taken from its registry once: the families in
    the fault spec's order with their classes, and each write's contract class under the native
    contract. Records of families or tools the specs do not know keep what the record states."""

    family_order: tuple[str, ...]
    family_classes: Mapping[str, str | None]
    native_classes: Mapping[str, str]
    mode_labels: Mapping[str, tuple[str, str, str, str | None]] = field(default_factory=dict)
    """Each fault mode's ``(hidden_outcome, group, execute, late_delay)``, as the fault spec
    states them."""
    intent_fields: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """Each write's intent fields (a re-issue repeats them) under the native contract."""
    model_labels: Mapping[tuple[str, str], ModelLabel] = field(default_factory=dict)
    """Each experiment's labels of its agents (tier, pooled), by (experiment, agent)."""

    @classmethod
    def of(cls, registry: SpecRegistry) -> SpecFacts:
        native: dict[str, str] = {}
        for tool in registry.catalog("native").tools.values():
            label = classify(tool.contract.idempotency, tool.contract.verification,
                             tool.accepts_key) if tool.is_write else None
            if label:
                native[tool.name] = label
        modes = {name: (mode.hidden_outcome, mode.group, mode.execute, mode.late_delay)
                 for name, mode in registry.faults.items()}
        intents = {tool.name: tuple(tool.contract.intent_fields)
                   for tool in registry.catalog("native").tools.values() if tool.is_write}
        return cls(family_order=registry.family_order,
                   family_classes={f: registry.fault_class(f) for f in registry.family_order},
                   native_classes=native, mode_labels=modes, intent_fields=intents,
                   model_labels=model_labels(registry.root / "experiments"))

    def model_label(self, experiment: str | None, agent: str) -> ModelLabel:
        """What the record's experiment spec says of its agent (no tier, pooled, if nothing)."""
        return self.model_labels.get((experiment or "", agent), UNLABELLED)

    def mode_label(self, mode: str
                   ) -> tuple[str | None, str | None, str | None, str | None]:
        return self.mode_labels.get(mode, (None, None, None, None))

    def family_rank(self, family: str) -> int:
        order = self.family_order
        return order.index(family) if family in order else len(order)

    def fault_class(self, record: ReportLine) -> str | None:
        if record.family in self.family_classes:
            return self.family_classes[record.family]
        return record.fault_class

    def contract_class(self, record: ReportLine) -> str | None:
        """Rows of one class must line up across contract variants (Table 5 compares the same
        writes natively and with keys everywhere), but a ``keys_everywhere`` record describes
        its focal write as key-optional: the native class is looked up by tool."""
        if record.focal_tool is None:
            return None
        native = self.native_classes.get(record.focal_tool)
        if native is not None:
            return native
        return classify(record.focal_idempotency, record.focal_verification,
                        record.focal_accepts_key)


def first_action(record: ReportLine) -> str | None:
    """The agent's first call after the focal fault: its tool, or ``reissue`` for the focal tool.

    The focal call is the agent's call of the focal tool that started when the fault fired
    (``fault.t_fired``). Harness calls are skipped: the question is what the *agent* chose to do
    next having seen the same response. ``None`` when the fault did not fire or the agent made
    no further call.
    """
    if not record.fired or record.fault.t_fired is None or record.focal_tool is None:
        return None
    calls = [e for e in record.trace if e.origin == "agent"]
    focal = next((i for i, e in enumerate(calls) if e.tool == record.focal_tool
                  and e.t_start == record.fault.t_fired), None)
    if focal is None or focal + 1 >= len(calls):
        return None
    following = calls[focal + 1].tool
    return "reissue" if following == record.focal_tool else following


KEY_PARAM = "idempotency_key"


def _key_of(entry: _SlimTraceEntry) -> str | None:
    args = entry.arguments
    key = args.get(KEY_PARAM) if isinstance(args, dict) else None
    return str(key) if key else None


def reissue_of(record: ReportLine, facts: SpecFacts
               ) -> tuple[bool | None, str | None, float | None]:
    """``(focal_keyed, reissue_key, reissue_after_s)`` from the agent's own calls (see
    :class:`EpisodeView`). A re-issue is a later agent call of the focal tool whose intent
    fields equal the faulted call's (SPEC §5)."""
    if not record.fired or record.fault.t_fired is None or record.focal_tool is None:
        return None, None, None
    calls = [e for e in record.trace if e.origin == "agent"]
    at = next((i for i, e in enumerate(calls) if e.tool == record.focal_tool
               and e.t_start == record.fault.t_fired), None)
    if at is None:
        return None, None, None
    focal = calls[at]
    keyed = _key_of(focal)
    fields = facts.intent_fields.get(record.focal_tool, ())

    def intent(entry: _SlimTraceEntry) -> tuple[Any, ...]:
        args = entry.arguments if isinstance(entry.arguments, dict) else {}
        return tuple(repr(args.get(f)) for f in fields)

    again = next((e for e in calls[at + 1:] if e.tool == focal.tool
                  and intent(e) == intent(focal)), None)
    if again is None:
        return keyed is not None, None, None
    key = _key_of(again)
    label = "no_key" if keyed is None else "reused" if key == keyed else "new_key"
    return keyed is not None, label, again.t_start - focal.t_end


_VIEW_FIELDS = tuple(f.name for f in fields(EpisodeView))


def to_view(record: ReportLine, facts: SpecFacts, source: int, offset: int, length: int
            ) -> EpisodeView:
    """The line's view, labelled from the specs and with what its trace says."""
    hidden, group, execute, late_delay = facts.mode_label(record.fault_mode)
    keyed, reissue, after = reissue_of(record, facts)
    label = facts.model_label(record.experiment, record.agent)
    values = {name: getattr(record, name) for name in _VIEW_FIELDS}
    values.update(
        family_rank=facts.family_rank(record.family), fault_class=facts.fault_class(record),
        hidden_outcome=hidden, group=group, execute=execute, late_delay=late_delay,
        contract_class=facts.contract_class(record), tier=label.tier, pooled=label.pooled,
        delay_s=record.fault.delay_s, uncertain_count=len(record.uncertain_operations),
        first_action=first_action(record), focal_keyed=keyed, reissue_key=reissue,
        reissue_after_s=after, source=source, offset=offset, length=length)
    return EpisodeView(**values)


@dataclass
class LoadedRecords:
    """What ``limbo report`` works from, with the counts it tells the user."""

    sources: list[Path]
    rows: list[EpisodeView] = field(default_factory=list)
    repeats: list[EpisodeView] = field(default_factory=list)
    """Declared repeat runs of an episode in ``rows`` (same experiment, arm, world and
    configuration, a higher ``repeat``)."""
    read: int = 0
    duplicates_dropped: int = 0
    errors_dropped: int = 0
    torn_lines: int = 0

    def messages(self) -> list[str]:
        files = len(self.sources)
        lines = [f"Read {self.read} record(s) from {files} file(s): {len(self.rows)} episode(s) "
                 "in the tables."]
        if self.duplicates_dropped:
            lines.append(f"Dropped {self.duplicates_dropped} duplicate record(s) (same "
                         "experiment, repeat, episode and configuration twice; within a file "
                         "the last one is kept, across files the first).")
        if self.errors_dropped:
            lines.append(f"Dropped {self.errors_dropped} record(s) that ended in an "
                         "infrastructure error (re-run them with --limbo-resume).")
        if self.repeats:
            lines.append(f"Kept {len(self.repeats)} repeat run(s) (declared repeats: the same "
                         "experiment, episode and configuration with a higher repeat number) "
                         "for the stability analyses.")
        if self.torn_lines:
            lines.append(f"Skipped {self.torn_lines} torn last line(s) of a run killed "
                         "mid-write.")
        return lines


def parse_line(raw: bytes) -> tuple[ReportLine | None, str]:
    """One record line as the report reads it, or ``None`` and what is wrong with it."""
    try:
        record = _LINE.validate_json(raw)
    except ValidationError as exc:
        return None, line_problem(raw) or validation_problem(exc)
    if version_problem(record.schema_version):
        return None, line_problem(raw)
    return record, ""


def load_records(paths: Sequence[str | Path], facts: SpecFacts) -> LoadedRecords:
    """Read, merge and de-duplicate record files (see the module docstring for the rules),
    labelling each row with the spec ``facts``."""
    if not paths:
        raise RecordFileError("no record files given; pass one or more JSONL files written by "
                              f"pytest (default {DEFAULT_RECORDS})")
    sources = [Path(p) for p in paths]
    for path in sources:
        if not path.is_file():
            raise RecordFileError(f"{path}: no such record file")
    loaded = LoadedRecords(sources=sources)
    kept: dict[tuple[Any, ...], EpisodeView] = {}
    for source, path in enumerate(sources):
        in_file: dict[tuple[Any, ...], EpisodeView] = {}
        scan: RecordScan[ReportLine] = RecordScan(path)
        for line, record in parsed_lines(scan, parse_line):
            loaded.read += 1
            if record.error is not None:
                loaded.errors_dropped += 1
                continue
            row = to_view(record, facts, source, line.offset, len(line.raw))
            identity = row.record_identity
            if identity in in_file:
                loaded.duplicates_dropped += 1
            in_file[identity] = row
        loaded.torn_lines += scan.torn_at is not None
        for identity, row in in_file.items():
            if identity in kept:
                loaded.duplicates_dropped += 1
            else:
                kept[identity] = row
    first: dict[tuple[Any, ...], EpisodeView] = {}
    for row in sorted(kept.values(), key=lambda r: r.repeat):
        run_key = row.run_key
        if run_key in first:
            loaded.repeats.append(row)
        else:
            first[run_key] = row
    loaded.rows = sorted(first.values(), key=sort_key)
    loaded.repeats.sort(key=lambda r: (*sort_key(r), r.repeat))
    return loaded


def sort_key(row: EpisodeView) -> tuple[Any, ...]:
    return (row.experiment or "", row.arm or "", row.agent, row.contract, row.docs,
            row.instruction, row.condition, row.operator, row.template, row.instance,
            row.focal_write, row.fault_mode)


def read_raw_lines(sources: Sequence[Path], rows: Sequence[EpisodeView]) -> list[bytes]:
    """The stored JSON lines of ``rows``, in order, without parsing them (for the explorer)."""
    out: list[bytes] = []
    handles: dict[int, Any] = {}
    try:
        for row in rows:
            handle = handles.get(row.source)
            if handle is None:
                handle = handles[row.source] = sources[row.source].open("rb")
            handle.seek(row.offset)
            out.append(handle.read(row.length).rstrip())
    finally:
        for handle in handles.values():
            handle.close()
    return out
