"""Files that are either their old content or their new one, never a half-written mix.

A summary written in place on a full disk is left empty or cut, and the next reader takes the
stump for a summary. Writing a temporary file beside the target and renaming it over the target
(``os.replace``, atomic on POSIX and Windows) leaves the old file standing when the write fails.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path


def write_text_atomically(target: str | Path, text: str) -> None:
    """Replace ``target`` with ``text`` (UTF-8) in one step; on any failure the target is as
    it was and no temporary file is left behind."""
    target = Path(target)
    fd, temporary = tempfile.mkstemp(prefix=f".{target.name[:40]}.", suffix=".tmp",
                                     dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        raise
