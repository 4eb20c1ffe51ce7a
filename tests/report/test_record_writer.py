"""The record file's durability: each line reaches the operating system as it arrives, fsync
runs in batches (at most one interval after a record arrived), and always on close."""

from __future__ import annotations

import time
from pathlib import Path

from limbo_plugin.store.files import RecordWriter


class FsyncLog:
    """Stands in for ``os.fsync``: records how many lines the file held at each call."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.calls: list[int] = []

    def __call__(self, fd: int) -> None:
        self.calls.append(self.path.read_text().count("\n"))


def test_every_line_is_in_the_file_as_soon_as_it_is_written(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    log = FsyncLog(path)
    writer = RecordWriter(path, sync_interval_s=60, fsync=log)
    for i in range(5):
        writer.write(f'{{"n": {i}}}')
        # Read through another handle, as a new process would after a kill -9 of this one.
        assert path.read_text().splitlines()[-1] == f'{{"n": {i}}}'
    writer.close()


def test_a_burst_of_records_is_synced_once_not_per_line(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    log = FsyncLog(path)
    writer = RecordWriter(path, sync_interval_s=60, fsync=log)
    for i in range(1000):
        writer.write(f'{{"n": {i}}}')
    assert len(log.calls) <= 1, "fsync per line is what batching removes"
    writer.close()
    assert log.calls[-1] == 1000, "closing syncs every line written"


def test_a_lone_record_is_synced_within_the_interval(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    log = FsyncLog(path)
    writer = RecordWriter(path, sync_interval_s=0.05, fsync=log)
    writer.write('{"n": 0}')  # the first line after a quiet second is synced at once
    time.sleep(0.01)
    writer.write('{"n": 1}')  # this one waits for the interval, not for the next record
    deadline = time.monotonic() + 60  # a hang guard, not a speed check
    while time.monotonic() < deadline and (not log.calls or log.calls[-1] < 2):
        time.sleep(0.01)
    assert log.calls and log.calls[-1] == 2
    writer.close()


def test_close_with_nothing_new_does_not_sync_again(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    log = FsyncLog(path)
    writer = RecordWriter(path, sync_interval_s=60, fsync=log)
    writer.write('{"n": 0}')
    writer.sync()
    calls = len(log.calls)
    writer.close()
    assert len(log.calls) == calls
