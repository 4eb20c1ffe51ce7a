"""The raw stdio peer of the server tests reads every reply it was sent, however they arrive."""

from __future__ import annotations

import os
import time

from serverkit import _Lines


def test_lines_that_arrive_in_one_write_are_each_read_before_waiting_again() -> None:
    """Two replies in one read used to leave the second in a file buffer that ``select`` does
    not see: the peer then waited for a reply it already had (a flaky 300 s hang)."""
    read_end, write_end = os.pipe()
    try:
        os.write(write_end, b'{"id": 1}\n{"id": 2}\n{"id"')
        lines = _Lines(read_end)
        soon = time.monotonic() + 5
        assert lines.next(soon) == b'{"id": 1}'
        assert lines.next(soon) == b'{"id": 2}'
        assert lines.next(time.monotonic()) is None  # a partial line is no line yet
        os.write(write_end, b': 3}\n')
        assert lines.next(soon) == b'{"id": 3}'
        os.close(write_end)
        write_end = -1
        assert lines.next(soon) == b""
    finally:
        os.close(read_end)
        if write_end >= 0:
            os.close(write_end)
