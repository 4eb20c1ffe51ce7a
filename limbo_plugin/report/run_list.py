"""Every run under a folder (``reports/``), as ``limbo view``'s home page lists it.

A run is a records file: the live ``episodes.jsonl``, each earlier run in ``history/``, a
shard's or another ``--limbo-records`` file. For each the page shows its agents, experiment,
when it was last written, how many episodes, the headline duplicate rate (over fired faulted
episodes, with its interval, per configuration) and a gate's verdict, and whether a run is
writing it now. The records are read with the store's reader
(:func:`~limbo_plugin.store.read.scan_views`, which skips a torn last line: a file being
appended to is read as far as it is whole) and summarised as the end-of-run summary does; a
file is re-read only when its size or time changed.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from limbo_plugin.errors import LimboError
from limbo_plugin.records import RUN_DEFAULTS, RUN_FIELDS
from limbo_plugin.report.aggregate import ALL_FAULTED, Summary, summarize
from limbo_plugin.store.custody import foreign_file_problem, lock_path
from limbo_plugin.store.read import scan_views
from limbo_plugin.store.view import EpisodeView

if TYPE_CHECKING:
    from limbo_plugin.report.gate import GateSpec

SKIPPED_DIRS = frozenset({"allure-results", "allure-report"})
"""Folders under ``reports/`` that never hold records (nor do hidden ones or reports)."""


@dataclass
class Headline:
    """One configuration's duplicate rate over its fired faulted episodes."""

    label: str
    k: int
    n: int
    rate: float | None
    low: float
    high: float


@dataclass
class RunEntry:
    """One records file as the run list shows it."""

    path: str
    """The file, relative to the listed folder (``/``-separated): the run's id in URLs."""
    written: datetime
    writing: bool
    episodes: int = 0
    errors: int = 0
    agents: list[str] = field(default_factory=list)
    experiments: list[str] = field(default_factory=list)
    headline: list[Headline] = field(default_factory=list)
    gate: str | None = None
    """``passed`` or ``failed`` (``None``: no gate given, or no episode yet)."""
    gate_detail: str = ""
    problem: str | None = None
    torn_tail: bool = False

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "written": self.written.isoformat(timespec="seconds"),
                "writing": self.writing, "episodes": self.episodes, "errors": self.errors,
                "agents": self.agents, "experiments": self.experiments,
                "headline": [vars(h) for h in self.headline], "gate": self.gate,
                "gate_detail": self.gate_detail, "problem": self.problem,
                "torn_tail": self.torn_tail}


def is_being_written(records: Path) -> bool:
    """Whether a run holds ``records`` now: its lock file beside it names a live process.
    (Read, never locked: a probe that took the lock would stop a run starting that instant.)
    """
    try:
        holder = lock_path(records).read_text(encoding="utf-8").strip()
    except OSError:
        return False
    if not holder.isdigit():
        return False
    try:
        os.kill(int(holder), 0)
    except ProcessLookupError:
        return False  # killed: the kernel dropped its lock, the file stayed
    except PermissionError:
        return True  # another user's live process
    return True


def is_records(path: Path) -> bool:
    """Whether ``path`` is a records file (its first line an episode record) or still empty."""
    return foreign_file_problem(path) is None


def find_runs(root: Path, records: Callable[[Path], bool] = is_records) -> list[Path]:
    """The records files under ``root``, newest first: every ``*.jsonl`` outside hidden
    folders, reports and Allure's folders that ``records`` accepts."""
    found: list[Path] = []
    for directory, subdirs, files in os.walk(root):
        here = Path(directory)
        subdirs[:] = sorted(d for d in subdirs if not d.startswith(".") and d not in SKIPPED_DIRS
                            and not (here / d / "report.json").is_file())
        for name in files:
            path = here / name
            if name.endswith(".jsonl") and path.is_file() and records(path):
                found.append(path)
    return sorted(found, key=lambda p: (-p.stat().st_mtime_ns, p.as_posix()))


def _short_label(label: str) -> str:
    """``agent=x contract=native …`` as the agent and the fields not at their default."""
    parts = dict(token.split("=", 1) for token in label.split(" ") if "=" in token)
    shown = [parts.get("agent", "")]
    shown += [f"{name}={parts[name]}" for name in (*RUN_FIELDS, "experiment")
              if name != "agent" and name in parts and parts[name] != RUN_DEFAULTS.get(name)]
    return " ".join(s for s in shown if s)


def headlines(summary: Summary) -> list[Headline]:
    """Each configuration's duplicate rate over its fired faulted episodes: the all-faulted
    row where it has several fault families, its one faulted family otherwise."""
    out = []
    for label, rows in summary.groups.items():
        faulted = [row for row in rows if row.family != "none"]
        if not faulted:
            continue
        row = next((r for r in faulted if r.family == ALL_FAULTED), faulted[0])
        rate = row.duplicate_rate
        out.append(Headline(_short_label(label), rate.k, rate.n, rate.rate, rate.low,
                            rate.high))
    return out


class RunList:
    """The runs under ``root``, summarised and judged by ``gate``; each file is re-read only
    when it changed (a run being written is re-read as it grows)."""

    def __init__(self, root: Path, family_order: Sequence[str], gate: GateSpec | None = None
                 ) -> None:
        self.root = root
        self.family_order = list(family_order)
        self.gate = gate
        self._cache: dict[Path, tuple[tuple[int, int], RunEntry]] = {}
        self._sniffed: dict[Path, tuple[tuple[int, int], bool]] = {}
        self._lock = threading.Lock()

    def entries(self) -> list[RunEntry]:
        with self._lock:
            runs = find_runs(self.root, self._is_records)
            entries = [self._entry(path) for path in runs]
            self._cache = {p: v for p, v in self._cache.items() if p in set(runs)}
            return entries

    def _is_records(self, path: Path) -> bool:
        """:func:`is_records`, sniffed again only when the file changed (the list is read
        every few seconds; a history of long runs is not read again each time)."""
        stat = path.stat()
        key = (stat.st_size, stat.st_mtime_ns)
        known = self._sniffed.get(path)
        if known is None or known[0] != key:
            known = self._sniffed[path] = (key, is_records(path))
        return known[1]

    def records_path(self, relative: str) -> Path | None:
        """The listed run named ``relative``, or ``None`` (never a file outside the list)."""
        for path in find_runs(self.root, self._is_records):
            if path.relative_to(self.root).as_posix() == relative:
                return path
        return None

    def _entry(self, path: Path) -> RunEntry:
        stat = path.stat()
        key = (stat.st_size, stat.st_mtime_ns)
        writing = is_being_written(path)
        cached = self._cache.get(path)
        if cached is not None and cached[0] == key:
            cached[1].writing = writing
            return cached[1]
        entry = describe_run(path, self.root, self.family_order, self.gate, writing=writing)
        self._cache[path] = (key, entry)
        return entry


def describe_run(path: Path, root: Path, family_order: Sequence[str],
                 gate: GateSpec | None, *, writing: bool) -> RunEntry:
    """One run's row; a file that is not records beyond its first line says which line."""
    from limbo_plugin.report.gate import run_gate

    entry = RunEntry(path=path.relative_to(root).as_posix(), writing=writing,
                     written=datetime.fromtimestamp(path.stat().st_mtime, tz=UTC))
    try:
        scan = scan_views(path)
    except (LimboError, OSError) as exc:
        entry.problem = str(exc)
        return entry
    records: list[EpisodeView] = scan.records
    entry.torn_tail = scan.torn_at is not None
    entry.episodes = len(records)
    entry.errors = sum(1 for r in records if r.error is not None)
    entry.agents = list(dict.fromkeys(r.agent for r in records))
    entry.experiments = list(dict.fromkeys(r.experiment or "—" for r in records))
    if not records:
        return entry
    summary = summarize(records, family_order=family_order)
    entry.headline = headlines(summary)
    if gate is not None:
        result = run_gate(gate, records, family_order=family_order)
        entry.gate = "passed" if result.passed else "failed"
        entry.gate_detail = result.lines()[0]
    return entry


__all__ = ["Headline", "RunEntry", "RunList", "describe_run", "find_runs", "headlines",
           "is_being_written", "is_records"]
