"""The one reader of record files: every line of a JSONL records file, each checked against
this Limbo's schema version in one place (:func:`line_problem`), parsed into the shape its
reader needs, and each recorded episode kept once.

Readers differ only in what they parse a line into: a whole
:class:`~limbo_plugin.records.EpisodeRecord` (:func:`read_records`), the slotted
:class:`~limbo_plugin.store.view.EpisodeView` the summary, the gate, resume and ``limbo runs``
use (:func:`read_views`; the controller keeps one per episode, under 1 KB where the parsed record
is about 70 KB, and leaves the trace and ledger in the file), or the report's slim row
(``limbo report``). The rules are the same for all of them:

* a torn *last* line (a run killed mid-write) is skipped and said (:attr:`RecordScan.notices`);
* any other line that is not a record of this schema version — garbage, invalid UTF-8, another
  version, a line longer than :data:`MAX_LINE_BYTES` — is a :class:`RecordFileError` naming
  ``file:line``: silently skipping it would make resume re-run an episode, or a summary leave
  one out, without anyone noticing;
* a line that records an episode already read (the same experiment, arm, repeat, world and
  configuration: :func:`record_identity`) is one episode recorded twice, not two: the last one
  is kept (a resumed run's re-run supersedes an earlier line), in the place of the first, and
  the count of dropped lines is said.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Hashable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, Generic, TypeVar

from pydantic import ValidationError

from limbo_plugin.errors import LimboError
from limbo_plugin.records import RECORD_SCHEMA_VERSION, EpisodeRecord
from limbo_plugin.store.files import shown_path
from limbo_plugin.store.view import EpisodeView, record_identity

T = TypeVar("T")

MAX_LINE_BYTES = 64 * 2**20
"""The longest record line read (a record is kilobytes; a trace at its call budget, with every
answer at its size bound, stays far below): a file without newlines is not read whole."""


class RecordFileError(LimboError):
    """A record file is missing or holds something that is not an episode record."""


@dataclass
class RecordScan(Generic[T]):
    """Every record of a file, whether its last line was torn (a run killed mid-write), and how
    many lines recorded an episode already read."""

    path: Path
    records: list[T] = field(default_factory=list)
    torn_at: int | None = None
    """Byte offset of a torn last line, or ``None``."""
    torn_line: int | None = None
    duplicates: int = 0
    """Lines dropped because a later line recorded the same episode (:func:`record_identity`)."""

    @property
    def warning(self) -> str | None:
        if self.torn_at is None:
            return None
        return (f"{shown_path(self.path)}:{self.torn_line}: skipped a torn last line (a run "
                "killed while writing it); its episode is not recorded")

    @property
    def duplicate_notice(self) -> str | None:
        if not self.duplicates:
            return None
        return (f"{shown_path(self.path)}: dropped {self.duplicates} duplicate record line(s) "
                "(an episode already recorded: same experiment, arm, repeat, world and "
                "configuration); the last line of each episode is kept")

    @property
    def notices(self) -> list[str]:
        """What the scan dropped, one line each, for the user."""
        return [n for n in (self.warning, self.duplicate_notice) if n]


@dataclass(frozen=True, slots=True)
class Line:
    """One non-blank line of a records file, where it lies and whether it ends the file."""

    number: int
    offset: int
    raw: bytes
    last: bool

    @property
    def torn(self) -> bool:
        """The file's last line without its newline: a run killed while writing it."""
        return self.last and not self.raw.endswith(b"\n")


def bounded_lines(handle: BinaryIO, path: str | Path) -> Iterator[bytes]:
    """The lines of a records file, each read with a bound: a line longer than
    :data:`MAX_LINE_BYTES` (a file without newlines) is a :class:`RecordFileError` at its line,
    so a reader's memory stays bounded whatever the file."""
    number = 0
    while True:
        raw = handle.readline(MAX_LINE_BYTES + 1)
        if not raw:
            return
        number += 1
        if len(raw) > MAX_LINE_BYTES:
            raise RecordFileError(f"{shown_path(path)}:{number}: a line longer than "
                                  f"{MAX_LINE_BYTES // 2**20} MiB: not an episode record "
                                  "(is this a records file?)")
        yield raw


def open_records(path: str | Path) -> BinaryIO | None:
    """``path`` opened for reading (``None`` if it does not exist), or a one-line
    :class:`RecordFileError`: a directory, or a file that cannot be read."""
    path = Path(path)
    if path.is_dir():
        raise RecordFileError(f"{shown_path(path)} is a directory; give a records file such as "
                              f"{shown_path(path / 'episodes.jsonl')}")
    try:
        return path.open("rb")
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise RecordFileError(f"{shown_path(path)}: cannot read: {exc.strerror or exc}") from None


def iter_lines(path: str | Path) -> Iterator[Line]:
    """Every non-blank line of ``path`` (none if it does not exist), with its number, byte
    offset and whether it is the file's last."""
    handle = open_records(path)
    if handle is None:
        return
    with handle:
        size = os.fstat(handle.fileno()).st_size
        offset = 0
        for number, raw in enumerate(bounded_lines(handle, path), start=1):
            start, offset = offset, offset + len(raw)
            if raw.strip():
                yield Line(number, start, raw, offset >= size)


LineParser = Callable[[bytes], tuple[T | None, str]]
"""Parses one line into a record (full or slim), or gives ``None`` and what is wrong with it."""


def parsed_lines(scan: RecordScan[Any], parse: LineParser[T]) -> Iterator[tuple[Line, T]]:
    """Each record line of ``scan.path`` with what ``parse`` made of it, by the rules of the
    module docstring (a torn last line is noted on ``scan``; any other bad line raises)."""
    for line in iter_lines(scan.path):
        record, problem = parse(line.raw)
        if record is not None:
            yield line, record
        elif line.torn:
            scan.torn_at, scan.torn_line = line.offset, line.number
        else:
            raise RecordFileError(f"{shown_path(scan.path)}:{line.number}: {problem}")


def scan_file(path: str | Path, parse: LineParser[T],
              identity: Callable[[T], Hashable] | None = None) -> RecordScan[T]:
    """Read every record of ``path`` (none if it does not exist) with ``parse``, by the rules
    of the module docstring; with ``identity``, each episode once (the last of its lines, in
    the place of the first)."""
    scan: RecordScan[T] = RecordScan(path=Path(path))
    kept: dict[Hashable, int] = {}
    for _, record in parsed_lines(scan, parse):
        if identity is None:
            scan.records.append(record)
            continue
        key = identity(record)
        place = kept.get(key)
        if place is None:
            kept[key] = len(scan.records)
            scan.records.append(record)
        else:
            scan.duplicates += 1
            scan.records[place] = record
    return scan


def version_problem(version: object) -> str:
    """What a record of schema ``version`` is to this Limbo ("" if it reads it): the one
    schema-version check."""
    if version == RECORD_SCHEMA_VERSION:
        return ""
    return (f"record schema version {version}; this Limbo reads version "
            f"{RECORD_SCHEMA_VERSION} (re-run those episodes to record them anew)")


def line_problem(raw: bytes) -> str:
    """What keeps ``raw`` from being a record of this schema version ("" if nothing, as far as
    the envelope goes: the fields are the model's to judge)."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return f"not an episode record (invalid UTF-8 at byte {exc.start})"
    try:
        document = json.loads(text)
        version = document.get("schema_version")
    except (ValueError, AttributeError, RecursionError):
        return "not an episode record (not a JSON object)"
    if version is None and "episode_id" not in document:  # no record of any version
        return ("not an episode record (no schema_version or episode_id field); expected one "
                "JSON EpisodeRecord per line, as pytest --limbo-records writes")
    return version_problem(version)


def validation_problem(exc: ValidationError) -> str:
    error = exc.errors(include_url=False)[0]
    where = ".".join(str(part) for part in error["loc"]) or "record"
    return f"not an episode record ({where}: {error['msg']})"


def parse_record_line(raw: bytes) -> tuple[EpisodeRecord | None, str]:
    """One line as a whole record, or ``None`` and what is wrong with it."""
    problem = line_problem(raw)
    if problem:
        return None, problem
    try:
        return EpisodeRecord.model_validate_json(raw), ""
    except ValidationError as exc:
        return None, validation_problem(exc)


def parse_view_line(raw: bytes) -> tuple[EpisodeView | None, str]:
    """One record line's view, or ``None`` and what is wrong with the line."""
    try:
        view = EpisodeView.from_json(raw)
    except ValidationError as exc:
        return None, line_problem(raw) or validation_problem(exc)
    problem = version_problem(view.schema_version)
    if problem:
        return None, line_problem(raw)
    return view, ""


def scan_records(path: str | Path) -> RecordScan[EpisodeRecord]:
    """Every whole record of ``path``, each episode once (see :func:`scan_file`)."""
    return scan_file(path, parse_record_line, record_identity)


def read_records(path: str | Path) -> list[EpisodeRecord]:
    """Every complete record in ``path``, each episode once: a torn last line is skipped,
    anything else that is not a record raises :class:`RecordFileError` (see
    :func:`scan_file`)."""
    return scan_records(path).records


def scan_views(path: str | Path) -> RecordScan[EpisodeView]:
    """The view of every recorded episode in ``path``, each once (see :func:`scan_file`)."""
    return scan_file(path, parse_view_line, record_identity)


def read_views(path: str | Path) -> list[EpisodeView]:
    return scan_views(path).records


GradedEpisode = EpisodeView | EpisodeRecord
"""What :func:`~limbo_plugin.report.aggregate.summarize` and the gate read: an
:class:`EpisodeView`, or a whole :class:`~limbo_plugin.records.EpisodeRecord` (the same fields,
declared there)."""
