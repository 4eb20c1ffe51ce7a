"""Records of episodes whose worker had to be ended (an agent that would not stop at its time
limit), on their way from the dying worker to the controller.

The worker cannot send a report any more: its watchdog writes the record here, beside the
records file, and ends the process; the controller, told by pytest-xdist that the worker
crashed, appends what it finds here to the records file and removes it. A record that reads
back only is taken; each file is one worker process's.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path


def abandoned_dir(records: str | Path) -> Path:
    records = Path(records)
    return records.with_name(f".{records.name}.abandoned")


def keep_abandoned(records: str | Path, line: str) -> Path:
    """Write one record line for the controller (synced: the process ends next)."""
    directory = abandoned_dir(records)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{os.getpid()}.jsonl"
    with path.open("a", encoding="utf-8") as handle:
        handle.write(line.rstrip("\n") + "\n")
        handle.flush()
        os.fsync(handle.fileno())
    return path


def collect_abandoned(records: str | Path) -> list[str]:
    """Every waiting record line, each once (the files are removed)."""
    from limbo_plugin.store.view import EpisodeView

    directory = abandoned_dir(records)
    if not directory.is_dir():
        return []
    lines: list[str] = []
    for path in sorted(directory.glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                EpisodeView.from_json(line)
            except ValueError:
                continue  # torn: the process ended while writing it
            lines.append(line)
        path.unlink(missing_ok=True)
    with contextlib.suppress(OSError):
        directory.rmdir()
    return lines
