"""What Limbo may do to a file at a records path: only what it can recognise as its own.

A records path is a user's value (``--limbo-records``, ``limbo merge OUT``); a typo can point
it at a configuration file, a symlink to elsewhere, or the live file of a run still going. So
before Limbo cuts a torn line off a file, appends to it or moves it into ``history/``, it checks
that the file is a records file (:func:`foreign_file_problem`), and a run holds a lock on the
path for as long as it writes there (:class:`RecordsLock`), so a second run on the same file
stops with one line instead of appending into, or rotating away, the first run's file.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from pathlib import Path
from typing import IO

from limbo_plugin.errors import UsageError

SNIFF_BYTES = 256 * 1024
"""How much of a file is read to recognise it (a record line is tens of KiB)."""
RECORD_STARTS = (b'{"ts":', b'{"schema_version":')
"""How a record line begins (its fields in the model's order, the grade's first): how a torn
first line is still recognised."""


def shown(path: Path) -> str:
    """``path`` relative to the working directory when inside it, its last part unresolved
    (a symlink is named, not its target)."""
    absolute = Path(os.path.abspath(path))
    try:
        return str(absolute.relative_to(Path.cwd().resolve()))
    except ValueError:
        try:
            return str(absolute.relative_to(Path.cwd()))
        except ValueError:
            return str(path)


def foreign_file_problem(path: str | Path) -> str | None:
    """Why Limbo must not modify or move ``path`` (``None``: absent, empty, or a records
    file). A symbolic link, a device, a FIFO or a directory is never a records file; a regular
    file is one when its first line is an episode record (any schema version: an old run's
    file may still be moved into history), or, when that line is torn or very long, it starts
    as one does."""
    path = Path(path)
    if path.is_symlink():
        return "is a symbolic link; give the path of the file itself"
    if not path.exists():
        return None
    if not path.is_file():
        return "is a directory" if path.is_dir() else "is not a regular file"
    try:
        with path.open("rb") as handle:
            head = handle.read(SNIFF_BYTES)
    except OSError as exc:
        return f"cannot be read ({exc.strerror or exc})"
    if not head.strip():
        return None
    first, newline, _ = head.lstrip().partition(b"\n")
    if newline:
        try:
            value = json.loads(first)
        except (ValueError, RecursionError):
            value = None
        if isinstance(value, dict) and "schema_version" in value and "episode_id" in value:
            return None
    elif first.startswith(RECORD_STARTS):
        return None  # one line, longer than the sniff or torn: it began as a record
    return "is not a Limbo records file (its first line is not an episode record)"


def require_own_file(path: str | Path, option: str) -> None:
    """A one-line :class:`UsageError` if ``path`` is a file Limbo must leave alone."""
    problem = foreign_file_problem(path)
    if problem is not None:
        raise UsageError(f"{option}: {shown(Path(path))} {problem}; Limbo only appends to, "
                         "repairs or moves its own records files: give another path")


def lock_path(records: str | Path) -> Path:
    """The lock file of a records path: hidden, beside it."""
    records = Path(records)
    return records.with_name(f".{records.name}.lock")


class RecordsLock:
    """An exclusive, non-blocking ``flock`` on a records path, held while a run writes there.

    The kernel drops the lock when the process ends, however it ends, so a killed run never
    leaves the path locked. The lock file is removed on release; a run that opened it just
    before checks, after locking, that the file it holds is still the one at the path.
    """

    def __init__(self, records: str | Path, option: str = "--limbo-records") -> None:
        self.records = Path(records)
        self.path = lock_path(records)
        self.option = option
        self._handle: IO[str] | None = None
        self._file_handle: IO[bytes] | None = None

    def acquire(self) -> None:
        while True:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                handle = self.path.open("a+", encoding="utf-8")
            except OSError as exc:  # no such folder can be made, read-only, not a folder
                raise UsageError(
                    f"{self.option}: cannot write beside {shown(self.records)} "
                    f"({exc.strerror or exc}); give a path in a folder this user can "
                    "write") from None
            try:
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                handle.seek(0)
                holder = handle.read(32).strip()
                handle.close()
                who = f" (pid {holder})" if holder.isdigit() else ""
                raise UsageError(f"{self.option}: {shown(self.records)} is being written by "
                                 f"another run{who}; wait for it to end or give another "
                                 "path") from None
            try:
                same = os.fstat(handle.fileno()).st_ino == os.stat(self.path).st_ino
            except FileNotFoundError:
                same = False
            if same:
                break
            handle.close()  # released and removed meanwhile: lock the new one
        handle.seek(0)
        handle.truncate()
        handle.write(str(os.getpid()))
        handle.flush()
        self._handle = handle
        try:
            self._lock_the_file_itself()
        except UsageError:
            self.release()
            raise

    def _lock_the_file_itself(self) -> None:
        """Lock the records file's own inode too, when it exists: a hard link (or any other
        name) to the same file has another lock file beside it, but the same inode, so two runs
        resuming one file under two names cannot both append to it."""
        try:
            handle = self.records.open("rb")
        except OSError:  # not there yet (a fresh run), or not readable: the side lock holds
            return
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.close()
            raise UsageError(f"{self.option}: {shown(self.records)} is being written by "
                             "another run under another name (a hard link to the same file); "
                             "wait for it to end or give another path") from None
        self._file_handle = handle

    def release(self) -> None:
        file_handle, self._file_handle = self._file_handle, None
        if file_handle is not None:
            file_handle.close()
        if self._handle is None:
            return
        with contextlib.suppress(OSError):
            self.path.unlink()
        self._handle.close()
        self._handle = None

    def __enter__(self) -> RecordsLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()
