"""The JSONL record file: one EpisodeRecord per line, appended as episodes finish.

Only one process writes (the pytest controller), so the file never holds a torn line in the
middle; a torn *last* line (killed mid-write) is skipped on read.

What a killed run keeps (:class:`RecordWriter`): every line is handed to the operating system
as its record arrives, so killing any process of the run, ``kill -9`` included, loses no episode
the controller had received. ``fsync`` — what makes lines survive an operating-system crash or a
power cut — costs a disk flush each, so it runs at most every :data:`SYNC_INTERVAL_S` seconds
while records stream in, and always at the end of the run, on SIGINT and on SIGTERM. A machine
crash can therefore lose at most the records of the last second, which ``--limbo-resume`` runs
again.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO

from pydantic import ValidationError

from limbo_plugin.records import EpisodeRecord

SYNC_INTERVAL_S = 1.0
"""The longest a received record waits for ``fsync``."""


class RecordWriter:
    """Appends records to a JSONL file, one line each: written through to the operating system
    as they arrive, synced to disk in batches (see the module docstring for the guarantee)."""

    def __init__(self, path: str | Path, *, sync_interval_s: float = SYNC_INTERVAL_S,
                 fsync: Callable[[int], None] = os.fsync) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.sync_interval_s = sync_interval_s
        self._fsync = fsync
        self._file: IO[str] | None = None
        self._lock = threading.Lock()
        self._timer: threading.Timer | None = None
        self._unsynced = 0
        self._last_sync = time.monotonic()
        self.written = 0
        self.syncs = 0

    def write(self, line: str) -> None:
        if self._file is None:
            self._file = self.path.open("a", encoding="utf-8")
        self._file.write(line.rstrip("\n") + "\n")
        self._file.flush()  # in the operating system now: a killed process cannot lose it
        self.written += 1
        with self._lock:
            self._unsynced += 1
            due = self._last_sync + self.sync_interval_s - time.monotonic()
            if due <= 0:
                self._sync_locked()
            elif self._timer is None:
                # A burst is synced once, ``due`` seconds on; a lone record no later than that.
                self._timer = threading.Timer(due, self.sync)
                self._timer.daemon = True
                self._timer.start()

    def sync(self) -> None:
        """``fsync`` what was written and not yet synced (a no-op when nothing was)."""
        with self._lock:
            self._sync_locked()

    def _sync_locked(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._file is not None and self._unsynced:
            self._fsync(self._file.fileno())
            self.syncs += 1
            self._unsynced = 0
        self._last_sync = time.monotonic()

    def close(self) -> None:
        with self._lock:
            self._sync_locked()
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
