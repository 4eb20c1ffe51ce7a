"""Writing the JSONL record file: one EpisodeRecord per line, appended as episodes finish.

Only one process writes (the pytest controller), so the file never holds a torn line in the
middle; a torn *last* line (killed mid-write) is skipped on read and cut off before a resumed run
appends. A fresh run moves the previous file into ``history/`` beside it, so no run's records
are ever overwritten.

What a killed run keeps (:class:`RecordWriter`): every line is handed to the operating system
as its record arrives, so killing any process of the run, ``kill -9`` included, loses no episode
the controller had received. ``fsync`` — what makes lines survive an operating-system crash or a
power cut — costs a disk flush each, so it runs at most every :data:`SYNC_INTERVAL_S` seconds
while records stream in, and always at the end of the run, on SIGINT and on SIGTERM. A machine
crash can therefore lose at most the records of the last second, which ``--limbo-resume`` runs
again.
"""

from __future__ import annotations

import contextlib
import os
import re
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import BinaryIO

from limbo_plugin.errors import LimboError, UsageError
from limbo_plugin.store.view import EpisodeView

SYNC_INTERVAL_S = 1.0
"""The longest a received record waits for ``fsync``."""


class RecordWriteError(LimboError):
    """The records file could not take another line (the disk is full, a quota)."""


class RecordWriter:
    """Appends records to a JSONL file, one line each: written through to the operating system
    as they arrive, synced to disk in batches (see the module docstring for the guarantee)."""

    def __init__(self, path: str | Path, *, sync_interval_s: float = SYNC_INTERVAL_S,
                 fsync: Callable[[int], None] | None = None) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.sync_interval_s = sync_interval_s
        self._fsync = fsync or os.fsync  # looked up now: a test may wrap os.fsync
        self._file: BinaryIO | None = None
        # Re-entrant: the SIGTERM handler syncs (plugin/controller.py), and it runs in the main
        # thread, which may be inside a sync of its own, holding this lock, when the signal lands.
        self._lock = threading.RLock()
        self._timer: threading.Timer | None = None
        self._unsynced = 0
        self._last_sync = time.monotonic()
        self.written = 0
        self.syncs = 0

    def write(self, line: str) -> None:
        """Append one line, or raise :class:`RecordWriteError` (a full disk) with the file cut
        back to its last whole line, so a resume finds no torn tail."""
        data = (line.rstrip("\n") + "\n").encode("utf-8", "backslashreplace")
        if self._file is None:
            self._file = self.path.open("ab", buffering=0)
        size = os.fstat(self._file.fileno()).st_size
        try:
            view = memoryview(data)
            while view:  # unbuffered: in the operating system now, a kill cannot lose it
                view = view[self._file.write(view) or 0:]
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.ftruncate(self._file.fileno(), size)
            lines = _whole_lines(self.path, size)
            kept = f"the {lines} record(s) in it" if lines else "its whole records"
            raise RecordWriteError(
                f"cannot write {shown_path(self.path)}: {exc.strerror or exc}; "
                f"{kept} are kept "
                f"({self.written} of them from this run); make room and finish the run with "
                "--limbo-resume") from None
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


def shown_path(path: str | Path) -> str:
    """A path as the user would type it: relative to the working directory when inside it."""
    try:
        return str(Path(path).resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


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


def repair_torn_tail(path: str | Path) -> str | None:
    """Before appending to ``path`` (resume), cut off a torn last line, so the next record is
    not glued onto it and lost; returns what was done, for the user, or ``None``."""
    from limbo_plugin.store.custody import require_own_file
    from limbo_plugin.store.read import parse_record_line

    path = Path(path)
    if not path.is_file() or path.stat().st_size == 0:
        return None
    require_own_file(path, "--limbo-resume")
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


def _whole_lines(path: Path, size: int) -> str:
    """How many whole lines the first ``size`` bytes of ``path`` hold, as the error says it
    (``12``; empty if the file cannot be read back)."""
    count, left = 0, size
    try:
        with path.open("rb") as handle:
            while left > 0:
                chunk = handle.read(min(1 << 20, left))
                if not chunk:
                    break
                count += chunk.count(b"\n")
                left -= len(chunk)
    except OSError:
        return ""
    return str(count)


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
    from limbo_plugin.store.custody import require_own_file

    path = Path(path)
    if not path.is_file() or path.stat().st_size == 0:
        return None
    require_own_file(path, "--limbo-records")
    stamp = datetime.fromtimestamp(path.stat().st_mtime, tz=UTC).strftime("%Y%m%dT%H%M%SZ")
    directory = history_dir(path)
    if directory.exists() and not directory.is_dir():
        raise UsageError(f"{shown_path(directory)} is a file: Limbo keeps the earlier runs' "
                              "records in a folder of that name; move the file away")
    directory.mkdir(parents=True, exist_ok=True)
    target = directory / f"{path.stem}.{stamp}{path.suffix}"
    n = 1
    while target.exists():
        n += 1
        target = directory / f"{path.stem}.{stamp}_{n}{path.suffix}"  # sorts after the first
    os.replace(path, target)
    _move_fingerprint(path, target)
    return target


def _move_fingerprint(source: Path, target: Path) -> None:
    """A records file's fingerprint goes where the file goes (:mod:`.fingerprint`)."""
    from limbo_plugin.store.fingerprint import fingerprint_path

    beside = fingerprint_path(source)
    if beside.is_file() and not beside.is_symlink():
        os.replace(beside, fingerprint_path(target))


def unrotate(path: str | Path, moved: Path) -> bool:
    """Put back a records file :func:`rotate` moved, when the run wrote nothing in its place
    (it selected no episode, or stopped before the first): a run that records nothing replaces
    nothing. Returns whether it was put back."""
    path = Path(path)
    if path.exists() or path.is_symlink() or not moved.is_file():
        return False
    os.replace(moved, path)
    _move_fingerprint(moved, path)
    return True


def history_files(path: str | Path) -> list[Path]:
    """The history of the records file ``path``, oldest first."""
    path = Path(path)
    directory = history_dir(path)
    if not directory.is_dir():
        return []
    pattern = re.compile(re.escape(path.stem) + r"\.(\d{8}T\d{6}Z)(?:_(\d+))?"
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
                    usage = EpisodeView.from_json(line).usage
                except ValueError:
                    continue
                self.total += usage.cost_usd if usage is not None else 0.0
        return self.total
