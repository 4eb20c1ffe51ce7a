"""The JSONL record file: one EpisodeRecord per line, appended and flushed as episodes finish.

Only one process writes (the pytest controller), so a killed run keeps every finished episode and
never a torn line in the middle of the file; a torn *last* line (killed mid-write) is skipped on
read.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from pydantic import ValidationError

from limbo_plugin.records import EpisodeRecord


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


def iter_record_lines(path: str | Path) -> Iterator[str]:
    path = Path(path)
    if not path.exists():
        return
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                yield line


def read_records(path: str | Path) -> list[EpisodeRecord]:
    """Every complete record in ``path``; a line that does not parse (a torn write) is skipped."""
    records = []
    for line in iter_record_lines(path):
        try:
            records.append(EpisodeRecord.model_validate_json(line))
        except (ValidationError, json.JSONDecodeError, ValueError):
            continue
    return records


def rotate(path: str | Path) -> Path | None:
    """Move an existing record file aside to ``<stem>.previous<suffix>`` before a fresh run.

    The previous run is kept, not destroyed, and is what ``--limbo-baseline`` usually compares
    against.
    """
    path = Path(path)
    if not path.exists() or path.stat().st_size == 0:
        return None
    previous = path.with_name(f"{path.stem}.previous{path.suffix}")
    os.replace(path, previous)
    return previous


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
