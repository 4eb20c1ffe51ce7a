"""The JSONL record file: one EpisodeRecord per line, appended and flushed as episodes finish.

Only one process writes (the pytest controller), so a killed run keeps every finished episode and
never a torn line in the middle of the file; a torn *last* line (killed mid-write) is skipped on
read and cut off before a resumed run appends. A fresh run moves the previous file into
``history/`` beside it, so no run's records are ever overwritten.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO

from pydantic import ValidationError

from limbo_plugin.errors import LimboError, UsageError
from limbo_plugin.records import RECORD_SCHEMA_VERSION, EpisodeRecord


class RecordWriter:
    """Appends records to a JSONL file, one line each, flushed and fsynced as they arrive."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._file: IO[str] | None = None

    def write(self, line: str) -> None:
        if self._file is None:
            self._file = self.path.open("a", encoding="utf-8")
        self._file.write(line.rstrip("\n") + "\n")
        self._file.flush()
        os.fsync(self._file.fileno())

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


def shown_path(path: str | Path) -> str:
    """A path as the user would type it: relative to the working directory when inside it."""
    try:
        return str(Path(path).resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


class RecordFileError(LimboError):
    """A record file is missing or holds something that is not an episode record."""


def check_records_path(path: str | Path, option: str = "--limbo-records") -> Path:
    """``path`` as a records file Limbo may create, append to and rotate, or a one-line
    :class:`UsageError`: a directory, or a path under a file, never is (rotating a directory
    would move every file in it)."""
    path = Path(path)
    shown = shown_path(path)
    if path.is_dir():
        raise UsageError(f"{option}: {shown} is a directory; give a file path such as "
                         f"{shown_path(path / 'episodes.jsonl')}")
    if path.exists() and not path.is_file():
        raise UsageError(f"{option}: {shown} is not a regular file")
    for parent in path.parents:
        if parent.exists():
            if not parent.is_dir():
                raise UsageError(f"{option}: {shown_path(parent)} is a file, so {shown} cannot "
                                 "be created under it")
            if not os.access(parent, os.W_OK | os.X_OK):
                raise UsageError(f"{option}: cannot write in {shown_path(parent)} (permission "
                                 "denied)")
            break
    return path


@dataclass
class RecordScan:
    """Every record of a file, and whether its last line was torn (a run killed mid-write)."""

    path: Path
    records: list[EpisodeRecord] = field(default_factory=list)
    torn_at: int | None = None
    """Byte offset of a torn last line, or ``None``."""
    torn_line: int | None = None

    @property
    def warning(self) -> str | None:
        if self.torn_at is None:
            return None
        return (f"{shown_path(self.path)}:{self.torn_line}: skipped a torn last line (a run "
                "killed while writing it); its episode is not recorded")


def scan_records(path: str | Path) -> RecordScan:
    """Read every record of ``path`` (none if it does not exist).

    A torn *last* line is skipped and reported on the scan; any other line that is not a
    record of this schema version — garbage, invalid UTF-8, another version — is a
    :class:`RecordFileError` naming ``file:line``: silently skipping it would make resume
    re-run an episode, or a summary leave one out, without anyone noticing.
    """
    path = Path(path)
    scan = RecordScan(path=path)
    if path.is_dir():
        raise RecordFileError(f"{shown_path(path)} is a directory; give a records file such as "
                              f"{shown_path(path / 'episodes.jsonl')}")
    try:
        handle = path.open("rb")
    except FileNotFoundError:
        return scan
    except OSError as exc:
        raise RecordFileError(f"{shown_path(path)}: cannot read: {exc.strerror or exc}") from None
    with handle:
        size = os.fstat(handle.fileno()).st_size
        offset = 0
        for number, raw in enumerate(handle, start=1):
            start, offset = offset, offset + len(raw)
            if not raw.strip():
                continue
            record, problem = parse_record_line(raw)
            if record is not None:
                scan.records.append(record)
            elif offset >= size and not raw.endswith(b"\n"):
                scan.torn_at, scan.torn_line = start, number
            else:
                raise RecordFileError(f"{shown_path(path)}:{number}: {problem}")
    return scan


def parse_record_line(raw: bytes) -> tuple[EpisodeRecord | None, str]:
    """One line as a record, or ``None`` and what is wrong with it."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return None, f"not an episode record (invalid UTF-8 at byte {exc.start})"
    try:
        version = json.loads(text).get("schema_version")
    except (ValueError, AttributeError, RecursionError):
        return None, "not an episode record (not a JSON object)"
    if version != RECORD_SCHEMA_VERSION:
        return None, (f"record schema version {version}; this Limbo reads version "
                      f"{RECORD_SCHEMA_VERSION} (re-run those episodes to record them anew)")
    try:
        return EpisodeRecord.model_validate_json(text), ""
    except ValidationError as exc:
        error = exc.errors(include_url=False)[0]
        where = ".".join(str(part) for part in error["loc"]) or "record"
        return None, f"not an episode record ({where}: {error['msg']})"


def read_records(path: str | Path) -> list[EpisodeRecord]:
    """Every complete record in ``path``: a torn last line is skipped, anything else that is
    not a record raises :class:`RecordFileError` (see :func:`scan_records`)."""
    return scan_records(path).records


def repair_torn_tail(path: str | Path) -> str | None:
    """Before appending to ``path`` (resume), cut off a torn last line, so the next record is
    not glued onto it and lost; returns what was done, for the user, or ``None``."""
    path = Path(path)
    if not path.is_file() or path.stat().st_size == 0:
        return None
    with path.open("rb+") as handle:
        handle.seek(-1, os.SEEK_END)
        if handle.read(1) == b"\n":
            return None
        handle.seek(0)
        data = handle.read()
        start = data.rfind(b"\n") + 1
        record, _ = parse_record_line(data[start:])
        if record is not None:  # killed after the record, before its newline: keep it
            handle.seek(0, os.SEEK_END)
            handle.write(b"\n")
            return None
        handle.truncate(start)
        handle.flush()
        os.fsync(handle.fileno())
    line = data.count(b"\n", 0, start) + 1
    return (f"{shown_path(path)}:{line}: removed a torn last line ({len(data) - start} bytes) "
            "left by an interrupted run; its episode runs again")


HISTORY_DIR = "history"


def history_dir(path: str | Path) -> Path:
    """Where earlier runs' record files are kept: ``history/`` beside the records file."""
    return Path(path).parent / HISTORY_DIR


def rotate(path: str | Path) -> Path | None:
    """Move an existing record file to ``history/<stem>.<UTC time><suffix>`` before a fresh
    run and return where it went (``None`` if there was nothing to move).

    Every earlier run is kept, not only the last one: two small ``-k`` runs after a full run
    must not lose the full run. The time is the file's last write, so the name says when that
    run ended. Only a regular file is ever moved.
    """
    path = Path(path)
    if not path.is_file() or path.stat().st_size == 0:
        return None
    stamp = datetime.fromtimestamp(path.stat().st_mtime, tz=UTC).strftime("%Y%m%dT%H%M%SZ")
    directory = history_dir(path)
    directory.mkdir(parents=True, exist_ok=True)
    target = directory / f"{path.stem}.{stamp}{path.suffix}"
    n = 1
    while target.exists():
        n += 1
        target = directory / f"{path.stem}.{stamp}-{n}{path.suffix}"
    os.replace(path, target)
    return target


def history_files(path: str | Path) -> list[Path]:
    """The history of the records file ``path``, oldest first."""
    path = Path(path)
    directory = history_dir(path)
    if not directory.is_dir():
        return []
    pattern = re.compile(re.escape(path.stem) + r"\.(\d{8}T\d{6}Z)(?:-(\d+))?"
                         + re.escape(path.suffix))
    found = []
    for file in directory.iterdir():
        match = pattern.fullmatch(file.name)
        if match and file.is_file():
            found.append(((match.group(1), int(match.group(2) or 1)), file))
    return [file for _, file in sorted(found)]


def previous_records(path: str | Path, *, resume: bool) -> Path | None:
    """What ``--limbo-baseline previous`` compares with: the records file a fresh run is about
    to replace, or, on resume (which replaces nothing), the latest one in its history."""
    path = Path(path)
    if not resume and path.is_file() and path.stat().st_size > 0:
        return path
    files = history_files(path)
    return files[-1] if files else None


def summary_paths(records: str | Path) -> tuple[Path, Path]:
    """The summary files of a records file, named after it (``episodes.summary.json`` and
    ``.md`` beside ``episodes.jsonl``), so two record files in one folder keep their own."""
    records = Path(records)
    base = records.with_suffix("") if records.suffix else records
    return (base.with_name(base.name + ".summary.json"),
            base.with_name(base.name + ".summary.md"))


class CostMeter:
    """Sums ``usage.cost_usd`` of the records in a file, reading only what was appended since.

    Workers under xdist read the file the controller writes, so a cost limit holds across them.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._offset = 0
        self.total = 0.0

    def refresh(self) -> float:
        if not self.path.exists():
            return self.total
        with self.path.open(encoding="utf-8") as handle:
            handle.seek(self._offset)
            while True:
                line = handle.readline()
                if not line or not line.endswith("\n"):
                    break
                self._offset = handle.tell()
                try:
                    usage = json.loads(line).get("usage") or {}
                except json.JSONDecodeError:
                    continue
                self.total += float(usage.get("cost_usd") or 0.0)
        return self.total
