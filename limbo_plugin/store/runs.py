"""``limbo runs``: the runs a records file has seen, the current one and its history.

A fresh run moves the previous records file into ``history/`` (see
:func:`limbo_plugin.store.files.rotate`); this lists each of those files with when it was
written, the run id(s) in it, how many episodes, the pass rate, its configuration (the agent and
every field not at its default) and how the run selected its episodes (``-k``, ``-m``,
``--experiment``…, from the run log the controller appends to), so a user can pick a baseline or
find the full run that a few ``-k`` runs followed.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from limbo_plugin.records import RUN_DEFAULTS, RUN_FIELDS, run_fingerprint
from limbo_plugin.store.files import history_files, shown_path
from limbo_plugin.store.read import iter_lines
from limbo_plugin.store.view import EpisodeView, record_identity

SELECTION_FLAGS = ("-k", "-m", "--experiment", "--limbo-shard", "--limbo-repeat", "--lf",
                   "--ff", "--limbo-resume", "-x", "--maxfail")
"""What of a pytest command line says which episodes a run ran (never model options, which
may hold keys)."""


def run_log(records: str | Path) -> Path:
    """The log of the pytest sessions that wrote ``records`` (one JSON line each), beside it
    like its summary; it is never rotated, so it covers the history too (``.log``, so a
    ``*.jsonl`` glob of record files does not take it for one)."""
    records = Path(records)
    return records.with_name(f"{records.stem}.runs.log")


def selection_of(args: Sequence[str], test_paths: Sequence[str]) -> list[str]:
    """The selecting part of a pytest command line: the paths and node ids given, ``-k``,
    ``-m``, ``--experiment``, shard, repeat and resume flags, each with its value."""
    kept: list[str] = []
    takes_value = {"-k", "-m", "--experiment", "--limbo-shard", "--limbo-repeat",
                   "--maxfail"}
    i = 0
    while i < len(args):
        arg = args[i]
        name = arg.split("=", 1)[0]
        if name in takes_value and "=" not in arg and i + 1 < len(args):
            kept += [arg, args[i + 1]]
            i += 2
            continue
        if name in SELECTION_FLAGS or (arg[:2] in ("-k", "-m") and len(arg) > 2
                                       and not arg.startswith("--")) or arg in test_paths:
            kept.append(arg)
        i += 1
    return kept


def log_run(records: str | Path, run_id: str, args: Sequence[str], test_paths: Sequence[str],
            recorded: int) -> None:
    """Append this session's selection to the run log (at the end of a run, Ctrl-C too)."""
    log = run_log(records)
    entry = {"run_id": run_id, "selection": selection_of(args, test_paths),
             "recorded": recorded}
    try:
        log.parent.mkdir(parents=True, exist_ok=True)
        with log.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(entry) + "\n")
    except OSError:
        pass  # the listing loses a column; the run's records are what matter


def read_run_log(records: str | Path) -> dict[str, dict[str, Any]]:
    """Each logged run by its id; unreadable lines are skipped (a listing, not a check)."""
    found: dict[str, dict[str, Any]] = {}
    try:
        lines = run_log(records).read_text(encoding="utf-8").splitlines()
    except OSError:
        return found
    for line in lines:
        try:
            entry = json.loads(line)
            found[str(entry["run_id"])] = entry
        except (ValueError, KeyError, TypeError):
            continue
    return found


@dataclass
class RunFile:
    """One records file as ``limbo runs`` describes it."""

    path: Path
    written: datetime
    run_ids: list[str] = field(default_factory=list)
    episodes: int = 0
    errors: int = 0
    passed: int = 0
    agents: list[str] = field(default_factory=list)
    configurations: int = 0
    unreadable: int = 0
    duplicates: int = 0
    """Lines that recorded an episode already read (counted once)."""
    values: dict[str, list[str]] = field(default_factory=dict)
    """Each configuration field's values, in order of appearance."""
    selections: list[str] = field(default_factory=list)
    """How each of its runs selected episodes (from the run log), as a command line."""

    @property
    def configuration(self) -> str:
        """The agent, then every other field that is not at its default (several values
        joined by ``|``)."""
        agents = self.values.get("agent", [])
        parts = ["|".join(agents[:3]) + (f"|… ({len(agents)} agents)" if len(agents) > 3
                                          else "")] if agents else []
        for name in RUN_FIELDS:
            shown = self.values.get(name, [])
            if name != "agent" and shown and shown != [RUN_DEFAULTS[name]]:
                parts.append(f"{name}={'|'.join(shown)}")
        text = ", ".join(parts)
        if self.configurations > 1:
            text += f" ({self.configurations} configurations)"
        return text

    @property
    def pass_rate(self) -> str:
        graded = self.episodes - self.errors
        return f"{100 * self.passed / graded:.1f}%" if graded else "—"


def describe(path: Path) -> RunFile:
    """Read ``path`` line by line; lines that are not records are counted, not fatal (this
    is a listing: ``limbo summary`` names the line), and so are lines that record an episode
    already read (each episode is counted once)."""
    info = RunFile(path=path, written=datetime.fromtimestamp(path.stat().st_mtime, tz=UTC))
    configurations: set[str] = set()
    seen: dict[Hashable, EpisodeView] = {}
    for line in iter_lines(path):
        try:  # any schema version: an old run in history/ is still listed
            row = EpisodeView.from_json(line.raw)
        except ValueError:
            info.unreadable += 1
            continue
        identity = record_identity(row)
        if identity in seen:
            info.duplicates += 1
        seen[identity] = row
    for row in seen.values():
        info.episodes += 1
        if row.run_id and row.run_id not in info.run_ids:
            info.run_ids.append(row.run_id)
        if row.agent not in info.agents:
            info.agents.append(row.agent)
        for name in RUN_FIELDS:
            values = info.values.setdefault(name, [])
            if getattr(row, name) not in values:
                values.append(getattr(row, name))
        configurations.add(run_fingerprint(row))
        if row.error is not None:
            info.errors += 1
        elif row.eos and not row.overclaim:
            info.passed += 1
    info.configurations = len(configurations)
    return info


def list_runs(records: str | Path) -> list[RunFile]:
    """The records file ``records`` (if it exists) and every file of its history, newest
    first."""
    records = Path(records)
    files = [*history_files(records)]
    if records.is_file():
        files.append(records)
    log = read_run_log(records)
    runs = [describe(f) for f in reversed(files)]
    for run in runs:
        for run_id in run.run_ids:
            entry = log.get(run_id)
            if entry is not None:
                run.selections.append(shlex.join(entry.get("selection") or []) or "all")
    return runs


def render(runs: list[RunFile]) -> list[str]:
    header = ("file", "written (UTC)", "run id", "episodes", "passed", "configuration",
              "selection")
    table = [header]
    for run in runs:
        ids = run.run_ids[0] if run.run_ids else "—"
        if len(run.run_ids) > 1:
            ids += f" (+{len(run.run_ids) - 1} resumed)"
        episodes = str(run.episodes) + (f" ({run.errors} errors)" if run.errors else "")
        if run.unreadable:
            episodes += f" [{run.unreadable} unreadable lines]"
        if run.duplicates:
            episodes += f" [{run.duplicates} duplicate lines dropped]"
        table.append((shown_path(run.path), f"{run.written:%Y-%m-%d %H:%M:%S}", ids, episodes,
                      run.pass_rate, run.configuration or "—",
                      "; ".join(dict.fromkeys(run.selections)) or "—"))
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    lines = []
    for i, row in enumerate(table):
        lines.append("  ".join(cell.ljust(w) if j != 3 else cell.rjust(w)
                               for j, (cell, w) in enumerate(zip(row, widths, strict=True)))
                     .rstrip())
        if i == 0:
            lines.append("  ".join("-" * w for w in widths))
    return lines
