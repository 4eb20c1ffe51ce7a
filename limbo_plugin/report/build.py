"""``limbo report``: records in, tables (Markdown, CSV, JSON), figures and an HTML report out.

The layout of ``--out`` (default ``reports/report/``)::

    index.html           every table and figure, and the episode explorer
    tables/<id>.md|csv|json
    figures/<id>.png|svg
    data/index.js, data/episodes-NNNN.js, assets/   (the explorer's data and code)
    report.json          what was read, dropped, written and skipped

An earlier report at ``--out`` is moved to ``history/<name>.<UTC time>/`` beside it first, as a
fresh run moves its records: a report is never silently replaced. A non-empty folder that is not
a Limbo report is refused.

Heavy libraries (matplotlib, jinja2, statsmodels) are imported here, on the report path only.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from limbo_plugin.errors import LimboError
from limbo_plugin.report.icc import DEFAULT_SCOPE, RhoScope
from limbo_plugin.report.load import LoadedRecords, SpecFacts, load_records
from limbo_plugin.report.render import skipped_line, write_table
from limbo_plugin.report.tables import build_tables
from limbo_plugin.report.tables.base import Result, Skipped, Table

if TYPE_CHECKING:
    from limbo_plugin.report.figure_worker import FigureJob
    from limbo_plugin.spec.registry import SpecRegistry

DEFAULT_OUT = "reports/report"


class MissingExtra(LimboError):
    """A library of the ``report`` extra is not installed."""


@dataclass
class ReportOutcome:
    out: Path
    index: Path
    loaded: LoadedRecords
    tables: list[Result] = field(default_factory=list)
    figures: list[object] = field(default_factory=list)
    kept_previous: Path | None = None

    def lines(self) -> list[str]:
        lines = list(self.loaded.messages())
        written = [t for t in self.tables if isinstance(t, Table)]
        lines.append(f"Wrote {len(written)} table(s) to {self.out / 'tables'} "
                     "(Markdown, CSV, JSON):")
        lines += [f"  {t.title} ({t.id})" for t in written]
        skipped = [t for t in [*self.tables, *self.figures] if isinstance(t, Skipped)]
        if skipped:
            lines.append(f"Skipped {len(skipped)}:")
            lines += [f"  {skipped_line(s)}" for s in skipped]
        drawn = [f for f in self.figures if not isinstance(f, Skipped)]
        lines.append(f"Wrote {len(drawn)} figure(s) to {self.out / 'figures'} "
                     "(PNG at 300 dpi, SVG, PDF).")
        lines.append(f"Report: {self.index}")
        if self.kept_previous is not None:
            lines.append(f"The previous report is kept in {self.kept_previous}.")
        return lines


def keep_earlier_report(out: Path) -> Path | None:
    """Move an earlier report at ``out`` into ``history/`` beside it; where it went, or
    ``None`` when ``out`` is new or empty."""
    from datetime import UTC, datetime

    if out.is_symlink() or (out.exists() and not out.is_dir()):
        raise LimboError(f"--out {out}: not a folder; give a folder for the report")
    if not out.exists() or not any(out.iterdir()):
        return None
    marker = out / "report.json"
    if not marker.is_file():
        raise LimboError(f"--out {out}: the folder holds files that are not a Limbo report; "
                         "give a new or empty folder")
    stamp = datetime.fromtimestamp(marker.stat().st_mtime, tz=UTC).strftime("%Y%m%dT%H%M%SZ")
    history = out.parent / "history"
    history.mkdir(parents=True, exist_ok=True)
    target = history / f"{out.name}.{stamp}"
    n = 1
    while target.exists():
        n += 1
        target = history / f"{out.name}.{stamp}_{n}"
    os.replace(out, target)
    return target


def _make_folder(out: Path) -> bool:
    """Make the report's folder now, before the records are read, so that a folder that
    cannot be made is said first, in one line; whether it was made here."""
    if out.exists() or out.is_symlink():
        return False  # keep_earlier_report checks what is there
    try:
        out.mkdir(parents=True)
    except OSError as exc:
        raise LimboError(f"--out {out}: cannot make the report's folder "
                         f"({exc.strerror or exc}); give a folder this user can write"
                         ) from None
    return True


def _require(module: str) -> None:
    import importlib.util

    if importlib.util.find_spec(module) is None:
        raise MissingExtra(f"limbo report needs {module}; install it with "
                           "pip install 'limbo-bench[report]'")


def _one_blas_thread() -> None:
    """Run the model fits' linear algebra on one thread. Their matrices have tens of columns:
    OpenBLAS's worker threads only wait on each other there, and on two busy cores they made
    the H1 fit cost four times the CPU. The variable is read when numpy loads, so this acts only
    before that (a report in a process that has already fitted something keeps its threads);
    a user's own setting is kept. The default experiment's report is byte-identical either
    way."""
    if "numpy" not in sys.modules:
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


def make_report(paths: Sequence[str | Path], registry: SpecRegistry,
                out: str | Path = DEFAULT_OUT, *, rho: RhoScope = DEFAULT_SCOPE,
                figures: FigureJob | None = None) -> ReportOutcome:
    """The report on the records in ``paths``, with families, classes and contract classes as
    the specs of ``registry`` define them, and each interval's ρ estimated over the cells
    ``rho`` names (each configuration's own, by default; ``experiment``: the paper's).

    ``figures`` draws the figures (:mod:`~limbo_plugin.report.figure_worker`): a worker the
    caller started earlier still (``limbo report`` starts it before it loads the specs), or by
    default one started here. It is closed when the report is made or fails."""
    job = figures
    try:
        _require("matplotlib")
        _require("jinja2")
        _one_blas_thread()
        from limbo_plugin.report import figure_worker

        processes = figure_worker.processes_wanted() if job is None else 1
        out = Path(out)
        made = _make_folder(out)
        if job is None:
            job = figure_worker.start(processes)  # imports matplotlib while the records load
        loaded, tables, kept_previous = _tables(paths, registry, out, made, job, rho)
        drawn = job.result()
    finally:
        if job is not None:
            job.close()
    from limbo_plugin.report.html import render_html

    outcome = ReportOutcome(out=out, index=out / "index.html", loaded=loaded, tables=tables,
                            figures=list(drawn), kept_previous=kept_previous)
    render_html(out, loaded, tables, drawn, loaded.messages())
    (out / "report.json").write_text(json.dumps({
        "sources": [str(p) for p in loaded.sources], "records_read": loaded.read,
        "episodes": len(loaded.rows), "duplicates_dropped": loaded.duplicates_dropped,
        "infrastructure_errors_dropped": loaded.errors_dropped,
        "repeat_runs": len(loaded.repeats), "torn_lines": loaded.torn_lines, "rho": rho,
        "tables": [t.id for t in tables if isinstance(t, Table)],
        "skipped": {s.id: s.reason for s in [*tables, *drawn] if isinstance(s, Skipped)},
    }, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return outcome


def _tables(paths: Sequence[str | Path], registry: SpecRegistry, out: Path, made: bool,
            job: FigureJob, rho: RhoScope) -> tuple[LoadedRecords, list[Result], Path | None]:
    """Load the records, keep an earlier report, make and write the tables; the figures'
    tables go to ``job`` as soon as they are made, before the model fits."""
    try:
        loaded = load_records(paths, SpecFacts.of(registry))
        if not loaded.rows:
            raise LimboError(f"no graded episode in {', '.join(str(p) for p in paths)} "
                             f"({loaded.read} record(s) read, {loaded.errors_dropped} "
                             "infrastructure error(s))")
    except BaseException:
        if made:  # nothing was written: leave no empty folder behind
            with contextlib.suppress(OSError):
                out.rmdir()
        raise
    kept_previous = keep_earlier_report(out)
    tables = build_tables(loaded.rows, loaded.repeats, registry, rho=rho,
                          before_fits=lambda ready: job.draw(ready, out / "figures"))
    for table in tables:
        if isinstance(table, Table):
            write_table(table, out / "tables")
    return loaded, tables, kept_previous
