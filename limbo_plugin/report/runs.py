"""``limbo runs``: the runs a records file has seen, the current one and its history.

A fresh run moves the previous records file into ``history/`` (see
:func:`limbo_plugin.report.records.rotate`); this lists each of those files with when it was
written, the run id(s) in it, how many episodes, which agents and configurations, and the pass
rate, so a user can pick a baseline or find the full run that a few ``-k`` runs followed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

from limbo_plugin.records import run_fingerprint
from limbo_plugin.report.records import history_files, shown_path


class _RunRow(BaseModel):
    model_config = ConfigDict(extra="ignore")

    run_id: str | None = None
    agent: str
    contract: str
    docs: str
    instruction: str
    condition: str
    operator: str
    eos: bool
    overclaim: bool
    error: str | None = None


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

    @property
    def pass_rate(self) -> str:
        graded = self.episodes - self.errors
        return f"{100 * self.passed / graded:.1f}%" if graded else "—"


def describe(path: Path) -> RunFile:
    """Read ``path`` line by line; lines that are not records are counted, not fatal (this
    is a listing: ``limbo summary`` names the line)."""
    info = RunFile(path=path, written=datetime.fromtimestamp(path.stat().st_mtime, tz=UTC))
    configurations: set[str] = set()
    with path.open("rb") as handle:
        for raw in handle:
            if not raw.strip():
                continue
            try:
                row = _RunRow.model_validate_json(raw)
            except (ValidationError, ValueError):
                info.unreadable += 1
                continue
            info.episodes += 1
            if row.run_id and row.run_id not in info.run_ids:
                info.run_ids.append(row.run_id)
            if row.agent not in info.agents:
                info.agents.append(row.agent)
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
    return [describe(f) for f in reversed(files)]


def render(runs: list[RunFile]) -> list[str]:
    header = ("file", "written (UTC)", "run id", "episodes", "passed", "agents / configurations")
    table = [header]
    for run in runs:
        ids = run.run_ids[0] if run.run_ids else "—"
        if len(run.run_ids) > 1:
            ids += f" (+{len(run.run_ids) - 1} resumed)"
        agents = ", ".join(run.agents[:3]) + (f", … ({len(run.agents)} agents)"
                                               if len(run.agents) > 3 else "")
        if run.configurations > len(run.agents):
            agents += f"; {run.configurations} configurations"
        episodes = str(run.episodes) + (f" ({run.errors} errors)" if run.errors else "")
        if run.unreadable:
            episodes += f" [{run.unreadable} unreadable lines]"
        table.append((shown_path(run.path), f"{run.written:%Y-%m-%d %H:%M:%S}", ids, episodes,
                      run.pass_rate, agents or "—"))
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    lines = []
    for i, row in enumerate(table):
        lines.append("  ".join(cell.ljust(w) if j != 3 else cell.rjust(w)
                               for j, (cell, w) in enumerate(zip(row, widths, strict=True)))
                     .rstrip())
        if i == 0:
            lines.append("  ".join("-" * w for w in widths))
    return lines
